//! [`SandboxExecutor`]: every attempt in a fresh sandbox — provision, execute, destroy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use escepine_contract::EgressGrant;
use escepine_contract::{Isolation, Transport};
use escepine_registry::record::ToolRecord;
use escepine_sandbox::deps::{self, DepCache};
use escepine_sandbox::protocol::{RELAY_PORT, WORKSPACE};
use escepine_sandbox::{
    Attached, GvisorBackend, ImageLaunch, Job, JobOutput, JobStatus, Limits, LinuxBackend, Sandbox,
    SandboxBackend, SandboxError, SandboxSpec, Teardown, Teardowns, ToolImage, WarmPool,
};
use tokio::time::Instant;

use crate::executor::bounded::read_stderr;
use crate::executor::exit::{self, Finished};
use crate::executor::process::{DEFAULT_STDERR_LIMIT, DEFAULT_STDOUT_LIMIT};
use crate::executor::{
    Attempted, Egress, ExecError, Execution, Executor, Invocation, ProcessExecutor,
};
use crate::mcp::transport::{self, SHUTDOWN_GRACE};
use crate::scrub::Scrubber;
use crate::telemetry::metrics::metrics;
use crate::telemetry::{in_stage_async, Stage};
use escepine_ledger::store::BoxFuture;

/// A warm pool, if the executor keeps one.
type Pool = Option<Arc<WarmPool>>;

/// A warm pool of `size` sandboxes of `backend` (none for 0), whose sandboxes handed back are
/// counted in `teardowns`.
fn pool_of(backend: &Arc<dyn SandboxBackend>, size: usize, teardowns: &Arc<Teardowns>) -> Pool {
    (size > 0).then(|| {
        Arc::new(WarmPool::new(
            Arc::clone(backend),
            size,
            Arc::clone(teardowns),
        ))
    })
}

/// One isolation tier of an executor: its backend and warm pool.
#[derive(Clone, Copy)]
pub struct Tier<'a> {
    /// The backend that provisions the tier's sandboxes.
    pub backend: &'a Arc<dyn SandboxBackend>,
    /// Its warm pool, if the executor keeps one.
    pub pool: Option<&'a Arc<WarmPool>>,
}

impl std::fmt::Debug for Tier<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tier")
            .field("backend", &self.backend.name())
            .field("pool", &self.pool)
            .finish()
    }
}

/// Runs each attempt of a call in its own sandbox (see the [module documentation](super)).
///
/// The binary is found and its `sha256` checked by a [`ProcessExecutor`] (whose bin
/// directories and workspace root apply), before any sandbox is provisioned; the sandbox runs a
/// copy of the binary whose digest is checked again as it is made, so that what runs is what
/// was hashed. The tool's argv and
/// environment are the ones that executor builds (`PATH`, `LANG`, the call id, the idempotency
/// key, the declared secrets), plus `HOME` and `TMPDIR` (the workspace) and, when the tool has
/// egress, `HTTP_PROXY`, `HTTPS_PROXY`, `http_proxy` and `https_proxy`
/// (`http://127.0.0.1:3128`). Stdout and stderr are bounded as in the process executor.
///
/// An `mcp-stdio` server runs in its sandbox the same way, with its streams attached: one MCP
/// session per attempt (`initialize`, `tools/list`, `tools/call`, close), classified exactly as
/// [`crate::mcp::transport`] classifies it for a local process; the server gets
/// [`SHUTDOWN_GRACE`] to exit once its stdin is closed, then the sandbox is destroyed with
/// whatever is left in it.
pub struct SandboxExecutor {
    process: ProcessExecutor,
    backend: Arc<dyn SandboxBackend>,
    pool: Option<Arc<WarmPool>>,
    /// The gVisor tier (`sandbox_profile.isolation` = `gvisor`) and its warm pool.
    gvisor: Option<(Arc<dyn SandboxBackend>, Pool)>,
    pool_size: usize,
    limits: Limits,
    extra_read_only: Vec<PathBuf>,
    images: HashMap<String, Arc<ToolImage>>,
    deps: Arc<DepCache>,
    stdout_limit: usize,
    stderr_limit: usize,
    /// The sandboxes destroyed after their call's result was returned (by this executor, or by
    /// the tasks its pools prepared for their sandboxes' ends).
    teardowns: Arc<Teardowns>,
}

