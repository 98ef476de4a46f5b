//! `endpoint` of transport `mcp-http`: the remote server's `url`, the tool's name there, its
//! pinned definition, and `auth` — then, across the record, that every origin the runtime will
//! connect to is in the profile's egress, that every credential is a declared secret, and that
//! nothing asks for a sandbox that does not exist.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fields::Object;
use crate::record::{EndpointSpec, ResolvedCommand, SandboxProfile};
use crate::remote::{RemoteAuth, RemoteSpec, RemoteUrl, TokenGrant};
use crate::rule::Rule;
use escepine_contract::Transport;

/// The fields of a remote endpoint.
pub(super) const FIELDS: &[&str] = &["transport", "url", "tool", "definition_sha256", "auth"];

/// The fields only a local endpoint has.
pub(super) const LOCAL_ONLY: &[&str] = &["command", "args", "sha256", "image"];

/// The fields only a remote endpoint has.
pub(super) const REMOTE_ONLY: &[&str] = &["url", "tool", "auth"];

/// An `mcp-http` endpoint (its transport already read): every field checked, or `None` with
/// the problems reported.
pub(super) fn check(
    e: &Object<'_>,
    definition_sha256: Option<Option<String>>,
    diags: &mut Diagnostics,
) -> Option<EndpointSpec> {
    let src = e.src;
    let before = diags.error_count();
    for key in LOCAL_ONLY.iter().filter(|k| e.map.contains_key(**k)) {
        diags.push(
            Diagnostic::at(
                Rule::EndpointRemoteFields,
                src,
                &e.ptr(key),
                format!(
                    "`{key}` belongs to an endpoint run on this machine; an `mcp-http` \
                     endpoint is a remote server the runtime calls"
                ),
            )
            .help("remove it: `url` and `tool` name the remote tool"),
        );
    }
    e.closed(
        &[FIELDS, LOCAL_ONLY].concat(),
        "an `mcp-http` `endpoint`",
        diags,
    );
    let url = match e.map.get("url") {
        None => {
            diags.push(Diagnostic::at(
                Rule::EndpointRemoteUrl,
                src,
                &e.at,
                "an `mcp-http` endpoint needs `url`, the server's MCP endpoint",
            ));
            None
        }
        Some(v) => remote_url(e, "url", v, diags),
    };
    let tool = match e.map.get("tool") {
        Some(Value::String(t)) if !t.is_empty() && !t.chars().any(char::is_control) => {
            Some(t.clone())
        }
        Some(_) => {
            diags.push(Diagnostic::at(
                Rule::EndpointRemoteFields,
                src,
                &e.ptr("tool"),
                "`tool` must be the server's name for the tool: a non-empty string",
            ));
            None
        }
        None => {
            diags.push(
                Diagnostic::at(
                    Rule::EndpointRemoteFields,
                    src,
                    &e.at,
                    "an `mcp-http` endpoint needs `tool`, the server's name for the tool",
                )
                .help("`escepine import mcp --url URL` writes it"),
            );
            None
        }
    };
    let auth = match e.map.get("auth") {
        None => Some(RemoteAuth::None),
        Some(v) => auth(e, v, diags),
    };
    if diags.error_count() != before {
        return None;
    }
    Some(EndpointSpec {
        transport: Transport::McpHttp,
        command: String::new(),
        args: Vec::new(),
        sha256: None,
        image: None,
        definition_sha256: definition_sha256?,
        resolved: ResolvedCommand::Remote,
        remote: Some(RemoteSpec {
            url: url?,
            tool: tool?,
            auth: auth?,
        }),
    })
}

/// A local endpoint must not carry the remote fields.
pub(super) fn no_remote_fields(e: &Object<'_>, transport: Transport, diags: &mut Diagnostics) {
    for key in REMOTE_ONLY.iter().filter(|k| e.map.contains_key(**k)) {
        diags.push(
            Diagnostic::at(
                Rule::EndpointRemoteFields,
                e.src,
                &e.ptr(key),
                format!(
                    "`{key}` names a remote server; the `{}` transport runs a command on this \
                     machine",
                    transport.as_str()
                ),
            )
            .help("use `\"transport\": \"mcp-http\"` for a remote MCP server"),
        );
    }
}

