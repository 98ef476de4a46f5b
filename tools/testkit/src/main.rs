//! `escepine-testtool`: a `stdio-json` tool for the tests of Escepine's executors and sandbox.
//!
//! It reads one JSON payload from stdin and behaves as its FIRST ARGUMENT (the record's
//! `endpoint.args`) says:
//!
//! | mode | behaviour |
//! |---|---|
//! | `echo` | outputs `{"echo": <payload>}` |
//! | `count` | appends one line (`<call id> <idempotency key>`) to the file named by the payload's `counter` (an absolute path), outputs `{"count": <lines in the file>}` |
//! | `flaky` | appends to `counter` like `count`; the first `fail_times` invocations (those that find fewer than `fail_times` lines in the file before appending) exit 75, later ones output `{"count": …}` |
//! | `fail` | exits 1 with a message on stderr |
//! | `sleep` | spawns a grandchild `sleep` (its pid written to the payload's `pidfile`, when given), sleeps `ms` milliseconds, outputs `{"slept": ms}` |
//! | `secret` | reads the environment variable named by `name`; prints it on stderr (right after `pad` bytes of `x`, when given); exits 1 with it in the message if `fail` is true, else outputs `{"leak": <value>}` |
//! | `encodings` | reads the environment variable named by `name`; prints each of its encodings (see `encodings`) on stderr; exits 1 with them in the message if `fail` is true, else outputs `{"forms": [<each encoding>]}` |
//! | `bad_output` | outputs `{"unexpected": true}` |
//! | `garbage` | prints text that is not JSON, exits 0 |
//! | `env` | outputs `{"env": {<every environment variable>}}` |
//! | `noisy` | writes `stderr_bytes` bytes on stderr, then outputs `{"noisy": stderr_bytes}` |
//! | `big` | outputs `{"data": "<bytes × 'x'>"}` |
//! | `abort` | dies of `SIGABRT` |
//! | `http_put` | `PUT <store>/items/<key>` with body `{"value": value}` |
//! | `http_delete` | `DELETE <store>/items/<key>` |
//! | `http_version` | `POST <store>/items/<key>/versions` with body `{"value": value}` |
//! | `http_get` | `GET <store>/items/<key>` |
//! | `linger` | forks a process that closes its standard streams, allocates and touches `mb` MiB (default 256) and waits for a signal, forever; once it holds that memory, outputs `{"lingering": <its pid>, "mb": mb}` and exits, leaving it behind |
//! | `workspace_file` | reads `/workspace/<name>` (the payload's `name`) and outputs `{"text": <its contents, lossy UTF-8>, "bytes": <its size>, "mode": <its permission bits>, "write", "truncate", "chmod", "unlink", "rename", "beside"}`: for each attempt to change it (open for writing, truncate, `chmod 0666`, unlink, rename) and to write a new file beside it, `"ok"` or the `errno` name |
//!
//! The `http_*` modes make one plain HTTP/1.1 request (`Connection: close`) to the payload's
//! `store`, which must be `http://127.0.0.1:<port>` (loopback only), with the header
//! `Idempotency-Key: $ESCEPINE_IDEMPOTENCY_KEY`; `key` is `[A-Za-z0-9_-]+`. A 2xx response's JSON
//! body is the output; a 5xx response or a connection failure exits 75 (transient); any other
//! status exits 1. When `HTTP_PROXY` (or `http_proxy`) is `http://127.0.0.1:<port>` — as in a
//! sandbox with egress — the request goes to that proxy in absolute form, as any HTTP client's
//! would.
//!
//! A payload that is not JSON, a missing field or an unknown mode exits 2.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use escepine_contract::{ENV_CALL_ID, ENV_IDEMPOTENCY_KEY, EXIT_TRANSIENT};
use serde_json::{json, Map, Value};

/// What a successful mode writes on stdout.
enum Output {
    /// One JSON value (the protocol's output).
    Json(Value),
    /// Raw text, to break the protocol.
    Raw(String),
}

impl From<Value> for Output {
    fn from(v: Value) -> Self {
        Self::Json(v)
    }
}

/// How a mode ends when it does not write an output.
struct Exit {
    code: u8,
    message: String,
}

fn exit(code: i32, message: impl Into<String>) -> Exit {
    Exit {
        code: u8::try_from(code).unwrap_or(1),
        message: message.into(),
    }
}

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match run(&mode) {
        Ok(output) => {
            let mut out = io::stdout().lock();
            let written = match output {
                Output::Json(v) => writeln!(out, "{v}"),
                Output::Raw(t) => write!(out, "{t}"),
            };
            match written.and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("escepine-testtool: cannot write the output: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Err(Exit { code, message }) => {
            eprintln!("escepine-testtool {mode}: {message}");
            ExitCode::from(code)
        }
    }
}

