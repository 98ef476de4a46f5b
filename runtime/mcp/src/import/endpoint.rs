//! The endpoint a draft names: the server command as the user gave it, made absolute; or an
//! image and the command inside it, as given.

use std::path::{Component, Path, PathBuf};

use registry_build::endpoint::WorkspaceBins;

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
}

impl EndpointDraft {
    /// The endpoint for the server command `command` (program and arguments), run from `cwd`:
    /// a program given as a path becomes absolute against `cwd` lexically ([`absolute`]: `.`
    /// and `..` folded, **no symlink resolved**, so a virtualenv's `bin/python` stays the
    /// virtualenv's), or the bare name of a binary the workspace at `workspace` declares when
    /// the path is that binary in the workspace's target directory. A bare name stays a bare
    /// name (found on `PATH` at registration). Arguments are kept as given.
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
                // The workspace's target directory, or the one `CARGO_TARGET_DIR` names.
                let targets = std::iter::once(root.join("target"))
                    .chain(std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from));
                let in_target = targets
                    .map(|t| absolute(&t, cwd))
                    .any(|t| path.starts_with(t));
                if bins.names.contains(name) && in_target {
                    cmd = name.to_string();
                }
            }
        }
        Ok(Self {
            image: None,
            command: cmd,
            args: args.to_vec(),
        })
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
        }
    }
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
