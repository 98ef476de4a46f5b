//! `escepine cedar-schema`: the Cedar schema generated from the records, in Cedar syntax.

use crate::args::RegistryArgs;
use crate::error::CliResult;
use crate::io::Io;

/// Arguments of `escepine cedar-schema`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
}

/// Print the schema.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    let reg = args.registry.load()?;
    let _ = write!(io.out, "{}", reg.cedar().schema_text);
    Ok(())
}
