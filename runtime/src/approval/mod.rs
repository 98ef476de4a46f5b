//! Approval: calls that wait for an approver.
//!
//! A call whose determining permits include one annotated `@approval` is allowed only with an
//! approver's approval. The governed path records its intent with the decision
//! `awaiting-approval` and stops (nothing runs, no outcome yet). An approver — a principal
//! Cedar permits `Action::"approve"` on the call's tool, never the principal who asked —
//! then approves it ([`crate::Runtime::approve`]: the call runs, once, under its own ids) or
//! rejects it ([`crate::Runtime::reject`]); a call nobody decided in time expires
//! ([`crate::Runtime::expire`]). Each decision is an `approval` entry in the ledger, written
//! before the approved call runs, and followed by the call's outcome.
//!
//! The state of a call is read from the ledger alone, through its call view
//! ([`escepine_ledger::calls::CallView`], [`escepine_ledger::calls::state::CallState`]), so a
//! wait survives any restart; concurrent deciders are serialised by the store
//! ([`escepine_ledger::store::Ledger::claim_approval`]).

mod decide;
mod error;

pub use decide::{Decider, Verdict};
pub use error::ApprovalError;

pub(crate) use decide::{decide, expire};
