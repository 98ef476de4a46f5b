//! `escepine-hostile`: a `stdio-json` tool that tries to break out of its sandbox, for the
//! sandbox's tests. It reads one JSON payload on stdin and behaves as its FIRST ARGUMENT says:
//!
//! | mode | behaviour |
//! |---|---|
//! | `noop` | outputs `{}` (the benchmark's tool) |
//! | `probe` | tries everything in one go and reports each attempt (see [`probe`]) |
//! | `http` | sends the payload's `requests` through `$HTTP_PROXY` and reports each answer |
//! | `connect` | connects straight to `addr` (a socket address), reports the result |
//! | `bulk` | opens `connections` tunnels at once through `$HTTP_PROXY` (`CONNECT target`), sends `bytes` bytes on each while it reads as many back (an echo server's), reports what came back on each and how many threads PID 1 has; first it leaves `orphans` processes to PID 1, which end, and reports the zombies left of them |
//! | `fetch` | GETs the payload's `url`, each of its `urls` and each of its `also` (plain `http://` URLs) through `$HTTP_PROXY`, following every redirect blindly (at most 3 hops), and reports each hop |
//! | `dial` | ignores its payload and GETs (then CONNECTs to) the fixed origin of its SECOND ARGUMENT (`http://host:port/path`) through `$HTTP_PROXY` |
//! | `forkbomb` | forks children that wait forever until a fork fails (or `max` succeed) |
//! | `alloc` | allocates and touches `mb` MiB in 16 MiB steps until an allocation is refused |
//! | `hang` | starts children that leave the session and ignore SIGTERM, then sleeps forever |
//! | `shm` | maps and touches `mb` MiB of `kind` memory: `shared` (`MAP_SHARED|MAP_ANONYMOUS`), `memfd`, `workspace` (a file in /workspace) |
//! | `families` | opens a socket (and a socket pair) of each of `families`, tries the x32 ABI |
//! | `procfs` | reports what `/proc` shows of the host (see [`procfs`]) |
//! | `env` | outputs `{"env": {…}}`, its whole environment |
//!
//! Every attempt is reported, never assumed: `{"ok": true, …}` or `{"ok": false, "error": …}`.
//! A payload that is not JSON or an unknown mode exits 2. A payload with `"then_exit": N`
//! (any mode) writes its report to stderr instead, with a last line `giving up`, and exits
//! `N`: a tool that did its requests, then failed.

use std::fs;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{json, Map, Value};

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let mut text = String::new();
    if let Err(e) = io::stdin().read_to_string(&mut text) {
        eprintln!("escepine-hostile: cannot read stdin: {e}");
        return ExitCode::from(2);
    }
    let payload: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("escepine-hostile: payload is not JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let output = match mode.as_str() {
        "noop" => json!({}),
        "probe" => probe(&payload),
        "http" => http(&payload),
        "fetch" => fetch(&payload),
        "dial" => dial(std::env::args().nth(2).unwrap_or_default().as_str()),
        "connect" => {
            let addr = payload["addr"].as_str().unwrap_or("127.0.0.1:1");
            json!({ "connect": connect(addr) })
        }
        "bulk" => bulk(&payload),
        "forkbomb" => forkbomb(payload["max"].as_u64().unwrap_or(100_000)),
        "alloc" => alloc(payload["mb"].as_u64().unwrap_or(4096)),
        "hang" => hang(&payload),
        "env" => json!({ "env": env() }),
        "shm" => shm(
            payload["kind"].as_str().unwrap_or("shared"),
            payload["mb"].as_u64().unwrap_or(1536),
        ),
        "families" => families(&payload),
        "procfs" => procfs(),
        "uname" => uname(),
        other => {
            eprintln!("escepine-hostile: unknown mode `{other}`");
            return ExitCode::from(2);
        }
    };
    if let Some(code) = payload["then_exit"].as_u64() {
        eprintln!("escepine-hostile: {output}");
        eprintln!("escepine-hostile: giving up");
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let mut out = io::stdout().lock();
    if writeln!(out, "{output}")
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn ok(extra: Value) -> Value {
    let mut v = json!({ "ok": true });
    if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
        m.extend(e);
    }
    v
}

fn failed(e: impl std::fmt::Display) -> Value {
    json!({ "ok": false, "error": e.to_string() })
}

