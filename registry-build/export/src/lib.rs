//! Tool definitions for agent ecosystems: `escepine export --format mcp|openai|anthropic|gemini`.
//!
//! Each registered record becomes one tool definition in the shape a provider documents, its
//! input schema normalised to that provider's documented schema rules:
//!
//! | format | shape | schema |
//! |---|---|---|
//! | [`Format::OpenAi`] | Responses API function tool `{"type":"function","name","description","parameters","strict":true}` ([`openai::to_chat_completions`] wraps it for Chat Completions) | strict mode: closed objects, every property required, optional ones nullable, only the keywords and formats OpenAI lists |
//! | [`Format::Anthropic`] | Messages API tool `{"name","description","input_schema"}` | the registered JSON Schema, minus our `x-` extensions |
//! | [`Format::Gemini`] | function declaration `{"name","description","parameters"}` | Gemini's OpenAPI 3.0 subset: `$ref` inlined, no `additionalProperties`/`const`/`$defs`, string enums only (`parametersJsonSchema` instead where the subset cannot say it: an empty nested object) |
//! | [`Format::Mcp`] | `tools/list` entry `{"name","description","inputSchema","outputSchema","annotations"}` | both schemas exactly as registered |
//!
//! What a provider cannot express (a dropped `format`, a length bound, an integer enum, a
//! default) moves into the description of the property that lost it, so the model still reads
//! it ([`describe`]); the runtime's input gate keeps enforcing the registered schema, which is
//! the authority. Where no faithful rendering exists (a name the provider refuses, a documented
//! size limit exceeded) the export fails with an [`ExportError`] naming the tool and the rule,
//! never a silently different contract.
//!
//! The OpenAI export makes optional fields required-and-nullable; a proposal in that dialect
//! carries `null` for an optional field it leaves out, and the runtime's JSON entry maps that
//! `null` back to "absent" (`escepine_policy::gate::drop_null_optionals`).

use escepine_registry::record::ToolRecord;
use serde_json::Value;

pub mod anthropic;
pub mod describe;
mod format;
pub mod gemini;
pub mod mcp;
mod node;
pub mod openai;

pub use format::{ExportError, Format};

/// The tool definitions of `records` for `format`, as a JSON array in record order.
///
/// # Errors
/// Every record that cannot be exported faithfully, all at once ([`ExportError::Several`] when
/// more than one).
pub fn export(records: &[ToolRecord], format: Format) -> Result<Value, ExportError> {
    let mut tools = Vec::with_capacity(records.len());
    let mut errors = Vec::new();
    for record in records {
        let one = match format {
            Format::Mcp => mcp::checked_tool(record),
            Format::OpenAi => openai::tool(record),
            Format::Anthropic => anthropic::tool(record),
            Format::Gemini => gemini::tool(record),
        };
        match one {
            Ok(t) => tools.push(t),
            Err(e) => errors.extend(e.problems().into_iter().cloned()),
        }
    }
    match errors.len() {
        0 => Ok(Value::Array(tools)),
        1 => Err(errors.remove(0)),
        _ => Err(ExportError::Several(errors)),
    }
}
