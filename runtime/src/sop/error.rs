//! Why the engine could not build, start, drive or resume a run.
//!
//! A step that fails is not an error here: it is recorded, and the step's `on_failure` decides
//! how the run ends ([`super::RunOutcome`]). These errors mean the run could not be driven at
//! all — an SOP that does not fit the registry, a ledger that cannot be written, a journal that
//! cannot be read. A run stopped by one of them is resumable once the cause is fixed.

use crate::approval::ApprovalError;
use escepine_ledger::error::LedgerError;

/// Why the engine could not drive a run.
#[derive(Debug, thiserror::Error)]
pub enum SopRunError {
    /// The SOP does not fit the runtime's registry (an unknown tool, an outcome the tool does not
    /// allow, an undefined state, a constraint or branch schema that does not compile).
    #[error("SOP `{sop}`, state `{state}`: {why}")]
    InvalidSop {
        /// The SOP's id.
        sop: String,
        /// The state concerned.
        state: String,
        /// What is wrong.
        why: String,
    },
    /// The ledger could not be written or read; the run stopped and can be resumed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// An entry of the run read back from the ledger is not what was committed (its content,
    /// its place in the chain, a payload or output hash, or a trusted checkpoint): the run is
    /// not continued, nothing is run or recorded.
    #[error("refusing to resume run `{run_id}`: {source}")]
    Untrusted {
        /// The run.
        run_id: String,
        /// What the check found.
        #[source]
        source: Box<escepine_ledger::trust::UntrustedEntry>,
    },
    /// The ledger holds no run with this id.
    #[error("the ledger holds no run `{0}`")]
    UnknownRun(String),
    /// The run was started with another SOP (or another version of it).
    #[error("run `{run_id}` runs SOP {recorded}; this engine drives {engine}")]
    SopMismatch {
        /// The run.
        run_id: String,
        /// `id@version` recorded at the start of the run.
        recorded: String,
        /// `id@version` of the engine's SOP.
        engine: String,
    },
    /// A run with this id already exists in the ledger.
    #[error("the ledger already holds a run `{0}`")]
    DuplicateRun(String),
    /// The run's entries in the ledger do not form a run this engine can continue.
    #[error("run `{run_id}`, ledger entry {seq}: {why}")]
    Journal {
        /// The run.
        run_id: String,
        /// The entry concerned.
        seq: u64,
        /// What is wrong.
        why: String,
    },
    /// The run's recorded events do not fit the engine's SOP (a state it lacks, say).
    #[error("run `{run_id}`: {why}")]
    Inconsistent {
        /// The run.
        run_id: String,
        /// What does not fit.
        why: String,
    },
    /// A call of the run that waited for approval could not be settled (recorded expired, say).
    #[error("run `{run_id}`, call `{call_id}` awaiting approval: {source}")]
    Approval {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// Why.
        #[source]
        source: ApprovalError,
    },
    /// The run's task ended without an outcome (it panicked or was aborted).
    #[error("the run's task ended without an outcome: {0}")]
    Aborted(String),
}
