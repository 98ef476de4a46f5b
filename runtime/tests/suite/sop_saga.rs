//! The SOP engine end to end: real tool processes talking HTTP to a loopback store, a real
//! SQLite ledger, the Cedar policies of `tests/fixtures/sop`.
//!
//! Saga compensation (reverse order, by class), supersede, DENY, `halt_and_escalate` with its
//! hook, cancellation, a failing inverse, decisions and constraints.

use crate::support::host;
use escepine_testkit::sop;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use escepine_contract::Principal;
use escepine_ledger::entry::Entry;
use escepine_ledger::error::LedgerError;
use escepine_ledger::record::{CallResult, Decision, Intent, Outcome, Record};
use escepine_ledger::sqlite::SqliteLedger;
use escepine_ledger::store::{Durability, Ledger};
use escepine_runtime::sop::events::{self, Event, FailureKind, Undo};
use escepine_runtime::sop::{
    Engine, Escalation, EscalationHook, EscalationReason, FnPlanner, Planner, PlannerError,
    RunOptions, RunStatus, ScriptedPlanner, SopRunError, StepRequest,
};
use escepine_runtime::CallKind;
use escepine_runtime::Runtime;
use escepine_testkit::sop::{item, key, Store};
use serde_json::{json, Value};

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    runtime: Runtime,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::start();
        let ledger: Arc<dyn Ledger> =
            Arc::new(SqliteLedger::open(dir.path().join("ledger.db"), Durability::Normal).unwrap());
        let runtime = sop::runtime(&store, ledger);
        Self {
            _dir: dir,
            store,
            runtime,
        }
    }

    fn engine(&self, sop: &str, planner: impl Planner + 'static) -> Engine {
        Engine::new(self.runtime.clone(), sop::sop(sop), Arc::new(planner)).unwrap()
    }

    fn entries(&self) -> Vec<Entry> {
        self.runtime.ledger().entries().unwrap()
    }

    fn events(&self, run_id: &str) -> Vec<Event> {
        sop::transitions(&self.entries(), run_id)
            .iter()
            .map(|t| Event::parse(t).unwrap().unwrap())
            .collect()
    }

    fn intents(&self, run_id: &str) -> Vec<Intent> {
        self.entries()
            .into_iter()
            .filter_map(|e| match e.record {
                Record::Intent(i) if i.run_id.as_deref() == Some(run_id) => Some(i),
                _ => None,
            })
            .collect()
    }

    fn outcome(&self, call_id: &str) -> (Outcome, String) {
        self.entries()
            .into_iter()
            .find_map(|e| match e.record {
                Record::Outcome(o) if o.call_id == call_id => Some((o, e.hash)),
                _ => None,
            })
            .unwrap()
    }
}

fn alice() -> Principal {
    Principal::agent("alice")
}