impl std::fmt::Debug for SandboxExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxExecutor")
            .field("backend", &self.backend.name())
            .field("pool", &self.pool)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl SandboxExecutor {
    /// The default: the [`LinuxBackend`] whose init is this program (see
    /// [`LinuxBackend::locate_init`]) for the namespace tier and a [`GvisorBackend`] running
    /// `runsc` from `PATH` for the gVisor tier, default [`Limits`], no warm pool.
    ///
    /// # Errors
    /// [`SandboxError::InitNotDispatched`] when this program did not call
    /// [`init::dispatch`](escepine_sandbox::init::dispatch) first in `main`.
    pub fn new() -> Result<Self, SandboxError> {
        Self::with_runsc(None)
    }

    /// [`SandboxExecutor::new`], the gVisor tier running the `runsc` at `runsc` (`None`: from
    /// `PATH`; a missing `runsc` fails each gVisor call, naming the package to install).
    ///
    /// # Errors
    /// As [`SandboxExecutor::new`].
    pub fn with_runsc(runsc: Option<PathBuf>) -> Result<Self, SandboxError> {
        Ok(Self::with_backend(Arc::new(LinuxBackend::new()?))
            .with_gvisor(Arc::new(GvisorBackend::new(runsc)?)))
    }

    /// An executor provisioning its sandboxes with `backend`.
    pub fn with_backend(backend: Arc<dyn SandboxBackend>) -> Self {
        Self {
            process: ProcessExecutor::new(),
            backend,
            pool: None,
            gvisor: None,
            pool_size: 0,
            limits: Limits::default(),
            extra_read_only: Vec::new(),
            images: HashMap::new(),
            deps: Arc::default(),
            stdout_limit: DEFAULT_STDOUT_LIMIT,
            stderr_limit: DEFAULT_STDERR_LIMIT,
            teardowns: Arc::default(),
        }
    }

    /// Find and check binaries with `process` (its bin directories and workspace root).
    pub fn with_process_executor(mut self, process: ProcessExecutor) -> Self {
        self.process = process;
        self
    }

    /// The tools' resource limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Also put `path` (a host file or directory, copied into each spec's root image) read-only
    /// into every sandbox, at its own path.
    pub fn with_read_only(mut self, path: impl Into<PathBuf>) -> Self {
        self.extra_read_only.push(path.into());
        self
    }

    /// Run the tools whose `endpoint.image` is `image.reference` on that image's root (fetched
    /// and unpacked beforehand: see [`crate::images`]).
    pub fn with_image(mut self, image: ToolImage) -> Self {
        self.images.insert(image.reference.clone(), Arc::new(image));
        self
    }

    /// The image `tool` runs on, if its endpoint names one.
    ///
    /// # Errors
    /// [`ExecError::Permanent`] when the endpoint names an image that was not fetched when the
    /// runtime was built (never fetched inside a call's timeout).
    pub fn image_of(&self, tool: &ToolRecord) -> Result<Option<Arc<ToolImage>>, ExecError> {
        let Some(reference) = tool.endpoint().image.as_ref() else {
            return Ok(None);
        };
        if let Some(pin) = &tool.endpoint().sha256 {
            // Registration refuses this; a record made in code gets the same answer here.
            return Err(ExecError::Spawn(format!(
                "refusing to run `{}`: its `sha256` ({pin}) pins a host binary, but it runs on \
                 the image `{}`, which its digest pins",
                tool.tool_id(),
                reference.raw
            )));
        }
        match self.images.get(&reference.raw) {
            Some(image) => Ok(Some(Arc::clone(image))),
            None => Err(ExecError::Permanent {
                message: format!(
                    "the image `{}` of `{}` was not fetched when the runtime was built (images \
                     are fetched at start-up, never inside a call)",
                    reference.raw,
                    tool.tool_id()
                ),
                stderr: String::new(),
            }),
        }
    }

    /// Keep `size` sandboxes provisioned ahead of demand per tool (0: no pool). Each is used
    /// for one call and destroyed after it.
    pub fn with_warm_pool(mut self, size: usize) -> Self {
        self.pool_size = size;
        self.pool = pool_of(&self.backend, size, &self.teardowns);
        if let Some((backend, pool)) = &mut self.gvisor {
            *pool = pool_of(backend, size, &self.teardowns);
        }
        self
    }

    /// Run the tools whose `sandbox_profile.isolation` is `gvisor` with `backend` (a
    /// [`GvisorBackend`]), with a warm pool of the executor's size. Without it such tools
    /// fail, naming the missing tier.
    pub fn with_gvisor(mut self, backend: Arc<dyn SandboxBackend>) -> Self {
        let pool = pool_of(&backend, self.pool_size, &self.teardowns);
        self.gvisor = Some((backend, pool));
        self
    }

    /// The backend and warm pool of `tool`'s isolation tier.
    ///
    /// # Errors
    /// [`ExecError::Permanent`] when the tool's tier is not configured.
    pub fn tier(&self, tool: &ToolRecord) -> Result<Tier<'_>, ExecError> {
        match tool.sandbox_profile().isolation {
            Isolation::Namespaces => Ok(Tier {
                backend: &self.backend,
                pool: self.pool.as_ref(),
            }),
            Isolation::Gvisor => match &self.gvisor {
                Some((backend, pool)) => Ok(Tier {
                    backend,
                    pool: pool.as_ref(),
                }),
                None => Err(ExecError::Permanent {
                    message: format!(
                        "`{}` runs on the gVisor tier (`isolation`: `gvisor`), which this \
                         runtime has no backend for",
                        tool.tool_id()
                    ),
                    stderr: String::new(),
                }),
            },
        }
    }

    /// Bound the tool's stdout (more is a protocol violation and kills the sandbox).
    pub fn with_stdout_limit(mut self, bytes: usize) -> Self {
        self.stdout_limit = bytes;
        self
    }

    /// Keep at most `bytes` of the tool's stderr.
    pub fn with_stderr_limit(mut self, bytes: usize) -> Self {
        self.stderr_limit = bytes;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn SandboxBackend> {
        &self.backend
    }

    /// The warm pool, if one is configured.
    pub fn pool(&self) -> Option<&Arc<WarmPool>> {
        self.pool.as_ref()
    }

    /// The spec of sandboxes for `tool` with `egress` (resolving and checking its binary).
    ///
    /// # Errors
    /// As [`ProcessExecutor::program`], or when the binary's dependencies cannot be read.
    pub async fn spec(
        &self,
        tool: &ToolRecord,
        egress: &EgressGrant,
    ) -> Result<Arc<SandboxSpec>, ExecError> {
        if let Some(image) = self.image_of(tool)? {
            let launch = tool_launch(tool, &image)?;
            return Ok(self.image_spec(tool, &image, &launch, egress));
        }
        let program = self.process.program(tool).await?;
        self.spec_for(tool, &program, egress)
            .await
            .map_err(spawn_error)
    }

    /// How many sandboxes this executor is destroying in the background: a call returns its
    /// result once its job has ended, before its sandbox is torn down.
    pub fn teardowns_in_flight(&self) -> usize {
        self.teardowns.in_flight()
    }

    /// Waits until every sandbox whose call has returned has been destroyed (its processes
    /// reaped, its proxy stopped, its directory removed): before a program exits, or to start
    /// the next call on a settled machine. Returns at once if none is being destroyed.
    pub async fn teardowns_settled(&self) {
        self.teardowns.settled().await;
    }

    /// Fill the warm pool for `tool` (no-op without a pool).
    ///
    /// # Errors
    /// As [`SandboxExecutor::spec`].
    pub async fn prewarm(&self, tool: &ToolRecord, egress: &EgressGrant) -> Result<(), ExecError> {
        if let Some(pool) = self.tier(tool)?.pool {
            let spec = self.spec(tool, egress).await?;
            pool.fill(&spec);
        }
        Ok(())
    }

    async fn spec_for(
        &self,
        tool: &ToolRecord,
        program: &Path,
        egress: &EgressGrant,
    ) -> Result<Arc<SandboxSpec>, SandboxError> {
        self.spec_of(
            program,
            tool.endpoint().sha256.clone(),
            tool.sandbox_profile().read_only.clone(),
            egress,
        )
        .await
    }

    /// The spec of sandboxes running `program` (pinned to `sha256`), with `binds` (host paths
    /// bound read-only at their own path).
    pub(super) async fn spec_of(
        &self,
        program: &Path,
        sha256: Option<String>,
        binds: Vec<PathBuf>,
        egress: &EgressGrant,
    ) -> Result<Arc<SandboxSpec>, SandboxError> {
        let identity = deps::identity(program)?;
        let mut read_only = match self.deps.known(program, &identity) {
            Some(paths) => paths,
            // The walk reads the program and its libraries: off the runtime's workers.
            None => {
                let (cache, p, id) = (
                    Arc::clone(&self.deps),
                    program.to_path_buf(),
                    identity.clone(),
                );
                tokio::task::spawn_blocking(move || cache.needs(&p, &id))
                    .await
                    .map_err(|e| SandboxError::Dependencies {
                        path: program.display().to_string(),
                        why: e.to_string(),
                    })??
            }
        };
        read_only.extend(self.extra_read_only.iter().cloned());
        Ok(Arc::new(SandboxSpec {
            program: program.to_path_buf(),
            program_identity: identity,
            program_sha256: sha256,
            read_only,
            binds,
            root_tree: None,
            egress: egress.clone(),
            limits: self.limits,
        }))
    }

    /// The spec of sandboxes for `tool` on `image`, started as `launch`: the image's tree is the
    /// root, the program a path inside it; nothing of the host is copied, only the record's
    /// read-only paths bound.
    fn image_spec(
        &self,
        tool: &ToolRecord,
        image: &ToolImage,
        launch: &ImageLaunch,
        egress: &EgressGrant,
    ) -> Arc<SandboxSpec> {
        image_root_spec(
            image,
            launch,
            tool.sandbox_profile().read_only.clone(),
            egress,
            self.limits,
        )
    }

    /// The job for `inv` in a sandbox of `spec`.
    fn job(
        &self,
        spec: &SandboxSpec,
        image: Option<(&ToolImage, &ImageLaunch)>,
        inv: &Invocation<'_>,
        deadline: Instant,
    ) -> Result<Job, ExecError> {
        let command = self.process.command(&spec.program, inv)?;
        let std = command.as_std();
        let mut argv = vec![spec.program.to_string_lossy().into_owned()];
        let own_env = std.get_envs().filter_map(|(k, v)| {
            v.map(|v| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
        });
        let (mut env, cwd): (Vec<(String, String)>, Option<String>) = match image {
            Some((image, launch)) => {
                argv.extend(launch.args.iter().cloned());
                (image_env(image, own_env), image.working_dir.clone())
            }
            None => {
                argv.extend(std.get_args().map(|a| a.to_string_lossy().into_owned()));
                (own_env.collect(), None)
            }
        };
        env.push(("HOME".into(), WORKSPACE.into()));
        env.push(("TMPDIR".into(), WORKSPACE.into()));
        if !spec.egress.is_empty() {
            let proxy = format!("http://127.0.0.1:{RELAY_PORT}");
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
                env.push((name.into(), proxy.clone()));
            }
        }
        let stdin = serde_json::to_string(inv.payload).map_err(|e| {
            ExecError::Spawn(format!(
                "cannot encode the payload of `{}`: {e}",
                inv.tool.tool_id()
            ))
        })?;
        Ok(Job {
            argv,
            env,
            cwd,
            stdin,
            files: inv.files.clone(),
            deadline,
            stdout_limit: self.stdout_limit,
            stderr_limit: self.stderr_limit,
            scrubber: Some(Arc::new(inv.scrubber())),
        })
    }

    /// One attempt with its egress evidence: nothing before its sandbox exists, the proxy's
    /// requests and refusals after, whatever the attempt's end.
    async fn run(&self, inv: Invocation<'_>) -> Attempted {
        let deadline = Instant::now() + inv.timeout;
        let (spec, job) = match self.prepare(&inv, deadline).await {
            Ok(prepared) => prepared,
            Err(e) => {
                return Attempted {
                    result: Err(e),
                    egress: Egress::default(),
                }
            }
        };
        let timed_out = || ExecError::TimedOut(inv.timeout);
        let Tier { backend, pool } = match self.tier(inv.tool) {
            Ok(tier) => tier,
            Err(e) => {
                return Attempted {
                    result: Err(e),
                    egress: Egress::default(),
                }
            }
        };
        let provision = async {
            match pool {
                Some(pool) => pool.take_warm(Arc::clone(&spec)).await,
                None => backend
                    .provision(Arc::clone(&spec))
                    .await
                    .map(|s| (s, false)),
            }
        };
        // A cancelled provisioning drops the half-built sandbox, which kills it.
        let provisioned = in_stage_async(Stage::SandboxProvision, |span| async move {
            let provisioned = tokio::time::timeout_at(deadline, provision).await;
            if let Ok(Ok((_, warm))) = &provisioned {
                span.record("escepine.sandbox.warm", *warm);
                metrics().provisioned(*warm);
            }
            provisioned
        })
        .await
        .map_err(|_| timed_out())
        .and_then(|p| p.map(|(sandbox, _)| sandbox).map_err(spawn_error));
        let mut sandbox = match provisioned {
            Ok(sandbox) => sandbox,
            Err(e) => {
                return Attempted {
                    result: Err(e),
                    egress: Egress::default(),
                }
            }
        };
        if inv.tool.endpoint().transport == Transport::McpStdio {
            let attempted = self
                .mcp_session(backend, sandbox, job, &inv, deadline)
                .await;
            refill(pool, &spec);
            return attempted;
        }
        let result = backend.execute(&mut sandbox, job).await;
        let tool = inv.tool.tool_id();
        match result {
            Ok(mut out) => {
                let egress = Egress {
                    requests: std::mem::take(&mut out.egress_requests),
                    refusals: std::mem::take(&mut out.egress_refusals),
                    credential: None,
                };
                let result = classify(tool, out, self.stdout_limit, &self.limits, &inv.scrubber());
                // The job has ended and reported its requests and refusals: the teardown
                // (reaping, stopping the proxy, removing its directory) need not delay the
                // caller. A pooled sandbox goes back to the task its pool prepared for its end,
                // which destroys it and starts its replacement once its processes have ended:
                // this wakes nothing. Any other is destroyed on a task started here, and the
                // replacement too, once the answer is made: each wakes a runtime worker, and the
                // replacement's provisioning (a clone of the zygote, a new PID 1) would
                // otherwise run beside the rest of this call's end and, on a machine of few
                // cores, preempt it.
                if let Err(sandbox) = sandbox.retire() {
                    let backend = Arc::clone(backend);
                    self.teardowns.spawn(async move {
                        backend.destroy(sandbox).await;
                    });
                    refill(pool, &spec);
                }
                Attempted { result, egress }
            }
            Err(e) => {
                refill(pool, &spec);
                let teardown = backend.destroy(sandbox).await;
                let result = match e {
                    SandboxError::TimedOut => Err(timed_out()),
                    e => Err(ExecError::Spawn(e.to_string())),
                };
                Attempted {
                    result,
                    egress: egress_of(teardown),
                }
            }
        }
    }

    /// The spec and the job of an attempt: the tool's image or binary resolved, the binary's
    /// digest checked, the sandbox's spec made; nothing runs yet.
    async fn prepare(
        &self,
        inv: &Invocation<'_>,
        deadline: Instant,
    ) -> Result<(Arc<SandboxSpec>, Job), ExecError> {
        let timed_out = || ExecError::TimedOut(inv.timeout);
        let image = self.image_of(inv.tool)?;
        // How the tool starts in its image: resolved once, for the spec and the job.
        let image = match image {
            Some(image) => {
                let launch = tool_launch(inv.tool, &image)?;
                Some((image, launch))
            }
            None => None,
        };
        let spec = match &image {
            Some((image, launch)) => self.image_spec(inv.tool, image, launch, inv.egress),
            None => {
                // The binary's digest is checked before any sandbox exists.
                let program = tokio::time::timeout_at(deadline, self.process.program(inv.tool))
                    .await
                    .map_err(|_| timed_out())??;
                tokio::time::timeout_at(deadline, self.spec_for(inv.tool, &program, inv.egress))
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(spawn_error)?
            }
        };
        let job = self.job(&spec, image.as_ref().map(|(i, l)| (&**i, l)), inv, deadline)?;
        Ok((spec, job))
    }
}

