//! What verifying an OAuth access token adds to a governed call over HTTP, side by side in one
//! run:
//!
//! - `verify (cached JWKS)`: `Verifier::verify` alone, the issuer's keys already held (an RS256
//!   JWT with a `groups` claim);
//! - `tools/call, development token`: one stateless (2026-07-28) `tools/call` over loopback
//!   HTTP to the MCP endpoint, the caller known by a `--tokens` entry (a digest lookup): rmcp,
//!   the governed path (input gate, Cedar, intent and outcome in an in-memory ledger, a tool in
//!   process, output gate), the answer read whole;
//! - `tools/call, OAuth token`: the same call with a JWT access token verified against the
//!   issuer's cached JWKS, the principal's team taken from its claims (the entity store extended
//!   with it for Cedar).
//!
//! The issuer is a loopback HTTP server serving discovery and a key set (fetched once, before
//! measuring). Run: `cargo bench -p escepine-mcp --features in-process --bench edge`.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, Criterion};
use escepine_contract::Principal;
use escepine_identity::config::OAuthConfig;
use escepine_identity::tokens::Tokens;
use escepine_identity::verify::Verifier;
use escepine_mcp::auth::{Authenticator, OAuth};
use escepine_testkit::bins::workspace_root;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

const DEV_TOKEN: &str = "bench-token-0123456789";

#[path = "support/edge_server.rs"]
mod edge_server;
use edge_server::serve;

/// An issuer on loopback publishing `jwk`; returns its URL.
async fn issuer(jwk: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let meta = json!({ "issuer": url, "jwks_uri": format!("{url}/jwks") });
    let keys = json!({ "keys": [jwk] });
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || {
                let m = meta.to_string();
                async move { m }
            }),
        )
        .route(
            "/jwks",
            axum::routing::get(move || {
                let k = keys.to_string();
                async move { k }
            }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

/// One stateless `tools/call` of `e_echo` with `token`; the answer must be the echo.
async fn call(client: &reqwest::Client, url: &str, token: &str) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "e_echo", "arguments": { "text": "bench" }, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }},
    });
    let answer = client
        .post(url)
        .header("Authorization", format!("Bearer {token}"))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "e_echo")
        .body(body.to_string())
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    assert!(answer.contains("\"structuredContent\""), "{answer}");
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let pem =
        std::fs::read(workspace_root().join("runtime/identity/tests/keys/test-only-a-rs256.pem"))
            .expect("the test key");
    let key = EncodingKey::from_rsa_pem(&pem).expect("rsa");
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).expect("jwk");
    jwk.common.key_id = Some("bench".into());
    jwk.common.public_key_use = Some(PublicKeyUse::Signature);
    let jwk = serde_json::to_value(&jwk).expect("jwk json");

    let (dev_url, oauth_url, verifier, token) = rt.block_on(async {
        let iss = issuer(jwk).await;
        let mut tokens = Tokens::default();
        tokens.insert(DEV_TOKEN, Principal::agent("alice"));
        let entities = json!([
            {"uid": {"type": "Team", "id": "editors"}, "attrs": {}, "parents": []},
            {"uid": {"type": "Agent", "id": "alice"}, "attrs": {}, "parents": [{"type": "Team", "id": "editors"}]},
        ]);
        let dev_url = serve(0, Authenticator::Tokens(Arc::new(tokens)), Some(entities)).await;
        let oauth_port = free_port();
        let resource = format!("http://127.0.0.1:{oauth_port}/mcp");
        let config = OAuthConfig::parse(
            &json!({ "resource": resource, "issuers": [{
                "issuer": iss, "scopes": ["mcp:tools"],
                "principal": {"type": "Agent", "claim": "sub"},
                "parents": [{"claim": "groups", "type": "Team"}],
            }]})
            .to_string(),
            "bench",
        )
        .expect("config");
        let verifier = Verifier::new(config.clone()).expect("verifier");
        let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs();
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("bench".into());
        let token = jsonwebtoken::encode(
            &header,
            &json!({ "iss": iss, "aud": resource, "sub": "agent-7", "groups": ["editors"],
                     "scope": "mcp:tools", "jti": "bench-1", "exp": now + 3600 }),
            &key,
        )
        .expect("sign");
        verifier.verify(&token).await.expect("the token verifies");
        // No entities: the principal's team comes from the token.
        let oauth_url = serve(
            oauth_port,
            Authenticator::OAuth(OAuth::new(config, verifier.clone())),
            None,
        )
        .await;
        (dev_url, oauth_url, verifier, token)
    });
    let client = reqwest::Client::new();
    rt.block_on(call(&client, &dev_url, DEV_TOKEN));
    rt.block_on(call(&client, &oauth_url, &token));

    let mut group = c.benchmark_group("governed call over HTTP, by how the caller is known");
    group.bench_function("verify (cached JWKS)", |b| {
        b.iter(|| rt.block_on(verifier.verify(&token)).expect("verifies"))
    });
    group.bench_function("tools/call, development token", |b| {
        b.iter(|| rt.block_on(call(&client, &dev_url, DEV_TOKEN)))
    });
    group.bench_function("tools/call, OAuth token (cached JWKS)", |b| {
        b.iter(|| rt.block_on(call(&client, &oauth_url, &token)))
    });
    group.finish();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

criterion_group!(benches, bench);
criterion_main!(benches);