fn run(mode: &str) -> Result<Output, Exit> {
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| exit(2, format!("cannot read stdin: {e}")))?;
    let payload: Value =
        serde_json::from_str(&text).map_err(|e| exit(2, format!("payload is not JSON: {e}")))?;
    if mode == "garbage" {
        return Ok(Output::Raw("this is not JSON {".into()));
    }
    respond(mode, &payload).map(Output::from)
}

/// The forms a tool could print `value` in (mode `encodings`): as is, upper and lower case,
/// percent-encoded (path style and all bytes, either hex case, every other byte), form-encoded,
/// base64 and base64url (padded or not, at each alignment of a longer stream), hex in either
/// case, JSON `\u` escapes, and upper-cased then percent-encoded.
fn encodings(value: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use base64::Engine;
    let pct = |b: u8, upper: bool| match upper {
        true => format!("%{b:02X}"),
        false => format!("%{b:02x}"),
    };
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
    let path: String = value
        .bytes()
        .map(|b| match unreserved(b) {
            true => (b as char).to_string(),
            false => pct(b, true),
        })
        .collect();
    let every_other: String = value
        .bytes()
        .enumerate()
        .map(|(i, b)| match (i % 2, b.is_ascii()) {
            (0, true) => (b as char).to_string(),
            _ => pct(b, i % 4 == 1),
        })
        .collect();
    let form: String = value
        .bytes()
        .map(|b| match b {
            b' ' => "+".to_string(),
            b if unreserved(b) => (b as char).to_string(),
            b => pct(b, true),
        })
        .collect();
    let hex: String = value.bytes().map(|b| format!("{b:02x}")).collect();
    vec![
        value.to_string(),
        value.to_uppercase(),
        value.to_lowercase(),
        path.clone(),
        path.to_lowercase(),
        value.bytes().map(|b| pct(b, false)).collect(),
        every_other,
        form,
        STANDARD.encode(value),
        URL_SAFE_NO_PAD.encode(value),
        STANDARD.encode(format!("<{value}>")),
        STANDARD.encode(format!("<<{value}>>")),
        URL_SAFE_NO_PAD.encode(format!("<{value}")),
        hex.clone(),
        hex.to_uppercase(),
        value
            .encode_utf16()
            .map(|u| format!("\\u{u:04x}"))
            .collect(),
        value.to_uppercase().bytes().map(|b| pct(b, true)).collect(),
    ]
}

