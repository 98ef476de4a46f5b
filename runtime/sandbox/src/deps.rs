//! Which host files a tool needs: its binary, its ELF interpreter and shared libraries (found as
//! the dynamic loader would, recursively), a script's interpreter, and the CA certificates.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::SandboxError;

/// CA bundles bound into every sandbox when they exist.
const CA_FILES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// Where the loader looks when neither `RUNPATH` nor the cache says otherwise (glibc's trusted
/// directories on the common multiarch layouts).
fn default_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let triple = match std::env::consts::ARCH {
        "x86_64" => Some("x86_64-linux-gnu"),
        "aarch64" => Some("aarch64-linux-gnu"),
        _ => None,
    };
    if let Some(t) = triple {
        dirs.push(PathBuf::from(format!("/lib/{t}")));
        dirs.push(PathBuf::from(format!("/usr/lib/{t}")));
    }
    for d in ["/lib64", "/usr/lib64", "/lib", "/usr/lib"] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// Directories named by `/etc/ld.so.conf` (and its includes), which the loader finds through
/// its cache.
fn conf_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut queue = vec![PathBuf::from("/etc/ld.so.conf")];
    let mut seen = BTreeSet::new();
    while let Some(file) = queue.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if let Some(pattern) = line.strip_prefix("include") {
                queue.extend(glob_conf(pattern.trim()));
            } else if line.starts_with('/') {
                out.push(PathBuf::from(line));
            }
        }
    }
    out
}

/// `include /etc/ld.so.conf.d/*.conf`: only a `*` in the file name is supported.
fn glob_conf(pattern: &str) -> Vec<PathBuf> {
    let path = Path::new(pattern);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let Some((pre, post)) = name.split_once('*') else {
        return vec![path.to_path_buf()];
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(pre) && n.ends_with(post))
        })
        .collect();
    files.sort();
    files
}

/// The identity of a file's current version (device, inode, size, modification and change
/// times).
///
/// # Errors
/// When the file cannot be examined.
pub fn identity(path: &Path) -> Result<String, SandboxError> {
    let m = std::fs::metadata(path)
        .map_err(|e| SandboxError::io(format!("cannot stat {}", path.display()), e))?;
    Ok(format!(
        "{}:{}:{}:{}.{}:{}.{}",
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

/// The read-only paths of a program, cached per file version.
#[derive(Debug, Default)]
pub struct DepCache {
    known: Mutex<HashMap<PathBuf, (String, Vec<PathBuf>)>>,
}

impl DepCache {
    /// What [`DepCache::needs`] found before for this version (`identity`) of `program`, if
    /// anything: never blocks on the file system.
    pub fn known(&self, program: &Path, identity: &str) -> Option<Vec<PathBuf>> {
        let known = self.known.lock().ok()?;
        let (id, paths) = known.get(program)?;
        (id == identity).then(|| paths.clone())
    }

    /// Every host path `program` needs, itself first (blocking: call off the runtime's workers).
    pub fn needs(&self, program: &Path, identity: &str) -> Result<Vec<PathBuf>, SandboxError> {
        if let Some(paths) = self.known(program, identity) {
            return Ok(paths);
        }
        let paths = walk(program)?;
        if let Ok(mut known) = self.known.lock() {
            known.insert(program.to_path_buf(), (identity.to_string(), paths.clone()));
        }
        Ok(paths)
    }
}

/// The dependency walk itself.
fn walk(program: &Path) -> Result<Vec<PathBuf>, SandboxError> {
    let fail = |why: String| SandboxError::Dependencies {
        path: program.display().to_string(),
        why,
    };
    let mut search = conf_dirs();
    search.extend(default_dirs());
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut queue: VecDeque<PathBuf> = VecDeque::from([program.to_path_buf()]);
    while let Some(file) = queue.pop_front() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let bytes = std::fs::read(&file).map_err(|e| fail(format!("{}: {e}", file.display())))?;
        out.push(file.clone());
        if let Some(interp) = shebang(&bytes) {
            queue.push_back(interp);
            continue;
        }
        if !bytes.starts_with(b"\x7fELF") {
            continue;
        }
        let elf = goblin::elf::Elf::parse(&bytes).map_err(|e| {
            fail(format!(
                "{} is not a readable ELF file: {e}",
                file.display()
            ))
        })?;
        if let Some(interp) = elf.interpreter {
            queue.push_back(PathBuf::from(interp));
        }
        let origin = file.parent().unwrap_or(Path::new("/"));
        let mut own: Vec<PathBuf> = Vec::new();
        for list in elf.runpaths.iter().chain(elf.rpaths.iter()) {
            for dir in list.split(':').filter(|d| !d.is_empty()) {
                let dir = dir
                    .replace("$ORIGIN", &origin.to_string_lossy())
                    .replace("${ORIGIN}", &origin.to_string_lossy());
                own.push(PathBuf::from(dir));
            }
        }
        for lib in &elf.libraries {
            let found = if lib.contains('/') {
                Some(PathBuf::from(lib))
            } else {
                own.iter()
                    .chain(search.iter())
                    .map(|d| d.join(lib))
                    .find(|p| p.is_file())
            };
            match found {
                Some(p) => queue.push_back(p),
                None => return Err(fail(format!("the library {lib} was not found"))),
            }
        }
    }
    for ca in CA_FILES {
        let p = Path::new(ca);
        if p.is_file() {
            out.push(p.to_path_buf());
        }
    }
    Ok(out)
}

/// The interpreter of a `#!` script.
fn shebang(bytes: &[u8]) -> Option<PathBuf> {
    let rest = bytes.strip_prefix(b"#!")?;
    let line = rest.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim();
    let interp = line.split_whitespace().next()?;
    interp.starts_with('/').then(|| PathBuf::from(interp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_binary_needs_its_loader_and_libc() {
        let exe = std::env::current_exe().expect("the test binary");
        let paths = walk(&exe).expect("walk");
        assert_eq!(paths[0], exe);
        let names: Vec<String> = paths
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("ld-linux")), "{names:?}");
    }

    #[test]
    fn the_cache_knows_a_walk_only_for_the_version_it_walked() {
        let exe = std::env::current_exe().expect("the test binary");
        let id = identity(&exe).expect("identity");
        let cache = DepCache::default();
        assert_eq!(cache.known(&exe, &id), None);
        let paths = cache.needs(&exe, &id).expect("walk");
        assert_eq!(cache.known(&exe, &id), Some(paths));
        assert_eq!(cache.known(&exe, "another version"), None);
    }

    #[test]
    fn a_script_needs_its_interpreter() {
        assert_eq!(
            shebang(b"#!/bin/sh -e\necho"),
            Some(PathBuf::from("/bin/sh"))
        );
        assert_eq!(shebang(b"#!sh\n"), None);
        assert_eq!(shebang(b"\x7fELF"), None);
    }
}
