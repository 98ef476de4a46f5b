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
//! (the `sop/…` [`Rule`]s), reporting every problem of every file in one run, each
//! diagnostic naming the file, the JSON pointer, the state and the rule. The same checks run in
//! [`registry::load`](crate::registry::load) when [`Sources::sops`](crate::Sources::sops) is
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

mod check;
pub mod graph;
pub mod model;

use std::collections::BTreeSet;
use std::path::Path;

pub use model::{Branch, DecisionState, ExecutionState, Sop, State};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::registry::{list_files, Registry};
use crate::rule::Rule;

/// Names the generated code defines inside an SOP's module; no state may map to them.
pub const RESERVED_TYPE_NAMES: &[&str] = &["State", "Sop", "Self"];

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

/// The Rust type name of a state (`read_page` → `ReadPage`), as the generated code spells its
/// `State` variant and its step type.
pub fn type_name(state: &str) -> String {
    let mut out = String::with_capacity(state.len());
    let mut upper = true;
    for c in state.chars() {
        if c == '_' || c == '-' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// What the SOP rules know of the registry.
pub(crate) struct Tools<'a> {
    /// The registered records, sorted by id.
    pub records: &'a [crate::record::ToolRecord],
    /// Tool ids declared by record files that failed their own rules: an SOP naming one is not
    /// reported again (the record's problems are).
    pub failed: BTreeSet<String>,
}

impl Tools<'_> {
    fn get(&self, id: &str) -> Option<&crate::record::ToolRecord> {
        self.records.iter().find(|r| r.tool_id == id)
    }
}

fn tools_of(registry: &Registry) -> Tools<'_> {
    Tools {
        records: &registry.records,
        failed: BTreeSet::new(),
    }
}

/// Check SOP files against the records that passed (`failed`: ids declared by failing records).
pub(crate) fn check_with_records(
    files: &[SourceFile],
    records: &[crate::record::ToolRecord],
    failed: BTreeSet<String>,
) -> (Vec<Sop>, Diagnostics) {
    check::check_files(files, Some(&Tools { records, failed }))
}

/// Read the SOP files of a directory (`*.json`, sorted) or one file.
pub(crate) fn read_files(path: &Path) -> Result<Vec<SourceFile>, Diagnostics> {
    let mut diags = Diagnostics::new();
    let mut files = Vec::new();
    let paths = if path.is_dir() {
        list_files(path, &["json"])
    } else if path.exists() {
        vec![path.to_path_buf()]
    } else {
        diags.push(Diagnostic::file(
            Rule::Missing,
            path,
            "no such file or directory",
        ));
        return Err(diags);
    };
    for p in paths {
        match std::fs::read_to_string(&p) {
            Ok(t) => files.push(SourceFile::new(&p, t)),
            Err(e) => diags.push(Diagnostic::file(Rule::Io, &p, format!("cannot read: {e}"))),
        }
    }
    if diags.is_empty() {
        Ok(files)
    } else {
        Err(diags)
    }
}

fn sorted(mut d: Diagnostics) -> Diagnostics {
    d.sort();
    d
}
