//! `escepine serve --mcp http --oauth FILE` behind a real authorization server: oidc-provider
//! (npm) issues JWT access tokens for the server's resource by the client-credentials grant and
//! by authorization code with PKCE (its login and consent driven over HTTP); a second issuer
//! signs with other keys. No entity file: every principal and team comes from a token's claims.
//!
//! - The official Python SDK 2.x client's own OAuth client finds the protected resource
//!   metadata from the `401` and obtains its token by itself, lands on 2026-07-28, lists, calls,
//!   is denied with the policy ids, and polls an approval task to completion; the TypeScript
//!   SDK 1.x does the same on 2025-11-25 with a token from the provider.
//! - What a principal sees and may call follows Cedar on the teams its token names.
//! - Refused, each with its status and challenge, nothing run or recorded: no token, expired,
//!   not yet valid, another issuer, another audience, `alg: none`, HMAC with the public key, an
//!   unknown `kid` (after one refetch, and no more within `jwks_min_refresh_s`, counted by the
//!   provider), a missing scope, another issuer's key.
//! - Two principals cannot touch each other's sessions or approval tasks.
//! - The ledger records the principal, the issuer, the `jti`'s digest and the teams, never the
//!   token.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use escepine_testkit::mcp::{serve_http, HttpServe};
use escepine_testkit::mcp_clients::{events_named, Sdk, SdkClient};
use escepine_testkit::oidc::{claims_of, free_loopback_port, Keys, Provider, ProviderConfig};
use escepine_testkit::testtool::testtool;

use crate::mcp_edge::{assert_still_waiting, drive, registry_args, runs, steps};

const CC_SECRET: &str = "cc-secret-0123456789";
const APP_REDIRECT: &str = "http://127.0.0.1:1/callback";

/// The resource server, its two issuers, and where it keeps its ledger.
struct Edge {
    serve: HttpServe,
    a: Provider,
    b: Provider,
    resource: String,
    dir: tempfile::TempDir,
}

impl Edge {
    fn start() -> Self {
        testtool();
        let port = free_loopback_port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let a = Provider::start(
            &ProviderConfig::new(Keys::A, &resource)
                .client("writer-bot", CC_SECRET, &["editors", "writers"])
                .client("approver-bot", CC_SECRET, &["approvers"])
                .client("lonely-bot", CC_SECRET, &[])
                .app("agent-app", APP_REDIRECT)
                .account("carol", &["editors"])
                .account("dave", &["writers"]),
        );
        let b = Provider::start(&ProviderConfig::new(Keys::B, &resource).client(
            "b-bot",
            CC_SECRET,
            &["editors"],
        ));
        let dir = tempfile::tempdir().expect("tempdir");
        let oauth = dir.path().join("oauth.json");
        let issuer = |url: &str| {
            json!({
                "issuer": url,
                "scopes": ["mcp:tools"],
                "principal": { "type": "Agent", "claim": "sub" },
                "parents": [{ "claim": "groups", "type": "Team" }],
            })
        };
        std::fs::write(
            &oauth,
            json!({ "resource": resource, "issuers": [issuer(&a.issuer), issuer(&b.issuer)] })
                .to_string(),
        )
        .expect("oauth.json");
        let mut serve = Command::new(env!("CARGO_BIN_EXE_escepine"));
        serve.args([
            "serve",
            "--mcp",
            "http",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ]);
        registry_args(&mut serve);
        serve
            .arg("--oauth")
            .arg(&oauth)
            .arg("--ledger")
            .arg(dir.path().join("ledger.db"));
        let serve = serve_http(serve);
        assert_eq!(serve.url, resource);
        Self {
            serve,
            a,
            b,
            resource,
            dir,
        }
    }

    fn ledger(&self) -> std::path::PathBuf {
        self.dir.path().join("ledger.db")
    }

    fn token(&self, client: &str) -> String {
        self.a
            .client_credentials(client, CC_SECRET, &self.resource, "mcp:tools")
    }

    /// `escepine ledger show` of the server's ledger.
    fn shown(&self) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_escepine"))
            .args(["ledger", "show"])
            .arg(self.ledger())
            .output()
            .expect("ledger show");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The server's ledger entries, as JSON lines of its file (counted, searched).
    fn ledger_bytes(&self) -> Vec<u8> {
        std::fs::read(self.ledger()).unwrap_or_default()
    }
}

