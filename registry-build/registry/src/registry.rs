//! Loading a registry: every record file, the envelope, the policies and the SOPs, every rule
//! applied, every problem of every file reported in one run.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::endpoint::WorkspaceBins;
use crate::envelope::Envelope;
use crate::files::list_files;
use crate::record::ToolRecord;
use crate::rule::Rule;
use crate::rules::record as record_check;
use crate::rules::sop::check_with_records;
use crate::rust_names;
use crate::sop::model::Sop;

/// What to load. Built with [`Sources::new`] and the chained setters.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Directories (every `*.json` in them) or single files of records.
    pub records: Vec<PathBuf>,
    /// Records given as text (from `--describe` of a tool host, or tests).
    pub record_texts: Vec<SourceFile>,
    /// The policies directory (`*.cedar`, and an optional `*.cedarschema`).
    pub policies: Option<PathBuf>,
    /// The deployment envelope; without it the coverage rule is skipped.
    pub envelope: Option<PathBuf>,
    /// The workspace whose `[[bin]]`s endpoints may name; discovered from the records'
    /// directory when not set.
    pub workspace_root: Option<PathBuf>,
    /// Directories (every `*.json` in them) or single files of SOPs, checked against the
    /// records.
    pub sops: Vec<PathBuf>,
    /// Policy and `.cedarschema` texts, read with the policies directory's (or instead of it).
    pub policy_texts: PolicyFiles,
    /// The deployment envelope as text (instead of [`envelope`](Self::envelope)).
    pub envelope_text: Option<SourceFile>,
    /// SOPs given as text.
    pub sop_texts: Vec<SourceFile>,
    /// The binaries the workspace declares, when known ahead (a registry embedded in a
    /// program, whose build resolved them); otherwise discovered from the workspace root.
    pub workspace_bins: Option<BTreeSet<String>>,
    /// The tool hosts linked into the program that loads this registry (its endpoints name
    /// them, and the program serves their calls from its own binary; see
    /// [`ResolvedCommand::Linked`](crate::record::ResolvedCommand::Linked)).
    pub linked_hosts: BTreeSet<String>,
}

impl Sources {
    /// Nothing to load yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a records directory or file.
    pub fn records(mut self, path: impl Into<PathBuf>) -> Self {
        self.records.push(path.into());
        self
    }

    /// Add a record given as text, named by `path` in diagnostics.
    pub fn record_text(mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        self.record_texts.push(SourceFile::new(path, text));
        self
    }

    /// Set the policies directory.
    pub fn policies(mut self, dir: impl Into<PathBuf>) -> Self {
        self.policies = Some(dir.into());
        self
    }

    /// Set the deployment envelope file.
    pub fn envelope(mut self, file: impl Into<PathBuf>) -> Self {
        self.envelope = Some(file.into());
        self
    }

    /// Set the workspace root used to resolve endpoint binaries.
    pub fn workspace_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace_root = Some(dir.into());
        self
    }

    /// Add an SOP directory (every `*.json` in it) or a single SOP file; every SOP rule is
    /// applied against the loaded records.
    pub fn sops(mut self, path: impl Into<PathBuf>) -> Self {
        self.sops.push(path.into());
        self
    }

    /// Add a policy file (`*.cedar`) or a Cedar schema (`*.cedarschema`) given as text.
    pub fn policy_text(mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        self.policy_texts.push(SourceFile::new(path, text));
        self
    }

    /// Set the deployment envelope as text, named by `path` in diagnostics.
    pub fn envelope_text(mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        self.envelope_text = Some(SourceFile::new(path, text));
        self
    }

    /// Add an SOP given as text, named by `path` in diagnostics.
    pub fn sop_text(mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        self.sop_texts.push(SourceFile::new(path, text));
        self
    }

    /// Name the binaries the workspace declares instead of discovering them from its root.
    pub fn workspace_bins<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.workspace_bins = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Name tool hosts the program serves from its own binary: an endpoint whose command is
    /// one of them resolves to [`ResolvedCommand::Linked`](crate::record::ResolvedCommand::Linked),
    /// before the workspace's binaries and `PATH`.
    pub fn linked_hosts<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.linked_hosts.extend(names.into_iter().map(Into::into));
        self
    }

    /// The policy texts these sources name: the policies directory's files, then the texts
    /// given.
    ///
    /// # Errors
    /// As [`PolicyFiles::read`].
    pub fn policy_files(&self) -> Result<PolicyFiles, Diagnostics> {
        let mut files = match &self.policies {
            None => PolicyFiles::default(),
            Some(dir) => PolicyFiles::read(dir)?,
        };
        files
            .schemas
            .extend(self.policy_texts.schemas.iter().cloned());
        files
            .policies
            .extend(self.policy_texts.policies.iter().cloned());
        Ok(files)
    }

    /// Every file this load reads (for `cargo:rerun-if-changed`).
    pub fn input_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for r in &self.records {
            out.push(r.clone());
            out.extend(list_files(r, &["json"]));
        }
        if let Some(p) = &self.policies {
            out.push(p.clone());
            out.extend(list_files(p, &["cedar", "cedarschema"]));
        }
        out.extend(self.envelope.iter().cloned());
        for s in &self.sops {
            out.push(s.clone());
            out.extend(list_files(s, &["json"]));
        }
        out
    }
}

