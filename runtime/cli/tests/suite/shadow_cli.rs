//! Shadow mode from the command line: `escepine run --shadow-policies DIR` over the SOP
//! fixtures and the loopback store, against the same runs without it.
//!
//! The candidate set is the enforced one plus a forbid of the store's host for the writing
//! tools (`Action::"store-write"`). The shadowed runs must record exactly the disagreements
//! that forbid makes — every allowed write to that host, and nothing else (not the read, not the
//! write both sets deny) — and change nothing else: the same exit statuses, transitions,
//! decisions, outcomes, outputs and store contents as the runs without a shadow set.
//! `escepine ledger show --disagreements` lists those calls, and only those.

use std::path::{Path, PathBuf};
use std::process::Output;

use escepine_ledger::entry::Entry;
use escepine_ledger::record::{Decision, Intent, Record, ShadowDecision};
use escepine_ledger::sqlite::read_entries;
use escepine_ledger::verify::verify_path;
use escepine_testkit::sop::fixtures;
use serde_json::Value;

use crate::sop_harness;

use sop_harness::SopCli;

/// The SOPs each configuration runs, each on a fresh store and ledger: five steps that all
/// succeed, and a write then a write both sets deny.
const SOPS: [&str; 2] = ["five_steps", "denied"];

/// The forbid the candidate set adds.
const SHADOW_FORBID: &str = r#"@id("shadow-no-store-host")
forbid (principal, action in Action::"store-write", resource)
when { context has url && context.url.host == "127.0.0.1" };
"#;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The enforced policies plus [`SHADOW_FORBID`], in a directory of `dir`.
fn candidate(dir: &Path) -> PathBuf {
    let out = dir.join("candidate");
    std::fs::create_dir_all(&out).expect("candidate dir");
    let enforced = fixtures().join("policies");
    for e in std::fs::read_dir(&enforced).expect("fixture policies") {
        let path = e.expect("entry").path();
        let name = path.file_name().expect("a file name");
        std::fs::copy(&path, out.join(name)).expect("policy copied");
    }
    std::fs::write(out.join("shadow.cedar"), SHADOW_FORBID).expect("shadow policy written");
    out
}

/// What one SOP's run did, with a store and a ledger of its own.
struct Ran {
    cli: SopCli,
    output: Output,
    entries: Vec<Entry>,
}

impl Ran {
    fn ledger(&self) -> PathBuf {
        self.cli.dir.path().join("ledger.db")
    }
}

/// Each of [`SOPS`] run on a fresh store and ledger, with the candidate set as shadow or
/// without one.
fn run_all(shadow: bool) -> Vec<Ran> {
    SOPS.iter()
        .map(|sop| {
            let cli = SopCli::new(|dir| dir.join("ledger.db").into_os_string());
            let dir = candidate(cli.dir.path());
            let extra: Vec<&str> = if shadow {
                vec!["--shadow-policies", dir.to_str().expect("UTF-8 path")]
            } else {
                Vec::new()
            };
            let output = cli.run(sop, &extra).output().expect("escepine runs");
            let ledger = cli.dir.path().join("ledger.db");
            verify_path(&ledger, None).expect("the ledger verifies");
            let entries = read_entries(&ledger).expect("the ledger reads");
            Ran {
                cli,
                output,
                entries,
            }
        })
        .collect()
}

/// Keys whose values differ between two runs by construction (random ids, times, hashes of
/// records naming them), and the shadow field itself.
const VARYING: [&str; 12] = [
    "call_id",
    // An SOP step's flow is its run.
    "flow",
    "idempotency_key",
    "run_id",
    "compensates",
    "payload_hash",
    "output_hash",
    "outcome",
    "start_ms",
    "duration_us",
    "started_ms",
    "shadow",
];

fn strip(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for k in VARYING {
                o.remove(k);
            }
            o.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The ledger without what differs between two runs by construction ([`VARYING`], the
/// store's port, the temporary directory): one line per record.
fn comparable(ran: &Ran) -> Vec<String> {
    let store = &ran.cli.store;
    let dir = ran.cli.dir.path().display().to_string();
    ran.entries
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(&e.record).expect("a record encodes");
            strip(&mut v);
            escepine_ledger::entry::canonical_json(&v)
                .replace(store.url.as_str(), "STORE")
                .replace(store.addr.as_str(), "STORE")
                .replace(dir.as_str(), "DIR")
        })
        .collect()
}

fn intents(ran: &Ran) -> impl Iterator<Item = &Intent> {
    ran.entries.iter().filter_map(|e| match &e.record {
        Record::Intent(i) => Some(i),
        _ => None,
    })
}

