//! `escepine policy prove`: proofs over the policies with cedar-policy-symcc and cvc5.

use std::path::PathBuf;

use escepine_prove::{
    prove_blocking, read_invariants, read_old_policies, request_model, Obligations, Solver,
};

use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

/// Arguments of `escepine policy prove`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Directory of tool records (`*.json`).
    #[arg(long, value_name = "DIR")]
    records: PathBuf,
    /// Directory of the enforced Cedar policies (`*.cedar`, optional `*.cedarschema`).
    #[arg(long, value_name = "DIR")]
    policies: PathBuf,
    /// Directory of invariants: each `*.cedar` file is a policy set the enforced policies must
    /// imply (every request they permit, it permits).
    #[arg(long, value_name = "DIR")]
    invariants: Option<PathBuf>,
    /// An older policies directory the enforced policies must only restrict.
    #[arg(long, value_name = "OLD_DIR")]
    against: Option<PathBuf>,
}

/// Prove; one line per property and request environment on stdout, then a summary.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    let sources = escepine_registry::registry::Sources::new()
        .records(&args.records)
        .policies(&args.policies);
    // Inputs that do not load prove nothing, as a missing solver: exit 2, so that 1 only ever
    // means a property does not hold (as for `policy test` and `policy replay`).
    let registry =
        escepine_policy::load(&sources).map_err(|d| CliError::text(exit::USAGE, d.render()))?;
    let binding = registry.cedar();
    let invalid = |e: escepine_prove::ProveError| CliError::new(exit::USAGE, e);
    let mut obligations = Obligations {
        model: request_model(registry.records(), &binding.schema).map_err(invalid)?,
        ..Obligations::default()
    };
    if let Some(dir) = &args.invariants {
        obligations.invariants = read_invariants(dir, &binding.schema).map_err(invalid)?;
    }
    if let Some(dir) = &args.against {
        obligations.against = Some(read_old_policies(dir, &binding.schema).map_err(invalid)?);
    }
    // A solver that is missing, fails or answers `unknown` proves nothing: never exit 0.
    let report = prove_blocking(binding, &obligations, &Solver::from_env())
        .map_err(|e| CliError::new(exit::USAGE, e))?;
    for outcome in &report.outcomes {
        let _ = writeln!(io.out, "{outcome}");
    }
    let _ = writeln!(io.out, "{}", report.summary());
    if report.all_proved() {
        Ok(())
    } else {
        Err(CliError::new(
            exit::INVALID,
            format!("not proved: {}", report.summary()),
        ))
    }
}
