//! Fetching from hostile registries on loopback (a small HTTP/1.1 server of this file on
//! 127.0.0.1, serving an image built by the testkit, or documents written here): a layer whose
//! descriptor declares more than the largest blob is refused before any byte of it is fetched;
//! a blob longer than its descriptor is refused as soon as it passes it; a redirect (or a token
//! challenge) to an origin the access does not admit is refused before anything reaches it,
//! one to a listed blob host is followed; redirects are followed a bounded number of times.
//! Nothing is ever sent beyond 127.0.0.1.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use escepine_contract::ImageRef;
use escepine_oci::{
    Access, BlobBound, BlobHost, ImageStore, OciError, Refusal, DEFAULT_MAX_BLOB_BYTES,
    MAX_REDIRECTS,
};
use escepine_testkit::image::{sha256, BuiltImage, Compression, ImageBuilder, Layer};

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const REPO: &str = "mcp/hostile";

/// One request as received.
#[derive(Debug, Clone)]
struct Request {
    path: String,
    authorization: Option<String>,
}

/// What the server answers.
enum Answer {
    /// A whole answer.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// `200` claiming `Content-Length: length`, then bytes for as long as the client reads.
    Endless { length: u64 },
}

impl Answer {
    fn ok(content_type: &str, body: Vec<u8>) -> Self {
        Self::Full {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body,
        }
    }
    fn redirect(location: &str) -> Self {
        Self::Full {
            status: 307,
            headers: vec![("location".into(), location.into())],
            body: Vec::new(),
        }
    }
    fn status(status: u16) -> Self {
        Self::Full {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
}

type Handler = dyn Fn(&Request) -> Answer + Send + Sync;

/// A server on 127.0.0.1 that counts its connections, records its requests, and counts the
/// body bytes its endless answers got out.
struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Request>>>,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(handler: impl Fn(&Request) -> Answer + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("address");
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        {
            let (connections, requests, sent, stop) = (
                Arc::clone(&connections),
                Arc::clone(&requests),
                Arc::clone(&sent),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    connections.fetch_add(1, Ordering::SeqCst);
                    let (requests, sent, handler) = (
                        Arc::clone(&requests),
                        Arc::clone(&sent),
                        Arc::clone(&handler),
                    );
                    std::thread::spawn(move || serve(conn, &requests, &sent, &*handler));
                }
            });
        }
        Self {
            addr,
            connections,
            requests,
            sent,
            stop,
        }
    }

    fn authority(&self) -> String {
        self.addr.to_string()
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn requests_to(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn serve(conn: TcpStream, requests: &Mutex<Vec<Request>>, sent: &AtomicU64, handler: &Handler) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut writer) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut authorization = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("authorization") {
                authorization = Some(v.trim().to_string());
            }
        }
    }
    let request = Request {
        path: target.split('?').next().unwrap_or("/").to_string(),
        authorization,
    };
    let answer = handler(&request);
    requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request);
    match answer {
        Answer::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} X\r\n");
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            ));
            let _ = writer.write_all(head.as_bytes());
            let _ = writer.write_all(&body);
        }
        Answer::Endless { length } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
                 content-length: {length}\r\nconnection: close\r\n\r\n"
            );
            if writer.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = vec![0x5a; 64 << 10];
            let mut out = 0u64;
            while out < length {
                if writer.write_all(&chunk).is_err() {
                    break;
                }
                out += chunk.len() as u64;
                sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
        }
    }
    let _ = writer.flush();
}

fn manifest_path(digest: &str) -> String {
    format!("/v2/{REPO}/manifests/{digest}")
}

fn blob_path(digest: &str) -> String {
    format!("/v2/{REPO}/blobs/{digest}")
}

/// A layout blob's bytes.
fn layout_blob(dir: &Path, digest: &str) -> Option<Vec<u8>> {
    let hex = digest.strip_prefix("sha256:")?;
    std::fs::read(dir.join("blobs/sha256").join(hex)).ok()
}

/// A small image (one gzip layer) written as a layout.
fn small_image(dir: &Path) -> BuiltImage {
    ImageBuilder::new()
        .entrypoint(["/bin/server"])
        .layer(Layer::new(Compression::Gzip).file("bin/server", b"#!/bin/sh\necho hi\n", 0o755))
        .write_layout(dir)
        .expect("layout")
}

