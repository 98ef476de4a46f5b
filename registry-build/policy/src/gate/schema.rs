//! A compiled JSON Schema gate.

use std::fmt;

use serde_json::Value;

/// One way a value deviates from its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the value.
    pub pointer: String,
    /// The schema keyword that failed (`additionalProperties`, `type`, `format`, …).
    pub keyword: String,
    /// The validator's message.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {} ({})", self.message, self.keyword)
    }
}

/// A schema compiled once, shared by every call of its tool.
pub struct SchemaGate {
    validator: jsonschema::Validator,
}

impl fmt::Debug for SchemaGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SchemaGate")
    }
}

impl SchemaGate {
    /// Compile `schema` (draft 2020-12, `format` validated).
    ///
    /// # Errors
    /// The schema does not compile (registration rules make this unreachable for loaded records).
    pub fn new(schema: &Value) -> Result<Self, String> {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|e| e.to_string())
    }

    /// Every violation of `value`, or `Ok` when it conforms.
    ///
    /// # Errors
    /// The violations, each with its pointer and keyword.
    pub fn check(&self, value: &Value) -> Result<(), Vec<Violation>> {
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let violations: Vec<Violation> = self
            .validator
            .iter_errors(value)
            .map(|e| Violation {
                pointer: e.instance_path().as_str().to_string(),
                keyword: e.kind().keyword().to_string(),
                message: e.to_string(),
            })
            .collect();
        Err(violations)
    }
}

/// Violations joined by `; `, as refusals and reports print them.
pub fn violation_list(v: &[Violation]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gate() -> SchemaGate {
        SchemaGate::new(&json!({
            "type": "object", "additionalProperties": false, "required": ["url"],
            "properties": {"url": {"type": "string", "format": "uri"}, "n": {"type": "integer", "maximum": 5}}
        }))
        .unwrap()
    }

    #[test]
    fn reports_pointer_and_keyword() {
        let g = gate();
        assert!(g.check(&json!({"url": "https://example.com"})).is_ok());
        let v = g
            .check(&json!({"url": "https://example.com", "extra": 1}))
            .unwrap_err();
        assert_eq!(v[0].keyword, "additionalProperties");
        let v = g.check(&json!({"url": "not a uri"})).unwrap_err();
        assert_eq!(
            (v[0].pointer.as_str(), v[0].keyword.as_str()),
            ("/url", "format")
        );
        let v = g
            .check(&json!({"url": "https://x.y", "n": "5"}))
            .unwrap_err();
        assert_eq!(
            (v[0].pointer.as_str(), v[0].keyword.as_str()),
            ("/n", "type")
        );
        let v = g.check(&json!({})).unwrap_err();
        assert_eq!(v[0].keyword, "required");
        let v = g.check(&json!({"url": "https://x.y", "n": 6})).unwrap_err();
        assert_eq!(v[0].keyword, "maximum");
    }
}
