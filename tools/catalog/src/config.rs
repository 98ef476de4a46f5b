//! Configuration: base URLs and API keys, read from environment variables by name.
//!
//! A tool process sees only the variables the runtime gives it: `PATH`, `LANG` (and `HOME`,
//! `TMPDIR` in the sandbox), the call id and idempotency key, the proxy variables, and the
//! **secrets its record declares in `auth.secrets`**, each injected by name from the runtime's
//! secret source (the environment of `escepine call`, a secrets file, a vault). Base URLs travel
//! the same way: they are declared in `auth.secrets` beside the keys, so one mechanism carries
//! all configuration, nothing has to be baked into a record, and a deployment (or a test) points
//! a tool at its service without touching the payload schema, which is the agent's contract.
//!
//! | variable | tool | meaning | default |
//! |---|---|---|---|
//! | [`SEARXNG_BASE_URL`] | `web_search` | a SearXNG instance (JSON format enabled) | none: required |
//! | [`TAVILY_BASE_URL`] | `tavily_search` | a Tavily-compatible API | `https://api.tavily.com` |
//! | [`TAVILY_API_KEY`] | `tavily_search` | its bearer key | required with the default base |
//! | [`FIRECRAWL_BASE_URL`] | `firecrawl_scrape` | a Firecrawl-compatible API | `https://api.firecrawl.dev` |
//! | [`FIRECRAWL_API_KEY`] | `firecrawl_scrape` | its bearer key | none |
//! | [`EXA_BASE_URL`] | `web_fetch_exa` | an Exa-compatible API | `https://api.exa.ai` |
//! | [`EXA_API_KEY`] | `web_fetch_exa` | its `x-api-key` | none |
//! | [`NOTES_BASE_URL`] | `note_publish`, `note_retract` | the note service ([`crate::notes`]) | none: required |
//! | [`NOTES_API_KEY`] | `note_publish`, `note_retract` | its bearer key | none |
//!
//! `firecrawl_scrape` and `web_fetch_exa` call their remote API when either of its two variables
//! is set (a self-hosted Firecrawl needs no key), and otherwise read pages themselves. An empty
//! value counts as unset. A base URL is `http` or `https`, without query or fragment; a path is
//! kept (`https://search.example/searxng` serves `…/searxng/search`).
//!
//! Values are never printed: a message names the variable, not its value (and the runtime
//! scrubs secret values from everything it records and returns anyway). One consequence of that
//! scrubbing: a base URL's text is replaced by `[REDACTED]` wherever it appears in a payload or an
//! output, so a search API should not be served from a URL that prefixes the result URLs it
//! returns (serve it on its own port or path).

use std::fmt;

use url::Url;

use crate::error::ToolError;

/// SearXNG instance for `web_search`.
pub const SEARXNG_BASE_URL: &str = "SEARXNG_BASE_URL";
/// Tavily-compatible API for `tavily_search`.
pub const TAVILY_BASE_URL: &str = "TAVILY_BASE_URL";
/// Bearer key of the Tavily API.
pub const TAVILY_API_KEY: &str = "TAVILY_API_KEY";
/// Firecrawl-compatible API for `firecrawl_scrape`.
pub const FIRECRAWL_BASE_URL: &str = "FIRECRAWL_BASE_URL";
/// Bearer key of the Firecrawl API.
pub const FIRECRAWL_API_KEY: &str = "FIRECRAWL_API_KEY";
/// Exa-compatible API for `web_fetch_exa`.
pub const EXA_BASE_URL: &str = "EXA_BASE_URL";
/// `x-api-key` of the Exa API.
pub const EXA_API_KEY: &str = "EXA_API_KEY";
/// The note service for `note_publish` and `note_retract`.
pub const NOTES_BASE_URL: &str = "NOTES_BASE_URL";
/// Bearer key of the note service.
pub const NOTES_API_KEY: &str = "NOTES_API_KEY";

/// Default base of the Tavily API.
pub const TAVILY_DEFAULT_BASE: &str = "https://api.tavily.com";
/// Default base of the Firecrawl API.
pub const FIRECRAWL_DEFAULT_BASE: &str = "https://api.firecrawl.dev";
/// Default base of the Exa API.
pub const EXA_DEFAULT_BASE: &str = "https://api.exa.ai";

/// A remote API: its base URL and, optionally, its key.
#[derive(Clone, PartialEq, Eq)]
pub struct Api {
    /// Base URL (scheme, authority, optional path; no query or fragment).
    pub base: Url,
    /// The key, if one is configured.
    pub key: Option<String>,
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print a key, even in a debug dump.
        f.debug_struct("Api")
            .field("base", &self.base.as_str())
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Api {
    /// `base` joined with `segments` (each percent-encoded as one path segment).
    pub fn endpoint(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }
}

/// All configuration of the catalog, as read from the environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    /// `web_search`: the SearXNG instance.
    pub searxng: Option<Api>,
    /// `tavily_search`: the Tavily-compatible API (`None` only without key and base).
    pub tavily: Option<Api>,
    /// `firecrawl_scrape`: the Firecrawl-compatible API, or `None` to read pages directly.
    pub firecrawl: Option<Api>,
    /// `web_fetch_exa`: the Exa-compatible API, or `None` to read pages directly.
    pub exa: Option<Api>,
    /// `note_publish`, `note_retract`: the note service.
    pub notes: Option<Api>,
}