/// Serve the layout's manifest and blobs as a registry would.
fn serve_layout(dir: &Path, request: &Request) -> Answer {
    let Some((kind, digest)) = request
        .path
        .strip_prefix(&format!("/v2/{REPO}/"))
        .and_then(|rest| rest.split_once('/'))
    else {
        return Answer::status(404);
    };
    match (kind, layout_blob(dir, digest)) {
        ("manifests", Some(bytes)) => Answer::ok(MANIFEST, bytes),
        ("blobs", Some(bytes)) => Answer::ok("application/octet-stream", bytes),
        _ => Answer::status(404),
    }
}

/// A manifest of `config` (a real config blob of `built`) and one layer descriptor claiming
/// `layer_size` bytes for `layer_digest`; its bytes and digest.
fn manifest_with_layer(
    built: &BuiltImage,
    layer_digest: &str,
    layer_size: u64,
) -> (Vec<u8>, String) {
    let config = layout_blob(&built.dir, &built.config_digest).expect("config");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": built.config_digest,
            "size": config.len(),
        },
        "layers": [{"mediaType": LAYER, "digest": layer_digest, "size": layer_size}],
    });
    let bytes = serde_json::to_vec(&manifest).expect("JSON");
    let digest = sha256(&bytes);
    (bytes, digest)
}

fn reference(server: &Server, digest: &str) -> ImageRef {
    ImageRef::parse(&format!("{}/{REPO}@{digest}", server.authority())).expect("a pinned reference")
}

fn plain() -> Access {
    Access {
        plain_http: true,
        ..Access::default()
    }
}

async fn ensure(
    root: &Path,
    image: &ImageRef,
    access: Access,
) -> Result<escepine_oci::Unpacked, OciError> {
    let store = ImageStore::open(root).expect("store");
    tokio::time::timeout(Duration::from_secs(60), store.ensure(image, access))
        .await
        .expect("the fetch ends")
}

/// Nothing of a refused image or blob in the cache: no image, no temporary file, and only
/// `kept` blobs.
fn assert_nothing_kept(root: &Path, refused_blob: &str) {
    for sub in ["images", "tmp"] {
        let left: Vec<_> = std::fs::read_dir(root.join(sub)).expect("dir").collect();
        assert!(left.is_empty(), "{sub}/ holds {left:?}");
    }
    let hex = refused_blob.trim_start_matches("sha256:");
    assert!(
        !root.join("blobs/sha256").join(hex).exists(),
        "the refused blob {refused_blob} is not cached"
    );
}

fn cache(t: &tempfile::TempDir) -> PathBuf {
    t.path().join("cache")
}

/// A layout image, a manifest (served under its digest) whose only layer claims `claimed` bytes
/// under a made-up digest, and a registry serving the layer with `layer`.
fn claiming(
    t: &tempfile::TempDir,
    claimed: u64,
    layer: impl Fn() -> Answer + Send + Sync + 'static,
) -> (Server, ImageRef, String) {
    let built = small_image(&t.path().join("layout"));
    let layer_digest = sha256(b"a layer that is never served whole");
    let (manifest, digest) = manifest_with_layer(&built, &layer_digest, claimed);
    let dir = built.dir.clone();
    let (m_path, l_path) = (manifest_path(&digest), blob_path(&layer_digest));
    let server = Server::start(move |r| {
        if r.path == m_path {
            Answer::ok(MANIFEST, manifest.clone())
        } else if r.path == l_path {
            layer()
        } else {
            serve_layout(&dir, r)
        }
    });
    let image = reference(&server, &digest);
    (server, image, layer_digest)
}