/// A raw `tools/list` of the stateless revision with this `Authorization` header.
fn list_with(url: &str, authorization: Option<&str>) -> ureq::http::Response<ureq::Body> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build(),
    );
    let mut request = agent
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list");
    if let Some(a) = authorization {
        request = request.header("Authorization", a);
    }
    request
        .send_json(json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": { "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }},
        }))
        .expect("an answer")
}

fn challenge(r: &ureq::http::Response<ureq::Body>) -> String {
    r.headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

#[test]
fn the_authorization_server_issues_jwt_access_tokens_by_both_grants() {
    let port = free_loopback_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let p = Provider::start(
        &ProviderConfig::new(Keys::A, &resource)
            .client("writer-bot", CC_SECRET, &["editors"])
            .app("agent-app", APP_REDIRECT)
            .account("carol", &["editors", "ops"]),
    );
    let cc = claims_of(&p.client_credentials("writer-bot", CC_SECRET, &resource, "mcp:tools"));
    assert_eq!(cc["iss"], p.issuer.as_str());
    assert_eq!(cc["aud"], resource.as_str());
    assert_eq!(cc["sub"], "writer-bot");
    assert_eq!(cc["groups"], json!(["editors"]));
    assert_eq!(cc["scope"], "mcp:tools");
    assert!(cc["exp"].as_u64().is_some_and(|e| e > now()));
    assert!(cc["jti"].is_string());
    let ac = claims_of(&p.authorization_code(
        "agent-app",
        APP_REDIRECT,
        &resource,
        "openid mcp:tools",
        "carol",
    ));
    assert_eq!(ac["sub"], "carol");
    assert_eq!(ac["groups"], json!(["editors", "ops"]));
    assert_eq!(ac["aud"], resource.as_str());
    // The provider refuses an unknown resource and a wrong secret.
    assert!(p
        .try_client_credentials(
            "writer-bot",
            CC_SECRET,
            "http://127.0.0.1:1/other",
            "mcp:tools"
        )
        .is_err());
    assert!(p
        .try_client_credentials("writer-bot", "wrong", &resource, "mcp:tools")
        .is_err());
}

#[test]
fn the_python_sdks_oauth_client_finds_the_metadata_gets_a_token_and_is_governed() {
    let edge = Edge::start();
    let counter = edge.dir.path().join("counter");
    let client = SdkClient::start(
        Sdk::Python,
        &json!({
            "transport": "http",
            "url": edge.serve.url,
            "oauth": {
                "client_id": "writer-bot",
                "client_secret": CC_SECRET,
                "scope": "mcp:tools",
                "issuer": edge.a.issuer,
            },
            "steps": steps(&counter),
        }),
    );
    // The approver is a principal no file names, an approver by its token's `groups`; it
    // approves over MCP with the `approve` tool.
    let approver =
        edge.a
            .client_credentials("approver-bot", CC_SECRET, &edge.resource, "mcp:tools");
    drive(
        client,
        "2026-07-28",
        &["e_count", "e_echo", "approve"],
        &counter,
        |call_id| approve_over_mcp(Sdk::Python, &edge.serve.url, &approver, call_id),
    );
    let shown = edge.shown();
    assert!(
        shown.contains("principal  Agent::\"writer-bot\""),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("token      issuer {}  jti sha256 ", edge.a.issuer)),
        "{shown}"
    );
    assert!(
        shown.contains("member of  Team::\"editors\", Team::\"writers\""),
        "{shown}"
    );
    assert!(
        shown
            .contains("approval   approved by Agent::\"approver-bot\"  policies approvers-approve"),
        "{shown}"
    );
    assert!(shown.contains("member of  Team::\"approvers\""), "{shown}");
    // The tokens themselves are nowhere in the ledger.
    let bytes = edge.ledger_bytes();
    let signature = approver.rsplit('.').next().expect("a signature");
    assert!(
        !contains(&bytes, signature.as_bytes()),
        "a token in the ledger"
    );
    let jti = claims_of(&approver)["jti"]
        .as_str()
        .expect("jti")
        .to_string();
    assert!(!contains(&bytes, jti.as_bytes()), "a jti in the ledger");
    assert_eq!(runs(&counter), 1);
}

