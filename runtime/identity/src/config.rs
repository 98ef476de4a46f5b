//! The resource server's configuration file (`escepine serve --oauth FILE`):
//!
//! ```json
//! {"resource": "https://tools.example.com/mcp",
//!  "issuers": [{"issuer": "https://idp.example.com",
//!               "audience": "https://tools.example.com/mcp",
//!               "scopes": ["mcp:tools"],
//!               "jwks_min_refresh_s": 60,
//!               "leeway_s": 30,
//!               "algorithms": ["RS256", "ES256"],
//!               "principal": {"type": "Agent", "claim": "sub"},
//!               "parents": [{"claim": "groups", "type": "Team"}]}]}
//! ```
//!
//! - `resource`: the server's canonical resource URI (RFC 8707): what tokens must name as
//!   their audience, and what the protected resource metadata names.
//! - `issuers`: one or more, each distinct. `issuer` is compared exactly with a token's `iss`;
//!   `audience` defaults to `resource`; `scopes` (each one token must hold; none by default);
//!   `jwks_min_refresh_s` (1–86 400, default 60): the shortest time between two fetches of the
//!   key set on an unknown `kid`; `leeway_s` (0–300, default 30) for `exp` and `nbf`;
//!   `algorithms`, the allow-list (default every asymmetric JWS algorithm: RS256/384/512,
//!   PS256/384/512, ES256/384, EdDSA; `none` and HMAC are refused by rule); `principal`: the
//!   Cedar entity type of the principal and the claim holding its id; `parents`: claims
//!   holding the ids of entities (of the given type) the principal is a member of.
//! - Every URL: `https`, or `http` on a loopback address ([`crate::origin_rule`]).
//!
//! The file is strict JSON (a key given twice is refused) and closed (an unknown key is
//! refused). Every problem is reported at once, each with the file, the JSON pointer and the
//! rule broken.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::time::Duration;

use jsonwebtoken::Algorithm;
use serde_json::{Map, Value};
use url::Url;

/// The default shortest time between two fetches of an issuer's keys on an unknown `kid`.
pub const DEFAULT_JWKS_MIN_REFRESH_S: u64 = 60;
/// The default leeway for `exp` and `nbf`, in seconds.
pub const DEFAULT_LEEWAY_S: u64 = 30;
/// The largest leeway accepted, in seconds.
pub const MAX_LEEWAY_S: u64 = 300;
/// The largest `jwks_min_refresh_s` accepted.
pub const MAX_JWKS_MIN_REFRESH_S: u64 = 86_400;

/// The algorithms accepted when an issuer names none: every asymmetric JWS algorithm.
pub const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The resource server's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The canonical resource URI.
    pub resource: Url,
    /// The issuers whose tokens are accepted.
    pub issuers: Vec<IssuerConfig>,
}

/// One issuer whose tokens are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerConfig {
    /// The issuer identifier, exactly as a token's `iss` must read.
    pub issuer: String,
    /// The same, parsed.
    pub issuer_url: Url,
    /// What a token's `aud` must contain.
    pub audience: String,
    /// The scopes a token must hold, every one.
    pub scopes: Vec<String>,
    /// The shortest time between two fetches of the key set on an unknown `kid`.
    pub jwks_min_refresh: Duration,
    /// The leeway for `exp` and `nbf`, in seconds.
    pub leeway_s: u64,
    /// The algorithms a token may be signed with.
    pub algorithms: Vec<Algorithm>,
    /// The principal: its Cedar entity type and the claim holding its id.
    pub principal: ClaimMapping,
    /// The principal's parents: for each, the claim holding their ids and their entity type.
    pub parents: Vec<ClaimMapping>,
}

/// A claim whose value names Cedar entities of one type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMapping {
    /// The Cedar entity type (`Agent`, `Team`, `Org::Group`).
    pub entity_type: String,
    /// The claim.
    pub claim: String,
}

/// One problem of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The JSON pointer of the offending value (`/issuers/0/issuer`).
    pub pointer: String,
    /// The rule id (`oauth/loopback-http`).
    pub rule: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "(the document)"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {} [{}]", self.message, self.rule)
    }
}

/// Why a configuration file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file breaks rules: every problem.
    #[error("{}", render(.file, .problems))]
    Invalid {
        /// The file.
        file: String,
        /// The problems.
        problems: Vec<Problem>,
    },
}

