//! `escepine import mcp`: draft tool records from an existing MCP server's `tools/list`.
//!
//! [`list_tools`] starts the server (the command as given, with this process's environment, in a
//! new process group killed at the end), initializes an MCP session on its stdio and reads every
//! page of `tools/list`. [`draft`] turns each tool into a draft record (pure: no I/O):
//!
//! - **Identity.** `tool_id` is the MCP name mapped by [`super::names::tool_id_for`]
//!   (`word-count` → `word_count`; the `mcp-stdio` transport maps it back); `version` is the
//!   server's `serverInfo.version` when it is semver (else `0.1.0`, noted); `description` is the
//!   tool's description, else its title (else empty, which `escepine check` flags).
//! - **Schemas, mechanically into the subset** (each change noted with its pointer):
//!   `$schema` of another draft dropped; root `definitions` renamed `$defs` (references
//!   rewritten); nullable types (`type: [T, "null"]`, `anyOf`/`oneOf` of one schema and
//!   `{"type": "null"}`, OpenAPI's `nullable: true`, `null` among `enum` values) become `T` and
//!   the property optional (removed from `required`); `format` on a non-string (schemars's
//!   `uint32`, `int64`, `double`, …) dropped, the bound a fixed-width integer format implies
//!   kept as `minimum`/`maximum`; an object schema given `type: "object"` if it has
//!   `properties` but no type, and **closed** with `additionalProperties: false` where it does
//!   not say. A missing `outputSchema` becomes an open `{"type": "object"}`.
//! - **Left for a human, in the draft, so that `escepine check` flags them**: credential-looking
//!   property names; combinators (`oneOf`/`anyOf`/`allOf`/`not`/`if`) that are not a nullable
//!   pair; open maps (`additionalProperties: true` or a schema); `patternProperties`; tuples;
//!   type unions; remote references; an empty description; an open output schema; a guessed
//!   `compensatable` class without its `compensation`.
//! - **Class, guessed from the annotations and marked for review**: `readOnlyHint: true` →
//!   `read-only`; otherwise (MCP's defaults: destructive, not idempotent) `destructiveHint:
//!   false` with `idempotentHint: true` → `supersede`; anything else → `compensatable`, which
//!   needs its inverse declared.
//! - **Placeholders with conservative defaults, marked for review**: `timeout_ms` 30000, no
//!   retry (`max_attempts` 1), `on_failure` `["halt"]`, no secrets, no egress (no network at
//!   all), file system `workspace`.
//! - **Endpoint**: `mcp-stdio` with the command and its arguments. A command given as a path
//!   becomes absolute, or the bare binary name when it is a `[[bin]]` of the workspace (found
//!   from the output directory, else the working directory).
//!
//! Every note goes into the draft's top-level `$comment` (a list of strings; records allow
//! `$comment`), `DRAFT`/`CHANGED`/`REVIEW`-prefixed, so the file says what was decided for it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use registry_build::endpoint::WorkspaceBins;
use registry_build::schema::names::credential_word;
use registry_build::schema::subset::escape;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use tokio::process::Command;

use super::names::tool_id_for;

/// The placeholder `timeout_ms` of a draft.
pub const DRAFT_TIMEOUT_MS: u64 = 30_000;

/// Why the server's tools could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// No command was given.
    #[error("no server command given (escepine import mcp --out DIR -- <command …>)")]
    NoCommand,
    /// The server could not be started.
    #[error("cannot start `{command}`: {why}")]
    Spawn {
        /// The program.
        command: String,
        /// Why.
        why: String,
    },
    /// The MCP session failed.
    #[error("the MCP server `{command}`: {why}")]
    Session {
        /// The program.
        command: String,
        /// What failed.
        why: String,
    },
    /// The server did not answer in time.
    #[error("the MCP server `{command}` did not list its tools within {0:?}", .timeout)]
    TimedOut {
        /// The program.
        command: String,
        /// The bound.
        timeout: Duration,
    },
}

/// What the server said about itself and its tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTools {
    /// `serverInfo.name`, when given.
    pub name: Option<String>,
    /// `serverInfo.version`, when given.
    pub version: Option<String>,
    /// Every tool of `tools/list`, as its JSON.
    pub tools: Vec<Value>,
}