/// `sdk`'s client, with the approver's `token`, approves `call_id` with the `approve` tool.
fn approve_over_mcp(sdk: Sdk, url: &str, token: &str, call_id: &str) {
    let events = SdkClient::start(
        sdk,
        &json!({
            "transport": "http", "url": url, "bearer": token,
            "steps": [{ "op": "call", "tool": "approve", "arguments": { "call_id": call_id } }],
        }),
    )
    .finish(Duration::from_secs(60));
    let approved = events_named(&events, "call").next().expect("approve");
    assert_eq!(approved["structured"]["decision"], "approved", "{approved}");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_typescript_sdk_with_a_providers_token_speaks_2025_11_25() {
    let edge = Edge::start();
    let counter = edge.dir.path().join("counter");
    let client = SdkClient::start(
        Sdk::TypeScript,
        &json!({
            "transport": "http", "url": edge.serve.url, "bearer": edge.token("writer-bot"),
            "steps": steps(&counter),
        }),
    );
    let approver = edge.token("approver-bot");
    drive(
        client,
        "2025-11-25",
        &["e_count", "e_echo", "approve"],
        &counter,
        |call_id| approve_over_mcp(Sdk::TypeScript, &edge.serve.url, &approver, call_id),
    );
}

#[test]
fn what_a_principal_sees_and_may_call_follows_the_teams_its_token_names() {
    let edge = Edge::start();
    let carol = edge.a.authorization_code(
        "agent-app",
        APP_REDIRECT,
        &edge.resource,
        "openid mcp:tools",
        "carol",
    );
    let b_token = edge
        .b
        .client_credentials("b-bot", CC_SECRET, &edge.resource, "mcp:tools");
    let counter = edge.dir.path().join("counter");
    let count = json!({ "counter": counter.to_str().expect("utf-8") });
    for (who, token, listed, echo_ok) in [
        (
            "carol (editors)",
            carol.as_str(),
            json!(["e_echo", "approve"]),
            true,
        ),
        (
            "b-bot of issuer B (editors)",
            b_token.as_str(),
            json!(["e_echo", "approve"]),
            true,
        ),
        (
            "lonely-bot (no team)",
            &edge.token("lonely-bot"),
            json!(["approve"]),
            false,
        ),
    ] {
        let events = SdkClient::start(
            Sdk::Python,
            &json!({
                "transport": "http", "url": edge.serve.url, "bearer": token,
                "steps": [
                    { "op": "list" },
                    { "op": "call", "tool": "e_echo", "arguments": { "text": "hi" } },
                    { "op": "call", "tool": "e_count", "arguments": count },
                ],
            }),
        )
        .finish(Duration::from_secs(60));
        let list = events_named(&events, "list").next().expect("list");
        assert_eq!(list["tools"], listed, "{who}");
        let calls: Vec<&Value> = events_named(&events, "call").collect();
        assert_eq!(calls[0]["is_error"], !echo_ok, "{who}: {}", calls[0]);
        let denied = &calls[1]["meta"]["dev.escepine/error"]["error"];
        assert_eq!(denied["kind"], "denied", "{who}: {}", calls[1]);
    }
    assert_eq!(runs(&counter), 0);
    let shown = edge.shown();
    assert!(shown.contains("principal  Agent::\"carol\""), "{shown}");
    assert!(
        shown.contains(&format!("token      issuer {}", edge.b.issuer)),
        "{shown}"
    );
}

#[test]
fn refused_tokens_get_their_status_and_challenge_and_nothing_is_recorded() {
    let edge = Edge::start();
    let url = &edge.serve.url;
    let good = edge.token("writer-bot");
    let base = claims_of(&good);
    let metadata_url = format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        url.trim_end_matches("/mcp")
    );

    // The protected resource metadata, at both paths, without a token.
    for path in [
        metadata_url.clone(),
        url.replace("/mcp", "/.well-known/oauth-protected-resource"),
    ] {
        let mut r = ureq::get(&path).call().expect("metadata");
        let doc: Value = r.body_mut().read_json().expect("json");
        assert_eq!(doc["resource"], edge.resource.as_str(), "{path}");
        assert_eq!(
            doc["authorization_servers"],
            json!([edge.a.issuer, edge.b.issuer])
        );
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
    }

    // No token: 401, the metadata's URL, the scope, no error.
    let r = list_with(url, None);
    assert_eq!(r.status(), 401);
    assert_eq!(
        challenge(&r),
        format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp:tools\"")
    );
    let r = list_with(url, Some("Basic d3JpdGVyOmJvdA=="));
    assert_eq!(r.status(), 401);
    assert!(
        challenge(&r).contains("error=\"invalid_request\""),
        "{}",
        challenge(&r)
    );

    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = base.clone();
        f(&mut c);
        c
    };
    let forge = |header: Value, claims: Value| edge.a.forge(&header, &claims, None);
    // An unknown kid: the provider's key set is fetched once more, then refused; further
    // unknown kids within jwks_min_refresh_s (60 s) — and the other issuer's key below — fetch
    // nothing.
    let before = edge.a.jwks_fetches();
    for (n, kid) in ["rotated-1", "rotated-2", "rotated-3"].iter().enumerate() {
        let token = forge(json!({ "kid": kid }), base.clone());
        let r = list_with(url, Some(&format!("Bearer {token}")));
        assert_eq!(r.status(), 401);
        assert!(challenge(&r).contains(kid), "{}", challenge(&r));
        assert_eq!(edge.a.jwks_fetches(), before + 1, "after unknown kid {n}");
    }

    let unsigned = edge.a.forge_unsigned(&base);
    let hmac = edge.a.forge_hmac(&base);
    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "expired",
            forge(json!({}), with(&|c| c["exp"] = json!(now() - 3600))),
            401,
            "expired",
        ),
        (
            "not yet valid",
            forge(json!({}), with(&|c| c["nbf"] = json!(now() + 3600))),
            401,
            "not valid yet",
        ),
        (
            "another issuer",
            forge(json!({}), with(&|c| c["iss"] = json!("http://127.0.0.1:1"))),
            401,
            "not one this server trusts",
        ),
        (
            "another audience",
            forge(
                json!({}),
                with(&|c| c["aud"] = json!("http://127.0.0.1:1/mcp")),
            ),
            401,
            "aud",
        ),
        ("alg none", unsigned, 401, "alg: none"),
        ("HMAC with the public key", hmac, 401, "HS256"),
        (
            "another issuer's key",
            edge.a.forge(&json!({}), &base, Some(Keys::B)),
            401,
            "b-rs256",
        ),
        (
            "a missing scope",
            forge(json!({}), with(&|c| c["scope"] = json!("openid"))),
            403,
            "insufficient_scope",
        ),
    ];
    let fetches = edge.a.jwks_fetches();
    for (what, token, status, reason) in cases {
        let r = list_with(url, Some(&format!("Bearer {token}")));
        assert_eq!(r.status(), status, "{what}: {}", challenge(&r));
        let c = challenge(&r);
        assert!(
            c.starts_with(&format!("Bearer resource_metadata=\"{metadata_url}\"")),
            "{what}: {c}"
        );
        let code = if status == 403 {
            "insufficient_scope"
        } else {
            "invalid_token"
        };
        assert!(c.contains(&format!("error=\"{code}\"")), "{what}: {c}");
        assert!(c.contains(reason), "{what}: {c}");
    }
    assert_eq!(
        edge.a.jwks_fetches(),
        fetches,
        "no fetch beyond one per period"
    );

    // The good token is served; and nothing above was recorded as a call.
    let r = list_with(url, Some(&format!("Bearer {good}")));
    assert_eq!(r.status(), 200);
    let shown = edge.shown();
    assert!(
        !shown.contains("call "),
        "a refused request left a call: {shown}"
    );
}

