//! `/policies`: shadow disagreements and the what-if replay.

use escepine_ledger::entry::iso8601;
use escepine_runtime::replay::ReplayReport;
use maud::{html, Markup};

use super::{layout, short, Ctx};
use crate::index::CallRow;

/// The page: calls the shadow policies decided otherwise, and the replay of the candidate
/// directory (`(dir, report)`) when one is configured.
pub(crate) fn page(
    ctx: &Ctx<'_>,
    disagreements: &[CallRow],
    replay: Option<&(String, Result<ReplayReport, String>)>,
) -> Markup {
    layout(
        ctx,
        "Policies",
        html! {
            h2 { "Shadow disagreements" }
            p { "Calls on which the shadow policies (--shadow-policies of the runtime that made them) decided otherwise than the enforced ones. Open a call for both decisions and their policies." }
            table #disagreements {
                thead { tr { th { "When (UTC)" } th { "Call" } th { "Tool" } th { "Principal" } th { "Enforced" } } }
                tbody {
                    @for r in disagreements {
                        tr {
                            td { (iso8601(r.at_ms)) }
                            td { a href={ "/calls/" (r.call_id) } { code { (short(&r.call_id)) } } }
                            td { (r.tool) } td { (r.principal) } td { (r.decision.as_str()) }
                        }
                    }
                }
            }
            h2 { "What-if replay" }
            @match replay {
                None => { p { "No candidate policies: start the console with --what-if DIR to replay every recorded request against them." } }
                Some((dir, Err(e))) => { p.failed { "The ledger could not be replayed against " code { (dir) } ": " (e) } }
                Some((dir, Ok(report))) => {
                    p #replay-summary { "Replayed " (report.replayed) " recorded requests against " code { (dir) } ": "
                        (report.flips.len()) " would be decided otherwise (" (report.widened()) " widened: a denial that would be allowed)." }
                    table #flips {
                        thead { tr { th { "Call" } th { "Principal" } th { "Tool" } th { "Payload" } th { "Recorded" } th { "Candidate" } } }
                        tbody {
                            @for f in &report.flips {
                                tr.widened[f.widens()] {
                                    td { a href={ "/calls/" (f.call_id) } { code { (short(&f.call_id)) } } }
                                    td { (f.principal) } td { (f.tool_id) }
                                    td { code { (f.payload) } }
                                    td { (f.old_decision) br; small { (f.old_policy_ids.join(", ")) } }
                                    td { (f.new_decision) br; small { (f.new_policy_ids.join(", ")) } }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}
