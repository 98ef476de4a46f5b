//! Tokens against real issuers on loopback: what verifies (RS256, ES256, EdDSA; parents from a
//! `groups` claim; a rotated key followed within a request), and what is refused, each for its
//! own reason — expired, not yet valid, another issuer, another audience, `alg: none`, HMAC
//! with the public key as its secret, an unknown `kid` (after one refetch, and no more within
//! `jwks_min_refresh_s`), another issuer's key, a missing scope, claims of the wrong shape — and
//! hostile issuers: a repeated `kid`, an oversized key set, a redirect, a discovery document
//! naming another issuer, an `http` key set off loopback (refused before any connection), an
//! issuer down at start-up (retried, not fatal).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use escepine_identity::config::OAuthConfig;
use escepine_identity::verify::{Rejection, Verifier};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use crate::issuer::{Issuer, SigningKey};

const RESOURCE: &str = "http://127.0.0.1:8787/mcp";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// The claims of a good token of `iss`.
fn claims(iss: &str) -> Value {
    json!({
        "iss": iss,
        "aud": RESOURCE,
        "sub": "alice",
        "groups": ["editors", "writers"],
        "scope": "openid mcp:tools",
        "jti": "token-1",
        "iat": now(),
        "exp": now() + 300,
    })
}

/// A configuration trusting `issuers`, each with `extra` fields.
fn config(issuers: &[(&str, Value)]) -> OAuthConfig {
    let list: Vec<Value> = issuers
        .iter()
        .map(|(url, extra)| {
            let mut i = json!({
                "issuer": url,
                "scopes": ["mcp:tools"],
                "principal": {"type": "Agent", "claim": "sub"},
                "parents": [{"claim": "groups", "type": "Team"}],
            });
            if let (Some(i), Some(extra)) = (i.as_object_mut(), extra.as_object()) {
                i.extend(extra.clone());
            }
            i
        })
        .collect();
    OAuthConfig::parse(
        &json!({ "resource": RESOURCE, "issuers": list }).to_string(),
        "oauth.json",
    )
    .expect("config")
}

fn verifier(issuers: &[(&str, Value)]) -> Verifier {
    Verifier::new(config(issuers)).expect("verifier")
}

fn invalid(r: Result<escepine_identity::verify::Identity, Rejection>) -> String {
    match r {
        Err(Rejection::InvalidToken(why)) => why,
        other => panic!("invalid_token, not {other:?}"),
    }
}

#[tokio::test]
async fn tokens_of_each_algorithm_verify_into_the_principal_and_its_parents() {
    let rs = SigningKey::load("a-rs256", "rs");
    let es = SigningKey::load("a-es256", "es");
    let ed = SigningKey::load("a-eddsa", "ed");
    let issuer = Issuer::start(&[&rs, &es, &ed], 0).await;
    let v = verifier(&[(&issuer.url, json!({}))]);
    for key in [&rs, &es, &ed] {
        let id = v
            .verify(&key.sign(&claims(&issuer.url)))
            .await
            .expect("verifies");
        assert_eq!(id.principal.to_string(), "Agent::\"alice\"");
        let parents: Vec<String> = id.parents.iter().map(ToString::to_string).collect();
        assert_eq!(parents, ["Team::\"editors\"", "Team::\"writers\""]);
        assert_eq!(id.issuer, issuer.url);
        assert_eq!(id.subject.as_deref(), Some("alice"));
        let jti = hex_sha256(b"token-1");
        assert_eq!(id.jti_sha256.as_deref(), Some(jti.as_str()));
        assert_eq!(id.scopes, ["openid", "mcp:tools"]);
    }
    assert_eq!(
        issuer.fetches(),
        1,
        "the key set is fetched once and cached"
    );
    // An audience list containing the resource is accepted.
    let mut c = claims(&issuer.url);
    c["aud"] = json!(["https://other.example", RESOURCE]);
    v.verify(&rs.sign(&c)).await.expect("aud list");
}

