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
//! While it waits for an answer the client answers the server's own requests: `ping` with an
//! empty result, anything else with JSON-RPC error -32601 (method not found); notifications
//! and lines that are not JSON objects are skipped. A line longer than the bound is a protocol
//! failure; the end of the server's output is a connection failure.

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

    /// Every tool of `tools/list` (all pages, following `nextCursor`), each as the server
    /// wrote it.
    ///
    /// # Errors
    /// As [`RawClient::request`]; [`SessionError::Protocol`] for a result without a `tools`
    /// list, or more than [`MAX_LIST_PAGES`] pages.
    pub async fn list_tools(&mut self) -> Result<Vec<Value>, SessionError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let mut page = self.request("tools/list", params).await?;
            match page.get_mut("tools").map(Value::take) {
                Some(Value::Array(listed)) => tools.extend(listed),
                _ => {
                    return Err(SessionError::Protocol(
                        "the MCP server's tools/list result holds no `tools` list".into(),
                    ))
                }
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_string);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(SessionError::Protocol(format!(
            "the MCP server's tools/list did not end within {MAX_LIST_PAGES} pages"
        )))
    }

    /// Send the request `method` with `params` and wait for its answer: the `result`.
    ///
    /// # Errors
    /// [`SessionError::Connection`] (`<method>: …`) when the server closes or the streams
    /// fail, [`SessionError::Refused`] for an error answer, [`SessionError::Protocol`] for an
    /// overlong line or an answer with neither result nor error.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, SessionError> {
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
                return Ok(result);
            }
            let error = message.remove("error").unwrap_or(Value::Null);
            return Err(SessionError::Refused(format!(
                "the MCP server answered {method} with error {}: {}",
                error.get("code").map_or("?".into(), ToString::to_string),
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
            )));
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
        let (read, mut write) = tokio::io::split(server);
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            for out in answer(&msg) {
                let mut text = out.to_string();
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
}
