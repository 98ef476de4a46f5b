//! The Rust names the generated code gives registry names, and the registration rule that every
//! one of them exists and is distinct.
//!
//! A tool id becomes a module (`web_search`, raw when it is a keyword: `r#type`) and a `ToolId`
//! variant (`WebSearch`); a Cedar action becomes a marker type in `actions` (`page-read` →
//! `page_read`). `crate`, `self`, `super`, `Self` and `_` cannot be names at all, and the
//! generated file defines the modules [`GENERATED_MODULES`] beside the tool modules. The rules
//! [`Rule::ToolIdRustName`] and [`Rule::RustNameUnique`] reject such ids at registration, with
//! the file and line, so `escepine check` reports them and a build never fails on them later.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::record::ToolRecord;
use crate::rule::Rule;

/// Keywords (strict, reserved, and edition-dependent) that need the `r#` prefix.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let",
    "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return",
    "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use",
    "virtual", "where", "while", "yield",
];

/// Names no identifier can take, not even raw.
const UNUSABLE: &[&str] = &["self", "Self", "super", "crate", "_"];

/// The modules the generated file defines beside the tool modules.
pub const GENERATED_MODULES: &[&str] = &["actions", "error", "sops"];

/// A Rust identifier for a registry name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RustName {
    /// The identifier without `r#`.
    pub name: String,
    /// Whether it must be written raw (`r#type`).
    pub raw: bool,
}

/// The identifier for `name` (raw when it is a keyword), or why there is none.
///
/// # Errors
/// A text saying why: not an identifier, or a name that can never be one.
pub fn ident(name: &str) -> Result<RustName, String> {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("`{name}` is not a Rust identifier"));
    }
    if UNUSABLE.contains(&name) {
        return Err(format!(
            "`{name}` cannot be a Rust name (not even as `r#{name}`)"
        ));
    }
    Ok(RustName {
        name: name.to_string(),
        raw: KEYWORDS.contains(&name),
    })
}

/// `firecrawl_scrape` → `FirecrawlScrape`; `read-only` → `ReadOnly`.
pub fn upper_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
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

/// The marker-type name of a Cedar action id: `-` becomes `_` (`read-only` → `read_only`).
pub fn action_marker(id: &str) -> String {
    id.replace('-', "_")
}

