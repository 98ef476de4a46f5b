//! A real OTLP receiver for the telemetry tests: `runtime/tests/fixtures/otlp/receiver.py`,
//! built on the official `opentelemetry-proto` classes and `grpcio` that `.ci/fixtures` installs
//! in the virtualenv ([`crate::fixtures::python_bin`]). It serves the trace and metrics services
//! of the OpenTelemetry protocol on loopback over gRPC ([`OtlpReceiver::grpc_endpoint`]) and over
//! HTTP with protobuf bodies ([`OtlpReceiver::http_endpoint`], `POST /v1/traces` and
//! `POST /v1/metrics`), and writes what it receives to a file, one JSON object per line, that
//! [`OtlpReceiver::spans`], [`OtlpReceiver::metrics`] and [`OtlpReceiver::requests`] read back.
//!
//! A span's object (the script's header has the whole list): `transport` (`"grpc"` or
//! `"http"`), `service_name`, `resource`, `scope`, `name`, `trace_id`, `span_id`,
//! `parent_span_id` (lower-case hex; `""` for a root span), `kind` (`"SPAN_KIND_SERVER"`, …),
//! `start_unix_nano`, `end_unix_nano`, `status_code` (`"STATUS_CODE_ERROR"`, …),
//! `status_message`, `attributes` (`{key: value}`, values as JSON) and `events`
//! (`[{name, time_unix_nano, attributes}]`). A metric data point's: `metric` (the name), `kind`
//! (`"sum"`, `"gauge"`, `"histogram"`, …), `attributes`, `value` (sums and gauges) or `count`
//! and `sum` (histograms, summaries), with `transport`, `service_name` and `scope`. A request's:
//! `request` (`"traces"` or `"metrics"`), `transport` and `headers` (names in lower case).
//!
//! [`OtlpReceiver::stop`] kills it, so that a test sees what the exporter does when the
//! collector is down; [`OtlpReceiver::restart`] brings it back on the same ports.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixtures;

/// How long the receiver may take to listen.
const START_LIMIT: Duration = Duration::from_secs(30);

/// How often [`OtlpReceiver::wait_for_spans`] and [`OtlpReceiver::wait_for_metrics`] read the
/// file.
const POLL: Duration = Duration::from_millis(50);

/// The path of a script of the OTLP fixtures, `runtime/tests/fixtures/otlp/<name>`:
/// `receiver.py`, or `client.py` (a minimal OTLP client built on the same classes).
pub fn script(name: &str) -> PathBuf {
    crate::bins::workspace_root()
        .join("runtime/tests/fixtures/otlp")
        .join(name)
}

/// A running OTLP receiver on loopback; killed on drop.
#[derive(Debug)]
pub struct OtlpReceiver {
    child: Option<Child>,
    grpc: String,
    http: String,
    dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
}