/// A checked registry: every record and SOP passed every rule that needs no policy (the Cedar
/// binding is `escepine_policy`'s, which binds the policies to a registry).
#[derive(Debug, Clone)]
pub struct Registry {
    /// The records, sorted by tool id.
    pub(crate) records: Vec<ToolRecord>,
    /// The deployment envelope, when one was given.
    pub(crate) envelope: Option<Envelope>,
    /// The SOPs that passed every SOP rule, sorted by id (empty unless [`Sources::sops`] was
    /// given).
    pub(crate) sops: Vec<Sop>,
    /// Remarks that are not errors (a skipped rule, say).
    pub(crate) notes: Vec<String>,
    /// The warnings and notes the rules reported about the accepted files (a reviewed
    /// credential exemption, a script endpoint without a runtime), in file order.
    pub(crate) remarks: Diagnostics,
}

impl Registry {
    /// The records, sorted by tool id.
    pub fn records(&self) -> &[ToolRecord] {
        &self.records
    }

    /// The records, sorted by tool id, taken out of the registry.
    pub fn into_records(self) -> Vec<ToolRecord> {
        self.records
    }

    /// The deployment envelope, when one was given.
    pub fn envelope(&self) -> Option<&Envelope> {
        self.envelope.as_ref()
    }

    /// The SOPs that passed every SOP rule, sorted by id (empty unless [`Sources::sops`] was
    /// given).
    pub fn sops(&self) -> &[Sop] {
        &self.sops
    }

    /// Remarks that are not errors (a skipped rule, say).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The warnings and notes the rules reported about the accepted files (a reviewed
    /// credential exemption, a script endpoint without a runtime), in file order.
    pub fn remarks(&self) -> &Diagnostics {
        &self.remarks
    }

    /// The record of `tool_id`.
    pub fn get(&self, tool_id: &str) -> Option<&ToolRecord> {
        self.records
            .binary_search_by(|r| r.tool_id.as_str().cmp(tool_id))
            .ok()
            .map(|i| &self.records[i])
    }

    /// The SOP `sop_id`.
    pub fn sop(&self, sop_id: &str) -> Option<&Sop> {
        self.sops.iter().find(|s| s.sop_id == sop_id)
    }
}

