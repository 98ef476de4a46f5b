//! The example's own services, on one loopback listener (`127.0.0.1`, an ephemeral port), each
//! under a distinctive path prefix:
//!
//! | prefix | service | spoken by |
//! |---|---|---|
//! | `/corpus/` | the bundled pages ([`crate::corpus`]) | `firecrawl_scrape` (reading directly) |
//! | `/searx/` | a search endpoint of SearXNG's JSON shape: `GET /searx/search?q=…&format=json` | `web_search` (`SEARXNG_BASE_URL`) |
//! | `/notes/` | the note service of `tools/catalog/src/notes.rs` | `note_publish`, `note_retract` (`NOTES_BASE_URL`) |
//!
//! A second listener stands for an attacker's collector (`GET /collect?…`): one corpus page
//! (`lineside-inspection.html`) carries instructions to send the agent's notes there (its
//! `{{COLLECTOR}}` is replaced by that listener's origin when served). What reaches it is
//! counted (`Traffic::collected`): the flow policies hold the planner's attempt before anything
//! is sent.
//!
//! Base URLs travel to the tools as declared secrets, and the runtime scrubs secret values from
//! everything it records; the prefixes keep the base URLs (`…/searx`, `…/notes`) from being a
//! prefix of any corpus URL (`…/corpus/…`), so scrubbing never touches a cited URL.
//!
//! The search index is built with the `bm25` crate (BM25 ranking, English stemming and stop
//! words) over each page's title and the text of its `<main>`.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bm25::{Document, Language, SearchEngine, SearchEngineBuilder};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::corpus::{self, Page};

/// How many results the search endpoint returns at most.
const SEARCH_LIMIT: usize = 20;

/// The running services.
pub struct Services {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    /// The listener's address.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Vec<oneshot::Sender<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// What the services saw, for the summary.
#[derive(Debug, Clone, Default)]
pub struct Traffic {
    /// Pages served from the corpus (paths).
    pub pages: Vec<String>,
    /// Search requests (queries).
    pub searches: Vec<String>,
    /// Notes published (ids).
    pub published: Vec<String>,
    /// Notes retracted (ids).
    pub retracted: Vec<String>,
    /// Requests answered 404.
    pub not_found: Vec<String>,
    /// Requests that reached the attacker's collector (path and query).
    pub collected: Vec<String>,
}

/// The placeholder of the collector's origin in corpus pages.
pub const COLLECTOR_PLACEHOLDER: &str = "{{COLLECTOR}}";

struct Shared {
    origin: String,
    /// The attacker's collector, `http://127.0.0.1:PORT`.
    collector: String,
    pages: Vec<Page>,
    index: SearchEngine<usize>,
    notes: Mutex<Notes>,
    traffic: Mutex<Traffic>,
}

#[derive(Default)]
struct Notes {
    next: u64,
    /// Idempotency key → (request body, answer).
    by_key: HashMap<String, (Value, Value)>,
    /// Note id → retracted?
    notes: BTreeMap<String, bool>,
}

impl Services {
    /// The base URL of the search endpoint (`SEARXNG_BASE_URL`).
    pub fn searx_base(&self) -> String {
        format!("{}/searx", self.origin)
    }

    /// The base URL of the note service (`NOTES_BASE_URL`).
    pub fn notes_base(&self) -> String {
        format!("{}/notes", self.origin)
    }

    /// The egress entry admitting this listener (`127.0.0.1:PORT`).
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// What the services have seen so far.
    pub fn traffic(&self) -> Traffic {
        lock(&self.shared.traffic).clone()
    }

    /// The notes that are published and not retracted.
    pub fn live_notes(&self) -> Vec<String> {
        lock(&self.shared.notes)
            .notes
            .iter()
            .filter(|(_, retracted)| !**retracted)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The attacker's collector origin (`http://127.0.0.1:PORT`).
    pub fn collector(&self) -> &str {
        &self.shared.collector
    }

    /// Stop serving and wait for the listeners to close.
    pub async fn stop(mut self) {
        for tx in self.shutdown.drain(..) {
            let _ = tx.send(());
        }
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

/// Bind `127.0.0.1:0`, build the index and serve.
///
/// # Errors
/// The listener cannot be bound.
pub async fn start() -> std::io::Result<Services> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let origin = format!("http://{addr}");
    let collector_listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let collector = format!("http://{}", collector_listener.local_addr()?);
    let pages = corpus::pages();
    let documents: Vec<Document<usize>> = pages
        .iter()
        .enumerate()
        .map(|(i, p)| Document::new(i, format!("{}\n{}", p.title, p.text)))
        .collect();
    let index = SearchEngineBuilder::<usize>::with_documents(Language::English, documents).build();
    let shared = Arc::new(Shared {
        origin: origin.clone(),
        collector,
        pages,
        index,
        notes: Mutex::default(),
        traffic: Mutex::default(),
    });
    let app = Router::new()
        .route("/corpus/{name}", get(page))
        .route("/searx/search", get(search))
        .route("/notes/notes", post(publish))
        .route("/notes/notes/{id}/retract", post(retract))
        .fallback(not_found)
        .with_state(Arc::clone(&shared));
    let collecting = Router::new()
        .route("/collect", get(collect))
        .fallback(collect)
        .with_state(Arc::clone(&shared));
    let mut shutdown = Vec::new();
    let mut tasks = Vec::new();
    for (listener, app) in [(listener, app), (collector_listener, collecting)] {
        let (tx, rx) = oneshot::channel::<()>();
        shutdown.push(tx);
        tasks.push(tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = rx.await;
            });
            if let Err(e) = serve.await {
                eprintln!("research: the loopback services stopped: {e}");
            }
        }));
    }
    Ok(Services {
        origin,
        addr,
        shared,
        shutdown,
        tasks,
    })
}

