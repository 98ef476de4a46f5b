//! `tavily_crawl` over a loopback site: scope, robots.txt, depth and page limits.

use std::sync::Arc;

use serde_json::json;

use crate::server::{Reply, Server};
use crate::{run, run_ok};

fn page(title: &str, links: &[&str]) -> Reply {
    let links: String = links
        .iter()
        .map(|l| format!("<a href=\"{l}\">{l}</a> "))
        .collect();
    Reply::html(&format!(
        "<html><head><title>{title}</title></head><body><p>{title}</p>{links}</body></html>"
    ))
}

/// `/` → `/a`, `/b#frag`, `/private/x`, the external server, `/report.pdf`, `mailto:`;
/// `/a` → `/c`, `/`; `/b` → `/missing`; `/c` → `/d`; robots.txt disallows `/private/`.
fn site(external: String) -> Server {
    let external = Arc::new(external);
    Server::start(move |req| {
        match req.path.as_str() {
        "/robots.txt" => Reply::text(
            200,
            "User-agent: *\nDisallow: /private/\n\nUser-agent: escepine-catalog\nDisallow: /private/\nAllow: /\n",
        ),
        "/" => page(
            "Home",
            &["/a", "/b#frag", "/private/x", &format!("{external}/ext"), "/report.pdf", "mailto:x@y.example"],
        ),
        "/a" => page("Page A", &["/c", "/"]),
        "/b" => page("Page B", &["/missing"]),
        "/c" => page("Page C", &["/d"]),
        "/d" => page("Page D", &[]),
        "/report.pdf" => Reply::new(200, "application/pdf", "%PDF"),
        _ => Reply::status(404),
    }
    })
}

#[test]
fn maps_the_site_within_scope_robots_and_depth() {
    let ext = Server::start(|_| Reply::html("<title>External</title>"));
    let s = site(ext.url());
    let start = format!("{}/", s.url());
    let out = run_ok("tavily_crawl", &json!({ "url": start }), &[]);
    let u = |p: &str| format!("{}{p}", s.url());
    assert_eq!(out["start"], start.as_str());
    let pages: Vec<(String, Option<String>, u64)> = out["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["url"].as_str().unwrap().to_string(),
                p["title"].as_str().map(str::to_string),
                p["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pages,
        [
            (u("/"), Some("Home".into()), 0),
            (u("/a"), Some("Page A".into()), 1),
            (u("/b"), Some("Page B".into()), 1),
            (u("/report.pdf"), None, 1),
            (u("/c"), Some("Page C".into()), 2),
        ]
    );
    assert_eq!(out["truncated"], true, "/d lies beyond max_depth 2");
    assert!(ext.requests().is_empty(), "out of scope: never fetched");
    assert!(
        s.requests_to("/private/x").is_empty(),
        "robots.txt honoured"
    );
    assert_eq!(
        s.requests_to("/robots.txt").len(),
        1,
        "robots.txt read once"
    );
    assert_eq!(s.requests_to("/d").len(), 0);
}

#[test]
fn page_and_depth_limits() {
    let s = site(String::from("http://127.0.0.1:9"));
    let start = format!("{}/", s.url());
    let out = run_ok(
        "tavily_crawl",
        &json!({"url": start, "max_results": 2}),
        &[],
    );
    assert_eq!(out["pages"].as_array().unwrap().len(), 2);
    assert_eq!(out["truncated"], true);

    let out = run_ok("tavily_crawl", &json!({"url": start, "max_depth": 0}), &[]);
    assert_eq!(out["pages"].as_array().unwrap().len(), 1);
    assert_eq!(out["truncated"], true);

    let out = run_ok(
        "tavily_crawl",
        &json!({"url": format!("{}/c", s.url()), "max_depth": 5}),
        &[],
    );
    assert_eq!(out["pages"].as_array().unwrap().len(), 2, "/c and /d");
    assert_eq!(out["truncated"], false, "nothing left unvisited");
}

#[test]
fn robots_txt_failures_disallow_and_missing_files_allow() {
    let down = Server::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::status(500),
        _ => page("Home", &[]),
    });
    let out = run_ok("tavily_crawl", &json!({"url": down.url()}), &[]);
    assert_eq!(out["pages"], json!([]));
    assert!(
        down.requests_to("/").is_empty(),
        "nothing crawled under a failing robots.txt"
    );

    let none = Server::start(|req| match req.path.as_str() {
        "/" => page("Home", &[]),
        _ => Reply::status(404),
    });
    let out = run_ok("tavily_crawl", &json!({"url": none.url()}), &[]);
    assert_eq!(out["pages"][0]["title"], "Home");
    assert_eq!(out["truncated"], false);
}

#[test]
fn a_failing_start_page_fails_the_call() {
    let port = crate::closed_port();
    run(
        "tavily_crawl",
        &json!({"url": format!("http://127.0.0.1:{port}/")}),
        &[],
    )
    .failed(75);
    assert!(run("tavily_crawl", &json!({"url": "not a host!"}), &[])
        .failed(65)
        .contains("names no web host"));
}
