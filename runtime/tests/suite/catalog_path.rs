//! Every catalog tool through the whole governed path: the real records (`tools/records`) and
//! policies (`tools/policies`), a [`Runtime`] with the real tool binary (`escepine-catalog`)
//! run by the executor [`executor`] builds, a SQLite ledger in a temporary directory, and
//! loopback servers speaking each service's documented shapes (the catalog's own test server,
//! `escepine_testkit::server`). The principal is `Agent::"researcher"`, a member of
//! `Team::"editors"` (which `publishing.cedar` requires for the writing tools).
//!
//! The registry is checked against the real deployment envelope plus `127.0.0.1`, so that the
//! runtime overlay admitting each test server's port (as a demo would) is within it; the
//! overlay is what a sandboxing executor enforces. The page readers in direct mode need no port
//! of their own: their profiles' `authorized-urls` admit the origins of the URLs Cedar allowed,
//! which an overlay's `public_addresses` lets the proxy reach on loopback.

use crate::support::host;
use escepine_testkit::bins;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use escepine_contract::Principal;
use escepine_ledger::entry::{Committed, Entry};
use escepine_ledger::record::{CallResult, Decision, Intent, Outcome, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::Durability;
use escepine_registry::egress::EgressEntry;
use escepine_runtime::executor::{Executor, ProcessExecutor};
use escepine_runtime::overlay::Overlay;
use escepine_runtime::secrets::MapSecrets;
use escepine_runtime::{CallKind, CallOptions, CallOutcome, CallReport, Runtime};
use serde_json::{json, Value};

use escepine_testkit::server::{Reply, Server};

/// The sandboxes' init is this test program, as in every program that starts sandboxes (libtest
/// owns `main`, so the dispatch runs as a constructor, before it).
#[ctor::ctor(unsafe)]
fn sandbox_init() {
    escepine_sandbox::init::dispatch();
}

/// The executor every call of these tests runs through.
fn executor() -> Arc<dyn Executor> {
    let bin = catalog_bin();
    let dir = bin.parent().expect("the binary's directory");
    // Every catalog call runs in its own sandbox, reaching the loopback servers only through
    // the egress proxy and the overlay entries.
    let sandbox = escepine_runtime::sandbox::SandboxExecutor::new()
        .expect("the Linux sandbox backend")
        .with_process_executor(ProcessExecutor::new().with_bin_dir(dir));
    Arc::new(sandbox)
}

fn workspace() -> PathBuf {
    bins::workspace_root()
}

/// The current `escepine-catalog` in this test's `target/<profile>/` (see
/// [`escepine_testkit::bins`]; `ESCEPINE_CATALOG_BIN` names another).
fn catalog_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| bins::path(bins::CATALOG)).clone()
}

/// The researcher is an editor.
fn entities() -> Value {
    json!([
        {"uid": {"type": "Team", "id": "editors"}, "attrs": {}, "parents": []},
        {"uid": {"type": "Agent", "id": "researcher"}, "attrs": {},
         "parents": [{"type": "Team", "id": "editors"}]},
        {"uid": {"type": "Agent", "id": "outsider"}, "attrs": {}, "parents": []}
    ])
}

/// A call that ended `ok`: its output and where its evidence is.
struct Done {
    call_id: String,
    idempotency_key: String,
    attempts: u32,
    outcome: Committed,
    output: Value,
}

struct Catalog {
    dir: tempfile::TempDir,
    runtime: Runtime,
}

impl Catalog {
    /// A runtime over the real catalog with these secret values (base URLs and keys, by their
    /// declared names) and an overlay admitting each server's loopback port for its tools.
    fn new(secrets: &[(&str, &str)], admit: &[(&str, &Server)]) -> Self {
        let mut overlay = Overlay::default();
        for (tool, server) in admit {
            let entry: EgressEntry = server.authority().parse().expect("an egress entry");
            overlay = overlay.admit(tool, entry);
        }
        Self::with_overlay(secrets, overlay)
    }