#[tokio::test]
async fn two_writes_then_a_failure_compensate_in_reverse_order() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let planner = ScriptedPlanner::new()
        .every("put_a", item(&f.store, "a", "first"))
        .every("put_b", item(&f.store, "b", "second"))
        .every("boom", json!({"reason": "the third step fails"}));
    let out = f.engine("two_writes", planner).run(&alice()).await.unwrap();

    assert_eq!(out.status, RunStatus::Compensated);
    assert_eq!(out.state.as_deref(), Some("boom"));
    let failure = out.failure.as_ref().unwrap();
    assert_eq!(failure.kind, FailureKind::Call(CallKind::Failed));
    let failed_call = failure
        .call_id
        .as_deref()
        .expect("the failed call is named");
    assert_eq!(
        failure.outcome.as_ref(),
        Some(&f.outcome(failed_call).1),
        "the failed step keeps its call's outcome entry hash"
    );
    assert!(
        f.store.items().is_empty(),
        "the store ends as before the run"
    );
    assert_eq!(
        f.store.log(),
        ["PUT a", "PUT b", "DELETE b", "DELETE a"],
        "inverses in reverse order"
    );
    assert!(f.store.applied().values().all(|&n| n == 1));
    assert_eq!(f.store.unkeyed_writes(), 0);

    // The ledger: the inverses are governed calls naming what they compensate, in reverse order.
    let intents = f.intents(&out.run_id);
    let step = |s: &str| {
        intents
            .iter()
            .find(|i| i.step.as_deref() == Some(s) && i.compensates.is_none())
            .unwrap()
            .clone()
    };
    let (a, b) = (step("put_a"), step("put_b"));
    let inverses: Vec<&Intent> = intents.iter().filter(|i| i.compensates.is_some()).collect();
    assert_eq!(inverses.len(), 2);
    assert_eq!(inverses[0].compensates.as_ref(), Some(&b.call_id));
    assert_eq!(inverses[1].compensates.as_ref(), Some(&a.call_id));
    for inv in &inverses {
        assert_eq!(inv.tool_id, "s_delete");
        assert_eq!(inv.decision, Decision::Allow);
        assert_eq!(f.outcome(&inv.call_id).0.result, CallResult::Ok);
    }
    assert_eq!(inverses[0].payload, key(&f.store, "b"));

    let names = sop::event_names(&f.entries(), &out.run_id);
    assert_eq!(
        names,
        [
            "run_started put_a",
            "step_started put_a",
            "step_succeeded put_a",
            "transition put_b",
            "step_started put_b",
            "step_succeeded put_b",
            "transition boom",
            "step_started boom",
            "step_failed boom",
            "compensation_started boom",
            "compensated put_b",
            "compensated put_a",
            "run_ended boom",
        ]
    );
    let events = f.events(&out.run_id);
    match &events[0] {
        Event::RunStarted(s) => {
            assert_eq!(
                (s.sop_id.as_str(), s.sop_version.as_str()),
                ("two_writes", "1.0.0")
            );
            assert_eq!(s.principal, r#"Agent::"alice""#);
        }
        e => panic!("{e:?}"),
    }
    match events.last().unwrap() {
        Event::RunEnded(e) => assert_eq!(e.status, RunStatus::Compensated),
        e => panic!("{e:?}"),
    }
    escepine_ledger::verify::verify_entries(&f.entries(), None).unwrap();
}

#[tokio::test]
async fn a_supersede_step_is_marked_superseded_not_removed() {
    let _host = host::shared().await;
    let f = Fixture::new();
    f.store.seed("doc", "v1");
    let planner = ScriptedPlanner::new()
        .every("put_a", item(&f.store, "a", "x"))
        .every("version_doc", item(&f.store, "doc", "v2"))
        .every("boom", json!({}));
    let out = f.engine("supersede", planner).run(&alice()).await.unwrap();

    assert_eq!(out.status, RunStatus::Compensated);
    let items = f.store.items();
    assert_eq!(
        items.get("doc"),
        Some(&vec!["v1".to_string(), "v2".to_string()]),
        "nothing removed"
    );
    assert!(
        !items.contains_key("a"),
        "the compensatable write was undone"
    );

    let version_call = f
        .intents(&out.run_id)
        .into_iter()
        .find(|i| i.step.as_deref() == Some("version_doc"))
        .unwrap();
    let (_, outcome_hash) = f.outcome(&version_call.call_id);
    let events = f.events(&out.run_id);
    let plan = events
        .iter()
        .find_map(|e| match e {
            Event::CompensationStarted(c) => Some(c.plan.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        plan.iter().map(|p| p.undo.clone()).collect::<Vec<_>>(),
        [
            Undo::Supersede,
            Undo::Inverse {
                inverse: "s_delete".into()
            }
        ]
    );
    let superseded = events
        .iter()
        .find_map(|e| match e {
            Event::Superseded(s) => Some(s.clone()),
            _ => None,
        })
        .expect("a superseded event");
    assert_eq!(superseded.call_id, version_call.call_id);
    assert_eq!(superseded.outcome, outcome_hash);
    assert_eq!(superseded.tool, "s_version");
    // Supersede first (it was the later step), then the inverse of the first write.
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Superseded(_) | Event::Compensated(_) => Some(e.name()),
            _ => None,
        })
        .collect();
    assert_eq!(order, [events::SUPERSEDED, events::COMPENSATED]);
}

