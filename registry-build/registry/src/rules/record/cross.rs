//! The rules across records: action-group names against each other and against tool ids, and
//! each compensation against its inverse.

use std::collections::BTreeMap;

use super::compensation;
use super::context::Checked;
use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::rule::Rule;

/// Rules across records: reserved names (action groups) and compensation inverses.
pub(super) fn check(
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
        compensation::against_inverse(c, &inverse.record, diags);
    }
}
