//! Cedar authorization of a call (stage 3 of the governed path).
//!
//! [`Authorizer`] is built once at start-up from the registry's Cedar [`Binding`] and records,
//! and then answers [`Authorizer::authorize`] for a principal, a tool and a payload that
//! passed the input gate:
//!
//! - **Entities** (built once): the user's entities (principals and their groups) validated
//!   against the schema, one `Tool::"<id>"` per tool with `side_effect_class` and `version`,
//!   and the schema's action entities, so group scopes work in `forbid` as in `permit`.
//! - **Context** (per call): `context.input` built straight from the payload and the tool's
//!   Cedar input type ([`crate::cedar::types`]); a value Cedar cannot hold exactly (a
//!   number with more than four fraction digits, say) denies the call and is never rounded.
//! - **URL facts**: a request that authorizes one URL carries `context.url`
//!   ([`UrlFacts`]: the real host, lower-case, IDNA A-labels, no trailing dot; the scheme's
//!   default port). A URL without facts (no host) denies.
//! - **Per-URL requests** ([`escepine_registry::urls::per_url`]): a single-URL tool's request
//!   carries its URL; a bulk call (a list marked `x-authorize-each`) is authorized once as a
//!   whole, without `url`, and once per element with that element's URL. One deny denies the
//!   call; the reasons name the element and its URL.
//! - **Errors deny**: any evaluation error denies, whatever Cedar decided.
//! - **Slicing**: each tool's action gets, once, only the policies whose action scope can
//!   match it ([`mod@slice`]); the runtime suite's `authorize_slicing` proves sliced and
//!   unsliced decide alike.
//!
//! Requests are made without schema validation: the context is built from the generated type
//! itself, and the principal's type is checked against the action's declared principals. Only
//! an action whose context type in the schema differs from the generated one (an action the
//! user's `.cedarschema` declares differently) has its requests validated against the schema.

mod context;
mod entities;
mod error;
mod url_facts;

pub use crate::cedar::approval::{APPROVAL_ANNOTATION, APPROVE_ACTION, AWAITING_APPROVAL};
pub use crate::cedar::flow::{DECLASSIFY_ACTION, FLOW_TYPE};
pub use crate::cedar::slice;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::Arc;

use cedar_policy::{
    AuthorizationError, Context, Entities, EntityId, EntityTypeName, EntityUid, PolicySet, Request,
    RestrictedExpression, Schema, SchemaFragment,
};
use escepine_contract::{FlowId, FlowState, Origin, Principal};
use serde_json::Value;

use crate::cedar::flow::FLOW_ATTRIBUTE;
use crate::cedar::types::{input_type, CedarType};
use crate::cedar::{generated_schema_text, url_scope, Binding, RESOURCE_TYPE};
use escepine_registry::record::ToolRecord;
use escepine_registry::urls::{per_url, PerUrl};

pub use context::Unrepresentable;
pub use entities::{with_parents, Members, Store};
pub use error::AuthorizeError;
pub use url_facts::{UrlError, UrlFacts};

/// The outcome of authorizing one call. Only the [`Authorizer`] makes one; read it through
/// its accessors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    allowed: bool,
    policy_ids: Vec<String>,
    reasons: Vec<String>,
    requests: usize,
    origins: Vec<Origin>,
    /// The determining permits annotated `@approval`, with their reasons (the annotation's
    /// value; empty when it has none). Empty unless the call is allowed.
    approval: Vec<(String, String)>,
}

impl Decision {
    fn denied(reason: String) -> Self {
        Self {
            allowed: false,
            policy_ids: Vec::new(),
            reasons: vec![reason],
            requests: 0,
            origins: Vec::new(),
            approval: Vec::new(),
        }
    }

    /// Whether the call is allowed only with an approver's approval: one of its determining
    /// permits is annotated `@approval`.
    pub fn needs_approval(&self) -> bool {
        !self.approval.is_empty()
    }

    /// The reasons of the determining `@approval` permits (their annotation values), in
    /// policy id order, the empty ones left out.
    pub fn approval_reasons(&self) -> Vec<String> {
        self.approval
            .iter()
            .filter(|(_, reason)| !reason.is_empty())
            .map(|(_, reason)| reason.clone())
            .collect()
    }

