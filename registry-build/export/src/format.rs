//! The formats an export writes, why one fails, and the name rule every provider's check
//! shares: below the provider modules, which all use them.

use std::fmt;

/// The ecosystems `escepine export` writes tool definitions for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Model Context Protocol `tools/list` entries.
    Mcp,
    /// OpenAI function tools in strict mode (Responses API shape).
    OpenAi,
    /// Anthropic Messages API tools.
    Anthropic,
    /// Gemini function declarations.
    Gemini,
}

impl Format {
    /// Every format, in command-line order.
    pub const ALL: [Format; 4] = [Self::Mcp, Self::OpenAi, Self::Anthropic, Self::Gemini];

    /// The command-line spelling (`--format <this>`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
        }
    }

    /// What the format's definitions are, in a phrase (the command line's help for it).
    pub const fn summary(self) -> &'static str {
        match self {
            Self::Mcp => "Model Context Protocol `tools/list` entries",
            Self::OpenAi => "OpenAI function tools in strict mode (Responses API shape)",
            Self::Anthropic => "Anthropic Messages API tools",
            Self::Gemini => "Gemini function declarations",
        }
    }

    /// The provider's name, for messages.
    pub const fn provider(self) -> &'static str {
        match self {
            Self::Mcp => "MCP",
            Self::OpenAi => "OpenAI",
            Self::Anthropic => "Anthropic",
            Self::Gemini => "Gemini",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.provider())
    }
}

/// Why a record cannot be exported faithfully for a provider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// The tool id breaks the provider's documented tool-name rule.
    #[error("{format}: tool `{tool}`: its name breaks {format}'s tool-name rule `{rule}`")]
    ToolName {
        /// The target format.
        format: Format,
        /// The tool id.
        tool: String,
        /// The rule, as the provider states it.
        rule: &'static str,
    },
    /// A parameter (input property) name breaks the provider's rule.
    #[error("{format}: tool `{tool}`: the parameter name {name:?} (at {pointer}) breaks {format}'s parameter-name rule `{rule}`; rename the property in the record")]
    ParameterName {
        /// The target format.
        format: Format,
        /// The tool id.
        tool: String,
        /// The offending property name.
        name: String,
        /// JSON pointer of the property in the input schema.
        pointer: String,
        /// The rule, as the provider states (or enforces) it.
        rule: &'static str,
    },
    /// The exported schema exceeds a size limit the provider documents.
    #[error("{format}: tool `{tool}`: {detail}")]
    Limit {
        /// The target format.
        format: Format,
        /// The tool id.
        tool: String,
        /// Which limit, and by how much.
        detail: String,
    },
    /// A part of the input schema the provider's schema language cannot express at all.
    #[error("{format}: tool `{tool}`: at {pointer}: {detail}")]
    Inexpressible {
        /// The target format.
        format: Format,
        /// The tool id.
        tool: String,
        /// JSON pointer into the input schema.
        pointer: String,
        /// What cannot be expressed.
        detail: String,
    },
    /// Several records failed; every problem, one per line.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several(Vec<ExportError>),
}

impl ExportError {
    /// The individual problems (one, or those of [`ExportError::Several`]).
    pub fn problems(&self) -> Vec<&ExportError> {
        match self {
            Self::Several(all) => all.iter().flat_map(ExportError::problems).collect(),
            other => vec![other],
        }
    }
}

/// Whether `name` matches `^[<first>][<rest>]{min-1,max-1}$`-style rules: `1..=max` characters,
/// all accepted by `rest`, the first also by `first`.
pub(crate) fn name_fits(
    name: &str,
    max: usize,
    first: impl Fn(char) -> bool,
    rest: impl Fn(char) -> bool,
) -> bool {
    let n = name.chars().count();
    (1..=max).contains(&n) && name.chars().next().is_some_and(&first) && name.chars().all(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        assert!(name_fits("web_search", 64, word, word));
        assert!(!name_fits("", 64, word, word));
        assert!(!name_fits(&"a".repeat(65), 64, word, word));
        assert!(!name_fits("a.b", 64, word, word));
    }

    #[test]
    fn several_flattens() {
        let e = ExportError::Several(vec![
            ExportError::Limit {
                format: Format::OpenAi,
                tool: "a".into(),
                detail: "x".into(),
            },
            ExportError::Limit {
                format: Format::OpenAi,
                tool: "b".into(),
                detail: "y".into(),
            },
        ]);
        assert_eq!(e.problems().len(), 2);
        assert_eq!(e.to_string(), "OpenAI: tool `a`: x\nOpenAI: tool `b`: y");
    }
}
