//! `escepine call` of a call that needs approval, then `escepine approve` and `escepine reject`:
//! real `escepine` processes over the SOP fixtures' tools with the approval policies
//! (`tests/fixtures/approval`), the loopback store counting every applied write, a SQLite ledger.

use std::path::PathBuf;
use std::process::{Command, Output};

use escepine_ledger::record::{ApprovalResult, CallResult, Record};
use escepine_ledger::sqlite::read_entries;
use escepine_ledger::verify::verify_path;
use escepine_testkit::sop::item;

use crate::sop_harness;

use sop_harness::SopCli;

const ALICE: &str = r#"Agent::"alice""#;
const BOB: &str = r#"Agent::"bob""#;
const MALLORY: &str = r#"Agent::"mallory""#;

fn approval_fixtures() -> PathBuf {
    escepine_testkit::bins::workspace_root().join("runtime/tests/fixtures/approval")
}

fn cli() -> SopCli {
    let f = approval_fixtures();
    SopCli::new(|dir| dir.join("ledger.db").into_os_string())
        .with_policies(&f.join("policies"), &f.join("entities.json"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn output(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

fn ledger(cli: &SopCli) -> PathBuf {
    cli.dir.path().join("ledger.db")
}

/// `escepine call` of `s_put` by `principal` writing `key`.
fn put(cli: &SopCli, principal: &str, key: &str, extra: &[&str]) -> Output {
    let input = item(&cli.store, key, "v1").to_string();
    let mut cmd = cli.command(&["call", "--principal", principal, "--tool", "s_put"]);
    cmd.args(["--input", &input]).args(extra);
    output(cmd)
}

/// `escepine approve|reject CALL_ID` as `principal`.
fn decide(cli: &SopCli, verb: &str, call_id: &str, principal: &str) -> Output {
    let mut cmd = cli.command(&[verb, call_id]);
    cmd.args(["--principal", principal]);
    output(cmd)
}

/// The call id a waiting call printed first; checks its shape and the exit status 8.
fn waiting_call_id(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(8), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let id = out.lines().next().unwrap_or_default().to_string();
    assert!(
        id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "the first line is the call id: {out:?}"
    );
    assert!(
        text(&o.stderr).contains("awaits approval"),
        "{}",
        text(&o.stderr)
    );
    id
}

/// `escepine ledger show LEDGER --waiting`.
fn show_waiting(cli: &SopCli) -> String {
    let o = output({
        let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
        c.args(["ledger", "show", "--waiting"]).arg(ledger(cli));
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    text(&o.stdout)
}

/// `(kind, call_id)` of every entry of the ledger, with the approval's result or outcome's.
fn records(cli: &SopCli) -> Vec<String> {
    read_entries(&ledger(cli))
        .unwrap()
        .iter()
        .map(|e| match &e.record {
            Record::Intent(i) => format!("intent {} {}", i.call_id, i.decision),
            Record::Approval(a) => format!(
                "approval {} {} {}",
                a.call_id,
                a.result.as_str(),
                a.approver
            ),
            Record::Outcome(o) => format!("outcome {} {}", o.call_id, o.result.as_str()),
            Record::Transition(t) => format!("transition {}", t.event),
            Record::Declassification(d) => format!("declassification {} {}", d.flow, d.label),
        })
        .collect()
}

#[test]
fn a_call_needing_approval_waits_and_runs_once_when_another_principal_approves() {
    let cli = cli();
    let waiting = put(&cli, ALICE, "a", &[]);
    let id = waiting_call_id(&waiting);
    assert!(
        text(&waiting.stderr).contains("a new item in the store needs a reviewer"),
        "the @approval reason is given: {}",
        text(&waiting.stderr)
    );
    assert!(cli.store.applied().is_empty(), "nothing ran");
    assert_eq!(records(&cli), [format!("intent {id} awaiting-approval")]);
    let listed = show_waiting(&cli);
    assert!(
        listed.contains(&format!("call {id}  {ALICE}  s_put  until "))
            && listed
                .contains("[alice-writes-with-approval]  a new item in the store needs a reviewer")
            && listed.contains("\n1 call waiting for approval in "),
        "{listed}"
    );

    // The requester (a reviewer herself) and a principal outside the reviewers are refused,
    // and nothing changes.
    let own = decide(&cli, "approve", &id, ALICE);
    assert_eq!(own.status.code(), Some(3), "{}", text(&own.stderr));
    assert!(
        text(&own.stderr).contains("never the requester"),
        "{}",
        text(&own.stderr)
    );
    let outsider = decide(&cli, "approve", &id, MALLORY);
    assert_eq!(
        outsider.status.code(),
        Some(3),
        "{}",
        text(&outsider.stderr)
    );
    assert!(
        text(&outsider.stderr).contains("may not approve calls of `s_put`"),
        "{}",
        text(&outsider.stderr)
    );
    let outsider_rejects = decide(&cli, "reject", &id, MALLORY);
    assert_eq!(outsider_rejects.status.code(), Some(3));
    assert!(cli.store.applied().is_empty());
    assert_eq!(records(&cli), [format!("intent {id} awaiting-approval")]);

    // Another reviewer approves: the call runs once, with its own idempotency key, and prints
    // its output with `call`'s exit status.
    let approved = decide(&cli, "approve", &id, BOB);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    let out: serde_json::Value = serde_json::from_slice(&approved.stdout).unwrap();
    assert!(out.is_object(), "{out}");
    let applied = cli.store.applied();
    assert_eq!(
        applied.values().copied().collect::<Vec<_>>(),
        [1],
        "{applied:?}"
    );
    assert_eq!(cli.store.items().get("a").map(Vec::len), Some(1));
    assert_eq!(
        records(&cli),
        [
            format!("intent {id} awaiting-approval"),
            format!("approval {id} approved {BOB}"),
            format!("outcome {id} ok"),
        ]
    );
    let entries = read_entries(&ledger(&cli)).unwrap();
    let (intent_key, approval_policies) = (
        entries.iter().find_map(|e| match &e.record {
            Record::Intent(i) => Some(i.idempotency_key.clone()),
            _ => None,
        }),
        entries.iter().find_map(|e| match &e.record {
            Record::Approval(a) => Some(a.policy_ids.clone()),
            _ => None,
        }),
    );
    assert_eq!(
        applied.keys().next().cloned(),
        intent_key,
        "the write carried the intent's idempotency key"
    );
    assert_eq!(
        approval_policies,
        Some(vec!["reviewers-approve".to_string()])
    );
    let listed = show_waiting(&cli);
    assert!(
        listed.starts_with("0 calls waiting for approval in "),
        "a decided call is no longer listed: {listed}"
    );

    // Decided: a second approval (or a rejection) is refused and runs nothing.
    for verb in ["approve", "reject"] {
        let again = decide(&cli, verb, &id, BOB);
        assert_eq!(again.status.code(), Some(3), "{}", text(&again.stderr));
        assert!(
            text(&again.stderr).contains("already decided"),
            "{}",
            text(&again.stderr)
        );
    }
    assert_eq!(cli.store.applied().values().sum::<u32>(), 1);
    assert_eq!(records(&cli).len(), 3);

    // A call that needs no approval (a read) runs at once.
    let mut read = cli.command(&["call", "--principal", ALICE, "--tool", "s_get"]);
    read.args([
        "--input",
        &escepine_testkit::sop::key(&cli.store, "a").to_string(),
    ]);
    let read = output(read);
    assert_eq!(read.status.code(), Some(0), "{}", text(&read.stderr));

    let show = output({
        let mut c = Command::new(env!("CARGO_BIN_EXE_escepine"));
        c.args(["ledger", "show"]).arg(ledger(&cli));
        c
    });
    let shown = text(&show.stdout);
    assert!(
        shown.contains("decision   awaiting-approval  policies alice-writes-with-approval"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "approval   approved by {BOB}  policies reviewers-approve"
        )),
        "{shown}"
    );
    verify_path(&ledger(&cli), None).unwrap();
}

#[test]
fn a_rejected_call_runs_nothing_and_an_expired_one_cannot_be_approved() {
    let cli = cli();
    let id = waiting_call_id(&put(&cli, ALICE, "r", &[]));
    let rejected = decide(&cli, "reject", &id, BOB);
    assert_eq!(
        rejected.status.code(),
        Some(0),
        "{}",
        text(&rejected.stderr)
    );
    assert_eq!(text(&rejected.stdout).trim(), id);
    let approve_after = decide(&cli, "approve", &id, BOB);
    assert_eq!(approve_after.status.code(), Some(3));
    assert!(cli.store.applied().is_empty(), "a rejected call never runs");

    // A call that waits one second expires; its approval is then refused and the expiry
    // recorded, nothing run.
    let short = waiting_call_id(&put(&cli, ALICE, "e", &["--approval-ttl", "1"]));
    std::thread::sleep(std::time::Duration::from_millis(1_200));
    let listed = show_waiting(&cli);
    assert!(
        listed.contains(&format!("call {short}  {ALICE}  s_put  expired ")),
        "{listed}"
    );
    let late = decide(&cli, "approve", &short, BOB);
    assert_eq!(late.status.code(), Some(3), "{}", text(&late.stderr));
    assert!(
        text(&late.stderr).contains("waited past its expiry"),
        "{}",
        text(&late.stderr)
    );
    let late_again = decide(&cli, "approve", &short, BOB);
    assert_eq!(late_again.status.code(), Some(3));
    assert!(cli.store.applied().is_empty());
    assert_eq!(
        records(&cli),
        [
            format!("intent {id} awaiting-approval"),
            format!("approval {id} rejected {BOB}"),
            format!("outcome {id} rejected"),
            format!("intent {short} awaiting-approval"),
            format!("approval {short} expired runtime"),
            format!("outcome {short} expired"),
        ]
    );
    let entries = read_entries(&ledger(&cli)).unwrap();
    assert!(entries.iter().any(|e| matches!(&e.record,
        Record::Outcome(o) if o.call_id == id && o.result == CallResult::Rejected && o.attempts.is_empty())));
    assert!(entries.iter().any(|e| matches!(&e.record,
        Record::Approval(a) if a.call_id == short && a.result == ApprovalResult::Expired)));

    // Usage: a call id of the wrong shape is exit 2; an unknown one is refused (3).
    assert_eq!(
        decide(&cli, "approve", "not-an-id", BOB).status.code(),
        Some(2)
    );
    let unknown = decide(&cli, "approve", &"0".repeat(32), BOB);
    assert_eq!(unknown.status.code(), Some(3), "{}", text(&unknown.stderr));
    verify_path(&ledger(&cli), None).unwrap();
}
