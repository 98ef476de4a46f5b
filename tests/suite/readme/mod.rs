//! README is a working start: its snippets, extracted exactly and built outside the workspace,
//! compile and behave.
//!
//! README marks its snippets (see [`snippets`]): the files of two crates — an agent program
//! (`Cargo.toml`, `build.rs`, a record, a policy, `main.rs` making one typed call in the
//! sandbox) and a crate of tools written in Rust (`Cargo.toml`, `build.rs`, `.cedarschema`,
//! `main.rs` with `#[tool]`) — and the commands a reader runs, each followed by what it
//! prints. [`readme_snippets_build_and_behave`] writes the files beside a pretended clone that is
//! this checkout (the one edit: `../escepine/…` becomes this checkout's path), runs the
//! commands in README order with `bash` (each must exit 0) and compares what they print with
//! README's output blocks. Every record left in a `records/` directory — README's, and those a
//! tool host's `--describe` wrote — must validate against `registry-build/record.schema.json`.
//! Run it with `--nocapture` to see each command's time.

mod project;
mod snippets;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use project::{checkout, lines_in_order, Project};
use snippets::Snippet;

fn readme() -> Vec<Snippet> {
    let path = checkout().join("README.md");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    snippets::parse(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// The crates README gives: the top directories of its files that hold a `Cargo.toml`.
fn crates(snippets: &[Snippet]) -> BTreeSet<PathBuf> {
    snippets
        .iter()
        .filter_map(|s| match s {
            Snippet::File { path, .. } if path.ends_with("Cargo.toml") => {
                path.parent().map(Path::to_path_buf)
            }
            _ => None,
        })
        .collect()
}

fn record_validator() -> jsonschema::Validator {
    let path = checkout().join("registry-build/record.schema.json");
    let schema: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `records/*.json` files under `dir`, at any depth.
fn records_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() && !p.ends_with("target") {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json")
                && d.file_name().is_some_and(|n| n == "records")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// README gives each of its crates whole: a manifest, a build script and a `main.rs`, commands
/// that build and run it, and what they print. (Without this, a README that lost its snippets
/// would pass the test below by running nothing.)
#[test]
fn readme_gives_whole_crates_and_their_commands() {
    let snippets = readme();
    let crates = crates(&snippets);
    assert!(crates.len() >= 2, "README gives {} crate(s)", crates.len());
    for c in &crates {
        for file in ["Cargo.toml", "build.rs", "src/main.rs"] {
            let want = c.join(file);
            assert!(
                snippets
                    .iter()
                    .any(|s| matches!(s, Snippet::File { path, .. } if *path == want)),
                "README has no `file={}` block",
                want.display()
            );
        }
        for (what, found) in [
            (
                "run",
                snippets
                    .iter()
                    .any(|s| matches!(s, Snippet::Run { dir, .. } if dir == c)),
            ),
            (
                "output",
                snippets
                    .iter()
                    .any(|s| matches!(s, Snippet::Output { dir, .. } if dir == c)),
            ),
        ] {
            assert!(found, "README has no `{what}={}` block", c.display());
        }
    }
    // Every dependency on the project is a path into the clone beside the crate.
    for s in &snippets {
        if let Snippet::File { path, text, .. } = s {
            if path.ends_with("Cargo.toml") {
                for line in text.lines().filter(|l| l.contains("escepine")) {
                    if line.contains("path") {
                        assert!(
                            line.contains("path = \"../escepine/"),
                            "{}: `{line}` does not name the clone as `../escepine/…`",
                            path.display()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn readme_snippets_build_and_behave() {
    let snippets = readme();
    let project = Project::lay_out(&snippets);
    let mut last_stdout: std::collections::BTreeMap<PathBuf, (usize, String)> =
        std::collections::BTreeMap::new();
    for s in &snippets {
        match s {
            Snippet::File { .. } => {}
            Snippet::Run { dir, script, line } => {
                let ran = project.run(dir, script);
                eprintln!(
                    "README.md:{line}: ran in {} ({:.1} s)",
                    dir.display(),
                    ran.took.as_secs_f64()
                );
                // What had to be compiled (crates this workspace's builds had not left fresh).
                for l in ran.stderr().lines().map(str::trim) {
                    if l.starts_with("Compiling") {
                        eprintln!("  {l}");
                    }
                }
                assert!(
                    ran.output.status.success(),
                    "README.md:{line}: the commands in {} failed ({}):\n{script}\n\
                     --- stdout\n{}\n--- stderr\n{}",
                    dir.display(),
                    ran.output.status,
                    ran.stdout(),
                    ran.stderr()
                );
                last_stdout.insert(dir.clone(), (*line, ran.stdout()));
            }
            Snippet::Output { dir, text, line } => {
                let (ran_at, stdout) = last_stdout.get(dir).unwrap_or_else(|| {
                    panic!("README.md:{line}: nothing ran in {}", dir.display())
                });
                if let Err(missing) = lines_in_order(text, stdout) {
                    panic!(
                        "README.md:{line}: the commands of line {ran_at} did not print `{missing}` \
                         (README's lines, in order); they printed:\n{stdout}"
                    );
                }
            }
        }
    }

    // README's records, and those the tool hosts described, are records of the documented format.
    let validator = record_validator();
    let records = records_under(&project.root);
    assert!(
        !records.is_empty(),
        "no records under {}",
        project.root.display()
    );
    for path in &records {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let value: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{} does not validate against registry-build/record.schema.json:\n{}",
            path.display(),
            errors.join("\n")
        );
    }
}