/// The proxy's requests and refusals of a sandbox, from its teardown.
fn egress_of(teardown: Teardown) -> Egress {
    Egress {
        requests: teardown.egress_requests,
        refusals: teardown.egress_refusals,
        credential: None,
    }
}

/// Once a job has ended, provision the warm pool's replacement (no-op without a pool).
fn refill(pool: Option<&Arc<WarmPool>>, spec: &Arc<SandboxSpec>) {
    if let Some(pool) = pool {
        pool.fill(spec);
    }
}

impl SandboxExecutor {
    /// One `mcp-stdio` attempt in `sandbox` (see the type's documentation). The sandbox is
    /// destroyed before this returns, so the server's stderr is complete and the proxy's
    /// refusals are known.
    async fn mcp_session(
        &self,
        backend: &Arc<dyn SandboxBackend>,
        mut sandbox: Sandbox,
        job: Job,
        inv: &Invocation<'_>,
        deadline: Instant,
    ) -> Attempted {
        let tool = inv.tool.tool_id();
        let attached = match backend.attach(&mut sandbox, job).await {
            Ok(a) => a,
            Err(e) => {
                let teardown = backend.destroy(sandbox).await;
                return Attempted {
                    result: Err(ExecError::Spawn(format!(
                        "cannot start the MCP server of `{tool}`: {e}"
                    ))),
                    egress: egress_of(teardown),
                };
            }
        };
        let Attached {
            stdin,
            stdout,
            stderr,
            status,
        } = attached;
        let session = async {
            let outcome = transport::call_over(
                stdout,
                stdin,
                inv.tool,
                inv.payload,
                inv.trace,
                self.stdout_limit,
            )
            .await;
            // The session closed the server's stdin: let it exit on its own, briefly.
            let grace = Instant::now() + SHUTDOWN_GRACE;
            let ended = tokio::time::timeout_at(grace.min(deadline), status)
                .await
                .ok()
                .and_then(Result::ok);
            (outcome, ended)
        };
        let driven = async {
            let finished = tokio::time::timeout_at(deadline, session).await;
            // Destroying the sandbox ends every process in it, which closes its stderr.
            let teardown = backend.destroy(sandbox).await;
            (finished, teardown)
        };
        let scrubber = inv.scrubber();
        let ((finished, teardown), stderr) =
            tokio::join!(driven, read_stderr(stderr, self.stderr_limit, &scrubber));
        let memory_exhausted = teardown.memory_exhausted;
        let egress = egress_of(teardown);
        let Ok((outcome, ended)) = finished else {
            return Attempted {
                result: Err(ExecError::TimedOut(inv.timeout)),
                egress,
            };
        };
        if memory_exhausted && outcome.is_err() {
            return Attempted {
                result: Err(ExecError::Permanent {
                    message: out_of_memory(tool, &self.limits),
                    stderr,
                }),
                egress,
            };
        }
        Attempted {
            result: transport::classify(tool, outcome, ended, stderr, &scrubber),
            egress,
        }
    }
}

