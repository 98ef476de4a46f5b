//! A registry compiled into the program ([`EmbeddedRegistry`], the `REGISTRY` constant the
//! generator writes), turned back into the [`Registry`](escepine_registry::registry::Registry) the runtime builds from.
//!
//! ```ignore
//! mod tools {
//!     escepine_contract::include_tools!();
//! }
//! let registry = escepine_policy::embedded::load(&tools::REGISTRY)?;
//! ```
//!
//! The embedded texts are the very files the build checked; [`load`] applies the same rules to
//! them again (so the result is the registry the build accepted, and a program whose binary
//! was tampered with still gets every check), reading nothing from disk but what an endpoint's
//! resolution needs (an absolute command must still exist).

use escepine_contract::{EmbeddedFile, EmbeddedRegistry};

use escepine_registry::diagnostic::{Diagnostics, SourceFile};
use escepine_registry::registry::Sources;

use crate::BoundRegistry;

/// The [`Sources`] of an embedded registry: every file given as text, the workspace binaries
/// as the build resolved them, the tool hosts linked into the program. Adjust them (a deployment's own envelope, say, with
/// [`Sources::envelope_text`]) before [`crate::load`].
pub fn sources(embedded: &EmbeddedRegistry) -> Sources {
    let text = |f: &EmbeddedFile| SourceFile::new(f.path, f.text);
    let mut s = Sources::new()
        .workspace_bins(embedded.workspace_bins.iter().copied())
        .linked_hosts(embedded.linked_hosts.iter().copied());
    s.record_texts = embedded.records.iter().map(text).collect();
    for f in embedded.policies {
        s.policy_texts.push(text(f));
    }
    s.envelope_text = embedded.envelope.as_ref().map(text);
    s.sop_texts = embedded.sops.iter().map(text).collect();
    s
}

/// The registry an embedded registry holds.
///
/// # Errors
/// The diagnostics of the rules, which a registry the build accepted passes (an absolute
/// endpoint command that no longer exists on this machine fails `endpoint/resolvable`).
pub fn load(embedded: &EmbeddedRegistry) -> Result<BoundRegistry, Diagnostics> {
    crate::load(&sources(embedded))
}
