//! The protected resource metadata (RFC 9728): what a client fetches, from the URL of a `401`'s
//! `resource_metadata`, to learn which authorization servers issue tokens for this resource.

use serde_json::{json, Value};

use crate::config::OAuthConfig;

/// The well-known path of the metadata.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata document: `resource`, `authorization_servers` (the configured issuers),
/// `scopes_supported` (every scope some issuer requires, when any), `bearer_methods_supported`
/// (`header` only: a token in a query string or a form is never read), `resource_name`.
pub fn metadata_document(config: &OAuthConfig) -> Value {
    let mut doc = json!({
        "resource": config.resource.as_str(),
        "authorization_servers": config.issuers.iter().map(|i| i.issuer.as_str()).collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
        "resource_name": "Escepine",
    });
    let scopes = config.scopes();
    if let (false, Some(map)) = (scopes.is_empty(), doc.as_object_mut()) {
        map.insert("scopes_supported".into(), json!(scopes));
    }
    doc
}

/// The resource's path, without a trailing slash (empty for the root).
fn resource_path(config: &OAuthConfig) -> String {
    config.resource.path().trim_end_matches('/').to_string()
}

/// Where the metadata is published for this resource (RFC 9728 §3.1): the well-known path
/// inserted between the resource's origin and its path.
pub fn metadata_url(config: &OAuthConfig) -> String {
    let mut url = config.resource.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(&format!("{WELL_KNOWN}{}", resource_path(config)));
    url.to_string()
}

/// The paths the metadata is served at: the path-suffixed form of [`metadata_url`] and the bare
/// well-known path (for clients that try the root first), without duplicates.
pub fn metadata_paths(config: &OAuthConfig) -> Vec<String> {
    let suffixed = format!("{WELL_KNOWN}{}", resource_path(config));
    let mut paths = vec![suffixed];
    if paths[0] != WELL_KNOWN {
        paths.push(WELL_KNOWN.to_string());
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(resource: &str, scopes: &str) -> OAuthConfig {
        OAuthConfig::parse(
            &format!(
                r#"{{"resource": "{resource}", "issuers": [{{"issuer": "https://idp.example.com",
                   "scopes": {scopes}, "principal": {{"type": "Agent", "claim": "sub"}}}}]}}"#
            ),
            "t",
        )
        .unwrap()
    }

    #[test]
    fn the_metadata_names_the_resource_and_its_issuers() {
        let c = config(
            "https://tools.example.com/mcp",
            r#"["mcp:tools", "mcp:tools"]"#,
        );
        let doc = metadata_document(&c);
        assert_eq!(doc["resource"], "https://tools.example.com/mcp");
        assert_eq!(
            doc["authorization_servers"],
            json!(["https://idp.example.com"])
        );
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert_eq!(
            metadata_url(&c),
            "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_paths(&c),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        let root = config("http://127.0.0.1:8787", "[]");
        assert_eq!(
            metadata_paths(&root),
            ["/.well-known/oauth-protected-resource"]
        );
        assert!(metadata_document(&root).get("scopes_supported").is_none());
    }
}
