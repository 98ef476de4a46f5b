//! The per-record and cross-record registration rules.
//!
//! Records are read as JSON values and checked field by field, so that every problem of every
//! file is reported in one run (a typed deserialiser would stop at the first). Only a record
//! that passes every rule becomes a [`ToolRecord`].

use std::collections::{BTreeMap, BTreeSet};

use escepine_contract::{
    FailureOutcome, Filesystem, RetryBoundError, RetryPolicy, SideEffectClass, Transport,
};
use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::egress::EgressEntry;
use crate::endpoint::{self, WorkspaceBins};
use crate::envelope::Envelope;
use crate::record::{CompensationSpec, EndpointSpec, SandboxProfile, ToolRecord};
use crate::rule::Rule;
use crate::schema::subset::{self, escape, Which};
use crate::schema::walk::{self, JsonType};

/// What the record rules need beyond the records themselves.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The deployment envelope; `None` skips the coverage rule.
    pub envelope: Option<&'a Envelope>,
    /// The workspace's declared binaries, for endpoint resolution.
    pub bins: &'a WorkspaceBins,
}

const FIELDS: &[&str] = &[
    "tool_id",
    "name",
    "version",
    "description",
    "input_schema",
    "payload_schema",
    "output_schema",
    "cedar_action",
    "action_groups",
    "side_effect_class",
    "compensation",
    "accepts_credentials",
    "timeout_ms",
    "retry",
    "on_failure",
    "endpoint",
    "auth",
    "sandbox_profile",
    "$schema",
    "$comment",
];
const CLASS_GROUPS: [&str; 3] = ["read-only", "compensatable", "supersede"];
const RESERVED_IDS: [&str; 3] = ["read_only", "compensatable", "supersede"];

/// A record that passed the per-record rules, with where it came from.
struct Checked {
    record: ToolRecord,
    src: SourceFile,
    /// The pointer of the compensation map in the file (`/compensation/map`).
    has_compensation: bool,
}

/// Check every file; return the records that passed every rule (sorted by id) and all problems.
pub fn check_all(files: &[SourceFile], ctx: &Context<'_>) -> (Vec<ToolRecord>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let mut checked = Vec::new();
    // Every id some file declares (even a failing one), so that cross-record rules do not
    // report a knock-on error for a record whose own errors are already reported.
    let mut declared: BTreeMap<String, (SourceFile, String)> = BTreeMap::new();
    let mut duplicate = BTreeSet::new();
    for src in files {
        let value: Value = match serde_json::from_str(&src.text) {
            Ok(v) => v,
            Err(e) => {
                let offset = offset_of(&src.text, e.line(), e.column());
                diags.push(Diagnostic::at_span(
                    Rule::JsonSyntax,
                    src,
                    Some((offset, 1)),
                    format!("not valid JSON: {e}"),
                ));
                continue;
            }
        };
        if let Some((ptr, id)) = id_of(&value) {
            if let Some((first, _)) = declared.get(&id) {
                diags.push(
                    Diagnostic::at(
                        Rule::ToolIdDuplicate,
                        src,
                        &ptr,
                        format!(
                            "the tool id `{id}` is already registered by {}",
                            first.path.display()
                        ),
                    )
                    .help("one version of a tool id per registry: remove or rename one of them"),
                );
                duplicate.insert(id.clone());
                continue;
            }
            declared.insert(id, (src.clone(), ptr));
        }
        if let Some(c) = check_one(src, &value, ctx, &mut diags) {
            checked.push(c);
        }
    }
    checked.retain(|c| {
        !duplicate.contains(&c.record.tool_id)
            || declared
                .get(&c.record.tool_id)
                .is_some_and(|(s, _)| s.path == c.src.path)
    });
    cross_record(&checked, &declared, &mut diags);
    let failed: BTreeSet<String> = diags.iter().map(|d| d.file.display().to_string()).collect();
    let mut records: Vec<ToolRecord> = checked
        .into_iter()
        .filter(|c| !failed.contains(&c.src.path.display().to_string()))
        .map(|c| c.record)
        .collect();
    records.sort_by(|a, b| a.tool_id.cmp(&b.tool_id));
    (records, diags)
}

