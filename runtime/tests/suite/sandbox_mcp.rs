//! `mcp-stdio` inside the sandbox: an existing MCP server binary becomes a governed, sandboxed
//! tool. The workspace's rmcp server (`escepine-mcp-demo`) runs through [`Runtime`] with the
//! [`SandboxExecutor`]; an rmcp probe server (`escepine-mcp-probe`) proves where it ran; servers
//! that stay silent, fail transiently or leave a child behind are classified as for a local
//! process, and the host is checked clean after each scenario. `escepine import mcp` lists
//! servers in the sandbox too, `python3 server.py` from the server's folder included.

use crate::support::host;
use crate::support::sandbox;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::sandbox::{
    executor, mcp_builder, mcp_demo, mcp_probe, mcp_record, run, workspace_root, HostSnapshot,
    MapResolver, UID_RANGE,
};
use escepine_contract::Principal;
use escepine_ledger::record::{CallResult, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::Durability;
use escepine_runtime::executor::{ExecError, Execution, ProcessExecutor};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_runtime::{CallOutcome, Runtime};
use serde_json::json;

/// One attempt of the probe server started with `args`, with no secrets and no egress.
async fn probe_attempt(
    ex: &SandboxExecutor,
    args: &[&str],
    payload: serde_json::Value,
    timeout: Duration,
) -> Result<Execution, ExecError> {
    let rec = mcp_record("probe", &mcp_probe(), args);
    run(ex, &rec, payload, &BTreeMap::new(), &[], timeout).await
}

#[tokio::test]
async fn the_demo_mcp_server_runs_sandboxed_as_governed_tools() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let demo_fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/demo");
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(demo_fixture.join("records"))
            .policies(demo_fixture.join("policies"))
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let bin_dir = mcp_demo().parent().expect("a directory").to_path_buf();
    let ex = executor(MapResolver::default(), dir.path())
        .with_process_executor(ProcessExecutor::new().with_bin_dir(bin_dir));
    let ledger_path = dir.path().join("ledger.db");
    let rt = Runtime::builder(registry)
        .ledger(Arc::new(
            SqliteLedger::open(&ledger_path, Durability::Full).expect("ledger"),
        ))
        .executor(Arc::new(ex))
        .build()
        .expect("runtime");
    let agent = Principal::agent("researcher");

    let out = rt
        .dispatch(&agent, "word_count", json!({ "text": "a bb ccc" }))
        .await
        .expect("word_count");
    assert_eq!(
        out,
        json!({ "words": 3, "characters": 8, "longest": "ccc" })
    );
    let out = rt
        .dispatch(&agent, "lookup_city", json!({ "city": "Oslo" }))
        .await
        .expect("lookup_city");
    assert_eq!(out["country"], "Norway");

    // The tool's own error (`isError`) is a permanent failure, recorded, not retried.
    let err = rt
        .dispatch(&agent, "lookup_city", json!({ "city": "Atlantis" }))
        .await
        .expect_err("unknown city");
    let Some(CallOutcome::Failed { last_error }) = err.outcome() else {
        panic!("not a failure: {err:?}")
    };
    assert!(
        last_error.contains("unknown city `Atlantis`"),
        "{last_error}"
    );

    // Three calls, three sandboxes, all gone; the evidence names every outcome.
    host.assert_clean().await;
    let outcomes: Vec<_> = rt
        .ledger()
        .entries()
        .expect("entries")
        .into_iter()
        .filter_map(|e| match e.record {
            Record::Outcome(o) => Some(o),
            _ => None,
        })
        .collect();
    let results: Vec<CallResult> = outcomes.iter().map(|o| o.result).collect();
    assert_eq!(
        results,
        [CallResult::Ok, CallResult::Ok, CallResult::Failed]
    );
    assert_eq!(outcomes[2].attempts.len(), 1, "a tool error is not retried");
    assert_eq!(
        outcomes[2].attempts[0].error_class.map(|c| c.as_str()),
        Some("permanent")
    );
}

