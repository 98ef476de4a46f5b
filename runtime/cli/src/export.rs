//! `escepine export`: the registered tools as tool definitions for one agent ecosystem.

use registry_build::export::{self, Format};

use super::{exit, Io, RegistryArgs};

/// `--format`: a [`Format`], spelled and described by [`Format::as_str`] and [`Format::summary`].
#[derive(Debug, Clone, Copy)]
struct FormatArg(Format);

impl clap::ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [FormatArg; 4] = [
            FormatArg(Format::ALL[0]),
            FormatArg(Format::ALL[1]),
            FormatArg(Format::ALL[2]),
            FormatArg(Format::ALL[3]),
        ];
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.as_str()).help(self.0.summary()))
    }
}

/// Arguments of `escepine export`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The ecosystem whose tool definitions to print.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: FormatArg,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub(crate) fn run(args: &Args, io: &mut Io<'_>) -> i32 {
    let registry = match registry_build::load(&args.registry.sources()) {
        Ok(r) => r,
        Err(diags) => {
            let _ = write!(io.err, "{}", diags.render());
            return exit::INVALID;
        }
    };
    for note in &registry.notes {
        let _ = writeln!(io.err, "note: {note}");
    }
    match export::export(&registry.records, args.format.0) {
        Ok(tools) => match serde_json::to_string_pretty(&tools) {
            Ok(text) => {
                let _ = writeln!(io.out, "{text}");
                exit::OK
            }
            Err(e) => {
                let _ = writeln!(io.err, "error: cannot print the tool definitions: {e}");
                exit::INVALID
            }
        },
        Err(e) => {
            for problem in e.problems() {
                let _ = writeln!(io.err, "error: {problem}");
            }
            let n = e.problems().len();
            let _ = writeln!(
                io.err,
                "no {} tool definitions written: {n} problem{} above",
                args.format.0,
                if n == 1 { "" } else { "s" }
            );
            exit::INVALID
        }
    }
}
