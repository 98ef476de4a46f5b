//! A governed call to a remote MCP server against the same call made directly by an official
//! SDK's client, interleaved in one run, reported as p50 and p99 and their ratios.
//!
//! The remote server is `escepine serve`'s HTTP edge in process on loopback (rmcp, stateless
//! 2026-07-28 for a client that speaks it), serving `e_echo` to the bearer token `REMOTE_TOKEN`.
//!
//! - `direct`: rmcp's own client (the official Rust SDK), one session held open,
//!   `tools/call e_echo` — what an agent holding the server's token would do;
//! - `governed`: `Runtime::call` of the record `r_echo`, an `mcp-http` endpoint naming that
//!   server with `auth.bearer`: input gate, Cedar, intent and outcome in an in-memory ledger,
//!   the runtime's own client (the pinned definition compared by a `tools/list` before the
//!   `tools/call`, every call), the output gate — the agent holds nothing.
//!
//! `cargo bench -p escepine-mcp --features in-process --bench remote` measures (2000 calls
//! each, after 100 of warm-up); without `--bench` (as `cargo test --benches` runs it) it makes a
//! few calls of each and checks them, the smoke run CI does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_contract::Principal;
use escepine_identity::tokens::Tokens;
use escepine_mcp::auth::Authenticator;
use escepine_runtime::executor::ProcessExecutor;
use escepine_runtime::secrets::MapSecrets;
use escepine_runtime::{CallOptions, Runtime};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};

#[path = "support/edge_server.rs"]
mod edge_server;

const REMOTE_TOKEN: &str = "remote-bench-token-0123456789";

/// The registry of one remote tool, `r_echo`, calling `e_echo` at `url`.
fn governed(url: &str, dir: &std::path::Path) -> Runtime {
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .expect("a port");
    let records = dir.join("records");
    let policies = dir.join("policies");
    std::fs::create_dir_all(&records).expect("mkdir");
    std::fs::create_dir_all(&policies).expect("mkdir");
    let record = json!({
        "tool_id": "r_echo", "version": "1.0.0", "description": "Echo, remotely.",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["text"],
                         "properties": {"text": {"type": "string", "maxLength": 200}}},
        "output_schema": {"type": "object", "additionalProperties": false, "required": ["echo"],
                          "properties": {"echo": {"type": "object", "additionalProperties": false,
                              "required": ["text"], "properties": {"text": {"type": "string"}}}}},
        "side_effect_class": "read-only", "accepts_credentials": false, "timeout_ms": 10000,
        "retry": {"max_attempts": 1, "backoff_ms": 0}, "on_failure": ["halt"],
        "endpoint": {"transport": "mcp-http", "url": url, "tool": "e_echo",
                     "auth": {"bearer": "REMOTE_TOKEN"}},
        "auth": {"secrets": ["REMOTE_TOKEN"]},
        "sandbox_profile": {"egress": [format!("127.0.0.1:{port}")], "filesystem": "workspace"},
    });
    std::fs::write(records.join("r_echo.json"), record.to_string()).expect("write");
    std::fs::write(
        policies.join("p.cedar"),
        "permit(principal == Agent::\"bench\", action == Action::\"r_echo\", resource);",
    )
    .expect("write");
    std::fs::write(policies.join("s.cedarschema"), "entity Agent;").expect("write");
    let registry = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(records)
            .policies(policies),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let secrets = MapSecrets(BTreeMap::from([(
        "REMOTE_TOKEN".to_string(),
        REMOTE_TOKEN.to_string(),
    )]));
    Runtime::builder(registry)
        .ledger(Arc::new(escepine_ledger::memory::MemoryLedger::new()))
        .executor(Arc::new(ProcessExecutor::new()))
        .secrets(Arc::new(secrets))
        .build()
        .expect("runtime")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let measure = std::env::args().any(|a| a == "--bench");
    let (warmup, calls) = if measure { (100, 2000) } else { (2, 5) };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let dir = tempfile::tempdir().expect("temp dir");
    rt.block_on(async {
        let mut tokens = Tokens::default();
        tokens.insert(REMOTE_TOKEN, Principal::agent("alice"));
        let entities = json!([
            {"uid": {"type": "Team", "id": "editors"}, "attrs": {}, "parents": []},
            {"uid": {"type": "Agent", "id": "alice"}, "attrs": {},
             "parents": [{"type": "Team", "id": "editors"}]},
        ]);
        let url =
            edge_server::serve(0, Authenticator::Tokens(Arc::new(tokens)), Some(entities)).await;
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(REMOTE_TOKEN),
        );
        let client = ().serve(transport).await.expect("the SDK client connects");
        let runtime = governed(&url, dir.path());
        let who = Principal::agent("bench");
        let args = json!({ "text": "bench" });
        let mut direct = Vec::with_capacity(calls);
        let mut gov = Vec::with_capacity(calls);
        for i in 0..(warmup + calls) {
            let started = Instant::now();
            let r = client
                .call_tool(
                    CallToolRequestParams::new("e_echo")
                        .with_arguments(args.as_object().cloned().unwrap_or_default()),
                )
                .await
                .expect("direct call");
            let d = started.elapsed();
            assert_eq!(
                r.structured_content
                    .as_ref()
                    .and_then(|v| v.pointer("/echo/text")),
                Some(&Value::from("bench"))
            );
            let started = Instant::now();
            let report = runtime
                .call(&who, "r_echo", args.clone(), CallOptions::default())
                .await
                .expect("governed call");
            let g = started.elapsed();
            assert_eq!(
                report.output().and_then(|v| v.pointer("/echo/text")),
                Some(&Value::from("bench")),
                "{:?}",
                report.outcome()
            );
            if i >= warmup {
                direct.push(d);
                gov.push(g);
            }
        }
        direct.sort();
        gov.sort();
        let (d50, d99) = (percentile(&direct, 0.5), percentile(&direct, 0.99));
        let (g50, g99) = (percentile(&gov, 0.5), percentile(&gov, 0.99));
        println!("remote tools/call e_echo, {calls} calls each, interleaved:");
        println!("  direct (rmcp client, session held)  p50 {d50:>10.1?}  p99 {d99:>10.1?}");
        println!("  governed (Runtime::call, mcp-http)  p50 {g50:>10.1?}  p99 {g99:>10.1?}");
        println!(
            "  ratio governed/direct               p50 {:>9.2}×  p99 {:>9.2}×",
            g50.as_secs_f64() / d50.as_secs_f64(),
            g99.as_secs_f64() / d99.as_secs_f64()
        );
        let _ = client.cancel().await;
    });
}
