//! The remote MCP servers of the remote-endpoint tests, and the token exchange of the
//! authorization server, driven over raw HTTP.
//!
//! For each SDK's server: a request without a token, with a token for another resource or
//! without the scope is refused with the `resource_metadata` challenge (whose metadata names
//! the resource); a client-credentials token for its resource opens a raw JSON-RPC exchange in
//! the revision the SDK speaks (TypeScript: 2025-11-25 `initialize` and a session; Python:
//! 2026-07-28 `server/discover` and stateless requests) and the other revision is answered as
//! the SDK answers it; a user's token exchanged (RFC 8693) for the server makes `whoami` name
//! the user as `sub` and the exchanging client as `act`; the counts, the changed definition,
//! the failures, the redirect and the JSON-RPC error are each observable.
//!
//! oidc-provider's token exchange refuses a forged, expired or non-access subject token, a
//! client without the grant, an unknown or ambiguous target, a scope outside the resource's,
//! and counts what it issued by grant.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use escepine_testkit::oidc::{claims_of, free_loopback_port, Keys, Provider, ProviderConfig};
use escepine_testkit::remote_servers::{RemoteSdk, RemoteServer};
use serde_json::{json, Value};

const SECRET: &str = "remote-test-only-secret";
const REDIRECT: &str = "http://127.0.0.1:1/callback";
/// Escepine's own resource (nothing listens there: the provider only names it).
const OWN: &str = "http://127.0.0.1:1/own-mcp";
/// The remote server's resource: a URI the test chooses, not the server's URL.
const NOTES: &str = "https://notes.remote.test/mcp";
/// The client-credentials client of the remote resource.
const SERVICE: &str = "notes-cc";
/// The client allowed the token-exchange grant.
const EXCHANGER: &str = "escepine-exchange";
const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// An authorization server for Escepine's resource and the remote one, with a service client,
/// an exchanger, a public client and the login `ann` (group `readers`).
fn provider() -> Provider {
    Provider::start(
        &ProviderConfig::new(Keys::A, OWN)
            .resource(NOTES, "notes")
            .service(SERVICE, SECRET, "mcp:tools notes")
            .exchanger(EXCHANGER, SECRET, "notes")
            .service("plain", SECRET, "mcp:tools notes")
            .app("agent-app", REDIRECT)
            .account("ann", &["readers"]),
    )
}

fn http() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(Duration::from_secs(20)))
            .build(),
    )
}

/// An HTTP answer: status, headers (lower-case names), body.
struct Reply {
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// The JSON-RPC message: the body, or the `data:` of its event stream.
    fn message(&self) -> Value {
        let text = self
            .body
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap_or(&self.body);
        serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("a JSON-RPC message ({e}): {} {}", self.status, self.body))
    }
}

/// `POST url` with `body` (JSON), the bearer `token` and `headers`.
fn post(url: &str, token: Option<&str>, headers: &[(&str, &str)], body: &Value) -> Reply {
    let mut request = http()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    if let Some(t) = token {
        request = request.header("Authorization", &format!("Bearer {t}"));
    }
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let mut response = request
        .send(body.to_string())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                v.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let body = response.body_mut().read_to_string().unwrap_or_default();
    Reply {
        status: response.status().as_u16(),
        headers,
        body,
    }
}

fn get_json(url: &str) -> Value {
    let mut response = http()
        .get(url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert_eq!(response.status(), 200, "GET {url}");
    response.body_mut().read_json().expect("JSON")
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

/// The value of `name="…"` in a `WWW-Authenticate` challenge.
fn challenge_param<'a>(challenge: &'a str, name: &str) -> Option<&'a str> {
    let start = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    let end = challenge[start..].find('"')?;
    Some(&challenge[start..start + end])
}

/// A raw JSON-RPC client of one server in one revision: 2025-11-25 (a session) or 2026-07-28
/// (stateless, the version in `_meta` and the SEP-2243 headers on every request).
struct Client {
    url: String,
    token: String,
    /// `Some(session)` for 2025-11-25.
    session: Option<String>,
    next_id: u64,
}

