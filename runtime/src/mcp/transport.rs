//! The `mcp-stdio` transport: one MCP server process per attempt, one `tools/call`.
//!
//! [`crate::executor::ProcessExecutor`] routes an `mcp-stdio` endpoint here. The server binary
//! is resolved, digest-checked and given its environment exactly as for `stdio-json`
//! ([`ProcessExecutor::program`](crate::executor::ProcessExecutor::program) and
//! [`ProcessExecutor::command`](crate::executor::ProcessExecutor::command): a cleared
//! environment, the call id and idempotency key, the declared secrets only, never argv), and it
//! starts in a new process group. Then, as an MCP client ([`super::rpc::RawClient`], which reads
//! every answer as raw JSON) on its stdin and stdout:
//!
//! 1. `initialize` (the legacy handshake every MCP server speaks) and `notifications/initialized`;
//! 2. `tools/list` (every page, raw: a malformed other tool does not matter), to pick the tool:
//!    **the one named exactly as the record's tool id, else the only one whose name maps to
//!    it** by [`super::names::tool_id_for`] (so `word-count` serves the record `word_count`).
//!    No name is taken from `endpoint.args`: those stay the server's own command-line
//!    arguments, as for `stdio-json`. When the record pins the definition
//!    (`endpoint.definition_sha256`, written by `escepine import mcp`), the listed entry's
//!    digest ([`super::definition`]) must equal the pin: otherwise no `tools/call` is sent and
//!    the attempt fails permanently (never retried), naming what changed and both digests. A
//!    listing that names a tool twice or gives a key twice in one object is refused the same
//!    way ([`SessionError::Ambiguous`], read strictly by the client), pinned or not: it may
//!    read one way for the pin and another for whoever reads it next;
//! 3. `tools/call` with the payload (the very value the gates and Cedar saw) as `arguments`;
//! 4. shut down: stdin is closed, the server gets [`SHUTDOWN_GRACE`] to exit, and then its whole
//!    process group is killed with `SIGKILL`, whatever is left.
//!
//! The output is the result's `structuredContent` when it has one. Without one, it depends on
//! the record's output schema:
//!
//! - **Text-shaped** ([`is_text_shape`]: its `properties` declare `text` a string, as
//!   [`text_output_schema`] does — what `escepine import mcp` writes for a tool whose server
//!   declares no `outputSchema`): the output is `{"text": <the text blocks joined with "\n">}`,
//!   even when a text holds JSON (the record says its output is text). Every other content
//!   block (image, audio, resource, resource link) is carried, as the server wrote it, in a
//!   `"content": [...]` list beside `text`: the closed output gate refuses it unless the record
//!   declares `content`, so no content reaches the agent unannounced.
//! - **Otherwise** (a record describing JSON, for servers that answer JSON as text and declare
//!   an `outputSchema`): exactly one text block holding JSON gives that JSON; anything else is a
//!   protocol violation.
//!
//! Before the output gate, `null` for an optional property of the output schema is treated as
//! absent
//! ([`escepine_policy::gate::drop_null_optionals`], the documented mapping of the OpenAI dialect): an MCP
//! server written with optional-as-nullable fields (what schemars emits for `Option<T>`, and what
//! `escepine import mcp` turns into optional properties) then passes the output gate unchanged
//! otherwise.
//!
//! Failures: a result with `isError: true` is a permanent failure carrying the tool's text (a
//! transient one if its `_meta` holds `"dev.escepine/transient": true`, [`TRANSIENT_META`]); a
//! JSON-RPC error answer, or a server without the tool, is permanent; a server that closes the
//! connection before answering is transient if it exited with status 75 (`EX_TEMPFAIL`, as for
//! `stdio-json`) and permanent otherwise. The whole attempt — start, handshake, call, shutdown —
//! is bounded by the attempt's deadline; on expiry the process group is killed and the attempt
//! times out. A message line longer than the stdout bound is a protocol violation. stderr is
//! read concurrently, bounded, and kept as the attempt's diagnostics; when the server closed the
//! connection before answering, the failure's message also quotes its last lines
//! (`ModuleNotFoundError: …`). A tool's error text and stderr are cut to their bounds only after the
//! attempt's secrets are scrubbed from them ([`Scrubber::text_within`]), so that no part of a
//! secret straddling a bound is kept.
//!
//! The session itself ([`call_over`]) works over any pair of byte streams:
//! [`crate::sandbox::SandboxExecutor`] runs the same session, with the same classification, on
//! the streams of a server started inside a fresh sandbox.

