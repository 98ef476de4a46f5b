//! Generation from records built in the test (no file system, no cargo).

use escepine_contract::{FailureOutcome, RetryPolicy, SideEffectClass, Transport};
use serde_json::{json, Value};

use super::*;
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;

fn builder(id: &str, input: Value, output: Value) -> RecordBuilder {
    RecordBuilder::new(id)
        .source(format!("/records/{id}.json"))
        .version("1.2.0")
        .description(&format!("Does {id}.\n\n    Indented detail."))
        .input_schema(input)
        .output_schema(output)
        .action_groups(["page-read"])
        .timeout_ms(30_000)
        .retry(RetryPolicy {
            max_attempts: 3,
            backoff_ms: 2_000,
        })
        .on_failure([FailureOutcome::Halt, FailureOutcome::HaltAndEscalate])
        .command("escepine-catalog")
        .workspace_bin("escepine-catalog")
        .args([id])
        .secrets(["API_KEY"])
        .egress(["api.example.com:443"])
}

fn record(id: &str, input: Value, output: Value) -> ToolRecord {
    builder(id, input, output).registered()
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
                "query": {"type": "string", "minLength": 1, "maxLength": 200},
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
                "formats": {"type": "array", "items": {"type": "string", "enum": ["markdown", "html"]}},
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

/// A compensatable tool whose inverse is not among the fixtures (generation does not check).
fn publish() -> ToolRecord {
    builder(
        "note_publish",
        json!({"type": "object", "additionalProperties": false, "properties": {"title": {"type": "string"}}}),
        json!({"type": "object", "additionalProperties": false, "properties": {"note_id": {"type": "string"}}}),
    )
    .class(SideEffectClass::Compensatable)
    .action_groups(Vec::<String>::new())
    .compensation("note_retract", [("note_id", "/output/note_id")])
    .on_failure(FailureOutcome::ALL.iter().copied())
    .secrets(Vec::<String>::new())
    .egress(Vec::<String>::new())
    .registered()
}

/// A tool taking workspace files: a required one (`draft.md`, a name that is no identifier)
/// and an optional one named like a keyword (`type`).
fn attach() -> ToolRecord {
    builder(
        "note_attach",
        json!({"type": "object", "additionalProperties": false, "properties": {"title": {"type": "string"}}}),
        json!({"type": "object", "additionalProperties": false, "properties": {"note_id": {"type": "string"}}}),
    )
    .field(
        "sandbox_profile",
        json!({"egress": [], "filesystem": "workspace", "workspace_inputs": [
            {"name": "draft.md", "max_bytes": 4096},
            {"name": "type", "max_bytes": 16, "required": false}
        ]}),
    )
    .registered()
}

/// An MCP tool on an image, with a definition digest, read-only paths, a title and a hint.
fn srv_time() -> ToolRecord {
    let image = "127.0.0.1:5000/mcp/time@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    builder(
        "srv_time",
        json!({"type": "object", "additionalProperties": false}),
        json!({"type": "object", "additionalProperties": false}),
    )
    .transport(Transport::McpStdio)
    .image(image)
    .args(Vec::<String>::new())
    .definition_sha256(&"ab".repeat(32))
    .read_only(["/usr/lib/python3"])
    .title("Time")
    .open_world(false)
    .registered()
}

/// `$defs` named like the roots, and an output `$def` named like an input one but different.
fn clash() -> ToolRecord {
    let input = json!({"type": "object", "additionalProperties": false,
        "properties": {"a": {"$ref": "#/$defs/input"}, "b": {"$ref": "#/$defs/Link"},
                       "t": {"$ref": "#/$defs/Tool"}},
        "$defs": {"input": {"type": "object", "additionalProperties": false,
                            "properties": {"x": {"type": "integer"}}},
                  "Link": {"type": "string", "format": "uri"},
                  "Tool": {"type": "object", "additionalProperties": false,
                           "properties": {"name": {"type": "string"}}}}});
    let output = json!({"type": "object", "additionalProperties": false,
        "properties": {"l": {"$ref": "#/$defs/Link"}},
        "$defs": {"Link": {"type": "object", "additionalProperties": false,
                           "properties": {"href": {"type": "string"}}}}});
    record("clash", input, output)
}