    /// The origins of the URLs the call's requests authorized (the single per-URL field, each
    /// element of an `x-authorize-each` list), from the very facts Cedar saw: sorted, distinct,
    /// and empty unless the call is allowed.
    pub fn origins(&self) -> &[Origin] {
        &self.origins
    }

    /// Whether the call may proceed: every request was allowed, without evaluation errors.
    pub fn allowed(&self) -> bool {
        self.allowed
    }

    /// `allow`, `awaiting-approval` (allowed, with an approver's approval) or `deny`, as the
    /// intent records it.
    pub fn as_str(&self) -> &'static str {
        match (self.allowed, self.needs_approval()) {
            (true, false) => "allow",
            (true, true) => AWAITING_APPROVAL,
            (false, _) => "deny",
        }
    }

    /// The determining policies, sorted and deduplicated across the call's requests: the
    /// permits that allowed, on allow; on deny, the forbids that were satisfied and the
    /// policies whose evaluation failed (empty for a default deny: nothing permitted).
    pub fn policy_ids(&self) -> &[String] {
        &self.policy_ids
    }

    /// Why the call was denied: the denied request (the call, or the element and its URL),
    /// evaluation errors, URLs without facts, values Cedar cannot hold. Empty on allow.
    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// How many Cedar requests were evaluated.
    pub fn requests(&self) -> usize {
        self.requests
    }
}

/// What a tool's calls need, computed once.
#[derive(Debug)]
struct ToolAuth {
    action: EntityUid,
    resource: EntityUid,
    /// The entity types the schema allows as principals of the action.
    principal_types: Vec<(String, EntityTypeName)>,
    input: CedarType,
    per_url: PerUrl,
    /// Whether a policy that can apply to this action reads `context.url`: then a per-URL
    /// value that is not an absolute URL with a host denies (the policy could not judge it);
    /// otherwise such a request just carries no `url`.
    url_constrained: bool,
    policies: Arc<PolicySet>,
    /// The policies of `policies` annotated `@approval`, with the annotation's value.
    approval: HashMap<String, String>,
    /// Whether the action's context holds `flow` (every generated one does; an action the
    /// user's `.cedarschema` declares, only if it declares it).
    flow: bool,
    /// Whether requests are validated against the schema: only when the action's declared
    /// context is not the generated one (a user-declared action), so the construction alone
    /// does not guarantee conformance.
    validate: bool,
}

/// Authorizes calls with Cedar: built once at start-up, then shared (it is `Send + Sync`).
#[derive(Debug)]
pub struct Authorizer {
    tools: HashMap<String, ToolAuth>,
    entities: Entities,
    cedar: cedar_policy::Authorizer,
    /// The schema, for tools whose requests are validated.
    schema: Schema,
    /// `Action::"approve"` and the policies that can apply to it (`None` when the schema
    /// declares no such action: then nobody can approve).
    approve: Option<(EntityUid, Arc<PolicySet>)>,
    /// `Action::"declassify"` and the policies that can apply to it (`None` when the schema
    /// declares no such action: then nobody can declassify).
    declassify: Option<(EntityUid, Arc<PolicySet>)>,
    /// The stores of principals vouched into parents, built once each.
    members: Members,
}

impl Authorizer {
    /// Build the authorizer: entities, per-tool action and resource uids, input types, URL
    /// shapes, and the policy set sliced per action.
    ///
    /// `entities` is Cedar's entities JSON for the principals (an `Agent` with `Team`
    /// parents, say); it is validated against the schema.
    ///
    /// # Errors
    /// [`AuthorizeError`] when the entities do not conform, a tool's action is not in the
    /// schema, an input schema has no Cedar type, or a policy cannot be sliced.
    pub fn new(
        binding: &Binding,
        records: &[ToolRecord],
        entities: Option<&Value>,
    ) -> Result<Self, AuthorizeError> {
        Self::build(binding, records, entities, true)
    }

