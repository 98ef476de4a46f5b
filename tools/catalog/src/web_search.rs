//! `web_search`: results (url, title, snippet) from a self-hosted search API.
//!
//! Speaks SearXNG's JSON API (the instance must enable the `json` output format):
//! `GET {SEARXNG_BASE_URL}/search?q=<query>&format=json`, answered
//! `{"query": …, "results": [{"url", "title", "content", …}, …], …}`. Results keep SearXNG's
//! order; those without an `http`/`https` URL (or longer than 2,048 characters) are skipped, and
//! the rest are cut to `max_results` (default 10). `content` becomes `snippet` (omitted when
//! empty); a missing title becomes the empty string.

use serde::{Deserialize, Serialize};

use crate::config::SEARXNG_BASE_URL;
use crate::error::ToolError;
use crate::http::{check_api_status, API_BODY_LIMIT};
use crate::Context;

/// Default number of results.
pub const DEFAULT_MAX_RESULTS: usize = 10;
/// Longest URL the output schema admits.
pub const MAX_URL_LEN: usize = 2048;

/// The payload (`tools/records/web_search.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// What to search for.
    pub query: String,
    /// At most this many results.
    pub max_results: Option<u64>,
}

/// The output.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Output {
    /// The results, best first.
    pub results: Vec<Hit>,
}

/// One result.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Hit {
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// The engine's snippet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

#[derive(Deserialize)]
struct SearxAnswer {
    #[serde(default)]
    results: Vec<SearxResult>,
}

#[derive(Deserialize)]
struct SearxResult {
    url: Option<String>,
    title: Option<String>,
    content: Option<String>,
}

/// Run the search.
///
/// # Errors
/// No instance configured; the instance failing or answering malformed JSON.
pub fn run(input: Input, ctx: &Context) -> Result<Output, ToolError> {
    let api = ctx.config.searxng.as_ref().ok_or_else(|| {
        ToolError::Config(format!(
            "{SEARXNG_BASE_URL} is not set (the SearXNG instance)"
        ))
    })?;
    let max = input
        .max_results
        .map_or(DEFAULT_MAX_RESULTS, |n| n.clamp(1, 50) as usize);
    let mut url = api.endpoint(&["search"]);
    url.query_pairs_mut()
        .append_pair("q", &input.query)
        .append_pair("format", "json");
    let http = ctx.http(std::time::Duration::from_secs(12));
    let resp = http.get(&url, &[("accept", "application/json")], API_BODY_LIMIT)?;
    check_api_status(&resp, "the search API")?;
    let answer: SearxAnswer = resp.json("the search API")?;
    let results = answer
        .results
        .into_iter()
        .filter_map(|r| {
            // Normalised by the URL parser, so that the output is a valid URI.
            let url = url::Url::parse(r.url?.trim()).ok()?;
            if !matches!(url.scheme(), "http" | "https") || url.as_str().len() > MAX_URL_LEN {
                return None;
            }
            let url = String::from(url);
            Some(Hit {
                url,
                title: r.title.unwrap_or_default().trim().to_string(),
                snippet: r
                    .content
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty()),
            })
        })
        .take(max)
        .collect();
    Ok(Output { results })
}
