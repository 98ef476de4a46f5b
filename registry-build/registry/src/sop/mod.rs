//! SOP files: state machines whose execution steps bind registered tools.
//!
//! An SOP file (`tools/sops/*.json`, format documented by `registry-build/sop.schema.json`)
//! declares a start state and named states of three kinds:
//!
//! ```json
//! {
//!   "sop_id": "triage", "version": "1.0.0", "description": "Read the page, then open a ticket.",
//!   "start": "read",
//!   "states": {
//!     "read":  { "kind": "execution", "tool": "kb_fetch", "on_failure": "halt", "next": "check",
//!                "require_per_url_authorization": true },
//!     "check": { "kind": "decision",
//!                "branches": [{ "when": { "pointer": "/read/output/status", "schema": { "const": 200 } },
//!                               "next": "open" }],
//!                "otherwise": "done" },
//!     "open":  { "kind": "execution", "tool": "ticket_open", "on_failure": "compensate",
//!                "next": "done", "constraints": { "/priority": { "maximum": 2 } } },
//!     "done":  { "kind": "terminal" }
//!   }
//! }
//! ```
//!
//! [`load`] and [`load_dir`] check SOP files against a loaded [`Registry`] with every SOP rule
//! (the `sop/…` [`Rule`](crate::rule::Rule)s), reporting every problem of every file in one run, each
//! diagnostic naming the file, the JSON pointer, the state and the rule. The same checks run in
//! [`registry::load`](crate::registry::load) when [`Sources::sops`](crate::registry::Sources::sops) is
//! given (so in `escepine check --sops` and in `Builder::sops`, where a rejected SOP fails the
//! build).
//!
//! The rules:
//!
//! - **shape** (`sop/shape`, `sop/unknown-field`, `sop/id`, `sop/id-unique`, `sop/version`,
//!   `sop/state-name`): the closed format; a typo in a field name is reported with the closest
//!   known name.
//! - **tools** (`sop/unknown-tool`, `sop/outcome-not-allowed`, `sop/per-url-list-unmarked`): the
//!   bound tool is registered; `on_failure` is one of its outcomes;
//!   `require_per_url_authorization` needs every URL of the payload authorized on its own (exactly
//!   one `format: uri` field outside lists, or lists marked `x-authorize-each`, and no unmarked
//!   list of URLs).
//! - **constraints and branch schemas** (`sop/constraint-field`, `sop/constraint-type`,
//!   `sop/constraint-schema`): a constraint's pointer resolves in the tool's input schema; its
//!   fragment is a well-formed, self-contained 2020-12 schema whose `type`, keywords and values
//!   agree with the field (`maximum` on a string, `"type": "string"` on an integer, an `enum`
//!   value the field never accepts are rejected). Decision branch schemas are checked the same
//!   way against the field their pointer names.
//! - **graph** (`sop/undefined-state`, `sop/unreachable-state`, `sop/no-terminal-path`,
//!   `sop/branch-pointer`, `sop/decision-cycle`): `start` and every `next`, `otherwise` and
//!   branch `next` name a state; every state is reachable from `start` and can reach a terminal
//!   state (so at least one exists); a branch pointer reads `/<state>/input/…` or
//!   `/<state>/output/…` of an execution state that runs before the decision on every path, and
//!   resolves in that tool's schema; decisions do not loop among themselves.

pub mod graph;
pub mod model;
pub(crate) mod names;

use std::collections::BTreeSet;
use std::path::Path;

pub use model::{Branch, DecisionState, ExecutionState, Sop, State};
pub use names::{type_name, RESERVED_TYPE_NAMES};

use crate::rules::sop::{self as check, Tools};

use crate::diagnostic::{Diagnostics, SourceFile};
use crate::files::read_files;
use crate::registry::Registry;

/// Load one SOP file and check it against every SOP rule and the registry's tools.
///
/// # Errors
/// Every problem found in the file, as [`Diagnostics`].
pub fn load(path: &Path, registry: &Registry) -> Result<Sop, Diagnostics> {
    let files = read_files(path)?;
    let (mut sops, diags) = check::check_files(&files, Some(&tools_of(registry)));
    match sops.pop() {
        Some(sop) if diags.is_empty() && sops.is_empty() => Ok(sop),
        _ => Err(sorted(diags)),
    }
}

/// Load every SOP file (`*.json`) of a directory (or one file) and check them all against every
/// SOP rule and the registry's tools: every problem of every file in one run.
///
/// # Errors
/// Every problem found, in every file, as [`Diagnostics`].
pub fn load_dir(dir: &Path, registry: &Registry) -> Result<Vec<Sop>, Diagnostics> {
    let files = read_files(dir)?;
    let (sops, diags) = check::check_files(&files, Some(&tools_of(registry)));
    if diags.is_empty() {
        Ok(sops)
    } else {
        Err(sorted(diags))
    }
}

/// Check SOP files given as text (named by their paths in diagnostics) against the registry.
///
/// Returns the SOPs that passed (sorted by id) and every problem found.
pub fn check_sources(files: &[SourceFile], registry: &Registry) -> (Vec<Sop>, Diagnostics) {
    check::check_files(files, Some(&tools_of(registry)))
}

/// Load one SOP file checking only what needs no registry: the format and the state graph
/// (every rule but the tool, constraint-field and branch-resolution rules). For tools that read
/// an SOP without records, such as `escepine sop graph` without `--records`.
///
/// # Errors
/// Every problem found in the file, as [`Diagnostics`].
pub fn load_unbound(path: &Path) -> Result<Sop, Diagnostics> {
    let files = read_files(path)?;
    let (mut sops, diags) = check::check_files(&files, None);
    match sops.pop() {
        Some(sop) if diags.is_empty() && sops.is_empty() => Ok(sop),
        _ => Err(sorted(diags)),
    }
}

fn tools_of(registry: &Registry) -> Tools<'_> {
    Tools {
        records: &registry.records,
        failed: BTreeSet::new(),
    }
}

fn sorted(mut d: Diagnostics) -> Diagnostics {
    d.sort();
    d
}
