//! An SOP run that waits for a person's approval, across restarts: `escepine run` and every
//! `escepine resume` are separate processes over one ledger (a SQLite file, or a PostgreSQL
//! database of the test's own), the loopback store counts the writes it applies by idempotency
//! key, and the policies of `tests/fixtures/approval` make every `s_put` of `Agent::"alice"`
//! wait for an approval that a reviewer (`Agent::"bob"`; alice is one too, but never of her own
//! calls) may give.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Output};

use escepine_ledger::entry::Entry;
use escepine_ledger::record::{ApprovalResult, Record};
use escepine_testkit::postgres::TestDatabase;
use escepine_testkit::sop::fixtures;

use crate::sop_harness;

use sop_harness::SopCli;

const ALICE: &str = r#"Agent::"alice""#;
const BOB: &str = r#"Agent::"bob""#;

/// The ledger every process of a test names.
enum Ledger {
    Sqlite(PathBuf),
    Postgres(TestDatabase),
}

impl Ledger {
    fn arg(&self) -> OsString {
        match self {
            Self::Sqlite(path) => path.clone().into_os_string(),
            Self::Postgres(db) => db.url().into(),
        }
    }

    fn entries(&self) -> Vec<Entry> {
        match self {
            Self::Sqlite(path) => escepine_ledger::sqlite::read_entries(path).unwrap(),
            Self::Postgres(db) => escepine_ledger::postgres::read_entries(&db.url()).unwrap(),
        }
    }
}

/// The shared harness over the approval policies and entities, and the ledger it names.
struct Cli {
    sop: SopCli,
    ledger: Ledger,
}

impl std::ops::Deref for Cli {
    type Target = SopCli;
    fn deref(&self) -> &SopCli {
        &self.sop
    }
}

impl Cli {
    fn sqlite() -> Self {
        let sop = SopCli::new(|dir| dir.join("ledger.db").into_os_string());
        let ledger = Ledger::Sqlite(sop.dir.path().join("ledger.db"));
        Self::with(sop, ledger)
    }

    fn postgres() -> Self {
        let db = TestDatabase::create();
        let url = db.url();
        Self::with(SopCli::new(|_| url.into()), Ledger::Postgres(db))
    }

    fn with(sop: SopCli, ledger: Ledger) -> Self {
        let f = approval_fixtures();
        let sop = sop.with_policies(&f.join("policies"), &f.join("entities.json"));
        Self { sop, ledger }
    }

    /// `escepine run` of the SOP `sop` by alice as run `run_id`.
    fn run(&self, sop: &str, run_id: &str, extra: &[&str]) -> Output {
        let path = approval_fixtures().join("sops").join(format!("{sop}.json"));
        let mut cmd = self.command(&["run", path.to_str().unwrap()]);
        cmd.args(["--principal", ALICE, "--run-id", run_id, "--proposals"])
            .arg(self.dir.path().join("proposals.json"))
            .args(extra);
        cmd.output().unwrap()
    }

    /// `escepine resume RUN` (the SOP and proposals files as the run recorded them).
    fn resume(&self, run_id: &str) -> Output {
        self.command(&["resume", run_id]).output().unwrap()
    }

    /// `escepine approve|reject CALL_ID --principal PRINCIPAL`.
    fn decide(&self, verb: &str, call_id: &str, principal: &str) -> Output {
        self.command(&[verb, call_id, "--principal", principal])
            .output()
            .unwrap()
    }

    /// `escepine ledger verify` of the ledger: the chain is intact.
    fn verify(&self) {
        let o = Command::new(env!("CARGO_BIN_EXE_escepine"))
            .args(["ledger", "verify"])
            .arg(self.ledger.arg())
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        assert!(
            text(&o.stdout).starts_with("intact: "),
            "{}",
            text(&o.stdout)
        );
    }

    /// The intents recorded for `step` of `run_id`.
    fn intents(&self, run_id: &str, step: &str) -> Vec<(String, String)> {
        self.ledger
            .entries()
            .into_iter()
            .filter_map(|e| match e.record {
                Record::Intent(i)
                    if i.run_id.as_deref() == Some(run_id) && i.step.as_deref() == Some(step) =>
                {
                    Some((i.call_id, i.decision.as_str().to_string()))
                }
                _ => None,
            })
            .collect()
    }

    /// `(approver, result)` of every approval entry of `call_id`.
    fn approvals(&self, call_id: &str) -> Vec<(String, ApprovalResult)> {
        self.ledger
            .entries()
            .into_iter()
            .filter_map(|e| match e.record {
                Record::Approval(a) if a.call_id == call_id => Some((a.approver, a.result)),
                _ => None,
            })
            .collect()
    }

    /// Writes the store applied, over every idempotency key.
    fn applied(&self) -> u32 {
        self.store.applied().values().sum()
    }
}

