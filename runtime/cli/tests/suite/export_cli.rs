//! `escepine export --format mcp|openai|anthropic|gemini --records DIR` as a process.

use crate::export_rules;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use export_rules as rules;
use serde_json::Value;

fn escepine(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(args)
        .output()
        .expect("the escepine binary runs")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn records_in(dir: &Path) -> usize {
    fs::read_dir(dir)
        .expect("a records directory")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
        .count()
}

fn check(format: &str, tool: &Value) -> Vec<String> {
    match format {
        "mcp" => rules::mcp(tool),
        "openai" => rules::openai(tool),
        "anthropic" => rules::anthropic(tool),
        "gemini" => rules::gemini(tool),
        other => panic!("unknown format {other}"),
    }
}

#[test]
fn every_format_exports_the_catalog_and_the_fixtures() {
    let catalog = rules::workspace().join("tools/records");
    let fixtures = rules::fixture_records_dir();
    for dir in [&catalog, &fixtures] {
        for format in ["mcp", "openai", "anthropic", "gemini"] {
            let out = escepine(&["export", "--format", format, "--records", path(dir)]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{format} {}: {stderr}",
                dir.display()
            );
            let tools: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{format}: stdout is not JSON: {e}"));
            let tools = tools.as_array().expect("a JSON array");
            assert_eq!(
                tools.len(),
                records_in(dir),
                "{format}: one definition per record"
            );
            for tool in tools {
                let v = check(format, tool);
                assert!(v.is_empty(), "{format} {}: {}", tool["name"], v.join("\n"));
            }
            assert!(
                stderr.contains("no envelope given"),
                "says the coverage rule was skipped"
            );
        }
    }
}

#[test]
fn policies_and_envelope_are_accepted_and_checked() {
    let ws = rules::workspace();
    let out = escepine(&[
        "export",
        "--format",
        "openai",
        "--records",
        path(&ws.join("tools/records")),
        "--policies",
        path(&ws.join("tools/policies")),
        "--envelope",
        path(&ws.join("tools/envelope.json")),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("[\n  {"), "pretty-printed: {text}");
}

#[test]
fn invalid_records_exit_1_with_the_diagnostics() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut record = rules::record_json("x_open", serde_json::json!({"type": "object"}));
    record["retries"] = Value::from(3);
    fs::write(
        dir.path().join("x_open.json"),
        serde_json::to_string_pretty(&record).expect("JSON"),
    )
    .expect("written");
    let out = escepine(&["export", "--format", "mcp", "--records", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("x_open.json") && stderr.contains("retries"),
        "{stderr}"
    );
}

#[test]
fn a_record_a_provider_cannot_take_fails_that_export_only() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let long = "x".repeat(70);
    let record = rules::record_json(
        &long,
        serde_json::json!({"type": "object", "additionalProperties": false,
                           "properties": {"q": {"type": "string"}}}),
    );
    fs::write(
        dir.path().join("long.json"),
        serde_json::to_string_pretty(&record).expect("JSON"),
    )
    .expect("written");
    for format in ["openai", "anthropic", "gemini"] {
        let out = escepine(&["export", "--format", format, "--records", path(dir.path())]);
        assert_eq!(out.status.code(), Some(1), "{format}");
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("tool `{long}`")) && stderr.contains("tool-name rule"),
            "{format}: {stderr}"
        );
    }
    let out = escepine(&["export", "--format", "mcp", "--records", path(dir.path())]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn usage_errors_exit_2() {
    let records = rules::workspace().join("tools/records");
    let out = escepine(&["export", "--format", "cohere", "--records", path(&records)]);
    assert_eq!(out.status.code(), Some(2));
    let out = escepine(&["export", "--records", path(&records)]);
    assert_eq!(out.status.code(), Some(2));
}
