//! A minimal MCP client on a pair of byte streams that reads every answer as raw JSON.
//!
//! MCP over stdio is newline-delimited JSON-RPC 2.0. [`RawClient`] speaks the client's side of
//! it: `initialize` (the legacy handshake every MCP server speaks) and
//! `notifications/initialized`, then requests one at a time. Answers are kept as JSON values,
//! never decoded into typed models first, because a typed decoding loses what it does not know
//! and refuses what it does not accept: a `tools/list` with one tool lacking `inputSchema` would
//! fail as a whole, and a tool's unknown members would vanish from its pinned definition
//! ([`super::definition`]). The same client serves `escepine import mcp` (the listing) and the
//! `mcp-stdio` transport (listing, pin check, call), so both see one listing alike.
//!
//! A `tools/list` answer is also read strictly ([`escepine_contract::strict_json`]): a key given
//! twice in one object (a tool repeating `description`, say) and a tool named twice across the
//! listing's pages are refused as [`SessionError::Ambiguous`], naming the tool and the pointer.
//! Such a listing reads differently in different readers (serde_json keeps the last copy of a
//! key, others the first; the transport would pick the first copy of a tool), so neither the
//! import nor the pin check may trust it: the import writes nothing and the transport sends no
//! `tools/call`.
//!
//! While it waits for an answer the client answers the server's own requests: `ping` with an
//! empty result, anything else with JSON-RPC error -32601 (method not found); notifications
//! and lines that are not JSON objects are skipped. A line longer than the bound is a protocol
//! failure; the end of the server's output is a connection failure.

use std::collections::HashMap;

use escepine_contract::strict_json::{self, StrictJsonError};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// How an MCP session failed, before the server's exit status is known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The connection failed or closed before the answer (the server may have exited).
    #[error("the MCP connection failed: {0}")]
    Connection(String),
    /// The server refused: a JSON-RPC error answer, or no tool of that name.
    #[error("{0}")]
    Refused(String),
    /// The answer is not a usable output (no structured content, no JSON text).
    #[error("{0}")]
    Protocol(String),
    /// The server's current definition of the tool differs from the record's pin
    /// (`endpoint.definition_sha256`); no `tools/call` was sent.
    #[error("{0}")]
    Changed(String),
    /// The server's `tools/list` is ambiguous: it names a tool twice, or gives a key twice in
    /// one object. The whole listing is refused (no `tools/call` follows it).
    #[error("{0}")]
    Ambiguous(String),
    /// A remote server is busy or unreachable (HTTP 429 or 503, a failed connection): worth
    /// another attempt, after `retry_after` when the server said (`Retry-After`).
    #[error("{message}")]
    Unavailable {
        /// What happened.
        message: String,
        /// How long the server asked the client to wait.
        retry_after: Option<std::time::Duration>,
    },
    /// The tool reported an error (`isError: true`).
    #[error("the MCP tool reported an error: {message}")]
    Tool {
        /// The tool's text content (whole: the transport's classification bounds it).
        message: String,
        /// Whether its `_meta` marked it transient.
        transient: bool,
    },
}

/// The MCP protocol revision this client asks for in `initialize` (the newest revision that
/// has an `initialize` handshake).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Most `tools/list` pages read before the listing is refused (a server whose cursors never
/// end would otherwise hold the session until its deadline).
pub const MAX_LIST_PAGES: usize = 1000;

/// An initialized MCP client session on a server's stdout (`R`) and stdin (`W`). Dropping it
/// closes the server's stdin.
pub struct RawClient<R, W> {
    read: BufReader<R>,
    write: W,
    next_id: u64,
    max_line: usize,
    initialized: Value,
}

impl<R, W> std::fmt::Debug for RawClient<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawClient")
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

