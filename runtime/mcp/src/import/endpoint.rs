//! The endpoint a draft names: the server command as the user gave it, made absolute; or an
//! image and the command inside it, as given.
//!
//! **Arguments naming paths.** The sandbox starts the server in its own `/workspace`, not in
//! the working directory of the import, so `python3 server.py` would run `/workspace/server.py`
//! there. An argument naming an existing path relative to the working directory is therefore
//! made absolute ([`AbsoluteArg`], lexically as the program is, unless a symlink before a `..`
//! makes that name another file: then its real path), and the drafts bind it read-only
//! ([`EndpointDraft::read_only`]) so that the server's code is visible in the sandbox. Which
//! arguments:
//!
//! - an argument naming an existing **file** (`server.py`, `dist/index.js`);
//! - an argument naming an existing **directory** only when it is written as a path: with a
//!   `/` (`./data`, `data/`), or `.` or `..` — a bare word naming a directory is as often a
//!   module, package or subcommand name (`python3 -m server`, where `server/` is the package)
//!   and is left alone (write `./server` to have it made absolute);
//! - the value of a `--flag=value` argument, by the same two rules (`--config=conf.json`
//!   becomes `--config=/abs/conf.json`, the flag kept); a flag alone (`-m`, `--stdio`) and a
//!   short flag with its value attached (`-cconf.json`) are never paths;
//! - nothing that is absolute already, names nothing that exists, or starts with `-`
//!   otherwise (`--port=8080`).
//!
//! An argument meant as a name that happens to match a file of the working directory is made
//! absolute too: every one is printed and noted in the draft (`CHANGED /endpoint/args/<i>`), to
//! be reverted on review. A server run from an image keeps its arguments as given (they name
//! paths inside the image).

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use escepine_registry::endpoint::{target_dirs, WorkspaceBins};
use escepine_registry::host_path;

use super::model::ImportError;

/// The endpoint a draft names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointDraft {
    /// `endpoint.image`: the image reference, as given.
    pub image: Option<String>,
    /// `endpoint.command` (empty with an image: its `Entrypoint` and `Cmd`).
    pub command: String,
    /// `endpoint.args`.
    pub args: Vec<String>,
    /// The arguments made absolute (see the module documentation), in order.
    pub absolute_args: Vec<AbsoluteArg>,
    /// A remote server (`escepine import mcp --url`): no command, no arguments.
    pub remote: Option<RemoteDraft>,
}

/// The endpoint of a remote server a draft names (`"transport": "mcp-http"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteDraft {
    /// `endpoint.url`.
    pub url: String,
    /// `endpoint.auth`, when the server needs a credential (secret names only).
    pub auth: Option<serde_json::Value>,
    /// The secret names `auth` uses (`auth.secrets` of the record).
    pub secrets: Vec<String>,
    /// `sandbox_profile.egress`: the server's origin, then the token endpoint's, as
    /// `host:port`.
    pub egress: Vec<String>,
}

impl EndpointDraft {
    /// The endpoint of a remote server.
    pub fn remote(remote: RemoteDraft) -> Self {
        Self {
            image: None,
            command: String::new(),
            args: Vec::new(),
            absolute_args: Vec::new(),
            remote: Some(remote),
        }
    }
}

/// An argument of the server's command that named an existing path relative to the working
/// directory, made absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbsoluteArg {
    /// Its index in `endpoint.args`.
    pub index: usize,
    /// The argument as given (`server.py`, `--config=conf.json`).
    pub given: String,
    /// The argument as drafted (`/home/u/proj/server.py`, `--config=/home/u/proj/conf.json`).
    pub arg: String,
    /// The absolute path it names.
    pub path: PathBuf,
    /// Whether that path is a directory.
    pub is_dir: bool,
}