fn approval_fixtures() -> PathBuf {
    fixtures().with_file_name("approval")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn both(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", text(&o.stdout), text(&o.stderr))
}

/// The waiting call id `run` or `resume` printed alone on a line (32 lower-case hex).
fn waiting_call(o: &Output) -> String {
    let out = text(&o.stdout);
    let ids: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.len() == 32
                && l.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        })
        .collect();
    assert_eq!(ids.len(), 1, "one waiting call id in:\n{}", both(o));
    ids[0].to_string()
}

/// run waits (exit 8, nothing written) → a restarted runtime waits again without a new intent
/// → the requester cannot approve → bob approves (the write applied once) → resume completes
/// the run without writing again; the chain verifies.
fn waits_across_a_restart_and_completes_after_approval(cli: &Cli) {
    let run = "approve-run";
    let o = cli.run("approve_put", run, &[]);
    assert_eq!(o.status.code(), Some(8), "{}", both(&o));
    let call_id = waiting_call(&o);
    assert!(
        text(&o.stdout)
            .trim_end()
            .ends_with(&format!("run {run} awaiting_approval")),
        "{}",
        both(&o)
    );
    assert_eq!(cli.store.requests(), 0, "nothing reached the store");
    assert_eq!(
        cli.intents(run, "put_a"),
        [(call_id.clone(), "awaiting-approval".to_string())]
    );

    // The restart: a new process finds the call still waiting and does not make it again.
    let o = cli.resume(run);
    assert_eq!(o.status.code(), Some(8), "{}", both(&o));
    assert_eq!(waiting_call(&o), call_id);
    assert_eq!(
        cli.intents(run, "put_a").len(),
        1,
        "no new intent for the step"
    );
    assert_eq!(cli.store.requests(), 0);

    // The requester cannot approve its own call; it still waits.
    let o = cli.decide("approve", &call_id, ALICE);
    assert_eq!(o.status.code(), Some(3), "{}", both(&o));
    assert!(cli.approvals(&call_id).is_empty());

    let o = cli.decide("approve", &call_id, BOB);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert_eq!(cli.store.log(), ["PUT a"]);
    assert_eq!(cli.applied(), 1, "the approved write ran once");
    assert_eq!(
        cli.approvals(&call_id),
        [(BOB.to_string(), ApprovalResult::Approved)]
    );

    let o = cli.resume(run);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert!(
        out.contains(&format!(
            "step_succeeded  put_a  {{\"call_id\":\"{call_id}\""
        )),
        "{out}"
    );
    assert!(out.contains("step_succeeded  read_a"), "{out}");
    assert!(
        out.trim_end().ends_with(&format!("run {run} completed")),
        "{out}"
    );
    assert_eq!(cli.store.log(), ["PUT a"], "the write was not made again");
    assert_eq!(cli.applied(), 1, "exactly once");
    assert_eq!(cli.store.items().get("a").map(Vec::len), Some(1));
    assert_eq!(cli.intents(run, "put_a").len(), 1);
    cli.verify();

    // Resuming the ended run records nothing.
    let before = cli.ledger.entries().len();
    let o = cli.resume(run);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert_eq!(cli.ledger.entries().len(), before);
}

/// A completed write, then a write that waits; bob rejects it; the resumed run fails the step
/// (`rejected`) and compensates by the step's `on_failure`; the store never sees the write.
fn a_rejected_step_fails_and_the_run_compensates(cli: &Cli) {
    let run = "reject-run";
    cli.store.seed("a", "a1");
    let o = cli.run("reject_put", run, &[]);
    assert_eq!(o.status.code(), Some(8), "{}", both(&o));
    let call_id = waiting_call(&o);
    assert_eq!(cli.store.log(), ["POST a"]);

    let o = cli.decide("reject", &call_id, BOB);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert_eq!(
        cli.approvals(&call_id),
        [(BOB.to_string(), ApprovalResult::Rejected)]
    );
    // Decided: a second decision is refused.
    let o = cli.decide("approve", &call_id, BOB);
    assert_eq!(o.status.code(), Some(3), "{}", both(&o));

    let o = cli.resume(run);
    assert_eq!(o.status.code(), Some(12), "{}", both(&o));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(out.contains("step_failed  put_b"), "{out}");
    assert!(out.contains("superseded  version_a"), "{out}");
    assert!(err.contains("step put_b failed (rejected)"), "{err}");
    assert!(
        out.trim_end().ends_with(&format!("run {run} compensated")),
        "{out}"
    );
    assert_eq!(cli.store.log(), ["POST a"]);
    assert!(
        !cli.store.request_log().iter().any(|r| r.ends_with(" b")),
        "the store never saw the rejected write: {:?}",
        cli.store.request_log()
    );
    assert_eq!(cli.intents(run, "put_b").len(), 1);
    cli.verify();
}

