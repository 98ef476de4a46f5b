//! `escepine cedar-schema`: the Cedar schema generated from the records, in Cedar syntax.

use super::{exit, Io, RegistryArgs};

/// Arguments of `escepine cedar-schema`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
}

pub(crate) fn run(args: &Args, io: &mut Io<'_>) -> i32 {
    match registry_build::load(&args.registry.sources()) {
        Ok(reg) => {
            let _ = write!(io.out, "{}", reg.cedar.schema_text);
            exit::OK
        }
        Err(diags) => {
            let _ = write!(io.err, "{}", diags.render());
            exit::INVALID
        }
    }
}