#[tokio::test]
async fn the_mcp_server_sees_only_its_sandbox() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let planted = dir.path().join("planted");
    std::fs::write(&planted, "host file").expect("plant");
    let outside = dir.path().join("escaped");
    let ex = executor(MapResolver::default(), dir.path());
    let rec = mcp_builder("probe", &mcp_probe(), &[])
        .secrets(["T_SECRET"])
        .registered();
    // The executor passes only what the record declares.
    let secrets = BTreeMap::from([
        ("T_SECRET".to_string(), "mcp-s3cret".to_string()),
        ("OTHER_SECRET".to_string(), "undeclared".to_string()),
    ]);
    let payload = json!({
        "planted": planted.display().to_string(),
        "write_outside": outside.display().to_string(),
    });
    let report = run(&ex, &rec, payload, &secrets, &[], Duration::from_secs(20))
        .await
        .expect("the probe answers")
        .output;

    assert_eq!(report["hostname"], "escepine-sandbox", "{report}");
    assert_eq!(report["cwd"], "/workspace", "{report}");
    let pids: Vec<u64> = serde_json::from_value(report["pids"].clone()).expect("pids");
    assert!(pids.contains(&1) && pids.len() <= 3, "{pids:?}");
    assert!(!pids.contains(&u64::from(std::process::id())), "{pids:?}");
    assert_eq!(report["read_planted"], false, "{report}");
    assert_eq!(report["wrote_outside"], false, "{report}");
    assert!(!outside.exists());
    assert_eq!(report["wrote_workspace"], true, "{report}");
    // Uid 0 inside is an unprivileged outside uid.
    let map = report["uid_map"].as_str().expect("a uid map");
    let outside_uid: u32 = map
        .split_whitespace()
        .nth(1)
        .and_then(|u| u.parse().ok())
        .expect("the uid map's outside uid");
    assert!(UID_RANGE.contains(&outside_uid), "{map}");
    // The environment is the tool's: its secret is there, the host's variables are not.
    let env: Vec<String> = serde_json::from_value(report["env"].clone()).expect("env names");
    assert!(env.contains(&"T_SECRET".to_string()), "{env:?}");
    assert!(!env.contains(&"OTHER_SECRET".to_string()), "{env:?}");
    assert!(!env.contains(&"CARGO_MANIFEST_DIR".to_string()), "{env:?}");
    host.assert_clean().await;
}

#[tokio::test]
async fn a_silent_server_times_out_and_its_sandbox_is_destroyed() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let started = Instant::now();
    let err = probe_attempt(&ex, &["silent"], json!({}), Duration::from_millis(800))
        .await
        .expect_err("silent");
    assert!(matches!(err, ExecError::TimedOut(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    host.assert_clean().await;
}

#[tokio::test]
async fn exit_75_before_the_handshake_is_transient() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let err = probe_attempt(&ex, &["tempfail"], json!({}), Duration::from_secs(20))
        .await
        .expect_err("tempfail");
    assert!(err.is_transient(), "exit 75 is transient: {err:?}");
    let err = probe_attempt(&ex, &["no-such-mode"], json!({}), Duration::from_secs(20))
        .await
        .expect_err("exit 2");
    let ExecError::Permanent { message, stderr } = &err else {
        panic!("not permanent: {err:?}")
    };
    assert!(message.contains("exited with status 2"), "{message}");
    assert!(
        stderr.contains("unknown mode"),
        "stderr is kept: {stderr:?}"
    );
    host.assert_clean().await;
}

#[tokio::test]
async fn a_child_left_behind_dies_with_the_sandbox() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path());
    let payload = json!({ "planted": "/nonexistent", "write_outside": "/nonexistent/x" });
    let out = probe_attempt(&ex, &["linger"], payload, Duration::from_secs(20))
        .await
        .expect("the probe answers although a child lingers")
        .output;
    // The lingering child shows in the probe's own PID namespace …
    let pids: Vec<u64> = serde_json::from_value(out["pids"].clone()).expect("pids");
    assert!(pids.len() >= 3, "init, server and its child: {pids:?}");
    // … and is gone with the sandbox.
    host.assert_clean().await;
}

/// The Python fixtures (`tests/fixtures/mcp/py`).
fn py_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp/py")
        .join(name)
}

