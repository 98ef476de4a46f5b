//! The governed tools over MCP (`escepine serve`): an `rmcp` server over stdio or streamable
//! HTTP.
//!
//! - `tools/list` gives, for the calling principal, the tools [`Listing`] lists — each exactly
//!   as `escepine export --format mcp` writes it ([`escepine_export::mcp::tool`]: name,
//!   description, `inputSchema` and `outputSchema` as registered, annotations from the class).
//! - `tools/call` runs the whole governed path ([`Runtime::call`]) for the principal. A call
//!   that completes returns the gated output as `structuredContent` (and its JSON text as
//!   content). Any other end is a tool error result (`isError: true`) **without**
//!   `structuredContent` — a client may validate any `structuredContent` against the tool's
//!   `outputSchema`, error or not (the TypeScript SDK does), and an error is not an output —
//!   whose content is the message, then the details as JSON text, the same details being in
//!   `_meta` under [`ERROR_META`]: `{"error": {"kind", "message", …}}` ([`report_body`],
//!   [`refusal_body`]; the kind is the call's [`CallKind`](escepine_runtime::CallKind), mapped to a reply by [`reply`]):
//!   `denied` with `call_id`, `policy_ids` and `reasons`; `input_rejected` with `violations`
//!   (`pointer`, `keyword`, `message`); `timed_out`, `failed`, `output_rejected` (pointers and
//!   keywords only — the rejected output never reaches the caller), `ledger_unavailable`. A tool
//!   the registry does not hold is a JSON-RPC error (`-32602`, invalid params), as MCP
//!   specifies for an unknown tool.
//! - A call allowed only with approval waits ([`CallOutcome::AwaitingApproval`]): for a client
//!   that declares the tasks extension it is a task whose id is the call id, its state read
//!   from the ledger ([`super::tasks`]); for any other client a tool error of kind
//!   `awaiting_approval` with `call_id`, `expires_at_ms`, `policy_ids` and `reasons`. The
//!   built-in tool [`APPROVE_TOOL`] (listed for every principal when the schema declares
//!   `Action::"approve"`, that is when the policies use approval) decides it, the session's
//!   principal being the approver ([`super::approve`]); the server never asks for an approval
//!   through elicitation.
//! - The principal is fixed for stdio ([`GovernedServer::for_principal`]); over HTTP it is the
//!   caller the request's bearer token names ([`super::auth`]: a development token file, or an
//!   OAuth 2.1 access token whose claims give the principal and its parents), checked on every
//!   request before rmcp sees it; a refused request gets `401`/`403` with a
//!   `WWW-Authenticate` challenge and reaches nothing.
//! - Both protocol eras on one endpoint (rmcp routes each request): a request whose `_meta`
//!   carries `io.modelcontextprotocol/protocolVersion` `2026-07-28` (and the same
//!   `MCP-Protocol-Version` header) is served statelessly — no `initialize`, no session id
//!   minted or read (a stray `Mcp-Session-Id` is dropped before rmcp sees it), `server/discover`
//!   answers the supported versions, `GET` and `DELETE` are `405`; an `initialize` opens a
//!   2025-11-25 (or earlier) session. Each such session serves only the principal whose token
//!   opened it ([`super::sessions`]): a request of another principal naming its
//!   `Mcp-Session-Id` — a `POST` into it, the `GET` of its event stream, its `DELETE` — gets
//!   `404`, as for a session that does not exist; its owner's `DELETE` ends it with
//!   `204 No Content`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use escepine_contract::Principal;
use http::{header, StatusCode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetTaskParams,
    GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::common::http_header::{HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::approve::{self, APPROVE_TOOL};
pub use super::auth::Authenticated;
use super::auth::Authenticator;
use super::listing::Listing;
use super::results::{call_id_meta, tool_error};
pub use super::results::{refusal_body, reply, report_body, Reply, CALL_ID_META, ERROR_META};
use super::sessions::{named_session, SessionOwners};
use super::tasks;
use escepine_runtime::telemetry::{TraceContext, META_TRACEPARENT, META_TRACESTATE};
use escepine_runtime::CallError;
use escepine_runtime::CallOptions;
use escepine_runtime::Runtime;
use escepine_runtime::{CallOutcome, CallReport};

/// The path the streamable HTTP endpoint is served at.
pub const HTTP_PATH: &str = "/mcp";

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session could not start or failed.
    #[error("MCP: {0}")]
    Mcp(String),
    /// The listener failed.
    #[error("HTTP: {0}")]
    Io(#[from] std::io::Error),
}

/// The MCP server handler over a [`Runtime`]. Cheap to clone (one per HTTP session).
#[derive(Clone)]
pub struct GovernedServer {
    runtime: Runtime,
    listing: Arc<Listing>,
    principal: Option<Principal>,
}

impl std::fmt::Debug for GovernedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GovernedServer")
            .field("tools", &self.runtime.registry().records().len())
            .field("analysis", &self.listing.analysis())
            .field("principal", &self.principal)
            .finish()
    }
}

