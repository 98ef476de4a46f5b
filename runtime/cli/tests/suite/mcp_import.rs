//! `escepine import mcp` of real servers (the host-process form, `--unsandboxed`; the sandboxed
//! form is in `sandbox_mcp.rs`):
//!
//! - a Python server speaking plain JSON-RPC (`tests/fixtures/mcp/py/server.py`) with the shapes
//!   the official SDKs cannot send — an open map, a tool without `inputSchema`, a field the
//!   credential-name rule catches, an unannotated tool, a read-only tool without
//!   `outputSchema`: every draft is written, each in its folder, every decision named by tool
//!   and pointer; once decided, the records pass `escepine check` and are called;
//! - the text tool registers and answers `{"text": …}` with no hand edits;
//! - a changed description is refused before any `tools/call` (the server counts its calls),
//!   and the ledger names the change;
//! - a listing naming a tool twice, or a tool repeating `description`, is refused at import
//!   and, when it turns so after a clean import, at the pin check before any `tools/call`
//!   (`tests/fixtures/mcp/py/ambiguous.py`);
//! - a `--read-only` path with `..` is refused with the envelope's message;
//! - a virtualenv's interpreter keeps its own path; servers that cannot start say why;
//! - the workspace's rmcp server (`escepine-mcp-demo`) is imported with its binary's name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use escepine_ledger::record::{CallResult, Record};
use escepine_runtime::mcp::rpc::RawClient;
use serde_json::{json, Value};

use escepine_testkit::bins::workspace_root;
use escepine_testkit::mcp::demo_server;

/// The `escepine` binary of this package.
fn escepine() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_escepine"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

fn write(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).expect("JSON")).expect("write");
}

/// The Python fixture server.
fn py_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/mcp/py/server.py")
}

/// The Python server that dies at start (its SDK "is not installed").
fn py_dies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/mcp/py/dies.py")
}

/// The Python server whose listing turns ambiguous on request.
fn py_ambiguous() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/mcp/py/ambiguous.py")
}

/// `escepine <args…>` run from `cwd`.
fn escepine_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(escepine())
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("run escepine")
}

/// A scenario's directories: drafts, policies (permit all), the server's state, the ledger.
struct Scene {
    _dir: tempfile::TempDir,
    out: PathBuf,
    policies: PathBuf,
    state: PathBuf,
    ledger: PathBuf,
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let policies = dir.path().join("policies");
        let state = dir.path().join("state");
        std::fs::create_dir(&policies).expect("mkdir");
        std::fs::create_dir(&state).expect("mkdir");
        std::fs::write(
            policies.join("all.cedar"),
            "@id(\"permit-all\")\npermit(principal, action, resource);\n",
        )
        .expect("policy");
        Self {
            out: dir.path().join("drafts"),
            ledger: dir.path().join("ledger.db"),
            policies,
            state,
            _dir: dir,
        }
    }

    /// `escepine import mcp --unsandboxed` of `server` with this scene's state.
    fn import_of(&self, server: &Path) -> Output {
        Command::new(escepine())
            .current_dir(workspace_root())
            .args(["import", "mcp", "--unsandboxed", "--out"])
            .arg(&self.out)
            .arg("--")
            .arg(server)
            .arg("--state")
            .arg(&self.state)
            .output()
            .expect("run escepine import")
    }

    /// `escepine import mcp --unsandboxed` of the fixture server with this scene's state.
    fn import(&self) -> Output {
        let out = self.import_of(&py_server());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        out
    }

    fn check(&self) -> Output {
        Command::new(escepine())
            .current_dir(workspace_root())
            .args(["check", "--records"])
            .arg(&self.out)
            .arg("--policies")
            .arg(&self.policies)
            .output()
            .expect("run escepine check")
    }

    /// `escepine call --executor process` of `tool` with `input`.
    fn call(&self, tool: &str, input: Value) -> Output {
        Command::new(escepine())
            .current_dir(workspace_root())
            .args(["call", "--executor", "process", "--records"])
            .arg(&self.out)
            .arg("--policies")
            .arg(&self.policies)
            .args([
                "--principal",
                "Agent::\"importer\"",
                "--tool",
                tool,
                "--input",
            ])
            .arg(input.to_string())
            .arg("--ledger")
            .arg(&self.ledger)
            .output()
            .expect("run escepine call")
    }

    fn calls_counted(&self) -> u32 {
        std::fs::read_to_string(self.state.join("calls"))
            .map(|c| c.trim().parse().expect("a count"))
            .unwrap_or(0)
    }

    fn pending(&self, tool: &str) -> PathBuf {
        self.out.join("needs-decision").join(format!("{tool}.json"))
    }
}