    /// A runtime over the real catalog with these secret values and `overlay`.
    fn with_overlay(secrets: &[(&str, &str)], overlay: Overlay) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut envelope: Value = serde_json::from_str(
            &std::fs::read_to_string(workspace().join("tools/envelope.json"))
                .expect("tools/envelope.json"),
        )
        .expect("an envelope");
        envelope["egress"]
            .as_array_mut()
            .expect("egress entries")
            .push(json!("127.0.0.1"));
        let envelope_path = dir.path().join("envelope.json");
        std::fs::write(&envelope_path, envelope.to_string()).expect("write the envelope");
        let registry = escepine_policy::load(
            &escepine_registry::registry::Sources::new()
                .records(workspace().join("tools/records"))
                .policies(workspace().join("tools/policies"))
                .envelope(&envelope_path)
                .workspace_root(workspace()),
        )
        .unwrap_or_else(|d| panic!("{}", d.render()));
        let secrets = MapSecrets(
            secrets
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        );
        let ledger =
            SqliteLedger::open(dir.path().join("ledger.db"), Durability::Full).expect("ledger");
        let runtime = Runtime::builder(registry)
            .ledger(Arc::new(ledger))
            .executor(executor())
            .secrets(Arc::new(secrets))
            .entities(entities())
            .overlay(overlay)
            .build()
            .expect("the runtime builds");
        Self { dir, runtime }
    }

    async fn call_as(&self, who: &str, tool: &str, payload: Value) -> CallReport {
        self.runtime
            .call(
                &Principal::agent(who),
                tool,
                payload,
                CallOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{tool}: refused before its intent: {e}"))
    }

    async fn call(&self, tool: &str, payload: Value) -> CallReport {
        self.call_as("researcher", tool, payload).await
    }

    async fn ok(&self, tool: &str, payload: Value) -> Done {
        let r = self.call(tool, payload).await;
        Done {
            call_id: r.call_id().to_string(),
            idempotency_key: r.idempotency_key().to_string(),
            attempts: r.attempts(),
            outcome: r.outcome_entry().expect("an outcome").clone(),
            output: r.into_output().unwrap_or_else(|e| panic!("{tool}: {e}")),
        }
    }

    fn ledger_path(&self) -> PathBuf {
        self.dir.path().join("ledger.db")
    }

    fn entries(&self) -> Vec<Entry> {
        self.runtime.ledger().entries().expect("ledger entries")
    }

    /// The intent and outcome of `call_id`.
    fn evidence(&self, call_id: &str) -> (Intent, Outcome) {
        let entries = self.entries();
        let intent = entries
            .iter()
            .find_map(|e| match &e.record {
                Record::Intent(i) if i.call_id == call_id => Some(i.clone()),
                _ => None,
            })
            .expect("an intent");
        let outcome = entries
            .iter()
            .find_map(|e| match &e.record {
                Record::Outcome(o) if o.call_id == call_id => Some(o.clone()),
                _ => None,
            })
            .expect("an outcome");
        (intent, outcome)
    }
}

const ARTICLE: &str = r#"<!DOCTYPE html><html><head><title>Governed egress</title></head>
<body><nav><a href="/">Home</a></nav><main><article><h1>Governed egress</h1>
<p>Every page an agent reads is authorized on its own, recorded before it is read, and read
through a proxy that admits only the hosts of the tool's profile and the overlay's entries.</p>
<p>A forbidden host never sees a request: the denial happens before any process starts.</p>
</article></main><footer>footer</footer></body></html>"#;

#[tokio::test]
async fn web_search_through_the_governed_path() {
    let _host = host::shared().await;
    let searx = Server::start(|req| {
        Reply::json(
            200,
            &json!({"query": req.query_param("q"), "results": [
                {"url": "https://docs.example/egress", "title": "Egress", "content": "About egress"},
                {"url": "https://docs.example/cedar", "title": "Cedar", "content": "About Cedar"}
            ]}),
        )
    });
    let base = searx.url();
    let c = Catalog::new(&[("SEARXNG_BASE_URL", &base)], &[("web_search", &searx)]);
    let r = c
        .ok(
            "web_search",
            json!({"query": "governed egress", "max_results": 1}),
        )
        .await;
    assert_eq!(
        r.output,
        json!({"results": [{"url": "https://docs.example/egress", "title": "Egress",
                            "snippet": "About egress"}]})
    );
    assert_eq!(
        searx.requests()[0].query_param("q").as_deref(),
        Some("governed egress")
    );
    let (intent, outcome) = c.evidence(&r.call_id);
    assert_eq!(intent.decision, Decision::Allow);
    assert_eq!(intent.policy_ids, ["read-only-tools"]);
    assert_eq!(intent.overlay, [searx.authority()]);
    assert_eq!(outcome.result, CallResult::Ok);
}

