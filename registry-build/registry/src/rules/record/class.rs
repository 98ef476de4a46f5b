//! What the tool does to the world and what an SOP step may do when it fails:
//! `side_effect_class` and `on_failure`.

use escepine_contract::{FailureOutcome, SideEffectClass};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fields::Object;
use crate::rule::Rule;

/// `side_effect_class`: one of the three classes.
pub(super) fn side_effect_class(
    rec: &Object<'_>,
    diags: &mut Diagnostics,
) -> Option<SideEffectClass> {
    let c = rec.string("side_effect_class", diags)?;
    let parsed = SideEffectClass::parse(c);
    if parsed.is_none() {
        diags.push(Diagnostic::at(
            Rule::SideEffectClass,
            rec.src,
            &rec.ptr("side_effect_class"),
            format!("`{c}` is not a side-effect class; use read-only, compensatable or supersede"),
        ));
    }
    parsed
}

/// `on_failure`: a non-empty list of distinct outcomes.
pub(super) fn on_failure(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<Vec<FailureOutcome>> {
    let v = rec.require("on_failure", diags)?;
    let at = rec.ptr("on_failure");
    let Some(items) = v.as_array() else {
        diags.push(Diagnostic::at(
            Rule::OnFailure,
            rec.src,
            &at,
            "`on_failure` must be a list of outcomes: halt, halt_and_escalate, compensate",
        ));
        return None;
    };
    if items.is_empty() {
        diags.push(Diagnostic::at(
            Rule::OnFailure,
            rec.src,
            &at,
            "`on_failure` is empty; list at least one of halt, halt_and_escalate, compensate",
        ));
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let ptr = format!("{at}/{i}");
        match item.as_str().and_then(FailureOutcome::parse) {
            Some(o) if out.contains(&o) => {
                diags.push(Diagnostic::at(
                    Rule::OnFailure,
                    rec.src,
                    &ptr,
                    format!("`{}` is listed twice", o.as_str()),
                ));
                ok = false;
            }
            Some(o) => out.push(o),
            None => {
                let shown = item
                    .as_str()
                    .map_or_else(|| item.to_string(), |s| format!("`{s}`"));
                diags.push(Diagnostic::at(
                    Rule::OnFailure,
                    rec.src,
                    &ptr,
                    format!("{shown} is not an outcome; use halt, halt_and_escalate or compensate"),
                ));
                ok = false;
            }
        }
    }
    ok.then_some(out)
}
