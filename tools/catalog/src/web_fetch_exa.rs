//! `web_fetch_exa`: several previously vetted pages at once, one result per URL, in the order
//! given (the runtime authorized each URL on its own before the tool starts).
//!
//! **Direct mode** (no Exa variable set): each page is read as `firecrawl_scrape` reads one
//! ([`crate::page`]), [`WORKERS`] at a time, except that every HTTP status (429 and 5xx
//! included) is reported as that URL's `status_code` rather than failing the call. A URL that
//! cannot be reached at all fails the whole call (transient or permanent by its cause), as does
//! one whose content cannot be rendered.
//!
//! **API mode** (`EXA_API_KEY` and/or `EXA_BASE_URL` set): `POST {base}/contents` with
//! `{"urls": [...], "text": true}` and, with a key, the `x-api-key` header; answered
//! `{"results": [{"url", "id", "title", "text", …}], "statuses": [{"id", "status": "success" |
//! "error", "error": {"tag", "httpStatusCode"}}]}`. A result is matched to its URL by `url` or
//! `id` (else by position when the counts agree); its `text` becomes `markdown` (Exa returns the
//! main content as Markdown). A URL Exa reports as an error gets that `httpStatusCode` (else 502)
//! and empty `markdown`; a URL with neither a result nor a status is a malformed answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::ToolError;
use crate::http::{check_api_status, API_BODY_LIMIT};
use crate::page::{self, Statuses};
use crate::Context;

/// Pages read at once in direct mode.
pub const WORKERS: usize = 4;
/// Bound of each request in direct mode.
pub const PAGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The payload (`tools/records/web_fetch_exa.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The pages.
    pub urls: Vec<String>,
}

/// The output.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Output {
    /// One result per URL, in the payload's order.
    pub results: Vec<PageResult>,
}

/// One page.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PageResult {
    /// The URL asked for.
    pub url: String,
    /// Its title, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its main content.
    pub markdown: String,
    /// Its HTTP status.
    pub status_code: u16,
}

/// Fetch the pages.
///
/// # Errors
/// See the module documentation.
pub fn run(input: Input, ctx: &Context) -> Result<Output, ToolError> {
    let urls = input
        .urls
        .iter()
        .map(|u| page::web_url(u))
        .collect::<Result<Vec<_>, _>>()?;
    if ctx.config.exa.is_some() {
        return remote(
            &input.urls,
            ctx,
            &ctx.http(std::time::Duration::from_secs(50)),
        );
    }
    // 20 URLs, WORKERS at a time, each request bounded: within the record's 60 s.
    let http = ctx.http(PAGE_TIMEOUT);
    let slots: Mutex<Vec<Option<Result<page::Page, ToolError>>>> =
        Mutex::new(vec![None; urls.len()]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..WORKERS.min(urls.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(url) = urls.get(i) else { break };
                let read = page::read(&http, url, Statuses::AllAreResults);
                let failed = read.is_err();
                slots.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(read);
                if failed {
                    // The call fails anyway: take no further URL.
                    next.store(urls.len(), Ordering::Relaxed);
                }
            });
        }
    });
    let slots = slots.into_inner().unwrap_or_else(PoisonError::into_inner);
    // The first failure in payload order is the call's; URLs skipped after it have no slot.
    if let Some(e) = slots.iter().flatten().find_map(|r| r.as_ref().err()) {
        return Err(e.clone());
    }
    let mut results = Vec::with_capacity(urls.len());
    for (raw, slot) in input.urls.iter().zip(slots) {
        let Some(Ok(p)) = slot else {
            return Err(ToolError::Permanent(format!("`{raw}` was not read")));
        };
        results.push(PageResult {
            url: raw.clone(),
            title: p.title,
            markdown: p.markdown,
            status_code: p.status,
        });
    }
    Ok(Output { results })
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<AnswerResult>,
    #[serde(default)]
    statuses: Vec<AnswerStatus>,
}

#[derive(Deserialize)]
struct AnswerResult {
    url: Option<String>,
    id: Option<String>,
    title: Option<String>,
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerStatus {
    id: String,
    status: String,
    error: Option<AnswerError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerError {
    http_status_code: Option<u16>,
}

fn remote(urls: &[String], ctx: &Context, http: &crate::http::Http) -> Result<Output, ToolError> {
    let Some(api) = &ctx.config.exa else {
        return Err(ToolError::Config("the Exa API is not configured".into()));
    };
    let body = json!({ "urls": urls, "text": true });
    let mut headers = vec![("accept", "application/json")];
    if let Some(k) = &api.key {
        headers.push(("x-api-key", k.as_str()));
    }
    let resp = http.post_json(
        &api.endpoint(&["contents"]),
        &headers,
        &body,
        API_BODY_LIMIT,
    )?;
    check_api_status(&resp, "the Exa API")?;
    let answer: Answer = resp.json("the Exa API")?;
    let positional = answer.results.len() == urls.len();
    let mut by_key: HashMap<&str, usize> = HashMap::new();
    for (i, r) in answer.results.iter().enumerate() {
        for k in [r.url.as_deref(), r.id.as_deref()].into_iter().flatten() {
            by_key.entry(k).or_insert(i);
        }
    }
    let statuses: HashMap<&str, &AnswerStatus> =
        answer.statuses.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut results = Vec::with_capacity(urls.len());
    for (i, url) in urls.iter().enumerate() {
        let status = statuses.get(url.as_str());
        if let Some(s) = status.filter(|s| s.status != "success") {
            let code = s
                .error
                .as_ref()
                .and_then(|e| e.http_status_code)
                .filter(|c| (100..=599).contains(c))
                .unwrap_or(502);
            results.push(PageResult {
                url: url.clone(),
                title: None,
                markdown: String::new(),
                status_code: code,
            });
            continue;
        }
        let hit = by_key
            .get(url.as_str())
            .copied()
            .or(positional.then_some(i))
            .and_then(|j| answer.results.get(j));
        let Some(hit) = hit else {
            return Err(ToolError::Permanent(format!(
                "the Exa API returned nothing for URL #{}",
                i + 1
            )));
        };
        results.push(PageResult {
            url: url.clone(),
            title: hit
                .title
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string),
            markdown: hit.text.clone().unwrap_or_default(),
            status_code: 200,
        });
    }
    Ok(Output { results })
}
