//! Scrubbing secret values from everything recorded, logged, traced or returned.

use serde_json::Value;

/// What replaces a secret value.
pub const REDACTED: &str = "[REDACTED]";

/// Replaces every occurrence of the secret values it holds (and their common encodings).
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    needles: Vec<String>,
}

impl Scrubber {
    /// A scrubber for these secret values (empty values are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let mut needles: Vec<String> = Vec::new();
        for s in secrets.into_iter().filter(|s| !s.is_empty()) {
            needles.push(s.to_string());
            // The forms a tool is likely to print a secret in: JSON-escaped and percent-encoded.
            if let Ok(json) = serde_json::to_string(s) {
                let inner = json[1..json.len() - 1].to_string();
                if inner != s {
                    needles.push(inner);
                }
            }
            let pct: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
            if pct != s {
                needles.push(pct);
            }
        }
        // Longest first, so a secret containing another is removed whole.
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        Self { needles }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for n in &self.needles {
            if out.contains(n.as_str()) {
                out = out.replace(n.as_str(), REDACTED);
            }
        }
        out
    }

    /// Scrub every string (and object key) of a JSON value in place.
    pub fn value(&self, v: &mut Value) {
        if self.needles.is_empty() {
            return;
        }
        match v {
            Value::String(s) if self.needles.iter().any(|n| s.contains(n.as_str())) => {
                *s = self.text(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let dirty: Vec<String> = map
                    .keys()
                    .filter(|k| self.needles.iter().any(|n| k.contains(n.as_str())))
                    .cloned()
                    .collect();
                for k in dirty {
                    if let Some(val) = map.remove(&k) {
                        map.insert(self.text(&k), val);
                    }
                }
                map.values_mut().for_each(|i| self.value(i));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scrubs_text_values_keys_and_encodings() {
        let s = Scrubber::new(["s3cr3t/\"x", ""]);
        assert_eq!(s.text("a s3cr3t/\"x b"), "a [REDACTED] b");
        assert_eq!(s.text("json: s3cr3t/\\\"x"), "json: [REDACTED]");
        assert_eq!(s.text("q=s3cr3t%2F%22x"), "q=[REDACTED]");
        let mut v = json!({"k": ["s3cr3t/\"x"], "s3cr3t/\"x": 1});
        s.value(&mut v);
        assert_eq!(v, json!({"k": ["[REDACTED]"], "[REDACTED]": 1}));
        assert!(!v.to_string().contains("s3cr3t"));
    }
}
