//! The policy test file format (`tools/policy-tests/*.json`), closed at every level.
//!
//! ```json
//! {"cases": [{"name": "linkedin sub-domain", "principal": "Agent::\"researcher\"",
//!             "tool": "firecrawl_scrape", "input": {"url": "https://www.linkedin.com/in/x"},
//!             "expect": "deny", "policies": ["page-read-no-linkedin"]}]}
//! ```
//!
//! A case may give the state of the call's flow (`context.flow`; an empty flow otherwise):
//! `"flow": {"labels": ["untrusted-content"], "origins": ["https://a.example:443"],
//! "tools": ["web_search"], "calls": 1}`.

use std::collections::BTreeSet;

use escepine_contract::FlowState;
use serde::Deserialize;
use serde_json::Value;

/// One test file: its cases, run in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestFile {
    /// The cases.
    pub cases: Vec<Case>,
}

/// One case: a call as an agent would make it, and the decision it must get.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// What the case shows; unique in its file, and how failures name it.
    pub name: String,
    /// The principal, `Type::"id"` (`Agent::"researcher"`).
    pub principal: String,
    /// The tool id called.
    pub tool: String,
    /// The payload, as the agent sends it (it must pass the tool's input gate).
    pub input: Value,
    /// Cedar entities JSON (principals, their attributes and parents); none when absent.
    #[serde(default)]
    pub entities: Option<Value>,
    /// The state of the call's flow (`context.flow`); an empty flow when absent.
    #[serde(default)]
    pub flow: Option<FlowCase>,
    /// The decision the call must get.
    pub expect: Expect,
    /// The determining policies the decision must have (compared as a set); not compared when
    /// absent.
    #[serde(default)]
    pub policies: Option<Vec<String>>,
}

/// A flow's state as a case gives it: what `context.flow` holds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowCase {
    /// The labels that have entered the flow.
    #[serde(default)]
    pub labels: BTreeSet<String>,
    /// The origins (`scheme://host:port`) the flow has reached.
    #[serde(default)]
    pub origins: BTreeSet<String>,
    /// The tools the flow has called.
    #[serde(default)]
    pub tools: BTreeSet<String>,
    /// How many calls ran in the flow.
    #[serde(default)]
    pub calls: u64,
}

impl FlowCase {
    /// The state (each tool counted once).
    pub fn state(&self) -> FlowState {
        FlowState {
            labels: self.labels.clone(),
            origins: self.origins.clone(),
            tools: self.tools.iter().map(|t| (t.clone(), 1)).collect(),
            calls: self.calls,
        }
    }
}

/// An expected decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Every request of the call is permitted, without approval.
    Allow,
    /// The call is denied.
    Deny,
    /// The call is allowed only with an approver's approval (a determining permit is
    /// annotated `@approval`).
    AwaitingApproval,
}

impl Expect {
    /// `allow`, `deny` or `awaiting-approval`, as a decision prints.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::AwaitingApproval => crate::cedar::approval::AWAITING_APPROVAL,
        }
    }
}
