//! Egress from the sandbox: only through the call's proxy, only to its profile's entries — on
//! both isolation tiers (`on_namespaces`, `on_gvisor`).

use crate::support::host;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::sandbox::*;
use escepine_contract::{Isolation, Principal};
use escepine_ledger::memory::MemoryLedger;
use escepine_ledger::record::Record;
use escepine_registry::egress::EgressEntry;
use escepine_runtime::overlay::Overlay;
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_runtime::Runtime;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A one-line HTTP server on 127.0.0.1 counting its connections.
async fn http_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    (port, hits)
}

fn entry(s: &str) -> EgressEntry {
    s.parse().unwrap()
}

fn resolver() -> MapResolver {
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    MapResolver(BTreeMap::from([(
        "internal.test".to_string(),
        vec![loopback],
    )]))
}

async fn only_the_profile_is_reachable_and_refusals_are_evidence(tier: Isolation) {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let (allowed, allowed_hits) = http_server("hello from the allowed server").await;
    let (other, other_hits) = http_server("you should not see this").await;
    let ex = executor(resolver(), dir.path());
    let egress = [
        entry(&format!("127.0.0.1:{allowed}")),
        entry(&format!("internal.test:{other}")),
    ];
    let payload = json!({ "requests": [
        { "method": "GET", "target": format!("127.0.0.1:{allowed}"), "path": "/plain" },
        { "method": "CONNECT", "target": format!("127.0.0.1:{allowed}"), "path": "/tunnel" },
        { "method": "CONNECT", "target": format!("127.0.0.1:{other}") },
        { "method": "GET", "target": format!("127.0.0.1:{other}"), "path": "/" },
        { "method": "CONNECT", "target": format!("internal.test:{other}") },
    ]});
    let attempted = attempt(
        &ex,
        &Target::namespaces(Root::Binary)
            .with_tier(tier)
            .hostile_record("hostile_http", "http"),
        payload,
        &BTreeMap::new(),
        &egress,
        Duration::from_secs(30),
    )
    .await;
    let done = attempted.result.expect("the tool runs");
    let out = &done.output;
    assert_eq!(out["proxy"], "http://127.0.0.1:3128", "{out}");
    let results = out["results"].as_array().unwrap();
    let status = |i: usize| results[i]["status"].as_str().unwrap_or("").to_string();
    let body = |i: usize| results[i]["body"].as_str().unwrap_or("").to_string();
    // The entry naming 127.0.0.1:<port> reaches the real server, plain and tunnelled.
    assert!(status(0).contains("200"), "{out}");
    assert!(body(0).contains("hello from the allowed server"), "{out}");
    assert!(status(1).contains("200"), "{out}");
    assert!(body(1).contains("hello from the allowed server"), "{out}");
    // A loopback port not in the profile, directly or by an allowlisted name that resolves
    // to loopback: refused before any connection.
    for i in 2..5 {
        assert!(
            !status(i).contains("200"),
            "request {i} went through: {out}"
        );
        assert!(!body(i).contains("you should not see this"), "{out}");
    }
    assert_eq!(
        other_hits.load(Ordering::SeqCst),
        0,
        "a packet reached the other port"
    );
    assert_eq!(allowed_hits.load(Ordering::SeqCst), 2);
    // Each refusal is in the attempt's evidence.
    let refusals = &attempted.egress.refusals;
    assert_eq!(refusals.len(), 3, "{refusals:?}");
    assert!(
        refusals.iter().any(|r| r.contains("internal.test")),
        "{refusals:?}"
    );
    assert!(
        refusals.iter().all(|r| r.starts_with("refused")),
        "{refusals:?}"
    );
    host.assert_clean().await;
}