impl<R, W> RawClient<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    /// Initialize a session: `initialize`, then `notifications/initialized`. Lines longer than
    /// `max_line` bytes are refused.
    ///
    /// # Errors
    /// [`SessionError::Connection`] (`initialize: …`) when the server closes or the streams
    /// fail, [`SessionError::Refused`] for an error answer, [`SessionError::Protocol`] for an
    /// overlong line.
    pub async fn connect(read: R, write: W, max_line: usize) -> Result<Self, SessionError> {
        let mut client = Self {
            read: BufReader::new(read),
            write,
            next_id: 0,
            max_line,
            initialized: Value::Null,
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "escepine", "version": env!("CARGO_PKG_VERSION") },
        });
        client.initialized = client.request("initialize", params).await?;
        client
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await
            .map_err(|e| SessionError::Connection(format!("initialize: {e}")))?;
        Ok(client)
    }

    /// The `serverInfo` of the `initialize` result, if the server gave one.
    pub fn server_info(&self) -> Option<&Value> {
        self.initialized.get("serverInfo")
    }

    /// Every tool of `tools/list`: see [`list_tools`].
    ///
    /// # Errors
    /// As [`list_tools`].
    pub async fn list_tools(&mut self) -> Result<Vec<Value>, SessionError> {
        list_tools(self).await
    }

    /// Send the request `method` with `params` and wait for its answer: the `result`.
    ///
    /// # Errors
    /// [`SessionError::Connection`] (`<method>: …`) when the server closes or the streams
    /// fail, [`SessionError::Refused`] for an error answer, [`SessionError::Protocol`] for an
    /// overlong line or an answer with neither result nor error.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, SessionError> {
        self.exchange(method, params)
            .await
            .map(|(result, _)| result)
    }

    /// [`RawClient::request`], with the answer's line as the server wrote it (for a strict
    /// reading of its bytes).
    async fn exchange(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<(Value, Vec<u8>), SessionError> {
        self.next_id += 1;
        let id = self.next_id;
        let closed = |why: String| SessionError::Connection(format!("{method}: {why}"));
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await
            .map_err(|e| closed(e.to_string()))?;
        loop {
            let Some(line) = self.line().await.map_err(|e| match e {
                LineError::Io(e) => closed(e.to_string()),
                LineError::TooLong => SessionError::Protocol(format!(
                    "a message of the MCP server is longer than {} bytes",
                    self.max_line
                )),
            })?
            else {
                return Err(closed("connection closed".into()));
            };
            let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if let Some(theirs) = message.get("method").and_then(Value::as_str) {
                // A request of the server's (it has an id) is answered; a notification is not.
                if let Some(their_id) = message.get("id").cloned() {
                    let answer = if theirs == "ping" {
                        json!({ "jsonrpc": "2.0", "id": their_id, "result": {} })
                    } else {
                        json!({ "jsonrpc": "2.0", "id": their_id,
                                "error": { "code": -32601, "message": "method not found" } })
                    };
                    self.send(&answer)
                        .await
                        .map_err(|e| closed(e.to_string()))?;
                }
                continue;
            }
            if message.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(result) = message.remove("result") {
                return Ok((result, line));
            }
            let error = message.remove("error").unwrap_or(Value::Null);
            return Err(error_answer(method, &error));
        }
    }

    async fn send(&mut self, message: &Value) -> std::io::Result<()> {
        let mut text = message.to_string();
        text.push('\n');
        self.write.write_all(text.as_bytes()).await?;
        self.write.flush().await
    }

    /// The next line (without its newline), `None` at the end of the stream.
    async fn line(&mut self) -> Result<Option<Vec<u8>>, LineError> {
        let mut line = Vec::new();
        loop {
            let buf = self.read.fill_buf().await.map_err(LineError::Io)?;
            if buf.is_empty() {
                return Ok((!line.is_empty()).then_some(line));
            }
            let (take, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(at) => (at, true),
                None => (buf.len(), false),
            };
            if line.len() + take > self.max_line {
                return Err(LineError::TooLong);
            }
            line.extend_from_slice(&buf[..take]);
            self.read.consume(take + usize::from(done));
            if done {
                return Ok(Some(line));
            }
        }
    }
}

impl<R, W> Exchange for RawClient<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    async fn exchange(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<(Value, Vec<u8>), SessionError> {
        RawClient::exchange(self, method, params).await
    }
}

/// One request/answer of an MCP client, whatever carries it (a server's stdio, streamable
/// HTTP): the `result`, with the answer's bytes as the server wrote them (for a strict reading).
pub trait Exchange {
    /// Send the request `method` with `params`; its `result` and the answer's bytes.
    ///
    /// # Errors
    /// [`SessionError`]: an error answer is [`SessionError::Refused`].
    fn exchange(
        &mut self,
        method: &str,
        params: Value,
    ) -> impl std::future::Future<Output = Result<(Value, Vec<u8>), SessionError>>;
}