/// The endpoint a draft names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointDraft {
    /// `endpoint.command`.
    pub command: String,
    /// `endpoint.args`.
    pub args: Vec<String>,
}

impl EndpointDraft {
    /// The endpoint for the server command `command` (program and arguments): a path becomes
    /// absolute, or the bare name of a binary the workspace at `workspace` declares.
    ///
    /// # Errors
    /// [`ImportError::NoCommand`] for an empty command.
    pub fn for_command(command: &[String], workspace: Option<&Path>) -> Result<Self, ImportError> {
        let (program, args) = command.split_first().ok_or(ImportError::NoCommand)?;
        let mut cmd = program.clone();
        if program.contains('/') {
            let path = std::fs::canonicalize(program).unwrap_or_else(|_| PathBuf::from(program));
            cmd = path.display().to_string();
            if let (Some(root), Some(name)) = (workspace, path.file_name().and_then(|n| n.to_str()))
            {
                let bins = WorkspaceBins::discover(root);
                // The workspace's target directory, or the one `CARGO_TARGET_DIR` names.
                let targets = std::iter::once(root.join("target"))
                    .chain(std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from));
                let in_target = targets
                    .filter_map(|t| std::fs::canonicalize(t).ok())
                    .any(|t| path.starts_with(t));
                if bins.names.contains(name) && in_target {
                    cmd = name.to_string();
                }
            }
        }
        Ok(Self {
            command: cmd,
            args: args.to_vec(),
        })
    }
}

/// Start the server `command` and read its `tools/list` (every page), within `timeout`.
///
/// # Errors
/// [`ImportError`].
pub async fn list_tools(command: &[String], timeout: Duration) -> Result<ServerTools, ImportError> {
    let (program, args) = command.split_first().ok_or(ImportError::NoCommand)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| ImportError::Spawn {
        command: program.clone(),
        why: e.to_string(),
    })?;
    let group = crate::executor::process::ProcessGroup::new(child.id());
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ImportError::Spawn {
            command: program.clone(),
            why: "its pipes were not set up".into(),
        });
    };
    let session = |why: String| ImportError::Session {
        command: program.clone(),
        why,
    };
    let work = async {
        let client =
            ().serve(AsyncRwTransport::new_client(stdout, stdin))
                .await
                .map_err(|e| session(format!("initialize: {e}")))?;
        let info = client.peer_info();
        let listed = client.list_all_tools().await;
        let _ = client.cancel().await;
        let tools = listed.map_err(|e| session(format!("tools/list: {e}")))?;
        let tools = tools
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| session(format!("tools/list: {e}")))?;
        let server = info.as_ref().and_then(|i| i.server_info.as_ref());
        Ok(ServerTools {
            name: server.map(|s| s.name.clone()),
            version: server.map(|s| s.version.clone()),
            tools,
        })
    };
    let result = match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(ImportError::TimedOut {
            command: program.clone(),
            timeout,
        }),
    };
    let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    drop(group);
    result
}

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
}

impl Draft {
    /// The draft's file name: `<tool id>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.tool_id)
    }

    /// The record as pretty JSON, with a final newline.
    pub fn text(&self) -> String {
        let mut text =
            serde_json::to_string_pretty(&self.record).unwrap_or_else(|_| "{}".to_string());
        text.push('\n');
        text
    }
}