impl GovernedServer {
    /// A server whose principal comes from each HTTP request ([`Authenticated`]).
    pub fn new(runtime: Runtime, listing: Arc<Listing>) -> Self {
        Self {
            runtime,
            listing,
            principal: None,
        }
    }

    /// The same server acting for `principal` always (stdio).
    pub fn for_principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// The runtime calls go through.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The `tools/list` entries for `caller`, in registry order: the tools its principal, in
    /// the parents its token names, could be permitted to call.
    pub fn tools_for(&self, caller: &Authenticated) -> Vec<Tool> {
        let registry = self.runtime.registry();
        self.listing
            .visible_as(&caller.principal, caller.parents())
            .into_iter()
            .filter_map(|id| registry.get(id))
            .filter_map(|record| {
                let entry = match escepine_export::mcp::checked_tool(record) {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::warn!("not listed: {e}");
                        return None;
                    }
                };
                match serde_json::from_value::<Tool>(entry) {
                    Ok(tool) => Some(tool),
                    Err(e) => {
                        tracing::warn!(tool = %record.tool_id(), "not listed: {e}");
                        None
                    }
                }
            })
            .chain(
                self.runtime
                    .registry()
                    .cedar()
                    .declares_approve()
                    .then(approve::tool),
            )
            .collect()
    }

    /// One `tools/call` for `caller`: the governed path, its end as an MCP result (see
    /// [`reply`] for which end becomes what); a call waiting for approval is a tool error of
    /// kind `awaiting_approval` with its call id. The reserved tool [`APPROVE_TOOL`] decides a
    /// waiting call with `caller` as the approver ([`approve`]).
    ///
    /// # Errors
    /// An [`ErrorData`] (invalid params) for a tool the registry does not hold.
    pub async fn call_for(
        &self,
        caller: &Authenticated,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<CallToolResult, ErrorData> {
        match self
            .respond_for(caller, name, arguments, CallMeta::default(), false)
            .await?
        {
            CallToolResponse::Complete(result) => Ok(result),
            other => Err(ErrorData::internal_error(
                format!("a `{name}` call gave an unexpected response: {other:?}"),
                None,
            )),
        }
    }

    /// [`Self::call_for`], for a client that declares the tasks extension when `tasks`: then a
    /// call waiting for approval is answered with a task whose id is its call id
    /// ([`super::tasks`]).
    ///
    /// # Errors
    /// As [`Self::call_for`].
    pub async fn respond_for(
        &self,
        caller: &Authenticated,
        name: &str,
        arguments: Option<Map<String, Value>>,
        meta: CallMeta,
        tasks: bool,
    ) -> Result<CallToolResponse, ErrorData> {
        if name == APPROVE_TOOL {
            return Ok(
                approve::call(&self.runtime, caller.decider(), arguments.as_ref())
                    .await
                    .into(),
            );
        }
        let payload = Value::Object(arguments.unwrap_or_default());
        let opts = CallOptions {
            attestation: caller.attestation.clone(),
            caller_token: caller.token.clone(),
            flow: meta.flow,
            trace: meta.trace,
            ..CallOptions::default()
        };
        let result = self
            .runtime
            .call(&caller.principal, name, payload, opts)
            .await;
        if let (true, Ok(report)) = (tasks, &result) {
            if let CallOutcome::AwaitingApproval { expires_at_ms, .. } = report.outcome() {
                return Ok(CallToolResponse::Task(tasks::created(
                    report,
                    *expires_at_ms,
                )));
            }
        }
        self.reply_to(name, result).map(CallToolResponse::from)
    }

    fn reply_to(
        &self,
        name: &str,
        result: Result<CallReport, CallError>,
    ) -> Result<CallToolResult, ErrorData> {
        let (kind, message, body) = match &result {
            Ok(report) => (report.kind(), report.to_string(), report_body(report)),
            Err(e) => (e.kind(), e.to_string(), refusal_body(e)),
        };
        match (reply(kind), result) {
            (Reply::Structured, Ok(report)) => {
                let meta = call_id_meta(report.call_id());
                match report.into_output() {
                    Ok(output) => Ok(CallToolResult::structured(output).with_meta(Some(meta))),
                    Err(_) => Ok(tool_error(message, body)),
                }
            }
            (Reply::InvalidParams, _) => Err(ErrorData::invalid_params(
                message,
                Some(json!({ "tool": name })),
            )),
            _ => Ok(tool_error(message, body)),
        }
    }

    fn caller_of(&self, ctx: &RequestContext<RoleServer>) -> Result<Authenticated, ErrorData> {
        if let Some(p) = &self.principal {
            return Ok(Authenticated::named(p.clone()));
        }
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Authenticated>())
            .cloned()
            .ok_or_else(|| ErrorData::invalid_request("no authenticated principal", None))
    }
}

