//! The seam itself: an attempt handed to an [`Executor`], what it returns, how it fails. Below
//! every executor and transport, which all speak it.

use std::collections::BTreeMap;
use std::time::Duration;

use escepine_contract::EgressGrant;
use escepine_registry::record::ToolRecord;
use serde_json::Value;

use crate::scrub::Scrubber;
use escepine_ledger::record::ErrorClass;
use escepine_ledger::store::BoxFuture;

/// One attempt of one call, as handed to an [`Executor`].
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The tool's registered record.
    pub tool: &'a ToolRecord,
    /// The validated, authorized payload (the very value Cedar saw).
    pub payload: &'a Value,
    /// The call id (`ESCEPINE_CALL_ID`).
    pub call_id: &'a str,
    /// The idempotency key (`ESCEPINE_IDEMPOTENCY_KEY`), the same across attempts.
    pub idempotency_key: &'a str,
    /// 1-based attempt number.
    pub attempt: u32,
    /// Bound of this attempt.
    pub timeout: Duration,
    /// Secret values the tool declared, by name (never recorded).
    pub secrets: &'a BTreeMap<String, String>,
    /// The scrubber of exactly those values (the governed path's own, built once per call).
    pub scrubber: &'a Scrubber,
    /// What the attempt may reach: profile plus overlay entries, the origins the call's
    /// authorization allowed, the addresses treated as public.
    pub egress: &'a EgressGrant,
    /// The call's workspace files (checked against the record's `workspace_inputs`), which a
    /// sandbox places read-only at `/workspace/<name>`; an executor without a workspace refuses
    /// a call that has any.
    pub files: &'a escepine_contract::WorkspaceFiles,
    /// The caller's own access token, when an identity provider authenticated the caller: what
    /// a remote endpoint's token exchange trades for one meant for its server (never recorded,
    /// never given to a tool).
    pub caller_token: Option<&'a CallerToken>,
    /// The W3C trace context the tool's work continues (`TRACEPARENT` / `TRACESTATE` in its
    /// environment, `_meta.traceparent` of an MCP `tools/call`, the `traceparent` header of a
    /// remote server's requests): the attempt's span, else the caller's context.
    pub trace: Option<&'a crate::telemetry::TraceContext>,
}

/// A caller's access token, carried from the edge that verified it to the remote endpoint that
/// exchanges it. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct CallerToken(std::sync::Arc<str>);

impl CallerToken {
    /// The token `token`.
    pub fn new(token: impl Into<std::sync::Arc<str>>) -> Self {
        Self(token.into())
    }

    /// The token itself: for the token request only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for CallerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallerToken(…)")
    }
}

impl Invocation<'_> {
    /// The scrubber of this attempt's secret values, for text an executor cuts to a bound: it
    /// scrubs before it cuts (see [`Scrubber::text_within`]). A cheap clone of
    /// [`Invocation::scrubber`].
    pub fn scrubber(&self) -> Scrubber {
        self.scrubber.clone()
    }
}

/// What a successful attempt produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// The tool's output JSON (not yet gated).
    pub output: Value,
    /// Diagnostics the tool wrote: bounded, the attempt's secrets scrubbed before the cut (the
    /// governed path scrubs what it records again).
    pub stderr: String,
}

/// What the sandbox's egress proxy saw during an attempt, whatever the attempt's end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Egress {
    /// Requests the proxy admitted, with their paths (`GET host:port/path`,
    /// `CONNECT host:port`).
    pub requests: Vec<String>,
    /// Requests it refused, each with the rule that refused it.
    pub refusals: Vec<String>,
    /// The credential the runtime presented to a remote endpoint in this attempt (never the
    /// token: its grant, a digest of the endpoint that issued it, the `sub` it names).
    pub credential: Option<escepine_ledger::record::CredentialUse>,
}

/// One attempt's result with its egress evidence: a failed attempt's requests and refusals are
/// as much evidence as a successful one's.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempted {
    /// The attempt's output, or why it failed.
    pub result: Result<Execution, ExecError>,
    /// What its egress proxy admitted and refused (empty for executors without one).
    pub egress: Egress,
}

