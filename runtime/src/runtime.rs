//! [`Runtime`]: the registry frozen at start-up and the one governed call path.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use escepine_contract::{EgressGrant, Invoke, Principal, Tool};
use escepine_policy::cedar::Binding;
use escepine_policy::BoundRegistry;
use serde_json::Value;
use tracing::Instrument;

use crate::approval::{self, ApprovalError, Decider, Verdict};
use crate::budget::table::BudgetTable;
use crate::budget::Budgets;
use crate::error::CallError;
use crate::executor::Executor;
use crate::overlay::{Overlay, OverlayError};
use crate::report::{CallReport, NoOutput};
use crate::secrets::{EnvSecrets, SecretSource};
use crate::stages::{self, CallIds, CallOptions, LoadedTool, Parts};
use escepine_ledger::calls::{state::CallState, CallView};
use escepine_ledger::checkpoint::Checkpoint;
use escepine_ledger::error::LedgerError;
use escepine_ledger::store::Ledger;
use escepine_ledger::trust::Trust;
use escepine_policy::authorize::Authorizer;
use escepine_policy::gate::SchemaGate;

/// Why a runtime could not be built from a registry.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The Cedar authorizer could not be built (bad entities, say).
    #[error("authorization: {0}")]
    Authorize(String),
    /// The shadow policy set's authorizer could not be built.
    #[error("shadow policies: {0}")]
    Shadow(String),
    /// A schema did not compile (unreachable for checked records).
    #[error("tool `{tool}`: {why}")]
    Schema {
        /// The tool.
        tool: String,
        /// The compiler's message.
        why: String,
    },
    /// The overlay was refused.
    #[error(transparent)]
    Overlay(#[from] OverlayError),
    /// No ledger or executor was configured.
    #[error("missing {0}: every runtime needs a ledger and an executor")]
    Missing(&'static str),
    /// The client of remote endpoints could not be built (a CA file of the envelope).
    #[cfg(feature = "mcp-http")]
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
}

/// Builds a [`Runtime`] from a loaded [`BoundRegistry`].
pub struct RuntimeBuilder {
    registry: BoundRegistry,
    ledger: Option<Arc<dyn Ledger>>,
    executor: Option<Arc<dyn Executor>>,
    remote: Option<Arc<dyn Executor>>,
    secrets: Arc<dyn SecretSource>,
    entities: Option<Value>,
    overlay: Overlay,
    shadow: Option<Binding>,
    budgets: Budgets,
    approval_ttl: Duration,
    trust: Trust,
}

/// How long a call allowed only with approval waits, unless the builder says otherwise: a day.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(86_400);

impl RuntimeBuilder {
    /// How long a call allowed only with approval (a determining permit annotated
    /// `@approval`) waits for an approver before it expires ([`DEFAULT_APPROVAL_TTL`] unless
    /// set). The expiry is recorded in the call's intent, so it holds across restarts and
    /// for every runtime on the ledger.
    pub fn approval_ttl(mut self, ttl: Duration) -> Self {
        self.approval_ttl = ttl;
        self
    }

    /// Signed checkpoints of the ledger (opened with their verifier key) that every entry the
    /// runtime acts on is checked against, besides the chain's own links: the payload an
    /// approval runs, the step an SOP resume re-runs, the inputs and outputs a compensation is
    /// built from ([`escepine_ledger::trust`]).
    pub fn trusted_checkpoints(mut self, checkpoints: Vec<Checkpoint>) -> Self {
        self.trust = Trust { checkpoints };
        self
    }

    /// Where evidence is written (required).
    pub fn ledger(mut self, ledger: Arc<dyn Ledger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// What runs each attempt (required): the sandbox, or the process executor.
    pub fn executor(mut self, executor: Arc<dyn Executor>) -> Self {
        self.executor = Some(executor);
        self
    }

    /// What runs each attempt of a remote (`mcp-http`) tool: by default a
    /// [`crate::remote::RemoteExecutor`] trusting the system's roots and the envelope's
    /// `remote_ca_files`, built with the runtime (its tokens live as long as the runtime).
    pub fn remote_executor(mut self, executor: Arc<dyn Executor>) -> Self {
        self.remote = Some(executor);
        self
    }

    /// Where secret values come from (the environment by default).
    pub fn secrets(mut self, secrets: Arc<dyn SecretSource>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Cedar entities (principals with attributes and parents), as Cedar's entities JSON.
    pub fn entities(mut self, entities: Value) -> Self {
        self.entities = Some(entities);
        self
    }

    /// Extra egress entries for named tools (checked against the envelope, recorded).
    pub fn overlay(mut self, overlay: Overlay) -> Self {
        self.overlay = overlay;
        self
    }

    /// A candidate policy set evaluated beside the enforced one on every call — shadow mode.
    ///
    /// `candidate` is a [`Binding`] of the same records (and the same schema) with other
    /// policies, as [`escepine_policy::cedar::bind`] makes one from a policies directory. Every
    /// call's request (same principal, tool, gated payload and entities) is also authorized
    /// against it; its decision is never enforced and changes nothing of the call (outcome,
    /// egress, retries). Where it differs from the enforced decision, the intent records it as
    /// `shadow: {decision, policy_ids}`; a candidate policy that fails to evaluate decides
    /// deny, so against an allowed call it is recorded too.
    pub fn shadow_policies(mut self, candidate: Binding) -> Self {
        self.shadow = Some(candidate);
        self
    }

    /// Budgets per principal ([`Budgets::load`] reads a budgets file): every allowed call
    /// takes a use of each budget that applies to its principal and tool, counted in the
    /// ledger's store ([`Ledger::reserve_budgets`]), or ends `budget_exceeded` with nothing run.
    pub fn budgets(mut self, budgets: Budgets) -> Self {
        self.budgets = budgets;
        self
    }

    /// Compile the gates, slice the policies, freeze the registry.
    ///
    /// # Errors
    /// See [`BuildError`].
    pub fn build(self) -> Result<Runtime, BuildError> {
        let reg = self.registry;
        self.overlay.check(reg.envelope())?;
        if let Some(unknown) = self.overlay.tools.keys().find(|t| reg.get(t).is_none()) {
            return Err(OverlayError::UnknownTool(unknown.clone()).into());
        }
        let authorizer = Authorizer::new(reg.cedar(), reg.records(), self.entities.as_ref())
            .map_err(|e| BuildError::Authorize(e.to_string()))?;
        let shadow = self
            .shadow
            .as_ref()
            .map(|b| Authorizer::new(b, reg.records(), self.entities.as_ref()))
            .transpose()
            .map_err(|e| BuildError::Shadow(e.to_string()))?;
        let budgets = BudgetTable::new(&self.budgets, reg.records(), authorizer.entities());
        let mut tools = HashMap::new();
        for record in reg.records() {
            let schema_err = |why| BuildError::Schema {
                tool: record.tool_id().to_string(),
                why,
            };
            let input_gate = SchemaGate::new(record.input_schema()).map_err(schema_err)?;
            let output_gate = SchemaGate::new(record.output_schema()).map_err(schema_err)?;
            let extra = self
                .overlay
                .tools
                .get(record.tool_id())
                .cloned()
                .unwrap_or_default();
            let mut egress = record.sandbox_profile().egress.clone();
            egress.extend(extra.iter().cloned());
            let reaches_network = !egress.is_empty() || record.sandbox_profile().authorized_urls;
            let overlay = self.overlay.recorded_for(record.tool_id(), reaches_network);
            let egress = EgressGrant::new(egress)
                .with_public_addresses(self.overlay.public_addresses.iter().copied());
            tools.insert(
                record.tool_id().to_string(),
                LoadedTool {
                    record: record.clone(),
                    input_gate,
                    output_gate,
                    egress,
                    overlay,
                },
            );
        }
        let remote = match self.remote {
            Some(r) => r,
            None => default_remote(&reg)?,
        };
        Ok(Runtime {
            inner: Arc::new(Inner {
                tools,
                authorizer,
                shadow,
                budgets,
                ledger: self.ledger.ok_or(BuildError::Missing("ledger"))?,
                executor: self.executor.ok_or(BuildError::Missing("executor"))?,
                remote,
                secrets: self.secrets,
                approval_ttl: self.approval_ttl,
                trust: self.trust,
                flows: crate::flows::FlowBook::default(),
                registry: reg,
                clients_checked: std::sync::Mutex::default(),
            }),
        })
    }
}

/// The executor of remote tools when the builder was given none: the HTTP MCP client, trusting
/// the system's roots and the CA files the envelope names.
#[cfg(feature = "mcp-http")]
fn default_remote(reg: &BoundRegistry) -> Result<Arc<dyn Executor>, BuildError> {
    let ca_files = reg
        .envelope()
        .map(|e| e.remote_ca_files.clone())
        .unwrap_or_default();
    Ok(Arc::new(crate::remote::RemoteExecutor::new(&ca_files)?))
}

/// Without `mcp-http`, a remote tool's attempt fails naming the feature.
#[cfg(not(feature = "mcp-http"))]
fn default_remote(_: &BoundRegistry) -> Result<Arc<dyn Executor>, BuildError> {
    Ok(Arc::new(crate::executor::seam::NoRemote))
}

struct Inner {
    tools: HashMap<String, LoadedTool>,
    authorizer: Authorizer,
    shadow: Option<Authorizer>,
    budgets: BudgetTable,
    ledger: Arc<dyn Ledger>,
    executor: Arc<dyn Executor>,
    remote: Arc<dyn Executor>,
    secrets: Arc<dyn SecretSource>,
    approval_ttl: Duration,
    trust: Trust,
    /// The flows folded from the ledger so far (kept between calls).
    flows: crate::flows::FlowBook,
    registry: BoundRegistry,
    /// Tool ids whose typed-client contract matched the registry (see `check_client`).
    clients_checked: std::sync::Mutex<std::collections::HashSet<&'static str>>,
}

/// The governed runtime: executes only the tools registered at start-up, each call on the one
/// path (its order is documented where the stages are composed: resolve, input gate,
/// authorize, record intent, budgets, execute, output gate, record outcome).
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl Runtime {
    /// Start building a runtime over a loaded registry.
    pub fn builder(registry: BoundRegistry) -> RuntimeBuilder {
        RuntimeBuilder {
            registry,
            ledger: None,
            executor: None,
            remote: None,
            secrets: Arc::new(EnvSecrets),
            entities: None,
            overlay: Overlay::default(),
            shadow: None,
            budgets: Budgets::default(),
            approval_ttl: DEFAULT_APPROVAL_TTL,
            trust: Trust::default(),
        }
    }

    /// What entries read back from the ledger are checked against before the runtime acts on
    /// them.
    pub fn trust(&self) -> &Trust {
        &self.inner.trust
    }

    /// The frozen registry.
    pub fn registry(&self) -> &BoundRegistry {
        &self.inner.registry
    }

    /// The ledger evidence is written to.
    pub fn ledger(&self) -> &Arc<dyn Ledger> {
        &self.inner.ledger
    }

    /// The Cedar authorizer calls are decided by (to check, at start-up, that principals an
    /// identity provider names can be authorized: [`Authorizer::check_membership`]).
    pub fn authorizer(&self) -> &Authorizer {
        &self.inner.authorizer
    }

    /// Waits until its executors have finished what they do in the background for calls that
    /// have returned ([`Executor::settled`]: the sandbox executor destroys each call's sandbox
    /// after the call's result). A program awaits it before it exits, on the async runtime its
    /// calls ran on; one that exits without it may leave the last sandboxes' cgroups and
    /// directories to the next runtime's sweep.
    pub async fn settled(&self) {
        self.inner.executor.settled().await;
        self.inner.remote.settled().await;
    }

    /// The JSON entry for proposals made by a planner or an LLM: [`Runtime::call`] with
    /// default options, for the gated output alone.
    ///
    /// # Errors
    /// [`NoOutput`]: refused before the intent, or ended with another outcome than `ok` (the
    /// error holds the report).
    pub async fn dispatch(
        &self,
        principal: &Principal,
        tool: &str,
        payload: Value,
    ) -> Result<Value, NoOutput> {
        self.call(principal, tool, payload, CallOptions::default())
            .await?
            .into_output()
    }

    /// One governed call, with options (SOP run and step, idempotency key, dialect). A call
    /// that got past its intent returns its report, whatever its outcome (denied, failed,
    /// timed out and output-rejected calls included); its kind is traced as the span's
    /// `error.type` when it is not `ok`.
    ///
    /// # Errors
    /// A [`CallError`]: the call was refused before its intent (unknown tool, rejected input,
    /// ledger unavailable), or its outcome could not be committed.
    pub async fn call(
        &self,
        principal: &Principal,
        tool: &str,
        payload: Value,
        opts: CallOptions,
    ) -> Result<CallReport, CallError> {
        let ids = CallIds::new(opts.idempotency_key.clone());
        let started = std::time::Instant::now();
        let span = crate::telemetry::call_span(tool, &ids.call_id);
        if let Some(trace) = &opts.trace {
            trace.adopt(&span);
        }
        let result = stages::run(&self.parts(), principal, tool, payload, &opts, ids)
            .instrument(span.clone())
            .await;
        stages::trace_end(&span, tool, started, &result);
        result
    }

    /// Approve the waiting call `call_id` as `approver`, and run it: once, under its own call
    /// id and idempotency key, its recorded payload through the input gate and Cedar again,
    /// then budgets, execution, the output gate and its outcome, as any call. The `approval`
    /// entry is committed before the call runs. Returns the ended call's report.
    ///
    /// # Errors
    /// A refusal that changes nothing ([`ApprovalError::is_refusal`]): no such waiting call,
    /// already decided, expired (the expiry is then recorded), the approver is the requester,
    /// or Cedar does not permit the approver `Action::"approve"` on the call's tool. Or the
    /// call's own refusal, or a ledger that cannot be written.
    pub async fn approve(
        &self,
        approver: &Principal,
        call_id: &str,
    ) -> Result<CallReport, ApprovalError> {
        self.decide(Decider::named(approver), call_id, Verdict::Approve)
            .await
    }

    /// The state of flow `flow` now (folded from the ledger: the entries appended since the
    /// last read, by this runtime or another on the same store, first).
    ///
    /// # Errors
    /// The ledger cannot be read, or its chain does not link.
    pub fn flow_state(
        &self,
        flow: &escepine_contract::FlowId,
    ) -> Result<escepine_contract::FlowState, escepine_ledger::error::LedgerError> {
        self.inner.flows.state(&*self.inner.ledger, flow)
    }

    /// Remove a label from a flow as `request.principal` ([`crate::flows::declassify`] with
    /// this runtime's ledger, authorizer and the flow it keeps folded).
    ///
    /// # Errors
    /// [`crate::flows::DeclassifyError`]: refused (nothing recorded), or the ledger failed.
    pub async fn declassify(
        &self,
        request: crate::flows::Declassify<'_>,
    ) -> Result<crate::flows::Declassified, crate::flows::DeclassifyError> {
        let ledger = &*self.inner.ledger;
        let flow = self.inner.flows.flow(ledger, request.flow)?;
        crate::flows::declassify(ledger, &self.inner.authorizer, flow, request).await
    }

    /// Reject the waiting call `call_id` as `approver`: nothing runs; the `approval` entry
    /// (`rejected`) and the outcome `rejected` are recorded.
    ///
    /// # Errors
    /// As [`Runtime::approve`].
    pub async fn reject(
        &self,
        approver: &Principal,
        call_id: &str,
    ) -> Result<CallReport, ApprovalError> {
        self.decide(Decider::named(approver), call_id, Verdict::Reject)
            .await
    }

    /// Record the expiry of the waiting call `call_id` if it is past it (an `approval` entry
    /// `expired` by `runtime`, then the outcome `expired`); `None` while it still waits.
    ///
    /// # Errors
    /// As [`Runtime::approve`], but for the approver's checks.
    pub async fn expire(&self, call_id: &str) -> Result<Option<CallReport>, ApprovalError> {
        approval::expire(&*self.inner.ledger, &self.inner.trust, call_id).await
    }

    /// Where call `call_id` stands, read from the ledger alone (so the same in any runtime on
    /// the ledger, before or after a restart), through its call view: the call's own entries.
    ///
    /// # Errors
    /// The ledger cannot be read.
    pub fn call_state(&self, call_id: &str) -> Result<CallState, LedgerError> {
        CallView::new(&*self.inner.ledger).state(call_id, escepine_ledger::entry::now_ms())
    }

    /// Decide on the waiting call `call_id`: approve or reject it as an approver (see
    /// [`Runtime::approve`] and [`Runtime::reject`]), or withdraw it as its requester
    /// ([`Verdict::Withdraw`]: nothing runs; the `approval` entry `withdrawn` and the outcome
    /// `rejected` are recorded). The decider's attestation, when a token named it, gives Cedar
    /// its parents and is recorded in the `approval` entry.
    ///
    /// # Errors
    /// As [`Runtime::approve`]; a withdrawal by anyone but the requester is
    /// [`ApprovalError::NotRequester`].
    pub async fn decide(
        &self,
        decider: Decider<'_>,
        call_id: &str,
        verdict: Verdict,
    ) -> Result<CallReport, ApprovalError> {
        let span = tracing::info_span!("approve_tool_call", gen_ai.tool.call.id = %call_id);
        approval::decide(&self.parts(), decider, call_id, verdict)
            .instrument(span)
            .await
    }

    fn parts(&self) -> Parts<'_> {
        let inner = &*self.inner;
        Parts {
            tools: &inner.tools,
            authorizer: &inner.authorizer,
            shadow: inner.shadow.as_ref(),
            budgets: &inner.budgets,
            ledger: &*inner.ledger,
            executor: &*inner.executor,
            remote: &*inner.remote,
            secrets: &*inner.secrets,
            approval_ttl: inner.approval_ttl,
            trust: &inner.trust,
            flows: &inner.flows,
        }
    }
}

impl Runtime {
    /// Whether tool `T` of a typed client is the registered one: same id and version, and the
    /// same input and output schemas (compared as JSON values once per tool id, then
    /// remembered), so a client compiled from an edited record fails with a clear error
    /// instead of sending payloads of another shape.
    fn check_client<T: Tool>(&self) -> Result<(), CallError> {
        let id = T::CONTRACT.id;
        let Some(registered) = self.inner.registry.get(id) else {
            return Err(CallError::UnknownTool(id.to_string()));
        };
        if registered.version().to_string() != T::CONTRACT.version {
            return Err(CallError::ClientMismatch(format!(
                "the client was compiled against {id}@{} but the registry holds {id}@{}",
                T::CONTRACT.version,
                registered.version()
            )));
        }
        if self
            .inner
            .clients_checked
            .lock()
            .is_ok_and(|checked| checked.contains(id))
        {
            return Ok(());
        }
        let contract = T::contract();
        for (which, text, held) in [
            ("input", contract.input_schema, registered.input_schema()),
            ("output", contract.output_schema, registered.output_schema()),
        ] {
            let compiled: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                CallError::ClientMismatch(format!(
                    "the {which} schema compiled into the client for `{id}` is not JSON: {e}"
                ))
            })?;
            if compiled != *held {
                return Err(CallError::ClientMismatch(format!(
                    "the {which} schema of `{id}` in the registry ({}) differs from the one \
                     the client was compiled against; rebuild the client",
                    registered.source().display()
                )));
            }
        }
        if let Ok(mut checked) = self.inner.clients_checked.lock() {
            checked.insert(id);
        }
        Ok(())
    }
}

