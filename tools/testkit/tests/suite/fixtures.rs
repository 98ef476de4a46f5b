//! The fixture paths and file lists of `escepine_testkit::fixtures`, checked on what
//! `.ci/fixtures` installed: the servers answer a raw JSON-RPC exchange over stdio on the host,
//! and the image file lists are complete (a root made of exactly those files, entered with
//! `chroot`, runs the fixture servers). Needs `.ci/fixtures` to have run, and root for `chroot`.

use std::ffi::CString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use escepine_testkit::fixtures::{self, ImageConfig};
use serde_json::{json, Value};

/// How long one server may take for the whole exchange.
const EXCHANGE_LIMIT: Duration = Duration::from_secs(60);

/// Sends `initialize`, `notifications/initialized`, then each request of `requests`
/// (`(method, params)`) to the server `cmd` starts, one line each, and returns the answers'
/// `result`s in order: the `initialize` result first.
fn exchange(cmd: &mut Command, requests: &[(&str, Value)]) -> Vec<Value> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let pid = child.id() as libc::pid_t;
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let step = Duration::from_millis(100);
            let mut waited = Duration::ZERO;
            while !done.load(Ordering::SeqCst) && waited < EXCHANGE_LIMIT {
                std::thread::sleep(step);
                waited += step;
            }
            if !done.load(Ordering::SeqCst) {
                // SAFETY: kill(2) on the child's pid, which is not yet reaped (we wait below).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        })
    };
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut stderr = child.stderr.take().expect("stderr");
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write to the server");
        stdin.flush().expect("flush");
    };
    let mut results = Vec::new();
    let mut read = |id: u64| -> Value {
        loop {
            let mut line = String::new();
            let n = stdout.read_line(&mut line).expect("read from the server");
            if n == 0 {
                let mut err = String::new();
                let _ = stderr.read_to_string(&mut err);
                panic!("the server closed stdout before answering request {id}; stderr: {err}");
            }
            let msg: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"));
            // Notifications (logging) may come in between.
            if msg.get("id") == Some(&json!(id)) {
                assert!(msg.get("error").is_none(), "request {id} failed: {msg}");
                return msg["result"].clone();
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "escepine-fixtures-test", "version": "0"}}}),
    );
    results.push(read(0));
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (i, (method, params)) in requests.iter().enumerate() {
        let id = i as u64 + 1;
        send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        results.push(read(id));
    }
    drop(stdin);
    let status = child.wait().expect("wait for the server");
    let mut err = String::new();
    let _ = stderr.read_to_string(&mut err);
    done.store(true, Ordering::SeqCst);
    watchdog.join().expect("watchdog");
    assert!(
        status.success(),
        "the server exited with {status} after stdin closed; stderr: {err}"
    );
    results
}

fn call(name: &str, arguments: Value) -> (&'static str, Value) {
    ("tools/call", json!({"name": name, "arguments": arguments}))
}

fn list() -> (&'static str, Value) {
    ("tools/list", json!({}))
}

/// The tool named `name` in a `tools/list` result.
fn tool<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no tool {name} in {listing}"))
}

/// The names listed in a `tools/list` result, sorted.
fn names(listing: &Value) -> Vec<String> {
    let mut names: Vec<String> = listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect();
    names.sort();
    names
}

/// The checks both SDK servers pass: two read-only tools, `word_count` with an outputSchema and
/// a structured result, `shout` with text only.
fn assert_sdk_server(listing: &Value, words: &Value, shout: &Value) {
    let wc = tool(listing, "word_count");
    assert_eq!(wc["annotations"]["readOnlyHint"], true);
    assert_eq!(wc["outputSchema"]["properties"]["words"]["type"], "integer");
    let sh = tool(listing, "shout");
    assert_eq!(sh["annotations"]["readOnlyHint"], true);
    assert!(
        sh.get("outputSchema").is_none(),
        "shout lists an outputSchema: {sh}"
    );
    assert_eq!(words["structuredContent"], json!({"words": 3}));
    assert_eq!(shout["content"], json!([{"type": "text", "text": "HELLO"}]));
    assert!(shout.get("structuredContent").is_none());
}

