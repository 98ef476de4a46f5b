//! What a governed call ends with, as data: the [`CallReport`] of a call that got past its
//! intent, its [`CallOutcome`], and [`NoOutput`], why a caller that wants only the output did
//! not get one.

use std::fmt;

use serde_json::Value;

use crate::error::CallError;
use crate::kind::CallKind;
use escepine_ledger::entry::Committed;
use escepine_ledger::record::CallResult;
use escepine_policy::authorize::CALL_DEFAULT_DENY;
use escepine_policy::gate::violation_list;
use escepine_policy::gate::Violation;

/// How a call that got past its intent ended; recorded in its outcome entry before the call
/// returned.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The output, scrubbed of the call's secrets and passed through the output gate.
    Ok(Value),
    /// Cedar denied the call; nothing ran, nothing was retried.
    Denied {
        /// The determining policies (empty for a default deny).
        policy_ids: Vec<String>,
        /// Evaluation errors, the denied element, … (scrubbed).
        reasons: Vec<String>,
    },
    /// Every attempt failed, or a permanent failure stopped the retries.
    Failed {
        /// The last attempt's error (scrubbed).
        last_error: String,
    },
    /// The last attempt outlived the tool's timeout.
    TimedOut {
        /// The tool's per-attempt bound.
        timeout_ms: u64,
    },
    /// The output violates the output schema: recorded (its hash), never returned.
    OutputRejected {
        /// The violations (their messages may quote the rejected output).
        violations: Vec<Violation>,
    },
    /// A budget of the call's principal and tool had no room; nothing ran, nothing was
    /// retried.
    BudgetExceeded {
        /// The budget's id.
        budget: String,
    },
    /// Allowed only with an approver's approval: the intent is recorded (decision
    /// `awaiting-approval`), nothing ran, and no outcome is recorded until an approver
    /// approves ([`crate::Runtime::approve`]) or rejects it, or it expires.
    AwaitingApproval {
        /// Until when it waits, Unix milliseconds.
        expires_at_ms: u64,
        /// The permits that allowed it with approval.
        policy_ids: Vec<String>,
        /// Their `@approval` reasons (the empty ones left out).
        reasons: Vec<String>,
    },
    /// An approver rejected the waiting call, or its requester withdrew it; nothing ran.
    Rejected {
        /// The approver (`Agent::"id"`), or the requester that withdrew it.
        approver: String,
        /// Whether the requester withdrew it (an MCP client cancelled its task).
        withdrawn: bool,
    },
    /// The call waited past its expiry; nothing ran.
    Expired {
        /// When its wait ended, Unix milliseconds.
        expired_at_ms: u64,
    },
}

impl CallOutcome {
    /// The outcome's kind.
    pub const fn kind(&self) -> CallKind {
        match self {
            Self::Ok(_) => CallKind::Ok,
            Self::Denied { .. } => CallKind::Denied,
            Self::Failed { .. } => CallKind::Failed,
            Self::TimedOut { .. } => CallKind::TimedOut,
            Self::OutputRejected { .. } => CallKind::OutputRejected,
            Self::BudgetExceeded { .. } => CallKind::BudgetExceeded,
            Self::AwaitingApproval { .. } => CallKind::AwaitingApproval,
            Self::Rejected { .. } => CallKind::Rejected,
            Self::Expired { .. } => CallKind::Expired,
        }
    }

    /// What the ledger records as the result; `None` for a call that waits for approval (it
    /// has no outcome yet).
    pub const fn result(&self) -> Option<CallResult> {
        Some(match self {
            Self::Ok(_) => CallResult::Ok,
            Self::Denied { .. } => CallResult::Denied,
            Self::Failed { .. } => CallResult::Failed,
            Self::TimedOut { .. } => CallResult::TimedOut,
            Self::OutputRejected { .. } => CallResult::OutputRejected,
            Self::BudgetExceeded { .. } => CallResult::BudgetExceeded,
            Self::Rejected { .. } => CallResult::Rejected,
            Self::Expired { .. } => CallResult::Expired,
            Self::AwaitingApproval { .. } => return None,
        })
    }
}

/// A call that got past its intent: where its evidence is, and how it ended.
///
/// Only the runtime makes reports (the fields are private): a report names entries that were
/// committed to the ledger.
#[derive(Debug, Clone)]
pub struct CallReport {
    pub(crate) call_id: String,
    pub(crate) idempotency_key: String,
    pub(crate) outcome: CallOutcome,
    pub(crate) intent: Committed,
    pub(crate) outcome_entry: Option<Committed>,
    pub(crate) attempts: u32,
}

impl CallReport {
    /// The call id (its intent and outcome entries carry it).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The idempotency key the call used.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// How the call ended.
    pub fn outcome(&self) -> &CallOutcome {
        &self.outcome
    }