impl Config {
    /// Configuration from the process environment.
    ///
    /// # Errors
    /// A base URL that is set but malformed.
    pub fn from_env() -> Result<Self, ToolError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Configuration from any lookup of variables by name (tests pass a map).
    ///
    /// # Errors
    /// A base URL that is set but malformed.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ToolError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let api = |base_var: &str,
                   key_var: Option<&str>,
                   default: Option<&str>|
         -> Result<Option<Api>, ToolError> {
            let key = key_var.and_then(get);
            let base = match (get(base_var), default) {
                (Some(b), _) => parse_base(base_var, &b)?,
                // The default base is used only when some variable of the API is set.
                (None, Some(d)) if key.is_some() => parse_base(base_var, d)?,
                _ => return Ok(None),
            };
            Ok(Some(Api { base, key }))
        };
        Ok(Self {
            searxng: api(SEARXNG_BASE_URL, None, None)?,
            tavily: api(
                TAVILY_BASE_URL,
                Some(TAVILY_API_KEY),
                Some(TAVILY_DEFAULT_BASE),
            )?,
            firecrawl: api(
                FIRECRAWL_BASE_URL,
                Some(FIRECRAWL_API_KEY),
                Some(FIRECRAWL_DEFAULT_BASE),
            )?,
            exa: api(EXA_BASE_URL, Some(EXA_API_KEY), Some(EXA_DEFAULT_BASE))?,
            notes: api(NOTES_BASE_URL, Some(NOTES_API_KEY), None)?,
        })
    }
}

/// Parse a base URL from variable `var`, naming the variable (never the value) on error.
fn parse_base(var: &str, value: &str) -> Result<Url, ToolError> {
    let url = Url::parse(value.trim())
        .map_err(|e| ToolError::Config(format!("{var} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::Config(format!(
            "{var} must be an http or https URL"
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ToolError::Config(format!("{var} has no host")));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ToolError::Config(format!(
            "{var} must not carry a query or a fragment"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolError::Config(format!(
            "{var} must not carry user information (declare a key variable instead)"
        )));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ToolError> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|n| map.get(n).cloned())
    }

    #[test]
    fn nothing_set_means_direct_modes_and_no_services() {
        assert_eq!(config(&[]).unwrap(), Config::default());
        // An empty value is unset.
        assert_eq!(
            config(&[(FIRECRAWL_API_KEY, ""), (EXA_BASE_URL, " ")]).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn a_key_alone_selects_the_default_base() {
        let c = config(&[(FIRECRAWL_API_KEY, "fc-1"), (TAVILY_API_KEY, "tv-1")]).unwrap();
        let fc = c.firecrawl.unwrap();
        assert_eq!(fc.base.as_str(), "https://api.firecrawl.dev/");
        assert_eq!(fc.key.as_deref(), Some("fc-1"));
        assert_eq!(c.tavily.unwrap().base.as_str(), "https://api.tavily.com/");
        assert!(c.exa.is_none());
    }

    #[test]
    fn a_base_alone_needs_no_key_and_keeps_its_path() {
        let c = config(&[
            (FIRECRAWL_BASE_URL, "http://127.0.0.1:9/fc/"),
            (SEARXNG_BASE_URL, "http://127.0.0.1:8/searxng"),
        ])
        .unwrap();
        let fc = c.firecrawl.unwrap();
        assert!(fc.key.is_none());
        assert_eq!(
            fc.endpoint(&["v1", "scrape"]).as_str(),
            "http://127.0.0.1:9/fc/v1/scrape"
        );
        assert_eq!(
            c.searxng.unwrap().endpoint(&["search"]).as_str(),
            "http://127.0.0.1:8/searxng/search"
        );
    }

    #[test]
    fn endpoint_segments_are_encoded() {
        let c = config(&[(NOTES_BASE_URL, "http://127.0.0.1:7")]).unwrap();
        let notes = c.notes.unwrap();
        assert_eq!(
            notes.endpoint(&["notes", "a/b?c", "retract"]).as_str(),
            "http://127.0.0.1:7/notes/a%2Fb%3Fc/retract"
        );
    }

    #[test]
    fn malformed_bases_are_refused_without_echoing_the_value() {
        for bad in [
            "not a url",
            "ftp://x.example",
            "http://x.example/?q=1",
            "http://u:p@x.example",
        ] {
            let err = config(&[(NOTES_BASE_URL, bad)]).unwrap_err();
            assert_eq!(err.exit_code(), 78, "{bad}: {err}");
            assert!(err.to_string().contains(NOTES_BASE_URL));
            assert!(!err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn debug_never_shows_a_key() {
        let c = config(&[(EXA_API_KEY, "very-secret-key")]).unwrap();
        let dump = format!("{c:?}");
        assert!(!dump.contains("very-secret-key"), "{dump}");
        assert!(dump.contains("<set>"));
    }
}