#[tokio::test]
async fn tavily_search_through_the_governed_path() {
    let _host = host::shared().await;
    const KEY: &str = "tvly-path-test-KEY";
    let api = Server::start(|req| {
        if req.header("authorization") != Some(&format!("Bearer {KEY}")) {
            return Reply::json(401, &json!({"detail": {"error": "Unauthorized"}}));
        }
        Reply::json(
            200,
            &json!({"query": req.json()["query"], "results": [
            {"title": "Egress", "url": "https://docs.example/egress", "content": "Proxies.",
             "score": 0.9}
        ], "response_time": 0.1}),
        )
    });
    let base = api.url();
    let c = Catalog::new(
        &[("TAVILY_BASE_URL", &base), ("TAVILY_API_KEY", KEY)],
        &[("tavily_search", &api)],
    );
    let r = c
        .ok(
            "tavily_search",
            json!({"query": "egress", "max_results": 3}),
        )
        .await;
    assert_eq!(r.output["results"][0]["score"], 0.9);
    assert_eq!(
        api.requests()[0].json(),
        json!({"query": "egress", "max_results": 3, "search_depth": "basic"})
    );
    // The key reached the API and nothing recorded holds it.
    let recorded =
        serde_json::to_string(&c.entries().iter().map(|e| &e.record).collect::<Vec<_>>())
            .expect("records encode");
    assert!(!recorded.contains(KEY));
}

#[tokio::test]
async fn tavily_crawl_through_the_governed_path() {
    let _host = host::shared().await;
    let site = Server::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::text(200, "User-agent: *\nDisallow: /private/\n"),
        "/" => {
            Reply::html("<title>Home</title><a href=\"/guide\">g</a> <a href=\"/private/x\">p</a>")
        }
        "/guide" => Reply::html("<title>Guide</title><p>guide</p>"),
        _ => Reply::status(404),
    });
    let c = Catalog::new(&[], &[("tavily_crawl", &site)]);
    let start = format!("{}/", site.url());
    let r = c.ok("tavily_crawl", json!({ "url": start })).await;
    assert_eq!(
        r.output,
        json!({"start": start, "truncated": false, "pages": [
            {"url": start, "title": "Home", "depth": 0},
            {"url": format!("{}/guide", site.url()), "title": "Guide", "depth": 1}
        ]})
    );
    assert!(site.requests_to("/private/x").is_empty());
}

/// Direct mode with no overlay entry: each call reaches the origin of the URL Cedar authorized
/// in it, and a redirect to another origin is not followed.
#[tokio::test]
async fn page_readers_reach_the_origins_their_calls_authorized() {
    let _host = host::shared().await;
    let other = Server::start(|_| Reply::html(ARTICLE));
    let away = format!("{}/article", other.url());
    let site = Server::start(move |req| match req.path.as_str() {
        "/article" => Reply::html(ARTICLE),
        "/away" => Reply::redirect(302, &away),
        _ => Reply::status(404),
    });
    let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
    let c = Catalog::with_overlay(&[], Overlay::default().public_address(loopback));
    let origin = |s: &Server| format!("http://{}", s.authority());

    let r = c
        .ok(
            "firecrawl_scrape",
            json!({ "url": format!("{}/article", site.url()) }),
        )
        .await;
    assert_eq!(r.output["title"], "Governed egress");
    let (intent, outcome) = c.evidence(&r.call_id);
    assert_eq!(intent.egress_origins, [origin(&site)]);
    assert_eq!(intent.overlay, ["public_address 127.0.0.1"]);
    assert!(outcome.attempts[0].egress_refusals.is_empty());

    let r = c
        .ok(
            "firecrawl_scrape",
            json!({ "url": format!("{}/away", site.url()) }),
        )
        .await;
    assert_eq!(r.output["status_code"], 302);
    assert!(other.requests().is_empty(), "the redirect was followed");

    // (`web_fetch_exa`'s policies admit only public `https` URLs, so its bulk reads on loopback
    // are shown in `sandbox_authorized_urls`.)
}

