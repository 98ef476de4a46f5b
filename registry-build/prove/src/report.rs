//! What a proof run found: one outcome per property and request environment.

use std::fmt;

use serde_json::{json, Value};

/// A property proved for one request environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Property {
    /// The policy never errors (`check_never_errors`): no request makes its condition fail
    /// to evaluate, so it never drops out of a decision silently.
    NeverErrors {
        /// The policy id.
        policy: String,
    },
    /// The enforced set implies the invariant's set: every request it permits, the invariant
    /// permits (`check_implies(enforced, invariant)`).
    Invariant {
        /// The invariant's file name (`no-linkedin-page-reads.cedar`).
        name: String,
    },
    /// The enforced set implies the old one: it only restricts (`check_implies(new, old)`).
    OnlyRestricts {
        /// The old policies directory, as given.
        old: String,
    },
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NeverErrors { policy } => write!(f, "never-errors {policy}"),
            Self::Invariant { name } => write!(f, "invariant {name}"),
            Self::OnlyRestricts { old } => write!(f, "restricts {old}"),
        }
    }
}

/// A request environment of the schema: a principal type, an action and a resource type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestEnvironment {
    /// The principal type (`Agent`).
    pub principal: String,
    /// The action (`Action::"web_fetch_exa"`).
    pub action: String,
    /// The resource type (`Tool`).
    pub resource: String,
}

impl fmt::Display for RequestEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, {}, {}", self.principal, self.action, self.resource)
    }
}

/// One property for one request environment: what a proof step proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The property.
    pub property: Property,
    /// The request environment.
    pub env: RequestEnvironment,
}

impl fmt::Display for Step {
    /// `<property> for <env>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} for {}", self.property, self.env)
    }
}

/// A concrete request on which a property fails, recovered from the solver's model.
#[derive(Debug, Clone, PartialEq)]
pub struct Counterexample {
    /// The principal (`Agent::"…"`).
    pub principal: String,
    /// The action (`Action::"…"`).
    pub action: String,
    /// The resource (`Tool::"…"`).
    pub resource: String,
    /// The context, as Cedar's JSON (`{"input": {…}, "url": {…}}`).
    pub context: Value,
    /// The entities the request is evaluated against, as Cedar's entities JSON.
    pub entities: Value,
}

impl Counterexample {
    /// The counterexample as one JSON object (`principal`, `action`, `resource`, `context`,
    /// `entities`).
    pub fn to_json(&self) -> Value {
        json!({
            "principal": self.principal,
            "action": self.action,
            "resource": self.resource,
            "context": self.context,
            "entities": self.entities,
        })
    }
}

/// Whether a property held.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Proved for every well-formed request of the environment.
    Proved,
    /// Fails; the request that shows it.
    Failed(Box<Counterexample>),
}

/// One property for one request environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The property.
    pub property: Property,
    /// The request environment.
    pub env: RequestEnvironment,
    /// Whether it held.
    pub verdict: Verdict,
}

impl Outcome {
    /// The counterexample, when the property fails.
    pub fn counterexample(&self) -> Option<&Counterexample> {
        match &self.verdict {
            Verdict::Proved => None,
            Verdict::Failed(c) => Some(c),
        }
    }
}

impl fmt::Display for Outcome {
    /// `proved: <property> for <env>`, or `failed: <property> for <env>` and, on the next line,
    /// `counterexample: <JSON>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.verdict {
            Verdict::Proved => write!(f, "proved: {} for {}", self.property, self.env),
            Verdict::Failed(c) => write!(
                f,
                "failed: {} for {}\ncounterexample: {}",
                self.property,
                self.env,
                c.to_json()
            ),
        }
    }
}

/// Every outcome of a proof run, in environment then property order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The outcomes.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// Whether every property was proved.
    pub fn all_proved(&self) -> bool {
        self.failures().next().is_none()
    }

    /// The outcomes that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Outcome> {
        self.outcomes
            .iter()
            .filter(|o| matches!(o.verdict, Verdict::Failed(_)))
    }

    /// `N proved, M failed`.
    pub fn summary(&self) -> String {
        let failed = self.failures().count();
        format!("{} proved, {failed} failed", self.outcomes.len() - failed)
    }
}
