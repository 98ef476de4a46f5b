//! `endpoint`: how the tool is started (transport, command or image, digests), and the warning
//! for a script whose sandbox holds only its interpreter.

use std::path::PathBuf;

use escepine_contract::{ImageRef, ImageRefError, ImageSource, Transport};
use serde_json::Value;

use super::context::{Completeness, Context};
use super::remote;
use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::endpoint;
use crate::fields::Object;
use crate::host_path;
use crate::record::{EndpointSpec, ResolvedCommand, SandboxProfile};
use crate::rule::Rule;

/// `endpoint`: a closed object; its command resolves (on the host, or inside its image).
///
/// In a draft, a host command is judged by its spelling alone: the program that will serve it
/// is not built yet.
pub(super) fn check(
    e: &Object<'_>,
    ctx: &Context<'_>,
    completeness: Completeness,
    diags: &mut Diagnostics,
) -> Option<EndpointSpec> {
    let src = e.src;
    let transport = e.string("transport", diags).and_then(|t| {
        let parsed = Transport::parse(t);
        if parsed.is_none() {
            diags.push(Diagnostic::at(
                Rule::EndpointTransport,
                src,
                "/endpoint/transport",
                format!("`{t}` is not a transport; use stdio-json, mcp-stdio or mcp-http"),
            ));
        }
        parsed
    });
    if transport == Some(Transport::McpHttp) {
        let definition_sha256 = digest_field(
            e,
            "definition_sha256",
            Rule::EndpointDefinitionDigest,
            diags,
        );
        return remote::check(e, definition_sha256, diags);
    }
    e.closed(
        &[
            "transport",
            "image",
            "command",
            "args",
            "sha256",
            "definition_sha256",
            "url",
            "tool",
            "auth",
        ],
        "`endpoint`",
        diags,
    );
    if let Some(t) = transport {
        remote::no_remote_fields(e, t, diags);
    }
    let image = match e.map.get("image") {
        None => Some(None),
        Some(Value::String(raw)) => check_image(e, raw, ctx, diags).map(Some),
        Some(_) => {
            e.wrong("image", "a string `host:port/name@sha256:<digest>`", diags);
            None
        }
    };
    let has_image = e.map.contains_key("image");
    let (command, resolved) = if has_image {
        // The image's Entrypoint and Cmd apply when the command is left out.
        let command = match e.map.get("command") {
            None => Some(String::new()),
            Some(Value::String(c)) => Some(c.clone()),
            Some(_) => {
                e.wrong("command", "a string", diags);
                None
            }
        };
        let resolved = command
            .as_deref()
            .and_then(|c| match endpoint::resolve_in_image(c) {
                Ok(r) => Some(r),
                Err(err) => {
                    diags.push(Diagnostic::at(
                        Rule::EndpointImageCommand,
                        src,
                        "/endpoint/command",
                        err.to_string(),
                    ));
                    None
                }
            });
        (command, resolved)
    } else {
        let command = e.string("command", diags).map(str::to_string);
        let resolved = command
            .as_ref()
            .and_then(|c| match resolve_on_host(c, ctx, completeness) {
                Ok(r) => Some(r),
                Err(err) => {
                    diags.push(Diagnostic::at(
                        Rule::EndpointResolvable,
                        src,
                        "/endpoint/command",
                        err.to_string(),
                    ));
                    None
                }
            });
        (command, resolved)
    };
    if let (Some(Transport::McpStdio), Some(ResolvedCommand::Linked(host))) =
        (transport, resolved.as_ref())
    {
        diags.push(Diagnostic::at(
            Rule::EndpointTransport,
            src,
            "/endpoint/transport",
            format!(
                "`{host}` is a tool host linked into this program, which serves stdio-json; \
                 an MCP server is started as its own program"
            ),
        ));
    }
    let args = match e.map.get("args") {
        None => Some(Vec::new()),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        Some(_) => {
            e.wrong("args", "a list of strings", diags);
            None
        }
    };
    let sha256 = digest_field(e, "sha256", Rule::EndpointDigest, diags).and_then(|d| {
        if d.is_some() && has_image {
            diags.push(
                Diagnostic::at(
                    Rule::EndpointDigestWithImage,
                    src,
                    "/endpoint/sha256",
                    "`sha256` pins a host binary; with `image`, the image's digest pins \
                     everything the sandbox runs",
                )
                .help("remove `sha256`"),
            );
            return None;
        }
        Some(d)
    });
    let definition_sha256 = digest_field(
        e,
        "definition_sha256",
        Rule::EndpointDefinitionDigest,
        diags,
    )
    .and_then(|d| {
        if d.is_some() && transport.is_some_and(|t| t != Transport::McpStdio) {
            diags.push(
                Diagnostic::at(
                    Rule::EndpointDefinitionDigest,
                    src,
                    "/endpoint/definition_sha256",
                    "`definition_sha256` pins the tool an MCP server lists; it applies \
                             only to the `mcp-stdio` and `mcp-http` transports",
                )
                .help("remove it, or use an MCP transport"),
            );
            return None;
        }
        Some(d)
    });
    Some(EndpointSpec {
        transport: transport?,
        command: command?,
        args: args?,
        sha256: sha256?,
        image: image?,
        definition_sha256: definition_sha256?,
        resolved: resolved?,
        remote: None,
    })
}

