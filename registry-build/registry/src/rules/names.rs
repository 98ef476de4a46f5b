//! The naming rules: tool ids, action-group names and secret names.

use crate::rule::Rule;

/// Tool ids reserved for the class action groups (`read-only` becomes the marker `read_only`)
/// and for the generated `Action::"approve"` (and the MCP tool of that name).
pub const RESERVED_IDS: [&str; 4] = ["read_only", "compensatable", "supersede", "approve"];
/// The class action groups, which a tool joins through its side-effect class.
pub const CLASS_GROUPS: [&str; 3] = ["read-only", "compensatable", "supersede"];

/// Whether `s` matches `^[a-z][a-z0-9_]*$` (tool ids, SOP ids, SOP state names).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Why `id` cannot be a tool id (`tool-id/pattern` or `tool-id/reserved`), if it cannot.
pub fn tool_id_problem(id: &str) -> Option<(Rule, String)> {
    if !is_identifier(id) {
        Some((
            Rule::ToolIdPattern,
            format!("the tool id `{id}` does not match ^[a-z][a-z0-9_]*$"),
        ))
    } else if id == "approve" {
        Some((
            Rule::ToolIdReserved,
            format!("`{id}` is reserved: it names the action that approves waiting calls"),
        ))
    } else if RESERVED_IDS.contains(&id) {
        Some((
            Rule::ToolIdReserved,
            format!("`{id}` is reserved: it names a class action group"),
        ))
    } else {
        None
    }
}

/// Why `g` cannot name an action group of a tool, if it cannot.
pub fn group_problem(g: &str) -> Option<String> {
    let valid = g.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && g.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !valid {
        Some(format!(
            "the group name `{g}` does not match ^[a-z][a-z0-9_-]*$"
        ))
    } else if g == "approve" {
        Some(format!(
            "`{g}` is reserved: it names the action that approves waiting calls"
        ))
    } else if CLASS_GROUPS.contains(&g) || RESERVED_IDS.contains(&g) {
        Some(format!(
            "`{g}` is a class group; the tool joins its class group through `side_effect_class`"
        ))
    } else {
        None
    }
}

/// Whether `n` is a secret name: `^[A-Z][A-Z0-9_]*$`, at most 128 bytes, not `ESCEPINE_…`.
pub fn is_secret_name(n: &str) -> bool {
    n.len() <= 128
        && n.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && n.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !n.starts_with("ESCEPINE_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_ids() {
        assert_eq!(tool_id_problem("web_search"), None);
        assert_eq!(
            tool_id_problem("Web").map(|p| p.0),
            Some(Rule::ToolIdPattern)
        );
        assert_eq!(
            tool_id_problem("9a").map(|p| p.0),
            Some(Rule::ToolIdPattern)
        );
        assert_eq!(
            tool_id_problem("read_only").map(|p| p.0),
            Some(Rule::ToolIdReserved)
        );
    }

    #[test]
    fn groups_and_secrets() {
        assert_eq!(group_problem("web-read"), None);
        assert!(group_problem("read-only").is_some_and(|p| p.contains("class group")));
        assert!(group_problem("Web").is_some_and(|p| p.contains("does not match")));
        assert!(is_secret_name("X_API_KEY"));
        assert!(!is_secret_name("ESCEPINE_TOKEN"));
        assert!(!is_secret_name("sk-live-123"));
    }
}
