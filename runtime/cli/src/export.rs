//! `escepine export`: the registered tools as tool definitions for one agent ecosystem.

use escepine_export::Format;

use crate::args::RegistryArgs;
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

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

/// Print the definitions as a JSON array.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    let registry = args.registry.load()?;
    for note in registry.notes() {
        let _ = writeln!(io.err, "note: {note}");
    }
    let format = args.format.0;
    match escepine_export::export(registry.records(), format) {
        Ok(tools) => {
            let text = serde_json::to_string_pretty(&tools).map_err(|e| {
                CliError::new(
                    exit::INVALID,
                    format!("cannot print the tool definitions: {e}"),
                )
            })?;
            let _ = writeln!(io.out, "{text}");
            Ok(())
        }
        Err(e) => {
            let mut text = String::new();
            for problem in e.problems() {
                text.push_str(&format!("error: {problem}\n"));
            }
            let n = e.problems().len();
            text.push_str(&format!(
                "no {format} tool definitions written: {n} problem{} above\n",
                if n == 1 { "" } else { "s" }
            ));
            Err(CliError::text(exit::INVALID, text))
        }
    }
}
