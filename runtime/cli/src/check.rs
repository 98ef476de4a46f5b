//! `escepine check`: every registration rule, Cedar strict validation and (with `--sops`) every
//! SOP rule, all problems at once.

use std::path::{Path, PathBuf};

use escepine_runtime::images;

use crate::args::RegistryArgs;
use crate::error::{CliError, CliResult};
use crate::exit;
use crate::io::Io;
use crate::tool_run::image_store;

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

/// Check; print what is valid on stdout, notes and remarks on stderr.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
    if args.registry.policies.is_none() {
        return Err(CliError::new(
            exit::USAGE,
            "`escepine check` needs --policies DIR (the Cedar policies to validate)",
        ));
    }
    let mut sources = args.registry.sources();
    for s in &args.sops {
        sources = sources.sops(s);
    }
    if let Some(root) = &args.workspace_root {
        sources = sources.workspace_root(root);
    }
    let reg = crate::args::load(&sources)?;
    for note in reg.notes() {
        let _ = writeln!(io.err, "note: {note}");
    }
    // Warnings and notes of accepted records (a reviewed credential exemption, a script
    // endpoint without a runtime), each labelled by its severity.
    let _ = write!(io.err, "{}", reg.remarks().render_each());
    let _ = writeln!(
        io.out,
        "ok: {} tools, {} policies valid in strict mode ({})",
        reg.records().len(),
        reg.cedar().policies.policies().count(),
        reg.records()
            .iter()
            .map(|r| r.tool_id())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !args.sops.is_empty() {
        let _ = writeln!(
            io.out,
            "ok: {} SOP{} valid ({})",
            reg.sops().len(),
            if reg.sops().len() == 1 { "" } else { "s" },
            reg.sops()
                .iter()
                .map(|s| format!("{} {}", s.sop_id, s.version))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            CliError::new(
                exit::INVALID,
                format!("cannot start the async runtime: {e}"),
            )
        })?;
    let images = resolve_images(&rt, &reg, args.image_cache.as_deref(), io)?;
    show_roots(&rt, &reg, &images, &args.show_root, io)
}

fn resolve_images(
    rt: &tokio::runtime::Runtime,
    reg: &escepine_policy::BoundRegistry,
    cache: Option<&Path>,
    io: &mut Io<'_>,
) -> Result<Vec<images::Prepared>, CliError> {
    if !reg.records().iter().any(|r| r.endpoint().image.is_some()) {
        return Ok(Vec::new());
    }
    let store = image_store(cache).map_err(|e| CliError::new(exit::INVALID, e))?;
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
        Err(e) => Err(CliError::new(exit::INVALID, e)),
    }
}

/// `--show-root`: the root listing of each named tool.
fn show_roots(
    rt: &tokio::runtime::Runtime,
    reg: &escepine_policy::BoundRegistry,
    images: &[images::Prepared],
    tools: &[String],
    io: &mut Io<'_>,
) -> CliResult {
    if tools.is_empty() {
        return Ok(());
    }
    let process = escepine_runtime::executor::ProcessExecutor::new();
    // Every tool is tried; the errors are reported together, the last one's status kept.
    let mut code = exit::OK;
    let mut errors = String::new();
    for id in tools {
        let Some(tool) = reg.get(id) else {
            errors.push_str(&format!(
                "error: --show-root: no tool `{id}` in the records\n"
            ));
            code = exit::USAGE;
            continue;
        };
        let image = tool.endpoint().image.as_ref().and_then(|r| {
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
                errors.push_str(&format!("error: the root of `{id}`: {e}\n"));
                code = exit::INVALID;
            }
        }
    }
    match code {
        exit::OK => Ok(()),
        code => Err(CliError::text(code, errors)),
    }
}
