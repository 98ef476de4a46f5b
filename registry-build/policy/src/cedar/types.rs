//! Cedar types of payloads: `context.input` typed from a record's input schema.
//!
//! string → `String`, integer → `Long`, boolean → `Bool`, number → `decimal`, array → `Set<T>`,
//! object → a record type (required properties plain, optional ones `name?:`). `enum` and `const`
//! take the type of their values; a string `enum` or `const` is a `String` whose values are
//! kept ([`CedarType::Enum`]) so the build can check the literals policies compare it with.
//! A string's `format` picks a Cedar extension type ([`format_type`]): `date-time` →
//! `datetime`, `ipv4` and `ipv6` → `ipaddr`, `duration` → `duration`. A recursive `$ref` has no
//! Cedar type and is an error.

use std::fmt::Write as _;

use serde_json::Value;

use crate::cedar::syntax;
use escepine_registry::schema::walk::{self, JsonType};

/// How deep a schema may nest before it is refused (far beyond any real payload).
const MAX_DEPTH: usize = 64;

/// A Cedar type, as it appears in a schema's record types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CedarType {
    /// `String`.
    String,
    /// `Long`.
    Long,
    /// `Bool`.
    Bool,
    /// A `String` whose every value is one of these (a string `enum`, or a `const`): written
    /// `String` (Cedar has no string enumerations); the build refuses a policy comparing it with
    /// a literal outside them.
    Enum(Vec<String>),
    /// The `decimal` extension type.
    Decimal,
    /// The `ipaddr` extension type: `context.url.ip`, and strings of `format: ipv4` or `ipv6`.
    IpAddr,
    /// The `datetime` extension type: strings of `format: date-time` (RFC 3339).
    DateTime,
    /// The `duration` extension type: strings of `format: duration` (ISO 8601).
    Duration,
    /// `Set<T>`.
    Set(Box<CedarType>),
    /// A record type, attributes in the schema's property order.
    Record(Vec<Attribute>),
}

/// One attribute of a record type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The attribute (property) name.
    pub name: String,
    /// Whether every value has it (a required property); optional ones are written `name?:`.
    pub required: bool,
    /// Its type.
    pub ty: CedarType,
}

/// Why a (sub-)schema has no Cedar type. Pointers are JSON pointers into the input schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypingError {
    /// A `$ref` that leads back to a definition being typed.
    #[error(
        "`$ref` `{reference}` at `{pointer}` is recursive: a recursive schema has no Cedar type"
    )]
    Recursive {
        /// Where the `$ref` is.
        pointer: String,
        /// The reference.
        reference: String,
    },
    /// A `$ref` that does not lead into the root `$defs`.
    #[error("`$ref` `{reference}` at `{pointer}` does not resolve into the root `$defs`")]
    Dangling {
        /// Where the `$ref` is.
        pointer: String,
        /// The reference.
        reference: String,
    },
    /// A schema with no single JSON type.
    #[error("the schema at `{pointer}` has no single JSON type, so it has no Cedar type")]
    Untyped {
        /// Where the schema is.
        pointer: String,
    },
    /// An array without an `items` schema.
    #[error("the array at `{pointer}` has no `items` schema, so its elements have no Cedar type")]
    NoItems {
        /// Where the array schema is.
        pointer: String,
    },
    /// Nesting beyond any reasonable depth.
    #[error("the schema at `{pointer}` nests too deeply to be typed")]
    TooDeep {
        /// Where the limit was reached.
        pointer: String,
    },
}

impl TypingError {
    /// The JSON pointer (into the input schema) where the problem is.
    pub fn pointer(&self) -> &str {
        match self {
            Self::Recursive { pointer, .. }
            | Self::Dangling { pointer, .. }
            | Self::Untyped { pointer }
            | Self::NoItems { pointer }
            | Self::TooDeep { pointer } => pointer,
        }
    }
}

/// The Cedar type of `context.input` for a payload schema (a schema that passed the subset
/// rules).
///
/// # Errors
/// A recursive or dangling `$ref`, a schema without a single type, or an array without `items`.
pub fn input_type(input_schema: &Value) -> Result<CedarType, TypingError> {
    let mut typer = Typer {
        root: input_schema,
        stack: Vec::new(),
    };
    typer.ty(input_schema, String::new(), 0)
}

