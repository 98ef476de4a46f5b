//! The `escepine` command line (see the `escepine-cli` library).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod call;
mod cedar_schema;
mod check;
mod export;
mod import;
mod ledger;
mod run;
mod serve;
mod sop;
mod tool_run;

/// Process exit statuses of the `escepine` commands.
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// The inputs are invalid (or a registration failed).
    pub const INVALID: i32 = 1;
    /// Bad usage.
    pub const USAGE: i32 = 2;

    use escepine_runtime::CallKind;

    /// The exit status of `escepine call` for a call that ended with `kind` — the one place it
    /// is decided: 0 ok, 3 denied, 4 input rejected or unknown tool (or a typed client that
    /// does not match), 5 failed, timed out or ledger unavailable, 6 output rejected.
    pub const fn call(kind: CallKind) -> i32 {
        match kind {
            CallKind::Ok => OK,
            CallKind::Denied => 3,
            CallKind::UnknownTool | CallKind::InputRejected | CallKind::ClientMismatch => 4,
            CallKind::Failed | CallKind::TimedOut | CallKind::LedgerUnavailable => 5,
            CallKind::OutputRejected => 6,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_kind_has_the_contracts_exit_status() {
            let codes: Vec<(&str, i32)> = CallKind::ALL
                .iter()
                .map(|k| (k.as_str(), call(*k)))
                .collect();
            assert_eq!(
                codes,
                [
                    ("ok", 0),
                    ("denied", 3),
                    ("failed", 5),
                    ("timed_out", 5),
                    ("output_rejected", 6),
                    ("unknown_tool", 4),
                    ("input_rejected", 4),
                    ("ledger_unavailable", 5),
                    ("client_mismatch", 4),
                ]
            );
        }
    }
}

/// The governed tool registry: check, bind and run registered tools.
#[derive(Debug, Parser)]
#[command(name = "escepine", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply every registration rule and Cedar strict validation; report all problems at once.
    Check(check::Args),
    /// Print the Cedar schema generated from the records, in Cedar syntax.
    CedarSchema(cedar_schema::Args),
    /// Make one governed call: gates, Cedar, evidence, execution. Prints the output JSON.
    Call(call::Args),
    /// Print the tools as definitions for an agent ecosystem (MCP, OpenAI, Anthropic, Gemini).
    Export(export::Args),
    /// Verify or show an evidence ledger.
    #[command(subcommand_required = true)]
    Ledger(ledger::Args),
    /// Run an SOP through the governed path, printing each recorded event; exit 0 completed,
    /// 10 halted, 11 escalated, 12 compensated, 13 cancelled, 14 not driven.
    Run(run::RunArgs),
    /// Resume an interrupted SOP run from the ledger (same registry flags as `run`).
    Resume(run::ResumeArgs),
    /// Serve the governed tools over MCP (stdio, or streamable HTTP with bearer tokens).
    Serve(serve::Args),
    /// Import tools as draft records: `import mcp --out DIR -- <command …>`.
    #[command(subcommand_required = true)]
    Import(import::Args),
    /// Work with SOP files: `sop graph` draws one as Mermaid or DOT.
    Sop(sop::Args),
}

/// Where a command writes: standard output and standard error, or buffers in tests.
pub struct Io<'a> {
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error.
    pub err: &'a mut dyn Write,
}

/// Run the command line `args` (the first item is the program name); returns the exit status.
pub fn run<I, T>(args: I, io: &mut Io<'_>) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = write!(
                if e.use_stderr() {
                    &mut *io.err
                } else {
                    &mut *io.out
                },
                "{}",
                e.render()
            );
            return code;
        }
    };
    match cli.command {
        Command::Check(a) => check::run(&a, io),
        Command::CedarSchema(a) => cedar_schema::run(&a, io),
        Command::Call(a) => call::run(&a, io),
        Command::Export(a) => export::run(&a, io),
        Command::Ledger(a) => ledger::run(&a, io),
        Command::Run(a) => run::run(&a, io),
        Command::Resume(a) => run::resume(&a, io),
        Command::Sop(a) => sop::run(&a, io),
        Command::Serve(a) => serve::run(&a, io),
        Command::Import(a) => import::run(&a, io),
    }
}

/// Registry inputs shared by the commands.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RegistryArgs {
    /// Directory of tool records (`*.json`).
    #[arg(long, value_name = "DIR")]
    records: PathBuf,
    /// Directory of Cedar policies (`*.cedar`, optional `*.cedarschema`).
    #[arg(long, value_name = "DIR")]
    policies: Option<PathBuf>,
    /// Deployment envelope; without it the coverage rule is skipped.
    #[arg(long, value_name = "FILE")]
    envelope: Option<PathBuf>,
}

impl RegistryArgs {
    pub(crate) fn sources(&self) -> registry_build::Sources {
        let mut s = registry_build::Sources::new().records(&self.records);
        if let Some(p) = &self.policies {
            s = s.policies(p);
        }
        if let Some(e) = &self.envelope {
            s = s.envelope(e);
        }
        s
    }
}
