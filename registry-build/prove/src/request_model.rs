//! The request model: what every request the runtime makes satisfies, as Cedar `forbid`s.
//!
//! The solver ranges over every request the schema admits, and the schema admits requests the
//! runtime never makes: `Tool::"x"` as the resource of another tool's action, a port of
//! `-1`, an empty host. Invariants and `--against` are proved for the enforced set *with* the
//! request model (`enforced ∧ model ⇒ invariant`): sound, since the runtime only makes
//! requests the model permits, and every counterexample is then one the runtime can make.
//! The model holds what the runtime guarantees by construction
//! (`escepine_policy::authorize`):
//! - the resource of a tool's action is `Tool::"<tool id>"`, with the record's
//!   `side_effect_class` and `version`;
//! - `context.url` (when present) has a port in 0..=65535, a non-empty scheme and host, and a
//!   path that is empty or starts with `/`.

use cedar_policy::{PolicySet, Schema};
use escepine_policy::cedar::policy_set;
use escepine_registry::diagnostic::SourceFile;
use escepine_registry::record::ToolRecord;

use crate::error::ProveError;

/// The policy-id prefix of the model's `forbid`s.
pub const MODEL_ID_PREFIX: &str = "escepine-request-model";

/// The request model of `records` over `schema`, validated in strict mode.
///
/// # Errors
/// [`ProveError::Invalid`] if the schema does not admit it (a user-declared action whose
/// resource is not `Tool`, say).
pub fn request_model(records: &[ToolRecord], schema: &Schema) -> Result<PolicySet, ProveError> {
    let text = model_text(records);
    policy_set(&[SourceFile::new("<request model>", text)], schema).map_err(|diagnostics| {
        ProveError::Invalid {
            what: "the request model of the records".to_string(),
            diagnostics,
        }
    })
}

fn model_text(records: &[ToolRecord]) -> String {
    let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    let mut text = String::new();
    for record in records {
        text.push_str(&format!(
            "@id({id})\nforbid (principal, action == Action::{action}, resource)\nunless {{\n  \
             resource == Tool::{tool} &&\n  resource.side_effect_class == {class} &&\n  \
             resource.version == {version}\n}};\n\n",
            id = quote(&format!("{MODEL_ID_PREFIX}-resource-{}", record.tool_id())),
            action = quote(record.cedar_action()),
            tool = quote(record.tool_id()),
            class = quote(record.side_effect_class().as_str()),
            version = quote(&record.version().to_string()),
        ));
    }
    if records
        .iter()
        .any(|r| escepine_registry::urls::per_url(r.input_schema()).has_url())
    {
        text.push_str(&format!(
            "@id(\"{MODEL_ID_PREFIX}-url\")\nforbid (principal, action, resource)\nwhen {{\n  \
             context has url &&\n  (context.url.port < 0 || context.url.port > 65535 ||\n   \
             context.url.scheme == \"\" || context.url.host == \"\" ||\n   \
             !(context.url.path == \"\" || context.url.path like \"/*\"))\n}};\n"
        ));
    }
    text
}