impl Client {
    /// The 2025-11-25 handshake: `initialize` (answered with a session id), then
    /// `notifications/initialized`.
    fn legacy(url: &str, token: &str) -> (Self, Value) {
        let r = post(url, Some(token), &[], &initialize_body());
        assert_eq!(r.status, 200, "initialize: {}", r.body);
        let session = r.header("mcp-session-id").to_string();
        assert!(!session.is_empty(), "a session id: {:?}", r.headers);
        let result = r.message()["result"].clone();
        let c = Self {
            url: url.to_string(),
            token: token.to_string(),
            session: Some(session),
            next_id: 2,
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = post(url, Some(token), &c.session_headers(), &note);
        assert_eq!(r.status, 202, "notifications/initialized: {}", r.body);
        (c, result)
    }

    /// A 2026-07-28 client: nothing to open.
    fn modern(url: &str, token: &str) -> Self {
        Self {
            url: url.to_string(),
            token: token.to_string(),
            session: None,
            next_id: 1,
        }
    }

    /// The revision its SDK speaks: 2025-11-25 for the TypeScript one, 2026-07-28 (after
    /// `server/discover`) for the Python one.
    fn connect(server: &RemoteServer, token: &str) -> Self {
        match server.sdk() {
            RemoteSdk::TypeScript => {
                let (c, result) = Self::legacy(server.url(), token);
                assert_eq!(result["protocolVersion"], LEGACY, "{result}");
                assert_eq!(
                    result["serverInfo"]["name"], "escepine-remote-ts",
                    "{result}"
                );
                c
            }
            RemoteSdk::Python => {
                let mut c = Self::modern(server.url(), token);
                let result = c.call("server/discover", json!({}));
                assert!(
                    result["supportedVersions"]
                        .as_array()
                        .is_some_and(|v| v.contains(&json!(MODERN))),
                    "{result}"
                );
                assert_eq!(
                    result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                    "escepine-remote-py",
                    "{result}"
                );
                c
            }
        }
    }

    fn session_headers(&self) -> Vec<(&str, &str)> {
        match &self.session {
            Some(s) => vec![("Mcp-Session-Id", s), ("MCP-Protocol-Version", LEGACY)],
            None => Vec::new(),
        }
    }

    /// `method` with `params`, answered as it comes.
    fn request(&mut self, method: &str, params: Value) -> Reply {
        let id = self.next_id;
        self.next_id += 1;
        let mut params = params;
        let name = params["name"].as_str().map(str::to_string);
        let mut headers = self.session_headers();
        if self.session.is_none() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            });
            headers.push(("MCP-Protocol-Version", MODERN));
            headers.push(("Mcp-Method", method));
            if let Some(n) = &name {
                headers.push(("Mcp-Name", n));
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        post(&self.url, Some(&self.token), &headers, &body)
    }

    /// The result of `method`.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params);
        assert_eq!(r.status, 200, "{method}: {}", r.body);
        let message = r.message();
        assert!(message.get("error").is_none(), "{method}: {message}");
        message["result"].clone()
    }

    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
    }

    fn tools(&mut self) -> Vec<Value> {
        let result = self.call("tools/list", json!({}));
        result["tools"].as_array().expect("tools").clone()
    }
}

fn tool_named<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("a tool {name}: {tools:?}"))
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn count(server: &RemoteServer, key: &str) -> u64 {
    let counts = server.counts();
    counts[key]
        .as_u64()
        .unwrap_or_else(|| panic!("a count {key}: {counts}"))
}

