//! What a run of policy tests found: how many cases ran, every failure (file, case, problem),
//! and which policies determined some case.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use super::format::Expect;
use crate::gate::{violation_list, Violation};

/// The result of running every case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub(super) cases: usize,
    pub(super) failures: Vec<Failure>,
    pub(super) determining: BTreeSet<String>,
}

impl Report {
    /// How many cases ran.
    pub fn cases(&self) -> usize {
        self.cases
    }

    /// Every failed case, in file and case order.
    pub fn failures(&self) -> &[Failure] {
        &self.failures
    }

    /// Whether every case passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// The ids of the policies that determined the decision of at least one case (passed or
    /// not): a policy of the set that is not here is tested by no case.
    pub fn determining(&self) -> &BTreeSet<String> {
        &self.determining
    }

    /// `N cases passed`, or `F of N cases failed`.
    pub fn summary(&self) -> String {
        let plural = |n: usize| if n == 1 { "case" } else { "cases" };
        if self.passed() {
            format!("{} {} passed", self.cases, plural(self.cases))
        } else {
            format!(
                "{} of {} {} failed",
                self.failures.len(),
                self.cases,
                plural(self.cases)
            )
        }
    }
}

/// Every failure on its own line, then the summary.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for failure in &self.failures {
            writeln!(f, "{failure}")?;
        }
        write!(f, "{}", self.summary())
    }
}

/// One failed case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The test file.
    pub file: PathBuf,
    /// The case's name.
    pub case: String,
    /// What went wrong.
    pub problem: Problem,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: case \"{}\": {}",
            self.file.display(),
            self.case,
            self.problem
        )
    }
}

/// Why a case failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The input gate refused the case's input: a real call would never reach Cedar, so the
    /// case tests nothing, whatever it expects.
    InputRejected(Vec<Violation>),
    /// The decision is not the expected one.
    Decision {
        /// What the case expects.
        expected: Expect,
        /// The decision (`allow`, `deny`, `awaiting-approval`).
        got: &'static str,
        /// The decision's determining policies.
        determining: Vec<String>,
        /// Why it was denied (empty on allow).
        reasons: Vec<String>,
    },
    /// The decision is the expected one, but other policies determined it.
    Policies {
        /// What the case expects.
        expected: BTreeSet<String>,
        /// The decision's determining policies.
        got: Vec<String>,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InputRejected(v) => write!(
                f,
                "the input gate rejects the input (a real call would not reach Cedar): {}",
                violation_list(v)
            ),
            Self::Decision {
                expected,
                got,
                determining,
                reasons,
            } => {
                write!(
                    f,
                    "expected {}, got {got} (determining: [{}])",
                    expected.as_str(),
                    determining.join(", ")
                )?;
                if !reasons.is_empty() {
                    write!(f, "; {}", reasons.join("; "))?;
                }
                Ok(())
            }
            Self::Policies { expected, got } => write!(
                f,
                "expected determining policies [{}], got [{}]",
                expected.iter().cloned().collect::<Vec<_>>().join(", "),
                got.join(", ")
            ),
        }
    }
}