fn hex_sha256(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

#[tokio::test]
async fn expired_early_foreign_and_misaddressed_tokens_are_refused_each_for_its_reason() {
    let rs = SigningKey::load("a-rs256", "rs");
    let issuer = Issuer::start(&[&rs], 0).await;
    let v = verifier(&[(&issuer.url, json!({ "leeway_s": 10 }))]);
    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = claims(&issuer.url);
        f(&mut c);
        rs.sign(&c)
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            with(&|c| c["exp"] = json!(now() - 60)),
            "expired",
        ),
        (
            "no exp",
            with(&|c| {
                c.as_object_mut().unwrap().remove("exp");
            }),
            "no expiry",
        ),
        (
            "not yet valid",
            with(&|c| c["nbf"] = json!(now() + 120)),
            "not valid yet",
        ),
        (
            "another issuer",
            with(&|c| c["iss"] = json!("http://127.0.0.1:1")),
            "not one this server trusts",
        ),
        (
            "no issuer",
            with(&|c| {
                c.as_object_mut().unwrap().remove("iss");
            }),
            "not one this server trusts",
        ),
        (
            "another audience",
            with(&|c| c["aud"] = json!("http://127.0.0.1:8787/other")),
            "aud",
        ),
        (
            "no audience",
            with(&|c| {
                c.as_object_mut().unwrap().remove("aud");
            }),
            "no audience",
        ),
        (
            "no principal",
            with(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
            "`sub`",
        ),
        (
            "principal not a string",
            with(&|c| c["sub"] = json!(42)),
            "`sub`",
        ),
        (
            "groups a number",
            with(&|c| c["groups"] = json!(7)),
            "`groups`",
        ),
        (
            "groups with an object",
            with(&|c| c["groups"] = json!(["ok", {"x": 1}])),
            "`groups`",
        ),
    ];
    for (what, token, reason) in cases {
        let why = invalid(v.verify(&token).await);
        assert!(why.contains(reason), "{what}: {why}");
    }
    // Within the leeway: expired 5 s ago, valid from 5 s ahead.
    v.verify(&with(&|c| c["exp"] = json!(now() - 5)))
        .await
        .expect("within the leeway");
    v.verify(&with(&|c| c["nbf"] = json!(now() + 5)))
        .await
        .expect("within the leeway");
    // A missing scope is a 403, naming what is required.
    match v.verify(&with(&|c| c["scope"] = json!("openid"))).await {
        Err(r @ Rejection::InsufficientScope { .. }) => {
            assert_eq!(r.status(), 403);
            assert_eq!(
                r,
                Rejection::InsufficientScope {
                    required: vec!["mcp:tools".into()]
                }
            );
        }
        other => panic!("insufficient_scope, not {other:?}"),
    }
    // `scp` as a list counts too.
    v.verify(&with(&|c| {
        c.as_object_mut().unwrap().remove("scope");
        c["scp"] = json!(["mcp:tools"]);
    }))
    .await
    .expect("scp");
}

/// The header and claims as given, with `signature` (base64url) appended.
fn raw_token(header: &Value, claims: &Value, signature: &str) -> String {
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!("{}.{}.{signature}", b64(header), b64(claims))
}

#[tokio::test]
async fn unsigned_and_hmac_confused_tokens_are_refused() {
    let rs = SigningKey::load("a-rs256", "rs");
    let issuer = Issuer::start(&[&rs], 0).await;
    let v = verifier(&[(&issuer.url, json!({}))]);
    let c = claims(&issuer.url);
    for none in ["none", "None", "NONE"] {
        let token = raw_token(&json!({"alg": none, "typ": "JWT"}), &c, "");
        assert!(
            invalid(v.verify(&token).await).contains("alg: none"),
            "{none}"
        );
    }
    // HS256 with the issuer's public key (PEM) as the shared secret: the classic confusion.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("rs".into());
    let hmac = jsonwebtoken::encode(
        &header,
        &c,
        &EncodingKey::from_secret(&rs.public_pem).expect("secret"),
    )
    .expect("hmac");
    let why = invalid(v.verify(&hmac).await);
    assert!(
        why.contains("HS256") && why.contains("not accepted"),
        "{why}"
    );
    // An algorithm outside this issuer's list.
    let strict = verifier(&[(&issuer.url, json!({ "algorithms": ["ES256"] }))]);
    let why = invalid(strict.verify(&rs.sign(&c)).await);
    assert!(why.contains("RS256"), "{why}");
    // A header naming `crit` extensions, a token that is not three parts, garbage.
    let crit = raw_token(
        &json!({"alg": "RS256", "kid": "rs", "crit": ["exp"]}),
        &c,
        "AA",
    );
    assert!(invalid(v.verify(&crit).await).contains("crit"));
    for junk in ["", "a.b", "a.b.c.d", "!!!.???.###", &"A".repeat(20_000)] {
        invalid(v.verify(junk).await);
    }
    // A signature of another key under the right kid.
    let other = SigningKey::load("b-rs256", "rs");
    assert!(invalid(v.verify(&other.sign(&c)).await).contains("signature"));
    assert_eq!(issuer.fetches(), 1);
}

