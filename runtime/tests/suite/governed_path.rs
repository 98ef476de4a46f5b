//! The governed call path end to end: real processes (the testkit's `escepine-testtool`), a
//! real SQLite ledger, the real Cedar policies of `tests/fixtures/path`.

use crate::support::fixtures;
use crate::support::{host, logs};
use escepine_testkit::testtool;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use escepine_contract::Principal;
use escepine_ledger::entry::{Committed, Entry};
use escepine_ledger::error::LedgerError;
use escepine_ledger::record::{CallResult, Decision, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{BoxFuture, Durability, Ledger};
use escepine_runtime::executor::process::ProcessExecutor;
use escepine_runtime::secrets::MapSecrets;
use escepine_runtime::{CallError, CallKind, CallOptions, CallOutcome, NoOutput, Runtime};
use serde_json::{json, Value};

const SECRET: &str = "sup3r-s3cret-V4LUE";
/// A secret with spaces, reserved URL characters and non-ASCII letters.
const RICH_SECRET: &str = "Rich s3cret: \u{fc}n\u{ef}/\u{e7}\u{f8}d\u{e9}+=?&%~";

fn executor() -> ProcessExecutor {
    let tool = testtool::testtool();
    ProcessExecutor::new().with_bin_dir(tool.parent().unwrap())
}

struct Fixture {
    dir: tempfile::TempDir,
    runtime: Runtime,
}

impl Fixture {
    fn new() -> Self {
        Self::with_ledger(|dir| {
            Arc::new(SqliteLedger::open(dir.join("ledger.db"), Durability::Full).unwrap())
        })
    }

    fn with_ledger(make: impl FnOnce(&Path) -> Arc<dyn Ledger>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ledger = make(dir.path());
        let secrets = MapSecrets(BTreeMap::from([
            ("T_SECRET".to_string(), SECRET.to_string()),
            ("T_SECRET_RICH".to_string(), RICH_SECRET.to_string()),
        ]));
        let runtime = Runtime::builder(fixtures::registry("path"))
            .ledger(ledger)
            .executor(Arc::new(executor()))
            .secrets(Arc::new(secrets))
            .build()
            .unwrap();
        Self { dir, runtime }
    }

    fn counter(&self) -> String {
        self.dir
            .path()
            .join("counter")
            .to_str()
            .unwrap()
            .to_string()
    }

    fn runs(&self) -> Vec<String> {
        fs::read_to_string(self.counter())
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    fn entries(&self) -> Vec<Entry> {
        self.runtime.ledger().entries().unwrap()
    }

    /// The output of a call, or why there is none.
    async fn call(&self, who: &str, tool: &str, payload: Value) -> Result<Value, NoOutput> {
        self.runtime
            .dispatch(&Principal::agent(who), tool, payload)
            .await
    }
}

fn outcome_of(entries: &[Entry], call_id: &str) -> escepine_ledger::record::Outcome {
    entries
        .iter()
        .find_map(|e| match &e.record {
            Record::Outcome(o) if o.call_id == call_id => Some(o.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no outcome for {call_id}"))
}

#[tokio::test]
async fn an_allowed_call_runs_once_with_intent_before_outcome() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let report = f
        .runtime
        .call(
            &Principal::agent("alice"),
            "t_count",
            json!({"counter": f.counter()}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.output(), Some(&json!({"count": 1})));
    assert_eq!(
        f.runs(),
        [format!("{} {}", report.call_id(), report.idempotency_key())]
    );
    let entries = f.entries();
    assert_eq!(entries.len(), 2);
    match (&entries[0].record, &entries[1].record) {
        (Record::Intent(i), Record::Outcome(o)) => {
            assert_eq!(
                (i.call_id.as_str(), i.decision.as_str()),
                (report.call_id(), "allow")
            );
            assert_eq!(i.policy_ids, ["permit-alice"]);
            assert_eq!(o.result, CallResult::Ok);
            assert_eq!(o.attempts.len(), 1);
            assert!(o.output_hash.is_some());
        }
        other => panic!("unexpected entries {other:?}"),
    }
    assert!(report.intent_entry().seq < report.outcome_entry().expect("an outcome").seq);
    assert_eq!(report.kind(), CallKind::Ok);
}

#[tokio::test]
async fn a_denied_call_runs_zero_times_and_is_not_retried() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let err = f
        .call("mallory", "t_count", json!({"counter": f.counter()}))
        .await
        .unwrap_err();
    assert!(
        matches!(err.outcome(), Some(CallOutcome::Denied { policy_ids, .. }) if policy_ids.is_empty()),
        "{err}"
    );
    assert_eq!(err.kind(), CallKind::Denied);
    assert_eq!(err.report().map(|r| r.attempts()), Some(0));
    assert!(f.runs().is_empty());
    let entries = f.entries();
    assert_eq!(
        entries.len(),
        2,
        "an intent with the deny, an outcome `denied`"
    );
    let call_id = match &entries[0].record {
        Record::Intent(i) => {
            assert_eq!(i.decision, Decision::Deny);
            i.call_id.clone()
        }
        r => panic!("{r:?}"),
    };
    let o = outcome_of(&entries, &call_id);
    assert_eq!(o.result, CallResult::Denied);
    assert!(o.attempts.is_empty());
}

#[tokio::test]
async fn a_forbid_on_a_class_group_denies_with_its_policy_id() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let err = f
        .call("alice", "t_write", json!({"counter": f.counter()}))
        .await
        .unwrap_err();
    match err.outcome() {
        Some(CallOutcome::Denied { policy_ids, .. }) => {
            assert_eq!(policy_ids, &["forbid-supersede-class"])
        }
        _ => panic!("{err}"),
    }
    assert!(f.runs().is_empty());
}

#[tokio::test]
async fn a_policy_on_the_payload_denies() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let err = f
        .call(
            "alice",
            "t_count",
            json!({"counter": f.counter(), "note": "forbidden"}),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err.outcome(), Some(CallOutcome::Denied { policy_ids, .. }) if policy_ids == &["bound-note-length"]),
        "{err}"
    );
    assert!(f.runs().is_empty());
}

#[tokio::test]
async fn a_transient_failure_is_retried_exactly_up_to_max_attempts_with_backoff() {
    let _host = host::shared().await;
    let f = Fixture::new();
    // Fails more often than the budget allows: exactly 3 attempts, then the error.
    let err = f
        .call(
            "alice",
            "t_flaky",
            json!({"counter": f.counter(), "fail_times": 10}),
        )
        .await
        .unwrap_err();
    match err.outcome() {
        Some(CallOutcome::Failed { .. }) => assert_eq!(err.report().map(|r| r.attempts()), Some(3)),
        _ => panic!("{err}"),
    }
    let runs = f.runs();
    assert_eq!(runs.len(), 3);
    let keys: std::collections::BTreeSet<&str> =
        runs.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(
        keys.len(),
        1,
        "one idempotency key across attempts: {runs:?}"
    );
    let call_id = runs[0].split(' ').next().unwrap();
    let o = outcome_of(&f.entries(), call_id);
    assert_eq!(o.result, CallResult::Failed);
    assert_eq!(o.attempts.len(), 3);
    assert!(o
        .attempts
        .iter()
        .all(|a| a.error_class.map(|c| c.as_str()) == Some("transient")));
    // Backoff 50 ms, then 100 ms (jitter only lengthens).
    let gap1 = o.attempts[1].start_ms - o.attempts[0].start_ms;
    let gap2 = o.attempts[2].start_ms - o.attempts[1].start_ms;
    assert!(gap1 >= 50 && gap2 >= 100, "gaps {gap1} ms, {gap2} ms");
    // The call's deadline is in its intent: 3 attempts of 5,000 ms, and the two delays at
    // their longest (50 ms and 100 ms, times the jitter's 1.5).
    let intent = f
        .entries()
        .into_iter()
        .find_map(|e| match e.record {
            Record::Intent(i) if i.call_id == call_id => Some(i),
            _ => None,
        })
        .expect("the intent");
    assert_eq!(intent.deadline_ms, Some(3 * 5_000 + 75 + 150));
}

#[tokio::test]
async fn a_transient_failure_then_success_returns_the_output() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let out = f
        .call(
            "alice",
            "t_flaky",
            json!({"counter": f.counter(), "fail_times": 2}),
        )
        .await
        .unwrap();
    assert_eq!(out, json!({"count": 3}));
    assert_eq!(f.runs().len(), 3);
}