use std::time::Duration;

use escepine_contract::EXIT_TRANSIENT;
use escepine_registry::record::ToolRecord;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;
use tokio::time::Instant;

use super::definition;
use super::names::tool_id_for;
pub use super::rpc::SessionError;
use super::rpc::{list_tools, Exchange, RawClient};
use crate::executor::bounded::{read_stderr, with_stderr_tail};
use crate::executor::group::{DEFAULT_STDERR_LIMIT, DEFAULT_STDOUT_LIMIT};
use crate::executor::seam::{ExecError, Execution, Invocation};
use crate::executor::spawn::{exit_by, kill_and_reap, spawn_piped, Pipes};
use crate::scrub::Scrubber;
use crate::telemetry::{TraceContext, META_TRACEPARENT, META_TRACESTATE};
use escepine_policy::gate::drop_null_optionals;
use escepine_sandbox::JobStatus;

/// The `_meta` key of an error result (`isError: true`) that marks the failure transient: the
/// retry budget may try again.
pub const TRANSIENT_META: &str = "dev.escepine/transient";

/// How long the server gets to exit once its stdin is closed, before its group is killed.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// Most of a tool's error text kept in the failure message (scrubbed before it is cut).
const ERROR_TEXT_LIMIT: usize = 4096;

/// Bounds of one `mcp-stdio` attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest JSON-RPC message line read from the server.
    pub message_bytes: usize,
    /// Bytes of stderr kept (the rest is read and counted).
    pub stderr_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            message_bytes: DEFAULT_STDOUT_LIMIT,
            stderr_bytes: DEFAULT_STDERR_LIMIT,
        }
    }
}

/// One attempt of an `mcp-stdio` tool: `command` (as built by
/// [`ProcessExecutor::command`](crate::executor::ProcessExecutor::command)) is started with piped
/// stdio in a new process group, [`call_over`] runs on its stdin and stdout until `deadline`,
/// and the group is killed at the end, whatever happened.
///
/// # Errors
/// See the module documentation for the classification.
pub async fn run(
    command: Command,
    inv: &Invocation<'_>,
    deadline: Instant,
) -> Result<Execution, ExecError> {
    run_with(command, inv, deadline, Limits::default()).await
}

/// [`run`] with explicit bounds.
///
/// # Errors
/// See the module documentation.
pub async fn run_with(
    mut command: Command,
    inv: &Invocation<'_>,
    deadline: Instant,
    limits: Limits,
) -> Result<Execution, ExecError> {
    let tool = inv.tool.tool_id();
    let scrubber = inv.scrubber();
    let (mut child, group, pipes) = spawn_piped(&mut command).map_err(|e| {
        ExecError::Spawn(format!(
            "cannot start the MCP server {} for `{tool}`: {e}",
            command.as_std().get_program().to_string_lossy()
        ))
    })?;
    let Pipes {
        stdin,
        stdout,
        stderr,
    } = pipes;

    let attempt = async {
        let work = async {
            let outcome = call_over(
                stdout,
                stdin,
                inv.tool,
                inv.payload,
                inv.trace,
                limits.message_bytes,
            )
            .await;
            // stdin is closed (the session is over): let the server exit on its own, briefly.
            let grace = Instant::now() + SHUTDOWN_GRACE;
            let status = exit_by(&mut child, grace.min(deadline)).await;
            // Whatever is left in the group (and holds stderr open) goes now.
            group.kill();
            (outcome, status)
        };
        tokio::join!(work, read_stderr(stderr, limits.stderr_bytes, &scrubber))
    };

    match tokio::time::timeout_at(deadline, attempt).await {
        Ok(((outcome, status), stderr)) => classify(tool, outcome, status, stderr, &scrubber),
        Err(_) => {
            kill_and_reap(&mut child, &group).await;
            Err(ExecError::TimedOut(inv.timeout))
        }
    }
}

/// An MCP client session on `read`/`write` (the server's stdout and stdin): initialize, pick
/// the tool for `record`, check its pinned definition, call it with `payload` (and `trace` as
/// the request's `_meta.traceparent`), close. Returns
/// the output (see the module documentation), `null`s of optional output properties removed.
///
/// # Errors
/// [`SessionError`].
pub async fn call_over<R, W>(
    read: R,
    write: W,
    record: &ToolRecord,
    payload: &Value,
    trace: Option<&TraceContext>,
    max_line: usize,
) -> Result<Value, SessionError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // Dropping the client (at the end of this block) closes the server's stdin.
    let mut client = RawClient::connect(read, write, max_line).await?;
    call_listed(&mut client, record, Choose::ByToolId, payload, trace).await
}

