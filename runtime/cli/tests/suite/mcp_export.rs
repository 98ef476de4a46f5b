//! Export and serve agree: for a principal the policies allow everything, `escepine serve`'s
//! `tools/list` (read with rmcp's client) is exactly `escepine export --format mcp` — the
//! fixtures' records, and the built-in catalog that `serve` uses without `--records`.

use std::path::Path;
use std::process::Stdio;

use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::process::Command;

use escepine_testkit::bins::workspace_root;
use escepine_testkit::mcp::fixture;
use escepine_testkit::testtool::testtool;

/// The `escepine` binary of this package.
fn escepine() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_escepine"))
}

fn export(records: &Path) -> Value {
    let out = std::process::Command::new(escepine())
        .args(["export", "--format", "mcp", "--records"])
        .arg(records)
        .output()
        .expect("run escepine export");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("export prints JSON")
}

/// `tools/list` of `escepine serve --mcp stdio` with `records` (the catalog when `None`) and
/// the permit-everything policies.
async fn listed(records: Option<&Path>) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(escepine());
    cmd.current_dir(workspace_root())
        .args([
            "serve",
            "--mcp",
            "stdio",
            "--principal",
            r#"Agent::"anyone""#,
        ])
        .arg("--policies")
        .arg(fixture("policies-open"))
        .arg("--ledger")
        .arg(dir.path().join("ledger.db"));
    if let Some(r) = records {
        cmd.arg("--records").arg(r);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn escepine serve");
    let client = ().serve(transport).await.expect("initialize");
    let tools = client.list_all_tools().await.expect("tools/list");
    client.cancel().await.expect("close");
    serde_json::to_value(tools).expect("tools as JSON")
}

#[tokio::test]
async fn tools_list_is_the_mcp_export_for_the_fixtures() {
    testtool();
    let records = fixture("records");
    let exported = export(&records);
    assert_eq!(exported.as_array().map(Vec::len), Some(4));
    assert_eq!(listed(Some(&records)).await, exported);
}

#[tokio::test]
async fn tools_list_is_the_mcp_export_for_the_built_in_catalog() {
    let exported = export(&workspace_root().join("tools/records"));
    assert!(exported.as_array().is_some_and(|a| !a.is_empty()));
    assert_eq!(listed(None).await, exported);
}
