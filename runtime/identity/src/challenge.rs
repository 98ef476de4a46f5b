//! The `WWW-Authenticate` challenge of a refused request (RFC 6750 §3, RFC 9728 §5.1), and the
//! bearer token of an `Authorization` header.

use crate::config::OAuthConfig;
use crate::metadata::metadata_url;
use crate::verify::Rejection;

/// The challenge answering `rejection`: `Bearer resource_metadata="…"`, the configured scopes
/// (`scope="…"`) when no token was sent or one lacks a scope, and for a refused token its
/// `error` and a short `error_description`.
pub fn www_authenticate(config: &OAuthConfig, rejection: &Rejection) -> String {
    let mut out = format!(
        "Bearer resource_metadata=\"{}\"",
        quoted(&metadata_url(config))
    );
    let scopes = config.scopes();
    match rejection {
        Rejection::Missing => {}
        Rejection::IssuerUnavailable(_) => return out,
        other => {
            if let Some(code) = other.error_code() {
                out.push_str(&format!(", error=\"{code}\""));
            }
            out.push_str(&format!(
                ", error_description=\"{}\"",
                quoted(&other.to_string())
            ));
        }
    }
    if !scopes.is_empty()
        && matches!(
            rejection,
            Rejection::Missing | Rejection::InsufficientScope { .. }
        )
    {
        out.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
    }
    out
}

/// The token of an `Authorization` header of the `Bearer` scheme (case-insensitive): `None`
/// without a header.
///
/// # Errors
/// [`Rejection::Malformed`] for another scheme, an empty token, or characters RFC 6750's
/// `b64token` does not allow.
pub fn bearer_token(authorization: Option<&str>) -> Result<Option<&str>, Rejection> {
    let Some(value) = authorization else {
        return Ok(None);
    };
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Rejection::Malformed(format!(
            "the scheme `{}` is not `Bearer`",
            scheme.chars().take(20).collect::<String>()
        )));
    }
    let token = token.trim();
    let b64token = !token.is_empty()
        && token.trim_end_matches('=').bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        });
    if b64token {
        Ok(Some(token))
    } else {
        Err(Rejection::Malformed(
            "the token is empty or holds characters a bearer token cannot (RFC 6750 §2.1)".into(),
        ))
    }
}

/// `s` as an RFC 7230 quoted-string body: visible ASCII and spaces, `"` and `\` escaped, the
/// rest dropped.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().take(200) {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OAuthConfig {
        OAuthConfig::parse(
            r#"{"resource": "http://127.0.0.1:8787/mcp", "issuers": [{"issuer": "http://127.0.0.1:9",
               "scopes": ["mcp:tools", "mcp:admin"], "principal": {"type": "Agent", "claim": "sub"}}]}"#,
            "t",
        )
        .unwrap()
    }

    #[test]
    fn each_refusal_has_its_challenge() {
        let c = config();
        let base = "Bearer resource_metadata=\"http://127.0.0.1:8787/.well-known/oauth-protected-resource/mcp\"";
        assert_eq!(
            www_authenticate(&c, &Rejection::Missing),
            format!("{base}, scope=\"mcp:admin mcp:tools\"")
        );
        let invalid = www_authenticate(&c, &Rejection::InvalidToken("bad \"sig\"\n".into()));
        assert!(
            invalid.starts_with(&format!(
                "{base}, error=\"invalid_token\", error_description=\""
            )),
            "{invalid}"
        );
        assert!(invalid.contains("bad \\\"sig\\\""), "{invalid}");
        assert!(!invalid.contains('\n'));
        let scope = www_authenticate(
            &c,
            &Rejection::InsufficientScope {
                required: vec!["mcp:admin".into()],
            },
        );
        assert!(scope.contains("error=\"insufficient_scope\""), "{scope}");
        assert!(scope.ends_with("scope=\"mcp:admin mcp:tools\""), "{scope}");
        assert_eq!(
            www_authenticate(&c, &Rejection::IssuerUnavailable("down".into())),
            base
        );
    }

    #[test]
    fn bearer_values() {
        assert_eq!(bearer_token(None), Ok(None));
        assert_eq!(
            bearer_token(Some("Bearer abc.DEF-_~+/==")),
            Ok(Some("abc.DEF-_~+/=="))
        );
        assert_eq!(bearer_token(Some("bearer  abc ")), Ok(Some("abc")));
        for bad in [
            "Basic abc",
            "Bearer",
            "Bearer ",
            "Bearer a b",
            "Bearer a\"b",
            "Token x",
        ] {
            assert!(bearer_token(Some(bad)).is_err(), "{bad}");
        }
    }
}
