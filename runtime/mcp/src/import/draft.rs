//! One draft record per listed MCP tool (see the [import documentation](super)).

use std::path::Path;

use escepine_registry::host_path;
use serde_json::{json, Map, Value};

use super::endpoint::EndpointDraft;
use super::model::{Decision, ServerTools, DRAFT_TIMEOUT_MS};
use super::schema::normalize;
use escepine_runtime::mcp::definition::definition_sha256;
use escepine_runtime::mcp::names::tool_id_for;
use escepine_runtime::mcp::transport::text_output_schema;

/// What a draft's `side_effect_class` holds while the class is left to decide: not a class, so
/// that `escepine check` refuses the record until it is decided.
pub const CLASS_TO_DECIDE: &str = "decide: read-only, compensatable or supersede";

/// One draft record.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The MCP tool's name.
    pub mcp_name: String,
    /// The draft's tool id.
    pub tool_id: String,
    /// The record, as written.
    pub record: Value,
    /// What was changed mechanically, and what is left to review (also in `$comment`).
    pub notes: Vec<String>,
    /// What is left to decide (also in `$comment`, after the notes).
    pub decisions: Vec<Decision>,
}

impl Draft {
    /// The draft's file name: `<tool id>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.tool_id)
    }

    /// Add a decision (one the registry's rules found), to `$comment` too.
    pub fn decide(&mut self, decision: Decision) {
        if let Some(Value::Array(comment)) = self.record.get_mut("$comment") {
            comment.push(Value::from(decision.note()));
        }
        self.decisions.push(decision);
    }

    /// The record as pretty JSON, with a final newline.
    pub fn text(&self) -> String {
        let mut text =
            serde_json::to_string_pretty(&self.record).unwrap_or_else(|_| "{}".to_string());
        text.push('\n');
        text
    }
}

