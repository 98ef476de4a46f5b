//! Remote endpoints over TLS, against a loopback TLS server with test-only certificates
//! (`tests/fixtures/remote/tls`): a certificate for another name, or from a CA the runtime does
//! not trust, is refused in the handshake — the server sees no request — and the same server
//! with the right name and the envelope's CA is reached. An origin outside the call's egress
//! is refused before any connection.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use escepine_contract::EgressGrant;
use escepine_registry::record::ToolRecord;
use escepine_registry::testing::RecordBuilder;
use escepine_runtime::executor::ExecError;
use escepine_runtime::remote::RemoteExecutor;
use serde_json::json;

use crate::support;

fn tls_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/remote/tls")
}

/// The loopback TLS server of `tls_server.py`, serving the certificate for `name`.
struct TlsServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    port: u16,
}

impl TlsServer {
    fn start(name: &str) -> Self {
        let dir = tls_dir();
        let mut child = Command::new("python3")
            .arg(dir.join("../tls_server.py"))
            .arg(dir.join(format!("test-only-{name}.pem")))
            .arg(dir.join(format!("test-only-{name}.key")))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the TLS server");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the port line");
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("not a port line: {line:?}"));
        Self {
            child,
            stdin,
            stdout,
            port,
        }
    }

    /// Stop it; the requests that reached it.
    fn requests(mut self) -> Vec<String> {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.flush();
        }
        let _ = self.child.wait();
        let mut out = Vec::new();
        let mut line = String::new();
        while self.stdout.read_line(&mut line).is_ok_and(|n| n > 0) {
            out.push(line.trim().to_string());
            line.clear();
        }
        out
    }
}

fn record(port: u16) -> ToolRecord {
    RecordBuilder::new("notes_read")
        .field(
            "endpoint",
            json!({
                "transport": "mcp-http",
                "url": format!("https://localhost:{port}/mcp"),
                "tool": "read",
            }),
        )
        .egress([format!("localhost:{port}")])
        .registered()
}

async fn attempt(
    executor: &RemoteExecutor,
    record: &ToolRecord,
    grant: &EgressGrant,
) -> Result<serde_json::Value, ExecError> {
    support::remote::attempt(executor, record, &json!({}), grant, &[])
        .await
        .result
        .map(|e| e.output)
}

fn grant(port: u16) -> EgressGrant {
    support::remote::grant(&format!("localhost:{port}"))
}

fn trusting_the_test_ca() -> RemoteExecutor {
    RemoteExecutor::new(&[tls_dir().join("test-only-ca.pem")]).expect("an executor")
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused_before_any_request() {
    let server = TlsServer::start("wrong.test");
    let rec = record(server.port);
    let err = attempt(&trusting_the_test_ca(), &rec, &grant(server.port))
        .await
        .expect_err("refused");
    let ExecError::Permanent { message, .. } = &err else {
        panic!("a permanent failure, not retried: {err:?}")
    };
    assert!(message.contains("certificate"), "{message}");
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[tokio::test]
async fn a_certificate_of_an_untrusted_ca_is_refused_before_any_request() {
    let server = TlsServer::start("localhost");
    let rec = record(server.port);
    let system_roots_only = RemoteExecutor::new(&[] as &[PathBuf]).expect("an executor");
    let err = attempt(&system_roots_only, &rec, &grant(server.port))
        .await
        .expect_err("refused");
    assert!(matches!(err, ExecError::Permanent { .. }), "{err:?}");
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[tokio::test]
async fn the_envelopes_ca_is_trusted_and_a_503_is_transient() {
    let server = TlsServer::start("localhost");
    let rec = record(server.port);
    let err = attempt(&trusting_the_test_ca(), &rec, &grant(server.port))
        .await
        .expect_err("the server answers 503");
    let ExecError::Unavailable { retry_after, .. } = &err else {
        panic!("503 is transient: {err:?}")
    };
    assert_eq!(*retry_after, Some(Duration::ZERO));
    assert!(err.is_transient());
    assert_eq!(server.requests(), ["request POST /mcp"]);
}

#[tokio::test]
async fn an_origin_outside_the_calls_egress_is_refused_before_any_connection() {
    let server = TlsServer::start("localhost");
    let rec = record(server.port);
    let other = grant(server.port.wrapping_add(1).max(1));
    let err = attempt(&trusting_the_test_ca(), &rec, &other)
        .await
        .expect_err("refused");
    let ExecError::Permanent { message, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains("nothing was sent"), "{message}");
    assert_eq!(server.requests(), Vec::<String>::new());
}
