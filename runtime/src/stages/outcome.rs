//! Stage 7: record the outcome — committed before control returns.

use super::context::CallContext;
use super::ended::Ended;
use crate::error::CallError;
use crate::report::CallOutcome;
use escepine_ledger::entry::Committed;
use escepine_ledger::record::{Attempt, Outcome, Record};
use escepine_ledger::store::Ledger;

/// The outcome entry of the call (result, attempts, output hash, the returned output, the
/// error), committed; a ledger that cannot commit stops the call with nothing returned.
pub(crate) async fn record(
    cx: &CallContext<'_>,
    ledger: &dyn Ledger,
    attempts: Vec<Attempt>,
    ended: &Ended,
) -> Result<Committed, CallError> {
    let Some(result) = ended.outcome.result() else {
        return Err(CallError::LedgerUnavailable(
            escepine_ledger::error::LedgerError::unavailable(
                "a waiting call has no outcome to record",
            ),
        ));
    };
    let entered = (!attempts.is_empty())
        .then(|| crate::flows::entered(&cx.flow, &cx.tool.record, cx.principal, &cx.reached));
    let outcome = Outcome {
        entered,
        call_id: cx.ids.call_id.clone(),
        result,
        attempts,
        output_hash: ended.output_hash.clone(),
        output: match &ended.outcome {
            CallOutcome::Ok(v) => Some(v.clone()),
            _ => None,
        },
        error: ended.error.clone(),
        budget: match &ended.outcome {
            CallOutcome::BudgetExceeded { budget } => Some(budget.clone()),
            _ => None,
        },
    };
    if let Some(hash) = &outcome.output_hash {
        tracing::Span::current().record("escepine.output.sha256", hash.as_str());
    }
    Ok(crate::telemetry::ledger_append("outcome", ledger.append(Record::Outcome(outcome))).await?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stages::context::CallOptions;
    use crate::stages::testing::{alice, context, loaded, n_schema, record as tool_record, Fixed};
    use escepine_ledger::memory::MemoryLedger;
    use escepine_ledger::record::CallResult;

    #[tokio::test]
    async fn the_outcome_holds_the_output_only_when_returned() {
        let tool = loaded(tool_record("t", n_schema(), n_schema()));
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(Vec::new()));
        let ledger = MemoryLedger::new();
        let ok = Ended {
            outcome: CallOutcome::Ok(json!({"n": 1})),
            output_hash: Some("h".into()),
            error: None,
        };
        let rejected = Ended {
            outcome: CallOutcome::OutputRejected {
                violations: Vec::new(),
            },
            output_hash: Some("h2".into()),
            error: Some("output rejected: x".into()),
        };
        let first = record(&cx, &ledger, Vec::new(), &ok)
            .await
            .expect("committed");
        let second = record(&cx, &ledger, Vec::new(), &rejected)
            .await
            .expect("committed");
        assert_eq!((first.seq, second.seq), (1, 2));
        let entries = ledger.entries().expect("readable");
        let outcomes: Vec<&Outcome> = entries
            .iter()
            .filter_map(|e| match &e.record {
                Record::Outcome(o) => Some(o),
                _ => None,
            })
            .collect();
        assert_eq!(outcomes[0].result, CallResult::Ok);
        assert_eq!(outcomes[0].output, Some(json!({"n": 1})));
        assert_eq!(outcomes[1].result, CallResult::OutputRejected);
        assert_eq!(outcomes[1].output, None, "a rejected output is never kept");
        assert_eq!(outcomes[1].output_hash.as_deref(), Some("h2"));
        assert_eq!(entries[1].hash, second.hash);
    }
}