fn respond(mode: &str, payload: &Value) -> Result<Value, Exit> {
    match mode {
        "echo" => Ok(json!({ "echo": payload.clone() })),
        "count" => {
            let lines = append_line(payload)?;
            Ok(json!({ "count": lines }))
        }
        "flaky" => {
            let fail_times = payload
                .get("fail_times")
                .and_then(Value::as_u64)
                .ok_or_else(|| exit(2, "payload field `fail_times` (integer) is missing"))?;
            let before = count_lines(Path::new(str_field(payload, "counter")?));
            let lines = append_line(payload)?;
            if (before as u64) < fail_times {
                Err(exit(
                    EXIT_TRANSIENT,
                    format!("transient failure {} of {fail_times}", before + 1),
                ))
            } else {
                Ok(json!({ "count": lines }))
            }
        }
        "fail" => Err(exit(1, "deliberate permanent failure")),
        "sleep" => {
            let ms = payload.get("ms").and_then(Value::as_u64).unwrap_or(0);
            let grandchild = Command::new("sleep")
                .arg((ms / 1000 + 60).to_string())
                .stdin(Stdio::null())
                .spawn()
                .map_err(|e| exit(1, format!("cannot spawn the grandchild `sleep`: {e}")))?;
            if let Some(pidfile) = payload.get("pidfile").and_then(Value::as_str) {
                fs::write(pidfile, grandchild.id().to_string())
                    .map_err(|e| exit(1, format!("cannot write {pidfile}: {e}")))?;
            }
            std::thread::sleep(Duration::from_millis(ms));
            Ok(json!({ "slept": ms }))
        }
        "secret" => {
            let name = str_field(payload, "name")?;
            let value = std::env::var(name).unwrap_or_default();
            match payload.get("pad").and_then(Value::as_u64) {
                // Exactly `pad` bytes before the value: it straddles a bound the test chose.
                Some(pad) => eprintln!("{}{value}", "x".repeat(usize::try_from(pad).unwrap_or(0))),
                None => eprintln!("escepine-testtool secret: the value of {name} is {value}"),
            }
            if payload.get("fail").and_then(Value::as_bool) == Some(true) {
                Err(exit(1, format!("failing on purpose, secret {value}")))
            } else {
                Ok(json!({ "leak": value }))
            }
        }
        "encodings" => {
            let name = str_field(payload, "name")?;
            let value = std::env::var(name).unwrap_or_default();
            let forms = encodings(&value);
            for f in &forms {
                eprintln!("encoded: {f}");
            }
            if payload.get("fail").and_then(Value::as_bool) == Some(true) {
                Err(exit(1, format!("failing on purpose: {}", forms.join(" "))))
            } else {
                Ok(json!({ "forms": forms }))
            }
        }
        "bad_output" => Ok(json!({ "unexpected": true })),
        "env" => {
            let env: Map<String, Value> = std::env::vars_os()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        Value::from(v.to_string_lossy().into_owned()),
                    )
                })
                .collect();
            Ok(json!({ "env": env }))
        }
        "noisy" => {
            let n = payload
                .get("stderr_bytes")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let chunk = [b'x'; 8192];
            let mut err = io::stderr().lock();
            let mut left = n;
            while left > 0 {
                let k = left.min(chunk.len() as u64) as usize;
                err.write_all(&chunk[..k])
                    .map_err(|e| exit(1, format!("cannot write stderr: {e}")))?;
                left -= k as u64;
            }
            Ok(json!({ "noisy": n }))
        }
        "big" => {
            let n = payload.get("bytes").and_then(Value::as_u64).unwrap_or(0);
            Ok(json!({ "data": "x".repeat(usize::try_from(n).unwrap_or(0)) }))
        }
        "abort" => std::process::abort(),
        "http_put" => http(payload, "PUT", "", true),
        "http_delete" => http(payload, "DELETE", "", false),
        "http_version" => http(payload, "POST", "/versions", true),
        "http_get" => http(payload, "GET", "", false),
        "workspace_file" => workspace_file(payload),
        "linger" => linger(payload.get("mb").and_then(Value::as_u64).unwrap_or(256)),
        other => Err(exit(2, format!("unknown mode `{other}`"))),
    }
}

/// The `linger` mode: a process outliving this one, holding `mb` MiB, whose end (and so its
/// sandbox's) takes the time of freeing that memory.
fn linger(mb: u64) -> Result<Value, Exit> {
    let bytes = usize::try_from(mb << 20).map_err(|_| exit(2, "`mb` is too large"))?;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(exit(1, format!("pipe: {}", io::Error::last_os_error())));
    }
    let [read_end, write_end] = fds;
    // SAFETY: this program is single-threaded, so the child may allocate after the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(exit(1, format!("fork: {}", io::Error::last_os_error())));
    }
    if pid == 0 {
        // SAFETY: plain descriptor and signal calls on descriptors this process owns.
        unsafe {
            libc::close(read_end);
            for fd in 0..3 {
                libc::close(fd);
            }
        }
        let held = vec![1u8; bytes];
        std::hint::black_box(&held);
        // SAFETY: one byte from a live buffer to the pipe; `pause` only waits.
        unsafe {
            libc::write(write_end, [1u8].as_ptr().cast(), 1);
            loop {
                libc::pause();
            }
        }
    }
    let mut byte = [0u8];
    // SAFETY: closing this process's copy of the write end; reading one byte into `byte`.
    let got = unsafe {
        libc::close(write_end);
        libc::read(read_end, byte.as_mut_ptr().cast(), 1)
    };
    if got != 1 {
        return Err(exit(
            1,
            "the lingering process ended before it held its memory",
        ));
    }
    Ok(json!({ "lingering": pid, "mb": mb }))
}

