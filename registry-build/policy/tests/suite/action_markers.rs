//! Names a record and a policy schema would both claim: a declared Cedar action whose marker is
//! a record's marker is refused at the `.cedarschema` line that declares it.

use std::fs;
use std::path::{Path, PathBuf};

/// The registry crate's fixtures (a valid record to start from).
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../registry/tests/fixtures")
}

#[test]
fn a_declared_action_with_a_records_marker_name_is_rejected_where_declared() {
    // The record's group `web-fetch` and the `.cedarschema`'s action `web_fetch` would both be
    // the marker `actions::web_fetch`.
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let policies = dir.path().join("policies");
    fs::create_dir_all(&records).unwrap();
    fs::create_dir_all(&policies).unwrap();
    let mut record: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(fixtures().join("context/valid_base.json")).unwrap(),
    )
    .unwrap();
    record["action_groups"] = serde_json::json!(["web-fetch"]);
    fs::write(records.join("page_read.json"), record.to_string()).unwrap();
    fs::write(
        policies.join("schema.cedarschema"),
        "entity Agent;\n\naction \"web_fetch\" in [\"read-only\"] appliesTo {\n  principal: [Agent],\n  resource: [Tool],\n  context: {},\n};\n",
    )
    .unwrap();
    let err = escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(&records)
            .policies(&policies),
    )
    .expect_err("two actions, one marker");
    let shown = err.render();
    assert!(
        err.has(escepine_registry::rule::Rule::RustNameUnique),
        "{shown}"
    );
    assert!(shown.contains("actions::web_fetch"), "{shown}");
    assert!(
        err.iter()
            .any(|d| d.file.ends_with("schema.cedarschema") && d.line_col.is_some()),
        "{shown}"
    );
}
