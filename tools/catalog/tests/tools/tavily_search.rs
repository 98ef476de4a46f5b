//! `tavily_search` against a loopback Tavily-compatible API.

use serde_json::json;

use crate::run_ok;
use crate::server::{Reply, Server};

const KEY: &str = "tvly-test-KEY-0123456789";

fn tavily() -> Server {
    Server::start(|req| {
        if req.path != "/search" || req.method != "POST" {
            return Reply::status(404);
        }
        if req.header("authorization") != Some(&format!("Bearer {KEY}")) {
            return Reply::json(
                401,
                &json!({"detail": {"error": "Unauthorized: missing or invalid API key."}}),
            );
        }
        let body = req.json();
        let n = body["max_results"].as_u64().unwrap_or(5) as usize;
        let results: Vec<_> = (1..=n + 2)
            .map(|i| {
                json!({"title": format!("T{i}"), "url": format!("https://r{i}.example/"),
                            "content": format!("C{i}"), "score": if i == 2 { 1.7 } else { 0.5 },
                            "raw_content": null})
            })
            .collect();
        Reply::json(
            200,
            &json!({"query": body["query"], "answer": null, "images": [],
                                 "results": results, "response_time": "0.5"}),
        )
    })
}

#[test]
fn posts_the_documented_body_with_a_bearer_key() {
    let s = tavily();
    let base = s.url();
    let env = [("TAVILY_BASE_URL", base.as_str()), ("TAVILY_API_KEY", KEY)];
    let out = run_ok("tavily_search", &json!({"query": "egress proxies"}), &env);
    assert_eq!(out["query"], "egress proxies");
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "Tavily's default of 5, extra results cut");
    assert_eq!(
        results[0],
        json!({"url": "https://r1.example/", "title": "T1", "content": "C1", "score": 0.5})
    );
    assert!(
        results[1].get("score").is_none(),
        "a score outside [0, 1] is dropped"
    );
    let req = &s.requests()[0];
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(
        req.json(),
        json!({"query": "egress proxies", "max_results": 5, "search_depth": "basic"})
    );
    assert!(
        !String::from_utf8_lossy(&req.body).contains(KEY),
        "the key is a header only"
    );

    let out = run_ok(
        "tavily_search",
        &json!({"query": "q", "max_results": 2, "search_depth": "advanced"}),
        &env,
    );
    assert_eq!(out["results"].as_array().unwrap().len(), 2);
    assert_eq!(
        s.requests()[1].json(),
        json!({"query": "q", "max_results": 2, "search_depth": "advanced"})
    );
}

#[test]
fn a_wrong_key_is_permanent_and_never_printed() {
    let s = tavily();
    let base = s.url();
    let wrong = "tvly-WRONG-secret-value";
    let r = crate::run(
        "tavily_search",
        &json!({"query": "q"}),
        &[("TAVILY_BASE_URL", &base), ("TAVILY_API_KEY", wrong)],
    );
    let err = r.failed(1);
    assert!(
        err.contains("HTTP 401: Unauthorized: missing or invalid API key."),
        "{err}"
    );
    assert!(!err.contains(wrong));
}

#[test]
fn without_a_key_the_default_api_is_not_configured() {
    let r = crate::run("tavily_search", &json!({"query": "q"}), &[]);
    assert!(r.failed(78).contains("TAVILY_API_KEY is not set"));
}
