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
    /// The image cache `--show-root` reads (and fetches into) the image of a tool whose endpoint
    /// names one; default `$ESCEPINE_IMAGE_CACHE`, else `/var/cache/escepine/images` for root,
    /// else `~/.cache/escepine/images`.
    #[arg(long, value_name = "DIR")]
    image_cache: Option<PathBuf>,
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
            show_roots(&reg, args, io)
        }
        Err(diags) => {
            let _ = write!(io.err, "{}", diags.render());
            exit::INVALID
        }
    }
}

/// `--show-root`: the root listing of each named tool. A tool's image is made ready in the
/// image cache first (fetched, verified and unpacked if it is not there yet), as the commands
/// that run tools do at start-up.
fn show_roots(reg: &registry_build::Registry, args: &Args, io: &mut Io<'_>) -> i32 {
    let tools = &args.show_root;
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
        let image = match &tool.endpoint.image {
            None => None,
            Some(reference) => {
                let ready = match super::tool_run::image_store(args.image_cache.as_deref()) {
                    Ok(store) => rt
                        .block_on(crate::images::ensure(
                            reference,
                            reg.envelope.as_ref(),
                            &store,
                        ))
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e),
                };
                match ready {
                    Ok((image, _)) => Some(image),
                    Err(e) => {
                        let _ = writeln!(
                            io.err,
                            "error: the root of `{id}`: its image `{}` cannot be used: {e}",
                            reference.raw
                        );
                        code = exit::INVALID;
                        continue;
                    }
                }
            }
        };
        match rt.block_on(crate::sandbox::listing::root_of(
            tool,
            &process,
            image.as_ref(),
        )) {
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
