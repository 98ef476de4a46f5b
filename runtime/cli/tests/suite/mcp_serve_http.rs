//! `escepine serve --mcp http`: streamable HTTP on loopback, principals from bearer tokens,
//! driven by rmcp's streamable HTTP client — list, allowed call, denial with policy ids, input
//! gate error — and refused without a token or with a wrong one (401). A session serves only the
//! principal whose token opened it: another token naming its id is refused on every verb (404).

use std::process::Command;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use escepine_testkit::mcp::{fixture, serve_http, HttpServe};
use escepine_testkit::testtool::testtool;

/// The `escepine` binary of this package.
fn escepine() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_escepine"))
}

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";

/// A running `escepine serve --mcp http` and the directory of its tokens and ledger.
struct Server {
    serve: HttpServe,
    _dir: tempfile::TempDir,
}

fn start() -> Server {
    testtool();
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.json");
    std::fs::write(
        &tokens,
        json!({ ALICE: "Agent::\"alice\"", BOB: "Agent::\"bob\"" }).to_string(),
    )
    .expect("tokens");
    let mut serve = Command::new(escepine());
    serve
        .args(["serve", "--mcp", "http", "--listen", "127.0.0.1:0"])
        .arg("--records")
        .arg(fixture("records"))
        .arg("--policies")
        .arg(fixture("policies"))
        .arg("--tokens")
        .arg(&tokens)
        .arg("--ledger")
        .arg(dir.path().join("ledger.db"));
    let serve = serve_http(serve);
    let url = &serve.url;
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    Server { serve, _dir: dir }
}

async fn client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token),
    );
    ().serve(transport).await.expect("initialize over HTTP")
}

async fn call(c: &RunningService<RoleClient, ()>, name: &str, args: Value) -> Value {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = args.as_object().cloned();
    let r = c.call_tool(params).await.expect("tools/call");
    if r.is_error == Some(true) {
        // Errors carry their details in `_meta`, never as structuredContent.
        assert!(r.structured_content.is_none());
        let details = r
            .meta
            .as_ref()
            .and_then(|m| m.0.get("dev.escepine/error"))
            .cloned();
        return json!({ "is_error": true, "structured": details });
    }
    json!({ "is_error": r.is_error, "structured": r.structured_content })
}

#[tokio::test]
async fn streamable_http_serves_principals_by_bearer_token() {
    let server = start();

    let alice = client(&server.serve.url, ALICE).await;
    let tools = alice.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"m_echo") && names.contains(&"m_note"),
        "{names:?}"
    );
    assert!(!names.contains(&"m_publish"), "{names:?}");

    let ok = call(&alice, "m_echo", json!({ "text": "over http" })).await;
    assert_eq!(ok["is_error"], false);
    assert_eq!(ok["structured"], json!({ "echo": { "text": "over http" } }));

    let denied = call(&alice, "m_publish", json!({ "text": "x" })).await;
    assert_eq!(denied["is_error"], true);
    assert_eq!(denied["structured"]["error"]["kind"], "denied");
    assert_eq!(
        denied["structured"]["error"]["policy_ids"],
        json!(["forbid-supersede"])
    );

    let rejected = call(&alice, "m_echo", json!({ "text": "x", "extra": 1 })).await;
    assert_eq!(rejected["structured"]["error"]["kind"], "input_rejected");
    assert_eq!(
        rejected["structured"]["error"]["violations"][0]["keyword"],
        "additionalProperties"
    );

    // The same server, another token: another principal, other tools.
    let bob = client(&server.serve.url, BOB).await;
    let tools = bob.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"m_echo") && !names.contains(&"m_note"),
        "{names:?}"
    );
    let denied = call(&bob, "m_note", json!({ "text": "x" })).await;
    assert_eq!(denied["structured"]["error"]["kind"], "denied");

    alice.cancel().await.expect("close");
    bob.cancel().await.expect("close");
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_refused() {
    let server = start();

    let initialize = |authorization| {
        send(
            &server.serve.url,
            "POST",
            authorization,
            None,
            Some(INITIALIZE),
        )
    };
    let r = initialize(None).await;
    assert_eq!(r.status, 401, "{}", r.headers);
    assert!(
        r.headers.contains("www-authenticate: bearer"),
        "{}",
        r.headers
    );

    let r = initialize(Some("Bearer not-a-valid-token-at-all")).await;
    assert_eq!(r.status, 401, "{}", r.headers);
    let basic = format!("Basic {ALICE}");
    let r = initialize(Some(&basic)).await;
    assert_eq!(r.status, 401, "{}", r.headers);

    // rmcp's client sees the refusal and its challenge.
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.serve.url.clone())
            .auth_header("wrong-token-0123456789"),
    );
    let err = ().serve(transport).await.expect_err("refused");
    assert!(
        err.auth_challenge()
            .is_some_and(|c| c.starts_with("Bearer")),
        "{err}"
    );

    // With the right token the same request is served.
    let r = request(&server.serve.url, "POST", ALICE, None, Some(INITIALIZE)).await;
    assert_eq!(r.status, 200, "{}", r.headers);
}

