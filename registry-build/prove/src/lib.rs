//! Proofs over a registry's Cedar policies, with `cedar-policy-symcc` and the cvc5 solver.
//!
//! For every request environment of the schema (principal type × action × resource type),
//! [`prove`] shows that
//! - no enforced policy can error (`check_never_errors`),
//! - the enforced set implies each [`Invariant`] — a policy set such as "permit everything,
//!   but forbid page reads of `linkedin.com` and its sub-domains" — so every request it
//!   permits, the invariant permits (`check_implies(enforced, invariant)`),
//! - with an [`OldPolicies`] set, the enforced set implies it: the change only restricts.
//!
//! Invariants and `--against` are proved under the [`request_model`]: what every request the
//! runtime makes satisfies (the resource of a tool's action is that tool, a URL's port fits in
//! 16 bits, …), so every counterexample is a request the runtime can make.
//!
//! A property that fails comes with a concrete [`Counterexample`] (principal, action,
//! resource, context, entities). The solver is `$CVC5`, else `cvc5` on `PATH`
//! ([`Solver::from_env`]); a missing or failing solver, or one that answers `unknown`, is a
//! [`ProveError`], never a pass.
//!
//! ```no_run
//! use std::path::Path;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = escepine_policy::load(
//!     &escepine_registry::registry::Sources::new().records("tools/records").policies("tools/policies"),
//! )?;
//! let binding = registry.cedar();
//! let obligations = escepine_prove::Obligations {
//!     model: escepine_prove::request_model(registry.records(), &binding.schema)?,
//!     invariants: escepine_prove::read_invariants(Path::new("tools/invariants"), &binding.schema)?,
//!     against: None,
//! };
//! let report = escepine_prove::prove_blocking(binding, &obligations, &escepine_prove::Solver::from_env())?;
//! for outcome in &report.outcomes {
//!     println!("{outcome}");
//! }
//! assert!(report.all_proved());
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod error;
mod obligations;
mod prover;
mod report;
mod request_model;
mod solver;

pub use error::ProveError;
pub use obligations::{read_invariants, read_old_policies, Invariant, Obligations, OldPolicies};
pub use prover::{prove, prove_blocking};
pub use report::{Counterexample, Outcome, Property, Report, RequestEnvironment, Step, Verdict};
pub use request_model::{request_model, MODEL_ID_PREFIX};
pub use solver::{Solver, CVC5_VAR};