impl ServerHandler for GovernedServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("escepine", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Escepine's governed tools: every call passes the input gate, Cedar \
                 authorization, the evidence ledger and the output gate. A denial names its \
                 policies; a rejected input names the pointer and keyword.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller_of(&context)?;
        Ok(ListToolsResult::with_all_items(self.tools_for(&caller)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller_of(&context)?;
        let tasks = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        // rmcp moves the request's `_meta` into the context; read the request's too.
        let meta = |key: &str| {
            context
                .meta
                .0
                 .0
                .get(key)
                .or_else(|| request.meta.as_ref().and_then(|m| m.0 .0.get(key)))
        };
        let meta = CallMeta {
            flow: flow_of(meta(FLOW_META))?,
            trace: trace_of(meta(META_TRACEPARENT), meta(META_TRACESTATE)),
        };
        self.respond_for(&caller, &request.name, request.arguments, meta, tasks)
            .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.caller_of(&context)?;
        tasks::get(&self.runtime, &caller.principal, &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Err(tasks::update_refused(&request.task_id))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller_of(&context)?;
        tasks::cancel(&self.runtime, caller.decider(), &request.task_id).await
    }
}

/// Serve `server` (which must have a principal) on this process's stdin and stdout until the
/// client closes them.
///
/// The session reads and writes duplicates of file descriptors 0 and 1, not
/// `std::io::stdin()`/`stdout()`, so it never waits on a lock of those handles that the caller
/// holds (the `escepine` binary holds stdout's for its whole run).
///
/// # Errors
/// [`ServeError::Io`] when the descriptors cannot be duplicated; [`ServeError::Mcp`] when the
/// session cannot start or fails.
pub async fn serve_stdio(server: GovernedServer) -> Result<(), ServeError> {
    use std::os::fd::AsFd;
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned()?;
    serve_io(
        server,
        tokio::fs::File::from_std(std::fs::File::from(stdin)),
        tokio::fs::File::from_std(std::fs::File::from(stdout)),
    )
    .await
}

/// Serve `server` (which must have a principal) on `read` and `write` (newline-delimited
/// JSON-RPC, MCP's stdio framing) until the client closes `read`.
///
/// # Errors
/// [`ServeError::Mcp`] when the session cannot start or fails.
pub async fn serve_io<R, W>(server: GovernedServer, read: R, write: W) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let running = server
        .serve(rmcp::transport::async_rw::AsyncRwTransport::new_server(
            read, write,
        ))
        .await
        .map_err(|e| ServeError::Mcp(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Mcp(e.to_string()))?;
    Ok(())
}

/// The HTTP application: streamable HTTP MCP at [`HTTP_PATH`], behind `auth` (and, for OAuth,
/// the protected resource metadata, served without a token). `allowed_hosts` are the `Host`
/// values accepted (rmcp's DNS-rebinding guard; loopback names by default).
pub fn http_router(
    server: GovernedServer,
    auth: Arc<Authenticator>,
    allowed_hosts: Vec<String>,
    ct: CancellationToken,
) -> axum::Router {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_cancellation_token(ct);
    let sessions = Arc::new(LocalSessionManager::default());
    let owners = Arc::new(SessionOwners::new(Arc::clone(&sessions)));
    let service: StreamableHttpService<GovernedServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    // The last layer added runs first: authentication, then the session's owner, then rmcp.
    let mcp = axum::Router::new()
        .nest_service(HTTP_PATH, service)
        .layer(middleware::from_fn_with_state(owners, bind_sessions))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&auth),
            authenticate,
        ));
    match auth.metadata() {
        None => mcp,
        Some((paths, document)) => {
            let document = Arc::new(document.to_string());
            paths.into_iter().fold(mcp, |router, path| {
                let document = Arc::clone(&document);
                router.route(
                    &path,
                    axum::routing::get(move || {
                        let document = Arc::clone(&document);
                        async move {
                            (
                                [
                                    (header::CONTENT_TYPE, "application/json"),
                                    (header::CACHE_CONTROL, "max-age=300"),
                                ],
                                document.as_str().to_owned(),
                            )
                        }
                    }),
                )
            })
        }
    }
}

