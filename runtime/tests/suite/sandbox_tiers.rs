//! The isolation tiers side by side: a tool whose record says `"isolation": "gvisor"` runs under
//! gVisor's kernel, the same tool on the default tier under the host's, each with the right
//! answer; and a runtime without `runsc` refuses the gVisor tool, naming the package.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::host;
use crate::support::sandbox::*;
use escepine_contract::Isolation;
use escepine_runtime::executor::{ExecError, Execution};
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_sandbox::GvisorBackend;
use serde_json::json;

/// The release gVisor's kernel reports.
const GVISOR_RELEASE: &str = "4.4.0";

/// One call of the hostile tool's `uname` mode on `target` through `ex`.
async fn uname(ex: &SandboxExecutor, target: Target) -> Result<Execution, ExecError> {
    run(
        ex,
        &target.hostile_record("kernel", "uname"),
        json!({}),
        &BTreeMap::new(),
        &[],
        Duration::from_secs(30),
    )
    .await
}

#[tokio::test]
async fn a_gvisor_tool_runs_under_gvisor_and_a_default_one_under_the_host_kernel() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let host_release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap()
        .trim()
        .to_string();
    assert_ne!(
        host_release, GVISOR_RELEASE,
        "the host runs gVisor's release"
    );
    for root in [Root::Binary, Root::Image] {
        let ex = Target::namespaces(root).executor(MapResolver::default(), dir.path());
        for (tier, release) in [
            (Isolation::Gvisor, GVISOR_RELEASE),
            (Isolation::Namespaces, host_release.as_str()),
        ] {
            let target = Target { root, tier };
            let out = uname(&ex, target)
                .await
                .unwrap_or_else(|e| panic!("{target:?}: {e:?}"))
                .output;
            assert_eq!(out["release"], release, "{target:?}: {out}");
            assert_eq!(out["sysname"], "Linux", "{target:?}: {out}");
            assert_eq!(out["nodename"], "escepine-sandbox", "{target:?}: {out}");
        }
    }
}

#[tokio::test]
async fn without_runsc_a_gvisor_tool_fails_naming_the_package() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let missing = GvisorBackend::new(Some(dir.path().join("no-runsc")))
        .expect("the init dispatches")
        .with_run_dir(dir.path());
    let ex = SandboxExecutor::with_backend(Arc::new(backend(MapResolver::default(), dir.path())))
        .with_gvisor(Arc::new(missing));
    let err = uname(&ex, Target::gvisor(Root::Binary))
        .await
        .expect_err("no runsc");
    let ExecError::Spawn(message) = &err else {
        panic!("{err:?}")
    };
    assert!(
        message.contains("no-runsc") && message.contains("package `runsc`"),
        "{message}"
    );
    // An executor with no gVisor tier at all says so.
    let only_native =
        SandboxExecutor::with_backend(Arc::new(backend(MapResolver::default(), dir.path())));
    let err = uname(&only_native, Target::gvisor(Root::Binary))
        .await
        .expect_err("no gVisor tier");
    assert!(
        matches!(&err, ExecError::Permanent { message, .. } if message.contains("gVisor tier")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_warm_pool_of_gvisor_sandboxes_serves_each_call_from_a_started_container() {
    let _host = host::exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let snapshot = HostSnapshot::take(dir.path());
    let target = Target::gvisor(Root::Binary);
    let ex = target
        .executor(MapResolver::default(), dir.path())
        .with_warm_pool(1);
    let rec = target.hostile_record("kernel", "uname");
    let egress = escepine_contract::EgressGrant::default();
    ex.prewarm(&rec, &egress).await.expect("prewarmed");
    let pool = ex
        .tier(&rec)
        .expect("the gVisor tier")
        .pool
        .expect("a pool");
    for round in 0..2 {
        // The pool holds a started container whose guest waits for its job.
        assert!(
            escepine_testkit::warm_pool::holds(pool, 1, Duration::from_secs(30)).await,
            "round {round}: never refilled"
        );
        let out = uname(&ex, target)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e:?}"))
            .output;
        assert_eq!(out["release"], GVISOR_RELEASE, "round {round}: {out}");
    }
    drop(ex);
    snapshot.assert_clean().await;
}
