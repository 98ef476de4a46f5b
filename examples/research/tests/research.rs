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
//! - a page carrying instructions to AI agents leads the (gullible, scripted) planner to try
//!   sending the notes to a collector: the flow policies hold that read for an approver, with
//!   the policy named, nothing reaches the collector, and a later process naming the run's flow
//!   is held the same way.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use escepine_ledger::entry::Entry;
use escepine_ledger::record::{CallResult, Decision, Intent, Outcome, Record};
use escepine_ledger::sqlite::read_entries;
use escepine_ledger::verify::verify_path;
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
            Record::Transition(_) | Record::Approval(_) | Record::Declassification(_) => {}
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
        assert_eq!(intent.decision, Decision::Allow);
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
        .filter(|i| i.decision == Decision::Deny)
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
    // The clean pages give the agent no instruction: nothing is held, nothing collected.
    assert_eq!(summary["injections"], serde_json::json!([]), "{summary:#}");
    assert_eq!(summary["services"]["collected"], serde_json::json!([]));
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

/// `escepine policy replay` (in process) over a ledger; its exit status, stdout and stderr.
fn replay(
    ledger: &Path,
    policies: &Path,
    entities: &Path,
    extra: &[&str],
) -> (i32, String, String) {
    let records = workspace().join("tools/records");
    let mut args: Vec<String> = ["policy", "replay", "--ledger"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (flag, path) in [
        (None, ledger),
        (Some("--records"), records.as_path()),
        (Some("--policies"), policies),
        (Some("--entities"), entities),
    ] {
        args.extend(flag.map(str::to_owned));
        args.push(path.display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    escepine(&args)
}

fn workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace")
        .to_path_buf()
}

/// The catalog's policies with `edit` applied to each file's text (file name, text → text),
/// plus `extra` as another file, in a new directory under `dir`.
fn policies(
    dir: &Path,
    name: &str,
    edit: impl Fn(&str, &str) -> String,
    extra: &str,
) -> std::path::PathBuf {
    let out = dir.join(name);
    std::fs::create_dir_all(&out).expect("a policies directory");
    for e in std::fs::read_dir(workspace().join("tools/policies")).expect("the catalog's policies")
    {
        let path = e.expect("an entry").path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a file name")
            .to_string();
        let text = std::fs::read_to_string(&path).expect("a policy file");
        std::fs::write(out.join(&file), edit(&file, &text)).expect("written");
    }
    if !extra.is_empty() {
        std::fs::write(out.join("change.cedar"), extra).expect("written");
    }
    out
}

/// The call ids of the lines `policy replay` printed.
fn flipped(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| {
            l.strip_prefix("call ")
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or_else(|| panic!("not a flip line: {l}"))
                .to_string()
        })
        .collect()
}

#[test]
fn replaying_the_research_ledger_lists_exactly_the_requests_a_policy_change_flips() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("run");
    let ran = run(&out, &["--executor", "process"]);
    assert!(
        ran.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    let ledger = out.join("ledger.db");
    let entities = out.join("entities.json");
    let entries = read_entries(&ledger).expect("the ledger reads");
    let intents: Vec<&Intent> = entries
        .iter()
        .filter_map(|e| match &e.record {
            Record::Intent(i) => Some(i),
            _ => None,
        })
        .collect();
    let summary = |flips: usize, widened: usize| {
        format!(
            "replayed {} requests, {flips} flipped ({widened} widened)\n",
            intents.len()
        )
    };

    // The policies the run was made under: nothing flips.
    let (code, stdout, stderr) =
        replay(&ledger, &workspace().join("tools/policies"), &entities, &[]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert_eq!(stderr, summary(0, 0));

    // Also forbid the corpus's host to page reads: exactly the allowed reads of a URL on that
    // host flip, to a deny by the new policy; the LinkedIn read stays denied.
    let host = "127.0.0.1";
    let forbid_host = format!(
        "@id(\"page-read-no-corpus-host\")\nforbid (principal, action in Action::\"page-read\", resource)\n\
         when {{ context has url && context.url.host == \"{host}\" }};\n"
    );
    let narrowed = policies(dir.path(), "narrowed", |_, t| t.to_string(), &forbid_host);
    let expected: Vec<String> = intents
        .iter()
        .filter(|i| PAGE_READERS.contains(&i.tool_id.as_str()) && i.decision == Decision::Allow)
        .filter(|i| {
            i.payload["url"]
                .as_str()
                .and_then(|u| url::Url::parse(u).ok())
                .is_some_and(|u| u.host_str() == Some(host))
        })
        .map(|i| i.call_id.clone())
        .collect();
    assert!(expected.len() >= 3, "{expected:?}");
    let (code, stdout, stderr) = replay(&ledger, &narrowed, &entities, &[]);
    assert_eq!(code, 0, "a narrowing passes: {stderr}");
    assert_eq!(flipped(&stdout), expected, "{stdout}");
    for line in stdout.lines() {
        assert!(line.contains("  Agent::\"researcher\"  "), "{line}");
        assert!(
            line.contains("  allow → deny  [read-only-tools] → [page-read-no-corpus-host]"),
            "{line}"
        );
        let call = line.split_whitespace().nth(1).expect("a call id");
        let intent = intents
            .iter()
            .find(|i| i.call_id == call)
            .expect("an intent");
        let payload = escepine_ledger::entry::canonical_json(&intent.payload);
        assert!(
            line.contains(&format!("  {}  {payload}  ", intent.tool_id)),
            "{line}"
        );
    }
    assert_eq!(stderr, summary(expected.len(), 0));

    // Allow LinkedIn (its forbid removed): the one denied read flips to an allow — a
    // widening, exit 1 — unless --allow-widening.
    let linkedin: Vec<&&Intent> = intents
        .iter()
        .filter(|i| i.decision == Decision::Deny && i.policy_ids == ["page-read-no-linkedin"])
        .collect();
    assert_eq!(
        linkedin.len(),
        1,
        "the research ledger holds the denied LinkedIn read"
    );
    let widened = policies(
        dir.path(),
        "widened",
        |file, text| {
            if file == "page_read.cedar" {
                "// LinkedIn no longer forbidden.\n".to_string()
            } else {
                text.to_string()
            }
        },
        "",
    );
    let (code, stdout, stderr) = replay(&ledger, &widened, &entities, &[]);
    assert_eq!(code, 1, "a widening fails: {stdout}{stderr}");
    assert_eq!(flipped(&stdout), [linkedin[0].call_id.clone()]);
    assert!(
        stdout.contains("  deny → allow  [page-read-no-linkedin] → [read-only-tools]"),
        "{stdout}"
    );
    assert!(stdout.contains("https://www.linkedin.com/"), "{stdout}");
    assert!(stderr.starts_with(&summary(1, 1)), "{stderr}");
    assert!(stderr.contains("--allow-widening"), "{stderr}");
    let (code, again, stderr) = replay(&ledger, &widened, &entities, &["--allow-widening"]);
    assert_eq!((code, again.as_str()), (0, stdout.as_str()), "{stderr}");
    assert_eq!(stderr, summary(1, 1));

    // Records that lack a tool of the ledger: a note per intent of it, counted.
    let records = dir.path().join("records");
    std::fs::create_dir_all(&records).expect("a records directory");
    for e in std::fs::read_dir(workspace().join("tools/records")).expect("the catalog's records") {
        let path = e.expect("an entry").path();
        if path.file_name().is_some_and(|n| n != "web_search.json") {
            std::fs::copy(&path, records.join(path.file_name().expect("a name"))).expect("copied");
        }
    }
    let absent = intents.iter().filter(|i| i.tool_id == "web_search").count();
    assert!(absent >= 1);
    let (code, stdout, stderr) = {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let code = escepine_cli::run(
            [
                "escepine",
                "policy",
                "replay",
                "--ledger",
                ledger.to_str().expect("UTF-8"),
                "--records",
                records.to_str().expect("UTF-8"),
                "--policies",
                workspace().join("tools/policies").to_str().expect("UTF-8"),
                "--entities",
                entities.to_str().expect("UTF-8"),
            ],
            &mut escepine_cli::Io {
                out: &mut o,
                err: &mut e,
            },
        );
        (
            code,
            String::from_utf8_lossy(&o).into_owned(),
            String::from_utf8_lossy(&e).into_owned(),
        )
    };
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert_eq!(
        stderr.matches("is not in the records").count(),
        absent,
        "{stderr}"
    );
    assert!(
        stderr.ends_with(&format!(
            "replayed {} requests, 0 flipped (0 widened); {absent} not replayed (tool absent from the records)\n",
            intents.len() - absent
        )),
        "{stderr}"
    );

    // A broken chain is refused before anything is replayed, naming the entry.
    let broken = dir.path().join("broken.db");
    std::fs::copy(&ledger, &broken).expect("the ledger copied");
    let seq = entries
        .iter()
        .find(|e| matches!(&e.record, Record::Intent(i) if i.call_id == linkedin[0].call_id))
        .expect("the denied intent's entry")
        .seq;
    let sql = format!(
        "UPDATE entries SET body = replace(body, '\"deny\"', '\"allow\"') WHERE seq = {seq};"
    );
    let sqlite = Command::new("sqlite3")
        .arg(&broken)
        .arg(&sql)
        .output()
        .expect("the sqlite3 command-line tool is needed (apt-get install sqlite3)");
    assert!(
        sqlite.status.success(),
        "{}",
        String::from_utf8_lossy(&sqlite.stderr)
    );
    let (code, stdout, stderr) = replay(&broken, &widened, &entities, &[]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.contains(&format!("entry {seq} changed")), "{stderr}");
}

/// `escepine ARGS` in process: its exit status, stdout and stderr.
fn escepine(args: &[String]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = escepine_cli::run(
        std::iter::once("escepine".to_string()).chain(args.iter().cloned()),
        &mut escepine_cli::Io {
            out: &mut out,
            err: &mut err,
        },
    );
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// The query whose best result is the page carrying injected instructions.
const INJECTED_QUERY: &str = "lineside inspection rosters";

#[test]
fn an_injected_page_cannot_send_the_notes_away_not_even_after_a_restart() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path();
    let run = run(out, &["--query", INJECTED_QUERY]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    let summary = read_json(&out.join("summary.json"));
    let run_id = summary["run_id"].as_str().expect("a run id").to_string();
    // The planner obeyed the page: it tried to read the collector's URL with the notes in it.
    let injections = summary["injections"].as_array().expect("injections");
    assert_eq!(injections.len(), 1, "{summary:#}");
    let attempt = &injections[0];
    assert!(
        attempt["page"]
            .as_str()
            .is_some_and(|p| p.ends_with("/corpus/lineside-inspection.html")),
        "{attempt}"
    );
    let collector = summary["services"]["collector"]
        .as_str()
        .expect("collector");
    assert!(
        attempt["url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("{collector}/collect?notes=Question"))),
        "{attempt}"
    );
    // Held for an approver by the trifecta policy; nothing reached the collector.
    assert_eq!(attempt["outcome"], "awaiting_approval", "{attempt}");
    assert!(
        attempt["policy_ids"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p == "flow-trifecta-new-origin")),
        "{attempt}"
    );
    assert_eq!(summary["services"]["collected"], serde_json::json!([]));
    // The rest of the task completed: the note was published and the deliverable assembled.
    assert_eq!(summary["status"], "completed");
    assert_eq!(
        summary["services"]["published"].as_array().map(Vec::len),
        Some(1)
    );

    // The ledger: the held call's intent names the run's flow and the state Cedar saw.
    let ledger = out.join("ledger.db");
    let entries = read_entries(&ledger).expect("the ledger reads");
    let all = calls(&entries);
    let call_id = attempt["call_id"].as_str().expect("call id");
    let (_, intent) = &all.intents[call_id];
    assert_eq!(intent.decision, Decision::AwaitingApproval);
    assert_eq!(
        intent.flow.as_ref().map(|f| f.as_str()),
        Some(run_id.as_str())
    );
    let state = intent.flow_state.as_ref().expect("the flow's state");
    assert!(
        state.labels.contains("private") && state.labels.contains("untrusted-content"),
        "{state:?}"
    );
    assert!(!state.origins.iter().any(|o| o == collector), "{state:?}");
    assert!(!all.outcomes.contains_key(call_id), "nothing ran");

    // A restart: another process, the same ledger, the same flow named — held again, before
    // anything is sent.
    let workspace = workspace();
    let arg = |s: &str| s.to_string();
    let path = |p: &Path| p.display().to_string();
    let again = [
        arg("call"),
        arg("--records"),
        path(&workspace.join("tools/records")),
        arg("--policies"),
        path(&workspace.join("tools/policies")),
        arg("--envelope"),
        path(&out.join("deployment-envelope.json")),
        arg("--entities"),
        path(&out.join("entities.json")),
        arg("--ledger"),
        path(&ledger),
        arg("--principal"),
        arg("Agent::\"researcher\""),
        arg("--tool"),
        arg("firecrawl_scrape"),
        arg("--input"),
        serde_json::json!({"url": format!("{collector}/collect?again=1")}).to_string(),
        arg("--flow"),
        run_id.clone(),
        // This test program is no sandbox init; the call is held before any executor runs.
        arg("--executor"),
        arg("process"),
    ];
    let (code, _, err) = escepine(&again);
    assert_eq!(code, 8, "{err}");
    assert!(err.contains("flow-trifecta-new-origin"), "{err}");

    // `flow show` names the calls that brought each label; the researcher cannot declassify
    // what its own calls brought (exit 3), and nothing is recorded.
    let (code, shown, err) = escepine(&[arg("flow"), arg("show"), path(&ledger), run_id.clone()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        shown.contains("labels:  private, untrusted-content"),
        "{shown}"
    );
    assert!(shown.contains("`private` brought by:"), "{shown}");
    assert!(
        shown.contains("(note_publish, Agent::\"researcher\")"),
        "{shown}"
    );
    let before = read_entries(&ledger).expect("reads").len();
    let (code, _, err) = escepine(&[
        arg("flow"),
        arg("declassify"),
        path(&ledger),
        run_id.clone(),
        arg("private"),
        arg("--reason"),
        arg("the notes are mine"),
        arg("--principal"),
        arg("Agent::\"researcher\""),
        arg("--records"),
        path(&workspace.join("tools/records")),
        arg("--policies"),
        path(&workspace.join("tools/policies")),
        arg("--entities"),
        path(&out.join("entities.json")),
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("its own call"), "{err}");
    assert_eq!(read_entries(&ledger).expect("reads").len(), before);
}

/// The spans of a research run reach a real OTLP receiver (the official `opentelemetry-proto`
/// definitions behind gRPC): one `sop_run research` span, the parent of an `execute_tool` span
/// per governed call of the run, each with the GenAI attributes and the very call id, tool and
/// decision its ledger intent records, and children for its stages; the intents of calls the
/// ledger holds and the spans are the same set. No payload reaches the receiver.
#[test]
fn a_research_run_is_one_trace_whose_calls_are_the_ledger_s() {
    let receiver = escepine_testkit::otlp::OtlpReceiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path();
    let run = run(
        out,
        &[
            "--otlp-endpoint",
            receiver.grpc_endpoint(),
            "--otlp-protocol",
            "grpc",
        ],
    );
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let sandboxed = String::from_utf8_lossy(&run.stdout).contains("executor: sandbox");
    let entries = read_entries(&out.join("ledger.db")).expect("the ledger reads");
    let calls = calls(&entries);
    // The run flushes before it exits: everything is there once it has.
    let spans = receiver.spans();
    let named = |prefix: &str| -> Vec<&Value> {
        spans
            .iter()
            .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .collect()
    };
    let runs = named("sop_run ");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let sop = runs[0];
    assert_eq!(sop["name"], "sop_run research");
    assert_eq!(sop["service_name"], "escepine");
    assert_eq!(sop["transport"], "grpc");
    let run_id = sop["attributes"]["escepine.run.id"]
        .as_str()
        .expect("run id");

    let executed = named("execute_tool ");
    let mut traced = std::collections::BTreeSet::new();
    for span in &executed {
        let a = &span["attributes"];
        let call_id = a["gen_ai.tool.call.id"].as_str().expect("a call id");
        let (_, intent) = calls
            .intents
            .get(call_id)
            .unwrap_or_else(|| panic!("span of call {call_id}, which the ledger lacks"));
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["gen_ai.tool.name"], intent.tool_id.as_str());
        assert_eq!(span["name"], format!("execute_tool {}", intent.tool_id));
        assert_eq!(a["escepine.input.sha256"], intent.payload_hash.as_str());
        let decision = match intent.decision {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::AwaitingApproval => "awaiting-approval",
        };
        assert_eq!(a["escepine.decision"], decision, "{span}");
        if intent.run_id.as_deref() == Some(run_id) {
            assert_eq!(span["parent_span_id"], sop["span_id"], "{span}");
            assert_eq!(span["trace_id"], sop["trace_id"]);
        }
        if intent.decision == Decision::Deny {
            assert_eq!(a["error.type"], "denied");
            assert_eq!(span["status_code"], "STATUS_CODE_ERROR");
            assert_eq!(
                a["escepine.policy_ids"].as_str(),
                Some(intent.policy_ids.join(",").as_str())
            );
        }
        // Its stages are its children.
        let children: Vec<&str> = spans
            .iter()
            .filter(|s| s["parent_span_id"] == span["span_id"])
            .filter_map(|s| s["name"].as_str())
            .collect();
        for stage in ["input_gate", "authorize", "ledger_append"] {
            assert!(children.contains(&stage), "{stage} of {span}: {children:?}");
        }
        if intent.decision == Decision::Allow {
            assert!(children.contains(&"attempt"), "{children:?}");
            // In a sandbox, each attempt's sandbox is provisioned in a span of its own.
            if sandboxed {
                let attempt = spans
                    .iter()
                    .find(|s| s["parent_span_id"] == span["span_id"] && s["name"] == "attempt")
                    .expect("the attempt");
                let provision = spans
                    .iter()
                    .find(|s| {
                        s["parent_span_id"] == attempt["span_id"]
                            && s["name"] == "sandbox_provision"
                    })
                    .unwrap_or_else(|| panic!("no sandbox_provision under {attempt}"));
                assert!(provision["attributes"]["escepine.sandbox.warm"].is_boolean());
            }
        }
        traced.insert(call_id.to_string());
    }
    let recorded: std::collections::BTreeSet<String> = calls.intents.keys().cloned().collect();
    assert_eq!(traced, recorded, "every call of the ledger is traced, once");
    assert!(
        executed
            .iter()
            .any(|s| s["parent_span_id"] == sop["span_id"]),
        "the SOP's steps are children of its run"
    );
    // Payloads stay in the ledger: not one recorded payload's string values reach the receiver.
    let exported = std::fs::read_to_string(receiver.out_path()).expect("the receiver's file");
    for (_, intent) in calls.intents.values() {
        for value in intent
            .payload
            .as_object()
            .into_iter()
            .flat_map(|o| o.values())
        {
            if let Some(text) = value.as_str().filter(|t| t.len() > 12) {
                assert!(
                    !exported.contains(text),
                    "a payload value was exported: {text}"
                );
            }
        }
    }
}
