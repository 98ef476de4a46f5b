//! Endpoint resolution: an absolute path that exists, a tool host linked into the program, a
//! name on `PATH`, or a binary the workspace declares (which may not be built yet when
//! `build.rs` runs) — or, for an endpoint
//! with an image, a command inside the image, which the host cannot resolve.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use cargo_config2::ResolveOptions;

use crate::record::ResolvedCommand;

/// The binaries a Cargo workspace declares (`[[bin]]` names, `src/main.rs`, `src/bin/*.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceBins {
    /// The workspace root, when one was found.
    pub root: Option<PathBuf>,
    /// Declared binary names.
    pub names: BTreeSet<String>,
    /// Tool hosts linked into the program that loads the registry, which serves them from its
    /// own binary (resolved before the declared binaries and `PATH`).
    pub linked: BTreeSet<String>,
}

impl WorkspaceBins {
    /// The nearest ancestor of `start` whose `Cargo.toml` has a `[workspace]` table.
    pub fn find_root(start: &Path) -> Option<PathBuf> {
        let start = fs::canonicalize(start).ok()?;
        let mut dir = if start.is_dir() {
            Some(start.as_path())
        } else {
            start.parent()
        };
        while let Some(d) = dir {
            let manifest = d.join("Cargo.toml");
            if let Ok(text) = fs::read_to_string(&manifest) {
                if let Ok(v) = text.parse::<toml::Table>() {
                    if v.contains_key("workspace") {
                        return Some(d.to_path_buf());
                    }
                }
            }
            dir = d.parent();
        }
        None
    }

    /// The binaries declared by the workspace at `root` (its members and the root package).
    pub fn discover(root: &Path) -> Self {
        let mut names = BTreeSet::new();
        let Ok(text) = fs::read_to_string(root.join("Cargo.toml")) else {
            return Self::default();
        };
        let Ok(manifest) = text.parse::<toml::Table>() else {
            return Self::default();
        };
        let mut dirs = vec![root.to_path_buf()];
        let members = manifest
            .get("workspace")
            .and_then(|w| w.get("members"))
            .and_then(|m| m.as_array())
            .cloned()
            .unwrap_or_default();
        for m in members.iter().filter_map(|m| m.as_str()) {
            if let Some(prefix) = m.strip_suffix("/*") {
                if let Ok(rd) = fs::read_dir(root.join(prefix)) {
                    dirs.extend(
                        rd.filter_map(|e| e.ok().map(|e| e.path()))
                            .filter(|p| p.is_dir()),
                    );
                }
            } else {
                dirs.push(root.join(m));
            }
        }
        for dir in dirs {
            package_bins(&dir, &mut names);
        }
        Self {
            root: Some(root.to_path_buf()),
            names,
            linked: BTreeSet::new(),
        }
    }

    /// Where a declared binary is (or will be) built: `<target>/<profile>/<name>`, for each
    /// candidate target directory ([`target_dirs`] of the workspace root; without one, the
    /// directory Cargo's configuration names from the current directory).
    pub fn built_candidates(&self, name: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let targets = match &self.root {
            Some(root) => target_dirs(root),
            None => std::env::current_dir()
                .ok()
                .and_then(|cwd| configured_once(&cwd))
                .into_iter()
                .collect(),
        };
        for t in targets {
            for profile in ["release", "debug"] {
                out.push(t.join(profile).join(name));
            }
        }
        out
    }
}

/// The directories Cargo builds the workspace at `root` into, in the order a built binary is
/// looked for: the one Cargo's configuration names, read as Cargo reads it (`CARGO_TARGET_DIR`,
/// `CARGO_BUILD_TARGET_DIR`, or `build.target-dir` in a `.cargo/config.toml` from `root` up or
/// in Cargo's home, a relative path taken from the directory holding that `.cargo`), then
/// `<root>/target` (where a build without that setting went). The configuration is read once
/// per directory and process: a binary is located at every call of its tool.
pub fn target_dirs(root: &Path) -> Vec<PathBuf> {
    with_default(root, configured_once(root))
}

