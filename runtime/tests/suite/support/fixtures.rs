//! The registries of `runtime/tests/fixtures/<name>`: its `records/` and `policies/`.

use std::path::{Path, PathBuf};

/// `runtime/tests/fixtures/<name>`.
pub fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The registry of fixture `name` (panics with the rendered diagnostics if it does not load).
pub fn registry(name: &str) -> escepine_policy::BoundRegistry {
    let fixtures = dir(name);
    escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(fixtures.join("records"))
            .policies(fixtures.join("policies"))
            .workspace_root(escepine_testkit::bins::workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}
