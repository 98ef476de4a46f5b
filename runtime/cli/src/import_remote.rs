//! `escepine import mcp --url URL [--bearer-secret NAME | --oauth-client FILE] [--secrets FILE]`:
//! the tools of a remote MCP server, listed over streamable HTTP by the runtime's own client
//! ([`escepine_runtime::remote::RemoteExecutor::list`]), drafted as `mcp-http` records.
//!
//! The URL is `https`, or plain `http` on a loopback address (the record's own rule,
//! [`RemoteUrl::parse`]). `--oauth-client FILE` holds the drafts' `endpoint.auth.oauth` object
//! as it will be written: the token endpoint (the same URL rule), the client id, the *name* of
//! the secret holding the client secret, and optional `scopes` and `resource`. Secret values
//! come from `--secrets FILE` (`NAME=value` lines), else the environment; none is written into
//! a draft, and none is printed.

use std::collections::BTreeMap;

use escepine_mcp::import::{EndpointDraft, RemoteDraft, ServerTools};
use escepine_registry::envelope::Envelope;
use escepine_registry::remote::{RemoteAuth, RemoteUrl, TokenGrant};
use escepine_runtime::remote::RemoteExecutor;
use escepine_runtime::secrets::{self, ChainSecrets, EnvSecrets, MapSecrets, SecretSource};
use serde_json::{json, Value};

use crate::error::{CliError, CliResult};
use crate::exit::{self, SERVER_FAILED};
use crate::import_drafts::{finish, Output};
use crate::io::Io;

/// What `import mcp --url` was asked.
#[derive(Debug)]
pub(crate) struct RemoteImport<'a> {
    /// `--url`.
    pub(crate) url: &'a str,
    /// `--bearer-secret NAME`.
    pub(crate) bearer_secret: Option<&'a str>,
    /// `--oauth-client FILE`.
    pub(crate) oauth_client: Option<&'a std::path::Path>,
    /// `--secrets FILE`.
    pub(crate) secrets: Option<&'a std::path::Path>,
    /// `--envelope FILE`.
    pub(crate) envelope: Option<&'a std::path::Path>,
    /// `--timeout-ms`.
    pub(crate) timeout: std::time::Duration,
    /// Where the drafts go.
    pub(crate) output: Output<'a>,
}

/// Import the remote server `a.url`.
pub(crate) fn import(a: &RemoteImport<'_>, io: &mut Io<'_>) -> CliResult {
    let usage = |msg: String| CliError::new(exit::USAGE, msg);
    let url = RemoteUrl::parse(a.url).map_err(|e| usage(format!("--url: {e}")))?;
    let envelope = match a.envelope {
        None => None,
        Some(path) => Some(Envelope::load(path).map_err(|d| usage(d.render()))?),
    };
    let (auth, auth_json) = match (a.bearer_secret, a.oauth_client) {
        (Some(name), _) => (
            RemoteAuth::Bearer {
                secret: name.to_string(),
            },
            Some(json!({ "bearer": name })),
        ),
        (None, Some(path)) => {
            let (grant, object) = oauth_client(path).map_err(usage)?;
            (
                RemoteAuth::ClientCredentials(grant),
                Some(json!({ "oauth": object })),
            )
        }
        (None, None) => (RemoteAuth::None, None),
    };
    let source: Box<dyn SecretSource> = match a.secrets {
        None => Box::new(EnvSecrets),
        Some(path) => Box::new(ChainSecrets(vec![
            Box::new(MapSecrets::from_file(path).map_err(usage)?),
            Box::new(EnvSecrets),
        ])),
    };
    let names: Vec<String> = auth.secrets().iter().map(|s| s.to_string()).collect();
    let values = secrets::resolve(&*source, &names);
    if let Some(missing) = names.iter().find(|n| !values.contains_key(*n)) {
        return Err(usage(format!(
            "the secret `{missing}` has no value (give it in --secrets FILE or the environment)"
        )));
    }
    let listed = list(&url, &auth, &values, a.timeout, &envelope)?;
    let mut egress = vec![url.authority()];
    if let Some(g) = auth.grant() {
        let te = g.token_endpoint.authority();
        if !egress.contains(&te) {
            egress.push(te);
        }
    }
    let endpoint = EndpointDraft::remote(RemoteDraft {
        url: url.to_string(),
        auth: auth_json,
        secrets: names,
        egress,
    });
    finish(
        &a.output,
        &listed,
        &endpoint,
        &[],
        envelope.as_ref(),
        None,
        io,
    )
}

/// The server's tools, within the import's timeout.
fn list(
    url: &RemoteUrl,
    auth: &RemoteAuth,
    values: &BTreeMap<String, String>,
    timeout: std::time::Duration,
    envelope: &Option<Envelope>,
) -> Result<ServerTools, CliError> {
    let failed = |why: String| CliError::new(SERVER_FAILED, format!("the MCP server {url}: {why}"));
    let ca_files = envelope
        .as_ref()
        .map(|e| e.remote_ca_files.clone())
        .unwrap_or_default();
    let client = RemoteExecutor::new(&ca_files).map_err(|e| failed(e.to_string()))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(format!("cannot start the async runtime: {e}")))?;
    let listed = rt
        .block_on(async { tokio::time::timeout(timeout, client.list(url, auth, values)).await })
        .map_err(|_| failed(format!("it did not list its tools within {timeout:?}")))?
        .map_err(|e| failed(e.to_string()))?;
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(ServerTools::new(listed.server_info.as_ref(), listed.tools))
}

/// The `--oauth-client` file: the grant, and the object the drafts write.
fn oauth_client(path: &std::path::Path) -> Result<(TokenGrant, Value), String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("--oauth-client {shown}: {e}"))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("--oauth-client {shown}: not JSON: {e}"))?;
    let Some(m) = v.as_object() else {
        return Err(format!("--oauth-client {shown}: must hold a JSON object"));
    };
    const FIELDS: &[&str] = &[
        "token_endpoint",
        "client_id",
        "client_secret",
        "scopes",
        "resource",
    ];
    if let Some(k) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "--oauth-client {shown}: /{k}: unknown field (its fields: {})",
            FIELDS.join(", ")
        ));
    }
    let text_field = |k: &str| -> Result<String, String> {
        m.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("--oauth-client {shown}: /{k} must be a non-empty string"))
    };
    let token_endpoint = RemoteUrl::parse(&text_field("token_endpoint")?)
        .map_err(|e| format!("--oauth-client {shown}: /token_endpoint: {e}"))?;
    let scopes = match m.get("scopes") {
        None => Vec::new(),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(_) => {
            return Err(format!(
                "--oauth-client {shown}: /scopes must be a list of scope names"
            ))
        }
    };
    let resource = match m.get("resource") {
        None => None,
        Some(_) => Some(text_field("resource")?),
    };
    let grant = TokenGrant {
        token_endpoint,
        client_id: text_field("client_id")?,
        client_secret: text_field("client_secret")?,
        scopes,
        resource,
        audience: None,
    };
    Ok((grant, v))
}
