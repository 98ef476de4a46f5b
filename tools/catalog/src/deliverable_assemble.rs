//! `deliverable_assemble`: the final deliverable — Markdown, HTML or JSON — from the sources the
//! SOP passes in, with an evidence index tying each source to the ledger entry that read it.
//!
//! The tool is a pure function of its payload: no network, no file, no clock, no randomness, so
//! the same payload always yields byte-identical output (the program that runs the SOP writes the
//! returned deliverable to disk; the sandbox writes nothing). Sources are numbered from 1 in the
//! order given; `[n]` in the text refers to source `n`.
//!
//! - `include_evidence_index: true`: the content ends with an evidence index (number, source,
//!   ledger entry), and `evidence_index` lists `{n, url, title, ledger_entry}` per source;
//!   `false`: neither (the list is empty).
//! - **Markdown**: title, summary, a numbered source list (title, URL, the excerpt quoted),
//!   the index as a table. Text from the payload is escaped (`\`, `` ` ``, `*`, `_`, `[`, `]`,
//!   `<`, `>`, `|`, `#`, `!`), so a title or excerpt cannot inject links, images, HTML or
//!   table cells; `http`/`https` URLs are written as `<…>` autolinks, re-encoded by the URL
//!   parser, and any other URL as escaped text.
//! - **HTML**: a complete UTF-8 document; all payload text escaped (`&`, `<`, `>`, `"`, `'`);
//!   links only for `http`/`https` URLs (anything else is shown as text, never as `href`).
//! - **JSON**: `{"title", "summary"?, "sources": [{"n", "url", "title", "excerpt",
//!   "ledger_entry"}], "evidence_index"?}`, pretty-printed with fields in that order.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::ToolError;

/// The payload (`tools/records/deliverable_assemble.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The format of the deliverable.
    pub format: Format,
    /// Whether to include the evidence index.
    pub include_evidence_index: bool,
    /// Its title.
    pub title: String,
    /// Its summary (paragraphs separated by blank lines).
    pub summary: Option<String>,
    /// The sources.
    pub sources: Vec<Source>,
}

/// A deliverable format.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Markdown (CommonMark with a GFM table).
    Markdown,
    /// A complete HTML document.
    Html,
    /// JSON.
    Json,
}

/// One source.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Where it was read.
    pub url: String,
    /// Its title.
    pub title: String,
    /// The excerpt used.
    pub excerpt: String,
    /// The hash of the ledger entry that recorded reading it.
    pub ledger_entry: String,
}

/// The output.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Output {
    /// The format, as asked.
    pub format: Format,
    /// The deliverable.
    pub content: String,
    /// Source number → ledger entry (empty without `include_evidence_index`).
    pub evidence_index: Vec<Evidence>,
}

/// One entry of the evidence index.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Evidence {
    /// The source's number.
    pub n: u64,
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// The ledger entry that read it.
    pub ledger_entry: String,
}

/// Assemble the deliverable.
///
/// # Errors
/// None in practice (JSON encoding of plain strings cannot fail); kept for uniformity.
pub fn run(input: Input) -> Result<Output, ToolError> {
    let index: Vec<Evidence> = input
        .sources
        .iter()
        .zip(1u64..)
        .map(|(s, n)| Evidence {
            n,
            url: s.url.clone(),
            title: s.title.clone(),
            ledger_entry: s.ledger_entry.clone(),
        })
        .collect();
    let shown = if input.include_evidence_index {
        index.as_slice()
    } else {
        &[]
    };
    let content = match input.format {
        Format::Markdown => markdown(&input, shown),
        Format::Html => html(&input, shown),
        Format::Json => json(&input, shown)?,
    };
    Ok(Output {
        format: input.format,
        content,
        evidence_index: shown.to_vec(),
    })
}

