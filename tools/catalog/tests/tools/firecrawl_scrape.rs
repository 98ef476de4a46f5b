//! `firecrawl_scrape`: direct reads (with and without a proxy) and the Firecrawl-compatible API.

use serde_json::json;

use crate::server::{Reply, Server};
use crate::{run, run_ok};

pub const ARTICLE: &str = r#"<!DOCTYPE html><html><head><title>Egress proxies explained</title></head>
<body><header><a href="/">Home</a> <nav><a href="/a">A</a> <a href="/b">B</a></nav></header>
<main><article><h1>Egress proxies</h1>
<p>An egress proxy is the only way out of a sandbox: it admits the hosts of the tool's profile,
refuses everything else and records each refusal, so that what a tool tried to reach is evidence.</p>
<p>Loopback and private addresses are refused unless an overlay names them as IP literals, which
keeps a name from ever unlocking an internal address through DNS rebinding.</p>
</article></main><footer>© footer</footer><script>track()</script></body></html>"#;

/// A site: `/article`, `/notfound` (404 page), `/busy` (503), `/moved` (same-origin redirect to
/// `/article`), `/away` (redirect to `elsewhere`), `/doc.pdf`, `/plain`.
pub fn site(elsewhere: String) -> Server {
    Server::start(move |req| match req.path.as_str() {
        "/article" => Reply::html(ARTICLE),
        "/notfound" => Reply::new(
            404,
            "text/html",
            "<html><head><title>Not here</title></head><body><p>No such page.</p></body></html>",
        ),
        "/busy" => Reply::status(503),
        "/moved" => Reply::redirect(301, "/article"),
        "/away" => Reply::redirect(302, &format!("{elsewhere}/article")),
        "/doc.pdf" => Reply::new(200, "application/pdf", "%PDF-1.7"),
        "/plain" => Reply::text(200, "  just text\n"),
        _ => Reply::status(404),
    })
}

#[test]
fn reads_a_page_and_renders_its_main_content() {
    let s = site(String::new());
    let url = format!("{}/article", s.url());
    let out = run_ok("firecrawl_scrape", &json!({ "url": url }), &[]);
    assert_eq!(out["url"], url.as_str());
    assert_eq!(out["title"], "Egress proxies explained");
    assert_eq!(out["status_code"], 200);
    let md = out["markdown"].as_str().unwrap();
    assert!(
        md.contains("An egress proxy is the only way out of a sandbox"),
        "{md}"
    );
    for chrome in ["Home", "footer", "track()"] {
        assert!(!md.contains(chrome), "{chrome} in {md}");
    }
    let req = &s.requests()[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("GET", "/article")
    );
    assert!(req.header("accept").unwrap().starts_with("text/html"));
}

#[test]
fn statuses_redirects_and_content_types() {
    let other = Server::start(|_| Reply::html(ARTICLE));
    let s = site(other.url());
    let page = |p: &str| json!({ "url": format!("{}{p}", s.url()) });

    let out = run_ok("firecrawl_scrape", &page("/notfound"), &[]);
    assert_eq!(out["status_code"], 404);
    assert_eq!(out["title"], "Not here");
    assert!(out["markdown"].as_str().unwrap().contains("No such page."));

    let r = run("firecrawl_scrape", &page("/busy"), &[]);
    assert!(r.failed(75).contains("HTTP 503"));

    let out = run_ok("firecrawl_scrape", &page("/moved"), &[]);
    assert_eq!(out["status_code"], 200);
    assert_eq!(
        out["url"],
        format!("{}/moved", s.url()),
        "the URL asked for"
    );
    assert!(out["markdown"].as_str().unwrap().contains("egress proxy"));

    let out = run_ok("firecrawl_scrape", &page("/away"), &[]);
    assert_eq!(out["status_code"], 302);
    let md = out["markdown"].as_str().unwrap();
    assert!(
        md.contains(&format!("Redirected to <{}/article>", other.url())),
        "{md}"
    );
    assert!(md.contains("not followed"), "{md}");
    assert!(
        other.requests().is_empty(),
        "a redirect never leaves the authorized origin"
    );

    let r = run("firecrawl_scrape", &page("/doc.pdf"), &[]);
    assert!(r.failed(1).contains("application/pdf"));

    let out = run_ok("firecrawl_scrape", &page("/plain"), &[]);
    assert_eq!(out["markdown"], "just text");
    assert!(out.get("title").is_none());
}