fn render(file: &str, problems: &[Problem]) -> String {
    let mut out = String::new();
    for p in problems {
        out.push_str(&format!("{file}: {p}\n"));
    }
    out.push_str(&format!(
        "{file}: {} problem{} in the OAuth configuration",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    ));
    out
}

impl OAuthConfig {
    /// Read and check the file at `path`.
    ///
    /// # Errors
    /// [`ConfigError::Read`], or [`ConfigError::Invalid`] with every problem.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })?;
        Self::parse(&text, &file)
    }

    /// Check `text`; `name` names the file in errors.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with every problem.
    pub fn parse(text: &str, name: &str) -> Result<Self, ConfigError> {
        let invalid = |problems| ConfigError::Invalid {
            file: name.to_string(),
            problems,
        };
        let value = escepine_contract::strict_json::from_str(text).map_err(|e| {
            invalid(vec![Problem {
                pointer: String::new(),
                rule: "oauth/json",
                message: e.to_string(),
            }])
        })?;
        let mut p = Problems::default();
        let config = read_config(&value, &mut p);
        match config {
            Some(c) if p.0.is_empty() => Ok(c),
            _ => Err(invalid(p.0)),
        }
    }

    /// Every scope some issuer requires, sorted and distinct.
    pub fn scopes(&self) -> Vec<String> {
        let set: BTreeSet<&String> = self.issuers.iter().flat_map(|i| &i.scopes).collect();
        set.into_iter().cloned().collect()
    }
}

#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn push(&mut self, pointer: impl Into<String>, rule: &'static str, message: impl Into<String>) {
        self.0.push(Problem {
            pointer: pointer.into(),
            rule,
            message: message.into(),
        });
    }
}

/// The object at `pointer`, its unknown keys reported.
fn object<'a>(
    value: &'a Value,
    pointer: &str,
    known: &[&str],
    p: &mut Problems,
) -> Option<&'a Map<String, Value>> {
    let Some(map) = value.as_object() else {
        p.push(pointer, "oauth/type", "must be a JSON object");
        return None;
    };
    for key in map.keys() {
        if !known.contains(&key.as_str()) {
            p.push(
                format!("{pointer}/{}", escepine_contract::strict_json::escape(key)),
                "oauth/unknown-field",
                format!(
                    "unknown field `{key}` (expected one of: {})",
                    known.join(", ")
                ),
            );
        }
    }
    Some(map)
}

/// A required string at `pointer`.
fn string<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    pointer: &str,
    p: &mut Problems,
) -> Option<&'a str> {
    match map.get(key) {
        None => {
            p.push(pointer, "oauth/required", format!("`{key}` is required"));
            None
        }
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        Some(_) => {
            p.push(
                format!("{pointer}/{key}"),
                "oauth/type",
                "must be a non-empty string",
            );
            None
        }
    }
}

/// An optional integer in `range` at `pointer`, or `default`.
fn integer(
    map: &Map<String, Value>,
    key: &str,
    pointer: &str,
    range: std::ops::RangeInclusive<u64>,
    default: u64,
    p: &mut Problems,
) -> u64 {
    match map.get(key) {
        None => default,
        Some(v) => match v.as_u64() {
            Some(n) if range.contains(&n) => n,
            _ => {
                p.push(
                    format!("{pointer}/{key}"),
                    "oauth/range",
                    format!(
                        "must be an integer from {} to {}",
                        range.start(),
                        range.end()
                    ),
                );
                default
            }
        },
    }
}

/// A URL at `pointer` under the origin rule.
fn url_at(text: &str, pointer: &str, p: &mut Problems) -> Option<Url> {
    match Url::parse(text) {
        Ok(url) => {
            if let Some(why) = crate::origin_rule::problem(&url) {
                p.push(pointer, "oauth/loopback-http", why);
                None
            } else {
                Some(url)
            }
        }
        Err(e) => {
            p.push(
                pointer,
                "oauth/uri",
                format!("`{text}` is not an absolute URI: {e}"),
            );
            None
        }
    }
}

