//! The demo server as its clients start it: a process speaking MCP's newline-delimited JSON-RPC
//! on stdio, which answers the handshake and lists its three tools. (This test also has `cargo
//! test --workspace` build the binary, which the runtime's tests run from `target/<profile>/`.)

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// The next JSON-RPC message the server writes.
fn next_message(out: &mut impl BufRead) -> Value {
    let mut line = String::new();
    out.read_line(&mut line).expect("a line from the server");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
}

#[test]
fn the_server_answers_the_handshake_and_lists_its_tools() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_escepine-mcp-demo"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the demo server starts");
    let mut stdin = child.stdin.take().expect("its stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("its stdout"));
    let send = |stdin: &mut std::process::ChildStdin, message: Value| {
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().expect("flush");
    };
    send(
        &mut stdin,
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "escepine-mcp-demo-test", "version": "0"}
            }
        }),
    );
    let init = next_message(&mut stdout);
    assert_eq!(init["id"], 1, "{init}");
    assert!(init["result"]["serverInfo"]["name"].is_string(), "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let listed = next_message(&mut stdout);
    assert_eq!(listed["id"], 2, "{listed}");
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["lookup_city", "set-label", "word-count"],
        "{listed}"
    );
    drop(stdin);
    drop(stdout);
    child.kill().ok();
    child.wait().expect("the server is reaped");
}
