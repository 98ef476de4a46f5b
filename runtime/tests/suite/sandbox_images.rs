//! The MCP servers people have, run in the sandbox, end to end through `escepine check` and
//! `escepine call`: a Python server written with the official MCP Python SDK and a Node server
//! written with the official TypeScript SDK, each from an OCI image pulled by digest from a real
//! registry on loopback (Debian's `docker-registry`), and each from read-only host paths.
//! Nothing is downloaded but what `.ci/fixtures` installed from PyPI and npm.

use crate::support::host;
use escepine_testkit::sample_images;
use std::path::PathBuf;
use std::process::{Command, Output};

use escepine_testkit::fixtures;
use escepine_testkit::registry::Registry;
use serde_json::{json, Value};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The text-result shape of a tool whose server declares no `outputSchema`.
fn text_shape() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["text"],
           "properties": {"text": {"type": "string"}}})
}

fn words_shape() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["words"],
           "properties": {"words": {"type": "integer"}}})
}

/// An `mcp-stdio` record for `tool_id` (the server's tool of that name).
fn record(tool_id: &str, output: Value, endpoint: Value, read_only: &[PathBuf]) -> Value {
    json!({
        "tool_id": tool_id, "version": "1.0.0",
        "description": format!("The fixture server's `{tool_id}`."),
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["text"],
                         "properties": {"text": {"type": "string", "maxLength": 200}}},
        "output_schema": output,
        "side_effect_class": "read-only", "accepts_credentials": false, "timeout_ms": 30000,
        "retry": {"max_attempts": 1, "backoff_ms": 0}, "on_failure": ["halt"],
        "endpoint": endpoint,
        "auth": {"secrets": []},
        "sandbox_profile": {"egress": [], "filesystem": "workspace", "read_only": read_only}
    })
}

