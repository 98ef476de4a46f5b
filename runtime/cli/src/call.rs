//! `escepine call`: one governed call over any records directory.

use escepine_contract::Principal;
use escepine_runtime::telemetry::TraceContext;
use escepine_runtime::{CallKind, CallOptions};

use crate::args::{async_runtime, RegistryArgs, RuntimeArgs};
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;
use crate::telemetry::Wants;

/// Arguments of `escepine call`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The principal, e.g. 'Agent::"researcher"'.
    #[arg(long)]
    principal: String,
    /// The tool id.
    #[arg(long)]
    tool: String,
    /// The payload JSON.
    #[arg(long)]
    input: String,
    /// Accept the OpenAI-strict dialect: `null` for an optional field means absent.
    #[arg(long)]
    openai_strict: bool,
    /// The flow the call is in (created on first use): its state is `context.flow` for
    /// Cedar. Without it, the principal's default flow.
    #[arg(long, value_name = "ID")]
    flow: Option<String>,
    /// A workspace input of the tool, NAME=PATH (repeatable): the regular file at PATH copied
    /// read-only to `/workspace/NAME` of the call's sandbox, its SHA-256 in the intent.
    #[arg(long = "file", value_name = "NAME=PATH")]
    files: Vec<String>,
}

/// Make the call; print its output on stdout, or the report of a call without one.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    let principal: Principal = args
        .principal
        .parse()
        .map_err(|e| CliError::new(exit::USAGE, e))?;
    let payload = escepine_contract::strict_json::from_str(&args.input)
        .map_err(|e| CliError::new(exit::call(CallKind::InputRejected), format!("--input: {e}")))?;
    let flow = args
        .flow
        .as_deref()
        .map(escepine_contract::FlowId::named)
        .transpose()
        .map_err(|e| CliError::new(exit::USAGE, format!("--flow: {e}")))?;
    let files = crate::files::read(&args.files)
        .map_err(|e| CliError::new(exit::call(CallKind::InputRejected), e))?;
    let registry = args.registry.load()?;
    // Started before the runtime is built; flushed when the command ends.
    let _watch = args.runtime.telemetry.start(Wants::default())?;
    let rt = async_runtime(exit::INVALID)?;
    let report = rt.block_on(async {
        // A ledger that cannot be opened is `ledger_unavailable`, an executor that cannot be
        // made ready `failed`: one exit status.
        let runtime = args
            .runtime
            .build(registry, exit::call(CallKind::LedgerUnavailable))
            .await?;
        let opts = CallOptions {
            openai_strict_nulls: args.openai_strict,
            files,
            flow,
            // The caller's trace (`TRACEPARENT`), which the call's span continues.
            trace: TraceContext::from_env(),
            ..CallOptions::default()
        };
        let report = runtime.call(&principal, &args.tool, payload, opts).await;
        crate::args::settle(&runtime).await;
        report.map_err(|e| CliError::new(exit::call(e.kind()), e))
    })?;
    print_report(&report, io)
}

/// Print a call's report: the output of an `ok` call on stdout; the call id of a waiting call
/// as the first line of stdout (with why it waits on stderr); otherwise the report, with
/// `call`'s exit status.
pub(crate) fn print_report(report: &escepine_runtime::CallReport, io: &mut Io<'_>) -> CliResult {
    if report.kind() == CallKind::AwaitingApproval {
        let _ = writeln!(io.out, "{}", report.call_id());
        return Err(CliError::new(exit::AWAITING_APPROVAL, report));
    }
    match report.output() {
        Some(output) => {
            let _ = writeln!(io.out, "{output}");
            match exit::call(report.kind()) {
                exit::OK => Ok(()),
                code => Err(CliError::code(code)),
            }
        }
        None => Err(CliError::new(exit::call(report.kind()), report)),
    }
}