async fn an_empty_profile_means_no_network_at_all(tier: Isolation) {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let (port, hits) = http_server("unreachable").await;
    let ex = executor(resolver(), dir.path());
    let done = run(
        &ex,
        &Target::namespaces(Root::Binary)
            .with_tier(tier)
            .hostile_record("hostile_connect", "connect"),
        json!({ "addr": format!("127.0.0.1:{port}") }),
        &BTreeMap::new(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect("the tool runs");
    // Loopback is down: not even the sandbox's own 127.0.0.1 answers.
    assert_eq!(
        done.output["connect"]["ok"],
        json!(false),
        "{}",
        done.output
    );
    let relay = run(
        &ex,
        &Target::namespaces(Root::Binary)
            .with_tier(tier)
            .hostile_record("hostile_connect", "connect"),
        json!({ "addr": "127.0.0.1:3128" }),
        &BTreeMap::new(),
        &[],
        Duration::from_secs(20),
    )
    .await
    .expect("the tool runs");
    assert_eq!(
        relay.output["connect"]["ok"],
        json!(false),
        "{}",
        relay.output
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    host.assert_clean().await;
}

fn registry(dir: &Path, hostile: &Path, tier: Isolation) -> escepine_policy::BoundRegistry {
    let records = dir.join("records");
    let policies = dir.join("policies");
    std::fs::create_dir_all(&records).unwrap();
    std::fs::create_dir_all(&policies).unwrap();
    let record = json!({
        "tool_id": "web_get",
        "version": "1.0.0",
        "description": "Fetches through the proxy.",
        "input_schema": {
            "type": "object", "additionalProperties": false,
            "properties": { "requests": { "type": "array", "items": {
                "type": "object", "additionalProperties": false,
                "properties": {
                    "method": { "type": "string" },
                    "target": { "type": "string" },
                    "path": { "type": "string" }
                }
            } } },
            "required": ["requests"]
        },
        "output_schema": {
            "type": "object", "additionalProperties": false,
            "properties": {
                "proxy": { "type": "string" },
                "results": { "type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "properties": {
                        "ok": { "type": "boolean" },
                        "status": { "type": "string" },
                        "body": { "type": "string" },
                        "error": { "type": "string" }
                    }
                } }
            }
        },
        "side_effect_class": "read-only",
        "accepts_credentials": false,
        "timeout_ms": 20000,
        "retry": { "max_attempts": 1, "backoff_ms": 0 },
        "on_failure": ["halt"],
        "endpoint": { "transport": "stdio-json", "command": hostile.display().to_string(), "args": ["http"] },
        "auth": { "secrets": [] },
        "sandbox_profile": { "egress": [], "filesystem": "workspace", "isolation": tier.as_str() }
    });
    std::fs::write(records.join("web_get.json"), record.to_string()).unwrap();
    std::fs::write(
        policies.join("all.cedar"),
        "@id(\"permit-all\")\npermit(principal, action, resource);\n",
    )
    .unwrap();
    escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(records)
            .policies(policies)
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

async fn an_overlay_names_a_loopback_server_reached_through_the_proxy(tier: Isolation) {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let run_dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(run_dir.path());
    let (port, hits) = http_server("served on loopback").await;
    let overlay = Overlay::default().admit("web_get", entry(&format!("127.0.0.1:{port}")));
    let ex: SandboxExecutor = executor(resolver(), run_dir.path());
    let runtime = Runtime::builder(registry(dir.path(), &hostile(), tier))
        .ledger(Arc::new(MemoryLedger::new()))
        .executor(Arc::new(ex))
        .overlay(overlay)
        .build()
        .unwrap();
    let out: Value = runtime
        .dispatch(
            &Principal::agent("alice"),
            "web_get",
            json!({ "requests": [
                { "method": "GET", "target": format!("127.0.0.1:{port}"), "path": "/" },
                { "method": "CONNECT", "target": "127.0.0.1:1" }
            ]}),
        )
        .await
        .unwrap();
    assert!(
        out["results"][0]["status"]
            .as_str()
            .unwrap()
            .contains("200"),
        "{out}"
    );
    assert_eq!(out["results"][0]["body"], "served on loopback", "{out}");
    assert!(
        !out["results"][1]["status"]
            .as_str()
            .unwrap()
            .contains("200"),
        "{out}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // The overlay and the refusal are in the evidence.
    let entries = runtime.ledger().entries().unwrap();
    let intent = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Intent(i) => Some(i.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(intent.overlay, [format!("127.0.0.1:{port}")]);
    let outcome = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Outcome(o) => Some(o.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(outcome.attempts[0].egress_refusals.len(), 1, "{outcome:?}");
    assert!(outcome.attempts[0].egress_refusals[0].contains("127.0.0.1:1"));
    drop(runtime);
    host.assert_clean().await;
}

/// The relay runs on PID 1's own thread: many connections at once, each moving more than
/// every buffer on the way holds, each way at the same time, arrive whole and in order; and
/// PID 1 still reaps the processes it inherits meanwhile.
async fn the_relay_splices_many_connections_at_once_without_a_thread(tier: Isolation) {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host = HostSnapshot::take(dir.path());
    let port = escepine_testkit::echo::start().await;
    let ex = executor(resolver(), dir.path());
    let target = format!("127.0.0.1:{port}");
    let (connections, bytes) = (8, 1 << 20);
    let done = run(
        &ex,
        &Target::namespaces(Root::Binary)
            .with_tier(tier)
            .hostile_record("hostile_bulk", "bulk"),
        json!({ "target": target, "connections": connections, "bytes": bytes, "orphans": 3 }),
        &BTreeMap::new(),
        &[entry(&target)],
        Duration::from_secs(60),
    )
    .await
    .expect("the tool runs");
    let out = &done.output;
    let results = out["results"].as_array().expect("results");
    assert_eq!(results.len(), connections, "{out}");
    for (n, r) in results.iter().enumerate() {
        assert_eq!(r["ok"], json!(true), "connection {n}: {r}");
        assert_eq!(r["intact"], json!(true), "connection {n}: {r}");
    }
    // PID 1 (the gVisor guest on that tier) serves the relay and watches its children on its
    // one thread.
    assert_eq!(out["pid1_threads"], json!(1), "{out}");
    assert_eq!(out["zombies_left"], json!(0), "{out}");
    host.assert_clean().await;
}

crate::support::sandbox::on_tiers!(
    the_relay_splices_many_connections_at_once_without_a_thread,
    only_the_profile_is_reachable_and_refusals_are_evidence,
    an_empty_profile_means_no_network_at_all,
    an_overlay_names_a_loopback_server_reached_through_the_proxy,
);
