//! Remote MCP servers on loopback that require OAuth access tokens (feature `oidc`), one per
//! official SDK, with the same tools and the same test routes:
//! - [`RemoteSdk::TypeScript`]: `runtime/tests/fixtures/remote/ts_server.mjs`, `McpServer` over
//!   `StreamableHTTPServerTransport` (SDK 1.x: `initialize` and `Mcp-Session-Id` sessions up to
//!   2025-11-25; a `server/discover` outside a session is answered 400);
//! - [`RemoteSdk::Python`]: `runtime/tests/fixtures/remote/py_server.py`, `MCPServer`'s
//!   streamable HTTP app (SDK 2.x: 2026-07-28 per-request exchanges for a request that names
//!   that revision, `server/discover` among them; the 2025-11-25 handshake and sessions
//!   otherwise).
//!
//! Both verify JWTs of one issuer (its key set found through its discovery document) whose
//! `aud` is the server's resource and whose `scope` holds the server's scope, and answer
//! otherwise 401 with `WWW-Authenticate: Bearer … resource_metadata="…"` (403
//! `insufficient_scope` for a token without the scope); both serve RFC 9728 metadata at
//! `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource/mcp`.
//! Their tools: `whoami` (read-only; structured `{sub, client_id, act}` of the verified token,
//! `act` its `act.sub` or null), `note_search` (`{query}`; read-only; text `found: <query>`),
//! `echo` (`{text}`), `fail` (an `isError` result, "remote failure").
//!
//! The test routes ([`RemoteServer::counts`], [`RemoteServer::fail_next`], …) answer without a
//! token. Every call blocks, like [`crate::oidc`]'s.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::fixtures;
use crate::oidc::{agent, free_loopback_port};

/// How long a server may take to print its URL.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Which SDK the server is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteSdk {
    /// `@modelcontextprotocol/sdk` 1.x: `McpServer` over `StreamableHTTPServerTransport`.
    TypeScript,
    /// `mcp` 2.x: `MCPServer.streamable_http_app()` under uvicorn.
    Python,
}

impl RemoteSdk {
    /// Both SDKs.
    pub const ALL: [RemoteSdk; 2] = [RemoteSdk::TypeScript, RemoteSdk::Python];
}

/// A running remote server (killed on drop).
pub struct RemoteServer {
    child: Child,
    sdk: RemoteSdk,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// Its port.
    pub port: u16,
    resource: String,
    log: Arc<Mutex<String>>,
}

