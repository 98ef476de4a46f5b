//! The command line and the protocol's failure statuses, common to every tool.

use serde_json::json;

use crate::{run, run_raw};

#[test]
fn an_unknown_tool_or_no_tool_is_a_usage_error() {
    let r = run("no_such_tool", &json!({}), &[]);
    assert!(r.failed(64).contains("unknown tool `no_such_tool`"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_escepine-catalog"))
        .env_clear()
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn a_payload_that_is_not_json_or_not_the_schema_is_a_data_error() {
    let r = run_raw("deliverable_assemble", b"{not json", &[]);
    assert!(r.failed(65).contains("not JSON"));
    let r = run(
        "firecrawl_scrape",
        &json!({"url": "https://a.example/", "cookie": "x"}),
        &[],
    );
    assert!(
        r.failed(65).contains("unknown field `cookie`"),
        "{}",
        r.stderr
    );
    let r = run("firecrawl_scrape", &json!({"url": "ftp://a.example/"}), &[]);
    assert!(r.failed(65).contains("not an http or https URL"));
}

#[test]
fn a_malformed_base_url_is_a_configuration_error_that_does_not_echo_it() {
    let r = run(
        "web_search",
        &json!({"query": "q"}),
        &[("SEARXNG_BASE_URL", "gopher://s3cr3t-host.example/")],
    );
    let err = r.failed(78);
    assert!(err.contains("SEARXNG_BASE_URL"), "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
}