/// Escape text for Markdown inline context.
pub fn md_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Text on one line (newlines and runs of whitespace become one space).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An `http`/`https` URL as a Markdown autolink; anything else (another scheme, or no URL at
/// all) as escaped text, never as a link.
fn md_url(url: &str) -> String {
    match Url::parse(url) {
        // The serializer percent-encodes spaces, `<`, `>` and controls, so `<…>` cannot break.
        Ok(u) if matches!(u.scheme(), "http" | "https") => format!("<{u}>"),
        _ => md_escape(&one_line(url)),
    }
}

fn markdown(input: &Input, index: &[Evidence]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}", md_escape(&one_line(&input.title)));
    if let Some(summary) = input.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        for para in paragraphs(summary) {
            let _ = write!(out, "\n{}\n", md_escape(&para));
        }
    }
    if !input.sources.is_empty() {
        out.push_str("\n## Sources\n");
        for (s, n) in input.sources.iter().zip(1u64..) {
            let title = one_line(&s.title);
            let title = if title.is_empty() {
                "(untitled)".to_string()
            } else {
                md_escape(&title)
            };
            let _ = write!(out, "\n{n}. **{title}** — {}\n", md_url(&s.url));
            let excerpt = s.excerpt.trim();
            if !excerpt.is_empty() {
                out.push('\n');
                for line in excerpt.lines() {
                    let line = md_escape(line.trim_end());
                    if line.is_empty() {
                        out.push_str("   >\n");
                    } else {
                        let _ = writeln!(out, "   > {line}");
                    }
                }
            }
        }
    }
    if !index.is_empty() {
        out.push_str("\n## Evidence index\n\n| # | Source | Ledger entry |\n|---|---|---|\n");
        for e in index {
            let _ = writeln!(
                out,
                "| {} | {} | `{}` |",
                e.n,
                md_url(&e.url),
                e.ledger_entry.replace(['`', '|'], "")
            );
        }
    }
    out
}

/// Escape text for HTML content and double- or single-quoted attributes.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A link to `url` showing `label` (escaped), or the escaped URL as text if it is not a web URL.
fn html_link(url: &str, label: &str) -> String {
    match Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => format!(
            "<a href=\"{}\">{}</a>",
            html_escape(u.as_str()),
            html_escape(label)
        ),
        _ => format!("<span class=\"url\">{}</span>", html_escape(url)),
    }
}

fn html(input: &Input, index: &[Evidence]) -> String {
    let title = html_escape(&one_line(&input.title));
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n</head>\n<body>\n<article>\n<h1>{title}</h1>\n"
    );
    if let Some(summary) = input.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        for para in paragraphs(summary) {
            let _ = writeln!(out, "<p>{}</p>", html_escape(&para));
        }
    }
    if !input.sources.is_empty() {
        out.push_str("<section id=\"sources\">\n<h2>Sources</h2>\n<ol>\n");
        for (s, n) in input.sources.iter().zip(1u64..) {
            let label = one_line(&s.title);
            let label = if label.is_empty() {
                s.url.as_str()
            } else {
                &label
            };
            let _ = write!(out, "<li id=\"source-{n}\">{}", html_link(&s.url, label));
            let excerpt = s.excerpt.trim();
            if !excerpt.is_empty() {
                let _ = write!(out, "\n<blockquote>{}</blockquote>", html_escape(excerpt));
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ol>\n</section>\n");
    }
    if !index.is_empty() {
        out.push_str(
            "<section id=\"evidence-index\">\n<h2>Evidence index</h2>\n<table>\n\
             <thead><tr><th>#</th><th>Source</th><th>Ledger entry</th></tr></thead>\n<tbody>\n",
        );
        for e in index {
            let _ = writeln!(
                out,
                "<tr><td><a href=\"#source-{n}\">{n}</a></td><td>{}</td><td><code>{}</code></td></tr>",
                html_link(&e.url, &e.url),
                html_escape(&e.ledger_entry),
                n = e.n
            );
        }
        out.push_str("</tbody>\n</table>\n</section>\n");
    }
    out.push_str("</article>\n</body>\n</html>\n");
    out
}

#[derive(Serialize)]
struct JsonDeliverable<'a> {
    title: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
    sources: Vec<JsonSource<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    evidence_index: Option<&'a [Evidence]>,
}

#[derive(Serialize)]
struct JsonSource<'a> {
    n: u64,
    url: &'a str,
    title: &'a str,
    excerpt: &'a str,
    ledger_entry: &'a str,
}

fn json(input: &Input, index: &[Evidence]) -> Result<String, ToolError> {
    let doc = JsonDeliverable {
        title: &input.title,
        summary: input.summary.as_deref(),
        sources: input
            .sources
            .iter()
            .zip(1u64..)
            .map(|(s, n)| JsonSource {
                n,
                url: &s.url,
                title: &s.title,
                excerpt: &s.excerpt,
                ledger_entry: &s.ledger_entry,
            })
            .collect(),
        evidence_index: input.include_evidence_index.then_some(index),
    };
    serde_json::to_string_pretty(&doc)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| ToolError::Permanent(format!("cannot encode the deliverable: {e}")))
}

