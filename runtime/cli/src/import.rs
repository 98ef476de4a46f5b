//! `escepine import mcp --out DIR [--read-only PATH]... [--image REF [--image-cache DIR]]
//! [--envelope FILE] [--unsandboxed] [--force] [--timeout-ms N] -- <command …>`: draft records
//! from an existing MCP server ([`escepine_mcp::import`]).
//!
//! The server runs **in a sandbox** by default — the runtime's own Linux sandbox, as root:
//! no host environment (`PATH`, `LANG`, `HOME` and `TMPDIR` only), no network, the server's
//! binary with its interpreter and libraries, and every `--read-only PATH` (an interpreter's
//! installation, a virtualenv, a `node_modules` tree, the server's code; each also written
//! into every draft's `sandbox_profile.read_only`). `--unsandboxed` is the explicit opt-out: a
//! host process with a cleared environment (`PATH` as tools get it, `LANG`, the host's `HOME`).
//!
//! With `--image REF` (an OCI image pinned by digest) the server runs in a sandbox on the
//! image's root instead: the image is fetched, verified and unpacked into the image cache
//! (`--image-cache DIR`, else the default one) first — over plain HTTP only when `--envelope`
//! lists its registry as `http://host:port` — and the command after `--` is a path or name
//! inside the image, kept as given; with none, the image's `Entrypoint` and `Cmd` run. The
//! image's `Env` and `WorkingDir` apply. The drafts name the image in `endpoint.image` (its
//! digest pins the server: no `sha256`).
//!
//! The command is kept as given, a path made absolute against the working directory
//! lexically (a virtualenv's `python` symlink is not resolved); an argument naming an existing
//! file of the working directory (`python3 server.py`), or a directory written as a path
//! (`./data`), is made absolute too and bound read-only (in the listing's sandbox and in every
//! draft's `sandbox_profile.read_only`), each printed; the value of `--flag=path` likewise
//! ([`escepine_mcp::import::endpoint`] says which arguments). A `--read-only` path may be
//! relative to the working directory; it is joined to it, never normalised, and checked by the
//! rule of records and the envelope ([`escepine_registry::host_path::parse_against`]: `a/../b` is
//! refused with `check`'s message). A listing that names a tool twice or gives a key twice in
//! one object is refused (exit 3), naming the tool and the pointer. Each tool of the raw
//! `tools/list` is drafted on its own and checked with the registry's own record rules
//! (`--envelope` for the coverage rules): a draft passing them with nothing left to decide is
//! written to `DIR/<tool id>.json`; any other to `DIR/needs-decision/<tool id>.json`
//! (`escepine check --records DIR` does not read that folder), its decisions listed — tool and
//! JSON pointer — in its `$comment` and on stdout. Existing drafts are kept unless `--force`
//! (which also removes a draft of the same tool from the other folder).
//!
//! With `--url URL` the server is remote (streamable HTTP: `https`, or plain `http` on a
//! loopback address; no envelope is needed): it is listed by the runtime's own MCP client
//! ([`crate::import_remote`]), authenticated with a bearer secret (`--bearer-secret NAME`) or a
//! client-credentials token (`--oauth-client FILE`), the values from `--secrets FILE` or the
//! environment; the drafts name `"transport": "mcp-http"`, the URL, the server's tool name,
//! the pin and the `auth` with secret names only, and list the origins in their egress.
//!
//! Exit status: 0 the server was listed and every tool drafted (decisions may remain); 1
//! nothing written (a draft exists, two tools map to one id, a file cannot be written); 2
//! usage (no command and no image, an image reference not pinned by digest, `--image` with
//! `--unsandboxed`, an unreadable envelope, a `--read-only` path that is not normal); 3 the
//! server could not be started or listed (its stderr's last lines quoted), including an image
//! that cannot be fetched, verified or unpacked, and an ambiguous listing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use escepine_contract::ImageRef;
use escepine_registry::endpoint;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::host_path;

use escepine_mcp::import::endpoint::absolute;
use escepine_mcp::import::listing::{list_in_image, list_sandboxed, list_unsandboxed};
use escepine_mcp::import::{EndpointDraft, ImportError, ServerTools};
use escepine_runtime::images;
use escepine_runtime::sandbox::SandboxExecutor;

