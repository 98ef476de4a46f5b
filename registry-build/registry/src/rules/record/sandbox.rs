//! `sandbox_profile`: where the tool may connect (`egress`), what it may write (`filesystem`),
//! which host paths it may read (`read_only`) and which files a call may give it
//! (`workspace_inputs`).

use std::path::PathBuf;

use escepine_contract::files::{input_name_problem, MAX_WORKSPACE_INPUT_BYTES};
use escepine_contract::{Filesystem, Isolation, SideEffectClass, Transport, WorkspaceInput};
use serde_json::Value;

use super::context::Context;
use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::egress::{EgressEntry, AUTHORIZED_URLS, PUBLIC};
use crate::fields::Object;
use crate::host_path;
use crate::record::{EndpointSpec, SandboxProfile};
use crate::rule::Rule;
use crate::rust_names::input_field;

/// `sandbox_profile`: a closed object.
pub(super) fn profile(
    p: &Object<'_>,
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<SandboxProfile> {
    let src = p.src;
    p.closed(
        &[
            "egress",
            "filesystem",
            "isolation",
            "read_only",
            "workspace_inputs",
        ],
        "`sandbox_profile`",
        diags,
    );
    let egress = p.require("egress", diags).and_then(|v| {
        let Some(items) = v.as_array() else {
            p.wrong("egress", "a list of egress entries", diags);
            return None;
        };
        let mut out = Vec::new();
        let mut authorized_urls = false;
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let ptr = format!("/sandbox_profile/egress/{i}");
            match item.as_str() {
                Some(AUTHORIZED_URLS) => {
                    ok &= authorized_urls_entry(src, &ptr, authorized_urls, ctx, diags);
                    authorized_urls = true;
                    continue;
                }
                Some(PUBLIC) => {
                    diags.push(
                        Diagnostic::at(Rule::EgressReservedWord, src, &ptr, format!("`{PUBLIC}` is an envelope entry (tools may reach public addresses), not a profile entry"))
                            .help(format!("write `\"{AUTHORIZED_URLS}\"` to admit, per call, the origins of the URLs Cedar authorized")),
                    );
                    ok = false;
                    continue;
                }
                _ => {}
            }
            match item.as_str().map(str::parse::<EgressEntry>) {
                Some(Ok(entry)) => {
                    if let Some(env) = ctx.envelope {
                        if !env.covers(&entry) {
                            diags.push(
                                Diagnostic::at(Rule::EgressEnvelope, src, &ptr, format!("`{entry}` is outside the deployment envelope {}", env.source.display()))
                                    .help("add the host to the envelope, or admit it at run time with an overlay"),
                            );
                            ok = false;
                        }
                    }
                    out.push(entry);
                }
                Some(Err(e)) => {
                    diags.push(Diagnostic::at(Rule::EgressEntry, src, &ptr, e.to_string()));
                    ok = false;
                }
                None => {
                    diags.push(Diagnostic::at(Rule::EgressEntry, src, &ptr, "an egress entry must be a string"));
                    ok = false;
                }
            }
        }
        ok.then_some((out, authorized_urls))
    });
    let filesystem = p.string("filesystem", diags).and_then(|f| {
        if f == "workspace" {
            Some(Filesystem::Workspace)
        } else {
            diags.push(Diagnostic::at(Rule::Filesystem, src, "/sandbox_profile/filesystem", format!("`{f}`: the only file-system access is \"workspace\" (the sandbox's ephemeral workspace)")));
            None
        }
    });
    let isolation = match p.map.get("isolation") {
        None => Some(Isolation::default()),
        Some(v) => match v.as_str().and_then(Isolation::parse) {
            Some(tier) => Some(tier),
            None => {
                let tiers: Vec<&str> = Isolation::ALL.iter().map(|t| t.as_str()).collect();
                diags.push(Diagnostic::at(
                    Rule::Isolation,
                    src,
                    "/sandbox_profile/isolation",
                    format!("`{v}`: the isolation tier is one of {}", tiers.join(", ")),
                ));
                None
            }
        },
    };
    let read_only = match p.map.get("read_only") {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => check_read_only(src, items, ctx, diags),
        Some(_) => {
            p.wrong("read_only", "a list of absolute host paths", diags);
            None
        }
    };
    let workspace_inputs = match p.map.get("workspace_inputs") {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => check_workspace_inputs(src, items, diags),
        Some(_) => {
            p.wrong(
                "workspace_inputs",
                "a list of `{\"name\": …, \"max_bytes\": …}` objects",
                diags,
            );
            None
        }
    };
    let (egress, authorized_urls) = egress?;
    Some(SandboxProfile {
        egress,
        authorized_urls,
        filesystem: filesystem?,
        read_only: read_only?,
        workspace_inputs: workspace_inputs?,
        isolation: isolation?,
    })
}