    /// The same authorizer without slicing: every request is evaluated against the whole
    /// policy set. The reference the sliced authorizer is proven against (tests, benchmarks).
    ///
    /// # Errors
    /// As [`Authorizer::new`].
    pub fn unsliced(
        binding: &Binding,
        records: &[ToolRecord],
        entities: Option<&Value>,
    ) -> Result<Self, AuthorizeError> {
        Self::build(binding, records, entities, false)
    }

    fn build(
        binding: &Binding,
        records: &[ToolRecord],
        entities: Option<&Value>,
        sliced: bool,
    ) -> Result<Self, AuthorizeError> {
        let action_type = type_name("Action")?;
        let resource_type = type_name(RESOURCE_TYPE)?;
        let schema = &binding.schema;
        let action_entities = schema
            .action_entities()
            .map_err(|e| AuthorizeError::Entities(e.to_string()))?;
        let declared: HashSet<EntityUid> = schema.actions().cloned().collect();
        let whole = Arc::new(binding.policies.clone());
        let conforming = generated_contexts(records, &binding.schema_text);
        let with_flow = flow_contexts(&binding.schema_text);

        let mut uids = Vec::with_capacity(records.len());
        let mut tools = HashMap::with_capacity(records.len());
        for record in records {
            let action = EntityUid::from_type_name_and_id(
                action_type.clone(),
                EntityId::new(record.cedar_action()),
            );
            if !declared.contains(&action) {
                return Err(AuthorizeError::UnknownAction {
                    tool: record.tool_id().to_string(),
                    action: record.cedar_action().to_string(),
                });
            }
            let resource = EntityUid::from_type_name_and_id(
                resource_type.clone(),
                EntityId::new(record.tool_id()),
            );
            let principal_types = schema
                .principals_for_action(&action)
                .map(|it| it.map(|t| (t.to_string(), t.clone())).collect())
                .unwrap_or_default();
            let input =
                input_type(record.input_schema()).map_err(|source| AuthorizeError::InputType {
                    tool: record.tool_id().to_string(),
                    source,
                })?;
            let matching = url_scope::matching_actions(&action_entities, &action);
            let policies = if sliced {
                Arc::new(slice::slice(&binding.policies, &action, &matching).map_err(
                    |message| AuthorizeError::Slice {
                        tool: record.tool_id().to_string(),
                        message,
                    },
                )?)
            } else {
                Arc::clone(&whole)
            };
            let url_constrained = url_scope::url_constrained(&binding.policies, &action, &matching);
            let validate = !conforming.contains(record.cedar_action());
            let approval = approval_permits(&policies);
            uids.push((record, resource.clone()));
            tools.insert(
                record.tool_id().to_string(),
                ToolAuth {
                    action,
                    resource,
                    principal_types,
                    input,
                    per_url: per_url(record.input_schema()),
                    url_constrained,
                    policies,
                    approval,
                    flow: with_flow.contains(record.cedar_action()),
                    validate,
                },
            );
        }
        let entities = entities::build(schema, &uids, entities)?;
        // The generated actions that are not a tool's: each with the policies that can apply.
        let special = |id: &str| -> Result<Option<(EntityUid, Arc<PolicySet>)>, AuthorizeError> {
            let uid = EntityUid::from_type_name_and_id(action_type.clone(), EntityId::new(id));
            if !declared.contains(&uid) {
                return Ok(None);
            }
            let matching = url_scope::matching_actions(&action_entities, &uid);
            let policies =
                if sliced {
                    Arc::new(slice::slice(&binding.policies, &uid, &matching).map_err(
                        |message| AuthorizeError::Slice {
                            tool: id.to_string(),
                            message,
                        },
                    )?)
                } else {
                    Arc::clone(&whole)
                };
            Ok(Some((uid, policies)))
        };
        let approve = special(APPROVE_ACTION)?;
        let declassify = special(DECLASSIFY_ACTION)?;
        Ok(Self {
            tools,
            entities,
            cedar: cedar_policy::Authorizer::new(),
            schema: schema.clone(),
            approve,
            declassify,
            members: Members::default(),
        })
    }

