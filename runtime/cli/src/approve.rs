//! `escepine approve CALL_ID` and `escepine reject CALL_ID`: an approver's decision on a call
//! that waits for approval, over the same registry and runtime flags as `call`.

use escepine_contract::Principal;
use escepine_runtime::approval::ApprovalError;
use escepine_runtime::CallKind;

use crate::args::{async_runtime, RegistryArgs, RuntimeArgs};
use crate::call::print_report;
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

/// Arguments of `escepine approve` and `escepine reject`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The waiting call's id (32 lower-case hex digits, as `escepine call` printed it).
    call_id: String,
    #[command(flatten)]
    registry: RegistryArgs,
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// The approver, e.g. 'Agent::"reviewer"': a principal Cedar permits
    /// `Action::"approve"` on the call's tool, never the principal who asked.
    #[arg(long)]
    principal: String,
}

/// Approve: run the call and print its output, with `call`'s exit statuses.
pub(crate) fn approve(args: &Args, io: &mut Io<'_>) -> CliResult {
    let report = decide(args, true)?;
    print_report(&report, io)
}

/// Reject: record the rejection (nothing runs); exit 0.
pub(crate) fn reject(args: &Args, io: &mut Io<'_>) -> CliResult {
    let report = decide(args, false)?;
    let _ = writeln!(io.out, "{}", report.call_id());
    let _ = writeln!(io.err, "call {}: {report}", report.call_id());
    Ok(())
}

fn decide(args: &Args, approve: bool) -> Result<escepine_runtime::CallReport, CliError> {
    let approver: Principal = args
        .principal
        .parse()
        .map_err(|e| CliError::new(exit::USAGE, e))?;
    if !is_call_id(&args.call_id) {
        return Err(CliError::new(
            exit::USAGE,
            format!(
                "`{}` is not a call id (32 lower-case hex digits)",
                args.call_id
            ),
        ));
    }
    let registry = args.registry.load()?;
    let _watch = args
        .runtime
        .telemetry
        .start(crate::telemetry::Wants::default())?;
    let rt = async_runtime(exit::INVALID)?;
    rt.block_on(async {
        let runtime = args
            .runtime
            .build(registry, exit::call(CallKind::LedgerUnavailable))
            .await?;
        let decided = if approve {
            runtime.approve(&approver, &args.call_id).await
        } else {
            runtime.reject(&approver, &args.call_id).await
        };
        crate::args::settle(&runtime).await;
        decided.map_err(|e| CliError::new(status(&e), e))
    })
}

/// 3 for a refused decision (nothing changed); the call's own status otherwise.
fn status(e: &ApprovalError) -> i32 {
    e.call_kind().map_or(exit::APPROVAL_REFUSED, exit::call)
}

/// Whether `s` has the shape of a call id: 32 lower-case hex digits.
fn is_call_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
