//! Which tools a principal sees in `tools/list`: those some request of that principal could be
//! permitted to call, decided from the policies alone, before any payload exists.
//!
//! A call is authorized on the principal, the tool's action and resource, and a context built
//! from the payload (`context.input`, and `context.url` for per-URL requests). Listing fixes the
//! first three and leaves the context unknown. A tool is **hidden** when no context whatever can
//! make a request of the principal allowed; it is **listed** otherwise. The listing is an
//! over-approximation: a listed tool can still be denied for a given payload (that is the
//! governed path's job, which always runs), but a hidden tool is one the principal can never
//! call. Both analyses start the same way: a principal whose entity type the action does not
//! accept is hidden from it (the authorizer denies such a request outright), and the policies
//! are the tool's slice (those whose action scope can match its action, [`mod@escepine_policy::authorize::slice`]).
//!
//! # With partial evaluation (`Analysis::PartialEval`, crate feature `mcp-partial-eval`)
//! One request per tool with a known principal, action and resource and an **unknown context**
//! goes through Cedar's partial evaluator (cedar-policy's experimental `partial-eval`). Every
//! condition that does not mention the context is decided — `principal == …`, principal
//! attributes and groups, tool attributes, constants — and what mentions it stays residual.
//! Hidden: the partial decision is DENY (a forbid is satisfied whatever the context, or no
//! permit is satisfied or residual), or some policy definitely fails to evaluate (the runtime
//! denies every call whose evaluation errs). Listed otherwise.
//!
//! # Without it ([`Analysis::Scope`], always available)
//! A conservative reading of the policies' scopes, evaluated exactly on the entities
//! (`principal in Group` follows the entity hierarchy): hidden when a `forbid` with **no
//! `when`/`unless`** has a scope matching the request (it forbids every call), or when **no
//! `permit`'s scope** matches it (nothing can permit); listed otherwise, whatever the permits'
//! conditions say. It lists a superset of what partial evaluation lists: a permit whose
//! condition can never hold for this principal (`when { principal == Agent::"bob" }` read by
//! alice), or a conditional forbid that always holds for it, leaves the tool listed.

use std::collections::BTreeSet;
use std::str::FromStr;

use cedar_policy::{
    Effect, Entities, EntityId, EntityTypeName, EntityUid, PolicySet, PrincipalConstraint,
    ResourceConstraint, Schema,
};
use escepine_contract::Principal;
use escepine_policy::cedar::RESOURCE_TYPE;
use escepine_policy::BoundRegistry;
use serde_json::Value;

use escepine_policy::authorize::{slice, Authorizer};

/// How [`Listing`] decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Analysis {
    /// Cedar's partial evaluation with an unknown context (crate feature `mcp-partial-eval`).
    #[cfg(feature = "mcp-partial-eval")]
    PartialEval,
    /// The conservative scope analysis.
    Scope,
}

impl Analysis {
    /// The most precise analysis this build has: `Analysis::PartialEval` with the feature
    /// `mcp-partial-eval`, else [`Analysis::Scope`].
    pub const fn best() -> Self {
        #[cfg(feature = "mcp-partial-eval")]
        {
            Self::PartialEval
        }
        #[cfg(not(feature = "mcp-partial-eval"))]
        {
            Self::Scope
        }
    }

    /// A short name for logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            #[cfg(feature = "mcp-partial-eval")]
            Self::PartialEval => "partial-eval",
            Self::Scope => "scope",
        }
    }
}

/// Why a listing cannot be built (the same problems as building the authorizer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListingError {
    /// The entities, an action or a slice could not be built.
    #[error("{0}")]
    Authorize(#[from] escepine_policy::authorize::AuthorizeError),
    /// A name that is not a valid Cedar entity type.
    #[error("`{name}` is not a valid Cedar entity type: {message}")]
    Name {
        /// The name.
        name: String,
        /// What Cedar said.
        message: String,
    },
}

/// Whether a tool is listed for a principal, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visibility {
    /// Some request of the principal could be permitted.
    Listed,
    /// No request of the principal can be permitted.
    Hidden {
        /// Why (naming the policies where one decides).
        reason: String,
        /// The deciding forbids or erring policies (empty when nothing permits).
        policy_ids: Vec<String>,
    },
}

impl Visibility {
    /// Whether the tool is listed.
    pub fn is_listed(&self) -> bool {
        matches!(self, Self::Listed)
    }

