//! `escepine check`: every registration rule, Cedar strict validation and (with `--sops`) every
//! SOP rule, all problems at once.

use std::path::PathBuf;

use super::{exit, Io, RegistryArgs};

/// Arguments of `escepine check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    registry: RegistryArgs,
    /// Directory of SOP files (`*.json`), or one SOP file, checked against the records.
    #[arg(long, value_name = "DIR")]
    sops: Vec<PathBuf>,
    /// List what the sandbox root of tool TOOL will hold (copies of its binary and libraries,
    /// bound read-only paths, or its image's tree, and what every sandbox gets). Repeatable.
    #[arg(long, value_name = "TOOL")]
    show_root: Vec<String>,
}

pub(crate) fn run(args: &Args, io: &mut Io<'_>) -> i32 {
    if args.registry.policies.is_none() {
        let _ = writeln!(
            io.err,
            "error: `escepine check` needs --policies DIR (the Cedar policies to validate)"
        );
        return exit::USAGE;
    }
    let mut sources = args.registry.sources();
    for s in &args.sops {
        sources = sources.sops(s);
    }
    match registry_build::load(&sources) {
        Ok(reg) => {
            for note in &reg.notes {
                let _ = writeln!(io.err, "note: {note}");
            }
            // Warnings and notes of accepted records (a reviewed credential exemption, a
            // script endpoint without a runtime), each labelled by its severity.
            let _ = write!(io.err, "{}", reg.remarks.render_each());
            let _ = writeln!(
                io.out,
                "ok: {} tools, {} policies valid in strict mode ({})",
                reg.records.len(),
                reg.cedar.policies.policies().count(),
                reg.records
                    .iter()
                    .map(|r| r.tool_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !args.sops.is_empty() {
                let _ = writeln!(
                    io.out,
                    "ok: {} SOP{} valid ({})",
                    reg.sops.len(),
                    if reg.sops.len() == 1 { "" } else { "s" },
                    reg.sops
                        .iter()
                        .map(|s| format!("{} {}", s.sop_id, s.version))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            show_roots(&reg, &args.show_root, io)
        }
        Err(diags) => {
            let _ = write!(io.err, "{}", diags.render());
            exit::INVALID
        }
    }
}

/// `--show-root`: the root listing of each named tool.
fn show_roots(reg: &registry_build::Registry, tools: &[String], io: &mut Io<'_>) -> i32 {
    if tools.is_empty() {
        return exit::OK;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.err, "error: cannot start the async runtime: {e}");
            return exit::INVALID;
        }
    };
    let process = crate::executor::ProcessExecutor::new();
    let mut code = exit::OK;
    for id in tools {
        let Some(tool) = reg.get(id) else {
            let _ = writeln!(io.err, "error: --show-root: no tool `{id}` in the records");
            code = exit::USAGE;
            continue;
        };
        match rt.block_on(crate::sandbox::listing::root_of(tool, &process, None)) {
            Ok(entries) => {
                let _ = writeln!(io.out, "root of `{id}`:");
                for e in entries {
                    let _ = writeln!(io.out, "  {e}");
                }
            }
            Err(e) => {
                let _ = writeln!(io.err, "error: the root of `{id}`: {e}");
                code = exit::INVALID;
            }
        }
    }
    code
}