/// Every tool of `tools/list` (all pages, following `nextCursor`), each as the server wrote
/// it. Each page is also read strictly: a key given twice in one object, or a tool name given
/// twice across the pages, refuses the whole listing.
///
/// # Errors
/// As [`Exchange::exchange`]; [`SessionError::Protocol`] for a result without a `tools` list,
/// or more than [`MAX_LIST_PAGES`] pages; [`SessionError::Ambiguous`] for a repeated key or
/// tool name (see the module documentation).
pub async fn list_tools<E: Exchange>(client: &mut E) -> Result<Vec<Value>, SessionError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for page_no in 1..=MAX_LIST_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let (mut page, line) = client.exchange("tools/list", params).await?;
        let first = tools.len();
        match page.get_mut("tools").map(Value::take) {
            Some(Value::Array(listed)) => tools.extend(listed),
            _ => {
                return Err(SessionError::Protocol(
                    "the MCP server's tools/list result holds no `tools` list".into(),
                ))
            }
        }
        match strict_json::from_slice(&line) {
            Ok(_) => {}
            Err(StrictJsonError::DuplicateKey(d)) => {
                return Err(repeated_key(&d, &tools, first, page_no))
            }
            Err(StrictJsonError::Syntax(e)) => {
                return Err(SessionError::Protocol(format!(
                    "the MCP server's tools/list answer is not JSON: {e}"
                )))
            }
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        if cursor.is_none() {
            refuse_repeated_names(&tools)?;
            return Ok(tools);
        }
    }
    Err(SessionError::Protocol(format!(
        "the MCP server's tools/list did not end within {MAX_LIST_PAGES} pages"
    )))
}

/// The refusal of an error answer to `method` (a JSON-RPC `error` object).
pub(crate) fn error_answer(method: &str, error: &Value) -> SessionError {
    SessionError::Refused(format!(
        "the MCP server answered {method} with error {}: {}",
        error.get("code").map_or("?".into(), ToString::to_string),
        error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
    ))
}

/// The refusal of a listing page that gives a key twice: named in the listing (`/tools/<i>…`,
/// counted across pages, with the tool's name) when the key is inside a tool, else by its
/// pointer in the JSON-RPC answer of page `page_no`. `tools` holds the tools read so far, this
/// page's from index `first`.
fn repeated_key(
    d: &strict_json::DuplicateKey,
    tools: &[Value],
    first: usize,
    page_no: usize,
) -> SessionError {
    let pointer = d.pointer();
    let in_tool = pointer.strip_prefix("/result/tools/").and_then(|rest| {
        let (index, below) = rest.split_once('/').map_or((rest, ""), |(i, b)| (i, b));
        let at = first + index.parse::<usize>().ok()?;
        let name = tools.get(at)?.get("name").and_then(Value::as_str);
        let slash = if below.is_empty() { "" } else { "/" };
        Some((at, name, format!("/tools/{at}{slash}{below}")))
    });
    let place = match in_tool {
        Some((_, Some(name), at)) => format!("in the tool `{name}` (at {at} of the listing)"),
        Some((at, None, ptr)) => format!("in its tool {at}, which has no name (at {ptr})"),
        None => format!("in its answer to page {page_no} (at {pointer} of the JSON-RPC message)"),
    };
    SessionError::Ambiguous(format!(
        "the MCP server's tools/list gives the key `{}` twice {place}: a listing that reads \
         differently in different JSON readers is refused",
        d.key
    ))
}

/// Refuse a listing that names a tool twice (the copies may differ: which one is the tool?).
fn refuse_repeated_names(tools: &[Value]) -> Result<(), SessionError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, tool) in tools.iter().enumerate() {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if let Some(&j) = seen.get(name) {
            let copies = if tools.get(j) == Some(tool) {
                "identical copies"
            } else {
                "the copies differ"
            };
            return Err(SessionError::Ambiguous(format!(
                "the MCP server's tools/list names the tool `{name}` twice (at /tools/{j} and \
                 /tools/{i} of the listing; {copies}): a listing that names a tool twice is \
                 refused"
            )));
        }
        seen.insert(name, i);
    }
    Ok(())
}

enum LineError {
    Io(std::io::Error),
    TooLong,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted server: answers `initialize`, then each request by `answer`.
    async fn serve(
        server: tokio::io::DuplexStream,
        answer: impl Fn(&Value) -> Vec<Value> + Send + 'static,
    ) {
        serve_text(server, move |msg| {
            answer(msg).iter().map(Value::to_string).collect()
        })
        .await;
    }