#[tokio::test]
async fn a_permanent_failure_is_not_retried() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let err = f
        .call("alice", "t_fail", json!({"counter": f.counter()}))
        .await
        .unwrap_err();
    match err.report() {
        Some(r) if matches!(r.outcome(), CallOutcome::Failed { .. }) => {
            assert_eq!(r.attempts(), 1);
            let o = outcome_of(&f.entries(), r.call_id());
            assert_eq!(
                o.attempts[0].error_class.map(|c| c.as_str()),
                Some("permanent")
            );
            // The report names the very outcome entry that records the failure.
            let entry = f
                .entries()
                .into_iter()
                .find(|e| e.seq == r.outcome_entry().expect("an outcome").seq);
            assert_eq!(
                entry.map(|e| e.hash),
                r.outcome_entry().map(|e| e.hash.clone())
            );
        }
        _ => panic!("{err}"),
    }
    assert_eq!(err.kind(), CallKind::Failed);
}

#[tokio::test]
async fn proposals_that_deviate_from_the_schema_never_run() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let c = f.counter();
    let cases = [
        (
            "t_count",
            json!({"counter": c, "extra": 1}),
            "",
            "additionalProperties",
        ),
        ("t_count", json!({"counter": 5}), "/counter", "type"),
        ("t_count", json!({}), "", "required"),
        (
            "t_page",
            json!({"counter": c, "url": "not a url"}),
            "/url",
            "format",
        ),
        (
            "t_count",
            json!({"counter": c, "note": "this note is far too long for it"}),
            "/note",
            "maxLength",
        ),
    ];
    for (tool, payload, pointer, keyword) in cases {
        match f.call("alice", tool, payload.clone()).await {
            Err(NoOutput::Refused(CallError::InputRejected(v))) => {
                assert!(
                    v.iter()
                        .any(|v| v.pointer == pointer && v.keyword == keyword),
                    "{payload}: {v:?}"
                )
            }
            other => panic!("{payload}: {other:?}"),
        }
    }
    assert!(
        matches!(f.call("alice", "t_nope", json!({})).await, Err(NoOutput::Refused(CallError::UnknownTool(n))) if n == "t_nope")
    );
    assert!(f.runs().is_empty());
    assert!(
        f.entries().is_empty(),
        "a rejected proposal makes no call and no evidence"
    );
}