struct Typer<'a> {
    root: &'a Value,
    /// The `$defs` names being expanded (a name met again is a cycle).
    stack: Vec<String>,
}

impl<'a> Typer<'a> {
    fn ty(
        &mut self,
        schema: &'a Value,
        pointer: String,
        depth: usize,
    ) -> Result<CedarType, TypingError> {
        if depth > MAX_DEPTH {
            return Err(TypingError::TooDeep { pointer });
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let dangling = || TypingError::Dangling {
                pointer: pointer.clone(),
                reference: reference.to_string(),
            };
            let token = reference.strip_prefix("#/$defs/").ok_or_else(dangling)?;
            let name = token.replace("~1", "/").replace("~0", "~");
            if self.stack.contains(&name) {
                return Err(TypingError::Recursive {
                    pointer,
                    reference: reference.to_string(),
                });
            }
            let target = self
                .root
                .get("$defs")
                .and_then(|d| d.get(&name))
                .ok_or_else(dangling)?;
            self.stack.push(name);
            let result = self.ty(target, format!("/$defs/{token}"), depth + 1);
            self.stack.pop();
            return result;
        }
        let Some(json_type) = walk::type_of(self.root, schema) else {
            return Err(TypingError::Untyped { pointer });
        };
        Ok(match json_type {
            JsonType::String => string_type(walk::resolve(self.root, schema).unwrap_or(schema)),
            JsonType::Integer => CedarType::Long,
            JsonType::Boolean => CedarType::Bool,
            JsonType::Number => CedarType::Decimal,
            JsonType::Array => {
                let Some(items) = schema.get("items") else {
                    return Err(TypingError::NoItems { pointer });
                };
                let element = self.ty(items, format!("{pointer}/items"), depth + 1)?;
                CedarType::Set(Box::new(element))
            }
            JsonType::Object => {
                let mut attributes = Vec::new();
                for (name, sub, required) in walk::properties(self.root, schema) {
                    let p = format!("{pointer}/properties/{}", escape_token(name));
                    attributes.push(Attribute {
                        name: name.to_string(),
                        required,
                        ty: self.ty(sub, p, depth + 1)?,
                    });
                }
                CedarType::Record(attributes)
            }
        })
    }
}

/// The Cedar extension type a string `format` maps to, if any: `date-time` → `datetime`,
/// `ipv4`/`ipv6` → `ipaddr`, `duration` → `duration`. Every other format stays a `String`.
pub fn format_type(format: &str) -> Option<CedarType> {
    match format {
        "date-time" => Some(CedarType::DateTime),
        "ipv4" | "ipv6" => Some(CedarType::IpAddr),
        "duration" => Some(CedarType::Duration),
        _ => None,
    }
}

/// The type of a string schema: its format's extension type, else an [`CedarType::Enum`] of
/// its string `enum` or `const`, else `String`.
fn string_type(schema: &Value) -> CedarType {
    if let Some(ty) = schema
        .get("format")
        .and_then(Value::as_str)
        .and_then(format_type)
    {
        return ty;
    }
    let values: Option<Vec<String>> = match (schema.get("const"), schema.get("enum")) {
        (Some(Value::String(c)), _) => Some(vec![c.clone()]),
        (None, Some(Value::Array(values))) => values
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => None,
    };
    match values {
        Some(values) if !values.is_empty() => CedarType::Enum(values),
        _ => CedarType::String,
    }
}

/// A JSON pointer token for `name`.
pub(crate) fn escape_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

impl CedarType {
    /// The type in Cedar schema syntax, record types spread over lines indented from `indent`.
    pub fn to_cedar(&self, indent: usize) -> String {
        let mut out = String::new();
        self.write(&mut out, indent);
        out
    }

    fn write(&self, out: &mut String, indent: usize) {
        match self {
            Self::String | Self::Enum(_) => out.push_str("String"),
            Self::Long => out.push_str("Long"),
            Self::Bool => out.push_str("Bool"),
            // Extension types are written qualified, so a user's common type of the same name
            // cannot shadow them.
            Self::Decimal => out.push_str("__cedar::decimal"),
            Self::IpAddr => out.push_str("__cedar::ipaddr"),
            Self::DateTime => out.push_str("__cedar::datetime"),
            Self::Duration => out.push_str("__cedar::duration"),
            Self::Set(element) => {
                out.push_str("Set<");
                element.write(out, indent);
                out.push('>');
            }
            Self::Record(attributes) => write_record(out, attributes, indent),
        }
    }
}