#[tokio::test]
async fn a_layer_declared_larger_than_the_largest_blob_is_refused_before_any_byte_is_fetched() {
    // The default bound (4 GiB) against a descriptor claiming 6 GiB, then an envelope's 1 MiB
    // against one claiming 2 MiB.
    for (max, claimed) in [(None, 6u64 << 30), (Some(1u64 << 20), 2u64 << 20)] {
        let t = tempfile::tempdir().expect("tempdir");
        // (Were it requested, the layer would be a short lie.)
        let (server, image, layer) = claiming(&t, claimed, || {
            Answer::ok("application/octet-stream", vec![0; 1024])
        });
        let access = Access {
            max_blob_bytes: max.unwrap_or(DEFAULT_MAX_BLOB_BYTES),
            ..plain()
        };
        let limit = access.max_blob_bytes;
        let err = ensure(&cache(&t), &image, access)
            .await
            .expect_err("the layer is refused");
        eprintln!("refused as expected: {err}");
        match &err {
            OciError::BlobTooLarge {
                image: i,
                digest,
                declared,
                limit: l,
                bound,
            } => {
                assert_eq!(i, &image.raw);
                assert_eq!(digest, &layer);
                assert_eq!(*declared, Some(claimed));
                assert_eq!(*l, limit);
                assert_eq!(bound, &BlobBound::MaxBlobBytes);
            }
            other => panic!("expected BlobTooLarge, got {other}"),
        }
        let shown = err.to_string();
        assert!(
            shown.contains(&layer)
                && shown.contains(&limit.to_string())
                && shown.contains("max_blob_bytes"),
            "{shown}"
        );
        assert_eq!(
            server.requests_to(&blob_path(&layer)),
            0,
            "no request for the layer"
        );
        assert_eq!(server.sent(), 0);
        assert_nothing_kept(&cache(&t), &layer);
    }
}

#[tokio::test]
async fn a_blob_longer_than_its_descriptor_is_refused_as_soon_as_it_passes_it() {
    let t = tempfile::tempdir().expect("tempdir");
    let claimed = 256u64 << 10;
    // The registry claims 1 GiB and sends for as long as it is read.
    let (server, image, layer) = claiming(&t, claimed, || Answer::Endless { length: 1 << 30 });
    let err = ensure(&cache(&t), &image, plain())
        .await
        .expect_err("the layer is refused");
    eprintln!("refused as expected: {err}");
    assert!(
        matches!(&err, OciError::SizeMismatch { digest, expected, found, .. }
            if digest == &layer && *expected == claimed && found.starts_with("more than")),
        "{err}"
    );
    // It stopped reading at once: what got out is the bound, and what the sockets' buffers
    // and the client's took before it stopped (a few MiB on loopback), not the 1 GiB.
    std::thread::sleep(Duration::from_millis(200));
    let sent = server.sent();
    assert!(sent < claimed + (32 << 20), "{sent} bytes got out");
    assert_nothing_kept(&cache(&t), &layer);
}

#[tokio::test]
async fn a_blob_within_its_descriptor_but_past_the_largest_blob_cannot_be_written() {
    // A manifest (a blob itself, bounded like every other) larger than the envelope allows.
    let t = tempfile::tempdir().expect("tempdir");
    let built = small_image(&t.path().join("layout"));
    let dir = built.dir.clone();
    let server = Server::start(move |r| serve_layout(&dir, r));
    let image = reference(&server, &built.digest);
    let err = ensure(
        &cache(&t),
        &image,
        Access {
            max_blob_bytes: 16,
            ..plain()
        },
    )
    .await
    .expect_err("refused");
    assert!(
        matches!(&err, OciError::BlobTooLarge { digest, limit: 16, bound: BlobBound::MaxBlobBytes, .. } if digest == &built.digest),
        "{err}"
    );
    assert_nothing_kept(&cache(&t), &built.digest);
}

/// A registry serving `built` whose GETs matching `redirected` answer 307 to `to(path)`.
fn redirecting(
    built: &BuiltImage,
    redirected: impl Fn(&str) -> bool + Send + Sync + 'static,
    to: impl Fn(&str) -> String + Send + Sync + 'static,
) -> Server {
    let dir = built.dir.clone();
    Server::start(move |r| {
        if redirected(&r.path) {
            Answer::redirect(&to(&r.path))
        } else {
            serve_layout(&dir, r)
        }
    })
}

