//! Tools linked into the program being built ([`Builder::linked_tools`](super::Builder::linked_tools)):
//! their contracts turned into the record texts the registry checks, and their hosts' names.

use std::path::Path;

use escepine_contract::{Contract, Transport};
use escepine_registry::endpoint;

use super::error::BuildError;

/// One linked tool as a record text.
pub(crate) struct LinkedRecord {
    /// The name diagnostics and the embedded registry give it: `linked/<host>/<tool id>.json`.
    pub label: String,
    /// The record, as `--describe` would write it.
    pub text: String,
    /// The tool host serving it (the endpoint's `command`).
    pub host: &'static str,
}

/// The records of `contracts`, each served by the host its endpoint names.
///
/// # Errors
/// [`BuildError::Linked`] for a contract whose endpoint does not name a tool host by a bare
/// name over `stdio-json` (an image, a path, another transport), or whose schema text is not
/// JSON.
pub(crate) fn records(contracts: &[Contract]) -> Result<Vec<LinkedRecord>, BuildError> {
    contracts.iter().map(record).collect()
}

fn record(c: &Contract) -> Result<LinkedRecord, BuildError> {
    let refuse = |message: String| BuildError::Linked {
        tool: c.id.to_string(),
        message,
    };
    let host = c.endpoint.command;
    if let Some(image) = c.endpoint.image {
        return Err(refuse(format!(
            "its endpoint runs on the image `{image}`; only a tool served by a host binary \
             can be linked into the program"
        )));
    }
    if c.endpoint.transport != Transport::StdioJson {
        return Err(refuse(format!(
            "its endpoint speaks `{}`; a linked tool host speaks stdio-json",
            c.endpoint.transport.as_str()
        )));
    }
    // A bare name as the registry spells one (not a path), that cannot pass for an option.
    let bare = endpoint::check_spelling(host).is_ok()
        && !Path::new(host).is_absolute()
        && !host.starts_with('-');
    if !bare {
        return Err(refuse(format!(
            "its endpoint command `{host}` is not the bare name of a tool host (the crate \
             whose `#[tool]` it is, by default)"
        )));
    }
    let record = c
        .to_record()
        .map_err(|e| refuse(format!("its contract holds a schema that is not JSON: {e}")))?;
    let text = serde_json::to_string_pretty(&record)
        .map_err(|e| refuse(format!("its record does not serialise: {e}")))?;
    Ok(LinkedRecord {
        label: format!("linked/{host}/{}.json", c.id),
        text: text + "\n",
        host,
    })
}
