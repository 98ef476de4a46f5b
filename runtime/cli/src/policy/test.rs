//! `escepine policy test --records DIR --policies DIR --tests DIR`: the policy tests of a
//! catalog ([`escepine_policy::policy_tests`]), with the very checks `escepine check` applies
//! to load the registry.

use std::path::PathBuf;

use escepine_policy::policy_tests;
use escepine_policy::policy_tests::PolicyTestError;

use crate::args::RegistryArgs;
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

/// Arguments of `escepine policy test`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
    /// Directory of policy test files (`*.json`), or one file.
    #[arg(long, value_name = "DIR")]
    tests: PathBuf,
}

/// Load the registry, run every case; print `N cases passed`, or every failure on stderr.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    if args.registry.policies.is_none() {
        return Err(CliError::new(
            exit::USAGE,
            "`escepine policy test` needs --policies DIR (the Cedar policies to test)",
        ));
    }
    // A registry that does not load cannot be tested: bad files, like a bad test file.
    let registry = escepine_policy::load(&args.registry.sources())
        .map_err(|d| CliError::text(exit::USAGE, d.render()))?;
    match policy_tests::check(&registry, &args.tests) {
        Ok(report) => {
            let _ = writeln!(io.out, "{}", report.summary());
            Ok(())
        }
        Err(PolicyTestError::Failed(report)) => {
            Err(CliError::text(exit::INVALID, format!("{report}\n")))
        }
        Err(PolicyTestError::Files(d)) => Err(CliError::text(exit::USAGE, d.render())),
        Err(e) => Err(CliError::new(exit::USAGE, e)),
    }
}
