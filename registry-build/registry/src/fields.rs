//! The one reader of the JSON documents the registry checks (tool records, SOP files, the
//! deployment envelope): the text parsed with its syntax error located, closed objects whose
//! unknown fields are reported with the closest known field, required fields, fields of the
//! wrong JSON type, and fields with two spellings. Each format names its own rules for these
//! problems (`Vocabulary`); the wording and the suggestions are the same everywhere.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::rule::Rule;
use crate::schema::walk::escape;

/// The rules a format reports the reader's problems under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vocabulary {
    /// A field the closed object does not know.
    pub unknown: Rule,
    /// A required field is missing.
    pub missing: Rule,
    /// A field of the wrong JSON type.
    pub wrong_type: Rule,
}

/// Tool records.
pub(crate) const RECORD: Vocabulary = Vocabulary {
    unknown: Rule::UnknownField,
    missing: Rule::MissingField,
    wrong_type: Rule::FieldType,
};

/// SOP files.
pub(crate) const SOP: Vocabulary = Vocabulary {
    unknown: Rule::SopUnknownField,
    missing: Rule::SopShape,
    wrong_type: Rule::SopShape,
};

/// The deployment envelope.
pub(crate) const ENVELOPE: Vocabulary = Vocabulary {
    unknown: Rule::Envelope,
    missing: Rule::Envelope,
    wrong_type: Rule::Envelope,
};

/// The JSON value of a file, read strictly ([`escepine_contract::strict_json`]): a
/// `json/syntax` diagnostic at the position of a syntax error, or a `json/duplicate-key` one at
/// the pointer of a key given twice.
pub fn parse(src: &SourceFile) -> Result<Value, Box<Diagnostic>> {
    use escepine_contract::strict_json::{self, StrictJsonError};
    strict_json::from_str(&src.text).map_err(|e| match e {
        StrictJsonError::Syntax(e) => {
            let offset = offset_of(&src.text, e.line(), e.column());
            Box::new(Diagnostic::at_span(
                Rule::JsonSyntax,
                src,
                Some((offset, 1)),
                format!("not valid JSON: {e}"),
            ))
        }
        StrictJsonError::DuplicateKey(d) => {
            let offset = offset_of(&src.text, d.line, d.column);
            let mut diag = Diagnostic::at_span(
                Rule::JsonDuplicateKey,
                src,
                Some((offset, 1)),
                d.to_string(),
            )
            .help("give each key once; remove the copy that is not meant");
            diag.pointer = Some(d.pointer());
            Box::new(diag)
        }
    })
}

/// Byte offset of a 1-based line and column (serde_json error positions).
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return (offset + column.saturating_sub(1)).min(text.len().saturating_sub(1));
        }
        offset += l.len();
    }
    text.len().saturating_sub(1)
}

/// The closest of `candidates` to `word`, when close enough to be a likely typo.
pub fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(c, word), c))
        .filter(|(d, c)| *d <= 3 && *d < c.len().max(word.len()))
        .min()
        .map(|(_, c)| c)
}

/// A view of one JSON object of a document, reporting at its pointers.
#[derive(Clone)]
pub(crate) struct Object<'a> {
    /// The document.
    pub src: &'a SourceFile,
    /// The object's JSON pointer.
    pub at: String,
    /// The object's members.
    pub map: &'a Map<String, Value>,
    /// The rules its problems are reported under.
    pub vocabulary: Vocabulary,
    /// What prefixes its messages (`state `read`: `), empty for none.
    pub who: String,
}

impl<'a> Object<'a> {
    /// The object `map` at `at` of `src`.
    pub fn new(
        src: &'a SourceFile,
        at: impl Into<String>,
        map: &'a Map<String, Value>,
        vocabulary: Vocabulary,
    ) -> Self {
        Self {
            src,
            at: at.into(),
            map,
            vocabulary,
            who: String::new(),
        }
    }

    /// The same object, its messages prefixed with `who`.
    pub fn who(mut self, who: impl Into<String>) -> Self {
        self.who = who.into();
        self
    }

    /// The pointer of the member `key`.
    pub fn ptr(&self, key: &str) -> String {
        format!("{}/{}", self.at, escape(key))
    }