#[tokio::test]
async fn firecrawl_scrape_reads_directly_and_through_the_api() {
    let _host = host::shared().await;
    let site = Server::start(|req| match req.path.as_str() {
        "/article" => Reply::html(ARTICLE),
        _ => Reply::status(404),
    });
    let c = Catalog::new(&[], &[("firecrawl_scrape", &site)]);
    let url = format!("{}/article", site.url());
    let r = c.ok("firecrawl_scrape", json!({ "url": url })).await;
    assert_eq!(r.output["status_code"], 200);
    assert_eq!(r.output["title"], "Governed egress");
    let md = r.output["markdown"].as_str().expect("markdown");
    assert!(md.contains("authorized on its own"), "{md}");
    assert!(!md.contains("footer"), "{md}");
    let (intent, _) = c.evidence(&r.call_id);
    assert_eq!(intent.policy_ids, ["read-only-tools"]);

    const KEY: &str = "fc-path-test-KEY";
    let api = Server::start(|req| {
        let url = req.json()["url"].clone();
        Reply::json(
            200,
            &json!({"success": true, "data": {"markdown": "# From the API",
            "metadata": {"title": "API title", "statusCode": 200, "sourceURL": url}}}),
        )
    });
    let base = api.url();
    let c = Catalog::new(
        &[("FIRECRAWL_BASE_URL", &base), ("FIRECRAWL_API_KEY", KEY)],
        &[("firecrawl_scrape", &api)],
    );
    let r = c
        .ok(
            "firecrawl_scrape",
            json!({"url": "https://docs.example/egress"}),
        )
        .await;
    assert_eq!(
        r.output,
        json!({"url": "https://docs.example/egress", "title": "API title",
               "markdown": "# From the API", "status_code": 200})
    );
    let req = &api.requests()[0];
    assert_eq!(req.path, "/v1/scrape");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn a_linkedin_page_is_denied_before_any_request() {
    let _host = host::shared().await;
    let api = Server::start(|_| Reply::json(200, &json!({"success": true, "data": {}})));
    let base = api.url();
    let c = Catalog::new(
        &[("FIRECRAWL_BASE_URL", &base), ("EXA_BASE_URL", &base)],
        &[("firecrawl_scrape", &api), ("web_fetch_exa", &api)],
    );
    for url in [
        "https://www.linkedin.com/in/someone",
        "https://LinkedIn.COM./company/x",
    ] {
        let err = c.call("firecrawl_scrape", json!({ "url": url })).await;
        let call_id = match err.outcome() {
            CallOutcome::Denied { policy_ids, .. } => {
                assert_eq!(policy_ids, &["page-read-no-linkedin"], "{url}");
                err.call_id().to_string()
            }
            _ => panic!("{url}: {err}"),
        };
        assert_eq!(err.attempts(), 0);
        let (intent, outcome) = c.evidence(&call_id);
        assert_eq!(intent.decision, Decision::Deny);
        assert_eq!(outcome.result, CallResult::Denied);
        assert!(outcome.attempts.is_empty(), "no attempt was made");
    }
    // The bulk tool: one LinkedIn URL among vetted ones denies the whole call.
    let err = c
        .call(
            "web_fetch_exa",
            json!({"urls": ["https://docs.example.com/a", "https://www.linkedin.com/feed"]}),
        )
        .await;
    assert!(
        matches!(err.outcome(), CallOutcome::Denied { policy_ids, .. } if policy_ids == &["page-read-no-linkedin"]),
        "{err}"
    );
    assert!(
        api.requests().is_empty(),
        "no request left for a denied page"
    );
}

#[tokio::test]
async fn web_fetch_exa_through_the_governed_path() {
    let _host = host::shared().await;
    const KEY: &str = "exa-path-test-KEY";
    let api = Server::start(|req| {
        let urls: Vec<Value> = req.json()["urls"].as_array().cloned().unwrap_or_default();
        let results: Vec<Value> = urls
            .iter()
            .map(|u| json!({"id": u, "url": u, "title": "T", "text": format!("Text of {}", u.as_str().unwrap_or_default())}))
            .collect();
        Reply::json(200, &json!({"results": results}))
    });
    let base = api.url();
    let c = Catalog::new(
        &[("EXA_BASE_URL", &base), ("EXA_API_KEY", KEY)],
        &[("web_fetch_exa", &api)],
    );
    let urls = ["https://docs.example.com/a", "https://docs.example.com/b"];
    let r = c.ok("web_fetch_exa", json!({ "urls": urls })).await;
    assert_eq!(
        r.output["results"][1]["markdown"],
        "Text of https://docs.example.com/b"
    );
    assert_eq!(api.requests()[0].header("x-api-key"), Some(KEY));
    let (intent, _) = c.evidence(&r.call_id);
    assert_eq!(intent.decision, Decision::Allow);

    // The bulk-fetch policies refuse plain HTTP and the machine itself, per element.
    let err = c
        .call("web_fetch_exa", json!({"urls": ["http://127.0.0.1:9/x"]}))
        .await;
    match err.outcome() {
        CallOutcome::Denied { policy_ids, .. } => {
            assert!(
                policy_ids.contains(&"bulk-fetch-https-only".to_string()),
                "{policy_ids:?}"
            );
            assert!(
                policy_ids.contains(&"bulk-fetch-no-internal-hosts".to_string()),
                "{policy_ids:?}"
            );
        }
        _ => panic!("{err}"),
    }
    assert_eq!(api.requests().len(), 1);
}

#[tokio::test]
async fn notes_publish_retries_once_with_one_key_and_retract() {
    let _host = host::shared().await;
    let attempts = Arc::new(std::sync::Mutex::new(0u32));
    let seen = Arc::clone(&attempts);
    let notes = Server::start(move |req| match req.path.as_str() {
        "/notes" => {
            let mut n = seen.lock().expect("lock");
            *n += 1;
            if *n == 1 {
                Reply::json(503, &json!({"error": "warming up"}))
            } else {
                Reply::json(201, &json!({"note_id": "n-1", "revision": 1}))
            }
        }
        "/notes/n-1/retract" => Reply::json(200, &json!({"note_id": "n-1", "retracted": true})),
        _ => Reply::json(404, &json!({"error": "no such note"})),
    });
    let base = notes.url();
    let c = Catalog::new(
        &[("NOTES_BASE_URL", &base)],
        &[("note_publish", &notes), ("note_retract", &notes)],
    );
    let r = c
        .ok(
            "note_publish",
            json!({"title": "Findings", "body": "Egress is governed."}),
        )
        .await;
    assert_eq!(r.output, json!({"note_id": "n-1", "revision": 1}));
    assert_eq!(r.attempts, 2, "a 503 is transient: retried");
    let publishes = notes.requests_to("/notes");
    assert_eq!(publishes.len(), 2);
    for p in &publishes {
        assert_eq!(
            p.header("idempotency-key"),
            Some(r.idempotency_key.as_str())
        );
    }
    let (intent, outcome) = c.evidence(&r.call_id);
    assert_eq!(intent.policy_ids, ["publishing-editors"]);
    assert_eq!(
        outcome.attempts[0].error_class.map(|c| c.as_str()),
        Some("transient")
    );

    let r = c.ok("note_retract", json!({"note_id": "n-1"})).await;
    assert_eq!(r.output, json!({"note_id": "n-1", "retracted": true}));

    // Not an editor: denied by default, nothing sent.
    let before = notes.requests().len();
    let err = c
        .call_as(
            "outsider",
            "note_publish",
            json!({"title": "t", "body": "b"}),
        )
        .await;
    assert_eq!(err.kind(), CallKind::Denied, "{err}");
    assert_eq!(notes.requests().len(), before);
    // A permanent failure is not retried.
    let err = c.call("note_retract", json!({"note_id": "unknown"})).await;
    match err.outcome() {
        CallOutcome::Failed { last_error } => {
            assert_eq!(err.attempts(), 1);
            assert!(last_error.contains("permanent"), "{last_error}");
        }
        _ => panic!("{err}"),
    }
}

#[tokio::test]
async fn deliverable_assemble_ties_sources_to_ledger_entries() {
    let _host = host::shared().await;
    let site = Server::start(|_| Reply::html(ARTICLE));
    let c = Catalog::new(&[], &[("firecrawl_scrape", &site)]);
    let mut sources = Vec::new();
    for path in ["/one", "/two"] {
        let url = format!("{}{path}", site.url());
        let r = c.ok("firecrawl_scrape", json!({ "url": url })).await;
        sources.push(json!({
            "url": url,
            "title": r.output["title"],
            "excerpt": r.output["markdown"].as_str().unwrap_or_default().chars().take(200).collect::<String>(),
            "ledger_entry": r.outcome.hash,
        }));
    }
    let r = c
        .ok(
            "deliverable_assemble",
            json!({"format": "markdown", "include_evidence_index": true,
                   "title": "Governed egress", "summary": "Two reads [1] [2].",
                   "sources": sources}),
        )
        .await;
    let index = r.output["evidence_index"].as_array().expect("an index");
    assert_eq!(index.len(), 2);
    let hashes: Vec<String> = c.entries().iter().map(|e| e.hash.clone()).collect();
    for (entry, source) in index.iter().zip(&sources) {
        assert_eq!(entry["ledger_entry"], source["ledger_entry"]);
        let h = entry["ledger_entry"].as_str().expect("a hash");
        assert!(
            hashes.iter().any(|x| x == h),
            "the index names a ledger entry"
        );
        assert!(r.output["content"].as_str().unwrap_or_default().contains(h));
    }
    let (intent, _) = c.evidence(&r.call_id);
    assert_eq!(intent.policy_ids, ["publishing-editors"]);
    let report =
        escepine_ledger::verify::verify_path(&c.ledger_path(), None).expect("the ledger verifies");
    assert_eq!(
        report.entries, 6,
        "three calls, an intent and an outcome each"
    );
    assert_eq!(Some(&report.head), hashes.last());
}