/// How the tool to call is chosen in a server's listing.
#[derive(Debug, Clone, Copy)]
pub enum Choose<'a> {
    /// By the record's tool id: [`pick_tool`] (an `mcp-stdio` server).
    ByToolId,
    /// By the server's exact name for it (a remote endpoint's `tool`).
    Exactly(&'a str),
}

/// The tool call of a session already open on `client`: `tools/list` (see
/// [`super::rpc::list_tools`]), the tool chosen by `choose`, its definition compared with the
/// record's pin (none differing: no `tools/call` is sent), `tools/call` with `payload`, and the
/// output of the result (see the module documentation), `null`s of optional output properties
/// removed. `trace`, if any, goes in the request's `_meta` (`traceparent`, `tracestate`).
///
/// # Errors
/// [`SessionError`].
pub async fn call_listed<E: Exchange>(
    client: &mut E,
    record: &ToolRecord,
    choose: Choose<'_>,
    payload: &Value,
    trace: Option<&TraceContext>,
) -> Result<Value, SessionError> {
    if !payload.is_object() {
        return Err(SessionError::Protocol(format!(
            "MCP arguments must be an object, not {}",
            escepine_contract::strict_json::kind(payload)
        )));
    }
    let tools = list_tools(client).await?;
    let name_of = |t: &Value| t.get("name").and_then(Value::as_str).map(str::to_string);
    let names: Vec<String> = tools.iter().filter_map(name_of).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let name = match choose {
        Choose::ByToolId => pick_tool(&refs, record.tool_id())?,
        Choose::Exactly(n) if refs.contains(&n) => n.to_string(),
        Choose::Exactly(n) => {
            return Err(SessionError::Refused(format!(
                "the MCP server offers no tool `{n}` (its tools: {})",
                if refs.is_empty() {
                    "none".to_string()
                } else {
                    refs.join(", ")
                }
            )))
        }
    };
    if let Some(pin) = &record.endpoint().definition_sha256 {
        if let Some(listed) = tools.iter().find(|t| name_of(t).as_deref() == Some(&name)) {
            if let Some(why) = definition::changed(record, listed, pin) {
                return Err(SessionError::Changed(why));
            }
        }
    }
    let mut params = json!({ "name": name, "arguments": payload });
    if let Some(trace) = trace {
        let mut meta = serde_json::Map::new();
        meta.insert(META_TRACEPARENT.into(), trace.traceparent().into());
        if let Some(state) = trace.tracestate() {
            meta.insert(META_TRACESTATE.into(), state.into());
        }
        params["_meta"] = Value::Object(meta);
    }
    let (result, _) = client.exchange("tools/call", params).await?;
    let result: ToolResult = serde_json::from_value(result).map_err(|e| {
        SessionError::Protocol(format!(
            "the MCP tools/call result is not a CallToolResult: {e}"
        ))
    })?;
    let mut output = output_of(result, record.output_schema())?;
    drop_null_optionals(record.output_schema(), &mut output);
    Ok(output)
}