fn round(sdk: RemoteSdk) {
    let provider = provider();
    let server = RemoteServer::start_with_resource(sdk, &provider.issuer, NOTES, "notes");
    assert_eq!(server.resource(), NOTES);
    let url = server.url().to_string();

    // No token: 401 and the challenge naming the metadata, which names the resource.
    let r = post(&url, None, &[], &initialize_body());
    assert_eq!(r.status, 401, "{sdk:?}: {}", r.body);
    let challenge = r.header("www-authenticate");
    assert!(challenge.starts_with("Bearer "), "{sdk:?}: {challenge}");
    let metadata = challenge_param(challenge, "resource_metadata")
        .unwrap_or_else(|| panic!("{sdk:?}: resource_metadata in {challenge}"));
    assert!(
        metadata.starts_with(&server.metadata_url()),
        "{sdk:?}: {metadata}"
    );
    match sdk {
        // RFC 6750 §3.1: no error code when no token was sent.
        RemoteSdk::TypeScript => assert!(!challenge.contains("error="), "{challenge}"),
        // The Python SDK's RequireAuthMiddleware names invalid_token whatever was sent.
        RemoteSdk::Python => {
            assert_eq!(challenge_param(challenge, "error"), Some("invalid_token"));
        }
    }
    let expected = json!({
        "resource": NOTES,
        "authorization_servers": [provider.issuer],
        "scopes_supported": ["notes"],
    });
    assert_eq!(get_json(metadata), expected, "{sdk:?}");
    assert_eq!(get_json(&server.metadata_url()), expected, "{sdk:?}");
    assert_eq!(
        get_json(&format!("{}/mcp", server.metadata_url())),
        expected,
        "{sdk:?}"
    );

    // Not a JWT; a token for another resource; a token without the scope.
    let refused = |token: &str| post(&url, Some(token), &[], &initialize_body());
    let r = refused("not-a-jwt");
    assert_eq!(r.status, 401, "{sdk:?}: {}", r.body);
    assert_eq!(
        challenge_param(r.header("www-authenticate"), "error"),
        Some("invalid_token")
    );
    let other = provider.client_credentials(SERVICE, SECRET, OWN, "mcp:tools");
    let r = refused(&other);
    assert_eq!(
        r.status, 401,
        "{sdk:?}: a token for another resource: {}",
        r.body
    );
    assert_eq!(
        challenge_param(r.header("www-authenticate"), "error"),
        Some("invalid_token")
    );
    let unscoped = provider.client_credentials(SERVICE, SECRET, NOTES, "");
    assert!(claims_of(&unscoped).get("scope").is_none(), "{unscoped}");
    let r = refused(&unscoped);
    assert_eq!(
        r.status, 403,
        "{sdk:?}: a token without the scope: {}",
        r.body
    );
    assert!(
        r.header("www-authenticate").contains("insufficient_scope"),
        "{sdk:?}: {:?}",
        r.headers
    );
    let counts = server.counts();
    assert_eq!(counts["requests"], 4, "{sdk:?}: {counts}");
    assert_eq!(counts["authorization_headers"], 3, "{sdk:?}: {counts}");
    for key in ["initialize", "discover", "tools_list", "tools_call"] {
        assert_eq!(
            counts[key], 0,
            "{sdk:?}: nothing refused reaches MCP: {counts}"
        );
    }

    // A client-credentials token for the remote resource: the revision the SDK speaks.
    server.reset();
    let cc = provider.client_credentials(SERVICE, SECRET, NOTES, "notes");
    assert_eq!(claims_of(&cc)["aud"], NOTES);
    let mut c = Client::connect(&server, &cc);
    let tools = c.tools();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["whoami", "note_search", "echo", "fail"],
        "{sdk:?}: {tools:?}"
    );
    let whoami = tool_named(&tools, "whoami");
    assert_eq!(whoami["annotations"]["readOnlyHint"], true, "{whoami}");
    let props = &whoami["outputSchema"]["properties"];
    for p in ["sub", "client_id", "act"] {
        assert!(props.get(p).is_some(), "{sdk:?}: {whoami}");
    }
    let search = tool_named(&tools, "note_search");
    assert_eq!(search["annotations"]["readOnlyHint"], true, "{search}");
    assert!(search.get("outputSchema").is_none(), "{search}");
    assert_eq!(tool_named(&tools, "echo")["description"], "Echo a text.");

    let who = c.tool("whoami", json!({}));
    assert_eq!(
        who["structuredContent"],
        json!({"sub": SERVICE, "client_id": SERVICE, "act": null}),
        "{sdk:?}: {who}"
    );
    let found = c.tool("note_search", json!({"query": "tides"}));
    assert_eq!(text_of(&found), "found: tides", "{found}");
    assert!(found.get("structuredContent").is_none(), "{found}");
    let echoed = c.tool("echo", json!({"text": "hi"}));
    assert_eq!(text_of(&echoed), "hi", "{echoed}");
    let failed = c.tool("fail", json!({}));
    assert_eq!(failed["isError"], true, "{failed}");
    assert_eq!(text_of(&failed), "remote failure", "{failed}");

    let counts = server.counts();
    let (initialize, discover, requests) = match sdk {
        // initialize, notifications/initialized, tools/list, four tools/call.
        RemoteSdk::TypeScript => (1, 0, 7),
        // server/discover, tools/list, four tools/call.
        RemoteSdk::Python => (0, 1, 6),
    };
    assert_eq!(counts["initialize"], initialize, "{sdk:?}: {counts}");
    assert_eq!(counts["discover"], discover, "{sdk:?}: {counts}");
    assert_eq!(counts["tools_list"], 1, "{sdk:?}: {counts}");
    assert_eq!(counts["tools_call"], 4, "{sdk:?}: {counts}");
    assert_eq!(counts["subs"], json!(vec![SERVICE; 4]), "{sdk:?}: {counts}");
    assert_eq!(counts["requests"], requests, "{sdk:?}: {counts}");
    assert_eq!(
        counts["authorization_headers"], requests,
        "{sdk:?}: {counts}"
    );

    // The other revision, as each SDK answers it.
    match sdk {
        RemoteSdk::TypeScript => {
            // SDK 1.x has no 2026-07-28: outside a session, any request but initialize is 400.
            let r = Client::modern(&url, &cc).request("server/discover", json!({}));
            assert_eq!(r.status, 400, "{}", r.body);
            assert_eq!(r.message()["error"]["code"], -32000, "{}", r.body);
        }
        RemoteSdk::Python => {
            // SDK 2.x still answers the 2025-11-25 handshake, with a session.
            let (mut legacy, result) = Client::legacy(&url, &cc);
            assert_eq!(result["protocolVersion"], LEGACY, "{result}");
            let who = legacy.tool("whoami", json!({}));
            assert_eq!(who["structuredContent"]["sub"], SERVICE, "{who}");
        }
    }

    // A user's token (for Escepine's resource) is refused; exchanged for the remote resource,
    // the server sees the user, acted for by the exchanging client.
    let user = provider.authorization_code("agent-app", REDIRECT, OWN, "mcp:tools", "ann");
    assert_eq!(refused(&user).status, 401, "{sdk:?}: the user's own token");
    let exchanged = provider.token_exchange(EXCHANGER, SECRET, &user, NOTES, "notes");
    let mut as_user = Client::connect(&server, &exchanged);
    let who = as_user.tool("whoami", json!({}));
    assert_eq!(
        who["structuredContent"],
        json!({"sub": "ann", "client_id": EXCHANGER, "act": EXCHANGER}),
        "{sdk:?}: {who}"
    );
    let subs = server.counts()["subs"].clone();
    assert_eq!(subs.as_array().and_then(|s| s.last()), Some(&json!("ann")));
    assert_eq!(
        provider.token_counts(),
        json!({"client_credentials": 3, "token_exchange": 1, "authorization_code": 1})
    );
    provider.reset_token_counts();
    assert_eq!(
        provider.token_counts(),
        json!({"client_credentials": 0, "token_exchange": 0, "authorization_code": 0})
    );

    // A changed definition: listed in the open session and in a new one.
    server.reset();
    server.change_definition();
    let tools = c.tools();
    assert_eq!(
        tool_named(&tools, "echo")["description"],
        "echo, changed",
        "{sdk:?}"
    );
    let tools = Client::connect(&server, &cc).tools();
    assert_eq!(tool_named(&tools, "echo")["description"], "echo, changed");

    // 429 with Retry-After, once; then 503 without it; then answered.
    server.reset();
    server.fail_next(429, Some("1"), 1);
    let r = c.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "a"}}),
    );
    assert_eq!(r.status, 429, "{sdk:?}: {}", r.body);
    assert_eq!(r.header("retry-after"), "1", "{:?}", r.headers);
    server.fail_next(503, None, 1);
    let r = c.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "b"}}),
    );
    assert_eq!(r.status, 503, "{sdk:?}: {}", r.body);
    assert!(!r.headers.contains_key("retry-after"), "{:?}", r.headers);
    assert_eq!(text_of(&c.tool("echo", json!({"text": "c"}))), "c");
    let counts = server.counts();
    assert_eq!(counts["requests"], 3, "{sdk:?}: {counts}");
    assert_eq!(counts["tools_call"], 1, "{sdk:?}: {counts}");

    // A redirect of every request, until turned off.
    server.reset();
    let elsewhere = format!("http://127.0.0.1:{}/mcp", free_loopback_port());
    server.redirect_to(&elsewhere);
    for _ in 0..2 {
        let r = c.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "r"}}),
        );
        assert_eq!(r.status, 307, "{sdk:?}: {}", r.body);
        assert_eq!(r.header("location"), elsewhere, "{:?}", r.headers);
    }
    server.redirect_to("");
    assert_eq!(text_of(&c.tool("echo", json!({"text": "back"}))), "back");
    let counts = server.counts();
    assert_eq!(counts["requests"], 3, "{sdk:?}: {counts}");
    assert_eq!(counts["tools_call"], 1, "{sdk:?}: {counts}");

    // A JSON-RPC error instead of the next tools/call, which is not counted.
    server.reset();
    server.jsonrpc_error_next(1);
    let r = c.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "e"}}),
    );
    assert_eq!(r.status, 200, "{sdk:?}: {}", r.body);
    let error = r.message()["error"].clone();
    assert_eq!(
        error,
        json!({"code": -32603, "message": "internal error"}),
        "{sdk:?}"
    );
    assert_eq!(text_of(&c.tool("echo", json!({"text": "ok"}))), "ok");
    assert_eq!(count(&server, "tools_call"), 1, "{sdk:?}");
    assert_eq!(count(&server, "requests"), 2, "{sdk:?}");
}

