//! What every `escepine import mcp` ends with, whatever the server's source: each listed tool
//! drafted, checked by the registry's own record rules, and written to `OUT/` or
//! `OUT/needs-decision/` — or nothing written when drafts conflict or exist.

use std::path::{Path, PathBuf};

use escepine_mcp::import::{
    draft, Decision, Draft, EndpointDraft, ServerTools, NEEDS_DECISION_DIR,
};
use escepine_registry::diagnostic::SourceFile;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::rules::record as record_rules;

use crate::error::{CliError, CliResult};
use crate::exit::{self, SERVER_FAILED};
use crate::io::Io;

/// Where drafts are written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Output<'a> {
    /// `--out DIR`.
    pub(crate) out: &'a Path,
    /// `--force`: existing drafts are replaced.
    pub(crate) force: bool,
}

/// Where a draft goes: `OUT/` when it passes every rule and leaves nothing to decide, else
/// `OUT/needs-decision/`.
fn folder(out: &Path, d: &Draft) -> PathBuf {
    if d.decisions.is_empty() {
        out.to_path_buf()
    } else {
        out.join(NEEDS_DECISION_DIR)
    }
}

/// Draft every tool of `listed` for `endpoint`, check each draft by the registry's rules, and
/// write the drafts.
pub(crate) fn finish(
    a: &Output<'_>,
    listed: &ServerTools,
    endpoint: &EndpointDraft,
    read_only: &[String],
    envelope: Option<&Envelope>,
    workspace: Option<&Path>,
    io: &mut Io<'_>,
) -> CliResult {
    if listed.tools.is_empty() {
        return Err(CliError::new(
            SERVER_FAILED,
            "the MCP server lists no tools; nothing to import",
        ));
    }
    let bins = workspace.map(WorkspaceBins::discover).unwrap_or_default();
    let ctx = record_rules::Context {
        envelope,
        bins: &bins,
    };
    let drafts: Vec<Draft> = listed
        .tools
        .iter()
        .map(|t| {
            let mut d = draft(t, listed, endpoint, read_only);
            for decision in rule_decisions(&d, a.out, &ctx) {
                d.decide(decision);
            }
            d
        })
        .collect();
    refuse_conflicts(&drafts, a)?;
    write_drafts(&drafts, a, io)
}

/// What the registry's own record rules refuse in the draft `d` (checked as if at its place
/// in `out`), each as a decision naming the pointer, the rule and why.
fn rule_decisions(d: &Draft, out: &Path, ctx: &record_rules::Context<'_>) -> Vec<Decision> {
    let file = SourceFile::new(out.join(d.file_name()), d.text());
    let (_, diags) = escepine_registry::registry::check_records(&[file], ctx);
    diags
        .iter()
        // Warnings and notes (a script endpoint, an exemption) are printed by `check`; only
        // what the rules refuse is a decision.
        .filter(|diag| diag.is_error())
        .filter(|diag| {
            // A decision the draft already names (at its pointer or below) is not listed twice.
            !d.decisions.iter().any(|k| {
                diag.pointer.as_deref().is_some_and(|p| {
                    p == k.pointer
                        || (p.starts_with(k.pointer.as_str())
                            && p[k.pointer.len()..].starts_with('/'))
                })
            })
        })
        .map(|diag| {
            Decision::new(
                diag.pointer.as_deref().unwrap_or(""),
                &format!(
                    "{} (registration rule {})",
                    diag.message.trim_end(),
                    diag.rule.id()
                ),
            )
        })
        .collect()
}

/// Refuse before writing anything: two tools on one file, or drafts already there.
fn refuse_conflicts(drafts: &[Draft], a: &Output<'_>) -> CliResult {
    let mut refused = String::new();
    for (i, d) in drafts.iter().enumerate() {
        if let Some(first) = drafts[..i].iter().find(|o| o.tool_id == d.tool_id) {
            refused.push_str(&format!(
                "error: the MCP tools `{}` and `{}` both map to the tool id `{}`\n",
                first.mcp_name, d.mcp_name, d.tool_id
            ));
        }
        for dir in [a.out.to_path_buf(), a.out.join(NEEDS_DECISION_DIR)] {
            let path = dir.join(d.file_name());
            if path.exists() && !a.force {
                refused.push_str(&format!(
                    "error: {} exists (pass --force to overwrite it)\n",
                    path.display()
                ));
            }
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(CliError::text(exit::INVALID, refused))
    }
}

fn write_drafts(drafts: &[Draft], a: &Output<'_>, io: &mut Io<'_>) -> CliResult {
    let mut pending = 0;
    for d in drafts {
        let dir = folder(a.out, d);
        std::fs::create_dir_all(&dir).map_err(|e| {
            CliError::new(
                exit::INVALID,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
        let path = dir.join(d.file_name());
        std::fs::write(&path, d.text()).map_err(|e| {
            CliError::new(
                exit::INVALID,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        // With --force, the draft of this tool in the other folder is stale.
        for other in [a.out.to_path_buf(), a.out.join(NEEDS_DECISION_DIR)] {
            let stale = other.join(d.file_name());
            if other != dir && stale.is_file() {
                let _ = std::fs::remove_file(&stale);
            }
        }
        let _ = writeln!(
            io.out,
            "wrote {} (MCP tool `{}`)",
            path.display(),
            d.mcp_name
        );
        for note in &d.notes {
            let _ = writeln!(io.out, "    {note}");
        }
        for k in &d.decisions {
            let _ = writeln!(
                io.out,
                "    decide: tool `{}` at {}: {}",
                d.mcp_name, k.pointer, k.what
            );
        }
        pending += usize::from(!d.decisions.is_empty());
    }
    let out_dir = a.out.display();
    let _ = writeln!(
        io.out,
        "ok: {} draft(s) written, {} ready in {out_dir}, {pending} needing a decision in \
         {out_dir}/{NEEDS_DECISION_DIR}; make the decisions, move each decided draft up to \
         {out_dir}, then run `escepine check --records {out_dir} --policies <DIR> --envelope \
         <FILE>`",
        drafts.len(),
        drafts.len() - pending
    );
    Ok(())
}
