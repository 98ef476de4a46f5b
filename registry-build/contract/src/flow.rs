//! Flows: the calls whose history decides what the next one may do.
//!
//! A flow is an SOP run, or any id a direct call names ([`FlowId::named`]); a call that names
//! none belongs to its principal's default flow ([`FlowId::default_of`]), so leaving the id out
//! never escapes a policy on the flow. A flow's [`FlowState`] — the labels that have entered it,
//! the origins it has reached, the tools it has called and how often — is folded from the
//! ledger's entries and given to Cedar as `context.flow`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::principal::Principal;

/// The longest flow id a caller may name.
pub const MAX_FLOW_ID: usize = 128;

/// The prefix of default flow ids, which a named flow may not use.
const DEFAULT_PREFIX: &str = "principal:";

/// The id of a flow.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FlowId(String);

/// A flow id a caller named that cannot be one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowIdError {
    /// The id as given.
    pub id: String,
    /// The rule it breaks.
    pub why: &'static str,
}

impl fmt::Display for FlowIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "flow id {:?}: {}", self.id, self.why)
    }
}

impl std::error::Error for FlowIdError {}

impl FlowId {
    /// A flow a caller names (`--flow`, the `flow` option, `_meta["dev.escepine/flow"]`): 1 to
    /// [`MAX_FLOW_ID`] characters of `A-Z a-z 0-9 . _ : -`, not starting with `principal:`
    /// (the default flows' prefix, so that no caller can name another principal's default
    /// flow).
    ///
    /// # Errors
    /// [`FlowIdError`] naming the rule broken.
    pub fn named(id: &str) -> Result<Self, FlowIdError> {
        let fail = |why| {
            Err(FlowIdError {
                id: id.chars().take(MAX_FLOW_ID + 8).collect(),
                why,
            })
        };
        if id.is_empty() {
            return fail("is empty");
        }
        if id.len() > MAX_FLOW_ID {
            return fail("is longer than 128 characters");
        }
        if !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
        {
            return fail("may hold only A-Z, a-z, 0-9, `.`, `_`, `:` and `-`");
        }
        if id.starts_with(DEFAULT_PREFIX) {
            return fail("starts with `principal:`, which only default flows do");
        }
        Ok(Self(id.to_string()))
    }

    /// The flow of an SOP run: its run id.
    pub fn of_run(run_id: &str) -> Self {
        Self(run_id.to_string())
    }

    /// The default flow of `principal`: `principal:Type::"id"`.
    pub fn default_of(principal: &Principal) -> Self {
        Self(format!("{DEFAULT_PREFIX}{principal}"))
    }

    /// An id read back from the ledger, as recorded (or given to a command that reads one, such
    /// as `escepine flow show`). Not checked: an id a caller names goes through
    /// [`FlowId::named`].
    pub fn recorded(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FlowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a flow holds: what Cedar sees as `context.flow` (`labels`, `origins`, `tools` as sets,
/// `calls` as the number of calls that ran in it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowState {
    /// The labels that have entered the flow and were not declassified since.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub labels: BTreeSet<String>,
    /// The origins (`scheme://host:port`) the flow's calls have reached.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub origins: BTreeSet<String>,
    /// The tools the flow has called, each with how many of its calls ran.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, u64>,
    /// How many calls ran in the flow.
    #[serde(default)]
    pub calls: u64,
}

impl FlowState {
    /// Whether nothing has happened in the flow.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_ids_keep_to_their_alphabet_and_stay_out_of_default_flows() {
        assert_eq!(
            FlowId::named("task-42:a.b_c").map(|f| f.0),
            Ok("task-42:a.b_c".into())
        );
        for bad in [
            "",
            "a b",
            "x/y",
            "é",
            "principal:Agent::\"bob\"",
            &"a".repeat(129),
        ] {
            assert!(FlowId::named(bad).is_err(), "{bad:?} accepted");
        }
        let default = FlowId::default_of(&Principal::agent("bob"));
        assert_eq!(default.as_str(), "principal:Agent::\"bob\"");
        assert!(FlowId::named(default.as_str()).is_err());
    }
}
