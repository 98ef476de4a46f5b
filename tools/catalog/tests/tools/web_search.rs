//! `web_search` against a loopback SearXNG JSON API.

use serde_json::{json, Value};

use crate::server::{Reply, Server};
use crate::{closed_port, run, run_ok};

fn searx(results: Value) -> Server {
    Server::start(move |req| {
        if req.path.ends_with("/search") && req.query_param("format").as_deref() == Some("json") {
            Reply::json(
                200,
                &json!({"query": req.query_param("q"), "number_of_results": 0,
                        "results": results, "answers": [], "suggestions": []}),
            )
        } else {
            Reply::status(404)
        }
    })
}

fn hit(n: usize) -> Value {
    json!({"url": format!("https://site{n}.example/page"), "title": format!("Result {n}"),
           "content": format!("Snippet {n}"), "engine": "bing", "score": 1.0})
}

#[test]
fn searches_and_maps_results_cut_to_the_default_ten() {
    let s = searx(Value::Array((1..=12).map(hit).collect()));
    let out = run_ok(
        "web_search",
        &json!({"query": "cedar & rust policies"}),
        &[("SEARXNG_BASE_URL", &s.url())],
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    assert_eq!(
        results[0],
        json!({"url": "https://site1.example/page", "title": "Result 1", "snippet": "Snippet 1"})
    );
    let reqs = s.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "GET");
    assert_eq!(reqs[0].path, "/search");
    assert_eq!(
        reqs[0].query_param("q").as_deref(),
        Some("cedar & rust policies")
    );
    assert_eq!(reqs[0].query_param("format").as_deref(), Some("json"));
    assert!(reqs[0]
        .header("user-agent")
        .unwrap()
        .starts_with("escepine-catalog/"));
}

#[test]
fn honours_max_results_a_base_path_and_skips_unusable_results() {
    let s = searx(json!([
        {"url": "javascript:alert(1)", "title": "bad"},
        {"title": "no url"},
        {"url": "https://ok.example/a b", "content": ""},
        hit(2), hit(3), hit(4)
    ]));
    let base = format!("{}/searxng/", s.url());
    let out = run_ok(
        "web_search",
        &json!({"query": "q", "max_results": 2}),
        &[("SEARXNG_BASE_URL", &base)],
    );
    assert_eq!(
        out,
        json!({"results": [
            {"url": "https://ok.example/a%20b", "title": ""},
            {"url": "https://site2.example/page", "title": "Result 2", "snippet": "Snippet 2"}
        ]})
    );
    assert_eq!(s.requests()[0].path, "/searxng/search");
}

#[test]
fn failures_are_classified() {
    let s = Server::start(|req| match req.query_param("q").as_deref() {
        Some("busy") => Reply::json(503, &json!({"error": "overloaded"})),
        Some("limited") => Reply::status(429),
        Some("forbidden") => Reply::text(403, "format json is disabled"),
        _ => Reply::text(200, "<html>not json</html>"),
    });
    let env = [("SEARXNG_BASE_URL", s.url())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert!(run("web_search", &json!({"query": "busy"}), &env)
        .failed(75)
        .contains("HTTP 503: overloaded"));
    run("web_search", &json!({"query": "limited"}), &env).failed(75);
    assert!(run("web_search", &json!({"query": "forbidden"}), &env)
        .failed(1)
        .contains("HTTP 403: format json is disabled"));
    assert!(run("web_search", &json!({"query": "x"}), &env)
        .failed(1)
        .contains("malformed answer"));
    let down = format!("http://127.0.0.1:{}", closed_port());
    run(
        "web_search",
        &json!({"query": "x"}),
        &[("SEARXNG_BASE_URL", &down)],
    )
    .failed(75);
    assert!(run("web_search", &json!({"query": "x"}), &[])
        .failed(78)
        .contains("SEARXNG_BASE_URL is not set"));
}
