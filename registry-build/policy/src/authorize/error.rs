//! [`AuthorizeError`]: why the authorizer of a registry cannot be built.

use crate::cedar::types::TypingError;

/// Why an [`Authorizer`](super::Authorizer) cannot be built (a start-up error, never a per-call one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorizeError {
    /// The entities do not parse or do not conform to the schema.
    #[error("the entities do not conform to the Cedar schema: {0}")]
    Entities(String),
    /// A tool's action is not an action of the schema.
    #[error(
        "tool `{tool}`: its action `Action::\"{action}\"` is not declared in the Cedar schema"
    )]
    UnknownAction {
        /// The tool id.
        tool: String,
        /// The action id.
        action: String,
    },
    /// A tool's input schema has no Cedar type.
    #[error("tool `{tool}`: {source}")]
    InputType {
        /// The tool id.
        tool: String,
        /// Why.
        #[source]
        source: TypingError,
    },
    /// A name that is not a valid Cedar entity type or uid.
    #[error("`{name}` is not a valid Cedar name: {message}")]
    Name {
        /// The name.
        name: String,
        /// What Cedar said.
        message: String,
    },
    /// A policy could not join a tool's slice.
    #[error("tool `{tool}`: slicing the policy set failed: {message}")]
    Slice {
        /// The tool id.
        tool: String,
        /// What failed.
        message: String,
    },
}
