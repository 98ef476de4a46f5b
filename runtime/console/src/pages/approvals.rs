//! `/approvals`: the inbox, and the answer to a decision.

use escepine_ledger::calls::Call;
use escepine_ledger::entry::iso8601;
use escepine_runtime::approval::Verdict;
use escepine_runtime::CallReport;
use maud::{html, Markup};

use super::{layout, pretty, Ctx};

/// The waiting calls, each with the exact payload and the approve and reject forms.
pub(crate) fn page(ctx: &Ctx<'_>, calls: &[Call]) -> Markup {
    layout(
        ctx,
        "Waiting for approval",
        html! {
            @if calls.is_empty() { p #empty { "Nothing waits for approval." } }
            @for call in calls {
                @if let Some(intent) = &call.intent {
                    section.card.waiting data-call=(call.call_id) {
                        h2 { a href={ "/calls/" (call.call_id) } { code { (call.call_id) } } }
                        dl {
                            dt { "Requester" } dd.requester { (intent.record.principal) }
                            dt { "Tool" } dd.tool { (intent.record.tool_id) " " (intent.record.tool_version) }
                            @if let Some(req) = &intent.record.approval {
                                dt { "Expires (UTC)" } dd.expires { (iso8601(req.expires_at_ms)) }
                                @if !req.reasons.is_empty() { dt { "Why" } dd { (req.reasons.join("; ")) } }
                            }
                            dt { "Permitted by" } dd { (intent.record.policy_ids.join(", ")) }
                        }
                        h3 { "The payload to approve" }
                        pre.payload { (pretty(&intent.record.payload)) }
                        p { "Input hash " code { (intent.record.payload_hash) } }
                        (decision_form(ctx, &call.call_id, "approve"))
                        (decision_form(ctx, &call.call_id, "reject"))
                    }
                }
            }
        },
    )
}

fn decision_form(ctx: &Ctx<'_>, call_id: &str, verb: &str) -> Markup {
    html! {
        form.inline method="post" action={ "/approvals/" (call_id) "/" (verb) } {
            @if let Some(csrf) = ctx.csrf { input type="hidden" name="csrf" value=(csrf); }
            button.(verb) type="submit" name="go" value=(verb) { @if verb == "approve" { "Approve and run" } @else { "Reject" } }
        }
    }
}

/// The answer to a decision the runtime took.
pub(crate) fn decided(
    ctx: &Ctx<'_>,
    call_id: &str,
    verdict: Verdict,
    report: &CallReport,
) -> Markup {
    let title = match verdict {
        Verdict::Approve => "Approved",
        Verdict::Reject => "Rejected",
        Verdict::Withdraw => "Withdrawn",
    };
    layout(
        ctx,
        title,
        html! {
            p #message { "Call " a href={ "/calls/" (call_id) } { code { (call_id) } } ": " (report.to_string()) }
            p { "Recorded at " (iso8601(escepine_ledger::entry::now_ms())) ". " a href="/approvals" { "Back to the inbox" } }
        },
    )
}