fn comments(record: &Value) -> Vec<String> {
    record["$comment"]
        .as_array()
        .expect("a $comment list")
        .iter()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect()
}

#[test]
fn every_tool_is_drafted_and_every_decision_named_by_tool_and_pointer() {
    let scene = Scene::new();
    let out = scene.import();
    let stdout = text(&out.stdout);

    // The read-only text tool needs no decision; every other one does, and says where.
    assert!(scene.out.join("echo_text.json").is_file(), "{stdout}");
    for tool in ["fetch_page", "server_status", "browser_open", "write_note"] {
        assert!(scene.pending(tool).is_file(), "{tool}: {stdout}");
        assert!(!scene.out.join(format!("{tool}.json")).exists());
    }
    for (tool, pointer) in [
        ("fetch_page", "/input_schema/properties/headers"),
        ("server_status", "/input_schema"),
        ("browser_open", "/input_schema/properties/session"),
        ("write-note", "/side_effect_class"),
    ] {
        assert!(
            stdout.contains(&format!("decide: tool `{tool}` at {pointer}: ")),
            "{tool} {pointer}: {stdout}"
        );
    }
    let decide = |tool: &str, pointer: &str| {
        let r = read(&scene.pending(tool));
        assert!(
            comments(&r)
                .iter()
                .any(|c| c.starts_with(&format!("DECIDE {pointer}: "))),
            "{tool}: {:?}",
            comments(&r)
        );
        r
    };

    // The open map is left open (never closed to `{}`), for a decision.
    let fetch = decide("fetch_page", "/input_schema/properties/headers");
    assert_eq!(
        fetch["input_schema"]["properties"]["headers"],
        json!({"type": "object", "description": "HTTP headers to send."})
    );
    assert_eq!(fetch["input_schema"]["additionalProperties"], false);
    assert_eq!(fetch["open_world"], true);
    // The tool without inputSchema is drafted (no arguments), for a decision.
    let status = decide("server_status", "/input_schema");
    assert_eq!(
        status["input_schema"],
        json!({"type": "object", "additionalProperties": false, "properties": {}})
    );
    // The credential-looking field is kept as the server names it, for a decision.
    let browser = decide("browser_open", "/input_schema/properties/session");
    assert!(browser["input_schema"]["properties"]["session"].is_object());
    assert!(comments(&browser)
        .iter()
        .any(|c| c.contains("x-not-credential")));
    // A session's name is a recognised shape: a note, not a decision.
    assert!(
        comments(&browser).iter().any(|c| c
            .starts_with("REVIEW /input_schema/properties/session_name: ")
            && c.contains("input/recognised-session-name")),
        "{:?}",
        comments(&browser)
    );
    assert!(!comments(&browser)
        .iter()
        .any(|c| c.starts_with("DECIDE /input_schema/properties/session_name")));
    // The unannotated tool gets no guessed class; its title and openWorldHint are kept.
    let note = decide("write_note", "/side_effect_class");
    assert_ne!(note["side_effect_class"], "compensatable");
    assert_eq!(note["title"], "Write a note");
    assert_eq!(note["open_world"], false);
    assert_eq!(note["tool_id"], "write_note");

    // Every draft pins its tool's listed definition.
    for path in [
        scene.out.join("echo_text.json"),
        scene.pending("write_note"),
    ] {
        let r = read(&path);
        let pin = r["endpoint"]["definition_sha256"].as_str().expect("a pin");
        assert!(
            pin.len() == 64 && pin.bytes().all(|b| b.is_ascii_hexdigit()),
            "{pin}"
        );
        assert_eq!(r["endpoint"]["command"], py_server().display().to_string());
    }

    // `check --records OUT` reads only OUT, not its needs-decision folder.
    let checked = scene.check();
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    assert!(
        text(&checked.stdout).starts_with("ok: 1 tools"),
        "{}",
        text(&checked.stdout)
    );

    // A second import keeps the drafts.
    let again = Command::new(escepine())
        .args(["import", "mcp", "--unsandboxed", "--out"])
        .arg(&scene.out)
        .arg("--")
        .arg(py_server())
        .output()
        .expect("run");
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("--force"));
}