impl OtlpReceiver {
    /// Start a receiver on free loopback ports and wait until both servers listen.
    ///
    /// # Panics
    /// When the virtualenv is not installed (run `.ci/fixtures`), or the receiver does not
    /// listen within 30 s (its log is quoted).
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("escepine-otlp-")
            .tempdir()
            .expect("a temporary directory for the OTLP receiver");
        let log = Arc::new(Mutex::new(String::new()));
        let (child, grpc, http) = spawn(&dir.path().join("received.jsonl"), 0, 0, &log);
        Self {
            child: Some(child),
            grpc,
            http,
            dir,
            log,
        }
    }

    /// Its gRPC endpoint, `http://127.0.0.1:PORT` (the services
    /// `opentelemetry.proto.collector.{trace,metrics}.v1`).
    pub fn grpc_endpoint(&self) -> &str {
        &self.grpc
    }

    /// Its OTLP/HTTP endpoint, `http://127.0.0.1:PORT`, to which an exporter appends
    /// `/v1/traces` and `/v1/metrics`.
    pub fn http_endpoint(&self) -> &str {
        &self.http
    }

    /// The file it writes, one JSON object per line.
    pub fn out_path(&self) -> PathBuf {
        self.dir.path().join("received.jsonl")
    }

    /// Every line of the file so far, in order (a line still being written is left out).
    pub fn records(&self) -> Vec<Value> {
        let path = self.out_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => panic!("read {}: {e}", path.display()),
        };
        text.split_inclusive('\n')
            .filter(|line| line.ends_with('\n') && !line.trim().is_empty())
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| {
                    panic!("a line of {} is not JSON ({e}): {line}", path.display())
                })
            })
            .collect()
    }

    /// The spans received so far, over either transport, in the order they came.
    pub fn spans(&self) -> Vec<Value> {
        self.records_with("span_id")
    }

    /// The metric data points received so far, in the order they came.
    pub fn metrics(&self) -> Vec<Value> {
        self.records_with("metric")
    }

    /// The export requests received so far (`request`, `transport`, `headers`), in order.
    pub fn requests(&self) -> Vec<Value> {
        self.records_with("request")
    }

    fn records_with(&self, key: &str) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter(|r| r.get(key).is_some())
            .collect()
    }

    /// Read [`Self::spans`] until `pred` holds for them, and return them.
    ///
    /// # Panics
    /// When `pred` does not hold within `timeout` (the spans seen and the receiver's log are
    /// quoted).
    pub fn wait_for_spans(&self, pred: impl Fn(&[Value]) -> bool, timeout: Duration) -> Vec<Value> {
        self.wait_for("spans", Self::spans, pred, timeout)
    }

    /// Read [`Self::metrics`] until `pred` holds for them, and return them.
    ///
    /// # Panics
    /// When `pred` does not hold within `timeout`.
    pub fn wait_for_metrics(
        &self,
        pred: impl Fn(&[Value]) -> bool,
        timeout: Duration,
    ) -> Vec<Value> {
        self.wait_for("metrics", Self::metrics, pred, timeout)
    }

    fn wait_for(
        &self,
        what: &str,
        read: fn(&Self) -> Vec<Value>,
        pred: impl Fn(&[Value]) -> bool,
        timeout: Duration,
    ) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = read(self);
            if pred(&seen) {
                return seen;
            }
            if Instant::now() >= deadline {
                panic!(
                    "the OTLP receiver's {what} did not match within {timeout:?}; seen: \
                     {seen:#?}\nits log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// What the receiver wrote on its standard error.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Whether its process runs (not stopped, not exited).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Kill the receiver now: an exporter then finds nothing listening at either endpoint.
    /// What it received stays readable.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start it again (after [`Self::stop`]) on the same two ports, appending to the same file.
    ///
    /// # Panics
    /// When it is still running, or does not listen again within 30 s (a port taken meanwhile
    /// by another process, say).
    pub fn restart(&mut self) {
        assert!(
            !self.is_running(),
            "the OTLP receiver is running: stop it first"
        );
        self.stop();
        let (child, grpc, http) = spawn(
            &self.out_path(),
            port_of(&self.grpc),
            port_of(&self.http),
            &self.log,
        );
        assert_eq!(
            (grpc.as_str(), http.as_str()),
            (self.grpc.as_str(), self.http.as_str()),
            "the restarted receiver listens elsewhere"
        );
        self.child = Some(child);
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The port of `http://127.0.0.1:PORT`.
fn port_of(endpoint: &str) -> u16 {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {endpoint}"))
}

/// Start `receiver.py` writing to `out` and wait for its line of endpoints: the child, the gRPC
/// endpoint and the HTTP endpoint. Its standard error is echoed and kept in `log`.
fn spawn(
    out: &std::path::Path,
    grpc_port: u16,
    http_port: u16,
    log: &Arc<Mutex<String>>,
) -> (Child, String, String) {
    let python = fixtures::python_bin().unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(&python)
        .arg(script("receiver.py"))
        .arg("--grpc-port")
        .arg(grpc_port.to_string())
        .arg("--http-port")
        .arg(http_port.to_string())
        .arg("--out")
        .arg(out)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {} receiver.py: {e}", python.display()));
    let watched = crate::child_log::ChildLog::watch_into(
        &mut child,
        "otlp receiver",
        crate::child_log::loud,
        |line| {
            serde_json::from_str::<Value>(line)
                .ok()
                .filter(|v| v.get("grpc").is_some())
                .map(|_| line.to_string())
        },
        log.clone(),
    );
    let line = watched.ready(&mut child, START_LIMIT, "the OTLP receiver did not listen");
    let ready: Value = serde_json::from_str(&line).unwrap_or_default();
    let endpoint = |key: &str| {
        ready[key]
            .as_str()
            .unwrap_or_else(|| panic!("the receiver's ready line has no {key}: {ready}"))
            .to_string()
    };
    let (grpc, http) = (endpoint("grpc"), endpoint("http"));
    (child, grpc, http)
}
