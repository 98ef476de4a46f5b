//! `note_publish`: publish a note to the note service ([`crate::notes`]); compensated by
//! `note_retract` with the `note_id` it returns.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::ToolError;
use crate::notes::{self, SERVICE};
use crate::Context;

/// The payload (`tools/records/note_publish.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The note's title.
    pub title: String,
    /// Its body (Markdown).
    pub body: String,
}

/// The output (also the service's answer).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Output {
    /// The published note.
    pub note_id: String,
    /// Its revision (1 for a new note).
    pub revision: u64,
}

/// Publish.
///
/// # Errors
/// No service or idempotency key; the service failing or answering malformed JSON.
pub fn run(input: Input, ctx: &Context) -> Result<Output, ToolError> {
    let resp = notes::post(
        ctx,
        &["notes"],
        &json!({ "title": input.title, "body": input.body }),
    )?;
    let out: Output = resp.json(SERVICE)?;
    if out.note_id.is_empty() || out.revision < 1 {
        return Err(ToolError::Permanent(format!(
            "{SERVICE} answered an empty note id or a revision below 1"
        )));
    }
    Ok(out)
}
