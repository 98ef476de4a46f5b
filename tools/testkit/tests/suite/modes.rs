//! The testtool's modes, run directly. (Also makes `cargo test --workspace` build the binary the
//! runtime's executor and sandbox tests use.)

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn testtool(mode: &str, payload: &Value, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_escepine-testtool"))
        .arg(mode)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the testtool");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(payload.to_string().as_bytes())
        .expect("write the payload");
    drop(stdin);
    child.wait_with_output().expect("wait")
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).expect("one JSON value on stdout")
}

#[test]
fn echo_and_env() {
    let o = testtool("echo", &json!({ "a": [1, 2] }), &[]);
    assert!(o.status.success());
    assert_eq!(json_out(&o), json!({ "echo": { "a": [1, 2] } }));
    let o = testtool("env", &json!({}), &[("ESCEPINE_CALL_ID", "c1")]);
    assert_eq!(json_out(&o)["env"]["ESCEPINE_CALL_ID"], "c1");
}

#[test]
fn flaky_fails_the_first_fail_times_invocations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = dir.path().join("counter");
    let payload = json!({ "counter": counter, "fail_times": 2 });
    let env = [("ESCEPINE_CALL_ID", "c"), ("ESCEPINE_IDEMPOTENCY_KEY", "k")];
    assert_eq!(testtool("flaky", &payload, &env).status.code(), Some(75));
    assert_eq!(testtool("flaky", &payload, &env).status.code(), Some(75));
    let o = testtool("flaky", &payload, &env);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(json_out(&o), json!({ "count": 3 }));
    assert_eq!(
        std::fs::read_to_string(&counter).expect("counter"),
        "c k\nc k\nc k\n"
    );
}

#[test]
fn failures_and_protocol_breakers() {
    let o = testtool("fail", &json!({}), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("deliberate"));
    let o = testtool("garbage", &json!({}), &[]);
    assert!(o.status.success());
    assert!(serde_json::from_slice::<Value>(&o.stdout).is_err());
    let o = testtool(
        "secret",
        &json!({ "name": "K", "fail": true }),
        &[("K", "v4lue")],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("v4lue"));
    let o = testtool("nonsense", &json!({}), &[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn linger_leaves_a_process_holding_its_memory() {
    let o = testtool("linger", &json!({ "mb": 32 }), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = json_out(&o);
    assert_eq!(out["mb"], 32);
    let pid = out["lingering"]
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
        .expect("the lingering process's pid");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"));
    // SAFETY: a signal to the process this test left behind.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let status = status.expect("the lingering process outlives the tool");
    let rss_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    assert!(rss_kb >= 32 * 1024, "it holds {rss_kb} kB");
}