#[test]
fn two_principals_cannot_touch_each_others_sessions_or_tasks() {
    let edge = Edge::start();
    let counter = edge.dir.path().join("counter");
    let writer = edge.token("writer-bot");
    let other = edge.a.authorization_code(
        "agent-app",
        APP_REDIRECT,
        &edge.resource,
        "openid mcp:tools",
        "dave",
    );
    // The writer's waiting call, as a task.
    let mut waiting = SdkClient::start(
        Sdk::Python,
        &json!({
            "transport": "http", "url": edge.serve.url, "bearer": writer,
            "steps": [{ "op": "call_task", "tool": "e_count", "timeout_s": 5,
                        "arguments": { "counter": counter.to_str().expect("utf-8") } }],
        }),
    );
    let task = waiting.wait_for("task", Duration::from_secs(60));
    let id = task["task_id"].as_str().expect("task id").to_string();
    // Dave (a writer too, but another principal) can neither read nor cancel it, in either
    // revision, nor approve it (not an approver).
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let events = SdkClient::start(
            sdk,
            &json!({
                "transport": "http", "url": edge.serve.url, "bearer": other,
                "steps": [
                    { "op": "get_task", "task_id": id },
                    { "op": "cancel_task", "task_id": id },
                    { "op": "call", "tool": "approve", "arguments": { "call_id": id } },
                ],
            }),
        )
        .finish(Duration::from_secs(60));
        let errors: Vec<&Value> = events_named(&events, "error").collect();
        assert_eq!(errors.len(), 2, "{sdk:?}: {events:#?}");
        let refused = events_named(&events, "call").next().expect("approve");
        assert_eq!(
            refused["meta"]["dev.escepine/error"]["error"]["reason"], "not_permitted",
            "{sdk:?}: {refused}"
        );
    }
    assert_still_waiting(waiting, &counter);

    // A 2025 session opened with the writer's token is the writer's: another principal naming
    // its id is told it does not exist, while the writer goes on using it.
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build(),
    );
    let post = |token: &str, session: Option<&str>, body: Value| {
        let mut r = agent
            .post(&edge.serve.url)
            .header("Authorization", &format!("Bearer {token}"))
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25");
        if let Some(s) = session {
            r = r.header("Mcp-Session-Id", s);
        }
        r.send_json(body).expect("an answer")
    };
    let opened = post(
        &writer,
        None,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "raw", "version": "1" } } }),
    );
    assert_eq!(opened.status(), 200);
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_string();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(post(&writer, Some(&session), initialized).status(), 202);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    assert_eq!(post(&other, Some(&session), list.clone()).status(), 404);
    assert_eq!(post(&writer, Some(&session), list).status(), 200);
}