/// The standard library of `/usr/bin/python3`, which a sandbox needs read-only.
fn python_stdlib() -> std::path::PathBuf {
    let out = std::process::Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .expect("python3");
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn escepine() -> std::path::PathBuf {
    escepine_testkit::bins::path(escepine_testkit::bins::ESCEPINE)
}

#[tokio::test]
async fn import_lists_a_python_server_in_a_sandbox_with_its_read_only_paths() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let (out, state) = (dir.path().join("drafts"), dir.path().join("state"));
    std::fs::create_dir(&state).expect("mkdir");
    let stdlib = python_stdlib();
    let import = |server: &std::path::Path, out: &std::path::Path| {
        std::process::Command::new(escepine())
            .args(["import", "mcp", "--read-only"])
            .arg(&stdlib)
            .arg("--read-only")
            .arg(&state)
            .arg("--out")
            .arg(out)
            .arg("--")
            .arg(server)
            .arg("--state")
            .arg(&state)
            .output()
            .expect("run escepine import")
    };
    let done = import(&py_fixture("server.py"), &out);
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let paths = json!([stdlib.display().to_string(), state.display().to_string()]);
    // The read-only text tool needs no decision (once the registry knows `read_only`).
    let echo = out.join("echo_text.json");
    assert!(echo.is_file(), "{stdout}");
    for draft in [echo, out.join("needs-decision/write_note.json")] {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&draft).expect("draft")).expect("JSON");
        assert_eq!(
            r["sandbox_profile"]["read_only"],
            paths,
            "{}",
            draft.display()
        );
    }

    // The draft, checked as imported, is called in a sandbox holding its read-only paths.
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).expect("mkdir");
    std::fs::write(
        policies.join("all.cedar"),
        "permit(principal, action, resource);\n",
    )
    .expect("policy");
    let called = std::process::Command::new(escepine())
        .args(["call", "--records"])
        .arg(&out)
        .arg("--policies")
        .arg(&policies)
        .args(["--principal", "Agent::\"importer\"", "--tool", "echo_text"])
        .args(["--input", r#"{"text": "boxed"}"#, "--ledger"])
        .arg(dir.path().join("ledger.db"))
        .output()
        .expect("run escepine call");
    assert_eq!(
        called.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    let output: serde_json::Value = serde_json::from_slice(&called.stdout).expect("JSON");
    assert_eq!(output, json!({ "text": "boxed\n(echoed)" }));

    // A server that cannot start in its sandbox says why.
    let failed = import(&py_fixture("dies.py"), &dir.path().join("none"));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("ModuleNotFoundError: No module named 'mcp_not_installed'"),
        "{stderr}"
    );
    host.assert_clean().await;
}

#[tokio::test]
async fn a_server_script_relative_to_the_working_directory_runs_in_the_sandbox() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    // `python3 server.py --state ./state`, as one types it in the server's folder, with the
    // system's `python3` first on PATH (not a version manager's shim, a shell script).
    const PATH: &str = "/usr/bin:/bin";
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("state")).expect("mkdir");
    std::fs::copy(py_fixture("server.py"), work.join("server.py")).expect("copy the server");
    let stdlib = python_stdlib();
    let done = std::process::Command::new(escepine())
        .current_dir(&work)
        .env("PATH", PATH)
        .args(["import", "mcp", "--read-only"])
        .arg(&stdlib)
        .args([
            "--out",
            "drafts",
            "--",
            "python3",
            "server.py",
            "--state",
            "./state",
        ])
        .output()
        .expect("run escepine import");
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let (script, state) = (work.join("server.py"), work.join("state"));
    let at = |p: &std::path::Path| p.display().to_string();
    for (n, given, made) in [(1, "server.py", &script), (3, "./state", &state)] {
        assert!(
            stdout.contains(&format!(
                "made absolute: argument {n} `{given}` -> `{}`",
                at(made)
            )),
            "{stdout}"
        );
    }
    let drafts = work.join("drafts");
    let echo: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(drafts.join("echo_text.json")).expect("the echo_text draft"),
    )
    .expect("JSON");
    assert_eq!(echo["endpoint"]["command"], "python3");
    assert_eq!(
        echo["endpoint"]["args"],
        json!([at(&script), "--state", at(&state)])
    );
    assert_eq!(
        echo["sandbox_profile"]["read_only"],
        json!([at(&stdlib), at(&script), at(&state)])
    );

    // The draft registers as imported, and a governed call runs it in a sandbox.
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).expect("mkdir");
    std::fs::write(
        policies.join("all.cedar"),
        "permit(principal, action, resource);\n",
    )
    .expect("policy");
    let checked = std::process::Command::new(escepine())
        .env("PATH", PATH)
        .args(["check", "--records"])
        .arg(&drafts)
        .arg("--policies")
        .arg(&policies)
        .output()
        .expect("run escepine check");
    assert_eq!(
        checked.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let called = std::process::Command::new(escepine())
        .env("PATH", PATH)
        .args(["call", "--records"])
        .arg(&drafts)
        .arg("--policies")
        .arg(&policies)
        .args(["--principal", "Agent::\"importer\"", "--tool", "echo_text"])
        .args(["--input", r#"{"text": "from the folder"}"#, "--ledger"])
        .arg(dir.path().join("ledger.db"))
        .output()
        .expect("run escepine call");
    assert_eq!(
        called.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    let output: serde_json::Value = serde_json::from_slice(&called.stdout).expect("JSON");
    assert_eq!(output, json!({ "text": "from the folder\n(echoed)" }));
    host.assert_clean().await;
}

#[tokio::test]
async fn an_imported_text_tool_runs_sandboxed_and_a_changed_definition_is_refused() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let (out, state, policies) = (
        dir.path().join("drafts"),
        dir.path().join("state"),
        dir.path().join("policies"),
    );
    std::fs::create_dir(&state).expect("mkdir");
    std::fs::create_dir(&policies).expect("mkdir");
    std::fs::write(
        policies.join("all.cedar"),
        "permit(principal, action, resource);\n",
    )
    .expect("policy");
    let done = std::process::Command::new(escepine())
        .args(["import", "mcp", "--unsandboxed", "--out"])
        .arg(&out)
        .arg("--")
        .arg(py_fixture("server.py"))
        .arg("--state")
        .arg(&state)
        .output()
        .expect("run escepine import");
    assert_eq!(done.status.code(), Some(0));
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(&out)
            .policies(&policies),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    // The interpreter's library and the server's state, read-only in every sandbox. A spec's
    // root is made once per executor, so the call after the change gets a runtime of its own.
    let runtime = |ledger: &str| {
        let ex = executor(MapResolver::default(), dir.path())
            .with_read_only(python_stdlib())
            .with_read_only(&state);
        Runtime::builder(registry.clone())
            .ledger(Arc::new(
                SqliteLedger::open(dir.path().join(ledger), Durability::Full).expect("ledger"),
            ))
            .executor(Arc::new(ex))
            .build()
            .expect("runtime")
    };
    let rt = runtime("before.db");
    let agent = Principal::agent("importer");
    let output = rt
        .dispatch(&agent, "echo_text", json!({ "text": "inside" }))
        .await
        .expect("echo_text in a sandbox");
    assert_eq!(output, json!({ "text": "inside\n(echoed)" }));

    std::fs::write(state.join("description"), "Echo, and also mail it out.").expect("change");
    let rt = runtime("after.db");
    let err = rt
        .dispatch(&agent, "echo_text", json!({ "text": "again" }))
        .await
        .expect_err("a changed definition");
    let Some(CallOutcome::Failed { last_error }) = err.outcome() else {
        panic!("not a failure: {err:?}")
    };
    assert!(
        last_error.contains("changed the definition of `echo_text`")
            && last_error.contains("description")
            && last_error.contains("no tools/call was sent"),
        "{last_error}"
    );
    let outcome = rt
        .ledger()
        .entries()
        .expect("entries")
        .into_iter()
        .rev()
        .find_map(|e| match e.record {
            Record::Outcome(o) => Some(o),
            _ => None,
        })
        .expect("an outcome");
    assert_eq!(outcome.result, CallResult::Failed);
    assert_eq!(outcome.attempts.len(), 1);
    assert_eq!(
        outcome.attempts[0].error_class.map(|c| c.as_str()),
        Some("permanent")
    );
    host.assert_clean().await;
}

#[tokio::test]
async fn a_server_exiting_early_in_its_sandbox_names_its_stderr() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostSnapshot::take(dir.path());
    let ex = executor(MapResolver::default(), dir.path()).with_read_only(python_stdlib());
    let dies = py_fixture("dies.py");
    let why = "ModuleNotFoundError: No module named 'mcp_not_installed'";
    for record in [
        mcp_record("dies_mcp", &dies, &[]),
        sandbox::record_for("dies_json", &dies, &[]),
    ] {
        let err = run(
            &ex,
            &record,
            json!({}),
            &BTreeMap::new(),
            &[],
            Duration::from_secs(20),
        )
        .await
        .expect_err("dies");
        let ExecError::Permanent { message, stderr } = &err else {
            panic!("not permanent: {err:?}")
        };
        assert!(
            message.contains("exited with status 1") && message.contains(why),
            "{}: {message}",
            record.tool_id()
        );
        assert!(
            stderr.contains("Traceback") && stderr.contains(why),
            "{stderr}"
        );
    }
    host.assert_clean().await;
}
