//! `escepine policy`: commands that check policy changes before they are deployed (one module
//! per subcommand).

mod prove;

use crate::error::CliResult;
use crate::io::Io;

/// The `policy` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Prove, for every principal type, action and resource type, that no policy can error,
    /// that every invariant holds and (with --against) that the policies only restrict an older
    /// set; each failure with a counterexample request. Exit 0 all proved, 1 a proof failed (or
    /// invalid inputs), 2 the solver is missing, failed or answered unknown, or bad usage.
    Prove(prove::Args),
}

/// Run a `policy` subcommand.
pub(crate) fn exec(command: &PolicyCommand, io: &mut Io<'_>) -> CliResult {
    match command {
        PolicyCommand::Prove(a) => prove::exec(a, io),
    }
}
