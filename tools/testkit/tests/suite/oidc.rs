//! `escepine_testkit::oidc` against the oidc-provider `.ci/fixtures` installs: the tokens of both
//! grants carry the claims the OAuth tests rely on and verify against the key set its discovery
//! document names, it refuses what it should, counts the fetches of its key set, serves RFC 8414
//! metadata, and two issuers run at once with their own keys. Needs `.ci/fixtures` to have run:
//! without it these tests fail, saying to run it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use escepine_testkit::oidc::{
    claims_of, free_loopback_port, header_of, Keys, Provider, ProviderConfig,
};
use jsonwebtoken::{jwk::JwkSet, DecodingKey, Validation};
use serde_json::{json, Value};

const SECRET: &str = "agent-cc-test-only-secret";
const REDIRECT: &str = "http://127.0.0.1:1/callback";

/// A resource on a free port (nothing listens there: the provider only names it).
fn resource() -> String {
    format!("http://127.0.0.1:{}/mcp", free_loopback_port())
}

/// A client-credentials client `agent-cc` (groups `agents`), a public client `agent-app` and
/// the login `carol` (groups `editors`), for `resource`.
fn config(keys: Keys, resource: &str) -> ProviderConfig {
    ProviderConfig::new(keys, resource)
        .client("agent-cc", SECRET, &["agents"])
        .app("agent-app", REDIRECT)
        .account("carol", &["editors"])
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs()
}

/// `GET url`: its status and JSON body.
fn get_json(url: &str) -> (u16, Value) {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build(),
    );
    let mut response = agent
        .get(url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let body = response
        .body_mut()
        .read_to_string()
        .unwrap_or_else(|e| panic!("the body of GET {url}: {e}"));
    let json = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("GET {url} answers JSON ({e}): {body}"));
    (response.status().as_u16(), json)
}

/// The provider's discovery document.
fn discovery(provider: &Provider) -> Value {
    let (status, doc) = get_json(&format!(
        "{}/.well-known/openid-configuration",
        provider.issuer
    ));
    assert_eq!(status, 200, "{doc}");
    doc
}

/// The provider's key set, fetched from the `jwks_uri` of its discovery document.
fn key_set(provider: &Provider) -> JwkSet {
    let doc = discovery(provider);
    let uri = doc["jwks_uri"]
        .as_str()
        .unwrap_or_else(|| panic!("the discovery document names a jwks_uri: {doc}"));
    let (status, jwks) = get_json(uri);
    assert_eq!(status, 200, "GET {uri}: {jwks}");
    serde_json::from_value(jwks).expect("the jwks_uri answers a JWK set")
}

/// The claims of `token` once it verifies against `jwks`: the key its `kid` names, the
/// header's algorithm, `iss` = `issuer`, `aud` = `audience`, `exp` in the future.
fn verify(
    token: &str,
    jwks: &JwkSet,
    issuer: &str,
    audience: &str,
) -> Result<Value, jsonwebtoken::errors::Error> {
    let header = jsonwebtoken::decode_header(token)?;
    let jwk = jwks
        .find(header.kid.as_deref().unwrap_or_default())
        .ok_or(jsonwebtoken::errors::ErrorKind::InvalidKeyFormat)?;
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let key = DecodingKey::from_jwk(jwk)?;
    Ok(jsonwebtoken::decode::<Value>(token, &key, &validation)?.claims)
}

