//! The records the tool host describes (`escepine-rust-tools --describe`) are records of the
//! documented format: each validates against `registry-build/record.schema.json`.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The tool host binary cargo built for these tests.
const HOST: &str = env!("CARGO_BIN_EXE_escepine-rust-tools");

#[test]
fn described_records_validate_against_the_record_schema() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../registry-build/record.schema.json");
    let schema: Value = serde_json::from_str(
        &fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let validator =
        jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()));

    let out = Command::new(HOST)
        .arg("--describe")
        .output()
        .expect("run the tool host");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<Value> = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let ids: Vec<&str> = records
        .iter()
        .filter_map(|r| r["tool_id"].as_str())
        .collect();
    assert_eq!(ids, ["text_stats", "url_normalize"]);
    for record in &records {
        let errors: Vec<String> = validator
            .iter_errors(record)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "`{}`: {}",
            record["tool_id"],
            errors.join("; ")
        );
    }
}