/// Serve `server` over streamable HTTP on `listener`, callers known by `auth`, until
/// `shutdown` completes.
///
/// # Errors
/// [`ServeError::Io`] when the listener fails.
pub async fn serve_http(
    server: GovernedServer,
    listener: TcpListener,
    auth: Arc<Authenticator>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    let ct = CancellationToken::new();
    let app = http_router(server, auth, allowed_hosts(addr), ct.clone());
    let stop = ct.clone();
    axum::serve(nodelay(listener), app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.cancel();
        })
        .await?;
    ct.cancel();
    Ok(())
}

/// `listener` with Nagle's algorithm off on every connection it accepts: an answer is an event
/// stream written in several small pieces, which must not wait for the client's delayed ACK
/// (about 40 ms a call on Linux otherwise).
pub fn nodelay(listener: TcpListener) -> impl axum::serve::Listener<Addr = SocketAddr> {
    use axum::serve::ListenerExt;
    listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {e}");
        }
    })
}

/// The `Host` values accepted for a listener on `addr`: the loopback names, plus the address
/// itself (with and without its port) when it is not loopback.
pub fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if !addr.ip().is_loopback() {
        hosts.push(addr.ip().to_string());
        hosts.push(addr.to_string());
    }
    hosts
}

/// Authentication of every request to the MCP endpoint: the caller goes into the request's
/// extensions, or the request is refused ([`Authenticator::refuse`]) before rmcp sees it.
async fn authenticate(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    match auth.authenticate(req.headers()).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(refused) => refused,
    }
}

/// Whether a request speaks the stateless revision (2026-07-28 or later), by its
/// `MCP-Protocol-Version` header — which rmcp requires to equal the version in the body's
/// `_meta`, so a request cannot be stateless in its body and legacy in its header.
fn is_modern(headers: &http::HeaderMap) -> bool {
    headers
        .get(HEADER_MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.len() == 10 && v >= MODERN_VERSION)
}

/// The first stateless revision.
const MODERN_VERSION: &str = "2026-07-28";

