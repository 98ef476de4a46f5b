//! The retry policy of one call, as an object (the shape of tower's `retry::Policy`): it
//! decides, per failed attempt, whether to try again and after how long, and bounds each
//! attempt by what the call's deadline leaves.

use std::time::{Duration, Instant};

use escepine_contract::RetryPolicy;
use escepine_registry::record::ToolRecord;
use rand::Rng;

use crate::executor::ExecError;

/// The call's overall deadline: every attempt at the tool's timeout plus every retry delay at
/// its longest. Recorded in the intent and enforced by [`Retry`].
pub(crate) fn deadline(record: &ToolRecord) -> Duration {
    Duration::from_millis(record.retry().deadline_ms(record.timeout_ms()))
}

/// The retry policy of one call, started when its first attempt starts.
#[derive(Debug)]
pub(crate) struct Retry {
    policy: RetryPolicy,
    per_attempt: Duration,
    deadline: Duration,
    started: Instant,
}

impl Retry {
    /// The policy of a call of `record`, its deadline counted from now.
    pub(crate) fn new(record: &ToolRecord) -> Self {
        Self {
            policy: record.retry(),
            per_attempt: Duration::from_millis(record.timeout_ms()),
            deadline: deadline(record),
            started: Instant::now(),
        }
    }

    /// The bound of the next attempt: the tool's timeout, or what the deadline leaves.
    pub(crate) fn attempt_timeout(&self) -> Duration {
        self.per_attempt
            .min(self.deadline.saturating_sub(self.started.elapsed()))
    }

    /// Whether to try again after attempt `attempt` failed with `error`, and after how long:
    /// only a transient failure, within the attempt budget, and only when the delay ends
    /// before the deadline.
    pub(crate) fn retry(&self, attempt: u32, error: &ExecError) -> Option<Duration> {
        let delay = next_delay(&self.policy, attempt, error)?;
        (self.started.elapsed() + delay < self.deadline).then_some(delay)
    }
}

/// The delay before attempt `attempt + 1`, or `None` when the error or the budget says stop.
///
/// The delay is [`RetryPolicy::base_delay_ms`] (exponential from `backoff_ms`, capped) times a
/// jitter factor in `[1, RetryPolicy::JITTER_MAX)`, so it is never shorter than the declared
/// backoff nor longer than [`RetryPolicy::max_delay_ms`], the figure a call's deadline counts —
/// unless the error carries a `Retry-After` ([`ExecError::retry_after`]): then at least that.
fn next_delay(policy: &RetryPolicy, attempt: u32, error: &ExecError) -> Option<Duration> {
    if !error.is_transient() || attempt >= policy.max_attempts {
        return None;
    }
    let base = policy.base_delay_ms(attempt);
    let jitter: f64 = rand::rng().random_range(1.0..RetryPolicy::JITTER_MAX);
    let ms = ((base as f64 * jitter) as u64).min(policy.max_delay_ms(attempt));
    // A server that said how long to wait (`Retry-After`) is not asked sooner; the deadline
    // check in [`Retry::retry`] still decides whether that wait fits.
    Some(Duration::from_millis(ms).max(error.retry_after().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stages::testing::builder;

    fn transient() -> ExecError {
        ExecError::Transient {
            message: "503".into(),
            stderr: String::new(),
        }
    }

    #[test]
    fn retries_only_transient_errors_within_budget() {
        let p = RetryPolicy {
            max_attempts: 3,
            backoff_ms: 100,
        };
        let d1 = next_delay(&p, 1, &transient()).unwrap();
        assert!(d1 >= Duration::from_millis(100) && d1 < Duration::from_millis(150));
        let d2 = next_delay(&p, 2, &transient()).unwrap();
        assert!(d2 >= Duration::from_millis(200) && d2 < Duration::from_millis(300));
        assert_eq!(next_delay(&p, 3, &transient()), None);
        let permanent = ExecError::Permanent {
            message: "400".into(),
            stderr: String::new(),
        };
        assert_eq!(next_delay(&p, 1, &permanent), None);
        assert!(next_delay(&p, 1, &ExecError::TimedOut(Duration::ZERO)).is_some());
    }

    #[test]
    fn the_deadline_bounds_attempts_and_stops_retries() {
        let rec = builder(
            "t",
            json!({"type": "object", "additionalProperties": false}),
            json!({"type": "object", "additionalProperties": false}),
        )
        .timeout_ms(200)
        .retry(RetryPolicy {
            max_attempts: 2,
            backoff_ms: 10,
        })
        .registered();
        let r = Retry::new(&rec);
        assert_eq!(r.attempt_timeout(), Duration::from_millis(200));
        assert!(r.retry(1, &transient()).is_some());
        // Later than the whole deadline: no time is left for an attempt or a retry.
        let late = Retry {
            started: Instant::now() - deadline(&rec) - Duration::from_millis(1),
            ..Retry::new(&rec)
        };
        assert_eq!(late.attempt_timeout(), Duration::ZERO);
        assert_eq!(late.retry(1, &transient()), None);
    }
}