#[tokio::test]
async fn the_openai_strict_dialect_maps_null_optionals_to_absent_only_when_asked() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let payload = json!({"counter": f.counter(), "note": null});
    assert!(matches!(
        f.call("alice", "t_count", payload.clone()).await,
        Err(NoOutput::Refused(CallError::InputRejected(_)))
    ));
    let opts = CallOptions {
        openai_strict_nulls: true,
        ..CallOptions::default()
    };
    let r = f
        .runtime
        .call(&Principal::agent("alice"), "t_count", payload, opts)
        .await
        .unwrap();
    assert_eq!(r.output(), Some(&json!({"count": 1})));
    let bad = json!({"counter": null});
    let opts = CallOptions {
        openai_strict_nulls: true,
        ..CallOptions::default()
    };
    assert!(matches!(
        f.runtime
            .call(&Principal::agent("alice"), "t_count", bad, opts)
            .await,
        Err(CallError::InputRejected(_))
    ));
}

#[tokio::test]
async fn an_output_violation_is_recorded_and_never_returned_nor_retried() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let err = f
        .call("alice", "t_bad_output", json!({"counter": f.counter()}))
        .await
        .unwrap_err();
    let call_id = match err.outcome() {
        Some(CallOutcome::OutputRejected { violations }) => {
            assert!(violations
                .iter()
                .any(|v| v.keyword == "additionalProperties" || v.keyword == "required"));
            err.call_id().unwrap_or_default().to_string()
        }
        _ => panic!("{err}"),
    };
    assert_eq!(err.kind(), CallKind::OutputRejected);
    let o = outcome_of(&f.entries(), &call_id);
    assert_eq!(o.result, CallResult::OutputRejected);
    assert_eq!(o.attempts.len(), 1);
    assert!(o.output.is_none() && o.output_hash.is_some());
}

