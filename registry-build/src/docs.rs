//! Doc comments from record text, made safe for rustdoc.
//!
//! A record's description is prose for the planner, not Markdown written for rustdoc: an
//! indented line would become a code block (and, in a library, a doctest), a fenced block
//! would be compiled as Rust. Lines are dedented and fences marked `text`.

use proc_macro2::TokenStream;
use quote::quote;

/// `text` made safe as a doc comment: lines dedented, code fences marked `text`, trailing
/// blank lines dropped.
pub(crate) fn doc_text(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            out.push(if in_fence { "```" } else { "```text" }.to_string());
            in_fence = !in_fence;
        } else if in_fence {
            out.push(line.trim_end().to_string());
        } else {
            out.push(trimmed.trim_end().to_string());
        }
    }
    if in_fence {
        out.push("```".to_string());
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out.join("\n")
}

/// `#[doc = " line"]` attributes for every line of `text` (made safe with [`doc_text`]).
pub(crate) fn doc_attrs(text: &str) -> TokenStream {
    let text = doc_text(text);
    let lines = text.lines().map(|l| {
        if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        }
    });
    quote! { #(#[doc = #lines])* }
}

/// The first sentence (or line) of a description, for one-line summaries.
pub(crate) fn summary(text: &str) -> String {
    let text = doc_text(text);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    match first.find(". ") {
        Some(i) => first[..=i].to_string(),
        None => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedents_and_marks_fences() {
        let t = "Scrape a page.\n\n    indented\n```\nfn x() {}\n```\n\n";
        assert_eq!(
            doc_text(t),
            "Scrape a page.\n\nindented\n```text\nfn x() {}\n```"
        );
        assert_eq!(doc_text("open ```"), "open ```");
        assert_eq!(doc_text("```\nunclosed"), "```text\nunclosed\n```");
    }

    #[test]
    fn summary_is_first_sentence() {
        assert_eq!(summary("Scrape a page. Then more."), "Scrape a page.");
        assert_eq!(summary("\nOne line\nTwo"), "One line");
    }
}
