//! Telemetry of `escepine serve`, `call` and `run`, watched by real receivers on loopback: an
//! OTLP receiver built on the official `opentelemetry-proto` definitions (gRPC and HTTP) and
//! Debian's Prometheus server.
//!
//! - A `traceparent` the official Python SDK client sends in `_meta` (2026-07-28) and the
//!   TypeScript SDK sends (2025-11-25) is the parent of the gateway's `execute_tool` span, whose
//!   call id, tool, decision and policies are the ledger's; the `stdio-json` tool gets the
//!   attempt's context in `TRACEPARENT`.
//! - `call` and `run` continue `TRACEPARENT` from their environment and flush before they exit.
//! - Prometheus scrapes `serve --metrics-listen` and counts a scripted mix of allowed, denied,
//!   failed and budget-refused calls by tool, decision and result.
//! - A collector that is down costs spans, counted, and no call.
//! - No payload value and no secret reaches the receiver.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use escepine_ledger::record::{Intent, Record};
use escepine_ledger::sqlite::read_entries;
use escepine_testkit::mcp::{serve_http, HttpServe};
use escepine_testkit::mcp_clients::{events_named, Sdk, SdkClient};
use escepine_testkit::otlp::OtlpReceiver;
use escepine_testkit::prometheus::Prometheus;
use escepine_testkit::testtool::testtool;

const ALICE: &str = "alice-token-telemetry-0123";
/// The value of the secret `t_env` declares: scrubbed from its output, never exported.
const SECRET: &str = "s3cr3t-telemetry-value-7f3a9c11";
/// A payload value that the ledger records and no span may carry.
const MARKER: &str = "payload-marker-5b9e02d4c7";
/// The trace and span of the Python client's caller.
const PY_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PY_SPAN: &str = "00f067aa0ba902b7";
/// The trace and span of the TypeScript client's caller.
const TS_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const TS_SPAN: &str = "b7ad6b7169203331";
/// The trace and span of a `call`'s or `run`'s caller (`TRACEPARENT`).
const ENV_TRACE: &str = "5c1e8b7f2a3d4e6f8091a2b3c4d5e6f7";
const ENV_SPAN: &str = "1a2b3c4d5e6f7081";

fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

/// A file of the telemetry fixture.
fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("this crate sits in runtime/")
        .join("tests/fixtures/telemetry")
        .join(rel)
}

/// The registry, ledger, secrets and budgets flags of every command here (tools run by the
/// process executor: the environment a tool is given is the same in a sandbox).
fn common(command: &mut Command, dir: &Path) {
    let secrets = dir.join("secrets.env");
    std::fs::write(&secrets, format!("T_SECRET={SECRET}\n")).expect("secrets");
    command
        .arg("--records")
        .arg(fixture("records"))
        .arg("--policies")
        .arg(fixture("policies"))
        .arg("--budgets")
        .arg(fixture("budgets.json"))
        .arg("--secrets")
        .arg(&secrets)
        .arg("--ledger")
        .arg(dir.join("ledger.db"))
        .args(["--executor", "process"])
        // Batches leave every 100 ms, not every 5 s; metrics every 500 ms.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "500")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("TRACEPARENT");
}

/// `escepine serve --mcp http` for alice, with `extra` flags.
fn serve(dir: &Path, extra: &[&str]) -> HttpServe {
    testtool();
    let tokens = dir.join("tokens.json");
    std::fs::write(&tokens, json!({ ALICE: "Agent::\"alice\"" }).to_string()).expect("tokens");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_escepine"));
    serve.args([
        "serve",
        "--mcp",
        "http",
        "--listen",
        "127.0.0.1:0",
        "--tokens",
    ]);
    serve.arg(&tokens).args(extra);
    common(&mut serve, dir);
    serve_http(serve)
}

/// Where `serve --metrics-listen` serves `/metrics`, as it printed.
fn metrics_addr(serve: &HttpServe) -> String {
    let log = serve.log();
    log.lines()
        .find_map(|l| l.split("metrics on http://").nth(1))
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in {log}"))
        .to_string()
}

/// `/metrics` of `addr`.
fn scrape(addr: &str) -> String {
    ureq::get(&format!("http://{addr}/metrics"))
        .call()
        .expect("GET /metrics")
        .body_mut()
        .read_to_string()
        .expect("a text body")
}

/// The value of the sample `name{labels…}` (labels given must match; others may be there).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(|a, b| a + b)
}

