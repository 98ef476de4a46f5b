//! Remote MCP servers on loopback that require OAuth access tokens (feature `oidc`): one written
//! with the official TypeScript SDK (`runtime/tests/fixtures/remote/ts_server.mjs`, 2025-11-25
//! sessions, with test routes for hostile behaviour), one with the Python SDK 2.x's `MCPServer`
//! (`py_server.py`, 2026-07-28 for a client that speaks it). Both verify JWTs of one issuer
//! for their resource — their own URL — with one scope.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::fixtures;
use crate::oidc::{agent, free_loopback_port};

/// Which SDK the server is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteSdk {
    /// `@modelcontextprotocol/sdk` 1.x: `McpServer` over `StreamableHTTPServerTransport`.
    TypeScript,
    /// `mcp` 2.x: `MCPServer.streamable_http_app()` under uvicorn.
    Python,
}

/// A running remote server (killed on drop).
pub struct RemoteServer {
    child: Child,
    /// Its MCP endpoint, which is also its resource URI.
    pub url: String,
    /// Its port.
    pub port: u16,
    log: Arc<Mutex<String>>,
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RemoteServer {
    /// Start a server of `sdk` accepting tokens of `issuer` with `scope`.
    ///
    /// # Panics
    /// When the SDK is not installed (run `.ci/fixtures`) or the server does not start.
    pub fn start(sdk: RemoteSdk, issuer: &str, scope: &str) -> Self {
        Self::start_on(sdk, free_loopback_port(), issuer, scope)
    }

    /// The URL a server started on `port` has (its resource URI): for an authorization
    /// server that must know the resource before the server starts.
    pub fn url_on(port: u16) -> String {
        format!("http://127.0.0.1:{port}/mcp")
    }

    /// [`Self::start`] on `port`.
    ///
    /// # Panics
    /// As [`Self::start`].
    pub fn start_on(sdk: RemoteSdk, port: u16, issuer: &str, scope: &str) -> Self {
        let url = Self::url_on(port);
        let mut file = tempfile::NamedTempFile::new().expect("a config file");
        let doc = json!({ "port": port, "issuer": issuer, "resource": url, "scope": scope });
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
            .expect("spawn the remote server");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[remote {sdk:?}] {line}");
                if let Ok(mut kept) = kept.lock() {
                    kept.push_str(&line);
                    kept.push('\n');
                }
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("url ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let said = rx.recv_timeout(Duration::from_secs(30));
        // The config file may go once the server has read it (it has, once it listens).
        drop(file);
        match said {
            Ok(said) => assert_eq!(said, url, "the server listens where it was told"),
            Err(e) => {
                let _ = child.kill();
                let text = log.lock().map(|l| l.clone()).unwrap_or_default();
                panic!("the remote {sdk:?} server did not start ({e}):\n{text}");
            }
        }
        Self {
            child,
            url,
            port,
            log,
        }
    }

    /// Its origin as an egress entry names it: `127.0.0.1:PORT`.
    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn test_url(&self, route: &str) -> String {
        format!("http://127.0.0.1:{}/test/{route}", self.port)
    }

    fn post(&self, route: &str, body: Value) {
        let response = agent()
            .post(self.test_url(route))
            .send_json(body)
            .unwrap_or_else(|e| panic!("POST /test/{route}: {e}"));
        assert_eq!(response.status(), 200, "POST /test/{route}");
    }

    /// What reached it (see the fixture's header): `tools_call` and `subs` on both SDKs;
    /// `requests`, `initialize`, `tools_list` on the TypeScript one.
    pub fn counts(&self) -> Value {
        let mut response = agent()
            .get(self.test_url("counts"))
            .call()
            .expect("GET /test/counts");
        response.body_mut().read_json().expect("json")
    }

    /// Counts to zero, hostile behaviour off (TypeScript).
    pub fn reset(&self) {
        self.post("reset", json!({}));
    }

    /// Change `echo`'s description, so its definition digest changes (TypeScript).
    pub fn change_definition(&self) {
        self.post("change", json!({}));
    }

    /// Answer the next `count` requests to /mcp with `status` (and `Retry-After`)
    /// (TypeScript).
    pub fn fail_next(&self, status: u16, retry_after: Option<&str>, count: u32) {
        self.post(
            "fail-next",
            json!({ "status": status, "retry_after": retry_after, "count": count }),
        );
    }

    /// Answer every request to /mcp `307` to `location` ("": stop) (TypeScript).
    pub fn redirect_to(&self, location: &str) {
        self.post("redirect", json!({ "location": location }));
    }

    /// Answer the next `count` `tools/call`s with a JSON-RPC error (TypeScript).
    pub fn jsonrpc_error_next(&self, count: u32) {
        self.post("jsonrpc-error", json!({ "count": count }));
    }

    /// Its stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}
