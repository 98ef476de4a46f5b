//! Policy tests: cases of calls and the decisions they must get, run through what a real call
//! runs before execution.
//!
//! A test file (`tools/policy-tests/*.json`, [`format`]) lists cases:
//!
//! ```json
//! {"cases": [{"name": "linkedin sub-domain", "principal": "Agent::\"researcher\"",
//!             "tool": "firecrawl_scrape", "input": {"url": "https://www.linkedin.com/in/x"},
//!             "expect": "deny", "policies": ["page-read-no-linkedin"]}]}
//! ```
//!
//! `entities` (optional) is Cedar's entities JSON for the case (none when absent); `policies`
//! (optional) the determining policies the decision must have, compared as a set. Each case's
//! input goes through the tool's input gate ([`crate::gate::SchemaGate`]: an input a real call
//! would refuse fails the case, whatever it expects) and then the very [`Authorizer`] the
//! runtime uses (URL facts, one request per element of an `x-authorize-each` list), so the
//! build and the runtime make identical requests.
//!
//! [`check`] loads and runs; every failure is reported at once, each naming its file and case
//! (`tools/policy-tests/page_read.json: case "linkedin sub-domain": expected deny, got allow
//! (determining: [read-only-tools])`). `escepine policy test` and `Builder::policy_tests` run
//! it.
//!
//! [`Authorizer`]: crate::authorize::Authorizer

mod error;
pub mod format;
mod load;
mod report;
mod run;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use error::PolicyTestError;
pub use format::{Case, Expect, TestFile};
pub use load::{load, PolicyTests};
pub use report::{Failure, Problem, Report};

use crate::BoundRegistry;

/// Load the test files at `path` (a directory of `*.json`, or one file) against `registry`
/// and run every case.
///
/// # Errors
/// [`PolicyTestError::Failed`] with every failure when a case fails; the errors of [`load`]
/// for files that cannot be run.
pub fn check(registry: &BoundRegistry, path: &Path) -> Result<Report, PolicyTestError> {
    let report = load(registry, path)?.run();
    if report.passed() {
        Ok(report)
    } else {
        Err(PolicyTestError::Failed(report))
    }
}
