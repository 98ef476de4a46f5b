//! Strict JSON: the one reader that refuses a key given twice in one object, at any depth,
//! naming the second copy by its JSON pointer.
//!
//! `serde_json` accepts `{"a": 1, "a": 2}` and keeps the last copy silently (with or without
//! `preserve_order`), while other readers keep the first: two readers of one text then see two
//! different documents. A text whose meaning depends on the reader is refused here instead.
//! [`from_str`] and [`from_slice`] otherwise read exactly what `serde_json::from_str` reads (the
//! same grammar, the same recursion limit, the same [`Value`], member order kept), in one pass.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a text is not strict JSON.
#[derive(Debug)]
pub enum StrictJsonError {
    /// Not JSON at all (`serde_json`'s own error, with its line and column).
    Syntax(serde_json::Error),
    /// A key given twice in one object.
    DuplicateKey(DuplicateKey),
}

/// A key given twice in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The JSON pointer (RFC 6901) of the object holding the key twice (`""`: the top level).
    pub object: String,
    /// The key, unescaped.
    pub key: String,
    /// The 1-based line of the text just after the second copy of the key.
    pub line: usize,
    /// The 1-based column (in bytes) just after the second copy of the key.
    pub column: usize,
}

impl DuplicateKey {
    /// The JSON pointer of the member given twice: [`DuplicateKey::object`], then the key.
    pub fn pointer(&self) -> String {
        format!("{}/{}", self.object, escape(&self.key))
    }
}

impl fmt::Display for DuplicateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the key `{}` is given twice in the object at {} (the second copy at {}, line {}, \
             column {}); a key given twice reads differently in different JSON readers",
            self.key,
            if self.object.is_empty() {
                "the top level".to_string()
            } else {
                self.object.clone()
            },
            self.pointer(),
            self.line,
            self.column
        )
    }
}

impl fmt::Display for StrictJsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(e) => write!(f, "not valid JSON: {e}"),
            Self::DuplicateKey(d) => write!(f, "{d}"),
        }
    }
}

impl std::error::Error for StrictJsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Syntax(e) => Some(e),
            Self::DuplicateKey(_) => None,
        }
    }
}

/// The JSON value of `text`, refusing a key given twice in any object.
///
/// # Errors
/// [`StrictJsonError::Syntax`] for text that is not one JSON value (trailing characters
/// included); [`StrictJsonError::DuplicateKey`] for the first key given twice.
pub fn from_str(text: &str) -> Result<Value, StrictJsonError> {
    read(&mut serde_json::Deserializer::from_str(text))
}

/// [`from_str`] of bytes (which must be UTF-8, as for `serde_json::from_slice`).
///
/// # Errors
/// As [`from_str`].
pub fn from_slice(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    read(&mut serde_json::Deserializer::from_slice(bytes))
}

/// How a JSON value is named in messages: `null`, `a boolean`, `a number`, `a string`,
/// `a list`, `an object`.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A JSON file that cannot be read strictly.
#[derive(Debug)]
pub struct FileError {
    /// The file.
    pub path: std::path::PathBuf,
    /// Why.
    pub kind: FileErrorKind,
}

/// Why a JSON file cannot be read strictly.
#[derive(Debug)]
pub enum FileErrorKind {
    /// The file cannot be read.
    Io(std::io::Error),
    /// Its text is not strict JSON.
    Json(StrictJsonError),
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FileErrorKind::Io(e) => write!(f, "{}: {e}", self.path.display()),
            FileErrorKind::Json(e) => write!(f, "{}: {e}", self.path.display()),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            FileErrorKind::Io(e) => Some(e),
            FileErrorKind::Json(e) => Some(e),
        }
    }
}

/// The JSON value of the file at `path`, read strictly ([`from_str`]): the one way the runtime
/// reads a JSON file it is given (entities, overlays, budgets, tokens, proposals, secrets).
///
/// # Errors
/// [`FileError`] naming the file: unreadable, not JSON, or a key given twice (with its pointer).
pub fn read_file(path: &std::path::Path) -> Result<Value, FileError> {
    let fail = |kind| FileError {
        path: path.to_path_buf(),
        kind,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(FileErrorKind::Io(e)))?;
    from_str(&text).map_err(|e| fail(FileErrorKind::Json(e)))
}