#[test]
fn goes_through_the_proxy_the_environment_names() {
    // The "proxy" accepts CONNECT and then serves the tunnelled request itself, so the page's
    // host never has to resolve: the client must not resolve it either.
    let proxy = Server::start(|req| {
        if req.method == "CONNECT" {
            return if req.target == "blocked.test:80" {
                Reply::text(403, "not in the profile")
            } else if req.target == "flaky.test:80" {
                Reply::status(502)
            } else {
                Reply::status(200)
            };
        }
        Reply::html(ARTICLE)
    });
    let purl = proxy.url();
    let env = [
        ("HTTP_PROXY", purl.as_str()),
        ("HTTPS_PROXY", purl.as_str()),
    ];
    let out = run_ok(
        "firecrawl_scrape",
        &json!({"url": "http://docs.test/guide/proxies"}),
        &env,
    );
    assert!(out["markdown"].as_str().unwrap().contains("egress proxy"));
    let reqs = proxy.requests();
    assert_eq!(reqs[0].method, "CONNECT");
    assert_eq!(reqs[0].target, "docs.test:80");
    assert_eq!(reqs[1].path, "/guide/proxies");
    assert_eq!(reqs[1].tunnel.as_deref(), Some("docs.test:80"));
    assert_eq!(reqs[1].header("host"), Some("docs.test"));

    let r = run(
        "firecrawl_scrape",
        &json!({"url": "http://blocked.test/"}),
        &env,
    );
    assert!(r.failed(1).contains("egress proxy refused"), "{}", r.stderr);
    run(
        "firecrawl_scrape",
        &json!({"url": "http://flaky.test/"}),
        &env,
    )
    .failed(75);

    // An https URL goes to HTTPS_PROXY with CONNECT host:443; NO_PROXY exempts nothing here.
    let https_proxy = Server::start(|_| Reply::text(403, "refused"));
    let hp = https_proxy.url();
    let r = run(
        "firecrawl_scrape",
        &json!({"url": "https://secure.test/x"}),
        &[
            ("HTTP_PROXY", &purl),
            ("https_proxy", &hp),
            ("NO_PROXY", "other.test"),
        ],
    );
    r.failed(1);
    assert_eq!(https_proxy.requests()[0].target, "secure.test:443");
}

fn firecrawl(key: Option<&'static str>) -> Server {
    Server::start(move |req| {
        if (req.method.as_str(), req.path.as_str()) != ("POST", "/v1/scrape") {
            return Reply::status(404);
        }
        if let Some(k) = key {
            if req.header("authorization") != Some(&format!("Bearer {k}")) {
                return Reply::json(401, &json!({"success": false, "error": "Unauthorized"}));
            }
        }
        let url = req.json()["url"].as_str().unwrap_or_default().to_string();
        if url.ends_with("/payment") {
            return Reply::json(402, &json!({"success": false, "error": "Payment required"}));
        }
        if url.ends_with("/failed") {
            return Reply::json(200, &json!({"success": false, "error": "Scrape failed"}));
        }
        let status = if url.ends_with("/gone") {
            404
        } else if url.ends_with("/down") {
            500
        } else {
            200
        };
        Reply::json(
            200,
            &json!({"success": true, "data": {
                "markdown": "# Remote\n\nScraped by the API.",
                "metadata": {"title": "Remote page", "statusCode": status, "sourceURL": url,
                             "url": url, "language": "en"}
            }}),
        )
    })
}

#[test]
fn with_a_key_the_firecrawl_api_scrapes_instead() {
    const KEY: &str = "fc-test-0123456789abcdef";
    let api = firecrawl(Some(KEY));
    let target = Server::start(|_| Reply::html(ARTICLE));
    let base = format!("{}/", api.url());
    let env = [
        ("FIRECRAWL_BASE_URL", base.as_str()),
        ("FIRECRAWL_API_KEY", KEY),
    ];
    let url = format!("{}/article", target.url());
    let out = run_ok("firecrawl_scrape", &json!({ "url": url }), &env);
    assert_eq!(
        out,
        json!({"url": url, "title": "Remote page", "markdown": "# Remote\n\nScraped by the API.",
               "status_code": 200})
    );
    assert!(
        target.requests().is_empty(),
        "the page itself is not fetched"
    );
    let req = &api.requests()[0];
    assert_eq!(req.json(), json!({"url": url, "formats": ["markdown"]}));
    assert_eq!(req.header("content-type"), Some("application/json"));

    let out = run_ok(
        "firecrawl_scrape",
        &json!({"url": "https://x.example/gone"}),
        &env,
    );
    assert_eq!(out["status_code"], 404);
    run(
        "firecrawl_scrape",
        &json!({"url": "https://x.example/down"}),
        &env,
    )
    .failed(75);
    let err = run(
        "firecrawl_scrape",
        &json!({"url": "https://x.example/failed"}),
        &env,
    );
    assert!(err.failed(1).contains("Scrape failed"));
    let err = run(
        "firecrawl_scrape",
        &json!({"url": "https://x.example/payment"}),
        &env,
    );
    assert!(err.failed(1).contains("HTTP 402: Payment required"));
    let err = run(
        "firecrawl_scrape",
        &json!({"url": "https://x.example/"}),
        &[
            ("FIRECRAWL_BASE_URL", &base),
            ("FIRECRAWL_API_KEY", "fc-wrong-key"),
        ],
    );
    let msg = err.failed(1);
    assert!(
        msg.contains("401") && !msg.contains("fc-wrong-key"),
        "{msg}"
    );
}

#[test]
fn a_self_hosted_firecrawl_needs_no_key() {
    let api = firecrawl(None);
    let base = api.url();
    let out = run_ok(
        "firecrawl_scrape",
        &json!({"url": "https://x.example/a"}),
        &[("FIRECRAWL_BASE_URL", &base)],
    );
    assert_eq!(out["title"], "Remote page");
    assert_eq!(api.requests()[0].header("authorization"), None);
}