fn errno_result(rc: i64) -> Value {
    if rc < 0 {
        let e = io::Error::last_os_error();
        json!({ "ok": false, "error": e.to_string(), "errno": e.raw_os_error() })
    } else {
        json!({ "ok": true, "value": rc })
    }
}

fn env() -> Map<String, Value> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                Value::from(v.to_string_lossy().into_owned()),
            )
        })
        .collect()
}

fn list(dir: &str) -> Value {
    match fs::read_dir(dir) {
        Ok(rd) => {
            let mut names: Vec<String> = rd
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            ok(json!({ "entries": names }))
        }
        Err(e) => failed(e),
    }
}

fn connect(addr: &str) -> Value {
    let addr: SocketAddr = match addr.parse() {
        Ok(a) => a,
        Err(e) => return failed(e),
    };
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(mut s) => {
            let _ = s.write_all(b"escepine-hostile was here\n");
            ok(json!({}))
        }
        Err(e) => failed(e),
    }
}

/// Tries, and reports:
/// - `read_planted`: read the file named by `planted` (the test plants it in /root);
/// - `writes`: create a file in `/`, `/etc`, `/tmp`, `/proc`, `/dev`, `/run`, beside its own binary
///   and over its own binary, and in each of `write_also`;
/// - `workspace_before` (the workspace's entries on arrival), `workspace_write` (a marker);
/// - `proc` (the pids it can see), `kill_host` (`kill(host_pid, 0)`), `root` (what `/` holds);
/// - `sockets`: raw IPv4 and raw IPv6 sockets;
/// - `connect_host`: a TCP connection to `loopback_port` on 127.0.0.1;
/// - `connect_own`: a TCP connection to a listener of its own on loopback (Landlock allows only
///   the relay's port); `signal_init`: `kill(1, SIGTERM)` (Landlock scopes signals);
/// - `syscalls`: ptrace, unshare, mount, io_uring_setup, bpf, keyctl;
/// - `identity`: uid, capabilities, hostname, working directory; `env`: its environment.
fn probe(p: &Value) -> Value {
    let mut out = Map::new();
    if let Some(path) = p["planted"].as_str() {
        out.insert(
            "read_planted".into(),
            match fs::read_to_string(path) {
                Ok(text) => ok(json!({ "text": text })),
                Err(e) => failed(e),
            },
        );
    }
    out.insert("workspace_before".into(), list("/workspace"));
    // The host's sockets, where a sandbox's init reached them: each listed and connected to.
    let mut host_sockets = Map::new();
    for path in p["host_sockets"].as_array().into_iter().flatten() {
        let Some(path) = path.as_str() else { continue };
        let connect = match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => ok(json!({})),
            Err(e) => failed(e),
        };
        let parent = Path::new(path)
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        // What the path holds, if anything: a socket, a file of some size, nothing.
        let found = match fs::symlink_metadata(path) {
            Ok(m) => ok(json!({ "len": m.len(), "dir": m.is_dir() })),
            Err(e) => failed(e),
        };
        host_sockets.insert(
            path.to_string(),
            json!({ "connect": connect, "parent": list(&parent), "found": found }),
        );
    }
    out.insert("host_sockets".into(), Value::Object(host_sockets));
    out.insert(
        "workspace_write".into(),
        match fs::write("/workspace/marker", b"left by a previous call") {
            Ok(()) => ok(json!({})),
            Err(e) => failed(e),
        },
    );
    let exe = std::env::args().next().unwrap_or_default();
    let mut targets: Vec<String> = [
        "/escepine-hostile",
        "/etc/escepine-hostile",
        "/tmp/escepine-hostile",
        "/proc/escepine-hostile",
        "/dev/escepine-hostile",
        "/run/escepine-hostile",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(dir) = Path::new(&exe).parent() {
        targets.push(dir.join("escepine-hostile-dropped").display().to_string());
    }
    for extra in p["write_also"].as_array().into_iter().flatten() {
        if let Some(s) = extra.as_str() {
            targets.push(s.to_string());
        }
    }
    let mut writes = Map::new();
    for t in targets {
        let r = match fs::write(&t, b"escepine-hostile") {
            Ok(()) => ok(json!({})),
            Err(e) => failed(e),
        };
        writes.insert(t, r);
    }
    let overwrite = fs::OpenOptions::new().write(true).open(&exe);
    writes.insert(
        format!("{exe} (overwrite)"),
        match overwrite {
            Ok(_) => ok(json!({})),
            Err(e) => failed(e),
        },
    );
    out.insert("writes".into(), Value::Object(writes));
    let pids: Vec<u64> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect();
    out.insert("proc".into(), json!(pids));
    if let Some(host_pid) = p["host_pid"].as_i64() {
        // SAFETY: kill with signal 0 only checks whether the process exists and may be signalled.
        let rc = unsafe { libc::kill(host_pid as libc::pid_t, 0) };
        out.insert("kill_host".into(), errno_result(rc as i64));
    }
    out.insert("root".into(), list("/"));
    // The directory at the top of the probe's own path: present only because the binary is
    // mounted beneath it, so it must hold nothing but the next step of that path.
    if let Some(top) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.components().nth(1).map(|c| c.as_os_str().to_owned()))
    {
        let top = format!("/{}", top.to_string_lossy());
        out.insert("exe_top".into(), json!({ "dir": top, "list": list(&top) }));
    }
    let mut sockets = Map::new();
    for (name, domain, ty, proto) in [
        (
            "raw_ipv4",
            libc::AF_INET,
            libc::SOCK_RAW,
            libc::IPPROTO_ICMP,
        ),
        (
            "raw_ipv6",
            libc::AF_INET6,
            libc::SOCK_RAW,
            libc::IPPROTO_ICMPV6,
        ),
    ] {
        // SAFETY: `socket` takes plain integers; a returned descriptor is closed right away.
        let fd = unsafe { libc::socket(domain, ty, proto) };
        let r = errno_result(fd as i64);
        if fd >= 0 {
            // SAFETY: `fd` was just returned by `socket` and is owned here.
            unsafe { libc::close(fd) };
        }
        sockets.insert(name.into(), r);
    }
    out.insert("sockets".into(), Value::Object(sockets));
    if let Some(port) = p["loopback_port"].as_u64() {
        out.insert("connect_host".into(), connect(&format!("127.0.0.1:{port}")));
    }
    // Landlock: a TCP connection to its own loopback on a port other than the relay's, and a
    // signal to the sandbox's PID 1 (outside the tool's Landlock domain).
    out.insert(
        "connect_own".into(),
        match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(addr) => connect(&addr.to_string()),
            Err(e) => failed(e),
        },
    );
    // SAFETY: kill takes plain integers.
    out.insert(
        "signal_init".into(),
        errno_result(unsafe { libc::kill(1, libc::SIGTERM) } as i64),
    );
    let mut calls = Map::new();
    // SAFETY: each call below takes integers or null pointers; none touches this process's memory
    // through them, and any success is reported, not relied on.
    unsafe {
        calls.insert(
            "ptrace".into(),
            errno_result(libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0)),
        );
        calls.insert(
            "unshare_user".into(),
            errno_result(libc::unshare(libc::CLONE_NEWUSER) as i64),
        );
        calls.insert(
            "mount".into(),
            errno_result(libc::mount(
                c"none".as_ptr(),
                c"/workspace".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            ) as i64),
        );
        calls.insert(
            "io_uring_setup".into(),
            errno_result(libc::syscall(libc::SYS_io_uring_setup, 1, 0)),
        );
        calls.insert(
            "bpf".into(),
            errno_result(libc::syscall(libc::SYS_bpf, 0, 0, 0)),
        );
        calls.insert(
            "keyctl".into(),
            errno_result(libc::syscall(libc::SYS_keyctl, 0, 0, 0)),
        );
    }
    out.insert("syscalls".into(), Value::Object(calls));
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    out.insert(
        "identity".into(),
        json!({
            "uid": field("Uid:"),
            "cap_inh": field("CapInh:"),
            "cap_prm": field("CapPrm:"),
            "cap_eff": field("CapEff:"),
            "cap_bnd": field("CapBnd:"),
            "cap_amb": field("CapAmb:"),
            // SAFETY: PR_GET_SECUREBITS takes no pointer; its answer is the bits.
            "secure_bits": unsafe { libc::prctl(libc::PR_GET_SECUREBITS, 0, 0, 0, 0) },
            "no_new_privs": field("NoNewPrivs:"),
            // SAFETY: PR_GET_NO_NEW_PRIVS takes no pointer; its answer is the flag.
            "no_new_privs_prctl": unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) },
            "seccomp": field("Seccomp:"),
            "hostname": escepine_testkit::hostname(),
            "cwd": std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
        }),
    );
    out.insert("env".into(), Value::Object(env()));
    Value::Object(out)
}