/// The draft record of one MCP `tool` (its `tools/list` JSON, as listed) served by `server`,
/// started by `endpoint`, with the sandbox's `read_only` paths.
pub fn draft(
    tool: &Value,
    server: &ServerTools,
    endpoint: &EndpointDraft,
    read_only: &[String],
) -> Draft {
    let mcp_name = tool
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let tool_id = tool_id_for(&mcp_name);
    let mut decisions = Vec::new();
    let mut notes = vec![format!(
        "DRAFT imported by `escepine import mcp` from the MCP tool `{mcp_name}` of `{}`{}; \
         make every DECIDE decision and read every REVIEW note, then delete this comment",
        server.name.as_deref().unwrap_or("an unnamed server"),
        server
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default()
    )];
    if tool_id != mcp_name {
        notes.push(if endpoint.remote.is_some() {
            format!(
                "CHANGED /tool_id: `{mcp_name}` is not a tool id; `{tool_id}` is the record's \
                 id (`endpoint.tool` names the server's tool)"
            )
        } else {
            format!(
                "CHANGED /tool_id: `{mcp_name}` is not a tool id; `{tool_id}` maps to it (the \
                 mcp-stdio transport calls the MCP tool whose name maps to the tool id)"
            )
        });
    }

    let version = match server.version.as_deref() {
        Some(v) if semver::Version::parse(v).is_ok() => v.to_string(),
        other => {
            notes.push(format!(
                "REVIEW /version: the server's version {} is not semver; 0.1.0 is a placeholder",
                other.map_or("(none)".to_string(), |v| format!("`{v}`"))
            ));
            "0.1.0".to_string()
        }
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let description = text(tool.get("description")).unwrap_or_default();
    if description.trim().is_empty() {
        decisions.push(Decision::new(
            "/description",
            "the server gives no description; write what the planner should read (the \
             pinned definition still holds the server's own)",
        ));
    }
    let annotations = tool.get("annotations");
    let title = text(tool.get("title")).or_else(|| text(annotations.and_then(|a| a.get("title"))));
    let open_world = annotations
        .and_then(|a| a.get("openWorldHint"))
        .and_then(Value::as_bool);

    let input_schema = match tool.get("inputSchema") {
        Some(s) => normalize(s, "/input_schema", &mut notes, &mut decisions),
        None => {
            decisions.push(Decision::new(
                "/input_schema",
                "the server lists no inputSchema (MCP requires one); the draft takes no \
                 arguments: confirm the tool needs none, or declare its arguments",
            ));
            json!({ "type": "object", "additionalProperties": false, "properties": {} })
        }
    };
    let output_schema = match tool.get("outputSchema") {
        Some(s) => normalize(s, "/output_schema", &mut notes, &mut decisions),
        None => {
            notes.push(
                "REVIEW /output_schema: the server declares no outputSchema; its results are \
                 text, {\"text\": <its text content joined with newlines>} (other content \
                 kinds are refused by the output gate unless declared here as `content`)"
                    .into(),
            );
            text_output_schema()
        }
    };

    let read_only_hint = annotations
        .and_then(|a| a.get("readOnlyHint"))
        .and_then(Value::as_bool);
    let class = if read_only_hint == Some(true) {
        notes.push(
            "REVIEW /side_effect_class: `read-only` from readOnlyHint: true; annotations are \
             hints, confirm the tool changes nothing"
                .into(),
        );
        "read-only"
    } else {
        let said = |k: &str| match annotations.and_then(|a| a.get(k)) {
            Some(v) => format!("{k}: {v}"),
            None => format!("no {k}"),
        };
        decisions.push(Decision::new(
            "/side_effect_class",
            &format!(
                "the tool is not annotated readOnlyHint: true ({}, {}, {}); choose its class: \
                 read-only, compensatable (then declare its inverse in `compensation`) or \
                 supersede",
                said("readOnlyHint"),
                said("destructiveHint"),
                said("idempotentHint")
            ),
        ));
        CLASS_TO_DECIDE
    };
    for a in &endpoint.absolute_args {
        let bound = read_only
            .iter()
            .any(|r| host_path::under(&a.path, Path::new(r)));
        notes.push(format!(
            "CHANGED /endpoint/args/{}: `{}` names a {} of the working directory of the \
             import; made absolute, `{}`, since the server starts in the sandbox's own \
             /workspace; {}",
            a.index,
            a.given,
            if a.is_dir { "directory" } else { "file" },
            a.arg,
            if bound {
                "bound read-only there by /sandbox_profile/read_only (revert both if the \
                 argument is not meant as a path)"
            } else {
                "add it to /sandbox_profile/read_only for the server to see it there"
            }
        ));
    }
    notes.push(format!(
        "REVIEW /timeout_ms, /retry, /on_failure: placeholders ({DRAFT_TIMEOUT_MS} ms, no \
         retry, halt)"
    ));
    notes.push(
        "REVIEW /sandbox_profile/egress, /auth/secrets: placeholders (no network, no secrets); \
         name every host the server reaches and every secret it reads from its environment"
            .into(),
    );

    let mut record = Map::new();
    let comment: Vec<Value> = notes
        .iter()
        .cloned()
        .chain(decisions.iter().map(Decision::note))
        .map(Value::from)
        .collect();
    record.insert("$comment".into(), Value::from(comment));
    record.insert("tool_id".into(), Value::from(tool_id.clone()));
    record.insert("version".into(), Value::from(version));
    if let Some(title) = title {
        record.insert("title".into(), Value::from(title));
    }
    record.insert("description".into(), Value::from(description));
    record.insert("input_schema".into(), input_schema);
    record.insert("output_schema".into(), output_schema);
    record.insert("side_effect_class".into(), Value::from(class));
    if let Some(open) = open_world {
        record.insert("open_world".into(), Value::from(open));
    }
    record.insert("accepts_credentials".into(), Value::from(false));
    record.insert("timeout_ms".into(), Value::from(DRAFT_TIMEOUT_MS));
    record.insert(
        "retry".into(),
        json!({ "max_attempts": 1, "backoff_ms": 0 }),
    );
    record.insert("on_failure".into(), json!(["halt"]));
    let mut ep = Map::new();
    if let Some(remote) = &endpoint.remote {
        ep.insert("transport".into(), Value::from("mcp-http"));
        ep.insert("url".into(), Value::from(remote.url.clone()));
        ep.insert("tool".into(), Value::from(mcp_name.clone()));
        ep.insert(
            "definition_sha256".into(),
            Value::from(definition_sha256(tool)),
        );
        if let Some(auth) = &remote.auth {
            ep.insert("auth".into(), auth.clone());
        }
        record.insert("endpoint".into(), Value::Object(ep));
        record.insert("auth".into(), json!({ "secrets": remote.secrets }));
        record.insert(
            "sandbox_profile".into(),
            json!({ "egress": remote.egress, "filesystem": "workspace" }),
        );
        return Draft {
            mcp_name,
            tool_id,
            record: Value::Object(record),
            notes,
            decisions,
        };
    }
    ep.insert("transport".into(), Value::from("mcp-stdio"));
    if let Some(image) = &endpoint.image {
        ep.insert("image".into(), Value::from(image.clone()));
    }
    // With an image, no command means the image's Entrypoint and Cmd.
    if endpoint.image.is_none() || !endpoint.command.is_empty() {
        ep.insert("command".into(), Value::from(endpoint.command.clone()));
    }
    if !endpoint.args.is_empty() {
        ep.insert("args".into(), Value::from(endpoint.args.clone()));
    }
    ep.insert(
        "definition_sha256".into(),
        Value::from(definition_sha256(tool)),
    );
    record.insert("endpoint".into(), Value::Object(ep));
    record.insert("auth".into(), json!({ "secrets": [] }));
    let mut profile = Map::new();
    profile.insert("egress".into(), json!([]));
    profile.insert("filesystem".into(), Value::from("workspace"));
    if !read_only.is_empty() {
        profile.insert("read_only".into(), Value::from(read_only.to_vec()));
    }
    record.insert("sandbox_profile".into(), Value::Object(profile));
    Draft {
        mcp_name,
        tool_id,
        record: Value::Object(record),
        notes,
        decisions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ServerTools {
        ServerTools {
            name: Some("demo".into()),
            version: Some("1.2.3".into()),
            tools: Vec::new(),
        }
    }

    fn endpoint() -> EndpointDraft {
        EndpointDraft {
            image: None,
            command: "/bin/demo".into(),
            args: vec!["--stdio".into()],
            absolute_args: Vec::new(),
            remote: None,
        }
    }

    #[test]
    fn a_read_only_text_tool_needs_no_decision() {
        let tool = json!({"name": "word-count", "description": "Count.", "title": "Word count",
                          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                          "annotations": {"readOnlyHint": true, "openWorldHint": false}});
        let d = draft(&tool, &server(), &endpoint(), &["/usr/lib/python3".into()]);
        assert_eq!(d.tool_id, "word_count");
        assert_eq!(d.file_name(), "word_count.json");
        assert!(d.decisions.is_empty(), "{:?}", d.decisions);
        let r = &d.record;
        assert_eq!(r["version"], "1.2.3");
        assert_eq!(r["title"], "Word count");
        assert_eq!(r["open_world"], false);
        assert_eq!(r["side_effect_class"], "read-only");
        assert_eq!(r["output_schema"], text_output_schema());
        assert_eq!(
            r["endpoint"],
            json!({"transport": "mcp-stdio", "command": "/bin/demo", "args": ["--stdio"],
                   "definition_sha256": definition_sha256(&tool)})
        );
        assert_eq!(
            r["sandbox_profile"]["read_only"],
            json!(["/usr/lib/python3"])
        );
    }

    #[test]
    fn an_unannotated_tool_without_input_schema_leaves_decisions() {
        let d = draft(
            &json!({"name": "poke", "description": "Poke."}),
            &server(),
            &endpoint(),
            &[],
        );
        let at: Vec<&str> = d.decisions.iter().map(|d| d.pointer.as_str()).collect();
        assert_eq!(at, ["/input_schema", "/side_effect_class"]);
        assert_eq!(d.record["side_effect_class"], CLASS_TO_DECIDE);
        assert!(d.record.get("title").is_none());
        let comment = d.record["$comment"].as_array().expect("a list");
        assert!(comment.iter().any(|c| c
            .as_str()
            .is_some_and(|c| c.starts_with("DECIDE /side_effect_class"))));
    }

    #[test]
    fn an_argument_made_absolute_is_noted_with_its_binding() {
        let tool = json!({"name": "t", "description": "T.", "inputSchema": {"type": "object"},
                          "annotations": {"readOnlyHint": true}});
        let mut e = endpoint();
        e.args = vec!["/w/server.py".into()];
        e.absolute_args = vec![crate::import::AbsoluteArg {
            index: 0,
            given: "server.py".into(),
            arg: "/w/server.py".into(),
            path: "/w/server.py".into(),
            is_dir: false,
        }];
        let note = |read_only: &[String]| {
            let d = draft(&tool, &server(), &e, read_only);
            d.notes
                .iter()
                .find(|n| n.starts_with("CHANGED /endpoint/args/0: `server.py` names a file"))
                .cloned()
                .unwrap_or_else(|| panic!("{:?}", d.notes))
        };
        assert!(note(&["/w".into()]).contains("bound read-only there"));
        assert!(note(&[]).contains("add it to /sandbox_profile/read_only"));
    }

    #[test]
    fn an_image_endpoint_names_the_image_and_no_host_command() {
        let tool = json!({"name": "word_count", "description": "Count.",
                          "inputSchema": {"type": "object"},
                          "annotations": {"readOnlyHint": true}});
        let image = "127.0.0.1:5000/py@sha256:00";
        let d = draft(&tool, &server(), &EndpointDraft::in_image(image, &[]), &[]);
        assert_eq!(
            d.record["endpoint"],
            json!({"transport": "mcp-stdio", "image": image,
                   "definition_sha256": definition_sha256(&tool)})
        );
        let d = draft(
            &tool,
            &server(),
            &EndpointDraft::in_image(image, &["python3".into(), "/app/s.py".into()]),
            &[],
        );
        assert_eq!(d.record["endpoint"]["command"], "python3");
        assert_eq!(d.record["endpoint"]["args"], json!(["/app/s.py"]));
        assert!(d.record["endpoint"].get("sha256").is_none());
    }
}