impl std::fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServer")
            .field("sdk", &self.sdk)
            .field("url", &self.url)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RemoteServer {
    /// Start a server of `sdk` on a free port, accepting tokens of `issuer` with `scope` for its
    /// own URL (its resource is [`Self::url_on`] its port).
    ///
    /// # Panics
    /// When the SDK is not installed (run `.ci/fixtures`) or the server does not start.
    pub fn start(sdk: RemoteSdk, issuer: &str, scope: &str) -> Self {
        Self::start_on(sdk, free_loopback_port(), issuer, scope)
    }

    /// The URL a server started on `port` has (its resource URI when started by
    /// [`Self::start_on`]): for an authorization server that must know the resource before the
    /// server starts.
    pub fn url_on(port: u16) -> String {
        format!("http://127.0.0.1:{port}/mcp")
    }

    /// [`Self::start`] on `port`, its resource [`Self::url_on`] `port`.
    ///
    /// # Panics
    /// As [`Self::start`], and when it listens elsewhere.
    pub fn start_on(sdk: RemoteSdk, port: u16, issuer: &str, scope: &str) -> Self {
        let url = Self::url_on(port);
        let server = Self::spawn(sdk, port, issuer, &url, scope);
        assert_eq!(server.url, url, "the server listens where it was told");
        server
    }

    /// Start a server of `sdk` on a port it picks, accepting tokens of `issuer` whose `aud` is
    /// `resource` (any URI, such as `https://notes.remote.test/mcp`: the authorization server
    /// can know it before the server starts) and whose `scope` holds `scope`. Its metadata
    /// names `resource`.
    ///
    /// # Panics
    /// As [`Self::start`].
    pub fn start_with_resource(sdk: RemoteSdk, issuer: &str, resource: &str, scope: &str) -> Self {
        Self::spawn(sdk, 0, issuer, resource, scope)
    }

    fn spawn(sdk: RemoteSdk, port: u16, issuer: &str, resource: &str, scope: &str) -> Self {
        let mut file = tempfile::NamedTempFile::new().expect("a config file");
        let doc = json!({ "port": port, "issuer": issuer, "resource": resource, "scope": scope });
        std::io::Write::write_all(&mut file, doc.to_string().as_bytes()).expect("write");
        let dir = crate::bins::workspace_root().join("runtime/tests/fixtures/remote");
        let mut cmd = match sdk {
            RemoteSdk::TypeScript => {
                let modules = fixtures::node_modules().unwrap_or_else(|e| panic!("{e}"));
                let mut c = Command::new(fixtures::NODE);
                c.env("NODE_PATH", modules).arg(dir.join("ts_server.mjs"));
                c
            }
            RemoteSdk::Python => {
                let python = fixtures::python_bin().unwrap_or_else(|e| panic!("{e}"));
                let mut c = Command::new(python);
                c.arg(dir.join("py_server.py"));
                c
            }
        };
        let mut child = cmd
            .arg(file.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the remote {sdk:?} server: {e}"));
        // Its log, echoed, and kept for failure messages.
        let watched = crate::child_log::ChildLog::watch(
            &mut child,
            &format!("remote {sdk:?}"),
            crate::child_log::loud,
            |line| line.strip_prefix("url ").map(|u| u.trim().to_string()),
        );
        let url = watched.ready(
            &mut child,
            START_TIMEOUT,
            &format!("the remote {sdk:?} server printed no url"),
        );
        let log = watched.shared();
        // The config file may go once the server has read it (it has, once it listens).
        drop(file);
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the remote {sdk:?} server printed a loopback url: {url}"));
        Self {
            child,
            sdk,
            url,
            port,
            resource: resource.to_string(),
            log,
        }
    }

    /// Its SDK.
    pub fn sdk(&self) -> RemoteSdk {
        self.sdk
    }

    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The resource URI its tokens' `aud` must be.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Its origin as an egress entry names it: `127.0.0.1:PORT`.
    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Its RFC 9728 metadata URL (`/.well-known/oauth-protected-resource`; the same document
    /// is at that path followed by `/mcp`).
    pub fn metadata_url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/.well-known/oauth-protected-resource",
            self.port
        )
    }

    fn test_url(&self, route: &str) -> String {
        format!("http://127.0.0.1:{}/test/{route}", self.port)
    }

    fn post(&self, route: &str, body: Value) {
        let mut response = agent()
            .post(self.test_url(route))
            .send_json(body)
            .unwrap_or_else(|e| panic!("POST /test/{route}: {e}\n{}", self.stderr()));
        let status = response.status();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        assert_eq!(status, 200, "POST /test/{route}: {text}");
    }

    /// What reached it: `{"requests": N, "authorization_headers": N, "initialize": N,
    /// "discover": N, "tools_list": N, "tools_call": N, "subs": [...]}`: the HTTP requests to
    /// /mcp (of any kind and answer) and those with an `Authorization` header, then the JSON-RPC
    /// requests past authentication by method (`discover` is `server/discover`; a `tools/call`
    /// answered by [`Self::jsonrpc_error_next`] is not counted), and the token `sub` of each
    /// counted `tools/call`, in order.
    pub fn counts(&self) -> Value {
        let mut response = agent()
            .get(self.test_url("counts"))
            .call()
            .unwrap_or_else(|e| panic!("GET /test/counts: {e}\n{}", self.stderr()));
        response.body_mut().read_json().expect("json")
    }

    /// Counts to zero, [`Self::fail_next`], [`Self::redirect_to`] and
    /// [`Self::jsonrpc_error_next`] off (a changed definition stays changed).
    pub fn reset(&self) {
        self.post("reset", json!({}));
    }

    /// Change `echo`'s description to "echo, changed", so its definition digest changes: for
    /// the sessions open (the TypeScript server updates each one's tool) and those to come.
    pub fn change_definition(&self) {
        self.post("change", json!({}));
    }

    /// Answer the next `count` requests to /mcp `status` (with `Retry-After: retry_after` when
    /// given), before authentication.
    pub fn fail_next(&self, status: u16, retry_after: Option<&str>, count: u32) {
        self.post(
            "fail-next",
            json!({ "status": status, "retry_after": retry_after, "count": count }),
        );
    }

    /// Answer every request to /mcp `307` to `location`, before authentication ("": stop).
    pub fn redirect_to(&self, location: &str) {
        self.post("redirect", json!({ "location": location }));
    }

    /// Answer the next `count` `tools/call`s (past authentication) with the JSON-RPC error
    /// -32603 "internal error" instead of running them.
    pub fn jsonrpc_error_next(&self, count: u32) {
        self.post("jsonrpc-error", json!({ "count": count }));
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Its stderr so far (as [`Self::stderr`]).
    pub fn log(&self) -> String {
        self.stderr()
    }
}