/// Each of `requests` (`{"method": "CONNECT"|"GET", "target": "host:port", "path": "/x"}`)
/// through the proxy in `$HTTP_PROXY`; reports the status line and the body of each answer.
fn http(p: &Value) -> Value {
    let proxy = std::env::var("HTTP_PROXY").unwrap_or_default();
    let proxy_addr = proxy
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut results = Vec::new();
    for req in p["requests"].as_array().into_iter().flatten() {
        let method = req["method"].as_str().unwrap_or("GET");
        let target = req["target"].as_str().unwrap_or("");
        let path = req["path"].as_str().unwrap_or("/");
        let result = request(&proxy_addr, method, target, path);
        results.push(result.unwrap_or_else(failed));
    }
    json!({ "proxy": proxy, "results": results })
}

/// `connections` tunnels at once to the payload's `target` through the proxy, each sending
/// `bytes` bytes (a pattern of its own) while reading as many back: for each, whether what came
/// back is what was sent; and PID 1's thread count (`/proc/1/status`).
fn bulk(p: &Value) -> Value {
    let proxy = proxy_addr();
    let target = p["target"].as_str().unwrap_or("").to_string();
    let connections = p["connections"].as_u64().unwrap_or(1);
    let bytes = usize::try_from(p["bytes"].as_u64().unwrap_or(0)).unwrap_or(0);
    for _ in 0..p["orphans"].as_u64().unwrap_or(0) {
        orphan();
    }
    let runs: Vec<_> = (0..connections)
        .map(|n| {
            let (proxy, target) = (proxy.clone(), target.clone());
            std::thread::spawn(move || echoed(&proxy, &target, n, bytes))
        })
        .collect();
    let results: Vec<Value> = runs
        .into_iter()
        .map(|r| match r.join() {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => failed(e),
            Err(_) => failed("the connection's thread panicked"),
        })
        .collect();
    let threads = fs::read_to_string("/proc/1/status").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|t| t.trim().parse::<u64>().ok())
    });
    // The orphans ended long ago, or end now: PID 1 has a second to reap them.
    let mut zombies = orphaned_zombies();
    for _ in 0..100 {
        if zombies == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        zombies = orphaned_zombies();
    }
    json!({ "results": results, "pid1_threads": threads, "zombies_left": zombies })
}

