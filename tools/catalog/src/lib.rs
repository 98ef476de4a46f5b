//! The catalog's tools (`tools/records/*.json`), each a `stdio-json` process:
//! `escepine-catalog <tool_id>` reads the payload JSON on stdin (then EOF), writes the output
//! JSON on stdout and exits 0; a failure writes one line on stderr and exits 75 when transient
//! (a retry may cure it), 1 when permanent, 65 for a payload that does not decode, 78 for missing
//! configuration, 64 for a wrong command line ([`error`]).
//!
//! | tool | what | network |
//! |---|---|---|
//! | [`web_search`] | search results from SearXNG's JSON API | the configured instance |
//! | [`tavily_search`] | search through a Tavily-compatible API | the configured API |
//! | [`tavily_crawl`] | a target's public URLs, robots.txt honoured | the target |
//! | [`firecrawl_scrape`] | one page as Markdown (directly, or a Firecrawl-compatible API) | the page or the API |
//! | [`web_fetch_exa`] | several pages as Markdown (directly, or an Exa-compatible API) | the pages or the API |
//! | [`deliverable_assemble`] | the deliverable and its evidence index | none |
//! | [`note_publish`] / [`note_retract`] | the note service ([`notes`]) | the service |
//!
//! Configuration (base URLs, keys) comes from environment variables the runtime injects as
//! declared secrets ([`config`]); all traffic goes through the proxy the environment names
//! ([`http`]). Nothing is written to disk.

pub mod config;
pub mod deliverable_assemble;
pub mod error;
pub mod firecrawl_scrape;
pub mod http;
pub mod markdown;
pub mod note_publish;
pub mod note_retract;
pub mod notes;
pub mod page;
pub mod serve;
pub mod tavily_crawl;
pub mod tavily_search;
pub mod web_fetch_exa;
pub mod web_search;

use std::time::Duration;

use escepine_contract::{ENV_CALL_ID, ENV_IDEMPOTENCY_KEY};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

pub use config::Config;
pub use error::ToolError;
use http::{Http, ProxyEnv};

/// The tool ids this binary serves (its first argument).
pub const TOOLS: [&str; 8] = [
    "web_search",
    "tavily_search",
    "tavily_crawl",
    "firecrawl_scrape",
    "web_fetch_exa",
    "deliverable_assemble",
    "note_publish",
    "note_retract",
];

/// What a call runs with: configuration, proxies, and the call's identifiers.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Base URLs and keys.
    pub config: Config,
    /// The proxy variables.
    pub proxies: ProxyEnv,
    /// `ESCEPINE_CALL_ID`, if set.
    pub call_id: Option<String>,
    /// `ESCEPINE_IDEMPOTENCY_KEY`, if set.
    pub idempotency_key: Option<String>,
}

impl Context {
    /// The context of this process, from its environment.
    ///
    /// # Errors
    /// A malformed base URL.
    pub fn from_env() -> Result<Self, ToolError> {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        Ok(Self {
            config: Config::from_env()?,
            proxies: ProxyEnv::from_env(),
            call_id: var(ENV_CALL_ID),
            idempotency_key: var(ENV_IDEMPOTENCY_KEY),
        })
    }

    /// An HTTP client whose requests are each bounded by `timeout`.
    pub fn http(&self, timeout: Duration) -> Http {
        Http::new(self.proxies.clone(), timeout)
    }
}

/// Run `tool` on `payload`.
///
/// # Errors
/// An unknown tool, a payload that does not decode, or the tool's own failure.
pub fn run(tool: &str, payload: Value, ctx: &Context) -> Result<Value, ToolError> {
    match tool {
        "web_search" => call(payload, |i| web_search::run(i, ctx)),
        "tavily_search" => call(payload, |i| tavily_search::run(i, ctx)),
        "tavily_crawl" => call(payload, |i| tavily_crawl::run(i, ctx)),
        "firecrawl_scrape" => call(payload, |i| firecrawl_scrape::run(i, ctx)),
        "web_fetch_exa" => call(payload, |i| web_fetch_exa::run(i, ctx)),
        "deliverable_assemble" => call(payload, deliverable_assemble::run),
        "note_publish" => call(payload, |i| note_publish::run(i, ctx)),
        "note_retract" => call(payload, |i| note_retract::run(i, ctx)),
        other => Err(ToolError::Usage(format!(
            "unknown tool `{other}` (one of: {})",
            TOOLS.join(", ")
        ))),
    }
}

fn call<I: DeserializeOwned, O: Serialize>(
    payload: Value,
    tool: impl FnOnce(I) -> Result<O, ToolError>,
) -> Result<Value, ToolError> {
    let input: I = serde_json::from_value(payload).map_err(|e| ToolError::Input(e.to_string()))?;
    let output = tool(input)?;
    serde_json::to_value(output)
        .map_err(|e| ToolError::Permanent(format!("cannot encode the output: {e}")))
}
