//! Helpers of the SOP engine's tests (the runtime's and the command line's): the loopback HTTP
//! store, the registry and SOPs of `runtime/tests/fixtures/sop`, runtimes over real tool
//! processes and a given ledger.
//!
//! The store is a plain HTTP/1.1 service on 127.0.0.1 (std threads, one per connection) holding
//! items with versions. It applies each write once per `Idempotency-Key` (a repeated key gets the
//! first response back and changes nothing) and counts how often each key's write was applied,
//! so a test can prove no write happened twice. Keys starting `stuck` refuse every DELETE with a
//! 503; keys starting `flaky` refuse the first DELETE with a 503. It can SIGKILL a process when
//! its n-th request arrives (the crash test's kill points inside a tool call), or hold its n-th
//! request unanswered until the test releases it (a driver kept inside a step).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use escepine_ledger::entry::Entry;
use escepine_ledger::record::{Record, Transition};
use escepine_ledger::store::Ledger;
use escepine_registry::sop::Sop;
use escepine_runtime::executor::ProcessExecutor;
use escepine_runtime::overlay::Overlay;
use escepine_runtime::Runtime;
use serde_json::{json, Value};

use crate::{bins, testtool};

/// What the store holds: item key → its versions (oldest first).
pub type Items = BTreeMap<String, Vec<String>>;

#[derive(Debug, Default)]
struct StoreState {
    items: Items,
    /// Idempotency key → how many times its write was applied.
    applied: BTreeMap<String, u32>,
    /// Idempotency key → how many repeated requests were answered from the first response.
    replayed: BTreeMap<String, u32>,
    /// Writes that came without an idempotency key.
    unkeyed_writes: u32,
    responses: HashMap<String, (u16, String)>,
    requests: u32,
    /// `METHOD key` of every request received, in order.
    request_log: Vec<String>,
    /// Applied writes in order: `PUT a`, `POST a`, `DELETE a`.
    log: Vec<String>,
    kill: Option<Kill>,
    refused_deletes: HashMap<String, u32>,
    hold: Option<Hold>,
}

/// A request held before it is handled.
#[derive(Debug, Clone, Copy)]
struct Hold {
    at_request: u32,
    arrived: bool,
    released: bool,
}

#[derive(Debug, Clone, Copy)]
struct Kill {
    at_request: u32,
    pid: i32,
    /// Apply the write after the kill (the effect happened, its outcome was never recorded).
    apply: bool,
}

/// The loopback store service.
#[derive(Clone)]
pub struct Store {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// `127.0.0.1:<port>` (the overlay entry).
    pub addr: String,
    state: Arc<Mutex<StoreState>>,
    /// Signalled when a held request arrives or is released.
    changed: Arc<Condvar>,
}