    /// Whether `approver` may approve (or reject) a waiting call of `tool_id`: the request
    /// `(approver, Action::"approve", Tool::"<tool_id>")` with an empty context. Whether the
    /// approver is the principal who asked is not Cedar's question: the runtime refuses that
    /// before asking.
    pub fn authorize_approval(&self, approver: &Principal, tool_id: &str) -> Decision {
        self.authorize_approval_as(approver, &[], tool_id)
    }

    /// [`Self::authorize_approval`] for an approver an identity provider vouched is a member of
    /// `parents` ([`with_parents`]).
    pub fn authorize_approval_as(
        &self,
        approver: &Principal,
        parents: &[Principal],
        tool_id: &str,
    ) -> Decision {
        let Some(tool) = self.tools.get(tool_id) else {
            return Decision::denied(format!("unknown tool `{tool_id}`"));
        };
        let Some((action, policies)) = &self.approve else {
            return Decision::denied(format!(
                "the schema declares no `Action::\"{APPROVE_ACTION}\"`"
            ));
        };
        self.decide_special(
            approver,
            parents,
            (action, policies),
            tool.resource.clone(),
            Context::empty(),
            &format!("approve calls of `{tool_id}`"),
        )
    }

    /// Whether `principal` may remove `label` from flow `flow`, whose state is `state`: the
    /// request `(principal, Action::"declassify", Flow::"<flow>")` with `context.flow` and
    /// `context.label`. Whether the principal's own calls brought the label is not Cedar's
    /// question: the runtime refuses that before asking.
    pub fn authorize_declassify(
        &self,
        principal: &Principal,
        parents: &[Principal],
        flow: &FlowId,
        label: &str,
        state: &FlowState,
    ) -> Decision {
        let Some((action, policies)) = &self.declassify else {
            return Decision::denied(format!(
                "the schema declares no `Action::\"{DECLASSIFY_ACTION}\"` (no policy names it)"
            ));
        };
        let resource = match type_name(FLOW_TYPE) {
            Ok(t) => EntityUid::from_type_name_and_id(t, EntityId::new(flow.as_str())),
            Err(e) => return Decision::denied(e.to_string()),
        };
        let context = match Context::from_pairs([
            (
                FLOW_ATTRIBUTE.to_string(),
                crate::cedar::flow::to_expression(state),
            ),
            (
                "label".to_string(),
                RestrictedExpression::new_string(label.to_string()),
            ),
        ]) {
            Ok(c) => c,
            Err(e) => return Decision::denied(format!("the context cannot be built: {e}")),
        };
        self.decide_special(
            principal,
            parents,
            (action, policies),
            resource,
            context,
            &format!("declassify `{label}` in flow `{flow}`"),
        )
    }

    /// One request of a generated action that is not a tool's (`approve`, `declassify`) by
    /// `approver` on `resource`; `what` completes the reasons ("… permits `X` to <what>").
    fn decide_special(
        &self,
        approver: &Principal,
        parents: &[Principal],
        (action, policies): (&EntityUid, &PolicySet),
        resource: EntityUid,
        context: Context,
        what: &str,
    ) -> Decision {
        let principal = match type_name(&approver.entity_type) {
            Ok(t) => EntityUid::from_type_name_and_id(t, EntityId::new(&approver.id)),
            Err(e) => return Decision::denied(e.to_string()),
        };
        let entities = match self
            .members
            .store(&self.entities, &self.schema, &principal, parents)
        {
            Ok(e) => e,
            Err(e) => return Decision::denied(e),
        };
        let request = match Request::new(
            principal,
            action.clone(),
            resource,
            context,
            Some(&self.schema),
        ) {
            Ok(r) => r,
            Err(e) => {
                return Decision::denied(format!("the request to {what} cannot be built: {e}"))
            }
        };
        let response = self.cedar.is_authorized(&request, policies, &entities);
        let mut tally = Tally {
            requests: 1,
            ..Tally::default()
        };
        let diagnostics = response.diagnostics();
        for error in diagnostics.errors() {
            let AuthorizationError::PolicyEvaluationError(e) = error;
            tally.deny_ids.insert(e.policy_id().to_string());
            tally.deny(format!("the request to {what}: {error}"));
        }
        let ids: BTreeSet<String> = diagnostics.reason().map(ToString::to_string).collect();
        match response.decision() {
            cedar_policy::Decision::Allow if !tally.denied => tally.allow_ids = ids,
            cedar_policy::Decision::Allow => {}
            cedar_policy::Decision::Deny => {
                tally.deny(if ids.is_empty() {
                    format!("no policy permits `{approver}` to {what}")
                } else {
                    format!(
                        "`{approver}` is forbidden to {what} by {}",
                        ids.iter().cloned().collect::<Vec<_>>().join(", ")
                    )
                });
                tally.deny_ids.extend(ids);
            }
        }
        tally.finish(&HashMap::new())
    }