/// `escepine serve` with these arguments (and the edge fixture's registry), to its end.
fn serve_fails(args: &[&str], oauth: Option<&str>) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
    c.arg("serve").args(args);
    if let Some(text) = oauth {
        let file = dir.path().join("oauth.json");
        std::fs::write(&file, text).expect("write");
        c.arg("--oauth").arg(file);
    }
    c.arg("--ledger").arg(dir.path().join("ledger.db"));
    let out = c.output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).replace(&dir.path().display().to_string(), "DIR"),
    )
}

#[test]
fn a_bad_oauth_file_or_flag_is_refused_before_anything_listens() {
    let mut registry = Command::new("unused");
    registry_args(&mut registry);
    let registry: Vec<String> = registry
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut http: Vec<&str> = vec!["--mcp", "http", "--listen", "127.0.0.1:0"];
    http.extend(registry.iter().map(String::as_str));

    // Every problem of the file, each with the file, its JSON pointer and the rule.
    let (code, err) = serve_fails(
        &http,
        Some(
            r#"{"resource": "http://tools.example.com/mcp", "issuers": [{"issuer": "http://127.0.0.1:9",
               "algorithms": ["HS256"], "principal": {"type": "Agent", "claim": "sub"}, "extra": 1}]}"#,
        ),
    );
    assert_eq!(code, Some(1), "{err}");
    for expected in [
        "DIR/oauth.json: /resource: ",
        "[oauth/loopback-http]",
        "DIR/oauth.json: /issuers/0/algorithms/0: ",
        "[oauth/algorithm]",
        "DIR/oauth.json: /issuers/0/extra: ",
        "3 problems in the OAuth configuration",
    ] {
        assert!(err.contains(expected), "{expected}: {err}");
    }

    // A mapping the Cedar schema cannot hold: `Agent` is no member of an `Org` there.
    let (code, err) = serve_fails(
        &http,
        Some(
            r#"{"resource": "http://127.0.0.1:9/mcp", "issuers": [{"issuer": "http://127.0.0.1:9",
               "principal": {"type": "Agent", "claim": "sub"},
               "parents": [{"claim": "orgs", "type": "Org"}]}]}"#,
        ),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "/issuers/0/principal: an entity of type `Agent` cannot be a member of one of type `Org`"
        ),
        "{err}"
    );
    let (code, err) = serve_fails(
        &http,
        Some(
            r#"{"resource": "http://127.0.0.1:9/mcp", "issuers": [{"issuer": "http://127.0.0.1:9",
               "principal": {"type": "Robot", "claim": "sub"}}]}"#,
        ),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("`Robot` is not a principal type"), "{err}");

    // The flags: OAuth is for HTTP, and one way of knowing callers at a time.
    let good = r#"{"resource": "http://127.0.0.1:9/mcp", "issuers": [{"issuer": "http://127.0.0.1:9",
                  "principal": {"type": "Agent", "claim": "sub"}}]}"#;
    let mut stdio: Vec<&str> = vec!["--mcp", "stdio", "--principal", "Agent::\"alice\""];
    stdio.extend(registry.iter().map(String::as_str));
    let (code, err) = serve_fails(&stdio, Some(good));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("over stdio the principal is --principal"),
        "{err}"
    );
    let mut both = http.clone();
    both.extend(["--tokens", "/dev/null"]);
    let (code, err) = serve_fails(&both, Some(good));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}
