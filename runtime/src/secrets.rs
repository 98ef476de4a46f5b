//! Secret sources: where the values of the names a tool declares come from.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// A source of secret values by name (environment, a secrets file; a vault later).
pub trait SecretSource: Send + Sync + 'static {
    /// The value of `name`, if this source has it.
    fn get(&self, name: &str) -> Option<String>;
}

/// Secret values from the process environment (`escepine call` reads them there).
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvSecrets;

impl SecretSource for EnvSecrets {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

/// Secret values from a map (a secrets file, or tests).
#[derive(Debug, Clone, Default)]
pub struct MapSecrets(pub BTreeMap<String, String>);

impl MapSecrets {
    /// Read a `NAME=value` file (blank lines and `#` comments ignored).
    ///
    /// # Errors
    /// The file cannot be read, a line is not `NAME=value`, or a name is given twice (which
    /// value counts would depend on the reader, as for a JSON key given twice).
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut map = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("{}:{}: expected NAME=value", path.display(), i + 1))?;
            let name = k.trim().to_string();
            if map.contains_key(&name) {
                return Err(format!(
                    "{}:{}: the name `{name}` is given twice; give each secret once",
                    path.display(),
                    i + 1
                ));
            }
            map.insert(name, v.to_string());
        }
        Ok(Self(map))
    }
}

impl SecretSource for MapSecrets {
    fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// The first source that has a value wins.
pub struct ChainSecrets(pub Vec<Box<dyn SecretSource>>);

impl SecretSource for ChainSecrets {
    fn get(&self, name: &str) -> Option<String> {
        self.0.iter().find_map(|s| s.get(name))
    }
}

/// The declared secrets of a tool that some source has, by name.
pub fn resolve(source: &dyn SecretSource, names: &[String]) -> BTreeMap<String, String> {
    names
        .iter()
        .filter_map(|n| source.get(n).map(|v| (n.clone(), v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secrets_file_refuses_a_name_given_twice() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("secrets.env");
        std::fs::write(&path, "# keys\nAPI=one\n\nOTHER=x\n API =two\n").expect("write");
        let err = MapSecrets::from_file(&path).expect_err("a name given twice");
        assert!(
            err.contains("secrets.env:5") && err.contains("`API`"),
            "{err}"
        );
        std::fs::write(&path, "API=one\nOTHER=x=y\n").expect("write");
        let ok = MapSecrets::from_file(&path).expect("read");
        assert_eq!(ok.get("OTHER").as_deref(), Some("x=y"));
    }
}
