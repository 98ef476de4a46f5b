//! `escepine_testkit::otlp` against the receiver built on `opentelemetry-proto` and `grpcio`
//! that `.ci/fixtures` installs: a span and metrics sent by a real OTLP client (the same
//! classes, `runtime/tests/fixtures/otlp/client.py`) over gRPC and over HTTP come back as JSON
//! lines with their ids, attributes, events and values; a stopped receiver refuses, and one
//! restarted on its ports receives again. Needs `.ci/fixtures` to have run.

use std::process::Command;
use std::time::Duration;

use escepine_testkit::fixtures;
use escepine_testkit::otlp::{script, OtlpReceiver};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// Run `client.py` against `endpoint` over `transport`: whether both exports were accepted,
/// and what it printed.
fn send(transport: &str, endpoint: &str, ids: &[&str], headers: &[&str]) -> (bool, String) {
    let python = fixtures::python_bin().unwrap_or_else(|e| panic!("{e}"));
    let mut command = Command::new(python);
    command
        .arg(script("client.py"))
        .args(["--transport", transport, "--endpoint", endpoint])
        .args(["--trace-id", ids[0], "--span-id", ids[1]]);
    if let Some(parent) = ids.get(2) {
        command.args(["--parent-span-id", parent]);
    }
    for header in headers {
        command.args(["--header", header]);
    }
    let out = command.output().expect("run client.py");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.trim().is_empty() {
        eprintln!("[otlp client stderr] {stderr}");
    }
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

fn span_with<'a>(spans: &'a [Value], span_id: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["span_id"] == span_id)
        .unwrap_or_else(|| panic!("no span {span_id} in {spans:#?}"))
}

