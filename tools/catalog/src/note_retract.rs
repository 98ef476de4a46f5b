//! `note_retract`: retract a published note ([`crate::notes`]); idempotent, so the runtime may
//! retry it freely, and the inverse a rollback of `note_publish` runs.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::ToolError;
use crate::notes::{self, SERVICE};
use crate::Context;

/// The payload (`tools/records/note_retract.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The note to retract.
    pub note_id: String,
}

/// The output (also the service's answer).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Output {
    /// The note.
    pub note_id: String,
    /// Always `true` on success.
    pub retracted: bool,
}

/// Retract.
///
/// # Errors
/// No service or idempotency key; the service failing, answering malformed JSON, or not
/// confirming the retraction.
pub fn run(input: Input, ctx: &Context) -> Result<Output, ToolError> {
    if input.note_id.is_empty() {
        return Err(ToolError::Input("an empty note id".into()));
    }
    let resp = notes::post(ctx, &["notes", &input.note_id, "retract"], &json!({}))?;
    let out: Output = resp.json(SERVICE)?;
    if !out.retracted || out.note_id != input.note_id {
        return Err(ToolError::Permanent(format!(
            "{SERVICE} did not confirm retracting the note it was asked to"
        )));
    }
    Ok(out)
}
