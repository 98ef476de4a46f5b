//! What the CLI's SOP tests share: a directory with the loopback store's overlay and the
//! proposals of the SOP fixtures, and `escepine` commands over the fixtures' records, policies and
//! envelope, the overlay and one ledger (a SQLite file or a PostgreSQL URL).

// Not every test file that includes the harness uses all of it.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use escepine_testkit::sop::{fixtures, item, key, overlay_json, sop_path, Store};
use serde_json::json;

/// The store, the files beside it and the ledger every command names.
pub struct SopCli {
    pub dir: tempfile::TempDir,
    pub store: Store,
    ledger: OsString,
    /// The policies directory and entities file every command names (the fixtures' own
    /// policies and no entities unless [`SopCli::with_policies`] says otherwise).
    policies: PathBuf,
    entities: Option<PathBuf>,
}

impl SopCli {
    /// A fresh store and directory; the ledger is what `ledger` names given the directory.
    pub fn new(ledger: impl FnOnce(&Path) -> OsString) -> Self {
        let _ = escepine_testkit::testtool::testtool();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::start();
        std::fs::write(
            dir.path().join("overlay.json"),
            overlay_json(&store).to_string(),
        )
        .unwrap();
        let s = &store;
        let proposals = json!({
            "put_a": item(s, "a", "a1"),
            "put_b": item(s, "b", "b1"),
            "version_a": item(s, "a", "a2"),
            "put_c": item(s, "c", "c1"),
            "read_a": key(s, "a"),
            "read_c": key(s, "c"),
            "boom": {},
            "put_forbidden": item(s, "forbidden", "x"),
        });
        std::fs::write(dir.path().join("proposals.json"), proposals.to_string()).unwrap();
        let ledger = ledger(dir.path());
        Self {
            dir,
            store,
            ledger,
            policies: fixtures().join("policies"),
            entities: None,
        }
    }

    /// Every command names these policies and entities instead (the approval fixtures, say).
    pub fn with_policies(mut self, policies: &Path, entities: &Path) -> Self {
        self.policies = policies.to_path_buf();
        self.entities = Some(entities.to_path_buf());
        self
    }

    /// `escepine ARGS` over the fixtures, the overlay and the ledger.
    pub fn command(&self, args: &[&str]) -> Command {
        let f = fixtures();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_escepine"));
        cmd.args(args)
            .arg("--records")
            .arg(f.join("records"))
            .arg("--policies")
            .arg(&self.policies)
            .arg("--envelope")
            .arg(f.join("envelope.json"))
            .arg("--overlay")
            .arg(self.dir.path().join("overlay.json"))
            .arg("--ledger")
            .arg(&self.ledger);
        if let Some(e) = &self.entities {
            cmd.arg("--entities").arg(e);
        }
        cmd
    }

    /// `escepine run` of the fixture SOP `sop` by `Agent::"alice"` with the proposals.
    pub fn run(&self, sop: &str, extra: &[&str]) -> Command {
        let path = sop_path(sop);
        let mut cmd = self.command(&["run", path.to_str().unwrap()]);
        cmd.args(["--principal", r#"Agent::"alice""#, "--proposals"])
            .arg(self.dir.path().join("proposals.json"))
            .args(extra);
        cmd
    }
}