fn read_config(value: &Value, p: &mut Problems) -> Option<OAuthConfig> {
    let map = object(
        value,
        "",
        &["$schema", "$comment", "resource", "issuers"],
        p,
    )?;
    let resource = string(map, "resource", "", p).and_then(|r| url_at(r, "/resource", p));
    let mut issuers = Vec::new();
    match map.get("issuers") {
        None => p.push("", "oauth/required", "`issuers` is required"),
        Some(Value::Array(list)) if list.is_empty() => p.push(
            "/issuers",
            "oauth/issuers-empty",
            "at least one issuer is needed: with none, every request would be refused",
        ),
        Some(Value::Array(list)) => {
            let mut seen = BTreeSet::new();
            for (n, item) in list.iter().enumerate() {
                let pointer = format!("/issuers/{n}");
                if let Some(named) = item.get("issuer").and_then(Value::as_str) {
                    if !seen.insert(named) {
                        p.push(
                            format!("{pointer}/issuer"),
                            "oauth/issuer-duplicate",
                            format!("the issuer `{named}` is configured twice"),
                        );
                    }
                }
                if let Some(issuer) = read_issuer(item, &pointer, resource.as_ref(), p) {
                    issuers.push(issuer);
                }
            }
        }
        Some(_) => p.push("/issuers", "oauth/type", "must be a list of issuers"),
    }
    Some(OAuthConfig {
        resource: resource?,
        issuers,
    })
}

fn read_issuer(
    value: &Value,
    pointer: &str,
    resource: Option<&Url>,
    p: &mut Problems,
) -> Option<IssuerConfig> {
    let map = object(
        value,
        pointer,
        &[
            "issuer",
            "audience",
            "scopes",
            "jwks_min_refresh_s",
            "leeway_s",
            "algorithms",
            "principal",
            "parents",
        ],
        p,
    )?;
    let issuer = string(map, "issuer", pointer, p);
    let issuer_url = issuer.and_then(|i| url_at(i, &format!("{pointer}/issuer"), p));
    let audience = match map.get("audience") {
        None => resource.map(ToString::to_string),
        Some(_) => string(map, "audience", pointer, p).map(str::to_string),
    };
    let scopes = read_scopes(map.get("scopes"), &format!("{pointer}/scopes"), p);
    let refresh = integer(
        map,
        "jwks_min_refresh_s",
        pointer,
        1..=MAX_JWKS_MIN_REFRESH_S,
        DEFAULT_JWKS_MIN_REFRESH_S,
        p,
    );
    let leeway_s = integer(
        map,
        "leeway_s",
        pointer,
        0..=MAX_LEEWAY_S,
        DEFAULT_LEEWAY_S,
        p,
    );
    let algorithms = read_algorithms(map.get("algorithms"), &format!("{pointer}/algorithms"), p);
    let principal = match map.get("principal") {
        None => {
            p.push(pointer, "oauth/required", "`principal` is required");
            None
        }
        Some(v) => read_mapping(v, &format!("{pointer}/principal"), p),
    };
    let mut parents = Vec::new();
    match map.get("parents") {
        None => {}
        Some(Value::Array(list)) => {
            for (n, item) in list.iter().enumerate() {
                if let Some(m) = read_mapping(item, &format!("{pointer}/parents/{n}"), p) {
                    parents.push(m);
                }
            }
        }
        Some(_) => p.push(
            format!("{pointer}/parents"),
            "oauth/type",
            "must be a list of {\"claim\", \"type\"}",
        ),
    }
    Some(IssuerConfig {
        issuer: issuer?.to_string(),
        issuer_url: issuer_url?,
        audience: audience?,
        scopes,
        jwks_min_refresh: Duration::from_secs(refresh),
        leeway_s,
        algorithms,
        principal: principal?,
        parents,
    })
}

fn read_scopes(value: Option<&Value>, pointer: &str, p: &mut Problems) -> Vec<String> {
    let Some(value) = value else {
        return Vec::new();
    };
    let Some(list) = value.as_array() else {
        p.push(pointer, "oauth/type", "must be a list of scope strings");
        return Vec::new();
    };
    let mut scopes = Vec::new();
    for (n, s) in list.iter().enumerate() {
        match s.as_str() {
            Some(s)
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\') =>
            {
                if !scopes.iter().any(|have: &String| have == s) {
                    scopes.push(s.to_string());
                }
            }
            _ => p.push(
                format!("{pointer}/{n}"),
                "oauth/scope",
                "a scope is a non-empty string of visible ASCII without spaces, quotes or \
                 backslashes (RFC 6749 §3.3)",
            ),
        }
    }
    scopes
}