impl EndpointDraft {
    /// The endpoint for the server command `command` (program and arguments), run from `cwd`:
    /// a program given as a path becomes absolute against `cwd` lexically ([`absolute`]: `.`
    /// and `..` folded, **no symlink resolved**, so a virtualenv's `bin/python` stays the
    /// virtualenv's), or the bare name of a binary the workspace at `workspace` declares when
    /// the path is that binary in the workspace's target directory. A bare name stays a bare
    /// name (found on `PATH` at registration). An argument naming an existing path relative to
    /// `cwd` is made absolute (see the module documentation); the others are kept as given.
    ///
    /// # Errors
    /// [`ImportError::NoCommand`] for an empty command.
    pub fn for_command(
        command: &[String],
        cwd: &Path,
        workspace: Option<&Path>,
    ) -> Result<Self, ImportError> {
        let (program, args) = command.split_first().ok_or(ImportError::NoCommand)?;
        let mut cmd = program.clone();
        if program.contains('/') {
            let path = absolute(Path::new(program), cwd);
            cmd = path.display().to_string();
            if let (Some(root), Some(name)) = (workspace, path.file_name().and_then(|n| n.to_str()))
            {
                let bins = WorkspaceBins::discover(root);
                // Where Cargo builds the workspace (its configuration read as Cargo reads it).
                let in_target = target_dirs(root)
                    .iter()
                    .map(|t| absolute(t, cwd))
                    .any(|t| path.starts_with(t));
                if bins.names.contains(name) && in_target {
                    cmd = name.to_string();
                }
            }
        }
        let mut drafted = Vec::with_capacity(args.len());
        let mut absolute_args = Vec::new();
        for (index, given) in args.iter().enumerate() {
            match absolute_arg(given, cwd) {
                Some((arg, path, is_dir)) => {
                    drafted.push(arg.clone());
                    absolute_args.push(AbsoluteArg {
                        index,
                        given: given.clone(),
                        arg,
                        path,
                        is_dir,
                    });
                }
                None => drafted.push(given.clone()),
            }
        }
        Ok(Self {
            image: None,
            command: cmd,
            args: drafted,
            absolute_args,
            remote: None,
        })
    }

    /// The drafts' `sandbox_profile.read_only`: `given` (the `--read-only` paths, in order),
    /// then each path of [`EndpointDraft::absolute_args`] that none of them (nor an earlier
    /// one) already covers.
    pub fn read_only(&self, given: &[PathBuf]) -> Vec<PathBuf> {
        let mut out = given.to_vec();
        for a in &self.absolute_args {
            if !out.iter().any(|p| host_path::under(&a.path, p)) {
                out.push(a.path.clone());
            }
        }
        out
    }

    /// The endpoint of a server on the image `image`: `command` (program and arguments) is a
    /// path or name **inside the image**, kept exactly as given; empty, the image's
    /// `Entrypoint` and `Cmd` apply.
    pub fn in_image(image: &str, command: &[String]) -> Self {
        let (program, args) = command.split_first().map_or(("", &[][..]), |(p, a)| (p, a));
        Self {
            image: Some(image.to_string()),
            command: program.to_string(),
            args: args.to_vec(),
            absolute_args: Vec::new(),
            remote: None,
        }
    }
}

/// The argument `given` made absolute against `cwd` — the argument, the path it names and
/// whether that is a directory — when it names an existing path there (the rules of the
/// module documentation); `None` to keep it as given.
fn absolute_arg(given: &str, cwd: &Path) -> Option<(String, PathBuf, bool)> {
    let (flag, value) = if given.starts_with('-') {
        let (flag, value) = given.split_once('=')?;
        (Some(flag), value)
    } else {
        (None, given)
    };
    if value.is_empty() || value.starts_with('-') || Path::new(value).is_absolute() {
        return None;
    }
    let joined = cwd.join(value);
    let meta = std::fs::metadata(&joined).ok()?;
    let written_as_path = value.contains('/') || value == "." || value == "..";
    if meta.is_dir() && !written_as_path {
        return None;
    }
    let lexical = absolute(Path::new(value), cwd);
    // Folding `..` lexically is wrong after a symlink (`link/..` is the link target's parent):
    // keep the lexical name only when it is the very same file.
    let same =
        std::fs::metadata(&lexical).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()));
    let path = if same {
        lexical
    } else {
        std::fs::canonicalize(&joined).ok()?
    };
    let shown = path.to_str()?;
    let arg = match flag {
        Some(flag) => format!("{flag}={shown}"),
        None => shown.to_string(),
    };
    Some((arg, path, meta.is_dir()))
}

