//! `escepine-mcp-probe`: an MCP server (rmcp, stdio) for the `mcp-stdio` tests. Its tool `probe`
//! reports where the server runs — host name, working directory, the processes it can see, its
//! environment's names, what it can read and write — so a test can prove the server ran inside a
//! fresh sandbox and not on the host; its tool `leak` fails with a secret it was given at a
//! chosen offset of its error text, for the scrubbing of a bounded error text.
//!
//! Its FIRST ARGUMENT, if any, makes it misbehave instead: `silent` never answers (it sleeps
//! without reading stdin), `tempfail` exits 75 (`EX_TEMPFAIL`) before the handshake, `linger`
//! serves normally but leaves a child process behind that ignores the closed stdin.

use std::fs;
use std::process::ExitCode;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, Json, ServerHandler, ServiceExt};
use serde::{Deserialize, Serialize};

/// Arguments of `probe`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ProbeRequest {
    /// A host file the test planted; the probe tries to read it.
    planted: String,
    /// A path outside the workspace the probe tries to create.
    write_outside: String,
}

/// Result of `probe`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct ProbeReport {
    /// The UTS host name.
    hostname: String,
    /// The working directory.
    cwd: String,
    /// The pids under `/proc`.
    pids: Vec<u64>,
    /// The names of the environment's variables, sorted.
    env: Vec<String>,
    /// Whether the planted file could be read.
    read_planted: bool,
    /// Whether the file outside the workspace could be created.
    wrote_outside: bool,
    /// Whether a file could be created (and removed) in `$TMPDIR` — the workspace in a sandbox.
    wrote_workspace: bool,
    /// The process's own uid map.
    uid_map: String,
}

/// Arguments of `leak`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct LeakRequest {
    /// The environment variable whose value the error text ends with.
    name: String,
    /// Bytes of `x` before the value.
    pad: usize,
}

#[derive(Debug, Clone)]
struct Probe {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Probe {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Report where this server runs.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn probe(&self, Parameters(req): Parameters<ProbeRequest>) -> Json<ProbeReport> {
        let mut env: Vec<String> = std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        env.sort();
        let pids = fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        Json(ProbeReport {
            hostname: escepine_testkit::hostname(),
            cwd: std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            pids,
            env,
            read_planted: fs::read(&req.planted).is_ok(),
            wrote_outside: fs::write(&req.write_outside, "escaped").is_ok(),
            wrote_workspace: {
                // $TMPDIR is the workspace in a sandbox; the file does not outlive the call.
                let path = std::env::temp_dir().join("escepine-mcp-probe-was-here");
                let ok = fs::write(&path, "ok").is_ok();
                let _ = fs::remove_file(&path);
                ok
            },
            uid_map: fs::read_to_string("/proc/self/uid_map")
                .unwrap_or_default()
                .trim()
                .to_string(),
        })
    }

    /// Fail with an error text of `pad` bytes of `x` followed by the value of the variable
    /// `name` (a secret the server was given), so that it straddles a bound the test chose.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn leak(&self, Parameters(req): Parameters<LeakRequest>) -> CallToolResult {
        let value = std::env::var(&req.name).unwrap_or_default();
        CallToolResult::error(vec![ContentBlock::text(format!(
            "{}{value}",
            "x".repeat(req.pad)
        ))])
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Probe {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("escepine-mcp-probe", env!("CARGO_PKG_VERSION")),
        )
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mode = std::env::args().nth(1);
    match mode.as_deref() {
        None | Some("linger") => {}
        Some("silent") => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Some("tempfail") => return ExitCode::from(75),
        Some(other) => {
            eprintln!("escepine-mcp-probe: unknown mode `{other}`");
            return ExitCode::from(2);
        }
    }
    // SAFETY: fork in a single-threaded program (the current-thread runtime has no worker
    // threads yet); the child only sleeps.
    if mode.as_deref() == Some("linger") && unsafe { libc::fork() } == 0 {
        // A child that outlives the session: only the sandbox's teardown ends it.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let service = match Probe::new().serve(rmcp::transport::stdio()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("escepine-mcp-probe: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match service.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("escepine-mcp-probe: {e}");
            ExitCode::FAILURE
        }
    }
}
