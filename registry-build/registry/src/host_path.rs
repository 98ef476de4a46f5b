//! Host paths named by records and the envelope: absolute and lexically normal, compared by
//! whole path components.

use std::path::{Path, PathBuf};

/// Why a string is not an absolute, lexically normal host path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPathError {
    /// Not starting with `/`.
    #[error("`{0}` is not an absolute path")]
    Relative(String),
    /// A `.` or `..` component, an empty component (`//`, a trailing `/`) or a NUL byte.
    #[error("`{0}` is not lexically normal: write it without `.`, `..`, `//` or a trailing `/`")]
    NotNormal(String),
}

/// Parse an absolute, lexically normal path (`/usr/lib/python3`; `/` alone is allowed).
///
/// # Errors
/// [`HostPathError`] naming what is wrong.
pub fn parse(text: &str) -> Result<PathBuf, HostPathError> {
    let Some(rest) = text.strip_prefix('/') else {
        return Err(HostPathError::Relative(text.to_string()));
    };
    let normal = rest.is_empty()
        || (!text.contains('\0')
            && rest
                .split('/')
                .all(|seg| !seg.is_empty() && seg != "." && seg != ".."));
    if normal {
        Ok(PathBuf::from(text))
    } else {
        Err(HostPathError::NotNormal(text.to_string()))
    }
}

/// [`parse`] of `text` made absolute against the directory `base` by joining (`base/text`),
/// never by normalising it: a relative path is allowed where a command line takes one
/// (`escepine import mcp --read-only lib`), and otherwise the very rule of records and the
/// envelope applies to the path as it will be written (`a/../b` is refused, naming
/// `base/a/../b`).
///
/// # Errors
/// [`HostPathError`] naming what is wrong (a `base` that is not UTF-8 reads as not normal).
pub fn parse_against(text: &str, base: &Path) -> Result<PathBuf, HostPathError> {
    if text.starts_with('/') {
        return parse(text);
    }
    let joined = base.join(text);
    match joined.to_str() {
        Some(joined) => parse(joined),
        None => Err(HostPathError::NotNormal(
            joined.to_string_lossy().into_owned(),
        )),
    }
}

/// Whether `path` is `prefix` or lies under it, comparing whole components (`/usr/lib` is
/// under `/usr`, `/usrx` is not). Both must be lexically normal: a path with `..` is under
/// nothing.
pub fn under(path: &Path, prefix: &Path) -> bool {
    let normal = |p: &Path| p.to_str().is_some_and(|s| parse(s).is_ok());
    normal(path) && normal(prefix) && path.starts_with(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_and_normal_only() {
        assert_eq!(parse("/usr/lib"), Ok(PathBuf::from("/usr/lib")));
        assert_eq!(parse("/"), Ok(PathBuf::from("/")));
        assert!(matches!(parse("usr/lib"), Err(HostPathError::Relative(_))));
        for bad in [
            "/usr/../etc",
            "/usr/./lib",
            "/usr//lib",
            "/usr/lib/",
            "/a\0b",
        ] {
            assert!(
                matches!(parse(bad), Err(HostPathError::NotNormal(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn relative_paths_are_joined_never_normalised() {
        let base = Path::new("/home/u/proj");
        assert_eq!(
            parse_against("lib", base),
            Ok(PathBuf::from("/home/u/proj/lib"))
        );
        assert_eq!(
            parse_against("/usr/lib", base),
            Ok(PathBuf::from("/usr/lib"))
        );
        for (bad, named) in [
            ("a/../b", "/home/u/proj/a/../b"),
            ("./lib", "/home/u/proj/./lib"),
            ("lib/", "/home/u/proj/lib/"),
            ("/usr/../etc", "/usr/../etc"),
        ] {
            assert_eq!(
                parse_against(bad, base),
                Err(HostPathError::NotNormal(named.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn prefixes_match_whole_components() {
        assert!(under(Path::new("/usr/lib"), Path::new("/usr")));
        assert!(under(Path::new("/usr"), Path::new("/usr")));
        assert!(under(Path::new("/usr"), Path::new("/")));
        assert!(!under(Path::new("/usrx/lib"), Path::new("/usr")));
        assert!(!under(Path::new("/usr/../etc"), Path::new("/usr")));
    }
}