/// A scenario: records, an open policy, an envelope, an image cache and a ledger.
struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    fn new(records: &[Value], envelope: Value) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["records", "policies", "cache"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        for r in records {
            let id = r["tool_id"].as_str().expect("an id");
            std::fs::write(
                dir.path().join(format!("records/{id}.json")),
                serde_json::to_string_pretty(r).expect("JSON"),
            )
            .expect("write");
        }
        std::fs::write(
            dir.path().join("policies/open.cedar"),
            "@id(\"permit-all\")\npermit(principal, action, resource);\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("envelope.json"), envelope.to_string()).expect("write");
        Self { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn escepine(&self, args: &[&str]) -> Output {
        Command::new(escepine_testkit::bins::path(
            escepine_testkit::bins::ESCEPINE,
        ))
        .args(args)
        .arg("--records")
        .arg(self.path("records"))
        .arg("--policies")
        .arg(self.path("policies"))
        .arg("--envelope")
        .arg(self.path("envelope.json"))
        .arg("--image-cache")
        .arg(self.path("cache"))
        .output()
        .expect("escepine runs")
    }

    fn check(&self) -> Output {
        self.escepine(&["check"])
    }

    /// `escepine call` in the sandbox; the output JSON, or the whole failure.
    fn call(&self, tool: &str, input: Value) -> Result<Value, String> {
        let ledger = self.path("ledger.db");
        let out = self.escepine(&[
            "call",
            "--principal",
            "Agent::\"tester\"",
            "--tool",
            tool,
            "--input",
            &input.to_string(),
            "--ledger",
            &ledger.display().to_string(),
        ]);
        if out.status.success() {
            serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
        } else {
            Err(format!("{:?}: {}", out.status.code(), text(&out.stderr)))
        }
    }
}

fn image_endpoint(reference: &str) -> Value {
    json!({"transport": "mcp-stdio", "image": reference})
}

#[tokio::test]
async fn the_python_sdk_server_runs_from_its_image_pulled_by_digest() {
    let _host = host::shared().await;
    let registry = Registry::start().expect("a loopback registry");
    let layouts = tempfile::tempdir().expect("tempdir");
    let python = sample_images::python_image(layouts.path());
    let python = sample_images::pushed(&python, &registry.addr(), "mcp/python").await;
    let scene = Scene::new(
        &[
            record("word_count", words_shape(), image_endpoint(&python), &[]),
            record("shout", text_shape(), image_endpoint(&python), &[]),
        ],
        json!({"egress": [], "images": [format!("http://{}", registry.addr())]}),
    );
    let checked = scene.check();
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    let said = text(&checked.stdout);
    assert!(said.contains(&format!("ok: image {python}")), "{said}");
    assert!(
        said.contains("fetched"),
        "check resolves and fetches: {said}"
    );

    assert_eq!(
        scene.call("word_count", json!({"text": "one two three"})),
        Ok(json!({"words": 3}))
    );
    // No outputSchema: the text result reaches the caller as `{"text": …}`.
    assert_eq!(
        scene.call("shout", json!({"text": "hello"})),
        Ok(json!({"text": "HELLO"}))
    );
    // A second call runs in a fresh sandbox on the same cached root.
    assert_eq!(
        scene.call("shout", json!({"text": "again"})),
        Ok(json!({"text": "AGAIN"}))
    );
    let listed = scene.escepine(&["check", "--show-root", "shout"]);
    let listing = text(&listed.stdout);
    assert!(listing.contains("/usr  (from the image)"), "{listing}");
    assert!(listing.contains("/app  (from the image)"), "{listing}");
    assert!(!listing.contains("copied from the host"), "{listing}");
}

#[tokio::test]
async fn the_node_sdk_server_runs_from_its_image() {
    let _host = host::shared().await;
    let registry = Registry::start().expect("a loopback registry");
    let layouts = tempfile::tempdir().expect("tempdir");
    let node = sample_images::node_image(layouts.path());
    let reference = sample_images::pushed(&node, &registry.addr(), "mcp/node").await;
    let scene = Scene::new(
        &[
            record("word_count", words_shape(), image_endpoint(&reference), &[]),
            record("shout", text_shape(), image_endpoint(&reference), &[]),
        ],
        json!({"egress": [], "images": [format!("http://{}", registry.addr())]}),
    );
    let checked = scene.check();
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    assert_eq!(
        scene.call("word_count", json!({"text": "a b"})),
        Ok(json!({"words": 2}))
    );
    assert_eq!(
        scene.call("shout", json!({"text": "node"})),
        Ok(json!({"text": "NODE"}))
    );
}

#[tokio::test]
async fn a_second_runtime_fetches_nothing_and_a_plain_http_registry_needs_the_envelope() {
    let _host = host::shared().await;
    let mut registry = Registry::start().expect("a loopback registry");
    let layouts = tempfile::tempdir().expect("tempdir");
    let python = sample_images::python_image(layouts.path());
    let reference = sample_images::pushed(&python, &registry.addr(), "mcp/python").await;
    let records = [record(
        "shout",
        text_shape(),
        image_endpoint(&reference),
        &[],
    )];

    // Listed without `http://`, the registry is spoken to over HTTPS only: a plain HTTP
    // registry does not answer, and the check names the envelope entry to write.
    let https_only = Scene::new(&records, json!({"egress": [], "images": [registry.addr()]}));
    let refused = https_only.check();
    assert_eq!(refused.status.code(), Some(1));
    let refused_text = text(&refused.stderr);
    assert!(
        refused_text.contains("over HTTPS failed") && refused_text.contains("marks `http://`"),
        "{refused_text}"
    );

    let scene = Scene::new(
        &records,
        json!({"egress": [], "images": [format!("http://{}", registry.addr())]}),
    );
    assert_eq!(
        scene.call("shout", json!({"text": "first"})),
        Ok(json!({"text": "FIRST"}))
    );
    // The registry is gone: whatever runs now comes from the cache.
    registry.stop();
    let checked = scene.check();
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    let said = text(&checked.stdout);
    assert!(
        said.contains(&format!("ok: image {reference} (shout): cached")),
        "{said}"
    );
    assert_eq!(
        scene.call("shout", json!({"text": "second"})),
        Ok(json!({"text": "SECOND"}))
    );
}

#[tokio::test]
async fn a_layer_altered_in_the_registry_is_refused_by_its_digest() {
    let _host = host::shared().await;
    let registry = Registry::start().expect("a loopback registry");
    let layouts = tempfile::tempdir().expect("tempdir");
    let python = sample_images::python_image(layouts.path());
    let reference = sample_images::pushed(&python, &registry.addr(), "mcp/python").await;
    let layer = python.layers[0].clone();
    let blob = registry.blob_path(&layer);
    let mut bytes = std::fs::read(&blob).expect("the layer in the registry");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, bytes).expect("altered");

    let scene = Scene::new(
        &[record(
            "shout",
            text_shape(),
            image_endpoint(&reference),
            &[],
        )],
        json!({"egress": [], "images": [format!("http://{}", registry.addr())]}),
    );
    let checked = scene.check();
    assert_eq!(checked.status.code(), Some(1));
    let said = text(&checked.stderr);
    assert!(said.contains(&layer), "names the layer's digest: {said}");
    let call = scene.call("shout", json!({"text": "x"}));
    assert!(call.is_err(), "no call on an unverified image: {call:?}");
    // Nothing of the altered image was kept.
    let images = scene.path("cache/images");
    let kept = std::fs::read_dir(&images).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 0, "nothing unpacked in {}", images.display());
}

