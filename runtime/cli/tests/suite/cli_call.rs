//! `escepine call`: one governed call from the command line, with design.md's exit codes; and
//! that `call`, `run`, `approve`, `serve` and `console` leave nothing of their sandboxes once
//! they have exited.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/path")
}

fn call(ledger: &Path, principal: &str, tool: &str, input: &str, extra: &[&str]) -> Output {
    call_command(ledger, principal, tool, input, extra)
        .output()
        .unwrap()
}

/// The command of [`call`], over the fixtures' records and policies.
fn call_command(
    ledger: &Path,
    principal: &str,
    tool: &str,
    input: &str,
    extra: &[&str],
) -> Command {
    let f = fixtures();
    let mut cmd = call_over(
        &f.join("records"),
        &f.join("policies"),
        ledger,
        principal,
        tool,
        input,
    );
    cmd.args(extra);
    cmd
}

/// `escepine call` of `tool` by `principal` with `input`, over `records` and `policies`.
fn call_over(
    records: &Path,
    policies: &Path,
    ledger: &Path,
    principal: &str,
    tool: &str,
    input: &str,
) -> Command {
    let mut cmd = escepine_over(records, policies, ledger, &["call"]);
    cmd.args(["--principal", principal, "--tool", tool, "--input", input]);
    cmd
}