/// The envelope's `isolation` rule: a tool of a listed side-effect class or action group runs
/// on at least the tier it names.
pub(super) fn isolation_within_envelope(
    src: &SourceFile,
    profile: &SandboxProfile,
    class: SideEffectClass,
    groups: &[String],
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) {
    let Some(rule) = ctx
        .envelope
        .and_then(|e| e.isolation.as_ref().map(|r| (e, r)))
    else {
        return;
    };
    let (env, rule) = rule;
    let Some(why) = rule.applies_to(class, groups) else {
        return;
    };
    if profile.isolation < rule.min {
        diags.push(
            Diagnostic::at(
                Rule::IsolationEnvelope,
                src,
                "/sandbox_profile/isolation",
                format!(
                    "the tool runs on `{}`, but the deployment envelope {} requires `{}` for {why}",
                    profile.isolation,
                    env.source.display(),
                    rule.min
                ),
            )
            .help(format!(
                "write `\"isolation\": \"{}\"` in `sandbox_profile`",
                rule.min
            )),
        );
    }
}

/// `sandbox_profile.workspace_inputs`: closed objects, each a file name (see
/// [`escepine_contract::files::input_name_problem`]) listed once, with a `max_bytes` from 1 to
/// [`MAX_WORKSPACE_INPUT_BYTES`] (which also bounds their sum) and an optional `required`
/// (default `true`).
fn check_workspace_inputs(
    src: &SourceFile,
    items: &[Value],
    diags: &mut Diagnostics,
) -> Option<Vec<WorkspaceInput>> {
    let mut out: Vec<WorkspaceInput> = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let ptr = format!("/sandbox_profile/workspace_inputs/{i}");
        let mut fail = |at: &str, message: String| {
            diags.push(Diagnostic::at(Rule::WorkspaceInput, src, at, message));
            ok = false;
        };
        let Some(map) = item.as_object() else {
            fail(
                &ptr,
                "a workspace input must be an object `{\"name\": …, \"max_bytes\": …}`".into(),
            );
            continue;
        };
        for key in map.keys() {
            if !["name", "max_bytes", "required"].contains(&key.as_str()) {
                fail(
                    &format!("{ptr}/{key}"),
                    format!(
                        "unknown field `{key}` of a workspace input (its fields: `name`, \
                         `max_bytes`, `required`)"
                    ),
                );
            }
        }
        let name = match map.get("name") {
            Some(Value::String(n)) => {
                let same_field = out
                    .iter()
                    .find(|w| w.name != *n && input_field(&w.name) == input_field(n));
                match (input_name_problem(n), same_field) {
                    (Some(problem), _) => {
                        fail(&format!("{ptr}/name"), problem);
                        None
                    }
                    _ if out.iter().any(|w| w.name == *n) => {
                        fail(&format!("{ptr}/name"), format!("`{n}` is listed twice"));
                        None
                    }
                    (None, Some(other)) => {
                        fail(
                            &format!("{ptr}/name"),
                            format!(
                                "`{n}` and `{}` are both the field `{}` of the typed client's \
                                 `Files`; rename one",
                                other.name,
                                input_field(n)
                            ),
                        );
                        None
                    }
                    (None, None) => Some(n.clone()),
                }
            }
            Some(_) => {
                fail(&format!("{ptr}/name"), "`name` must be a string".into());
                None
            }
            None => {
                fail(&ptr, "missing required field `name`".into());
                None
            }
        };
        let max_bytes = match map.get("max_bytes") {
            Some(v) => match v.as_u64() {
                Some(n) if (1..=MAX_WORKSPACE_INPUT_BYTES).contains(&n) => Some(n),
                _ => {
                    fail(
                        &format!("{ptr}/max_bytes"),
                        format!(
                            "`max_bytes` is {v}; it must be a whole number of bytes from 1 to \
                             {MAX_WORKSPACE_INPUT_BYTES} (16 MiB)"
                        ),
                    );
                    None
                }
            },
            None => {
                fail(
                    &ptr,
                    "missing required field `max_bytes`: the largest file a caller may give".into(),
                );
                None
            }
        };
        let required = match map.get("required") {
            None => Some(true),
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                fail(
                    &format!("{ptr}/required"),
                    "`required` must be `true` or `false`".into(),
                );
                None
            }
        };
        if let (Some(name), Some(max_bytes), Some(required)) = (name, max_bytes, required) {
            out.push(WorkspaceInput {
                name,
                max_bytes,
                required,
            });
        }
    }
    let total: u64 = out.iter().map(|w| w.max_bytes).sum();
    if ok && total > MAX_WORKSPACE_INPUT_BYTES {
        diags.push(Diagnostic::at(
            Rule::WorkspaceInput,
            src,
            "/sandbox_profile/workspace_inputs",
            format!(
                "the inputs' `max_bytes` add up to {total}; a call's files together may have at \
                 most {MAX_WORKSPACE_INPUT_BYTES} bytes (16 MiB)"
            ),
        ));
        return None;
    }
    ok.then_some(out)
}