#[test]
fn the_paths_exist_and_the_venv_python_stays_a_link() {
    let python = fixtures::python_bin().expect("python_bin");
    assert!(python.ends_with("py/bin/python"), "{}", python.display());
    assert!(
        python
            .symlink_metadata()
            .expect("lstat")
            .file_type()
            .is_symlink(),
        "python_bin must be the venv's link, not the resolved interpreter"
    );
    assert_eq!(
        fixtures::node_bin().expect("node_bin"),
        Path::new("/usr/bin/node")
    );
    assert!(fixtures::node_modules()
        .expect("node_modules")
        .join("zod/package.json")
        .is_file());
    for name in ["py_sdk_server.py", "node_sdk_server.mjs"] {
        assert!(fixtures::server_source(name).expect(name).is_file());
    }
    let err = fixtures::server_source("no_such_server.py").expect_err("a missing server");
    let text = err.to_string();
    assert!(
        text.contains("no_such_server.py") && text.contains("run .ci/fixtures"),
        "{text}"
    );
}

#[test]
fn the_python_sdk_server_answers_on_the_host() {
    let r = exchange(
        Command::new(fixtures::python_bin().expect("python"))
            .arg(fixtures::server_source("py_sdk_server.py").expect("server")),
        &[
            list(),
            call("word_count", json!({"text": "one two  three"})),
            call("shout", json!({"text": "hello"})),
            call("whoami", json!({})),
        ],
    );
    assert_eq!(r[0]["serverInfo"]["name"], "escepine-py-sdk-fixture");
    assert_sdk_server(&r[1], &r[2], &r[3]);
    let who: Value = serde_json::from_str(r[4]["content"][0]["text"].as_str().expect("text"))
        .expect("whoami JSON");
    assert_eq!(
        who["prefix"],
        fixtures::python_venv().expect("venv").display().to_string()
    );
    assert_eq!(who["base_prefix"], "/usr");
}

#[test]
fn the_typescript_sdk_server_answers_on_the_host_with_node_path() {
    let r = exchange(
        Command::new(fixtures::node_bin().expect("node"))
            .arg(fixtures::server_source("node_sdk_server.mjs").expect("server"))
            .env("NODE_PATH", fixtures::node_modules().expect("node_modules")),
        &[
            list(),
            call("word_count", json!({"text": "one two  three"})),
            call("shout", json!({"text": "hello"})),
        ],
    );
    assert_eq!(r[0]["serverInfo"]["name"], "escepine-node-sdk-fixture");
    assert_sdk_server(&r[1], &r[2], &r[3]);
}

#[test]
fn the_registry_servers_commands_list_their_tools() {
    let argv = |v: Vec<String>| {
        let mut c = Command::new(&v[0]);
        c.args(&v[1..]);
        c
    };
    let time = exchange(
        &mut argv(fixtures::mcp_server_time_cmd().expect("time")),
        &[list()],
    );
    assert_eq!(names(&time[1]), ["convert_time", "get_current_time"]);

    let repo = tempfile::tempdir().expect("tempdir");
    let init = Command::new("git")
        .args(["init", "-q"])
        .arg(repo.path())
        .status()
        .expect("git init");
    assert!(init.success(), "git init: {init}");
    let git = exchange(
        argv(fixtures::mcp_server_git_cmd().expect("git"))
            .arg("--repository")
            .arg(repo.path()),
        &[list()],
    );
    let tools = git[1]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 12, "{}", git[1]);
    assert!(tools.iter().all(|t| t.get("outputSchema").is_none()));

    let memory_file = repo.path().join("memory.jsonl");
    let memory = exchange(
        argv(fixtures::server_memory_cmd().expect("memory")).env("MEMORY_FILE_PATH", &memory_file),
        &[list()],
    );
    assert!(names(&memory[1]).contains(&"create_entities".to_string()));
}