#[test]
fn a_client_credentials_token_carries_the_claims_and_verifies() {
    let resource = resource();
    let provider = Provider::start(&config(Keys::A, &resource));
    assert!(
        provider.issuer.starts_with("http://127.0.0.1:"),
        "{}",
        provider.issuer
    );
    let token = provider.client_credentials("agent-cc", SECRET, &resource, "mcp:tools");

    let header = header_of(&token);
    assert_eq!(header["alg"], "RS256", "{header}");
    assert_eq!(header["typ"], "at+jwt", "{header}");
    assert_eq!(header["kid"], provider.signing_kid().as_str(), "{header}");
    let claims = claims_of(&token);
    assert_eq!(claims["iss"], provider.issuer.as_str(), "{claims}");
    assert_eq!(claims["aud"], resource.as_str(), "{claims}");
    assert_eq!(claims["sub"], "agent-cc", "{claims}");
    assert_eq!(claims["client_id"], "agent-cc", "{claims}");
    assert_eq!(claims["scope"], "mcp:tools", "{claims}");
    assert_eq!(claims["groups"], json!(["agents"]), "{claims}");
    assert!(
        claims["jti"].as_str().is_some_and(|j| !j.is_empty()),
        "{claims}"
    );
    assert!(
        claims["iat"].as_u64().is_some_and(|iat| iat <= now() + 5),
        "{claims}"
    );
    assert!(
        claims["exp"].as_u64().is_some_and(|exp| exp > now()),
        "{claims}"
    );

    let verified = verify(&token, &key_set(&provider), &provider.issuer, &resource)
        .expect("the token verifies against the provider's key set");
    assert_eq!(verified, claims);
}

#[test]
fn an_authorization_code_token_names_the_login_and_its_groups() {
    let resource = resource();
    let provider =
        Provider::start(&config(Keys::A, &resource).account("dave", &["admins", "editors"]));
    let token = provider.authorization_code("agent-app", REDIRECT, &resource, "mcp:tools", "carol");
    assert_eq!(header_of(&token)["kid"], provider.signing_kid().as_str());
    let claims = claims_of(&token);
    assert_eq!(claims["iss"], provider.issuer.as_str(), "{claims}");
    assert_eq!(claims["aud"], resource.as_str(), "{claims}");
    assert_eq!(claims["sub"], "carol", "{claims}");
    assert_eq!(claims["client_id"], "agent-app", "{claims}");
    assert_eq!(claims["scope"], "mcp:tools", "{claims}");
    assert_eq!(claims["groups"], json!(["editors"]), "{claims}");
    verify(&token, &key_set(&provider), &provider.issuer, &resource).expect("the token verifies");

    // Another login, in a flow of its own (no session carried over); `openid` asked too.
    let token =
        provider.authorization_code("agent-app", REDIRECT, &resource, "openid mcp:tools", "dave");
    let claims = claims_of(&token);
    assert_eq!(claims["sub"], "dave", "{claims}");
    assert_eq!(claims["groups"], json!(["admins", "editors"]), "{claims}");
    assert_eq!(claims["aud"], resource.as_str(), "{claims}");
}

#[test]
fn the_provider_refuses_an_unknown_resource_a_wrong_secret_and_an_unknown_login() {
    let resource = resource();
    let provider = Provider::start(&config(Keys::A, &resource));
    let elsewhere = "http://127.0.0.1:1/other";

    let refusal = provider
        .try_client_credentials("agent-cc", SECRET, elsewhere, "mcp:tools")
        .expect_err("a resource the provider does not know");
    assert!(refusal.contains("invalid_target"), "{refusal}");
    let refusal = provider
        .try_client_credentials("agent-cc", "not-the-secret", &resource, "mcp:tools")
        .expect_err("a wrong secret");
    assert!(
        refusal.starts_with("401") && refusal.contains("invalid_client"),
        "{refusal}"
    );

    let refusal = provider
        .try_authorization_code("agent-app", REDIRECT, elsewhere, "mcp:tools", "carol")
        .expect_err("a resource the provider does not know");
    assert!(refusal.starts_with("invalid_target"), "{refusal}");
    let refusal = provider
        .try_authorization_code("agent-app", REDIRECT, &resource, "mcp:tools", "mallory")
        .expect_err("a login not in the accounts table");
    assert_eq!(refusal, "access_denied: unknown login");

    // A scope the resource does not know is left out, not refused: no `scope` claim.
    let token = provider.client_credentials("agent-cc", SECRET, &resource, "mcp:unknown");
    assert_eq!(claims_of(&token).get("scope"), None);
}

