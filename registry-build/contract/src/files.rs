//! Workspace inputs: files a caller gives a call, which the sandbox places read-only at
//! `/workspace/<name>` before the tool starts.
//!
//! A record declares them in `sandbox_profile.workspace_inputs`
//! (`[{"name": "changelog", "max_bytes": 65536}]`); a caller gives them as [`WorkspaceFiles`]
//! (the command line's `--file NAME=PATH`, the typed client's `files` argument). The runtime
//! checks the given files against the declaration before the call's intent, whose evidence
//! holds each file's name, size and SHA-256.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The largest `max_bytes` a record may declare for its workspace inputs together (16 MiB):
/// the files of a call travel to the sandbox with the call and count against its workspace's
/// size.
pub const MAX_WORKSPACE_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Where the sandbox places workspace inputs: `/workspace/<name>`.
pub const WORKSPACE_DIR: &str = "/workspace";

/// Why `name` cannot name a workspace input, if it cannot: one to 64 ASCII letters, digits,
/// `.`, `_` or `-`, starting with a letter or digit (so never `.`, `..`, a hidden file or a
/// path).
pub fn input_name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 64 {
        return Some(format!(
            "`{name}` is not a workspace input name: it must have 1 to 64 characters"
        ));
    }
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if first_ok && rest_ok {
        None
    } else {
        Some(format!(
            "`{}` is not a workspace input name: use ASCII letters, digits, `.`, `_` and `-`, \
             starting with a letter or a digit (a file name, never a path)",
            name.escape_debug()
        ))
    }
}

/// One declared workspace input of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceInput {
    /// The file's name in `/workspace`.
    pub name: String,
    /// The largest file a caller may give, in bytes (1 to [`MAX_WORKSPACE_INPUT_BYTES`]).
    pub max_bytes: u64,
    /// Whether every call must give it (the default); an optional input may be left out.
    pub required: bool,
}

/// The contents of one workspace file, shared cheaply between attempts.
#[derive(Clone, PartialEq, Eq)]
pub struct WorkspaceFile {
    bytes: Arc<[u8]>,
}

impl WorkspaceFile {
    /// A file with these bytes.
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            bytes: bytes.into(),
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The size in bytes.
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl fmt::Debug for WorkspaceFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorkspaceFile({} bytes)", self.bytes.len())
    }
}

impl From<Vec<u8>> for WorkspaceFile {
    fn from(bytes: Vec<u8>) -> Self {
        Self::new(bytes)
    }
}

impl From<&[u8]> for WorkspaceFile {
    fn from(bytes: &[u8]) -> Self {
        Self::new(bytes)
    }
}

impl From<String> for WorkspaceFile {
    fn from(text: String) -> Self {
        Self::new(text.into_bytes())
    }
}

impl From<&str> for WorkspaceFile {
    fn from(text: &str) -> Self {
        Self::new(text.as_bytes())
    }
}

/// The workspace files a caller gives one call, by name (sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceFiles {
    files: BTreeMap<String, WorkspaceFile>,
}

impl WorkspaceFiles {
    /// No files.
    pub const fn new() -> Self {
        Self {
            files: BTreeMap::new(),
        }
    }

    /// These files and `file` as `name` (replacing a file of that name).
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, file: impl Into<WorkspaceFile>) -> Self {
        self.insert(name, file);
        self
    }

    /// Give `file` as `name`; returns the file it replaces.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        file: impl Into<WorkspaceFile>,
    ) -> Option<WorkspaceFile> {
        self.files.insert(name.into(), file.into())
    }

    /// The file given as `name`.
    pub fn get(&self, name: &str) -> Option<&WorkspaceFile> {
        self.files.get(name)
    }

    /// Every file, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &WorkspaceFile)> {
        self.files.iter().map(|(n, f)| (n.as_str(), f))
    }

    /// Whether no file is given.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// How many files are given.
    pub fn len(&self) -> usize {
        self.files.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_file_names_never_paths() {
        for ok in ["changelog", "CHANGELOG.md", "a", "notes_2-1.txt", "0"] {
            assert_eq!(input_name_problem(ok), None, "{ok}");
        }
        let long = "x".repeat(65);
        for bad in [
            "", ".", "..", ".hidden", "a/b", "../etc", "/abs", "-flag", "a b", "é", "a\0b", &long,
        ] {
            assert!(input_name_problem(bad).is_some(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn files_are_kept_by_name_and_replaced() {
        let mut files = WorkspaceFiles::new().with("b", "two").with("a", "one");
        assert_eq!(files.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["a", "b"]);
        let old = files.insert("a", vec![1u8, 2, 3]);
        assert_eq!(old.map(|f| f.bytes().to_vec()), Some(b"one".to_vec()));
        assert_eq!(files.get("a").map(WorkspaceFile::len), Some(3));
        assert_eq!(files.len(), 2);
    }
}