/// A waiting call past its expiry: the resume records it expired (approver `runtime`), the step
/// fails `expired` and the run compensates; a late approval is refused.
fn an_expired_wait_fails_the_step(cli: &Cli) {
    let run = "expire-run";
    let o = cli.run("approve_put", run, &["--approval-ttl", "1"]);
    assert_eq!(o.status.code(), Some(8), "{}", both(&o));
    let call_id = waiting_call(&o);
    std::thread::sleep(std::time::Duration::from_millis(1500));

    let o = cli.resume(run);
    assert_eq!(o.status.code(), Some(12), "{}", both(&o));
    assert!(
        text(&o.stderr).contains("step put_a failed (expired)"),
        "{}",
        both(&o)
    );
    assert_eq!(
        cli.approvals(&call_id),
        [("runtime".to_string(), ApprovalResult::Expired)]
    );
    let o = cli.decide("approve", &call_id, BOB);
    assert_eq!(o.status.code(), Some(3), "{}", both(&o));
    assert_eq!(cli.store.requests(), 0, "nothing reached the store");
    cli.verify();
}

/// The waiting call's payload edited in the store (its key `a` made `evil`): bob's approval
/// is refused naming the entry, and so is a resume of the run; nothing reaches the store and
/// nothing is recorded; `ledger verify` names the same entry.
fn a_tampered_waiting_payload_is_neither_approved_nor_resumed(cli: &Cli, tamper: &dyn Fn(u64)) {
    let run = "tamper-run";
    let o = cli.run("approve_put", run, &[]);
    assert_eq!(o.status.code(), Some(8), "{}", both(&o));
    let call_id = waiting_call(&o);
    let seq = cli
        .ledger
        .entries()
        .into_iter()
        .find(|e| matches!(&e.record, Record::Intent(i) if i.call_id == call_id))
        .map(|e| e.seq)
        .expect("the waiting intent");
    tamper(seq);
    let payload = cli
        .ledger
        .entries()
        .into_iter()
        .find_map(|e| match e.record {
            Record::Intent(i) if i.call_id == call_id => Some(i.payload),
            _ => None,
        })
        .expect("the intent");
    assert_eq!(payload["key"], "evil", "the store holds the edited payload");
    let before = cli.ledger.entries().len();

    let o = cli.decide("approve", &call_id, BOB);
    assert_ne!(o.status.code(), Some(0), "{}", both(&o));
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("refusing to decide on call `{call_id}`"))
            && err.contains(&format!("entry {seq} changed")),
        "{}",
        both(&o)
    );
    let o = cli.resume(run);
    assert_ne!(o.status.code(), Some(0), "{}", both(&o));
    assert_ne!(o.status.code(), Some(8), "{}", both(&o));
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("refusing to resume run `{run}`"))
            && err.contains(&format!("entry {seq} changed")),
        "{}",
        both(&o)
    );
    assert_eq!(cli.store.requests(), 0, "nothing reached the store");
    assert_eq!(cli.ledger.entries().len(), before, "nothing was recorded");
    assert!(cli.approvals(&call_id).is_empty());
    let o = Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "verify"])
        .arg(cli.ledger.arg())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(
        text(&o.stdout).contains(&format!("entry {seq} changed")),
        "{}",
        both(&o)
    );
}

/// The payload's key edited inside the stored body of entry `seq`.
const TAMPER_SQL: &str =
    "UPDATE entries SET body = replace(body, '\"key\":\"a\"', '\"key\":\"evil\"') WHERE seq = ";

#[test]
fn sqlite_tampered_waiting_payload_is_neither_approved_nor_resumed() {
    let cli = Cli::sqlite();
    let Ledger::Sqlite(path) = &cli.ledger else {
        unreachable!("a SQLite ledger")
    };
    let path = path.clone();
    a_tampered_waiting_payload_is_neither_approved_nor_resumed(&cli, &|seq| {
        let out = Command::new("sqlite3")
            .arg(&path)
            .arg(format!("{TAMPER_SQL}{seq}"))
            .output()
            .expect("the sqlite3 command-line tool is needed (apt-get install sqlite3)");
        assert!(out.status.success(), "{}", text(&out.stderr));
    });
}

#[test]
fn postgres_tampered_waiting_payload_is_neither_approved_nor_resumed() {
    let cli = Cli::postgres();
    let Ledger::Postgres(db) = &cli.ledger else {
        unreachable!("a PostgreSQL ledger")
    };
    a_tampered_waiting_payload_is_neither_approved_nor_resumed(&cli, &|seq| {
        db.execute(&format!("{TAMPER_SQL}{seq}"));
    });
}

#[test]
fn sqlite_run_waits_across_a_restart_and_completes_after_approval() {
    waits_across_a_restart_and_completes_after_approval(&Cli::sqlite());
}

#[test]
fn sqlite_rejected_step_fails_and_the_run_compensates() {
    a_rejected_step_fails_and_the_run_compensates(&Cli::sqlite());
}

#[test]
fn sqlite_expired_wait_fails_the_step() {
    an_expired_wait_fails_the_step(&Cli::sqlite());
}

#[test]
fn postgres_run_waits_across_a_restart_and_completes_after_approval() {
    waits_across_a_restart_and_completes_after_approval(&Cli::postgres());
}

#[test]
fn postgres_rejected_step_fails_and_the_run_compensates() {
    a_rejected_step_fails_and_the_run_compensates(&Cli::postgres());
}
