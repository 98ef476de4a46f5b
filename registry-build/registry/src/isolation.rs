//! The deployment envelope's `isolation` rule: the weakest tier tools of some side-effect
//! classes or action groups may run on.
//!
//! ```json
//! { "isolation": { "min": "gvisor", "for": ["compensatable", "untrusted-code"] } }
//! ```
//!
//! `for` names side-effect classes (`read-only`, `compensatable`, `supersede`) and action groups
//! (a record's `action_groups`); `*` names every tool. A record of a named class or group whose
//! `sandbox_profile.isolation` is weaker than `min` is refused at registration
//! (`sandbox/isolation-within-envelope`). Remote (`mcp-http`) tools have no sandbox here and are
//! not concerned.

use escepine_contract::{Isolation, SideEffectClass};
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::fields::{Object, ENVELOPE};
use crate::rule::Rule;

/// Every tool, in `for`.
pub const EVERY_TOOL: &str = "*";

/// The envelope's `isolation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationRule {
    /// The weakest tier admitted for the tools `for` names.
    pub min: Isolation,
    /// Side-effect classes, action groups, or `*`.
    pub for_: Vec<String>,
}

impl IsolationRule {
    /// Why the rule concerns a tool of `class` joining `groups` (`the side-effect class
    /// \`compensatable\``), or `None` when it does not.
    pub fn applies_to(&self, class: SideEffectClass, groups: &[String]) -> Option<String> {
        self.for_.iter().find_map(|entry| {
            if entry == EVERY_TOOL {
                Some("every tool".to_string())
            } else if entry == class.as_str() {
                Some(format!("the side-effect class `{entry}`"))
            } else if groups.iter().any(|g| g == entry) {
                Some(format!("the action group `{entry}`"))
            } else {
                None
            }
        })
    }
}

/// The envelope's optional `isolation`, closed: `{"min": <tier>, "for": [<name>, …]}` with a
/// known tier and a non-empty list of distinct, non-empty names.
pub(crate) fn parse(
    src: &SourceFile,
    obj: &serde_json::Map<String, Value>,
    diags: &mut Diagnostics,
) -> Option<IsolationRule> {
    let value = obj.get("isolation")?;
    let wrong = |diags: &mut Diagnostics, ptr: &str, why: String| {
        diags
            .push(Diagnostic::at(Rule::EnvelopeIsolation, src, ptr, why).help(
                "write `\"isolation\": {\"min\": \"gvisor\", \"for\": [\"compensatable\"]}`",
            ));
    };
    let Some(map) = value.as_object() else {
        wrong(
            diags,
            "/isolation",
            "`isolation` must be an object `{\"min\": …, \"for\": […]}`".into(),
        );
        return None;
    };
    Object::new(src, "/isolation", map, ENVELOPE).closed(&["min", "for"], "`isolation`", diags);
    let tiers: Vec<&str> = Isolation::ALL.iter().map(|t| t.as_str()).collect();
    let min = match map
        .get("min")
        .map(|m| (m, m.as_str().and_then(Isolation::parse)))
    {
        Some((_, Some(tier))) => Some(tier),
        Some((m, None)) => {
            wrong(
                diags,
                "/isolation/min",
                format!(
                    "`{m}`: `min` is an isolation tier, one of {}",
                    tiers.join(", ")
                ),
            );
            None
        }
        None => {
            wrong(diags, "/isolation", "missing field `min`".into());
            None
        }
    };
    let mut names: Vec<String> = Vec::new();
    match map.get("for").map(Value::as_array) {
        Some(Some(items)) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                let ptr = format!("/isolation/for/{i}");
                match item.as_str().map(str::trim) {
                    Some(n) if !n.is_empty() && !names.iter().any(|m| m == n) => {
                        names.push(n.to_string());
                    }
                    Some(n) if !n.is_empty() => {
                        wrong(diags, &ptr, format!("`{n}` is listed twice"));
                    }
                    _ => wrong(
                        diags,
                        &ptr,
                        "a `for` entry is a side-effect class, an action group or `*`".into(),
                    ),
                }
            }
        }
        Some(_) => wrong(
            diags,
            "/isolation/for",
            "`for` must be a non-empty list of side-effect classes, action groups or `*`".into(),
        ),
        None => wrong(diags, "/isolation", "missing field `for`".into()),
    }
    Some(IsolationRule {
        min: min?,
        for_: names,
    })
}
