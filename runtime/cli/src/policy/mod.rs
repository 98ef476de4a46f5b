//! `escepine policy <sub>`: working with a policy set before it is deployed (one module per
//! subcommand) — `test` runs the policy tests of a catalog, `replay` re-authorizes the requests a
//! ledger recorded against a new set, `prove` proves properties of the set.

mod prove;
mod replay;
mod test;

use crate::error::CliResult;
use crate::io::Io;

/// Arguments of `escepine policy`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: PolicyCommand,
}

/// The subcommands of `escepine policy`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Run policy test cases (`*.json`) through the input gate and Cedar, as a real call would
    /// be; report every failure, naming file and case. Exit 0 all pass, 1 a case fails, 2 bad
    /// usage or files.
    Test(test::Args),
    /// Re-authorize every request a ledger recorded against new policies; print one line per
    /// flipped request. Exit 0, 1 a deny became an allow (unless --allow-widening), 2 usage,
    /// invalid inputs or a broken chain.
    Replay(replay::Args),
    /// Prove, for every principal type, action and resource type, that no policy can error,
    /// that every invariant holds and (with --against) that the policies only restrict an older
    /// set; each failure with a counterexample request. Exit 0 all proved, 1 a proof failed, 2
    /// the solver is missing, failed or answered unknown, invalid inputs, or bad usage.
    Prove(prove::Args),
}

/// Dispatch to the subcommand.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    match &args.command {
        PolicyCommand::Test(a) => test::exec(a, io),
        PolicyCommand::Replay(a) => replay::exec(a, io),
        PolicyCommand::Prove(a) => prove::exec(a, io),
    }
}
