//! The `escepine` command line: argument parsing and one module per command.
//!
//! Each command is `exec(args, io) -> CliResult`: it writes its output to [`Io`] and ends with
//! `Ok(())` (exit status 0) or a [`CliError`] carrying the exit status and the message, which
//! [`run`] — the one place that prints an error — writes to standard error. The flags that
//! build a runtime (`call`, `approve`, `reject`, `run`, `resume`, `serve`) are one group, `args::RuntimeArgs`.

#![deny(missing_docs)]

use std::ffi::OsString;

use clap::{Parser, Subcommand};

mod approve;
mod args;
mod call;
mod cedar_schema;
mod check;
mod console;
mod error;
pub mod exit;
mod export;
mod files;
mod flow;
mod import;
mod import_drafts;
mod import_remote;
mod io;
mod ledger;
mod policy;
mod run;
mod serve;
mod sop;
mod telemetry;
mod tool_run;

pub use error::{CliError, CliResult};
pub use io::Io;

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
    /// Make one governed call: gates, Cedar, evidence, execution. Prints the output JSON (a
    /// call that waits for approval: its call id, exit 8).
    Call(call::Args),
    /// Approve a call that waits for approval, as an approver (`--principal`), and run it:
    /// prints its output with `call`'s exit statuses; 3 when the approval is refused.
    Approve(approve::Args),
    /// Reject a call that waits for approval, as an approver (`--principal`): nothing runs;
    /// 3 when the rejection is refused.
    Reject(approve::Args),
    /// Print the tools as definitions for an agent ecosystem (MCP, OpenAI, Anthropic, Gemini).
    Export(export::Args),
    /// Verify or show an evidence ledger; sign checkpoints of it and prove calls in it.
    #[command(subcommand_required = true)]
    Ledger(ledger::Args),
    /// Run an SOP through the governed path, printing each recorded event; exit 0 completed,
    /// 10 halted, 11 escalated, 12 compensated, 13 cancelled, 14 not driven.
    Run(run::RunArgs),
    /// Resume an interrupted SOP run from the ledger (same registry flags as `run`).
    Resume(run::ResumeArgs),
    /// Serve the governed tools over MCP (stdio, or streamable HTTP with bearer tokens).
    Serve(serve::Args),
    /// Serve the console: calls, runs, approvals and policies of the ledger in a browser, with
    /// the chain and checkpoint verified and approvals decided by Cedar.
    Console(console::Args),
    /// Import tools as draft records: `import mcp --out DIR -- <command …>`.
    #[command(subcommand_required = true)]
    Import(import::Args),
    /// Work with SOP files: `sop graph` draws one as Mermaid or DOT.
    Sop(sop::Args),
    /// Flows: `flow show` prints a flow's state and the calls that brought each label; `flow
    /// declassify` removes a label, as an approver (exit 3 when refused).
    #[command(subcommand_required = true)]
    Flow(flow::Args),
    /// Work with a policy set before deploying it: `policy test` runs its test cases,
    /// `policy replay` re-authorizes recorded requests against it, `policy prove` proves its
    /// properties.
    #[command(subcommand_required = true)]
    Policy(policy::Args),
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
    match exec(cli.command, io) {
        Ok(()) => exit::OK,
        Err(e) => {
            e.print(io.err);
            e.exit_code()
        }
    }
}

/// Dispatch to the command.
fn exec(command: Command, io: &mut Io<'_>) -> CliResult {
    match command {
        Command::Check(a) => check::exec(&a, io),
        Command::CedarSchema(a) => cedar_schema::exec(&a, io),
        Command::Call(a) => call::exec(&a, io),
        Command::Approve(a) => approve::approve(&a, io),
        Command::Reject(a) => approve::reject(&a, io),
        Command::Export(a) => export::exec(&a, io),
        Command::Ledger(a) => ledger::exec(&a, io),
        Command::Run(a) => run::exec(&a, io),
        Command::Resume(a) => run::resume(&a, io),
        Command::Sop(a) => sop::exec(&a, io),
        Command::Serve(a) => serve::exec(&a, io),
        Command::Console(a) => console::exec(&a, io),
        Command::Import(a) => import::exec(&a, io),
        Command::Policy(a) => policy::exec(&a, io),
        Command::Flow(a) => flow::exec(&a, io),
    }
}