    /// The outcome's kind.
    pub fn kind(&self) -> CallKind {
        self.outcome.kind()
    }

    /// The gated output, for an [`CallOutcome::Ok`] call.
    pub fn output(&self) -> Option<&Value> {
        match &self.outcome {
            CallOutcome::Ok(v) => Some(v),
            _ => None,
        }
    }

    /// The intent entry.
    pub fn intent_entry(&self) -> &Committed {
        &self.intent
    }

    /// The outcome entry (its hash is what an SOP step records); `None` for a call that
    /// waits for approval.
    pub fn outcome_entry(&self) -> Option<&Committed> {
        self.outcome_entry.as_ref()
    }

    /// Attempts made (0 for a denied call).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The outcome, the report's evidence dropped.
    pub fn into_outcome(self) -> CallOutcome {
        self.outcome
    }

    /// The output of an [`CallOutcome::Ok`] call; any other end as an error holding the
    /// report.
    ///
    /// # Errors
    /// [`NoOutput::Ended`] for every outcome but `Ok`.
    pub fn into_output(self) -> Result<Value, NoOutput> {
        match self.outcome {
            CallOutcome::Ok(v) => Ok(v),
            _ => Err(NoOutput::Ended(Box::new(self))),
        }
    }
}

/// The outcome in words: `ok`, `denied by policy [p]: reasons`, `failed after 2 attempt(s):
/// …`, `timed out after 2 attempt(s) of 50 ms each`, `output rejected: …`, `budget `b`
/// exceeded: nothing ran`.
impl fmt::Display for CallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let attempts = self.attempts;
        match &self.outcome {
            CallOutcome::Ok(_) => f.write_str("ok"),
            CallOutcome::Denied {
                policy_ids,
                reasons,
            } => f.write_str(&denied_message(policy_ids, reasons)),
            CallOutcome::Failed { last_error } => write!(
                f,
                "failed after {attempts} attempt(s): {last_error} (call {}: {EVIDENCE})",
                self.call_id
            ),
            CallOutcome::TimedOut { timeout_ms } => write!(
                f,
                "timed out after {attempts} attempt(s) of {timeout_ms} ms each (call {}: \
                 {EVIDENCE})",
                self.call_id
            ),
            CallOutcome::OutputRejected { violations } => {
                write!(f, "output rejected: {}", violation_list(violations))
            }
            CallOutcome::BudgetExceeded { budget } => f.write_str(&budget_message(budget)),
            CallOutcome::AwaitingApproval {
                expires_at_ms,
                policy_ids,
                reasons,
            } => {
                write!(
                    f,
                    "call {} awaits approval (policy [{}]) until {}",
                    self.call_id,
                    policy_ids.join(", "),
                    escepine_ledger::entry::iso8601(*expires_at_ms)
                )?;
                if !reasons.is_empty() {
                    write!(f, ": {}", reasons.join("; "))?;
                }
                Ok(())
            }
            CallOutcome::Rejected {
                approver,
                withdrawn: false,
            } => f.write_str(&rejected_message(approver)),
            CallOutcome::Rejected {
                approver,
                withdrawn: true,
            } => f.write_str(&withdrawn_message(approver)),
            CallOutcome::Expired { expired_at_ms } => f.write_str(&expired_message(*expired_at_ms)),
        }
    }
}

/// Where a failed call's evidence is: the attempts the ledger recorded under its call id.
const EVIDENCE: &str = "each attempt's error, stderr and egress requests and refusals are in the \
                        ledger, `escepine ledger show --call <id>`";

/// `rejected by <approver>: nothing ran`.
pub(crate) fn rejected_message(approver: &str) -> String {
    format!("rejected by {approver}: nothing ran")
}

/// `withdrawn by its requester <principal>: nothing ran`.
pub(crate) fn withdrawn_message(requester: &str) -> String {
    format!("withdrawn by its requester {requester}: nothing ran")
}

/// `the approval expired at <time>: nothing ran`.
pub(crate) fn expired_message(expired_at_ms: u64) -> String {
    format!(
        "the approval expired at {}: nothing ran",
        escepine_ledger::entry::iso8601(expired_at_ms)
    )
}

/// `budget `<id>` exceeded: nothing ran`.
pub(crate) fn budget_message(budget: &str) -> String {
    format!("budget `{budget}` exceeded: nothing ran")
}

/// `denied by policy [a, b]: reason; reason` (the reasons part only when there are some); a
/// default deny (no determining policy) says `denied: no policy permits it`.
pub(crate) fn denied_message(policy_ids: &[String], reasons: &[String]) -> String {
    let mut m = if policy_ids.is_empty() {
        "denied: no policy permits it".to_string()
    } else {
        format!("denied by policy [{}]", policy_ids.join(", "))
    };
    // The headline already says what a default deny of the call itself says.
    let reasons: Vec<&str> = reasons
        .iter()
        .map(String::as_str)
        .filter(|r| !(policy_ids.is_empty() && *r == CALL_DEFAULT_DENY))
        .collect();
    if !reasons.is_empty() {
        m.push_str(": ");
        m.push_str(&reasons.join("; "));
    }
    m
}

