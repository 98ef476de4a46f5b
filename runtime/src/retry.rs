//! The retry policy: decides, per error, whether to try again and after how long.

use std::time::Duration;

use escepine_contract::RetryPolicy;
use rand::Rng;

use crate::executor::ExecError;

/// The delay before attempt `attempt + 1`, or `None` when the error or the budget says stop.
///
/// Only transient failures are retried. The delay is [`RetryPolicy::base_delay_ms`] (exponential
/// from `backoff_ms`, capped) times a jitter factor in `[1, RetryPolicy::JITTER_MAX)`, so it is
/// never shorter than the declared backoff nor longer than [`RetryPolicy::max_delay_ms`], the
/// figure a call's deadline counts.
pub fn next_delay(policy: &RetryPolicy, attempt: u32, error: &ExecError) -> Option<Duration> {
    if !error.is_transient() || attempt >= policy.max_attempts {
        return None;
    }
    let base = policy.base_delay_ms(attempt);
    let jitter: f64 = rand::rng().random_range(1.0..RetryPolicy::JITTER_MAX);
    let ms = ((base as f64 * jitter) as u64).min(policy.max_delay_ms(attempt));
    Some(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
