//! What every stage of one call reads: the [`CallContext`] (ids, principal, options, the
//! resolved [`LoadedTool`], its secrets and their scrubber).

use std::collections::BTreeMap;

use escepine_contract::{EgressGrant, FlowId, FlowState, Principal};
use escepine_registry::record::ToolRecord;

use crate::ids::random_id;
use crate::scrub::Scrubber;
use crate::secrets::{self, SecretSource};
use escepine_policy::gate::SchemaGate;

/// A registered tool with everything compiled once at start-up.
pub(crate) struct LoadedTool {
    /// The registered record.
    pub(crate) record: ToolRecord,
    /// The input gate (the record's input schema, compiled).
    pub(crate) input_gate: SchemaGate,
    /// The output gate (the record's output schema, compiled).
    pub(crate) output_gate: SchemaGate,
    /// Profile egress plus overlay entries, and the overlay's public addresses: what every call
    /// may reach before its authorization adds the origins of its URLs.
    pub(crate) egress: EgressGrant,
    /// The overlay entries in force, as recorded in intents.
    pub(crate) overlay: Vec<String>,
}

/// What the caller asked for, beyond the tool and payload.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// The SOP run this call is a step of.
    pub run_id: Option<String>,
    /// The SOP state.
    pub step: Option<String>,
    /// Reuse this idempotency key (a resumed step); a fresh one otherwise.
    pub idempotency_key: Option<String>,
    /// The call this one compensates.
    pub compensates: Option<String>,
    /// Accept the OpenAI-strict dialect: `null` for an optional field means absent.
    pub openai_strict_nulls: bool,
    /// The workspace files the caller gives (each declared by the tool's
    /// `sandbox_profile.workspace_inputs`), placed read-only at `/workspace/<name>`.
    pub files: escepine_contract::WorkspaceFiles,
    /// What an identity provider vouched for about the principal (its parents, the token's
    /// issuer and `jti` digest): the call is authorized with the principal in those parents,
    /// and the intent records all three.
    pub attestation: Option<escepine_contract::Attestation>,
    /// The caller's own access token (from `serve --oauth`), for a remote endpoint whose
    /// `auth` exchanges it (RFC 8693); never recorded.
    pub caller_token: Option<crate::executor::CallerToken>,
    /// The flow the call is in; without one, its SOP run's (`run_id`), else its principal's
    /// default flow.
    pub flow: Option<escepine_contract::FlowId>,
    /// The caller's W3C trace context: the call's span continues it, and (without an
    /// OpenTelemetry pipeline to make the call's own) it is what the tool is given.
    pub trace: Option<crate::telemetry::TraceContext>,
}

/// The flow a call is in: the one it names, else its SOP run's, else its principal's default.
fn flow_of(opts: &CallOptions, principal: &Principal) -> FlowId {
    match (&opts.flow, &opts.run_id) {
        (Some(flow), _) => flow.clone(),
        (None, Some(run)) => FlowId::of_run(run),
        (None, None) => FlowId::default_of(principal),
    }
}

/// Identity of one call.
#[derive(Debug, Clone)]
pub(crate) struct CallIds {
    /// Unique per call.
    pub(crate) call_id: String,
    /// The same across attempts (and across a resume).
    pub(crate) idempotency_key: String,
}

impl CallIds {
    /// Fresh ids (random 128-bit hex), reusing a given idempotency key.
    pub(crate) fn new(idempotency_key: Option<String>) -> Self {
        let call_id = random_id();
        let idempotency_key = idempotency_key.unwrap_or_else(random_id);
        Self {
            call_id,
            idempotency_key,
        }
    }
}

/// Everything every stage of one call reads: who calls which tool, with what options, and the
/// tool's secrets with the scrubber of exactly those values.
pub(crate) struct CallContext<'a> {
    /// The call's ids.
    pub(crate) ids: CallIds,
    /// The caller.
    pub(crate) principal: &'a Principal,
    /// The caller's options.
    pub(crate) opts: &'a CallOptions,
    /// The resolved tool.
    pub(crate) tool: &'a LoadedTool,
    /// The tool's declared secrets that the source has (never recorded).
    pub(crate) secrets: BTreeMap<String, String>,
    /// Scrubs those values from everything recorded, traced or returned.
    pub(crate) scrubber: Scrubber,
    /// What the call's sandbox may reach: the tool's grant, plus the origins its authorization
    /// allowed (`authorize::egress`, fixed before the intent and before any sandbox starts).
    pub(crate) egress: EgressGrant,
    /// The flow the call is in.
    pub(crate) flow: FlowId,
    /// The flow's state before the call (what Cedar sees as `context.flow`), read just before
    /// authorization.
    pub(crate) flow_state: FlowState,
    /// The origins of the URLs Cedar authorized (what the call reaches, for its flow).
    pub(crate) reached: Vec<String>,
}

impl<'a> CallContext<'a> {
    /// The entities an identity provider vouched the principal is a member of (none without
    /// an attestation).
    pub(crate) fn parents(&self) -> &'a [Principal] {
        self.opts
            .attestation
            .as_ref()
            .map_or(&[], |a| a.parents.as_slice())
    }

    /// The context of a call of `tool`, its secrets read from `source`.
    pub(crate) fn new(
        ids: CallIds,
        principal: &'a Principal,
        opts: &'a CallOptions,
        tool: &'a LoadedTool,
        source: &dyn SecretSource,
    ) -> Self {
        let secrets = secrets::resolve(source, tool.record.secrets());
        let scrubber = Scrubber::new(secrets.values().map(String::as_str));
        Self {
            ids,
            principal,
            opts,
            tool,
            secrets,
            scrubber,
            egress: tool.egress.clone(),
            flow: flow_of(opts, principal),
            flow_state: FlowState::default(),
            reached: Vec::new(),
        }
    }
}