/// The intents of the ledger in `dir`.
fn intents(dir: &Path) -> Vec<Intent> {
    read_entries(&dir.join("ledger.db"))
        .expect("the ledger reads")
        .into_iter()
        .filter_map(|e| match e.record {
            Record::Intent(i) => Some(i),
            _ => None,
        })
        .collect()
}

fn named<'a>(spans: &'a [Value], prefix: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .collect()
}

fn children<'a>(spans: &'a [Value], parent: &Value) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["parent_span_id"] == parent["span_id"] && s["trace_id"] == parent["trace_id"])
        .collect()
}

/// The `execute_tool` span of call `call_id`.
fn span_of<'a>(spans: &'a [Value], call_id: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["attributes"]["gen_ai.tool.call.id"] == call_id)
        .unwrap_or_else(|| panic!("no span of call {call_id} in {spans:#?}"))
}

/// Asserts that nothing the receiver got holds the payload marker or the secret, while the
/// ledger does hold the marker (so the search looks for something that was there).
fn nothing_secret_exported(receiver: &OtlpReceiver, dir: &Path) {
    let exported = std::fs::read_to_string(receiver.out_path()).expect("the receiver's file");
    assert!(!exported.is_empty());
    assert!(!exported.contains(MARKER), "a payload value was exported");
    assert!(!exported.contains(SECRET), "a secret was exported");
    let recorded = intents(dir);
    assert!(
        recorded
            .iter()
            .any(|i| i.payload.to_string().contains(MARKER)),
        "the ledger records the payload"
    );
}

/// The context a tool was given, from `t_env`'s output: (trace id, parent span id).
fn tool_context(env: &Value) -> (String, String) {
    let parent = env["TRACEPARENT"]
        .as_str()
        .unwrap_or_else(|| panic!("no TRACEPARENT in {env}"));
    let parts: Vec<&str> = parent.split('-').collect();
    assert_eq!(parts.len(), 4, "{parent}");
    (parts[1].to_string(), parts[2].to_string())
}

