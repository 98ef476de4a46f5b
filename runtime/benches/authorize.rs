//! Cedar authorization of one single-URL call: the naive floor against [`Authorizer`].
//!
//! The naive floor is what a straightforward integration does per call: build the context
//! JSON (`{"input": payload, "url": facts}`), `Context::from_json_value` with the schema,
//! `Request::new` with the schema, and `is_authorized` on the whole policy set. Ours is
//! [`Authorizer::authorize`]: the context built from restricted expressions along the
//! tool's Cedar type, a request without schema validation (the construction guarantees
//! conformance), and the policy set sliced per action at start-up.
//!
//! Two catalogs of 100 synthetic single-URL tools: with 10 policies, and with 1,000 policies
//! (ten `like` forbids per tool, plus the group policies). Run: `cargo bench -p escepine-runtime
//! --bench authorize`.

use std::fmt::Write as _;
use std::fs;
use std::hint::black_box;
use std::str::FromStr;
use std::time::Duration;

use cedar_policy::{Context, Entities, EntityUid, Request};
use criterion::{criterion_group, criterion_main, Criterion};
use escepine_contract::Principal;
use escepine_runtime::authorize::{Authorizer, UrlFacts};
use registry_build::{Registry, Sources};
use serde_json::{json, Value};

const TOOLS: usize = 100;

fn record(i: usize) -> Value {
    json!({
        "tool_id": format!("tool_{i:03}"),
        "version": "1.0.0",
        "description": "A synthetic page reader.",
        "input_schema": {"type": "object", "additionalProperties": false, "required": ["url"],
            "properties": {
                "url": {"type": "string", "format": "uri", "maxLength": 2048},
                "max_depth": {"type": "integer", "minimum": 0, "maximum": 5},
                "render": {"type": "boolean"}}},
        "output_schema": {"type": "object", "additionalProperties": false,
            "properties": {"markdown": {"type": "string"}}},
        "action_groups": if i < TOOLS / 2 { json!(["page-read"]) } else { json!(["page-read", "crawl"]) },
        "side_effect_class": "read-only",
        "accepts_credentials": false,
        "timeout_ms": 1000,
        "retry": {"max_attempts": 1, "backoff_ms": 0},
        "on_failure": ["halt"],
        "endpoint": {"transport": "stdio-json", "command": "/bin/cat"},
        "auth": {"secrets": []},
        "sandbox_profile": {"egress": [], "filesystem": "workspace"}
    })
}

/// The group policies every catalog has (3), then `extra` per-tool `like` forbids.
fn policies(total: usize) -> String {
    let mut out = String::from(
        "@id(\"read-only-tools\")\npermit (principal, action in Action::\"read-only\", resource);\n\
         @id(\"page-read-no-linkedin\")\nforbid (principal, action in Action::\"page-read\", resource)\n\
         when { context has url && (context.url.host == \"linkedin.com\" || context.url.host like \"*.linkedin.com\") };\n\
         @id(\"crawl-https-only\")\nforbid (principal, action in Action::\"crawl\", resource)\n\
         when { context has url && context.url.scheme != \"https\" };\n",
    );
    for n in 0..total.saturating_sub(3) {
        let tool = n % TOOLS;
        let _ = writeln!(
            out,
            "@id(\"tool-{tool:03}-block-{n}\")\nforbid (principal, action == Action::\"tool_{tool:03}\", resource)\n\
             when {{ context.url.host like \"*.blocked-{n}.example\" }};"
        );
    }
    out
}

fn catalog(policy_count: usize) -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().expect("temp dir");
    let records = dir.path().join("records");
    let policy_dir = dir.path().join("policies");
    fs::create_dir_all(&records).expect("mkdir");
    fs::create_dir_all(&policy_dir).expect("mkdir");
    for i in 0..TOOLS {
        fs::write(
            records.join(format!("tool_{i:03}.json")),
            record(i).to_string(),
        )
        .expect("write");
    }
    fs::write(policy_dir.join("p.cedar"), policies(policy_count)).expect("write");
    let registry = registry_build::load(&Sources::new().records(&records).policies(&policy_dir))
        .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(registry.cedar.policies.policies().count(), policy_count);
    (dir, registry)
}

/// The naive floor for one call (see the module docs).
struct Naive<'a> {
    registry: &'a Registry,
    entities: &'a Entities,
    cedar: cedar_policy::Authorizer,
}

impl Naive<'_> {
    fn authorize(&self, principal: &Principal, tool: &str, payload: &Value) -> bool {
        let schema = &self.registry.cedar.schema;
        let principal =
            EntityUid::from_str(&format!("{}::{:?}", principal.entity_type, principal.id))
                .expect("principal");
        let action = EntityUid::from_str(&format!("Action::{tool:?}")).expect("action");
        let resource = EntityUid::from_str(&format!("Tool::{tool:?}")).expect("resource");
        let url = payload["url"].as_str().expect("url");
        let f = UrlFacts::parse(url).expect("facts");
        let context = json!({
            "input": payload,
            "url": {"raw": f.raw, "scheme": f.scheme, "host": f.host, "port": f.port, "path": f.path}
        });
        let context = Context::from_json_value(context, Some((schema, &action))).expect("context");
        let request =
            Request::new(principal, action, resource, context, Some(schema)).expect("request");
        let response =
            self.cedar
                .is_authorized(&request, &self.registry.cedar.policies, self.entities);
        response.decision() == cedar_policy::Decision::Allow
            && response.diagnostics().errors().next().is_none()
    }
}

fn bench(c: &mut Criterion) {
    let principal = Principal::agent("alice");
    let payload = json!({"url": "https://docs.example.org/guide/intro?lang=en", "max_depth": 2, "render": true});
    let tool = "tool_042";
    let minimal = json!({"url": "https://docs.example.org/", "max_depth": 1});
    for count in [10usize, 1000] {
        let (_dir, registry) = catalog(count);
        let ours = Authorizer::new(&registry.cedar, &registry.records, None).expect("authorizer");
        let naive = Naive {
            registry: &registry,
            entities: ours.entities(),
            cedar: cedar_policy::Authorizer::new(),
        };
        // Both allow the call, and agree on a denied one.
        assert!(naive.authorize(&principal, tool, &payload));
        assert!(ours.authorize(&principal, tool, &payload).allowed);
        assert_eq!(ours.validates_requests(tool), Some(false));
        let linkedin = json!({"url": "https://www.LinkedIn.com./in/x"});
        assert!(!naive.authorize(&principal, tool, &linkedin));
        assert!(!ours.authorize(&principal, tool, &linkedin).allowed);
        eprintln!(
            "{count} policies: {tool} is evaluated against {} of them after slicing",
            ours.policy_count(tool).unwrap_or(0)
        );

        let mut group = c.benchmark_group(format!(
            "authorize one-URL call, {count} policies, {TOOLS} tools"
        ));
        group.bench_function("naive floor (from_json_value + schema, full set)", |b| {
            b.iter(|| black_box(naive.authorize(&principal, tool, black_box(&payload))))
        });
        group.bench_function("Authorizer::authorize", |b| {
            b.iter(|| black_box(ours.authorize(&principal, tool, black_box(&payload))))
        });
        group.bench_function("Authorizer::authorize (minimal payload)", |b| {
            b.iter(|| black_box(ours.authorize(&principal, tool, black_box(&minimal))))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(40)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
