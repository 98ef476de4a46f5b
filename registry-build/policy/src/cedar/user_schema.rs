//! The user's `.cedarschema` files beside the policies, and merging them with the generated
//! fragment.
//!
//! Each file is parsed on its own, so its syntax errors point into it. What it declares in the
//! empty namespace is left out of the generated fragment (the user may declare `Agent` with
//! attributes and parents, or the action of a tool written in Rust), then the fragments merge
//! into one schema. A tool action the user declares must still be in its class group and its
//! `action_groups` and apply to `Agent` and `Tool`.

use std::str::FromStr;

use cedar_policy::{EntityId, EntityTypeName, EntityUid, Schema, SchemaFragment};
use miette::SourceSpan;
use serde_json::Value;

use crate::cedar::report;
use crate::cedar::schema_gen::{self, Declared, PRINCIPAL_TYPE, RESOURCE_TYPE};
use escepine_registry::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use escepine_registry::record::ToolRecord;
use escepine_registry::rule::Rule;

/// The pseudo-path naming the generated schema in diagnostics.
pub(crate) const GENERATED: &str = "<generated cedar schema>";

/// The user's schema files that parsed, and what they declare.
#[derive(Debug, Clone, Default)]
pub(crate) struct UserSchema {
    /// Each file with its fragment.
    pub files: Vec<(SourceFile, SchemaFragment)>,
    /// Entity types and actions declared in the empty namespace.
    pub declared: Declared,
    /// Whether some file failed to read or parse.
    pub failed: bool,
}

/// Parse every `.cedarschema` source (in the order given).
pub(crate) fn parse(sources: &[SourceFile], diags: &mut Diagnostics) -> UserSchema {
    let mut user = UserSchema::default();
    for src in sources {
        match SchemaFragment::from_cedarschema_str(&src.text) {
            Ok((fragment, _warnings)) => {
                collect_declared(&fragment, &mut user.declared);
                user.files.push((src.clone(), fragment));
            }
            Err(e) => {
                for d in report::from_cedar_all(Rule::CedarSchema, src, &e) {
                    diags.push(d);
                }
                user.failed = true;
            }
        }
    }
    user
}

/// Record the entity types and actions a fragment declares in the empty namespace.
fn collect_declared(fragment: &SchemaFragment, declared: &mut Declared) {
    let Ok(json) = fragment.clone().to_json_value() else {
        return;
    };
    let Some(ns) = json.get("") else {
        return;
    };
    let keys = |field: &str| -> Vec<String> {
        ns.get(field)
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    declared.entity_types.extend(keys("entityTypes"));
    declared.actions.extend(keys("actions"));
}

/// Merge the generated fragment with the user's; `None` (with diagnostics) when they do not
/// merge or a user-declared tool action does not fit its record.
pub(crate) fn merge(
    generated: &SourceFile,
    user: &UserSchema,
    records: &[ToolRecord],
    diags: &mut Diagnostics,
) -> Option<Schema> {
    let generated_fragment = match SchemaFragment::from_cedarschema_str(&generated.text) {
        Ok((f, _)) => f,
        Err(e) => {
            // A bug of the generator; shown against the generated text.
            for d in report::from_cedar_all(Rule::CedarSchema, generated, &e) {
                diags.push(d);
            }
            return None;
        }
    };
    let fragments =
        std::iter::once(generated_fragment).chain(user.files.iter().map(|(_, f)| f.clone()));
    let schema = match Schema::from_schema_fragments(fragments) {
        Ok(s) => s,
        Err(e) => {
            let src = source_of(&e, generated, user);
            let mut d = report::from_cedar(Rule::CedarSchema, src, &e);
            if d.span.is_none() && src.path.as_os_str() != GENERATED {
                d.message = format!("{} (merging with the generated schema)", d.message);
            }
            diags.push(d);
            return None;
        }
    };
    let before = diags.len();
    for record in records {
        if user.declared.actions.contains(record.cedar_action()) {
            check_user_tool_action(&schema, record, user, diags);
        }
    }
    (diags.len() == before).then_some(schema)
}

/// The file a merge error's label points into: the text whose span reads like the error's
/// source; the first user file when the error has no label.
fn source_of<'a>(
    err: &cedar_policy::SchemaError,
    generated: &'a SourceFile,
    user: &'a UserSchema,
) -> &'a SourceFile {
    use miette::Diagnostic as _;
    let candidates = || {
        user.files
            .iter()
            .map(|(s, _)| s)
            .chain(std::iter::once(generated))
    };
    let label = err.labels().and_then(|mut l| l.next());
    let snippet = match (label.as_ref(), err.source_code()) {
        (Some(l), Some(code)) => code
            .read_span(&SourceSpan::from((l.offset(), l.len())), 0, 0)
            .ok()
            .map(|c| String::from_utf8_lossy(c.data()).into_owned()),
        _ => None,
    };
    if let (Some(l), Some(snippet)) = (label, snippet) {
        if let Some(src) = candidates()
            .find(|s| s.text.get(l.offset()..l.offset() + l.len()) == Some(snippet.as_str()))
        {
            return src;
        }
    }
    user.files.first().map_or(generated, |(s, _)| s)
}