#[test]
fn the_typescript_server_requires_its_tokens_and_answers_its_controls() {
    round(RemoteSdk::TypeScript);
}

#[test]
fn the_python_server_requires_its_tokens_and_answers_its_controls() {
    round(RemoteSdk::Python);
}

#[test]
fn a_server_started_on_a_port_takes_its_url_as_its_resource() {
    for sdk in RemoteSdk::ALL {
        let port = free_loopback_port();
        let provider = Provider::start(
            &ProviderConfig::new(Keys::A, OWN)
                .resource(&RemoteServer::url_on(port), "notes")
                .service(SERVICE, SECRET, "mcp:tools notes"),
        );
        let server = RemoteServer::start_on(sdk, port, &provider.issuer, "notes");
        assert_eq!(server.url(), RemoteServer::url_on(port));
        assert_eq!(server.resource(), server.url());
        assert_eq!(server.authority(), format!("127.0.0.1:{port}"));
        let r = post(server.url(), None, &[], &initialize_body());
        assert_eq!(r.status, 401, "{sdk:?}");
        let metadata = challenge_param(r.header("www-authenticate"), "resource_metadata")
            .unwrap_or_else(|| panic!("{sdk:?}: {:?}", r.headers))
            .to_string();
        assert_eq!(get_json(&metadata)["resource"], server.url(), "{sdk:?}");
        let token = provider.client_credentials(SERVICE, SECRET, server.url(), "notes");
        let mut c = Client::connect(&server, &token);
        let who = c.tool("whoami", json!({}));
        assert_eq!(who["structuredContent"]["sub"], SERVICE, "{sdk:?}: {who}");
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs()
}

#[test]
fn the_provider_exchanges_a_users_token_for_one_meant_for_a_server() {
    let provider = provider();
    let user = provider.authorization_code("agent-app", REDIRECT, OWN, "mcp:tools", "ann");
    let exchanged = provider.token_exchange(EXCHANGER, SECRET, &user, NOTES, "notes");
    let claims = claims_of(&exchanged);
    assert_eq!(claims["iss"], provider.issuer.as_str(), "{claims}");
    assert_eq!(claims["sub"], "ann", "{claims}");
    assert_eq!(claims["aud"], NOTES, "{claims}");
    assert_eq!(claims["client_id"], EXCHANGER, "{claims}");
    assert_eq!(claims["act"], json!({ "sub": EXCHANGER }), "{claims}");
    assert_eq!(claims["groups"], json!(["readers"]), "{claims}");
    assert_eq!(claims["scope"], "notes", "{claims}");
    assert!(
        claims["exp"].as_u64().is_some_and(|e| e > now()),
        "{claims}"
    );

    // The answer of the grant, read raw: the issued token type, and `audience` naming the
    // target; no scope asked: the resource's that the client may have.
    let form = |target: (&'static str, &'static str)| {
        [
            ("grant_type", escepine_testkit::oidc::TOKEN_EXCHANGE),
            ("subject_token", user.as_str()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            target,
        ]
    };
    let by_audience = provider
        .try_token_request(EXCHANGER, SECRET, &form(("audience", NOTES)))
        .expect("audience names the target");
    assert_eq!(claims_of(&by_audience)["aud"], NOTES);
    assert_eq!(claims_of(&by_audience)["scope"], "notes");

    let refusal = |id: &str, subject: &str, resource: &str, scope: &str| {
        provider
            .try_token_exchange(id, SECRET, subject, resource, scope)
            .expect_err("refused")
    };
    // A subject token this provider did not sign.
    let forged = provider.forge(
        &json!({"typ": "at+jwt"}),
        &json!({"sub": "mallory", "iss": provider.issuer, "aud": OWN, "exp": now() + 60}),
        Some(Keys::B),
    );
    let err = refusal(EXCHANGER, &forged, NOTES, "notes");
    assert!(err.contains("invalid_grant"), "{err}");
    // Its own key, but expired.
    let expired = provider.forge(
        &json!({"typ": "at+jwt"}),
        &json!({"sub": "ann", "iss": provider.issuer, "aud": OWN, "exp": now() - 60}),
        None,
    );
    let err = refusal(EXCHANGER, &expired, NOTES, "notes");
    assert!(err.contains("invalid_grant"), "{err}");
    // Its own key, but not an access token (no `typ: at+jwt`).
    let not_access = provider.forge(
        &json!({}),
        &json!({"sub": "ann", "iss": provider.issuer, "aud": OWN, "exp": now() + 60}),
        None,
    );
    let err = refusal(EXCHANGER, &not_access, NOTES, "notes");
    assert!(err.contains("invalid_grant"), "{err}");
    // Another issuer's name on the provider's own key.
    let foreign = provider.forge(
        &json!({"typ": "at+jwt"}),
        &json!({"sub": "ann", "iss": "http://127.0.0.1:1", "aud": OWN, "exp": now() + 60}),
        None,
    );
    let err = refusal(EXCHANGER, &foreign, NOTES, "notes");
    assert!(err.contains("invalid_grant"), "{err}");
    // A client without the grant.
    let err = refusal("plain", &user, NOTES, "notes");
    assert!(err.contains("unauthorized_client"), "{err}");
    // An unknown resource; a resource and an audience that differ.
    let err = refusal(EXCHANGER, &user, "http://127.0.0.1:1/nowhere", "notes");
    assert!(err.contains("invalid_target"), "{err}");
    let mut both = form(("audience", OWN)).to_vec();
    both.push(("resource", NOTES));
    let err = provider
        .try_token_request(EXCHANGER, SECRET, &both)
        .expect_err("ambiguous");
    assert!(err.contains("invalid_target"), "{err}");
    // A scope outside the resource's.
    let err = refusal(EXCHANGER, &user, NOTES, "mcp:tools");
    assert!(err.contains("invalid_scope"), "{err}");
    // Not an access token type.
    let mut wrong_type = form(("resource", NOTES)).to_vec();
    wrong_type[2].1 = "urn:ietf:params:oauth:token-type:id_token";
    let err = provider
        .try_token_request(EXCHANGER, SECRET, &wrong_type)
        .expect_err("wrong type");
    assert!(err.contains("invalid_request"), "{err}");

    assert_eq!(
        provider.token_counts(),
        json!({"client_credentials": 0, "token_exchange": 2, "authorization_code": 1})
    );
}