/// Paragraphs of `text` (split on blank lines), each on one line.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.trim().is_empty() {
            if !cur.is_empty() {
                out.push(one_line(&cur.join(" ")));
                cur.clear();
            }
        } else {
            cur.push(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const H1: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const H2: &str = "2222222222222222222222222222222222222222222222222222222222222222";

    fn input(format: Format, index: bool) -> Input {
        Input {
            format,
            include_evidence_index: index,
            title: "Cedar <policies> & \"you\"".into(),
            summary: Some("First para\nstill first.\n\nSecond *para* [1].".into()),
            sources: vec![
                Source {
                    url: "https://docs.example/a b".into(),
                    title: "A <b>bold</b> | title".into(),
                    excerpt: "Line one <script>alert(1)</script>\nLine two ![img](x)".into(),
                    ledger_entry: H1.into(),
                },
                Source {
                    url: "javascript:alert(1)".into(),
                    title: String::new(),
                    excerpt: String::new(),
                    ledger_entry: H2.into(),
                },
            ],
        }
    }

    #[test]
    fn markdown_escapes_and_indexes() {
        let out = run(input(Format::Markdown, true)).unwrap();
        let md = &out.content;
        assert!(md.starts_with("# Cedar \\<policies\\> & \"you\"\n"), "{md}");
        assert!(md.contains("\nFirst para still first.\n"), "{md}");
        assert!(md.contains("Second \\*para\\* \\[1\\]."), "{md}");
        assert!(
            md.contains("1. **A \\<b\\>bold\\</b\\> \\| title** — <https://docs.example/a%20b>"),
            "{md}"
        );
        assert!(
            md.contains("   > Line one \\<script\\>alert(1)\\</script\\>"),
            "{md}"
        );
        assert!(md.contains("   > Line two \\!\\[img\\](x)"), "{md}");
        assert!(
            md.contains("2. **(untitled)** — javascript:alert(1)\n"),
            "{md}"
        );
        assert!(
            md.contains(&format!("| 1 | <https://docs.example/a%20b> | `{H1}` |")),
            "{md}"
        );
        assert_eq!(out.evidence_index.len(), 2);
        assert_eq!(out.evidence_index[1].n, 2);
        assert_eq!(out.evidence_index[1].ledger_entry, H2);
    }

    #[test]
    fn without_the_index_there_is_none() {
        let out = run(input(Format::Markdown, false)).unwrap();
        assert!(out.evidence_index.is_empty());
        assert!(!out.content.contains("Evidence index"));
        let out = run(input(Format::Json, false)).unwrap();
        assert!(!out.content.contains("evidence_index"));
    }

    #[test]
    fn html_escapes_everything_and_links_only_web_urls() {
        let out = run(input(Format::Html, true)).unwrap();
        let h = &out.content;
        assert!(
            h.contains("<title>Cedar &lt;policies&gt; &amp; &quot;you&quot;</title>"),
            "{h}"
        );
        assert!(
            h.contains(
                "<a href=\"https://docs.example/a%20b\">A &lt;b&gt;bold&lt;/b&gt; | title</a>"
            ),
            "{h}"
        );
        assert!(
            h.contains("Line one &lt;script&gt;alert(1)&lt;/script&gt;"),
            "{h}"
        );
        assert!(!h.contains("href=\"javascript"), "{h}");
        assert!(
            h.contains("<span class=\"url\">javascript:alert(1)</span>"),
            "{h}"
        );
        assert!(h.contains(&format!("<code>{H1}</code>")), "{h}");
        assert!(!h.contains("<script>"), "{h}");
        assert!(h.ends_with("</html>\n"));
    }

    #[test]
    fn json_is_structured_and_ordered() {
        let out = run(input(Format::Json, true)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(v["title"], "Cedar <policies> & \"you\"");
        assert_eq!(v["sources"][0]["n"], 1);
        assert_eq!(v["sources"][1]["url"], "javascript:alert(1)");
        assert_eq!(v["evidence_index"][1]["ledger_entry"], H2);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["title", "summary", "sources", "evidence_index"]);
    }

    #[test]
    fn output_is_deterministic() {
        for f in [Format::Markdown, Format::Html, Format::Json] {
            assert_eq!(run(input(f, true)).unwrap(), run(input(f, true)).unwrap());
        }
    }

    #[test]
    fn no_sources_no_sections() {
        let mut i = input(Format::Markdown, true);
        i.sources.clear();
        i.summary = None;
        let out = run(i).unwrap();
        assert_eq!(out.content, "# Cedar \\<policies\\> & \"you\"\n");
        assert!(out.evidence_index.is_empty());
    }
}
