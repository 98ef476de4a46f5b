//! `/calls`: the filterable list.

use escepine_ledger::entry::iso8601;
use escepine_ledger::record::{CallResult, Decision};
use maud::{html, Markup};

use super::{layout, Ctx};
use crate::index::{Filter, Page};

/// The result filter's choices: every recorded result, and `none` (no outcome yet).
fn results() -> Vec<String> {
    CallResult::ALL
        .iter()
        .map(|r| r.as_str())
        .chain(["none"])
        .map(String::from)
        .collect()
}

/// The decision filter's choices.
fn decisions() -> Vec<String> {
    Decision::ALL
        .iter()
        .map(|d| d.as_str().to_string())
        .collect()
}

/// The list page: the filter form, one page of calls, the link to the next.
pub(crate) fn list(
    ctx: &Ctx<'_>,
    filter: &Filter,
    page: &Page,
    (tools, principals): &(Vec<String>, Vec<String>),
    total: usize,
) -> Markup {
    layout(
        ctx,
        "Calls",
        html! {
            form.filter #filter method="get" action="/calls" {
                (select("tool", "Tool", tools, &filter.tool))
                (select("principal", "Principal", principals, &filter.principal))
                (select("decision", "Decision", &decisions(), &filter.decision))
                (select("result", "Result", &results(), &filter.result))
                label { "Flow" input name="flow" value=(filter.flow) size="20"; }
                label { "From (UTC)" input name="from" value=(filter.from) placeholder="2026-12-05T17:00"; }
                label { "To (UTC)" input name="to" value=(filter.to) placeholder="2026-12-05T18:00"; }
                button #apply type="submit" { "Filter" }
                @if !filter.is_empty() { a href="/calls" { "Clear" } }
            }
            p.muted { (page.rows.len()) " shown of " (total) " calls in the ledger" }
            table #calls {
                thead { tr { th { "When (UTC)" } th { "Call" } th { "Tool" } th { "Principal" } th { "Decision" } th { "Result" } th { "Flow" } th { "Run" } } }
                tbody {
                    @for r in &page.rows {
                        tr.call data-call=(r.call_id) {
                            td { (iso8601(r.at_ms)) }
                            td { a href={ "/calls/" (r.call_id) } { code { (super::short(&r.call_id)) } } }
                            td.tool { (r.tool) }
                            td.principal { (r.principal) }
                            td.decision.{ "decision-" (r.decision.as_str()) } { (r.decision.as_str()) }
                            td.result.{ "result-" (r.result.map_or("none", CallResult::as_str)) } {
                                (r.result.map_or("—", CallResult::as_str))
                            }
                            td { @if let Some(f) = &r.flow { a href=(super::flow_link(f)) { code { (f) } } } }
                            td { @if let Some(run) = &r.run_id { a href={ "/runs/" (run) } { code { (super::short(run)) } } } }
                        }
                    }
                }
            }
            @if let Some(next) = page.next {
                p.pager { a #next rel="next" href=(next_link(filter, next)) { "Older calls →" } }
            }
        },
    )
}

fn select(name: &str, label: &str, choices: &[String], chosen: &str) -> Markup {
    html! {
        label { (label)
            select name=(name) {
                option value="" { "any" }
                @for c in choices {
                    option value=(c) selected[c == chosen] { (c) }
                }
            }
        }
    }
}

/// The link to the page after cursor `before`, keeping the filter.
fn next_link(filter: &Filter, before: u64) -> String {
    let mut url = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in [
        ("tool", &filter.tool),
        ("principal", &filter.principal),
        ("decision", &filter.decision),
        ("result", &filter.result),
        ("flow", &filter.flow),
        ("from", &filter.from),
        ("to", &filter.to),
    ] {
        if !v.is_empty() {
            url.append_pair(k, v);
        }
    }
    url.append_pair("before", &before.to_string());
    format!("/calls?{}", url.finish())
}
