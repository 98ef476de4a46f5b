//! The budget of a call: `timeout_ms` (each attempt) and `retry`.

use escepine_contract::{RetryBoundError, RetryPolicy};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fields::Object;
use crate::rule::Rule;

/// `timeout_ms`: an integer greater than 0.
pub(super) fn timeout_ms(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<u64> {
    let v = rec.require("timeout_ms", diags)?;
    match v.as_u64() {
        Some(t) if t > 0 => Some(t),
        _ => {
            diags.push(Diagnostic::at(
                Rule::Timeout,
                rec.src,
                &rec.ptr("timeout_ms"),
                format!("`timeout_ms` is {v}; it must be an integer greater than 0"),
            ));
            None
        }
    }
}

/// `retry`: `max_attempts` (>= 1) and `backoff_ms` (>= 0), within the contract's bounds.
pub(super) fn retry(rec: &Object<'_>, diags: &mut Diagnostics) -> Option<RetryPolicy> {
    let r = rec.object("retry", diags)?;
    r.closed(&["max_attempts", "backoff_ms"], "`retry`", diags);
    // A non-negative integer, else `retry/budget` naming the field and what it must be.
    let mut count = |field: &str, must: &str| {
        let v = r.require(field, diags)?;
        let n = v.as_u64();
        if n.is_none() {
            diags.push(Diagnostic::at(
                Rule::Retry,
                r.src,
                &r.ptr(field),
                format!("`{field}` is {v}; it must be {must}"),
            ));
        }
        n
    };
    let attempts = count("max_attempts", "an integer >= 1 (1 means no retry)");
    let backoff = count("backoff_ms", "an integer >= 0");
    let (attempts, backoff) = (attempts?, backoff?);
    match RetryPolicy::check(attempts, backoff) {
        Ok(()) => Some(RetryPolicy {
            max_attempts: u32::try_from(attempts).ok()?,
            backoff_ms: backoff,
        }),
        Err(e) => {
            let (rule, field) = match e {
                RetryBoundError::NoAttempt => (Rule::Retry, "max_attempts"),
                RetryBoundError::TooManyAttempts(_) => (Rule::RetryAttemptsBound, "max_attempts"),
                RetryBoundError::BackoffTooLong(_) => (Rule::RetryBackoffBound, "backoff_ms"),
            };
            diags.push(Diagnostic::at(rule, r.src, &r.ptr(field), e.to_string()));
            None
        }
    }
}