use crate::error::{CliError, CliResult};
use crate::exit::{self, SERVER_FAILED};
use crate::import_drafts::{finish, Output};
use crate::io::Io;
use crate::tool_run::image_store;

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
    /// Directory the drafts are written to (created if missing); drafts needing a decision go
    /// to its `needs-decision` folder.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Overwrite existing draft files.
    #[arg(long)]
    force: bool,
    /// How long the server gets to start and list its tools.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// A host path the server needs, bound read-only at its own path in the sandbox and
    /// written into every draft's `sandbox_profile.read_only` (repeatable).
    #[arg(long = "read-only", value_name = "PATH")]
    read_only: Vec<PathBuf>,
    /// An OCI image pinned by digest (`host:port/name@sha256:…`, `oci:/layout@sha256:…`) to
    /// run the server from, on the image's root; the command after `--` is then a path or name
    /// inside the image, and may be left out (the image's Entrypoint and Cmd).
    #[arg(long, value_name = "REF")]
    image: Option<String>,
    /// The image cache `--image` is fetched into; default `$ESCEPINE_IMAGE_CACHE`, else
    /// `/var/cache/escepine/images` for root, else `~/.cache/escepine/images`.
    #[arg(long, value_name = "DIR", requires = "image")]
    image_cache: Option<PathBuf>,
    /// The deployment envelope the drafts are checked against (coverage rules).
    #[arg(long, value_name = "FILE")]
    envelope: Option<PathBuf>,
    /// Run the server as a host process instead of in a sandbox (cleared environment).
    #[arg(long)]
    unsandboxed: bool,
    /// A remote server's MCP endpoint (streamable HTTP; `https`, or plain `http` on a loopback
    /// address) to import instead of a command: the drafts name `"transport": "mcp-http"`.
    #[arg(long, value_name = "URL", conflicts_with_all = ["image", "unsandboxed", "read_only"])]
    url: Option<String>,
    /// With `--url`: the name of the secret holding a bearer token for the server (its value
    /// from `--secrets FILE`, else the environment variable of that name).
    #[arg(
        long,
        value_name = "NAME",
        requires = "url",
        conflicts_with = "oauth_client"
    )]
    bearer_secret: Option<String>,
    /// With `--url`: a JSON file holding the drafts' `endpoint.auth.oauth` object
    /// (`token_endpoint`, `client_id`, `client_secret` — a secret's name —, `scopes`,
    /// `resource`): the listing authenticates with a client-credentials token.
    #[arg(long, value_name = "FILE", requires = "url")]
    oauth_client: Option<PathBuf>,
    /// With `--url`: a file of secret values (`NAME=value` lines, as `call --secrets`), read
    /// before the environment.
    #[arg(long, value_name = "FILE", requires = "url")]
    secrets: Option<PathBuf>,
    /// The server's command and arguments, after `--` (optional with `--image`).
    #[arg(last = true, num_args = 0.., value_name = "COMMAND")]
    command: Vec<String>,
}

impl McpArgs {
    /// Where the drafts go.
    fn output(&self) -> Output<'_> {
        Output {
            out: &self.out,
            force: self.force,
        }
    }
}

/// Import from the source.
pub(crate) fn exec(args: &Args, io: &mut Io<'_>) -> CliResult {
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

fn mcp(a: &McpArgs, io: &mut Io<'_>) -> CliResult {
    let usage = |msg: String| Err(CliError::new(exit::USAGE, msg));
    if let Some(url) = &a.url {
        if !a.command.is_empty() {
            return usage("--url imports a remote server; give no command after `--`".into());
        }
        return crate::import_remote::import(
            &crate::import_remote::RemoteImport {
                url,
                bearer_secret: a.bearer_secret.as_deref(),
                oauth_client: a.oauth_client.as_deref(),
                secrets: a.secrets.as_deref(),
                envelope: a.envelope.as_deref(),
                timeout: Duration::from_millis(a.timeout_ms),
                output: a.output(),
            },
            io,
        );
    }
    let image = match &a.image {
        None => None,
        Some(_) if a.unsandboxed => {
            return usage(
                "--image runs the server in a sandbox on the image's root; it cannot be \
                 combined with --unsandboxed"
                    .into(),
            )
        }
        Some(raw) => match ImageRef::parse(raw) {
            Ok(r) => Some(r),
            Err(e) => return usage(format!("--image: {e}")),
        },
    };
    if image.is_none() && a.command.is_empty() {
        return usage(
            "give the server's command after `--` (escepine import mcp --out DIR -- <command \
             …>), or an image to run it from (--image REF)"
                .into(),
        );
    }
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => return usage(format!("cannot read the working directory: {e}")),
    };
    let envelope = match &a.envelope {
        None => None,
        Some(path) => match Envelope::load(path) {
            Ok(e) => Some(e),
            Err(d) => return usage(d.render()),
        },
    };
    let workspace = workspace_for(&a.out);
    let endpoint = match &image {
        Some(r) => EndpointDraft::in_image(&r.raw, &a.command),
        None => match EndpointDraft::for_command(&a.command, &cwd, workspace.as_deref()) {
            Ok(e) => e,
            Err(e) => return usage(e.to_string()),
        },
    };
    let mut given = Vec::with_capacity(a.read_only.len());
    for p in &a.read_only {
        let checked = p
            .to_str()
            .ok_or_else(|| format!("`{}` is not UTF-8", p.display()))
            .and_then(|text| host_path::parse_against(text, &cwd).map_err(|e| e.to_string()));
        match checked {
            Ok(path) => given.push(path),
            Err(why) => return usage(format!("--read-only {}: {why}", p.display())),
        }
    }
    let read_only = endpoint.read_only(&given);
    let shown: Vec<String> = read_only.iter().map(|p| p.display().to_string()).collect();
    for arg in &endpoint.absolute_args {
        let _ = writeln!(
            io.out,
            "made absolute: argument {} `{}` -> `{}` ({} of the working directory{})",
            arg.index + 1,
            arg.given,
            arg.arg,
            if arg.is_dir { "a directory" } else { "a file" },
            if given.iter().any(|p| host_path::under(&arg.path, p)) {
                ""
            } else {
                "; added to sandbox_profile.read_only"
            }
        );
    }

    let server = Server {
        image: image.as_ref(),
        envelope: envelope.as_ref(),
        cwd: &cwd,
        args: &endpoint.args,
        read_only: &read_only,
    };
    let listed = list(a, &server).map_err(|e| CliError::new(SERVER_FAILED, e))?;
    finish(
        &a.output(),
        &listed,
        &endpoint,
        &shown,
        envelope.as_ref(),
        workspace.as_deref(),
        io,
    )
}