#[tokio::test]
async fn a_redirect_to_an_origin_not_admitted_is_refused_before_anything_reaches_it() {
    let t = tempfile::tempdir().expect("tempdir");
    let built = small_image(&t.path().join("layout"));
    let layer = built.layers[0].clone();
    let layer_path = blob_path(&layer);
    let elsewhere = {
        let dir = built.dir.clone();
        Server::start(move |r| serve_layout(&dir, r))
    };

    // The layer's GET, then the manifest's, sent to another loopback port; then to a listed
    // blob host over a scheme it is not listed with.
    let cases: Vec<(&str, Server, Access)> = vec![
        (
            "layer",
            redirecting(&built, move |p| p == layer_path, {
                let to = elsewhere.url();
                move |p| format!("{to}{p}")
            }),
            plain(),
        ),
        (
            "manifest",
            redirecting(&built, |p| p.contains("/manifests/"), {
                let to = elsewhere.url();
                move |p| format!("{to}{p}")
            }),
            plain(),
        ),
        (
            "layer over a scheme not listed",
            redirecting(&built, |p| p.contains("/blobs/"), {
                let to = elsewhere.url();
                move |p| format!("{to}{p}")
            }),
            Access {
                blob_hosts: vec![BlobHost::https(elsewhere.authority())],
                ..plain()
            },
        ),
    ];
    for (case, registry, access) in cases {
        let root = t.path().join(format!("cache-{}", case.replace(' ', "-")));
        let image = reference(&registry, &built.digest);
        let err = ensure(&root, &image, access)
            .await
            .expect_err("the redirect is refused");
        eprintln!("{case}: refused as expected: {err}");
        match &err {
            OciError::Refused {
                image: i, reason, ..
            } => {
                let Refusal::NotAdmitted {
                    url,
                    origin,
                    admitted,
                } = reason.as_ref()
                else {
                    panic!("{case}: expected an origin not admitted, got {reason}");
                };
                assert_eq!(i, &image.raw, "{case}");
                assert_eq!(origin, &elsewhere.url(), "{case}");
                assert!(url.starts_with(&elsewhere.url()), "{case}: {url}");
                assert!(admitted.contains(&registry.url()), "{case}: {admitted}");
            }
            other => panic!("{case}: expected a refused redirect, got {other}"),
        }
        assert!(
            err.to_string().contains("image_blob_hosts"),
            "{case}: {err}"
        );
        assert_eq!(
            elsewhere.connections(),
            0,
            "{case}: nothing reached the origin not admitted"
        );
        for sub in ["images", "tmp"] {
            let left: Vec<_> = std::fs::read_dir(root.join(sub)).expect("dir").collect();
            assert!(left.is_empty(), "{case}: {sub}/ holds {left:?}");
        }
        assert!(!root
            .join("blobs/sha256")
            .join(layer.trim_start_matches("sha256:"))
            .exists());
    }
}

#[tokio::test]
async fn a_redirect_to_a_listed_blob_host_is_followed_and_the_image_unpacks() {
    let t = tempfile::tempdir().expect("tempdir");
    let built = small_image(&t.path().join("layout"));
    let blob_host = {
        let dir = built.dir.clone();
        Server::start(move |r| serve_layout(&dir, r))
    };
    let registry = redirecting(&built, |p| p.contains("/blobs/"), {
        let to = blob_host.url();
        move |p| format!("{to}{p}?signature=secret")
    });
    let image = reference(&registry, &built.digest);
    let unpacked = ensure(
        &cache(&t),
        &image,
        Access {
            blob_hosts: vec![BlobHost::http(blob_host.authority())],
            ..plain()
        },
    )
    .await
    .expect("fetched through the blob host");
    assert_eq!(
        std::fs::read(unpacked.rootfs.join("bin/server")).expect("server"),
        b"#!/bin/sh\necho hi\n"
    );
    assert_eq!(unpacked.fetched.blobs, 3, "manifest, config, layer");
    assert_eq!(blob_host.requests_to(&blob_path(&built.layers[0])), 1);
    assert_eq!(blob_host.requests_to(&blob_path(&built.config_digest)), 1);
    assert_eq!(blob_host.requests_to(&manifest_path(&built.digest)), 0);
}