/// Check everything `sources` names by every rule that needs no policy, every problem of every
/// file kept; a later stage (the Cedar binding) adds its own with [`Checked::report`] before
/// [`Checked::finish`].
pub fn check(sources: &Sources) -> Checked {
    let mut diags = Diagnostics::new();
    let mut notes = Vec::new();

    let envelope = match &sources.envelope {
        _ if sources.envelope_text.is_some() => {
            match sources.envelope_text.as_ref().map(Envelope::parse) {
                Some(Ok(e)) => Some(e),
                Some(Err(d)) => {
                    diags.extend(d);
                    None
                }
                None => None,
            }
        }
        Some(path) => match Envelope::load(path) {
            Ok(e) => Some(e),
            Err(d) => {
                diags.extend(d);
                None
            }
        },
        None => {
            notes.push(format!(
                "no envelope given: the rules `{}`, `{}` and `{}` were skipped",
                Rule::EgressEnvelope.id(),
                Rule::EndpointImageSource.id(),
                Rule::ReadOnlyEnvelope.id()
            ));
            None
        }
    };

    let mut files = Vec::new();
    for path in &sources.records {
        match read_record_files(path) {
            Ok(f) => files.extend(f),
            Err(d) => diags.push(*d),
        }
    }
    files.extend(sources.record_texts.iter().cloned());

    let bins = workspace_bins(sources);

    let ctx = record_check::Context {
        envelope: envelope.as_ref(),
        bins: &bins,
    };
    let (records, record_diags) = check_records(&files, &ctx);
    diags.extend(record_diags);

    let mut sops = Vec::new();
    if !sources.sops.is_empty() || !sources.sop_texts.is_empty() {
        // Ids of record files that failed their own rules: an SOP naming one is not reported
        // as naming an unknown tool (the record's problems are reported).
        let failed: std::collections::BTreeSet<String> = files
            .iter()
            .filter_map(|f| serde_json::from_str::<serde_json::Value>(&f.text).ok())
            .filter_map(|v| {
                ["tool_id", "name"].iter().find_map(|k| {
                    v.get(*k)
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_string)
                })
            })
            .filter(|id| !records.iter().any(|r| &r.tool_id == id))
            .collect();
        let mut sop_files = Vec::new();
        for path in &sources.sops {
            match crate::files::read_files(path) {
                Ok(f) => sop_files.extend(f),
                Err(d) => diags.extend(d),
            }
        }
        sop_files.extend(sources.sop_texts.iter().cloned());
        let (checked, sop_diags) = check_with_records(&sop_files, &records, failed);
        diags.extend(sop_diags);
        sops = checked;
    }

    Checked {
        records,
        envelope,
        sops,
        notes,
        record_files: files,
        diags,
    }
}

/// Check everything `sources` names by every rule that needs no policy ([`check`]), the
/// policies left unread.
///
/// # Errors
/// Every problem found, in every file, as [`Diagnostics`].
pub fn load(sources: &Sources) -> Result<Registry, Diagnostics> {
    check(sources).finish()
}

/// What [`check`] found: the records and SOPs that passed, the record files read, and every
/// problem reported so far.
#[derive(Debug)]
pub struct Checked {
    records: Vec<ToolRecord>,
    envelope: Option<Envelope>,
    sops: Vec<Sop>,
    notes: Vec<String>,
    record_files: Vec<SourceFile>,
    diags: Diagnostics,
}

impl Checked {
    /// The records that passed their rules, sorted by tool id.
    pub fn records(&self) -> &[ToolRecord] {
        &self.records
    }

    /// The record files read (for placing a later stage's diagnostics).
    pub fn record_files(&self) -> &[SourceFile] {
        &self.record_files
    }

    /// Whether an error was reported.
    pub fn has_errors(&self) -> bool {
        self.diags.has_errors()
    }

    /// Add a later stage's problems (errors, warnings or notes).
    pub fn report(&mut self, diags: Diagnostics) {
        self.diags.extend(diags);
    }

    /// Every problem reported, sorted (for a caller that stops here).
    pub fn into_diagnostics(self) -> Diagnostics {
        let mut diags = self.diags;
        diags.sort();
        diags
    }

    /// The registry, or every problem reported, sorted.
    ///
    /// # Errors
    /// Every problem, when one of them is an error.
    pub fn finish(self) -> Result<Registry, Diagnostics> {
        let mut diags = self.diags;
        diags.sort();
        if diags.has_errors() {
            return Err(diags);
        }
        Ok(Registry {
            records: self.records,
            envelope: self.envelope,
            sops: self.sops,
            notes: self.notes,
            remarks: diags,
        })
    }
}

/// The binaries endpoints may name: those `sources` gives, or those of the workspace they
/// give, else of the one holding the records, else of the one the command runs in.
fn workspace_bins(sources: &Sources) -> WorkspaceBins {
    let root = sources
        .workspace_root
        .clone()
        .or_else(|| {
            sources
                .records
                .first()
                .and_then(|p| WorkspaceBins::find_root(p))
        })
        .or_else(|| {
            std::env::current_dir()
                .ok()
                .and_then(|d| WorkspaceBins::find_root(&d))
        });
    let mut bins = match &sources.workspace_bins {
        Some(names) => WorkspaceBins {
            root: root.clone(),
            names: names.clone(),
            ..WorkspaceBins::default()
        },
        None => root
            .as_deref()
            .map(WorkspaceBins::discover)
            .unwrap_or_default(),
    };
    bins.linked = sources.linked_hosts.clone();
    bins
}

