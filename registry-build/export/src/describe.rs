//! Moving what a provider cannot express into the description the model reads.
//!
//! A provider that drops a keyword (OpenAI strict mode has no `maxLength`; Gemini has no
//! integer enums and few string formats) would otherwise hide a rule the input gate still
//! enforces, and the model would learn it only from a rejected call. [`Lost`] collects the
//! dropped keywords of one schema and phrases them for people:
//! `"The page to read (format: uri; at most 2048 characters)"`.

use serde_json::Value;

/// The sentence added for a list marked `x-authorize-each` (design.md, per-URL requests).
pub const AUTHORIZE_EACH: &str =
    "each URL is authorized on its own, and one denied URL denies the whole call";

/// Keywords one schema lost in an export, in the order they were dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lost {
    keywords: Vec<(String, Value)>,
}

impl Lost {
    /// Nothing lost yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record that `key` (with its value) was dropped.
    pub fn keyword(&mut self, key: &str, value: &Value) {
        self.keywords.push((key.to_string(), value.clone()));
    }

    /// Whether nothing worth saying was lost.
    pub fn is_empty(&self) -> bool {
        self.phrases().is_empty()
    }

    /// The dropped keywords as short phrases (bounds of one kind merged:
    /// `between 1 and 20 items`).
    pub fn phrases(&self) -> Vec<String> {
        let get = |k: &str| {
            self.keywords
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v)
        };
        let mut out = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for (key, value) in &self.keywords {
            if seen.contains(&key.as_str()) {
                continue;
            }
            let phrase = match key.as_str() {
                "minLength" | "maxLength" => {
                    seen.extend(["minLength", "maxLength"]);
                    range(get("minLength"), get("maxLength"), Some("character"))
                }
                "minItems" | "maxItems" => {
                    seen.extend(["minItems", "maxItems"]);
                    range(get("minItems"), get("maxItems"), Some("item"))
                }
                "minimum" | "maximum" => {
                    seen.extend(["minimum", "maximum"]);
                    range(get("minimum"), get("maximum"), None)
                }
                "format" => Some(format!("format: {}", plain(value))),
                "pattern" => Some(format!("matches the pattern {}", plain(value))),
                "enum" => Some(format!("one of: {}", list(value))),
                "const" => Some(format!("always {value}")),
                "default" => Some(format!("default: {value}")),
                "examples" => Some(format!("for example: {}", list(value))),
                "deprecated" => (value == &Value::Bool(true)).then(|| "deprecated".to_string()),
                "x-authorize-each" => {
                    (value == &Value::Bool(true)).then(|| AUTHORIZE_EACH.to_string())
                }
                other => Some(format!("{other}: {value}")),
            };
            seen.push(key);
            out.extend(phrase);
        }
        out
    }

    /// `description` with the lost keywords appended in parentheses (or the phrases alone when
    /// there is no description); `None` when there is neither.
    pub fn describe(&self, description: Option<&str>) -> Option<String> {
        let phrases = self.phrases();
        let description = description.map(str::trim).filter(|d| !d.is_empty());
        match (description, phrases.is_empty()) {
            (d, true) => d.map(str::to_string),
            (None, false) => Some(phrases.join("; ")),
            (Some(d), false) => Some(format!("{d} ({})", phrases.join("; "))),
        }
    }
}

/// `at least a`, `at most b`, `between a and b`, `exactly a`, with a counted unit.
fn range(min: Option<&Value>, max: Option<&Value>, unit: Option<&str>) -> Option<String> {
    let counted = |v: &Value| match unit {
        None => v.to_string(),
        Some(u) => {
            let plural = if v.as_f64() == Some(1.0) { "" } else { "s" };
            format!("{v} {u}{plural}")
        }
    };
    Some(match (min, max) {
        (Some(a), Some(b)) if a == b => format!("exactly {}", counted(a)),
        (Some(a), Some(b)) => match unit {
            None => format!("between {a} and {b}"),
            Some(_) => format!("between {a} and {}", counted(b)),
        },
        (Some(a), None) => format!("at least {}", counted(a)),
        (None, Some(b)) => format!("at most {}", counted(b)),
        (None, None) => return None,
    })
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn list(v: &Value) -> String {
    match v {
        Value::Array(items) => items
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn phrases_merge_bounds_and_read_naturally() {
        let mut l = Lost::new();
        l.keyword("format", &json!("uri"));
        l.keyword("maxLength", &json!(2048));
        assert_eq!(
            l.describe(Some("The page to read.")).as_deref(),
            Some("The page to read. (format: uri; at most 2048 characters)")
        );
        let mut l = Lost::new();
        l.keyword("minItems", &json!(1));
        l.keyword("maxItems", &json!(20));
        l.keyword("minLength", &json!(1));
        l.keyword("enum", &json!([1, 2]));
        l.keyword("deprecated", &json!(false));
        assert_eq!(
            l.describe(None).as_deref(),
            Some("between 1 and 20 items; at least 1 character; one of: 1, 2")
        );
        assert_eq!(Lost::new().describe(Some(" ")), None);
    }

    #[test]
    fn authorize_each_and_exact_counts() {
        let mut l = Lost::new();
        l.keyword("x-authorize-each", &json!(true));
        l.keyword("minLength", &json!(64));
        l.keyword("maxLength", &json!(64));
        let d = l.describe(Some("URLs")).unwrap();
        assert!(
            d.contains(AUTHORIZE_EACH) && d.contains("exactly 64 characters"),
            "{d}"
        );
    }
}
