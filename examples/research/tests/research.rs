//! The research example end to end: the `research` binary runs into a temporary directory, and
//! its outputs are checked against the ledger it wrote, read back with the runtime's SQLite
//! reader (not with anything the program printed):
//!
//! - it exits 0 and the ledger's hash chain verifies;
//! - every entry of the deliverable's evidence index is an outcome entry of a successful page
//!   read of that very URL (its intent allowed, its egress the origin of that URL and nothing
//!   else, its output the page), and the Markdown cites it;
//! - the page on the forbidden host appears only as a denial: a deny intent by
//!   `page-read-no-linkedin` whose outcome is `denied` with no attempt, no page-read outcome
//!   holding it, and nothing of it in the deliverable. (Its URL does appear in the search step's
//!   outcome: that is how the agent found it.)

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use escepine_runtime::ledger::sqlite::read_entries;
use escepine_runtime::ledger::verify::verify_path;
use escepine_runtime::ledger::{CallResult, Entry, Intent, Outcome, Record};
use serde_json::Value;

const PAGE_READERS: [&str; 2] = ["firecrawl_scrape", "web_fetch_exa"];
/// Text only the forbidden page holds.
const FORBIDDEN_TEXT: &str = "Follow me for more posts";

fn run(out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_research"))
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("the research binary runs")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

struct Calls {
    intents: HashMap<String, (Entry, Intent)>,
    outcomes: HashMap<String, (Entry, Outcome)>,
}

fn calls(entries: &[Entry]) -> Calls {
    let mut intents = HashMap::new();
    let mut outcomes = HashMap::new();
    for e in entries {
        match &e.record {
            Record::Intent(i) => {
                intents.insert(i.call_id.clone(), (e.clone(), i.clone()));
            }
            Record::Outcome(o) => {
                outcomes.insert(o.call_id.clone(), (e.clone(), o.clone()));
            }
            Record::Transition(_) => {}
        }
    }
    Calls { intents, outcomes }
}

#[test]
fn the_deliverable_cites_a_ledger_that_verifies_and_the_forbidden_page_is_only_denied() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path();
    let run = run(out, &[]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        run.status
    );
    assert!(stdout.contains("executor: "), "{stdout}");
    assert!(stdout.contains("ledger verify: intact"), "{stdout}");

    // The ledger verifies, read by the runtime's own verifier and reader.
    let ledger = out.join("ledger.db");
    let report = verify_path(&ledger, None).expect("the ledger verifies");
    let entries = read_entries(&ledger).expect("the ledger reads");
    assert_eq!(report.entries, entries.len() as u64);
    let calls = calls(&entries);
    let by_hash: HashMap<&str, &Entry> = entries.iter().map(|e| (e.hash.as_str(), e)).collect();

    // Every cited entry is the outcome of a successful read of that URL.
    let deliverable = read_json(&out.join("deliverable.json"));
    let markdown = std::fs::read_to_string(out.join("deliverable.md")).expect("deliverable.md");
    assert_eq!(deliverable["content"].as_str(), Some(markdown.as_str()));
    let index = deliverable["evidence_index"]
        .as_array()
        .expect("an evidence index");
    assert!(index.len() >= 3, "{index:?}");
    for item in index {
        let url = item["url"].as_str().expect("a url");
        let hash = item["ledger_entry"].as_str().expect("a ledger entry");
        assert!(markdown.contains(hash), "the Markdown cites {hash}");
        let entry = by_hash
            .get(hash)
            .unwrap_or_else(|| panic!("{hash} is not an entry of the ledger"));
        let Record::Outcome(outcome) = &entry.record else {
            panic!("{hash} is not an outcome entry");
        };
        assert_eq!(outcome.result, CallResult::Ok, "{url}");
        assert_eq!(
            outcome.output.as_ref().map(|o| &o["url"]),
            Some(&Value::from(url))
        );
        let (_, intent) = &calls.intents[&outcome.call_id];
        assert!(
            PAGE_READERS.contains(&intent.tool_id.as_str()),
            "{url}: {}",
            intent.tool_id
        );
        assert_eq!(intent.decision, "allow");
        assert_eq!(intent.payload["url"], url, "the call read that very URL");
        // Its sandbox reached exactly the origin of that URL, which no overlay entry names.
        let parsed = url::Url::parse(url).expect("a URL");
        let origin = format!(
            "{}://{}:{}",
            parsed.scheme(),
            parsed.host_str().expect("a host"),
            parsed.port_or_known_default().expect("a port")
        );
        assert_eq!(intent.egress_origins, [origin], "{url}");
        assert_eq!(intent.overlay, ["public_address 127.0.0.1"], "{url}");
        assert!(!url.contains("linkedin"), "{url}");
    }

    // The forbidden page: one deny intent, a denied outcome with no attempt.
    let denied: Vec<&Intent> = calls
        .intents
        .values()
        .map(|(_, i)| i)
        .filter(|i| i.decision == "deny")
        .collect();
    assert_eq!(denied.len(), 1, "{denied:?}");
    let deny = denied[0];
    assert_eq!(deny.tool_id, "firecrawl_scrape");
    assert_eq!(deny.policy_ids, ["page-read-no-linkedin"]);
    let denied_url = deny.payload["url"].as_str().expect("the denied URL");
    assert!(
        denied_url.starts_with("https://www.linkedin.com/"),
        "{denied_url}"
    );
    let (_, outcome) = &calls.outcomes[&deny.call_id];
    assert_eq!(outcome.result, CallResult::Denied);
    assert!(outcome.attempts.is_empty() && outcome.output.is_none());
    for (_, (_, o)) in calls.outcomes.iter() {
        let intent = &calls.intents[&o.call_id].1;
        let text = serde_json::to_string(&o.output).expect("an output encodes");
        assert!(!text.contains(FORBIDDEN_TEXT), "{}", intent.tool_id);
        if PAGE_READERS.contains(&intent.tool_id.as_str()) {
            assert!(
                !text.contains("linkedin"),
                "a page read holds the forbidden page"
            );
        }
    }
    // The deliverable may name the denying policy, never the page.
    assert!(
        !markdown.to_lowercase().contains("linkedin.com"),
        "{markdown}"
    );
    assert!(!markdown.contains(FORBIDDEN_TEXT));
    let sources = serde_json::to_string(
        &calls
            .intents
            .values()
            .find(|(_, i)| i.tool_id == "deliverable_assemble")
            .expect("an assemble call")
            .1
            .payload["sources"],
    )
    .expect("sources encode");
    assert!(!sources.contains("linkedin"), "{sources}");
    assert!(
        stdout.contains("denied page: https://www.linkedin.com/"),
        "{stdout}"
    );

    // The summary names the same run.
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["verify"]["ok"], true);
    assert_eq!(summary["verify"]["head"], Value::from(report.head));
}

#[test]
fn a_denied_sop_read_escalates_the_run_and_exits_non_zero() {
    // With this question the best result is the forbidden page itself: the SOP's own `read`
    // step is denied, and its `on_failure` (halt_and_escalate) ends the run escalated.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let run = run(
        dir.path(),
        &[
            "--query",
            "what railway interlocking teaches software engineers",
            "--executor",
            "process",
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("escalated"), "{stderr}");
    assert!(!dir.path().join("deliverable.md").exists());
    let ledger = dir.path().join("ledger.db");
    verify_path(&ledger, None).expect("the ledger of an escalated run verifies too");
}