impl SandboxExecutor {
    /// Start an MCP server outside any call (what `escepine import mcp` lists): `program` (an
    /// absolute path) with `args`, in a fresh sandbox provisioned as for a tool (its binary,
    /// interpreter and libraries, the executor's read-only paths) plus `read_only`, no network,
    /// and no host environment — only `PATH`, `LANG`, `HOME` and `TMPDIR` (the workspace).
    /// The server's streams are handed back; [`ServerSession::destroy`] ends it.
    ///
    /// # Errors
    /// [`ExecError::Spawn`] when the sandbox cannot be provisioned or the server not started.
    pub async fn attach_server(
        &self,
        program: &Path,
        args: &[String],
        read_only: &[PathBuf],
    ) -> Result<ServerSession, ExecError> {
        let spec = self
            .spec_of(program, None, read_only.to_vec(), &EgressGrant::default())
            .await
            .map_err(spawn_error)?;
        let mut argv = vec![program.to_string_lossy().into_owned()];
        argv.extend(args.iter().cloned());
        let mut env = server_env();
        env.extend(workspace_env());
        self.attach_job(spec, argv, env, None, &program.display().to_string())
            .await
    }

    /// Start an MCP server outside any call on the root of `image` (fetched and unpacked
    /// beforehand: see [`crate::images`]), as a tool of that image runs: `command` and `args`
    /// as a record's endpoint gives them ([`ToolImage::launch`]: empty, the image's
    /// `Entrypoint` and `Cmd`), the image's `Env` and `WorkingDir`, `read_only` bound at their
    /// own path, no network, and no host environment — `LANG`, `HOME` and `TMPDIR` (the
    /// workspace), and `PATH` unless the image sets it. [`ServerSession::destroy`] ends it.
    ///
    /// # Errors
    /// [`ExecError::Spawn`] when the image cannot start the command, or the sandbox cannot be
    /// provisioned or the server not started.
    pub async fn attach_image_server(
        &self,
        image: &ToolImage,
        command: &str,
        args: &[String],
        read_only: &[PathBuf],
    ) -> Result<ServerSession, ExecError> {
        let launch = image.launch(command, args).map_err(spawn_error)?;
        let spec = image_root_spec(
            image,
            &launch,
            read_only.to_vec(),
            &EgressGrant::default(),
            self.limits,
        );
        let mut argv = vec![launch.program.to_string_lossy().into_owned()];
        argv.extend(launch.args);
        let mut env = image_env(image, server_env());
        env.extend(workspace_env());
        let shown = format!("{} (image {})", launch.program.display(), image.reference);
        self.attach_job(spec, argv, env, image.working_dir.clone(), &shown)
            .await
    }