#[tokio::test]
async fn url_rules_cannot_be_fooled_and_one_bad_element_denies_the_bulk_call() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let c = f.counter();
    for url in [
        "https://www.linkedin.com/in/x",
        "https://LinkedIn.COM./",
        "https://user@linkedin.com/",
    ] {
        let err = f
            .call("alice", "t_page", json!({"url": url, "counter": c}))
            .await
            .unwrap_err();
        assert!(
            matches!(err.outcome(), Some(CallOutcome::Denied { policy_ids, .. }) if policy_ids == &["forbid-linkedin-pages"]),
            "{url}: {err}"
        );
    }
    for url in [
        "https://evil.com/?linkedin.com",
        "https://linkedin.com.evil.com/",
    ] {
        f.call("alice", "t_page", json!({"url": url, "counter": c}))
            .await
            .unwrap();
    }
    let bulk = json!({"counter": c, "urls": ["https://example.com/a", "https://www.linkedin.com/b", "https://example.org/"]});
    let err = f.call("alice", "t_bulk", bulk).await.unwrap_err();
    assert!(
        matches!(err.outcome(), Some(CallOutcome::Denied { policy_ids, .. }) if policy_ids == &["forbid-linkedin-pages"]),
        "{err}"
    );
    f.call(
        "alice",
        "t_bulk",
        json!({"counter": c, "urls": ["https://example.com/a", "https://example.org/"]}),
    )
    .await
    .unwrap();
    assert_eq!(f.runs().len(), 3, "only the allowed calls ran");
}

#[tokio::test]
async fn a_timeout_kills_the_tree_and_is_retried_within_budget() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let pidfile = f.dir.path().join("pid");
    let err = f
        .call(
            "alice",
            "t_sleep",
            json!({"ms": 10_000, "pidfile": pidfile.to_str().unwrap()}),
        )
        .await
        .unwrap_err();
    match err.outcome() {
        Some(CallOutcome::TimedOut { .. }) => {
            assert_eq!(err.report().map(|r| r.attempts()), Some(2));
            assert_eq!(err.kind(), CallKind::TimedOut);
        }
        _ => panic!("{err}"),
    }
    let pid = fs::read_to_string(&pidfile).unwrap();
    // SIGKILL is delivered asynchronously: allow the kernel a moment to finish the process.
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        !alive(pid.trim())
    });
    assert!(gone, "grandchild {pid} outlived the timeout");
}

/// Whether a process exists and is not a zombie (a killed orphan stays a zombie until init
/// reaps it).
fn alive(pid: &str) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