/// [`target_dirs`] with the environment and Cargo's home `options` give, read now.
#[cfg(test)]
fn target_dirs_with(root: &Path, options: ResolveOptions) -> Vec<PathBuf> {
    with_default(root, configured_target_dir(root, options))
}

/// `configured`, then `<root>/target` unless that is the one configured.
fn with_default(root: &Path, configured: Option<PathBuf>) -> Vec<PathBuf> {
    let default = root.join("target");
    let mut dirs: Vec<PathBuf> = configured.into_iter().collect();
    if !dirs.contains(&default) {
        dirs.push(default);
    }
    dirs
}

/// [`configured_target_dir`] of `dir` in this process's environment, read the first time `dir`
/// is asked for.
fn configured_once(dir: &Path) -> Option<PathBuf> {
    static READ: OnceLock<Mutex<HashMap<PathBuf, Option<PathBuf>>>> = OnceLock::new();
    let mut read = READ
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    read.entry(dir.to_path_buf())
        .or_insert_with(|| configured_target_dir(dir, ResolveOptions::default()))
        .clone()
}

/// The target directory Cargo's configuration names for a build run from `dir`, if any. A
/// configuration Cargo itself would refuse names none here: Cargo would build nothing with it.
fn configured_target_dir(dir: &Path, options: ResolveOptions) -> Option<PathBuf> {
    let config = cargo_config2::Config::load_with_options(dir, options).ok()?;
    config.build.target_dir
}

fn package_bins(dir: &Path, names: &mut BTreeSet<String>) {
    let Ok(text) = fs::read_to_string(dir.join("Cargo.toml")) else {
        return;
    };
    let Ok(manifest) = text.parse::<toml::Table>() else {
        return;
    };
    let Some(package) = manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
    else {
        return;
    };
    if let Some(bins) = manifest.get("bin").and_then(|b| b.as_array()) {
        names.extend(
            bins.iter()
                .filter_map(|b| b.get("name").and_then(|n| n.as_str()))
                .map(str::to_string),
        );
    }
    if dir.join("src/main.rs").is_file() {
        names.insert(package.to_string());
    }
    if let Ok(rd) = fs::read_dir(dir.join("src/bin")) {
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs") {
                if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                    names.insert(stem.to_string());
                }
            } else if p.join("main.rs").is_file() {
                if let Some(n) = p.file_name().and_then(|s| s.to_str()) {
                    names.insert(n.to_string());
                }
            }
        }
    }
}

/// Why a command does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// An absolute path that does not exist (or is not a file).
    #[error("`{0}` does not exist or is not a file")]
    NoSuchPath(String),
    /// A relative path with a directory part: ambiguous, rejected.
    #[error(
        "`{0}` is a relative path; give an absolute path, a name on PATH, or a workspace binary"
    )]
    Relative(String),
    /// A bare name found neither on PATH, nor among the workspace's binaries, nor among the
    /// tool hosts linked into the program.
    #[error(
        "`{0}` is neither on PATH nor a binary this workspace declares; a crate of tools \
         built elsewhere is named by linking it into the program (`Builder::linked_tools` in \
         build.rs, `escepine_toolhost::linked::dispatch` in main)"
    )]
    Unknown(String),
    /// A command inside an image that is neither an absolute, lexically normal path nor a bare
    /// name.
    #[error(
        "`{0}`: a command inside the image must be an absolute path in the image \
         (`/usr/local/bin/server`) or a bare name on the image's PATH; leave it out to use the \
         image's Entrypoint and Cmd"
    )]
    InImage(String),
}

/// The part of resolution the command's spelling decides alone, without looking at the host:
/// an absolute path or a bare name (a relative path with a directory part, or nothing, is
/// rejected).
pub fn check_spelling(command: &str) -> Result<(), ResolveError> {
    if !Path::new(command).is_absolute() && (command.contains('/') || command.is_empty()) {
        return Err(ResolveError::Relative(command.to_string()));
    }
    Ok(())
}

