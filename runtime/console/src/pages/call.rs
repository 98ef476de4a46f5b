//! `/calls/<id>`: one call's evidence, and its proof.

use escepine_ledger::calls::recorded::Recorded;
use escepine_ledger::calls::Call;
use escepine_ledger::entry::iso8601;
use escepine_policy::cedar::Binding;
use maud::{html, Markup};

use super::{layout, pretty, short, Ctx};
use crate::integrity::ProofView;

/// The call page.
pub(crate) fn page(
    ctx: &Ctx<'_>,
    call: &Call,
    proof: &ProofView,
    cedar: &Binding,
    now_ms: u64,
) -> Markup {
    let Some(intent) = &call.intent else {
        return super::message(ctx, "No such call", "no intent records this call");
    };
    let i = &intent.record;
    let state = call.state(now_ms);
    layout(
        ctx,
        &format!("Call {}", call.call_id),
        html! {
            dl #summary {
                dt { "Tool" } dd #tool { (i.tool_id) " " (i.tool_version) " (" (i.class.as_str()) ")" }
                dt { "Principal" } dd #requester { (i.principal) }
                @if let Some(a) = &i.attestation {
                    dt { "Attested by" } dd { (a.issuer) }
                }
                dt { "Decision" } dd #decision { (i.decision.as_str()) }
                dt { "State" } dd #state { (state_text(&state)) }
                @if let Some(run) = &i.run_id {
                    dt { "Run" } dd { a href={ "/runs/" (run) } { code { (run) } } @if let Some(s) = &i.step { " at " code { (s) } } }
                }
                @if let Some(c) = &i.compensates {
                    dt { "Compensates" } dd { a href={ "/calls/" (c) } { code { (c) } } }
                }
                @if let Some(f) = &i.flow { dt { "Flow" } dd { a href=(super::flow_link(f.as_str())) { code { (f.to_string()) } } } }
                dt { "Input hash" } dd { code #payload-hash { (i.payload_hash) } }
                @if let Some(o) = &call.outcome {
                    dt { "Output hash" } dd { code #output-hash { (o.record.output_hash.as_deref().unwrap_or("—")) } }
                }
                @if let Some(d) = i.deadline_ms { dt { "Deadline" } dd { (d) " ms" } }
            }

            h2 { "Why it was allowed (or not)" }
            @if i.policy_ids.is_empty() { p { "No policy determined it (a denial by default)." } }
            @for id in &i.policy_ids { (policy(cedar, id)) }
            @if !i.reasons.is_empty() { p { "Reasons: " (i.reasons.join("; ")) } }
            @if let Some(s) = &i.shadow {
                p #shadow { "Shadow policies decided " strong { (s.decision.as_str()) } " (" (s.policy_ids.join(", ")) ")" }
            }

            h2 { "Payload (as recorded, scrubbed)" }
            pre #payload { (pretty(&i.payload)) }
            @if let Some(o) = &call.outcome {
                h2 { "Outcome: " span #result { (o.record.result.as_str()) } }
                @if let Some(out) = &o.record.output { pre #output { (pretty(out)) } }
                @if let Some(e) = &o.record.error { p #error { (e) } }
                @if let Some(b) = &o.record.budget { p #budget { "Budget: " (b) } }
                (attempts(o))
            }

            @if let Some(req) = &i.approval {
                h2 { "Approval" }
                p { "Asked until " (iso8601(req.expires_at_ms)) @if !req.reasons.is_empty() { " — " (req.reasons.join("; ")) } }
            }
            @if let Some(a) = &call.approval {
                p #approval { (a.record.result.as_str()) " by " (a.record.approver)
                    @if !a.record.policy_ids.is_empty() { " (permitted by " (a.record.policy_ids.join(", ")) ")" }
                    " at " (iso8601(a.at_ms)) }
            }

            h2 { "Entries" }
            table #entries {
                thead { tr { th { "#" } th { "Kind" } th { "Committed (UTC)" } th { "Hash" } } }
                tbody {
                    (entry_row("intent", intent))
                    @if let Some(a) = &call.approval { (entry_row("approval", a)) }
                    @if let Some(o) = &call.outcome { (entry_row("outcome", o)) }
                }
            }
            @if !call.ignored.is_empty() {
                p.failed { "Entries beyond the first of their kind (not counted): "
                    @for g in &call.ignored { "#" (g.entry.seq) " (" (g.kind) ") " } }
            }

            h2 { "Inclusion proof" }
            (proof_section(proof))
        },
    )
}

fn state_text(state: &escepine_ledger::calls::state::CallState) -> String {
    use escepine_ledger::calls::state::CallState as S;
    match state {
        S::Unknown => "unknown".into(),
        S::InFlight => "running (or its runtime stopped before recording an outcome)".into(),
        S::Waiting(w) => format!("waiting for an approver until {}", iso8601(w.expires_at_ms)),
        S::Expired(_) => "expired (not yet recorded)".into(),
        S::Decided(a) => format!("{} by {}, running", a.result.as_str(), a.approver),
        S::Ended(o) => format!("ended: {}", o.result.as_str()),
    }
}

/// A determining policy: its id, where it was written, its text.
fn policy(cedar: &Binding, id: &str) -> Markup {
    let text = cedar
        .policies
        .policy(&cedar_policy::PolicyId::new(id))
        .map(ToString::to_string);
    let origin = cedar.origin(id).map(|o| match o.line {
        Some(line) => format!("{}:{line}", o.file.display()),
        None => o.file.display().to_string(),
    });
    html! {
        div.card.policy data-policy=(id) {
            strong { code { (id) } }
            @if let Some(o) = origin { " — " small { (o) } }
            @match text {
                Some(t) => { pre.policy-text { (t) } }
                None => { p { "This policy is not in the console's policy set (it was changed since)." } }
            }
        }
    }
}

fn attempts(o: &Recorded<escepine_ledger::record::Outcome>) -> Markup {
    html! {
        @if !o.record.attempts.is_empty() {
            table #attempts {
                thead { tr { th { "#" } th { "Started (UTC)" } th { "Took" } th { "Error" } th { "Egress" } th { "Refused" } } }
                tbody {
                    @for (n, a) in o.record.attempts.iter().enumerate() {
                        tr {
                            td { (n + 1) }
                            td { (iso8601(a.start_ms)) }
                            td { (a.duration_us / 1000) " ms" }
                            td { @if let Some(c) = &a.error_class { (format!("{c:?}")) ": " }
                                 (a.error.as_deref().unwrap_or(""))
                                 @if let Some(s) = &a.stderr { pre { (s) } } }
                            td.egress { @for r in &a.egress_requests { code { (r) } br; } }
                            td.refusals { @for r in &a.egress_refusals { code { (r) } br; } }
                        }
                    }
                }
            }
        }
    }
}

fn entry_row<T>(kind: &str, r: &Recorded<T>) -> Markup {
    html! {
        tr { td { (r.seq) } td { (kind) } td { (iso8601(r.at_ms)) } td { code title=(r.hash) { (short(&r.hash)) } } }
    }
}

fn proof_section(proof: &ProofView) -> Markup {
    html! {
        @match proof {
            ProofView::NoTree => { p #proof .failed { "No proof: the chain did not verify (see the banner)." } }
            ProofView::NotCovered { size } => {
                p #proof { "Not yet covered: the latest signed checkpoint covers the first " (size) " entries, and this call was recorded after them." }
            }
            ProofView::Failed(why) => { p #proof .failed { "The proof does not verify: " (why) } }
            ProofView::Unsigned(p) => {
                p #proof { "Included in the verified chain's tree of " (p.tree_size) " entries (root " code { (p.root) } "), but no signed checkpoint is configured: nobody vouches for that root." }
                (leaves(p))
            }
            ProofView::Verified { proof: p, key, pending } => {
                p #proof .verified { "Verified by the console against the latest checkpoint: tree of " (p.tree_size)
                    " entries, root " code { (p.root) } ", signed by " code #proof-key { (key) } "."
                    @if !pending.is_empty() {
                        " Entries " @for s in pending { "#" (s) " " } "were recorded after it: not yet covered."
                    } }
                (leaves(p))
            }
        }
    }
}

fn leaves(p: &escepine_ledger::proof::CallProof) -> Markup {
    html! {
        table #proof-entries {
            thead { tr { th { "Entry" } th { "Leaf" } th { "Audit path" } } }
            tbody {
                @for e in &p.entries {
                    tr { td { "#" (e.seq) } td { code { (e.leaf_hash) } } td { @for h in &e.audit_path { code { (h) } br; } } }
                }
            }
        }
    }
}
