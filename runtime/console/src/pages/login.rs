//! `/login`: a development (or access) token, or the identity provider.

use maud::{html, Markup, DOCTYPE};

use super::{layout, Ctx};

/// The sign-in form; `browser` is the sign-in cookie's value the form repeats, `issuer` the
/// identity provider when one is configured, `refused` why the last attempt failed.
pub(crate) fn page(
    ctx: &Ctx<'_>,
    browser: &str,
    issuer: Option<&str>,
    refused: Option<&str>,
) -> Markup {
    layout(
        ctx,
        "Sign in",
        html! {
            @if let Some(why) = refused { p #message .failed { (why) } }
            form.card method="post" action="/login" {
                input type="hidden" name="login" value=(browser);
                label { "Token " input #token type="password" name="token" autocomplete="off" size="48"; }
                " "
                button #sign-in type="submit" { "Sign in" }
            }
            @if let Some(issuer) = issuer {
                p { a #oidc href="/login/oidc" { "Sign in with " (issuer) } }
            }
        },
    )
}

/// The page the identity provider's redirect ends on: the session cookie is set, and the page
/// moves on to the calls by itself (a refresh, no script).
pub(crate) fn signed_in(principal: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content="0;url=/calls";
                title { "Signed in · Escepine console" }
                link rel="stylesheet" href="/console.css";
            }
            body { main {
                p #message { "Signed in as " code { (principal) } ". " a href="/calls" { "Continue to the calls" } }
            } }
        }
    }
}
