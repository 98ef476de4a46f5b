//! The host side of the guest: the init binary the container's first process runs (the program
//! that embeds the init, or `$ESCEPINE_SANDBOX_INIT`), with the shared libraries it needs bound
//! beside it under `/.escepine/lib` — never over the root's own `/lib`, which may be an image's.

use std::path::{Path, PathBuf};

use crate::deps::{identity, DepCache};
use crate::protocol::GUEST_DIR;
use crate::SandboxError;

/// The guest binary's name in the sandbox: the init's process name.
const NAME: &str = crate::init::PROCESS_NAME;

/// The guest's binary and libraries on the host.
#[derive(Debug, Clone)]
pub(crate) struct Guest {
    /// The init binary (its real path).
    pub binary: PathBuf,
    /// Each library's name in the sandbox (its file name as the binary asks for it) and its real
    /// host path.
    pub libraries: Vec<(String, PathBuf)>,
    /// The dynamic loader's name among `libraries` (`None`: a static binary).
    pub interpreter: Option<String>,
}

impl Guest {
    /// The guest of the init at `init` (`/proc/self/exe`: this program's own file).
    pub(crate) fn locate(init: &Path) -> Result<Self, SandboxError> {
        let binary = std::fs::canonicalize(init)
            .map_err(|e| SandboxError::io(format!("the init binary {}", init.display()), e))?;
        let needs = DepCache::default().needs(&binary, &identity(&binary)?)?;
        let mut libraries: Vec<(String, PathBuf)> = Vec::new();
        let mut interpreter = None;
        for lib in needs.iter().filter(|p| **p != binary) {
            let Some(name) = lib.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let host = std::fs::canonicalize(lib)
                .map_err(|e| SandboxError::io(format!("the library {}", lib.display()), e))?;
            if host == binary || libraries.iter().any(|(n, _)| n == name) {
                continue;
            }
            if name.starts_with("ld-linux") || name.starts_with("ld64.so") {
                interpreter = Some(name.to_string());
            }
            libraries.push((name.to_string(), host));
        }
        Ok(Self {
            binary,
            libraries,
            interpreter,
        })
    }

    /// Where the binary is bound in the sandbox.
    pub(crate) fn binary_in_sandbox(&self) -> String {
        format!("{GUEST_DIR}/{NAME}")
    }

    /// Where the library `name` is bound in the sandbox.
    pub(crate) fn library_in_sandbox(&self, name: &str) -> String {
        format!("{GUEST_DIR}/lib/{name}")
    }

    /// The container's first process: the guest, through its own loader and libraries (named
    /// `escepine-init` as the init always is, so that its command line holds no path).
    pub(crate) fn argv(&self) -> Vec<String> {
        let guest = [
            self.binary_in_sandbox(),
            crate::init::guest::GUEST_FLAG.to_string(),
        ];
        match &self.interpreter {
            Some(ld) => [
                self.library_in_sandbox(ld),
                "--library-path".into(),
                format!("{GUEST_DIR}/lib"),
                "--argv0".into(),
                NAME.into(),
            ]
            .into_iter()
            .chain(guest)
            .collect(),
            None => guest.into(),
        }
    }
}