    /// Whether principals of type `principal_type`, vouched for by a token, can be authorized
    /// at all: the type is a principal type of some tool's action, and a principal of it can be
    /// a member of entities of each of `parent_types` (the schema's `memberOfTypes`) without
    /// attributes the token cannot give. Checked once at start-up, so that a mapping of claims
    /// the schema cannot hold fails there, not as a denial of every call.
    ///
    /// # Errors
    /// A sentence naming the type and what the schema refuses.
    pub fn check_membership(
        &self,
        principal_type: &str,
        parent_types: &[&str],
    ) -> Result<(), String> {
        if !self
            .tools
            .values()
            .any(|t| t.principal_types.iter().any(|(n, _)| n == principal_type))
        {
            return Err(format!(
                "`{principal_type}` is not a principal type of any tool's action in the Cedar \
                 schema (declare it, e.g. `entity {principal_type};` and \
                 `appliesTo {{ principal: [{principal_type}] … }}`)"
            ));
        }
        let ty = type_name(principal_type).map_err(|e| e.to_string())?;
        let probe = EntityUid::from_type_name_and_id(ty, EntityId::new("escepine-probe"));
        for parent in parent_types {
            let parents = [Principal {
                entity_type: (*parent).to_string(),
                id: "escepine-probe".to_string(),
            }];
            with_parents(&self.entities, &self.schema, &probe, &parents).map_err(|e| {
                format!(
                    "an entity of type `{principal_type}` cannot be a member of one of type \
                     `{parent}` under the Cedar schema (declare `entity {principal_type} in \
                     [{parent}];` in a `.cedarschema` beside the policies): {e}"
                )
            })?;
        }
        Ok(())
    }

    /// How many policies a tool's requests are evaluated against (`None` for an unknown
    /// tool).
    pub fn policy_count(&self, tool_id: &str) -> Option<usize> {
        self.tools
            .get(tool_id)
            .map(|t| t.policies.policies().count())
    }

    /// Whether a tool's requests are validated against the schema (`None` for an unknown
    /// tool): only for an action whose declared context is not the generated one.
    pub fn validates_requests(&self, tool_id: &str) -> Option<bool> {
        self.tools.get(tool_id).map(|t| t.validate)
    }

    /// The entity store requests are evaluated against.
    pub fn entities(&self) -> &Entities {
        &self.entities
    }