/// `token` escaped for a JSON pointer (`~` as `~0`, `/` as `~1`).
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn read<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
) -> Result<Value, StrictJsonError> {
    let walk = Walk::default();
    let value = Seed(&walk).deserialize(&mut *de);
    let value = match value {
        Ok(v) => v,
        Err(e) => {
            return Err(match walk.found.into_inner() {
                Some((object, key)) => StrictJsonError::DuplicateKey(DuplicateKey {
                    object,
                    key,
                    line: e.line(),
                    column: e.column(),
                }),
                None => StrictJsonError::Syntax(e),
            })
        }
    };
    de.end().map_err(StrictJsonError::Syntax)?;
    Ok(value)
}

/// Where the reader is (the pointer tokens of the value being read), and the duplicate found.
#[derive(Default)]
struct Walk {
    path: RefCell<Vec<String>>,
    /// The object's pointer and the key given twice.
    found: RefCell<Option<(String, String)>>,
}

impl Walk {
    fn pointer(&self) -> String {
        self.path
            .borrow()
            .iter()
            .map(|t| format!("/{}", escape(t)))
            .collect()
    }

    /// Read the value at `token` below the current one.
    fn below<T>(&self, token: String, read: impl FnOnce() -> T) -> T {
        self.path.borrow_mut().push(token);
        let out = read();
        self.path.borrow_mut().pop();
        out
    }
}

#[derive(Clone, Copy)]
struct Seed<'w>(&'w Walk);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // As serde_json's own `Value` visitor.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let next = self
                .0
                .below(out.len().to_string(), || seq.next_element_seed(self))?;
            match next {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let object = self.0.pointer();
                *self.0.found.borrow_mut() = Some((object, key));
                return Err(A::Error::custom("a key given twice"));
            }
            let value = self.0.below(key.clone(), || map.next_value_seed(self))?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate(text: &str) -> DuplicateKey {
        match from_str(text) {
            Err(StrictJsonError::DuplicateKey(d)) => d,
            other => panic!("not a duplicate: {other:?}"),
        }
    }

    #[test]
    fn reads_what_serde_json_reads() {
        for text in [
            r#"{"b": 1, "a": [1, -2, 3.5, 1e300, 18446744073709551615, -9223372036854775808]}"#,
            r#"{"s": "\u00e9\n\"x\"", "n": null, "t": true, "o": {}, "l": [[], [{}]]}"#,
            "  [1, \"two\", {\"three\": 3}]  ",
            "\"just a string\"",
            "0",
        ] {
            let ours = from_str(text).expect("strict JSON");
            let theirs: Value = serde_json::from_str(text).expect("JSON");
            assert_eq!(ours, theirs, "{text}");
            // Member order is kept as written.
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
            assert_eq!(from_slice(text.as_bytes()).expect("bytes"), theirs);
        }
        // The same key in two different objects is no duplicate.
        assert!(from_str(r#"{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}"#).is_ok());
    }

    #[test]
    fn a_key_given_twice_is_named_at_any_depth() {
        let d = duplicate(r#"{"a": 1, "a": 2}"#);
        assert_eq!((d.object.as_str(), d.key.as_str()), ("", "a"));
        assert_eq!(d.pointer(), "/a");
        assert!(d.to_string().contains("at the top level"), "{d}");

        let text = "{\"tools\": [\n  {\"name\": \"x\"},\n  {\"name\": \"y\", \"description\": \
                    \"one\",\n   \"description\": \"two\"}\n]}";
        let d = duplicate(text);
        assert_eq!(d.object, "/tools/1");
        assert_eq!(d.pointer(), "/tools/1/description");
        assert_eq!(d.line, 4, "{d}");
        let err = from_str(text).expect_err("refused");
        assert!(
            err.to_string()
                .contains("the key `description` is given twice in the object at /tools/1"),
            "{err}"
        );

        // Escaped keys are compared unescaped and named escaped.
        let d = duplicate(r#"{"x": {"a/b~c": 1, "a\/b~c": 2}}"#);
        assert_eq!(d.pointer(), "/x/a~1b~0c");
        let d = duplicate(r#"{"k/1": [0, {"": 1, "": 1}]}"#);
        assert_eq!(d.object, "/k~11/1");
        assert_eq!(d.pointer(), "/k~11/1/");
    }

    #[test]
    fn syntax_errors_stay_syntax_errors() {
        for text in ["{\"a\": }", "[1, 2", "{} {}", "", "[1] x"] {
            assert!(
                matches!(from_str(text), Err(StrictJsonError::Syntax(_))),
                "{text}"
            );
        }
        // Deep nesting is refused by serde_json's recursion limit, not by the stack.
        let deep = "[".repeat(100_000);
        assert!(matches!(from_str(&deep), Err(StrictJsonError::Syntax(_))));
        assert!(matches!(
            from_slice(b"{\"a\": \"\xff\"}"),
            Err(StrictJsonError::Syntax(_))
        ));
    }
}
