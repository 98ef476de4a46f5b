//! A tool whose endpoint is an OCI image: its unpacked root and the parts of its config that
//! decide how the tool starts (`Entrypoint`, `Cmd`, `Env`, `WorkingDir`).
//!
//! The image is fetched, verified and unpacked before any call (when the runtime is built),
//! into the shared content-addressed store of `escepine-oci`; a sandbox of the tool then
//! copies that tree into its own read-only root, and nothing of the host's file system.

use std::path::{Component, Path, PathBuf};

use super::SandboxError;
use crate::SAFE_PATH;

/// An unpacked image, as a sandbox uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolImage {
    /// The reference the record names (`…@sha256:…`).
    pub reference: String,
    /// The unpacked root directory (read-only, in the image store).
    pub rootfs: PathBuf,
    /// The config's `Entrypoint`.
    pub entrypoint: Vec<String>,
    /// The config's `Cmd`.
    pub cmd: Vec<String>,
    /// The config's `Env` (`NAME=value` split).
    pub env: Vec<(String, String)>,
    /// The config's `WorkingDir`.
    pub working_dir: Option<String>,
}

/// How a tool in an image starts: the program (a path inside the image) and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageLaunch {
    /// The program, absolute inside the image.
    pub program: PathBuf,
    /// The arguments after the program.
    pub args: Vec<String>,
}

/// Symbolic links followed while resolving a program inside an image.
const MAX_LINKS: usize = 40;

impl ToolImage {
    /// The image's `PATH` (its config's `Env`), else the runtime's [`SAFE_PATH`].
    pub fn path_var(&self) -> &str {
        self.env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map_or(SAFE_PATH, |(_, v)| v.as_str())
    }

    /// The launch of a tool whose record gives `command` (empty: none) and `args` (empty: none).
    /// As a container runtime does: the record's command replaces the `Entrypoint` (and then
    /// `Cmd` is not used), the record's arguments replace `Cmd`; a bare program name is looked
    /// up on the image's `PATH`, inside the image.
    ///
    /// # Errors
    /// [`SandboxError::Image`] when there is nothing to run or the program is not in the image.
    pub fn launch(&self, command: &str, args: &[String]) -> Result<ImageLaunch, SandboxError> {
        let mut argv: Vec<String> = if command.is_empty() {
            let mut v = self.entrypoint.clone();
            if args.is_empty() {
                v.extend(self.cmd.iter().cloned());
            } else {
                v.extend(args.iter().cloned());
            }
            v
        } else {
            let mut v = vec![command.to_string()];
            v.extend(args.iter().cloned());
            v
        };
        if argv.is_empty() {
            return Err(SandboxError::Image {
                image: self.reference.clone(),
                why: "the record gives no `endpoint.command` and the image config has neither \
                      `Entrypoint` nor `Cmd`"
                    .into(),
            });
        }
        let name = argv.remove(0);
        let program = self.resolve(&name)?;
        Ok(ImageLaunch {
            program,
            args: argv,
        })
    }

    /// `name` as an absolute path inside the image: itself if it has a `/` (relative to the
    /// working directory), else the first match on the image's `PATH`.
    fn resolve(&self, name: &str) -> Result<PathBuf, SandboxError> {
        let candidates: Vec<PathBuf> = if name.contains('/') {
            let base = self.working_dir.as_deref().unwrap_or("/");
            vec![Path::new(base).join(name)]
        } else {
            self.path_var()
                .split(':')
                .filter(|d| d.starts_with('/'))
                .map(|d| Path::new(d).join(name))
                .collect()
        };
        for candidate in &candidates {
            if let Some(found) = self.regular_file(candidate) {
                if found {
                    return Ok(lexical(candidate));
                }
            }
        }
        Err(SandboxError::Image {
            image: self.reference.clone(),
            why: format!(
                "the program `{name}` is not in the image (looked at {})",
                candidates
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }

    /// Whether `path` (inside the image) is a regular file once its symbolic links are
    /// followed inside the image's root; `None` if it is absent.
    fn regular_file(&self, path: &Path) -> Option<bool> {
        let mut at = lexical(path);
        for _ in 0..MAX_LINKS {
            let host = self.rootfs.join(at.strip_prefix("/").unwrap_or(&at));
            let meta = std::fs::symlink_metadata(&host).ok()?;
            if !meta.file_type().is_symlink() {
                return Some(meta.is_file());
            }
            let target = std::fs::read_link(&host).ok()?;
            at = if target.is_absolute() {
                lexical(&target)
            } else {
                lexical(&at.parent().unwrap_or(Path::new("/")).join(target))
            };
        }
        None
    }

    /// The top-level entries of the image's root: what the tool may read (and execute).
    pub fn top_level(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(&self.rootfs)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| Path::new("/").join(e.file_name()))
            .filter(|p| !["/proc", "/dev", "/workspace"].contains(&p.to_str().unwrap_or("")))
            .collect();
        out.sort();
        out
    }
}

/// `path` made absolute and normal without touching the file system (`..` stops at `/`).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(root: &Path) -> ToolImage {
        ToolImage {
            reference: "oci:/x@sha256:0".into(),
            rootfs: root.to_path_buf(),
            entrypoint: vec!["python3".into(), "/app/server.py".into()],
            cmd: vec!["--default".into()],
            env: vec![("PATH".into(), "/usr/local/bin:/usr/bin".into())],
            working_dir: Some("/app".into()),
        }
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("usr/bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::fs::write(bin.join("python3.11"), b"\x7fELF").expect("write");
        std::os::unix::fs::symlink("python3.11", bin.join("python3")).expect("symlink");
        // An absolute link resolves inside the image, never on the host.
        std::os::unix::fs::symlink("/usr/bin/python3.11", bin.join("py")).expect("symlink");
        std::os::unix::fs::symlink("/etc/passwd", bin.join("host")).expect("symlink");
        dir
    }

    #[test]
    fn the_config_starts_the_tool_when_the_record_does_not() {
        let dir = tree();
        let img = image(dir.path());
        let l = img.launch("", &[]).expect("launch");
        assert_eq!(l.program, PathBuf::from("/usr/bin/python3"));
        assert_eq!(l.args, vec!["/app/server.py", "--default"]);
        let l = img.launch("", &["--other".into()]).expect("launch");
        assert_eq!(l.args, vec!["/app/server.py", "--other"]);
        let l = img.launch("py", &["-V".into()]).expect("launch");
        assert_eq!(l.program, PathBuf::from("/usr/bin/py"));
        assert_eq!(l.args, vec!["-V"]);
    }

    #[test]
    fn programs_are_looked_up_inside_the_image_only() {
        let dir = tree();
        let img = image(dir.path());
        // `/etc/passwd` exists on the host, not in the image.
        let e = img.launch("host", &[]).expect_err("absent in the image");
        assert!(e.to_string().contains("not in the image"), "{e}");
        let e = img.launch("sh", &[]).expect_err("absent");
        assert!(e.to_string().contains("/usr/bin/sh"), "{e}");
        let empty = ToolImage {
            entrypoint: vec![],
            cmd: vec![],
            ..image(dir.path())
        };
        assert!(empty.launch("", &[]).is_err());
    }
}