#[tokio::test]
async fn a_layer_larger_than_the_envelopes_largest_blob_is_refused_before_it_is_fetched() {
    let _host = host::shared().await;
    let registry = Registry::start().expect("a loopback registry");
    let layouts = tempfile::tempdir().expect("tempdir");
    let python = sample_images::python_image(layouts.path());
    let reference = sample_images::pushed(&python, &registry.addr(), "mcp/python").await;
    let scene = Scene::new(
        &[record(
            "shout",
            text_shape(),
            image_endpoint(&reference),
            &[],
        )],
        json!({
            "egress": [],
            "images": [format!("http://{}", registry.addr())],
            "image_limits": {"max_blob_bytes": 1048576},
        }),
    );
    let checked = scene.check();
    assert_eq!(checked.status.code(), Some(1));
    let said = text(&checked.stderr);
    assert!(
        said.contains(&python.layers[0])
            && said.contains("max_blob_bytes")
            && said.contains("1048576"),
        "names the layer and the envelope's bound: {said}"
    );
    let cache = scene.path("cache");
    let layer = cache
        .join("blobs/sha256")
        .join(python.layers[0].trim_start_matches("sha256:"));
    assert!(!layer.exists(), "the layer was not fetched");
    for sub in ["images", "tmp"] {
        let kept = std::fs::read_dir(cache.join(sub))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(kept, 0, "nothing left in {sub}/");
    }
}

/// The envelope admitting exactly `paths` as read-only prefixes.
fn read_only_envelope(paths: &[PathBuf]) -> Value {
    json!({"egress": [], "read_only": paths})
}

/// Both tools of a fixture server started by `endpoint` from the read-only host `paths`: checked,
/// then called in the sandbox; the scene for more calls.
fn from_read_only_paths(endpoint: Value, paths: &[PathBuf], words: &str) -> Scene {
    let scene = Scene::new(
        &[
            record("word_count", words_shape(), endpoint.clone(), paths),
            record("shout", text_shape(), endpoint, paths),
        ],
        read_only_envelope(paths),
    );
    let checked = scene.check();
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    let count = words.split_whitespace().count();
    assert_eq!(
        scene.call("word_count", json!({ "text": words })),
        Ok(json!({ "words": count }))
    );
    assert_eq!(
        scene.call("shout", json!({ "text": words })),
        Ok(json!({ "text": words.to_uppercase() }))
    );
    scene
}

#[test]
fn the_python_sdk_server_runs_from_read_only_host_paths() {
    let _host = host::shared_blocking();
    let python = fixtures::python_bin().expect("the fixtures are installed");
    let server = fixtures::server_source("py_sdk_server.py").expect("the server");
    let paths = fixtures::python_read_only_paths().expect("the fixtures are installed");
    let endpoint = json!({"transport": "mcp-stdio", "command": python, "args": [server]});
    from_read_only_paths(endpoint.clone(), &paths, "x y z w");
    // Without the read-only paths the server cannot start, and the failure says why.
    let bare = Scene::new(
        &[record("shout", text_shape(), endpoint, &[])],
        read_only_envelope(&paths),
    );
    let failed = bare
        .call("shout", json!({"text": "x"}))
        .expect_err("no runtime");
    assert!(
        failed.contains("No module named")
            || failed.contains("encodings")
            || failed.contains("No such file"),
        "the failure carries the server's stderr: {failed}"
    );
}

#[test]
fn the_node_sdk_server_runs_from_read_only_host_paths() {
    let _host = host::shared_blocking();
    let node = fixtures::node_bin().expect("the fixtures are installed");
    let server = fixtures::server_source("node_sdk_server.mjs").expect("the server");
    let modules = fixtures::node_modules().expect("the fixtures are installed");
    let modules_parent = modules.parent().expect("a parent").to_path_buf();
    let paths = fixtures::node_read_only_paths().expect("the fixtures are installed");
    let endpoint = json!({"transport": "mcp-stdio", "command": node,
                          "args": [server, "--modules", modules_parent]});
    from_read_only_paths(endpoint, &paths, "n o d e");
}