/// Every fixture: what `tests/golden/fixtures.rs` holds and `tests/suite/golden_compiles.rs`
/// compiles and exercises.
fn fixtures() -> Vec<ToolRecord> {
    let obj = json!({"type": "object", "additionalProperties": false});
    vec![
        scrape(),
        publish(),
        attach(),
        srv_time(),
        record("type", obj.clone(), obj),
        clash(),
    ]
}

/// Compare with the golden file `name` (`tests/golden/`), or rewrite it under `ESCEPINE_BLESS`.
fn check_golden(name: &str, code: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("ESCEPINE_BLESS").is_some() {
        std::fs::write(&path, code).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; generate it with ESCEPINE_BLESS=1", path.display()));
    assert!(
        golden == code,
        "the generated code differs from {}; review and regenerate with ESCEPINE_BLESS=1:\n{code}",
        path.display()
    );
}

#[test]
fn fixtures_generate_the_golden_file() {
    check_golden("fixtures.rs", &generated(&fixtures()));
}

#[test]
fn empty_registry_generates_the_golden_file() {
    check_golden("empty.rs", &generated(&[]));
}

#[test]
fn string_bounds_stay_in_the_schema_and_enums_are_shared() {
    // No newtype for a bounded string; the output's `formats` enum is the input's.
    let space = types::one_space(&scrape());
    assert_eq!(
        space["Input"]["properties"]["query"],
        json!({"type": "string"}),
        "{space:#?}"
    );
    assert_eq!(
        space["Input"]["properties"]["formats"]["items"],
        json!({"$ref": "#/definitions/Formats"})
    );
    assert_eq!(
        space["Output"]["properties"]["formats"]["items"],
        json!({"$ref": "#/definitions/Formats"})
    );
    assert_eq!(space["Formats"]["enum"], json!(["markdown", "html"]));
    // The registered schema keeps every bound.
    assert_eq!(
        scrape().input_schema()["properties"]["query"]["maxLength"],
        200
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
fn clashing_and_unusable_ids_are_errors() {
    let obj = json!({"type": "object", "additionalProperties": false});
    for id in ["actions", "error", "sops", "crate", "self"] {
        let err = generate_records(&[record(id, obj.clone(), obj.clone())])
            .expect_err("not a usable module name");
        assert!(matches!(err, BuildError::Name { .. }), "{id}: {err}");
        assert!(err.to_string().contains(&format!("`{id}`")), "{err}");
    }
    let err = generate_records(&[
        record("a_b1", obj.clone(), obj.clone()),
        record("a_b_1", obj.clone(), obj),
    ])
    .expect_err("same camel name");
    assert!(err.to_string().contains("`AB1`"), "{err}");
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
    assert_eq!(
        code,
        builder.generate().unwrap_or_else(|e| panic!("{e}")),
        "compile writes what generate returns"
    );

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

/// A contract as `#[tool]` in a crate named `word-tools` would write it.
fn linked_contract(id: &'static str) -> escepine_contract::Contract {
    use escepine_contract::{Contract, Endpoint, Filesystem, SideEffectClass, Transport};
    Contract {
        id,
        version: "1.0.0",
        title: None,
        description: "Counts words.",
        open_world: None,
        cedar_action: id,
        action_groups: &[],
        class: SideEffectClass::ReadOnly,
        compensation: None,
        timeout_ms: 2000,
        retry: RetryPolicy {
            max_attempts: 1,
            backoff_ms: 0,
        },
        on_failure: &[FailureOutcome::Halt],
        endpoint: Endpoint {
            transport: Transport::StdioJson,
            command: "word-tools",
            args: &["t_count"],
            sha256: None,
            image: None,
            definition_sha256: None,
            url: None,
            tool: None,
        },
        secrets: &[],
        egress: &[],
        filesystem: Filesystem::Workspace,
        isolation: escepine_contract::Isolation::Namespaces,
        read_only: &[],
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}"#,
        output_schema: r#"{"type":"object","properties":{"words":{"type":"integer","minimum":0}},"required":["words"],"additionalProperties":false}"#,
    }
}

#[test]
fn linked_tools_become_records_served_by_the_program() {
    let code = Builder::new()
        .linked_tools([linked_contract("t_count")])
        .cargo_directives(false)
        .manifest_dir("/nowhere")
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));
    // The typed client has the linked tool; the registry names its host and embeds its record.
    assert!(code.contains("pub mod t_count"), "{code}");
    assert!(code.contains(r#"linked_hosts: &["word-tools"]"#), "{code}");
    assert!(code.contains(r#"workspace_bins: &[]"#), "{code}");
    assert!(
        code.contains(r#"path: "linked/word-tools/t_count.json""#),
        "{code}"
    );
    assert!(!code.contains("embed_file!(\"/linked"), "{code}");

    // What the runtime loads back resolves the host as linked (no binary looked for on disk).
    let sources = escepine_registry::registry::Sources::new()
        .record_text(
            "linked/word-tools/t_count.json",
            serde_json::to_string(&linked_contract("t_count").to_record().expect("json"))
                .expect("text"),
        )
        .workspace_bins(Vec::<String>::new())
        .linked_hosts(["word-tools"]);
    let registry =
        escepine_registry::registry::load(&sources).unwrap_or_else(|d| panic!("{}", d.render()));
    assert_eq!(
        registry.records()[0].endpoint().resolved,
        escepine_registry::record::ResolvedCommand::Linked("word-tools".into())
    );
    // Without the host linked, the same record names a binary nobody declares.
    let unlinked = escepine_registry::registry::Sources {
        linked_hosts: Default::default(),
        ..sources
    };
    // A linked host serves stdio-json; a record naming it as an MCP server is refused.
    let mut mcp = linked_contract("t_count").to_record().expect("json");
    mcp["endpoint"]["transport"] = json!("mcp-stdio");
    let as_mcp = escepine_registry::registry::Sources::new()
        .record_text("linked/word-tools/t_count.json", mcp.to_string())
        .workspace_bins(Vec::<String>::new())
        .linked_hosts(["word-tools"]);
    let d = escepine_registry::registry::load(&as_mcp).expect_err("mcp-stdio on a linked host");
    assert!(
        d.render().contains("a tool host linked into this program"),
        "{}",
        d.render()
    );
    let d = escepine_registry::registry::load(&unlinked).expect_err("unresolvable");
    assert!(d.render().contains("endpoint/resolvable"), "{}", d.render());
    assert!(
        d.render().contains("linked/word-tools/t_count.json"),
        "{}",
        d.render()
    );
}

#[test]
fn only_a_host_binary_over_stdio_json_can_be_linked() {
    use escepine_contract::Transport;
    let refused = |c: escepine_contract::Contract| -> String {
        Builder::new()
            .linked_tools([c])
            .cargo_directives(false)
            .generate()
            .expect_err("refused")
            .to_string()
    };
    let mut image = linked_contract("t_count");
    image.endpoint.image = Some("127.0.0.1:5000/tools@sha256:00");
    assert!(refused(image).contains("runs on the image"));
    let mut mcp = linked_contract("t_count");
    mcp.endpoint.transport = Transport::McpStdio;
    assert!(refused(mcp).contains("speaks `mcp-stdio`"));
    for command in [
        "/usr/bin/word-tools",
        "../word-tools",
        "",
        "--escepine-linked-host",
    ] {
        let mut c = linked_contract("t_count");
        c.endpoint.command = command;
        let e = refused(c);
        assert!(e.contains("cannot link tool `t_count`"), "{command}: {e}");
        assert!(
            e.contains("is not the bare name of a tool host"),
            "{command}: {e}"
        );
    }
    // A linked tool still answers to every registration rule, named by its label.
    let mut slow = linked_contract("t_count");
    slow.timeout_ms = 0;
    let e = refused(slow);
    assert!(e.contains("linked/word-tools/t_count.json"), "{e}");
}
