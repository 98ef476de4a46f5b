//! `deliverable_assemble` as a process: every format, the evidence index, determinism.

use serde_json::{json, Value};

use crate::{run, run_ok};

const E1: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const E2: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

fn payload(format: &str, index: bool) -> Value {
    json!({
        "format": format,
        "include_evidence_index": index,
        "title": "Egress <control> in agents",
        "summary": "Agents reach the web only through a proxy [1].\n\nLinkedIn stays out [2].",
        "sources": [
            {"url": "https://docs.example/egress", "title": "Egress & proxies",
             "excerpt": "The proxy admits the profile's hosts.", "ledger_entry": E1},
            {"url": "https://docs.example/policies", "title": "Policies",
             "excerpt": "forbid wins over permit", "ledger_entry": E2}
        ]
    })
}

#[test]
fn every_format_carries_the_evidence_index() {
    for format in ["markdown", "html", "json"] {
        let out = run_ok("deliverable_assemble", &payload(format, true), &[]);
        assert_eq!(out["format"], format);
        assert_eq!(
            out["evidence_index"],
            json!([
                {"n": 1, "url": "https://docs.example/egress", "title": "Egress & proxies",
                 "ledger_entry": E1},
                {"n": 2, "url": "https://docs.example/policies", "title": "Policies",
                 "ledger_entry": E2}
            ])
        );
        let content = out["content"].as_str().unwrap();
        assert!(
            content.contains(E1) && content.contains(E2),
            "{format}: {content}"
        );
    }
    let md = run_ok("deliverable_assemble", &payload("markdown", true), &[]);
    let md = md["content"].as_str().unwrap();
    assert!(md.starts_with("# Egress \\<control\\> in agents\n"), "{md}");
    assert!(
        md.contains(&format!("| 1 | <https://docs.example/egress> | `{E1}` |")),
        "{md}"
    );
    let html = run_ok("deliverable_assemble", &payload("html", true), &[]);
    let html = html["content"].as_str().unwrap();
    assert!(
        html.contains("<h1>Egress &lt;control&gt; in agents</h1>"),
        "{html}"
    );
    assert!(html.contains(">Egress &amp; proxies</a>"), "{html}");
    let json_doc = run_ok("deliverable_assemble", &payload("json", true), &[]);
    let doc: Value = serde_json::from_str(json_doc["content"].as_str().unwrap()).unwrap();
    assert_eq!(doc["sources"][1]["ledger_entry"], E2);
}

#[test]
fn without_the_index_flag_there_is_no_index() {
    let out = run_ok("deliverable_assemble", &payload("markdown", false), &[]);
    assert_eq!(out["evidence_index"], json!([]));
    assert!(!out["content"].as_str().unwrap().contains(E1));
}

#[test]
fn the_same_payload_gives_byte_identical_output() {
    for format in ["markdown", "html", "json"] {
        let a = run("deliverable_assemble", &payload(format, true), &[]);
        let b = run("deliverable_assemble", &payload(format, true), &[]);
        assert_eq!(a.code, 0);
        assert_eq!(a.stdout, b.stdout, "{format}");
    }
}
