//! README's crates laid out beside a "clone" that is this checkout, and README's commands run
//! there, sharing this workspace's target directory.
//!
//! The directory is outside the workspace (under the system's temporary directory, one per
//! checkout, emptied at each run): README's crates are workspaces of their own, as a reader's
//! would be. Each gets this workspace's `Cargo.lock`, so dependencies resolve to the versions
//! built here. What differs from a reader's machine, so that nothing is compiled twice: the
//! commands run with this workspace's `CARGO_TARGET_DIR`, and a `.cargo/config.toml` above the
//! crates gives them this workspace's `dev` profile (debug information is part of an artifact's
//! identity, and the workspace's own packages are not members of README's workspaces).

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::snippets::{point_at, Snippet};

/// This checkout (the workspace root).
pub fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// This workspace's target directory (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
pub fn target_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().map(Path::to_path_buf).unwrap_or(tmp)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// README's files written out, ready for its commands; removed when dropped, unless the test
/// failed (then kept to look at).
pub struct Project {
    /// The directory beside the (pretended) clone: README's crates are its sub-directories.
    pub root: PathBuf,
}

impl Drop for Project {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            if let Err(e) = fs::remove_dir_all(&self.root) {
                eprintln!("cannot remove {}: {e}", self.root.display());
            }
        }
    }
}

impl Project {
    /// Write every `File` snippet (pointed at this checkout) under a fresh directory outside
    /// the workspace, with the lock file beside each manifest and the shared profile above.
    pub fn lay_out(snippets: &[Snippet]) -> Self {
        let mut hasher = DefaultHasher::new();
        checkout().hash(&mut hasher);
        let root = std::env::temp_dir().join(format!("escepine-readme-{:016x}", hasher.finish()));
        if root.exists() {
            fs::remove_dir_all(&root).unwrap_or_else(|e| panic!("empty {}: {e}", root.display()));
        }
        assert!(
            !root.starts_with(checkout()),
            "{} is inside the workspace",
            root.display()
        );
        let lock = read(&checkout().join("Cargo.lock"));
        for s in snippets {
            if let Snippet::File { path, text, .. } = s {
                let file = root.join(path);
                write(&file, &point_at(text, &checkout()));
                if file.file_name().is_some_and(|n| n == "Cargo.toml") {
                    write(&file.with_file_name("Cargo.lock"), &lock);
                }
            }
        }
        write(&root.join(".cargo/config.toml"), &shared_profile());
        Self { root }
    }

    /// Run one `Run` snippet: `bash -euo pipefail` in its directory, pointed at this checkout.
    pub fn run(&self, dir: &Path, script: &str) -> Ran {
        let started = Instant::now();
        let mut cmd = Command::new("bash");
        cmd.args(["-euo", "pipefail", "-c"])
            .arg(point_at(script, &checkout()))
            .current_dir(self.root.join(dir))
            .env("CARGO_TERM_COLOR", "never");
        // What cargo set for this test (CARGO_PKG_*, CARGO_MANIFEST_DIR, …) is not README's.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if key.starts_with("CARGO_") && key != "CARGO_HOME" {
                cmd.env_remove(key.as_ref());
            }
        }
        // The one build directory, so that nothing this workspace built is compiled again.
        cmd.env("CARGO_TARGET_DIR", target_dir());
        let output = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run bash: {e}"));
        Ran {
            output,
            took: started.elapsed(),
        }
    }
}

/// What one `Run` snippet did.
pub struct Ran {
    /// Its exit status and streams.
    pub output: Output,
    /// How long it took.
    pub took: Duration,
}

impl Ran {
    /// Its stdout.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Its stderr.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// Whether every non-empty line of `expected` is a line of `actual` (trailing spaces aside),
/// in order; else the first line missing. A line ending in ` …` stands for every line that
/// starts with what comes before the `…` (a hash, a time: what differs on every run).
pub fn lines_in_order<'a>(expected: &'a str, actual: &str) -> Result<(), &'a str> {
    let mut got = actual.lines().map(str::trim_end);
    for want in expected
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
    {
        let matches = |l: &str| match want.strip_suffix('…') {
            Some(prefix) if prefix.ends_with(' ') => {
                l.starts_with(prefix) && l.len() > prefix.len()
            }
            _ => l == want,
        };
        if !got.any(matches) {
            return Err(want);
        }
    }
    Ok(())
}

/// This workspace's `dev` profile as cargo configuration: its `[profile.dev]` settings, for
/// every package, and `debug = false` for the packages that are not this workspace's own.
fn shared_profile() -> String {
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(checkout())
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo metadata: {e}"));
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let manifest: toml::Table = read(&checkout().join("Cargo.toml"))
        .parse()
        .expect("the workspace manifest is TOML");
    let dev = manifest
        .get("profile")
        .and_then(|p| p.get("dev"))
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    let mut own = toml::Table::new();
    own.extend(
        dev.iter()
            .filter(|(k, _)| k.as_str() != "package")
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    let mut packages = dev
        .get("package")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    for p in meta["packages"].as_array().into_iter().flatten() {
        if let Some(name) = p["name"].as_str() {
            packages.insert(name.to_string(), toml::Value::Table(own.clone()));
        }
    }
    let mut profile = own;
    profile.insert("package".into(), toml::Value::Table(packages));
    let mut dev_table = toml::Table::new();
    dev_table.insert("dev".into(), toml::Value::Table(profile));
    let mut config = toml::Table::new();
    config.insert("profile".into(), toml::Value::Table(dev_table));
    toml::to_string(&config).expect("TOML")
}

#[test]
fn output_lines_match_in_order_with_an_ellipsis_for_what_varies() {
    let printed = "4 words\nnoise\nintact: 3 entries, head 9f2c\n";
    assert_eq!(
        lines_in_order("4 words\nintact: 3 entries, head …", printed),
        Ok(())
    );
    assert_eq!(
        lines_in_order("intact: 3 entries, head …\n4 words", printed),
        Err("4 words"),
        "order matters"
    );
    assert_eq!(
        lines_in_order("intact: 2 entries, head …", printed),
        Err("intact: 2 entries, head …")
    );
    // The ellipsis stands for something: a bare prefix is not a match.
    assert!(lines_in_order("noise …", printed).is_err());
    // Without its space, `…` is a character of the line like any other.
    assert!(lines_in_order("4 words…", printed).is_err());
}