/// Why a call gave no output: refused before its intent, ended with another outcome than
/// [`CallOutcome::Ok`], or (typed client) an output its type could not read. What
/// [`CallReport::into_output`] and the typed client return.
#[derive(Debug, thiserror::Error)]
pub enum NoOutput {
    /// Refused before the intent.
    #[error(transparent)]
    Refused(#[from] CallError),
    /// The call ended with an outcome other than `Ok` (the report holds it).
    #[error("{0}")]
    Ended(Box<CallReport>),
    /// The typed client could not read the gated output as its output type (the call is
    /// recorded as `ok`).
    #[error("the typed client cannot read the output of call {call_id}: {message}")]
    OutputType {
        /// The call.
        call_id: String,
        /// The deserialiser's message.
        message: String,
    },
}

impl NoOutput {
    /// The kind: the refusal's, the outcome's, or [`CallKind::ClientMismatch`] for an output
    /// the typed client cannot read.
    pub fn kind(&self) -> CallKind {
        match self {
            Self::Refused(e) => e.kind(),
            Self::Ended(r) => r.kind(),
            Self::OutputType { .. } => CallKind::ClientMismatch,
        }
    }

    /// The report, for a call that got past its intent with another outcome than `Ok`.
    pub fn report(&self) -> Option<&CallReport> {
        match self {
            Self::Ended(r) => Some(r),
            _ => None,
        }
    }

    /// The outcome, for a call that got past its intent with another outcome than `Ok`.
    pub fn outcome(&self) -> Option<&CallOutcome> {
        self.report().map(CallReport::outcome)
    }

    /// The refusal, for a call refused before its intent.
    pub fn refusal(&self) -> Option<&CallError> {
        match self {
            Self::Refused(e) => Some(e),
            _ => None,
        }
    }

    /// The call id, when an intent was recorded.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Self::Refused(_) => None,
            Self::Ended(r) => Some(r.call_id()),
            Self::OutputType { call_id, .. } => Some(call_id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcome: CallOutcome, attempts: u32) -> CallReport {
        let entry = |seq: u64| Committed {
            seq,
            hash: format!("h{seq}"),
        };
        CallReport {
            call_id: "c".into(),
            idempotency_key: "k".into(),
            outcome,
            intent: entry(1),
            outcome_entry: Some(entry(2)),
            attempts,
        }
    }

    #[test]
    fn a_report_gives_its_output_only_when_ok() {
        let ok = report(CallOutcome::Ok(serde_json::json!({"n": 1})), 1);
        assert_eq!(ok.kind(), CallKind::Ok);
        assert_eq!(ok.output(), Some(&serde_json::json!({"n": 1})));
        assert_eq!(ok.into_output().unwrap(), serde_json::json!({"n": 1}));

        let timed_out = report(CallOutcome::TimedOut { timeout_ms: 50 }, 2);
        assert_eq!(
            timed_out.to_string(),
            format!("timed out after 2 attempt(s) of 50 ms each (call c: {EVIDENCE})")
        );
        let err = timed_out.into_output().unwrap_err();
        assert_eq!(err.kind(), CallKind::TimedOut);
        assert_eq!(
            err.report()
                .and_then(|r| r.outcome_entry())
                .map(|e| e.hash.as_str()),
            Some("h2")
        );

        let denied = report(
            CallOutcome::Denied {
                policy_ids: vec!["p".into()],
                reasons: vec!["why".into()],
            },
            0,
        );
        assert_eq!(denied.to_string(), "denied by policy [p]: why");
        let default_deny = report(
            CallOutcome::Denied {
                policy_ids: vec![],
                reasons: vec![],
            },
            0,
        );
        assert_eq!(default_deny.to_string(), "denied: no policy permits it");
        // As the authorizer words it, the call's default deny is not said twice; a URL's is kept.
        let worded = report(
            CallOutcome::Denied {
                policy_ids: vec![],
                reasons: vec![CALL_DEFAULT_DENY.into()],
            },
            0,
        );
        assert_eq!(worded.to_string(), "denied: no policy permits it");
        let url = "element 0 of `/urls` (https://x.test/): no policy permits it";
        let page = report(
            CallOutcome::Denied {
                policy_ids: vec![],
                reasons: vec![CALL_DEFAULT_DENY.into(), url.into()],
            },
            0,
        );
        assert_eq!(
            page.to_string(),
            format!("denied: no policy permits it: {url}")
        );
        assert_eq!(denied.outcome().result(), Some(CallResult::Denied));
    }
}
