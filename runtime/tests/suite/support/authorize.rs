//! Helpers shared by the `authorize_*` tests: the real catalog, and catalogs of synthetic
//! records and policies written to a temporary directory.

use std::fs;
use std::path::{Path, PathBuf};

use escepine_policy::authorize::Authorizer;
use escepine_policy::BoundRegistry;
use escepine_registry::registry::Sources;
use serde_json::{json, Value};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The catalog's entities: alice is an editor, bob is not.
pub fn catalog_entities() -> Value {
    json!([
        {"uid": {"type": "Team", "id": "editors"}, "attrs": {}, "parents": []},
        {"uid": {"type": "Agent", "id": "alice"}, "attrs": {},
         "parents": [{"type": "Team", "id": "editors"}]},
        {"uid": {"type": "Agent", "id": "bob"}, "attrs": {}, "parents": []}
    ])
}

/// Load a registry, panicking with every diagnostic.
pub fn load(records: &Path, policies: &Path) -> BoundRegistry {
    match escepine_policy::load(&Sources::new().records(records).policies(policies)) {
        Ok(r) => r,
        Err(d) => panic!("the registry does not load:\n{d}"),
    }
}

/// The real catalog (`tools/records`, `tools/policies`).
pub fn catalog() -> BoundRegistry {
    let ws = workspace();
    load(&ws.join("tools/records"), &ws.join("tools/policies"))
}

/// The authorizer of a registry with the catalog's entities.
pub fn authorizer(registry: &BoundRegistry) -> Authorizer {
    Authorizer::new(
        registry.cedar(),
        registry.records(),
        Some(&catalog_entities()),
    )
    .expect("authorizer builds")
}

/// A complete read-only or supersede record (no compensation needed) with this input schema.
pub fn record(tool_id: &str, class: &str, groups: &[&str], input_schema: Value) -> Value {
    let mut r = json!({
        "tool_id": tool_id,
        "version": "1.2.3",
        "description": format!("The synthetic tool {tool_id}."),
        "input_schema": input_schema,
        "output_schema": {"type": "object", "additionalProperties": false,
                          "properties": {"ok": {"type": "boolean"}}},
        "side_effect_class": class,
        "accepts_credentials": false,
        "timeout_ms": 1000,
        "retry": {"max_attempts": 1, "backoff_ms": 0},
        "on_failure": ["halt"],
        "endpoint": {"transport": "stdio-json", "command": "/bin/cat"},
        "auth": {"secrets": []},
        "sandbox_profile": {"egress": [], "filesystem": "workspace"}
    });
    if !groups.is_empty() {
        r["action_groups"] = json!(groups);
    }
    r
}

/// A temporary catalog: `records/*.json` and `policies/*.cedar` (plus the catalog's
/// `schema.cedarschema`, so `Agent in [Team]`).
pub struct TempCatalog {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
}

impl TempCatalog {
    /// Write the records and one policy file.
    pub fn new(records: &[Value], policies: &str) -> Self {
        Self::with_schema(records, policies, "")
    }

    /// Write the records, one policy file, and `extra` after the catalog's `.cedarschema`.
    pub fn with_schema(records: &[Value], policies: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let r = dir.path().join("records");
        let p = dir.path().join("policies");
        fs::create_dir_all(&r).expect("mkdir");
        fs::create_dir_all(&p).expect("mkdir");
        for rec in records {
            let id = rec["tool_id"].as_str().expect("tool_id");
            fs::write(
                r.join(format!("{id}.json")),
                serde_json::to_string_pretty(rec).expect("json"),
            )
            .expect("write record");
        }
        fs::write(p.join("policies.cedar"), policies).expect("write policies");
        fs::write(
            p.join("schema.cedarschema"),
            format!("entity Team;\nentity Agent in [Team];\n{extra}"),
        )
        .expect("write schema");
        Self { dir }
    }

    /// Load it.
    pub fn load(&self) -> BoundRegistry {
        load(
            &self.dir.path().join("records"),
            &self.dir.path().join("policies"),
        )
    }
}
