//! `escepine check --sops` over every SOP rejection fixture, and `escepine sop graph`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace")
        .to_path_buf()
}

fn fixtures() -> PathBuf {
    workspace().join("registry-build/tests/fixtures/sops")
}

fn escepine(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(args)
        .output()
        .expect("run escepine")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// `escepine check` over the SOP fixtures' records and policies, with `--sops sops`.
fn check_fixture_sops(sops: &Path) -> Output {
    let fx = fixtures();
    escepine(&[
        "check",
        "--records",
        p(&fx.join("records")),
        "--policies",
        p(&fx.join("policies")),
        "--sops",
        p(sops),
    ])
}

#[test]
fn check_accepts_the_valid_sops() {
    let out = check_fixture_sops(&fixtures().join("valid"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("ok: 3 SOPs valid (bulk 0.2.0-beta.1, triage 1.0.0, trivial 1.0.0)"),
        "{stdout}"
    );
}

#[test]
fn check_accepts_the_catalog_sops() {
    let ws = workspace();
    let out = escepine(&[
        "check",
        "--records",
        p(&ws.join("tools/records")),
        "--policies",
        p(&ws.join("tools/policies")),
        "--envelope",
        p(&ws.join("tools/envelope.json")),
        "--sops",
        p(&ws.join("tools/sops")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("research 1.0.0"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn check_rejects_every_fixture_naming_file_state_and_rule() {
    let expected: BTreeMap<String, Value> = serde_json::from_str(
        &fs::read_to_string(fixtures().join("expected.json")).expect("expected.json"),
    )
    .expect("JSON");
    let mut failures = Vec::new();
    for (name, exp) in &expected {
        let rule = exp["rule"].as_str().expect("rule");
        let file = fixtures().join("invalid").join(format!("{name}.json"));
        let out = check_fixture_sops(&file);
        let stderr = text(&out.stderr);
        if out.status.code() != Some(1) {
            failures.push(format!("{name}: exit {:?}\n{stderr}", out.status.code()));
            continue;
        }
        if !stderr.contains(&format!("{name}.json")) || !stderr.contains(rule) {
            failures.push(format!(
                "{name}: file or rule `{rule}` not named:\n{stderr}"
            ));
        }
        if let Some(state) = exp.get("state").and_then(Value::as_str) {
            if !stderr.contains(&format!("`{state}`")) {
                failures.push(format!("{name}: state `{state}` not named:\n{stderr}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn check_reports_all_sop_files_at_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in ["unknown_tool", "unreachable_state"] {
        let text = fs::read_to_string(fixtures().join("invalid").join(format!("{name}.json")))
            .expect("read")
            .replace("\"triage\"", &format!("\"{name}\""));
        fs::write(tmp.path().join(format!("{name}.json")), text).expect("write");
    }
    let out = check_fixture_sops(tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    for needle in [
        "unknown_tool.json",
        "unreachable_state.json",
        "sop/unknown-tool",
        "sop/unreachable-state",
        "in 2 files",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in\n{stderr}");
    }
}

#[test]
fn graph_prints_mermaid_marking_compensation() {
    let ws = workspace();
    let out = escepine(&[
        "sop",
        "graph",
        p(&ws.join("tools/sops/research.json")),
        "--records",
        p(&ws.join("tools/records")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let m = text(&out.stdout);
    for needle in [
        "stateDiagram-v2",
        "[*] --> search",
        "search --> read : ok",
        "state check_page <<choice>>",
        "check_page --> publish : when /read/output/status_code",
        "check_page --> assemble : otherwise",
        "publish --> compensated : failure / compensate",
        "read --> escalated : failure / halt_and_escalate",
        "class publish compensatable",
        "note right of publish : compensatable, undone by note_retract on rollback",
        "class assemble supersede",
        "done --> [*]",
    ] {
        assert!(m.contains(needle), "missing {needle:?} in\n{m}");
    }
}

#[test]
fn graph_prints_dot() {
    let ws = workspace();
    let out = escepine(&[
        "sop",
        "graph",
        p(&ws.join("tools/sops/research.json")),
        "--records",
        p(&ws.join("tools/records")),
        "--format",
        "dot",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let d = text(&out.stdout);
    assert!(
        d.starts_with("digraph \"research\" {") && d.trim_end().ends_with('}'),
        "{d}"
    );
    for needle in [
        "\"check_page\" [shape=diamond",
        "\"done\" [shape=doublecircle",
        "class=\"compensatable\"",
        "undone by note_retract on rollback",
        "\"read\" -> \"escalated\" [label=\"failure: halt_and_escalate\"",
        "\"check_page\" -> \"publish\" [label=\"/read/output/status_code\\n",
    ] {
        assert!(d.contains(needle), "missing {needle:?} in\n{d}");
    }
    // Balanced quotes and braces: every line is a statement or a brace.
    assert_eq!(d.matches('{').count(), d.matches('}').count(), "{d}");
}

#[test]
fn graph_without_records_checks_the_graph_only() {
    let out = escepine(&[
        "sop",
        "graph",
        p(&fixtures().join("invalid/unknown_tool.json")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no --records"));
    assert!(!text(&out.stdout).contains("compensatable,"));

    let out = escepine(&[
        "sop",
        "graph",
        p(&fixtures().join("invalid/unreachable_state.json")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("sop/unreachable-state"));
}

#[test]
fn graph_rejects_an_invalid_sop_and_bad_usage() {
    let fx = fixtures();
    let out = escepine(&[
        "sop",
        "graph",
        p(&fx.join("invalid/outcome_not_allowed.json")),
        "--records",
        p(&fx.join("records")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("sop/outcome-not-allowed") && stderr.contains("`read`"),
        "{stderr}"
    );

    let out = escepine(&[
        "sop",
        "graph",
        p(&fx.join("valid/triage.json")),
        "--format",
        "svg",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