/// The generated typed client calls through here: the typed payload is serialised once and
/// takes exactly the JSON entry's path (the gates still validate bounds the types lost); any
/// end but `ok` is a [`NoOutput`]. Calls are in the principal's default flow; [`Runtime::in_flow`]
/// names another.
impl Invoke for Runtime {
    type Error = NoOutput;

    fn invoke_with_files<T: Tool>(
        &self,
        principal: &Principal,
        input: T::Input,
        files: escepine_contract::WorkspaceFiles,
    ) -> impl std::future::Future<Output = Result<T::Output, Self::Error>> + Send {
        let principal = principal.clone();
        async move {
            self.typed_call::<T>(
                &principal,
                input,
                CallOptions {
                    files,
                    ..CallOptions::default()
                },
            )
            .await
        }
    }
}

impl Runtime {
    /// The typed client's calls in flow `flow`: `runtime.in_flow(flow).web_search(&p, input)`.
    pub fn in_flow(&self, flow: escepine_contract::FlowId) -> InFlow<'_> {
        InFlow {
            runtime: self,
            flow,
        }
    }

    /// One call of the typed client: the contract checked, the payload serialised, the output
    /// read back as `T::Output`.
    async fn typed_call<T: Tool>(
        &self,
        principal: &Principal,
        input: T::Input,
        opts: CallOptions,
    ) -> Result<T::Output, NoOutput> {
        self.check_client::<T>()?;
        let payload = serde_json::to_value(&input).map_err(|e| {
            CallError::ClientMismatch(format!(
                "the typed payload of `{}` does not serialise: {e}",
                T::CONTRACT.id
            ))
        })?;
        let report = self.call(principal, T::CONTRACT.id, payload, opts).await?;
        let call_id = report.call_id().to_string();
        let output = report.into_output()?;
        serde_json::from_value(output).map_err(|e| NoOutput::OutputType {
            call_id,
            message: e.to_string(),
        })
    }
}

/// A runtime whose typed-client calls are in one flow ([`Runtime::in_flow`]).
#[derive(Clone)]
pub struct InFlow<'a> {
    runtime: &'a Runtime,
    flow: escepine_contract::FlowId,
}

impl Invoke for InFlow<'_> {
    type Error = NoOutput;

    fn invoke_with_files<T: Tool>(
        &self,
        principal: &Principal,
        input: T::Input,
        files: escepine_contract::WorkspaceFiles,
    ) -> impl std::future::Future<Output = Result<T::Output, Self::Error>> + Send {
        let principal = principal.clone();
        let opts = CallOptions {
            files,
            flow: Some(self.flow.clone()),
            ..CallOptions::default()
        };
        async move { self.runtime.typed_call::<T>(&principal, input, opts).await }
    }
}
