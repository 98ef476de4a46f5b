//! `tavily_search`: ranked results with extracted content, from a Tavily-compatible API.
//!
//! `POST {TAVILY_BASE_URL}/search` (default `https://api.tavily.com`) with
//! `Authorization: Bearer {TAVILY_API_KEY}` (the documented header; the key never travels in the
//! body) and the body `{"query": …, "max_results": n, "search_depth": "basic"|"advanced"}`
//! (defaults 5 and `basic`, Tavily's own), answered
//! `{"query": …, "results": [{"title", "url", "content", "score", …}], …}`. The output keeps
//! the answer's `query` (else the payload's), results with an `http`/`https` URL, at most
//! `max_results` of them, and each `score` only when it lies in [0, 1].

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::config::{TAVILY_API_KEY, TAVILY_BASE_URL};
use crate::error::ToolError;
use crate::http::{check_api_status, API_BODY_LIMIT};
use crate::web_search::MAX_URL_LEN;
use crate::Context;

/// Tavily's default number of results.
pub const DEFAULT_MAX_RESULTS: u64 = 5;

/// The payload (`tools/records/tavily_search.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The query.
    pub query: String,
    /// At most this many results (1–20).
    pub max_results: Option<u64>,
    /// `basic` or `advanced`.
    pub search_depth: Option<Depth>,
}

/// Search depth.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Depth {
    /// One credit, generic snippets.
    Basic,
    /// Two credits, the most relevant snippets.
    Advanced,
}

/// The output.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Output {
    /// The query as executed.
    pub query: String,
    /// The results, best first.
    pub results: Vec<Hit>,
}

/// One result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    /// Its URL.
    pub url: String,
    /// Its title.
    pub title: String,
    /// Content extracted for the query.
    pub content: String,
    /// Relevance in [0, 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

#[derive(Deserialize)]
struct Answer {
    query: Option<String>,
    #[serde(default)]
    results: Vec<AnswerHit>,
}

#[derive(Deserialize)]
struct AnswerHit {
    url: Option<String>,
    title: Option<String>,
    content: Option<String>,
    score: Option<f64>,
}

/// Run the search.
///
/// # Errors
/// No key (with the default base); the API failing or answering malformed JSON.
pub fn run(input: Input, ctx: &Context) -> Result<Output, ToolError> {
    let api = ctx.config.tavily.as_ref().ok_or_else(|| {
        ToolError::Config(format!(
            "{TAVILY_API_KEY} is not set (or {TAVILY_BASE_URL} for a keyless compatible API)"
        ))
    })?;
    let max = input
        .max_results
        .unwrap_or(DEFAULT_MAX_RESULTS)
        .clamp(1, 20);
    let body = json!({
        "query": input.query,
        "max_results": max,
        "search_depth": input.search_depth.unwrap_or(Depth::Basic),
    });
    let bearer = api.key.as_ref().map(|k| format!("Bearer {k}"));
    let mut headers = vec![("accept", "application/json")];
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    let http = ctx.http(std::time::Duration::from_secs(18));
    let resp = http.post_json(&api.endpoint(&["search"]), &headers, &body, API_BODY_LIMIT)?;
    check_api_status(&resp, "the Tavily API")?;
    let answer: Answer = resp.json("the Tavily API")?;
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
                title: r.title.unwrap_or_default(),
                content: r.content.unwrap_or_default(),
                score: r.score.filter(|s| (0.0..=1.0).contains(s)),
            })
        })
        .take(max as usize)
        .collect();
    Ok(Output {
        query: answer.query.unwrap_or(input.query),
        results,
    })
}