/// A tool action the user declares must be in its groups and apply to `Agent` and `Tool`.
fn check_user_tool_action(
    schema: &Schema,
    record: &ToolRecord,
    user: &UserSchema,
    diags: &mut Diagnostics,
) {
    let Some(uid) = action_uid(record.cedar_action()) else {
        return;
    };
    let file = user
        .files
        .iter()
        .find(|(src, _)| declares_action(&src.text, record.cedar_action()))
        .or_else(|| user.files.first())
        .map(|(src, _)| src);
    let mut problems = Vec::new();
    if let Ok(entities) = schema.action_entities() {
        for g in schema_gen::groups_of(record) {
            if let Some(group) = action_uid(&g) {
                if !entities.is_ancestor_of(&group, &uid) {
                    problems.push(format!("is not in the action group `{g}`"));
                }
            }
        }
    }
    let applies =
        |types: Option<Vec<String>>, want: &str| types.is_some_and(|t| t.iter().any(|n| n == want));
    let principals = schema
        .principals_for_action(&uid)
        .map(|it| it.map(ToString::to_string).collect());
    if !applies(principals, PRINCIPAL_TYPE) {
        problems.push(format!("does not apply to principal `{PRINCIPAL_TYPE}`"));
    }
    let resources = schema
        .resources_for_action(&uid)
        .map(|it| it.map(ToString::to_string).collect());
    if !applies(resources, RESOURCE_TYPE) {
        problems.push(format!("does not apply to resource `{RESOURCE_TYPE}`"));
    }
    if problems.is_empty() {
        return;
    }
    let message = format!(
        "the user-declared action `Action::\"{}\"` of tool `{}` {}",
        record.cedar_action(),
        record.tool_id(),
        problems.join(", ")
    );
    let d = match file {
        Some(src) => {
            let span = find_action_decl(&src.text, record.cedar_action());
            Diagnostic::at_span(Rule::CedarSchema, src, span, message)
        }
        None => Diagnostic::file(Rule::CedarSchema, GENERATED, message),
    };
    diags.push(d.help(format!(
        "declare it `in [{}] appliesTo {{ principal: [{PRINCIPAL_TYPE}], resource: [{RESOURCE_TYPE}], … }}`",
        schema_gen::groups_of(record)
            .iter()
            .map(|g| format!("\"{g}\""))
            .collect::<Vec<_>>()
            .join(", ")
    )));
}

/// `Action::"<id>"`.
pub(crate) fn action_uid(id: &str) -> Option<EntityUid> {
    let ty = EntityTypeName::from_str("Action").ok()?;
    Some(EntityUid::from_type_name_and_id(ty, EntityId::new(id)))
}

fn declares_action(text: &str, id: &str) -> bool {
    find_action_decl(text, id).is_some()
}

/// Where the text names the action (its quoted or bare id), for the caret.
fn find_action_decl(text: &str, id: &str) -> Option<(usize, usize)> {
    let quoted = format!("\"{id}\"");
    text.find(&quoted)
        .map(|i| (i, quoted.len()))
        .or_else(|| text.find(id).map(|i| (i, id.len())))
}
