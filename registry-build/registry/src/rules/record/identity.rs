//! Who the tool is: `tool_id` (or `name`), `version`, `title`, `description`, `open_world`, its
//! Cedar action and its action groups.

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fields::Object;
use crate::rule::Rule;
use crate::rules::names;

/// `tool_id` (alias `name`): `^[a-z][a-z0-9_]*$` and not reserved.
pub(super) fn tool_id(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<String> {
    let (ptr, v) = rec.spelled("tool_id", "name", diags)?;
    let Some(id) = v.as_str() else {
        diags.push(Diagnostic::at(
            Rule::FieldType,
            rec.src,
            &ptr,
            "the tool id must be a string",
        ));
        return None;
    };
    match names::tool_id_problem(id) {
        Some((rule, message)) => {
            diags.push(Diagnostic::at(rule, rec.src, &ptr, message));
            None
        }
        None => Some(id.to_string()),
    }
}

/// `version`: semver.
pub(super) fn version(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<semver::Version> {
    let v = rec.string("version", diags)?;
    match semver::Version::parse(v) {
        Ok(v) => Some(v),
        Err(e) => {
            diags.push(
                Diagnostic::at(
                    Rule::VersionSemver,
                    rec.src,
                    &rec.ptr("version"),
                    format!("`{v}` is not a semver version: {e}"),
                )
                .help("write MAJOR.MINOR.PATCH, e.g. \"1.2.0\""),
            );
            None
        }
    }
}

/// `title`: optional, a non-empty string.
pub(super) fn title(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<Option<String>> {
    match rec.map.get("title") {
        None => Some(None),
        Some(Value::String(t)) if !t.trim().is_empty() => Some(Some(t.clone())),
        Some(t) => {
            diags.push(
                Diagnostic::at(
                    Rule::Title,
                    rec.src,
                    &rec.ptr("title"),
                    format!("`title` is {t}; it must be a non-empty string"),
                )
                .help("give a short human-readable name, or leave `title` out"),
            );
            None
        }
    }
}

/// `open_world`: optional, a boolean.
pub(super) fn open_world(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<Option<bool>> {
    match rec.map.get("open_world") {
        None => Some(None),
        Some(Value::Bool(b)) => Some(Some(*b)),
        Some(_) => {
            rec.wrong("open_world", "a boolean (MCP's `openWorldHint`)", diags);
            None
        }
    }
}

/// `description`: a non-empty string.
pub(super) fn description(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<String> {
    let d = rec.string("description", diags)?;
    if d.trim().is_empty() {
        diags.push(Diagnostic::at(
            Rule::DescriptionEmpty,
            rec.src,
            &rec.ptr("description"),
            "the description is empty; the planner reads it to choose tools",
        ));
        None
    } else {
        Some(d.to_string())
    }
}

/// `cedar_action`: optional, and then the tool's own action `Action::"<tool_id>"`.
pub(super) fn cedar_action(
    rec: &Object<'_>,
    tool_id: Option<&str>,
    diags: &mut Diagnostics,
) -> Option<String> {
    let Some(v) = rec.map.get("cedar_action") else {
        return tool_id.map(str::to_string);
    };
    let expected = tool_id.map(|id| format!("Action::\"{id}\""));
    match v.as_str() {
        Some(s) if Some(s) == expected.as_deref() => tool_id.map(str::to_string),
        Some(s) => {
            let mut d = Diagnostic::at(
                Rule::CedarAction,
                rec.src,
                &rec.ptr("cedar_action"),
                format!("`{s}` is not this tool's own action; one action per tool, never shared"),
            );
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

/// `action_groups`: optional, distinct group names that are not class groups.
pub(super) fn action_groups(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<Vec<String>> {
    let items = match rec.map.get("action_groups") {
        None => return Some(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            rec.wrong("action_groups", "a list of group names", diags);
            return None;
        }
    };
    let mut groups: Vec<String> = Vec::new();
    let mut ok = true;
    for (i, g) in items.iter().enumerate() {
        let ptr = format!("{}/{i}", rec.ptr("action_groups"));
        let problem = match g.as_str() {
            None => Some("an action group name must be a string".to_string()),
            Some(g) => names::group_problem(g).or_else(|| {
                groups
                    .iter()
                    .any(|x| x == g)
                    .then(|| format!("`{g}` is listed twice"))
            }),
        };
        match (problem, g.as_str()) {
            (Some(p), _) => {
                diags.push(Diagnostic::at(Rule::ActionGroup, rec.src, &ptr, p));
                ok = false;
            }
            (None, Some(g)) => groups.push(g.to_string()),
            (None, None) => ok = false,
        }
    }
    ok.then_some(groups)
}
