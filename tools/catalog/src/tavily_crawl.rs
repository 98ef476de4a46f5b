//! `tavily_crawl`: map a target's public footprint — the URLs (with titles) reachable from it.
//!
//! The target (`url`) is an `http` or `https` URL — a page read, so Cedar authorizes it as
//! `context.url` like any other (the tool joins `page-read`); a host name alone is read as
//! `https://…` when the tool is run outside the governed path. From it, a breadth-first crawl:
//!
//! - **Scope**: the start URL's origin (scheme, host, port), the same host over the other web
//!   scheme on default ports, and any sub-domain of the start host (a leading `www.` dropped:
//!   from `www.example.org`, `docs.example.org` is in scope) on default ports. Links elsewhere
//!   are not followed (nor listed).
//! - **robots.txt** of every origin is fetched once and honoured for the agent token
//!   [`ROBOTS_AGENT`] (Google's matcher, RFC 9309): a 4xx means no
//!   rules; a 5xx, 429 or an unreachable file means "disallow everything" for that origin; a
//!   disallowed URL is neither fetched nor listed.
//! - **Limits**: at most `max_results` pages listed (default 50, at most 200), links followed to
//!   `max_depth` (default 2; 0 lists the start page only), at most [`MAX_FETCHES`] requests and
//!   [`TIME_BUDGET`] of crawling (the record's timeout is 60 s). `truncated` says whether any
//!   limit left in-scope URLs unvisited.
//! - **Pages**: a URL is listed when it answers 2xx (after same-origin redirects), with its
//!   title when it is HTML; only HTML pages are searched for links. Pages answering otherwise
//!   are skipped. Only the start page's failure fails the call (transient or permanent by its
//!   cause); later failures are noted on stderr and skipped.
//!
//! It returns URLs, not contents: reading a page goes through the page-read tools and their
//! per-URL policy.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use robotstxt::DefaultMatcher;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::ToolError;
use crate::http::{origin_of, Http, ROBOTS_AGENT};
use crate::markdown;
use crate::page::{self, Fetched};
use crate::Context;

/// Default page limit.
pub const DEFAULT_MAX_RESULTS: u64 = 50;
/// Default depth limit.
pub const DEFAULT_MAX_DEPTH: u64 = 2;
/// At most this many requests per crawl (pages and robots.txt files).
pub const MAX_FETCHES: usize = 400;
/// Crawling stops (truncated) after this long.
pub const TIME_BUDGET: Duration = Duration::from_secs(35);
/// Bound of a crawled page's body.
const CRAWL_BODY_LIMIT: u64 = 4 * 1024 * 1024;
/// Bound of a robots.txt file (Google reads 500 KiB).
const ROBOTS_LIMIT: u64 = 512 * 1024;

/// The payload (`tools/records/tavily_crawl.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The page to start from (an `http` or `https` URL; authorized as a page read).
    pub url: String,
    /// At most this many URLs.
    pub max_results: Option<u64>,
    /// Link depth from the start page.
    pub max_depth: Option<u64>,
}

/// The output.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Output {
    /// Where the crawl started.
    pub start: String,
    /// The pages found, in breadth-first order.
    pub pages: Vec<Found>,
    /// Whether a limit stopped the crawl.
    pub truncated: bool,
}

/// One page found.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Found {
    /// Its URL.
    pub url: String,
    /// Its title, when it is an HTML page with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Links from the start page.
    pub depth: u64,
}

/// The start URL of a target.
///
/// # Errors
/// A target that names no web host.
pub fn start_url(query: &str) -> Result<Url, ToolError> {
    let q = query.trim();
    let candidate = if q.contains("://") {
        q.to_string()
    } else {
        format!("https://{q}")
    };
    let mut url = page::web_url(&candidate)
        .map_err(|_| ToolError::Input(format!("`{q}` names no web host or URL")))?;
    url.set_fragment(None);
    Ok(url)
}

/// The crawl's scope (see the module documentation).
#[derive(Debug, Clone)]
pub struct Scope {
    start: Url,
    base_host: String,
}