    /// The entity store requests of `principal` are evaluated against when an identity
    /// provider vouched for its membership in `parents` ([`with_parents`]): the store itself
    /// when there are none.
    ///
    /// # Errors
    /// As [`with_parents`].
    pub fn entities_as(
        &self,
        principal: &Principal,
        parents: &[Principal],
    ) -> Result<Store<'_>, String> {
        if parents.is_empty() {
            return Ok(Store::Base(&self.entities));
        }
        let ty = type_name(&principal.entity_type).map_err(|e| e.to_string())?;
        let uid = EntityUid::from_type_name_and_id(ty, EntityId::new(&principal.id));
        self.members
            .store(&self.entities, &self.schema, &uid, parents)
    }

    /// Authorize one call of `tool_id` by `principal` with `payload` (a payload that passed
    /// the input gate). Never panics; anything unexpected is a deny with its reason.
    pub fn authorize(&self, principal: &Principal, tool_id: &str, payload: &Value) -> Decision {
        self.authorize_as(principal, &[], tool_id, payload)
    }

    /// [`Self::authorize`] for a principal an identity provider vouched is a member of
    /// `parents` (an access token's claims): every request of the call is evaluated with the
    /// principal in those parents ([`with_parents`]); a parent the schema does not allow
    /// denies the call, naming it.
    pub fn authorize_as(
        &self,
        principal: &Principal,
        parents: &[Principal],
        tool_id: &str,
        payload: &Value,
    ) -> Decision {
        self.authorize_in(principal, parents, tool_id, payload, &FlowState::default())
    }

    /// [`Self::authorize_as`] for a call in a flow whose state is `flow`: every request of the
    /// call carries it as `context.flow` (when the action's context declares it).
    pub fn authorize_in(
        &self,
        principal: &Principal,
        parents: &[Principal],
        tool_id: &str,
        payload: &Value,
        flow: &FlowState,
    ) -> Decision {
        let Some(tool) = self.tools.get(tool_id) else {
            return Decision::denied(format!("unknown tool `{tool_id}`"));
        };
        let Some((_, principal_type)) = tool
            .principal_types
            .iter()
            .find(|(name, _)| *name == principal.entity_type)
        else {
            return Decision::denied(format!(
                "`{}` is not a principal type of `Action::\"{}\"`",
                principal.entity_type,
                tool.action.id().unescaped()
            ));
        };
        let principal =
            EntityUid::from_type_name_and_id(principal_type.clone(), EntityId::new(&principal.id));
        let entities = match self
            .members
            .store(&self.entities, &self.schema, &principal, parents)
        {
            Ok(e) => e,
            Err(e) => return Decision::denied(e),
        };
        let entities = &*entities;
        let input = match context::to_expression(payload, &tool.input) {
            Ok(e) => e,
            Err(e) => return Decision::denied(e.to_string()),
        };

        let mut tally = Tally::default();
        let whole_url = match &tool.per_url.single {
            None => None,
            Some((pointer, always)) => match payload.pointer(pointer) {
                Some(Value::String(raw)) => match UrlFacts::parse(raw) {
                    Ok(f) => Some(f),
                    Err(e) if tool.url_constrained => {
                        return Decision::denied(format!("the URL at `{pointer}`: {e}"))
                    }
                    Err(_) => None,
                },
                None | Some(Value::Null) if !always => None,
                _ => {
                    return Decision::denied(format!(
                        "the payload has no URL string at `{pointer}`"
                    ))
                }
            },
        };
        let flow = tool.flow.then(|| crate::cedar::flow::to_expression(flow));
        let request = RequestOf {
            tool,
            principal: &principal,
            input: &input,
            flow: flow.as_ref(),
            entities,
        };
        self.evaluate(&request, whole_url.as_ref(), Label::Call, &mut tally);

        for each in &tool.per_url.each {
            let pointer = each.list.as_str();
            let items = match payload.pointer(pointer) {
                None | Some(Value::Null) => continue,
                Some(Value::Array(items)) => items,
                Some(_) => {
                    tally.deny(format!("the payload has no list at `{pointer}`"));
                    continue;
                }
            };
            for (i, item) in items.iter().enumerate() {
                let label = Label::Element(pointer, i);
                let url = match &each.item_url {
                    None => Some(item),
                    Some(inner) => item.pointer(inner),
                };
                let raw = match url {
                    Some(Value::String(raw)) => raw,
                    // An element without its (optional) URL: nothing to fetch, and its request
                    // carries no `url`.
                    None if each.item_url.is_some() => {
                        self.evaluate(&request, None, label, &mut tally);
                        continue;
                    }
                    _ => {
                        tally.deny(format!("element {i} of `{pointer}` holds no URL string"));
                        continue;
                    }
                };
                match UrlFacts::parse(raw) {
                    Ok(facts) => {
                        self.evaluate(&request, Some(&facts), label, &mut tally);
                    }
                    Err(e) => tally.deny(format!("{}: {e}", label.render(raw))),
                }
            }
        }
        tally.finish(&tool.approval)
    }

    /// Evaluate one request and add its outcome to `tally`.
    fn evaluate(
        &self,
        of: &RequestOf<'_>,
        url: Option<&UrlFacts>,
        label: Label<'_>,
        tally: &mut Tally,
    ) {
        let RequestOf {
            tool,
            principal,
            input,
            flow,
            entities,
        } = *of;
        // Rendered only when there is something to report.
        let label = || label.render(url.map_or("", |f| f.raw.as_str()));
        let mut pairs = Vec::with_capacity(3);
        pairs.push(("input".to_string(), input.clone()));
        if let Some(f) = url {
            pairs.push(("url".to_string(), f.to_expression()));
        }
        if let Some(flow) = flow {
            pairs.push((FLOW_ATTRIBUTE.to_string(), flow.clone()));
        }
        let context = match Context::from_pairs(pairs) {
            Ok(c) => c,
            Err(e) => return tally.deny(format!("{}: the context cannot be built: {e}", label())),
        };
        let request = match Request::new(
            principal.clone(),
            tool.action.clone(),
            tool.resource.clone(),
            context,
            tool.validate.then_some(&self.schema),
        ) {
            Ok(r) => r,
            Err(e) => return tally.deny(format!("{}: the request cannot be built: {e}", label())),
        };
        tally.requests += 1;
        if let Some(f) = url {
            tally.origins.insert(f.origin());
        }
        let response = self.cedar.is_authorized(&request, &tool.policies, entities);
        let diagnostics = response.diagnostics();
        let mut errored = false;
        for error in diagnostics.errors() {
            errored = true;
            let AuthorizationError::PolicyEvaluationError(e) = error;
            tally.deny_ids.insert(e.policy_id().to_string());
            tally.reasons.push(format!("{}: {error}", label()));
        }
        match response.decision() {
            cedar_policy::Decision::Allow if !errored => {
                tally
                    .allow_ids
                    .extend(diagnostics.reason().map(ToString::to_string));
            }
            cedar_policy::Decision::Allow => {
                tally.denied = true;
                tally.reasons.push(format!(
                    "{}: denied because a policy could not be evaluated",
                    label()
                ));
            }
            cedar_policy::Decision::Deny => {
                tally.denied = true;
                let forbids: BTreeSet<String> =
                    diagnostics.reason().map(ToString::to_string).collect();
                let mut reason = format!("{}: ", label());
                if forbids.is_empty() {
                    reason.push_str(NO_POLICY_PERMITS);
                } else {
                    reason.push_str("forbidden by ");
                    for (n, id) in forbids.iter().enumerate() {
                        let _ = write!(reason, "{}`{id}`", if n > 0 { ", " } else { "" });
                    }
                }
                tally.reasons.push(reason);
                tally.deny_ids.extend(forbids);
            }
        }
    }
}