fn read_algorithms(value: Option<&Value>, pointer: &str, p: &mut Problems) -> Vec<Algorithm> {
    let Some(value) = value else {
        return DEFAULT_ALGORITHMS.to_vec();
    };
    let Some(list) = value.as_array().filter(|l| !l.is_empty()) else {
        p.push(
            pointer,
            "oauth/type",
            "must be a non-empty list of JWS algorithm names",
        );
        return Vec::new();
    };
    let mut algorithms = Vec::new();
    for (n, a) in list.iter().enumerate() {
        let at = format!("{pointer}/{n}");
        let Some(name) = a.as_str() else {
            p.push(at, "oauth/type", "must be an algorithm name");
            continue;
        };
        match allowed_algorithm(name) {
            Ok(alg) => {
                if !algorithms.contains(&alg) {
                    algorithms.push(alg);
                }
            }
            Err(why) => p.push(at, "oauth/algorithm", why),
        }
    }
    algorithms
}

/// An algorithm an issuer may be allowed: an asymmetric JWS algorithm; `none` and the HMAC
/// family never (a resource server holds no shared secret, and HMAC with a public key is the
/// classic confusion).
pub fn allowed_algorithm(name: &str) -> Result<Algorithm, String> {
    if name.eq_ignore_ascii_case("none") {
        return Err("`none` (an unsigned token) is never accepted".into());
    }
    let alg: Algorithm = name.parse().map_err(|_| {
        format!(
            "`{name}` is not a JWS algorithm this server knows (one of RS256, RS384, RS512, \
             PS256, PS384, PS512, ES256, ES384, EdDSA)"
        )
    })?;
    if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
        return Err(format!(
            "`{name}` is an HMAC algorithm: a resource server verifies with an issuer's public \
             keys only"
        ));
    }
    Ok(alg)
}

