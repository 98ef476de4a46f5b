//! Stage 5 (an allowed call): the budgets that apply, each with room, or the call ends here —
//! recorded as `budget_exceeded`, never retried, nothing run.

use super::context::CallContext;
use super::ended::Ended;
use super::retry;
use crate::budget::table::BudgetTable;
use crate::report::{budget_message, CallOutcome};
use crate::telemetry::metrics::metrics;
use crate::telemetry::{in_stage_async, Stage};
use cedar_policy::Entities;
use escepine_ledger::budget::{BudgetClaim, Reservation};
use escepine_ledger::entry::now_ms;
use escepine_ledger::store::Ledger;

/// Whether the call holds budget uses, to release when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held(bool);

/// A use of every budget that applies to the call, recorded in the ledger's store with the
/// call's deadline as its expiry; a budget without room ends the call (nothing recorded for
/// any budget), and so does a store that cannot count (`failed`).
pub(crate) async fn reserve(
    cx: &CallContext<'_>,
    table: &BudgetTable,
    entities: &Entities,
    ledger: &dyn Ledger,
) -> Result<Held, Ended> {
    let limits = table.applicable(entities, cx.principal, cx.tool.record.tool_id());
    if limits.is_empty() {
        return Ok(Held(false));
    }
    let start_ms = now_ms();
    let deadline_ms = retry::deadline(&cx.tool.record).as_millis() as u64;
    let claim = BudgetClaim {
        call_id: cx.ids.call_id.clone(),
        start_ms,
        expiry_ms: start_ms.saturating_add(deadline_ms),
        limits,
    };
    let reserved = in_stage_async(Stage::Budget, |span| async move {
        let reserved = ledger.reserve_budgets(claim).await;
        let result = match &reserved {
            Ok(Reservation::Granted) => "taken",
            Ok(Reservation::Exceeded(_)) => "refused",
            Err(_) => "unavailable",
        };
        span.record("escepine.budget.result", result);
        metrics().budget(result);
        reserved
    })
    .await;
    match reserved {
        Ok(Reservation::Granted) => Ok(Held(true)),
        Ok(Reservation::Exceeded(budget)) => Err(Ended {
            error: Some(budget_message(&budget)),
            outcome: CallOutcome::BudgetExceeded { budget },
            output_hash: None,
        }),
        Err(e) => {
            let last_error = format!("the budget uses cannot be counted: {e}");
            Err(Ended {
                error: Some(last_error.clone()),
                outcome: CallOutcome::Failed { last_error },
                output_hash: None,
            })
        }
    }
}

/// The call ended: its uses stop counting as in flight. A store that cannot be written is
/// reported, not fatal: the use stops counting at its expiry anyway.
pub(crate) async fn release(cx: &CallContext<'_>, ledger: &dyn Ledger, held: Held) {
    if !held.0 {
        return;
    }
    if let Err(e) = ledger.release_budgets(&cx.ids.call_id).await {
        tracing::warn!(
            "the budget uses of call {} stay in flight until their expiry: {e}",
            cx.ids.call_id
        );
    }
}
