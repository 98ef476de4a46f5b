//! `escepine check`: every registration rule, Cedar strict validation and (with `--sops`) every
//! SOP rule, all problems at once.

use std::path::{Path, PathBuf};

use super::tool_run::image_store;
use super::{exit, Io, RegistryArgs};
use escepine_runtime::images;

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
    /// The image cache the tools' `endpoint.image` references are resolved into (fetched,
    /// verified and unpacked; default as for `call`).
    #[arg(long, value_name = "DIR")]
    image_cache: Option<PathBuf>,
    /// The Cargo workspace whose `[[bin]]`s endpoints may name (default: the one holding the
    /// records, else the one the command runs in), for a tool host outside a workspace.
    #[arg(long, value_name = "DIR")]
    workspace_root: Option<PathBuf>,
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
    if let Some(root) = &args.workspace_root {
        sources = sources.workspace_root(root);
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
            let images = match resolve_images(&rt, &reg, args.image_cache.as_deref(), io) {
                Ok(images) => images,
                Err(code) => return code,
            };
            show_roots(&rt, &reg, &images, &args.show_root, io)
        }
        Err(diags) => {
            let _ = write!(io.err, "{}", diags.render());
            exit::INVALID
        }
    }
}

/// Every `endpoint.image` fetched, verified and unpacked into the image cache (a cached image
/// costs no request), each reported.
fn resolve_images(
    rt: &tokio::runtime::Runtime,
    reg: &registry_build::Registry,
    cache: Option<&Path>,
    io: &mut Io<'_>,
) -> Result<Vec<images::Prepared>, i32> {
    if !reg.records.iter().any(|r| r.endpoint.image.is_some()) {
        return Ok(Vec::new());
    }
    let store = image_store(cache).map_err(|e| {
        let _ = writeln!(io.err, "error: {e}");
        exit::INVALID
    })?;
    match rt.block_on(images::prepare(reg, &store)) {
        Ok(prepared) => {
            for p in &prepared {
                let _ = writeln!(
                    io.out,
                    "ok: image {} ({}): {}",
                    p.image.reference,
                    p.tools.join(", "),
                    if p.fetched.blobs == 0 {
                        "cached".to_string()
                    } else {
                        format!(
                            "fetched {} blobs, {} bytes",
                            p.fetched.blobs, p.fetched.bytes
                        )
                    }
                );
            }
            Ok(prepared)
        }
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            Err(exit::INVALID)
        }
    }
}

/// `--show-root`: the root listing of each named tool.
fn show_roots(
    rt: &tokio::runtime::Runtime,
    reg: &registry_build::Registry,
    images: &[images::Prepared],
    tools: &[String],
    io: &mut Io<'_>,
) -> i32 {
    if tools.is_empty() {
        return exit::OK;
    }
    let process = escepine_runtime::executor::ProcessExecutor::new();
    let mut code = exit::OK;
    for id in tools {
        let Some(tool) = reg.get(id) else {
            let _ = writeln!(io.err, "error: --show-root: no tool `{id}` in the records");
            code = exit::USAGE;
            continue;
        };
        let image = tool.endpoint.image.as_ref().and_then(|r| {
            images
                .iter()
                .find(|p| p.image.reference == r.raw)
                .map(|p| &p.image)
        });
        match rt.block_on(escepine_runtime::sandbox::listing::root_of(
            tool, &process, image,
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
