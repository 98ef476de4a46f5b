//! Main-content extraction and HTML → Markdown.
//!
//! 1. **Chrome is stripped** from the DOM first: `script`, `style`, `noscript`, `template`,
//!    `nav`, `iframe`, `svg`, `canvas`, `dialog`, form controls, anything `hidden`, elements whose
//!    `role` is `navigation`, `banner`, `contentinfo` or `complementary`, and the `header`,
//!    `footer` and `aside` elements that are not inside an `article` or `main` (a page's masthead
//!    and footer, not an article's own header).
//! 2. **The main content** is then found by [`dom_smoothie`], a port of Mozilla's Readability
//!    (the algorithm behind Firefox's reader view), which also renders it as Markdown (through
//!    `dom_query`'s serializer, on the same html5ever DOM).
//! 3. Where Readability finds nothing (or the page is larger than [`MAX_ELEMENTS`] elements), a
//!    heuristic takes the first of `main`, `[role=main]`, `article`, else `body`, of the stripped
//!    DOM, and renders it.
//!
//! The result is tidied: trailing spaces removed, runs of blank lines collapsed to one.

use dom_query::{Document, NodeRef};
use dom_smoothie::{Config, Readability, TextMode};
use url::Url;

/// At most this many elements are scored by Readability (bounding time on huge pages); larger
/// documents go to the heuristic.
pub const MAX_ELEMENTS: usize = 50_000;

/// Removed wherever they are.
const CHROME: &str = "script, style, noscript, template, nav, iframe, svg, canvas, dialog, \
                      button, input, select, textarea, [hidden], [role=navigation], \
                      [role=banner], [role=contentinfo], [role=complementary]";
/// Removed unless inside an `article` or `main`.
const PAGE_CHROME: &str = "header, footer, aside";

/// What a page's HTML renders to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The page's title, if it has one.
    pub title: Option<String>,
    /// Its main content as Markdown.
    pub markdown: String,
}

/// Extract the main content of `html` (fetched from `url`, which resolves relative links) and
/// render it as Markdown.
pub fn extract(html: &str, url: &Url) -> Extracted {
    let doc = Document::from(html);
    let title = title_of(&doc);
    strip_chrome(&doc);
    let cfg = Config {
        text_mode: TextMode::Markdown,
        max_elements_to_parse: MAX_ELEMENTS,
        ..Config::default()
    };
    if let Ok(mut readability) = Readability::with_document(doc, Some(url.as_str()), Some(cfg)) {
        if let Ok(article) = readability.parse() {
            let markdown = tidy(&article.text_content);
            if !markdown.is_empty() {
                let title = title.or_else(|| clean(&article.title));
                return Extracted { title, markdown };
            }
        }
    }
    let doc = Document::from(html);
    strip_chrome(&doc);
    Extracted {
        title,
        markdown: heuristic(&doc),
    }
}

/// Step 1 of the module documentation.
fn strip_chrome(doc: &Document) {
    doc.select(CHROME).remove();
    let outside: Vec<NodeRef<'_>> = doc
        .select(PAGE_CHROME)
        .nodes()
        .iter()
        .filter(|n| {
            !n.ancestors_it(None)
                .any(|a| a.has_name("article") || a.has_name("main"))
        })
        .cloned()
        .collect();
    for n in outside {
        n.remove_from_parent();
    }
}

/// Step 3 of the module documentation.
fn heuristic(doc: &Document) -> String {
    for selector in ["main", "[role=main]", "article", "body"] {
        if let Some(node) = doc.select(selector).nodes().first() {
            return tidy(&node.md(None));
        }
    }
    tidy(&doc.md(None))
}

/// The document's title: `<title>`, else `og:title`, else the first `<h1>`.
pub fn document_title(html: &str) -> Option<String> {
    title_of(&Document::from(html))
}

fn title_of(doc: &Document) -> Option<String> {
    clean(&doc.select("head title").text())
        .or_else(|| {
            doc.select(r#"meta[property="og:title"]"#)
                .attr("content")
                .and_then(|t| clean(&t))
        })
        .or_else(|| clean(&doc.select("h1").text()))
}

/// The absolute `http`/`https` link targets of `html` (fetched from `url`), fragments removed,
/// in document order, duplicates dropped. A `<base href>` is honoured; `rel=nofollow` links are
/// followed like any other (they are discovered, not endorsed).
pub fn links(html: &str, url: &Url) -> Vec<Url> {
    let doc = Document::from(html);
    let base = doc
        .select("base[href]")
        .attr("href")
        .and_then(|h| url.join(h.trim()).ok())
        .unwrap_or_else(|| url.clone());
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for node in doc.select("a[href], area[href]").nodes() {
        let Some(href) = node.attr("href") else {
            continue;
        };
        let Ok(mut target) = base.join(href.trim()) else {
            continue;
        };
        if !matches!(target.scheme(), "http" | "https") {
            continue;
        }
        target.set_fragment(None);
        if seen.insert(target.as_str().to_string()) {
            out.push(target);
        }
    }
    out
}

/// Whitespace collapsed; `None` when nothing is left.
fn clean(text: &str) -> Option<String> {
    let t = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!t.is_empty()).then_some(t)
}