    fn hidden(reason: impl Into<String>, policy_ids: Vec<String>) -> Self {
        Self::Hidden {
            reason: reason.into(),
            policy_ids,
        }
    }
}

/// One tool's view for listing.
#[derive(Debug)]
struct ToolView {
    tool_id: String,
    action: EntityUid,
    resource: EntityUid,
    principal_types: BTreeSet<String>,
    policies: PolicySet,
}

/// Decides, per principal, which tools `tools/list` shows. Built once at start-up.
#[derive(Debug)]
pub struct Listing {
    tools: Vec<ToolView>,
    entities: Entities,
    /// The schema the entities conform to: a principal's parents from its token are checked
    /// against it, as the authorizer does.
    schema: Schema,
    /// The stores of principals vouched into parents, built once each.
    members: escepine_policy::authorize::Members,
    analysis: Analysis,
}

impl Listing {
    /// The listing of `registry`'s tools with `entities` (Cedar's entities JSON, as given to the
    /// runtime), using [`Analysis::best`].
    ///
    /// # Errors
    /// [`ListingError`] when the entities do not conform to the schema, say.
    pub fn new(registry: &BoundRegistry, entities: Option<&Value>) -> Result<Self, ListingError> {
        // The authorizer builds (and validates) the very entity store calls are evaluated with.
        let store = Authorizer::new(registry.cedar(), registry.records(), entities)?
            .entities()
            .clone();
        let schema = &registry.cedar().schema;
        let action_entities = schema
            .action_entities()
            .map_err(|e| escepine_policy::authorize::AuthorizeError::Entities(e.to_string()))?;
        let action_type = type_name("Action")?;
        let resource_type = type_name(RESOURCE_TYPE)?;
        let mut tools = Vec::with_capacity(registry.records().len());
        for record in registry.records() {
            let action = EntityUid::from_type_name_and_id(
                action_type.clone(),
                EntityId::new(record.cedar_action()),
            );
            let resource = EntityUid::from_type_name_and_id(
                resource_type.clone(),
                EntityId::new(record.tool_id()),
            );
            let matching =
                escepine_policy::cedar::url_scope::matching_actions(&action_entities, &action);
            let policies = slice::slice(&registry.cedar().policies, &action, &matching).map_err(
                |message| escepine_policy::authorize::AuthorizeError::Slice {
                    tool: record.tool_id().to_string(),
                    message,
                },
            )?;
            let principal_types = schema
                .principals_for_action(&action)
                .map(|it| it.map(ToString::to_string).collect())
                .unwrap_or_default();
            tools.push(ToolView {
                tool_id: record.tool_id().to_string(),
                action,
                resource,
                principal_types,
                policies,
            });
        }
        Ok(Self {
            tools,
            entities: store,
            schema: schema.clone(),
            members: Default::default(),
            analysis: Analysis::best(),
        })
    }

    /// The same listing, deciding with `analysis`.
    pub fn with_analysis(mut self, analysis: Analysis) -> Self {
        self.analysis = analysis;
        self
    }

    /// The analysis in use.
    pub fn analysis(&self) -> Analysis {
        self.analysis
    }

    /// The tool ids listed for `principal`, in registry order.
    pub fn visible(&self, principal: &Principal) -> Vec<&str> {
        self.visible_as(principal, &[])
    }

    /// The tool ids listed for `principal` when an identity provider vouched for its membership
    /// in `parents` (its access token's claims): decided with the principal in those parents,
    /// as its calls are authorized. Nothing is listed when the schema refuses such a parent
    /// (every call would be denied).
    pub fn visible_as(&self, principal: &Principal, parents: &[Principal]) -> Vec<&str> {
        let Ok((uid, entities)) = self.member(principal, parents) else {
            return Vec::new();
        };
        self.tools
            .iter()
            .filter(|t| self.decide(t, principal, &uid, &entities).is_listed())
            .map(|t| t.tool_id.as_str())
            .collect()
    }

    /// Whether `tool_id` is listed for `principal` (`None` for an unknown tool).
    pub fn visibility(&self, principal: &Principal, tool_id: &str) -> Option<Visibility> {
        let tool = self.tools.iter().find(|t| t.tool_id == tool_id)?;
        Some(match self.member(principal, &[]) {
            Ok((uid, entities)) => self.decide(tool, principal, &uid, &entities),
            Err(reason) => Visibility::hidden(reason, Vec::new()),
        })
    }

