//! Generation from records built in the test (no file system, no cargo).

use escepine_contract::{FailureOutcome, Filesystem, RetryPolicy, SideEffectClass, Transport};
use serde_json::{json, Value};

use super::*;
use crate::record::{CompensationSpec, EndpointSpec, ResolvedCommand, SandboxProfile};

fn record(id: &str, input: Value, output: Value) -> ToolRecord {
    ToolRecord {
        source: format!("/records/{id}.json").into(),
        tool_id: id.to_string(),
        version: semver::Version::new(1, 2, 0),
        description: format!("Does {id}.\n\n    Indented detail."),
        input_schema: input,
        output_schema: output,
        cedar_action: id.to_string(),
        action_groups: vec!["page-read".to_string()],
        side_effect_class: SideEffectClass::ReadOnly,
        compensation: None,
        timeout_ms: 30_000,
        retry: RetryPolicy {
            max_attempts: 3,
            backoff_ms: 2_000,
        },
        on_failure: vec![FailureOutcome::Halt, FailureOutcome::HaltAndEscalate],
        endpoint: EndpointSpec {
            transport: Transport::StdioJson,
            command: "escepine-catalog".to_string(),
            args: vec![id.to_string()],
            sha256: None,
            definition_sha256: None,
            resolved: ResolvedCommand::WorkspaceBin("escepine-catalog".to_string()),
        },
        secrets: vec!["API_KEY".to_string()],
        sandbox_profile: SandboxProfile {
            egress: vec!["api.example.com:443".parse().expect("egress entry")],
            filesystem: Filesystem::Workspace,
        },
    }
}

fn scrape() -> ToolRecord {
    record(
        "firecrawl_scrape",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object", "additionalProperties": false, "required": ["url"],
            "properties": {
                "url": {"type": "string", "format": "uri", "maxLength": 2048,
                        "description": "The page to read."},
                "formats": {"type": "array", "items": {"type": "string", "enum": ["markdown", "html"]}},
                "options": {"$ref": "#/$defs/Options"}
            },
            "$defs": {"Options": {"type": "object", "additionalProperties": false,
                "properties": {"wait_ms": {"type": "integer", "minimum": 0, "maximum": 10000},
                               "tag": {"type": "string", "pattern": "^[a-z]+$"}}}}
        }),
        json!({
            "type": "object", "additionalProperties": false, "required": ["url", "markdown"],
            "properties": {
                "url": {"type": "string", "format": "uri"},
                "markdown": {"type": "string"},
                "links": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                    "required": ["href"], "properties": {"href": {"type": "string", "format": "uri"}}}},
                "fetched": {"type": "string", "format": "date-time"}
            }
        }),
    )
}

fn generated(records: &[ToolRecord]) -> String {
    match generate_records(records) {
        Ok(code) => code,
        Err(e) => panic!("generation failed: {e}"),
    }
}

#[test]
fn every_struct_is_closed_and_uris_are_urls() {
    let code = generated(&[scrape()]);
    let structs = code.matches("pub struct ").count();
    // Marker structs (Tool, actions, UnknownToolId, typify's ConversionError) are not schema
    // objects; every other struct is, and must be closed.
    let markers = code.matches("pub struct Tool;").count()
        + code.matches("pub struct UnknownToolId").count()
        + code.matches("pub struct ConversionError").count()
        + code
            .matches("impl ::escepine_contract::CedarAction")
            .count();
    let closed = code.matches("#[serde(deny_unknown_fields)]").count();
    assert_eq!(closed, structs - markers, "{code}");
    assert!(
        closed >= 4,
        "Input, Options, Output, OutputLinksItem: {code}"
    );
    assert!(
        code.contains("pub url: ::escepine_contract::url::Url"),
        "{code}"
    );
    assert!(
        code.contains("pub href: ::escepine_contract::url::Url"),
        "{code}"
    );
    for foreign in ["regress", "chrono", "uuid"] {
        assert!(!code.contains(foreign), "{foreign} in {code}");
    }
}

