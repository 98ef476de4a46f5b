//! The Cedar schema generated from the tool records (what `escepine cedar-schema` prints).
//!
//! Empty namespace; `entity Agent;` (unless the user's `.cedarschema` declares it) and
//! `entity Tool = { side_effect_class: String, version: String };`; the class groups
//! `"read-only"`, `"compensatable"`, `"supersede"` and every group a record names; one action per
//! tool, in its class group and its `action_groups`, whose context is `input` (typed from the
//! input schema) and, for tools with per-URL requests, `url` (required when every request
//! carries it); and, when the policies use approval (a permit annotated `@approval`, or a policy
//! naming `Action::"approve"` in its scope), `Action::"approve"` (in no group, with an empty
//! context), the action an approver of a waiting call must be permitted on the call's tool. It
//! is left out otherwise, so a policy whose action scope is unconstrained may read
//! `context.input` without a guard. Every tool's context also holds `flow`, the state of the
//! call's flow ([`crate::cedar::flow`]); `Action::"declassify"` on `Flow` entities is declared
//! only when a policy names it.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;

use escepine_contract::SideEffectClass;
use serde_json::Value;

use crate::cedar::approval::APPROVE_ACTION;
use crate::cedar::flow::{self, DECLASSIFY_ACTION, FLOW_ATTRIBUTE, FLOW_TYPE};
use crate::cedar::syntax::quote;
use crate::cedar::types::{self, input_type, Attribute, CedarType, TypingError};
use escepine_registry::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use escepine_registry::record::ToolRecord;
use escepine_registry::rule::Rule;
use escepine_registry::urls;

/// The principal entity type.
pub const PRINCIPAL_TYPE: &str = "Agent";
/// The resource entity type (`Tool::"<tool_id>"`).
pub const RESOURCE_TYPE: &str = "Tool";

/// One action of the Cedar schema: a group (class or custom) or a tool's own action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionInfo {
    /// The action id (`Action::"<id>"`).
    pub id: String,
    /// Whether this is an action group (no tool is called through it).
    pub is_group: bool,
    /// The groups the action is in (for a tool: its class group first, then its
    /// `action_groups`; empty for a group).
    pub groups: Vec<String>,
}

/// What the user's `.cedarschema` declares in the empty namespace; the generated fragment
/// leaves those declarations out so the fragments merge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    /// Entity type names.
    pub entity_types: BTreeSet<String>,
    /// Action ids.
    pub actions: BTreeSet<String>,
}

/// Every action of the generated schema: the class groups (in class order), the custom groups
/// (sorted), then one action per tool (sorted by tool id).
pub fn actions(records: &[ToolRecord]) -> Vec<ActionInfo> {
    let mut out: Vec<ActionInfo> = SideEffectClass::ALL
        .iter()
        .map(|c| group(c.as_str()))
        .collect();
    out.extend(custom_groups(records).into_iter().map(group));
    out.extend(sorted(records).into_iter().map(|r| ActionInfo {
        id: r.cedar_action().to_string(),
        is_group: false,
        groups: groups_of(r),
    }));
    out
}

fn group(id: &str) -> ActionInfo {
    ActionInfo {
        id: id.to_string(),
        is_group: true,
        groups: Vec::new(),
    }
}

/// The groups a tool's action is in: its class group, then its `action_groups` (deduplicated).
pub(crate) fn groups_of(record: &ToolRecord) -> Vec<String> {
    let mut groups = vec![record.side_effect_class().as_str().to_string()];
    for g in record.action_groups() {
        if !groups.contains(g) {
            groups.push(g.clone());
        }
    }
    groups
}

/// The custom groups the records name (not the class groups), sorted.
fn custom_groups(records: &[ToolRecord]) -> BTreeSet<&str> {
    records
        .iter()
        .flat_map(|r| r.action_groups().iter().map(String::as_str))
        .filter(|g| SideEffectClass::parse(g).is_none())
        .collect()
}

fn sorted(records: &[ToolRecord]) -> Vec<&ToolRecord> {
    let mut v: Vec<&ToolRecord> = records.iter().collect();
    v.sort_by(|a, b| a.tool_id().cmp(b.tool_id()));
    v
}

/// The generated Cedar schema (without any user fragment), in Cedar syntax.
///
/// The records are taken to have passed the registration rules (whose subset rules refuse
/// recursive `$ref`s); should an input schema still have no Cedar type, its action's context
/// has no `input` and a comment says why. [`try_generated_schema_text`] reports that as an
/// error instead.
pub fn generated_schema_text(records: &[ToolRecord]) -> String {
    generate(records, &Declared::default(), Extra::default()).0
}

/// The generated Cedar schema, or a [`Rule::CedarSchema`] diagnostic (naming the record file
/// and the pointer) for every input schema that has no Cedar type.
///
/// # Errors
/// One diagnostic per record whose input schema cannot be typed.
pub fn try_generated_schema_text(records: &[ToolRecord]) -> Result<String, Diagnostics> {
    let (text, diags) = generate(records, &Declared::default(), Extra::default());
    if diags.is_empty() {
        Ok(text)
    } else {
        Err(diags)
    }
}

/// The actions generated only when the policies use them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extra {
    /// `Action::"approve"` (the policies use approval).
    pub approve: bool,
    /// `Action::"declassify"` and `entity Flow` (a policy names the action).
    pub declassify: bool,
}