/// `escepine ARGS` over `records`, `policies`, the fixtures' envelope and `ledger`.
fn escepine_over(records: &Path, policies: &Path, ledger: &Path, args: &[&str]) -> Command {
    let _ = escepine_testkit::testtool::testtool();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_escepine"));
    cmd.args(args)
        .arg("--records")
        .arg(records)
        .arg("--policies")
        .arg(policies)
        .arg("--envelope")
        .arg(fixtures().join("envelope.json"))
        .arg("--ledger")
        .arg(ledger);
    cmd
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The unsandboxed executor, for the scenarios that count calls in a host file.
const PROCESS: &[&str] = &["--executor", "process"];

#[test]
fn exit_codes_follow_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let counter = dir.path().join("counter");
    let c = counter.to_str().unwrap();
    let alice = r#"Agent::"alice""#;

    let ok = call(
        &ledger,
        alice,
        "t_count",
        &format!(r#"{{"counter":"{c}"}}"#),
        PROCESS,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(out, serde_json::json!({"count": 1}));

    let cases: &[(&str, &str, String, i32)] = &[
        (
            r#"Agent::"mallory""#,
            "t_count",
            format!(r#"{{"counter":"{c}"}}"#),
            3,
        ),
        (alice, "t_write", format!(r#"{{"counter":"{c}"}}"#), 3),
        (
            alice,
            "t_count",
            format!(r#"{{"counter":"{c}","extra":1}}"#),
            4,
        ),
        (alice, "t_nope", "{}".into(), 4),
        (alice, "t_fail", format!(r#"{{"counter":"{c}"}}"#), 5),
        (alice, "t_bad_output", format!(r#"{{"counter":"{c}"}}"#), 6),
    ];
    for (principal, tool, input, code) in cases {
        let o = call(&ledger, principal, tool, input, PROCESS);
        assert_eq!(
            o.status.code(),
            Some(*code),
            "{tool} {input}: {}",
            text(&o.stderr)
        );
        assert!(
            o.stdout.is_empty(),
            "nothing is printed on stdout for a failed call"
        );
    }
    let with_nulls = call(
        &ledger,
        alice,
        "t_count",
        &format!(r#"{{"counter":"{c}","note":null}}"#),
        &["--openai-strict", "--executor", "process"],
    );
    assert_eq!(
        with_nulls.status.code(),
        Some(0),
        "{}",
        text(&with_nulls.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap().lines().count(),
        2,
        "only the allowed calls ran"
    );

    let verify = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "verify"])
        .arg(&ledger)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
}

#[test]
fn calls_run_in_the_sandbox_unless_asked_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let host_counter = dir.path().join("counter");
    let c = host_counter.to_str().unwrap();
    let alice = r#"Agent::"alice""#;

    // By default the tool runs in a fresh sandbox: the host's directory is not there to write
    // to, so the tool fails (exit 5) and the host file never appears.
    let refused = call(
        &ledger,
        alice,
        "t_count",
        &format!(r#"{{"counter":"{c}"}}"#),
        &[],
    );
    assert_eq!(refused.status.code(), Some(5), "{}", text(&refused.stderr));
    assert!(!host_counter.exists());

    // Its own workspace is writable, and fresh for every call: the count is 1 each time.
    for _ in 0..2 {
        let ok = call(
            &ledger,
            alice,
            "t_count",
            r#"{"counter":"/workspace/counter"}"#,
            &[],
        );
        assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
        let out: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
        assert_eq!(out, serde_json::json!({"count": 1}));
    }

    // `--executor process` opts out: the same call now writes the host file.
    let unsandboxed = call(
        &ledger,
        alice,
        "t_count",
        &format!(r#"{{"counter":"{c}"}}"#),
        PROCESS,
    );
    assert_eq!(
        unsandboxed.status.code(),
        Some(0),
        "{}",
        text(&unsandboxed.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&host_counter)
            .unwrap()
            .lines()
            .count(),
        1
    );

    let bad = call(
        &ledger,
        alice,
        "t_count",
        r#"{"counter":"/workspace/c"}"#,
        &["--executor", "docker"],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
}

#[test]
fn a_registration_failure_or_a_refused_overlay_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let bad = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["call", "--records", "/no/such/dir", "--policies"])
        .arg(fixtures().join("policies"))
        .args([
            "--principal",
            r#"Agent::"alice""#,
            "--tool",
            "t_count",
            "--input",
            "{}",
            "--ledger",
        ])
        .arg(&ledger)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));

    let overlay = dir.path().join("overlay.json");
    std::fs::write(&overlay, r#"{"tools": {"t_count": ["127.0.0.1:9"]}}"#).unwrap();
    let refused = call(
        &ledger,
        r#"Agent::"alice""#,
        "t_count",
        "{}",
        &["--overlay", overlay.to_str().unwrap()],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("outside the deployment envelope"),
        "{}",
        text(&refused.stderr)
    );

    // Public addresses need the envelope's `public`; a malformed one names the file and field.
    for (overlay_text, expected) in [
        (
            r#"{"public_addresses": ["127.0.0.1"]}"#,
            "the deployment envelope has no `public` entry",
        ),
        (
            r#"{"public_addresses": ["localhost"]}"#,
            "/public_addresses/0",
        ),
    ] {
        let path = overlay.to_str().unwrap();
        std::fs::write(&overlay, overlay_text).unwrap();
        let refused = call(
            &ledger,
            r#"Agent::"alice""#,
            "t_count",
            "{}",
            &["--overlay", path],
        );
        let err = text(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{err}");
        assert!(err.contains(expected), "{err}");
        if expected.starts_with('/') {
            assert!(err.contains(path), "the overlay file is not named: {err}");
        }
    }
}

#[test]
fn a_secrets_file_reaches_the_declaring_tool_only_and_is_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let file = dir.path().join("secrets.env");
    let value = "file-s3cret-VALUE-7731";
    std::fs::write(
        &file,
        format!("# tool credentials\nT_SECRET={value}\nOTHER_SECRET=undeclared-VALUE-7731\n"),
    )
    .unwrap();
    let secrets = ["--secrets", file.to_str().unwrap()];
    let alice = r#"Agent::"alice""#;

    // `t_secret` declares T_SECRET: inside its sandbox the variable holds the file's value,
    // which the tool echoes, and the runtime scrubs before anything leaves.
    let ok = call(
        &ledger,
        alice,
        "t_secret",
        r#"{"name":"T_SECRET"}"#,
        &secrets,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(out, serde_json::json!({"leak": "[REDACTED]"}));
    // An undeclared name is not in its environment at all.
    let other = call(
        &ledger,
        alice,
        "t_secret",
        r#"{"name":"OTHER_SECRET"}"#,
        &secrets,
    );
    assert_eq!(other.status.code(), Some(0), "{}", text(&other.stderr));
    let out: serde_json::Value = serde_json::from_slice(&other.stdout).unwrap();
    assert_eq!(out, serde_json::json!({"leak": ""}));
    // Neither value is anywhere in what the caller or the ledger saw.
    for o in [&ok, &other] {
        assert!(!text(&o.stdout).contains("VALUE-7731"));
        assert!(!text(&o.stderr).contains("VALUE-7731"));
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("ledger.db")
        {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("VALUE-7731"),
                "{}",
                path.display()
            );
        }
    }

    // A malformed file is refused before any call, naming the file and line.
    std::fs::write(&file, "T_SECRET\n").unwrap();
    let bad = call(
        &ledger,
        alice,
        "t_secret",
        r#"{"name":"T_SECRET"}"#,
        &secrets,
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    assert!(
        text(&bad.stderr).contains("secrets.env:1: expected NAME=value"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn a_call_over_its_budget_exits_7_and_the_ledger_names_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let counter = dir.path().join("counter");
    let input = format!(r#"{{"counter":"{}"}}"#, counter.to_str().unwrap());
    let budgets = dir.path().join("budgets.json");
    std::fs::write(
        &budgets,
        r#"{"budgets": [{"id": "alice-once", "principal": "Agent::\"alice\"", "tool": "t_count", "calls": 1}]}"#,
    )
    .unwrap();
    let flags = [
        "--executor",
        "process",
        "--budgets",
        budgets.to_str().unwrap(),
    ];
    let alice = r#"Agent::"alice""#;
    let first = call(&ledger, alice, "t_count", &input, &flags);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    // A new process on the same ledger: the use is in the file.
    let second = call(&ledger, alice, "t_count", &input, &flags);
    assert_eq!(second.status.code(), Some(7), "{}", text(&second.stderr));
    assert!(second.stdout.is_empty());
    assert!(
        text(&second.stderr).contains("budget `alice-once` exceeded"),
        "{}",
        text(&second.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap().lines().count(),
        1,
        "the refused call ran nothing"
    );
    let show = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "show"])
        .arg(&ledger)
        .output()
        .unwrap();
    let shown = text(&show.stdout);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    assert!(shown.contains("outcome    budget_exceeded"), "{shown}");
    assert!(shown.contains("budget     alice-once"), "{shown}");
    // The uses sit beside the chain: it still verifies.
    let verify = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "verify"])
        .arg(&ledger)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));

    std::fs::write(&budgets, r#"{"budgets": [{"tool": "t_nope", "calls": 1}]}"#).unwrap();
    let bad = call(&ledger, alice, "t_count", &input, &flags);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    let err = text(&bad.stderr);
    assert!(
        err.contains(&format!(
            "{}: /budgets/0/tool: no registered tool",
            budgets.display()
        )),
        "{err}"
    );
}

/// Every JSON input of a call refuses a key given twice, naming the file (or flag) and the
/// pointer, before anything runs: the payload, the entities, the overlay, the budgets, and the
/// records and the envelope of the registry.
#[test]
fn every_json_input_refuses_a_key_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let counter = dir.path().join("counter");
    let c = counter.to_str().unwrap();
    let input = format!(r#"{{"counter":"{c}"}}"#);
    let alice = r#"Agent::"alice""#;
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let refused = |out: &Output, code: i32, needles: &[&str]| {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        for needle in needles {
            assert!(err.contains(needle), "`{needle}` not in: {err}");
        }
    };

    let payload = call(
        &ledger,
        alice,
        "t_count",
        &format!(r#"{{"counter":"{c}","counter":"/etc/passwd"}}"#),
        PROCESS,
    );
    refused(&payload, 4, &["--input", "`counter`", "/counter"]);

    let budgets = write(
        "budgets.json",
        r#"{"budgets": [{"tool": "t_count", "calls": 1, "calls": 100}]}"#,
    );
    let b = budgets.to_str().unwrap();
    let over = call(&ledger, alice, "t_count", &input, &["--budgets", b]);
    refused(&over, 1, &[b, "/budgets/0/calls"]);

    let entities = write(
        "entities.json",
        r#"[{"uid": {"type": "Agent", "id": "alice"}, "attrs": {}, "parents": [], "parents": [{"type": "Team", "id": "x"}]}]"#,
    );
    let e = entities.to_str().unwrap();
    let ent = call(&ledger, alice, "t_count", &input, &["--entities", e]);
    refused(&ent, 1, &[e, "/0/parents"]);

    let overlay = write(
        "overlay.json",
        r#"{"tools": {"t_count": ["127.0.0.1:1"], "t_count": ["127.0.0.1:2"]}}"#,
    );
    let o = overlay.to_str().unwrap();
    let ov = call(&ledger, alice, "t_count", &input, &["--overlay", o]);
    refused(&ov, 1, &[o, "/tools/t_count"]);

    // A record and the envelope: registration fails, naming the rule.
    let records = dir.path().join("records");
    std::fs::create_dir(&records).unwrap();
    for entry in std::fs::read_dir(fixtures().join("records")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, records.join(path.file_name().unwrap())).unwrap();
    }
    let count = records.join("t_count.json");
    let original = std::fs::read_to_string(&count).unwrap();
    let doubled = original.replacen(
        "\"timeout_ms\"",
        "\"timeout_ms\": 600000, \"timeout_ms\"",
        1,
    );
    assert_ne!(doubled, original, "the fixture has a timeout");
    std::fs::write(&count, doubled).unwrap();
    let envelope = write(
        "envelope.json",
        r#"{"egress": ["127.0.0.1"], "egress": ["*.example.com"]}"#,
    );
    let registration = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["call", "--records"])
        .arg(&records)
        .arg("--policies")
        .arg(fixtures().join("policies"))
        .arg("--envelope")
        .arg(&envelope)
        .args(["--principal", alice, "--tool", "t_count", "--input", &input])
        .arg("--ledger")
        .arg(&ledger)
        .output()
        .unwrap();
    refused(
        &registration,
        1,
        &[
            "json/duplicate-key",
            "t_count.json",
            "/timeout_ms",
            "envelope.json",
            "/egress",
        ],
    );
    assert!(!counter.exists(), "nothing ran");
    assert!(
        !ledger.exists() || {
            let show = Command::new(env!("CARGO_BIN_EXE_escepine"))
                .args(["ledger", "show"])
                .arg(&ledger)
                .output()
                .unwrap();
            !text(&show.stdout).contains("t_count")
        }
    );
}

/// A failed call's error names its call id and where its evidence is; `ledger show --call`
/// prints that call alone: each attempt with its error and its stderr's last lines.
#[test]
fn a_failed_call_says_where_its_evidence_is() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let counter = dir.path().join("counter");
    let input = format!(r#"{{"counter":"{}"}}"#, counter.to_str().unwrap());
    let failed = call(&ledger, r#"Agent::"alice""#, "t_fail", &input, PROCESS);
    assert_eq!(failed.status.code(), Some(5), "{}", text(&failed.stderr));
    let err = text(&failed.stderr);
    let call_id = err
        .split("(call ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no call id in: {err}"))
        .to_string();
    assert_eq!(call_id.len(), 32, "{err}");
    assert!(err.contains("escepine ledger show --call"), "{err}");
    let show = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "show"])
        .arg(&ledger)
        .args(["--call", &call_id])
        .output()
        .unwrap();
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    let shown = text(&show.stdout);
    assert!(shown.contains(&call_id), "{shown}");
    assert!(shown.contains("attempt 1"), "{shown}");
    assert!(
        shown.contains("stderr | ") && shown.contains("deliberate permanent failure"),
        "{shown}"
    );
    let unknown = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "show"])
        .arg(&ledger)
        .args(["--call", "0123456789abcdef0123456789abcdef"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown.stdout));
}

/// `escepine call` of `t_file` (`runtime/tests/fixtures/files`) in the sandbox, with `extra`.
fn call_file(ledger: &Path, extra: &[&str]) -> Output {
    let f = fixtures().with_file_name("files");
    let tool = escepine_testkit::testtool::testtool();
    let path = format!(
        "{}:{}",
        tool.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_escepine"))
        .env("PATH", path)
        .args(["call", "--records"])
        .arg(f.join("records"))
        .arg("--policies")
        .arg(f.join("policies"))
        .args([
            "--principal",
            r#"Agent::"alice""#,
            "--tool",
            "t_file",
            "--input",
            r#"{"name":"changelog"}"#,
            "--ledger",
        ])
        .arg(ledger)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_file_given_with_file_is_in_the_sandbox_and_hostile_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let changes = dir.path().join("CHANGES.md");
    std::fs::write(&changes, "# 2.0\n").unwrap();
    let given = format!("changelog={}", changes.display());
    let ok = call_file(&ledger, &["--file", &given]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(out["text"], "# 2.0\n");
    assert_eq!(out["chmod"], "EROFS");

    // `ledger show` gives the file's name, size and digest from the call's intent.
    let shown = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "show"])
        .arg(&ledger)
        .output()
        .unwrap();
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    // `printf '# 2.0\n' | sha256sum`
    let digest = "a41bb57f2dfdf82761a62350bd937495cbb3d46ea54157b45a26718835d3cb03";
    let line = text(&shown.stdout)
        .lines()
        .find(|l| l.contains("/workspace/changelog"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", text(&shown.stdout)));
    assert!(line.contains("6 bytes") && line.contains(digest), "{line}");

    // A FIFO with no writer: refused at once, never waited on (the call would hang otherwise).
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let cases: Vec<(String, &str)> = vec![
        (
            format!("changelog={}", fifo.display()),
            "not a regular file (a FIFO)",
        ),
        (
            "changelog=/dev/zero".into(),
            "not a regular file (a device)",
        ),
        (
            "../changelog=/etc/hostname".into(),
            "not a workspace input name",
        ),
        (
            format!("secrets.env={}", changes.display()),
            "`secrets.env` is not a workspace input of `t_file`",
        ),
    ];
    for (arg, message) in &cases {
        let o = call_file(&ledger, &["--file", arg]);
        assert_eq!(o.status.code(), Some(4), "{arg}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(message),
            "{arg}: {}",
            text(&o.stderr)
        );
        assert!(o.stdout.is_empty());
    }
    let missing = call_file(&ledger, &[]);
    assert_eq!(missing.status.code(), Some(4));
    assert!(
        text(&missing.stderr).contains("`changelog` of `t_file` is required"),
        "{}",
        text(&missing.stderr)
    );
}

#[test]
fn a_call_names_its_flow_and_flow_show_prints_it() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let counter = dir.path().join("counter");
    let c = counter.to_str().unwrap();
    let alice = r#"Agent::"alice""#;
    let input = format!(r#"{{"counter":"{c}"}}"#);
    // An id no caller may name, or not an id at all: a usage error, nothing recorded.
    for bad in ["a b", "principal:Agent::\"bob\"", ""] {
        let o = call(
            &ledger,
            alice,
            "t_count",
            &input,
            &["--flow", bad, "--executor", "process"],
        );
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("--flow"), "{}", text(&o.stderr));
    }
    assert!(!counter.exists(), "nothing ran");
    for _ in 0..2 {
        let o = call(
            &ledger,
            alice,
            "t_count",
            &input,
            &["--flow", "cli-task", "--executor", "process"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    }
    let o = call(&ledger, alice, "t_count", &input, PROCESS);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let show = |flow: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_escepine"))
            .args(["flow", "show", "--json"])
            .arg(&ledger)
            .arg(flow)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let named = show("cli-task");
    assert_eq!(named["state"]["calls"], 2, "{named}");
    assert_eq!(named["state"]["tools"], serde_json::json!({"t_count": 2}));
    let default = show("principal:Agent::\"alice\"");
    assert_eq!(default["state"]["calls"], 1, "{default}");
    assert_eq!(show("never-used")["state"]["calls"], 0);
}

/// Records and policies in `dir` for `t_linger`: the testtool's `linger` mode, which leaves a
/// process behind holding the input's `mb` MiB, so that its sandbox's end, which waits for that
/// memory to be freed, outlasts a command's own exit after the result. `policy` is the Cedar
/// policy set. Returns the records and policies directories.
fn lingering_tool(dir: &Path, policy: &str) -> (PathBuf, PathBuf) {
    let records = dir.join("records");
    std::fs::create_dir(&records).unwrap();
    let record = serde_json::json!({
        "tool_id": "t_linger",
        "version": "1.0.0",
        "description": "Leaves a process behind, holding memory.",
        "input_schema": {
            "type": "object",
            "additionalProperties": false,
            "properties": { "mb": { "type": "integer", "minimum": 1 } },
            "required": ["mb"]
        },
        "output_schema": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "lingering": { "type": "integer" },
                "mb": { "type": "integer" }
            },
            "required": ["lingering", "mb"]
        },
        "side_effect_class": "read-only",
        "accepts_credentials": false,
        "timeout_ms": 20000,
        "retry": { "max_attempts": 1, "backoff_ms": 0 },
        "on_failure": ["halt"],
        "endpoint": {
            "transport": "stdio-json",
            "command": escepine_testkit::testtool::testtool(),
            "args": ["linger"]
        },
        "auth": { "secrets": [] },
        "sandbox_profile": { "egress": [], "filesystem": "workspace" }
    });
    std::fs::write(
        records.join("t_linger.json"),
        serde_json::to_string_pretty(&record).unwrap(),
    )
    .unwrap();
    let policies = dir.join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(policies.join("policies.cedar"), policy).unwrap();
    (records, policies)
}

/// Alice may do anything.
const ALICE_MAY: &str = r#"permit(principal == Agent::"alice", action, resource);"#;

/// `escepine call` of `t_linger` by alice, 256 MiB left behind.
fn lingering_call(records: &Path, policies: &Path, ledger: &Path) -> Command {
    call_over(
        records,
        policies,
        ledger,
        r#"Agent::"alice""#,
        "t_linger",
        r#"{"mb":256}"#,
    )
}

/// Runs `cmd` to its end; then nothing of the sandboxes of its calls is left: no memory cgroup
/// (a sandbox's, or an emptied one kept for reuse) and no run directory named for its pid.
fn leaves_nothing(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    nothing_left_of(pid);
    out
}

/// No memory cgroup (a sandbox's, or an emptied one kept for reuse) and no run directory named
/// for the process `pid`, which has exited.
fn nothing_left_of(pid: u32) {
    use escepine_testkit::sandbox_host::{cgroups_of, named_in, SANDBOX_CGROUP, SPARE_CGROUP};
    let left: Vec<_> = [SANDBOX_CGROUP, SPARE_CGROUP]
        .into_iter()
        .flat_map(|prefix| cgroups_of(pid, prefix))
        .collect();
    assert!(
        left.is_empty(),
        "the command's cgroups outlived it: {left:?}"
    );
    let run_dir = escepine_sandbox::default_run_dir();
    let dirs = named_in(&run_dir, &format!("{SANDBOX_CGROUP}{pid}-"));
    assert!(
        dirs.is_empty(),
        "the command's run directories outlived it: {dirs:?}"
    );
}

/// `escepine call` waits, before it exits, until the sandbox of its call has been destroyed (it
/// is destroyed after the call's result), though the tool left a process behind
/// ([`lingering_tool`]).
#[test]
fn a_call_leaves_nothing_of_its_sandbox_once_the_command_has_exited() {
    let dir = tempfile::tempdir().unwrap();
    let (records, policies) = lingering_tool(dir.path(), ALICE_MAY);
    let ledger = dir.path().join("ledger.db");
    for _ in 0..5 {
        let out = leaves_nothing(lingering_call(&records, &policies, &ledger));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(r#""mb":256"#),
            "{}",
            text(&out.stdout)
        );
    }
}

/// `escepine run` waits the same way for the sandboxes of an SOP's steps.
#[test]
fn a_run_leaves_nothing_of_its_sandboxes_once_the_command_has_exited() {
    let dir = tempfile::tempdir().unwrap();
    let (records, policies) = lingering_tool(dir.path(), ALICE_MAY);
    let ledger = dir.path().join("ledger.db");
    let sop = dir.path().join("linger.json");
    std::fs::write(
        &sop,
        serde_json::json!({
            "sop_id": "linger",
            "version": "1.0.0",
            "description": "Two steps whose tool leaves a process behind.",
            "start": "first",
            "states": {
                "first": { "kind": "execution", "tool": "t_linger", "on_failure": "halt", "next": "second" },
                "second": { "kind": "execution", "tool": "t_linger", "on_failure": "halt", "next": "done" },
                "done": { "kind": "terminal" }
            }
        })
        .to_string(),
    )
    .unwrap();
    let proposals = dir.path().join("proposals.json");
    std::fs::write(&proposals, r#"{"first":{"mb":256},"second":{"mb":256}}"#).unwrap();
    for _ in 0..3 {
        let mut cmd = escepine_over(&records, &policies, &ledger, &["run"]);
        cmd.arg(&sop)
            .args(["--principal", r#"Agent::"alice""#, "--proposals"])
            .arg(&proposals);
        let out = leaves_nothing(cmd);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("completed"),
            "{}",
            text(&out.stdout)
        );
    }
}

/// `escepine approve` waits the same way for the sandbox of the call it lets run.
#[test]
fn an_approval_leaves_nothing_of_its_sandbox_once_the_command_has_exited() {
    let dir = tempfile::tempdir().unwrap();
    let (records, policies) = lingering_tool(dir.path(), REVIEWED_LINGERING);
    let ledger = dir.path().join("ledger.db");
    for _ in 0..3 {
        let waiting = lingering_call(&records, &policies, &ledger)
            .output()
            .unwrap();
        assert_eq!(waiting.status.code(), Some(8), "{}", text(&waiting.stderr));
        let id = text(&waiting.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        let mut cmd = escepine_over(&records, &policies, &ledger, &["approve", &id]);
        cmd.args(["--principal", r#"Agent::"bob""#]);
        let out = leaves_nothing(cmd);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(r#""mb":256"#),
            "{}",
            text(&out.stdout)
        );
    }
}

/// `escepine console` waits the same way, once stopped (SIGTERM), for the sandboxes of the
/// calls it let run: three lingering calls, each approved through it by a reviewer's bearer
/// token.
#[test]
fn a_console_leaves_nothing_of_the_sandboxes_of_the_calls_it_approved_once_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let (records, policies) = lingering_tool(dir.path(), REVIEWED_LINGERING);
    let ledger = dir.path().join("ledger.db");
    let waiting: Vec<String> = (0..3)
        .map(|_| {
            let out = lingering_call(&records, &policies, &ledger)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(8), "{}", text(&out.stderr));
            text(&out.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let tokens = dir.path().join("tokens.json");
    std::fs::write(
        &tokens,
        serde_json::json!({ "tok-bob-console-000001": r#"Agent::"bob""# }).to_string(),
    )
    .unwrap();
    let mut cmd = escepine_over(
        &records,
        &policies,
        &ledger,
        &["console", "--listen", "127.0.0.1:0"],
    );
    cmd.arg("--tokens").arg(&tokens);
    let mut console = crate::console::ConsoleProcess::start(cmd);
    let agent = crate::console::agent();
    for id in &waiting {
        let (status, page) = crate::console::body(
            agent
                .post(&console.url(&format!("/approvals/{id}/approve")))
                .header("Authorization", "Bearer tok-bob-console-000001")
                .send_form([("go", "approve")])
                .unwrap(),
        );
        assert_eq!(status, 200, "{page}");
        assert!(page.contains("Approved"), "{page}");
    }
    let pid = console.pid();
    let status = console.terminate();
    assert!(status.success(), "{status:?}");
    nothing_left_of(pid);
}

/// Alice's lingering calls wait for a reviewer; bob reviews.
const REVIEWED_LINGERING: &str = r#"
    @approval("lingering needs a reviewer")
    permit(principal == Agent::"alice", action == Action::"t_linger", resource);
    permit(principal == Agent::"bob", action == Action::"approve", resource);
"#;

/// `escepine serve --mcp stdio` waits the same way, once its client has closed its standard
/// input, for the sandboxes of the calls it served: three lingering calls from rmcp's client.
#[tokio::test]
async fn a_served_session_leaves_nothing_of_its_sandboxes_once_the_server_has_exited() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let (records, policies) = lingering_tool(dir.path(), ALICE_MAY);
    let ledger = dir.path().join("ledger.db");
    let mut cmd = escepine_over(&records, &policies, &ledger, &["serve", "--mcp", "stdio"]);
    cmd.args(["--principal", r#"Agent::"alice""#]);
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(cmd))
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
    let pid = transport.id().expect("the server's pid");
    let client = ().serve(transport).await.expect("initialize");
    for _ in 0..3 {
        let mut params = CallToolRequestParams::new("t_linger");
        params.arguments = serde_json::json!({ "mb": 256 }).as_object().cloned();
        let out = client
            .call_tool(params)
            .await
            .expect("the call is answered");
        assert_ne!(out.is_error, Some(true), "{out:?}");
        assert_eq!(
            out.structured_content.as_ref().and_then(|c| c.get("mb")),
            Some(&serde_json::json!(256)),
            "{out:?}"
        );
    }
    // rmcp's client closes the server's stdin, waits up to 3 s for it to exit, then signals it: an
    // exit sooner is the server's own.
    let closing = std::time::Instant::now();
    client.cancel().await.expect("the session closes");
    assert!(
        closing.elapsed() < std::time::Duration::from_secs(3),
        "the server did not end on its own at the end of its stdin"
    );
    nothing_left_of(pid);
}