    /// Provision a sandbox of `spec` and start `argv` in it with its streams attached.
    async fn attach_job(
        &self,
        spec: Arc<SandboxSpec>,
        argv: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
        shown: &str,
    ) -> Result<ServerSession, ExecError> {
        let mut sandbox = self.backend.provision(spec).await.map_err(spawn_error)?;
        let job = Job {
            argv,
            env,
            cwd,
            stdin: String::new(),
            files: escepine_contract::WorkspaceFiles::new(),
            // The caller bounds the session and then destroys the sandbox.
            deadline: Instant::now() + std::time::Duration::from_secs(24 * 3600),
            stdout_limit: self.stdout_limit,
            stderr_limit: self.stderr_limit,
            scrubber: None,
        };
        match self.backend.attach(&mut sandbox, job).await {
            Ok(attached) => Ok(ServerSession {
                attached,
                sandbox,
                backend: Arc::clone(&self.backend),
            }),
            Err(e) => {
                let _ = self.backend.destroy(sandbox).await;
                Err(ExecError::Spawn(format!(
                    "cannot start the MCP server {shown} in a sandbox: {e}"
                )))
            }
        }
    }
}

/// The environment of a server started outside any call: `PATH` (the tools' own) and `LANG`.
fn server_env() -> Vec<(String, String)> {
    vec![
        ("PATH".into(), crate::executor::process::SAFE_PATH.into()),
        ("LANG".into(), crate::executor::process::TOOL_LANG.into()),
    ]
}

