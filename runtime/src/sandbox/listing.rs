//! What a tool's sandbox root will hold, listed before any sandbox exists (`escepine check
//! --show-root TOOL`): a binary's copies (the binary, its ELF interpreter and libraries, a
//! script's interpreter, the CA certificates), the host paths bound read-only, or an image's
//! tree; and what every sandbox gets (device nodes, a minimal `/etc`, `/proc`, `/workspace`),
//! with a loader cache of a binary's libraries where the host has `ldconfig`.

use std::fmt;
use std::path::PathBuf;

use escepine_registry::record::ToolRecord;

use crate::executor::{ExecError, ProcessExecutor};
use escepine_sandbox::deps::{self, DepCache};
use escepine_sandbox::protocol::WORKSPACE;
use escepine_sandbox::root::{self, DEVICES};
use escepine_sandbox::ToolImage;

/// Where an entry of the root comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSource {
    /// A copy of the host file (hashed while copied when the record pins it).
    Copied,
    /// The host path itself, bound read-only (`sandbox_profile.read_only`).
    Bound,
    /// A top-level entry of the tool's image.
    Image,
    /// Made by the sandbox for every tool.
    Made,
}

/// One entry of a sandbox root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootEntry {
    /// The path inside the sandbox (the same as on the host for copies and binds).
    pub path: PathBuf,
    /// Where it comes from.
    pub source: RootSource,
}

impl fmt::Display for RootEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            RootSource::Copied => "copied from the host",
            RootSource::Bound => "bound read-only from the host",
            RootSource::Image => "from the image",
            RootSource::Made => "made for every sandbox",
        };
        write!(f, "{}  ({source})", self.path.display())
    }
}

/// The root of `tool`'s sandboxes: on `image` when its endpoint names one, else its binary
/// found (and its digest checked) by `process`.
///
/// # Errors
/// As [`ProcessExecutor::program`], or when the binary's dependencies cannot be read.
pub async fn root_of(
    tool: &ToolRecord,
    process: &ProcessExecutor,
    image: Option<&ToolImage>,
) -> Result<Vec<RootEntry>, ExecError> {
    let mut out = Vec::new();
    match image {
        Some(image) => out.extend(image.top_level().into_iter().map(|path| RootEntry {
            path,
            source: RootSource::Image,
        })),
        None => {
            let program = process.program(tool).await?;
            let identity = deps::identity(&program).map_err(|e| ExecError::Spawn(e.to_string()))?;
            let paths =
                tokio::task::spawn_blocking(move || DepCache::default().needs(&program, &identity))
                    .await
                    .map_err(|e| ExecError::Spawn(e.to_string()))?
                    .map_err(|e| ExecError::Spawn(e.to_string()))?;
            out.extend(paths.into_iter().map(|path| RootEntry {
                path,
                source: RootSource::Copied,
            }));
        }
    }
    if image.is_none() && root::ldconfig().is_some() {
        out.push(RootEntry {
            path: PathBuf::from(root::LOADER_CACHE),
            source: RootSource::Made,
        });
    }
    out.extend(tool.sandbox_profile().read_only.iter().map(|p| RootEntry {
        path: p.clone(),
        source: RootSource::Bound,
    }));
    let made = DEVICES.iter().map(|d| format!("/dev/{d}")).chain(
        [
            "/etc/hosts",
            "/etc/passwd",
            "/etc/group",
            "/proc",
            WORKSPACE,
        ]
        .map(String::from),
    );
    out.extend(made.map(|p| RootEntry {
        path: PathBuf::from(p),
        source: RootSource::Made,
    }));
    Ok(out)
}