/// The draft record of one MCP `tool` (its `tools/list` JSON) served by `server`.
pub fn draft(tool: &Value, server: &ServerTools, endpoint: &EndpointDraft) -> Draft {
    let mcp_name = tool
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let tool_id = tool_id_for(&mcp_name);
    let mut notes = vec![format!(
        "DRAFT imported by `escepine import mcp` from the MCP tool `{mcp_name}` of `{}`{}; \
         review every REVIEW note, then delete this comment",
        server.name.as_deref().unwrap_or("an unnamed server"),
        server
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default()
    )];
    if tool_id != mcp_name {
        notes.push(format!(
            "CHANGED /tool_id: `{mcp_name}` is not a tool id; `{tool_id}` maps to it (the \
             mcp-stdio transport calls the MCP tool whose name maps to the tool id)"
        ));
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
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| tool.get("title").and_then(Value::as_str))
        .or_else(|| {
            tool.get("annotations")
                .and_then(|a| a.get("title"))
                .and_then(Value::as_str)
        })
        .unwrap_or_default()
        .to_string();
    if description.trim().is_empty() {
        notes.push(
            "REVIEW /description: the server gives none; write what the planner should read".into(),
        );
    }

    let input_schema = match tool.get("inputSchema") {
        Some(s) => normalize(s, "/input_schema", &mut notes),
        None => {
            notes.push("CHANGED /input_schema: the server gives none; no arguments".into());
            json!({ "type": "object", "additionalProperties": false, "properties": {} })
        }
    };
    let output_schema = match tool.get("outputSchema") {
        Some(s) => normalize(s, "/output_schema", &mut notes),
        None => {
            notes.push(
                "REVIEW /output_schema: the server declares no outputSchema; describe the JSON \
                 the tool returns (its structuredContent, or its one JSON text) and close it"
                    .into(),
            );
            json!({ "type": "object" })
        }
    };

    let (class, why) = guess_class(tool.get("annotations"));
    notes.push(format!(
        "REVIEW /side_effect_class: `{class}` guessed from the annotations ({why}); \
         annotations are hints, confirm what the tool really does"
    ));
    if class == "compensatable" {
        notes.push(
            "REVIEW /compensation: a compensatable tool declares its inverse \
             ({\"tool\": …, \"map\": {…}}); add it, or choose another class"
                .into(),
        );
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
    record.insert(
        "$comment".into(),
        Value::from(
            notes
                .iter()
                .map(|n| Value::from(n.clone()))
                .collect::<Vec<_>>(),
        ),
    );
    record.insert("tool_id".into(), Value::from(tool_id.clone()));
    record.insert("version".into(), Value::from(version));
    record.insert("description".into(), Value::from(description));
    record.insert("input_schema".into(), input_schema);
    record.insert("output_schema".into(), output_schema);
    record.insert("side_effect_class".into(), Value::from(class));
    record.insert("accepts_credentials".into(), Value::from(false));
    record.insert("timeout_ms".into(), Value::from(DRAFT_TIMEOUT_MS));
    record.insert(
        "retry".into(),
        json!({ "max_attempts": 1, "backoff_ms": 0 }),
    );
    record.insert("on_failure".into(), json!(["halt"]));
    let mut ep = Map::new();
    ep.insert("transport".into(), Value::from("mcp-stdio"));
    ep.insert("command".into(), Value::from(endpoint.command.clone()));
    if !endpoint.args.is_empty() {
        ep.insert("args".into(), Value::from(endpoint.args.clone()));
    }
    record.insert("endpoint".into(), Value::Object(ep));
    record.insert("auth".into(), json!({ "secrets": [] }));
    record.insert(
        "sandbox_profile".into(),
        json!({ "egress": [], "filesystem": "workspace" }),
    );
    Draft {
        mcp_name,
        tool_id,
        record: Value::Object(record),
        notes,
    }
}

/// The side-effect class the annotations suggest, and why.
pub fn guess_class(annotations: Option<&Value>) -> (&'static str, String) {
    let hint = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_bool);
    if hint("readOnlyHint") == Some(true) {
        return ("read-only", "readOnlyHint: true".into());
    }
    let destructive = hint("destructiveHint");
    let idempotent = hint("idempotentHint");
    let said = |name: &str, v: Option<bool>, default: bool| match v {
        Some(v) => format!("{name}: {v}"),
        None => format!("{name} absent (MCP default {default})"),
    };
    let why = format!(
        "{}, {}, {}",
        said("readOnlyHint", hint("readOnlyHint"), false),
        said("destructiveHint", destructive, true),
        said("idempotentHint", idempotent, false)
    );
    if destructive == Some(false) && idempotent == Some(true) {
        ("supersede", why)
    } else {
        ("compensatable", why)
    }
}