/// `HOME` and `TMPDIR`: the workspace, the only writable place.
fn workspace_env() -> [(String, String); 2] {
    [
        ("HOME".into(), WORKSPACE.into()),
        ("TMPDIR".into(), WORKSPACE.into()),
    ]
}

/// The environment of a program on `image`'s root: the image's `Env`, then the runtime's
/// `own` variables replacing the image's of the same name — except `PATH`, where the image's
/// is kept (its programs are found on its own `PATH`).
fn image_env(
    image: &ToolImage,
    own: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let mut env = image.env.clone();
    let image_path = env.iter().any(|(k, _)| k == "PATH");
    for (k, v) in own {
        if image_path && k == "PATH" {
            continue;
        }
        env.retain(|(old, _)| *old != k);
        env.push((k, v));
    }
    env
}

/// An MCP server started by [`SandboxExecutor::attach_server`]: its streams, and its sandbox
/// until [`ServerSession::destroy`] (dropping it kills everything in the sandbox too).
pub struct ServerSession {
    /// The server's standard streams and status.
    pub attached: Attached,
    sandbox: Sandbox,
    backend: Arc<dyn SandboxBackend>,
}

impl std::fmt::Debug for ServerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSession")
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

impl ServerSession {
    /// Split the session into its streams and a handle that destroys the sandbox.
    pub fn into_parts(self) -> (Attached, SessionSandbox) {
        (
            self.attached,
            SessionSandbox {
                sandbox: self.sandbox,
                backend: self.backend,
            },
        )
    }

