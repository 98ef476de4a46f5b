//! `escepine policy test` over the catalog, over a copy whose LinkedIn forbid is removed, and
//! over malformed test files.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace holds runtime/cli")
        .to_path_buf()
}

/// `escepine policy test` over the catalog's records and envelope.
fn policy_test(policies: &Path, tests: &Path) -> Output {
    let ws = workspace();
    Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["policy", "test", "--records"])
        .arg(ws.join("tools/records"))
        .arg("--envelope")
        .arg(ws.join("tools/envelope.json"))
        .arg("--policies")
        .arg(policies)
        .arg("--tests")
        .arg(tests)
        .output()
        .expect("escepine runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A copy of `tools/policies` without `file`.
fn policies_without(file: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for entry in fs::read_dir(workspace().join("tools/policies")).expect("policies") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("file name");
        if name != file {
            fs::copy(&path, dir.path().join(name)).expect("copy");
        }
    }
    dir
}

#[test]
fn the_catalogs_cases_pass() {
    let ws = workspace();
    let out = policy_test(&ws.join("tools/policies"), &ws.join("tools/policy-tests"));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let count: usize = stdout
        .strip_suffix(" cases passed\n")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {stdout:?}"));
    assert!(count >= 40, "{stdout}");
}

#[test]
fn removing_the_linkedin_forbid_fails_naming_the_file_and_the_cases() {
    let ws = workspace();
    let policies = policies_without("page_read.cedar");
    let tests = ws.join("tools/policy-tests");
    let out = policy_test(policies.path(), &tests);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let file = tests.join("page_read.json").display().to_string();
    for case in [
        "scrape: linkedin.com",
        "scrape: mixed case LinkedIn.COM",
        "scrape: trailing dot",
        "scrape: sub-domain",
        "scrape: IDNA: percent-encoded full-width letters",
        "bulk: one linkedin element among others",
    ] {
        let line = format!(
            "{file}: case \"{case}\": expected deny, got allow (determining: [read-only-tools])"
        );
        assert!(stderr.contains(&line), "missing `{line}` in:\n{stderr}");
    }
    // Every failure is reported at once, then the summary; the other files' cases pass, but for
    // the one flow case that counts on the same forbid (a read held for approval still meets it).
    let flows = tests.join("flows.json").display().to_string();
    let held = format!("{flows}: case \"a held read still meets the LinkedIn forbid\"");
    let failures = stderr.lines().filter(|l| l.contains(": case \"")).count();
    assert!(failures >= 12, "{stderr}");
    assert!(stderr.contains(&held), "{stderr}");
    assert!(
        stderr
            .lines()
            .all(|l| !l.contains(": case \"") || l.starts_with(&file) || l.starts_with(&held)),
        "{stderr}"
    );
    let summary = stderr.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with(&format!("{failures} of ")) && summary.ends_with(" cases failed"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

#[test]
fn malformed_test_files_exit_2_naming_the_file_and_the_pointer() {
    let ws = workspace();
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(
        dir.path().join("typo.json"),
        r#"{"cases": [{"name": "n", "principal": "Agent::\"bob\"", "tool": "web_search",
            "input": {"query": "q"}, "expekt": "allow"}]}"#,
    )
    .expect("write");
    fs::write(dir.path().join("broken.json"), "{\"cases\": [").expect("write");
    fs::write(
        dir.path().join("tool.json"),
        r#"{"cases": [{"name": "n", "principal": "bob", "tool": "web_serch",
            "input": {"query": "q"}, "expect": "allow"}]}"#,
    )
    .expect("write");
    let out = policy_test(&ws.join("tools/policies"), dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for needle in [
        "typo.json",
        "/cases/0/expekt",
        "policy-test/shape",
        "unknown field `expekt`",
        "broken.json",
        "json/syntax",
        "tool.json",
        "/cases/0/principal",
        "/cases/0/tool",
        "did you mean `web_search`?",
    ] {
        assert!(stderr.contains(needle), "missing `{needle}` in:\n{stderr}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let ws = workspace();
    let out = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["policy", "test", "--records"])
        .arg(ws.join("tools/records"))
        .arg("--tests")
        .arg(ws.join("tools/policy-tests"))
        .output()
        .expect("escepine runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--policies"),
        "{}",
        text(&out.stderr)
    );
    let out = policy_test(&ws.join("tools/policies"), &ws.join("no-such-dir"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no-such-dir"),
        "{}",
        text(&out.stderr)
    );
}