/// A process whose parent ends at once, so that PID 1 inherits it; it ends 50 ms later.
fn orphan() {
    // SAFETY: called before this program starts a thread; the children call only `fork`,
    // `nanosleep` and `_exit`.
    unsafe {
        let child = libc::fork();
        if child == 0 {
            if libc::fork() == 0 {
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 50_000_000,
                };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
            libc::_exit(0);
        }
        if child > 0 {
            libc::waitpid(child, std::ptr::null_mut(), 0);
        }
    }
}

/// The zombies whose parent is PID 1 (`/proc/*/stat`: state `Z`, parent 1).
fn orphaned_zombies() -> usize {
    let Ok(dir) = fs::read_dir("/proc") else {
        return usize::MAX;
    };
    dir.flatten()
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) state ppid …`: the fields after the last `)`.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().take(2).collect())
                .unwrap_or_default();
            fields == ["Z", "1"]
        })
        .count()
}

/// One tunnel of [`bulk`]: `bytes` bytes of pattern `n` sent to `target` (from a thread of
/// its own) while as many are read back; whether they came back unchanged.
fn echoed(proxy: &str, target: &str, n: u64, bytes: usize) -> io::Result<Value> {
    let addr: SocketAddr = proxy
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e}")))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    s.set_nodelay(true)?;
    s.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte)? == 1 {
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    if !status.contains(" 200") {
        return Ok(json!({ "ok": false, "status": status }));
    }
    let pattern = |i: usize| (i as u64).wrapping_mul(31).wrapping_add(n * 7) as u8;
    let sent: Vec<u8> = (0..bytes).map(pattern).collect();
    let mut writer = s.try_clone()?;
    let sending = std::thread::spawn(move || writer.write_all(&sent));
    let mut got = vec![0u8; bytes];
    let read = s.read_exact(&mut got);
    let wrote = sending
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the sender panicked")));
    let intact = read.is_ok() && got.iter().enumerate().all(|(i, b)| *b == pattern(i));
    Ok(json!({
        "ok": read.is_ok() && wrote.is_ok(),
        "status": status,
        "intact": intact,
        "read": read.err().map(|e| e.to_string()),
        "wrote": wrote.err().map(|e| e.to_string()),
    }))
}

/// The proxy's `host:port`, from `$HTTP_PROXY`.
fn proxy_addr() -> String {
    std::env::var("HTTP_PROXY")
        .unwrap_or_default()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string()
}

/// `http://authority/path` split into its authority and path (`/` when it has none).
fn split_http(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    Some((authority.to_string(), path.to_string()))
}

