//! Stage 5: execute — attempts in the executor, each bounded by the [`Timeout`] wrapper,
//! repeated as the [`Retry`] policy decides.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::context::CallContext;
use super::ended::Ended;
use super::retry::Retry;
use crate::executor::{Attempted, Egress, ExecError, Executor, Invocation};
use crate::report::CallOutcome;
use crate::telemetry::metrics::metrics;
use crate::telemetry::{Stage, TraceContext};
use escepine_ledger::record::Attempt;
use tracing::Instrument as _;

/// The executor bounds each attempt itself (it knows how to kill what it started); the outer
/// bound around an attempt is a backstop this much later.
const BACKSTOP: Duration = Duration::from_millis(500);

/// One attempt, bounded: the executor enforces the attempt's timeout; an executor still
/// running [`BACKSTOP`] after it is cut off and the attempt counts as timed out.
pub(crate) struct Timeout<'a> {
    executor: &'a dyn Executor,
    backstop: Duration,
}

impl<'a> Timeout<'a> {
    /// The wrapper around `executor`.
    pub(crate) fn new(executor: &'a dyn Executor) -> Self {
        Self {
            executor,
            backstop: BACKSTOP,
        }
    }

    /// Run one attempt within `inv.timeout` plus the backstop.
    pub(crate) async fn call(&self, inv: Invocation<'_>) -> Attempted {
        let timeout = inv.timeout;
        match tokio::time::timeout(timeout + self.backstop, self.executor.attempt(inv)).await {
            Ok(r) => r,
            Err(_) => Attempted {
                result: Err(ExecError::TimedOut(timeout)),
                egress: Egress::default(),
            },
        }
    }
}

/// What stage 5 produced: every attempt as recorded, and the last one's output or the call's
/// end.
pub(crate) struct Executed {
    /// Each attempt, as the outcome records it.
    pub(crate) attempts: Vec<Attempt>,
    /// The output (not yet gated), or how the call ended (failed or timed out).
    pub(crate) result: Result<Value, Ended>,
}

