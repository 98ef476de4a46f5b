//! `escepine import mcp --out DIR [--force] [--timeout-ms N] -- <command …>`: draft records
//! from an existing MCP server ([`crate::mcp::import`]).
//!
//! The server is started with the command as given, its `tools/list` read, and one draft record
//! per tool written to `DIR/<tool id>.json` (existing files are kept unless `--force`). For each
//! draft it prints what was changed mechanically and what is left to review; then it applies
//! every per-record registration rule to the drafts and prints what still fails — credential
//! names, undecidable schema parts, a missing inverse — which `escepine check` will list too.
//!
//! Exit status: 0 drafts written and every record rule passes (the REVIEW notes remain to be
//! read); 1 drafts written with problems left to fix, or nothing written (a file exists, two
//! tools map to one id); 2 usage; 3 the server could not be started or read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use registry_build::endpoint::WorkspaceBins;
use registry_build::{record_check, SourceFile};

use super::{exit, Io};
use crate::mcp::import::{draft, list_tools, Draft, EndpointDraft};

/// Exit status when the server could not be started or read.
const SERVER_FAILED: i32 = 3;

/// Arguments of `escepine import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    source: Source,
}

#[derive(Debug, clap::Subcommand)]
enum Source {
    /// Start an MCP server (`-- <command …>`), read its tools/list, write draft records.
    Mcp(McpArgs),
}

#[derive(Debug, clap::Args)]
struct McpArgs {
    /// Directory the drafts are written to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Overwrite existing draft files.
    #[arg(long)]
    force: bool,
    /// How long the server gets to start and list its tools.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// The server's command and arguments, after `--`.
    #[arg(last = true, required = true, num_args = 1.., value_name = "COMMAND")]
    command: Vec<String>,
}

pub(crate) fn run(args: &Args, io: &mut Io<'_>) -> i32 {
    match &args.source {
        Source::Mcp(a) => mcp(a, io),
    }
}

/// The workspace the drafts belong to: above the output directory, else the working directory.
fn workspace_for(out: &Path) -> Option<PathBuf> {
    let existing = out.ancestors().find(|p| p.exists())?.to_path_buf();
    WorkspaceBins::find_root(&existing).or_else(|| {
        std::env::current_dir()
            .ok()
            .and_then(|d| WorkspaceBins::find_root(&d))
    })
}

fn mcp(a: &McpArgs, io: &mut Io<'_>) -> i32 {
    let workspace = workspace_for(&a.out);
    let endpoint = match EndpointDraft::for_command(&a.command, workspace.as_deref()) {
        Ok(e) => e,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            return exit::USAGE;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot start the async runtime: {e}");
            return SERVER_FAILED;
        }
    };
    let listed = rt.block_on(list_tools(&a.command, Duration::from_millis(a.timeout_ms)));
    rt.shutdown_timeout(Duration::from_secs(1));
    let server = match listed {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            return SERVER_FAILED;
        }
    };
    if server.tools.is_empty() {
        let _ = writeln!(
            io.err,
            "error: the MCP server lists no tools; nothing to import"
        );
        return SERVER_FAILED;
    }
    let drafts: Vec<Draft> = server
        .tools
        .iter()
        .map(|t| draft(t, &server, &endpoint))
        .collect();

    // Refuse before writing anything: two tools on one file, or files already there.
    let mut refused = false;
    for (i, d) in drafts.iter().enumerate() {
        if let Some(first) = drafts[..i].iter().find(|o| o.tool_id == d.tool_id) {
            let _ = writeln!(
                io.err,
                "error: the MCP tools `{}` and `{}` both map to the tool id `{}`",
                first.mcp_name, d.mcp_name, d.tool_id
            );
            refused = true;
        }
        let path = a.out.join(d.file_name());
        if path.exists() && !a.force {
            let _ = writeln!(
                io.err,
                "error: {} exists (pass --force to overwrite it)",
                path.display()
            );
            refused = true;
        }
    }
    if refused {
        return exit::INVALID;
    }
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        let _ = writeln!(io.err, "error: cannot create {}: {e}", a.out.display());
        return exit::INVALID;
    }
    let mut files = Vec::with_capacity(drafts.len());
    for d in &drafts {
        let path = a.out.join(d.file_name());
        let text = d.text();
        if let Err(e) = std::fs::write(&path, &text) {
            let _ = writeln!(io.err, "error: cannot write {}: {e}", path.display());
            return exit::INVALID;
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
        files.push(SourceFile::new(path, text));
    }

    let bins = workspace
        .as_deref()
        .map(WorkspaceBins::discover)
        .unwrap_or_default();
    let ctx = record_check::Context {
        envelope: None,
        bins: &bins,
    };
    let (_, mut diags) = registry_build::check_records(&files, &ctx);
    let out_dir = a.out.display();
    if !diags.has_errors() {
        diags.sort();
        let _ = write!(io.err, "{}", diags.render_each());
        let _ = writeln!(
            io.out,
            "ok: {} draft(s) pass every record rule; read their REVIEW notes, then run \
             `escepine check --records {out_dir} --policies <DIR> --envelope <FILE>`",
            drafts.len()
        );
        exit::OK
    } else {
        diags.sort();
        let _ = write!(io.err, "{}", diags.render());
        let _ = writeln!(
            io.err,
            "{} draft(s) written; fix the problems above (and read the REVIEW notes), then run \
             `escepine check --records {out_dir} --policies <DIR> --envelope <FILE>`",
            drafts.len()
        );
        exit::INVALID
    }
}
