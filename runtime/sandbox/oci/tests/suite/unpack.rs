//! Unpacking, through local OCI image layouts built in the test: hostile layers are refused
//! (naming the layer and the entry) and write nothing outside the cache; whiteouts, modes,
//! compressions, configs and digests behave as the OCI image spec says.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use escepine_contract::ImageRef;
use escepine_oci::{Access, ImageStore, Limits, OciError};
use escepine_testkit::image::{BuiltImage, Compression, ImageBuilder, Layer};

/// A cache, a layout and an empty sentinel directory side by side.
struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sentinel")).expect("sentinel");
        Self { dir }
    }
    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }
    fn sentinel(&self) -> PathBuf {
        self.dir.path().join("sentinel")
    }
    fn store(&self) -> ImageStore {
        ImageStore::open(self.cache()).expect("store")
    }
    fn build(&self, image: ImageBuilder) -> BuiltImage {
        image
            .write_layout(self.dir.path().join("layout"))
            .expect("layout")
    }
    async fn ensure(&self, built: &BuiltImage) -> Result<escepine_oci::Unpacked, OciError> {
        self.store()
            .ensure(&reference(built), Access::default())
            .await
    }
    /// The sentinel is empty, and no image (complete or staged) is in the cache.
    fn assert_nothing_written(&self) {
        let sentinel: Vec<_> = std::fs::read_dir(self.sentinel())
            .expect("sentinel")
            .collect();
        assert!(
            sentinel.is_empty(),
            "the sentinel next to the cache was written: {sentinel:?}"
        );
        for sub in ["images", "tmp"] {
            let left: Vec<_> = std::fs::read_dir(self.cache().join(sub))
                .expect("cache dir")
                .collect();
            assert!(left.is_empty(), "the refused image left {left:?} in {sub}/");
        }
    }
}

fn reference(built: &BuiltImage) -> ImageRef {
    ImageRef::parse(&built.reference()).expect("a pinned reference")
}

/// Build an image of `layer`, ensure it, and expect it refused at `entry` of that layer.
async fn refused(layer: Layer, entry: &str, reason_part: &str) -> Scene {
    let scene = Scene::new();
    let built = scene.build(ImageBuilder::new().layer(layer));
    let err = scene
        .ensure(&built)
        .await
        .expect_err("a hostile layer is refused");
    eprintln!("refused as expected: {err}");
    match &err {
        OciError::UnsafeEntry {
            layer,
            entry: e,
            reason,
            ..
        } => {
            assert_eq!(layer, &built.layers[0], "the error names the layer");
            assert_eq!(e, entry, "the error names the entry");
            assert!(
                reason.contains(reason_part),
                "reason `{reason}` lacks `{reason_part}`"
            );
        }
        other => panic!("expected an unsafe entry, got {other}"),
    }
    let shown = err.to_string();
    assert!(
        shown.contains(&built.layers[0]) && shown.contains(entry),
        "{shown}"
    );
    scene.assert_nothing_written();
    scene
}

#[tokio::test]
async fn path_traversal_is_refused() {
    let layer = Layer::new(Compression::Gzip)
        .file("ok", b"fine", 0o644)
        .raw(b"../x", tar::EntryType::Regular, 0o644, b"", b"escaped");
    refused(layer, "../x", "`..`").await;
    let deep = Layer::new(Compression::None).raw(
        b"a/../../../sentinel/x",
        tar::EntryType::Regular,
        0o644,
        b"",
        b"x",
    );
    refused(deep, "a/../../../sentinel/x", "`..`").await;
}

#[tokio::test]
async fn a_symlink_leaving_the_root_is_refused_before_anything_goes_through_it() {
    let layer = Layer::new(Compression::Gzip)
        .symlink("escape", "../../../../../../../../sentinel")
        .file("escape/pwned", b"out", 0o644);
    refused(layer, "escape", "climbs above the image root").await;
    let deep = Layer::new(Compression::Gzip)
        .dir("a", 0o755)
        .dir("a/b", 0o755)
        .symlink("a/b/ok", "../../c")
        .symlink("a/b/up", "../../../c");
    refused(deep, "a/b/up", "climbs above").await;
}

