//! `escepine policy replay --ledger PATH --records DIR --policies NEW_DIR [--entities FILE]
//! [--allow-widening]`: what-if replay of recorded requests.
//!
//! The ledger's hash chain is verified first (a broken one exits 2, naming the entry); then
//! every recorded intent is re-authorized against the new policies by
//! [`escepine_runtime::replay`], with the runtime's own [`Authorizer`]. Standard output
//! gets one line per flipped request — call id, principal, tool, canonical payload, old → new
//! decision, the policies on both sides — and nothing for the others; standard error gets a
//! note per intent whose tool the records do not hold, and the summary line.

use std::path::PathBuf;

use escepine_ledger::location::LedgerLocation;
use escepine_ledger::verify::VerifyError;
use escepine_policy::authorize::Authorizer;
use escepine_runtime::replay::{replay, Flip};

use crate::args::read_json;
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;

/// Arguments of `escepine policy replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The ledger whose requests are replayed: a SQLite file (only read) or a PostgreSQL
    /// database (`postgres://user:password@host:port/db`, only read).
    #[arg(long, value_name = "PATH|URL")]
    ledger: LedgerLocation,
    /// Directory of tool records (`*.json`): the tools the requests are replayed for.
    #[arg(long, value_name = "DIR")]
    records: PathBuf,
    /// The new Cedar policies (`*.cedar`, optional `*.cedarschema`).
    #[arg(long, value_name = "NEW_DIR")]
    policies: PathBuf,
    /// Cedar entities JSON (principals, their attributes and parents), as the runtime had them.
    #[arg(long, value_name = "FILE")]
    entities: Option<PathBuf>,
    /// Exit 0 even when a recorded deny would become an allow.
    #[arg(long)]
    allow_widening: bool,
}

/// Exit status of a widening replay: a recorded deny becomes an allow.
const WIDENED: i32 = exit::INVALID;

/// Replay the ledger's requests against the new policies.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    // Inputs that cannot be used are exit 2: exit 1 means a widening.
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(&args.records)
            .policies(&args.policies),
    )
    .map_err(|d| CliError::text(exit::USAGE, d.render()))?;
    let entities = args
        .entities
        .as_deref()
        .map(|path| read_json(path, exit::USAGE))
        .transpose()?;
    let authorizer = Authorizer::new(registry.cedar(), registry.records(), entities.as_ref())
        .map_err(|e| CliError::new(exit::USAGE, format!("{}: {e}", args.policies.display())))?;
    let entries = args.ledger.verified_entries().map_err(|e| match e {
        VerifyError::Tampered(t) => CliError::new(
            exit::USAGE,
            format!("{}: the chain is broken: {t}", args.ledger),
        ),
        VerifyError::Unreadable(e) => CliError::new(exit::USAGE, e),
    })?;

    let report = replay(&entries, &authorizer);
    let mut out = String::new();
    for flip in &report.flips {
        out.push_str(&line(flip));
        out.push('\n');
    }
    let _ = io.out.write_all(out.as_bytes());
    for s in &report.skipped {
        let _ = writeln!(
            io.err,
            "note: entry #{} (call {}) not replayed: {}",
            s.seq, s.call_id, s.reason
        );
    }
    let _ = write!(
        io.err,
        "replayed {} requests, {} flipped ({} widened)",
        report.replayed,
        report.flips.len(),
        report.widened()
    );
    if !report.skipped.is_empty() {
        let _ = write!(
            io.err,
            "; {} not replayed (tool absent from the records)",
            report.skipped.len()
        );
    }
    let _ = writeln!(io.err);
    if report.widened() > 0 && !args.allow_widening {
        return Err(CliError::new(
            WIDENED,
            format!(
                "{} recorded denial(s) would be allowed by {} (pass --allow-widening to accept)",
                report.widened(),
                args.policies.display()
            ),
        ));
    }
    Ok(())
}

/// One flipped request: `call <id>  <principal>  <tool>  <payload>  <old> → <new>  [<old
/// policies>] → [<new policies>]`.
fn line(f: &Flip) -> String {
    format!(
        "call {}  {}  {}  {}  {} → {}  [{}] → [{}]",
        f.call_id,
        f.principal,
        f.tool_id,
        f.payload,
        f.old_decision,
        f.new_decision,
        f.old_policy_ids.join(", "),
        f.new_policy_ids.join(", ")
    )
}