/// A schema brought into the subset where that is mechanical (see the module documentation);
/// `base` is its pointer in the record, for the notes.
pub fn normalize(schema: &Value, base: &str, notes: &mut Vec<String>) -> Value {
    let mut s = schema.clone();
    let Some(root) = s.as_object_mut() else {
        notes.push(format!("REVIEW {base}: not a JSON object"));
        return s;
    };
    if let Some(draft) = root.get("$schema").and_then(Value::as_str) {
        if draft.trim_end_matches('#') != registry_build::schema::subset::DRAFT_2020_12 {
            notes.push(format!(
                "CHANGED {base}/$schema: `{draft}` dropped; the record is read as JSON Schema \
                 2020-12"
            ));
            root.remove("$schema");
        }
    }
    if let Some(defs) = root.remove("definitions") {
        notes.push(format!(
            "CHANGED {base}/definitions: renamed `$defs` (references rewritten)"
        ));
        let merged = root
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let (Some(into), Value::Object(from)) = (merged.as_object_mut(), defs) {
            for (k, v) in from {
                into.entry(k).or_insert(v);
            }
        }
        rewrite_refs(&mut s);
    }
    let mut walker = Normalizer {
        notes,
        input: base.starts_with("/input_schema"),
    };
    walker.node(&mut s, base);
    if let Some(Value::Object(defs)) = s.get_mut("$defs") {
        for (name, def) in defs.iter_mut() {
            walker.node(def, &format!("{base}/$defs/{}", escape(name)));
        }
    }
    s
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, sub) in m.iter_mut() {
                match (k.as_str(), sub) {
                    ("$ref", Value::String(r)) => {
                        if let Some(rest) = r.strip_prefix("#/definitions/") {
                            *r = format!("#/$defs/{rest}");
                        }
                    }
                    (_, sub) => rewrite_refs(sub),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

struct Normalizer<'n> {
    notes: &'n mut Vec<String>,
    /// Whether this is the input schema (the credential-name rule applies).
    input: bool,
}

/// Keywords outside the subset that no mechanical rewrite removes.
const UNDECIDABLE: &[(&str, &str)] = &[
    ("oneOf", "a combinator"),
    ("anyOf", "a combinator"),
    ("allOf", "a combinator"),
    ("not", "a combinator"),
    ("if", "a conditional"),
    ("patternProperties", "an open set of names"),
    ("prefixItems", "a tuple"),
];

impl Normalizer<'_> {
    /// Normalise one schema node in place; returns whether it was nullable (its property
    /// becomes optional).
    fn node(&mut self, node: &mut Value, at: &str) -> bool {
        let nullable = self.collapse_null(node, at);
        let Some(obj) = node.as_object_mut() else {
            return nullable;
        };
        for (key, what) in UNDECIDABLE {
            if obj.contains_key(*key) {
                self.notes.push(format!(
                    "REVIEW {at}/{key}: {what} is outside the subset and has no mechanical \
                     rewrite; flatten the schema or split the tool"
                ));
            }
        }
        let ty = obj.get("type").and_then(Value::as_str).map(str::to_string);
        if let Some(format) = obj
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            if ty.as_deref().is_some_and(|t| t != "string") {
                obj.remove("format");
                let mut note =
                    format!("CHANGED {at}/format: `{format}` dropped (formats apply to strings)");
                if let Some((min, max)) = integer_bounds(&format) {
                    if ty.as_deref() == Some("integer") {
                        if !obj.contains_key("minimum") {
                            obj.insert("minimum".into(), Value::from(min));
                        }
                        if let (Some(max), false) = (max, obj.contains_key("maximum")) {
                            obj.insert("maximum".into(), Value::from(max));
                        }
                        note.push_str("; its bounds kept as minimum/maximum");
                    }
                }
                self.notes.push(note);
            }
        }
        let objectish = ty.as_deref() == Some("object")
            || (ty.is_none() && obj.contains_key("properties") && !obj.contains_key("$ref"));
        if objectish {
            if ty.is_none() {
                obj.insert("type".into(), Value::from("object"));
                self.notes.push(format!(
                    "CHANGED {at}/type: `object` added (it has properties)"
                ));
            }
            match obj.get("additionalProperties") {
                None => {
                    obj.insert("additionalProperties".into(), Value::Bool(false));
                    self.notes.push(format!(
                        "CHANGED {at}: closed (`additionalProperties: false`)"
                    ));
                }
                Some(Value::Bool(false)) => {}
                Some(_) => self.notes.push(format!(
                    "REVIEW {at}/additionalProperties: an open map cannot be checked or \
                     authorized; declare its properties or remove it"
                )),
            }
            let mut optional = BTreeSet::new();
            if let Some(Value::Object(props)) = obj.get_mut("properties") {
                for (name, sub) in props.iter_mut() {
                    let here = format!("{at}/properties/{}", escape(name));
                    if let Some(word) = credential_word(name).filter(|_| self.input) {
                        self.notes.push(format!(
                            "REVIEW {here}: `{name}` names a credential ({word}); governed tools \
                             accept none — remove it (a secret the server needs is declared in \
                             auth.secrets and reaches it in its environment) or rename it"
                        ));
                    }
                    if self.node(sub, &here) {
                        optional.insert(name.clone());
                    }
                }
            }
            if let Some(Value::Array(required)) = obj.get_mut("required") {
                let before = required.len();
                required.retain(|r| r.as_str().is_none_or(|n| !optional.contains(n)));
                if required.len() != before {
                    self.notes.push(format!(
                        "CHANGED {at}/required: nullable properties made optional ({})",
                        optional.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
                if required.is_empty() {
                    obj.remove("required");
                }
            }
        }
        if ty.as_deref() == Some("array") {
            if let Some(items @ Value::Object(_)) = obj.get_mut("items") {
                self.node(items, &format!("{at}/items"));
            }
        }
        nullable
    }

    /// Turn a nullable schema into its non-null form; returns whether it was nullable.
    fn collapse_null(&mut self, node: &mut Value, at: &str) -> bool {
        let Some(obj) = node.as_object_mut() else {
            return false;
        };
        let mut nullable = false;
        if obj.remove("nullable") == Some(Value::Bool(true)) {
            nullable = true;
        }
        if let Some(Value::Array(types)) = obj.get("type") {
            if types.iter().any(|t| t == "null") {
                let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                nullable = true;
                match rest.len() {
                    0 => {}
                    1 => {
                        obj.insert("type".into(), rest[0].clone());
                    }
                    _ => {
                        obj.insert("type".into(), Value::Array(rest));
                    }
                }
            }
        }
        if let Some(Value::Array(values)) = obj.get_mut("enum") {
            let before = values.len();
            values.retain(|v| !v.is_null());
            if values.len() != before {
                nullable = true;
            }
        }
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = obj.get(key) else {
                continue;
            };
            let is_null = |b: &Value| {
                b.get("type") == Some(&Value::from("null")) || b.get("const") == Some(&Value::Null)
            };
            if branches.len() == 2 && branches.iter().filter(|b| is_null(b)).count() == 1 {
                let Some(other) = branches.iter().find(|b| !is_null(b)).cloned() else {
                    continue;
                };
                obj.remove(key);
                if let Value::Object(other) = other {
                    for (k, v) in other {
                        obj.entry(k).or_insert(v);
                    }
                }
                nullable = true;
            }
        }
        if nullable {
            self.notes.push(format!(
                "CHANGED {at}: nullable made non-null (an absent property stands for null)"
            ));
        }
        nullable
    }
}

/// The bounds a fixed-width integer `format` implies (no maximum where it exceeds `i64`).
fn integer_bounds(format: &str) -> Option<(i64, Option<i64>)> {
    Some(match format {
        "int8" => (i64::from(i8::MIN), Some(i64::from(i8::MAX))),
        "int16" => (i64::from(i16::MIN), Some(i64::from(i16::MAX))),
        "int32" => (i64::from(i32::MIN), Some(i64::from(i32::MAX))),
        "int64" => (i64::MIN, Some(i64::MAX)),
        "uint8" => (0, Some(i64::from(u8::MAX))),
        "uint16" => (0, Some(i64::from(u16::MAX))),
        "uint32" => (0, Some(i64::from(u32::MAX))),
        "uint64" | "uint" => (0, None),
        _ => return None,
    })
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
            command: "/bin/demo".into(),
            args: vec!["--stdio".into()],
        }
    }

    #[test]
    fn nullable_fields_become_optional_and_objects_close() {
        let mut notes = Vec::new();
        let s = normalize(
            &json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "required": ["a", "b", "c"],
                "properties": {
                    "a": {"type": "string"},
                    "b": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                    "c": {"anyOf": [{"$ref": "#/definitions/Inner"}, {"type": "null"}],
                          "description": "inner"},
                },
                "definitions": {"Inner": {"properties": {"x": {"type": "number", "format": "double"}}}}
            }),
            "/input_schema",
            &mut notes,
        );
        assert_eq!(
            s,
            json!({
                "type": "object",
                "required": ["a"],
                "properties": {
                    "a": {"type": "string"},
                    "b": {"type": "integer", "minimum": 0, "maximum": 4_294_967_295_i64},
                    "c": {"description": "inner", "$ref": "#/$defs/Inner"},
                },
                "additionalProperties": false,
                "$defs": {"Inner": {"properties": {"x": {"type": "number"}},
                                    "type": "object", "additionalProperties": false}}
            })
        );
        assert!(notes.iter().any(|n| n.contains("/input_schema/$schema")));
        assert!(notes.iter().any(|n| n.contains("made optional (b, c)")));
    }

    #[test]
    fn open_maps_and_combinators_are_left_for_review() {
        let mut notes = Vec::new();
        let input = json!({
            "type": "object",
            "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            }
        });
        let s = normalize(&input, "/input_schema", &mut notes);
        assert_eq!(
            s["properties"]["labels"]["additionalProperties"],
            json!({"type": "string"})
        );
        assert!(s["properties"]["either"].get("oneOf").is_some());
        assert!(notes
            .iter()
            .any(|n| n.starts_with("REVIEW /input_schema/properties/labels")));
    }

    #[test]
    fn credential_names_are_noted_in_inputs_only() {
        let schema = json!({"type": "object", "properties": {"api_key": {"type": "string"}}});
        let mut notes = Vec::new();
        normalize(&schema, "/input_schema", &mut notes);
        assert!(notes
            .iter()
            .any(|n| n.contains("`api_key` names a credential")));
        let mut notes = Vec::new();
        normalize(&schema, "/output_schema", &mut notes);
        assert!(!notes.iter().any(|n| n.contains("credential")));
    }

    #[test]
    fn classes_follow_the_annotations() {
        assert_eq!(
            guess_class(Some(&json!({"readOnlyHint": true}))).0,
            "read-only"
        );
        assert_eq!(
            guess_class(Some(
                &json!({"destructiveHint": false, "idempotentHint": true})
            ))
            .0,
            "supersede"
        );
        assert_eq!(
            guess_class(Some(&json!({"destructiveHint": false}))).0,
            "compensatable"
        );
        assert_eq!(guess_class(None).0, "compensatable");
    }

    #[test]
    fn a_draft_names_the_mapped_id_the_endpoint_and_its_review_notes() {
        let d = draft(
            &json!({"name": "word-count", "description": "Count.",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                    "annotations": {"readOnlyHint": true}}),
            &server(),
            &endpoint(),
        );
        assert_eq!(d.tool_id, "word_count");
        assert_eq!(d.file_name(), "word_count.json");
        let r = &d.record;
        assert_eq!(r["version"], "1.2.3");
        assert_eq!(r["side_effect_class"], "read-only");
        assert_eq!(
            r["endpoint"],
            json!({"transport": "mcp-stdio", "command": "/bin/demo", "args": ["--stdio"]})
        );
        assert_eq!(r["output_schema"], json!({"type": "object"}));
        let comments = r["$comment"].as_array().expect("a list");
        assert!(comments.iter().any(|c| c
            .as_str()
            .is_some_and(|c| c.starts_with("REVIEW /output_schema"))));
    }
}
