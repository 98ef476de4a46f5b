//! No crate of the workspace has an import cycle between its modules (a `super` from a child to
//! its parent counts): a helper used by two modules lives below both. Every package with a
//! `src/lib.rs` or `src/main.rs` is checked, so a new crate is covered without being named here.

use std::path::{Path, PathBuf};

/// The directories of the workspace's packages: every `Cargo.toml` below the root, outside
/// build output, dependencies and fixtures.
fn packages(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir.join("Cargo.toml").is_file() {
            found.push(dir.clone());
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // The root unreadable would leave nothing to check: say why instead.
            Err(e) if dir == root => panic!("cannot list {}: {e}", root.display()),
            Err(_) => continue,
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let skipped = name.starts_with('.')
                || matches!(
                    name.as_ref(),
                    "target" | "node_modules" | "fixtures" | "src"
                );
            if path.is_dir() && !skipped {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn no_crate_of_the_workspace_has_a_module_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    let all = packages(&root);
    for package in all.iter().cloned() {
        let name = package
            .strip_prefix(&root)
            .unwrap_or(&package)
            .to_string_lossy()
            .into_owned();
        let src = package.join("src");
        if !src.join("lib.rs").is_file() && !src.join("main.rs").is_file() {
            continue;
        }
        let graph =
            escepine_module_graph::read(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        if let Err(cycles) = graph.check_acyclic() {
            failures.push(format!("{name}:\n{cycles}"));
        }
        checked.push(package);
    }
    assert!(
        checked.len() >= 10,
        "the workspace's crates are found: {checked:?} (packages under {}: {all:?})",
        root.display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
