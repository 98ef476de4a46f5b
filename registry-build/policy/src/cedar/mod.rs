//! The Cedar binding: the generated Cedar schema and strict validation of the policies.
//!
//! The model (empty namespace):
//! - principal `Agent` (generated as `entity Agent;` unless the user's `.cedarschema` declares
//!   it, with attributes or parents); resource `Tool::"<tool_id>"` with `side_effect_class` and
//!   `version`;
//! - the class groups `Action::"read-only"`, `Action::"compensatable"`, `Action::"supersede"`,
//!   every group a record names in `action_groups`, and one action per tool in its groups;
//! - each tool action's context: `input` typed from the input schema ([`types`]), and `url`
//!   (`{ raw, scheme, host, port, path, ip?, public }`) for tools with per-URL requests, optional where some
//!   requests of the tool lack it — so one policy on a group covers a single-URL tool and a bulk
//!   tool with `x-authorize-each`:
//!
//! ```cedar
//! forbid(principal, action in Action::"page-read", resource)
//! when { context has url && (context.url.host == "linkedin.com" || context.url.host like "*.linkedin.com") };
//! ```
//!
//! [`bind`] reads the optional `*.cedarschema` and the `*.cedar` files of the policies
//! directory, merges the schema and validates every policy in strict mode, reporting every
//! problem of every file with its line and caret.

pub mod approval;
pub mod context;
mod enum_literals;
pub mod flow;
pub mod formats;
mod policies;
mod report;
mod schema_gen;
pub mod slice;
mod string_literals;
mod syntax;
pub mod types;
pub mod url_scope;
mod user_schema;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use cedar_policy::Schema;

pub use policies::PolicyOrigin;
pub use schema_gen::{
    actions, generated_schema_text, try_generated_schema_text, ActionInfo, PRINCIPAL_TYPE,
    RESOURCE_TYPE,
};

use escepine_registry::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use escepine_registry::record::ToolRecord;
use escepine_registry::registry::PolicyFiles;
use escepine_registry::rule::Rule;

/// The Cedar side of a registry: schema and validated policies with stable ids.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The whole schema (generated part merged with the user's `.cedarschema`), Cedar syntax.
    pub schema_text: String,
    /// The parsed schema.
    pub schema: cedar_policy::Schema,
    /// Every policy, with ids `@id("…")` or `<file>:<n>`.
    pub policies: cedar_policy::PolicySet,
    /// The policy files read.
    pub policy_files: Vec<PathBuf>,
    /// The user's `.cedarschema` files read.
    pub schema_files: Vec<PathBuf>,
    /// Where each policy was written, in file then source order.
    pub origins: Vec<PolicyOrigin>,
    /// Strict-validation warnings (an impossible policy, say), `file:line:col: warning: …`.
    pub warnings: Vec<String>,
}

impl Binding {
    /// Whether the schema declares `Action::"approve"` (the policies use approval, or the
    /// user's `.cedarschema` declares it): only then can a call wait for an approver.
    pub fn declares_approve(&self) -> bool {
        self.schema.actions().any(|a| {
            a.id().unescaped() == approval::APPROVE_ACTION && a.type_name().to_string() == "Action"
        })
    }
}

impl Binding {
    /// Every action of the merged schema (generated and user-declared): groups and tool
    /// actions, sorted by id, each with every group it is in.
    pub fn actions(&self) -> Vec<ActionInfo> {
        schema_actions(&self.schema)
    }

    /// Where the policy `id` was written.
    pub fn origin(&self, id: &str) -> Option<&PolicyOrigin> {
        self.origins.iter().find(|o| o.id == id)
    }
}