/// Sessions bound to their principals ([`super::sessions`]), for the 2025-era requests: a
/// request naming a session reaches it only for the principal that opened it, others get
/// `404`, as for a session that does not exist; the answer's effect on sessions (opened, ended)
/// is recorded, and the owner's `DELETE` is answered `204 No Content`. A request of the
/// stateless revision has no session: any `Mcp-Session-Id` it carries is dropped unread.
async fn bind_sessions(
    State(owners): State<Arc<SessionOwners>>,
    mut req: Request,
    next: Next,
) -> Response {
    if is_modern(req.headers()) {
        req.headers_mut().remove(HEADER_SESSION_ID);
        return next.run(req).await;
    }
    let Some(caller) = req.extensions().get::<Authenticated>().cloned() else {
        return (StatusCode::UNAUTHORIZED, "no authenticated caller").into_response();
    };
    let principal = caller.principal;
    let named = match named_session(req.headers()) {
        Ok(named) => named,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "application/json")],
                json!({ "error": e.to_string() }).to_string(),
            )
                .into_response()
        }
    };
    if let Some(id) = &named {
        if !owners.admits(id, &principal) {
            return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
    }
    let delete = req.method() == http::Method::DELETE;
    let mut response = next.run(req).await;
    owners
        .observe(&principal, named.as_deref(), response.headers())
        .await;
    // rmcp answers a session's end `202 Accepted`; the 2025 SDKs expect `200` or `204`.
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// The `_meta` key of a `tools/call` request naming the flow the call is in (created on first
/// use); without it, the caller's default flow.
pub const FLOW_META: &str = "dev.escepine/flow";

/// What a `tools/call` request's `_meta` says of the call beyond its arguments.
#[derive(Debug, Clone, Default)]
pub struct CallMeta {
    /// The flow it names ([`FLOW_META`]).
    pub flow: Option<escepine_contract::FlowId>,
    /// The caller's W3C trace context (`traceparent`, `tracestate`), which the call's span
    /// continues, in both protocol revisions.
    pub trace: Option<TraceContext>,
}

/// The trace context of a request's `_meta`: an invalid or non-string `traceparent` is
/// ignored (the call starts a new trace), as the W3C recommendation says.
fn trace_of(parent: Option<&Value>, state: Option<&Value>) -> Option<TraceContext> {
    TraceContext::parse(parent?.as_str()?, state.and_then(Value::as_str))
}

/// The flow a request's `_meta` names: a string that is a flow id, or nothing.
///
/// # Errors
/// Invalid params naming the key and the rule broken.
fn flow_of(value: Option<&Value>) -> Result<Option<escepine_contract::FlowId>, ErrorData> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) => escepine_contract::FlowId::named(id)
            .map(Some)
            .map_err(|e| ErrorData::invalid_params(format!("_meta[\"{FLOW_META}\"]: {e}"), None)),
        Some(other) => Err(ErrorData::invalid_params(
            format!("_meta[\"{FLOW_META}\"] must be a string, not {other}"),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_modern, refusal_body, reply, Reply};
    use escepine_runtime::{CallError, CallKind};

    #[test]
    fn only_ok_is_structured_and_only_an_unknown_tool_a_protocol_error() {
        for kind in CallKind::ALL {
            let expected = match kind {
                CallKind::Ok => Reply::Structured,
                CallKind::UnknownTool => Reply::InvalidParams,
                _ => Reply::ToolError,
            };
            assert_eq!(reply(kind), expected, "{kind}");
        }
    }

    #[test]
    fn a_refusal_body_names_its_kind() {
        let body = refusal_body(&CallError::ClientMismatch("other version".into()));
        assert_eq!(body["error"]["kind"], "client_mismatch");
        assert!(body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("other version")));
    }

    #[test]
    fn the_stateless_revision_is_read_from_the_header() {
        let headers = |v: &str| {
            let mut h = http::HeaderMap::new();
            h.insert("mcp-protocol-version", v.parse().unwrap());
            h
        };
        assert!(is_modern(&headers("2026-07-28")));
        assert!(is_modern(&headers("2027-01-01")));
        assert!(!is_modern(&headers("2025-11-25")));
        assert!(!is_modern(&headers("2026-07-2")));
        assert!(!is_modern(&http::HeaderMap::new()));
    }
}