/// The field of the typed client's `Files` struct for workspace input `name` (a valid input
/// name): lower case, `.` and `-` as `_`, `file_` before a leading digit, `_` after a name no
/// identifier can take (`self` → `self_`); a keyword stays itself and is written raw.
pub fn input_field(name: &str) -> String {
    let mut field: String = name
        .chars()
        .map(|c| match c {
            '.' | '-' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    if field.starts_with(|c: char| c.is_ascii_digit()) {
        field.insert_str(0, "file_");
    }
    if UNUSABLE.contains(&field.as_str()) {
        field.push('_');
    }
    field
}

/// Why tool id `id` cannot be the name of a generated module, if it cannot.
pub fn tool_id_problem(id: &str) -> Option<String> {
    if GENERATED_MODULES.contains(&id) {
        return Some(format!(
            "tool id `{id}` clashes with the generated module `{id}`"
        ));
    }
    if let Err(e) = ident(id) {
        return Some(format!("tool id {e}"));
    }
    ident(&upper_camel(id))
        .err()
        .map(|e| format!("tool id `{id}`: its `ToolId` variant {e}"))
}

/// Groups of distinct names that map to one Rust name, sorted by that name.
pub fn clashes<'a>(
    pairs: impl IntoIterator<Item = (String, &'a str)>,
) -> Vec<(String, Vec<&'a str>)> {
    let mut map: BTreeMap<String, Vec<&'a str>> = BTreeMap::new();
    for (key, id) in pairs {
        let ids = map.entry(key).or_default();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    map.into_iter().filter(|(_, ids)| ids.len() > 1).collect()
}

/// The rules over tool ids: every id a usable module and variant name
/// ([`Rule::ToolIdRustName`]), no two ids one `ToolId` variant ([`Rule::RustNameUnique`]).
///
/// `files` are the record files read (for lines). Returns the diagnostics and the ids that
/// broke a rule.
pub(crate) fn check_tools(
    files: &[SourceFile],
    records: &[ToolRecord],
) -> (Diagnostics, BTreeSet<String>) {
    let mut diags = Diagnostics::new();
    let mut failed = BTreeSet::new();
    let at_id = |rule: Rule, record: &ToolRecord, message: String| -> Diagnostic {
        let help = "rename the tool: the generated code names it by its id";
        match source_of(files, &record.source) {
            Some(src) => {
                let key = if src.text.contains("\"tool_id\"") {
                    "/tool_id"
                } else {
                    "/name"
                };
                Diagnostic::at(rule, src, key, message).help(help)
            }
            None => Diagnostic::file(rule, &record.source, message).help(help),
        }
    };
    for r in records {
        if let Some(problem) = tool_id_problem(&r.tool_id) {
            diags.push(at_id(Rule::ToolIdRustName, r, problem));
            failed.insert(r.tool_id.clone());
        }
    }
    for (camel, ids) in clashes(
        records
            .iter()
            .map(|r| (upper_camel(&r.tool_id), r.tool_id.as_str())),
    ) {
        let listed = quoted(&ids);
        for r in records.iter().filter(|r| ids.contains(&r.tool_id.as_str())) {
            diags.push(at_id(
                Rule::RustNameUnique,
                r,
                format!("tool ids {listed} all map to the Rust name `ToolId::{camel}`"),
            ));
            failed.insert(r.tool_id.clone());
        }
    }
    (diags, failed)
}

/// The rules over Cedar actions (the records' and the `.cedarschema`'s): each has a marker type
/// ([`Rule::ToolIdRustName`]), no two the same one ([`Rule::RustNameUnique`]).
///
/// `files` are the record files read, `schema_files` the user's `.cedarschema` files (for
/// where an action is declared); `actions` are the ids of every action the binding declares.
pub fn check_actions(
    files: &[SourceFile],
    records: &[ToolRecord],
    actions: &[&str],
    schema_files: &[SourceFile],
) -> Diagnostics {
    let mut diags = Diagnostics::new();
    for id in actions {
        if let Err(e) = ident(&action_marker(id)) {
            diags.push(action_diag(
                Rule::ToolIdRustName,
                id,
                records,
                files,
                schema_files,
                format!(
                    "Cedar action `{id}` has no marker type (`actions::{}`): {e}",
                    action_marker(id)
                ),
            ));
        }
    }
    for (marker, ids) in clashes(actions.iter().map(|id| (action_marker(id), *id))) {
        let listed = quoted(&ids);
        for id in &ids {
            diags.push(action_diag(
                Rule::RustNameUnique,
                id,
                records,
                files,
                schema_files,
                format!("Cedar actions {listed} all map to the marker type `actions::{marker}`"),
            ));
        }
    }
    diags
}

/// A diagnostic about action `id`, placed where it is written: an `action_groups` entry of a
/// record, a declaration of a `.cedarschema`, or the record whose own action it is.
fn action_diag(
    rule: Rule,
    id: &str,
    records: &[ToolRecord],
    files: &[SourceFile],
    schema_files: &[SourceFile],
    message: String,
) -> Diagnostic {
    let help = "rename one of them: each action has a marker type named after it";
    for r in records {
        if let Some(i) = r.action_groups.iter().position(|g| g == id) {
            if let Some(src) = source_of(files, &r.source) {
                return Diagnostic::at(rule, src, &format!("/action_groups/{i}"), message)
                    .help(help);
            }
        }
    }
    let quoted_id = format!("\"{id}\"");
    for src in schema_files {
        let found = src
            .text
            .find(&quoted_id)
            .map(|i| (i, i + quoted_id.len()))
            .or_else(|| find_word(&src.text, id).map(|i| (i, i + id.len())));
        if let Some(span) = found {
            return Diagnostic::at_span(rule, src, Some(span), message).help(help);
        }
    }
    match records.iter().find(|r| r.cedar_action == id) {
        Some(r) => match source_of(files, &r.source) {
            Some(src) => Diagnostic::at(rule, src, "/tool_id", message).help(help),
            None => Diagnostic::file(rule, &r.source, message).help(help),
        },
        None => Diagnostic::file(rule, Path::new("<cedar schema>"), message).help(help),
    }
}

fn source_of<'a>(files: &'a [SourceFile], path: &Path) -> Option<&'a SourceFile> {
    files.iter().find(|f| f.path == path)
}

/// The byte offset of `word` in `text` as a whole word (not inside a longer name).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back().is_none_or(|c| !is_name(c));
        let after = text[i + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_name(c));
        before && after
    })
}

fn quoted(ids: &[&str]) -> String {
    ids.iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_become_raw_and_specials_fail() {
        assert_eq!(
            ident("type"),
            Ok(RustName {
                name: "type".into(),
                raw: true
            })
        );
        assert!(!ident("scrape").is_ok_and(|n| n.raw));
        assert!(ident("self").is_err());
        assert!(ident("crate").is_err());
        assert!(ident("a-b").is_err());
        assert!(ident("1a").is_err());
    }

    #[test]
    fn camel_case_and_markers() {
        assert_eq!(upper_camel("firecrawl_scrape"), "FirecrawlScrape");
        assert_eq!(upper_camel("web_search2"), "WebSearch2");
        assert_eq!(upper_camel("a_2b"), "A2b");
        assert_eq!(action_marker("page-read"), "page_read");
    }

    #[test]
    fn reserved_module_names_and_specials_are_problems() {
        for id in ["actions", "error", "sops", "crate", "self", "super"] {
            assert!(tool_id_problem(id).is_some(), "{id}");
        }
        assert!(tool_id_problem("type").is_none());
        assert!(tool_id_problem("web_search").is_none());
    }

    #[test]
    fn clashes_group_distinct_names() {
        let c = clashes([
            ("AB1".to_string(), "a_b1"),
            ("AB1".to_string(), "a_b_1"),
            ("C".to_string(), "c"),
            ("C".to_string(), "c"),
        ]);
        assert_eq!(c, vec![("AB1".to_string(), vec!["a_b1", "a_b_1"])]);
    }
}
