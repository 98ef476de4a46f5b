//! `sandbox_profile`: where the tool may connect (`egress`), what it may write (`filesystem`)
//! and which host paths it may read (`read_only`).

use std::path::PathBuf;

use escepine_contract::Filesystem;
use serde_json::Value;

use super::context::Context;
use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::egress::{EgressEntry, AUTHORIZED_URLS, PUBLIC};
use crate::fields::Object;
use crate::host_path;
use crate::record::SandboxProfile;
use crate::rule::Rule;

/// `sandbox_profile`: a closed object.
pub(super) fn profile(
    p: &Object<'_>,
    ctx: &Context<'_>,
    diags: &mut Diagnostics,
) -> Option<SandboxProfile> {
    let src = p.src;
    p.closed(
        &["egress", "filesystem", "read_only"],
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
    let read_only = match p.map.get("read_only") {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => check_read_only(src, items, ctx, diags),
        Some(_) => {
            p.wrong("read_only", "a list of absolute host paths", diags);
            None
        }
    };
    let (egress, authorized_urls) = egress?;
    Some(SandboxProfile {
        egress,
        authorized_urls,
        filesystem: filesystem?,
        read_only: read_only?,
    })
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