/// The reason of a default deny (no policy determined the decision), after the request's label.
const NO_POLICY_PERMITS: &str = "no policy permits it";

/// The reason a default deny of the call's own request (without a URL) records: what a report's
/// headline `denied: no policy permits it` already says.
pub const CALL_DEFAULT_DENY: &str = "the call: no policy permits it";

/// What every request of one call shares: the tool, the principal, `context.input`,
/// `context.flow` and the entity store (the principal in the parents its token names, if any).
#[derive(Clone, Copy)]
struct RequestOf<'a> {
    tool: &'a ToolAuth,
    principal: &'a EntityUid,
    input: &'a RestrictedExpression,
    flow: Option<&'a RestrictedExpression>,
    entities: &'a Entities,
}

/// Which request of a call, for reasons.
#[derive(Clone, Copy)]
enum Label<'a> {
    /// The request for the call as a whole.
    Call,
    /// The request for element `i` of the list at the pointer.
    Element(&'a str, usize),
}

impl Label<'_> {
    /// `the call` or `element i of `/ptr``, with the request's URL (`raw`) when it has one.
    fn render(self, raw: &str) -> String {
        let mut out = match self {
            Label::Call => "the call".to_string(),
            Label::Element(pointer, i) => format!("element {i} of `{pointer}`"),
        };
        if !raw.is_empty() {
            let _ = write!(out, " (`{raw}`)");
        }
        out
    }
}