/// The schema text leaving out what the user declares, and a diagnostic per untypable input;
/// with `extra`, the actions the policies use.
pub(crate) fn generate(
    records: &[ToolRecord],
    declared: &Declared,
    extra: Extra,
) -> (String, Diagnostics) {
    let approve = extra.approve;
    let mut diags = Diagnostics::new();
    let mut out = String::from(
        "// The Cedar schema generated from the tool records (`escepine cedar-schema`).\n\n",
    );
    if declared.entity_types.contains(PRINCIPAL_TYPE) {
        let _ = writeln!(
            out,
            "// `{PRINCIPAL_TYPE}` is declared in the user's .cedarschema."
        );
    } else {
        let _ = writeln!(out, "entity {PRINCIPAL_TYPE};");
    }
    let _ = writeln!(
        out,
        "entity {RESOURCE_TYPE} = {{\n  side_effect_class: String,\n  version: String,\n}};\n"
    );

    let classes: Vec<String> = SideEffectClass::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !declared.actions.contains(*c))
        .map(quote)
        .collect();
    out.push_str("// Side-effect class groups: every tool's action is in its class.\n");
    if !classes.is_empty() {
        let _ = writeln!(out, "action {};", classes.join(", "));
    }
    if approve && !declared.actions.contains(APPROVE_ACTION) {
        out.push_str(
            "\n// Approving (or rejecting) a call that waits for approval (`@approval` permits).\n",
        );
        let _ = writeln!(
            out,
            "action {} appliesTo {{\n  principal: [{PRINCIPAL_TYPE}],\n  resource: [{RESOURCE_TYPE}],\n  context: {{}},\n}};",
            quote(APPROVE_ACTION)
        );
    }
    if extra.declassify && !declared.actions.contains(DECLASSIFY_ACTION) {
        out.push_str("\n// Removing a label from a flow (`escepine flow declassify`).\n");
        if !declared.entity_types.contains(FLOW_TYPE) {
            let _ = writeln!(out, "entity {FLOW_TYPE};");
        }
        let _ = write!(
            out,
            "action {} appliesTo {{\n  principal: [{PRINCIPAL_TYPE}],\n  resource: [{FLOW_TYPE}],\n  context: ",
            quote(DECLASSIFY_ACTION)
        );
        types::write_record(
            &mut out,
            &[
                Attribute {
                    name: FLOW_ATTRIBUTE.to_string(),
                    required: true,
                    ty: flow::flow_type(),
                },
                Attribute {
                    name: "label".to_string(),
                    required: true,
                    ty: CedarType::String,
                },
            ],
            2,
        );
        out.push_str(",\n};\n");
    }
    let custom: Vec<String> = custom_groups(records)
        .into_iter()
        .filter(|g| !declared.actions.contains(*g))
        .map(quote)
        .collect();
    if !custom.is_empty() {
        out.push_str("\n// Action groups the records name.\n");
        let _ = writeln!(out, "action {};", custom.join(", "));
    }

    for record in sorted(records) {
        if declared.actions.contains(record.cedar_action()) {
            let _ = writeln!(
                out,
                "\n// {} {} ({}): its action is declared in the user's .cedarschema.",
                record.tool_id(),
                record.version(),
                record.side_effect_class().as_str()
            );
            continue;
        }
        match input_type(record.input_schema()) {
            Ok(input) => write_action(&mut out, record, Some(input)),
            Err(e) => {
                diags.push(typing_diagnostic(record, &e));
                write_action(&mut out, record, None);
            }
        }
    }
    (out, diags)
}

fn write_action(out: &mut String, record: &ToolRecord, input: Option<CedarType>) {
    let per_url = urls::per_url(record.input_schema());
    let mut context = Vec::new();
    match input {
        Some(ty) => context.push(Attribute {
            name: "input".to_string(),
            required: true,
            ty,
        }),
        None => {
            let _ = write!(
                out,
                "\n// {}: the input schema has no Cedar type, so `context.input` is left out.",
                record.tool_id()
            );
        }
    }
    if per_url.has_url() {
        context.push(Attribute {
            name: "url".to_string(),
            required: per_url.url_always(),
            ty: types::url_type(),
        });
    }
    context.push(Attribute {
        name: FLOW_ATTRIBUTE.to_string(),
        required: true,
        ty: flow::flow_type(),
    });
    let groups: Vec<String> = groups_of(record).iter().map(|g| quote(g)).collect();
    let _ = writeln!(
        out,
        "\n// {} {} ({})",
        record.tool_id(),
        record.version(),
        record.side_effect_class().as_str()
    );
    let _ = write!(
        out,
        "action {} in [{}] appliesTo {{\n  principal: [{PRINCIPAL_TYPE}],\n  resource: [{RESOURCE_TYPE}],\n  context: ",
        quote(record.cedar_action()),
        groups.join(", ")
    );
    types::write_record(out, &context, 2);
    out.push_str(",\n};\n");
}

/// A [`Rule::CedarSchema`] diagnostic at the input schema pointer of a record file.
fn typing_diagnostic(record: &ToolRecord, e: &TypingError) -> Diagnostic {
    let message = format!("tool `{}`: {e}", record.tool_id());
    let help =
        "give the payload a finite (non-recursive) shape; Cedar context types cannot recurse";
    match fs::read_to_string(record.source()) {
        Ok(text) => {
            // The record may spell the field `payload_schema`.
            let key = serde_json::from_str::<Value>(&text)
                .ok()
                .filter(|v| v.get("input_schema").is_none() && v.get("payload_schema").is_some())
                .map_or("input_schema", |_| "payload_schema");
            let src = SourceFile::new(record.source(), text);
            Diagnostic::at(
                Rule::CedarSchema,
                &src,
                &format!("/{key}{}", e.pointer()),
                message,
            )
            .help(help)
        }
        Err(_) => {
            let mut d = Diagnostic::file(Rule::CedarSchema, record.source(), message).help(help);
            d.pointer = Some(format!("/input_schema{}", e.pointer()));
            d
        }
    }
}