    /// The principal's uid, and the store its requests are decided with (the principal in
    /// `parents`, [`escepine_policy::authorize::with_parents`]).
    fn member(
        &self,
        principal: &Principal,
        parents: &[Principal],
    ) -> Result<(EntityUid, escepine_policy::authorize::Store<'_>), String> {
        let ty = EntityTypeName::from_str(&principal.entity_type).map_err(|e| {
            format!(
                "`{}` is not a Cedar entity type: {e}",
                principal.entity_type
            )
        })?;
        let uid = EntityUid::from_type_name_and_id(ty, EntityId::new(&principal.id));
        let entities = self
            .members
            .store(&self.entities, &self.schema, &uid, parents)?;
        Ok((uid, entities))
    }

    fn decide(
        &self,
        tool: &ToolView,
        principal: &Principal,
        uid: &EntityUid,
        entities: &Entities,
    ) -> Visibility {
        if !tool.principal_types.contains(&principal.entity_type) {
            return Visibility::hidden(
                format!(
                    "`{}` is not a principal type of `Action::\"{}\"`",
                    principal.entity_type,
                    tool.action.id().unescaped()
                ),
                Vec::new(),
            );
        }
        match self.analysis {
            #[cfg(feature = "mcp-partial-eval")]
            Analysis::PartialEval => partial(tool, uid, entities),
            Analysis::Scope => scope(tool, uid, entities),
        }
    }
}

#[cfg(feature = "mcp-partial-eval")]
fn partial(tool: &ToolView, principal: &EntityUid, entities: &Entities) -> Visibility {
    // No context given: the request's context is an unknown.
    let request = cedar_policy::Request::builder()
        .principal(principal.clone())
        .action(tool.action.clone())
        .resource(tool.resource.clone())
        .build();
    let response =
        cedar_policy::Authorizer::new().is_authorized_partial(&request, &tool.policies, entities);
    let errored: Vec<String> = response
        .definitely_errored()
        .map(ToString::to_string)
        .collect();
    if !errored.is_empty() {
        return Visibility::hidden(
            "a policy fails to evaluate for this principal, which denies every call",
            sorted(errored),
        );
    }
    match response.decision() {
        Some(cedar_policy::Decision::Deny) => {
            let forbids: Vec<String> = response
                .definitely_satisfied()
                .filter(|p| p.effect() == Effect::Forbid)
                .map(|p| p.id().to_string())
                .collect();
            if forbids.is_empty() {
                Visibility::hidden("no policy can permit a call", Vec::new())
            } else {
                Visibility::hidden("forbidden whatever the payload", sorted(forbids))
            }
        }
        _ => Visibility::Listed,
    }
}

fn scope(tool: &ToolView, principal: &EntityUid, entities: &Entities) -> Visibility {
    let is_in = |a: &EntityUid, b: &EntityUid| a == b || entities.is_ancestor_of(b, a);
    let mut permits = false;
    let mut forbids = Vec::new();
    for policy in tool.policies.policies() {
        let principal_ok = match policy.principal_constraint() {
            PrincipalConstraint::Any => true,
            PrincipalConstraint::Eq(u) => u == *principal,
            PrincipalConstraint::In(u) => is_in(principal, &u),
            PrincipalConstraint::Is(t) => principal.type_name() == &t,
            PrincipalConstraint::IsIn(t, u) => principal.type_name() == &t && is_in(principal, &u),
        };
        let resource_ok = match policy.resource_constraint() {
            ResourceConstraint::Any => true,
            ResourceConstraint::Eq(u) => u == tool.resource,
            ResourceConstraint::In(u) => is_in(&tool.resource, &u),
            ResourceConstraint::Is(t) => tool.resource.type_name() == &t,
            ResourceConstraint::IsIn(t, u) => {
                tool.resource.type_name() == &t && is_in(&tool.resource, &u)
            }
        };
        if !(principal_ok && resource_ok) {
            continue;
        }
        match policy.effect() {
            Effect::Permit => permits = true,
            Effect::Forbid if !policy.has_non_scope_constraint() => {
                forbids.push(policy.id().to_string());
            }
            Effect::Forbid => {}
        }
    }
    if !forbids.is_empty() {
        Visibility::hidden("forbidden unconditionally", sorted(forbids))
    } else if !permits {
        Visibility::hidden("no permit's scope matches", Vec::new())
    } else {
        Visibility::Listed
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

fn type_name(name: &str) -> Result<EntityTypeName, ListingError> {
    EntityTypeName::from_str(name).map_err(|e| ListingError::Name {
        name: name.to_string(),
        message: e.to_string(),
    })
}
