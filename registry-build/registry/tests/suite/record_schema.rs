//! `registry-build/record.schema.json`, the record format as a JSON Schema, agrees with the
//! record parser: every record the parser accepts (the catalog, the test fixtures of this crate
//! and of the runtime) validates against it, and every record the parser rejects for a shape
//! reason — an unknown field, a field of the wrong type, a missing required field, both
//! spellings of one field — is rejected by it too. The shape-broken records are the rule
//! fixtures of those rules and mutations of a valid record, field by field, at every depth.

use std::fs;
use std::path::{Path, PathBuf};

use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::diagnostic::SourceFile;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::record::ToolRecord;
use escepine_registry::registry::check_records;
use escepine_registry::rules::record::Context;
use serde_json::{json, Map, Value};

/// The rules a record breaks by its shape alone, which the JSON Schema must catch as well.
const SHAPE_RULES: [&str; 5] = [
    "record/shape",
    "record/unknown-field",
    "record/missing-field",
    "record/field-type",
    "record/duplicate-spelling",
];

/// `registry-build/`, where `record.schema.json` lives.
fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// This crate's test fixtures (`registry-build/registry/tests/fixtures`).
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn validator() -> jsonschema::Validator {
    let path = crate_dir().join("record.schema.json");
    let schema: Value = serde_json::from_str(&read(&path))
        .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    jsonschema::draft202012::meta::validate(&schema)
        .unwrap_or_else(|e| panic!("{}: not a 2020-12 schema: {e}", path.display()));
    jsonschema::draft202012::options()
        .build(&schema)
        .unwrap_or_else(|e| panic!("{}: does not compile: {e}", path.display()))
}