#[tokio::test]
async fn a_denied_step_halts_with_the_policy_ids_and_the_tool_never_runs() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let planner = ScriptedPlanner::new()
        .every("put_a", item(&f.store, "a", "x"))
        .every("put_forbidden", item(&f.store, "forbidden", "x"));
    let out = f.engine("denied", planner).run(&alice()).await.unwrap();

    assert_eq!(out.status, RunStatus::Halted);
    assert_eq!(out.state.as_deref(), Some("put_forbidden"));
    let failure = out.failure.unwrap();
    assert_eq!(failure.kind, FailureKind::Call(CallKind::Denied));
    assert_eq!(failure.policy_ids, ["no-forbidden-key"]);
    assert_eq!(f.store.log(), ["PUT a"], "the denied tool was not invoked");
    assert_eq!(f.store.requests(), 1);

    let denied = f
        .intents(&out.run_id)
        .into_iter()
        .find(|i| i.step.as_deref() == Some("put_forbidden"))
        .unwrap();
    assert_eq!(denied.decision, Decision::Deny);
    assert_eq!(denied.policy_ids, ["no-forbidden-key"]);
    let (o, outcome_hash) = f.outcome(&denied.call_id);
    assert_eq!(o.result, CallResult::Denied);
    assert_eq!(
        failure.outcome.as_ref(),
        Some(&outcome_hash),
        "the failure names the outcome entry of the denied call"
    );
    assert!(
        o.attempts.is_empty(),
        "a DENY is never attempted, never retried"
    );
    let step_failed = f
        .events(&out.run_id)
        .into_iter()
        .find_map(|e| match e {
            Event::StepFailed(s) => Some(s),
            _ => None,
        })
        .unwrap();
    assert_eq!(step_failed.failure.policy_ids, ["no-forbidden-key"]);
    assert_eq!(step_failed.failure.call_id.as_ref(), Some(&denied.call_id));
    assert_eq!(step_failed.failure.outcome.as_ref(), Some(&outcome_hash));
}

#[tokio::test]
async fn a_per_url_step_is_authorized_on_its_url() {
    let _host = host::shared().await;
    let f = Fixture::new();
    // `put_a` requires per-URL authorization; the policies keep store writes on loopback.
    let planner = ScriptedPlanner::new().every(
        "put_a",
        json!({"store": "http://store.example.com:8080", "key": "a", "value": "x"}),
    );
    let out = f.engine("five_steps", planner).run(&alice()).await.unwrap();
    assert_eq!(
        out.status,
        RunStatus::Compensated,
        "nothing completed to undo"
    );
    let failure = out.failure.unwrap();
    assert_eq!(failure.kind, FailureKind::Call(CallKind::Denied));
    assert_eq!(failure.policy_ids, ["store-writes-stay-on-loopback"]);
    assert_eq!(f.store.requests(), 0);
}

#[derive(Default)]
struct Hook(Mutex<Vec<Escalation>>);

impl EscalationHook for Hook {
    fn escalated(&self, e: &Escalation) {
        self.0.lock().unwrap().push(e.clone());
    }
}

#[tokio::test]
async fn halt_and_escalate_fires_the_hook_with_a_structured_record() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let planner = ScriptedPlanner::new()
        .every("put_a", item(&f.store, "a", "x"))
        .every("boom", json!({"reason": "escalate me"}));
    let hook = Arc::new(Hook::default());
    let engine = Engine::builder(f.runtime.clone(), sop::sop("escalate"), Arc::new(planner))
        .escalation_hook(hook.clone())
        .build()
        .unwrap();
    let mut subscriber = engine.subscribe_escalations();
    let out = engine.run(&alice()).await.unwrap();

    assert_eq!(out.status, RunStatus::Escalated);
    let seen = hook.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let e = &seen[0];
    assert_eq!(e.run_id, out.run_id);
    assert_eq!(e.sop_id, "escalate");
    assert_eq!(e.reason, EscalationReason::StepFailed);
    assert_eq!(e.state.as_deref(), Some("boom"));
    assert_eq!(
        e.failure.as_ref().unwrap().kind,
        FailureKind::Call(CallKind::Failed)
    );
    assert!(e.unfinished.is_empty());
    assert_eq!(subscriber.try_recv().unwrap(), *e);
    assert_eq!(out.escalation.as_ref(), Some(e));
    // The record is in the ledger too, and nothing was undone (escalate is not compensate).
    let recorded = f
        .events(&out.run_id)
        .into_iter()
        .find_map(|ev| match ev {
            Event::Escalated(r) => Some(r),
            _ => None,
        })
        .unwrap();
    assert_eq!(&recorded, e);
    assert_eq!(f.store.log(), ["PUT a"]);
}

