//! `sandbox_profile`: where the tool may connect (`egress`), what it may write (`filesystem`)
//! and which host paths it may read (`read_only`).

use std::path::PathBuf;

use escepine_contract::Filesystem;
use serde_json::Value;

use super::context::Context;
use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::egress::EgressEntry;
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
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let ptr = format!("/sandbox_profile/egress/{i}");
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
        ok.then_some(out)
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
    Some(SandboxProfile {
        egress: egress?,
        filesystem: filesystem?,
        read_only: read_only?,
    })
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
