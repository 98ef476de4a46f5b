//! The pages, server-rendered with maud (every interpolated value is escaped). Each page is
//! the layout ([`layout`]) around its content: the navigation, who is signed in, and the
//! ledger's integrity banner.

pub(crate) mod approvals;
pub(crate) mod call;
pub(crate) mod calls;
pub(crate) mod flows;
pub(crate) mod login;
pub(crate) mod policies;
pub(crate) mod runs;

use std::sync::Arc;

use escepine_contract::Principal;
use escepine_ledger::entry::iso8601;
use maud::{html, Markup, DOCTYPE};

use crate::integrity::{Chain, Status};

/// The style sheet, served at `/console.css`.
pub(crate) const CSS: &str = include_str!("console.css");

/// What every page shows besides its content.
pub(crate) struct Ctx<'a> {
    /// Who is signed in (none on the sign-in page).
    pub who: Option<&'a Principal>,
    /// The session's CSRF token, for the forms (none for a bearer caller).
    pub csrf: Option<&'a str>,
    /// The last integrity check.
    pub status: Arc<Status>,
    /// Where an append did not link, if the index found one.
    pub broken: Option<String>,
}

/// A page: `title`, the navigation and banner, then `content`.
pub(crate) fn layout(ctx: &Ctx<'_>, title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Escepine console" }
                link rel="stylesheet" href="/console.css";
            }
            body {
                header {
                    nav {
                        a.brand href="/calls" { "Escepine" }
                        a href="/calls" { "Calls" }
                        a href="/runs" { "Runs" }
                        a href="/approvals" { "Approvals" }
                        a href="/policies" { "Policies" }
                    }
                    @if let Some(who) = ctx.who {
                        div.who {
                            "Signed in as " code #principal { (who) }
                            @if let Some(csrf) = ctx.csrf {
                                form.inline method="post" action="/logout" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    button type="submit" { "Sign out" }
                                }
                            }
                        }
                    }
                }
                (banner(ctx))
                main {
                    h1 { (title) }
                    (content)
                }
            }
        }
    }
}

/// The integrity banner: the chain's and the latest checkpoint's status.
fn banner(ctx: &Ctx<'_>) -> Markup {
    let s = &ctx.status;
    let tampered = s.tampered() || ctx.broken.is_some();
    html! {
        section #integrity .(if tampered { "tampered" } else { "intact" }) {
            @match &s.chain {
                Chain::Unchecked => { strong { "Chain not verified yet." } }
                Chain::Intact { entries, head } => {
                    strong #chain-status { "Chain intact" }
                    " — " (entries) " entries, head " code title=(head) { (short(head)) }
                }
                Chain::Tampered(why) => {
                    strong #chain-status { "TAMPERED" } " — " (why)
                }
                Chain::Unreadable(why) => {
                    strong #chain-status { "Ledger unreadable" } " — " (why)
                }
            }
            @if let Some(broken) = &ctx.broken {
                br; strong { "TAMPERED" } " — a new entry does not link: " (broken)
            }
            br;
            @match &s.checkpoint {
                None => { span #checkpoint-status { "No signed checkpoint configured." } }
                Some(cp) => {
                    @match &cp.tamper {
                        None => {
                            span #checkpoint-status { "Checkpoint holds" }
                            " — " (cp.size) " entries signed by " code { (cp.key) }
                            ", root " code { (short(&cp.root)) }
                        }
                        Some(why) => {
                            strong #checkpoint-status { "CHECKPOINT VIOLATED" } " — " (why)
                        }
                    }
                }
            }
            @for p in &s.checkpoint_problems {
                br; "Checkpoint not usable: " (p)
            }
            @if s.checked_at_ms > 0 {
                span.when { " (verified by the console at " (iso8601(s.checked_at_ms)) ")" }
            }
        }
    }
}

/// A page of one message (a refusal, an error).
pub(crate) fn message(ctx: &Ctx<'_>, title: &str, text: &str) -> Markup {
    layout(ctx, title, html! { p #message { (text) } })
}

/// The first 16 characters of a hash.
pub(crate) fn short(hash: &str) -> &str {
    hash.get(..16).unwrap_or(hash)
}

/// Pretty JSON of a recorded value (escaped when interpolated).
pub(crate) fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The page of flow `flow` (its id percent-encoded as one path segment).
pub(crate) fn flow_link(flow: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(flow.as_bytes()).collect();
    format!("/flows/{}", encoded.replace('+', "%20"))
}
