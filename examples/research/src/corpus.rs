//! The bundled corpus: "Signal Box Notes", some thirty interlinked pages on the history and
//! design of railway signalling, written for this example, plus one page that claims to live on
//! a host the catalog's policy forbids (`www.linkedin.com`).
//!
//! The files are embedded at build time (`build.rs` → `$OUT_DIR/corpus.rs`):
//! - `pages/<slug>.html` is served on loopback at `{base}/corpus/<slug>.html`;
//! - `forbidden/<host>/<path>.html` is **not served at all**: it is indexed by the search
//!   endpoint under `https://<host>/<path>`, so the agent finds it among the search results, and
//!   its reading is denied by Cedar before any request could be made.

use dom_query::Document;

mod files {
    include!(concat!(env!("OUT_DIR"), "/corpus.rs"));
}

/// The path prefix the corpus is served under.
pub const CORPUS_PREFIX: &str = "/corpus/";

/// One page of the corpus.
#[derive(Debug, Clone)]
pub struct Page {
    /// Where the page is served on loopback (`<slug>.html` under [`CORPUS_PREFIX`]), or `None`
    /// for a page that claims a forbidden host and is never served.
    pub served_as: Option<String>,
    /// The page's URL on the forbidden host (`https://…`), for a page that is never served.
    pub forbidden_url: Option<String>,
    /// The `<title>`.
    pub title: String,
    /// The `<meta name="description">` (the search endpoint's snippet).
    pub description: String,
    /// The visible text of `<main>` (what the search endpoint indexes).
    pub text: String,
    /// The whole document.
    pub html: &'static str,
}

impl Page {
    /// The page's URL given the loopback base (`http://127.0.0.1:PORT`).
    pub fn url(&self, base: &str) -> String {
        match (&self.served_as, &self.forbidden_url) {
            (Some(name), _) => format!("{base}{CORPUS_PREFIX}{name}"),
            (None, Some(url)) => url.clone(),
            (None, None) => String::new(),
        }
    }
}

/// Every page of the corpus, parsed once.
pub fn pages() -> Vec<Page> {
    files::FILES
        .iter()
        .filter_map(|(path, html)| {
            let doc = Document::from(*html);
            let title = doc.select("title").text().trim().to_string();
            let description = doc
                .select(r#"meta[name="description"]"#)
                .attr("content")
                .map(|d| d.to_string())
                .unwrap_or_default();
            let text = doc
                .select("main")
                .text()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let (served_as, forbidden_url) = if let Some(name) = path.strip_prefix("pages/") {
                (Some(name.to_string()), None)
            } else {
                let rest = path.strip_prefix("forbidden/")?;
                let rest = rest.strip_suffix(".html").unwrap_or(rest);
                (None, Some(format!("https://{rest}")))
            };
            Some(Page {
                served_as,
                forbidden_url,
                title,
                description,
                text,
                html,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_has_a_few_dozen_pages_and_one_forbidden() {
        let pages = pages();
        let served = pages.iter().filter(|p| p.served_as.is_some()).count();
        assert!(served >= 24, "{served} pages");
        let forbidden: Vec<_> = pages
            .iter()
            .filter_map(|p| p.forbidden_url.clone())
            .collect();
        assert_eq!(forbidden.len(), 1);
        assert!(forbidden[0].starts_with("https://www.linkedin.com/"));
        for p in &pages {
            assert!(!p.title.is_empty() && !p.description.is_empty() && p.text.len() > 200);
        }
    }

    #[test]
    fn every_link_resolves_within_the_corpus() {
        let pages = pages();
        let names: Vec<&str> = pages
            .iter()
            .filter_map(|p| p.served_as.as_deref())
            .collect();
        for p in pages.iter().filter(|p| p.served_as.is_some()) {
            let doc = Document::from(p.html);
            for a in doc.select("a").iter() {
                let href = a.attr("href").map(|h| h.to_string()).unwrap_or_default();
                assert!(names.contains(&href.as_str()), "{}: {href}", p.title);
            }
        }
    }
}
