//! Reading, naming and strictly validating the `.cedar` policy files.
//!
//! Each file is parsed and validated on its own, so every error's label is an offset into that
//! file's text and the diagnostic shows its line and caret. A policy's id is its `@id("…")`
//! annotation, else `<file name>:<n>` (`n` its 0-based index in the file); ids are unique
//! across all files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use cedar_policy::{Policy, PolicyId, PolicySet, Schema, Template, ValidationMode, Validator};

use crate::cedar::enum_literals::EnumScope;
use crate::cedar::report;
use escepine_registry::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use escepine_registry::locate;
use escepine_registry::rule::Rule;

/// Where a policy was written, for evidence and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOrigin {
    /// The policy id (`@id("…")` or `<file name>:<n>`).
    pub id: String,
    /// The file.
    pub file: PathBuf,
    /// The 0-based index of the policy in its file.
    pub index: usize,
    /// The 1-based line where the policy starts, when found.
    pub line: Option<usize>,
    /// Whether it is a template (with slots) rather than a static policy.
    pub template: bool,
}

/// The policies of every file, validated; problems are pushed to `diags`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Loaded {
    /// Every policy (and template) with its final id.
    pub set: PolicySet,
    /// Where each came from, in file then source order.
    pub origins: Vec<PolicyOrigin>,
    /// Validation warnings, rendered `file:line:col: message`.
    pub warnings: Vec<String>,
}

/// One parsed policy or template.
enum Item {
    Policy(Policy),
    Template(Template),
}

struct Entry {
    index: usize,
    item: Item,
    span: Option<(usize, usize)>,
}

/// Parse every file (sorted), name every policy, and validate each file in strict mode
/// against `schema` when there is one (no schema: the schema itself failed; parse only); then
/// check the enum literals ([`EnumScope`]) of every policy that validated.
pub(crate) fn load(
    files: &[SourceFile],
    schema: Option<&Schema>,
    enums: Option<&EnumScope>,
    diags: &mut Diagnostics,
) -> Loaded {
    let mut loaded = Loaded::default();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let validator = schema.map(|s| Validator::new(s.clone()));
    for src in files {
        let path = &src.path;
        let Some(entries) = parse_file(src, diags) else {
            continue;
        };
        let mut file_set = PolicySet::new();
        let mut spans: BTreeMap<String, Option<(usize, usize)>> = BTreeMap::new();
        for entry in entries {
            let Some(id) = policy_id(src, &entry, diags) else {
                continue;
            };
            let line = entry
                .span
                .map(|(start, _)| locate::line_col(src.text.as_str(), start).0);
            let here = match line {
                Some(l) => format!("{}:{l}", path.display()),
                None => path.display().to_string(),
            };
            if let Some(first) = seen.get(&id) {
                diags.push(
                    Diagnostic::at_span(
                        Rule::PolicyId,
                        src,
                        id_span(src.text.as_str(), entry.span),
                        format!("policy id `{id}` is already used by the policy at {first}"),
                    )
                    .help("give each policy a distinct `@id(\"…\")`"),
                );
                continue;
            }
            let pid = PolicyId::new(&id);
            let (added, template) = match &entry.item {
                Item::Policy(p) => (file_set.add(p.new_id(pid)), false),
                Item::Template(t) => (file_set.add_template(t.new_id(pid)), true),
            };
            if let Err(e) = added {
                diags.push(Diagnostic::at_span(
                    Rule::PolicyId,
                    src,
                    entry.span,
                    format!("policy `{id}` cannot join the policy set: {e}"),
                ));
                continue;
            }
            seen.insert(id.clone(), here);
            spans.insert(id.clone(), entry.span);
            loaded.origins.push(PolicyOrigin {
                id,
                file: path.clone(),
                index: entry.index,
                line,
                template,
            });
        }
        if let Some(validator) = &validator {
            let result = validator.validate(&file_set, ValidationMode::Strict);
            let mut invalid = std::collections::BTreeSet::new();
            for e in result.validation_errors() {
                invalid.insert(e.policy_id().to_string());
                let mut d = report::from_cedar(Rule::PolicyValidation, src, e);
                let id = e.policy_id().to_string();
                if !d.message.contains(&format!("`{id}`")) {
                    d.message = format!("policy `{id}`: {}", d.message);
                }
                diags.push(d);
            }
            for w in result.validation_warnings() {
                let d = report::from_cedar(Rule::PolicyValidation, src, w);
                loaded
                    .warnings
                    .push(format!("{}: warning: {}", d.location(), d.message));
            }
            if let Some(enums) = enums {
                for p in file_set.policies() {
                    let id = p.id().to_string();
                    if !invalid.contains(&id) {
                        enums.check(p, src, spans.get(&id).copied().flatten(), diags);
                    }
                }
            }
        }
        merge_into(&mut loaded.set, file_set, src, diags);
    }
    loaded
}