/// An official Python SDK client (2026-07-28, stateless) and TypeScript SDK client (2025-11-25,
/// a session) each send a `traceparent` in `_meta`: it is the parent of the gateway's
/// `execute_tool` span, whose stages are its children; the call id, tool, decision and
/// determining policies are the ledger's; the `stdio-json` tool's `TRACEPARENT` is its attempt
/// span. Exported over gRPC.
#[test]
fn a_client_s_traceparent_is_the_gateway_s_parent_and_reaches_the_tool() {
    let receiver = OtlpReceiver::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(
        dir.path(),
        &[
            "--otlp-endpoint",
            receiver.grpc_endpoint(),
            "--otlp-protocol",
            "grpc",
        ],
    );
    let py = SdkClient::start(
        Sdk::Python,
        &json!({
            "transport": "http", "url": server.url, "bearer": ALICE,
            "traceparent": traceparent(PY_TRACE, PY_SPAN),
            "steps": [
                { "op": "call", "tool": "t_env", "arguments": { "marker": MARKER } },
                { "op": "call", "tool": "t_echo", "arguments": { "text": "hello" } },
                { "op": "call", "tool": "t_echo", "arguments": { "text": "forbidden" } },
            ],
        }),
    );
    let events = py.finish(Duration::from_secs(60));
    assert_eq!(events_named(&events, "error").count(), 0, "{events:#?}");
    let connected = events_named(&events, "connected")
        .next()
        .expect("connected");
    assert_eq!(connected["protocol_version"], "2026-07-28");
    let calls: Vec<&Value> = events_named(&events, "call").collect();
    assert_eq!(calls.len(), 3, "{events:#?}");
    let call_id = |c: &Value| {
        c["meta"]["dev.escepine/call_id"]
            .as_str()
            .map(str::to_string)
    };
    let env_call = call_id(calls[0]).expect("call id");
    let env = &calls[0]["structured"]["env"];
    assert_eq!(
        env["T_SECRET"].as_str().map(|s| s.contains(SECRET)),
        Some(false)
    );
    let ts = SdkClient::start(
        Sdk::TypeScript,
        &json!({
            "transport": "http", "url": server.url, "bearer": ALICE,
            "steps": [
                { "op": "call", "tool": "t_echo", "arguments": { "text": "legacy" },
                  "meta": { "traceparent": traceparent(TS_TRACE, TS_SPAN) } },
            ],
        }),
    );
    let ts_events = ts.finish(Duration::from_secs(60));
    let ts_connected = events_named(&ts_events, "connected")
        .next()
        .expect("connected");
    assert_eq!(ts_connected["protocol_version"], "2025-11-25");
    let ts_call = events_named(&ts_events, "call").next().expect("a call");
    let ts_call_id = call_id(ts_call).expect("call id");

    let spans = receiver.wait_for_spans(
        |s| named(s, "execute_tool ").len() >= 4,
        Duration::from_secs(30),
    );
    let recorded = intents(dir.path());
    assert_eq!(recorded.len(), 4);
    for intent in &recorded {
        let span = span_of(&spans, &intent.call_id);
        let a = &span["attributes"];
        assert_eq!(span["name"], format!("execute_tool {}", intent.tool_id));
        assert_eq!(span["service_name"], "escepine");
        assert_eq!(span["transport"], "grpc");
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["gen_ai.tool.name"], intent.tool_id.as_str());
        assert_eq!(a["escepine.principal"], "Agent::\"alice\"");
        assert_eq!(a["escepine.input.sha256"], intent.payload_hash.as_str());
        let (trace, parent) = if intent.call_id == ts_call_id {
            (TS_TRACE, TS_SPAN)
        } else {
            (PY_TRACE, PY_SPAN)
        };
        assert_eq!(span["trace_id"], trace, "{span}");
        assert_eq!(span["parent_span_id"], parent, "{span}");
        let stages: Vec<&str> = children(&spans, span)
            .iter()
            .filter_map(|s| s["name"].as_str())
            .collect();
        for stage in ["input_gate", "authorize", "ledger_append"] {
            assert!(stages.contains(&stage), "{stage}: {stages:?}");
        }
        let authorize = children(&spans, span)
            .into_iter()
            .find(|s| s["name"] == "authorize")
            .expect("authorize");
        assert_eq!(
            authorize["attributes"]["escepine.policy_ids"].as_str(),
            Some(intent.policy_ids.join(",").as_str())
        );
        if intent.payload["text"] == "forbidden" {
            assert_eq!(a["escepine.decision"], "deny");
            assert_eq!(a["escepine.policy_ids"], "no-forbidden-text");
            assert_eq!(a["error.type"], "denied");
            assert_eq!(span["status_code"], "STATUS_CODE_ERROR");
            assert!(!stages.contains(&"attempt"), "a denied call runs nothing");
        } else {
            assert_eq!(a["escepine.decision"], "allow");
            assert!(a.get("error.type").is_none(), "{span}");
            assert!(a["escepine.output.sha256"].is_string(), "{span}");
            assert!(stages.contains(&"attempt"), "{stages:?}");
            assert!(stages.contains(&"output_gate"), "{stages:?}");
        }
    }
    // The tool's TRACEPARENT: the same trace, its parent the call's attempt span.
    let (tool_trace, tool_parent) = tool_context(env);
    assert_eq!(tool_trace, PY_TRACE);
    let attempt = children(&spans, span_of(&spans, &env_call))
        .into_iter()
        .find(|s| s["name"] == "attempt")
        .expect("the attempt span");
    assert_eq!(attempt["span_id"], tool_parent.as_str());
    // The metrics travel the same way (every 500 ms here): the denial is counted by tool,
    // decision and result.
    receiver.wait_for_metrics(
        |m| {
            m.iter().any(|p| {
                p["metric"] == "escepine_calls"
                    && p["transport"] == "grpc"
                    && p["attributes"]["tool"] == "t_echo"
                    && p["attributes"]["decision"] == "deny"
                    && p["attributes"]["result"] == "denied"
                    && (p["value"] == 1 || p["value"] == "1")
            })
        },
        Duration::from_secs(30),
    );
    // An OTLP int64 (the receiver writes it as protobuf's JSON mapping does: a string).
    let number = &attempt["attributes"]["escepine.attempt"];
    assert!(number == 1 || number == "1", "{attempt}");
    nothing_secret_exported(&receiver, dir.path());
}

