//! The policies of Escepine: the Cedar binding of a registry ([`cedar`]: the generated schema,
//! strict validation), the authorizer every call asks ([`authorize`]), the schema gates
//! ([`gate`]) and the policy tests ([`policy_tests`]).
//!
//! [`load`] checks what [`Sources`] name by every registration rule (`escepine_registry`) and
//! binds the policies to the records: the result is a [`BoundRegistry`], what the runtime, the
//! command line and the code generator work from.

#![deny(missing_docs)]

pub mod authorize;
pub mod cedar;
pub mod embedded;
pub mod gate;
pub mod policy_tests;
#[cfg(test)]
mod refusal_tests;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::ops::Deref;

use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::registry::{self, Registry, Sources};
use escepine_registry::rust_names;

use crate::cedar::Binding;

/// A registry whose policies are bound to its records: every record and SOP passed every rule
/// and the policies validated strictly against the generated Cedar schema. It reads as the
/// [`Registry`] it binds.
#[derive(Debug, Clone)]
pub struct BoundRegistry {
    registry: Registry,
    cedar: Binding,
}

impl BoundRegistry {
    /// The checked registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The Cedar schema and the validated policies.
    pub fn cedar(&self) -> &Binding {
        &self.cedar
    }

    /// The registry and its binding, taken apart.
    pub fn into_parts(self) -> (Registry, Binding) {
        (self.registry, self.cedar)
    }
}

impl Deref for BoundRegistry {
    type Target = Registry;

    fn deref(&self) -> &Registry {
        &self.registry
    }
}

/// Load and check everything `sources` names, and bind its policies: every registration rule
/// ([`registry::check`]), then (when those pass) the Cedar schema generated and merged with the
/// user's, every policy validated strictly, and every Cedar action given a Rust marker type.
///
/// # Errors
/// Every problem found, in every file, as [`Diagnostics`].
pub fn load(sources: &Sources) -> Result<BoundRegistry, Diagnostics> {
    let mut checked = registry::check(sources);
    if checked.has_errors() {
        return Err(checked.into_diagnostics());
    }
    match sources.policy_files().and_then(|p| {
        let b = cedar::bind_files(checked.records(), &p)?;
        Ok((b, p))
    }) {
        Ok((cedar, files)) => {
            let actions = cedar.actions();
            let ids: Vec<&str> = actions.iter().map(|a| a.id.as_str()).collect();
            let names = rust_names::check_actions(
                checked.record_files(),
                checked.records(),
                &ids,
                &files.schemas,
            );
            checked.report(names);
            Ok(BoundRegistry {
                registry: checked.finish()?,
                cedar,
            })
        }
        Err(d) => {
            checked.report(d);
            Err(checked.into_diagnostics())
        }
    }
}