/// GET `url` through the proxy, following each `Location` (absolute, or a path on the same
/// authority) whatever its origin, at most 3 hops.
fn follow(proxy: &str, url: &str) -> Value {
    let mut hops = Vec::new();
    let mut current = url.to_string();
    for _ in 0..4 {
        let Some((authority, path)) = split_http(&current) else {
            hops.push(json!({ "url": current, "ok": false, "error": "not an http URL" }));
            break;
        };
        let answer = match request(proxy, "GET", &authority, &path) {
            Ok(answer) => answer,
            Err(e) => {
                hops.push(json!({ "url": current, "ok": false, "error": e.to_string() }));
                break;
            }
        };
        let status = answer["status"].as_str().unwrap_or("").to_string();
        let body = answer["body"].as_str().unwrap_or("").to_string();
        let location = answer["location"].as_str().map(str::to_string);
        hops.push(json!({ "url": current, "ok": true, "status": status, "body": body }));
        match location {
            Some(l) if l.starts_with('/') => current = format!("http://{authority}{l}"),
            Some(l) => current = l,
            None => break,
        }
    }
    Value::Array(hops)
}

/// `fetch`: each URL of the payload, redirects followed blindly.
fn fetch(p: &Value) -> Value {
    let proxy = proxy_addr();
    let urls = p["url"]
        .as_str()
        .into_iter()
        .chain(
            p["urls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        )
        .chain(
            p["also"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        );
    let results: Vec<Value> = urls.map(|u| follow(&proxy, u)).collect();
    json!({ "results": results })
}

/// `dial`: the fixed origin of `url`, whatever the payload authorized, plain and tunnelled.
fn dial(url: &str) -> Value {
    let proxy = proxy_addr();
    let Some((authority, path)) = split_http(url) else {
        return json!({ "results": [failed(format!("`{url}` is not an http URL"))] });
    };
    let results: Vec<Value> = ["GET", "CONNECT"]
        .iter()
        .map(|m| request(&proxy, m, &authority, &path).unwrap_or_else(failed))
        .collect();
    json!({ "results": results })
}

/// One request through the proxy at `proxy_addr`.
fn request(proxy_addr: &str, method: &str, target: &str, path: &str) -> io::Result<Value> {
    let head = if method == "CONNECT" {
        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")
    } else {
        format!(
            "{method} http://{target}{path} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"
        )
    };
    let addr: SocketAddr = proxy_addr
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{e}")))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(head.as_bytes())?;
    if method == "CONNECT" {
        // Read the answer's head; on success, speak HTTP through the tunnel.
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") && s.read(&mut byte)? == 1 {
            buf.push(byte[0]);
        }
        let head_text = String::from_utf8_lossy(&buf).into_owned();
        let status = head_text.lines().next().unwrap_or("").to_string();
        if status.contains(" 200") {
            s.write_all(
                format!("GET {path} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )?;
        }
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        let body = if status.contains(" 200") {
            text.split_once("\r\n\r\n")
                .map(|(_, b)| b)
                .unwrap_or("")
                .to_string()
        } else {
            text
        };
        return Ok(json!({ "ok": true, "status": status, "body": body }));
    }
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text.lines().next().unwrap_or("").to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let location = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    let mut answer = json!({ "ok": true, "status": status, "body": body });
    if let (Some(l), Value::Object(m)) = (location, &mut answer) {
        m.insert("location".into(), Value::from(l));
    }
    Ok(answer)
}

/// Forks children that wait forever, until a fork fails or `max` succeeded.
fn forkbomb(max: u64) -> Value {
    let mut forked = 0u64;
    let mut error = Value::Null;
    while forked < max {
        // SAFETY: this program is single-threaded; the child only calls `pause` and `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            loop {
                // SAFETY: `pause` just waits for a signal.
                unsafe { libc::pause() };
            }
        }
        if pid < 0 {
            error = Value::from(io::Error::last_os_error().to_string());
            break;
        }
        forked += 1;
    }
    json!({ "forked": forked, "error": error })
}

/// Allocates and touches memory in 16 MiB steps up to `mb` MiB, stopping at the first refusal.
fn alloc(mb: u64) -> Value {
    const STEP: usize = 16 << 20;
    let mut held: Vec<Vec<u8>> = Vec::new();
    let mut refused = Value::Null;
    while (held.len() as u64) * 16 < mb {
        let mut chunk: Vec<u8> = Vec::new();
        if let Err(e) = chunk.try_reserve_exact(STEP) {
            refused = Value::from(e.to_string());
            break;
        }
        chunk.resize(STEP, 1);
        held.push(chunk);
    }
    json!({ "allocated_mb": held.len() as u64 * 16, "refused": refused })
}

/// Starts `children` processes that leave the session and ignore SIGTERM, then sleeps forever.
fn hang(p: &Value) -> Value {
    for _ in 0..p["children"].as_u64().unwrap_or(3) {
        // SAFETY: single-threaded; the child only makes async-signal-safe calls.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: setsid/signal/sleep take plain values.
            unsafe {
                libc::setsid();
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                loop {
                    libc::sleep(1000);
                }
            }
        }
    }
    loop {
        std::thread::sleep(Duration::from_secs(1000));
    }
}

/// Maps `mb` MiB of `kind` memory that `RLIMIT_DATA` does not count (`shared`: an anonymous
/// shared mapping; `memfd`: memfds mapped shared; `workspace`: files in /workspace, a tmpfs) and
/// touches every page. Files are made 32 MiB each, below the file size limit. Reports how much
/// it touched if it lives to tell.
fn shm(kind: &str, mb: u64) -> Value {
    const FILE_MB: u64 = 32;
    let mut touched_mb = 0u64;
    let mut n = 0u32;
    while touched_mb < mb {
        let chunk = if kind == "shared" {
            mb
        } else {
            FILE_MB.min(mb - touched_mb)
        };
        let len = (chunk as usize) << 20;
        let fd = match kind {
            "shared" => -1,
            // SAFETY: the name is a valid C string; the flags are plain integers.
            "memfd" => unsafe { libc::memfd_create(c"escepine-hostile".as_ptr(), 0) },
            "workspace" => match fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(format!("/workspace/hostile-mapped-{n}"))
            {
                Ok(f) => std::os::fd::IntoRawFd::into_raw_fd(f),
                Err(e) => return failed(e),
            },
            other => return failed(format!("unknown memory kind {other}")),
        };
        n += 1;
        // SAFETY: `fd` is a descriptor of this process; ftruncate takes plain integers.
        if kind != "shared" && (fd < 0 || unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0) {
            return errno_result(-1);
        }
        let flags = if fd < 0 {
            libc::MAP_SHARED | libc::MAP_ANONYMOUS
        } else {
            libc::MAP_SHARED
        };
        // SAFETY: a fresh mapping at an address the kernel chooses; nothing else refers to it.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return errno_result(-1);
        }
        let base = addr.cast::<u8>();
        let mut at = 0usize;
        while at < len {
            // SAFETY: `at < len`, within the mapping made above, which stays mapped.
            unsafe { base.add(at).write_volatile(1) };
            at += 4096;
        }
        touched_mb += chunk;
    }
    ok(json!({ "touched_mb": touched_mb }))
}

