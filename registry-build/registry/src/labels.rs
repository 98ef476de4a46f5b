//! Information-flow labels: what a tool's output carries into the flow of calls that made it
//! (`untrusted-content`: text from outside that may hold instructions) and what a tool reads
//! (`private`: data that must not leave). A record declares them in `data_labels`; the
//! deployment envelope lists the labels a deployment knows, each with a description.
//!
//! ```json
//! "data_labels": { "output": ["untrusted-content"], "reads": ["private"] }
//! ```
//!
//! A label name is lower-case words joined by `-` ([`name_problem`]).

use serde_json::{json, Value};

/// Why `name` is not a label name (lower-case ASCII words joined by single `-`), or `None`.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > 64 {
        return Some("it is longer than 64 characters");
    }
    let words_ok = name
        .split('-')
        .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()));
    if words_ok {
        None
    } else {
        Some("a label is lower-case words joined by `-` (`untrusted-content`)")
    }
}

/// A record's `data_labels`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataLabels {
    /// The labels the tool's output brings into its flow.
    pub output: Vec<String>,
    /// The labels of the data the tool reads (they enter the flow with its call).
    pub reads: Vec<String>,
}

impl DataLabels {
    /// Whether the record declares no label.
    pub fn is_empty(&self) -> bool {
        self.output.is_empty() && self.reads.is_empty()
    }

    /// Every label, output's then reads', each once.
    pub fn all(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for l in self.output.iter().chain(&self.reads) {
            if !out.contains(&l.as_str()) {
                out.push(l);
            }
        }
        out
    }

    /// The record's `data_labels` value (`None` when empty: the field is left out).
    pub fn to_json(&self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let mut m = serde_json::Map::new();
        if !self.output.is_empty() {
            m.insert("output".into(), json!(self.output));
        }
        if !self.reads.is_empty() {
            m.insert("reads".into(), json!(self.reads));
        }
        Some(Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_lower_case_words_joined_by_dashes() {
        for ok in ["private", "untrusted-content", "a-b-c"] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "Private",
            "untrusted_content",
            "-a",
            "a-",
            "a--b",
            "ü",
            "a1",
            &"a".repeat(65),
        ] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn all_labels_are_listed_once() {
        let l = DataLabels {
            output: vec!["untrusted-content".into(), "private".into()],
            reads: vec!["private".into()],
        };
        assert_eq!(l.all(), ["untrusted-content", "private"]);
        assert_eq!(
            l.to_json(),
            Some(json!({"output": ["untrusted-content", "private"], "reads": ["private"]}))
        );
        assert_eq!(DataLabels::default().to_json(), None);
    }
}
