//! A run's lease cannot be taken from under a live driver by deleting files beside the ledger.
//!
//! A child process (this test executable re-run on the ignored test `sop_lease_child`) drives the
//! SOP `cancel` on a SQLite ledger alone in its directory and stops in its `wait` step, whose
//! planner never answers: it holds the run's lease for as long as it lives. The test deletes
//! every file beside the ledger except SQLite's own `-wal` and `-shm` (removing those would
//! lose committed entries or corrupt the database, whatever the leases), then a second driver on
//! its own handle of the ledger file asks for the run and is refused, records nothing, and runs
//! no step; the lease is held under another name of the file (a hard link) too. Once the child is SIGKILLed, the same driver gets the run and finishes it, each
//! write applied once.

use crate::support::host;
use escepine_testkit::sop;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_contract::Principal;
use escepine_ledger::error::LedgerError;
use escepine_ledger::lease::FileLeases;
use escepine_ledger::sqlite::{read_entries, SqliteLedger};
use escepine_ledger::store::{Durability, Ledger};
use escepine_runtime::sop::{
    events, Engine, Planner, PlannerError, RunOptions, RunStatus, ScriptedPlanner, SopRunError,
    StepRequest,
};
use escepine_testkit::sop::{item, key, Store};
use serde_json::Value;

const DIR_ENV: &str = "ESCEPINE_SOP_LEASE_DIR";
const STORE_ENV: &str = "ESCEPINE_SOP_LEASE_STORE";
const RUN_ID: &str = "leased-run";
const LEDGER: &str = "ledger.db";

/// Writes `a` and `b`, then never proposes the `wait` step.
struct Stuck(ScriptedPlanner);

impl Planner for Stuck {
    fn propose<'a>(
        &'a self,
        request: &'a StepRequest<'a>,
    ) -> escepine_ledger::store::BoxFuture<'a, Result<Value, PlannerError>> {
        if request.state == "wait" {
            return Box::pin(std::future::pending());
        }
        self.0.propose(request)
    }
}

fn engine(store: &Store, ledger: Arc<dyn Ledger>, planner: impl Planner + 'static) -> Engine {
    Engine::new(
        sop::runtime(store, ledger),
        sop::sop("cancel"),
        Arc::new(planner),
    )
    .unwrap()
}

#[test]
#[ignore = "the child process of deleting_files_beside_the_ledger_lets_no_second_driver_in"]
fn sop_lease_child() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let store = Store::remote(&std::env::var(STORE_ENV).unwrap());
    let ledger: Arc<dyn Ledger> =
        Arc::new(SqliteLedger::open(Path::new(&dir).join(LEDGER), Durability::Full).unwrap());
    let planner = Stuck(
        ScriptedPlanner::new()
            .every("put_a", item(&store, "a", "a1"))
            .every("put_b", item(&store, "b", "b1")),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = RunOptions {
        run_id: Some(RUN_ID.to_string()),
        ..RunOptions::default()
    };
    // Never returns: the planner of `wait` never answers.
    let _ =
        rt.block_on(engine(&store, ledger, planner).run_with(&Principal::agent("alice"), options));
}

/// The child, SIGKILLed when dropped if it still runs.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether the run has started its `wait` step in the ledger at `path` (the transition into
/// `wait` comes first; the step's start is the last entry the first driver writes before its
/// planner hangs).
fn waiting(path: &Path) -> bool {
    let Ok(entries) = read_entries(path) else {
        return false;
    };
    sop::transitions(&entries, RUN_ID)
        .iter()
        .any(|t| t.event == events::STEP_STARTED && t.state.as_deref() == Some("wait"))
}

/// Removes every file in `dir` but the ledger, its `-wal` and its `-shm`; returns their names.
fn delete_beside_ledger(dir: &Path) -> Vec<String> {
    let keep = [
        LEDGER.to_string(),
        format!("{LEDGER}-wal"),
        format!("{LEDGER}-shm"),
    ];
    let mut deleted = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !keep.contains(&name) {
            std::fs::remove_file(entry.path()).unwrap();
            deleted.push(name);
        }
    }
    deleted
}

#[test]
fn deleting_files_beside_the_ledger_lets_no_second_driver_in() {
    let _host = host::shared_blocking();
    let _ = escepine_testkit::testtool::testtool();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ledger");
    std::fs::create_dir(&dir).unwrap();
    let path = dir.join(LEDGER);
    let store = Store::start();
    let bin: PathBuf = std::env::current_exe().unwrap();
    let child = Command::new(bin)
        .args([
            "sop_lease::sop_lease_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_ENV, &dir)
        .env(STORE_ENV, &store.url)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut driver = Driver(child);

    let deadline = Instant::now() + Duration::from_secs(120);
    while !waiting(&path) {
        if let Some(status) = driver.0.try_wait().unwrap() {
            panic!("the first driver ended before its wait step: {status:?}");
        }
        assert!(
            Instant::now() < deadline,
            "the first driver never reached its wait step"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(store.log(), ["PUT a", "PUT b"]);

    let deleted = delete_beside_ledger(&dir);
    eprintln!("deleted beside the ledger: {deleted:?}");

    // A second driver, on its own handle of the same file as another process would open it.
    let ledger: Arc<dyn Ledger> = Arc::new(SqliteLedger::open(&path, Durability::Full).unwrap());
    let before = ledger.entries().unwrap().len();
    assert!(
        matches!(ledger.lease_run(RUN_ID), Err(LedgerError::RunLeased(id)) if id == RUN_ID),
        "the lease of a driven run was granted to another driver"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let finish = ScriptedPlanner::new().every("wait", key(&store, "a"));
    let second = engine(&store, ledger.clone(), finish);
    let err = rt.block_on(second.resume(RUN_ID)).unwrap_err();
    assert!(
        matches!(&err, SopRunError::Ledger(LedgerError::RunLeased(id)) if id == RUN_ID),
        "{err}"
    );
    assert_eq!(
        ledger.entries().unwrap().len(),
        before,
        "a refused driver records nothing"
    );
    assert_eq!(
        store.log(),
        ["PUT a", "PUT b"],
        "a refused driver runs no step"
    );
    // The lease is the file's, not its name's: under another name it is held just the same.
    let link = tmp.path().join("another-name.db");
    std::fs::hard_link(&path, &link).unwrap();
    assert!(matches!(
        FileLeases::of_file(&link, None).unwrap().acquire(RUN_ID),
        Err(LedgerError::RunLeased(_))
    ));

    // The first driver dies: its lease goes with it, and the second drives the run to its end.
    driver.0.kill().unwrap();
    let status = driver.0.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
    drop(ledger.lease_run(RUN_ID).unwrap());
    let out = rt.block_on(second.resume(RUN_ID)).unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(store.log(), ["PUT a", "PUT b"]);
    assert!(
        store.applied().values().all(|&n| n == 1),
        "{:?}",
        store.applied()
    );
    assert_eq!(
        sop::event_names(&ledger.entries().unwrap(), RUN_ID)
            .last()
            .map(String::as_str),
        Some("run_ended done")
    );
}