/// Proposes from a script, but waits forever on `wait` (after telling the test it got there).
struct WaitingPlanner {
    script: ScriptedPlanner,
    reached: Arc<tokio::sync::Notify>,
}

impl WaitingPlanner {
    /// Writes `a` and `b` to `store`, then waits; the `Notify` fires when it waits.
    fn writing_a_and_b(store: &Store) -> (Self, Arc<tokio::sync::Notify>) {
        let reached = Arc::new(tokio::sync::Notify::new());
        let planner = Self {
            script: ScriptedPlanner::new()
                .every("put_a", item(store, "a", "x"))
                .every("put_b", item(store, "b", "y")),
            reached: Arc::clone(&reached),
        };
        (planner, reached)
    }
}

impl Planner for WaitingPlanner {
    fn propose<'a>(
        &'a self,
        request: &'a StepRequest<'a>,
    ) -> escepine_ledger::store::BoxFuture<'a, Result<Value, PlannerError>> {
        if request.state == "wait" {
            self.reached.notify_one();
            return Box::pin(std::future::pending());
        }
        self.script.propose(request)
    }
}

#[tokio::test]
async fn cancelling_a_run_compensates_it() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let (planner, reached) = WaitingPlanner::writing_a_and_b(&f.store);
    let engine = f.engine("cancel", planner);
    let handle = engine.start(alice(), RunOptions::default());
    tokio::time::timeout(Duration::from_secs(30), reached.notified())
        .await
        .unwrap();
    assert_eq!(f.store.items().len(), 2);
    handle.cancel();
    let out = tokio::time::timeout(Duration::from_secs(30), handle.wait())
        .await
        .unwrap()
        .unwrap();

    assert_eq!(out.status, RunStatus::Cancelled);
    assert!(f.store.items().is_empty());
    assert_eq!(f.store.log(), ["PUT a", "PUT b", "DELETE b", "DELETE a"]);
    let started = f
        .events(&out.run_id)
        .into_iter()
        .find_map(|e| match e {
            Event::CompensationStarted(c) => Some(c),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        started.reason,
        escepine_runtime::sop::events::CompensationReason::Cancelled
    );
    assert_eq!(started.plan.len(), 2);
}

#[tokio::test]
async fn a_failing_inverse_is_retried_then_the_run_escalates_listing_what_is_unfinished() {
    let _host = host::shared().await;
    let f = Fixture::new();
    // put_b's inverse fails once (503) and succeeds on its retry; put_a's inverse keeps failing.
    let planner = ScriptedPlanner::new()
        .every("put_a", item(&f.store, "stuck-a", "x"))
        .every("put_b", item(&f.store, "flaky-b", "y"))
        .every("boom", json!({}));
    let hook = Arc::new(Hook::default());
    let engine = Engine::builder(f.runtime.clone(), sop::sop("two_writes"), Arc::new(planner))
        .escalation_hook(hook.clone())
        .build()
        .unwrap();
    let out = engine.run(&alice()).await.unwrap();

    assert_eq!(out.status, RunStatus::Escalated);
    assert_eq!(
        f.store.items().keys().collect::<Vec<_>>(),
        ["stuck-a"],
        "flaky-b was undone on its retry"
    );
    let e = out.escalation.unwrap();
    assert_eq!(e.reason, EscalationReason::CompensationFailed);
    assert_eq!(e.state.as_deref(), Some("put_a"));
    assert_eq!(e.unfinished.len(), 1);
    assert_eq!(e.unfinished[0].state, "put_a");
    assert_eq!(
        e.failure.as_ref().unwrap().kind,
        FailureKind::Call(CallKind::Failed)
    );
    assert_eq!(hook.0.lock().unwrap().len(), 1);

    // Each inverse is one governed call; the runtime retried it per s_delete's retry policy.
    let intents = f.intents(&out.run_id);
    let inverse = |k: &str| {
        intents
            .iter()
            .find(|i| i.compensates.is_some() && i.payload["key"] == k)
            .unwrap()
            .call_id
            .clone()
    };
    let (flaky, _) = f.outcome(&inverse("flaky-b"));
    assert_eq!((flaky.result, flaky.attempts.len()), (CallResult::Ok, 2));
    let (stuck, _) = f.outcome(&inverse("stuck-a"));
    assert_eq!(
        (stuck.result, stuck.attempts.len()),
        (CallResult::Failed, 3)
    );
    let names = sop::event_names(&f.entries(), &out.run_id);
    assert_eq!(
        &names[names.len() - 4..],
        [
            "compensated put_b",
            "compensation_failed put_a",
            "escalated put_a",
            "run_ended boom",
        ]
    );
}