#[test]
fn the_provider_counts_the_fetches_of_its_key_set_and_serves_rfc_8414_metadata() {
    let resource = resource();
    let provider = Provider::start(&config(Keys::A, &resource));
    assert_eq!(provider.jwks_fetches(), 0);

    let doc = discovery(&provider);
    assert_eq!(doc["issuer"], provider.issuer.as_str(), "{doc}");
    assert_eq!(
        doc["jwks_uri"],
        format!("{}/jwks", provider.issuer).as_str(),
        "{doc}"
    );
    let (status, rfc8414) = get_json(&format!(
        "{}/.well-known/oauth-authorization-server",
        provider.issuer
    ));
    assert_eq!(status, 200, "{rfc8414}");
    assert_eq!(rfc8414, doc);
    assert_eq!(
        provider.jwks_fetches(),
        0,
        "the metadata is not the key set"
    );

    let jwks = key_set(&provider);
    assert_eq!(provider.jwks_fetches(), 1);
    let kids: Vec<_> = jwks
        .keys
        .iter()
        .filter_map(|k| k.common.key_id.clone())
        .collect();
    assert_eq!(kids, [provider.signing_kid()]);
    let public = serde_json::to_value(&jwks).expect("a JWK set");
    assert!(
        public["keys"][0].get("d").is_none(),
        "no private part: {public}"
    );

    // Issuing a token reads no key set; each GET of it counts.
    provider.client_credentials("agent-cc", SECRET, &resource, "mcp:tools");
    key_set(&provider);
    assert_eq!(provider.jwks_fetches(), 2);
    provider.reset_jwks_fetches();
    assert_eq!(provider.jwks_fetches(), 0);
}

#[test]
fn two_providers_run_at_once_with_their_own_issuers_and_keys() {
    // Shared with the blocking threads of a tokio test.
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Provider>();

    let resource = resource();
    let a = Provider::start(&config(Keys::A, &resource));
    let b = Provider::start(&config(Keys::B, &resource));
    assert_ne!(a.issuer, b.issuer);
    assert_ne!(a.signing_kid(), b.signing_kid());
    assert_ne!(a.signing_key_pem(), b.signing_key_pem());

    let token_a = a.client_credentials("agent-cc", SECRET, &resource, "mcp:tools");
    let token_b = b.authorization_code("agent-app", REDIRECT, &resource, "mcp:tools", "carol");
    assert_eq!(header_of(&token_b)["kid"], b.signing_kid().as_str());
    assert_eq!(claims_of(&token_b)["iss"], b.issuer.as_str());

    let (jwks_a, jwks_b) = (key_set(&a), key_set(&b));
    verify(&token_a, &jwks_a, &a.issuer, &resource).expect("a's token, a's keys");
    verify(&token_b, &jwks_b, &b.issuer, &resource).expect("b's token, b's keys");
    verify(&token_a, &jwks_b, &a.issuer, &resource).expect_err("a's token, b's keys");
    verify(&token_b, &jwks_a, &b.issuer, &resource).expect_err("b's token, a's keys");
    assert_eq!((a.jwks_fetches(), b.jwks_fetches()), (1, 1));
}

#[test]
fn forged_tokens_verify_only_when_signed_with_the_issuers_own_key() {
    let resource = resource();
    let provider = Provider::start(&config(Keys::B, &resource));
    let jwks = key_set(&provider);
    let claims = json!({
        "iss": provider.issuer,
        "aud": resource,
        "sub": "forger",
        "client_id": "forger",
        "scope": "mcp:tools",
        "jti": "forged-1",
        "iat": now(),
        "exp": now() + 300,
    });
    let forged = provider.forge(&json!({"typ": "at+jwt"}), &claims, None);
    assert_eq!(header_of(&forged)["kid"], provider.signing_kid().as_str());
    assert_eq!(
        verify(&forged, &jwks, &provider.issuer, &resource).expect("signed with its key"),
        claims
    );
    // Another issuer's key under this issuer's kid; no signature; HS256 over its public key.
    let foreign = provider.forge(
        &json!({"kid": provider.signing_kid()}),
        &claims,
        Some(Keys::A),
    );
    verify(&foreign, &jwks, &provider.issuer, &resource).expect_err("another key");
    let unsigned = provider.forge_unsigned(&claims);
    assert_eq!(header_of(&unsigned)["alg"], "none");
    verify(&unsigned, &jwks, &provider.issuer, &resource).expect_err("alg none");
    let hmac = provider.forge_hmac(&claims);
    verify(&hmac, &jwks, &provider.issuer, &resource).expect_err("HS256 with the public key");
    assert!(provider.signing_key_pem().is_file());
}