/// The outcomes of a call's requests so far.
#[derive(Default)]
struct Tally {
    denied: bool,
    requests: usize,
    allow_ids: BTreeSet<String>,
    deny_ids: BTreeSet<String>,
    reasons: Vec<String>,
    origins: BTreeSet<Origin>,
}

impl Tally {
    fn deny(&mut self, reason: String) {
        self.denied = true;
        self.reasons.push(reason);
    }

    /// The decision; `approval` holds the tool's `@approval` permits.
    fn finish(self, approval: &HashMap<String, String>) -> Decision {
        let allowed = !self.denied && self.requests > 0;
        let approval = if allowed {
            self.allow_ids
                .iter()
                .filter_map(|id| approval.get(id).map(|r| (id.clone(), r.clone())))
                .collect()
        } else {
            Vec::new()
        };
        Decision {
            approval,
            allowed,
            policy_ids: if allowed {
                self.allow_ids
            } else {
                self.deny_ids
            }
            .into_iter()
            .collect(),
            reasons: if allowed { Vec::new() } else { self.reasons },
            requests: self.requests,
            origins: if allowed {
                self.origins.into_iter().collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// The permits of `policies` annotated `@approval`, with the annotation's value (empty when
/// it has none).
fn approval_permits(policies: &PolicySet) -> HashMap<String, String> {
    policies
        .policies()
        .filter(|p| p.effect() == cedar_policy::Effect::Permit)
        .filter_map(|p| {
            p.annotation(APPROVAL_ANNOTATION)
                .map(|reason| (p.id().to_string(), reason.to_string()))
        })
        .collect()
}

/// The actions whose context type in the merged schema (`schema_text`) is exactly the one
/// generated from their records: their requests conform by construction. Empty when either
/// schema cannot be read as a fragment (every request is then validated).
fn generated_contexts(records: &[ToolRecord], schema_text: &str) -> HashSet<String> {
    let contexts = |text: &str| -> Option<HashMap<String, Value>> {
        let (fragment, _) = SchemaFragment::from_cedarschema_str(text).ok()?;
        let json = fragment.to_json_value().ok()?;
        let actions = json.get("")?.get("actions")?.as_object()?;
        Some(
            actions
                .iter()
                .filter_map(|(id, a)| {
                    Some((id.clone(), a.get("appliesTo")?.get("context")?.clone()))
                })
                .collect(),
        )
    };
    let (Some(generated), Some(merged)) = (
        contexts(&generated_schema_text(records)),
        contexts(schema_text),
    ) else {
        return HashSet::new();
    };
    generated
        .into_iter()
        .filter(|(id, ctx)| merged.get(id) == Some(ctx))
        .map(|(id, _)| id)
        .collect()
}

/// The actions whose context in the merged schema (`schema_text`) declares `flow`. Empty when
/// the schema cannot be read as a fragment (then no request carries the flow, and a policy that
/// reads it was refused by strict validation).
fn flow_contexts(schema_text: &str) -> HashSet<String> {
    let Ok((fragment, _)) = SchemaFragment::from_cedarschema_str(schema_text) else {
        return HashSet::new();
    };
    let Ok(json) = fragment.to_json_value() else {
        return HashSet::new();
    };
    json.get("")
        .and_then(|ns| ns.get("actions"))
        .and_then(Value::as_object)
        .map(|actions| {
            actions
                .iter()
                .filter(|(_, a)| {
                    a.pointer(&format!("/appliesTo/context/attributes/{FLOW_ATTRIBUTE}"))
                        .is_some()
                })
                .map(|(id, _)| id.clone())
                .collect()
        })
        .unwrap_or_default()
}

fn type_name(name: &str) -> Result<EntityTypeName, AuthorizeError> {
    EntityTypeName::from_str(name).map_err(|e| AuthorizeError::Name {
        name: name.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_calls_default_deny_reads_as_its_constant() {
        assert_eq!(
            format!(
                "{}: {}",
                super::Label::Call.render(""),
                super::NO_POLICY_PERMITS
            ),
            super::CALL_DEFAULT_DENY
        );
    }

    #[test]
    fn the_authorizer_can_be_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<super::Authorizer>();
        shared::<super::Decision>();
    }
}