#[tokio::test]
async fn decisions_branch_on_outputs_and_constraints_bound_proposals() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let store = f.store.clone();
    let planner = FnPlanner(move |r: &StepRequest<'_>| match r.state {
        "put_a" => Ok(item(&store, "a", "short")),
        "read_a" => {
            // The planner sees the run so far.
            assert_eq!(r.data["put_a"]["output"]["version"], 1);
            Ok(key(&store, "a"))
        }
        s => Err(PlannerError::Other(format!("unexpected state {s}"))),
    });
    let out = f.engine("decide", planner).run(&alice()).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.state.as_deref(), Some("done"));
    assert_eq!(out.data["read_a"]["output"]["value"], "short");
    let decision = f
        .events(&out.run_id)
        .into_iter()
        .find_map(|e| match e {
            Event::Decision(d) => Some(d),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (decision.branch, decision.next.as_str()),
        (Some(0), "read_a")
    );

    // A proposal outside the step's constraint fails the step before any call.
    let g = Fixture::new();
    let planner = ScriptedPlanner::new().every("put_a", item(&g.store, "a", "far too long"));
    let out = g.engine("decide", planner).run(&alice()).await.unwrap();
    assert_eq!(out.status, RunStatus::Halted);
    let failure = out.failure.unwrap();
    assert_eq!(failure.kind, FailureKind::Constraint);
    assert!(failure.message.contains("/value"), "{}", failure.message);
    assert_eq!(g.store.requests(), 0);
    assert!(g.intents(&out.run_id).is_empty());
}

#[tokio::test]
async fn an_engine_refuses_an_sop_that_does_not_fit_the_registry() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let mut sop = sop::sop("escalate");
    if let Some(escepine_registry::sop::State::Execution(e)) = sop.states.get_mut("put_a") {
        e.tool = "s_nope".into();
    }
    let err = Engine::new(f.runtime.clone(), sop, Arc::new(ScriptedPlanner::new()))
        .err()
        .unwrap();
    assert!(err.to_string().contains("s_nope"), "{err}");
}

/// Types shaped like those `registry-build` generates for the fixtures (a `Tool` per record, a
/// `SopStep` per execution state), written out so the test needs no build script.
mod typed {
    use escepine_contract::{
        CedarAction, Contract, Endpoint, FailureOutcome, Filesystem, RetryPolicy, SideEffectClass,
        SopStep, Tool, Transport,
    };
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct PutInput {
        pub store: String,
        pub key: String,
        pub value: String,
    }

    #[derive(Debug, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct PutOutput {
        pub key: String,
        pub version: u64,
    }

    #[derive(Debug, Default, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct FailInput {
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }

    pub struct Action;
    impl CedarAction for Action {
        const ACTION_ID: &'static str = "s_put";
        const IS_GROUP: bool = false;
    }

    const fn contract(id: &'static str, class: SideEffectClass) -> Contract {
        Contract {
            id,
            version: "1.0.0",
            title: None,
            description: "",
            open_world: None,
            cedar_action: id,
            action_groups: &[],
            class,
            compensation: None,
            timeout_ms: 5000,
            retry: RetryPolicy {
                max_attempts: 1,
                backoff_ms: 0,
            },
            on_failure: &[FailureOutcome::Compensate],
            endpoint: Endpoint {
                transport: Transport::StdioJson,
                command: "escepine-testtool",
                args: &[],
                sha256: None,
                image: None,
                definition_sha256: None,
                url: None,
                tool: None,
            },
            secrets: &[],
            egress: &[],
            filesystem: Filesystem::Workspace,
            isolation: escepine_contract::Isolation::Namespaces,
            read_only: &[],
            input_schema: "{}",
            output_schema: "{}",
        }
    }

    pub struct SPut;
    impl Tool for SPut {
        type Input = PutInput;
        type Output = PutOutput;
        type Action = Action;
        const CONTRACT: Contract = contract("s_put", SideEffectClass::Compensatable);
    }

    pub struct SFail;
    impl Tool for SFail {
        type Input = FailInput;
        type Output = FailInput;
        type Action = Action;
        const CONTRACT: Contract = contract("s_fail", SideEffectClass::ReadOnly);
    }

    macro_rules! step {
        ($name:ident, $tool:ty, $state:literal, $next:literal) => {
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl SopStep for $name {
                type Tool = $tool;
                const SOP_ID: &'static str = "two_writes";
                const STATE: &'static str = $state;
                const ON_FAILURE: FailureOutcome = FailureOutcome::Compensate;
                const NEXT: &'static str = $next;
                const REQUIRE_PER_URL_AUTHORIZATION: bool = false;
                const CONSTRAINTS: &'static [(&'static str, &'static str)] = &[];
            }
        };
    }
    step!(PutA, SPut, "put_a", "put_b");
    step!(PutB, SPut, "put_b", "boom");
    step!(Boom, SFail, "boom", "done");
}