#[tokio::test]
async fn an_unknown_kid_refetches_once_per_period_and_a_rotation_is_followed() {
    let old = SigningKey::load("a-rs256", "2024");
    let new = SigningKey::load("a-es256", "2025");
    let issuer = Issuer::start(&[&old], 0).await;
    let v = verifier(&[(&issuer.url, json!({ "jwks_min_refresh_s": 3600 }))]);
    // The start-up fetch, which is not a token's and does not count against the period.
    v.start();
    while v.has_keys(&issuer.url) != Some(true) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let c = claims(&issuer.url);
    v.verify(&old.sign(&c)).await.expect("the old key");
    assert_eq!(issuer.fetches(), 1);

    // A kid nobody published: one refetch, then refused.
    let made_up = old.sign_as(Some("made-up-1"), &c);
    assert!(invalid(v.verify(&made_up).await).contains("made-up-1"));
    assert_eq!(issuer.fetches(), 2);
    // More made-up kids within the period, at once: no more fetches.
    let tokens: Vec<String> = (0..20)
        .map(|n| old.sign_as(Some(&format!("x{n}")), &c))
        .collect();
    let results = futures_join(&v, &tokens).await;
    assert!(results
        .iter()
        .all(|r| matches!(r, Err(Rejection::InvalidToken(_)))));
    assert_eq!(issuer.fetches(), 2, "rate-limited to one fetch per period");
    assert_eq!(v.jwks_fetches(&issuer.url), Some(2));

    // A second verifier with a short period follows a rotation within the request.
    let quick = verifier(&[(&issuer.url, json!({ "jwks_min_refresh_s": 1 }))]);
    quick.verify(&old.sign(&c)).await.expect("old key");
    issuer.publish(&[&old, &new]);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let before = issuer.fetches();
    quick.verify(&new.sign(&c)).await.expect("the rotated key");
    assert_eq!(issuer.fetches(), before + 1);
}

async fn futures_join(
    v: &Verifier,
    tokens: &[String],
) -> Vec<Result<escepine_identity::verify::Identity, Rejection>> {
    let mut handles = Vec::new();
    for t in tokens {
        let v = v.clone();
        let t = t.clone();
        handles.push(tokio::spawn(async move { v.verify(&t).await }));
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("join"));
    }
    out
}

#[tokio::test]
async fn a_token_naming_one_issuer_signed_by_anothers_key_is_refused() {
    let a = SigningKey::load("a-rs256", "a-key");
    let b = SigningKey::load("b-rs256", "b-key");
    let ia = Issuer::start(&[&a], 0).await;
    let ib = Issuer::start(&[&b], 0).await;
    let v = verifier(&[(&ia.url, json!({})), (&ib.url, json!({}))]);
    v.verify(&a.sign(&claims(&ia.url))).await.expect("a's own");
    v.verify(&b.sign(&claims(&ib.url))).await.expect("b's own");
    // B's key, A's `iss`: A does not publish B's kid, even after a refetch.
    let forged = b.sign(&claims(&ia.url));
    assert!(invalid(v.verify(&forged).await).contains("b-key"));
    // B's key under A's kid: the signature fails.
    let forged = b.sign_as(Some("a-key"), &claims(&ia.url));
    assert!(invalid(v.verify(&forged).await).contains("signature"));
}