#[tokio::test]
async fn a_secret_never_reaches_the_ledger_the_logs_or_the_caller() {
    let _host = host::shared().await;
    let logs = logs::capture();
    let f = Fixture::new();
    // In the output (and on stderr): scrubbed before the output gate.
    let out = f
        .call("alice", "t_secret", json!({"name": "T_SECRET"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"leak": "[REDACTED]"}));
    // In the error message and stderr of a failure.
    let err = f
        .call(
            "alice",
            "t_secret",
            json!({"name": "T_SECRET", "fail": true}),
        )
        .await
        .unwrap_err();
    assert!(!err.to_string().contains(SECRET), "{err}");
    // A payload naming the secret's value is recorded scrubbed too.
    let _ = f.call("alice", "t_secret", json!({"name": SECRET})).await;
    drop(f.runtime.clone());
    for e in f.entries() {
        assert!(!serde_json::to_string(&e.record).unwrap().contains(SECRET));
    }
    for entry in fs::read_dir(f.dir.path()).unwrap() {
        let p = entry.unwrap().path();
        let bytes = fs::read(&p).unwrap();
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "{} holds the secret",
            p.display()
        );
    }
    let logged = logs.text();
    assert!(
        logged.contains("execute_tool"),
        "spans are logged: {logged}"
    );
    assert!(!logged.contains(SECRET), "the logs hold the secret");
}

/// Which form of `secret`, if any, `text` holds: as is in any case, percent- or form-decoded in
/// any case, hex, JSON `\u` escapes, or a base64 or base64url core at any alignment (the
/// characters made only of the secret's bits, whatever surrounds it).
fn form_of(text: &str, secret: &str) -> Option<&'static str> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use base64::Engine;
    let wanted = secret.to_lowercase();
    let decoded = |t: &str| {
        percent_encoding::percent_decode_str(t)
            .decode_utf8_lossy()
            .to_lowercase()
    };
    if text.to_lowercase().contains(&wanted) {
        return Some("as is");
    }
    if decoded(text).contains(&wanted) {
        return Some("percent-encoded");
    }
    if decoded(&text.replace('+', " ")).contains(&wanted) {
        return Some("form-encoded");
    }
    if text.to_lowercase().contains(&hex::encode(secret)) {
        return Some("hex");
    }
    let escaped: String = secret
        .encode_utf16()
        .map(|u| format!("\\u{u:04x}"))
        .collect();
    if text.to_lowercase().contains(&escaped) {
        return Some("JSON-escaped");
    }
    for offset in 0..3 {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(secret.as_bytes());
        let (first, end) = ((8 * offset).div_ceil(6), 8 * bytes.len() / 6);
        for encoded in [
            STANDARD_NO_PAD.encode(&bytes),
            URL_SAFE_NO_PAD.encode(&bytes),
        ] {
            if text.contains(&encoded[first..end]) {
                return Some("base64");
            }
        }
    }
    None
}

#[test]
fn the_form_check_sees_every_form() {
    let _host = host::shared_blocking();
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use base64::Engine;
    for secret in [SECRET, RICH_SECRET] {
        let pct: String = secret.bytes().map(|b| format!("%{b:02x}")).collect();
        for text in [
            secret.to_uppercase(),
            pct.clone(),
            pct.to_uppercase(),
            hex::encode_upper(secret),
            STANDARD.encode(format!("<{secret}>")),
            URL_SAFE_NO_PAD.encode(format!("<<{secret}")),
        ] {
            assert!(form_of(&text, secret).is_some(), "{text}");
        }
        assert_eq!(form_of("[REDACTED]", secret), None);
    }
}

