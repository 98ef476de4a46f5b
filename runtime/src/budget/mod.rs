//! Budgets per principal: how many calls a principal (or the members of a group) may make of a
//! tool (or a class, or an action group), for ever or in a sliding window, and how many may be
//! in flight at once.
//!
//! - [`file`]: the budgets file (`--budgets FILE`), parsed and checked against the registry
//!   into [`Budgets`].
//! - `table`: the budgets compiled per tool at start-up, and the ones that apply to a call.
//!
//! Cedar decides each request alone and cannot count, so budgets are checked on the governed
//! path after authorization, once the intent is recorded, before anything runs; the uses are
//! counted in the ledger's store ([`escepine_ledger::store::Ledger::reserve_budgets`]).

pub mod file;
pub(crate) mod table;

pub use file::{Budget, Budgets, BudgetsError, Subject, Target};