fn id_of(value: &Value) -> Option<(String, String)> {
    let obj = value.as_object()?;
    ["tool_id", "name"].iter().find_map(|k| {
        obj.get(*k)
            .and_then(Value::as_str)
            .map(|id| (format!("/{k}"), id.to_string()))
    })
}

/// Byte offset of a 1-based line and column (serde_json error positions).
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return (offset + column.saturating_sub(1)).min(text.len().saturating_sub(1));
        }
        offset += l.len();
    }
    text.len().saturating_sub(1)
}

/// A view of one JSON object of the record, reporting at its pointers.
struct Obj<'a> {
    src: &'a SourceFile,
    at: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn ptr(&self, key: &str) -> String {
        format!("{}/{}", self.at, escape(key))
    }

    /// Report fields outside `known`, suggesting the closest known one.
    fn closed(&self, known: &[&str], what: &str, diags: &mut Diagnostics) {
        for key in self.map.keys().filter(|k| !known.contains(&k.as_str())) {
            let mut d = Diagnostic::at(
                Rule::UnknownField,
                self.src,
                &self.ptr(key),
                format!("unknown field `{key}` in {what}"),
            );
            if let Some(best) = known
                .iter()
                .filter(|k| !k.starts_with('$'))
                .map(|k| (strsim::levenshtein(k, key), k))
                .filter(|(d, _)| *d <= 3)
                .min()
            {
                d = d.help(format!("did you mean `{}`?", best.1));
            } else {
                d = d.help(format!(
                    "{what} is closed; its fields are: {}",
                    known
                        .iter()
                        .filter(|k| !k.starts_with('$'))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            diags.push(d);
        }
    }

    fn require(&self, key: &str, diags: &mut Diagnostics) -> Option<&'a Value> {
        let v = self.map.get(key);
        if v.is_none() {
            diags.push(Diagnostic::at(
                Rule::MissingField,
                self.src,
                &self.at,
                format!("missing required field `{key}`"),
            ));
        }
        v
    }

    fn wrong(&self, key: &str, expected: &str, diags: &mut Diagnostics) {
        diags.push(Diagnostic::at(
            Rule::FieldType,
            self.src,
            &self.ptr(key),
            format!("`{key}` must be {expected}"),
        ));
    }

    fn string(&self, key: &str, diags: &mut Diagnostics) -> Option<&'a str> {
        let v = self.require(key, diags)?;
        let s = v.as_str();
        if s.is_none() {
            self.wrong(key, "a string", diags);
        }
        s
    }

    fn object(&self, key: &str, diags: &mut Diagnostics) -> Option<Obj<'a>> {
        let v = self.require(key, diags)?;
        self.as_obj(key, v, diags)
    }

    fn as_obj(&self, key: &str, v: &'a Value, diags: &mut Diagnostics) -> Option<Obj<'a>> {
        match v.as_object() {
            Some(map) => Some(Obj {
                src: self.src,
                at: self.ptr(key),
                map,
            }),
            None => {
                self.wrong(key, "an object", diags);
                None
            }
        }
    }
}

/// The value and pointer of a field with two spellings.
fn spelled<'a>(
    obj: &Obj<'a>,
    preferred: &str,
    alias: &str,
    diags: &mut Diagnostics,
) -> Option<(String, &'a Value)> {
    match (obj.map.get(preferred), obj.map.get(alias)) {
        (Some(_), Some(_)) => {
            diags.push(
                Diagnostic::at(
                    Rule::DuplicateSpelling,
                    obj.src,
                    &obj.ptr(alias),
                    format!("`{preferred}` and its alias `{alias}` are both given"),
                )
                .help(format!("keep one of them (`{preferred}` is preferred)")),
            );
            None
        }
        (Some(v), None) => Some((obj.ptr(preferred), v)),
        (None, Some(v)) => Some((obj.ptr(alias), v)),
        (None, None) => {
            diags.push(Diagnostic::at(
                Rule::MissingField,
                obj.src,
                &obj.at,
                format!("missing required field `{preferred}` (alias `{alias}`)"),
            ));
            None
        }
    }
}