/// One HTTP/1.1 answer: status, lower-cased headers, and as much of the body as came.
struct Reply {
    status: u16,
    headers: String,
    body: String,
}

impl Reply {
    fn session_id(&self) -> Option<String> {
        self.headers
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id:"))
            .map(|v| v.trim().to_string())
    }
}

/// A raw request to the MCP endpoint with `token`, naming `session` if given.
async fn request(
    url: &str,
    method: &str,
    token: &str,
    session: Option<&str>,
    body: Option<&str>,
) -> Reply {
    let authorization = format!("Bearer {token}");
    send(url, method, Some(&authorization), session, body).await
}

/// A raw HTTP/1.1 request to the MCP endpoint with this `Authorization` header (if any), naming
/// `session` if given, as a 2025-06-18 client. A `GET` returns once its headers are in (an event
/// stream does not end); other verbs read to the end.
async fn send(
    url: &str,
    method: &str,
    authorization: Option<&str>,
    session: Option<&str>,
    body: Option<&str>,
) -> Reply {
    let version = [("MCP-Protocol-Version", "2025-06-18")];
    send_with(url, method, authorization, session, body, &version).await
}

/// [`send`] with these headers instead of the protocol version.
async fn send_with(
    url: &str,
    method: &str,
    authorization: Option<&str>,
    session: Option<&str>,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> Reply {
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let body = body.unwrap_or_default();
    let accept = if method == "GET" {
        "text/event-stream"
    } else {
        "application/json, text/event-stream"
    };
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {authority}\r\n\
         Accept: {accept}\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        req.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(a) = authorization {
        req.push_str(&format!("Authorization: {a}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    if let Some(id) = session {
        req.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    let mut s = tokio::net::TcpStream::connect(&authority)
        .await
        .expect("connect");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
            if method == "GET" && out.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    Reply {
        status,
        headers: head.to_ascii_lowercase(),
        body: body.to_string(),
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
const CALL_NOTE: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"m_note","arguments":{"text":"x"}}}"#;

/// Opens a session for `token` (initialize, then initialized); returns its id.
async fn open_session(url: &str, token: &str) -> String {
    let init = request(url, "POST", token, None, Some(INITIALIZE)).await;
    assert_eq!(init.status, 200, "{}", init.headers);
    let id = init.session_id().expect("a session id");
    let done = request(url, "POST", token, Some(&id), Some(INITIALIZED)).await;
    assert_eq!(done.status, 202, "{}", done.headers);
    id
}

#[tokio::test]
async fn a_session_serves_only_the_principal_that_opened_it() {
    let server = start();
    let url = &server.serve.url;
    let alices = open_session(url, ALICE).await;

    // Bob knows Alice's session id: every verb naming it is refused as an unknown session.
    for (method, body) in [
        ("POST", Some(LIST)),
        ("POST", Some(CALL_NOTE)),
        ("POST", Some(INITIALIZED)),
        ("GET", None),
        ("DELETE", None),
    ] {
        let r = request(url, method, BOB, Some(&alices), body).await;
        assert_eq!(
            r.status, 404,
            "Bob's {method} {body:?} reached Alice's session: {}\n{}",
            r.headers, r.body
        );
    }
    // Just as for a session id nobody was given.
    let r = request(
        url,
        "POST",
        BOB,
        Some("00000000-0000-4000-8000-000000000000"),
        Some(LIST),
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.headers);

    // Alice's session is intact: her list (m_note included), her event stream.
    let list = request(url, "POST", ALICE, Some(&alices), Some(LIST)).await;
    assert_eq!(list.status, 200, "{}", list.headers);
    assert!(
        list.body.contains("m_echo") && list.body.contains("m_note"),
        "{}",
        list.body
    );
    let stream = request(url, "GET", ALICE, Some(&alices), None).await;
    assert_eq!(stream.status, 200, "{}", stream.headers);
    assert!(
        stream.headers.contains("text/event-stream"),
        "{}",
        stream.headers
    );

    // Bob's own session serves Bob, and Alice is refused in it the same way.
    let bobs = open_session(url, BOB).await;
    assert_ne!(bobs, alices);
    let list = request(url, "POST", BOB, Some(&bobs), Some(LIST)).await;
    assert_eq!(list.status, 200, "{}", list.headers);
    assert!(
        list.body.contains("m_echo") && !list.body.contains("m_note"),
        "{}",
        list.body
    );
    let r = request(url, "DELETE", ALICE, Some(&bobs), None).await;
    assert_eq!(r.status, 404, "{}", r.headers);
    let list = request(url, "POST", BOB, Some(&bobs), Some(LIST)).await;
    assert_eq!(list.status, 200, "{}", list.headers);

    // Alice ends her session (`204`, which the 2025 SDKs expect); it then serves nobody, Alice
    // included.
    let r = request(url, "DELETE", ALICE, Some(&alices), None).await;
    assert_eq!(r.status, 204, "{}", r.headers);
    for token in [ALICE, BOB] {
        let r = request(url, "POST", token, Some(&alices), Some(LIST)).await;
        assert_eq!(r.status, 404, "{}", r.headers);
    }

    // rmcp's own client still opens and uses sessions as before.
    let alice = client(url, ALICE).await;
    assert!(!alice.list_all_tools().await.expect("tools/list").is_empty());
    alice.cancel().await.expect("close");
}

#[test]
fn http_needs_a_token_file() {
    let out = Command::new(escepine())
        .args(["serve", "--mcp", "http", "--ledger", "/tmp/unused.db"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tokens"));
}

/// A request of the stateless revision: `_meta` with the version and capabilities, and the
/// headers SEP-2243 asks for (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), which `extra`
/// may replace.
async fn modern(
    url: &str,
    token: &str,
    session: Option<&str>,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Reply {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "1" },
    });
    let name = params["name"].as_str().map(str::to_string);
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }).to_string();
    let mut headers: Vec<(&str, &str)> = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(n) = &name {
        headers.push(("Mcp-Name", n));
    }
    for (k, v) in extra {
        headers.retain(|(h, _)| !h.eq_ignore_ascii_case(k));
        if !v.is_empty() {
            headers.push((k, v));
        }
    }
    let authorization = format!("Bearer {token}");
    send_with(
        url,
        "POST",
        Some(&authorization),
        session,
        Some(&body),
        &headers,
    )
    .await
}

/// The JSON-RPC message of an answer (plain JSON, or the `data:` of an event stream).
fn message(r: &Reply) -> Value {
    let text = r
        .body
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&r.body);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {}", r.body))
}

#[tokio::test]
async fn the_stateless_revision_mints_and_reads_no_session() {
    let server = start();
    let url = &server.serve.url;

    let discover = modern(url, ALICE, None, "server/discover", json!({}), &[]).await;
    assert_eq!(discover.status, 200, "{}", discover.headers);
    assert!(discover.session_id().is_none(), "{}", discover.headers);
    let result = &message(&discover)["result"];
    assert_eq!(result["resultType"], "complete");
    let versions = result["supportedVersions"].as_array().expect("versions");
    for v in ["2026-07-28", "2025-11-25"] {
        assert!(versions.contains(&json!(v)), "{result}");
    }
    assert!(
        result["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{result}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "escepine"
    );

    // A 2025 session of Alice's exists; Bob names it in stateless requests: it is not read
    // (no 404, Bob's own listing), and none is minted.
    let alices = open_session(url, ALICE).await;
    let list = modern(url, BOB, Some(&alices), "tools/list", json!({}), &[]).await;
    assert_eq!(list.status, 200, "{}", list.headers);
    assert!(list.session_id().is_none(), "{}", list.headers);
    let result = &message(&list)["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["cacheScope"], "private",
        "listings differ per principal"
    );
    let names: Vec<&str> = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"m_echo") && !names.contains(&"m_note"),
        "{names:?}"
    );
    let call = modern(
        url,
        ALICE,
        None,
        "tools/call",
        json!({ "name": "m_echo", "arguments": { "text": "stateless" } }),
        &[],
    )
    .await;
    let result = &message(&call)["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["structuredContent"]["echo"]["text"], "stateless");

    // GET and DELETE do not exist in this revision, whatever session they name.
    let v = [("MCP-Protocol-Version", "2026-07-28")];
    let bearer = format!("Bearer {ALICE}");
    for verb in ["GET", "DELETE"] {
        let r = send_with(url, verb, Some(&bearer), Some(&alices), None, &v).await;
        assert_eq!(r.status, 405, "{verb}: {}", r.headers);
    }
    let alive = request(url, "POST", ALICE, Some(&alices), Some(LIST)).await;
    assert_eq!(
        alive.status, 200,
        "the 2025 session lives on: {}",
        alive.headers
    );

    // The routing headers must say what the body says (SEP-2243): -32020, 400.
    let params = json!({ "name": "m_echo", "arguments": { "text": "x" } });
    for (what, extra) in [
        ("another name", vec![("Mcp-Name", "m_note")]),
        ("another method", vec![("Mcp-Method", "tools/list")]),
        ("no method header", vec![("Mcp-Method", "")]),
        ("no name header", vec![("Mcp-Name", "")]),
        (
            "another version",
            vec![("MCP-Protocol-Version", "2025-11-25")],
        ),
    ] {
        let r = modern(url, ALICE, None, "tools/call", params.clone(), &extra).await;
        assert_eq!(r.status, 400, "{what}: {}\n{}", r.headers, r.body);
        assert_eq!(message(&r)["error"]["code"], -32020, "{what}: {}", r.body);
    }
    // A version the server does not know, in the header and in `_meta`: -32022, naming the
    // versions it supports.
    let body = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": { "_meta": {
        "io.modelcontextprotocol/protocolVersion": "1900-01-01",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}})
    .to_string();
    let r = send_with(
        url,
        "POST",
        Some(&bearer),
        None,
        Some(&body),
        &[
            ("MCP-Protocol-Version", "1900-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(r.status, 400, "{}\n{}", r.headers, r.body);
    let error = &message(&r)["error"];
    assert_eq!(error["code"], -32022, "{}", r.body);
    assert!(
        error["data"]["supported"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("2026-07-28"))),
        "{}",
        r.body
    );
}
