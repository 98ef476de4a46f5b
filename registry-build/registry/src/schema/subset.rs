//! The schema rules: well-formed against the 2020-12 meta-schema, inside the supported subset,
//! closed at every depth, credential-free input names, well-placed `x-authorize-each`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use crate::rule::Rule;
use crate::schema::names;
use crate::schema::walk::{self, JsonType};
use crate::urls;

/// The only `$schema` value accepted.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];
const STRING_KEYWORDS: &[&str] = &["minLength", "maxLength", "pattern", "format"];
const NUMBER_KEYWORDS: &[&str] = &["minimum", "maximum"];
const ARRAY_KEYWORDS: &[&str] = &["items", "minItems", "maxItems"];
const OBJECT_KEYWORDS: &[&str] = &["properties", "required", "additionalProperties"];

/// Which of a record's two schemas is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The input (payload) schema: credential-free names and `x-authorize-each` apply.
    Input,
    /// The output schema.
    Output,
}

/// Check one schema of a record. `base` is its pointer in the record file
/// (`/input_schema`, `/payload_schema` or `/output_schema`).
///
/// Returns whether the schema passed every rule.
pub fn check(
    src: &SourceFile,
    base: &str,
    schema: &Value,
    which: Which,
    diags: &mut Diagnostics,
) -> bool {
    let before = diags.error_count();
    let Some(root) = schema.as_object() else {
        diags.push(Diagnostic::at(
            Rule::SchemaRootObject,
            src,
            base,
            "a schema must be a JSON object with `\"type\": \"object\"`",
        ));
        return false;
    };
    if let Some(s) = root.get("$schema") {
        let ok = s
            .as_str()
            .is_some_and(|s| s.trim_end_matches('#') == DRAFT_2020_12);
        if !ok {
            diags.push(
                Diagnostic::at(
                    Rule::SchemaDraft,
                    src,
                    &format!("{base}/$schema"),
                    format!("`$schema` is {s}; only JSON Schema 2020-12 is supported"),
                )
                .help(format!(
                    "write \"$schema\": \"{DRAFT_2020_12}\" or leave it out"
                )),
            );
        }
    }
    if let Err(e) = super::meta::well_formed(schema) {
        let at = format!("{base}{}", e.pointer);
        diags.push(Diagnostic::at(
            Rule::SchemaWellFormed,
            src,
            &at,
            format!("not a well-formed 2020-12 schema: {}", e.message),
        ));
        return false;
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        diags.push(Diagnostic::at(
            Rule::SchemaRootObject,
            src,
            base,
            "the schema root must declare `\"type\": \"object\"`",
        ));
    }
    let mut walker = Walker {
        src,
        base,
        root: schema,
        which,
        diags,
    };
    walker.node(schema, base, true);
    if let Some(defs) = root.get("$defs").and_then(Value::as_object) {
        for (name, def) in defs {
            walker.node(def, &format!("{base}/$defs/{}", escape(name)), false);
        }
    }
    walker.cycles();
    if which == Which::Input && walker.diags.error_count() == before {
        walker.authorize_each_placement();
    }
    if which == Which::Input {
        // Every property name of the document, wherever declared (not only where the subset
        // walk goes).
        for p in names::credential_properties(schema) {
            diags.push(
                Diagnostic::at(
                    Rule::CredentialName,
                    src,
                    &format!("{base}{}", p.pointer),
                    format!(
                        "the input property `{}` names a credential ({}); governed tools accept no credentials",
                        p.name, p.word
                    ),
                )
                .help("secrets are declared by name in `auth.secrets` and injected by the sandbox; a pagination token is accepted as `next_token`, `page_token`, … beside a pagination field (`limit`, `page`, `cursor`, …), else rename it `cursor`; a field that is not a credential and cannot be renamed may carry a reviewed `\"x-not-credential\": \"<why>\"`"),
            );
        }
        for (p, reason) in names::exempted_properties(schema) {
            diags.push(
                Diagnostic::at(
                    Rule::CredentialExemption,
                    src,
                    &format!("{base}{}/{}", p.pointer, names::NOT_CREDENTIAL),
                    format!(
                        "the input property `{}` is exempted from the credential-name rule (it reads as {}): {reason}",
                        p.name, p.word
                    ),
                )
                .note(),
            );
        }
        for r in names::recognised_properties(schema) {
            let p = &r.property;
            diags.push(
                Diagnostic::at(
                    r.shape.rule(),
                    src,
                    &format!("{base}{}", p.pointer),
                    format!(
                        "the input property `{}` reads as a credential ({}) but is recognised as {}: {}; it is accepted without `{}`",
                        p.name, p.word, r.shape.what(), r.because, names::NOT_CREDENTIAL
                    ),
                )
                .note(),
            );
        }
    }
    for p in names::exemption_problems(schema, which == Which::Input) {
        let d = Diagnostic::at(
            Rule::NotCredential,
            src,
            &format!("{base}{}", p.pointer),
            p.message,
        );
        diags.push(if p.harmless { d.warning() } else { d });
    }
    if diags.error_count() == before {
        if let Err(e) = super::meta::compiles(schema) {
            diags.push(Diagnostic::at(
                Rule::SchemaWellFormed,
                src,
                base,
                format!("the schema does not compile: {e}"),
            ));
        }
    }
    diags.error_count() == before
}

