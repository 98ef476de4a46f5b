//! Reading one page directly (the default mode of `firecrawl_scrape` and `web_fetch_exa`, and
//! each step of `tavily_crawl`).
//!
//! - Only `http` and `https` URLs.
//! - Redirects are followed (at most [`MAX_REDIRECTS`]) only within the page's own origin
//!   (scheme, host and port, defaults filled): the origin Cedar authorized, and the only one a
//!   profile's `authorized-urls` lets the egress proxy reach for this URL. A redirect elsewhere —
//!   even the upgrade from `http` to `https`, which is another origin — is not followed but
//!   returned as the page (its 3xx status and a line naming the target), so that reading the
//!   target takes its own governed call.
//! - Any status is a result (the caller decides what a 404 means), except where the reader is
//!   asked to treat 429 and 5xx as transient ([`Statuses::RetryServerErrors`]).
//! - HTML (and XHTML) is rendered by [`crate::markdown`]; `text/plain` and `text/markdown` are
//!   kept as they are; JSON is kept in a fenced block; anything else (PDF, images, archives) is
//!   refused as content the tool cannot render.

use url::Url;

use crate::error::ToolError;
use crate::http::{origin_of, Http, Response, PAGE_BODY_LIMIT};
use crate::markdown;

/// At most this many same-origin redirects are followed.
pub const MAX_REDIRECTS: usize = 5;

/// What `Accept` a page reader sends.
pub const ACCEPT: &str = "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,\
                      application/json;q=0.5,*/*;q=0.1";

/// A page as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The URL the content came from (after same-origin redirects).
    pub final_url: Url,
    /// Its HTTP status.
    pub status: u16,
    /// Its title, if any.
    pub title: Option<String>,
    /// Its main content as Markdown.
    pub markdown: String,
}

/// How to treat a page's 429 and 5xx statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statuses {
    /// 429 and 5xx fail the read as transient (a single-page read: the runtime retries).
    RetryServerErrors,
    /// Every status is a result (a bulk read reports each URL's status).
    AllAreResults,
}

/// Parse `raw` as an absolute `http`/`https` URL.
///
/// # Errors
/// Anything else is an input error.
pub fn web_url(raw: &str) -> Result<Url, ToolError> {
    let url = Url::parse(raw.trim()).map_err(|e| ToolError::Input(format!("`{raw}`: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ToolError::Input(format!(
            "`{raw}` is not an http or https URL"
        )));
    }
    Ok(url)
}

/// Whether following a redirect from `from` to `to` stays on the authorized origin: the same
/// scheme, host and port (`url`'s origin: the default port filled, the host normalised as the
/// URL facts Cedar sees normalise it).
pub fn same_origin(from: &Url, to: &Url) -> bool {
    from.origin() == to.origin()
}

/// What fetching a URL came to.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// An answer (after same-origin redirects) from `final_url`.
    Answer {
        /// Where it came from.
        final_url: Url,
        /// The answer.
        response: Response,
    },
    /// A redirect not followed (to another origin, or one too many).
    Redirect {
        /// The URL that answered with it.
        from: Url,
        /// Its status.
        status: u16,
        /// Where it pointed.
        target: Url,
        /// Why it was not followed.
        why: String,
    },
}

/// Fetch `url`, following redirects within its origin (see the module documentation).
///
/// # Errors
/// Transport failures (classified by [`crate::http`]).
pub fn fetch(http: &Http, url: &Url, accept: &str, limit: u64) -> Result<Fetched, ToolError> {
    let mut current = url.clone();
    let mut redirects = 0;
    loop {
        let response = http.get(&current, &[("accept", accept)], limit)?;
        let status = response.status;
        let target = response
            .location
            .as_deref()
            .filter(|_| (300..400).contains(&status) && status != 304)
            .and_then(|l| current.join(l.trim()).ok());
        let Some(target) = target else {
            return Ok(Fetched::Answer {
                final_url: current,
                response,
            });
        };
        if same_origin(&current, &target) && redirects < MAX_REDIRECTS {
            redirects += 1;
            current = target;
            continue;
        }
        let why = if redirects >= MAX_REDIRECTS {
            format!("more than {MAX_REDIRECTS} redirects")
        } else {
            "another origin, which must be read (and authorized) on its own".to_string()
        };
        return Ok(Fetched::Redirect {
            from: current,
            status,
            target,
            why,
        });
    }
}

