//! The per-record and cross-record registration rules.
//!
//! Records are read as JSON values and checked field by field, so that every problem of every
//! file is reported in one run (a typed deserialiser would stop at the first). Only a record
//! that passes every rule becomes a [`ToolRecord`].
//!
//! A **draft** ([`check_draft`]) is a record as a tool's Rust declaration gives it before the
//! program is built: its schemas (derived from the payload types) and its endpoint (the crate's
//! binary) are not known yet. The same rules apply to every other field it holds.

mod class;
mod compensation;
mod context;
mod credentials;
mod cross;
mod endpoint;
mod identity;
mod labels;
mod limits;
mod remote;
mod sandbox;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

pub use context::Context;
use context::{Checked, Completeness};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::endpoint::WorkspaceBins;
use crate::fields::{self, Object, RECORD};
use crate::record::ToolRecord;
use crate::rule::Rule;
use crate::schema::subset::{self, Which};

/// The fields of a tool record (closed).
pub const FIELDS: &[&str] = &[
    "tool_id",
    "name",
    "version",
    "title",
    "description",
    "open_world",
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
    "data_labels",
    "$schema",
    "$comment",
];

/// The fields a draft may leave out: known only once the program is built.
const DERIVED: &[&str] = &["input_schema", "output_schema", "endpoint"];

/// Check every file; return the records that passed every rule (sorted by id) and all problems.
pub fn check_all(files: &[SourceFile], ctx: &Context<'_>) -> (Vec<ToolRecord>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let mut checked = Vec::new();
    // Every id some file declares (even a failing one), so that cross-record rules do not
    // report a knock-on error for a record whose own errors are already reported.
    let mut declared: BTreeMap<String, (SourceFile, String)> = BTreeMap::new();
    let mut duplicate = BTreeSet::new();
    // Each file's own rules are independent of the others': checked on every core, then
    // taken in file order (a file whose id is already declared is reported as a duplicate
    // only, as if it had not been checked).
    for (src, outcome) in files.iter().zip(check_each(files, ctx)) {
        let (value, own, checked_one) = match outcome {
            Own::Unreadable(d) => {
                diags.push(*d);
                continue;
            }
            Own::Read(value, own, checked_one) => (value, own, checked_one),
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
        diags.extend(own);
        if let Some(c) = checked_one {
            checked.push(c);
        }
    }
    checked.retain(|c| {
        !duplicate.contains(&c.record.tool_id)
            || declared
                .get(&c.record.tool_id)
                .is_some_and(|(s, _)| s.path == c.src.path)
    });
    cross::check(&checked, &declared, &mut diags);
    let failed: BTreeSet<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.file.display().to_string())
        .collect();
    let mut records: Vec<ToolRecord> = checked
        .into_iter()
        .filter(|c| !failed.contains(&c.src.path.display().to_string()))
        .map(|c| c.record)
        .collect();
    records.sort_by(|a, b| a.tool_id.cmp(&b.tool_id));
    (records, diags)
}

/// One file's outcome of its own rules.
// One value per file, moved once into the results: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Own {
    /// Not JSON (or not readable as a record file).
    Unreadable(Box<Diagnostic>),
    /// Its value, the problems of its own rules, and its record if it passed them.
    Read(Value, Diagnostics, Option<Checked>),
}

/// Every file's own rules, the files split over the available cores; in file order.
fn check_each(files: &[SourceFile], ctx: &Context<'_>) -> Vec<Own> {
    let one = |src: &SourceFile| match fields::parse(src) {
        Ok(value) => {
            let mut own = Diagnostics::new();
            let checked = check_one(src, &value, ctx, Completeness::Full, &mut own);
            Own::Read(value, own, checked)
        }
        Err(d) => Own::Unreadable(d),
    };
    let threads = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1)
        .min(files.len().div_ceil(16).max(1));
    if threads <= 1 {
        return files.iter().map(one).collect();
    }
    let chunk = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(part) => part,
                // A rule that panics is a bug: let it surface as it would on one thread.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// Check one record file against its own rules (every per-record rule, as
