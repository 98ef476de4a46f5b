//! The SOP rules, applied to SOP files read as JSON values, by subject: the document and its
//! states ([`document`]), execution steps and their tools ([`execution`]), decisions and their
//! branches ([`decision`]), constraint and branch schemas against the payload's fields
//! ([`constraint`]), the state graph ([`paths`]).
//!
//! Like the record rules, an SOP file is checked field by field so that every problem of every
//! file is reported in one run; only a file that passes every rule becomes a [`Sop`]. The
//! graph rules (reachability, paths to a terminal, decision cycles, branch pointers that must
//! read a state run earlier) run once every state of the file is well-formed, so that a typo in
//! one state does not also surface as a knock-on "unreachable" elsewhere.

mod constraint;
mod decision;
mod document;
mod execution;
mod paths;
mod pointers;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::fields::{Object, SOP};
use crate::rule::Rule;
use crate::sop::model::{Sop, State};

pub(super) const TOP: &[&str] = &[
    "sop_id",
    "version",
    "description",
    "start",
    "states",
    "$schema",
    "$comment",
];
pub(super) const EXECUTION: &[&str] = &[
    "kind",
    "tool",
    "on_failure",
    "next",
    "require_per_url_authorization",
    "constraints",
    "$comment",
];
pub(super) const DECISION: &[&str] = &["kind", "branches", "otherwise", "$comment"];
pub(super) const TERMINAL: &[&str] = &["kind", "$comment"];
pub(super) const BRANCH: &[&str] = &["when", "next", "$comment"];
pub(super) const WHEN: &[&str] = &["pointer", "schema"];
pub(super) const KINDS: &[&str] = &["execution", "decision", "terminal"];

/// What the SOP rules know of the registry.
pub(crate) struct Tools<'a> {
    /// The registered records, sorted by id.
    pub records: &'a [crate::record::ToolRecord],
    /// Tool ids declared by record files that failed their own rules: an SOP naming one is not
    /// reported again (the record's problems are).
    pub failed: BTreeSet<String>,
}

impl Tools<'_> {
    pub(crate) fn get(&self, id: &str) -> Option<&crate::record::ToolRecord> {
        self.records.iter().find(|r| r.tool_id == id)
    }
}

/// Check SOP files against the records that passed (`failed`: ids declared by failing records).
pub(crate) fn check_with_records(
    files: &[SourceFile],
    records: &[crate::record::ToolRecord],
    failed: BTreeSet<String>,
) -> (Vec<Sop>, Diagnostics) {
    check_files(files, Some(&Tools { records, failed }))
}

/// Check every file; return the SOPs that passed every rule (sorted by id) and all problems.
pub(crate) fn check_files(
    files: &[SourceFile],
    tools: Option<&Tools<'_>>,
) -> (Vec<Sop>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let mut sops = Vec::new();
    let mut ids: BTreeMap<String, PathBuf> = BTreeMap::new();
    for src in files {
        let before = diags.len();
        let mut file = File {
            src,
            tools,
            diags: &mut diags,
        };
        let (sop, id) = file.check();
        if let Some(id) = id {
            if let Some(first) = ids.get(&id) {
                diags.push(
                    Diagnostic::at(
                        Rule::SopIdUnique,
                        src,
                        "/sop_id",
                        format!("the SOP id `{id}` is already used by {}", first.display()),
                    )
                    .help("one SOP per id: rename one of them"),
                );
            } else {
                ids.insert(id, src.path.clone());
            }
        }
        if let Some(sop) = sop.filter(|_| diags.len() == before) {
            sops.push(sop);
        }
    }
    sops.sort_by(|a, b| a.sop_id.cmp(&b.sop_id));
    (sops, diags)
}

/// One SOP file being checked.
pub(super) struct File<'a, 'd> {
    pub src: &'a SourceFile,
    pub tools: Option<&'a Tools<'a>>,
    pub diags: &'d mut Diagnostics,
}

/// What the pre-pass learns of a state from the raw JSON: its kind and its tool.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Raw<'v> {
    pub kind: Option<&'v str>,
    pub tool: Option<&'v str>,
}

/// A state as parsed: its transitions (pointer, target) and, when well-formed, the state.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub targets: Vec<(String, String)>,
    pub state: Option<State>,
}

/// `a`, `b`, `c`: names for a message.
pub(super) fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'a> File<'a, '_> {
    pub(super) fn push(&mut self, rule: Rule, at: &str, message: impl Into<String>) {
        self.diags.push(Diagnostic::at(rule, self.src, at, message));
    }

    pub(super) fn push_help(
        &mut self,
        rule: Rule,
        at: &str,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.diags
            .push(Diagnostic::at(rule, self.src, at, message).help(help));
    }

    /// Report fields outside `known`, suggesting the closest known one.
    pub(super) fn closed(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        known: &[&str],
        what: &str,
    ) {
        Object::new(self.src, at, map, SOP).closed(known, what, self.diags);
    }

    /// A required string field (`who` prefixes the messages, e.g. "state `read`: ").
    pub(super) fn string<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        at: &str,
        key: &str,
        who: &str,
    ) -> Option<&'v str>
    where
        'a: 'v,
    {
        Object::new(self.src, at, map, SOP)
            .who(who)
            .string(key, self.diags)
    }
}