fn check_one(
    src: &SourceFile,
    value: &Value,
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<Checked> {
    let before = diags.len();
    let Some(map) = value.as_object() else {
        diags.push(Diagnostic::at(
            Rule::RecordShape,
            src,
            "",
            "a tool record must be a JSON object",
        ));
        return None;
    };
    let rec = Obj {
        src,
        at: String::new(),
        map,
    };
    rec.closed(FIELDS, "a tool record", diags);

    // Identity.
    let tool_id = spelled(&rec, "tool_id", "name", diags).and_then(|(ptr, v)| match v.as_str() {
        Some(id) => {
            let valid = id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !valid {
                diags.push(Diagnostic::at(
                    Rule::ToolIdPattern,
                    src,
                    &ptr,
                    format!("the tool id `{id}` does not match ^[a-z][a-z0-9_]*$"),
                ));
                None
            } else if RESERVED_IDS.contains(&id) {
                diags.push(Diagnostic::at(
                    Rule::ToolIdReserved,
                    src,
                    &ptr,
                    format!("`{id}` is reserved: it names a class action group"),
                ));
                None
            } else {
                Some(id.to_string())
            }
        }
        None => {
            diags.push(Diagnostic::at(
                Rule::FieldType,
                src,
                &ptr,
                "the tool id must be a string",
            ));
            None
        }
    });
    let version = rec
        .string("version", diags)
        .and_then(|v| match semver::Version::parse(v) {
            Ok(v) => Some(v),
            Err(e) => {
                diags.push(
                    Diagnostic::at(
                        Rule::VersionSemver,
                        src,
                        &rec.ptr("version"),
                        format!("`{v}` is not a semver version: {e}"),
                    )
                    .help("write MAJOR.MINOR.PATCH, e.g. \"1.2.0\""),
                );
                None
            }
        });
    let description = rec.string("description", diags).and_then(|d| {
        if d.trim().is_empty() {
            diags.push(Diagnostic::at(
                Rule::DescriptionEmpty,
                src,
                &rec.ptr("description"),
                "the description is empty; the planner reads it to choose tools",
            ));
            None
        } else {
            Some(d.to_string())
        }
    });

    // Schemas.
    let input_schema = spelled(&rec, "input_schema", "payload_schema", diags)
        .and_then(|(ptr, s)| subset::check(src, &ptr, s, Which::Input, diags).then(|| s.clone()));
    let output_schema = rec.require("output_schema", diags).and_then(|s| {
        subset::check(src, "/output_schema", s, Which::Output, diags).then(|| s.clone())
    });

    // Cedar binding.
    let cedar_action = match (rec.map.get("cedar_action"), &tool_id) {
        (None, Some(id)) => Some(id.clone()),
        (None, None) => None,
        (Some(v), id) => {
            let expected = id.as_ref().map(|id| format!("Action::\"{id}\""));
            match v.as_str() {
                Some(s) if Some(s) == expected.as_deref() => id.clone(),
                Some(s) => {
                    let mut d = Diagnostic::at(Rule::CedarAction, src, "/cedar_action", format!("`{s}` is not this tool's own action; one action per tool, never shared"));
                    if let Some(e) = &expected {
                        d = d.help(format!("write `{e}` or leave `cedar_action` out"));
                    }
                    diags.push(d);
                    None
                }
                None => {
                    rec.wrong("cedar_action", "a string `Action::\"<tool_id>\"`", diags);
                    None
                }
            }
        }
    };
    let action_groups = match rec.map.get("action_groups") {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => {
            let mut groups = Vec::new();
            let mut ok = true;
            for (i, g) in items.iter().enumerate() {
                let ptr = format!("/action_groups/{i}");
                let Some(g) = g.as_str() else {
                    diags.push(Diagnostic::at(
                        Rule::ActionGroup,
                        src,
                        &ptr,
                        "an action group name must be a string",
                    ));
                    ok = false;
                    continue;
                };
                let valid = g.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && g.chars().all(|c| {
                        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-'
                    });
                let problem = if !valid {
                    Some(format!(
                        "the group name `{g}` does not match ^[a-z][a-z0-9_-]*$"
                    ))
                } else if CLASS_GROUPS.contains(&g) || RESERVED_IDS.contains(&g) {
                    Some(format!("`{g}` is a class group; the tool joins its class group through `side_effect_class`"))
                } else if groups.iter().any(|x: &String| x == g) {
                    Some(format!("`{g}` is listed twice"))
                } else {
                    None
                };
                match problem {
                    Some(p) => {
                        diags.push(Diagnostic::at(Rule::ActionGroup, src, &ptr, p));
                        ok = false;
                    }
                    None => groups.push(g.to_string()),
                }
            }
            ok.then_some(groups)
        }
        Some(_) => {
            rec.wrong("action_groups", "a list of group names", diags);
            None
        }
    };

    // Class and compensation.
    let class = rec.string("side_effect_class", diags).and_then(|c| {
        let parsed = SideEffectClass::parse(c);
        if parsed.is_none() {
            diags.push(Diagnostic::at(
                Rule::SideEffectClass,
                src,
                "/side_effect_class",
                format!(
                    "`{c}` is not a side-effect class; use read-only, compensatable or supersede"
                ),
            ));
        }
        parsed
    });
    let compensation = check_compensation(&rec, class, diags);

    // Credentials, limits, failure contract.
    match rec.require("accepts_credentials", diags) {
        Some(Value::Bool(false)) | None => {}
        Some(Value::Bool(true)) => diags.push(
            Diagnostic::at(Rule::AcceptsCredentials, src, "/accepts_credentials", "governed tools accept no credentials: `accepts_credentials` must be false")
                .help("declare the secrets the tool needs by name in `auth.secrets`; the sandbox injects them"),
        ),
        Some(_) => rec.wrong("accepts_credentials", "the boolean `false`", diags),
    }
    let timeout_ms = rec
        .require("timeout_ms", diags)
        .and_then(|v| match v.as_u64() {
            Some(t) if t > 0 => Some(t),
            _ => {
                diags.push(Diagnostic::at(
                    Rule::Timeout,
                    src,
                    "/timeout_ms",
                    format!("`timeout_ms` is {v}; it must be an integer greater than 0"),
                ));
                None
            }
        });
    let retry = rec.object("retry", diags).and_then(|r| {
        r.closed(&["max_attempts", "backoff_ms"], "`retry`", diags);
        // A non-negative integer, else `retry/budget` naming the field and what it must be.
        let mut count = |field: &str, must: &str| {
            let v = r.require(field, diags)?;
            let n = v.as_u64();
            if n.is_none() {
                diags.push(Diagnostic::at(
                    Rule::Retry,
                    src,
                    &format!("/retry/{field}"),
                    format!("`{field}` is {v}; it must be {must}"),
                ));
            }
            n
        };
        let attempts = count("max_attempts", "an integer >= 1 (1 means no retry)");
        let backoff = count("backoff_ms", "an integer >= 0");
        let (attempts, backoff) = (attempts?, backoff?);
        match RetryPolicy::check(attempts, backoff) {
            Ok(()) => Some(RetryPolicy {
                max_attempts: u32::try_from(attempts).ok()?,
                backoff_ms: backoff,
            }),
            Err(e) => {
                let (rule, at) = match e {
                    RetryBoundError::NoAttempt => (Rule::Retry, "/retry/max_attempts"),
                    RetryBoundError::TooManyAttempts(_) => {
                        (Rule::RetryAttemptsBound, "/retry/max_attempts")
                    }
                    RetryBoundError::BackoffTooLong(_) => {
                        (Rule::RetryBackoffBound, "/retry/backoff_ms")
                    }
                };
                diags.push(Diagnostic::at(rule, src, at, e.to_string()));
                None
            }
        }
    });
    let on_failure = rec
        .require("on_failure", diags)
        .and_then(|v| check_on_failure(src, v, diags));

    // Endpoint, auth, sandbox.
    let endpoint = rec
        .object("endpoint", diags)
        .and_then(|e| check_endpoint(&e, ctx, diags));
    let secrets = rec
        .object("auth", diags)
        .and_then(|a| check_auth(&a, diags));
    let sandbox_profile = rec
        .object("sandbox_profile", diags)
        .and_then(|p| check_profile(&p, ctx, diags));

    if diags.len() != before {
        return None;
    }
    Some(Checked {
        has_compensation: compensation.is_some(),
        record: ToolRecord {
            source: src.path.clone(),
            tool_id: tool_id?,
            version: version?,
            description: description?,
            input_schema: input_schema?,
            output_schema: output_schema?,
            cedar_action: cedar_action?,
            action_groups: action_groups?,
            side_effect_class: class?,
            compensation,
            timeout_ms: timeout_ms?,
            retry: retry?,
            on_failure: on_failure?,
            endpoint: endpoint?,
            secrets: secrets?,
            sandbox_profile: sandbox_profile?,
        },
        src: src.clone(),
    })
}

fn check_compensation(
    rec: &Obj<'_>,
    class: Option<SideEffectClass>,
    diags: &mut Diagnostics,
) -> Option<CompensationSpec> {
    let src = rec.src;
    let value = rec.map.get("compensation");
    match (class, value) {
        (Some(SideEffectClass::Compensatable), None) => {
            diags.push(
                Diagnostic::at(Rule::CompensationMissing, src, "/side_effect_class", "a compensatable tool must declare `compensation`: its inverse and how to build the inverse's payload")
                    .help("add \"compensation\": { \"tool\": \"<inverse tool id>\", \"map\": { \"<inverse field>\": \"/output/<field>\" } }"),
            );
            None
        }
        (Some(c), Some(_)) if c != SideEffectClass::Compensatable => {
            diags.push(Diagnostic::at(
                Rule::CompensationUnexpected,
                src,
                "/compensation",
                format!(
                    "only compensatable tools declare an inverse; this tool is {}",
                    c.as_str()
                ),
            ));
            None
        }
        (_, Some(v)) => {
            let c = rec.as_obj("compensation", v, diags)?;
            c.closed(&["tool", "map"], "`compensation`", diags);
            let tool = c.string("tool", diags).map(str::to_string);
            let map = c.object("map", diags).map(|m| {
                m.map
                    .iter()
                    .filter_map(|(k, v)| match v.as_str() {
                        Some(p) => Some((k.clone(), p.to_string())),
                        None => {
                            m.wrong(
                                k,
                                "a JSON pointer string into {\"input\": …, \"output\": …}",
                                diags,
                            );
                            None
                        }
                    })
                    .collect::<Vec<_>>()
            });
            Some(CompensationSpec {
                tool: tool?,
                map: map?,
            })
        }
        _ => None,
    }
}

fn check_on_failure(
    src: &SourceFile,
    v: &Value,
    diags: &mut Diagnostics,
) -> Option<Vec<FailureOutcome>> {
    let Some(items) = v.as_array() else {
        diags.push(Diagnostic::at(
            Rule::OnFailure,
            src,
            "/on_failure",
            "`on_failure` must be a list of outcomes: halt, halt_and_escalate, compensate",
        ));
        return None;
    };
    if items.is_empty() {
        diags.push(Diagnostic::at(
            Rule::OnFailure,
            src,
            "/on_failure",
            "`on_failure` is empty; list at least one of halt, halt_and_escalate, compensate",
        ));
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let ptr = format!("/on_failure/{i}");
        match item.as_str().and_then(FailureOutcome::parse) {
            Some(o) if out.contains(&o) => {
                diags.push(Diagnostic::at(
                    Rule::OnFailure,
                    src,
                    &ptr,
                    format!("`{}` is listed twice", o.as_str()),
                ));
                ok = false;
            }
            Some(o) => out.push(o),
            None => {
                diags.push(Diagnostic::at(
                    Rule::OnFailure,
                    src,
                    &ptr,
                    format!("{item} is not an outcome; use halt, halt_and_escalate or compensate"),
                ));
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

fn check_endpoint(e: &Obj<'_>, ctx: &Context<'_>, diags: &mut Diagnostics) -> Option<EndpointSpec> {
    let src = e.src;
    e.closed(
        &[
            "transport",
            "command",
            "args",
            "sha256",
            "definition_sha256",
        ],
        "`endpoint`",
        diags,
    );
    let transport = e.string("transport", diags).and_then(|t| {
        let parsed = Transport::parse(t);
        if parsed.is_none() {
            diags.push(Diagnostic::at(
                Rule::EndpointTransport,
                src,
                "/endpoint/transport",
                format!("`{t}` is not a transport; use stdio-json or mcp-stdio"),
            ));
        }
        parsed
    });
    let command = e.string("command", diags).map(str::to_string);
    let resolved = command
        .as_ref()
        .and_then(|c| match endpoint::resolve(c, ctx.bins) {
            Ok(r) => Some(r),
            Err(err) => {
                diags.push(Diagnostic::at(
                    Rule::EndpointResolvable,
                    src,
                    "/endpoint/command",
                    err.to_string(),
                ));
                None
            }
        });
    let args = match e.map.get("args") {
        None => Some(Vec::new()),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Some(_) => {
            e.wrong("args", "a list of strings", diags);
            None
        }
    };
    let sha256 = match e.map.get("sha256") {
        None => Some(None),
        Some(Value::String(d)) if is_sha256_hex(d) => Some(Some(d.clone())),
        Some(d) => {
            diags.push(Diagnostic::at(
                Rule::EndpointDigest,
                src,
                "/endpoint/sha256",
                format!("{d} is not a SHA-256 digest (64 lower-case hex digits)"),
            ));
            None
        }
    };
    let definition_sha256 = match e.map.get("definition_sha256") {
        None => Some(None),
        Some(Value::String(d)) if is_sha256_hex(d) => {
            if transport.is_some_and(|t| t != Transport::McpStdio) {
                diags.push(Diagnostic::at(
                    Rule::EndpointDefinitionDigest,
                    src,
                    "/endpoint/definition_sha256",
                    "a definition digest pins an MCP tool's listing; it is allowed only with \
                     the transport mcp-stdio",
                ));
                None
            } else {
                Some(Some(d.clone()))
            }
        }
        Some(d) => {
            diags.push(Diagnostic::at(
                Rule::EndpointDefinitionDigest,
                src,
                "/endpoint/definition_sha256",
                format!("{d} is not a SHA-256 digest (64 lower-case hex digits)"),
            ));
            None
        }
    };
    Some(EndpointSpec {
        transport: transport?,
        command: command?,
        args: args?,
        sha256: sha256?,
        definition_sha256: definition_sha256?,
        resolved: resolved?,
    })
}

/// Whether `d` is a SHA-256 digest as records write it: 64 lower-case hex digits.
fn is_sha256_hex(d: &str) -> bool {
    d.len() == 64
        && d.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check_auth(a: &Obj<'_>, diags: &mut Diagnostics) -> Option<Vec<String>> {
    let src = a.src;
    let mut ok = true;
    for key in a.map.keys().filter(|k| k.as_str() != "secrets") {
        diags.push(
            Diagnostic::at(Rule::AuthNamesOnly, src, &a.ptr(key), format!("`auth.{key}`: auth declares secret names only; inline values and other keys are rejected"))
                .help("write \"auth\": { \"secrets\": [\"NAME\"] } and provide the value to the runtime's secret source"),
        );
        ok = false;
    }
    let secrets = a.require("secrets", diags)?;
    let Some(items) = secrets.as_array() else {
        diags.push(Diagnostic::at(
            Rule::AuthNamesOnly,
            src,
            "/auth/secrets",
            "`auth.secrets` must be a list of secret names",
        ));
        return None;
    };
    let mut names: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ptr = format!("/auth/secrets/{i}");
        match item.as_str() {
            Some(n) if is_secret_name(n) && !names.iter().any(|x| x == n) => {
                names.push(n.to_string())
            }
            Some(n) if names.iter().any(|x| x == n) => {
                diags.push(Diagnostic::at(
                    Rule::AuthNamesOnly,
                    src,
                    &ptr,
                    format!("`{n}` is listed twice"),
                ));
                ok = false;
            }
            Some(_) => {
                diags.push(
                    Diagnostic::at(Rule::AuthNamesOnly, src, &ptr, "a secret name must match ^[A-Z][A-Z0-9_]*$ (and not start with ESCEPINE_); this looks like a value, not a name")
                        .help("never put a credential in a record; name it, e.g. \"FIRECRAWL_API_KEY\""),
                );
                ok = false;
            }
            None => {
                diags.push(Diagnostic::at(
                    Rule::AuthNamesOnly,
                    src,
                    &ptr,
                    "a secret name must be a string; inline values are rejected",
                ));
                ok = false;
            }
        }
    }
    ok.then_some(names)
}

fn is_secret_name(n: &str) -> bool {
    n.len() <= 128
        && n.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && n.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !n.starts_with("ESCEPINE_")
}

fn check_profile(
    p: &Obj<'_>,
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<SandboxProfile> {
    let src = p.src;
    p.closed(&["egress", "filesystem"], "`sandbox_profile`", diags);
    let egress = p.require("egress", diags).and_then(|v| {
        let Some(items) = v.as_array() else {
            p.wrong("egress", "a list of egress entries", diags);
            return None;
        };
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let ptr = format!("/sandbox_profile/egress/{i}");
            match item.as_str().map(str::parse::<EgressEntry>) {
                Some(Ok(entry)) => {
                    if let Some(env) = ctx.envelope {
                        if !env.covers(&entry) {
                            diags.push(
                                Diagnostic::at(Rule::EgressEnvelope, src, &ptr, format!("`{entry}` is outside the deployment envelope {}", env.source.display()))
                                    .help("add the host to the envelope, or admit it at run time with an overlay"),
                            );
                            ok = false;
                        }
                    }
                    out.push(entry);
                }
                Some(Err(e)) => {
                    diags.push(Diagnostic::at(Rule::EgressEntry, src, &ptr, e.to_string()));
                    ok = false;
                }
                None => {
                    diags.push(Diagnostic::at(Rule::EgressEntry, src, &ptr, "an egress entry must be a string"));
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    });
    let filesystem = p.string("filesystem", diags).and_then(|f| {
        if f == "workspace" {
            Some(Filesystem::Workspace)
        } else {
            diags.push(Diagnostic::at(Rule::Filesystem, src, "/sandbox_profile/filesystem", format!("`{f}`: the only file-system access is \"workspace\" (the sandbox's ephemeral workspace)")));
            None
        }
    });
    Some(SandboxProfile {
        egress: egress?,
        filesystem: filesystem?,
    })
}

/// Rules across records: reserved names (action groups) and compensation inverses.
fn cross_record(
    checked: &[Checked],
    declared: &BTreeMap<String, (SourceFile, String)>,
    diags: &mut Diagnostics,
) {
    // Action-group names normalise (`-` → `_`) to marker names: they must not clash with tools
    // or with each other.
    let mut groups: BTreeMap<String, (String, &Checked)> = BTreeMap::new();
    for c in checked {
        for (i, g) in c.record.action_groups.iter().enumerate() {
            let norm = g.replace('-', "_");
            if let Some((other, first)) = groups.get(&norm) {
                if other != g {
                    diags.push(Diagnostic::at(Rule::ActionGroup, &c.src, &format!("/action_groups/{i}"), format!("the group `{g}` clashes with `{other}` of {} (both become the marker `actions::{norm}`)", first.src.path.display())));
                }
            } else {
                groups.insert(norm, (g.clone(), c));
            }
        }
    }
    for (norm, (g, c)) in &groups {
        if let Some((src, ptr)) = declared.get(norm) {
            diags.push(Diagnostic::at(
                Rule::ToolIdReserved,
                src,
                ptr,
                format!(
                    "the tool id `{norm}` is reserved: it is the action group `{g}` of {}",
                    c.src.path.display()
                ),
            ));
        }
    }

    let by_id: BTreeMap<&str, &Checked> = checked
        .iter()
        .map(|c| (c.record.tool_id.as_str(), c))
        .collect();
    for c in checked.iter().filter(|c| c.has_compensation) {
        let Some(comp) = &c.record.compensation else {
            continue;
        };
        let Some(inverse) = by_id.get(comp.tool.as_str()) else {
            if !declared.contains_key(&comp.tool) {
                diags.push(
                    Diagnostic::at(
                        Rule::CompensationInverse,
                        &c.src,
                        "/compensation/tool",
                        format!("the inverse `{}` is not a registered tool", comp.tool),
                    )
                    .help("register the inverse tool's record beside this one"),
                );
            }
            continue;
        };
        check_compensation_map(c, &inverse.record, diags);
    }
}

fn check_compensation_map(c: &Checked, inverse: &ToolRecord, diags: &mut Diagnostics) {
    let comp = c.record.compensation.as_ref().expect("checked above");
    let inv_root = &inverse.input_schema;
    let inv_fields = walk::properties(inv_root, inv_root);
    for (field, pointer) in &comp.map {
        let at = format!("/compensation/map/{}", escape(field));
        let Some((_, target, _)) = inv_fields.iter().find(|(k, _, _)| k == field) else {
            diags.push(Diagnostic::at(
                Rule::CompensationFields,
                &c.src,
                &at,
                format!(
                    "`{field}` is not a field of the inverse `{}`'s input",
                    inverse.tool_id
                ),
            ));
            continue;
        };
        let resolved = pointer.strip_prefix('/').and_then(|p| {
            let (head, rest) = p
                .split_once('/')
                .map_or((p, String::new()), |(h, r)| (h, format!("/{r}")));
            let root = match head {
                "input" => &c.record.input_schema,
                "output" => &c.record.output_schema,
                _ => return None,
            };
            walk::pointer_schema(root, root, &rest).map(|t| (root, t.schema))
        });
        let Some((src_root, source)) = resolved else {
            diags.push(
                Diagnostic::at(Rule::CompensationPointer, &c.src, &at, format!("`{pointer}` does not resolve in this tool's schemas"))
                    .help("a pointer starts with /input/ or /output/ and follows declared properties (and array indices)"),
            );
            continue;
        };
        if let Some(problem) = incompatible(src_root, source, inv_root, target) {
            diags.push(Diagnostic::at(
                Rule::CompensationType,
                &c.src,
                &at,
                format!(
                    "`{pointer}` gives {problem}, which the inverse's `{field}` does not accept"
                ),
            ));
        }
    }
    for (name, _, required) in &inv_fields {
        if *required && !comp.map.iter().any(|(f, _)| f == name) {
            diags.push(Diagnostic::at(
                Rule::CompensationFields,
                &c.src,
                "/compensation/map",
                format!(
                    "the inverse `{}` requires `{name}`, which the map does not provide",
                    inverse.tool_id
                ),
            ));
        }
    }
}

/// Why values of `source` may not be accepted by `target`, if they may not.
fn incompatible(
    src_root: &Value,
    source: &Value,
    dst_root: &Value,
    target: &Value,
) -> Option<String> {
    let (Some(s), Some(t)) = (
        walk::resolve(src_root, source),
        walk::resolve(dst_root, target),
    ) else {
        return Some("an unresolvable schema".into());
    };
    let (Some(st), Some(tt)) = (walk::type_of(src_root, s), walk::type_of(dst_root, t)) else {
        return Some("an untyped value".into());
    };
    if !st.fits(tt) {
        return Some(format!(
            "a value of type `{}`, not `{}`",
            st.as_str(),
            tt.as_str()
        ));
    }
    let allowed = |v: &Value| -> Option<Vec<Value>> {
        v.get("const")
            .map(|c| vec![c.clone()])
            .or_else(|| v.get("enum").and_then(Value::as_array).cloned())
    };
    if let Some(target_values) = allowed(t) {
        match allowed(s) {
            Some(sv) if sv.iter().all(|v| target_values.contains(v)) => {}
            _ => return Some("values outside the inverse's `enum`".into()),
        }
    }
    match st {
        JsonType::Array => match (s.get("items"), t.get("items")) {
            (Some(si), Some(ti)) => {
                incompatible(src_root, si, dst_root, ti).map(|p| format!("list items that are {p}"))
            }
            _ => None,
        },
        JsonType::Object => {
            let sp = walk::properties(src_root, s);
            for (name, tsub, req) in walk::properties(dst_root, t) {
                match sp.iter().find(|(k, _, _)| *k == name) {
                    Some((_, ssub, sreq)) => {
                        if req && !sreq {
                            return Some(format!("an object whose `{name}` may be missing"));
                        }
                        if let Some(p) = incompatible(src_root, ssub, dst_root, tsub) {
                            return Some(format!("an object whose `{name}` is {p}"));
                        }
                    }
                    None if req => return Some(format!("an object without `{name}`")),
                    None => {}
                }
            }
            sp.iter()
                .find(|(k, _, _)| !walk::properties(dst_root, t).iter().any(|(n, _, _)| n == k))
                .map(|(k, _, _)| format!("an object with `{k}`, unknown to the inverse"))
        }
        _ => None,
    }
}