/// `escepine call` continues `TRACEPARENT` (over OTLP/HTTP), gives the tool its attempt's
/// context and flushes before it exits: the spans are at the receiver when it has. `escepine
/// run` makes the run's span a child of `TRACEPARENT` and its steps' calls children of the run.
#[test]
fn call_and_run_continue_traceparent_from_their_environment() {
    testtool();
    let receiver = OtlpReceiver::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let escepine = |args: &[&str]| -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
        c.args(args);
        common(&mut c, dir.path());
        c.args(["--otlp-endpoint", receiver.http_endpoint()])
            .env("TRACEPARENT", traceparent(ENV_TRACE, ENV_SPAN))
            .output()
            .expect("escepine runs")
    };
    let input = json!({ "marker": MARKER }).to_string();
    let out = escepine(&[
        "call",
        "--tool",
        "t_env",
        "--principal",
        "Agent::\"alice\"",
        "--input",
        &input,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let output: Value = serde_json::from_slice(&out.stdout).expect("the output");
    let spans = receiver.spans();
    let executed = named(&spans, "execute_tool t_env");
    assert_eq!(executed.len(), 1, "flushed before exit: {spans:#?}");
    let call = executed[0];
    assert_eq!(call["transport"], "http");
    assert_eq!(call["trace_id"], ENV_TRACE);
    assert_eq!(call["parent_span_id"], ENV_SPAN);
    let (trace, parent) = tool_context(&output["env"]);
    assert_eq!(trace, ENV_TRACE);
    let attempt = children(&spans, call)
        .into_iter()
        .find(|s| s["name"] == "attempt")
        .expect("attempt");
    assert_eq!(attempt["span_id"], parent.as_str());

    let proposals = dir.path().join("proposals.json");
    std::fs::write(
        &proposals,
        json!({ "env": { "marker": MARKER }, "echo": { "text": "step" } }).to_string(),
    )
    .expect("proposals");
    let sop = fixture("sop.json");
    let out = escepine(&[
        "run",
        sop.to_str().expect("utf-8"),
        "--principal",
        "Agent::\"alice\"",
        "--proposals",
        proposals.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = receiver.spans();
    let runs = named(&spans, "sop_run traced");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert_eq!(run["trace_id"], ENV_TRACE);
    assert_eq!(run["parent_span_id"], ENV_SPAN);
    let steps: Vec<&str> = children(&spans, run)
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(steps, ["execute_tool t_env", "execute_tool t_echo"]);
    nothing_secret_exported(&receiver, dir.path());
}

/// Debian's Prometheus scrapes `serve --metrics-listen` and counts, by tool, decision and
/// result, a scripted mix: two allowed calls, a denied one, a failed one, a call the budget
/// allows and one it refuses; budget uses and stage latencies besides.
#[test]
fn prometheus_counts_calls_by_tool_decision_and_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path(), &["--metrics-listen", "127.0.0.1:0"]);
    let addr = metrics_addr(&server);
    let prometheus = Prometheus::start(&addr, Duration::from_secs(1));
    prometheus.wait_for_target_up(Duration::from_secs(30));
    let call = |tool: &str, text: &str| json!({ "op": "call", "tool": tool, "arguments": { "text": text } });
    let client = SdkClient::start(
        Sdk::Python,
        &json!({
            "transport": "http", "url": server.url, "bearer": ALICE,
            "steps": [
                call("t_echo", "one"), call("t_echo", "two"), call("t_echo", "forbidden"),
                call("t_fail", "boom"), call("t_once", "first"), call("t_once", "second"),
            ],
        }),
    );
    let events = client.finish(Duration::from_secs(60));
    let errors: Vec<bool> = events_named(&events, "call")
        .map(|c| c["is_error"] == true)
        .collect();
    assert_eq!(
        errors,
        [false, false, true, true, false, true],
        "{events:#?}"
    );

    let expected = [
        ("t_echo", "allow", "ok", 2.0),
        ("t_echo", "deny", "denied", 1.0),
        ("t_fail", "allow", "failed", 1.0),
        ("t_once", "allow", "ok", 1.0),
        ("t_once", "allow", "budget_exceeded", 1.0),
    ];
    let series = prometheus.wait_until(
        "escepine_calls_total",
        |r| {
            r.iter()
                .filter_map(escepine_testkit::prometheus::sample_value)
                .sum::<f64>()
                >= 6.0
        },
        Duration::from_secs(30),
    );
    let mut got: Vec<(String, String, String, f64)> = series
        .iter()
        .map(|s| {
            let m = &s["metric"];
            let l = |k: &str| m[k].as_str().unwrap_or_default().to_string();
            let v = escepine_testkit::prometheus::sample_value(s).expect("a value");
            (l("tool"), l("decision"), l("result"), v)
        })
        .collect();
    got.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    let mut expected: Vec<(String, String, String, f64)> = expected
        .iter()
        .map(|(t, d, r, v)| (t.to_string(), d.to_string(), r.to_string(), *v))
        .collect();
    expected.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    assert_eq!(got, expected);
    let one = |q: &str| -> f64 {
        let r = prometheus.query(q);
        r.first()
            .and_then(escepine_testkit::prometheus::sample_value)
            .unwrap_or_else(|| panic!("{q}: {r:?}"))
    };
    assert_eq!(one(r#"escepine_budget_uses_total{result="taken"}"#), 1.0);
    assert_eq!(one(r#"escepine_budget_uses_total{result="refused"}"#), 1.0);
    assert_eq!(
        one(r#"escepine_stage_duration_seconds_count{stage="authorize"}"#),
        6.0
    );
    assert_eq!(
        one(r#"sum(escepine_stage_duration_seconds_count{stage="attempt"})"#),
        4.0,
        "the denied and the refused calls run nothing"
    );
    assert_eq!(
        one(r#"sum(escepine_ledger_append_duration_seconds_count{entry="intent"})"#),
        6.0
    );
    assert_eq!(one(r#"escepine_approvals_waiting"#), 0.0);
    // The endpoint serves the text format itself too.
    let text = scrape(&addr);
    assert_eq!(
        sample(&text, "escepine_calls_total", &[("tool", "t_fail")]),
        Some(1.0)
    );
}

/// With the collector down, calls go on (every one answered, none failed) and the spans it
/// does not take are counted as dropped; once it is back, spans reach it again. A `call` with
/// the collector down exits 0.
#[test]
fn a_collector_that_is_down_costs_spans_counted_and_no_call() {
    let mut receiver = OtlpReceiver::start();
    let endpoint = receiver.http_endpoint().to_string();
    receiver.stop();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(
        dir.path(),
        &[
            "--otlp-endpoint",
            &endpoint,
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let addr = metrics_addr(&server);
    let steps: Vec<Value> = (0..20)
        .map(
            |n| json!({ "op": "call", "tool": "t_echo", "arguments": { "text": format!("n{n}") } }),
        )
        .collect();
    let run = |steps: &[Value]| {
        let client = SdkClient::start(
            Sdk::Python,
            &json!({ "transport": "http", "url": server.url, "bearer": ALICE, "steps": steps }),
        );
        client.finish(Duration::from_secs(60))
    };
    let events = run(&steps);
    let answered: Vec<&Value> = events_named(&events, "call").collect();
    assert_eq!(answered.len(), 20, "{events:#?}");
    assert!(
        answered.iter().all(|c| c["is_error"] == false),
        "{events:#?}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let dropped = loop {
        let text = scrape(&addr);
        let dropped = sample(&text, "escepine_telemetry_dropped_spans_total", &[]).unwrap_or(0.0);
        // Every call makes at least six spans (call, gate, authorize, attempt, output gate,
        // two appends).
        if dropped >= 20.0 * 6.0 {
            assert_eq!(
                sample(&text, "escepine_telemetry_exported_spans_total", &[]),
                Some(0.0)
            );
            assert_eq!(
                sample(&text, "escepine_calls_total", &[("result", "ok")]),
                Some(20.0)
            );
            break dropped;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "dropped spans not counted: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(dropped >= 120.0);

    // Back up on the same port: the next calls' spans arrive.
    receiver.restart();
    let events = run(&steps[..2]);
    assert_eq!(events_named(&events, "call").count(), 2);
    receiver.wait_for_spans(
        |s| named(s, "execute_tool t_echo").len() >= 2,
        Duration::from_secs(30),
    );
    receiver.stop();

    // A command with the collector down still ends, with its call's status.
    let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
    c.args([
        "call",
        "--tool",
        "t_echo",
        "--principal",
        "Agent::\"alice\"",
    ])
    .args(["--input", r#"{"text": "down"}"#]);
    common(&mut c, dir.path());
    let out = c
        .args(["--otlp-endpoint", &endpoint])
        .output()
        .expect("escepine call");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("output"),
        json!({ "echo": { "text": "down" } })
    );
}

/// A bad endpoint or protocol is refused before anything runs, naming the flag or variable.
#[test]
fn bad_telemetry_settings_are_refused_naming_their_origin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let call = |extra: &[&str], env: &[(&str, &str)]| -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
        c.args([
            "call",
            "--tool",
            "t_echo",
            "--principal",
            "Agent::\"alice\"",
        ])
        .args(["--input", r#"{"text": "x"}"#]);
        common(&mut c, dir.path());
        c.args(extra)
            .envs(env.iter().copied())
            .output()
            .expect("escepine")
    };
    let out = call(&["--otlp-endpoint", "ftp://127.0.0.1:4318"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--otlp-endpoint") && err.contains("http or https"),
        "{err}"
    );
    let out = call(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && err.contains("http/json"),
        "{err}"
    );
    assert!(
        !dir.path().join("ledger.db").exists() || intents(dir.path()).is_empty(),
        "nothing ran"
    );
}