impl Store {
    /// Listen on an ephemeral loopback port and serve until the process exits.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the store on loopback");
        let addr = listener.local_addr().expect("the store's address");
        let state = Arc::new(Mutex::new(StoreState::default()));
        let changed = Arc::new(Condvar::new());
        let (shared, signal) = (state.clone(), changed.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (state, signal) = (shared.clone(), signal.clone());
                std::thread::spawn(move || serve(conn, &state, &signal));
            }
        });
        Self {
            url: format!("http://{addr}"),
            addr: addr.to_string(),
            state,
            changed,
        }
    }

    /// A handle on a store served by another process: its URL only (for payloads and overlays).
    pub fn remote(url: &str) -> Self {
        Self {
            url: url.to_string(),
            addr: url.trim_start_matches("http://").to_string(),
            state: Arc::default(),
            changed: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StoreState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An item that exists before the run.
    pub fn seed(&self, key: &str, value: &str) {
        self.lock()
            .items
            .insert(key.to_string(), vec![value.to_string()]);
    }

    /// The items and their versions.
    pub fn items(&self) -> Items {
        self.lock().items.clone()
    }

    /// Idempotency key → times its write was applied.
    pub fn applied(&self) -> BTreeMap<String, u32> {
        self.lock().applied.clone()
    }

    /// Idempotency key → repeated requests answered from the first response.
    pub fn replayed(&self) -> BTreeMap<String, u32> {
        self.lock().replayed.clone()
    }

    /// Writes without an idempotency key.
    pub fn unkeyed_writes(&self) -> u32 {
        self.lock().unkeyed_writes
    }

    /// Requests received.
    pub fn requests(&self) -> u32 {
        self.lock().requests
    }

    /// `METHOD key` of every request received, in order (`GET c` included).
    pub fn request_log(&self) -> Vec<String> {
        self.lock().request_log.clone()
    }

    /// Applied writes in order (`PUT a`, `POST a`, `DELETE a`).
    pub fn log(&self) -> Vec<String> {
        self.lock().log.clone()
    }

    /// SIGKILL `pid` when request number `at_request` arrives; then apply it (or drop it).
    pub fn kill_at(&self, at_request: u32, pid: u32, apply: bool) {
        self.lock().kill = Some(Kill {
            at_request,
            pid: i32::try_from(pid).expect("a pid"),
            apply,
        });
    }

    /// Hold request number `at_request` unanswered (and not yet applied) until
    /// [`Store::release`]; the other requests are served meanwhile.
    pub fn hold_at(&self, at_request: u32) {
        self.lock().hold = Some(Hold {
            at_request,
            arrived: false,
            released: false,
        });
    }

    /// Wait (at most `limit`) for the held request to arrive; whether it did.
    pub fn wait_held(&self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        let mut st = self.lock();
        loop {
            if st.hold.is_some_and(|h| h.arrived) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .changed
                .wait_timeout(st, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Let the held request through: it is handled as it would have been on arrival.
    pub fn release(&self) {
        if let Some(h) = self.lock().hold.as_mut() {
            h.released = true;
        }
        self.changed.notify_all();
    }
}

fn serve(conn: TcpStream, state: &Mutex<StoreState>, changed: &Condvar) {
    let mut reader = BufReader::new(match conn.try_clone() {
        Ok(c) => c,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut idem = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let value = value.trim().to_string();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "idempotency-key" => idem = Some(value),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let response = {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        st.requests += 1;
        let n = st.requests;
        if let Some(h) = st.hold.as_mut().filter(|h| h.at_request == n) {
            h.arrived = true;
            changed.notify_all();
            while !st.hold.is_some_and(|h| h.released) {
                st = changed.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        }
        let item = path
            .trim_start_matches("/items/")
            .trim_end_matches("/versions");
        st.request_log.push(format!("{method} {item}"));
        if let Some(kill) = st.kill.filter(|k| k.at_request == n) {
            if let Some(pid) = rustix::process::Pid::from_raw(kill.pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            if !kill.apply {
                return; // the connection drops: the write never happened
            }
        }
        handle(&mut st, &method, &path, idem, &body)
    };
    let (status, text) = response;
    let reply = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let mut conn = conn;
    let _ = conn.write_all(reply.as_bytes());
}

fn handle(
    st: &mut StoreState,
    method: &str,
    path: &str,
    idem: Option<String>,
    body: &Value,
) -> (u16, String) {
    let rest = path.strip_prefix("/items/").unwrap_or_default();
    let (key, versions) = match rest.strip_suffix("/versions") {
        Some(k) => (k.to_string(), true),
        None => (rest.to_string(), false),
    };
    if method == "GET" {
        return match st.items.get(&key) {
            Some(v) => (
                200,
                json!({"key": key, "value": v.last(), "version": v.len()}).to_string(),
            ),
            None => (404, json!({"error": "no such item"}).to_string()),
        };
    }
    if let Some(k) = &idem {
        if let Some(r) = st.responses.get(k).cloned() {
            *st.replayed.entry(k.clone()).or_default() += 1;
            return r;
        }
    }
    let value = body
        .get("value")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let response = match (method, versions) {
        ("PUT", false) if st.items.contains_key(&key) => {
            (409, json!({"error": "exists"}).to_string())
        }
        ("PUT", false) => {
            st.items.insert(key.clone(), vec![value]);
            (201, json!({"key": key, "version": 1}).to_string())
        }
        ("POST", true) => match st.items.get_mut(&key) {
            Some(v) => {
                v.push(value);
                let n = v.len();
                (200, json!({"key": key, "version": n}).to_string())
            }
            None => (404, json!({"error": "no such item"}).to_string()),
        },
        ("DELETE", false) => {
            let refused = st.refused_deletes.entry(key.clone()).or_default();
            if key.starts_with("stuck") || (key.starts_with("flaky") && *refused == 0) {
                *refused += 1;
                return (503, json!({"error": "try again"}).to_string());
            }
            let existed = st.items.remove(&key).is_some();
            (200, json!({"key": key, "deleted": existed}).to_string())
        }
        _ => return (405, json!({"error": "no such route"}).to_string()),
    };
    if (200..300).contains(&response.0) {
        st.log.push(format!("{method} {key}"));
        match &idem {
            Some(k) => *st.applied.entry(k.clone()).or_default() += 1,
            None => st.unkeyed_writes += 1,
        }
    }
    if let Some(k) = idem {
        st.responses.insert(k, response.clone());
    }
    response
}

/// `runtime/tests/fixtures/sop`.
pub fn fixtures() -> PathBuf {
    bins::workspace_root().join("runtime/tests/fixtures/sop")
}

/// The registry of the SOP fixtures.
pub fn registry() -> escepine_policy::BoundRegistry {
    let f = fixtures();
    escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(f.join("records"))
            .policies(f.join("policies"))
            .envelope(f.join("envelope.json"))
            .workspace_root(bins::workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

/// The overlay file's JSON admitting the store's port for the store tools (what `--overlay`
/// reads).
pub fn overlay_json(store: &Store) -> serde_json::Value {
    let tools: serde_json::Map<String, serde_json::Value> =
        ["s_put", "s_delete", "s_version", "s_get"]
            .iter()
            .map(|t| (t.to_string(), serde_json::json!([store.addr])))
            .collect();
    serde_json::json!({ "tools": tools })
}

/// The overlay admitting the store's port for the store tools.
pub fn overlay(store: &Store) -> Overlay {
    Overlay::parse(&overlay_json(store).to_string()).expect("a valid overlay")
}

/// A runtime over the fixtures, real tool processes, and `ledger`.
pub fn runtime(store: &Store, ledger: Arc<dyn Ledger>) -> Runtime {
    let tool = testtool::testtool();
    Runtime::builder(registry())
        .ledger(ledger)
        .executor(Arc::new(
            ProcessExecutor::new().with_bin_dir(tool.parent().expect("the testtool's directory")),
        ))
        .overlay(overlay(store))
        .build()
        .expect("the runtime builds")
}

/// The SOP file `runtime/tests/fixtures/sop/sops/<name>.json`.
pub fn sop_path(name: &str) -> PathBuf {
    fixtures().join("sops").join(format!("{name}.json"))
}

/// The SOP `name` of the fixtures, loaded and checked against the registry.
pub fn sop(name: &str) -> Sop {
    escepine_registry::sop::load(&sop_path(name), &registry())
        .unwrap_or_else(|d| panic!("{}", d.render()))
}

/// A store write payload.
pub fn item(store: &Store, key: &str, value: &str) -> Value {
    json!({"store": store.url, "key": key, "value": value})
}

/// A store read/delete payload.
pub fn key(store: &Store, key: &str) -> Value {
    json!({"store": store.url, "key": key})
}

/// The SOP events of `run_id`, in order.
pub fn transitions(entries: &[Entry], run_id: &str) -> Vec<Transition> {
    entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Transition(t) if t.run_id == run_id => Some(t.clone()),
            _ => None,
        })
        .collect()
}

/// `event state` of each event of `run_id` (without `run_resumed`).
pub fn event_names(entries: &[Entry], run_id: &str) -> Vec<String> {
    transitions(entries, run_id)
        .into_iter()
        .filter(|t| t.event != "run_resumed")
        .map(|t| format!("{} {}", t.event, t.state.unwrap_or_default()))
        .collect()
}