fn read_mapping(value: &Value, pointer: &str, p: &mut Problems) -> Option<ClaimMapping> {
    let map = object(value, pointer, &["type", "claim"], p)?;
    let entity_type = string(map, "type", pointer, p);
    if let Some(t) = entity_type {
        if !escepine_contract::is_entity_type(t) {
            p.push(
                format!("{pointer}/type"),
                "oauth/entity-type",
                format!(
                    "`{t}` is not a Cedar entity type (identifiers separated by `::`, such as \
                     `Agent` or `Org::Team`)"
                ),
            );
        }
    }
    let claim = string(map, "claim", pointer, p);
    let entity_type = entity_type.filter(|t| escepine_contract::is_entity_type(t))?;
    Some(ClaimMapping {
        entity_type: entity_type.to_string(),
        claim: claim?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
        "resource": "http://127.0.0.1:8787/mcp",
        "issuers": [{
            "issuer": "http://127.0.0.1:9000",
            "scopes": ["mcp:tools"],
            "principal": {"type": "Agent", "claim": "sub"},
            "parents": [{"claim": "groups", "type": "Team"}]
        }]
    }"#;

    fn problems(text: &str) -> Vec<Problem> {
        match OAuthConfig::parse(text, "oauth.json") {
            Err(ConfigError::Invalid { problems, .. }) => problems,
            other => panic!("refused, not {other:?}"),
        }
    }

    fn pointers(text: &str) -> Vec<(String, &'static str)> {
        problems(text)
            .into_iter()
            .map(|p| (p.pointer, p.rule))
            .collect()
    }

    #[test]
    fn a_good_file_has_its_defaults() {
        let c = OAuthConfig::parse(GOOD, "oauth.json").unwrap();
        assert_eq!(c.resource.as_str(), "http://127.0.0.1:8787/mcp");
        let i = &c.issuers[0];
        assert_eq!(i.issuer, "http://127.0.0.1:9000");
        assert_eq!(
            i.audience, "http://127.0.0.1:8787/mcp",
            "the resource by default"
        );
        assert_eq!(i.scopes, ["mcp:tools"]);
        assert_eq!(i.jwks_min_refresh, Duration::from_secs(60));
        assert_eq!(i.leeway_s, 30);
        assert_eq!(i.algorithms, DEFAULT_ALGORITHMS.to_vec());
        assert_eq!(i.principal.entity_type, "Agent");
        assert_eq!(i.parents[0].claim, "groups");
        assert_eq!(c.scopes(), ["mcp:tools"]);
    }

    #[test]
    fn every_problem_is_reported_at_once_with_its_pointer_and_rule() {
        let text = r#"{
            "resource": "http://tools.example.com/mcp",
            "issuer": "typo",
            "issuers": [{
                "issuer": "http://idp.example.com",
                "scopes": ["a b", ""],
                "jwks_min_refresh_s": 0,
                "leeway_s": 301,
                "algorithms": ["none", "HS256", "XY512", "ES256"],
                "principal": {"type": "1Agent", "claim": ""},
                "parents": [{"claim": "groups"}],
                "extra": true
            }, {
                "issuer": "https://idp.example.com/",
                "principal": {"type": "Agent", "claim": "sub"}
            }, {
                "issuer": "https://idp.example.com/",
                "principal": {"type": "Agent", "claim": "sub"}
            }]
        }"#;
        let got = pointers(text);
        for expected in [
            ("/resource", "oauth/loopback-http"),
            ("/issuer", "oauth/unknown-field"),
            ("/issuers/0/extra", "oauth/unknown-field"),
            ("/issuers/0/issuer", "oauth/loopback-http"),
            ("/issuers/0/scopes/0", "oauth/scope"),
            ("/issuers/0/scopes/1", "oauth/scope"),
            ("/issuers/0/jwks_min_refresh_s", "oauth/range"),
            ("/issuers/0/leeway_s", "oauth/range"),
            ("/issuers/0/algorithms/0", "oauth/algorithm"),
            ("/issuers/0/algorithms/1", "oauth/algorithm"),
            ("/issuers/0/algorithms/2", "oauth/algorithm"),
            ("/issuers/0/principal/type", "oauth/entity-type"),
            ("/issuers/0/principal/claim", "oauth/type"),
            ("/issuers/0/parents/0", "oauth/required"),
            ("/issuers/2/issuer", "oauth/issuer-duplicate"),
        ] {
            assert!(
                got.contains(&(expected.0.to_string(), expected.1)),
                "{expected:?} missing from {got:#?}"
            );
        }
        let shown = OAuthConfig::parse(text, "oauth.json")
            .unwrap_err()
            .to_string();
        assert!(shown.contains("oauth.json: /resource: "), "{shown}");
        assert!(
            shown.contains("`none` (an unsigned token) is never accepted"),
            "{shown}"
        );
        assert!(shown.contains("HMAC"), "{shown}");
        assert!(
            shown.ends_with("problems in the OAuth configuration"),
            "{shown}"
        );
    }

    #[test]
    fn a_key_given_twice_is_refused_naming_it() {
        let text = r#"{"resource": "http://127.0.0.1/mcp", "resource": "https://evil.example/mcp", "issuers": []}"#;
        let got = problems(text);
        assert_eq!(got[0].rule, "oauth/json");
        assert!(got[0].message.contains("/resource"), "{}", got[0].message);
    }

    #[test]
    fn no_issuers_and_wrong_shapes_are_refused() {
        assert_eq!(
            pointers(r#"{"resource": "http://127.0.0.1/mcp", "issuers": []}"#),
            [("/issuers".to_string(), "oauth/issuers-empty")]
        );
        assert_eq!(
            pointers(r#"{"resource": "not a uri", "issuers": {}}"#),
            [
                ("/resource".to_string(), "oauth/uri"),
                ("/issuers".to_string(), "oauth/type")
            ]
        );
        assert_eq!(pointers("[]"), [(String::new(), "oauth/type")]);
        assert_eq!(
            pointers(r#"{"issuers": [{"issuer": "https://i.example"}]}"#),
            [
                (String::new(), "oauth/required"),
                ("/issuers/0".to_string(), "oauth/required")
            ]
        );
    }

    #[test]
    fn an_explicit_audience_and_algorithms_are_kept() {
        let text = GOOD.replace(
            r#""scopes": ["mcp:tools"],"#,
            r#""audience": "api://tools", "algorithms": ["ES256", "EdDSA", "ES256"], "leeway_s": 0,"#,
        );
        let c = OAuthConfig::parse(&text, "oauth.json").unwrap();
        assert_eq!(c.issuers[0].audience, "api://tools");
        assert_eq!(
            c.issuers[0].algorithms,
            [Algorithm::ES256, Algorithm::EdDSA]
        );
        assert_eq!(c.issuers[0].leeway_s, 0);
        assert!(c.scopes().is_empty());
    }
}
