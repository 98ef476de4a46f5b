//! Walking a registered schema: local `$ref` resolution and property lookup.
//!
//! Only schemas that passed the subset rules are walked here, so `$ref` is always
//! `#/$defs/<name>` and `type` is a single string (or absent beside `enum`/`const`).

use serde_json::Value;

/// The JSON type a subset schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonType {
    /// `object`
    Object,
    /// `array`
    Array,
    /// `string`
    String,
    /// `integer`
    Integer,
    /// `number`
    Number,
    /// `boolean`
    Boolean,
}

impl JsonType {
    /// Parse a `type` keyword value.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "object" => Self::Object,
            "array" => Self::Array,
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            _ => return None,
        })
    }

    /// The type of a JSON value (`null` has none).
    pub fn of_value(v: &Value) -> Option<Self> {
        Some(match v {
            Value::Object(_) => Self::Object,
            Value::Array(_) => Self::Array,
            Value::String(_) => Self::String,
            Value::Number(n) if n.is_i64() || n.is_u64() => Self::Integer,
            Value::Number(_) => Self::Number,
            Value::Bool(_) => Self::Boolean,
            Value::Null => return None,
        })
    }

    /// The keyword spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }

    /// Whether a value of type `self` is accepted where `target` is expected
    /// (an integer is a number).
    pub fn fits(self, target: JsonType) -> bool {
        self == target || (self == JsonType::Integer && target == JsonType::Number)
    }
}

/// Escape a JSON pointer token (`~` as `~0`, `/` as `~1`).
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Follow `$ref` (into the root's `$defs`) until a schema without one; `None` if dangling or
/// cyclic.
pub fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> Option<&'a Value> {
    for _ in 0..64 {
        match schema.get("$ref").and_then(Value::as_str) {
            None => return Some(schema),
            Some(r) => {
                let name = r.strip_prefix("#/$defs/")?;
                let name = name.replace("~1", "/").replace("~0", "~");
                schema = root.get("$defs")?.get(&name)?;
            }
        }
    }
    None
}

/// The JSON type of a (resolved) subset schema: its `type`, or the common type of its
/// `enum`/`const` values.
pub fn type_of(root: &Value, schema: &Value) -> Option<JsonType> {
    let s = resolve(root, schema)?;
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        return JsonType::parse(t);
    }
    if let Some(c) = s.get("const") {
        return JsonType::of_value(c);
    }
    let values = s.get("enum")?.as_array()?;
    let mut ty = JsonType::of_value(values.first()?)?;
    for v in values {
        let t = JsonType::of_value(v)?;
        if t == ty || t.fits(ty) {
            continue;
        }
        if ty.fits(t) {
            ty = t;
        } else {
            return None;
        }
    }
    Some(ty)
}

/// The properties of a (resolved) object schema, with whether each is required.
pub fn properties<'a>(root: &'a Value, schema: &'a Value) -> Vec<(&'a str, &'a Value, bool)> {
    let Some(s) = resolve(root, schema) else {
        return Vec::new();
    };
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    s.get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| (k.as_str(), v, required.contains(&k.as_str())))
                .collect()
        })
        .unwrap_or_default()
}

/// Where a JSON pointer into instances of `schema` leads: the sub-schema and whether every
/// step on the way is required (so the value is always present).
#[derive(Debug, Clone, Copy)]
pub struct PointerTarget<'a> {
    /// The sub-schema the pointer's value conforms to.
    pub schema: &'a Value,
    /// Whether every property on the way is required (array steps count as not required).
    pub always_present: bool,
}

/// Resolve a JSON pointer into instances of `schema` (rooted at `root`) to the sub-schema its
/// value conforms to.
pub fn pointer_schema<'a>(
    root: &'a Value,
    schema: &'a Value,
    pointer: &str,
) -> Option<PointerTarget<'a>> {
    let mut cur = resolve(root, schema)?;
    let mut always = true;
    if pointer.is_empty() {
        return Some(PointerTarget {
            schema: cur,
            always_present: true,
        });
    }
    for raw in pointer.strip_prefix('/')?.split('/') {
        let token = raw.replace("~1", "/").replace("~0", "~");
        match type_of(root, cur)? {
            JsonType::Object => {
                let (_, sub, req) = properties(root, cur)
                    .into_iter()
                    .find(|(k, _, _)| *k == token)?;
                always &= req;
                cur = resolve(root, sub)?;
            }
            JsonType::Array => {
                token.parse::<usize>().ok()?;
                always = false;
                cur = resolve(root, cur.get("items")?)?;
            }
            _ => return None,
        }
    }
    Some(PointerTarget {
        schema: cur,
        always_present: always,
    })
}
