//! What is to be proved beside "no policy errors": invariants, and an older policy set the
//! enforced one must only restrict.

use std::path::{Path, PathBuf};

use cedar_policy::{PolicySet, Schema};
use escepine_policy::cedar::policy_set;
use escepine_registry::diagnostic::Diagnostic;
use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::registry::PolicyFiles;
use escepine_registry::rule::Rule;

use crate::error::ProveError;

/// An invariant: a policy set the enforced set must imply (every request the enforced set
/// permits, it permits), such as `permit` everything but `forbid` page reads of LinkedIn.
#[derive(Debug, Clone)]
pub struct Invariant {
    /// Its file name (`no-linkedin-page-reads.cedar`).
    pub name: String,
    /// Its file.
    pub file: PathBuf,
    /// Its policies, validated against the registry's schema.
    pub policies: PolicySet,
}

/// An older version of the policies, validated against the current schema.
#[derive(Debug, Clone)]
pub struct OldPolicies {
    /// How it is named in reports (the directory as given).
    pub label: String,
    /// Its policies.
    pub policies: PolicySet,
}

/// Everything a proof run checks beside "no policy errors".
#[derive(Debug, Clone, Default)]
pub struct Obligations {
    /// What every request the runtime makes satisfies ([`crate::request_model`]): the
    /// invariants and `against` are proved for the enforced set together with it. Empty:
    /// every request the schema admits.
    pub model: PolicySet,
    /// Invariants, each proved for every request environment.
    pub invariants: Vec<Invariant>,
    /// The set the enforced one must only restrict (`--against`).
    pub against: Option<OldPolicies>,
}

/// Read the invariants of `dir`: each `*.cedar` file is one invariant (one policy set), parsed
/// and validated in strict mode against `schema` as the policies directory is.
///
/// # Errors
/// [`ProveError::Invalid`] with every problem of every file (each naming its file and line),
/// or naming `dir` when it is missing or holds no `*.cedar` file or a `*.cedarschema` (an
/// invariant speaks of the registry's schema only).
pub fn read_invariants(dir: &Path, schema: &Schema) -> Result<Vec<Invariant>, ProveError> {
    let what = format!("the invariants in {}", dir.display());
    let files = PolicyFiles::read(dir).map_err(|diagnostics| ProveError::Invalid {
        what: what.clone(),
        diagnostics,
    })?;
    let mut diagnostics = Diagnostics::new();
    for extra in &files.schemas {
        diagnostics.push(
            Diagnostic::file(
                Rule::PolicyValidation,
                &extra.path,
                "an invariants directory holds no schema: invariants are read against the \
                 registry's schema",
            )
            .help("move the declarations to the policies directory's `.cedarschema`"),
        );
    }
    if files.policies.is_empty() {
        diagnostics.push(Diagnostic::file(
            Rule::Missing,
            dir,
            "no invariant: the directory holds no `*.cedar` file",
        ));
    }
    let mut invariants = Vec::with_capacity(files.policies.len());
    for file in &files.policies {
        match policy_set(std::slice::from_ref(file), schema) {
            Ok(policies) => invariants.push(Invariant {
                name: file
                    .path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| file.path.display().to_string()),
                file: file.path.clone(),
                policies,
            }),
            Err(d) => diagnostics.extend(d),
        }
    }
    if diagnostics.is_empty() {
        Ok(invariants)
    } else {
        Err(ProveError::Invalid { what, diagnostics })
    }
}

/// Read the `*.cedar` files of an older policies directory as one set, validated in strict
/// mode against the current `schema` (its own `*.cedarschema`, if any, is not read: the sets are
/// compared over one schema).
///
/// # Errors
/// [`ProveError::Invalid`] with every problem of every file.
pub fn read_old_policies(dir: &Path, schema: &Schema) -> Result<OldPolicies, ProveError> {
    let what = format!("the old policies in {}", dir.display());
    let invalid = |diagnostics| ProveError::Invalid {
        what: what.clone(),
        diagnostics,
    };
    let files = PolicyFiles::read(dir).map_err(invalid)?;
    let policies = policy_set(&files.policies, schema).map_err(invalid)?;
    Ok(OldPolicies {
        label: dir.display().to_string(),
        policies,
    })
}