#[tokio::test]
async fn a_typed_planner_proposes_each_step_as_its_tool_input() {
    let _host = host::shared().await;
    use escepine_runtime::sop::TypedPlanner;
    use typed::{Boom, FailInput, PutA, PutB, PutInput};

    let f = Fixture::new();
    let url = f.store.url.clone();
    let put = move |key: &str| PutInput {
        store: url.clone(),
        key: key.into(),
        value: "typed".into(),
    };
    let put_b = put.clone();
    let planner = TypedPlanner::new()
        .step(PutA, move |_| Ok(put("a")))
        .step(PutB, move |_| Ok(put_b("b")))
        .step(Boom, |_| Ok(FailInput::default()));
    let out = f.engine("two_writes", planner).run(&alice()).await.unwrap();
    assert_eq!(out.status, RunStatus::Compensated);
    assert_eq!(out.data["put_b"]["input"]["value"], "typed");
    assert_eq!(f.store.log(), ["PUT a", "PUT b", "DELETE b", "DELETE a"]);

    // A step type of another SOP is refused at run time (its state name matches by accident).
    let g = Fixture::new();
    let planner = TypedPlanner::new().step(PutA, |_| Err(PlannerError::Other("unused".into())));
    let out = g.engine("supersede", planner).run(&alice()).await.unwrap();
    let failure = out.failure.unwrap();
    assert_eq!(failure.kind, FailureKind::Planner);
    assert!(
        failure.message.contains("belongs to SOP `two_writes`"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn a_run_being_driven_cannot_be_resumed_elsewhere_until_its_driver_stops() {
    let _host = host::shared().await;
    let f = Fixture::new();
    let (planner, reached) = WaitingPlanner::writing_a_and_b(&f.store);
    let engine = f.engine("cancel", planner);
    let handle = engine.start(alice(), RunOptions::default());
    let run_id = handle.run_id().to_string();
    tokio::time::timeout(Duration::from_secs(30), reached.notified())
        .await
        .unwrap();

    // A second driver on its own handle of the same ledger file (as another process would
    // open it) is refused while the first holds the run, and so is one in this process.
    let other_ledger: Arc<dyn Ledger> =
        Arc::new(SqliteLedger::open(f._dir.path().join("ledger.db"), Durability::Normal).unwrap());
    let other = Engine::new(
        sop::runtime(&f.store, other_ledger),
        sop::sop("cancel"),
        Arc::new(ScriptedPlanner::new()),
    )
    .unwrap();
    let before = f.entries().len();
    for err in [
        other.resume(&run_id).await.unwrap_err(),
        f.engine("cancel", ScriptedPlanner::new())
            .resume(&run_id)
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(&err, SopRunError::Ledger(LedgerError::RunLeased(id)) if *id == run_id),
            "{err}"
        );
    }
    assert_eq!(
        f.entries().len(),
        before,
        "a refused driver records nothing"
    );

    // Once the first driver has stopped, the run is free: resuming it returns its outcome.
    handle.cancel();
    let out = tokio::time::timeout(Duration::from_secs(30), handle.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status, RunStatus::Cancelled);
    let again = other.resume(&run_id).await.unwrap();
    assert_eq!(again.status, RunStatus::Cancelled);
}