/// `socket` of each of the payload's `families` (numbers) as a stream and a datagram socket, and
/// `socketpair` of each; then `socket` through the x32 ABI (`__X32_SYSCALL_BIT`).
fn families(p: &Value) -> Value {
    let mut sockets = Map::new();
    let mut pairs = Map::new();
    for family in p["families"].as_array().into_iter().flatten() {
        let Some(f) = family.as_i64() else { continue };
        let mut per_type = Map::new();
        for (name, ty) in [
            ("stream", libc::SOCK_STREAM),
            ("dgram", libc::SOCK_DGRAM),
            ("seqpacket", libc::SOCK_SEQPACKET),
        ] {
            // SAFETY: `socket` takes plain integers; a returned descriptor is closed right away.
            let fd = unsafe { libc::socket(f as libc::c_int, ty, 0) };
            let r = errno_result(fd as i64);
            if fd >= 0 {
                // SAFETY: `fd` was just returned by `socket` and is owned here.
                unsafe { libc::close(fd) };
            }
            per_type.insert(name.into(), r);
        }
        sockets.insert(f.to_string(), Value::Object(per_type));
        let mut sv = [-1 as libc::c_int; 2];
        // SAFETY: `sv` has room for the two descriptors `socketpair` writes.
        let rc =
            unsafe { libc::socketpair(f as libc::c_int, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) };
        let r = errno_result(rc as i64);
        for fd in sv.into_iter().filter(|&fd| fd >= 0) {
            // SAFETY: written by a successful `socketpair`, owned here.
            unsafe { libc::close(fd) };
        }
        pairs.insert(f.to_string(), r);
    }
    const X32_SYSCALL_BIT: libc::c_long = 0x4000_0000;
    // SAFETY: a system call with plain integer arguments; a returned descriptor is closed.
    let x32 = unsafe {
        libc::syscall(
            X32_SYSCALL_BIT | libc::SYS_socket,
            libc::AF_VSOCK,
            libc::SOCK_STREAM,
            0,
        )
    };
    let x32_result = errno_result(x32);
    if x32 >= 0 {
        // SAFETY: a descriptor this process owns.
        unsafe { libc::close(x32 as libc::c_int) };
    }
    json!({ "sockets": sockets, "socketpair": pairs, "x32_socket": x32_result })
}