    /// Report fields outside `known` (`$`-prefixed ones are accepted but never suggested),
    /// with the closest known one or the list of fields.
    pub fn closed(&self, known: &[&str], what: &str, diags: &mut Diagnostics) {
        let visible: Vec<&str> = known
            .iter()
            .copied()
            .filter(|k| !k.starts_with('$'))
            .collect();
        for key in self.map.keys().filter(|k| !known.contains(&k.as_str())) {
            let help = match closest(key, visible.iter().copied()) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("{what} is closed; its fields are: {}", visible.join(", ")),
            };
            diags.push(
                Diagnostic::at(
                    self.vocabulary.unknown,
                    self.src,
                    &self.ptr(key),
                    format!("{}unknown field `{key}` in {what}", self.who),
                )
                .help(help),
            );
        }
    }

    /// The member `key`, or a missing-field diagnostic at the object.
    pub fn require(&self, key: &str, diags: &mut Diagnostics) -> Option<&'a Value> {
        let v = self.map.get(key);
        if v.is_none() {
            diags.push(Diagnostic::at(
                self.vocabulary.missing,
                self.src,
                &self.at,
                format!("{}missing required field `{key}`", self.who),
            ));
        }
        v
    }

    /// Report the member `key` as not being `expected` (`a string`).
    pub fn wrong(&self, key: &str, expected: &str, diags: &mut Diagnostics) {
        let found = self.map.get(key).map_or(String::new(), |v| {
            format!(", not {}", escepine_contract::strict_json::kind(v))
        });
        diags.push(Diagnostic::at(
            self.vocabulary.wrong_type,
            self.src,
            &self.ptr(key),
            format!("{}`{key}` must be {expected}{found}", self.who),
        ));
    }

    /// A required string member.
    pub fn string(&self, key: &str, diags: &mut Diagnostics) -> Option<&'a str> {
        let s = self.require(key, diags)?.as_str();
        if s.is_none() {
            self.wrong(key, "a string", diags);
        }
        s
    }

    /// A required object member.
    pub fn object(&self, key: &str, diags: &mut Diagnostics) -> Option<Object<'a>> {
        let v = self.require(key, diags)?;
        self.as_object(key, v, diags)
    }

    /// The member `key` (whose value is `v`) as an object.
    pub fn as_object(
        &self,
        key: &str,
        v: &'a Value,
        diags: &mut Diagnostics,
    ) -> Option<Object<'a>> {
        match v.as_object() {
            Some(map) => Some(Object {
                src: self.src,
                at: self.ptr(key),
                map,
                vocabulary: self.vocabulary,
                who: self.who.clone(),
            }),
            None => {
                self.wrong(key, "an object", diags);
                None
            }
        }
    }

    /// The pointer and value of a required field with two spellings (`tool_id` and `name`).
    pub fn spelled(
        &self,
        preferred: &str,
        alias: &str,
        diags: &mut Diagnostics,
    ) -> Option<(String, &'a Value)> {
        match (self.map.get(preferred), self.map.get(alias)) {
            (Some(_), Some(_)) => {
                diags.push(
                    Diagnostic::at(
                        Rule::DuplicateSpelling,
                        self.src,
                        &self.ptr(alias),
                        format!("`{preferred}` and its alias `{alias}` are both given"),
                    )
                    .help(format!("keep one of them (`{preferred}` is preferred)")),
                );
                None
            }
            (Some(v), None) => Some((self.ptr(preferred), v)),
            (None, Some(v)) => Some((self.ptr(alias), v)),
            (None, None) => {
                diags.push(Diagnostic::at(
                    self.vocabulary.missing,
                    self.src,
                    &self.at,
                    format!(
                        "{}missing required field `{preferred}` (alias `{alias}`)",
                        self.who
                    ),
                ));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn src(text: &str) -> SourceFile {
        SourceFile::new("t.json", text)
    }

    #[test]
    fn unknown_fields_get_the_closest_known_one_or_the_list() {
        let s = src(r#"{"verison": 1, "zzz": 2, "$comment": "x"}"#);
        let v = parse(&s).expect("json");
        let map = v.as_object().expect("object");
        let mut diags = Diagnostics::new();
        Object::new(&s, "", map, SOP).closed(&["version", "$comment"], "an SOP", &mut diags);
        let all: Vec<_> = diags.iter().collect();
        assert_eq!(all.len(), 2, "{all:?}");
        assert_eq!(all[0].rule, Rule::SopUnknownField);
        assert_eq!(all[0].pointer.as_deref(), Some("/verison"));
        assert_eq!(all[0].help.as_deref(), Some("did you mean `version`?"));
        assert_eq!(
            all[1].help.as_deref(),
            Some("an SOP is closed; its fields are: version")
        );
    }

    #[test]
    fn each_format_reports_under_its_own_rules() {
        let s = src(r#"{"a": 1}"#);
        let v = json!({"a": 1});
        let map = v.as_object().expect("object");
        for (vocabulary, rule) in [
            (RECORD, Rule::FieldType),
            (SOP, Rule::SopShape),
            (ENVELOPE, Rule::Envelope),
        ] {
            let mut diags = Diagnostics::new();
            let obj = Object::new(&s, "", map, vocabulary).who("state `x`: ");
            assert_eq!(obj.string("a", &mut diags), None);
            assert_eq!(obj.require("b", &mut diags), None);
            let all: Vec<_> = diags.iter().collect();
            assert_eq!(all[0].rule, rule);
            assert_eq!(
                all[0].message,
                "state `x`: `a` must be a string, not a number"
            );
            assert_eq!(all[1].rule, vocabulary.missing);
            assert_eq!(all[1].message, "state `x`: missing required field `b`");
        }
    }

    #[test]
    fn a_syntax_error_points_at_its_line_and_column() {
        let s = src("{\n  \"a\": ,\n}");
        let d = parse(&s).expect_err("not JSON");
        assert_eq!(d.rule, Rule::JsonSyntax);
        assert_eq!(d.line_col, Some((2, 8)));
    }

    #[test]
    fn a_key_given_twice_is_refused_at_its_pointer() {
        let s = src("{\n  \"retry\": {\"max_attempts\": 1,\n  \"max_attempts\": 100}\n}");
        let d = parse(&s).expect_err("a key twice");
        assert_eq!(d.rule, Rule::JsonDuplicateKey);
        assert_eq!(d.pointer.as_deref(), Some("/retry/max_attempts"));
        assert_eq!(d.line_col.map(|(line, _)| line), Some(3));
        assert!(d.message.contains("`max_attempts`"), "{}", d.message);
    }
}
