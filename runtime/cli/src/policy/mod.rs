//! `escepine policy <sub>`: judge a policy change before it is deployed. One module per
//! subcommand: [`replay`] re-authorizes the requests a ledger recorded against a new set.

mod replay;

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
    /// Re-authorize every request a ledger recorded against new policies; print one line per
    /// flipped request. Exit 0, 1 a deny became an allow (unless --allow-widening), 2 usage,
    /// invalid inputs or a broken chain.
    Replay(replay::Args),
}

/// Run the subcommand.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    match &args.command {
        PolicyCommand::Replay(a) => replay::exec(a, io),
    }
}