#[tokio::test]
async fn hostile_key_sets_and_discovery_documents_are_not_used() {
    let a = SigningKey::load("a-rs256", "dup");
    let c = SigningKey::load("a-es256", "dup");
    let unique = SigningKey::load("a-eddsa", "ed");
    let issuer = Issuer::start(&[&a, &c, &unique], 0).await;
    let v = verifier(&[(&issuer.url, json!({}))]);
    // A kid published twice is never resolved to either key.
    let why = invalid(v.verify(&a.sign(&claims(&issuer.url))).await);
    assert!(why.contains("two keys"), "{why}");
    v.verify(&unique.sign(&claims(&issuer.url)))
        .await
        .expect("the unique key");

    // An oversized key set, a redirect, another issuer's metadata: the keys are unavailable.
    for (what, setup) in [
        ("oversized", ("jwks_uri", "/huge")),
        ("redirect", ("jwks_uri", "/moved")),
        ("other issuer", ("issuer", "http://127.0.0.1:1")),
    ] {
        let issuer = Issuer::start(&[&unique], 0).await;
        {
            let mut p = issuer.published.lock().unwrap();
            match setup.0 {
                "jwks_uri" => p.jwks_uri = Some(format!("{}{}", issuer.url, setup.1)),
                _ => p.issuer = Some(setup.1.to_string()),
            }
        }
        let v = verifier(&[(&issuer.url, json!({}))]);
        match v.verify(&unique.sign(&claims(&issuer.url))).await {
            Err(Rejection::IssuerUnavailable(why)) => {
                let expected = match what {
                    "oversized" => "larger than",
                    "redirect" => "not followed",
                    _ => "RFC 8414",
                };
                assert!(why.contains(expected), "{what}: {why}");
            }
            other => panic!("{what}: unavailable, not {other:?}"),
        }
    }

    // An `http` key set off loopback is refused by the rule, before any connection (the
    // address is a documentation range nobody answers; the reason is the rule's, not a
    // connection error).
    let issuer = Issuer::start(&[&unique], 0).await;
    issuer.published.lock().unwrap().jwks_uri = Some("http://192.0.2.1/jwks".into());
    let v = verifier(&[(&issuer.url, json!({}))]);
    let started = std::time::Instant::now();
    match v.verify(&unique.sign(&claims(&issuer.url))).await {
        Err(Rejection::IssuerUnavailable(why)) => {
            assert!(why.contains("loopback"), "{why}");
        }
        other => panic!("unavailable, not {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no connection was tried"
    );
    assert_eq!(issuer.fetches(), 0);

    // Without RFC 8414, OpenID Connect discovery is used.
    let issuer = Issuer::start(&[&unique], 0).await;
    issuer.published.lock().unwrap().rfc8414 = false;
    let v = verifier(&[(&issuer.url, json!({}))]);
    v.verify(&unique.sign(&claims(&issuer.url)))
        .await
        .expect("oidc discovery");
}

#[tokio::test]
async fn an_issuer_down_at_start_up_is_retried_and_used_once_it_answers() {
    let key = SigningKey::load("a-es256", "k");
    // Take a free port, then close it: the issuer is down.
    let mut probe = Issuer::start(&[&key], 0).await;
    let port = probe.port();
    probe.stop();
    drop(probe);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let url = format!("http://127.0.0.1:{port}");
    let v = verifier(&[(&url, json!({ "jwks_min_refresh_s": 3600 }))]);
    v.start();
    let token = key.sign(&claims(&url));
    match v.verify(&token).await {
        Err(r @ Rejection::IssuerUnavailable(_)) => assert_eq!(r.status(), 503),
        other => panic!("unavailable, not {other:?}"),
    }
    // It comes up; the background retry (1 s, 2 s, …) fetches its keys.
    let issuer = Issuer::start(&[&key], port).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match v.verify(&token).await {
            Ok(id) => {
                assert_eq!(id.issuer, url);
                break;
            }
            Err(Rejection::IssuerUnavailable(_)) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => panic!("verified once the issuer is up, not {other:?}"),
        }
    }
    assert!(issuer.fetches() >= 1);
}
