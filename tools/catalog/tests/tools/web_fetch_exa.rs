//! `web_fetch_exa`: direct bulk reads and the Exa-compatible contents API.

use serde_json::json;

use crate::firecrawl_scrape::site;
use crate::server::{Reply, Server};
use crate::{closed_port, run, run_ok};

#[test]
fn reads_each_page_in_order_reporting_every_status() {
    let s = site(String::new());
    let u = |p: &str| format!("{}{p}", s.url());
    let urls = [
        u("/article"),
        u("/notfound"),
        u("/busy"),
        u("/moved"),
        u("/plain"),
    ];
    let out = run_ok("web_fetch_exa", &json!({ "urls": urls }), &[]);
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for (r, url) in results.iter().zip(&urls) {
        assert_eq!(r["url"], url.as_str());
    }
    let codes: Vec<u64> = results
        .iter()
        .map(|r| r["status_code"].as_u64().unwrap())
        .collect();
    assert_eq!(
        codes,
        [200, 404, 503, 200, 200],
        "a bulk read reports 5xx as data"
    );
    assert_eq!(results[0]["title"], "Egress proxies explained");
    assert!(results[3]["markdown"]
        .as_str()
        .unwrap()
        .contains("egress proxy"));
    assert_eq!(results[4]["markdown"], "just text");
}

#[test]
fn an_unreachable_page_fails_the_call_as_transient() {
    let s = site(String::new());
    let urls = [
        format!("{}/article", s.url()),
        format!("http://127.0.0.1:{}/x", closed_port()),
    ];
    run("web_fetch_exa", &json!({ "urls": urls }), &[]).failed(75);
    let urls = [format!("{}/doc.pdf", s.url())];
    assert!(run("web_fetch_exa", &json!({ "urls": urls }), &[])
        .failed(1)
        .contains("application/pdf"));
}

const KEY: &str = "exa-test-key-abcdef";

fn exa() -> Server {
    Server::start(|req| {
        if (req.method.as_str(), req.path.as_str()) != ("POST", "/contents") {
            return Reply::status(404);
        }
        if req.header("x-api-key") != Some(KEY) {
            return Reply::json(401, &json!({"error": "Invalid API key", "requestId": "r0"}));
        }
        let urls: Vec<String> = req.json()["urls"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut results = Vec::new();
        let mut statuses = Vec::new();
        // Answer in reverse order, to prove results are matched by URL.
        for url in urls.iter().rev() {
            if url.contains("missing") {
                statuses.push(json!({"id": url, "status": "error",
                                     "error": {"tag": "CRAWL_NOT_FOUND", "httpStatusCode": 404}}));
            } else if url.contains("vanished") {
                // Neither a result nor a status.
            } else {
                results.push(
                    json!({"id": url, "url": url, "title": format!("Title of {url}"),
                                    "text": format!("Text of {url}"), "author": null}),
                );
                statuses.push(json!({"id": url, "status": "success"}));
            }
        }
        Reply::json(
            200,
            &json!({"requestId": "r1", "results": results, "statuses": statuses,
                                 "costDollars": {"total": 0.001}}),
        )
    })
}

#[test]
fn with_a_key_the_exa_api_fetches_instead() {
    let api = exa();
    let base = api.url();
    let env = [("EXA_BASE_URL", base.as_str()), ("EXA_API_KEY", KEY)];
    let urls = [
        "https://a.example/one",
        "https://b.example/missing",
        "https://c.example/two",
    ];
    let out = run_ok("web_fetch_exa", &json!({ "urls": urls }), &env);
    assert_eq!(
        out,
        json!({"results": [
            {"url": urls[0], "title": format!("Title of {}", urls[0]),
             "markdown": format!("Text of {}", urls[0]), "status_code": 200},
            {"url": urls[1], "markdown": "", "status_code": 404},
            {"url": urls[2], "title": format!("Title of {}", urls[2]),
             "markdown": format!("Text of {}", urls[2]), "status_code": 200},
        ]})
    );
    let req = &api.requests()[0];
    assert_eq!(req.json(), json!({"urls": urls, "text": true}));
    assert_eq!(
        req.header("authorization"),
        None,
        "the key travels as x-api-key"
    );

    let r = run(
        "web_fetch_exa",
        &json!({"urls": ["https://a.example/one", "https://v.example/vanished"]}),
        &env,
    );
    assert!(r.failed(1).contains("returned nothing for URL #2"));
    let r = run(
        "web_fetch_exa",
        &json!({"urls": ["https://a.example/one"]}),
        &[("EXA_BASE_URL", &base), ("EXA_API_KEY", "exa-wrong")],
    );
    let msg = r.failed(1);
    assert!(
        msg.contains("HTTP 401: Invalid API key") && !msg.contains("exa-wrong"),
        "{msg}"
    );
}
