//! Listing the source files of a directory (records, policies, SOPs).

use std::fs;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::rule::Rule;

/// The files of `dir` with one of `exts`, sorted by name (nothing when `dir` cannot be read).
pub fn list_files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| exts.contains(&e))
        })
        .collect();
    v.sort();
    v
}

/// Read the JSON files of a directory (`*.json`, sorted) or one file: every file that cannot
/// be read, and a missing path, as diagnostics.
pub fn read_files(path: &Path) -> Result<Vec<SourceFile>, Diagnostics> {
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