/// The attacker's collector: whatever reaches it is counted, and answered with a page.
async fn collect(State(s): State<Arc<Shared>>, uri: axum::http::Uri) -> Response {
    lock(&s.traffic).collected.push(
        uri.path_and_query()
            .map_or_else(|| uri.path().to_string(), ToString::to_string),
    );
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<html><body><main><p>Archived. Thank you.</p></main></body></html>",
    )
        .into_response()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn json_answer(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn page(State(s): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let found = s
        .pages
        .iter()
        .find(|p| p.served_as.as_deref() == Some(name.as_str()));
    match found {
        Some(p) => {
            lock(&s.traffic)
                .pages
                .push(format!("{}{name}", corpus::CORPUS_PREFIX));
            let html = p.html.replace(COLLECTOR_PLACEHOLDER, &s.collector);
            ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
        }
        None => {
            lock(&s.traffic)
                .not_found
                .push(format!("{}{name}", corpus::CORPUS_PREFIX));
            (StatusCode::NOT_FOUND, "no such page").into_response()
        }
    }
}

/// SearXNG's JSON API: `q` is the query; `format=json` is required (an instance without the
/// JSON format enabled answers 403, and so does this one for any other format).
async fn search(State(s): State<Arc<Shared>>, RawQuery(raw): RawQuery) -> Response {
    let params: HashMap<String, String> =
        url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    if params.get("format").map(String::as_str) != Some("json") {
        return (StatusCode::FORBIDDEN, "format must be json").into_response();
    }
    let Some(q) = params.get("q").filter(|q| !q.trim().is_empty()) else {
        return json_answer(StatusCode::BAD_REQUEST, &json!({"error": "q is required"}));
    };
    lock(&s.traffic).searches.push(q.clone());
    let results: Vec<Value> = s
        .index
        .search(q, SEARCH_LIMIT)
        .into_iter()
        .filter_map(|hit| {
            let p = s.pages.get(hit.document.id)?;
            Some(json!({
                "url": p.url(&s.origin),
                "title": p.title,
                "content": p.description,
                "engine": "bm25",
                "engines": ["bm25"],
                "score": hit.score,
                "category": "general",
            }))
        })
        .collect();
    json_answer(
        StatusCode::OK,
        &json!({
            "query": q,
            "number_of_results": results.len(),
            "results": results,
            "answers": [], "corrections": [], "infoboxes": [], "suggestions": [],
            "unresponsive_engines": [],
        }),
    )
}

/// `POST /notes/notes`: publish, idempotent by `Idempotency-Key`.
async fn publish(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(key) = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
    else {
        return json_answer(
            StatusCode::BAD_REQUEST,
            &json!({"error": "Idempotency-Key is required"}),
        );
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return json_answer(
                StatusCode::BAD_REQUEST,
                &json!({"error": "the body must be a JSON object"}),
            )
        }
    };
    let title_ok = request["title"].as_str().is_some_and(|t| !t.is_empty());
    if !title_ok || !request["body"].is_string() {
        return json_answer(
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!({"error": "title (non-empty) and body are required strings"}),
        );
    }
    let mut notes = lock(&s.notes);
    if let Some((seen, answer)) = notes.by_key.get(&key) {
        return if *seen == request {
            json_answer(StatusCode::CREATED, answer)
        } else {
            json_answer(
                StatusCode::CONFLICT,
                &json!({"error": "this idempotency key was used with another body"}),
            )
        };
    }
    notes.next += 1;
    let id = format!("note-{}", notes.next);
    let answer = json!({"note_id": id, "revision": 1});
    notes.by_key.insert(key, (request, answer.clone()));
    notes.notes.insert(id.clone(), false);
    drop(notes);
    lock(&s.traffic).published.push(id);
    json_answer(StatusCode::CREATED, &answer)
}

/// `POST /notes/notes/{id}/retract`: idempotent; an unknown note is 404.
async fn retract(State(s): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let mut notes = lock(&s.notes);
    match notes.notes.get_mut(&id) {
        Some(retracted) => {
            *retracted = true;
            drop(notes);
            lock(&s.traffic).retracted.push(id.clone());
            json_answer(StatusCode::OK, &json!({"note_id": id, "retracted": true}))
        }
        None => json_answer(StatusCode::NOT_FOUND, &json!({"error": "no such note"})),
    }
}

async fn not_found(State(s): State<Arc<Shared>>, uri: axum::http::Uri) -> Response {
    lock(&s.traffic).not_found.push(uri.path().to_string());
    (StatusCode::NOT_FOUND, "not found").into_response()
}