/// Every action of a schema, sorted by id, with the groups it is in (transitively).
pub fn schema_actions(schema: &Schema) -> Vec<ActionInfo> {
    let groups: Vec<String> = schema
        .action_groups()
        .map(|uid| uid.id().unescaped().to_string())
        .collect();
    let entities = schema.action_entities().ok();
    let mut out: Vec<ActionInfo> = schema
        .actions()
        .map(|uid| {
            let id = uid.id().unescaped().to_string();
            let mut parents: Vec<String> = entities
                .as_ref()
                .and_then(|e| e.ancestors(uid))
                .map(|a| a.map(|p| p.id().unescaped().to_string()).collect())
                .unwrap_or_default();
            parents.sort();
            ActionInfo {
                is_group: groups.contains(&id),
                id,
                groups: parents,
            }
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out.dedup_by(|a, b| a.id == b.id);
    out
}

/// Build the schema and validate every `.cedar` file of `policies_dir` in strict mode.
///
/// Without a directory the binding has the generated schema and no policies. With one, every
/// `*.cedarschema` in it is parsed on its own (its errors point into it) and merged with the
/// generated fragment, then every `*.cedar` file (sorted by name) is parsed, its policies named
/// (`@id("…")`, else `<file name>:<n>`) and validated in strict mode.
///
/// # Errors
/// Every problem of every file, as diagnostics: [`Rule::CedarSchema`] (the user schema does not
/// parse or merge, or an input schema has no Cedar type), [`Rule::PolicySyntax`],
/// [`Rule::PolicyValidation`], [`Rule::PolicyEnumLiteral`], [`Rule::PolicyId`], [`Rule::Io`]
/// and [`Rule::Missing`].
pub fn bind(records: &[ToolRecord], policies_dir: Option<&Path>) -> Result<Binding, Diagnostics> {
    let files = match policies_dir {
        None => PolicyFiles::default(),
        Some(dir) => PolicyFiles::read(dir)?,
    };
    bind_files(records, &files)
}

/// [`bind`] over policy texts already read (or embedded in a program).
///
/// # Errors
/// As [`bind`].
pub fn bind_files(records: &[ToolRecord], files: &PolicyFiles) -> Result<Binding, Diagnostics> {
    let mut diags = Diagnostics::new();
    let user = user_schema::parse(&files.schemas, &mut diags);
    let policy_files: Vec<PathBuf> = files.policies.iter().map(|s| s.path.clone()).collect();

    let extra = schema_gen::Extra {
        approve: approval::uses_approval(&files.policies),
        declassify: flow::uses_declassify(&files.policies),
    };
    let (generated, typing) = schema_gen::generate(records, &user.declared, extra);
    let typing_failed = !typing.is_empty();
    diags.extend(typing);
    let generated = SourceFile::new(user_schema::GENERATED, generated);

    // Policies are still parsed (and their syntax reported) when the schema failed.
    let schema = if user.failed || typing_failed {
        None
    } else {
        user_schema::merge(&generated, &user, records, &mut diags)
    };
    let enums = schema
        .as_ref()
        .map(|s| enum_literals::EnumScope::new(records, s, &user.declared));
    let loaded = policies::load(&files.policies, schema.as_ref(), enums.as_ref(), &mut diags);
    if let Some(schema) = &schema {
        per_url_shape(records, schema, &loaded.set, &mut diags);
    }

    match schema {
        Some(schema) if diags.is_empty() => Ok(Binding {
            schema_text: full_schema_text(&generated, &user),
            schema,
            policies: loaded.set,
            policy_files,
            schema_files: user.files.iter().map(|(s, _)| s.path.clone()).collect(),
            origins: loaded.origins,
            warnings: loaded.warnings,
        }),
        _ => {
            diags.sort();
            Err(diags)
        }
    }
}

/// `files` read as one more policy set over a binding's `schema` (an invariant a policy set
/// must imply, or an older version of the policies): parsed, named (`@id("…")` or
/// `<file>:<n>`) and validated in strict mode exactly as [`bind`] reads a policies directory.
///
/// # Errors
/// Every syntax, id and strict-validation problem of every file, each naming its file and line.
pub fn policy_set(
    files: &[SourceFile],
    schema: &Schema,
) -> Result<cedar_policy::PolicySet, Diagnostics> {
    let mut diags = Diagnostics::new();
    let loaded = policies::load(files, Some(schema), None, &mut diags);
    if diags.is_empty() {
        Ok(loaded.set)
    } else {
        diags.sort();
        Err(diags)
    }
}

/// The per-URL shape rule ([`Rule::PerUrlShape`]): a tool whose action some policy constrains
/// through `context.url`, or whose profile lists `authorized-urls` (its egress is the origins
/// of the URLs Cedar allowed), must present every URL of its payload to Cedar one at a time.
fn per_url_shape(
    records: &[ToolRecord],
    schema: &Schema,
    policies: &cedar_policy::PolicySet,
    diags: &mut Diagnostics,
) {
    let Ok(action_entities) = schema.action_entities() else {
        return;
    };
    for record in records {
        let Ok(action) = cedar_policy::EntityUid::from_str(&format!(
            "Action::{}",
            serde_json::Value::String(record.cedar_action().to_string())
        )) else {
            continue;
        };
        let matching = url_scope::matching_actions(&action_entities, &action);
        let why = if url_scope::url_constrained(policies, &action, &matching) {
            "a policy constrains its action through `context.url`"
        } else if record.sandbox_profile().authorized_urls {
            "its egress is the origins of the URLs Cedar authorized (`authorized-urls`)"
        } else {
            continue;
        };
        let problems = escepine_registry::urls::shape_problems(record.input_schema());
        if problems.is_empty() {
            continue;
        }
        let (src, base) = record_source(record);
        for p in problems {
            let at = format!("{base}{}", p.written_at);
            let message = format!("`{}`: {why}, but {}", record.tool_id(), p.message);
            let d = match &src {
                Some(src) => Diagnostic::at(Rule::PerUrlShape, src, &at, message),
                None => Diagnostic::file(
                    Rule::PerUrlShape,
                    record.source(),
                    format!("{at}: {message}"),
                ),
            };
            diags.push(d.help(
                "make it the tool's one URL field, or the URL of the elements of a list marked \
                 `\"x-authorize-each\": true`; or split the tool",
            ));
        }
    }
}

/// The record's file and the pointer of its input schema in it (`/input_schema` or
/// `/payload_schema`).
fn record_source(record: &ToolRecord) -> (Option<SourceFile>, &'static str) {
    let text = std::fs::read_to_string(record.source()).ok();
    let base = text
        .as_deref()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .filter(|v| v.get("payload_schema").is_some() && v.get("input_schema").is_none())
        .map_or("/input_schema", |_| "/payload_schema");
    (text.map(|t| SourceFile::new(record.source(), t)), base)
}

/// The generated text followed by each user file (fragments of the empty namespace
/// concatenate into the merged schema).
fn full_schema_text(generated: &SourceFile, user: &user_schema::UserSchema) -> String {
    let mut text = generated.text.to_string();
    for (src, _) in &user.files {
        text.push_str(&format!("\n// From {}\n", src.path.display()));
        text.push_str(&src.text);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}