/// A host command: resolved, or (in a draft) spelled as one that can be.
fn resolve_on_host(
    command: &str,
    ctx: &Context<'_>,
    completeness: Completeness,
) -> Result<ResolvedCommand, endpoint::ResolveError> {
    match completeness {
        Completeness::Full => endpoint::resolve(command, ctx.bins),
        Completeness::Draft => endpoint::check_spelling(command)
            .map(|()| ResolvedCommand::WorkspaceBin(command.to_string())),
    }
}

/// An optional SHA-256 field: 64 lower-case hex digits, else `rule` at its pointer.
fn digest_field(
    e: &Object<'_>,
    key: &str,
    rule: Rule,
    diags: &mut Diagnostics,
) -> Option<Option<String>> {
    match e.map.get(key) {
        None => Some(None),
        Some(Value::String(d)) if is_sha256_hex(d) => Some(Some(d.clone())),
        Some(d) => {
            diags.push(Diagnostic::at(
                rule,
                e.src,
                &e.ptr(key),
                format!("{d} is not a SHA-256 digest (64 lower-case hex digits)"),
            ));
            None
        }
    }
}

/// Whether `d` is 64 lower-case hex digits.
fn is_sha256_hex(d: &str) -> bool {
    d.len() == 64
        && d.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Parse `endpoint.image` and, with an envelope, check that one of its `images` entries admits
/// the image's source.
fn check_image(
    e: &Object<'_>,
    raw: &str,
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<ImageRef> {
    let src = e.src;
    let at = e.ptr("image");
    let image = match ImageRef::parse(raw) {
        Ok(i) => i,
        Err(err) => {
            let rule = match err {
                ImageRefError::NotPinned(_) => Rule::EndpointImagePinned,
                _ => Rule::EndpointImage,
            };
            let mut d = Diagnostic::at(rule, src, &at, err.to_string());
            if rule == Rule::EndpointImagePinned {
                d = d.help(
                    "pin the image by its manifest digest: `crane digest`, `skopeo inspect` or \
                     the registry's `Docker-Content-Digest` header give it",
                );
            }
            diags.push(d);
            return None;
        }
    };
    if let ImageSource::Layout { dir } = &image.source {
        if let Err(err) = dir.to_str().map_or(Ok(PathBuf::new()), host_path::parse) {
            diags.push(Diagnostic::at(
                Rule::EndpointImage,
                src,
                &at,
                format!("the layout directory of `{raw}`: {err}"),
            ));
            return None;
        }
    }
    if let Some(env) = ctx.envelope {
        if env.image_entry(&image).is_none() {
            let add = match &image.source {
                ImageSource::Registry { registry, .. } => format!(
                    "`\"{registry}\"` (HTTPS), or `\"http://{registry}\"` for a registry on a \
                     loopback address"
                ),
                ImageSource::Layout { dir } => format!("`\"oci:{}\"`", dir.display()),
            };
            diags.push(
                Diagnostic::at(
                    Rule::EndpointImageSource,
                    src,
                    &at,
                    format!(
                        "the image `{raw}` comes from a source the deployment envelope {} does \
                         not admit",
                        env.source.display()
                    ),
                )
                .help(format!("add {add} to the envelope's `images`")),
            );
            return None;
        }
    }
    Some(image)
}

/// Warn when a script endpoint's sandbox holds only its interpreter: the commands the script
/// runs (`sed`, `grep`, …) are missing there unless an image or `read_only` paths supply them.
pub(super) fn script_runtime(
    src: &SourceFile,
    e: &EndpointSpec,
    p: &SandboxProfile,
    diags: &mut Diagnostics,
) {
    if e.image.is_some() || !p.read_only.is_empty() {
        return;
    }
    let (ResolvedCommand::Path(path) | ResolvedCommand::OnPath(path)) = &e.resolved else {
        return;
    };
    if endpoint::is_script(path) {
        diags.push(
            Diagnostic::at(
                Rule::EndpointScriptRuntime,
                src,
                "/endpoint/command",
                format!(
                    "`{}` is a script (`#!`): its sandbox holds only the interpreter and its \
                     libraries, so the commands it runs (`sed`, `grep`, …) are missing there",
                    path.display()
                ),
            )
            .help(
                "list the paths the script needs in `sandbox_profile.read_only`, or run it from \
                 an `endpoint.image`",
            )
            .warning(),
        );
    }
}
