//! Fetching from a real registry on loopback (Debian's `docker-registry`, started per test):
//! images pushed by the testkit are fetched, verified and unpacked; a cached image is served
//! with the registry stopped; a blob altered in the registry's storage is refused by its
//! digest; plain HTTP is spoken only when the caller allows it.

use escepine_contract::ImageRef;
use escepine_oci::{Access, FetchStats, ImageStore, OciError};
use escepine_testkit::image::{push, BuiltImage, Compression, ImageBuilder, Layer};
use escepine_testkit::registry::Registry;

fn plain() -> Access {
    Access {
        plain_http: true,
        ..Access::default()
    }
}

fn image(layers: &[(&str, &[u8], Compression)]) -> ImageBuilder {
    let mut b = ImageBuilder::new()
        .entrypoint(["/bin/server"])
        .cmd(["--stdio"])
        .env("LANG", "C.UTF-8")
        .working_dir("/srv");
    for (path, data, c) in layers {
        b = b.layer(Layer::new(*c).file(path, data, 0o755));
    }
    b
}

async fn pushed(
    registry: &Registry,
    dir: &std::path::Path,
    builder: ImageBuilder,
    repo: &str,
) -> (BuiltImage, ImageRef) {
    let built = builder.write_layout(dir).expect("layout");
    let digest = push(dir, &registry.addr(), repo).await.expect("push");
    assert_eq!(digest, built.digest);
    let reference =
        ImageRef::parse(&format!("{}/{repo}@{digest}", registry.addr())).expect("reference");
    (built, reference)
}

#[tokio::test]
async fn an_image_is_fetched_unpacked_and_then_served_from_the_cache_without_the_registry() {
    let mut registry = Registry::start().expect("registry");
    let t = tempfile::tempdir().expect("tempdir");
    let (built, reference) = pushed(
        &registry,
        &t.path().join("layout"),
        image(&[
            ("bin/server", b"#!/bin/sh\necho server\n", Compression::Gzip),
            ("srv/data.txt", b"zstd layer", Compression::Zstd),
        ]),
        "mcp/server",
    )
    .await;
    let root = t.path().join("cache");
    let first = ImageStore::open(&root)
        .expect("store")
        .ensure(&reference, plain())
        .await
        .expect("fetched");
    assert_eq!(first.manifest_digest, built.manifest_digest);
    assert_eq!(first.fetched.blobs, 4, "manifest, config and two layers");
    assert!(first.fetched.bytes > 0);
    assert_eq!(
        std::fs::read(first.rootfs.join("bin/server")).expect("server"),
        b"#!/bin/sh\necho server\n"
    );
    assert_eq!(
        std::fs::read(first.rootfs.join("srv/data.txt")).expect("data"),
        b"zstd layer"
    );
    assert_eq!(first.config.entrypoint, ["/bin/server"]);
    assert_eq!(first.config.cmd, ["--stdio"]);
    assert_eq!(
        first.config.env,
        [("LANG".to_string(), "C.UTF-8".to_string())]
    );
    assert_eq!(first.config.working_dir.as_deref(), Some("/srv"));

    // No registry any more: a second runtime (a new store on the same root) needs none.
    registry.stop();
    let second = ImageStore::open(&root)
        .expect("store")
        .ensure(&reference, plain())
        .await
        .expect("served from the cache");
    assert_eq!(second.fetched, FetchStats { blobs: 0, bytes: 0 });
    assert_eq!(second.rootfs, first.rootfs);
    assert_eq!(second.config, first.config);
    assert_eq!(second.manifest_digest, first.manifest_digest);
}

