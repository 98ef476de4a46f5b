//! The synthetic catalog the runtime benchmarks share: 100 single-URL page-reading tools, the
//! group policies every catalog has, and `like` forbids per tool up to the wanted policy count;
//! and the naive floor a straightforward Cedar integration pays per call.

use std::fmt::Write as _;
use std::fs;
use std::str::FromStr;

use cedar_policy::{Context, Entities, EntityUid, Request};
use escepine_contract::Principal;
use escepine_policy::authorize::UrlFacts;
use escepine_policy::BoundRegistry;
use escepine_registry::registry::Sources;
use serde_json::{json, Value};

/// The synthetic tools in the catalog.
pub const TOOLS: usize = 100;

/// Tool `i` of the catalog: a single-URL page reader (`tool_{i:03}`), in `crawl` too for the
/// second half.
pub fn record(i: usize) -> Value {
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
pub fn policies(total: usize) -> String {
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

/// The catalog's records and `policy_count` policies written to a temporary directory (kept
/// alive by the returned guard) and loaded through every rule.
pub fn catalog(policy_count: usize) -> (tempfile::TempDir, BoundRegistry) {
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
    let registry = escepine_policy::load(&Sources::new().records(&records).policies(&policy_dir))
        .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(registry.cedar().policies.policies().count(), policy_count);
    (dir, registry)
}

/// The naive floor for one call (see the module docs).
pub struct Naive<'a> {
    /// The loaded catalog, whose Cedar schema and policies are used as they are.
    pub registry: &'a BoundRegistry,
    /// The entities of every request.
    pub entities: &'a Entities,
    /// Cedar's authorizer.
    pub cedar: cedar_policy::Authorizer,
}

impl Naive<'_> {
    /// Whether Cedar allows `principal` to call `tool` with `payload`, the request built from
    /// strings and JSON each time.
    pub fn authorize(&self, principal: &Principal, tool: &str, payload: &Value) -> bool {
        let schema = &self.registry.cedar().schema;
        let principal =
            EntityUid::from_str(&format!("{}::{:?}", principal.entity_type, principal.id))
                .expect("principal");
        let action = EntityUid::from_str(&format!("Action::{tool:?}")).expect("action");
        let resource = EntityUid::from_str(&format!("Tool::{tool:?}")).expect("resource");
        let url = payload["url"].as_str().expect("url");
        let f = UrlFacts::parse(url).expect("facts");
        let mut url = json!({"raw": f.raw, "scheme": f.scheme, "host": f.host, "port": f.port,
                             "path": f.path, "origin": f.origin().to_string(),
                             "public": f.public});
        if let Some(ip) = f.ip {
            url["ip"] = json!({"__extn": {"fn": "ip", "arg": ip.to_string()}});
        }
        // A call in an empty flow: what the generated schema requires of every context.
        let flow = json!({"calls": 0, "labels": [], "origins": [], "tools": []});
        let context = json!({ "input": payload, "url": url, "flow": flow });
        let context = Context::from_json_value(context, Some((schema, &action))).expect("context");
        let request =
            Request::new(principal, action, resource, context, Some(schema)).expect("request");
        let response =
            self.cedar
                .is_authorized(&request, &self.registry.cedar().policies, self.entities);
        response.decision() == cedar_policy::Decision::Allow
            && response.diagnostics().errors().next().is_none()
    }
}