#[test]
fn schema_text_is_embedded_once_and_canonical() {
    let r = scrape();
    let code = generated(std::slice::from_ref(&r));
    let text = serde_json::to_string(&r.input_schema).expect("json");
    let literal = format!("{text:?}");
    assert_eq!(code.matches(&literal).count(), 1, "{code}");
    assert!(code.contains("input_schema: INPUT_SCHEMA"));
    assert!(code.contains("output_schema: OUTPUT_SCHEMA"));
    // Key order is the record's (serde_json's `preserve_order`).
    assert!(text.starts_with(r#"{"$schema":"#), "{text}");
}

#[test]
fn contract_actions_ids_and_client() {
    let mut publish = record(
        "note_publish",
        json!({"type": "object", "additionalProperties": false, "properties": {"title": {"type": "string"}}}),
        json!({"type": "object", "additionalProperties": false, "properties": {"note_id": {"type": "string"}}}),
    );
    publish.side_effect_class = SideEffectClass::Compensatable;
    publish.action_groups.clear();
    publish.compensation = Some(CompensationSpec {
        tool: "note_retract".to_string(),
        map: vec![("note_id".to_string(), "/output/note_id".to_string())],
    });
    let code = generated(&[scrape(), publish]);
    for needle in [
        "pub mod firecrawl_scrape {",
        "type Action = super::actions::firecrawl_scrape;",
        "class: ::escepine_contract::SideEffectClass::Compensatable",
        "map: &[(\"note_id\", \"/output/note_id\")]",
        "egress: &[\"api.example.com:443\"]",
        "timeout_ms: 30000,",
        "pub struct read_only;",
        "pub struct page_read;",
        "const ACTION_ID: &'static str = \"page-read\";",
        "const IS_GROUP: bool = true;",
        "FirecrawlScrape,",
        "\"note_publish\" => ::core::result::Result::Ok(Self::NotePublish)",
        "fn firecrawl_scrape(",
        "impl<T: ::escepine_contract::Invoke + ?::core::marker::Sized> Client for T {}",
    ] {
        assert!(code.contains(needle), "missing {needle:?} in\n{code}");
    }
    // Descriptions become docs, dedented so that nothing turns into a doctest.
    assert!(
        code.contains("/// Does firecrawl_scrape.\n///\n/// Indented detail.\n"),
        "{code}"
    );
}

#[test]
fn generation_is_deterministic_and_order_free() {
    let a = record(
        "alpha",
        json!({"type": "object", "additionalProperties": false}),
        json!({"type": "object", "additionalProperties": false}),
    );
    let b = scrape();
    assert_eq!(generated(&[a.clone(), b.clone()]), generated(&[b, a]));
}

#[test]
fn empty_registry_generates() {
    let code = generated(&[]);
    assert!(code.contains("pub enum ToolId {}"), "{code}");
    assert!(code.contains("pub trait Client"), "{code}");
}

#[test]
fn keyword_ids_are_raw_and_clashes_are_errors() {
    let obj = json!({"type": "object", "additionalProperties": false});
    let code = generated(&[record("type", obj.clone(), obj.clone())]);
    assert!(code.contains("pub mod r#type {"), "{code}");
    assert!(code.contains("pub struct r#type;"), "{code}");

    let err = generate_records(&[record("actions", obj.clone(), obj.clone())])
        .expect_err("`actions` clashes");
    assert!(
        err.to_string()
            .contains("clashes with the generated module"),
        "{err}"
    );

    let err = generate_records(&[
        record("a_b1", obj.clone(), obj.clone()),
        record("a_b_1", obj.clone(), obj),
    ])
    .expect_err("same camel name");
    assert!(err.to_string().contains("`AB1`"), "{err}");
}

#[test]
fn defs_that_would_clash_with_the_root_are_renamed() {
    let input = json!({"type": "object", "additionalProperties": false,
        "properties": {"a": {"$ref": "#/$defs/input"}, "b": {"$ref": "#/$defs/Link"}},
        "$defs": {"input": {"type": "object", "additionalProperties": false,
                            "properties": {"x": {"type": "integer"}}},
                  "Link": {"type": "string", "format": "uri"}}});
    let output = json!({"type": "object", "additionalProperties": false,
        "properties": {"l": {"$ref": "#/$defs/Link"}},
        "$defs": {"Link": {"type": "object", "additionalProperties": false,
                           "properties": {"href": {"type": "string"}}}}});
    let code = generated(&[record("clash", input, output)]);
    assert!(
        code.contains("pub a: ::std::option::Option<InputDef>"),
        "{code}"
    );
    assert!(
        code.contains("pub struct Link {"),
        "the output's Link is an object: {code}"
    );
}

/// A valid record file (endpoint `/bin/sh`, which exists) with `extra` merged in.
fn record_file(id: &str, extra: Value) -> String {
    let mut r = json!({
        "tool_id": id,
        "version": "1.0.0",
        "description": "Reads one page.",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["url"],
                         "properties": {"url": {"type": "string", "format": "uri"}}},
        "output_schema": {"type": "object", "additionalProperties": false,
                          "properties": {"text": {"type": "string"}}},
        "side_effect_class": "read-only",
        "accepts_credentials": false,
        "timeout_ms": 1000,
        "retry": {"max_attempts": 1, "backoff_ms": 0},
        "on_failure": ["halt"],
        "endpoint": {"transport": "stdio-json", "command": "/bin/sh"},
        "auth": {"secrets": []},
        "sandbox_profile": {"egress": [], "filesystem": "workspace"}
    });
    if let (Value::Object(r), Value::Object(extra)) = (&mut r, extra) {
        r.extend(extra);
    }
    serde_json::to_string_pretty(&r).expect("json")
}

#[test]
fn builder_writes_once_and_reports_rejected_records() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let records = tmp.path().join("records");
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&records).expect("mkdir");
    std::fs::write(
        records.join("page_read.json"),
        record_file("page_read", json!({})),
    )
    .expect("write");

    let builder = Builder::new()
        .records(&records)
        .out_dir(&out)
        .file_name("tools.rs")
        .cargo_directives(false);
    builder.compile().unwrap_or_else(|e| panic!("{e}"));
    let file = out.join("tools.rs");
    let code = std::fs::read_to_string(&file).expect("generated file");
    assert!(code.contains("pub mod page_read {"), "{code}");

    // An unchanged registry leaves the file (and its mtime) alone.
    let before = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");
    std::thread::sleep(std::time::Duration::from_millis(20));
    builder.compile().unwrap_or_else(|e| panic!("{e}"));
    let after = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(before, after);

    // A typo is a build failure whose text is the rendered diagnostics: file, rule, pointer.
    std::fs::write(
        records.join("page_read.json"),
        record_file("page_read", json!({"retries": 3})),
    )
    .expect("write");
    let err = builder
        .compile()
        .expect_err("`retries` is not a record field");
    assert!(matches!(err, BuildError::Registry(_)));
    let shown = format!("{err:?}");
    assert_eq!(
        shown,
        err.to_string(),
        "Debug shows the rendered diagnostics"
    );
    for needle in [
        "page_read.json",
        "record/unknown-field",
        "retries",
        "problem",
    ] {
        assert!(shown.contains(needle), "missing {needle:?} in\n{shown}");
    }
}

#[test]
fn no_out_dir_outside_cargo_is_an_error() {
    if std::env::var_os("OUT_DIR").is_some() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let err = Builder::new()
        .records(tmp.path())
        .cargo_directives(false)
        .compile()
        .expect_err("no OUT_DIR");
    assert!(matches!(err, BuildError::NoOutDir), "{err}");
}
