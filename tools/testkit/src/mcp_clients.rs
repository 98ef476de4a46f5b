//! The official MCP SDKs' clients, driven by the tests of `escepine serve`: the Python SDK 2.x
//! (`runtime/tests/fixtures/mcp/py_client.py`, which lands on the stateless 2026-07-28 revision
//! when the server speaks it) and the TypeScript SDK 1.x (`ts_client.mjs`, a 2025-11-25 client
//! with a session).
//!
//! A client runs a plan (a JSON object: transport, endpoint, credentials, steps; the scripts'
//! headers describe it) and prints one JSON event per line; [`SdkClient`] hands them to the test
//! as they come, so a test can act while a step waits (approve a call whose task the client
//! polls, say).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixtures;

/// Which SDK's client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// The official Python SDK 2.x (`mcp`).
    Python,
    /// The official TypeScript SDK 1.x (`@modelcontextprotocol/sdk`).
    TypeScript,
}

/// A running SDK client: its events, line by line, and its process (killed on drop).
#[derive(Debug)]
pub struct SdkClient {
    child: Child,
    events: Receiver<Value>,
    seen: Vec<Value>,
    _plan: tempfile::NamedTempFile,
}

impl SdkClient {
    /// Start `sdk`'s client on `plan`.
    ///
    /// # Panics
    /// When the SDK is not installed (run `.ci/fixtures`) or the client cannot be spawned.
    pub fn start(sdk: Sdk, plan: &Value) -> Self {
        let mut file = tempfile::NamedTempFile::new().expect("a plan file");
        std::io::Write::write_all(&mut file, plan.to_string().as_bytes()).expect("write the plan");
        let mut command = match sdk {
            Sdk::Python => {
                let mut c = Command::new(fixtures::python_bin().unwrap_or_else(|e| panic!("{e}")));
                c.arg(script("py_client.py"));
                c
            }
            Sdk::TypeScript => {
                let modules = fixtures::node_modules().unwrap_or_else(|e| panic!("{e}"));
                let mut c = Command::new(fixtures::NODE);
                c.env("NODE_PATH", modules).arg(script("ts_client.mjs"));
                c
            }
        };
        let mut child = command
            .arg(file.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the {sdk:?} SDK client: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match serde_json::from_str::<Value>(&line) {
                    Ok(event) => {
                        eprintln!("[{sdk:?} client] {line}");
                        if tx.send(event).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("[{sdk:?} client stdout] {line}"),
                }
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[{sdk:?} client stderr] {line}");
            }
        });
        Self {
            child,
            events,
            seen: Vec::new(),
            _plan: file,
        }
    }

    /// The next event whose `event` is `name` (earlier events are kept, see [`Self::seen`]).
    ///
    /// # Panics
    /// When none comes within `timeout`, or the client ends first.
    pub fn wait_for(&mut self, name: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) => {
                    self.seen.push(event.clone());
                    if event["event"] == name {
                        return event;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no `{name}` event within {timeout:?}; seen: {:#?}",
                        self.seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "the client ended without a `{name}` event; seen: {:#?}",
                        self.seen
                    )
                }
            }
        }
    }

    /// Every event until the client exits (within `timeout`), after those already seen; the
    /// whole list is returned.
    ///
    /// # Panics
    /// When the client does not end in time.
    pub fn finish(mut self, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) => self.seen.push(event),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "the client did not end within {timeout:?}; seen: {:#?}",
                        self.seen
                    )
                }
            }
        }
        let _ = self.child.wait();
        std::mem::take(&mut self.seen)
    }

    /// The events received so far.
    pub fn seen(&self) -> &[Value] {
        &self.seen
    }
}

impl Drop for SdkClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The path of a client script of the MCP fixtures.
fn script(name: &str) -> PathBuf {
    crate::bins::workspace_root()
        .join("runtime/tests/fixtures/mcp")
        .join(name)
}

/// The events of `events` named `name`.
pub fn events_named<'a>(events: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> {
    events.iter().filter(move |e| e["event"] == name)
}
