//! `escepine-mcp-demo`: a small MCP server written with `rmcp`, speaking MCP over stdio.
//!
//! It exists so that Escepine's tests and documentation have an MCP server of the workspace to
//! import (`escepine import mcp -- escepine-mcp-demo`) and to run as governed tools over the
//! `mcp-stdio` transport. Its tools need no network and keep no state:
//!
//! | MCP name | annotations | what it does |
//! |---|---|---|
//! | `word-count` | read-only, closed world | counts the words (optionally only those of at least `min_length` characters) and characters of `text`; `longest` is `null` for a text without words |
//! | `lookup_city` | read-only, closed world | looks a city up in a small built-in table; an unknown city is a tool error (`isError`). Its optional `api_key` is ignored — it is there to show how an import reports a credential-looking field |
//! | `set-label` | not read-only, not destructive, idempotent | "stores" `value` under `key` and returns the revision it would have; its optional `labels` map is an open object, which an import reports as undecidable |
//!
//! The names use `-` on purpose: a tool id cannot, so an import maps `word-count` to
//! `word_count`, and the `mcp-stdio` transport maps it back.

use std::collections::BTreeMap;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, Json, ServerHandler, ServiceExt};
use serde::{Deserialize, Serialize};

/// Arguments of `word-count`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct WordCountRequest {
    /// The text to count.
    text: String,
    /// Count only words of at least this many characters.
    min_length: Option<u32>,
}

/// Result of `word-count`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct WordCount {
    /// Words counted.
    words: u64,
    /// Characters of the whole text.
    characters: u64,
    /// The longest word counted, `null` when none was.
    longest: Option<String>,
}

/// Arguments of `lookup_city`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct CityRequest {
    /// The city's English name.
    city: String,
    /// Ignored: the table is built in.
    #[allow(dead_code)]
    api_key: Option<String>,
}

/// Result of `lookup_city`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct City {
    /// The city's English name.
    city: String,
    /// Its country.
    country: String,
    /// Its population (approximate).
    population: u64,
}

/// Arguments of `set-label`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct LabelRequest {
    /// The label's key.
    key: String,
    /// The label's new value.
    value: String,
    /// Extra labels to attach (any names).
    labels: Option<BTreeMap<String, String>>,
}

/// Result of `set-label`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Label {
    /// The label's key.
    key: String,
    /// The value now stored.
    value: String,
    /// The revision of the value: the same arguments give the same revision.
    revision: String,
}

const CITIES: &[(&str, &str, u64)] = &[
    ("Lisbon", "Portugal", 545_000),
    ("Oslo", "Norway", 709_000),
    ("Kyoto", "Japan", 1_464_000),
    ("Quito", "Ecuador", 2_800_000),
];

/// The demo server.
#[derive(Debug, Clone)]
struct Demo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Demo {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Count the words and characters of a text.
    #[tool(
        name = "word-count",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn word_count(&self, Parameters(req): Parameters<WordCountRequest>) -> Json<WordCount> {
        let min = req.min_length.unwrap_or(0) as usize;
        let counted: Vec<&str> = req
            .text
            .split_whitespace()
            .filter(|w| w.chars().count() >= min)
            .collect();
        let longest = counted
            .iter()
            .copied()
            .max_by_key(|w| w.chars().count())
            .map(str::to_string);
        Json(WordCount {
            words: counted.len() as u64,
            characters: req.text.chars().count() as u64,
            longest,
        })
    }

    /// Look a city up: its country and population.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn lookup_city(
        &self,
        Parameters(req): Parameters<CityRequest>,
    ) -> Result<Json<City>, String> {
        CITIES
            .iter()
            .find(|(name, _, _)| name.eq_ignore_ascii_case(req.city.trim()))
            .map(|(city, country, population)| {
                Json(City {
                    city: (*city).to_string(),
                    country: (*country).to_string(),
                    population: *population,
                })
            })
            .ok_or_else(|| format!("unknown city `{}`", req.city))
    }

    /// Store a label's value (a new revision; the same value gives the same revision).
    #[tool(
        name = "set-label",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn set_label(&self, Parameters(req): Parameters<LabelRequest>) -> Json<Label> {
        // FNV-1a: a stable revision without a hashing dependency.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in req.key.bytes().chain([0]).chain(req.value.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let _ = req.labels;
        Json(Label {
            key: req.key,
            value: req.value,
            revision: format!("{h:016x}"),
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("A demo server of Escepine: word counts, a city table, labels.")
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let service = match Demo::new().serve(rmcp::transport::stdio()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("escepine-mcp-demo: cannot start: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match service.waiting().await {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("escepine-mcp-demo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