    /// Kill whatever is left in the sandbox and release it.
    pub async fn destroy(self) -> Teardown {
        self.into_parts().1.destroy().await
    }
}

/// The sandbox of a [`ServerSession`] whose streams were taken.
pub struct SessionSandbox {
    sandbox: Sandbox,
    backend: Arc<dyn SandboxBackend>,
}

impl std::fmt::Debug for SessionSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSandbox")
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

impl SessionSandbox {
    /// Kill whatever is left in the sandbox and release it.
    pub async fn destroy(self) -> Teardown {
        self.backend.destroy(self.sandbox).await
    }
}

impl Executor for SandboxExecutor {
    fn execute<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Result<Execution, ExecError>> {
        Box::pin(async move { self.run(inv).await.result })
    }

    fn attempt<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Attempted> {
        Box::pin(self.run(inv))
    }

    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.teardowns_settled())
    }
}

/// How `tool` starts in `image` (its record's command and arguments over the image's config).
fn tool_launch(tool: &ToolRecord, image: &ToolImage) -> Result<ImageLaunch, ExecError> {
    image
        .launch(&tool.endpoint().command, &tool.endpoint().args)
        .map_err(spawn_error)
}

/// The spec of sandboxes running `launch` on `image`'s root, with `binds` (host paths bound
/// read-only at their own path).
fn image_root_spec(
    image: &ToolImage,
    launch: &ImageLaunch,
    binds: Vec<PathBuf>,
    egress: &EgressGrant,
    limits: Limits,
) -> Arc<SandboxSpec> {
    Arc::new(SandboxSpec {
        program: launch.program.clone(),
        program_identity: image.reference.clone(),
        program_sha256: None,
        read_only: image.top_level(),
        binds,
        root_tree: Some(image.rootfs.clone()),
        egress: egress.clone(),
        limits,
    })
}

fn spawn_error(e: SandboxError) -> ExecError {
    ExecError::Spawn(e.to_string())
}

/// The outcome of a job that ran to its end: the process executor's reading
/// ([`exit::stdio_json`]), after the sandbox's own cause of death (its memory bound).
fn classify(
    tool: &str,
    out: JobOutput,
    stdout_limit: usize,
    limits: &Limits,
    scrubber: &Scrubber,
) -> Result<Execution, ExecError> {
    if out.memory_exhausted && out.status != JobStatus::Exited(0) {
        return Err(ExecError::Permanent {
            message: out_of_memory(tool, limits),
            stderr: out.stderr,
        });
    }
    let end = Finished {
        status: out.status,
        stdout: out.stdout,
        stdout_overflow: out.stdout_overflow,
        stderr: out.stderr,
    };
    exit::stdio_json(tool, end, stdout_limit, scrubber)
}

/// The failure of a tool the kernel killed for the sandbox's memory bound.
fn out_of_memory(tool: &str, limits: &Limits) -> String {
    format!(
        "`{tool}` ran out of memory: the sandbox reached its memory bound of {} MiB \
         (`memory_bytes`, {} bytes) and the kernel killed it",
        limits.memory_bytes >> 20,
        limits.memory_bytes
    )
}
