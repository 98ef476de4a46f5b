//! `escepine check`: every registration rule and Cedar strict validation, all problems at once.

use super::{exit, Io, RegistryArgs};

/// Arguments of `escepine check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
}

pub(crate) fn run(args: &Args, io: &mut Io<'_>) -> i32 {
    if args.registry.policies.is_none() {
        let _ = writeln!(
            io.err,
            "error: `escepine check` needs --policies DIR (the Cedar policies to validate)"
        );
        return exit::USAGE;
    }
    match registry_build::load(&args.registry.sources()) {
        Ok(reg) => {
            for note in &reg.notes {
                let _ = writeln!(io.err, "note: {note}");
            }
            let _ = writeln!(
                io.out,
                "ok: {} tools, {} policies valid in strict mode ({})",
                reg.records.len(),
                reg.cedar.policies.policies().count(),
                reg.records
                    .iter()
                    .map(|r| r.tool_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            exit::OK
        }
        Err(diags) => {
            let _ = write!(io.err, "{}", diags.render());
            exit::INVALID
        }
    }
}
