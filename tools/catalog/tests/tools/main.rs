//! The catalog's tools as processes (`escepine-catalog <tool>`, stdio-json) against loopback
//! servers speaking the documented request and answer shapes: the requests each tool makes
//! (paths, headers, bodies, idempotency keys), its outputs (checked against the record's output
//! schema, as the runtime's output gate would) and its exit statuses.

use escepine_testkit::server;

mod cli;
mod deliverable_assemble;
mod firecrawl_scrape;
mod notes;
mod tavily_crawl;
mod tavily_search;
mod web_fetch_exa;
mod web_search;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The idempotency key every run gets unless a test sets its own.
pub const KEY: &str = "idem-key-0001";

/// A finished run of the tool binary.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The output JSON, asserting success.
    pub fn output(&self) -> Value {
        assert_eq!(self.code, 0, "exit {}; stderr: {}", self.code, self.stderr);
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }

    /// Assert a failure with `code`, nothing on stdout, and return stderr.
    pub fn failed(&self, code: i32) -> &str {
        assert_eq!(
            self.code, code,
            "expected exit {code}; stdout: {}; stderr: {}",
            self.stdout, self.stderr
        );
        assert!(self.stdout.trim().is_empty(), "stdout: {}", self.stdout);
        assert!(
            self.stderr.starts_with("escepine-catalog "),
            "one diagnostic line: {}",
            self.stderr
        );
        &self.stderr
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run `tool` with `payload` on stdin in a cleared environment holding only `PATH`, `LANG`,
/// the call id, the idempotency key ([`KEY`]) and `env` (which may override them).
pub fn run_raw(tool: &str, stdin: &[u8], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_escepine-catalog"));
    cmd.arg(tool)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .env("ESCEPINE_CALL_ID", "call-0001")
        .env("ESCEPINE_IDEMPOTENCY_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn escepine-catalog");
    // A tool that refuses its command line may exit before reading stdin: a broken pipe is
    // then expected, not a failure of the test.
    match child.stdin.take().expect("stdin").write_all(stdin) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("write the payload: {e}"),
    }
    let out = child.wait_with_output().expect("wait for escepine-catalog");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// [`run_raw`] with a JSON payload.
pub fn run(tool: &str, payload: &Value, env: &[(&str, &str)]) -> Run {
    run_raw(tool, payload.to_string().as_bytes(), env)
}

/// Run, assert success, check the output against the record's output schema (and the payload
/// against its input schema, so tests only send payloads the input gate would pass).
pub fn run_ok(tool: &str, payload: &Value, env: &[(&str, &str)]) -> Value {
    check_schema(tool, "input_schema", payload);
    let out = run(tool, payload, env).output();
    check_schema(tool, "output_schema", &out);
    out
}

/// Validate `value` against `tools/records/<tool>.json`'s `which` schema, formats included.
pub fn check_schema(tool: &str, which: &str, value: &Value) {
    let path = workspace().join(format!("tools/records/{tool}.json"));
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("a JSON record");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&record[which])
        .expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{tool} {which} rejects {value}: {errors:?}"
    );
}

/// A loopback port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}
