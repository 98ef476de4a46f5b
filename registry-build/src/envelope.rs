//! The deployment envelope: the hosts any tool may ever reach.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::egress::EgressEntry;
use crate::rule::Rule;

/// A deployment envelope (`{ "egress": [entries] }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The file it came from.
    pub source: PathBuf,
    /// The admitted entries.
    pub egress: Vec<EgressEntry>,
}

impl Envelope {
    /// Read and check an envelope file.
    ///
    /// # Errors
    /// Every problem of the file.
    pub fn load(path: &Path) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::new();
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                diags.push(Diagnostic::file(
                    Rule::Missing,
                    path,
                    format!("cannot read the envelope: {e}"),
                ));
                return Err(diags);
            }
        };
        let src = SourceFile::new(path, text);
        match Self::parse(&src) {
            Ok(e) => Ok(e),
            Err(d) => Err(d),
        }
    }

    /// Check an envelope given as text.
    ///
    /// # Errors
    /// Every problem of the text.
    pub fn parse(src: &SourceFile) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::new();
        let value: Value = match serde_json::from_str(&src.text) {
            Ok(v) => v,
            Err(e) => {
                let offset = crate::record_check::offset_of(&src.text, e.line(), e.column());
                diags.push(Diagnostic::at_span(
                    Rule::JsonSyntax,
                    src,
                    Some((offset, 1)),
                    format!("not valid JSON: {e}"),
                ));
                return Err(diags);
            }
        };
        let Some(obj) = value.as_object() else {
            diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                "",
                "the envelope must be an object `{ \"egress\": [...] }`",
            ));
            return Err(diags);
        };
        for key in obj.keys().filter(|k| k.as_str() != "egress") {
            diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                &format!("/{key}"),
                format!("unknown field `{key}`; the envelope has only `egress`"),
            ));
        }
        let mut egress = Vec::new();
        match obj.get("egress").map(|e| e.as_array()) {
            Some(Some(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let ptr = format!("/egress/{i}");
                    match item.as_str().map(str::parse::<EgressEntry>) {
                        Some(Ok(e)) => egress.push(e),
                        Some(Err(e)) => {
                            diags.push(Diagnostic::at(Rule::EgressEntry, src, &ptr, e.to_string()))
                        }
                        None => diags.push(Diagnostic::at(
                            Rule::Envelope,
                            src,
                            &ptr,
                            "an egress entry must be a string",
                        )),
                    }
                }
            }
            Some(None) => diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                "/egress",
                "`egress` must be an array of entries",
            )),
            None => diags.push(Diagnostic::at(
                Rule::Envelope,
                src,
                "",
                "missing field `egress`",
            )),
        }
        if diags.is_empty() {
            Ok(Self {
                source: src.path.clone(),
                egress,
            })
        } else {
            Err(diags)
        }
    }

    /// Whether some envelope entry covers `entry`.
    pub fn covers(&self, entry: &EgressEntry) -> bool {
        self.egress.iter().any(|e| e.covers(entry))
    }
}