#[tokio::test]
async fn redirects_are_followed_a_bounded_number_of_times() {
    let t = tempfile::tempdir().expect("tempdir");
    let built = small_image(&t.path().join("layout"));
    let hops = Arc::new(AtomicUsize::new(0));
    let dir = built.dir.clone();
    let counted = Arc::clone(&hops);
    // Every blob GET (and every hop) is sent one hop further on the registry itself.
    let registry = Server::start(move |r| {
        if r.path.contains("/blobs/") || r.path.starts_with("/hop/") {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            Answer::redirect(&format!("/hop/{n}"))
        } else {
            serve_layout(&dir, r)
        }
    });
    let image = reference(&registry, &built.digest);
    let err = ensure(&cache(&t), &image, plain())
        .await
        .expect_err("an endless redirect is refused");
    eprintln!("refused as expected: {err}");
    assert!(
        matches!(&err, OciError::Refused { reason, .. }
            if matches!(reason.as_ref(), Refusal::TooManyRedirects { max, .. } if *max == MAX_REDIRECTS)),
        "{err}"
    );
    assert_eq!(
        hops.load(Ordering::SeqCst),
        MAX_REDIRECTS + 1,
        "the first request and {MAX_REDIRECTS} hops"
    );
}

/// A registry serving `dir` only to requests carrying `Bearer t0k3n`, challenging the others
/// to get it from `realm(its own URL)`; its `/token` hands it out.
fn challenging(dir: PathBuf, realm: impl Fn(&str) -> String + Send + Sync + 'static) -> Server {
    let own = Arc::new(Mutex::new(String::new()));
    let holder = Arc::clone(&own);
    let server = Server::start(move |r| {
        if r.path == "/token" {
            return Answer::ok("application/json", br#"{"token":"t0k3n"}"#.to_vec());
        }
        if r.authorization.as_deref() != Some("Bearer t0k3n") {
            let me = holder
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            return Answer::Full {
                status: 401,
                headers: vec![(
                    "www-authenticate".into(),
                    format!("Bearer realm=\"{}\",service=\"hostile\"", realm(&me)),
                )],
                body: Vec::new(),
            };
        }
        serve_layout(&dir, r)
    });
    *own.lock().unwrap_or_else(PoisonError::into_inner) = server.url();
    server
}

#[tokio::test]
async fn a_token_challenge_is_answered_only_from_an_admitted_token_service() {
    let t = tempfile::tempdir().expect("tempdir");
    let built = small_image(&t.path().join("layout"));
    let elsewhere =
        Server::start(|_| Answer::ok("application/json", br#"{"token":"t0k3n"}"#.to_vec()));

    let token_elsewhere = format!("{}/token", elsewhere.url());
    let refusing = challenging(built.dir.clone(), move |_| token_elsewhere.clone());
    let err = ensure(
        &t.path().join("cache-refused"),
        &reference(&refusing, &built.digest),
        plain(),
    )
    .await
    .expect_err("the token service is not admitted");
    eprintln!("refused as expected: {err}");
    assert!(
        matches!(&err, OciError::Refused { reason, .. }
            if matches!(reason.as_ref(), Refusal::NotAdmitted { origin, .. } if origin == &elsewhere.url())),
        "{err}"
    );
    assert_eq!(
        elsewhere.connections(),
        0,
        "nothing reached the token service"
    );

    // Its own token service: the token is fetched once and sent with every request.
    let registry = challenging(built.dir.clone(), |me| format!("{me}/token"));
    let unpacked = ensure(&cache(&t), &reference(&registry, &built.digest), plain())
        .await
        .expect("fetched with the registry's own token");
    assert!(unpacked.rootfs.join("bin/server").is_file());
    let requests = registry.requests();
    assert_eq!(
        requests.iter().filter(|r| r.path == "/token").count(),
        1,
        "one token for the whole image: {requests:?}"
    );
    for path in [
        manifest_path(&built.digest),
        blob_path(&built.config_digest),
        blob_path(&built.layers[0]),
    ] {
        assert!(
            requests
                .iter()
                .any(|r| r.path == path && r.authorization.as_deref() == Some("Bearer t0k3n")),
            "{path} fetched with the token: {requests:?}"
        );
    }
}
