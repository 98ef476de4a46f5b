//! One failing fixture per registration rule: each fixture is a valid record with exactly one
//! violation, and checking it must report that rule — and only that rule — naming the file.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use escepine_registry::diagnostic::SourceFile;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::registry::check_records;
use escepine_registry::rules::record::Context;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn source(path: &Path) -> SourceFile {
    SourceFile::new(path, fs::read_to_string(path).unwrap())
}

fn envelope() -> Envelope {
    Envelope::load(&fixtures().join("context/envelope.json")).unwrap()
}

#[test]
fn valid_records_pass_every_rule() {
    let ctx_dir = fixtures().join("context");
    let files: Vec<SourceFile> = [
        "valid_base.json",
        "valid_compensatable.json",
        "thing_delete.json",
    ]
    .iter()
    .map(|f| source(&ctx_dir.join(f)))
    .collect();
    let env = envelope();
    let bins = WorkspaceBins::default();
    let (records, diags) = check_records(
        &files,
        &Context {
            envelope: Some(&env),
            bins: &bins,
        },
    );
    assert!(diags.is_empty(), "{}", diags.render());
    assert_eq!(records.len(), 3);
    let ids: Vec<&str> = records.iter().map(|r| r.tool_id()).collect();
    assert_eq!(ids, ["page_read", "thing_create", "thing_delete"]);
}

#[test]
fn each_fixture_breaks_exactly_its_rule() {
    let expected: BTreeMap<String, String> =
        serde_json::from_str(&fs::read_to_string(fixtures().join("expected.json")).unwrap())
            .unwrap();
    let inverse = source(&fixtures().join("context/thing_delete.json"));
    let env = envelope();
    let bins = WorkspaceBins::default();
    let mut failures = Vec::new();
    let mut covered = std::collections::BTreeSet::new();
    for (name, rule) in &expected {
        let path = fixtures().join("rules").join(format!("{name}.json"));
        let files = vec![source(&path), inverse.clone()];
        let (records, diags) = check_records(
            &files,
            &Context {
                envelope: Some(&env),
                bins: &bins,
            },
        );
        let rules: Vec<&str> = diags.iter().map(|d| d.rule.id()).collect();
        let names_file = diags.iter().all(|d| d.file == path);
        let rendered = diags.render();
        if rules.is_empty() || rules.iter().any(|r| r != rule) || !names_file {
            failures.push(format!(
                "{name}: expected only [{rule}], got {rules:?}\n{rendered}"
            ));
        }
        if records.iter().any(|r| r.source() == path) {
            failures.push(format!("{name}: the invalid record was registered"));
        }
        if !rendered.contains(&format!("{name}.json")) || !rendered.contains(rule.as_str()) {
            failures.push(format!(
                "{name}: rendering does not name the file and rule:\n{rendered}"
            ));
        }
        covered.insert(rule.clone());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every record rule has at least one fixture (Cedar rules have their own suite).
    let untested: Vec<&str> = escepine_registry::rule::Rule::ALL
        .iter()
        .map(|r| r.id())
        .filter(|id| {
            !id.starts_with("cedar/")
                // SOP rules have their own suite (`tests/sop_rules.rs`).
                && !id.starts_with("sop/")
                // Policy test files have their own tests (`policy_tests::tests`).
                && !id.starts_with("policy-test/")
                && ![
                    "io/read",
                    "input/missing",
                    "envelope/shape",
                    // envelope files and remarks (not errors): `tests/image_rules.rs`
                    "envelope/images",
                    "envelope/read-only",
                    // envelope files: `tests/remote_rules.rs`, `tests/label_rules.rs`
                    "envelope/remote-ca-files",
                    "envelope/labels",
                    // envelope files: `tests/isolation_rules.rs`
                    "envelope/isolation",
                    "input/credential-exemption",
                    // recognised non-credential shapes (notes): `tests/credential_names.rs`
                    "input/recognised-session-name",
                    "input/recognised-pagination-token",
                    "input/recognised-user-lookup",
                    "endpoint/script-runtime",
                    // covered by `duplicate_ids_are_rejected` (it needs two files)
                    "tool-id/unique",
                    // covered by `ids_with_one_rust_name_are_rejected` (two files, or a
                    // `.cedarschema`)
                    "rust-name/unique",
                    // needs policies: covered in `tests/cedar_binding.rs`
                    "input/per-url-shape",
                    // needs an envelope without `public`: covered in `tests/egress_rules.rs`
                    "sandbox/authorized-urls-public",
                ]
                .contains(id)
        })
        .filter(|id| !covered.contains(*id))
        .collect();
    assert!(
        untested.is_empty(),
        "rules without a failing fixture: {untested:?}"
    );
}

#[test]
fn all_problems_of_all_files_in_one_run() {
    let dir = fixtures().join("rules");
    let files: Vec<SourceFile> = [
        "timeout_zero.json",
        "egress_url.json",
        "credential_password.json",
    ]
    .iter()
    .map(|f| source(&dir.join(f)))
    .collect();
    let bins = WorkspaceBins::default();
    let (_, diags) = check_records(
        &files,
        &Context {
            envelope: None,
            bins: &bins,
        },
    );
    // The three fixtures share a tool id, so the later two are also duplicates; every file
    // is reported.
    let files_named: std::collections::BTreeSet<_> = diags.iter().map(|d| d.file.clone()).collect();
    assert_eq!(files_named.len(), 3, "{}", diags.render());
}

#[test]
fn diagnostics_point_at_line_and_pointer() {
    let path = fixtures().join("rules/timeout_zero.json");
    let bins = WorkspaceBins::default();
    let (_, diags) = check_records(
        &[source(&path)],
        &Context {
            envelope: None,
            bins: &bins,
        },
    );
    let d = diags.iter().next().unwrap();
    assert_eq!(d.pointer.as_deref(), Some("/timeout_ms"));
    let text = fs::read_to_string(&path).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"timeout_ms\""))
        .unwrap()
        + 1;
    assert_eq!(d.line_col.map(|(l, _)| l), Some(line));
    let rendered = d.render();
    assert!(rendered.contains("timeout-ms/positive"), "{rendered}");
    assert!(rendered.contains("\"timeout_ms\": 0"), "{rendered}");
}