/// The `authorized-urls` entry at `ptr`: listed once, and only where the envelope (when one is
/// given) has `public`.
fn authorized_urls_entry(
    src: &SourceFile,
    ptr: &str,
    repeated: bool,
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> bool {
    if repeated {
        diags.push(Diagnostic::at(
            Rule::EgressEntry,
            src,
            ptr,
            format!("`{AUTHORIZED_URLS}` is listed twice"),
        ));
        return false;
    }
    match ctx.envelope {
        Some(env) if !env.public => {
            diags.push(
                Diagnostic::at(
                    Rule::AuthorizedUrlsPublic,
                    src,
                    ptr,
                    format!(
                        "`{AUTHORIZED_URLS}` reaches public addresses, and the deployment envelope {} has no `{PUBLIC}` entry",
                        env.source.display()
                    ),
                )
                .help(format!("add `\"{PUBLIC}\"` to the envelope's `egress`")),
            );
            false
        }
        _ => true,
    }
}

/// `authorized-urls` needs URLs to authorize: a tool whose input schema has no per-URL field
/// (one URL-bearing field, or a list marked `x-authorize-each`) would be granted nothing. A
/// schema with URL fields in a shape Cedar cannot see one at a time is the per-URL shape rule's
/// (`input/per-url-shape`, which `authorized-urls` brings into force), not this one's.
pub(super) fn authorized_urls_need_a_url(
    src: &SourceFile,
    record: &Value,
    profile: &SandboxProfile,
    input_schema: &Value,
    diags: &mut Diagnostics,
) {
    if !profile.authorized_urls
        || crate::urls::per_url(input_schema).has_url()
        || !crate::urls::shape_problems(input_schema).is_empty()
    {
        return;
    }
    let at = record
        .pointer("/sandbox_profile/egress")
        .and_then(Value::as_array)
        .and_then(|items| items.iter().position(|i| i == AUTHORIZED_URLS))
        .map_or_else(
            || "/sandbox_profile/egress".to_string(),
            |i| format!("/sandbox_profile/egress/{i}"),
        );
    diags.push(
        Diagnostic::at(
            Rule::AuthorizedUrlsField,
            src,
            &at,
            format!("`{AUTHORIZED_URLS}` admits the origins of the URLs a call's authorization allowed, and the input schema has no per-URL field"),
        )
        .help("give the input one URL field (`\"format\": \"uri\"`), or a list of URLs marked `\"x-authorize-each\": true`"),
    );
}

/// `sandbox_profile.read_only`: absolute, lexically normal, distinct host paths that exist,
/// each under a `read_only` prefix of the envelope (when one is given).
fn check_read_only(
    src: &SourceFile,
    items: &[Value],
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let ptr = format!("/sandbox_profile/read_only/{i}");
        let mut fail = |d: Diagnostic| {
            diags.push(d);
            ok = false;
        };
        let Some(text) = item.as_str() else {
            fail(Diagnostic::at(
                Rule::ReadOnlyPath,
                src,
                &ptr,
                "a `read_only` entry must be a string (an absolute host path)",
            ));
            continue;
        };
        let path = match host_path::parse(text) {
            Ok(p) => p,
            Err(e) => {
                fail(Diagnostic::at(Rule::ReadOnlyPath, src, &ptr, e.to_string()));
                continue;
            }
        };
        if out.contains(&path) {
            fail(Diagnostic::at(
                Rule::ReadOnlyPath,
                src,
                &ptr,
                format!("`{text}` is listed twice"),
            ));
            continue;
        }
        if let Some(env) = ctx.envelope {
            if !env.admits_read_only(&path) {
                fail(
                    Diagnostic::at(
                        Rule::ReadOnlyEnvelope,
                        src,
                        &ptr,
                        format!(
                            "`{text}` is under no `read_only` prefix of the deployment envelope {}",
                            env.source.display()
                        ),
                    )
                    .help(format!(
                        "add `\"{text}\"` (or a directory above it) to the envelope's `read_only`"
                    )),
                );
                continue;
            }
        }
        if !path.exists() {
            fail(
                Diagnostic::at(
                    Rule::ReadOnlyExists,
                    src,
                    &ptr,
                    format!("`{text}` does not exist on this host: the sandbox cannot bind it"),
                )
                .help("install what the tool needs there, or remove the entry"),
            );
            continue;
        }
        out.push(path);
    }
    ok.then_some(out)
}

/// Workspace inputs are placed in the sandbox of one call before its tool starts, so only a
/// tool that gets a fresh sandbox per call takes them: `stdio-json`. An `mcp-stdio` server's
/// sandbox serves a session, which would keep one call's files for the next.
pub(super) fn workspace_inputs_need_a_fresh_sandbox(
    src: &SourceFile,
    endpoint: &EndpointSpec,
    profile: &SandboxProfile,
    diags: &mut Diagnostics,
) {
    // A remote endpoint has no sandbox at all: `endpoint/remote-sandbox` says so.
    if profile.workspace_inputs.is_empty()
        || matches!(
            endpoint.transport,
            Transport::StdioJson | Transport::McpHttp
        )
    {
        return;
    }
    diags.push(
        Diagnostic::at(
            Rule::WorkspaceInputTransport,
            src,
            "/sandbox_profile/workspace_inputs",
            format!(
                "workspace inputs are given to `stdio-json` tools only, and this tool's transport \
                 is `{}`: its sandbox serves more than one call",
                endpoint.transport.as_str()
            ),
        )
        .help("give the file's contents in the payload, or serve the tool over `stdio-json`"),
    );
}