/// The `workspace_file` mode: what the tool can read of a workspace input and what it cannot
/// change.
fn workspace_file(payload: &Value) -> Result<Value, Exit> {
    use std::os::unix::fs::PermissionsExt;
    let name = str_field(payload, "name")?;
    let path = Path::new("/workspace").join(name);
    let bytes =
        fs::read(&path).map_err(|e| exit(1, format!("cannot read {}: {e}", path.display())))?;
    let mode = fs::metadata(&path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0);
    let outcome = |r: io::Result<()>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => errno_name(e.raw_os_error().unwrap_or(0)),
    };
    let write = outcome(OpenOptions::new().write(true).open(&path).map(drop));
    let truncate = outcome(
        OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map(drop),
    );
    let chmod = outcome(fs::set_permissions(
        &path,
        fs::Permissions::from_mode(0o666),
    ));
    let unlink = outcome(fs::remove_file(&path));
    let rename = outcome(fs::rename(&path, Path::new("/workspace").join("renamed")));
    let beside = outcome(fs::write(Path::new("/workspace").join("beside"), b"new"));
    Ok(json!({
        "text": String::from_utf8_lossy(&bytes),
        "bytes": bytes.len(),
        "mode": mode,
        "write": write,
        "truncate": truncate,
        "chmod": chmod,
        "unlink": unlink,
        "rename": rename,
        "beside": beside,
    }))
}

/// The symbolic name of the errors a file change may meet.
fn errno_name(code: i32) -> String {
    match code {
        1 => "EPERM".into(),
        13 => "EACCES".into(),
        16 => "EBUSY".into(),
        18 => "EXDEV".into(),
        30 => "EROFS".into(),
        other => format!("errno {other}"),
    }
}

fn str_field<'a>(payload: &'a Value, name: &str) -> Result<&'a str, Exit> {
    payload
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| exit(2, format!("payload field `{name}` (string) is missing")))
}

fn count_lines(path: &Path) -> usize {
    fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Appends `<call id> <idempotency key>` to the payload's `counter` file; the new line count.
fn append_line(payload: &Value) -> Result<usize, Exit> {
    let path = Path::new(str_field(payload, "counter")?);
    if !path.is_absolute() {
        return Err(exit(2, "payload field `counter` must be an absolute path"));
    }
    let call_id = std::env::var(ENV_CALL_ID).unwrap_or_default();
    let key = std::env::var(ENV_IDEMPOTENCY_KEY).unwrap_or_default();
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| exit(1, format!("cannot open {}: {e}", path.display())))?;
    // One write(2) per line, so concurrent invocations never interleave within a line.
    file.write_all(format!("{call_id} {key}\n").as_bytes())
        .map_err(|e| exit(1, format!("cannot append to {}: {e}", path.display())))?;
    drop(file);
    Ok(count_lines(path))
}

/// One HTTP/1.1 request to the payload's loopback `store` (see the module documentation).
fn http(payload: &Value, method: &str, suffix: &str, with_value: bool) -> Result<Value, Exit> {
    let store = str_field(payload, "store")?;
    let port: u16 = store
        .strip_prefix("http://127.0.0.1:")
        .map(|p| p.trim_end_matches('/'))
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| {
            exit(
                2,
                format!("`store` must be http://127.0.0.1:<port>, not {store}"),
            )
        })?;
    let key = str_field(payload, "key")?;
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(exit(
            2,
            format!("`key` must be [A-Za-z0-9_-]+, not {key:?}"),
        ));
    }
    let body = if with_value {
        json!({ "value": str_field(payload, "value")? }).to_string()
    } else {
        String::new()
    };
    let idempotency = std::env::var(ENV_IDEMPOTENCY_KEY).unwrap_or_default();
    let path = format!("/items/{key}{suffix}");
    let proxy = ["HTTP_PROXY", "http_proxy"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .and_then(|p| {
            p.strip_prefix("http://127.0.0.1:")
                .and_then(|p| p.trim_end_matches('/').parse::<u16>().ok())
        });
    let (connect_port, target) = match proxy {
        Some(proxy_port) => (proxy_port, format!("http://127.0.0.1:{port}{path}")),
        None => (port, path),
    };
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !idempotency.is_empty() {
        request.push_str(&format!("Idempotency-Key: {idempotency}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let transient = |e: io::Error| exit(EXIT_TRANSIENT, format!("{method} {store}: {e}"));
    let mut stream = TcpStream::connect(("127.0.0.1", connect_port)).map_err(transient)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(transient)?;
    stream.write_all(request.as_bytes()).map_err(transient)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).map_err(transient)?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| {
        exit(
            EXIT_TRANSIENT,
            format!("{method} {store}: truncated response"),
        )
    })?;
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| exit(1, format!("{method} {store}: no status line in {head:?}")))?;
    match status {
        200..=299 => serde_json::from_str(body)
            .map_err(|e| exit(1, format!("{method} {store}: the body is not JSON: {e}"))),
        500..=599 => Err(exit(
            EXIT_TRANSIENT,
            format!("{method} {store}: {status} {body}"),
        )),
        _ => Err(exit(1, format!("{method} {store}: {status} {body}"))),
    }
}