/// [`check_all`] applies them to each file, without the cross-record ones: a duplicate id,
/// a reserved id, a compensation's inverse, a clash of action groups); return its record.
///
/// # Errors
/// The file's diagnostics, when one of them is an error.
pub fn check_file(src: &SourceFile, ctx: &Context<'_>) -> Result<ToolRecord, Diagnostics> {
    let mut diags = Diagnostics::new();
    let value = match fields::parse(src) {
        Ok(value) => value,
        Err(d) => {
            diags.push(*d);
            return Err(diags);
        }
    };
    match check_one(src, &value, ctx, Completeness::Full, &mut diags) {
        Some(checked) if !diags.has_errors() => Ok(checked.record),
        _ => Err(diags),
    }
}

/// Check a draft record (a JSON object as a tool's Rust declaration gives it) against every
/// per-record rule that applies to the fields it holds; `input_schema`, `output_schema` and
/// `endpoint` may be left out, and no envelope is compared. `name` names the draft in the
/// diagnostics, whose pointers lead back to the declaration.
pub fn check_draft(name: &str, draft: &Value) -> Diagnostics {
    let text = serde_json::to_string_pretty(draft).unwrap_or_default();
    let src = SourceFile::new(name, text);
    let bins = WorkspaceBins::default();
    let ctx = Context {
        envelope: None,
        bins: &bins,
    };
    let mut diags = Diagnostics::new();
    check_one(&src, draft, &ctx, Completeness::Draft, &mut diags);
    diags
}

fn id_of(value: &Value) -> Option<(String, String)> {
    let obj = value.as_object()?;
    ["tool_id", "name"].iter().find_map(|k| {
        obj.get(*k)
            .and_then(Value::as_str)
            .map(|id| (format!("/{k}"), id.to_string()))
    })
}

