//! What an import reads and decides: the tools a server listed, a decision left to the user,
//! why an import failed, and its fixed defaults. Below the modules that draft and list.

use std::time::Duration;

use serde_json::Value;

/// The placeholder `timeout_ms` of a draft.
pub const DRAFT_TIMEOUT_MS: u64 = 30_000;

/// The folder of `OUT` that holds the drafts needing a decision (`escepine check --records OUT`
/// reads only the files directly in `OUT`).
pub const NEEDS_DECISION_DIR: &str = "needs-decision";

/// Why the server's tools could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// No command was given.
    #[error("no server command given (escepine import mcp --out DIR -- <command …>)")]
    NoCommand,
    /// The server could not be started.
    #[error("cannot start `{command}`: {why}")]
    Spawn {
        /// The program.
        command: String,
        /// Why.
        why: String,
    },
    /// The MCP session failed (the server's stderr tail quoted, if it wrote any).
    #[error("the MCP server `{command}`: {why}")]
    Session {
        /// The program.
        command: String,
        /// What failed.
        why: String,
    },
    /// The server did not answer in time.
    #[error("the MCP server `{command}` did not list its tools within {timeout:?}")]
    TimedOut {
        /// The program.
        command: String,
        /// The bound.
        timeout: Duration,
    },
}

/// What the server said about itself and its tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTools {
    /// `serverInfo.name`, when given.
    pub name: Option<String>,
    /// `serverInfo.version`, when given.
    pub version: Option<String>,
    /// Every tool of `tools/list`, as the server wrote it.
    pub tools: Vec<Value>,
}

impl ServerTools {
    /// The tools a server listed, with the `name` and `version` of its `serverInfo` (from
    /// `initialize` or `server/discover`), when it gave them.
    pub fn new(server_info: Option<&Value>, tools: Vec<Value>) -> Self {
        let field = |k: &str| {
            server_info
                .and_then(|i| i.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Self {
            name: field("name"),
            version: field("version"),
            tools,
        }
    }
}

/// One decision a draft leaves to its reviewer: where, and what to decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The JSON pointer into the draft record.
    pub pointer: String,
    /// What to decide, and the ways to decide it.
    pub what: String,
}

impl Decision {
    /// A decision at `pointer`.
    pub fn new(pointer: &str, what: &str) -> Self {
        Self {
            pointer: pointer.to_string(),
            what: what.to_string(),
        }
    }

    /// The decision as a `$comment` line: `DECIDE <pointer>: <what>`.
    pub fn note(&self) -> String {
        format!("DECIDE {}: {}", self.pointer, self.what)
    }
}