/// Copies `files` into `dir` as an image builder would (contents and modes), and returns the
/// bytes copied.
fn lay_out(dir: &Path, files: &[(PathBuf, PathBuf)]) -> u64 {
    let mut bytes = 0;
    for (host, at) in files {
        assert!(at.is_absolute(), "{} is not absolute", at.display());
        let dest = dir.join(at.strip_prefix("/").expect("absolute"));
        std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        bytes += std::fs::copy(host, &dest)
            .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", host.display(), dest.display()));
        let mode = std::fs::metadata(host).expect("stat").permissions().mode();
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    bytes
}

/// The image's entrypoint as a command run with `chroot` into `dir`, with only the config's
/// `Env`, in its `WorkingDir`.
fn in_chroot(dir: &Path, config: &ImageConfig) -> Command {
    let mut cmd = Command::new(&config.entrypoint[0]);
    cmd.args(&config.entrypoint[1..])
        .env_clear()
        .envs(config.env.iter().map(|(k, v)| (k, v)));
    let root = CString::new(dir.as_os_str().as_bytes()).expect("root path");
    let wd = CString::new(config.working_dir.as_str()).expect("working dir");
    // SAFETY: chroot(2) and chdir(2) are async-signal-safe and use strings made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::chroot(root.as_ptr()) != 0 || libc::chdir(wd.as_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

#[test]
fn the_python_image_files_alone_run_the_python_server() {
    let files = fixtures::python_image_files().expect("python_image_files");
    let at = |p: &str| files.iter().any(|(_, a)| a == Path::new(p));
    assert!(at("/usr/bin/python3.11"));
    assert!(at("/lib64/ld-linux-x86-64.so.2"), "the dynamic loader");
    assert!(at("/usr/lib/python3.11/os.py"));
    assert!(at("/app/site-packages/mcp/__init__.py"));
    assert!(at("/app/py_sdk_server.py"));
    assert!(files.iter().all(|(host, _)| host.is_file()));
    for left_out in ["test", "idlelib", "tkinter", "ensurepip"] {
        let dir = Path::new("/usr/lib/python3.11").join(left_out);
        assert!(
            !files.iter().any(|(_, a)| a.starts_with(&dir)),
            "{} is in the python image",
            dir.display()
        );
    }
    assert!(
        !files
            .iter()
            .any(|(_, a)| a.to_string_lossy().contains("/__pycache__/")),
        "bytecode caches are in the python image"
    );
    let stdlib: u64 = files
        .iter()
        .filter(|(_, a)| a.starts_with("/usr/lib/python3.11"))
        .map(|(h, _)| h.metadata().expect("stat").len())
        .sum();
    assert!(
        (8 << 20..40 << 20).contains(&stdlib),
        "stdlib {stdlib} bytes"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = lay_out(dir.path(), &files);
    eprintln!("python image: {} files, {bytes} bytes", files.len());
    assert!(
        (30 << 20..120 << 20).contains(&bytes),
        "python image {bytes} bytes"
    );

    let config = fixtures::python_image_config();
    let r = exchange(
        &mut in_chroot(dir.path(), &config),
        &[
            list(),
            call("word_count", json!({"text": "one two  three"})),
            call("shout", json!({"text": "hello"})),
            call("whoami", json!({})),
        ],
    );
    assert_sdk_server(&r[1], &r[2], &r[3]);
    let who: Value = serde_json::from_str(r[4]["content"][0]["text"].as_str().expect("text"))
        .expect("whoami JSON");
    assert_eq!(who["executable"], "/usr/bin/python3.11");
    assert_eq!(who["prefix"], "/usr");
    assert_eq!(who["cwd"], "/app");
}

#[test]
fn the_node_image_files_alone_run_the_node_server() {
    let files = fixtures::node_image_files().expect("node_image_files");
    let at = |p: &str| files.iter().any(|(_, a)| a == Path::new(p));
    assert!(at("/usr/bin/node"));
    assert!(at("/lib64/ld-linux-x86-64.so.2"), "the dynamic loader");
    assert!(at(
        "/app/node_modules/@modelcontextprotocol/sdk/package.json"
    ));
    assert!(at("/app/node_modules/zod/package.json"));
    assert!(at("/app/node_sdk_server.mjs"));

    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = lay_out(dir.path(), &files);
    eprintln!("node image: {} files, {bytes} bytes", files.len());
    assert!(
        (40 << 20..200 << 20).contains(&bytes),
        "node image {bytes} bytes"
    );

    let config = fixtures::node_image_config();
    let r = exchange(
        &mut in_chroot(dir.path(), &config),
        &[
            list(),
            call("word_count", json!({"text": "one two  three"})),
            call("shout", json!({"text": "hello"})),
        ],
    );
    assert_sdk_server(&r[1], &r[2], &r[3]);
}

#[test]
fn the_read_only_paths_cover_the_venv_the_base_interpreter_and_ssl() {
    let py = fixtures::python_read_only_paths().expect("python_read_only_paths");
    assert!(py.contains(&fixtures::python_venv().expect("venv")));
    assert!(py.contains(&PathBuf::from("/usr/lib/python3.11")));
    assert!(py.contains(&PathBuf::from("/usr/bin/python3.11")));
    assert!(py.contains(&fixtures::server_dir().canonicalize().expect("server dir")));
    assert!(
        py.iter().any(|p| p.to_string_lossy().contains("libssl.so")),
        "libssl (for `import ssl`) is not among {py:?}"
    );
    assert!(py.iter().all(|p| p.exists()), "{py:?}");

    let node = fixtures::node_read_only_paths().expect("node_read_only_paths");
    assert!(node.contains(&PathBuf::from("/usr/bin/node")));
    assert!(node.contains(&fixtures::node_modules().expect("node_modules")));
    assert!(node.iter().all(|p| p.exists()), "{node:?}");
}