#[tokio::test]
async fn a_blob_altered_in_the_registry_is_refused_by_its_digest_and_not_cached() {
    let registry = Registry::start().expect("registry");
    let t = tempfile::tempdir().expect("tempdir");
    let (built, reference) = pushed(
        &registry,
        &t.path().join("layout"),
        image(&[(
            "bin/server",
            b"#!/bin/sh\necho the real server\n",
            Compression::Gzip,
        )]),
        "mcp/altered",
    )
    .await;
    let layer = &built.layers[0];
    let stored = registry.blob_path(layer);
    let mut bytes = std::fs::read(&stored).expect("the registry stores the layer");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&stored, &bytes).expect("alter the blob in place");

    let root = t.path().join("cache");
    let err = ImageStore::open(&root)
        .expect("store")
        .ensure(&reference, plain())
        .await
        .expect_err("the altered layer is refused");
    eprintln!("refused as expected: {err}");
    match &err {
        OciError::DigestMismatch {
            expected, found, ..
        } => {
            assert_eq!(expected, layer);
            assert_ne!(found, layer);
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
    let shown = err.to_string();
    assert!(
        shown.contains(layer.as_str()) && shown.contains("refused"),
        "{shown}"
    );
    let hex = layer.trim_start_matches("sha256:");
    assert!(
        !root.join("blobs/sha256").join(hex).exists(),
        "the lying blob is not cached"
    );
    for sub in ["images", "tmp"] {
        assert!(
            std::fs::read_dir(root.join(sub))
                .expect("dir")
                .next()
                .is_none(),
            "nothing of the refused image in {sub}/"
        );
    }
}

#[tokio::test]
async fn plain_http_is_spoken_only_when_allowed() {
    let registry = Registry::start().expect("registry");
    let t = tempfile::tempdir().expect("tempdir");
    let (_, reference) = pushed(
        &registry,
        &t.path().join("layout"),
        image(&[("bin/server", b"x", Compression::Gzip)]),
        "mcp/https-only",
    )
    .await;
    let root = t.path().join("cache");
    let err = ImageStore::open(&root)
        .expect("store")
        .ensure(&reference, Access::default())
        .await
        .expect_err("an HTTPS client cannot talk to a plain HTTP registry");
    eprintln!("refused as expected: {err}");
    assert!(
        matches!(&err, OciError::Registry { scheme: "HTTPS", what, .. } if what.contains(&reference.digest)),
        "{err}"
    );
    assert!(err.to_string().contains("over HTTPS"), "{err}");
    assert!(std::fs::read_dir(root.join("images"))
        .expect("images")
        .next()
        .is_none());
    assert!(
        std::fs::read_dir(root.join("blobs/sha256"))
            .expect("blobs")
            .next()
            .is_none(),
        "nothing was fetched"
    );
}

#[tokio::test]
async fn an_index_in_the_registry_is_verified_and_resolved_to_this_platform() {
    let registry = Registry::start().expect("registry");
    let t = tempfile::tempdir().expect("tempdir");
    let (built, reference) = pushed(
        &registry,
        &t.path().join("layout"),
        image(&[("bin/server", b"indexed", Compression::Zstd)]).in_index(),
        "mcp/indexed",
    )
    .await;
    let unpacked = ImageStore::open(t.path().join("cache"))
        .expect("store")
        .ensure(&reference, plain())
        .await
        .expect("fetched");
    assert_eq!(unpacked.manifest_digest, built.manifest_digest);
    assert_eq!(unpacked.fetched.blobs, 4, "index, manifest, config, layer");
    assert_eq!(
        std::fs::read(unpacked.rootfs.join("bin/server")).expect("server"),
        b"indexed"
    );
}

#[tokio::test]
async fn a_config_altered_in_the_registry_is_refused_by_its_digest() {
    // (The registry checks the manifests it serves itself; blobs it serves as stored.)
    let registry = Registry::start().expect("registry");
    let t = tempfile::tempdir().expect("tempdir");
    let (built, reference) = pushed(
        &registry,
        &t.path().join("layout"),
        image(&[("bin/server", b"x", Compression::Gzip)]),
        "mcp/altered-config",
    )
    .await;
    let stored = registry.blob_path(&built.config_digest);
    let text = std::fs::read_to_string(&stored).expect("the registry stores the config");
    // Same length, another command: what the sandbox would run.
    let altered = text.replacen("/bin/server", "/bin/evil!!", 1);
    assert_ne!(altered, text);
    std::fs::write(&stored, altered).expect("alter the config in place");
    let root = t.path().join("cache");
    let err = ImageStore::open(&root)
        .expect("store")
        .ensure(&reference, plain())
        .await
        .expect_err("the altered config is refused");
    eprintln!("refused as expected: {err}");
    assert!(
        matches!(&err, OciError::DigestMismatch { expected, .. } if expected == &built.config_digest),
        "{err}"
    );
    let hex = built.config_digest.trim_start_matches("sha256:");
    assert!(
        !root.join("blobs/sha256").join(hex).exists(),
        "the lying config is not cached"
    );
    assert!(std::fs::read_dir(root.join("images"))
        .expect("images")
        .next()
        .is_none());
}
