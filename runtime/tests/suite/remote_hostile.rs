//! Remote endpoints against a hostile server on loopback, written as an attacker would: raw
//! HTTP over a socket, answering each JSON-RPC request as the test scripts it. It names a tool
//! twice, answers more bytes than the bound, hides the answer among other messages of an
//! event stream or never sends it, echoes the credential back, and refuses it.

use std::sync::{Arc, Mutex};

use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::ExecError;
use escepine_runtime::remote::RemoteExecutor;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::support::remote::{attempt, attempt_in, grant};
use escepine_runtime::telemetry::TraceContext;

const TOKEN: &str = "hostile-test-bearer-0123456789abcdef";

/// What the server answers a request: status, content type, body.
type Reply = (u16, &'static str, String);

/// The scripted server: `answer(method, request)`; every request's method is kept, and its
/// trace context: the `traceparent` header and `_meta.traceparent`.
struct Hostile {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    traced: Arc<Mutex<Vec<Traced>>>,
}

/// A request's method, `traceparent` header and `_meta.traceparent`.
type Traced = (String, Option<String>, Option<String>);

impl Hostile {
    async fn start(answer: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let traced = Arc::new(Mutex::new(Vec::new()));
        let (kept, kept_traced) = (seen.clone(), traced.clone());
        let answer = Arc::new(answer);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (answer, kept) = (answer.clone(), kept.clone());
                let kept_traced = kept_traced.clone();
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut read = BufReader::new(read);
                    loop {
                        let mut length = 0usize;
                        let mut header = None;
                        let mut line = String::new();
                        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        loop {
                            let mut h = String::new();
                            if read.read_line(&mut h).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if h == "\r\n" {
                                break;
                            }
                            let lower = h.to_ascii_lowercase();
                            if let Some(v) = lower.strip_prefix("content-length:") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                            if let Some(v) = lower.strip_prefix("traceparent:") {
                                header = Some(v.trim().to_string());
                            }
                        }
                        let mut body = vec![0; length];
                        if read.read_exact(&mut body).await.is_err() {
                            return;
                        }
                        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let method = request["method"].as_str().unwrap_or("?").to_string();
                        kept.lock().expect("seen").push(method.clone());
                        let meta = request
                            .pointer("/params/_meta/traceparent")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                        kept_traced
                            .lock()
                            .expect("traced")
                            .push((method.clone(), header, meta));
                        let (status, kind, mut text) = answer(&method, &request);
                        if let Some(id) = request.get("id") {
                            text = text.replace("\"$ID\"", &id.to_string());
                        }
                        let head = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n",
                            text.len()
                        );
                        if write.write_all(head.as_bytes()).await.is_err()
                            || write.write_all(text.as_bytes()).await.is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        Self { port, seen, traced }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("seen").clone()
    }

    fn record(&self) -> ToolRecord {
        remote_record(
            "remote_echo",
            self.port,
            "echo",
            text_input(),
            json!({ "bearer": "REMOTE_TOKEN" }),
            "REMOTE_TOKEN",
        )
        .registered()
    }

    async fn call(&self) -> Result<Value, ExecError> {
        self.call_in(None).await
    }

    /// [`Hostile::call`] as an attempt continuing `trace`.
    async fn call_in(&self, trace: Option<&TraceContext>) -> Result<Value, ExecError> {
        let exec = RemoteExecutor::new(&[] as &[std::path::PathBuf]).expect("executor");
        attempt_in(
            &exec,
            &self.record(),
            &json!({"text": "hi"}),
            &grant(&format!("127.0.0.1:{}", self.port)),
            &[("REMOTE_TOKEN", TOKEN)],
            trace,
        )
        .await
        .result
        .map(|e| e.output)
    }
}

/// A record of the remote tool `tool` on the loopback server at `port`: `input` its input
/// schema, `{"text": …}` its output, `auth` its endpoint's authentication using `secret`.
fn remote_record(
    id: &str,
    port: u16,
    tool: &str,
    input: Value,
    auth: Value,
    secret: &str,
) -> RecordBuilder {
    RecordBuilder::new(id)
        .input_schema(input)
        .output_schema(json!({"type": "object", "additionalProperties": false,
                               "required": ["text"], "properties": {"text": {"type": "string"}}}))
        .field(
            "endpoint",
            json!({ "transport": "mcp-http", "tool": tool,
                    "url": format!("http://127.0.0.1:{port}/mcp"), "auth": auth }),
        )
        .secrets([secret])
        .egress([format!("127.0.0.1:{port}")])
}

/// The input of a tool taking an optional `text`.
fn text_input() -> Value {
    json!({"type": "object", "additionalProperties": false,
           "properties": {"text": {"type": "string"}}})
}

const JSON: &str = "application/json";
const SSE: &str = "text/event-stream";

/// The answers of a well-behaved 2026-07-28 server, `list` its tools and `call` its result.
fn modern(method: &str, list: &str, call: &str) -> Reply {
    let body = match method {
        "server/discover" => r#"{"jsonrpc":"2.0","id":"$ID","result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete"}}"#.to_string(),
        "tools/list" => format!(r#"{{"jsonrpc":"2.0","id":"$ID","result":{{"tools":{list}}}}}"#),
        "tools/call" => format!(r#"{{"jsonrpc":"2.0","id":"$ID","result":{call}}}"#),
        _ => r#"{"jsonrpc":"2.0","id":"$ID","error":{"code":-32601,"message":"no"}}"#.to_string(),
    };
    (200, JSON, body)
}

const ECHO: &str = r#"{"name":"echo","inputSchema":{"type":"object"}}"#;

#[tokio::test]
async fn a_well_behaved_server_answers_over_json() {
    let server = Hostile::start(|m, _| {
        modern(
            m,
            &format!("[{ECHO}]"),
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
        )
    })
    .await;
    assert_eq!(
        server.call().await.expect("the call"),
        json!({"text": "hi"})
    );
    assert_eq!(
        server.seen(),
        ["server/discover", "tools/list", "tools/call"]
    );
}

/// An attempt continuing a trace passes it on: the `traceparent` header of every request of
/// the session (2026-07-28 and a 2025-11-25 session alike) and `_meta.traceparent` of the
/// `tools/call`; without one, neither is sent.
#[tokio::test]
async fn the_attempt_s_trace_context_reaches_the_remote_server() {
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let trace = TraceContext::parse(parent, None).expect("a valid traceparent");
    let legacy = |m: &str, _: &Value| {
        match m {
        "server/discover" => (
            200,
            JSON,
            r#"{"jsonrpc":"2.0","id":"$ID","error":{"code":-32601,"message":"no"}}"#.to_string(),
        ),
        "initialize" => (
            200,
            JSON,
            r#"{"jsonrpc":"2.0","id":"$ID","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}}"#.to_string(),
        ),
        "notifications/initialized" => (202, JSON, String::new()),
        other => modern(other, &format!("[{ECHO}]"), r#"{"content":[{"type":"text","text":"hi"}]}"#),
    }
    };
    let modern_server = Hostile::start(|m, _| {
        modern(
            m,
            &format!("[{ECHO}]"),
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
        )
    })
    .await;
    let legacy_server = Hostile::start(legacy).await;
    for server in [&modern_server, &legacy_server] {
        assert_eq!(
            server.call_in(Some(&trace)).await.expect("the call"),
            json!({"text": "hi"})
        );
        let traced = server.traced.lock().expect("traced").clone();
        assert!(traced.len() >= 3, "{traced:?}");
        for (method, header, meta) in &traced {
            assert_eq!(header.as_deref(), Some(parent), "{method}");
            let expected = (method == "tools/call").then_some(parent);
            assert_eq!(meta.as_deref(), expected, "{method}");
        }
        server.traced.lock().expect("traced").clear();
        server.call().await.expect("the call");
        let traced = server.traced.lock().expect("traced").clone();
        assert!(
            traced.iter().all(|(_, h, m)| h.is_none() && m.is_none()),
            "{traced:?}"
        );
    }
    assert!(legacy_server.seen().contains(&"initialize".to_string()));
}

#[tokio::test]
async fn a_listing_naming_the_tool_twice_is_refused_before_any_call() {
    let server = Hostile::start(|m, _| {
        let twice = format!(
            r#"[{ECHO},{{"name":"echo","description":"the other copy","inputSchema":{{"type":"object"}}}}]"#
        );
        modern(m, &twice, r#"{"content":[]}"#)
    })
    .await;
    let err = server.call().await.expect_err("refused");
    assert!(matches!(err, ExecError::Permanent { .. }), "{err:?}");
    assert!(err.to_string().contains("twice"), "{err}");
    assert!(
        !server.seen().contains(&"tools/call".to_string()),
        "{:?}",
        server.seen()
    );
}

#[tokio::test]
async fn an_answer_longer_than_the_bound_is_a_protocol_failure() {
    let server = Hostile::start(|m, _| {
        let over = escepine_runtime::executor::group::DEFAULT_STDOUT_LIMIT + 1;
        let huge = format!(
            r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
            "x".repeat(over)
        );
        modern(m, &format!("[{ECHO}]"), &huge)
    })
    .await;
    let err = match server.call().await {
        Ok(out) => panic!("an output of {} bytes was accepted", out.to_string().len()),
        Err(e) => e,
    };
    assert!(matches!(err, ExecError::Protocol(_)), "{err:?}");
    assert!(err.to_string().contains("longer than"), "{err}");
}

#[tokio::test]
async fn an_event_stream_is_read_to_its_answer_past_other_messages() {
    let server = Hostile::start(|m, r| {
        if m != "tools/call" {
            return modern(m, &format!("[{ECHO}]"), "{}");
        }
        let id = r["id"].to_string();
        let events = format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{}}}}\n\n\
             data: {{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"not yours\"}}]}}}}\n\n\
             data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"yours\"}}]}}}}\n\n"
        );
        (200, SSE, events)
    })
    .await;
    assert_eq!(
        server.call().await.expect("the call"),
        json!({"text": "yours"})
    );
}

#[tokio::test]
async fn an_event_stream_that_ends_without_the_answer_is_transient() {
    let server = Hostile::start(|m, _| {
        if m != "tools/call" {
            return modern(m, &format!("[{ECHO}]"), "{}");
        }
        (
            200,
            SSE,
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":5}\n\n".to_string(),
        )
    })
    .await;
    let err = server.call().await.expect_err("no answer");
    assert!(err.is_transient(), "{err:?}");
}

#[tokio::test]
async fn the_credential_echoed_back_is_scrubbed_from_the_output_and_errors() {
    let server = Hostile::start(|m, _| {
        modern(
            m,
            &format!("[{ECHO}]"),
            &format!(r#"{{"content":[{{"type":"text","text":"you sent {TOKEN}"}}]}}"#),
        )
    })
    .await;
    let out = server.call().await.expect("the call");
    let text = out["text"].as_str().expect("text");
    assert!(!text.contains(TOKEN), "{text}");
    assert!(text.starts_with("you sent "), "{text}");

    let refusing = Hostile::start(|_, _| {
        (
            401,
            JSON,
            format!(r#"{{"error":"invalid_token","error_description":"bad token {TOKEN}"}}"#),
        )
    })
    .await;
    let err = refusing.call().await.expect_err("refused");
    assert!(matches!(err, ExecError::Permanent { .. }), "{err:?}");
    assert!(!err.to_string().contains(TOKEN), "{err}");
    assert!(err.to_string().contains("401"), "{err}");
    // A bearer secret is not fetched again: one request, refused.
    assert_eq!(refusing.seen().len(), 1, "{:?}", refusing.seen());
}

#[tokio::test]
async fn a_server_without_the_modern_revision_gets_a_2025_session() {
    let server = Hostile::start(|m, _| match m {
        "server/discover" => (400, JSON, r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: no session"}}"#.to_string()),
        "initialize" => (200, JSON, r#"{"jsonrpc":"2.0","id":"$ID","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"old","version":"1"}}}"#.to_string()),
        "notifications/initialized" => (202, JSON, String::new()),
        other => modern(other, &format!("[{ECHO}]"), r#"{"content":[{"type":"text","text":"old"}]}"#),
    })
    .await;
    assert_eq!(
        server.call().await.expect("the call"),
        json!({"text": "old"})
    );
    assert_eq!(
        server.seen(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
}

#[tokio::test]
async fn tokens_past_their_use_are_fetched_again_and_not_kept() {
    // The same server is the token endpoint (a form body, so no JSON-RPC method): each token
    // it issues expires at once.
    let server = Hostile::start(|m, _| match m {
        "?" => (
            200,
            JSON,
            r#"{"access_token":"opaque-token-0123456789","token_type":"Bearer","expires_in":0}"#
                .to_string(),
        ),
        other => modern(
            other,
            &format!("[{ECHO}]"),
            r#"{"content":[{"type":"text","text":"ok"}]}"#,
        ),
    })
    .await;
    let record = remote_record(
        "remote_echo",
        server.port,
        "echo",
        text_input(),
        json!({ "oauth": {
            "token_endpoint": format!("http://127.0.0.1:{}/token", server.port),
            "client_id": "c", "client_secret": "CLIENT_SECRET" } }),
        "CLIENT_SECRET",
    )
    .registered();
    let exec = RemoteExecutor::new(&[] as &[std::path::PathBuf]).expect("executor");
    let grant = grant(&format!("127.0.0.1:{}", server.port));
    for n in 1..=3u64 {
        let done = attempt(
            &exec,
            &record,
            &json!({"text": "hi"}),
            &grant,
            &[("CLIENT_SECRET", "s")],
        )
        .await;
        assert_eq!(done.result.expect("the call").output, json!({"text": "ok"}));
        let credential = done.egress.credential.expect("a credential");
        assert_eq!(credential.grant, "client_credentials");
        assert_eq!(credential.sub, None, "an opaque token names no sub");
        assert_eq!(exec.tokens().fetches(), n);
        assert_eq!(
            exec.tokens().held().await,
            1,
            "the expired ones are dropped"
        );
    }
}

#[tokio::test]
async fn cedar_decides_per_url_before_anything_is_sent() {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use escepine_contract::Principal;
    use escepine_runtime::secrets::MapSecrets;
    use escepine_runtime::{CallOptions, CallOutcome, Runtime};

    let server = Hostile::start(|m, _| {
        modern(
            m,
            r#"[{"name":"fetch","inputSchema":{"type":"object"}}]"#,
            r#"{"content":[{"type":"text","text":"page"}]}"#,
        )
    })
    .await;
    let record = remote_record(
        "remote_fetch",
        server.port,
        "fetch",
        json!({"type": "object", "additionalProperties": false, "required": ["url"],
               "properties": {"url": {"type": "string", "format": "uri"}}}),
        json!({ "bearer": "REMOTE_TOKEN" }),
        "REMOTE_TOKEN",
    )
    .to_json();
    let catalog = crate::support::authorize::TempCatalog::new(
        &[record],
        "@id(\"fetch\")\npermit(principal, action == Action::\"remote_fetch\", resource);\n\
         @id(\"no-blocked-host\")\nforbid(principal, action, resource)\n\
         when { context has url && context.url.host == \"blocked.example\" };\n",
    );
    let rt = Runtime::builder(catalog.load())
        .ledger(Arc::new(escepine_ledger::memory::MemoryLedger::new()))
        .executor(Arc::new(escepine_runtime::executor::ProcessExecutor::new()))
        .secrets(Arc::new(MapSecrets(BTreeMap::from([(
            "REMOTE_TOKEN".to_string(),
            TOKEN.to_string(),
        )]))))
        .build()
        .expect("runtime");
    let who = Principal::agent("alice");
    let denied = rt
        .call(
            &who,
            "remote_fetch",
            json!({"url": "https://blocked.example/a"}),
            CallOptions::default(),
        )
        .await
        .expect("a report");
    assert!(
        matches!(denied.outcome(), CallOutcome::Denied { policy_ids, .. } if policy_ids == &["no-blocked-host"]),
        "{:?}",
        denied.outcome()
    );
    assert!(
        server.seen().is_empty(),
        "nothing was sent: {:?}",
        server.seen()
    );
    let allowed = rt
        .call(
            &who,
            "remote_fetch",
            json!({"url": "https://example.com/a"}),
            CallOptions::default(),
        )
        .await
        .expect("a report");
    assert_eq!(
        allowed.output(),
        Some(&json!({"text": "page"})),
        "{:?}",
        allowed.outcome()
    );
    assert_eq!(server.seen().last().map(String::as_str), Some("tools/call"));
}
