//! The SOP rules, applied to SOP files read as JSON values.
//!
//! Like the record rules, an SOP file is checked field by field so that every problem of every
//! file is reported in one run; only a file that passes every rule becomes a [`Sop`]. The
//! graph rules (reachability, paths to a terminal, decision cycles, branch pointers that must
//! read a state run earlier) run once every state of the file is well-formed, so that a typo in
//! one state does not also surface as a knock-on "unreachable" elsewhere.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;

use escepine_contract::FailureOutcome;
use serde_json::{Map, Value};

use super::model::{split_branch_pointer, Branch, DecisionState, ExecutionState, Sop, State};
use super::names::{type_name, RESERVED_TYPE_NAMES};
use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::fields::{self, closest, Object, SOP};
use crate::record::ToolRecord;
use crate::rule::Rule;
use crate::rules::names::is_identifier;
use crate::schema::subset::escape;
use crate::schema::walk::{self, JsonType};
use crate::urls;

const TOP: &[&str] = &[
    "sop_id",
    "version",
    "description",
    "start",
    "states",
    "$schema",
    "$comment",
];
const EXECUTION: &[&str] = &[
    "kind",
    "tool",
    "on_failure",
    "next",
    "require_per_url_authorization",
    "constraints",
    "$comment",
];
const DECISION: &[&str] = &["kind", "branches", "otherwise", "$comment"];
const TERMINAL: &[&str] = &["kind", "$comment"];
const BRANCH: &[&str] = &["when", "next", "$comment"];
const WHEN: &[&str] = &["pointer", "schema"];
const KINDS: &[&str] = &["execution", "decision", "terminal"];

/// Keywords that make a fragment depend on something outside itself (or switch its dialect).
const NOT_SELF_CONTAINED: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$defs",
    "definitions",
    "$schema",
    "$vocabulary",
];

/// Keywords that constrain only values of some JSON types (and are silently ignored for the
/// others, which is why a constraint using them on another type is a contradiction).
const TYPED_KEYWORDS: &[(&[&str], &[JsonType], &str)] = &[
    (
        &[
            "minLength",
            "maxLength",
            "pattern",
            "format",
            "contentEncoding",
            "contentMediaType",
            "contentSchema",
        ],
        &[JsonType::String],
        "strings",
    ),
    (
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
        &[JsonType::Integer, JsonType::Number],
        "numbers",
    ),
    (
        &[
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "unevaluatedItems",
        ],
        &[JsonType::Array],
        "lists",
    ),
    (
        &[
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
        ],
        &[JsonType::Object],
        "objects",
    ),
];

/// A fragment keyword, the field keyword it is compared with, and whether the two leave no
/// value.
type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);

/// What the SOP rules know of the registry.
pub(crate) struct Tools<'a> {
    /// The registered records, sorted by id.
    pub records: &'a [crate::record::ToolRecord],
    /// Tool ids declared by record files that failed their own rules: an SOP naming one is not
    /// reported again (the record's problems are).
    pub failed: BTreeSet<String>,
}

impl Tools<'_> {
    pub(crate) fn get(&self, id: &str) -> Option<&crate::record::ToolRecord> {
        self.records.iter().find(|r| r.tool_id == id)
    }
}

/// Check SOP files against the records that passed (`failed`: ids declared by failing records).
pub(crate) fn check_with_records(
    files: &[SourceFile],
    records: &[crate::record::ToolRecord],
    failed: BTreeSet<String>,
) -> (Vec<Sop>, Diagnostics) {
    check_files(files, Some(&Tools { records, failed }))
}

/// Check every file; return the SOPs that passed every rule (sorted by id) and all problems.
pub(crate) fn check_files(
    files: &[SourceFile],
    tools: Option<&Tools<'_>>,
) -> (Vec<Sop>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let mut sops = Vec::new();
    let mut ids: BTreeMap<String, PathBuf> = BTreeMap::new();
    for src in files {
        let before = diags.len();
        let mut file = File {
            src,
            tools,
            diags: &mut diags,
        };
        let (sop, id) = file.check();
        if let Some(id) = id {
            if let Some(first) = ids.get(&id) {
                diags.push(
                    Diagnostic::at(
                        Rule::SopIdUnique,
                        src,
                        "/sop_id",
                        format!("the SOP id `{id}` is already used by {}", first.display()),
                    )
                    .help("one SOP per id: rename one of them"),
                );
            } else {
                ids.insert(id, src.path.clone());
            }
        }
        if let Some(sop) = sop.filter(|_| diags.len() == before) {
            sops.push(sop);
        }
    }
    sops.sort_by(|a, b| a.sop_id.cmp(&b.sop_id));
    (sops, diags)
}

/// One SOP file being checked.
struct File<'a, 'd> {
    src: &'a SourceFile,
    tools: Option<&'a Tools<'a>>,
    diags: &'d mut Diagnostics,
}

/// What the pre-pass learns of a state from the raw JSON: its kind and its tool.
#[derive(Debug, Clone, Copy, Default)]
struct Raw<'v> {
    kind: Option<&'v str>,
    tool: Option<&'v str>,
}

/// A state as parsed: its transitions (pointer, target) and, when well-formed, the state.
#[derive(Debug, Default)]
struct Parsed {
    targets: Vec<(String, String)>,
    state: Option<State>,
}

fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'a> File<'a, '_> {
    fn push(&mut self, rule: Rule, at: &str, message: impl Into<String>) {
        self.diags.push(Diagnostic::at(rule, self.src, at, message));
    }

    fn push_help(
        &mut self,
        rule: Rule,
        at: &str,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.diags
            .push(Diagnostic::at(rule, self.src, at, message).help(help));
    }

    /// Report fields outside `known`, suggesting the closest known one.
    fn closed(&mut self, map: &Map<String, Value>, at: &str, known: &[&str], what: &str) {
        Object::new(self.src, at, map, SOP).closed(known, what, self.diags);
    }

    /// A required string field (`who` prefixes the messages, e.g. "state `read`: ").
    fn string<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        at: &str,
        key: &str,
        who: &str,
    ) -> Option<&'v str>
    where
        'a: 'v,
    {
        Object::new(self.src, at, map, SOP)
            .who(who)
            .string(key, self.diags)
    }

    /// Check the whole file: the SOP when it passed every rule, and its id when it has one.
    fn check(&mut self) -> (Option<Sop>, Option<String>) {
        let before = self.diags.len();
        let value = match fields::parse(self.src) {
            Ok(v) => v,
            Err(d) => {
                self.diags.push(*d);
                return (None, None);
            }
        };
        let Some(top) = value.as_object() else {
            self.push(
                Rule::SopShape,
                "",
                "an SOP file is a JSON object with `sop_id`, `version`, `description`, `start` and `states`",
            );
            return (None, None);
        };
        self.closed(top, "", TOP, "an SOP");

        let sop_id = self.string(top, "", "sop_id", "").map(str::to_string);
        if let Some(id) = &sop_id {
            if !is_identifier(id) {
                self.push(
                    Rule::SopId,
                    "/sop_id",
                    format!("the SOP id `{id}` does not match ^[a-z][a-z0-9_]*$"),
                );
            } else if ["self", "super", "crate"].contains(&id.as_str()) {
                self.push(
                    Rule::SopId,
                    "/sop_id",
                    format!("the SOP id `{id}` cannot be a Rust module name (`sops::{id}`)"),
                );
            }
        }
        let version =
            self.string(top, "", "version", "")
                .and_then(|v| match semver::Version::parse(v) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        self.push_help(
                            Rule::SopVersion,
                            "/version",
                            format!("`{v}` is not a semver version: {e}"),
                            "write a version such as \"1.0.0\"",
                        );
                        None
                    }
                });
        let description = self.string(top, "", "description", "").and_then(|d| {
            if d.trim().is_empty() {
                self.push(
                    Rule::SopShape,
                    "/description",
                    "`description` is empty; say what the SOP does",
                );
                None
            } else {
                Some(d.to_string())
            }
        });
        if let Some(s) = top.get("$schema").filter(|s| !s.is_string()) {
            self.push(
                Rule::SopShape,
                "/$schema",
                format!("`$schema` must be a string, not {s}"),
            );
        }
        let start = self.string(top, "", "start", "").map(str::to_string);
        let states_value = match top.get("states") {
            None => {
                self.push(Rule::SopShape, "", "missing required field `states`");
                None
            }
            Some(Value::Object(m)) if m.is_empty() => {
                self.push(
                    Rule::SopShape,
                    "/states",
                    "`states` is empty; an SOP needs at least a start state and a terminal state",
                );
                None
            }
            Some(Value::Object(m)) => Some(m),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    "/states",
                    format!("`states` must be an object of named states, not {v}"),
                );
                None
            }
        };
        let Some(states_value) = states_value else {
            return (None, sop_id);
        };

        // Pre-pass: every state's kind and tool, for branch pointers that read other states.
        let raw: BTreeMap<&str, Raw<'_>> = states_value
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str(),
                    Raw {
                        kind: v.get("kind").and_then(Value::as_str),
                        tool: v.get("tool").and_then(Value::as_str),
                    },
                )
            })
            .collect();

        self.state_names(states_value);
        let mut parsed: BTreeMap<String, Parsed> = BTreeMap::new();
        for (name, v) in states_value {
            let p = self.state(name, v, &raw);
            parsed.insert(name.clone(), p);
        }

        // Every transition names a state.
        let names: Vec<&str> = states_value.keys().map(String::as_str).collect();
        let mut undefined = false;
        if let Some(s) = &start {
            if !states_value.contains_key(s) {
                undefined = true;
                self.undefined("/start", "`start`", s, &names);
            }
        }
        for (name, p) in &parsed {
            for (at, target) in &p.targets {
                if !states_value.contains_key(target) {
                    undefined = true;
                    let what = format!(
                        "state `{name}`: `{}`",
                        at.rsplit('/').next().unwrap_or("next")
                    );
                    self.undefined(at, &what, target, &names);
                }
            }
        }

        let complete = parsed.values().all(|p| p.state.is_some());
        let states: BTreeMap<String, State> = parsed
            .into_iter()
            .filter_map(|(n, p)| p.state.map(|s| (n, s)))
            .collect();
        if complete && !undefined {
            if let Some(start) = &start {
                self.graph(start, &states);
            }
        }

        if self.diags.len() != before || !complete {
            return (None, sop_id);
        }
        let sop = match (sop_id.clone(), version, description, start) {
            (Some(sop_id), Some(version), Some(description), Some(start)) => Some(Sop {
                source: self.src.path.clone(),
                sop_id,
                version,
                description,
                start,
                states,
            }),
            _ => None,
        };
        (sop, sop_id)
    }

    fn undefined(&mut self, at: &str, what: &str, target: &str, names: &[&str]) {
        let message = format!("{what} names `{target}`, which is not a state of this SOP");
        match closest(target, names.iter().copied()) {
            Some(best) => self.push_help(
                Rule::SopUndefinedState,
                at,
                message,
                format!("did you mean `{best}`?"),
            ),
            None => self.push_help(
                Rule::SopUndefinedState,
                at,
                message,
                format!("the states are: {}", list(names)),
            ),
        }
    }

    /// State names: the pattern, and distinct Rust type names none of which the generated code
    /// reserves.
    fn state_names(&mut self, states: &Map<String, Value>) {
        let mut by_type: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for name in states.keys() {
            let at = format!("/states/{}", escape(name));
            if !is_identifier(name) {
                self.push_help(
                    Rule::SopStateName,
                    &at,
                    format!("the state name `{name}` does not match ^[a-z][a-z0-9_]*$"),
                    "state names become Rust types and branch pointers: use lower-case words joined by `_`",
                );
                continue;
            }
            let ty = type_name(name);
            if RESERVED_TYPE_NAMES.contains(&ty.as_str()) {
                self.push(
                    Rule::SopStateName,
                    &at,
                    format!(
                        "the state name `{name}` becomes the Rust name `{ty}`, which the generated \
                         SOP module reserves; rename the state"
                    ),
                );
            }
            by_type.entry(ty).or_default().push(name);
        }
        for (ty, names) in by_type.into_iter().filter(|(_, n)| n.len() > 1) {
            for name in &names[1..] {
                self.push(
                    Rule::SopStateName,
                    &format!("/states/{}", escape(name)),
                    format!(
                        "the states {} all become the Rust name `{ty}`; rename one",
                        list(&names)
                    ),
                );
            }
        }
    }

    fn state(&mut self, name: &str, v: &Value, raw: &BTreeMap<&str, Raw<'_>>) -> Parsed {
        let at = format!("/states/{}", escape(name));
        let who = format!("state `{name}`: ");
        let Some(obj) = v.as_object() else {
            self.push(
                Rule::SopShape,
                &at,
                format!("{who}a state must be an object with a `kind` (execution, decision or terminal)"),
            );
            return Parsed::default();
        };
        let kind = match obj.get("kind") {
            None => {
                self.push(
                    Rule::SopShape,
                    &at,
                    format!("{who}missing required field `kind` (execution, decision or terminal)"),
                );
                None
            }
            Some(Value::String(k)) if KINDS.contains(&k.as_str()) => Some(k.as_str()),
            Some(k) => {
                let help = match k.as_str().and_then(|k| closest(k, KINDS.iter().copied())) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => "the kinds are: execution, decision, terminal".to_string(),
                };
                self.push_help(
                    Rule::SopShape,
                    &format!("{at}/kind"),
                    format!("{who}{k} is not a state kind"),
                    help,
                );
                None
            }
        };
        match kind {
            Some("execution") => self.execution(name, &at, obj),
            Some("decision") => self.decision(name, &at, obj, raw),
            Some(_) => {
                self.closed(
                    obj,
                    &at,
                    TERMINAL,
                    &format!("state `{name}` (a terminal state)"),
                );
                Parsed {
                    targets: Vec::new(),
                    state: Some(State::Terminal),
                }
            }
            None => Parsed::default(),
        }
    }

    fn tool(&mut self, name: &str, at: &str, id: &str) -> Option<&'a ToolRecord> {
        let tools = self.tools?;
        if let Some(r) = tools.get(id) {
            return Some(r);
        }
        if tools.failed.contains(id) {
            return None;
        }
        let message = format!("state `{name}`: `{id}` is not a registered tool");
        match closest(id, tools.records.iter().map(|r| r.tool_id.as_str())) {
            Some(best) => self.push_help(
                Rule::SopUnknownTool,
                &format!("{at}/tool"),
                message,
                format!("did you mean `{best}`?"),
            ),
            None => self.push_help(
                Rule::SopUnknownTool,
                &format!("{at}/tool"),
                message,
                "register the tool's record, or bind a registered tool",
            ),
        }
        None
    }

    fn execution(&mut self, name: &str, at: &str, obj: &Map<String, Value>) -> Parsed {
        let before = self.diags.len();
        let who = format!("state `{name}`: ");
        self.closed(
            obj,
            at,
            EXECUTION,
            &format!("state `{name}` (an execution state)"),
        );
        let tool = self.string(obj, at, "tool", &who);
        let on_failure = self.string(obj, at, "on_failure", &who);
        let next = self.string(obj, at, "next", &who);
        let mut targets = Vec::new();
        if let Some(n) = next {
            targets.push((format!("{at}/next"), n.to_string()));
        }
        let per_url = match obj.get("require_per_url_authorization") {
            None => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/require_per_url_authorization"),
                    format!("{who}`require_per_url_authorization` must be true or false, not {v}"),
                );
                None
            }
        };
        let constraints = match obj.get("constraints") {
            None => Some(None),
            Some(Value::Object(m)) => Some(Some(m)),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/constraints"),
                    format!(
                        "{who}`constraints` must be an object of JSON pointer → JSON Schema, not {v}"
                    ),
                );
                None
            }
        };
        let record = tool.and_then(|t| self.tool(name, at, t));

        let outcome = on_failure.and_then(|o| {
            let parsed = FailureOutcome::parse(o);
            let allowed: Vec<&str> = match record {
                Some(r) => r.on_failure.iter().map(|o| o.as_str()).collect(),
                None => FailureOutcome::ALL.iter().map(|o| o.as_str()).collect(),
            };
            match (parsed, record) {
                (None, _) => {
                    let help = match closest(o, allowed.iter().copied()) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None => format!("use one of {}", list(&allowed)),
                    };
                    self.push_help(
                        Rule::SopOutcome,
                        &format!("{at}/on_failure"),
                        format!("{who}`{o}` is not a failure outcome"),
                        help,
                    );
                    None
                }
                (Some(p), Some(r)) if !r.on_failure.contains(&p) => {
                    self.push_help(
                        Rule::SopOutcome,
                        &format!("{at}/on_failure"),
                        format!(
                            "{who}the tool `{}` does not allow `{o}` on failure; it allows {}",
                            r.tool_id,
                            list(&allowed)
                        ),
                        "choose one of the tool's outcomes, or change the tool's record",
                    );
                    None
                }
                (Some(p), _) => Some(p),
            }
        });

        let mut checked = BTreeMap::new();
        if let Some(Some(m)) = constraints {
            for (pointer, fragment) in m {
                let cat = format!("{at}/constraints/{}", escape(pointer));
                let what = format!("{who}the constraint on `{pointer}`");
                checked.insert(pointer.clone(), fragment.clone());
                if !is_pointer(pointer) {
                    self.push_help(
                        Rule::SopConstraintField,
                        &cat,
                        format!("{what}: `{pointer}` is not a JSON pointer"),
                        "a constraint's key is a JSON pointer into the payload, such as `/priority`",
                    );
                    continue;
                }
                let well_formed = self.fragment(&cat, fragment, &what);
                let Some(r) = record else { continue };
                let root = &r.input_schema;
                match walk::pointer_schema(root, root, pointer) {
                    None => {
                        let message = format!(
                            "{what}: the payload of `{}` has no field `{pointer}`",
                            r.tool_id
                        );
                        let fields = field_pointers(root);
                        let help = match closest(pointer, fields.iter().map(String::as_str)) {
                            Some(best) => format!("did you mean `{best}`?"),
                            None if fields.is_empty() => format!("`{}` takes no fields", r.tool_id),
                            None => format!(
                                "the payload's fields are: {}",
                                list(&fields.iter().map(String::as_str).collect::<Vec<_>>())
                            ),
                        };
                        self.push_help(Rule::SopConstraintField, &cat, message, help);
                    }
                    Some(target) if well_formed => {
                        let field = format!("the field `{pointer}` of `{}`", r.tool_id);
                        self.agree(&cat, fragment, root, target.schema, &what, &field, 0);
                    }
                    Some(_) => {}
                }
            }
        }

        if per_url == Some(true) {
            if let Some(r) = record {
                if let Some(problem) = per_url_problem(r) {
                    self.push_help(
                        Rule::SopPerUrl,
                        &format!("{at}/require_per_url_authorization"),
                        format!("{who}per-URL authorization is required, but {problem}"),
                        "mark the URL list `\"x-authorize-each\": true` in the tool's input schema, \
                         bind a single-URL tool, or drop the requirement",
                    );
                }
            }
        }

        let state = match (tool, outcome, next, per_url, constraints) {
            (Some(tool), Some(on_failure), Some(next), Some(per_url), Some(_))
                if self.diags.len() == before =>
            {
                Some(State::Execution(ExecutionState {
                    tool: tool.to_string(),
                    on_failure,
                    next: next.to_string(),
                    require_per_url_authorization: per_url,
                    constraints: checked,
                }))
            }
            _ => None,
        };
        Parsed { targets, state }
    }

    fn decision(
        &mut self,
        name: &str,
        at: &str,
        obj: &Map<String, Value>,
        raw: &BTreeMap<&str, Raw<'_>>,
    ) -> Parsed {
        let before = self.diags.len();
        let who = format!("state `{name}`: ");
        self.closed(
            obj,
            at,
            DECISION,
            &format!("state `{name}` (a decision state)"),
        );
        let mut targets = Vec::new();
        let branches = match obj.get("branches") {
            None => {
                self.push(
                    Rule::SopShape,
                    at,
                    format!("{who}missing required field `branches`"),
                );
                None
            }
            Some(Value::Array(b)) if b.is_empty() => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/branches"),
                    format!("{who}a decision needs at least one branch"),
                );
                None
            }
            Some(Value::Array(b)) => Some(b),
            Some(v) => {
                self.push(
                    Rule::SopShape,
                    &format!("{at}/branches"),
                    format!("{who}`branches` must be a list, not {v}"),
                );
                None
            }
        };
        let mut parsed_branches = Vec::new();
        for (i, b) in branches.into_iter().flatten().enumerate() {
            let bat = format!("{at}/branches/{i}");
            let Some(bobj) = b.as_object() else {
                self.push(
                    Rule::SopShape,
                    &bat,
                    format!("{who}a branch is an object with `when` and `next`"),
                );
                continue;
            };
            self.closed(bobj, &bat, BRANCH, &format!("a branch of state `{name}`"));
            let next = self.string(bobj, &bat, "next", &who);
            if let Some(n) = next {
                targets.push((format!("{bat}/next"), n.to_string()));
            }
            let when = match bobj.get("when") {
                None => {
                    self.push(
                        Rule::SopShape,
                        &bat,
                        format!("{who}missing required field `when`"),
                    );
                    None
                }
                Some(Value::Object(w)) => Some(w),
                Some(v) => {
                    self.push(
                        Rule::SopShape,
                        &format!("{bat}/when"),
                        format!(
                            "{who}`when` must be an object with `pointer` and `schema`, not {v}"
                        ),
                    );
                    None
                }
            };
            let Some(when) = when else { continue };
            let wat = format!("{bat}/when");
            self.closed(
                when,
                &wat,
                WHEN,
                &format!("`when` of a branch of state `{name}`"),
            );
            let pointer = self.string(when, &wat, "pointer", &who);
            let schema = when.get("schema");
            if schema.is_none() {
                self.push(
                    Rule::SopShape,
                    &wat,
                    format!("{who}missing required field `schema`"),
                );
            }
            let well_formed = schema.is_some_and(|s| {
                self.fragment(
                    &format!("{wat}/schema"),
                    s,
                    &format!("{who}the schema of branch {i}"),
                )
            });
            if let Some(p) = pointer {
                self.branch_pointer(name, &wat, p, schema.filter(|_| well_formed), raw);
            }
            if let (Some(pointer), Some(schema), Some(next)) = (pointer, schema, next) {
                parsed_branches.push(Branch {
                    pointer: pointer.to_string(),
                    schema: schema.clone(),
                    next: next.to_string(),
                });
            }
        }
        let otherwise = self.string(obj, at, "otherwise", &who);
        if let Some(o) = otherwise {
            targets.push((format!("{at}/otherwise"), o.to_string()));
        }
        let state = match (branches, otherwise) {
            (Some(_), Some(otherwise)) if self.diags.len() == before => {
                Some(State::Decision(DecisionState {
                    branches: parsed_branches,
                    otherwise: otherwise.to_string(),
                }))
            }
            _ => None,
        };
        Parsed { targets, state }
    }

    /// The parts of a branch pointer that need no graph: its form, the state it reads (an
    /// execution state), its resolution in that tool's schema, and the schema's agreement with
    /// the field.
    fn branch_pointer(
        &mut self,
        name: &str,
        wat: &str,
        pointer: &str,
        schema: Option<&Value>,
        raw: &BTreeMap<&str, Raw<'_>>,
    ) {
        let at = format!("{wat}/pointer");
        let who = format!("state `{name}`: ");
        let Some((state, doc, rest)) = split_branch_pointer(pointer) else {
            self.push_help(
                Rule::SopBranchPointer,
                &at,
                format!("{who}the branch pointer `{pointer}` does not read an earlier step"),
                "a branch pointer is `/<state>/input/…` or `/<state>/output/…` of an execution state",
            );
            return;
        };
        let Some(r) = raw.get(state.as_str()) else {
            let message = format!(
                "{who}the branch pointer `{pointer}` reads the state `{state}`, which is not a state of this SOP"
            );
            match closest(&state, raw.keys().copied()) {
                Some(best) => self.push_help(
                    Rule::SopBranchPointer,
                    &at,
                    message,
                    format!("did you mean `{best}`?"),
                ),
                None => self.push(Rule::SopBranchPointer, &at, message),
            }
            return;
        };
        if r.kind != Some("execution") {
            if r.kind.is_some() {
                self.push(
                    Rule::SopBranchPointer,
                    &at,
                    format!(
                        "{who}the branch pointer `{pointer}` reads the state `{state}`, a {} state; \
                         only execution steps have an input and an output",
                        r.kind.unwrap_or("malformed")
                    ),
                );
            }
            return;
        }
        let Some((tools, tool)) = self.tools.zip(r.tool) else {
            return;
        };
        // An unknown tool is reported at its state.
        let Some(record) = tools.get(tool) else {
            return;
        };
        let root = if doc == "input" {
            &record.input_schema
        } else {
            &record.output_schema
        };
        match walk::pointer_schema(root, root, rest) {
            None => {
                let fields = field_pointers(root);
                let message = format!(
                    "{who}the branch pointer `{pointer}` does not resolve: the {doc} of `{tool}` \
                     (state `{state}`) has no field `{rest}`"
                );
                match closest(rest, fields.iter().map(String::as_str)) {
                    Some(best) => self.push_help(
                        Rule::SopBranchPointer,
                        &at,
                        message,
                        format!("did you mean `/{}/{doc}{best}`?", escape(&state)),
                    ),
                    None => self.push(Rule::SopBranchPointer, &at, message),
                }
            }
            Some(target) => {
                if let Some(schema) = schema {
                    let what = format!("{who}the schema of the branch on `{pointer}`");
                    let field = format!("the {doc} field `{rest}` of `{tool}`");
                    self.agree(
                        &format!("{wat}/schema"),
                        schema,
                        root,
                        target.schema,
                        &what,
                        &field,
                        0,
                    );
                }
            }
        }
    }

    /// Whether a constraint (or branch schema) fragment is a well-formed, self-contained
    /// 2020-12 schema; reports why not.
    fn fragment(&mut self, at: &str, fragment: &Value, what: &str) -> bool {
        if !fragment.is_object() {
            self.push_help(
                Rule::SopConstraintSchema,
                at,
                format!("{what} must be a JSON Schema object, not {fragment}"),
                "write a schema fragment such as {\"maximum\": 2}",
            );
            return false;
        }
        if let Err(e) = jsonschema::draft202012::meta::validate(fragment) {
            self.push(
                Rule::SopConstraintSchema,
                &format!("{at}{}", e.instance_path().as_str()),
                format!("{what} is not a well-formed JSON Schema 2020-12: {e}"),
            );
            return false;
        }
        let mut foreign = Vec::new();
        foreign_keywords(fragment, at, &mut foreign, 0);
        for (p, k) in &foreign {
            self.push(
                Rule::SopConstraintSchema,
                p,
                format!(
                    "{what} uses `{k}`: a constraint is self-contained (no references, identifiers, \
                     definitions or dialects)"
                ),
            );
        }
        if !foreign.is_empty() {
            return false;
        }
        if let Err(e) = jsonschema::options()
            .should_validate_formats(true)
            .build(fragment)
        {
            self.push(
                Rule::SopConstraintSchema,
                at,
                format!("{what} does not compile: {e}"),
            );
            return false;
        }
        true
    }

    /// Report where `fragment` contradicts the field `target` (of the schema `root`): its
    /// `type`, keywords of other types, `enum`/`const` values the field never accepts, bounds
    /// that leave no value, and (recursively) `properties` and `items`.
    #[allow(clippy::too_many_arguments)]
    fn agree(
        &mut self,
        at: &str,
        fragment: &Value,
        root: &Value,
        target: &Value,
        what: &str,
        field: &str,
        depth: usize,
    ) {
        let (Some(frag), Some(target)) = (fragment.as_object(), walk::resolve(root, target)) else {
            return;
        };
        let Some(ft) = walk::type_of(root, target) else {
            return;
        };
        let compatible = |t: &str| JsonType::parse(t).is_some_and(|t| t.fits(ft) || ft.fits(t));
        match frag.get("type") {
            Some(Value::String(t)) if !compatible(t) => self.push(
                Rule::SopConstraintType,
                &format!("{at}/type"),
                format!(
                    "{what} says `\"type\": \"{t}\"`, but {field} is of type `{}`",
                    ft.as_str()
                ),
            ),
            Some(Value::Array(ts)) if !ts.iter().filter_map(Value::as_str).any(compatible) => self
                .push(
                    Rule::SopConstraintType,
                    &format!("{at}/type"),
                    format!(
                        "{what} allows none of the types it lists: {field} is of type `{}`",
                        ft.as_str()
                    ),
                ),
            _ => {}
        }
        for (keys, types, noun) in TYPED_KEYWORDS {
            if types.contains(&ft) {
                continue;
            }
            for k in keys.iter().filter(|k| frag.contains_key(**k)) {
                self.push_help(
                    Rule::SopConstraintType,
                    &format!("{at}/{k}"),
                    format!(
                        "{what} uses `{k}`, which constrains only {noun}, but {field} is of type `{}`",
                        ft.as_str()
                    ),
                    "JSON Schema ignores the keyword for other types, so the constraint would not constrain anything",
                );
            }
        }
        self.values_agree(at, frag, root, target, ft, what, field);
        self.bounds_agree(at, frag, target, what, field);
        if depth > 16 {
            return;
        }
        match ft {
            JsonType::Object => {
                let props = walk::properties(root, target);
                if let Some(fp) = frag.get("properties").and_then(Value::as_object) {
                    for (name, sub) in fp {
                        let sat = format!("{at}/properties/{}", escape(name));
                        match props.iter().find(|(k, _, _)| *k == name) {
                            Some((_, ts, _)) => {
                                let f = format!("{field}'s field `{name}`");
                                self.agree(&sat, sub, root, ts, what, &f, depth + 1);
                            }
                            None => self.push(
                                Rule::SopConstraintField,
                                &sat,
                                format!("{what} constrains `{name}`, which {field} does not have"),
                            ),
                        }
                    }
                }
                if let Some(req) = frag.get("required").and_then(Value::as_array) {
                    for (i, r) in req.iter().enumerate() {
                        if let Some(r) = r.as_str() {
                            if !props.iter().any(|(k, _, _)| *k == r) {
                                self.push(
                                    Rule::SopConstraintField,
                                    &format!("{at}/required/{i}"),
                                    format!("{what} requires `{r}`, which {field} does not have"),
                                );
                            }
                        }
                    }
                }
            }
            JsonType::Array => {
                if let (Some(fi), Some(ti)) = (frag.get("items"), target.get("items")) {
                    let f = format!("the items of {field}");
                    self.agree(&format!("{at}/items"), fi, root, ti, what, &f, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// `enum`/`const` values of the fragment that the field never accepts.
    #[allow(clippy::too_many_arguments)]
    fn values_agree(
        &mut self,
        at: &str,
        frag: &Map<String, Value>,
        root: &Value,
        target: &Value,
        ft: JsonType,
        what: &str,
        field: &str,
    ) {
        let mut values: Vec<(String, &Value)> = Vec::new();
        if let Some(c) = frag.get("const") {
            values.push((format!("{at}/const"), c));
        }
        if let Some(e) = frag.get("enum").and_then(Value::as_array) {
            values.extend(
                e.iter()
                    .enumerate()
                    .map(|(i, v)| (format!("{at}/enum/{i}"), v)),
            );
        }
        if values.is_empty() {
            return;
        }
        let validator = field_validator(root, target);
        for (vat, v) in values {
            let type_ok = match JsonType::of_value(v) {
                None => false,
                Some(t) => {
                    t.fits(ft)
                        || (ft == JsonType::Integer && v.as_f64().is_some_and(|f| f.fract() == 0.0))
                }
            };
            if !type_ok {
                self.push(
                    Rule::SopConstraintType,
                    &vat,
                    format!(
                        "{what} allows {v}, but {field} is of type `{}`",
                        ft.as_str()
                    ),
                );
            } else if validator.as_ref().is_some_and(|val| !val.is_valid(v)) {
                self.push(
                    Rule::SopConstraintType,
                    &vat,
                    format!("{what} allows {v}, which {field} never accepts (its own schema rejects it)"),
                );
            }
        }
    }

    /// Lower bounds of the fragment above the field's upper bounds, and the reverse.
    fn bounds_agree(
        &mut self,
        at: &str,
        frag: &Map<String, Value>,
        target: &Value,
        what: &str,
        field: &str,
    ) {
        let num = |m: &Value, k: &str| m.get(k).and_then(Value::as_f64);
        let fnum = |k: &str| frag.get(k).and_then(Value::as_f64);
        let pairs: [Bound; 8] = [
            ("minimum", "maximum", |f, t| f > t),
            ("exclusiveMinimum", "maximum", |f, t| f >= t),
            ("maximum", "minimum", |f, t| f < t),
            ("exclusiveMaximum", "minimum", |f, t| f <= t),
            ("minLength", "maxLength", |f, t| f > t),
            ("maxLength", "minLength", |f, t| f < t),
            ("minItems", "maxItems", |f, t| f > t),
            ("maxItems", "minItems", |f, t| f < t),
        ];
        for (fk, tk, empty) in pairs {
            if let (Some(f), Some(t)) = (fnum(fk), num(target, tk)) {
                if empty(f, t) {
                    self.push(
                        Rule::SopConstraintType,
                        &format!("{at}/{fk}"),
                        format!(
                            "{what} says `{fk}: {}`, but {field} has `{tk}: {}`: no value satisfies both",
                            frag[fk], target[tk]
                        ),
                    );
                }
            }
        }
    }

    /// The graph rules, on a file whose states are all well-formed and whose transitions all
    /// name states.
    fn graph(&mut self, start: &str, states: &BTreeMap<String, State>) {
        let succ: BTreeMap<&str, Vec<&str>> = states
            .iter()
            .map(|(n, s)| (n.as_str(), s.successors()))
            .collect();

        // Reachable from start.
        let mut reachable: BTreeSet<&str> = BTreeSet::new();
        let mut queue = VecDeque::from([start]);
        while let Some(n) = queue.pop_front() {
            if reachable.insert(n) {
                queue.extend(succ.get(n).into_iter().flatten().copied());
            }
        }
        for name in states.keys().filter(|n| !reachable.contains(n.as_str())) {
            self.push_help(
                Rule::SopUnreachableState,
                &format!("/states/{}", escape(name)),
                format!(
                    "state `{name}` is unreachable: no path from the start state `{start}` leads to it"
                ),
                "lead a `next`, a branch or an `otherwise` to it, or remove it",
            );
        }

        // Can reach a terminal.
        let terminals: Vec<&str> = states
            .iter()
            .filter(|(_, s)| matches!(s, State::Terminal))
            .map(|(n, _)| n.as_str())
            .collect();
        if terminals.is_empty() {
            self.push_help(
                Rule::SopNoTerminalPath,
                "/states",
                "the SOP has no terminal state: no run can end successfully",
                "add a state { \"kind\": \"terminal\" } and lead the last step to it",
            );
        } else {
            let mut finishes: BTreeSet<&str> = terminals.iter().copied().collect();
            loop {
                let more: Vec<&str> = succ
                    .iter()
                    .filter(|(n, s)| {
                        !finishes.contains(*n) && s.iter().any(|t| finishes.contains(t))
                    })
                    .map(|(n, _)| *n)
                    .collect();
                if more.is_empty() {
                    break;
                }
                finishes.extend(more);
            }
            for name in reachable.iter().filter(|n| !finishes.contains(*n)) {
                self.push_help(
                    Rule::SopNoTerminalPath,
                    &format!("/states/{}", escape(name)),
                    format!(
                        "state `{name}`: no path leads from it to a terminal state ({}); a run \
                         entering it can never finish",
                        list(&terminals)
                    ),
                    "lead one of its transitions (or a later state's) to a terminal state",
                );
            }
        }

        // Decisions that reach themselves through decisions only.
        let is_decision = |n: &str| matches!(states.get(n), Some(State::Decision(_)));
        for name in reachable.iter().copied().filter(|n| is_decision(n)) {
            let mut seen = BTreeSet::new();
            let mut stack: Vec<&str> = succ[name]
                .iter()
                .copied()
                .filter(|n| is_decision(n))
                .collect();
            let mut cycle = false;
            while let Some(n) = stack.pop() {
                if n == name {
                    cycle = true;
                    break;
                }
                if seen.insert(n) {
                    stack.extend(succ[n].iter().copied().filter(|n| is_decision(n)));
                }
            }
            if cycle {
                self.push_help(
                    Rule::SopDecisionCycle,
                    &format!("/states/{}", escape(name)),
                    format!(
                        "state `{name}`: decisions lead back to it without an execution step \
                         between, so a run would loop forever on unchanged outputs"
                    ),
                    "break the cycle with an execution step, or lead a branch elsewhere",
                );
            }
        }

        // Branch pointers read a step that ran before the decision on every path.
        let dominators = dominators(start, &reachable, &succ);
        for (name, state) in states {
            let State::Decision(d) = state else { continue };
            let Some(doms) = dominators.get(name.as_str()) else {
                continue;
            };
            for (i, b) in d.branches.iter().enumerate() {
                let Some((read, _, _)) = b.target() else {
                    continue;
                };
                let runs_before = matches!(states.get(&read), Some(State::Execution(_)))
                    && doms.contains(read.as_str());
                if matches!(states.get(&read), Some(State::Execution(_))) && !runs_before {
                    self.push_help(
                        Rule::SopBranchPointer,
                        &format!("/states/{}/branches/{i}/when/pointer", escape(name)),
                        format!(
                            "state `{name}`: the branch pointer `{}` reads the step `{read}`, which \
                             does not run before `{name}` on every path from `{start}`",
                            b.pointer
                        ),
                        "a decision may read only steps that every path to it runs first",
                    );
                }
            }
        }
    }
}

/// The dominators of every reachable state: the states every path from `start` to it passes.
fn dominators<'n>(
    start: &'n str,
    reachable: &BTreeSet<&'n str>,
    succ: &BTreeMap<&'n str, Vec<&'n str>>,
) -> BTreeMap<&'n str, BTreeSet<&'n str>> {
    let mut preds: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (n, ss) in succ.iter().filter(|(n, _)| reachable.contains(*n)) {
        for s in ss {
            preds.entry(s).or_default().push(n);
        }
    }
    let mut dom: BTreeMap<&str, BTreeSet<&str>> = reachable
        .iter()
        .map(|n| {
            let set = if *n == start {
                BTreeSet::from([start])
            } else {
                reachable.clone()
            };
            (*n, set)
        })
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        for n in reachable.iter().filter(|n| **n != start) {
            let mut new: Option<BTreeSet<&str>> = None;
            for p in preds.get(n).into_iter().flatten() {
                let pd = &dom[p];
                new = Some(match new {
                    None => pd.clone(),
                    Some(acc) => acc.intersection(pd).copied().collect(),
                });
            }
            let mut new = new.unwrap_or_default();
            new.insert(n);
            if new != dom[n] {
                dom.insert(n, new);
                changed = true;
            }
        }
    }
    dom
}

/// Whether `p` is a JSON pointer (empty, or `/`-separated tokens with only `~0`/`~1` escapes).
fn is_pointer(p: &str) -> bool {
    if p.is_empty() {
        return true;
    }
    p.starts_with('/') && {
        let b = p.as_bytes();
        b.iter()
            .enumerate()
            .all(|(i, c)| *c != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
    }
}

/// Every property pointer of a schema (through objects, not lists), for did-you-mean.
fn field_pointers(root: &Value) -> Vec<String> {
    fn visit(root: &Value, s: &Value, at: String, out: &mut Vec<String>, depth: usize) {
        if depth > 8 {
            return;
        }
        for (name, sub, _) in walk::properties(root, s) {
            let p = format!("{at}/{}", escape(name));
            out.push(p.clone());
            if walk::type_of(root, sub) == Some(JsonType::Object) {
                visit(root, sub, p, out, depth + 1);
            }
        }
    }
    let mut out = Vec::new();
    visit(root, root, String::new(), &mut out, 0);
    out
}

/// A validator for values of the field `target` (its `$defs` references resolved against
/// `root`).
fn field_validator(root: &Value, target: &Value) -> Option<jsonschema::Validator> {
    let mut schema = target.clone();
    if let (Some(obj), Some(defs)) = (schema.as_object_mut(), root.get("$defs")) {
        obj.insert("$defs".into(), defs.clone());
    }
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .ok()
}

/// Keywords of a fragment (at any schema depth) that are not self-contained.
fn foreign_keywords(schema: &Value, at: &str, out: &mut Vec<(String, String)>, depth: usize) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    if depth > 32 {
        return;
    }
    for (k, v) in obj {
        let here = format!("{at}/{}", escape(k));
        if NOT_SELF_CONTAINED.contains(&k.as_str()) {
            out.push((here, k.clone()));
            continue;
        }
        match k.as_str() {
            "properties" | "patternProperties" | "dependentSchemas" => {
                for (n, s) in v.as_object().into_iter().flatten() {
                    foreign_keywords(s, &format!("{here}/{}", escape(n)), out, depth + 1);
                }
            }
            "items"
            | "additionalProperties"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "contentSchema" => {
                foreign_keywords(v, &here, out, depth + 1);
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                    foreign_keywords(s, &format!("{here}/{i}"), out, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// Why a tool's URLs would not each be authorized on their own, if they would not: the
/// per-URL shape rule the registration applies to URL-constrained tools
/// ([`urls::shape_problems`]), and a URL to authorize at all.
fn per_url_problem(record: &ToolRecord) -> Option<String> {
    let root = &record.input_schema;
    let id = &record.tool_id;
    if let Some(p) = urls::shape_problems(root).into_iter().next() {
        return Some(format!("`{id}`: {}", p.message));
    }
    if !urls::per_url(root).has_url() {
        return Some(format!(
            "`{id}` takes no URL: its payload has no URL field and no list marked \
             `x-authorize-each`"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_and_dominators() {
        assert!(
            is_pointer("") && is_pointer("/a/b~1c~0") && !is_pointer("a") && !is_pointer("/a~2")
        );
        let succ: BTreeMap<&str, Vec<&str>> = BTreeMap::from([
            ("a", vec!["b", "c"]),
            ("b", vec!["d"]),
            ("c", vec!["d"]),
            ("d", vec![]),
        ]);
        let reach: BTreeSet<&str> = ["a", "b", "c", "d"].into();
        let dom = dominators("a", &reach, &succ);
        assert_eq!(dom["d"], BTreeSet::from(["a", "d"]));
        assert_eq!(dom["b"], BTreeSet::from(["a", "b"]));
    }
}