struct Walker<'a, 'd> {
    src: &'a SourceFile,
    base: &'a str,
    root: &'a Value,
    which: Which,
    diags: &'d mut Diagnostics,
}

impl Walker<'_, '_> {
    fn push(&mut self, rule: Rule, at: &str, msg: impl Into<String>) {
        self.diags.push(Diagnostic::at(rule, self.src, at, msg));
    }

    fn node(&mut self, node: &Value, at: &str, is_root: bool) {
        let obj = match node {
            Value::Object(o) => o,
            Value::Bool(b) => {
                self.push(
                    Rule::SchemaTyped,
                    at,
                    format!("the boolean schema `{b}` is outside the subset; write a typed schema"),
                );
                return;
            }
            _ => return,
        };
        for key in obj.keys() {
            self.keyword(key, at, is_root);
        }
        if let Some(r) = obj.get("$ref") {
            self.reference(r, at);
            self.ref_siblings(obj, at);
            return;
        }
        let ty = self.declared_type(obj, at);
        if let Some(ty) = ty {
            self.keywords_fit(obj, ty, at);
        }
        match ty {
            Some(JsonType::Object) => self.object(obj, at),
            Some(JsonType::Array) => self.array(obj, at),
            _ => {}
        }
        if obj.contains_key("x-authorize-each") && ty != Some(JsonType::Array) {
            self.push(Rule::SchemaAuthorizeEach, &format!("{at}/x-authorize-each"), "`x-authorize-each` marks a list of `format: uri` strings; this schema is not an array");
        }
    }

    fn keyword(&mut self, key: &str, at: &str, is_root: bool) {
        let here = format!("{at}/{}", escape(key));
        let reason = match key {
            "type" | "enum" | "const" | "required" | "properties" | "items" | "minItems" | "maxItems"
            | "minLength" | "maxLength" | "pattern" | "minimum" | "maximum" | "format"
            | "additionalProperties" | "$ref" => return,
            k if ANNOTATIONS.contains(&k) => return,
            k if k.starts_with("x-") => return,
            "$schema" | "$id" | "$defs" if is_root => return,
            "$schema" | "$id" => "`$schema` and `$id` belong at the schema root",
            "$defs" | "definitions" => "definitions belong in the root's `$defs`",
            "oneOf" | "anyOf" | "allOf" | "not" | "if" | "then" | "else" | "dependentSchemas" | "dependentRequired" => {
                "combinators and conditionals make the payload shape undecidable for the gates, Cedar and the generated types; flatten the schema or split the tool"
            }
            "patternProperties" => "`patternProperties` opens the object to undeclared names; declare each property",
            "propertyNames" | "unevaluatedProperties" | "minProperties" | "maxProperties" => "open or counted objects are outside the subset; declare each property and close the object",
            "prefixItems" => "tuples are outside the subset; use an object with named properties",
            "$anchor" | "$dynamicRef" | "$dynamicAnchor" | "$recursiveRef" | "$recursiveAnchor" | "$vocabulary" => "only local `$ref` into the root's `$defs` is supported",
            _ => "",
        };
        let msg = if reason.is_empty() {
            format!("the keyword `{key}` is outside the supported schema subset")
        } else {
            format!("`{key}`: {reason}")
        };
        let rule = if key.starts_with('$') || key == "definitions" {
            Rule::SchemaRef
        } else {
            Rule::SchemaSubset
        };
        self.push(rule, &here, msg);
    }