/// Resolve an endpoint command at registration.
pub fn resolve(command: &str, bins: &WorkspaceBins) -> Result<ResolvedCommand, ResolveError> {
    let path = Path::new(command);
    if path.is_absolute() {
        return if path.is_file() {
            Ok(ResolvedCommand::Path(path.to_path_buf()))
        } else {
            Err(ResolveError::NoSuchPath(command.to_string()))
        };
    }
    check_spelling(command)?;
    if bins.linked.contains(command) {
        return Ok(ResolvedCommand::Linked(command.to_string()));
    }
    if bins.names.contains(command) {
        return Ok(ResolvedCommand::WorkspaceBin(command.to_string()));
    }
    if let Some(p) = on_path(command) {
        return Ok(ResolvedCommand::OnPath(p));
    }
    Err(ResolveError::Unknown(command.to_string()))
}

/// Resolve the command of an endpoint with an image: never looked up on the host. Empty means
/// the image's `Entrypoint` and `Cmd` apply.
pub fn resolve_in_image(command: &str) -> Result<ResolvedCommand, ResolveError> {
    if command.is_empty() {
        return Ok(ResolvedCommand::InImage(None));
    }
    let ok = if command.starts_with('/') {
        crate::host_path::parse(command).is_ok()
    } else {
        !command.contains('/') && !command.contains('\0') && command != "." && command != ".."
    };
    if ok {
        Ok(ResolvedCommand::InImage(Some(command.to_string())))
    } else {
        Err(ResolveError::InImage(command.to_string()))
    }
}

/// Whether the file at `path` is a script: it starts with `#!`.
pub fn is_script(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == b"#!"
}