/// The attempts of the call: each through the [`Timeout`] wrapper, the next one only when the
/// [`Retry`] policy says so, within the call's deadline.
pub(crate) async fn execute(
    cx: &CallContext<'_>,
    executor: &dyn Executor,
    payload: &Value,
) -> Executed {
    let record = &cx.tool.record;
    let timeout = Timeout::new(executor);
    let retry = Retry::new(record);
    let mut attempts = Vec::new();
    let mut attempt = 1u32;
    loop {
        let span = Stage::Attempt.span();
        span.record("escepine.attempt", attempt);
        let trace = TraceContext::passed_on(&span, cx.opts.trace.as_ref());
        let inv = Invocation {
            tool: record,
            payload,
            call_id: &cx.ids.call_id,
            idempotency_key: &cx.ids.idempotency_key,
            attempt,
            timeout: retry.attempt_timeout(),
            secrets: &cx.secrets,
            scrubber: &cx.scrubber,
            egress: &cx.egress,
            files: &cx.opts.files,
            caller_token: cx.opts.caller_token.as_ref(),
            trace: trace.as_ref(),
        };
        let start_ms = escepine_ledger::entry::now_ms();
        let started = Instant::now();
        let attempted = timeout.call(inv).instrument(span.clone()).await;
        metrics().stage(Stage::Attempt.as_str(), started.elapsed());
        if let Err(e) = &attempted.result {
            crate::telemetry::record_error(&span, e.class().as_str());
        }
        attempts.push(attempt_record(cx, &attempted, start_ms, started));
        let err = match attempted.result {
            Ok(e) => {
                return Executed {
                    attempts,
                    result: Ok(e.output),
                }
            }
            Err(err) => err,
        };
        match retry.retry(attempt, &err) {
            Some(delay) => {
                tracing::debug!(attempt, ?delay, error = %cx.scrubber.text(&err.to_string()), "retrying");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            None => {
                return Executed {
                    attempts,
                    result: Err(ended(cx, &err)),
                }
            }
        }
    }
}

/// The attempt as recorded: timings, error class and message, stderr, egress refusals and
/// admitted requests, all scrubbed.
fn attempt_record(
    cx: &CallContext<'_>,
    attempted: &Attempted,
    start_ms: u64,
    started: Instant,
) -> Attempt {
    let scrub = |t: &str| cx.scrubber.text(t);
    let result = &attempted.result;
    let stderr = match result {
        Ok(e) => e.stderr.as_str(),
        Err(e) => e.stderr(),
    };
    let (refusals, requests) = (&attempted.egress.refusals, &attempted.egress.requests);
    Attempt {
        start_ms,
        duration_us: started.elapsed().as_micros() as u64,
        error_class: result.as_ref().err().map(ExecError::class),
        error: result.as_ref().err().map(|e| scrub(&e.to_string())),
        stderr: (!stderr.is_empty()).then(|| scrub(stderr)),
        egress_refusals: refusals.iter().map(|r| scrub(r)).collect(),
        egress_requests: requests.iter().map(|r| scrub(r)).collect(),
        credential: attempted.egress.credential.clone(),
    }
}

/// How the call ends after its last attempt failed.
fn ended(cx: &CallContext<'_>, err: &ExecError) -> Ended {
    let message = cx.scrubber.text(&err.to_string());
    let outcome = match err {
        ExecError::TimedOut(_) => CallOutcome::TimedOut {
            timeout_ms: cx.tool.record.timeout_ms(),
        },
        _ => CallOutcome::Failed {
            last_error: message.clone(),
        },
    };
    Ended {
        outcome,
        output_hash: None,
        error: Some(message),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    use escepine_contract::RetryPolicy;
    use serde_json::json;

    use super::*;
    use crate::executor::Execution;
    use crate::stages::context::CallOptions;
    use crate::stages::testing::{alice, builder, context, loaded, n_schema, Fixed};
    use escepine_ledger::record::ErrorClass;
    use escepine_ledger::store::BoxFuture;

    /// Answers attempt `i` with the `i`-th script entry (the last one repeats); `None` never
    /// answers.
    struct Scripted {
        script: Vec<Option<Result<Execution, ExecError>>>,
        calls: AtomicU32,
        seen: Mutex<Vec<(u32, Duration, String)>>,
    }

    impl Scripted {
        fn new(script: Vec<Option<Result<Execution, ExecError>>>) -> Self {
            Self {
                script,
                calls: AtomicU32::new(0),
                seen: Mutex::default(),
            }
        }
    }

    impl Executor for Scripted {
        fn execute<'a>(
            &'a self,
            inv: Invocation<'a>,
        ) -> BoxFuture<'a, Result<Execution, ExecError>> {
            let i = self.calls.fetch_add(1, Ordering::SeqCst) as usize;
            self.seen.lock().unwrap().push((
                inv.attempt,
                inv.timeout,
                inv.secrets.get("KEY").cloned().unwrap_or_default(),
            ));
            let step = self.script[i.min(self.script.len() - 1)].clone();
            Box::pin(async move {
                match step {
                    Some(r) => r,
                    None => std::future::pending().await,
                }
            })
        }
    }

    fn ok(n: i64) -> Option<Result<Execution, ExecError>> {
        Some(Ok(Execution {
            output: json!({"n": n}),
            stderr: String::new(),
        }))
    }

    fn transient(stderr: &str) -> Option<Result<Execution, ExecError>> {
        Some(Err(ExecError::Transient {
            message: "busy s3cr3t".into(),
            stderr: stderr.into(),
        }))
    }

    #[tokio::test]
    async fn transient_failures_are_retried_with_the_same_ids_and_recorded_scrubbed() {
        let rec = builder("t", n_schema(), n_schema())
            .secrets(["KEY"])
            .retry(RetryPolicy {
                max_attempts: 3,
                backoff_ms: 1,
            })
            .registered();
        let tool = loaded(rec);
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(vec![("KEY", "s3cr3t")]));
        let exec = Scripted::new(vec![transient("oops s3cr3t"), ok(7)]);
        let done = execute(&cx, &exec, &json!({"n": 1})).await;
        assert_eq!(done.result.ok(), Some(json!({"n": 7})));
        assert_eq!(done.attempts.len(), 2);
        let first = &done.attempts[0];
        assert_eq!(first.error_class, Some(ErrorClass::Transient));
        for text in [first.error.as_deref(), first.stderr.as_deref()] {
            let text = text.expect("recorded");
            assert!(!text.contains("s3cr3t"), "{text}");
        }
        assert_eq!(done.attempts[1].error_class, None);
        let seen = exec.seen.lock().unwrap().clone();
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2]);
        // The tool gets its secret; only what is recorded is scrubbed.
        assert!(seen.iter().all(|s| s.2 == "s3cr3t"));
    }

    #[tokio::test]
    async fn the_budget_and_permanent_failures_end_the_call_failed() {
        let rec = builder("t", n_schema(), n_schema())
            .retry(RetryPolicy {
                max_attempts: 2,
                backoff_ms: 1,
            })
            .registered();
        let tool = loaded(rec);
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(Vec::new()));
        let exec = Scripted::new(vec![transient("")]);
        let done = execute(&cx, &exec, &json!({"n": 1})).await;
        assert_eq!(done.attempts.len(), 2);
        let ended = done.result.expect_err("failed");
        assert!(
            matches!(&ended.outcome, CallOutcome::Failed { last_error } if last_error.contains("busy"))
        );

        let permanent = Some(Err(ExecError::Permanent {
            message: "bad".into(),
            stderr: String::new(),
        }));
        let exec = Scripted::new(vec![permanent, ok(1)]);
        let done = execute(&cx, &exec, &json!({"n": 1})).await;
        assert_eq!(
            done.attempts.len(),
            1,
            "a permanent failure is never retried"
        );
        assert!(done.result.is_err());
    }

    #[tokio::test]
    async fn an_executor_that_never_answers_is_cut_off_by_the_backstop_and_times_out() {
        let rec = builder("t", n_schema(), n_schema())
            .timeout_ms(20)
            .registered();
        let tool = loaded(rec);
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(Vec::new()));
        let exec = Scripted::new(vec![None]);
        let started = Instant::now();
        let done = execute(&cx, &exec, &json!({"n": 1})).await;
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(20) + BACKSTOP, "{took:?}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        let ended = done.result.expect_err("timed out");
        assert_eq!(ended.outcome, CallOutcome::TimedOut { timeout_ms: 20 });
        assert_eq!(done.attempts[0].error_class, Some(ErrorClass::Timeout));
        // The attempt's bound is the timeout, less what the deadline already used.
        let bound = exec.seen.lock().unwrap()[0].1;
        assert!(
            bound <= Duration::from_millis(20) && bound > Duration::from_millis(15),
            "{bound:?}"
        );
    }
}
