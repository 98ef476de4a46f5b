//! The note service `note_publish` and `note_retract` are clients of.
//!
//! A deliberately small HTTP+JSON API, so that the catalog has one compensatable pair to show
//! sagas with; the research example serves it on loopback, and any service speaking it works.
//! Base: [`NOTES_BASE_URL`]; with
//! [`NOTES_API_KEY`](crate::config::NOTES_API_KEY) set, every request carries
//! `Authorization: Bearer <key>`.
//!
//! ## `POST {base}/notes` — publish
//! Headers: `Content-Type: application/json`, `Idempotency-Key: <ESCEPINE_IDEMPOTENCY_KEY>`
//! (always sent; the runtime keeps it across the attempts of one call, so a retried publish
//! cannot publish twice). Body: `{"title": "…", "body": "…"}`.
//!
//! Answer `201 Created` (or `200 OK`): `{"note_id": "<non-empty string>", "revision": <integer ≥
//! 1>}`. A request repeating a known idempotency key with the same body gets the first answer
//! again (same `note_id` and `revision`, no new note); with a different body, `409 Conflict`.
//! Publishing with a new key creates a new note (revision 1). Other fields in an answer are
//! ignored.
//!
//! ## `POST {base}/notes/{note_id}/retract` — retract
//! Headers: as above (`Idempotency-Key` included); no body needed (`{}` is sent).
//! `note_id` is one percent-encoded path segment.
//!
//! Answer `200 OK`: `{"note_id": "…", "retracted": true}`. Retracting is idempotent: retracting
//! an already retracted note answers the same. The note is not deleted: its state becomes
//! "retracted", a later version of it (the tool's class is `supersede`). An unknown note is
//! `404 Not Found`.
//!
//! ## Errors
//! Errors are JSON `{"error": "<message>"}` with a 4xx status (permanent: the tools fail and
//! report the message) or 408/429/5xx (transient: the tools exit 75 and the runtime retries).

use std::time::Duration;

use serde_json::Value;

use crate::config::{Api, NOTES_BASE_URL};
use crate::error::ToolError;
use crate::http::{check_api_status, Response, API_BODY_LIMIT};
use crate::Context;

/// What messages call the service.
pub const SERVICE: &str = "the note service";

/// The configured service.
///
/// # Errors
/// No base URL configured.
pub fn service(ctx: &Context) -> Result<&Api, ToolError> {
    ctx.config
        .notes
        .as_ref()
        .ok_or_else(|| ToolError::Config(format!("{NOTES_BASE_URL} is not set (the note service)")))
}

/// The idempotency key of this call.
///
/// # Errors
/// It is missing (the runtime always sets it).
pub fn idempotency_key(ctx: &Context) -> Result<&str, ToolError> {
    ctx.idempotency_key.as_deref().ok_or_else(|| {
        ToolError::Config(format!(
            "{} is not set (the runtime sets it for every call)",
            escepine_contract::ENV_IDEMPOTENCY_KEY
        ))
    })
}

/// `POST {base}/{segments…}` with `body`, the idempotency key and the key if any; the answer
/// checked for a 2xx status.
///
/// # Errors
/// Transport failures and non-2xx statuses, classified.
pub fn post(ctx: &Context, segments: &[&str], body: &Value) -> Result<Response, ToolError> {
    let api = service(ctx)?;
    let key = idempotency_key(ctx)?;
    let bearer = api.key.as_ref().map(|k| format!("Bearer {k}"));
    let mut headers = vec![("accept", "application/json"), ("idempotency-key", key)];
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    let http = ctx.http(Duration::from_secs(8));
    let resp = http.post_json(&api.endpoint(segments), &headers, body, API_BODY_LIMIT)?;
    check_api_status(&resp, SERVICE)?;
    Ok(resp)
}