/// The MCP tool to call for the tool id `tool_id` among the server's tool `names`: the exact
/// name, else the only name that maps to it ([`tool_id_for`]).
///
/// # Errors
/// [`SessionError::Refused`] when none or several names map to it.
pub fn pick_tool(names: &[&str], tool_id: &str) -> Result<String, SessionError> {
    if names.contains(&tool_id) {
        return Ok(tool_id.to_string());
    }
    let mapped: Vec<&&str> = names.iter().filter(|n| tool_id_for(n) == tool_id).collect();
    match mapped.as_slice() {
        [one] => Ok((**one).to_string()),
        [] => Err(SessionError::Refused(format!(
            "the MCP server offers no tool `{tool_id}` (its tools: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ))),
        several => Err(SessionError::Refused(format!(
            "several MCP tools map to `{tool_id}`: {}",
            several.iter().map(|n| **n).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The closed output of an MCP tool whose server declares no `outputSchema`: `{"text": …}`,
/// its text content blocks joined with `\n`. `escepine import mcp` writes it as such a tool's
/// output schema; a record may extend it with a declared `content` list to accept the
/// result's other content blocks (see the module documentation).
pub fn text_output_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["text"],
        "properties": {
            "text": {
                "type": "string",
                "description": "The tool's text content blocks, joined with a newline."
            }
        }
    })
}

/// Whether `schema` is a text-shaped output schema: its `properties` declare `text` as a
/// string ([`text_output_schema`], possibly extended with `content`).
pub fn is_text_shape(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(|p| p.get("text"))
        .and_then(|t| t.get("type"))
        == Some(&Value::from("string"))
}

/// An MCP `tools/call` result (`CallToolResult` of the MCP schema), as far as the transport
/// reads it: content blocks stay JSON; a text block is `{"type": "text", "text": …}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The content blocks.
    #[serde(default)]
    pub content: Vec<Value>,
    /// The structured result, when the server gives one.
    #[serde(default)]
    pub structured_content: Option<Value>,
    /// Whether the result is a tool error.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// The result's `_meta` object.
    #[serde(default, rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

/// The text of a content block that is a text block.
fn text_of(block: &Value) -> Option<&str> {
    if block.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    block.get("text").and_then(Value::as_str)
}

/// The output of a `tools/call` result for a record whose output schema is `output_schema`
/// (see the module documentation), before the `null` mapping.
///
/// # Errors
/// [`SessionError::Tool`] for an error result, [`SessionError::Protocol`] for a result that
/// holds no output of the record's shape.
pub fn output_of(result: ToolResult, output_schema: &Value) -> Result<Value, SessionError> {
    let texts: Vec<&str> = result.content.iter().filter_map(text_of).collect();
    if result.is_error == Some(true) {
        let transient = result
            .meta
            .as_ref()
            .and_then(|m| m.get(TRANSIENT_META))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let message = if texts.is_empty() {
            "(no text)".to_string()
        } else {
            texts.join("\n")
        };
        return Err(SessionError::Tool { message, transient });
    }
    if let Some(v) = result.structured_content {
        return Ok(v);
    }
    if is_text_shape(output_schema) {
        let mut output = Map::new();
        output.insert("text".into(), Value::from(texts.join("\n")));
        let others: Vec<Value> = result
            .content
            .iter()
            .filter(|c| text_of(c).is_none())
            .cloned()
            .collect();
        if !others.is_empty() {
            output.insert("content".into(), Value::Array(others));
        }
        return Ok(Value::Object(output));
    }
    match (texts.as_slice(), result.content.len()) {
        ([text], 1) => serde_json::from_str(text).map_err(|e| {
            SessionError::Protocol(format!(
                "the MCP result has no structuredContent and its text is not JSON: {e}"
            ))
        }),
        _ => Err(SessionError::Protocol(format!(
            "the MCP result has no structuredContent and not exactly one text content \
             ({} content block(s), {} text)",
            result.content.len(),
            texts.len()
        ))),
    }
}

/// The attempt's result from the session's outcome and the server's exit status (`None`: it
/// had not exited within the grace and was killed). A tool's error text is kept to
/// [`ERROR_TEXT_LIMIT`] bytes, scrubbed by `scrubber` before it is cut.
pub(crate) fn classify(
    tool: &str,
    outcome: Result<Value, SessionError>,
    status: Option<JobStatus>,
    stderr: String,
    scrubber: &Scrubber,
) -> Result<Execution, ExecError> {
    match outcome {
        Ok(output) => Ok(Execution { output, stderr }),
        Err(SessionError::Tool { message, transient }) => {
            let within = scrubber.text_within(&message, ERROR_TEXT_LIMIT);
            let more = if within.dropped > 0 { " […]" } else { "" };
            let message = format!("`{tool}` reported an error: {}{more}", within.text);
            Err(if transient {
                ExecError::Transient { message, stderr }
            } else {
                ExecError::Permanent { message, stderr }
            })
        }
        Err(SessionError::Changed(message)) => Err(ExecError::Permanent {
            message: format!("`{tool}`: {message}"),
            stderr,
        }),
        Err(SessionError::Ambiguous(message)) => Err(ExecError::Permanent {
            message: format!("`{tool}`: {message}; no tools/call was sent"),
            stderr,
        }),
        Err(SessionError::Refused(message)) => Err(ExecError::Permanent {
            message: format!("`{tool}`: {message}"),
            stderr,
        }),
        Err(SessionError::Protocol(message)) => {
            Err(ExecError::Protocol(format!("`{tool}`: {message}")))
        }
        // Only a remote server is "unavailable"; a local one that is said so may be retried.
        Err(SessionError::Unavailable {
            message,
            retry_after,
        }) => Err(ExecError::Unavailable {
            message: format!("`{tool}`: {message}"),
            retry_after,
        }),
        Err(SessionError::Connection(why)) => {
            let ended = match status {
                Some(s) => format!("it {s}"),
                None => "it was still running".to_string(),
            };
            let message = with_stderr_tail(
                format!("the MCP server of `{tool}` did not answer ({why}); {ended}"),
                &stderr,
            );
            if status == Some(JobStatus::Exited(EXIT_TRANSIENT)) {
                Err(ExecError::Transient { message, stderr })
            } else {
                Err(ExecError::Permanent { message, stderr })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
    use serde_json::{json, Map};

    use super::*;

    /// `r` as the transport reads it off the wire: rmcp's own serialization of the MCP type.
    fn wire(r: CallToolResult) -> ToolResult {
        let v = serde_json::to_value(r).expect("a CallToolResult serializes");
        serde_json::from_value(v).expect("a CallToolResult reads as a ToolResult")
    }

    #[test]
    fn structured_content_is_the_output() {
        let r = CallToolResult::structured(json!({"a": 1}));
        assert_eq!(
            output_of(wire(r), &json!({"type": "object"})),
            Ok(json!({"a": 1}))
        );
    }

    #[test]
    fn one_json_text_is_the_output_otherwise() {
        let r = CallToolResult::success(vec![ContentBlock::text("{\"b\": true}")]);
        assert_eq!(
            output_of(wire(r), &json!({"type": "object"})),
            Ok(json!({"b": true}))
        );
        let r = CallToolResult::success(vec![ContentBlock::text("hello")]);
        assert!(matches!(
            output_of(wire(r), &json!({"type": "object"})),
            Err(SessionError::Protocol(_))
        ));
        let r = CallToolResult::success(vec![ContentBlock::text("{}"), ContentBlock::text("{}")]);
        assert!(matches!(
            output_of(wire(r), &json!({"type": "object"})),
            Err(SessionError::Protocol(_))
        ));
    }

    #[test]
    fn a_text_shaped_record_gets_the_joined_text_and_other_blocks_apart() {
        let shape = text_output_schema();
        assert!(is_text_shape(&shape));
        assert!(!is_text_shape(&json!({"type": "object"})));
        // JSON text stays text: the record says its output is text.
        let r = CallToolResult::success(vec![
            ContentBlock::text("{\"b\": 1}"),
            ContentBlock::text("two"),
        ]);
        assert_eq!(
            output_of(wire(r), &shape),
            Ok(json!({"text": "{\"b\": 1}\ntwo"}))
        );
        let r = CallToolResult::success(vec![]);
        assert_eq!(output_of(wire(r), &shape), Ok(json!({"text": ""})));
        let r = CallToolResult::success(vec![
            ContentBlock::text("see"),
            ContentBlock::image("aGk=", "image/png"),
        ]);
        let out = output_of(wire(r), &shape).expect("output");
        assert_eq!(out["text"], "see");
        assert_eq!(out["content"][0]["type"], "image");
        assert_eq!(out["content"][0]["mimeType"], "image/png");
        // Structured content still wins.
        let r = CallToolResult::structured(json!({"text": "s"}));
        assert_eq!(output_of(wire(r), &shape), Ok(json!({"text": "s"})));
    }

    #[test]
    fn errors_are_permanent_unless_marked_transient() {
        let r = CallToolResult::error(vec![ContentBlock::text("no such city")]);
        assert_eq!(
            output_of(wire(r), &json!({"type": "object"})),
            Err(SessionError::Tool {
                message: "no such city".into(),
                transient: false
            })
        );
        let mut meta = Map::new();
        meta.insert(TRANSIENT_META.into(), json!(true));
        let r = CallToolResult::error(vec![ContentBlock::text("busy")])
            .with_meta(Some(MetaObject(meta)));
        assert!(matches!(
            output_of(wire(r), &json!({"type": "object"})),
            Err(SessionError::Tool {
                transient: true,
                ..
            })
        ));
    }

    #[test]
    fn tools_are_picked_by_exact_then_mapped_name() {
        assert_eq!(
            pick_tool(&["word_count", "word-count"], "word_count").as_deref(),
            Ok("word_count")
        );
        assert_eq!(
            pick_tool(&["word-count"], "word_count").as_deref(),
            Ok("word-count")
        );
        assert!(pick_tool(&["word-count", "word.count"], "word_count").is_err());
        assert!(pick_tool(&[], "word_count").is_err());
    }
}