/// Trailing spaces removed from each line, runs of blank lines collapsed, ends trimmed.
pub fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0usize;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://docs.example/guide/intro.html").unwrap()
    }

    const ARTICLE: &str = r#"<!doctype html><html><head><title>The Cedar Guide</title></head>
<body>
<header><nav><a href="/">Home</a> | <a href="/about">About</a></nav></header>
<main><article>
<h1>Policies in practice</h1>
<p>Cedar policies are written once per action group and evaluated for every request the
runtime makes. This paragraph is long enough to count as content for the extraction
algorithm, which scores paragraphs by their length and punctuation, commas included.</p>
<p>A second paragraph explains <strong>forbid</strong> rules, which always win over permits,
and links to <a href="../reference/forbid.html">the reference</a> for details, so that the
reader can follow up on the finer points of evaluation order and policy slicing.</p>
<ul><li>One item</li><li>Another item</li></ul>
</article></main>
<footer>Copyright footer text that must not appear</footer>
<script>var tracking = "must not appear";</script>
</body></html>"#;

    #[test]
    fn readability_keeps_the_article_and_drops_the_chrome() {
        let e = extract(ARTICLE, &base());
        assert_eq!(e.title.as_deref(), Some("The Cedar Guide"));
        assert!(
            e.markdown.contains("Cedar policies are written once"),
            "{}",
            e.markdown
        );
        assert!(e.markdown.contains("**forbid**"), "{}", e.markdown);
        assert!(
            e.markdown
                .contains("(https://docs.example/reference/forbid.html)"),
            "relative links are made absolute: {}",
            e.markdown
        );
        assert!(e.markdown.contains("- One item"), "{}", e.markdown);
        for gone in ["Copyright footer", "tracking", "About"] {
            assert!(!e.markdown.contains(gone), "{gone} in {}", e.markdown);
        }
    }

    #[test]
    fn a_tiny_page_still_renders() {
        let html = "<html><head><title> Short </title></head><body><nav>menu</nav>\
                    <main><h2>Hello</h2><p>Just a line.</p></main></body></html>";
        let e = extract(html, &base());
        assert_eq!(e.title.as_deref(), Some("Short"));
        assert!(e.markdown.contains("Just a line."), "{}", e.markdown);
        assert!(!e.markdown.contains("menu"), "{}", e.markdown);
    }

    #[test]
    fn the_heuristic_picks_main_and_drops_boilerplate() {
        let html = "<body><header>top</header><aside>side</aside><div role=navigation>nav</div>\
                    <main><h1>Title</h1><p>Body <em>text</em>.</p></main>\
                    <footer>bottom</footer><script>x()</script></body>";
        let doc = Document::from(html);
        strip_chrome(&doc);
        let md = heuristic(&doc);
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("Body *text*."), "{md}");
        for gone in ["top", "side", "nav", "bottom", "x()"] {
            assert!(!md.contains(gone), "{gone} in {md}");
        }
    }

    #[test]
    fn titles_fall_back_to_og_title_and_h1() {
        assert_eq!(
            document_title(r#"<head><meta property="og:title" content="OG"></head>"#).as_deref(),
            Some("OG")
        );
        assert_eq!(
            document_title("<body><h1>Heading  one</h1></body>").as_deref(),
            Some("Heading one")
        );
        assert_eq!(document_title("<p>none</p>"), None);
    }

    #[test]
    fn links_are_absolute_unique_and_web_only() {
        let html = r##"<a href="a.html#x">a</a><a href="a.html">again</a>
            <a href="/root">r</a><a href="mailto:x@y">m</a><a href="javascript:alert(1)">j</a>
            <a href="#top">self</a><a href="https://other.example/p">o</a>"##;
        let got: Vec<String> = links(html, &base()).iter().map(|u| u.to_string()).collect();
        assert_eq!(
            got,
            [
                "https://docs.example/guide/a.html",
                "https://docs.example/root",
                "https://docs.example/guide/intro.html",
                "https://other.example/p",
            ]
        );
        let with_base = r#"<head><base href="https://cdn.example/x/"></head><a href="y">y</a>"#;
        assert_eq!(
            links(with_base, &base())[0].as_str(),
            "https://cdn.example/x/y"
        );
    }

    #[test]
    fn tidy_collapses_blank_runs() {
        assert_eq!(tidy("\n\na  \n\n\n\nb\nc\n\n"), "a\n\nb\nc");
    }
}