impl Scope {
    /// The scope of a crawl starting at `start`.
    pub fn new(start: &Url) -> Self {
        let host = start.host_str().unwrap_or_default().to_ascii_lowercase();
        let base_host = host.strip_prefix("www.").unwrap_or(&host).to_string();
        Self {
            start: start.clone(),
            base_host,
        }
    }

    /// Whether `url` is in scope.
    pub fn contains(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        if url.origin() == self.start.origin() {
            return true;
        }
        let Some(host) = url.host_str().map(str::to_ascii_lowercase) else {
            return false;
        };
        let default_ports = url.port().is_none() && self.start.port().is_none();
        let is_ip = matches!(url.host(), Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)));
        let same_host = Some(host.as_str()) == self.start.host_str();
        let sub_domain =
            !is_ip && (host == self.base_host || host.ends_with(&format!(".{}", self.base_host)));
        default_ports && (same_host || sub_domain)
    }
}

/// Crawl.
///
/// # Errors
/// A target naming no host; the start page failing.
pub fn run(input: Input, ctx: &Context) -> Result<Output, ToolError> {
    let start = start_url(&input.url)?;
    let max_results = input
        .max_results
        .unwrap_or(DEFAULT_MAX_RESULTS)
        .clamp(1, 200) as usize;
    let max_depth = input.max_depth.unwrap_or(DEFAULT_MAX_DEPTH).min(5);
    // Each request bounded by 10 s: the budget plus one robots.txt and one page stay within the
    // record's 60 s.
    let http = ctx.http(Duration::from_secs(10));
    let mut crawler = Crawler {
        http: &http,
        scope: Scope::new(&start),
        robots: HashMap::new(),
        fetches: 0,
        started: Instant::now(),
    };
    crawler.crawl(start, max_results, max_depth)
}

struct Crawler<'a> {
    http: &'a Http,
    scope: Scope,
    /// robots.txt per origin: `None` means "disallow everything".
    robots: HashMap<String, Option<String>>,
    fetches: usize,
    started: Instant,
}