    fn reference(&mut self, r: &Value, at: &str) {
        let here = format!("{at}/$ref");
        let Some(r) = r.as_str() else { return };
        match r.strip_prefix("#/$defs/") {
            Some(name) if !name.contains('/') => {
                let name = name.replace("~1", "/").replace("~0", "~");
                if self.root.get("$defs").and_then(|d| d.get(&name)).is_none() {
                    self.push(Rule::SchemaRef, &here, format!("`{r}` names no entry of the root's `$defs`"));
                }
            }
            _ => self.push(Rule::SchemaRef, &here, format!("`{r}`: only local references `#/$defs/<name>` are supported (no remote or nested references)")),
        }
    }

    /// Beside `$ref` only annotations: a keyword there would constrain the payload in the
    /// gates (JSON Schema 2020-12 applies siblings of `$ref`) while every walk that follows the
    /// reference would miss it — a `format` the per-URL analysis never sees, a property whose
    /// name no rule checks.
    fn ref_siblings(&mut self, obj: &Map<String, Value>, at: &str) {
        for key in obj.keys() {
            // `x-not-credential` speaks of the property's name, not its value.
            if key == "$ref" || ANNOTATIONS.contains(&key.as_str()) || key == names::NOT_CREDENTIAL
            {
                continue;
            }
            self.diags.push(
                Diagnostic::at(
                    Rule::SchemaRefSiblings,
                    self.src,
                    &format!("{at}/{}", escape(key)),
                    format!("`{key}` beside `$ref`: only annotations may sit beside a reference"),
                )
                .help("move the keyword into the referenced `$defs` entry, or inline the schema"),
            );
        }
    }

    fn declared_type(&mut self, obj: &Map<String, Value>, at: &str) -> Option<JsonType> {
        if let Some(t) = obj.get("type") {
            return match t {
                Value::String(s) if s == "null" => {
                    self.push(
                        Rule::SchemaNullType,
                        &format!("{at}/type"),
                        "`null` types are outside the subset; make the property optional instead",
                    );
                    None
                }
                Value::String(s) => JsonType::parse(s),
                Value::Array(ts) => {
                    if ts.iter().any(|t| t == "null") {
                        self.push(
                            Rule::SchemaNullType,
                            &format!("{at}/type"),
                            "`null` in a type list: make the property optional instead of nullable",
                        );
                    } else {
                        self.push(
                            Rule::SchemaSubset,
                            &format!("{at}/type"),
                            "type unions are outside the subset; give one `type`",
                        );
                    }
                    None
                }
                _ => None,
            };
        }
        let values: Vec<&Value> = match (obj.get("const"), obj.get("enum")) {
            (Some(c), _) => vec![c],
            (None, Some(Value::Array(e))) => e.iter().collect(),
            _ => {
                self.push(Rule::SchemaTyped, at, "this schema has no `type` (nor `$ref`, `enum` or `const`): it accepts anything");
                return None;
            }
        };
        if values.iter().any(|v| v.is_null()) {
            self.push(
                Rule::SchemaNullType,
                at,
                "`null` among `enum`/`const` values is outside the subset",
            );
            return None;
        }
        let ty = walk::type_of(self.root, &Value::Object(obj.clone()));
        if ty.is_none() {
            self.push(
                Rule::SchemaTyped,
                at,
                "the `enum`/`const` values mix types; give one `type`",
            );
        }
        ty
    }

    fn keywords_fit(&mut self, obj: &Map<String, Value>, ty: JsonType, at: &str) {
        let groups: [(&[&str], &[JsonType]); 4] = [
            (STRING_KEYWORDS, &[JsonType::String]),
            (NUMBER_KEYWORDS, &[JsonType::Integer, JsonType::Number]),
            (ARRAY_KEYWORDS, &[JsonType::Array]),
            (OBJECT_KEYWORDS, &[JsonType::Object]),
        ];
        for (keys, types) in groups {
            for k in keys.iter().filter(|k| obj.contains_key(**k)) {
                if !types.contains(&ty) {
                    self.push(
                        Rule::SchemaSubset,
                        &format!("{at}/{k}"),
                        format!("`{k}` does not apply to `{}`", ty.as_str()),
                    );
                }
            }
        }
        let mut values: Vec<&Value> = obj
            .get("enum")
            .and_then(Value::as_array)
            .map(|e| e.iter().collect())
            .unwrap_or_default();
        values.extend(obj.get("const"));
        for v in values {
            if JsonType::of_value(v).is_some_and(|t| !t.fits(ty)) {
                self.push(
                    Rule::SchemaSubset,
                    at,
                    format!(
                        "the value {v} is not of the declared type `{}`",
                        ty.as_str()
                    ),
                );
            }
        }
    }