/// `path` made absolute against `cwd` without touching the file system: `.` dropped, `..`
/// removing the component before it (never above the root). Symlinks are not resolved.
pub fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_absolute_lexically() {
        let cwd = Path::new("/home/u/proj");
        assert_eq!(
            absolute(Path::new("venv/bin/python"), cwd),
            Path::new("/home/u/proj/venv/bin/python")
        );
        assert_eq!(
            absolute(Path::new("./a/../b/./c"), cwd),
            Path::new("/home/u/proj/b/c")
        );
        assert_eq!(absolute(Path::new("/../../x"), cwd), Path::new("/x"));
    }

    #[test]
    fn a_symlinked_interpreter_keeps_its_own_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("venv/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::os::unix::fs::symlink("/bin/sh", bin.join("python")).expect("symlink");
        let e = EndpointDraft::for_command(
            &["venv/bin/python".into(), "server.py".into()],
            dir.path(),
            None,
        )
        .expect("endpoint");
        assert_eq!(e.command, bin.join("python").display().to_string());
        assert_eq!(e.args, ["server.py"]);
        let bare = EndpointDraft::for_command(&["uvx".into()], dir.path(), None).expect("bare");
        assert_eq!(bare.command, "uvx");
    }

    #[test]
    fn arguments_naming_paths_of_the_working_directory_are_made_absolute() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cwd = dir.path();
        for d in ["pkg", "data", "real/sub"] {
            std::fs::create_dir_all(cwd.join(d)).expect("mkdir");
        }
        for f in ["server.py", "conf.json", "data/x.csv", "real/f"] {
            std::fs::write(cwd.join(f), "").expect("write");
        }
        std::os::unix::fs::symlink(cwd.join("real/sub"), cwd.join("link")).expect("symlink");
        let at = |p: &str| cwd.join(p).display().to_string();
        let given = [
            "server.py", // a file: made absolute
            "-m",        // a flag
            "pkg",       // a bare word naming a directory: a module name, kept
            "./pkg",     // a directory written as a path: made absolute
            "--config=conf.json",
            "--port=8080", // names nothing
            "-cconf.json", // a short flag with its value attached
            "./data/../conf.json",
            "missing.py",    // names nothing
            "/etc/hostname", // absolute already
            "link/../f",     // `..` after a symlink: its real path
            ".",
        ];
        let command: Vec<String> = std::iter::once("python3")
            .chain(given)
            .map(str::to_string)
            .collect();
        let e = EndpointDraft::for_command(&command, cwd, None).expect("endpoint");
        let real = std::fs::canonicalize(cwd.join("real/f")).expect("real");
        assert_eq!(
            e.args,
            [
                at("server.py"),
                "-m".into(),
                "pkg".into(),
                at("pkg"),
                format!("--config={}", at("conf.json")),
                "--port=8080".into(),
                "-cconf.json".into(),
                at("conf.json"),
                "missing.py".into(),
                "/etc/hostname".into(),
                real.display().to_string(),
                cwd.display().to_string(),
            ]
        );
        let changed: Vec<(usize, &str, bool)> = e
            .absolute_args
            .iter()
            .map(|a| (a.index, a.given.as_str(), a.is_dir))
            .collect();
        assert_eq!(
            changed,
            [
                (0, "server.py", false),
                (3, "./pkg", true),
                (4, "--config=conf.json", false),
                (7, "./data/../conf.json", false),
                (10, "link/../f", false),
                (11, ".", true),
            ]
        );
        assert_eq!(e.absolute_args[2].path, cwd.join("conf.json"));

        // Each path is bound read-only unless a given path (or an earlier one) covers it.
        let e = EndpointDraft::for_command(
            &[
                "python3".into(),
                "server.py".into(),
                "./data".into(),
                "data/x.csv".into(),
            ],
            cwd,
            None,
        )
        .expect("endpoint");
        let stdlib = PathBuf::from("/usr/lib/python3");
        assert_eq!(
            e.read_only(std::slice::from_ref(&stdlib)),
            [stdlib.clone(), cwd.join("server.py"), cwd.join("data")]
        );
        assert_eq!(e.read_only(&[cwd.to_path_buf()]), [cwd.to_path_buf()]);
        // An image's arguments name paths inside it: kept.
        let e = EndpointDraft::in_image("r@sha256:00", &["python3".into(), "server.py".into()]);
        assert!(e.absolute_args.is_empty());
    }

    #[test]
    fn a_command_in_an_image_is_kept_as_given() {
        let image = "127.0.0.1:5000/py@sha256:00";
        let e = EndpointDraft::in_image(image, &["bin/server".into(), "-v".into()]);
        assert_eq!(e.image.as_deref(), Some(image));
        assert_eq!(
            (e.command.as_str(), e.args.as_slice()),
            ("bin/server", &["-v".to_string()][..])
        );
        let entry = EndpointDraft::in_image(image, &[]);
        assert_eq!((entry.command.as_str(), entry.args.len()), ("", 0));
    }
}