/// One record file checked by its own rules (not the cross-record ones: see
/// [`record_check::check_file`]) against the envelope and the workspace `sources` give; the
/// records `sources` names are not read.
///
/// # Errors
/// The envelope's diagnostics, or the record's.
pub fn check_record(sources: &Sources, file: &SourceFile) -> Result<ToolRecord, Diagnostics> {
    let envelope = match (&sources.envelope_text, &sources.envelope) {
        (Some(text), _) => Some(Envelope::parse(text)?),
        (None, Some(path)) => Some(Envelope::load(path)?),
        (None, None) => None,
    };
    let bins = workspace_bins(sources);
    let ctx = record_check::Context {
        envelope: envelope.as_ref(),
        bins: &bins,
    };
    record_check::check_file(file, &ctx)
}

/// Check record files against every per-record and cross-record rule.
///
/// Returns the records that passed (sorted by id) and every problem found.
pub fn check_records(
    files: &[SourceFile],
    ctx: &record_check::Context<'_>,
) -> (Vec<ToolRecord>, Diagnostics) {
    let (mut records, mut diags) = record_check::check_all(files, ctx);
    let (names, failed) = rust_names::check_tools(files, &records);
    diags.extend(names);
    records.retain(|r| !failed.contains(&r.tool_id));
    (records, diags)
}

fn read_record_files(path: &Path) -> Result<Vec<SourceFile>, Box<Diagnostic>> {
    let read = |p: &Path| {
        fs::read_to_string(p)
            .map(|t| SourceFile::new(p, t))
            .map_err(|e| Box::new(Diagnostic::file(Rule::Io, p, format!("cannot read: {e}"))))
    };
    if path.is_dir() {
        list_files(path, &["json"])
            .iter()
            .map(|p| read(p))
            .collect()
    } else if path.exists() {
        Ok(vec![read(path)?])
    } else {
        Err(Box::new(Diagnostic::file(
            Rule::Missing,
            path,
            "no such file or directory",
        )))
    }
}

/// The texts of a policies directory: its `*.cedarschema` and its `*.cedar` files.
#[derive(Debug, Clone, Default)]
pub struct PolicyFiles {
    /// The user's `.cedarschema` files, sorted by name.
    pub schemas: Vec<SourceFile>,
    /// The `.cedar` policy files, sorted by name.
    pub policies: Vec<SourceFile>,
}

impl PolicyFiles {
    /// Read every `*.cedarschema` and `*.cedar` file of `dir`.
    ///
    /// # Errors
    /// [`Rule::Missing`] when `dir` is not a directory, [`Rule::Io`] for every file that cannot
    /// be read.
    pub fn read(dir: &Path) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::new();
        if !dir.is_dir() {
            diags.push(Diagnostic::file(
                Rule::Missing,
                dir,
                "the policies directory does not exist",
            ));
            return Err(diags);
        }
        let mut read = |exts: &[&str]| -> Vec<SourceFile> {
            list_files(dir, exts)
                .into_iter()
                .filter_map(|p| match std::fs::read_to_string(&p) {
                    Ok(t) => Some(SourceFile::new(p, t)),
                    Err(e) => {
                        diags.push(Diagnostic::file(Rule::Io, &p, format!("cannot read: {e}")));
                        None
                    }
                })
                .collect()
        };
        let files = Self {
            schemas: read(&["cedarschema"]),
            policies: read(&["cedar"]),
        };
        if diags.is_empty() {
            Ok(files)
        } else {
            Err(diags)
        }
    }

    /// Add a file by its extension: `.cedarschema` is a schema, anything else a policy file.
    pub fn push(&mut self, src: SourceFile) {
        if src.path.extension().is_some_and(|e| e == "cedarschema") {
            self.schemas.push(src);
        } else {
            self.policies.push(src);
        }
    }
}