    fn object(&mut self, obj: &Map<String, Value>, at: &str) {
        match obj.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            None => self.diags.push(
                Diagnostic::at(Rule::SchemaClosed, self.src, at, "this object is open: it lacks `\"additionalProperties\": false`")
                    .help("close every object (root, properties, array items, `$defs`) so an unknown field is invalid"),
            ),
            Some(Value::Bool(true)) => self.push(Rule::SchemaClosed, &format!("{at}/additionalProperties"), "`additionalProperties: true` opens the object; it must be `false`"),
            Some(_) => self.push(Rule::SchemaClosed, &format!("{at}/additionalProperties"), "schema-valued `additionalProperties` opens the object to undeclared names; it must be `false`"),
        }
        let props = obj.get("properties").and_then(Value::as_object);
        if let Some(required) = obj.get("required").and_then(Value::as_array) {
            for (i, r) in required.iter().enumerate() {
                if let Some(name) = r.as_str() {
                    if props.is_none_or(|p| !p.contains_key(name)) {
                        self.push(
                            Rule::SchemaRequired,
                            &format!("{at}/required/{i}"),
                            format!("`{name}` is required but not declared in `properties`"),
                        );
                    }
                }
            }
        }
        if let Some(props) = props {
            for (name, sub) in props {
                let here = format!("{at}/properties/{}", escape(name));
                self.node(sub, &here, false);
            }
        }
    }

    fn array(&mut self, obj: &Map<String, Value>, at: &str) {
        match obj.get("items") {
            Some(items @ Value::Object(_)) => self.node(items, &format!("{at}/items"), false),
            Some(_) => self.push(
                Rule::SchemaSubset,
                &format!("{at}/items"),
                "tuple `items` are outside the subset",
            ),
            None => self.push(
                Rule::SchemaClosed,
                at,
                "this array has no `items`: its elements accept anything",
            ),
        }
        if let Some(flag) = obj.get("x-authorize-each") {
            let here = format!("{at}/x-authorize-each");
            if self.which == Which::Output {
                self.push(
                    Rule::SchemaAuthorizeEach,
                    &here,
                    "`x-authorize-each` belongs in the input schema",
                );
            } else if !flag.is_boolean() {
                self.push(
                    Rule::SchemaAuthorizeEach,
                    &here,
                    "`x-authorize-each` must be `true` or `false`",
                );
            }
            // Where a marked list may sit, and what its elements may be, depends on where the
            // payload meets it (`$ref` followed): judged by `authorize_each_placement`.
        }
    }

    /// `x-authorize-each` marks judged where the payload meets them.
    fn authorize_each_placement(&mut self) {
        let mut seen = BTreeSet::new();
        for p in urls::each_mark_problems(self.root) {
            let at = format!("{}{}/x-authorize-each", self.base, p.written_at);
            if seen.insert((at.clone(), p.message.clone())) {
                self.push(Rule::SchemaAuthorizeEach, &at, p.message);
            }
        }
    }

    /// Reject recursive `$defs` (they cannot be typed for Cedar's context).
    fn cycles(&mut self) {
        let Some(defs) = self.root.get("$defs").and_then(Value::as_object) else {
            return;
        };
        for name in defs.keys() {
            let mut seen = BTreeSet::new();
            if reaches(self.root, &defs[name], name, &mut seen, 0) {
                let at = format!("{}/$defs/{}", self.base, escape(name));
                self.push(
                    Rule::SchemaRef,
                    &at,
                    format!(
                        "`$defs/{name}` refers to itself; recursive schemas are outside the subset"
                    ),
                );
            }
        }
    }
}

fn reaches(
    root: &Value,
    node: &Value,
    target: &str,
    seen: &mut BTreeSet<String>,
    depth: usize,
) -> bool {
    if depth > 64 {
        return true;
    }
    let Some(obj) = node.as_object() else {
        return false;
    };
    if let Some(name) = obj
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        if name == target {
            return true;
        }
        if seen.insert(name.to_string()) {
            if let Some(def) = root.get("$defs").and_then(|d| d.get(name)) {
                return reaches(root, def, target, seen, depth + 1);
            }
        }
        return false;
    }
    let props = obj
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values());
    props
        .chain(obj.get("items"))
        .any(|sub| reaches(root, sub, target, seen, depth + 1))
}

pub use super::walk::escape;