/// What `escepine serve --mcp stdio` lists for `records`, read raw.
async fn served_tools(records: &Path, policies: &Path, ledger: &Path) -> Vec<Value> {
    let mut child = tokio::process::Command::new(escepine())
        .args([
            "serve",
            "--mcp",
            "stdio",
            "--executor",
            "process",
            "--records",
        ])
        .arg(records)
        .arg("--policies")
        .arg(policies)
        .args(["--principal", "Agent::\"importer\"", "--ledger"])
        .arg(ledger)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start escepine serve");
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        panic!("no pipes")
    };
    let mut client = RawClient::connect(stdout, stdin, 1 << 20)
        .await
        .expect("initialized");
    let tools = client.list_tools().await.expect("tools/list");
    drop(client);
    let _ = child.kill().await;
    tools
}

#[tokio::test]
async fn a_tool_without_output_schema_registers_and_answers_text_with_no_hand_edits() {
    let scene = Scene::new();
    scene.import();
    let echo = read(&scene.out.join("echo_text.json"));
    let shape = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["text"],
        "properties": {"text": {"type": "string",
                                "description": "The tool's text content blocks, joined with a newline."}}
    });
    assert_eq!(echo["output_schema"], shape);
    assert!(comments(&echo)
        .iter()
        .any(|c| c.starts_with("REVIEW /output_schema")));

    let out = scene.call("echo_text", json!({"text": "hello"}));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let output: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(output, json!({"text": "hello\n(echoed)"}));

    // Another content kind is an output-gate failure unless the record declares it.
    let out = scene.call("echo_text", json!({"text": "x", "image": true}));
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("content"),
        "{}",
        text(&out.stderr)
    );

    // The exports (and `serve`, which lists the same) present the text shape.
    let exported = Command::new(escepine())
        .args(["export", "--format", "mcp", "--records"])
        .arg(&scene.out)
        .output()
        .expect("export");
    assert_eq!(
        exported.status.code(),
        Some(0),
        "{}",
        text(&exported.stderr)
    );
    let listed: Value = serde_json::from_slice(&exported.stdout).expect("JSON");
    let tools = listed
        .get("tools")
        .and_then(Value::as_array)
        .or_else(|| listed.as_array())
        .expect("a tool list");
    let echo = tools
        .iter()
        .find(|t| t["name"] == "echo_text")
        .expect("echo_text exported");
    assert_eq!(echo["outputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["outputSchema"]["required"], json!(["text"]));
    let served = served_tools(&scene.out, &scene.policies, &scene.ledger).await;
    let echo = served
        .iter()
        .find(|t| t["name"] == "echo_text")
        .expect("echo_text served");
    assert_eq!(echo["outputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["outputSchema"]["required"], json!(["text"]));
}

#[test]
fn a_changed_description_is_refused_before_any_call_and_the_ledger_names_it() {
    let scene = Scene::new();
    scene.import();
    // A retry budget, to show the refusal is never retried.
    let path = scene.out.join("echo_text.json");
    let mut echo = read(&path);
    echo["retry"] = json!({"max_attempts": 3, "backoff_ms": 0});
    write(&path, &echo);

    let out = scene.call("echo_text", json!({"text": "one"}));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(scene.calls_counted(), 1);

    std::fs::write(
        scene.state.join("description"),
        "Echo, and also mail it out.",
    )
    .expect("change the description");
    let out = scene.call("echo_text", json!({"text": "two"}));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(scene.calls_counted(), 1, "no tools/call was sent");
    let pin = echo["endpoint"]["definition_sha256"].as_str().expect("pin");
    assert!(stderr.contains("description"), "{stderr}");
    assert!(stderr.contains("Echo, and also mail it out."), "{stderr}");
    assert!(stderr.contains(pin), "names the pin: {stderr}");
    assert!(stderr.contains("no tools/call was sent"), "{stderr}");

    let entries = escepine_ledger::sqlite::read_entries(&scene.ledger).expect("ledger");
    let last = entries
        .iter()
        .rev()
        .find_map(|e| match &e.record {
            Record::Outcome(o) => Some(o.clone()),
            _ => None,
        })
        .expect("an outcome");
    assert_eq!(last.result, CallResult::Failed);
    assert_eq!(
        last.attempts.len(),
        1,
        "a changed definition is not retried"
    );
    let attempt = &last.attempts[0];
    assert_eq!(attempt.error_class.map(|c| c.as_str()), Some("permanent"));
    let error = attempt.error.as_deref().expect("an error");
    assert!(
        error.contains("description") && error.contains(pin),
        "{error}"
    );
    let shown = Command::new(escepine())
        .args(["ledger", "show"])
        .arg(&scene.ledger)
        .output()
        .expect("ledger show");
    assert!(
        text(&shown.stdout).contains("changed the definition of `echo_text`"),
        "{}",
        text(&shown.stdout)
    );
}

/// The listings of `ambiguous.py` that name a tool twice or repeat a key, and what the refusal
/// says of each: the tool and the pointer.
const AMBIGUOUS: [(&str, &str); 2] = [
    (
        "twice",
        "names the tool `echo_text` twice (at /tools/0 and /tools/1 of the listing; the copies \
         differ)",
    ),
    (
        "repeated-key",
        "gives the key `description` twice in the tool `echo_text` (at /tools/0/description of \
         the listing)",
    ),
];

#[test]
fn an_ambiguous_listing_is_refused_at_import() {
    for (listing, named) in AMBIGUOUS {
        let scene = Scene::new();
        std::fs::write(scene.state.join("listing"), listing).expect("listing");
        let out = scene.import_of(&py_ambiguous());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{listing}: {stderr}");
        assert!(
            stderr.contains(&format!("the MCP server `{}`", py_ambiguous().display())),
            "{listing}: names the server: {stderr}"
        );
        assert!(stderr.contains(named), "{listing}: {stderr}");
        assert!(!scene.out.exists(), "{listing}: nothing written");
    }
}

#[test]
fn an_ambiguous_listing_is_refused_at_the_pin_check_before_any_tools_call() {
    let scene = Scene::new();
    let out = scene.import_of(&py_ambiguous());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = scene.out.join("echo_text.json");
    let mut echo = read(&path);
    // A retry budget, to show the refusal is never retried.
    echo["retry"] = json!({"max_attempts": 3, "backoff_ms": 0});
    write(&path, &echo);
    let out = scene.call("echo_text", json!({"text": "one"}));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(scene.calls_counted(), 1);

    for (listing, named) in AMBIGUOUS {
        // Either way the copy a last-wins reader (serde_json) or a first-match lookup keeps
        // is the pinned one: only the strict reading tells.
        std::fs::write(scene.state.join("listing"), listing).expect("listing");
        let out = scene.call("echo_text", json!({"text": "two"}));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{listing}: {stderr}");
        assert_eq!(
            scene.calls_counted(),
            1,
            "{listing}: no tools/call was sent"
        );
        assert!(stderr.contains(named), "{listing}: {stderr}");
        assert!(stderr.contains("no tools/call was sent"), "{stderr}");
        let entries = escepine_ledger::sqlite::read_entries(&scene.ledger).expect("ledger");
        let last = entries
            .iter()
            .rev()
            .find_map(|e| match &e.record {
                Record::Outcome(o) => Some(o.clone()),
                _ => None,
            })
            .expect("an outcome");
        assert_eq!(last.result, CallResult::Failed);
        assert_eq!(last.attempts.len(), 1, "{listing}: not retried");
        assert_eq!(
            last.attempts[0].error_class.map(|c| c.as_str()),
            Some("permanent")
        );
    }
}

#[test]
fn a_read_only_path_is_checked_by_the_envelope_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    for d in ["a", "b", "records", "policies"] {
        std::fs::create_dir(dir.path().join(d)).expect("mkdir");
    }
    let server = py_server().display().to_string();
    let import = |read_only: &str| {
        escepine_in(
            dir.path(),
            &[
                "import",
                "mcp",
                "--unsandboxed",
                "--read-only",
                read_only,
                "--out",
                "drafts",
                "--",
                &server,
            ],
        )
    };
    let joined = dir.path().join("a/../b").display().to_string();
    let why = format!(
        "`{joined}` is not lexically normal: write it without `.`, `..`, `//` or a trailing `/`"
    );
    let out = import("a/../b");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--read-only a/../b: {why}")),
        "{stderr}"
    );
    assert!(!dir.path().join("drafts").exists(), "nothing written");

    // `check` says the same of that path in an envelope.
    let envelope = dir.path().join("envelope.json");
    write(&envelope, &json!({"egress": [], "read_only": [joined]}));
    let checked = escepine_in(
        dir.path(),
        &[
            "check",
            "--records",
            "records",
            "--policies",
            "policies",
            "--envelope",
            "envelope.json",
        ],
    );
    assert_ne!(checked.status.code(), Some(0));
    // The report wraps its lines at 100 columns: compare without layout.
    let bare = |t: &str| -> String {
        t.chars()
            .filter(|c| !c.is_whitespace() && *c != '│')
            .collect()
    };
    let said = text(&checked.stderr) + &text(&checked.stdout);
    assert!(bare(&said).contains(&bare(&why)), "{said}");

    // A normal relative path is joined to the working directory.
    let out = import("b");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let echo = read(&dir.path().join("drafts/echo_text.json"));
    assert_eq!(
        echo["sandbox_profile"]["read_only"],
        json!([dir.path().join("b").display().to_string()])
    );
}

#[test]
fn decided_drafts_pass_check_and_are_called() {
    let scene = Scene::new();
    scene.import();
    let decide = |tool: &str, edit: &dyn Fn(&mut Value)| {
        let mut r = read(&scene.pending(tool));
        edit(&mut r);
        write(&scene.out.join(format!("{tool}.json")), &r);
        std::fs::remove_file(scene.pending(tool)).expect("moved");
    };
    // The open map: agents may send an `accept` header, nothing else.
    decide("fetch_page", &|r| {
        r["input_schema"]["properties"]["headers"] = json!({
            "type": "object", "additionalProperties": false,
            "properties": {"accept": {"type": "string"}}
        });
    });
    // No arguments indeed.
    decide("server_status", &|_| {});
    // A browser window's name, not a credential.
    decide("browser_open", &|r| {
        r["input_schema"]["properties"]["session"]["x-not-credential"] =
            json!("names a browser window the agent opened; no secret");
    });
    // Saving a note replaces it: supersede.
    decide("write_note", &|r| {
        r["side_effect_class"] = json!("supersede")
    });

    let checked = scene.check();
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{}{}",
        text(&checked.stdout),
        text(&checked.stderr)
    );
    assert!(text(&checked.stdout).starts_with("ok: 5 tools"));

    for (tool, input, expected) in [
        (
            "fetch_page",
            json!({"url": "http://x", "headers": {"accept": "text/html"}}),
            json!({"text": "GET http://x with accept"}),
        ),
        ("server_status", json!({}), json!({"text": "up"})),
        (
            "browser_open",
            json!({"session": "w1", "session_name": "t", "page": "p"}),
            json!({"opened": "p in w1"}),
        ),
        ("write_note", json!({"text": "four"}), json!({"saved": 4})),
    ] {
        let out = scene.call(tool, input);
        assert_eq!(out.status.code(), Some(0), "{tool}: {}", text(&out.stderr));
        let output: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(output, expected, "{tool}");
    }
    // The open map stays closed to what was decided.
    let out = scene.call(
        "fetch_page",
        json!({"url": "http://x", "headers": {"cookie": "c"}}),
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    // The intent of the exempted tool's call records the exemption and its reason; the others
    // record none.
    let entries = escepine_ledger::sqlite::read_entries(&scene.ledger).expect("ledger");
    let exemptions: Vec<(String, Vec<(String, String)>)> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Intent(i) => Some((
                i.tool_id.clone(),
                i.credential_exemptions
                    .iter()
                    .map(|x| (x.pointer.clone(), x.reason.clone()))
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    for (tool, recorded) in &exemptions {
        if tool == "browser_open" {
            assert_eq!(
                recorded[0],
                (
                    "/session".to_string(),
                    "names a browser window the agent opened; no secret".to_string()
                ),
                "{exemptions:?}"
            );
            assert_eq!(recorded.len(), 2, "{exemptions:?}");
            assert_eq!(recorded[1].0, "/session_name", "{exemptions:?}");
            assert!(recorded[1].1.starts_with("recognised as"), "{exemptions:?}");
        } else {
            assert!(recorded.is_empty(), "{tool}: {recorded:?}");
        }
    }
    assert!(exemptions.iter().any(|(t, _)| t == "browser_open"));
}

#[test]
fn a_virtualenv_interpreter_keeps_its_own_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let made = Command::new("/usr/bin/python3")
        .args(["-m", "venv", "--without-pip", "venv"])
        .current_dir(dir.path())
        .output()
        .expect("python3 -m venv");
    assert!(made.status.success(), "{}", text(&made.stderr));
    let python = dir.path().join("venv/bin/python");
    assert!(
        std::fs::symlink_metadata(&python)
            .expect("venv python")
            .file_type()
            .is_symlink(),
        "a venv's python is a symlink"
    );
    let server = py_server().display().to_string();
    let out = escepine_in(
        dir.path(),
        &[
            "import",
            "mcp",
            "--unsandboxed",
            "--out",
            "drafts",
            "--",
            "venv/bin/python",
            &server,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let echo = read(&dir.path().join("drafts/echo_text.json"));
    assert_eq!(echo["endpoint"]["command"], python.display().to_string());
    assert_eq!(echo["endpoint"]["args"], json!([server]));
}

#[test]
fn a_server_that_cannot_start_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = escepine_in(
        dir.path(),
        &[
            "import",
            "mcp",
            "--unsandboxed",
            "--out",
            "drafts",
            "--",
            "/nonexistent/server",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("cannot start"),
        "{}",
        text(&out.stderr)
    );

    let dies = py_dies().display().to_string();
    let out = escepine_in(
        dir.path(),
        &[
            "import",
            "mcp",
            "--unsandboxed",
            "--out",
            "drafts",
            "--",
            &dies,
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("ModuleNotFoundError: No module named 'mcp_not_installed'")
            && stderr.contains("exited with status 1"),
        "{stderr}"
    );
    assert!(!dir.path().join("drafts").exists(), "nothing written");

    let out = escepine_in(
        dir.path(),
        &[
            "import",
            "mcp",
            "--image",
            "r@sha256:00",
            "--out",
            "drafts",
            "--",
            &dies,
        ],
    );
    // An image reference without a valid digest is a usage error, before anything starts.
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--image:") && stderr.contains("sha256"),
        "{stderr}"
    );
    // Neither a command nor an image: usage.
    let out = escepine_in(dir.path(), &["import", "mcp", "--out", "drafts"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--image REF"), "{stderr}");
    assert!(!dir.path().join("drafts").exists(), "nothing written");
}

#[test]
fn the_workspace_server_is_imported_by_its_binary_name() {
    let server = demo_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let drafts = dir.path().join("drafts");
    let out = Command::new(escepine())
        .current_dir(workspace_root())
        .args(["import", "mcp", "--unsandboxed", "--out"])
        .arg(&drafts)
        .arg("--")
        .arg(&server)
        .output()
        .expect("run escepine import");
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    // Where the draft goes depends on the record fields this registry knows (`open_world`,
    // which rmcp servers always send): read it from either folder.
    let wc = [
        drafts.join("word_count.json"),
        drafts.join("needs-decision/word_count.json"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .map(|p| read(&p))
    .expect("word_count drafted");
    assert_eq!(wc["endpoint"]["command"], "escepine-mcp-demo");
    assert_eq!(wc["side_effect_class"], "read-only");
    assert_eq!(
        wc["output_schema"]["required"],
        json!(["words", "characters"])
    );
    // `api_key` is a decision, never silently dropped or renamed.
    assert!(
        stdout.contains("decide: tool `lookup_city` at /input_schema/properties/api_key"),
        "{stdout}"
    );
    assert!(drafts.join("needs-decision/lookup_city.json").is_file());
}
