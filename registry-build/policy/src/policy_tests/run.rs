//! Running the cases: each through what a real call runs before execution — the input gate,
//! then the authorizer (URL facts, one request per element of an `x-authorize-each` list).

use std::collections::BTreeSet;

use super::load::{PolicyTests, Prepared};
use super::report::{Failure, Problem, Report};

impl PolicyTests {
    /// Run every case; the report holds every failure.
    pub fn run(&self) -> Report {
        let mut report = Report {
            cases: 0,
            failures: Vec::new(),
            determining: BTreeSet::new(),
        };
        for suite in &self.files {
            for case in &suite.cases {
                report.cases += 1;
                if let Err(problem) = self.run_case(case, &mut report.determining) {
                    report.failures.push(Failure {
                        file: suite.file.clone(),
                        case: case.name.clone(),
                        problem,
                    });
                }
            }
        }
        report
    }

    /// One case; the policies that determined it are added to `determining`.
    fn run_case(&self, case: &Prepared, determining: &mut BTreeSet<String>) -> Result<(), Problem> {
        case.gate
            .check(&case.input)
            .map_err(Problem::InputRejected)?;
        let authorizer = &self.authorizers[case.authorizer];
        let decision =
            authorizer.authorize_in(&case.principal, &[], &case.tool, &case.input, &case.flow);
        determining.extend(decision.policy_ids().iter().cloned());
        let expected = case.expect;
        if decision.as_str() != expected.as_str() {
            return Err(Problem::Decision {
                expected,
                got: decision.as_str(),
                determining: decision.policy_ids().to_vec(),
                reasons: decision.reasons().to_vec(),
            });
        }
        if let Some(policies) = &case.policies {
            let got: BTreeSet<String> = decision.policy_ids().iter().cloned().collect();
            if &got != policies {
                return Err(Problem::Policies {
                    expected: policies.clone(),
                    got: decision.policy_ids().to_vec(),
                });
            }
        }
        Ok(())
    }
}
