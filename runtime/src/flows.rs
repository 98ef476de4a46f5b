//! The flows of a runtime's calls: which flow a call is in, the flow's state before it (what
//! Cedar sees as `context.flow`), and what the call brings into it.
//!
//! The state is folded from the ledger ([`escepine_ledger::flows`]) and kept between calls: each
//! call folds only the entries appended since the last one (by this runtime or by another on the
//! same store), so deriving the state costs the same after ten calls in the flow as after a
//! hundred thousand. A call sees every call of its flow that ended before it was authorized;
//! calls of one flow that run at the same time do not see each other.

use std::sync::Mutex;

use escepine_contract::{FlowId, FlowState, Principal};
use escepine_ledger::error::LedgerError;
use escepine_ledger::flows::{Flow, FlowIndex};
use escepine_ledger::record::FlowEntry;
use escepine_ledger::store::Ledger;
use escepine_registry::record::ToolRecord;

/// The flows folded so far from one ledger.
#[derive(Debug, Default)]
pub(crate) struct FlowBook {
    index: Mutex<FlowIndex>,
}

impl FlowBook {
    /// The state of flow `id` now: the entries appended since the last read folded first.
    pub(crate) fn state(&self, ledger: &dyn Ledger, id: &FlowId) -> Result<FlowState, LedgerError> {
        self.refreshed(ledger, |index| index.state(id))
    }

    /// Flow `id` now, with the calls that brought its labels.
    pub(crate) fn flow(&self, ledger: &dyn Ledger, id: &FlowId) -> Result<Flow, LedgerError> {
        self.refreshed(ledger, |index| index.flow(id))
    }

    /// `read` of the index once the entries appended since the last read are folded.
    fn refreshed<T>(
        &self,
        ledger: &dyn Ledger,
        read: impl FnOnce(&FlowIndex) -> T,
    ) -> Result<T, LedgerError> {
        let mut index = self
            .index
            .lock()
            .map_err(|_| LedgerError::unavailable("the flow index is poisoned"))?;
        index.refresh(ledger)?;
        Ok(read(&index))
    }
}

/// What a call of `record` that ran brings into `flow`: the record's labels, and the origins it
/// reached (`authorized`, those of the URLs Cedar authorized, and a remote endpoint's).
pub(crate) fn entered(
    flow: &FlowId,
    record: &ToolRecord,
    principal: &Principal,
    authorized: &[String],
) -> FlowEntry {
    let labels = record.data_labels();
    let mut all: Vec<String> = labels.output.iter().chain(&labels.reads).cloned().collect();
    all.sort();
    all.dedup();
    let mut origins: Vec<String> = authorized.to_vec();
    if let Some(remote) = &record.endpoint().remote {
        origins.push(remote.url.origin());
    }
    origins.sort();
    origins.dedup();
    FlowEntry {
        flow: flow.clone(),
        tool_id: record.tool_id().to_string(),
        principal: principal.to_string(),
        labels: all,
        origins,
    }
}

/// A request to remove a label from a flow.
#[derive(Debug, Clone)]
pub struct Declassify<'a> {
    /// The flow.
    pub flow: &'a FlowId,
    /// The label to remove.
    pub label: &'a str,
    /// Who asks: a principal Cedar permits `Action::"declassify"` on `Flow::"<flow>"`, never
    /// one whose calls brought the label.
    pub principal: &'a Principal,
    /// The entities an identity provider vouched the principal is a member of.
    pub parents: &'a [Principal],
    /// Why, recorded.
    pub reason: &'a str,
}

/// A declassification recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declassified {
    /// The entry that records it.
    pub entry: escepine_ledger::entry::Committed,
    /// The policies that permitted it.
    pub policy_ids: Vec<String>,
    /// The flow's state after it.
    pub state: FlowState,
}

/// Why a declassification was refused (nothing recorded) or could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum DeclassifyError {
    /// The flow does not hold the label.
    #[error("flow `{flow}` does not hold the label `{label}`")]
    NotHeld {
        /// The flow.
        flow: String,
        /// The label.
        label: String,
    },
    /// The principal's own calls brought the label into the flow.
    #[error(
        "`{principal}` may not declassify `{label}` in flow `{flow}`: its own call {call_id} \
         brought the label in"
    )]
    OwnLabel {
        /// The principal.
        principal: String,
        /// The label.
        label: String,
        /// The flow.
        flow: String,
        /// A call of the principal that brought the label.
        call_id: String,
    },
    /// Cedar did not permit it.
    #[error("declassification refused: {}", .reasons.join("; "))]
    Denied {
        /// The determining policies.
        policy_ids: Vec<String>,
        /// Why.
        reasons: Vec<String>,
    },
    /// The reason is empty.
    #[error("a declassification needs a reason (`--reason`)")]
    NoReason,
    /// The ledger could not be read or written.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl DeclassifyError {
    /// Whether the declassification was refused (as opposed to the ledger failing).
    pub fn refused(&self) -> bool {
        !matches!(self, Self::Ledger(_))
    }
}

/// Remove `request.label` from `request.flow`, whose state folded from `ledger` is `flow`,
/// when `authorizer` permits `request.principal` and none of its calls brought the label: the
/// declassification is appended to `ledger` and takes effect for every call authorized after
/// it. A runtime passes the flow it keeps ([`crate::Runtime::declassify`]); a reader of the
/// ledger alone folds it first ([`FlowIndex`]).
///
/// # Errors
/// [`DeclassifyError`]: refused (nothing recorded), or the ledger failed.
pub async fn declassify(
    ledger: &dyn Ledger,
    authorizer: &escepine_policy::authorize::Authorizer,
    flow: Flow,
    request: Declassify<'_>,
) -> Result<Declassified, DeclassifyError> {
    if request.reason.trim().is_empty() {
        return Err(DeclassifyError::NoReason);
    }
    if !flow.state.labels.contains(request.label) {
        return Err(DeclassifyError::NotHeld {
            flow: request.flow.to_string(),
            label: request.label.to_string(),
        });
    }
    let who = request.principal.to_string();
    if let Some(own) = flow
        .sources
        .get(request.label)
        .and_then(|s| s.iter().find(|s| s.principal == who))
    {
        return Err(DeclassifyError::OwnLabel {
            principal: who,
            label: request.label.to_string(),
            flow: request.flow.to_string(),
            call_id: own.call_id.clone(),
        });
    }
    let decision = authorizer.authorize_declassify(
        request.principal,
        request.parents,
        request.flow,
        request.label,
        &flow.state,
    );
    if !decision.allowed() {
        return Err(DeclassifyError::Denied {
            policy_ids: decision.policy_ids().to_vec(),
            reasons: decision.reasons().to_vec(),
        });
    }
    let record = escepine_ledger::record::Declassification {
        flow: request.flow.clone(),
        label: request.label.to_string(),
        principal: who,
        reason: request.reason.to_string(),
        policy_ids: decision.policy_ids().to_vec(),
    };
    let entry = ledger
        .append(escepine_ledger::record::Record::Declassification(record))
        .await?;
    let mut state = flow.state;
    state.labels.remove(request.label);
    Ok(Declassified {
        entry,
        policy_ids: decision.policy_ids().to_vec(),
        state,
    })
}