#[tokio::test]
async fn an_absolute_symlink_is_resolved_inside_the_root() {
    let scene = Scene::new();
    let sentinel = scene.sentinel();
    let target = sentinel.to_str().expect("utf-8 path");
    let built = scene.build(
        ImageBuilder::new().layer(
            Layer::new(Compression::Gzip)
                .symlink("etc", target)
                .file("etc/passwd", b"root:x:0:0::/:/bin/sh\n", 0o644)
                .dir("etc/private", 0o750),
        ),
    );
    let unpacked = scene.ensure(&built).await.expect("unpacks");
    let inside = unpacked
        .rootfs
        .join(target.trim_start_matches('/'))
        .join("passwd");
    assert_eq!(
        std::fs::read(&inside).expect("landed inside the root"),
        b"root:x:0:0::/:/bin/sh\n"
    );
    let private = unpacked
        .rootfs
        .join(target.trim_start_matches('/'))
        .join("private");
    let mode = std::fs::metadata(&private)
        .expect("private")
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(
        mode, 0o750,
        "a directory made through the link gets its mode"
    );
    let link = std::fs::symlink_metadata(unpacked.rootfs.join("etc")).expect("etc");
    assert!(link.file_type().is_symlink(), "etc stays the image's link");
    assert!(
        std::fs::read_dir(&sentinel)
            .expect("sentinel")
            .next()
            .is_none(),
        "nothing reached the host path"
    );
}

#[tokio::test]
async fn hard_links_must_name_an_unpacked_file_inside() {
    let outside = Layer::new(Compression::Gzip).hardlink("h", "../../../etc/passwd");
    refused(outside, "h", "outside the image root").await;
    let missing = Layer::new(Compression::Gzip).hardlink("h", "/etc/passwd");
    refused(missing, "h", "not unpacked").await;

    let scene = Scene::new();
    let built = scene.build(
        ImageBuilder::new().layer(
            Layer::new(Compression::None)
                .file("bin/tool", b"#!/bin/sh\n", 0o755)
                .hardlink("bin/alias", "bin/tool"),
        ),
    );
    let unpacked = scene.ensure(&built).await.expect("a link inside unpacks");
    let a = std::fs::metadata(unpacked.rootfs.join("bin/tool")).expect("tool");
    let b = std::fs::metadata(unpacked.rootfs.join("bin/alias")).expect("alias");
    assert_eq!(a.ino(), b.ino(), "a hard link shares its target's inode");
}

#[tokio::test]
async fn device_nodes_and_fifos_are_refused() {
    let chr = Layer::new(Compression::Gzip).dir("dev", 0o755).raw(
        b"dev/mem",
        tar::EntryType::Char,
        0o666,
        b"",
        b"",
    );
    refused(chr, "dev/mem", "character device").await;
    let blk = Layer::new(Compression::Gzip).raw(b"sda", tar::EntryType::Block, 0o660, b"", b"");
    refused(blk, "sda", "block device").await;
    let fifo = Layer::new(Compression::Gzip).raw(b"pipe", tar::EntryType::Fifo, 0o644, b"", b"");
    refused(fifo, "pipe", "FIFO").await;
}

#[tokio::test]
async fn set_id_bits_and_group_other_write_are_never_written() {
    let scene = Scene::new();
    let built = scene.build(
        ImageBuilder::new().layer(
            Layer::new(Compression::Gzip)
                .file("bin/su", b"\x7fELF", 0o4755)
                .file("bin/sg", b"\x7fELF", 0o2755)
                .file("open", b"x", 0o666)
                .dir("shared", 0o1777),
        ),
    );
    let unpacked = scene.ensure(&built).await.expect("unpacks");
    let mode = |p: &str| {
        std::fs::symlink_metadata(unpacked.rootfs.join(p))
            .expect(p)
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("bin/su"), 0o755);
    assert_eq!(mode("bin/sg"), 0o755);
    assert_eq!(mode("open"), 0o644);
    assert_eq!(mode("shared"), 0o755);
    assert_eq!(unpacked.setid_stripped, 2);
    let me = rustix::process::geteuid().as_raw();
    assert_eq!(
        std::fs::metadata(unpacked.rootfs.join("bin/su"))
            .expect("su")
            .uid(),
        me
    );
}