#[test]
fn duplicate_ids_are_rejected() {
    let path = fixtures().join("context/valid_base.json");
    let copy = SourceFile::new(
        "copy_of_valid_base.json",
        fs::read_to_string(&path).unwrap(),
    );
    let bins = WorkspaceBins::default();
    let (records, diags) = check_records(
        &[source(&path), copy],
        &Context {
            envelope: None,
            bins: &bins,
        },
    );
    assert!(
        diags.has(escepine_registry::rule::Rule::ToolIdDuplicate),
        "{}",
        diags.render()
    );
    assert_eq!(
        diags.iter().next().unwrap().file,
        PathBuf::from("copy_of_valid_base.json")
    );
    assert_eq!(records.len(), 1);
}

#[test]
fn ids_with_one_rust_name_are_rejected() {
    // `a_b1` and `a_b_1` are both `ToolId::AB1`: each record is reported at its `tool_id`.
    let base = fs::read_to_string(fixtures().join("context/valid_base.json")).unwrap();
    let files: Vec<SourceFile> = ["a_b1", "a_b_1"]
        .iter()
        .map(|id| {
            SourceFile::new(
                format!("{id}.json"),
                base.replace("\"page_read\"", &format!("\"{id}\"")),
            )
        })
        .collect();
    let bins = WorkspaceBins::default();
    let (records, diags) = check_records(
        &files,
        &Context {
            envelope: None,
            bins: &bins,
        },
    );
    assert!(records.is_empty(), "neither is registered");
    let found: Vec<(String, &str, Option<usize>)> = diags
        .iter()
        .map(|d| {
            (
                d.file.display().to_string(),
                d.rule.id(),
                d.line_col.map(|(l, _)| l),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("a_b1.json".to_string(), "rust-name/unique", Some(2)),
            ("a_b_1.json".to_string(), "rust-name/unique", Some(2)),
        ],
        "{}",
        diags.render()
    );
    assert!(diags.render().contains("ToolId::AB1"), "{}", diags.render());
}
