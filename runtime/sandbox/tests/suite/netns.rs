//! The network namespaces of real sandboxes (root): one that an ended sandbox left empty serves
//! a later sandbox; one it left a socket in (a TCP connection to the relay, in `TIME-WAIT`)
//! serves none.

use std::collections::HashSet;

use escepine_sandbox::{JobStatus, LinuxBackend, SandboxSpec};
use escepine_testkit::python_probe::{job, PYTHON};
use serde_json::Value;

/// Prints the tool's network namespace.
const NETNS: &str =
    "import json, os\nprint(json.dumps({'netns': os.readlink('/proc/self/ns/net')}))";

/// Connects to the relay (`127.0.0.1:3128`), ends the connection first and waits for the
/// relay's end, so that its side stays in `TIME-WAIT`; prints the tool's network namespace.
const CONNECT: &str = "import json, os, socket
s = socket.create_connection(('127.0.0.1', 3128), timeout=5)
s.shutdown(socket.SHUT_WR)
while s.recv(4096):
    pass
s.close()
print(json.dumps({'netns': os.readlink('/proc/self/ns/net'), 'connected': True}))";

fn spec(egress: bool) -> SandboxSpec {
    if egress {
        crate::cgroups::spec_with_egress()
    } else {
        crate::cgroups::spec(escepine_sandbox::Limits::default().memory_bytes)
    }
}

/// Runs `code` in a fresh sandbox (with egress or not): what it printed.
async fn run(backend: &LinuxBackend, egress: bool, code: &str) -> Value {
    let argv = vec![PYTHON.into(), "-I".into(), "-c".into(), code.into()];
    let (status, out, stderr) =
        escepine_testkit::python_probe::run(backend, spec(egress), job(argv, None)).await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    out
}

/// The network namespaces of `runs` sandboxes run one after another.
async fn namespaces(backend: &LinuxBackend, egress: bool, runs: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..runs {
        let out = run(backend, egress, NETNS).await;
        seen.push(out["netns"].as_str().expect("a namespace").to_string());
    }
    seen
}

#[tokio::test]
async fn a_namespace_left_empty_serves_again_and_one_left_with_a_socket_does_not() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = crate::backend(run_dir.path());
    let own = std::fs::read_link("/proc/self/ns/net").expect("this process's namespace");

    for egress in [false, true] {
        let seen = namespaces(&backend, egress, 12).await;
        let distinct: HashSet<&String> = seen.iter().collect();
        assert!(
            !distinct.contains(&own.display().to_string()),
            "never the host's: {seen:?}"
        );
        assert!(
            distinct.len() < seen.len(),
            "a namespace served more than one sandbox (egress: {egress}): {seen:?}"
        );
    }

    // A sandbox whose tool leaves a connection to the relay in TIME-WAIT: its namespace is
    // never handed out again (TIME-WAIT lasts a minute; the runs below take a few seconds).
    let out = run(&backend, true, CONNECT).await;
    assert_eq!(out["connected"], true, "{out}");
    let used = out["netns"].as_str().expect("a namespace").to_string();
    let later = namespaces(&backend, true, 12).await;
    assert!(
        !later.contains(&used),
        "{used} held a socket and served again: {later:?}"
    );
    let distinct: HashSet<&String> = later.iter().collect();
    assert!(
        distinct.len() < later.len(),
        "the others still serve again: {later:?}"
    );
}
