//! Rust names for registry names: tool modules, `ToolId` variants, action markers.

use proc_macro2::{Ident, Span};

use super::collisions;
use super::error::BuildError;
use crate::record::ToolRecord;

/// Keywords (strict, reserved, and edition-dependent) that need the `r#` prefix.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let",
    "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return",
    "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use",
    "virtual", "where", "while", "yield",
];

/// Names no identifier can take, not even raw.
const UNUSABLE: &[&str] = &["self", "Self", "super", "crate", "_"];

/// Items the generated file defines beside the tool modules.
const TOP_LEVEL: &[&str] = &["actions"];

/// The Rust names of one tool.
#[derive(Debug, Clone)]
pub(crate) struct ToolName {
    /// The module (and client method) name: the tool id, raw if it is a keyword.
    pub module: Ident,
    /// The `ToolId` variant: the tool id in UpperCamelCase.
    pub variant: Ident,
}

/// The Rust names of every tool, in the order given.
#[derive(Debug, Clone)]
pub(crate) struct ToolNames {
    /// One per record.
    pub tools: Vec<ToolName>,
}

impl ToolNames {
    /// Names for `records`, or the clashes and unusable names found.
    pub fn new(records: &[&ToolRecord]) -> Result<Self, BuildError> {
        let mut problems = Vec::new();
        let mut tools = Vec::new();
        for r in records {
            let id = r.tool_id.as_str();
            if TOP_LEVEL.contains(&id) {
                problems.push(format!(
                    "{}: tool id `{id}` clashes with the generated module `{id}`; rename the tool",
                    r.source.display()
                ));
                continue;
            }
            match (ident(id), ident(&upper_camel(id))) {
                (Ok(module), Ok(variant)) => tools.push(ToolName { module, variant }),
                (Err(e), _) | (_, Err(e)) => problems.push(format!(
                    "{}: tool id {e}; rename the tool",
                    r.source.display()
                )),
            }
        }
        for (camel, ids) in collisions(
            records
                .iter()
                .map(|r| (upper_camel(&r.tool_id), r.tool_id.as_str())),
        ) {
            problems.push(format!(
                "tool ids {} all map to the Rust name `{camel}` (`ToolId::{camel}`); rename one",
                ids.iter()
                    .map(|i| format!("`{i}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if problems.is_empty() {
            Ok(Self { tools })
        } else {
            Err(BuildError::Name {
                message: problems.join("\n"),
            })
        }
    }
}

/// An identifier for `name` (raw when it is a keyword); an error for a name that is not an
/// identifier or can never be one.
pub(crate) fn ident(name: &str) -> Result<Ident, String> {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("`{name}` is not a Rust identifier"));
    }
    if UNUSABLE.contains(&name) {
        return Err(format!(
            "`{name}` cannot be a Rust name (not even as `r#{name}`)"
        ));
    }
    if KEYWORDS.contains(&name) {
        Ok(Ident::new_raw(name, Span::call_site()))
    } else {
        Ok(Ident::new(name, Span::call_site()))
    }
}

/// `firecrawl_scrape` → `FirecrawlScrape`; `read-only` → `ReadOnly`.
pub(crate) fn upper_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        if c == '_' || c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The marker-type name of a Cedar action id: `-` becomes `_` (`read-only` → `read_only`).
pub(crate) fn action_marker(id: &str) -> String {
    id.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_become_raw_and_specials_fail() {
        assert_eq!(ident("type").unwrap().to_string(), "r#type");
        assert_eq!(ident("scrape").unwrap().to_string(), "scrape");
        assert!(ident("self").is_err());
        assert!(ident("crate").is_err());
        assert!(ident("a-b").is_err());
        assert!(ident("1a").is_err());
    }

    #[test]
    fn camel_case() {
        assert_eq!(upper_camel("firecrawl_scrape"), "FirecrawlScrape");
        assert_eq!(upper_camel("web_search2"), "WebSearch2");
        assert_eq!(upper_camel("a_2b"), "A2b");
        assert_eq!(action_marker("page-read"), "page_read");
    }
}