#[tokio::test]
async fn a_secret_in_any_plausible_encoding_reaches_neither_the_caller_nor_the_ledger() {
    let _host = host::shared().await;
    let f = Fixture::new();
    for (name, secret) in [("T_SECRET", SECRET), ("T_SECRET_RICH", RICH_SECRET)] {
        // The tool prints every form on stderr and returns them as its output.
        let out = f
            .call("alice", "t_encoded", json!({ "name": name }))
            .await
            .unwrap();
        let forms = out["forms"].as_array().unwrap();
        assert_eq!(forms.len(), 17, "{out}");
        for form in forms {
            let form = form.as_str().unwrap();
            assert!(form.contains("[REDACTED]"), "{name}: {form}");
            assert_eq!(form_of(form, secret), None, "{name}: {form}");
        }
        // In a failure's message (and its stderr).
        let err = f
            .call("alice", "t_encoded", json!({ "name": name, "fail": true }))
            .await
            .unwrap_err();
        assert_eq!(form_of(&err.to_string(), secret), None, "{name}: {err}");
    }
    drop(f.runtime.clone());
    let mut attempts_with_stderr = 0;
    for e in f.entries() {
        let text = serde_json::to_string(&e.record).unwrap();
        if let Record::Outcome(o) = &e.record {
            attempts_with_stderr += o.attempts.iter().filter(|a| a.stderr.is_some()).count();
        }
        for secret in [SECRET, RICH_SECRET] {
            assert_eq!(form_of(&text, secret), None, "{text}");
        }
    }
    assert_eq!(attempts_with_stderr, 4, "every attempt recorded its stderr");
    for entry in fs::read_dir(f.dir.path()).unwrap() {
        let p = entry.unwrap().path();
        let text = String::from_utf8_lossy(&fs::read(&p).unwrap()).into_owned();
        for secret in [SECRET, RICH_SECRET] {
            assert_eq!(form_of(&text, secret), None, "{} holds it", p.display());
        }
    }
}

#[tokio::test]
async fn a_secret_straddling_the_stderr_bound_is_not_half_kept() {
    let _host = host::shared().await;
    use escepine_runtime::executor::process::DEFAULT_STDERR_LIMIT;
    let f = Fixture::new();
    for straddle in [1, 4, 9, 10, SECRET.len() - 1] {
        // The secret starts `straddle` bytes before the bound.
        let pad = DEFAULT_STDERR_LIMIT - straddle;
        let err = f
            .call(
                "alice",
                "t_secret",
                json!({ "name": "T_SECRET", "pad": pad, "fail": true }),
            )
            .await
            .unwrap_err();
        let Some(CallOutcome::Failed { .. }) = err.outcome() else {
            panic!("not a failure: {err:?}")
        };
        let call_id = err.call_id().unwrap_or_default();
        let outcome = outcome_of(&f.entries(), call_id);
        let stderr = outcome.attempts[0].stderr.as_deref().unwrap_or_default();
        assert!(stderr.starts_with(&"x".repeat(pad)), "{straddle}");
        // Right after the padding: the marker, or the truncation note — no part of the secret.
        let rest = &stderr[pad..];
        assert!(
            rest.starts_with("[REDACTED]") || rest.starts_with("\n[stderr truncated"),
            "{straddle}: {}",
            &rest[..rest.len().min(40)]
        );
        assert!(stderr.len() <= DEFAULT_STDERR_LIMIT + 100);
    }
    drop(f.runtime.clone());
    for entry in fs::read_dir(f.dir.path()).unwrap() {
        let p = entry.unwrap().path();
        let bytes = fs::read(&p).unwrap();
        let needle = format!("xxxx{}", &SECRET[..4]);
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{} holds the start of the secret",
            p.display()
        );
    }
}

/// A ledger that cannot be written: the call must stop before execution.
struct BrokenLedger;

impl Ledger for BrokenLedger {
    fn append(&self, _record: Record) -> BoxFuture<'_, Result<Committed, LedgerError>> {
        Box::pin(async { Err(LedgerError::unavailable("disk full")) })
    }
    fn entries(&self) -> Result<Vec<Entry>, LedgerError> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn a_ledger_that_cannot_be_written_stops_the_call_before_execution() {
    let _host = host::shared().await;
    let f = Fixture::with_ledger(|_| Arc::new(BrokenLedger));
    let err = f
        .call("alice", "t_count", json!({"counter": f.counter()}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, NoOutput::Refused(CallError::LedgerUnavailable(_))),
        "{err}"
    );
    assert!(
        f.runs().is_empty(),
        "nothing ran without its intent on record"
    );
}
