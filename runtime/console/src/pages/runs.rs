//! `/runs` and `/runs/<id>`: SOP runs, and one run's graph beside its steps.

use escepine_ledger::entry::iso8601;
use escepine_ledger::record::CallResult;
use escepine_registry::sop::model::Sop;
use maud::{html, Markup, PreEscaped};

use super::{layout, short, Ctx};
use crate::graph::RunPath;
use crate::index::RunRow;

/// The runs, newest first.
pub(crate) fn list(ctx: &Ctx<'_>, runs: &[RunRow]) -> Markup {
    layout(
        ctx,
        "SOP runs",
        html! {
            table #runs {
                thead { tr { th { "Started (UTC)" } th { "Run" } th { "SOP" } th { "Principal" } th { "Status" } } }
                tbody {
                    @for r in runs {
                        tr {
                            td { (iso8601(r.at_ms)) }
                            td { a href={ "/runs/" (r.run_id) } { code { (r.run_id) } } }
                            td { (r.sop_id) }
                            td { (r.principal) }
                            td { (r.status.as_deref().unwrap_or("running or paused")) }
                        }
                    }
                }
            }
        },
    )
}

/// One run: the SVG (made by [`crate::graph::svg`], whose labels it escapes itself) and the
/// steps.
pub(crate) fn page(
    ctx: &Ctx<'_>,
    run_id: &str,
    path: &RunPath,
    sop: Option<&Sop>,
    svg: &str,
) -> Markup {
    layout(
        ctx,
        &format!("Run {run_id}"),
        html! {
            dl {
                dt { "SOP" } dd { (path.sop_id.as_deref().unwrap_or("?")) " " (path.sop_version.as_deref().unwrap_or("")) }
                dt { "Principal" } dd { (path.principal.as_deref().unwrap_or("?")) }
                dt { "Status" } dd #run-status { (path.status.as_deref().unwrap_or("running or paused")) }
                dt { "Path" } dd #run-path { (path.visited.join(" → ")) }
            }
            @if sop.is_none() {
                p { "The console was not given this SOP's file (--sop): only the states and transitions the run recorded are drawn." }
            }
            div.run {
                div.graph #graph { (PreEscaped(svg)) }
                div {
                    h2 { "Steps" }
                    table #steps {
                        thead { tr { th { "#" } th { "State" } th { "Tool" } th { "Call" } th { "Decision" } th { "Result" } } }
                        tbody {
                            @for s in &path.steps {
                                tr.step.compensation[s.compensates.is_some()] {
                                    td { (s.seq) }
                                    td { (s.state.as_deref().unwrap_or("")) }
                                    td { (s.tool)
                                        @if let Some(c) = &s.compensates { br; small { "compensates " code { (short(c)) } } }
                                    }
                                    td { a.step-call href={ "/calls/" (s.call_id) } { code { (short(&s.call_id)) } } }
                                    td { (s.decision.as_str()) }
                                    td { (s.result.map_or("—", CallResult::as_str)) }
                                }
                            }
                        }
                    }
                    h2 { "Events" }
                    ol #events {
                        @for (seq, event, state) in &path.events {
                            li { "#" (seq) " " (event) @if let Some(s) = state { " at " code { (s) } } }
                        }
                    }
                }
            }
        },
    )
}