#[test]
fn a_shadow_set_records_exactly_its_disagreements_and_changes_nothing() {
    let plain = run_all(false);
    let shadowed = run_all(true);
    let write_tools = ["s_put", "s_version", "s_delete"];
    let mut disagreements = 0;
    let mut agreeing_denials = 0;
    for (n, (a, b)) in plain.iter().zip(&shadowed).enumerate() {
        let sop = SOPS[n];
        // The same run: exit status, printed events (ids aside), effects, evidence.
        assert_eq!(
            a.output.status.code(),
            b.output.status.code(),
            "{sop}: {}\n{}",
            text(&a.output.stderr),
            text(&b.output.stderr)
        );
        let events = |o: &Output| -> Vec<String> {
            text(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
                .collect()
        };
        assert_eq!(events(&a.output), events(&b.output), "{sop}");
        assert_eq!(a.cli.store.items(), b.cli.store.items(), "{sop}");
        assert_eq!(comparable(a), comparable(b), "{sop}");
        assert!(
            intents(a).all(|i| i.shadow.is_none()),
            "{sop}: no shadow field without a shadow set"
        );

        // Exactly the disagreements of the added forbid: the allowed writes to the store's
        // host, each denied by it.
        let host = url::Url::parse(&b.cli.store.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .expect("the store's host");
        assert_eq!(host, "127.0.0.1");
        let expected: Vec<&str> = intents(b)
            .filter(|i| write_tools.contains(&i.tool_id.as_str()) && i.decision == Decision::Allow)
            .filter(|i| {
                i.payload["store"]
                    .as_str()
                    .and_then(|s| url::Url::parse(s).ok())
                    .is_some_and(|u| u.host_str() == Some(host.as_str()))
            })
            .map(|i| i.call_id.as_str())
            .collect();
        let recorded: Vec<&str> = intents(b)
            .filter(|i| i.shadow.is_some())
            .map(|i| i.call_id.as_str())
            .collect();
        assert_eq!(recorded, expected, "{sop}");
        for i in intents(b) {
            if let Some(s) = &i.shadow {
                assert_eq!(
                    s,
                    &ShadowDecision {
                        decision: Decision::Deny,
                        policy_ids: vec!["shadow-no-store-host".into()]
                    },
                    "{sop}: {}",
                    i.tool_id
                );
            }
        }
        disagreements += recorded.len();
        agreeing_denials += intents(b)
            .filter(|i| i.decision == Decision::Deny && i.shadow.is_none())
            .count();

        // `ledger show --disagreements` lists exactly those calls.
        let show = |ran: &Ran| {
            std::process::Command::new(env!("CARGO_BIN_EXE_escepine"))
                .args(["ledger", "show", "--disagreements"])
                .arg(ran.ledger())
                .output()
                .expect("escepine runs")
        };
        let o = show(b);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let listed: Vec<&str> = out
            .lines()
            .filter_map(|l| l.split("call ").nth(1))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(listed, expected, "{out}");
        for line in out.lines().filter(|l| l.contains(" call ")) {
            assert!(line.contains(r#"Agent::"alice""#), "{line}");
            assert!(
                line.contains("allow [permit-alice] → shadow deny [shadow-no-store-host]"),
                "{line}"
            );
        }
        let count = match expected.len() {
            1 => "1 disagreement".to_string(),
            n => format!("{n} disagreements"),
        };
        assert!(
            out.ends_with(&format!("{count} in {}\n", b.ledger().display())),
            "{out}"
        );
        assert_eq!(
            text(&show(a).stdout),
            format!("0 disagreements in {}\n", a.ledger().display())
        );
    }
    assert_eq!(plain[0].output.status.code(), Some(0));
    assert_eq!(plain[1].output.status.code(), Some(10));
    assert!(disagreements >= 5, "{disagreements}");
    assert_eq!(
        agreeing_denials, 1,
        "the denied SOP's write, denied by both sets"
    );
    assert!(
        intents(&shadowed[0]).any(|i| i.tool_id == "s_get" && i.shadow.is_none()),
        "the read agrees"
    );
}

#[test]
fn invalid_shadow_policies_refuse_the_run_naming_the_file() {
    let cli = SopCli::new(|dir| dir.join("ledger.db").into_os_string());
    let dir = cli.dir.path().join("bad");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("bad.cedar"),
        "permit (principal, action == Action::\"no_such_tool\", resource);\n",
    )
    .expect("written");
    let o = cli
        .run(
            "five_steps",
            &["--shadow-policies", dir.to_str().expect("UTF-8")],
        )
        .output()
        .expect("escepine runs");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("bad.cedar"), "{err}");
    assert!(cli.store.items().is_empty(), "nothing ran");
}