/// A URL member (`url`, `token_endpoint`) of `o`.
fn remote_url(o: &Object<'_>, key: &str, v: &Value, diags: &mut Diagnostics) -> Option<RemoteUrl> {
    let Some(text) = v.as_str() else {
        diags.push(Diagnostic::at(
            Rule::EndpointRemoteUrl,
            o.src,
            &o.ptr(key),
            format!("`{key}` must be a URL string"),
        ));
        return None;
    };
    match RemoteUrl::parse(text) {
        Ok(u) => Some(u),
        Err(why) => {
            diags.push(Diagnostic::at(
                Rule::EndpointRemoteUrl,
                o.src,
                &o.ptr(key),
                why,
            ));
            None
        }
    }
}

/// `endpoint.auth`: exactly one of `bearer`, `oauth`, `token_exchange`.
fn auth(e: &Object<'_>, v: &Value, diags: &mut Diagnostics) -> Option<RemoteAuth> {
    let src = e.src;
    let at = e.ptr("auth");
    let refuse = |diags: &mut Diagnostics, ptr: &str, msg: String| {
        diags.push(
            Diagnostic::at(Rule::EndpointRemoteAuth, src, ptr, msg).help(
                "write one of {\"bearer\": \"SECRET\"}, {\"oauth\": {…}}, \
                 {\"token_exchange\": {…}}",
            ),
        );
    };
    let Some(map) = v.as_object() else {
        refuse(diags, &at, "`auth` must be an object".into());
        return None;
    };
    let keys: Vec<&String> = map.keys().collect();
    let [key] = keys.as_slice() else {
        refuse(
            diags,
            &at,
            format!(
                "`auth` must hold exactly one way to authenticate, not {}",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        );
        return None;
    };
    let ptr = format!("{at}/{key}");
    match (key.as_str(), &map[key.as_str()]) {
        ("bearer", Value::String(secret)) if !secret.is_empty() => Some(RemoteAuth::Bearer {
            secret: secret.clone(),
        }),
        ("bearer", _) => {
            refuse(
                diags,
                &ptr,
                "`bearer` names the secret holding the token: a non-empty string".into(),
            );
            None
        }
        ("oauth", Value::Object(m)) => {
            grant(e, &ptr, m, "resource", false, diags).map(RemoteAuth::ClientCredentials)
        }
        ("token_exchange", Value::Object(m)) => {
            grant(e, &ptr, m, "audience", true, diags).map(RemoteAuth::TokenExchange)
        }
        ("oauth" | "token_exchange", _) => {
            refuse(diags, &ptr, format!("`{key}` must be an object"));
            None
        }
        (other, _) => {
            refuse(
                diags,
                &ptr,
                format!("`{other}` is not a way to authenticate"),
            );
            None
        }
    }
}

/// A token grant's object at `ptr`: `token_endpoint`, `client_id`, `client_secret` (a secret
/// name), optional `scopes`, and the `target` (`resource`, optional; `audience`, required when
/// `target_required`).
fn grant(
    e: &Object<'_>,
    ptr: &str,
    m: &Map<String, Value>,
    target: &str,
    target_required: bool,
    diags: &mut Diagnostics,
) -> Option<TokenGrant> {
    let o = Object::new(e.src, ptr, m, e.vocabulary);
    o.closed(
        &[
            "token_endpoint",
            "client_id",
            "client_secret",
            "scopes",
            target,
        ],
        &format!("`{}`", ptr.rsplit('/').next().unwrap_or("auth")),
        diags,
    );
    let before = diags.error_count();
    let refuse = |diags: &mut Diagnostics, key: &str, msg: &str| {
        diags.push(Diagnostic::at(
            Rule::EndpointRemoteAuth,
            e.src,
            &o.ptr(key),
            msg.to_string(),
        ));
    };
    let text = |diags: &mut Diagnostics, key: &str, required: bool| -> Option<Option<String>> {
        match m.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Some(Some(s.clone())),
            None if !required => Some(None),
            None => {
                refuse(diags, key, &format!("`{key}` is required"));
                None
            }
            Some(_) => {
                refuse(diags, key, &format!("`{key}` must be a non-empty string"));
                None
            }
        }
    };
    let token_endpoint = match m.get("token_endpoint") {
        Some(v) => remote_url(&o, "token_endpoint", v, diags),
        None => {
            refuse(diags, "token_endpoint", "`token_endpoint` is required");
            None
        }
    };
    let client_id = text(diags, "client_id", true).flatten();
    let client_secret = text(diags, "client_secret", true).flatten();
    let scopes = match m.get("scopes") {
        None => Some(Vec::new()),
        Some(Value::Array(items))
            if items.iter().all(|s| {
                s.as_str()
                    .is_some_and(|s| !s.is_empty() && !s.contains(char::is_whitespace))
            }) =>
        {
            Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            )
        }
        Some(_) => {
            refuse(
                diags,
                "scopes",
                "`scopes` must be a list of scope names (no spaces)",
            );
            None
        }
    };
    let target_value = text(diags, target, target_required);
    if diags.error_count() != before {
        return None;
    }
    let target_value = target_value?;
    let (resource, audience) = if target == "audience" {
        (None, target_value)
    } else {
        (target_value, None)
    };
    Some(TokenGrant {
        token_endpoint: token_endpoint?,
        client_id: client_id?,
        client_secret: client_secret?,
        scopes: scopes?,
        resource,
        audience,
    })
}