#[test]
fn otlp_receiver_records_spans_and_metrics_over_grpc_and_http() {
    let receiver = OtlpReceiver::start();
    assert!(receiver.grpc_endpoint().starts_with("http://127.0.0.1:"));
    assert!(receiver.http_endpoint().starts_with("http://127.0.0.1:"));
    assert_ne!(receiver.grpc_endpoint(), receiver.http_endpoint());

    let grpc_ids = ["0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"];
    let (ok, printed) = send(
        "grpc",
        receiver.grpc_endpoint(),
        &grpc_ids,
        &["authorization=Bearer grpc-test-token"],
    );
    assert!(ok, "the gRPC export was refused: {printed}");
    assert_eq!(
        serde_json::from_str::<Value>(&printed).expect("JSON"),
        json!({"traces": "OK", "metrics": "OK"})
    );
    let http_ids = [
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7",
        "b7ad6b7169203331",
    ];
    let (ok, printed) = send(
        "http",
        receiver.http_endpoint(),
        &http_ids,
        &["Authorization=Bearer http-test-token"],
    );
    assert!(ok, "the HTTP export was refused: {printed}");
    assert_eq!(
        serde_json::from_str::<Value>(&printed).expect("JSON"),
        json!({"traces": 200, "metrics": 200})
    );

    let spans = receiver.wait_for_spans(|s| s.len() >= 2, WAIT);
    assert_eq!(spans.len(), 2, "{spans:#?}");

    let grpc = span_with(&spans, grpc_ids[1]);
    assert_eq!(grpc["transport"], "grpc");
    assert_eq!(grpc["trace_id"], grpc_ids[0]);
    assert_eq!(grpc["parent_span_id"], "");
    let http = span_with(&spans, http_ids[1]);
    assert_eq!(http["transport"], "http");
    assert_eq!(http["trace_id"], http_ids[0]);
    assert_eq!(http["parent_span_id"], http_ids[2]);

    for span in [grpc, http] {
        assert_eq!(span["service_name"], "otlp-test-client");
        assert_eq!(span["resource"]["service.name"], "otlp-test-client");
        assert_eq!(span["scope"], "escepine.test");
        assert_eq!(span["name"], "tools/call echo");
        assert_eq!(span["kind"], "SPAN_KIND_SERVER");
        assert_eq!(span["status_code"], "STATUS_CODE_ERROR");
        assert_eq!(span["status_message"], "boom");
        assert_eq!(
            span["attributes"],
            json!({
                "tool.name": "echo",
                "call.count": 3,
                "call.ratio": 0.5,
                "call.ok": true,
                "call.tags": ["a", "b"],
            })
        );
        assert_eq!(
            span["events"],
            json!([{
                "name": "policy.decision",
                "time_unix_nano": span["events"][0]["time_unix_nano"],
                "attributes": {"decision": "allow"},
            }])
        );
        let start = span["start_unix_nano"].as_u64().expect("a start time");
        let end = span["end_unix_nano"].as_u64().expect("an end time");
        assert!(0 < start && start < end, "{span}");
    }

    let metrics = receiver.wait_for_metrics(|m| m.len() >= 4, WAIT);
    for transport in ["grpc", "http"] {
        let calls = metrics
            .iter()
            .find(|m| m["transport"] == transport && m["metric"] == "escepine.calls")
            .unwrap_or_else(|| panic!("no escepine.calls over {transport}: {metrics:#?}"));
        assert_eq!(calls["kind"], "sum");
        assert_eq!(calls["value"], 7);
        assert_eq!(calls["monotonic"], true);
        assert_eq!(calls["attributes"], json!({"tool.name": "echo"}));
        let latency = metrics
            .iter()
            .find(|m| m["transport"] == transport && m["metric"] == "escepine.latency")
            .unwrap_or_else(|| panic!("no escepine.latency over {transport}: {metrics:#?}"));
        assert_eq!(latency["kind"], "histogram");
        assert_eq!(latency["count"], 2);
        assert_eq!(latency["sum"], 0.75);
        assert_eq!(latency["bucket_counts"], json!([0, 2, 0]));
    }

    let requests = receiver.requests();
    let signals: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| {
            (
                r["transport"].as_str().unwrap_or_default(),
                r["request"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        signals,
        [
            ("grpc", "traces"),
            ("grpc", "metrics"),
            ("http", "traces"),
            ("http", "metrics")
        ]
    );
    assert_eq!(
        requests[0]["headers"]["authorization"],
        "Bearer grpc-test-token"
    );
    assert_eq!(
        requests[2]["headers"]["authorization"],
        "Bearer http-test-token"
    );
    assert_eq!(
        requests[2]["headers"]["content-type"],
        "application/x-protobuf"
    );
}

#[test]
fn otlp_receiver_stopped_refuses_and_restarted_receives_again() {
    let mut receiver = OtlpReceiver::start();
    let ids = ["5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"];
    assert!(send("http", receiver.http_endpoint(), &ids, &[]).0);
    receiver.wait_for_spans(|s| s.len() == 1, WAIT);

    receiver.stop();
    assert!(!receiver.is_running());
    let (ok, printed) = send("grpc", receiver.grpc_endpoint(), &ids, &[]);
    assert!(!ok, "a stopped receiver accepted over gRPC: {printed}");
    assert!(printed.contains("UNAVAILABLE"), "{printed}");
    let (ok, _) = send("http", receiver.http_endpoint(), &ids, &[]);
    assert!(!ok, "a stopped receiver accepted over HTTP");
    // What it had received stays readable.
    assert_eq!(receiver.spans().len(), 1);

    receiver.restart();
    assert!(receiver.is_running());
    let again = ["5b8efff798038103d269b633813fc60d", "eee19b7ec3c1b175"];
    assert!(send("grpc", receiver.grpc_endpoint(), &again, &[]).0);
    let spans = receiver.wait_for_spans(|s| s.len() == 2, WAIT);
    assert_eq!(spans[0]["span_id"], ids[1]);
    assert_eq!(spans[1]["span_id"], again[1]);
    assert_eq!(spans[1]["transport"], "grpc");
}
