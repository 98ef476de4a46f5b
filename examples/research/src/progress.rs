//! Progress as the run goes: one line per SOP event (a [`RunObserver`]) and per extra read, and
//! the steps' outcome entries, which the planner cites in the deliverable.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use escepine_ledger::entry::Committed;
use escepine_ledger::record::Transition;
use escepine_runtime::sop::events::Event;
use escepine_runtime::sop::RunObserver;

/// Prints progress lines, timed from the program's start.
#[derive(Debug, Clone)]
pub struct Progress {
    start: Instant,
}

impl Progress {
    /// Lines timed from now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
        }
    }

    /// Print one progress line.
    pub fn line(&self, text: impl std::fmt::Display) {
        println!("[{:>6.2}s] {text}", self.start.elapsed().as_secs_f64());
    }
}

/// A step that succeeded: its call and the hash of its outcome entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepEvidence {
    /// The call id.
    pub call_id: String,
    /// The outcome entry's hash.
    pub outcome: String,
}

/// The outcome entries of the run's steps, by state (the latest visit).
pub type Steps = Arc<Mutex<HashMap<String, StepEvidence>>>;

/// Read the steps recorded so far.
pub fn step(steps: &Steps, state: &str) -> Option<StepEvidence> {
    steps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(state)
        .cloned()
}

/// The observer: prints each SOP event as it is committed and keeps the steps' evidence.
pub struct Observer {
    progress: Progress,
    steps: Steps,
}

impl Observer {
    /// An observer printing through `progress` and recording into `steps`.
    pub fn new(progress: Progress, steps: Steps) -> Self {
        Self { progress, steps }
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

impl RunObserver for Observer {
    fn on_transition(&self, t: &Transition, entry: &Committed) {
        let state = t.state.as_deref().unwrap_or("-");
        let event = match Event::parse(t) {
            Ok(Some(e)) => e,
            _ => {
                self.progress.line(format_args!(
                    "event {} at {state} (#{})",
                    t.event, entry.seq
                ));
                return;
            }
        };
        let text = match event {
            Event::RunStarted(s) => format!(
                "run {} started: SOP {}@{} for {}",
                short(&t.run_id),
                s.sop_id,
                s.sop_version,
                s.principal
            ),
            Event::StepStarted(s) => format!(
                "step {state:<10} → {} (visit {}{})",
                s.tool,
                s.visit,
                if s.per_url_authorization {
                    ", each URL authorized"
                } else {
                    ""
                }
            ),
            Event::StepSucceeded(s) => {
                self.steps
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(
                        state.to_string(),
                        StepEvidence {
                            call_id: s.call_id.clone(),
                            outcome: s.outcome.clone(),
                        },
                    );
                format!(
                    "step {state:<10} ✓ ok, outcome entry {}…",
                    short(&s.outcome)
                )
            }
            Event::StepFailed(f) => format!(
                "step {state:<10} ✗ {:?}: {} (on failure: {})",
                f.failure.kind,
                f.failure.message,
                f.on_failure.as_str()
            ),
            Event::Decision(d) => format!("decide {state:<8} → {}", d.next),
            Event::Transition(m) => format!("move {} → {}", m.from, m.to),
            Event::RunEnded(r) => format!("run ended: {}", r.status.as_str()),
            other => format!("{} at {state}", other.name()),
        };
        self.progress.line(text);
    }
}