/// A record type `{ … }` whose attributes are written one a line at `indent + 2`.
pub(crate) fn write_record(out: &mut String, attributes: &[Attribute], indent: usize) {
    if attributes.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{\n");
    for a in attributes {
        let _ = write!(
            out,
            "{:width$}{}{}: ",
            "",
            syntax::attr_name(&a.name),
            if a.required { "" } else { "?" },
            width = indent + 2
        );
        a.ty.write(out, indent + 2);
        out.push_str(",\n");
    }
    let _ = write!(out, "{:width$}}}", "", width = indent);
}

/// The type of `context.url`: the parsed facts of the one URL a request authorizes —
/// `raw`, `scheme`, `host`, `port`, `path`; `ip` (Cedar's `ipaddr`) when the host is an address
/// literal, IPv4-mapped IPv6 addresses as their IPv4 address; and `public`, whether the host is
/// a public address or a name under a public suffix (not `localhost`, a single label, or a
/// special-use or internal suffix such as `.internal`, `.svc`, `.local`, `.lan`, `.home.arpa`).
pub fn url_type() -> CedarType {
    CedarType::Record(
        [
            ("raw", CedarType::String, true),
            ("scheme", CedarType::String, true),
            ("host", CedarType::String, true),
            ("port", CedarType::Long, true),
            ("path", CedarType::String, true),
            ("origin", CedarType::String, true),
            ("ip", CedarType::IpAddr, false),
            ("public", CedarType::Bool, true),
        ]
        .into_iter()
        .map(|(name, ty, required)| Attribute {
            name: name.to_string(),
            required,
            ty,
        })
        .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalar_and_nested_types() {
        let s = json!({"type":"object","additionalProperties":false,"required":["q","n"],
            "properties":{
                "q":{"type":"string"},
                "n":{"type":"integer","minimum":1},
                "deep":{"type":"boolean"},
                "ratio":{"type":"number"},
                "kind":{"enum":["a","b"]},
                "page-size":{"const":3},
                "tags":{"type":"array","items":{"$ref":"#/$defs/Tag"}}},
            "$defs":{"Tag":{"type":"object","additionalProperties":false,"required":["k"],
                "properties":{"k":{"type":"string"}}}}});
        let t = input_type(&s).expect("typed");
        assert_eq!(
            t.to_cedar(0),
            "{\n  q: String,\n  n: Long,\n  deep?: Bool,\n  ratio?: __cedar::decimal,\n  kind?: String,\n  \
             \"page-size\"?: Long,\n  tags?: Set<{\n    k: String,\n  }>,\n}"
        );
    }

    #[test]
    fn empty_object_is_empty_record() {
        let s = json!({"type":"object","additionalProperties":false});
        assert_eq!(input_type(&s).expect("typed").to_cedar(4), "{}");
    }

    #[test]
    fn recursive_ref_is_an_error_with_its_pointer() {
        let s = json!({"type":"object","additionalProperties":false,
            "properties":{"tree":{"$ref":"#/$defs/Node"}},
            "$defs":{"Node":{"type":"object","additionalProperties":false,
                "properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}}});
        let e = input_type(&s).expect_err("recursive");
        assert!(matches!(e, TypingError::Recursive { .. }), "{e}");
        assert_eq!(e.pointer(), "/$defs/Node/properties/children/items");
    }

    #[test]
    fn shared_non_recursive_def_is_fine() {
        let s = json!({"type":"object","additionalProperties":false,
            "properties":{"a":{"$ref":"#/$defs/U"},"b":{"$ref":"#/$defs/U"}},
            "$defs":{"U":{"type":"string","format":"uri"}}});
        assert!(input_type(&s).is_ok());
    }

    #[test]
    fn dangling_and_untyped() {
        let s = json!({"type":"object","properties":{"a":{"$ref":"#/$defs/Nope"}}});
        assert!(matches!(input_type(&s), Err(TypingError::Dangling { .. })));
        let s = json!({"type":"object","properties":{"a":{}}});
        assert_eq!(
            input_type(&s),
            Err(TypingError::Untyped {
                pointer: "/properties/a".into()
            })
        );
        let s = json!({"type":"object","properties":{"a":{"type":"array"}}});
        assert!(matches!(input_type(&s), Err(TypingError::NoItems { .. })));
    }
}
