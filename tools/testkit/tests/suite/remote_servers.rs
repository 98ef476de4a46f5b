//! The remote MCP servers of the remote-endpoint tests and the token exchange of the
//! authorization server: each server refuses a request without a token (or with a token for
//! another resource) with the `resource_metadata` challenge and serves its RFC 9728 metadata;
//! oidc-provider exchanges (RFC 8693) a user's token for one meant for a server, naming the user
//! as `sub` and the exchanging client as `act`, refuses a forged subject token and a client
//! without the grant, and counts what it issued by grant.

use escepine_testkit::oidc::{claims_of, free_loopback_port, Keys, Provider, ProviderConfig};
use escepine_testkit::remote_servers::{RemoteSdk, RemoteServer};
use serde_json::{json, Value};

const SECRET: &str = "remote-test-only-secret";
const REDIRECT: &str = "http://127.0.0.1:1/callback";
const OWN: &str = "http://127.0.0.1:1/own-mcp";

fn post_mcp(url: &str, token: Option<&str>) -> (u16, String, String) {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build(),
    );
    let mut req = agent
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    if let Some(t) = token {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    let mut r = req
        .send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
            .to_string(),
        )
        .expect("the request");
    let challenge = r
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = r.body_mut().read_to_string().unwrap_or_default();
    (r.status().as_u16(), challenge, body)
}

#[test]
fn each_server_requires_a_token_for_its_own_resource() {
    for sdk in [RemoteSdk::TypeScript, RemoteSdk::Python] {
        let port = free_loopback_port();
        let provider = Provider::start(
            &ProviderConfig::new(Keys::A, OWN)
                .resource(&RemoteServer::url_on(port), "notes")
                .service("notes-cc", SECRET, "mcp:tools notes"),
        );
        let server = RemoteServer::start_on(sdk, port, &provider.issuer, "notes");
        let (status, challenge, _) = post_mcp(&server.url, None);
        assert_eq!(status, 401, "{sdk:?}");
        assert!(
            challenge.contains("resource_metadata="),
            "{sdk:?}: {challenge}"
        );
        let other = provider.client_credentials("notes-cc", SECRET, OWN, "mcp:tools");
        let (status, _, _) = post_mcp(&server.url, Some(&other));
        assert_eq!(status, 401, "{sdk:?}: a token for another resource");
        let own = provider.client_credentials("notes-cc", SECRET, &server.url, "notes");
        let (status, _, body) = post_mcp(&server.url, Some(&own));
        assert_eq!(status, 200, "{sdk:?}: {body}");
        assert!(body.contains("protocolVersion"), "{sdk:?}: {body}");
        assert_eq!(server.counts()["tools_call"], 0, "{sdk:?}");
    }
}

#[test]
fn the_provider_exchanges_a_users_token_for_one_meant_for_a_server() {
    let remote = "http://127.0.0.1:1/remote-mcp";
    let provider = Provider::start(
        &ProviderConfig::new(Keys::A, OWN)
            .resource(remote, "notes")
            .app("agent-app", REDIRECT)
            .account("ann", &["editors"])
            .exchanger("escepine", SECRET, "notes")
            .service("plain", SECRET, "mcp:tools notes"),
    );
    let user = provider.authorization_code("agent-app", REDIRECT, OWN, "mcp:tools", "ann");
    let exchanged = provider
        .try_token_exchange("escepine", SECRET, &user, remote, "notes")
        .expect("the exchange");
    let claims = claims_of(&exchanged);
    assert_eq!(claims["sub"], "ann", "{claims}");
    assert_eq!(claims["aud"], remote, "{claims}");
    assert_eq!(claims["client_id"], "escepine", "{claims}");
    assert_eq!(claims["act"], json!({ "sub": "escepine" }), "{claims}");
    assert_eq!(claims["groups"], json!(["editors"]), "{claims}");
    assert_eq!(claims["scope"], "notes", "{claims}");

    // A subject token this provider did not sign, a client without the grant, another
    // resource: refused.
    let forged = provider.forge(
        &json!({}),
        &json!({"sub": "mallory", "iss": provider.issuer}),
        Some(Keys::B),
    );
    let err = provider
        .try_token_exchange("escepine", SECRET, &forged, remote, "notes")
        .expect_err("forged");
    assert!(err.contains("invalid_grant"), "{err}");
    let err = provider
        .try_token_exchange("plain", SECRET, &user, remote, "notes")
        .expect_err("no grant");
    assert!(err.contains("not allowed for this client"), "{err}");
    let err = provider
        .try_token_exchange(
            "escepine",
            SECRET,
            &user,
            "http://127.0.0.1:1/nowhere",
            "notes",
        )
        .expect_err("unknown resource");
    assert!(err.contains("invalid_target"), "{err}");

    let counts: Value = provider.token_counts();
    assert_eq!(counts["token_exchange"], 1, "{counts}");
    assert_eq!(counts["authorization_code"], 1, "{counts}");
}