/// The first executable file named `name` on `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace at `<tmp>/parent/ws`, with an empty Cargo home beside it.
    fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ws = tmp.path().join("parent/ws");
        fs::create_dir_all(ws.join(".cargo")).expect("mkdir");
        fs::write(ws.join("Cargo.toml"), "[workspace]\n").expect("write");
        let home = tmp.path().join("cargo-home");
        fs::create_dir_all(&home).expect("mkdir");
        (tmp, ws, home)
    }

    /// `dir/.cargo/config.toml` holding `text`.
    fn config(dir: &Path, text: &str) {
        fs::create_dir_all(dir.join(".cargo")).expect("mkdir");
        fs::write(dir.join(".cargo/config.toml"), text).expect("write");
    }

    /// Cargo's home at `home` and only the environment `env`.
    fn options(home: &Path, env: &[(&str, &str)]) -> ResolveOptions {
        ResolveOptions::default()
            .cargo_home(home.to_path_buf())
            .env(env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn the_target_directory_is_the_one_cargo_would_build_into() {
        let (_tmp, ws, home) = workspace();
        let none = options(&home, &[]);
        assert_eq!(target_dirs_with(&ws, none), vec![ws.join("target")]);

        // A relative `build.target-dir` is taken from the directory holding the `.cargo`, and
        // one in a nearer directory wins over one further up or in Cargo's home.
        let parent = ws.parent().expect("parent").to_path_buf();
        config(&parent, "[build]\ntarget-dir = \"shared\"\n");
        fs::write(
            home.join("config.toml"),
            "[build]\ntarget-dir = \"/home-wide\"\n",
        )
        .expect("write");
        assert_eq!(
            target_dirs_with(&ws, options(&home, &[])),
            vec![parent.join("shared"), ws.join("target")]
        );
        config(&ws, "[build]\ntarget-dir = \"out\"\n");
        assert_eq!(
            target_dirs_with(&ws, options(&home, &[])),
            vec![ws.join("out"), ws.join("target")]
        );

        // The environment wins over every file, `CARGO_TARGET_DIR` over `CARGO_BUILD_TARGET_DIR`.
        let env = [
            ("CARGO_BUILD_TARGET_DIR", "/from-build-env"),
            ("CARGO_TARGET_DIR", "/from-env"),
        ];
        assert_eq!(
            target_dirs_with(&ws, options(&home, &env)),
            vec![PathBuf::from("/from-env"), ws.join("target")]
        );
        assert_eq!(
            target_dirs_with(&ws, options(&home, &env[..1])),
            vec![PathBuf::from("/from-build-env"), ws.join("target")]
        );

        // Configured as the default: named once.
        let env = [("CARGO_TARGET_DIR", ws.join("target").display().to_string())];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(
            target_dirs_with(&ws, options(&home, &env)),
            vec![ws.join("target")]
        );
    }

    #[test]
    fn a_configuration_cargo_would_refuse_names_no_target_directory() {
        let (_tmp, ws, home) = workspace();
        // A table never closed; a directory that is not a string.
        for text in [
            "[build\ntarget-dir = \"out\"\n",
            "[build]\ntarget-dir = 7\n",
        ] {
            config(&ws, text);
            assert_eq!(
                target_dirs_with(&ws, options(&home, &[])),
                vec![ws.join("target")],
                "{text}"
            );
        }
        // A configuration file that is a directory, below one that names a directory.
        let parent = ws.parent().expect("parent").to_path_buf();
        config(&parent, "[build]\ntarget-dir = \"shared\"\n");
        fs::remove_file(ws.join(".cargo/config.toml")).expect("rm");
        fs::create_dir(ws.join(".cargo/config.toml")).expect("mkdir");
        assert_eq!(
            target_dirs_with(&ws, options(&home, &[])),
            vec![ws.join("target")]
        );
    }

    #[test]
    fn resolves_absolute_path_and_path_names() {
        let bins = WorkspaceBins::default();
        assert!(matches!(
            resolve("/bin/sh", &bins),
            Ok(ResolvedCommand::Path(_))
        ));
        assert!(matches!(
            resolve("sh", &bins),
            Ok(ResolvedCommand::OnPath(_))
        ));
        assert_eq!(
            resolve("/no/such/binary", &bins),
            Err(ResolveError::NoSuchPath("/no/such/binary".into()))
        );
        assert!(matches!(
            resolve("./tool", &bins),
            Err(ResolveError::Relative(_))
        ));
        assert!(matches!(
            resolve("no-such-tool-xyz", &bins),
            Err(ResolveError::Unknown(_))
        ));
    }

    #[test]
    fn commands_in_an_image_are_not_resolved_on_the_host() {
        assert_eq!(resolve_in_image(""), Ok(ResolvedCommand::InImage(None)));
        assert_eq!(
            resolve_in_image("/usr/local/bin/not-on-this-host"),
            Ok(ResolvedCommand::InImage(Some(
                "/usr/local/bin/not-on-this-host".into()
            )))
        );
        assert_eq!(
            resolve_in_image("python3"),
            Ok(ResolvedCommand::InImage(Some("python3".into())))
        );
        for bad in ["bin/server", "./server", "/usr/../bin/sh", ".."] {
            assert_eq!(
                resolve_in_image(bad),
                Err(ResolveError::InImage(bad.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn discovers_this_workspace_bins() {
        let root = WorkspaceBins::find_root(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let bins = WorkspaceBins::discover(&root);
        assert!(bins.names.contains("escepine"), "{:?}", bins.names);
        assert!(matches!(
            resolve("escepine", &bins),
            Ok(ResolvedCommand::WorkspaceBin(_))
        ));
    }

    #[test]
    fn a_linked_host_resolves_before_workspace_bins_and_path() {
        let bins = WorkspaceBins {
            names: ["word-tools".to_string(), "sh".to_string()].into(),
            linked: ["word-tools".to_string(), "sh".to_string()].into(),
            ..WorkspaceBins::default()
        };
        assert_eq!(
            resolve("word-tools", &bins),
            Ok(ResolvedCommand::Linked("word-tools".into()))
        );
        // A linked host shadows a program of the same name on PATH: the program serves it.
        assert_eq!(
            resolve("sh", &bins),
            Ok(ResolvedCommand::Linked("sh".into()))
        );
        // Only bare names are linked hosts; a path is still a path.
        assert!(matches!(
            resolve("/bin/sh", &bins),
            Ok(ResolvedCommand::Path(_))
        ));
        let unlinked = WorkspaceBins::default();
        let err = resolve("word-tools", &unlinked).unwrap_err();
        assert!(err.to_string().contains("Builder::linked_tools"), "{err}");
    }
}
