//! Rust identifiers for registry names: tool modules, `ToolId` variants, action markers. The
//! names themselves, and the rule that they exist and are distinct, are
//! [`escepine_registry::rust_names`]'s.

use proc_macro2::{Ident, Span};

use super::error::BuildError;
use escepine_registry::record::ToolRecord;
use escepine_registry::rust_names::{self, action_marker, clashes, upper_camel};

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
    /// Names for `records`, or the clashes and unusable names found (which a loaded registry
    /// never has: registration applies the same rules).
    pub fn new(records: &[&ToolRecord]) -> Result<Self, BuildError> {
        let mut problems = Vec::new();
        let mut tools = Vec::new();
        for r in records {
            let id = r.tool_id();
            if let Some(problem) = rust_names::tool_id_problem(id) {
                problems.push(format!(
                    "{}: {problem}; rename the tool",
                    r.source().display()
                ));
                continue;
            }
            match (ident(id), ident(&upper_camel(id))) {
                (Ok(module), Ok(variant)) => tools.push(ToolName { module, variant }),
                (Err(e), _) | (_, Err(e)) => problems.push(format!(
                    "{}: tool id {e}; rename the tool",
                    r.source().display()
                )),
            }
        }
        for (camel, ids) in clashes(
            records
                .iter()
                .map(|r| (upper_camel(r.tool_id()), r.tool_id())),
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
    let n = rust_names::ident(name)?;
    Ok(if n.raw {
        Ident::new_raw(&n.name, Span::call_site())
    } else {
        Ident::new(&n.name, Span::call_site())
    })
}

/// The marker type of an action id.
pub(crate) fn action_ident(id: &str) -> Result<Ident, BuildError> {
    ident(&action_marker(id)).map_err(|e| BuildError::Name {
        message: format!("Cedar action `{id}`: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_become_raw_and_specials_fail() {
        assert_eq!(ident("type").map(|i| i.to_string()), Ok("r#type".into()));
        assert_eq!(ident("scrape").map(|i| i.to_string()), Ok("scrape".into()));
        assert!(ident("self").is_err());
        assert!(action_ident("crate").is_err());
        assert_eq!(
            action_ident("page-read").map(|i| i.to_string()).ok(),
            Some("page_read".into())
        );
    }
}
