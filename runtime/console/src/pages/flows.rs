//! `/flows/<id>`: a flow's state and calls, with a declassify form per label.

use escepine_contract::FlowState;
use escepine_ledger::entry::iso8601;
use maud::{html, Markup};

use super::{layout, short, Ctx};
use crate::index::CallRow;

/// The flow page.
pub(crate) fn page(ctx: &Ctx<'_>, flow: &str, state: &FlowState, calls: &[CallRow]) -> Markup {
    let action = format!("{}/declassify", super::flow_link(flow));
    layout(
        ctx,
        &format!("Flow {flow}"),
        html! {
            dl {
                dt { "Calls" } dd #flow-calls { (state.calls) }
                dt { "Origins reached" } dd { @for o in &state.origins { code { (o) } " " } }
                dt { "Tools" } dd { @for (t, n) in &state.tools { (t) " ×" (n) " " } }
            }
            h2 { "Labels" }
            @if state.labels.is_empty() { p #no-labels { "The flow holds no label." } }
            table #labels {
                tbody {
                    @for label in &state.labels {
                        tr.label data-label=(label) {
                            td { code { (label) } }
                            td {
                                form.inline method="post" action=(action) {
                                    @if let Some(csrf) = ctx.csrf { input type="hidden" name="csrf" value=(csrf); }
                                    input type="hidden" name="label" value=(label);
                                    input name="reason" required placeholder="why it may leave the flow" size="40";
                                    " "
                                    button.declassify type="submit" { "Declassify" }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Its latest calls" }
            table #calls {
                tbody {
                    @for r in calls {
                        tr.call {
                            td { (iso8601(r.at_ms)) }
                            td { a href={ "/calls/" (r.call_id) } { code { (short(&r.call_id)) } } }
                            td { (r.tool) } td { (r.principal) } td { (r.decision.as_str()) }
                        }
                    }
                }
            }
        },
    )
}
