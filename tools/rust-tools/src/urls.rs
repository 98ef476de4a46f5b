//! `url_normalize`, a record-first tool: implements `tools/records/url_normalize.json`.

use escepine_contract::ToolError;
use escepine_registry_macros::tool;

use crate::registry::url_normalize::{Input, Output};

/// Normalise a web URL (see the record's description).
///
/// `url` parsed it already (lower-case scheme and host, IDNA, default port dropped, dot
/// segments resolved); this drops the fragment and sorts, or drops, the query parameters.
#[tool(record = "url_normalize")]
pub async fn url_normalize(input: Input) -> Result<Output, ToolError> {
    let mut url = input.url;
    let Some(host) = url.host_str().map(str::to_string) else {
        return Err(ToolError::permanent(format!(
            "`{url}` has no host: only web URLs are normalised"
        )));
    };
    url.set_fragment(None);
    if input.drop_query == Some(true) {
        url.set_query(None);
    } else if url.query().is_some() {
        let mut pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        pairs.sort();
        if pairs.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
    }
    Ok(Output {
        scheme: url.scheme().to_string(),
        host,
        port: url
            .port()
            .and_then(|p| std::num::NonZeroU64::new(u64::from(p))),
        path: url.path().to_string(),
        url,
    })
}