/// Where and how the server to list runs.
struct Server<'a> {
    /// The image to run it from (`--image`).
    image: Option<&'a ImageRef>,
    /// The envelope (which says whether the image's registry is reached over plain HTTP).
    envelope: Option<&'a Envelope>,
    /// The working directory a relative command is made absolute against.
    cwd: &'a Path,
    /// The server's arguments as drafted (those naming paths made absolute); unused with an
    /// image, whose command is kept as given.
    args: &'a [String],
    /// The drafts' read-only paths: the `--read-only` paths, then those the arguments name.
    read_only: &'a [PathBuf],
}

/// Start the server as asked and read its tools.
fn list(a: &McpArgs, server: &Server<'_>) -> Result<ServerTools, ImportError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ImportError::Spawn {
            command: a.command.join(" "),
            why: format!("cannot start the async runtime: {e}"),
        })?;
    let timeout = Duration::from_millis(a.timeout_ms);
    let result = if a.unsandboxed {
        // The program as given (the host resolves it), the arguments as drafted.
        let command: Vec<String> = a
            .command
            .first()
            .into_iter()
            .chain(server.args)
            .cloned()
            .collect();
        rt.block_on(list_unsandboxed(&command, timeout))
    } else if let Some(image) = server.image {
        rt.block_on(list_image(a, server, image, timeout))
    } else {
        let program = a.command.first().ok_or(ImportError::NoCommand)?;
        let args = server.args;
        let spawn = |why: String| ImportError::Spawn {
            command: program.clone(),
            why,
        };
        let path = if program.contains('/') {
            absolute(Path::new(program), server.cwd)
        } else {
            endpoint::on_path(program).ok_or_else(|| spawn("not found on PATH".into()))?
        };
        let executor = sandbox(spawn)?;
        rt.block_on(list_sandboxed(
            &executor,
            &path,
            args,
            server.read_only,
            timeout,
        ))
    };
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// The runtime's sandbox executor, or why there is none (`spawn` makes the error).
fn sandbox(spawn: impl Fn(String) -> ImportError) -> Result<SandboxExecutor, ImportError> {
    SandboxExecutor::new().map_err(|e| {
        spawn(format!(
            "no sandbox: {e} (pass --unsandboxed to run the server as a host process)"
        ))
    })
}

/// Fetch `image` into the image cache (before the listing's timeout starts: a fetch is not
/// the server's start-up), then list the server on its root.
async fn list_image(
    a: &McpArgs,
    server: &Server<'_>,
    image: &ImageRef,
    timeout: Duration,
) -> Result<ServerTools, ImportError> {
    let spawn = |why: String| ImportError::Spawn {
        command: format!("the image {}", image.raw),
        why,
    };
    let store = image_store(a.image_cache.as_deref()).map_err(&spawn)?;
    let (root, _) = images::ensure(image, server.envelope, &store)
        .await
        .map_err(|e| spawn(format!("it cannot be fetched, verified or unpacked: {e}")))?;
    let executor = sandbox(spawn)?;
    let (command, args) = a
        .command
        .split_first()
        .map_or(("", &[][..]), |(c, rest)| (c.as_str(), rest));
    list_in_image(&executor, &root, command, args, server.read_only, timeout).await
}