/// Across the record: every origin the runtime connects to for a remote endpoint is covered
/// by the profile's egress; every credential `auth` names is a declared secret; no read-only
/// paths or workspace inputs (there is no sandbox).
pub(super) fn cross(
    rec: &Object<'_>,
    e: &EndpointSpec,
    profile: &SandboxProfile,
    secrets: &[String],
    diags: &mut Diagnostics,
) {
    let Some(remote) = &e.remote else { return };
    let src = rec.src;
    for (i, url) in remote.urls().into_iter().enumerate() {
        if url.admitted_by(&profile.egress) {
            continue;
        }
        let (ptr, what) = if i == 0 {
            ("/endpoint/url".to_string(), "the server's origin")
        } else {
            (
                format!(
                    "/endpoint/auth/{}/token_endpoint",
                    remote.auth.key().unwrap_or("auth")
                ),
                "the token endpoint's origin",
            )
        };
        diags.push(
            Diagnostic::at(
                Rule::EndpointRemoteEgress,
                src,
                &ptr,
                format!(
                    "{what} `{}` is not in `sandbox_profile.egress`: the runtime connects only \
                     to origins the profile (and the deployment envelope) admit",
                    url.authority()
                ),
            )
            .help(format!(
                "add \"{}\" to `sandbox_profile.egress`",
                url.authority()
            )),
        );
    }
    if let Some(key) = remote.auth.key() {
        for name in remote.auth.secrets() {
            if secrets.iter().any(|s| s == name) {
                continue;
            }
            let field = if key == "bearer" {
                format!("/endpoint/auth/{key}")
            } else {
                format!("/endpoint/auth/{key}/client_secret")
            };
            diags.push(
                Diagnostic::at(
                    Rule::EndpointRemoteAuth,
                    src,
                    &field,
                    format!(
                        "`{name}` is not declared in `auth.secrets`: only declared secrets are \
                         read from the secret source and scrubbed from what is recorded"
                    ),
                )
                .help(format!("add \"{name}\" to `auth.secrets`")),
            );
        }
    }
    for (key, given) in [
        ("read_only", !profile.read_only.is_empty()),
        ("workspace_inputs", !profile.workspace_inputs.is_empty()),
        (
            "isolation",
            profile.isolation != escepine_contract::Isolation::default(),
        ),
    ] {
        if given {
            diags.push(Diagnostic::at(
                Rule::EndpointRemoteSandbox,
                src,
                &format!("/sandbox_profile/{key}"),
                format!(
                    "`{key}` is given to a sandbox; an `mcp-http` tool runs remotely, with no \
                     sandbox on this machine"
                ),
            ));
        }
    }
}