#[tokio::test]
async fn whiteouts_and_opaque_directories_apply_to_lower_layers() {
    let scene = Scene::new();
    let built = scene.build(
        ImageBuilder::new()
            .layer(
                Layer::new(Compression::Gzip)
                    .file("a/keep", b"1", 0o644)
                    .file("a/gone", b"2", 0o644)
                    .file("d/x", b"3", 0o644)
                    .file("d/sub/y", b"4", 0o644)
                    .file("tree/deep/file", b"5", 0o644),
            )
            .layer(
                Layer::new(Compression::Zstd)
                    .whiteout("a/gone")
                    .whiteout("tree")
                    .dir("d", 0o755)
                    .opaque("d")
                    .file("d/new", b"6", 0o644),
            ),
    );
    let root = scene.ensure(&built).await.expect("unpacks").rootfs;
    assert!(root.join("a/keep").is_file());
    assert!(
        !root.join("a/gone").exists(),
        "a whiteout removes the lower file"
    );
    assert!(
        !root.join("tree").exists(),
        "a whiteout removes a lower directory tree"
    );
    assert!(
        !root.join("d/x").exists() && !root.join("d/sub").exists(),
        "opaque hides the lower contents"
    );
    assert_eq!(
        std::fs::read(root.join("d/new")).expect("d/new"),
        b"6",
        "opaque keeps the layer's own entries"
    );
    let markers: Vec<_> = walk(&root)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".wh."))
        })
        .collect();
    assert!(
        markers.is_empty(),
        "whiteout markers are never written: {markers:?}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if e.file_type().expect("type").is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[tokio::test]
async fn gzip_zstd_and_plain_layers_unpack_in_order_with_the_config() {
    let scene = Scene::new();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let built = scene.build(
        ImageBuilder::new()
            .layer(
                Layer::new(Compression::Gzip)
                    .file("etc/os", b"one", 0o644)
                    .file("big", &big, 0o644),
            )
            .layer(
                Layer::new(Compression::Zstd)
                    .file("etc/os", b"two", 0o644)
                    .dir("srv", 0o755),
            )
            .layer(Layer::new(Compression::None).file("srv/run.sh", b"#!/bin/sh\necho hi\n", 0o755))
            .entrypoint(["/bin/sh", "-c"])
            .cmd(["/srv/run.sh"])
            .env("PATH", "/usr/bin:/bin")
            .env("GREETING", "a=b")
            .working_dir("/srv")
            .user("1000:1000"),
    );
    let unpacked = scene.ensure(&built).await.expect("unpacks");
    let root = &unpacked.rootfs;
    assert_eq!(
        std::fs::read(root.join("etc/os")).expect("os"),
        b"two",
        "upper layers win"
    );
    assert_eq!(std::fs::read(root.join("big")).expect("big"), big);
    assert_eq!(
        std::fs::read(root.join("srv/run.sh")).expect("run"),
        b"#!/bin/sh\necho hi\n"
    );
    assert_eq!(unpacked.manifest_digest, built.manifest_digest);
    let c = &unpacked.config;
    assert_eq!(c.entrypoint, ["/bin/sh", "-c"]);
    assert_eq!(c.cmd, ["/srv/run.sh"]);
    assert_eq!(
        c.env,
        [
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("GREETING".to_string(), "a=b".to_string())
        ]
    );
    assert_eq!(c.working_dir.as_deref(), Some("/srv"));
    assert_eq!(c.user.as_deref(), Some("1000:1000"));
    assert_eq!(
        unpacked.fetched.blobs, 5,
        "manifest, config and three layers"
    );

    // Cached now: a new store on the same root fetches nothing, and `cached` sees it.
    let again = scene.ensure(&built).await.expect("cached");
    assert_eq!(
        again.fetched,
        escepine_oci::FetchStats { blobs: 0, bytes: 0 }
    );
    assert_eq!(again.rootfs, unpacked.rootfs);
    assert_eq!(again.config, unpacked.config);
    let cached = scene
        .store()
        .cached(&reference(&built))
        .expect("readable")
        .expect("cached");
    assert_eq!(cached.manifest_digest, built.manifest_digest);
}

#[tokio::test]
async fn an_index_is_resolved_to_this_hosts_platform() {
    let scene = Scene::new();
    let built = scene.build(
        ImageBuilder::new()
            .layer(Layer::new(Compression::Gzip).file("hello", b"world", 0o644))
            .in_index(),
    );
    assert_ne!(built.digest, built.manifest_digest);
    let unpacked = scene.ensure(&built).await.expect("unpacks");
    assert_eq!(
        unpacked.manifest_digest, built.manifest_digest,
        "the host's manifest is chosen"
    );
    assert_eq!(
        std::fs::read(unpacked.rootfs.join("hello")).expect("hello"),
        b"world"
    );
}

#[tokio::test]
async fn a_layout_blob_whose_digest_lies_is_refused_and_not_cached() {
    let scene = Scene::new();
    let built = scene
        .build(ImageBuilder::new().layer(Layer::new(Compression::Gzip).file("f", b"data", 0o644)));
    let blob = built
        .dir
        .join("blobs/sha256")
        .join(built.layers[0].trim_start_matches("sha256:"));
    let mut bytes = std::fs::read(&blob).expect("blob");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, &bytes).expect("alter");
    let err = scene
        .ensure(&built)
        .await
        .expect_err("a lying blob is refused");
    eprintln!("refused as expected: {err}");
    match &err {
        OciError::DigestMismatch {
            expected, found, ..
        } => {
            assert_eq!(expected, &built.layers[0]);
            assert_ne!(found, expected);
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
    assert!(err.to_string().contains(&built.layers[0]), "{err}");
    let cached_blob = scene
        .cache()
        .join("blobs/sha256")
        .join(built.layers[0].trim_start_matches("sha256:"));
    assert!(
        !cached_blob.exists(),
        "nothing of the lying blob stays in the cache"
    );
    scene.assert_nothing_written();
}

#[tokio::test]
async fn a_wrong_diff_id_refuses_the_image() {
    let scene = Scene::new();
    let built = scene.build(
        ImageBuilder::new()
            .layer(Layer::new(Compression::Zstd).file("f", b"data", 0o644))
            .with_wrong_diff_id(),
    );
    let err = scene.ensure(&built).await.expect_err("refused");
    assert!(
        matches!(&err, OciError::DiffIdMismatch { layer, .. } if layer == &built.layers[0]),
        "{err}"
    );
    scene.assert_nothing_written();
}

#[tokio::test]
async fn the_unpacked_size_is_capped() {
    let scene = Scene::new();
    let built = scene.build(
        ImageBuilder::new().layer(
            Layer::new(Compression::Gzip)
                .file("small", [0u8; 600], 0o644)
                .file("more", [0u8; 600], 0o644),
        ),
    );
    let store = scene.store().with_limits(Limits {
        max_bytes: 1000,
        ..Limits::default()
    });
    let err = store
        .ensure(&reference(&built), Access::default())
        .await
        .expect_err("too large");
    assert!(
        matches!(&err, OciError::TooLarge { entry, limit: 1000, .. } if entry == "more"),
        "{err}"
    );
    scene.assert_nothing_written();
}

#[tokio::test]
async fn a_directory_without_oci_layout_is_not_a_layout() {
    let scene = Scene::new();
    let built = scene
        .build(ImageBuilder::new().layer(Layer::new(Compression::Gzip).file("f", b"x", 0o644)));
    std::fs::remove_file(built.dir.join("oci-layout")).expect("remove");
    let err = scene.ensure(&built).await.expect_err("not a layout");
    assert!(matches!(err, OciError::Layout { .. }), "{err}");
    assert!(err.to_string().contains("oci-layout"), "{err}");
}

#[tokio::test]
async fn concurrent_ensures_of_one_image_unpack_it_once() {
    let scene = Scene::new();
    let built = scene
        .build(ImageBuilder::new().layer(Layer::new(Compression::Gzip).file("f", b"x", 0o644)));
    let image = reference(&built);
    let (one, two) = (scene.store(), scene.store());
    let (a, b) = tokio::join!(
        one.ensure(&image, Access::default()),
        two.ensure(&image, Access::default())
    );
    let (a, b) = (a.expect("first"), b.expect("second"));
    assert_eq!(a.rootfs, b.rootfs);
    assert_eq!(
        a.fetched.blobs + b.fetched.blobs,
        3,
        "the blobs were fetched once between them"
    );
    assert!(std::fs::read_dir(scene.cache().join("tmp"))
        .expect("tmp")
        .next()
        .is_none());
}

#[tokio::test]
async fn what_a_crashed_unpack_left_is_neither_served_nor_kept() {
    let scene = Scene::new();
    let built = scene
        .build(ImageBuilder::new().layer(Layer::new(Compression::Gzip).file("f", b"whole", 0o644)));
    let image = reference(&built);
    let store = scene.store();
    let hex = image.digest_hex();
    // A staging directory of a run that died mid-unpack, and an image directory with no marker.
    let stale = scene.cache().join("tmp").join(format!("image-{hex}.1.0.0"));
    std::fs::create_dir_all(stale.join("rootfs/half")).expect("stale staging");
    std::fs::set_permissions(
        stale.join("rootfs/half"),
        std::fs::Permissions::from_mode(0o555),
    )
    .expect("mode");
    let partial = scene.cache().join("images").join(hex);
    std::fs::create_dir_all(partial.join("rootfs")).expect("partial image");
    std::fs::write(partial.join("image.json"), b"{}").expect("meta");
    assert!(
        store.cached(&image).expect("readable").is_none(),
        "no marker, no image"
    );

    let unpacked = store
        .ensure(&image, Access::default())
        .await
        .expect("unpacks anew");
    assert_eq!(
        std::fs::read(unpacked.rootfs.join("f")).expect("f"),
        b"whole"
    );
    assert!(partial.join("complete").is_file());
    assert!(!stale.exists(), "the stale staging directory is removed");
    assert!(std::fs::read_dir(scene.cache().join("tmp"))
        .expect("tmp")
        .next()
        .is_none());
}