/// What `/proc` shows: the kernel command line, memory, PID 1's command line, environment and
/// executable, the mount table, and every top-level entry that is not a process.
fn procfs() -> Value {
    let read = |path: &str| match fs::read(path) {
        Ok(bytes) => ok(json!({ "text": String::from_utf8_lossy(&bytes) })),
        Err(e) => failed(e),
    };
    let mut files = Map::new();
    for path in [
        "/proc/cmdline",
        "/proc/meminfo",
        "/proc/1/cmdline",
        "/proc/1/environ",
        "/proc/self/mountinfo",
        "/proc/self/mounts",
        "/proc/1/mountinfo",
    ] {
        files.insert(path.into(), read(path));
    }
    let exe = match fs::read_link("/proc/1/exe") {
        Ok(p) => ok(json!({ "text": p.display().to_string() })),
        Err(e) => failed(e),
    };
    files.insert("/proc/1/exe".into(), exe);
    let entries: Vec<String> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    // Every other top-level file, read: whatever of the host one of them shows.
    let mut others = Map::new();
    for name in &entries {
        let path = format!("/proc/{name}");
        if Path::new(&path).is_file() {
            if let Ok(bytes) = fs::read(&path) {
                others.insert(
                    path,
                    Value::from(String::from_utf8_lossy(&bytes).into_owned()),
                );
            }
        }
    }
    // What the file systems say of their size: a tmpfs of the kernel's default size would
    // show the host's memory.
    let mut sizes = Map::new();
    for path in ["/", "/workspace", "/proc", "/dev"] {
        let Ok(c) = std::ffi::CString::new(path) else {
            continue;
        };
        // SAFETY: `st` is a plain C struct the call fills in; `c` is a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above; both pointers are valid for the call.
        let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        sizes.insert(
            path.into(),
            if rc == 0 {
                json!({ "bytes": st.f_blocks as u64 * st.f_frsize as u64, "inodes": st.f_files as u64 })
            } else {
                errno_result(-1)
            },
        );
    }
    json!({ "files": files, "entries": entries, "readable": others, "sizes": sizes })
}

/// The kernel the tool sees (`uname -r`, `uname -v`): the host's, or gVisor's own.
fn uname() -> Value {
    // SAFETY: `utsname` is plain C data; all-zero bytes are a valid value, which `uname` fills.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is valid for one `utsname` for the call.
    if unsafe { libc::uname(&mut u) } != 0 {
        return json!({ "error": std::io::Error::last_os_error().to_string() });
    }
    let text = |field: &[libc::c_char]| {
        let bytes: Vec<u8> = field
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    json!({
        "sysname": text(&u.sysname),
        "release": text(&u.release),
        "version": text(&u.version),
        "nodename": text(&u.nodename),
    })
}