impl Crawler<'_> {
    fn out_of_budget(&self) -> bool {
        self.fetches >= MAX_FETCHES || self.started.elapsed() >= TIME_BUDGET
    }

    fn crawl(
        &mut self,
        start: Url,
        max_results: usize,
        max_depth: u64,
    ) -> Result<Output, ToolError> {
        let mut pages = Vec::new();
        let mut truncated = false;
        let mut seen: HashSet<String> = HashSet::from([start.as_str().to_string()]);
        let mut queue = VecDeque::from([(start.clone(), 0u64)]);
        while let Some((url, depth)) = queue.pop_front() {
            if pages.len() >= max_results || self.out_of_budget() {
                truncated = true;
                break;
            }
            match self.allowed(&url) {
                Ok(true) => {}
                Ok(false) => {
                    eprintln!("tavily_crawl: robots.txt disallows {url}");
                    continue;
                }
                Err(e) if depth == 0 => return Err(e.context(format!("the start page {url}"))),
                Err(e) => {
                    eprintln!("tavily_crawl: skipped {url}: {e}");
                    continue;
                }
            }
            self.fetches += 1;
            let fetched = match page::fetch(self.http, &url, page::ACCEPT, CRAWL_BODY_LIMIT) {
                Ok(f) => f,
                Err(e) if depth == 0 => return Err(e.context(format!("the start page {url}"))),
                Err(e) => {
                    eprintln!("tavily_crawl: skipped {url}: {e}");
                    continue;
                }
            };
            let (final_url, response) = match fetched {
                Fetched::Answer {
                    final_url,
                    response,
                } => (final_url, response),
                Fetched::Redirect { target, .. } => {
                    // Another origin (`example.org` → `www.example.org`): crawled at the same
                    // depth if in scope and new.
                    if self.scope.contains(&target) && seen.insert(target.as_str().to_string()) {
                        queue.push_back((target, depth));
                    }
                    continue;
                }
            };
            if !(200..300).contains(&response.status) {
                eprintln!("tavily_crawl: {url} answered HTTP {}", response.status);
                continue;
            }
            // A same-origin redirect may land on a page already listed.
            let listed = final_url.as_str().to_string();
            if listed != url.as_str() && !seen.insert(listed.clone()) {
                continue;
            }
            let html = page::is_html(&response).then(|| response.text());
            pages.push(Found {
                url: listed,
                title: html.as_deref().and_then(markdown::document_title),
                depth,
            });
            let Some(html) = html else { continue };
            for link in markdown::links(&html, &final_url) {
                if !self.scope.contains(&link) || !seen.insert(link.as_str().to_string()) {
                    continue;
                }
                if depth < max_depth {
                    queue.push_back((link, depth + 1));
                } else {
                    // An in-scope page the depth limit leaves unvisited.
                    truncated = true;
                }
            }
        }
        Ok(Output {
            start: start.to_string(),
            pages,
            truncated,
        })
    }

    /// Whether robots.txt of `url`'s origin allows it. An origin whose robots.txt could not be
    /// reached at all is an error (the start page's failure fails the call) and is remembered as
    /// "disallow everything".
    fn allowed(&mut self, url: &Url) -> Result<bool, ToolError> {
        let origin = origin_of(url);
        let rules = match self.robots.get(&origin) {
            Some(rules) => rules.clone(),
            None => {
                let fetched = self.fetch_robots(url);
                let rules = fetched.as_ref().ok().cloned().flatten();
                self.robots.insert(origin, rules.clone());
                fetched?;
                rules
            }
        };
        Ok(rules.is_some_and(|body| {
            DefaultMatcher::default().one_agent_allowed_by_robots(&body, ROBOTS_AGENT, url.as_str())
        }))
    }

    /// The robots.txt of `url`'s origin: `Some("")` (no rules) on 3xx or 4xx, `None` (disallow
    /// everything) on 429 or 5xx; a transport failure is an error.
    fn fetch_robots(&mut self, url: &Url) -> Result<Option<String>, ToolError> {
        let mut robots = url.clone();
        robots.set_path("/robots.txt");
        robots.set_query(None);
        self.fetches += 1;
        let r = self
            .http
            .get(&robots, &[("accept", "text/plain")], ROBOTS_LIMIT)
            .map_err(|e| e.context("robots.txt"))?;
        Ok(match r.status {
            200..=299 => Some(r.text()),
            429 | 500..=599 => {
                eprintln!(
                    "tavily_crawl: {} answered HTTP {} for robots.txt: nothing there is crawled",
                    origin_of(url),
                    r.status
                );
                None
            }
            // A redirect (not followed) or a 4xx: no usable file, so no rules.
            _ => Some(String::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn a_target_is_a_url_or_a_host() {
        assert_eq!(
            start_url("docs.example").unwrap().as_str(),
            "https://docs.example/"
        );
        assert_eq!(
            start_url(" docs.example/guide#x ").unwrap().as_str(),
            "https://docs.example/guide"
        );
        assert_eq!(
            start_url("http://127.0.0.1:8080/a").unwrap().as_str(),
            "http://127.0.0.1:8080/a"
        );
        for bad in ["ftp://docs.example/", "not a host!", "https://"] {
            assert_eq!(start_url(bad).unwrap_err().exit_code(), 65, "{bad}");
        }
    }

    #[test]
    fn scope_is_the_origin_the_host_and_its_sub_domains() {
        let s = Scope::new(&u("https://www.example.org/start"));
        for inside in [
            "https://www.example.org/x",
            "http://www.example.org/x",
            "https://example.org/",
            "https://docs.example.org/a",
            "https://a.b.example.org/",
        ] {
            assert!(s.contains(&u(inside)), "{inside}");
        }
        for outside in [
            "https://example.com/",
            "https://notexample.org/",
            "https://www.example.org:8443/",
            "ftp://www.example.org/",
        ] {
            assert!(!s.contains(&u(outside)), "{outside}");
        }
        let local = Scope::new(&u("http://127.0.0.1:8080/"));
        assert!(local.contains(&u("http://127.0.0.1:8080/a")));
        assert!(!local.contains(&u("http://127.0.0.1:8081/a")));
        assert!(!local.contains(&u("http://127.0.0.1/a")));
    }
}