    /// A scripted server answering with raw lines (which may say what a `Value` cannot).
    async fn serve_text(
        server: tokio::io::DuplexStream,
        answer: impl Fn(&Value) -> Vec<String> + Send + 'static,
    ) {
        let (read, mut write) = tokio::io::split(server);
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            for mut text in answer(&msg) {
                text.push('\n');
                if write.write_all(text.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
    }

    fn answer(msg: &Value) -> Vec<Value> {
        let id = msg.get("id").cloned();
        match (msg["method"].as_str(), id) {
            (Some("initialize"), Some(id)) => vec![
                json!("not an object"),
                json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
                json!({"jsonrpc": "2.0", "id": id,
                       "result": {"serverInfo": {"name": "s", "version": "1.0.0"}}}),
            ],
            (Some("tools/list"), Some(id)) => {
                let page2 = msg["params"]["cursor"] == "2";
                let mut out = vec![json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})];
                out.push(if page2 {
                    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "b"}]}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id,
                           "result": {"tools": [{"name": "a", "x-extra": 1}], "nextCursor": "2"}})
                });
                out
            }
            (Some("boom"), Some(id)) => vec![json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32000, "message": "no"}})],
            _ => Vec::new(),
        }
    }

    #[tokio::test]
    async fn listing_is_raw_and_paged_and_errors_are_refusals() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(serve(theirs, answer));
        let (read, write) = tokio::io::split(ours);
        let mut c = RawClient::connect(read, write, 1 << 16)
            .await
            .expect("initialized");
        assert_eq!(c.server_info().expect("info")["name"], "s");
        let tools = c.list_tools().await.expect("listed");
        assert_eq!(
            tools,
            vec![json!({"name": "a", "x-extra": 1}), json!({"name": "b"})]
        );
        let err = c.request("boom", json!({})).await.expect_err("refused");
        assert!(
            matches!(&err, SessionError::Refused(m) if m.contains("boom with error -32000: no")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_closed_connection_and_an_overlong_line_are_named() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        drop(theirs);
        let (read, write) = tokio::io::split(ours);
        let err = RawClient::connect(read, write, 64)
            .await
            .expect_err("closed");
        assert!(
            matches!(&err, SessionError::Connection(m) if m.starts_with("initialize: ")),
            "{err:?}"
        );

        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(serve(theirs, |msg| {
            vec![json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"pad": "x".repeat(200)}})]
        }));
        let (read, write) = tokio::io::split(ours);
        let err = RawClient::connect(read, write, 64).await.expect_err("long");
        assert!(matches!(err, SessionError::Protocol(_)), "{err:?}");
    }

    /// The error of listing a server whose first page is `page1` and second `page2` (the
    /// `result` objects, raw), or the tools.
    async fn listed(page1: &'static str, page2: &'static str) -> Result<Vec<Value>, SessionError> {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(serve_text(theirs, move |msg| {
            let id = &msg["id"];
            let page = if msg["params"]["cursor"] == "2" {
                page2
            } else {
                page1
            };
            match msg["method"].as_str() {
                Some("initialize") => {
                    vec![format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)]
                }
                Some("tools/list") => {
                    vec![format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{page}}}"#)]
                }
                _ => Vec::new(),
            }
        }));
        let (read, write) = tokio::io::split(ours);
        let mut c = RawClient::connect(read, write, 1 << 16)
            .await
            .expect("initialized");
        c.list_tools().await
    }

    fn ambiguous(r: Result<Vec<Value>, SessionError>) -> String {
        match r {
            Err(SessionError::Ambiguous(m)) => m,
            other => panic!("not refused as ambiguous: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_listing_naming_a_tool_twice_or_repeating_a_key_is_refused() {
        let first = r#"{"tools": [{"name": "a", "description": "A."}], "nextCursor": "2"}"#;
        // Clean pages are listed.
        let tools = listed(first, r#"{"tools": [{"name": "b"}]}"#)
            .await
            .expect("listed");
        assert_eq!(tools.len(), 2);

        // A key repeated inside a tool, named by the tool and its pointer in the listing
        // (counted across pages).
        let m = ambiguous(
            listed(
                first,
                r#"{"tools": [{"name": "b", "description": "B.", "description": "Mail it."}]}"#,
            )
            .await,
        );
        assert!(
            m.contains("the key `description` twice in the tool `b` (at /tools/1/description"),
            "{m}"
        );
        let m = ambiguous(
            listed(
                r#"{"tools": [{"name": "a", "inputSchema": {"type": "object", "properties": {"x": {}, "x": {"type": "string"}}}}]}"#,
                "",
            )
            .await,
        );
        assert!(
            m.contains("`x` twice in the tool `a` (at /tools/0/inputSchema/properties/x"),
            "{m}"
        );

        // A tool named twice across the pages, the second copy changed.
        let m = ambiguous(
            listed(
                first,
                r#"{"tools": [{"name": "a", "description": "Mail it."}]}"#,
            )
            .await,
        );
        assert!(
            m.contains("names the tool `a` twice (at /tools/0 and /tools/1 of the listing; the copies differ)"),
            "{m}"
        );

        // A key repeated outside the tools, by its pointer in the answer.
        let m = ambiguous(listed(r#"{"tools": [], "tools": [{"name": "a"}]}"#, "").await);
        assert!(
            m.contains("`tools` twice in its answer to page 1 (at /result/tools of the JSON-RPC"),
            "{m}"
        );
        let m = ambiguous(
            listed(
                r#"{"tools": [{"name": "a"}], "nextCursor": "2", "nextCursor": ""}"#,
                "",
            )
            .await,
        );
        assert!(m.contains("at /result/nextCursor"), "{m}");
    }
}
