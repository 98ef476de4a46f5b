//! The workspace's MCP servers and the MCP fixtures, for the tests of the MCP transport, the
//! listing, `escepine serve` and `escepine import`.
//!
//! [`demo_server`] is `escepine-mcp-demo` (`tools/mcp-demo`) and [`probe_server`] is
//! `escepine-mcp-probe` (this package), both found by [`crate::bins`] (`ESCEPINE_MCP_DEMO` and
//! `ESCEPINE_MCP_PROBE` name others).

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::bins;

/// `runtime/tests/fixtures/mcp/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    bins::workspace_root()
        .join("runtime/tests/fixtures/mcp")
        .join(rel)
}

/// The path of a current `escepine-mcp-demo`.
pub fn demo_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::path(bins::MCP_DEMO)).clone()
}

/// The path of a current `escepine-mcp-probe`.
pub fn probe_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::path(bins::MCP_PROBE)).clone()
}

/// A running `escepine serve --mcp http` (started by [`serve_http`]), killed on drop.
#[derive(Debug)]
pub struct HttpServe {
    child: std::process::Child,
    /// Where it serves: `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpServe {
    /// What it wrote on stderr so far (its logs).
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawn `serve` (an `escepine serve --mcp http --listen 127.0.0.1:0 …` command) and wait up to
/// a minute for the address it prints; its stderr keeps being drained (echoed as `[serve] …`)
/// so it never blocks.
///
/// # Panics
/// When it cannot be spawned or prints no address in time.
pub fn serve_http(mut serve: std::process::Command) -> HttpServe {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = serve
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn escepine serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[serve] {line}");
            if let Ok(mut kept) = kept.lock() {
                kept.push_str(&line);
                kept.push('\n');
            }
            if let Some(at) = line.find("listening on ") {
                let _ = tx.send(line[at + "listening on ".len()..].trim().to_string());
            }
        }
    });
    let url = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the server prints where it listens");
    HttpServe { child, url, log }
}