/// Parse one file into its policies and templates in source order (`None` after syntax errors,
/// each reported).
fn parse_file(src: &SourceFile, diags: &mut Diagnostics) -> Option<Vec<Entry>> {
    let parsed = match PolicySet::from_str(&src.text) {
        Ok(p) => p,
        Err(errs) => {
            for e in errs.iter() {
                diags.push(report::from_cedar(Rule::PolicySyntax, src, e));
            }
            return None;
        }
    };
    // The parser names the n-th statement `policy<n>`.
    let index_of = |id: &PolicyId| id.to_string().strip_prefix("policy")?.parse::<usize>().ok();
    let mut entries: Vec<(usize, Item)> = Vec::new();
    for p in parsed.policies() {
        entries.push((
            index_of(p.id()).unwrap_or(usize::MAX),
            Item::Policy(p.clone()),
        ));
    }
    for t in parsed.templates() {
        entries.push((
            index_of(t.id()).unwrap_or(usize::MAX),
            Item::Template(t.clone()),
        ));
    }
    entries.sort_by_key(|(i, _)| *i);
    // Policies are found in the text in order; each search starts after the previous one.
    let mut cursor = 0;
    Some(
        entries
            .into_iter()
            .enumerate()
            .map(|(position, (index, item))| {
                let text = match &item {
                    Item::Policy(p) => p.to_string(),
                    Item::Template(t) => t.to_string(),
                };
                let span = src
                    .text
                    .get(cursor..)
                    .and_then(|rest| rest.find(&text))
                    .map(|at| {
                        let start = cursor + at;
                        cursor = start + text.len();
                        (start, text.len())
                    });
                Entry {
                    index: if index == usize::MAX { position } else { index },
                    item,
                    span,
                }
            })
            .collect(),
    )
}

/// The id of a policy: its `@id` annotation, else `<file name>:<n>`; `None` (reported) for an
/// empty `@id`.
fn policy_id(src: &SourceFile, entry: &Entry, diags: &mut Diagnostics) -> Option<String> {
    let annotation = match &entry.item {
        Item::Policy(p) => p.annotation("id"),
        Item::Template(t) => t.annotation("id"),
    };
    match annotation {
        Some(id) if id.trim().is_empty() => {
            diags.push(
                Diagnostic::at_span(
                    Rule::PolicyId,
                    src,
                    id_span(&src.text, entry.span),
                    "empty policy id `@id(\"\")`",
                )
                .help("name the policy, or drop the annotation to get `<file>:<n>`"),
            );
            None
        }
        Some(id) => Some(id.to_string()),
        None => Some(format!("{}:{}", file_name(&src.path), entry.index)),
    }
}

/// The file's name (its last component) as ids spell it.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The span of the `@id(…)` annotation inside a policy's span, else the policy's.
fn id_span(text: &str, policy: Option<(usize, usize)>) -> Option<(usize, usize)> {
    let (start, len) = policy?;
    let body = text.get(start..start + len)?;
    let Some(at) = body.find("@id") else {
        return Some((start, len));
    };
    let end = body[at..].find(')').map_or(3, |e| e + 1);
    Some((start + at, end))
}

/// Add a file's (validated, uniquely named) policies to the whole set.
fn merge_into(all: &mut PolicySet, file_set: PolicySet, src: &SourceFile, diags: &mut Diagnostics) {
    for t in file_set.templates() {
        if let Err(e) = all.add_template(t.clone()) {
            diags.push(Diagnostic::file(Rule::PolicyId, &src.path, e.to_string()));
        }
    }
    for p in file_set.policies() {
        if let Err(e) = all.add(p.clone()) {
            diags.push(Diagnostic::file(Rule::PolicyId, &src.path, e.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> (Vec<Entry>, Diagnostics) {
        let mut diags = Diagnostics::new();
        let src = SourceFile::new("p.cedar", text);
        let e = parse_file(&src, &mut diags).unwrap_or_default();
        (e, diags)
    }

    #[test]
    fn ids_and_spans_in_source_order() {
        let text = "permit(principal, action, resource);\n\n@id(\"b\")\nforbid(principal, action, resource);\n";
        let (es, diags) = entries(text);
        assert!(diags.is_empty());
        assert_eq!(es.len(), 2);
        assert_eq!(es[0].index, 0);
        assert_eq!(es[0].span, Some((0, 36)));
        assert_eq!(es[1].index, 1);
        let (s, l) = es[1].span.expect("found");
        assert!(text[s..s + l].starts_with("@id(\"b\")"));
        let src = SourceFile::new("dir/p.cedar", text);
        let mut d = Diagnostics::new();
        assert_eq!(
            policy_id(&src, &es[0], &mut d).as_deref(),
            Some("p.cedar:0")
        );
        assert_eq!(policy_id(&src, &es[1], &mut d).as_deref(), Some("b"));
        assert_eq!(id_span(text, es[1].span), Some((s, 8)));
    }

    #[test]
    fn identical_policies_get_distinct_spans() {
        let text = "permit(principal, action, resource);\npermit(principal, action, resource);\n";
        let (es, _) = entries(text);
        assert_eq!(es[0].span, Some((0, 36)));
        assert_eq!(es[1].span, Some((37, 36)));
    }

    #[test]
    fn syntax_errors_are_all_reported() {
        let (_, diags) = entries("permit(principal, action, resource) when { context.x == };\nforbid(principal action, resource);\n");
        assert!(diags.len() >= 2, "{diags}");
        assert!(diags
            .iter()
            .all(|d| d.rule == Rule::PolicySyntax && d.span.is_some()));
    }

    #[test]
    fn empty_id_is_refused() {
        let text = "@id(\"\")\npermit(principal, action, resource);\n";
        let (es, _) = entries(text);
        let mut d = Diagnostics::new();
        assert_eq!(
            policy_id(&SourceFile::new("p.cedar", text), &es[0], &mut d),
            None
        );
        assert!(d.has(Rule::PolicyId));
    }
}
