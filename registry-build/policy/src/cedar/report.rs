//! Turning Cedar's errors (miette diagnostics with labels into the parsed text) into
//! [`Diagnostic`]s that name the file, line and column, with a caret.

use miette::LabeledSpan;

use escepine_registry::diagnostic::{Diagnostic, SourceFile};
use escepine_registry::rule::Rule;

/// A diagnostic for one Cedar error whose labels are offsets into `src`'s text.
///
/// The primary label (or the first) gives the span; a label that does not fit in the text is
/// dropped rather than trusted.
pub(crate) fn from_cedar(rule: Rule, src: &SourceFile, err: &dyn miette::Diagnostic) -> Diagnostic {
    let labels: Vec<LabeledSpan> = err.labels().map(Iterator::collect).unwrap_or_default();
    let primary = labels
        .iter()
        .find(|l| l.primary())
        .or_else(|| labels.first());
    let span = primary
        .map(|l| (l.offset(), l.len()))
        .filter(|(offset, len)| fits(&src.text, *offset, *len));
    let mut message = err.to_string();
    if let Some(label) = primary.and_then(LabeledSpan::label) {
        if !label.is_empty() && !message.contains(label) {
            message = format!("{message} ({label})");
        }
    }
    let d = Diagnostic::at_span(rule, src, span, message);
    match err.help() {
        Some(help) => d.help(help.to_string()),
        None => d,
    }
}

/// One diagnostic for `err` and one for each error it relates (Cedar reports several parse
/// errors of one text as the first plus related ones).
pub(crate) fn from_cedar_all(
    rule: Rule,
    src: &SourceFile,
    err: &dyn miette::Diagnostic,
) -> Vec<Diagnostic> {
    let mut out = vec![from_cedar(rule, src, err)];
    if let Some(related) = err.related() {
        out.extend(related.map(|r| from_cedar(rule, src, r)));
    }
    out
}

/// Whether `(offset, len)` lies within `text` on character boundaries.
fn fits(text: &str, offset: usize, len: usize) -> bool {
    offset.checked_add(len).is_some_and(|end| {
        end <= text.len() && text.is_char_boundary(offset) && text.is_char_boundary(end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_outside_the_text_are_dropped() {
        assert!(fits("abc", 0, 3));
        assert!(!fits("abc", 2, 2));
        assert!(!fits("é", 1, 0));
        assert!(!fits("abc", usize::MAX, 2));
    }
}