fn check_one(
    src: &SourceFile,
    value: &Value,
    ctx: &Context<'_>,
    completeness: Completeness,
    diags: &mut Diagnostics,
) -> Option<Checked> {
    let before = diags.error_count();
    let Some(map) = value.as_object() else {
        diags.push(Diagnostic::at(
            Rule::RecordShape,
            src,
            "",
            "a tool record must be a JSON object",
        ));
        return None;
    };
    let rec = Object::new(src, "", map, RECORD);
    rec.closed(FIELDS, "a tool record", diags);
    // A draft may leave out what only the built program knows.
    let given = |key: &str| {
        completeness == Completeness::Full || !DERIVED.contains(&key) || map.contains_key(key)
    };

    let tool_id = identity::tool_id(&rec, diags);
    let version = identity::version(&rec, diags);
    let title = identity::title(&rec, diags);
    let open_world = identity::open_world(&rec, diags);
    let description = identity::description(&rec, diags);

    // Schemas.
    let input_schema = if given("input_schema") || map.contains_key("payload_schema") {
        rec.spelled("input_schema", "payload_schema", diags)
            .and_then(|(ptr, s)| {
                subset::check(src, &ptr, s, Which::Input, diags).then(|| s.clone())
            })
    } else {
        None
    };
    let output_schema = if given("output_schema") {
        rec.require("output_schema", diags).and_then(|s| {
            subset::check(src, "/output_schema", s, Which::Output, diags).then(|| s.clone())
        })
    } else {
        None
    };

    let cedar_action = identity::cedar_action(&rec, tool_id.as_deref(), diags);
    let action_groups = identity::action_groups(&rec, diags);

    let class = class::side_effect_class(&rec, diags);
    let compensation = compensation::shape(&rec, class, diags);

    credentials::accepts_credentials(&rec, diags);
    let timeout_ms = limits::timeout_ms(&rec, diags);
    let retry = limits::retry(&rec, diags);
    let on_failure = class::on_failure(&rec, diags);

    let endpoint = if given("endpoint") {
        rec.object("endpoint", diags)
            .and_then(|e| endpoint::check(&e, ctx, completeness, diags))
    } else {
        None
    };
    let secrets = rec
        .object("auth", diags)
        .and_then(|a| credentials::auth(&a, diags));
    let sandbox_profile = rec
        .object("sandbox_profile", diags)
        .and_then(|p| sandbox::profile(&p, ctx, diags));
    let data_labels = labels::data_labels(&rec, ctx, diags);

    if let (Some(e), Some(p), Some(s)) = (&endpoint, &sandbox_profile, &secrets) {
        remote::cross(&rec, e, p, s, diags);
    }
    if let (Some(e), Some(p)) = (&endpoint, &sandbox_profile) {
        endpoint::script_runtime(src, e, p, diags);
        sandbox::workspace_inputs_need_a_fresh_sandbox(src, e, p, diags);
    }
    // A remote endpoint has no sandbox on this machine: no tier to require.
    if let (Some(e), Some(p), Some(class), Some(groups)) =
        (&endpoint, &sandbox_profile, class, &action_groups)
    {
        if e.remote.is_none() {
            sandbox::isolation_within_envelope(src, p, class, groups, ctx, diags);
        }
    }
    if let (Some(p), Some(input)) = (&sandbox_profile, &input_schema) {
        sandbox::authorized_urls_need_a_url(src, value, p, input, diags);
    }

    if diags.error_count() != before {
        return None;
    }
    Some(Checked {
        has_compensation: compensation.is_some(),
        record: ToolRecord {
            source: src.path.clone(),
            tool_id: tool_id?,
            version: version?,
            title: title?,
            description: description?,
            open_world: open_world?,
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
            data_labels: data_labels?,
        },
        src: src.clone(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(d: &Diagnostics) -> Vec<(Rule, String)> {
        d.iter()
            .map(|d| (d.rule, d.pointer.clone().unwrap_or_default()))
            .collect()
    }

    fn draft() -> Value {
        json!({
            "tool_id": "text_stats",
            "version": "1.0.0",
            "description": "Count.",
            "side_effect_class": "read-only",
            "accepts_credentials": false,
            "timeout_ms": 5000,
            "retry": {"max_attempts": 1, "backoff_ms": 0},
            "on_failure": ["halt"],
            "auth": {"secrets": []},
            "sandbox_profile": {"egress": [], "filesystem": "workspace"},
        })
    }

    #[test]
    fn a_draft_needs_no_schemas_nor_endpoint() {
        let d = check_draft("#[tool]", &draft());
        assert!(d.is_empty(), "{}", d.render());
    }

    #[test]
    fn a_draft_breaks_the_record_rules_at_its_pointers() {
        let mut v = draft();
        v["tool_id"] = json!("read_only");
        v["timeout_ms"] = json!(0);
        v["auth"]["secrets"] = json!(["sk-live-1"]);
        v["sandbox_profile"]["egress"] = json!(["https://x.example/"]);
        v["action_groups"] = json!(["read-only"]);
        let d = check_draft("#[tool]", &v);
        assert_eq!(
            rules(&d),
            [
                (Rule::ToolIdReserved, "/tool_id".into()),
                (Rule::ActionGroup, "/action_groups/0".into()),
                (Rule::Timeout, "/timeout_ms".into()),
                (Rule::AuthNamesOnly, "/auth/secrets/0".into()),
                (Rule::EgressEntry, "/sandbox_profile/egress/0".into()),
            ]
        );
    }

    #[test]
    fn a_draft_still_needs_every_field_it_cannot_derive() {
        let mut v = draft();
        v.as_object_mut().map(|m| m.remove("version"));
        let d = check_draft("#[tool]", &v);
        assert_eq!(rules(&d), [(Rule::MissingField, String::new())]);
        assert!(d.iter().any(|d| d.message.contains("`version`")));
    }
}