/// The schema's complaints about `value`, one line each (empty when it validates).
fn schema_errors(v: &jsonschema::Validator, value: &Value) -> Vec<String> {
    v.iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Check `files` together (so compensation inverses resolve), with this workspace's binaries and
/// no envelope (coverage is not a shape).
fn parse(files: &[SourceFile]) -> (Vec<ToolRecord>, Diagnostics) {
    let bins = WorkspaceBins::discover(&workspace());
    check_records(
        files,
        &Context {
            envelope: None,
            bins: &bins,
        },
    )
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    out
}

/// Every directory of records the parser is run on, each loaded as one registry.
fn record_dirs() -> Vec<PathBuf> {
    let ws = workspace();
    let mut dirs = vec![
        ws.join("tools/records"),
        fixtures().join("context"),
        crate_dir().join("tests/fixtures/sops/records"),
    ];
    let runtime_fixtures = ws.join("runtime/tests/fixtures");
    let mut stack = vec![runtime_fixtures];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "records") {
                    dirs.push(p.clone());
                }
                stack.push(p);
            }
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn every_record_the_parser_accepts_validates() {
    let v = validator();
    let mut failures = Vec::new();
    let mut accepted = 0;
    for dir in record_dirs() {
        let files: Vec<SourceFile> = json_files(&dir)
            .iter()
            .map(|p| SourceFile::new(p, read(p)))
            .collect();
        let (records, _) = parse(&files);
        for record in &records {
            let value: Value = serde_json::from_str(&read(record.source())).expect("parsed JSON");
            let errors = schema_errors(&v, &value);
            if !errors.is_empty() {
                failures.push(format!(
                    "{}: accepted by the parser, rejected by the schema:\n  {}",
                    record.source().display(),
                    errors.join("\n  ")
                ));
            }
            // The canonical form the runtime exports is a record too.
            let errors = schema_errors(&v, &record.to_json());
            if !errors.is_empty() {
                failures.push(format!(
                    "{}: its canonical form is rejected by the schema:\n  {}",
                    record.source().display(),
                    errors.join("\n  ")
                ));
            }
            accepted += 1;
        }
    }
    // The catalog alone has nine records: a walk that found nothing proves nothing.
    assert!(
        accepted >= 40,
        "only {accepted} accepted records were found"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The rule fixture `name` (`tests/fixtures/rules/<name>.json`) checked with its inverse.
fn rule_fixture(name: &str) -> (PathBuf, Diagnostics) {
    let path = fixtures().join(format!("rules/{name}.json"));
    let inverse = fixtures().join("context/thing_delete.json");
    let files = [
        SourceFile::new(&path, read(&path)),
        SourceFile::new(&inverse, read(&inverse)),
    ];
    let (_, diags) = parse(&files);
    (path, diags)
}

#[test]
fn rule_fixtures_of_shape_rules_are_rejected_by_the_schema() {
    let v = validator();
    let expected: Map<String, Value> =
        serde_json::from_str(&read(&fixtures().join("expected.json"))).expect("expected.json");
    let mut failures = Vec::new();
    let mut shape = 0;
    for (name, rule) in &expected {
        let Some(rule) = rule.as_str().filter(|r| SHAPE_RULES.contains(r)) else {
            continue;
        };
        shape += 1;
        let (path, diags) = rule_fixture(name);
        assert!(
            diags.iter().any(|d| d.rule.id() == rule),
            "{name}: the parser no longer reports {rule}:\n{}",
            diags.render()
        );
        let Ok(value) = serde_json::from_str::<Value>(&read(&path)) else {
            continue; // not JSON at all: no schema applies
        };
        if v.is_valid(&value) {
            failures.push(format!(
                "{name}: the parser rejects it ({rule}), the schema accepts it"
            ));
        }
    }
    assert!(shape >= 3, "only {shape} fixtures of shape rules");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A value of another JSON type than `v`'s.
fn wrong_type(v: &Value) -> Value {
    match v {
        Value::String(_) => json!(42),
        Value::Number(_) => json!("5"),
        Value::Bool(_) => json!("false"),
        Value::Array(_) => json!({}),
        Value::Object(_) => json!("object"),
        Value::Null => json!(1),
    }
}

/// The record at `ptr` (an object) changed by `edit`.
fn edited(base: &Value, ptr: &str, edit: impl FnOnce(&mut Map<String, Value>)) -> Value {
    let mut out = base.clone();
    let obj = out
        .pointer_mut(ptr)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {ptr}"));
    edit(obj);
    out
}

/// Records broken by their shape: from the valid `base`, each object of the record (the record,
/// `retry`, `endpoint`, `auth`, `sandbox_profile`, `compensation`) with an unknown field, with
/// each field of the wrong type, and without each field the format requires.
fn shape_mutations(base: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let objects = [
        "",
        "/retry",
        "/endpoint",
        "/auth",
        "/sandbox_profile",
        "/compensation",
    ];
    for ptr in objects {
        let Some(obj) = base.pointer(ptr).and_then(Value::as_object) else {
            continue;
        };
        out.push((
            format!("{ptr}/retries (an unknown field)"),
            edited(base, ptr, |o| {
                o.insert("retries".into(), json!(3));
            }),
        ));
        for (key, value) in obj {
            if key.starts_with('$') {
                continue;
            }
            let wrong = wrong_type(value);
            out.push((
                format!("{ptr}/{key} of the wrong type ({wrong})"),
                edited(base, ptr, |o| {
                    o.insert(key.clone(), wrong.clone());
                }),
            ));
            let optional = matches!(
                (ptr, key.as_str()),
                (
                    "",
                    "title" | "open_world" | "cedar_action" | "action_groups"
                ) | ("/endpoint", "args" | "sha256" | "definition_sha256")
                    | ("/sandbox_profile", "read_only")
            );
            if !optional {
                out.push((
                    format!("{ptr}/{key} missing"),
                    edited(base, ptr, |o| {
                        o.remove(key);
                    }),
                ));
            }
        }
    }
    out.push((
        "/tool_id beside its alias /name".into(),
        edited(base, "", |o| {
            o.insert("name".into(), json!("other_name"));
        }),
    ));
    out.push((
        "/input_schema beside its alias /payload_schema".into(),
        edited(base, "", |o| {
            let s = o.get("input_schema").cloned().unwrap_or_default();
            o.insert("payload_schema".into(), s);
        }),
    ));
    out.push(("an array, not an object".into(), json!([base.clone()])));
    out
}

#[test]
fn records_broken_by_their_shape_are_rejected_by_parser_and_schema() {
    let v = validator();
    let context = fixtures().join("context");
    let inverse = context.join("thing_delete.json");
    let mut failures = Vec::new();
    let mut tried = 0;
    for base_file in ["valid_base.json", "valid_compensatable.json"] {
        let base_path = context.join(base_file);
        let base: Value = serde_json::from_str(&read(&base_path)).expect("base JSON");
        // The base itself passes both, or the mutations prove nothing.
        let (records, diags) = parse(&[
            SourceFile::new(&base_path, read(&base_path)),
            SourceFile::new(&inverse, read(&inverse)),
        ]);
        assert_eq!(records.len(), 2, "{base_file}: {}", diags.render());
        assert!(schema_errors(&v, &base).is_empty(), "{base_file}");
        for (what, record) in shape_mutations(&base) {
            tried += 1;
            let text = serde_json::to_string_pretty(&record).expect("JSON");
            let path = context.join(format!("{base_file} with {what}"));
            let (records, diags) = parse(&[
                SourceFile::new(&path, text),
                SourceFile::new(&inverse, read(&inverse)),
            ]);
            if records.iter().any(|r| r.source() == path) {
                failures.push(format!("{base_file} with {what}: the parser accepts it"));
            } else if !diags.iter().any(|d| d.is_error() && d.file == path) {
                failures.push(format!("{base_file} with {what}: no error names the file"));
            }
            if v.is_valid(&record) {
                failures.push(format!(
                    "{base_file} with {what}: the parser rejects it ({}), the schema accepts it",
                    diags
                        .iter()
                        .map(|d| d.rule.id())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    assert!(tried >= 60, "only {tried} mutations");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn records_with_the_optional_fields_validate() {
    let v = validator();
    let context = fixtures().join("context");
    let base_path = context.join("valid_base.json");
    let base: Value = serde_json::from_str(&read(&base_path)).expect("base JSON");
    let digest = "0123456789abcdef".repeat(4);
    let variants = [
        (
            "title, open_world, cedar_action, action_groups, args, sha256, secrets, read_only",
            edited(&base, "", |o| {
                o.insert("title".into(), json!("Page read"));
                o.insert("open_world".into(), json!(true));
                o.insert("cedar_action".into(), json!("Action::\"page_read\""));
                o.insert("action_groups".into(), json!(["web-read"]));
                o.insert("$comment".into(), json!("reviewed"));
                let ep = json!({"transport": "stdio-json", "command": "/bin/sh",
                                "args": ["-c", "cat"], "sha256": digest});
                o.insert("endpoint".into(), ep);
                o.insert("auth".into(), json!({"secrets": ["PAGE_API_KEY"]}));
                o.insert(
                    "sandbox_profile".into(),
                    json!({"egress": ["*.example.com", "[::1]:8080"], "filesystem": "workspace",
                           "read_only": ["/usr/lib"]}),
                );
            }),
        ),
        (
            "an image endpoint without a command",
            edited(&base, "/endpoint", |o| {
                o.remove("command");
                o.insert(
                    "image".into(),
                    json!(format!("127.0.0.1:5000/escepine/py-sdk@sha256:{digest}")),
                );
            }),
        ),
        (
            "an mcp-stdio endpoint with its definition digest",
            edited(&base, "/endpoint", |o| {
                o.insert("transport".into(), json!("mcp-stdio"));
                o.insert("definition_sha256".into(), json!(digest));
            }),
        ),
        (
            "the aliases `name` and `payload_schema`",
            edited(&base, "", |o| {
                let id = o.remove("tool_id").unwrap_or_default();
                o.insert("name".into(), id);
                let s = o.remove("input_schema").unwrap_or_default();
                o.insert("payload_schema".into(), s);
            }),
        ),
    ];
    let mut failures = Vec::new();
    for (what, record) in variants {
        let path = context.join(format!("valid_base.json with {what}"));
        let text = serde_json::to_string_pretty(&record).expect("JSON");
        let (records, diags) = parse(&[SourceFile::new(&path, text)]);
        if records.len() != 1 {
            failures.push(format!(
                "{what}: the parser rejects it:\n{}",
                diags.render()
            ));
        }
        let errors = schema_errors(&v, &record);
        if !errors.is_empty() {
            failures.push(format!(
                "{what}: the schema rejects it: {}",
                errors.join("; ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
