//! `escepine sop`: commands on SOP files (`sop graph`).

use std::path::PathBuf;

use escepine_registry::sop::graph;
use escepine_registry::sop::graph::Format;

use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

/// Arguments of `escepine sop`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Draw an SOP's states and transitions as Mermaid `stateDiagram-v2` or Graphviz DOT,
    /// marking the steps a rollback acts on (compensatable and supersede tools).
    Graph(GraphArgs),
}

/// Arguments of `escepine sop graph`.
#[derive(Debug, clap::Args)]
struct GraphArgs {
    /// The SOP file.
    #[arg(value_name = "SOP")]
    sop: PathBuf,
    /// Directory of tool records: check the SOP against them and mark each step's side-effect
    /// class. Without it only the format and the state graph are checked.
    #[arg(long, value_name = "DIR")]
    records: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "mermaid", value_parser = ["mermaid", "dot"])]
    format: String,
}

/// Run the `sop` subcommand.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    match &args.command {
        Command::Graph(a) => graph_cmd(a, io),
    }
}

fn graph_cmd(args: &GraphArgs, io: &mut Io<'_>) -> CliResult {
    let format: Format = args
        .format
        .parse()
        .map_err(|e| CliError::new(exit::USAGE, e))?;
    if args.sop.is_dir() {
        return Err(CliError::new(
            exit::USAGE,
            format!("{} is a directory; give one SOP file", args.sop.display()),
        ));
    }
    let loaded = match &args.records {
        Some(records) => escepine_policy::load(
            &escepine_registry::registry::Sources::new()
                .records(records)
                .sops(&args.sop),
        )
        .map(|reg| (reg.sops().first().cloned(), reg.records().to_vec())),
        None => escepine_registry::sop::load_unbound(&args.sop).map(|s| (Some(s), Vec::new())),
    };
    match loaded {
        Ok((Some(sop), records)) => {
            if args.records.is_none() {
                let _ = writeln!(
                    io.err,
                    "note: no --records given: tools, constraints and classes were not checked, \
                     and no step is marked by class"
                );
            }
            let _ = write!(io.out, "{}", graph::render(&sop, &records, format));
            Ok(())
        }
        Ok((None, _)) => Err(CliError::new(
            exit::USAGE,
            format!("{} holds no SOP (give one SOP file)", args.sop.display()),
        )),
        Err(diags) => Err(CliError::text(exit::INVALID, diags.render())),
    }
}
