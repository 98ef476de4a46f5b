//! `firecrawl_scrape`: one page's main content as Markdown.
//!
//! **Direct mode** (no Firecrawl variable set): the tool reads the page itself through the
//! egress proxy ([`crate::page`]: same-origin redirects only, 429 and 5xx transient, any other
//! status returned as `status_code`) and renders its main content ([`crate::markdown`]).
//!
//! **API mode** (`FIRECRAWL_API_KEY` and/or `FIRECRAWL_BASE_URL` set): `POST {base}/v1/scrape`
//! with `{"url": …, "formats": ["markdown"]}` and, with a key, `Authorization: Bearer {key}`;
//! answered `{"success": true, "data": {"markdown": …, "metadata": {"title", "statusCode",
//! "sourceURL", …}}}`. `success: false` is a permanent failure carrying the API's `error`; the
//! page's own `statusCode` is treated as in direct mode (429 and 5xx transient).
//!
//! Either way the output's `url` is the URL asked for (the one Cedar authorized).

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::ToolError;
use crate::http::{check_api_status, API_BODY_LIMIT};
use crate::page::{self, Statuses};
use crate::Context;

/// The payload (`tools/records/firecrawl_scrape.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The page.
    pub url: String,
}

/// The output.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Output {
    /// The page asked for.
    pub url: String,
    /// Its title, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its main content.
    pub markdown: String,
    /// Its HTTP status.
    pub status_code: u16,
}

#[derive(Deserialize)]
struct Answer {
    success: Option<bool>,
    error: Option<String>,
    data: Option<Data>,
}

#[derive(Deserialize)]
struct Data {
    markdown: Option<String>,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    title: Option<serde_json::Value>,
    status_code: Option<u16>,
}

/// Scrape the page.
///
/// # Errors
/// See the module documentation.
pub fn run(input: Input, ctx: &Context) -> Result<Output, ToolError> {
    let url = page::web_url(&input.url)?;
    let http = ctx.http(std::time::Duration::from_secs(25));
    let Some(api) = &ctx.config.firecrawl else {
        let p = page::read(&http, &url, Statuses::RetryServerErrors)?;
        return Ok(Output {
            url: input.url,
            title: p.title,
            markdown: p.markdown,
            status_code: p.status,
        });
    };
    let body = json!({ "url": input.url, "formats": ["markdown"] });
    let bearer = api.key.as_ref().map(|k| format!("Bearer {k}"));
    let mut headers = vec![("accept", "application/json")];
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    let resp = http.post_json(
        &api.endpoint(&["v1", "scrape"]),
        &headers,
        &body,
        API_BODY_LIMIT,
    )?;
    check_api_status(&resp, "the Firecrawl API")?;
    let answer: Answer = resp.json("the Firecrawl API")?;
    if answer.success != Some(true) {
        return Err(ToolError::Permanent(format!(
            "the Firecrawl API did not scrape the page: {}",
            answer.error.as_deref().unwrap_or("no reason given")
        )));
    }
    let data = answer.data.ok_or_else(|| {
        ToolError::Permanent("the Firecrawl API answered success without data".into())
    })?;
    let status = data.metadata.status_code.unwrap_or(200);
    if !(100..=599).contains(&status) {
        return Err(ToolError::Permanent(format!(
            "the Firecrawl API reported the impossible status {status}"
        )));
    }
    if status == 429 || status >= 500 {
        return Err(ToolError::Transient(format!(
            "the page answered HTTP {status} (through the Firecrawl API)"
        )));
    }
    // Firecrawl reports `title` as a string, or a list when a page has several.
    let title = match data.metadata.title {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Array(a)) => a.first().and_then(|v| v.as_str()).map(str::to_string),
        _ => None,
    }
    .map(|t| t.trim().to_string())
    .filter(|t| !t.is_empty());
    Ok(Output {
        url: input.url,
        title,
        markdown: data.markdown.unwrap_or_default(),
        status_code: status,
    })
}