/// Read `url`: fetch (following same-origin redirects), then render.
///
/// # Errors
/// Transport failures (classified by [`crate::http`]); with
/// [`Statuses::RetryServerErrors`], a 429 or 5xx as transient; content that cannot be rendered.
pub fn read(http: &Http, url: &Url, statuses: Statuses) -> Result<Page, ToolError> {
    match fetch(http, url, ACCEPT, PAGE_BODY_LIMIT)? {
        Fetched::Redirect {
            from,
            status,
            target,
            why,
        } => Ok(Page {
            final_url: from,
            status,
            title: None,
            markdown: format!("Redirected to <{target}> (not followed: {why})."),
        }),
        Fetched::Answer {
            final_url,
            response,
        } => {
            let status = response.status;
            if statuses == Statuses::RetryServerErrors && (status == 429 || status >= 500) {
                return Err(ToolError::Transient(format!(
                    "{} answered HTTP {status}",
                    origin_of(&final_url)
                )));
            }
            render(final_url, &response)
        }
    }
}

/// Whether an answer is HTML: by its media type, or (without one, or as
/// `application/octet-stream`) by how its body starts.
pub fn is_html(resp: &Response) -> bool {
    match resp.media_type().as_deref() {
        Some("text/html" | "application/xhtml+xml") => true,
        None | Some("application/octet-stream") => {
            let start = &resp.body[..resp.body.len().min(512)];
            let head = String::from_utf8_lossy(start)
                .trim_start()
                .to_ascii_lowercase();
            head.starts_with("<!doctype html")
                || head.starts_with("<html")
                || head.contains("<body")
        }
        _ => false,
    }
}

fn render(final_url: Url, resp: &Response) -> Result<Page, ToolError> {
    let media = resp.media_type();
    let kind = if is_html(resp) {
        Kind::Html
    } else {
        match media.as_deref() {
            Some("text/plain" | "text/markdown" | "text/x-markdown") => Kind::Text,
            Some(m) if m == "application/json" || m.ends_with("+json") => Kind::Json,
            None if resp.body.is_empty() => Kind::Text,
            other => {
                return Err(ToolError::Permanent(format!(
                    "{} sent content of type {} that cannot be rendered as Markdown",
                    origin_of(&final_url),
                    other.unwrap_or("(unknown)")
                )))
            }
        }
    };
    let text = resp.text();
    let (title, markdown) = match kind {
        Kind::Html => {
            let e = markdown::extract(&text, &final_url);
            (e.title, e.markdown)
        }
        Kind::Text => (None, text.trim().to_string()),
        Kind::Json => (None, format!("```json\n{}\n```", text.trim())),
    };
    Ok(Page {
        final_url,
        status: resp.status,
        title,
        markdown,
    })
}

enum Kind {
    Html,
    Text,
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn only_web_urls_are_read() {
        assert!(web_url("https://a.example/x").is_ok());
        for bad in [
            "ftp://a.example/",
            "file:///etc/passwd",
            "a.example",
            "data:text/plain,x",
        ] {
            assert_eq!(web_url(bad).unwrap_err().exit_code(), 65, "{bad}");
        }
    }

    #[test]
    fn redirects_stay_on_the_origin() {
        let from = u("http://a.example/x");
        assert!(same_origin(&from, &u("http://a.example/y")));
        assert!(same_origin(&from, &u("HTTP://A.Example:80/y")));
        // The upgrade to https is another origin, which the call did not authorize.
        assert!(!same_origin(&from, &u("https://a.example/y")));
        assert!(!same_origin(&from, &u("https://www.a.example/y")));
        assert!(!same_origin(&from, &u("http://a.example:8080/y")));
        assert!(!same_origin(
            &u("https://a.example/"),
            &u("http://a.example/")
        ));
        assert!(!same_origin(
            &u("http://127.0.0.1:8080/"),
            &u("https://127.0.0.1:8443/")
        ));
        assert!(!same_origin(
            &u("http://127.0.0.1:8080/"),
            &u("http://localhost:8080/")
        ));
    }
}