/// Why an attempt failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// A failure the tool or transport marks transient (exit 75); retried within the budget.
    #[error("transient failure: {message}")]
    Transient {
        /// What went wrong.
        message: String,
        /// The tool's stderr.
        stderr: String,
    },
    /// A failure no retry cures.
    #[error("permanent failure: {message}")]
    Permanent {
        /// What went wrong.
        message: String,
        /// The tool's stderr.
        stderr: String,
    },
    /// A remote server is busy or unreachable (HTTP 429 or 503, a failed connection):
    /// transient, retried after the server's `Retry-After` when it gave one (within the call's
    /// deadline), else after the policy's backoff.
    #[error("transient failure: {message}")]
    Unavailable {
        /// What went wrong.
        message: String,
        /// How long the server asked to wait.
        retry_after: Option<Duration>,
    },
    /// The attempt outlived its timeout; its whole process tree was killed.
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
    /// The tool's output was not one JSON value.
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The tool could not be started (missing binary, digest mismatch, sandbox setup).
    #[error("could not start the tool: {0}")]
    Spawn(String),
}

impl ExecError {
    /// Whether the retry policy may try again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Transient { .. } | Self::Unavailable { .. } | Self::TimedOut(_)
        )
    }

    /// The error class recorded in the ledger.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Transient { .. } | Self::Unavailable { .. } => ErrorClass::Transient,
            Self::Permanent { .. } => ErrorClass::Permanent,
            Self::TimedOut(_) => ErrorClass::Timeout,
            Self::Protocol(_) => ErrorClass::Protocol,
            Self::Spawn(_) => ErrorClass::Spawn,
        }
    }

    /// How long the failing side asked to wait before another attempt (`Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The stderr captured with the failure, if any.
    pub fn stderr(&self) -> &str {
        match self {
            Self::Transient { stderr, .. } | Self::Permanent { stderr, .. } => stderr,
            _ => "",
        }
    }
}

/// Runs one attempt of one call. The sandbox executor wraps the process executor.
pub trait Executor: Send + Sync + 'static {
    /// Run the attempt, bounded by `inv.timeout` (killing everything it started on expiry).
    fn execute<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Result<Execution, ExecError>>;

    /// [`Executor::execute`] with the attempt's egress evidence, which the governed path
    /// records for every attempt. The default has none to give (no proxy); an executor whose
    /// attempts reach the network through a proxy gives its requests and refusals, whatever the
    /// attempt's end.
    fn attempt<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Attempted> {
        Box::pin(async move {
            Attempted {
                result: self.execute(inv).await,
                egress: Egress::default(),
            }
        })
    }

    /// Waits until what this executor still does in the background for attempts that have
    /// returned (the sandbox executor destroys each sandbox after its result) has ended: a
    /// program awaits it before it exits, so that nothing of its calls is left behind. The
    /// default has nothing in the background and returns at once.
    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// The refusal of an executor that has no workspace (the process and in-process executors) to
/// run a call given workspace files: only a sandbox places them read-only, so none is ever
/// written where the host's other files are.
pub(crate) fn workspace_files_refused(inv: &Invocation<'_>) -> Result<(), ExecError> {
    if inv.files.is_empty() {
        return Ok(());
    }
    Err(ExecError::Spawn(format!(
        "tool `{}` was given workspace files, which only the sandbox executor places \
         (read-only at /workspace/<name>); this executor has no workspace",
        inv.tool.tool_id()
    )))
}

/// The failure of an `mcp-stdio` attempt in a program built without the `mcp-stdio` feature:
/// the record is valid, this program cannot speak its transport.
#[cfg(not(feature = "mcp-stdio"))]
pub(crate) fn mcp_stdio_unavailable(tool: &ToolRecord) -> ExecError {
    ExecError::Spawn(format!(
        "tool `{}` has an `mcp-stdio` endpoint, and this program was built without \
         escepine-runtime's `mcp-stdio` feature",
        tool.tool_id()
    ))
}

/// The executor of remote (`mcp-http`) tools in a program built without the `mcp-http`
/// feature: the record is valid, this program cannot call it.
#[cfg(not(feature = "mcp-http"))]
pub(crate) struct NoRemote;

#[cfg(not(feature = "mcp-http"))]
impl Executor for NoRemote {
    fn execute<'a>(&'a self, inv: Invocation<'a>) -> BoxFuture<'a, Result<Execution, ExecError>> {
        let message = format!(
            "tool `{}` has an `mcp-http` endpoint, and this program was built without \
             escepine-runtime's `mcp-http` feature",
            inv.tool.tool_id()
        );
        Box::pin(async move { Err(ExecError::Spawn(message)) })
    }
}
