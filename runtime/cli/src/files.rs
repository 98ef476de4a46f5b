//! `--file NAME=PATH`: the workspace files of `escepine call`, read from the caller's paths.
//!
//! A path is the caller's own (followed as `cat` follows it), and must be a regular file: a
//! FIFO, a device or a directory is refused before a byte is read (it is opened non-blocking,
//! so a FIFO without a writer does not hang the call), and no file is read past
//! [`MAX_WORKSPACE_INPUT_BYTES`], whatever its size claims or however it grows meanwhile. The
//! runtime then checks each file against the tool's declared inputs.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use escepine_contract::files::{input_name_problem, MAX_WORKSPACE_INPUT_BYTES};
use escepine_contract::WorkspaceFiles;

/// Why a `--file` argument gave no file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileArgError {
    /// Not `NAME=PATH`.
    #[error(
        "--file {0}: expected NAME=PATH (the workspace input's name, then the file to copy in)"
    )]
    Shape(String),
    /// The name breaks the rule of workspace input names.
    #[error("--file {arg}: {problem}")]
    Name {
        /// The argument.
        arg: String,
        /// The rule broken.
        problem: String,
    },
    /// The same name twice.
    #[error("--file {0}: the workspace input `{0}` is given twice")]
    Twice(String),
    /// The path could not be opened or read.
    #[error("--file {name}={}: {what}", path.display())]
    Io {
        /// The input's name.
        name: String,
        /// The path.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The path is no regular file.
    #[error("--file {name}={}: not a regular file ({kind}); give a file's path", path.display())]
    NotAFile {
        /// The input's name.
        name: String,
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file is larger than any call's files may be.
    #[error("--file {name}={}: more than {MAX_WORKSPACE_INPUT_BYTES} bytes (16 MiB), the most a call's files may have", path.display())]
    TooLarge {
        /// The input's name.
        name: String,
        /// The path.
        path: PathBuf,
    },
}

/// The files of `args` (each `NAME=PATH`), read.
pub(crate) fn read(args: &[String]) -> Result<WorkspaceFiles, FileArgError> {
    let mut files = WorkspaceFiles::new();
    for arg in args {
        let Some((name, path)) = arg.split_once('=') else {
            return Err(FileArgError::Shape(arg.clone()));
        };
        if path.is_empty() {
            return Err(FileArgError::Shape(arg.clone()));
        }
        if let Some(problem) = input_name_problem(name) {
            return Err(FileArgError::Name {
                arg: arg.clone(),
                problem,
            });
        }
        if files.get(name).is_some() {
            return Err(FileArgError::Twice(name.to_string()));
        }
        let bytes = read_one(name, Path::new(path))?;
        files.insert(name, bytes);
    }
    Ok(files)
}

/// The bytes of the regular file at `path`, at most [`MAX_WORKSPACE_INPUT_BYTES`].
fn read_one(name: &str, path: &Path) -> Result<Vec<u8>, FileArgError> {
    let io = |what: &'static str| {
        move |source| FileArgError::Io {
            name: name.to_string(),
            path: path.to_path_buf(),
            what,
            source,
        }
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io("cannot open it"))?;
    let kind = file.metadata().map_err(io("cannot stat it"))?.file_type();
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let kind = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(FileArgError::NotAFile {
            name: name.to_string(),
            path: path.to_path_buf(),
            kind,
        });
    }
    let mut bytes = Vec::new();
    File::take(file, MAX_WORKSPACE_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io("cannot read it"))?;
    if bytes.len() as u64 > MAX_WORKSPACE_INPUT_BYTES {
        return Err(FileArgError::TooLarge {
            name: name.to_string(),
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        match read(&args) {
            Ok(files) => panic!("{args:?} read {} files", files.len()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_regular_file_is_read_and_a_symlink_to_one_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("changes.md");
        std::fs::write(&file, b"# 1.2\n").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        let files = read(&[
            format!("changelog={}", file.display()),
            format!("again={}", link.display()),
        ])
        .expect("read");
        assert_eq!(
            files.get("changelog").map(|f| f.bytes()),
            Some(&b"# 1.2\n"[..])
        );
        assert_eq!(files.get("again").map(|f| f.bytes()), Some(&b"# 1.2\n"[..]));
    }

    #[test]
    fn fifos_devices_directories_and_bad_names_are_refused_before_reading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.display().to_string()).expect("path");
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // A FIFO without a writer: opening it non-blocking returns at once, and it is refused.
        assert!(err(&[&format!("x={}", fifo.display())]).contains("a FIFO"));
        assert!(err(&["x=/dev/zero"]).contains("a device"));
        assert!(err(&[&format!("x={}", dir.path().display())]).contains("a directory"));
        assert!(err(&["../etc=/etc/hostname"]).contains("not a workspace input name"));
        assert!(err(&["x"]).contains("expected NAME=PATH"));
        assert!(err(&["x="]).contains("expected NAME=PATH"));
        let missing = err(&["x=/nonexistent/escepine-file"]);
        assert!(missing.contains("cannot open it"), "{missing}");
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").expect("write");
        let f = file.display();
        assert!(err(&[&format!("x={f}"), &format!("x={f}")]).contains("given twice"));
    }

    #[test]
    fn a_file_past_the_cap_is_refused_whatever_it_grows_to() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = dir.path().join("big");
        let f = File::create(&big).expect("create");
        // Sparse: a size past the cap costs no disk.
        f.set_len(MAX_WORKSPACE_INPUT_BYTES + 1).expect("set_len");
        assert!(err(&[&format!("big={}", big.display())]).contains("more than 16777216 bytes"));
        f.set_len(MAX_WORKSPACE_INPUT_BYTES).expect("set_len");
        let files = read(&[format!("big={}", big.display())]).expect("at the cap");
        assert_eq!(
            files.get("big").map(|f| f.len()),
            Some(MAX_WORKSPACE_INPUT_BYTES)
        );
    }
}
