//! `escepine call`: one governed call over any records directory.

use std::path::PathBuf;
use std::sync::Arc;

use escepine_contract::Principal;

use super::tool_run::ToolRunArgs;
use super::{exit, Io, RegistryArgs};
use escepine_runtime::ledger::sqlite::SqliteLedger;
use escepine_runtime::ledger::Durability;
use escepine_runtime::overlay::Overlay;
use escepine_runtime::CallOptions;
use escepine_runtime::{CallKind, Runtime};

/// Arguments of `escepine call`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
    /// Cedar entities JSON (principals, their attributes and parents).
    #[arg(long, value_name = "FILE")]
    entities: Option<PathBuf>,
    /// Extra egress entries for named tools (must lie inside the envelope).
    #[arg(long, value_name = "FILE")]
    overlay: Option<PathBuf>,
    /// The principal, e.g. 'Agent::"researcher"'.
    #[arg(long)]
    principal: String,
    /// The tool id.
    #[arg(long)]
    tool: String,
    /// The payload JSON.
    #[arg(long)]
    input: String,
    /// The SQLite evidence ledger.
    #[arg(long, value_name = "PATH")]
    ledger: PathBuf,
    /// Accept the OpenAI-strict dialect: `null` for an optional field means absent.
    #[arg(long)]
    openai_strict: bool,
    #[command(flatten)]
    run: ToolRunArgs,
}

pub(crate) fn run(args: &Args, io: &mut Io<'_>) -> i32 {
    let principal: Principal = match args.principal.parse() {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            return exit::USAGE;
        }
    };
    let payload: serde_json::Value = match serde_json::from_str(&args.input) {
        Ok(v) => v,
        Err(e) => {
            let _ = writeln!(io.err, "error: --input is not JSON: {e}");
            return exit::call(CallKind::InputRejected);
        }
    };
    let registry = match registry_build::load(&args.registry.sources()) {
        Ok(r) => r,
        Err(d) => {
            let _ = write!(io.err, "{}", d.render());
            return exit::INVALID;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot start the async runtime: {e}");
            return exit::INVALID;
        }
    };
    let result = rt.block_on(async {
        let ledger = SqliteLedger::open(&args.ledger, Durability::Full)
            .map_err(|e| (exit::call(CallKind::LedgerUnavailable), e.to_string()))?;
        let executor = args
            .run
            .executor(&registry)
            .await
            .map_err(|e| (exit::call(CallKind::Failed), e))?;
        let secrets = args.run.secrets().map_err(|e| (exit::INVALID, e))?;
        let mut builder = Runtime::builder(registry)
            .ledger(Arc::new(ledger))
            .executor(executor)
            .secrets(secrets);
        if let Some(path) = &args.entities {
            let text = std::fs::read_to_string(path)
                .map_err(|e| (exit::INVALID, format!("{}: {e}", path.display())))?;
            let v = serde_json::from_str(&text)
                .map_err(|e| (exit::INVALID, format!("{}: {e}", path.display())))?;
            builder = builder.entities(v);
        }
        if let Some(path) = &args.overlay {
            builder =
                builder.overlay(Overlay::load(path).map_err(|e| (exit::INVALID, e.to_string()))?);
        }
        let runtime = builder
            .build()
            .map_err(|e| (exit::INVALID, e.to_string()))?;
        let opts = CallOptions {
            openai_strict_nulls: args.openai_strict,
            ..CallOptions::default()
        };
        runtime
            .call(&principal, &args.tool, payload, opts)
            .await
            .map_err(|e| (exit::call(e.kind()), e.to_string()))
    });
    match result {
        Ok(report) => {
            let code = exit::call(report.kind());
            match report.output() {
                Some(output) => {
                    let _ = writeln!(io.out, "{output}");
                }
                None => {
                    let _ = writeln!(io.err, "error: {report}");
                }
            }
            code
        }
        Err((code, msg)) => {
            let _ = writeln!(io.err, "error: {msg}");
            code
        }
    }
}
