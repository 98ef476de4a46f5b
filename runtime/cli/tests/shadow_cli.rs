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

use escepine_runtime::ledger::sqlite::read_entries;
use escepine_runtime::ledger::verify::verify_path;
use escepine_runtime::ledger::{Entry, Record, ShadowDecision};
use escepine_testkit::sop::{fixtures, Items};
use serde_json::Value;

mod sop_harness;

use sop_harness::SopCli;

/// The SOPs each configuration runs, in order, into one ledger: five steps that all succeed,
/// and one whose write both sets deny.
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

/// What a configuration did.
struct Ran {
    cli: SopCli,
    outputs: Vec<Output>,
    entries: Vec<Entry>,
}

impl Ran {
    fn ledger(&self) -> PathBuf {
        self.cli.dir.path().join("ledger.db")
    }

    /// Its store's contents.
    fn items(&self) -> Items {
        self.cli.store.items()
    }
}

fn run_all(shadow: bool) -> Ran {
    let cli = SopCli::new(|dir| dir.join("ledger.db").into_os_string());
    let dir = candidate(cli.dir.path());
    let mut outputs = Vec::new();
    for sop in SOPS {
        let extra: Vec<&str> = if shadow {
            vec!["--shadow-policies", dir.to_str().expect("UTF-8 path")]
        } else {
            Vec::new()
        };
        outputs.push(cli.run(sop, &extra).output().expect("escepine runs"));
    }
    let ledger = cli.dir.path().join("ledger.db");
    verify_path(&ledger, None).expect("the ledger verifies");
    let entries = read_entries(&ledger).expect("the ledger reads");
    Ran {
        cli,
        outputs,
        entries,
    }
}

/// The ledger with everything that differs between two runs by construction (ids, times, the
/// store's port, hashes over payloads naming it) left out, and the shadow field taken out:
/// one line per record.
fn comparable(ran: &Ran) -> Vec<String> {
    let url = &ran.cli.store.url;
    ran.entries
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(&e.record).expect("a record encodes");
            if let Some(o) = v.as_object_mut() {
                for k in [
                    "call_id",
                    "idempotency_key",
                    "run_id",
                    "compensates",
                    "payload_hash",
                    "output_hash",
                    "shadow",
                    "overlay",
                ] {
                    o.remove(k);
                }
                if let Some(Value::Array(attempts)) = o.get_mut("attempts") {
                    for a in attempts {
                        if let Some(a) = a.as_object_mut() {
                            a.remove("start_ms");
                            a.remove("duration_us");
                        }
                    }
                }
                if let Some(Value::Object(data)) = o.get_mut("data") {
                    for k in ["run_id", "started_ms", "call_id", "meta"] {
                        data.remove(k);
                    }
                }
            }
            let line = escepine_runtime::ledger::canonical_json(&v);
            line.replace(url.as_str(), "STORE")
        })
        .collect()
}

#[test]
fn a_shadow_set_records_exactly_its_disagreements_and_changes_nothing() {
    let plain = run_all(false);
    let shadowed = run_all(true);

    // The same runs: exit statuses and printed transitions (ids aside).
    for (n, (a, b)) in plain.outputs.iter().zip(&shadowed.outputs).enumerate() {
        assert_eq!(
            a.status.code(),
            b.status.code(),
            "{}: {}\n{}",
            SOPS[n],
            text(&a.stderr),
            text(&b.stderr)
        );
        let events = |o: &Output| -> Vec<String> {
            text(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
                .collect()
        };
        assert_eq!(events(a), events(b), "{}", SOPS[n]);
    }
    assert_eq!(plain.outputs[0].status.code(), Some(0));
    assert_eq!(plain.outputs[1].status.code(), Some(10));
    // The same effects, and the same evidence but for the shadow field.
    assert_eq!(plain.items(), shadowed.items());
    assert_eq!(comparable(&plain), comparable(&shadowed));
    assert!(
        plain
            .entries
            .iter()
            .all(|e| !matches!(&e.record, Record::Intent(i) if i.shadow.is_some())),
        "no shadow field without a shadow set"
    );

    // Exactly the disagreements of the added forbid: the allowed writes to the store's host.
    let write_tools = ["s_put", "s_version", "s_delete"];
    let host = url::Url::parse(&shadowed.cli.store.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .expect("the store's host");
    assert_eq!(host, "127.0.0.1");
    let mut expected = Vec::new();
    let mut recorded = Vec::new();
    let mut agreeing_denials = 0;
    for e in &shadowed.entries {
        let Record::Intent(i) = &e.record else {
            continue;
        };
        let names_host = i.payload["store"]
            .as_str()
            .and_then(|s| url::Url::parse(s).ok())
            .is_some_and(|u| u.host_str() == Some(host.as_str()));
        if write_tools.contains(&i.tool_id.as_str()) && names_host && i.decision == "allow" {
            expected.push(i.call_id.clone());
        }
        if i.decision == "deny" {
            agreeing_denials += 1;
        }
        if let Some(s) = &i.shadow {
            assert_eq!(
                s,
                &ShadowDecision {
                    decision: "deny".into(),
                    policy_ids: vec!["shadow-no-store-host".into()]
                },
                "{}",
                i.tool_id
            );
            recorded.push(i.call_id.clone());
        }
    }
    assert!(expected.len() >= 4, "{expected:?}");
    assert_eq!(recorded, expected);
    assert_eq!(
        agreeing_denials, 1,
        "the denied SOP's write, denied by both"
    );
    assert!(
        shadowed.entries.iter().any(|e| matches!(
            &e.record,
            Record::Intent(i) if i.tool_id == "s_get" && i.shadow.is_none()
        )),
        "the read agrees"
    );

    // `ledger show --disagreements` lists exactly those calls.
    let show = std::process::Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "show", "--disagreements"])
        .arg(shadowed.ledger())
        .output()
        .expect("escepine runs");
    let out = text(&show.stdout);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    let listed: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split("call ").nth(1))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, expected, "{out}");
    for line in out.lines().filter(|l| l.contains("call ")) {
        assert!(line.contains(r#"Agent::"alice""#), "{line}");
        assert!(
            line.contains("allow [permit-alice] → shadow deny [shadow-no-store-host]"),
            "{line}"
        );
    }
    assert!(
        out.ends_with(&format!(
            "{} disagreements in {}\n",
            expected.len(),
            shadowed.ledger().display()
        )),
        "{out}"
    );
    let plain_show = std::process::Command::new(env!("CARGO_BIN_EXE_escepine"))
        .args(["ledger", "show", "--disagreements"])
        .arg(plain.ledger())
        .output()
        .expect("escepine runs");
    assert_eq!(
        text(&plain_show.stdout),
        format!("0 disagreements in {}\n", plain.ledger().display())
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
