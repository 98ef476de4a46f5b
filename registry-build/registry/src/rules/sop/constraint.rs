//! Constraint and branch schemas: well-formed, self-contained fragments that agree with the
//! payload field they constrain (its type, its values, its bounds).

use serde_json::{Map, Value};

use crate::rule::Rule;
use crate::schema::meta;
use crate::schema::subset::escape;
use crate::schema::walk::{self, JsonType};

use super::File;

impl<'a> File<'a, '_> {
    /// Whether a constraint (or branch schema) fragment is a well-formed, self-contained
    /// 2020-12 schema; reports why not.
    pub(super) fn fragment(&mut self, at: &str, fragment: &Value, what: &str) -> bool {
        if !fragment.is_object() {
            self.push_help(
                Rule::SopConstraintSchema,
                at,
                format!("{what} must be a JSON Schema object, not {fragment}"),
                "write a schema fragment such as {\"maximum\": 2}",
            );
            return false;
        }
        if let Err(e) = meta::well_formed(fragment) {
            self.push(
                Rule::SopConstraintSchema,
                &format!("{at}{}", e.pointer),
                format!(
                    "{what} is not a well-formed JSON Schema 2020-12: {}",
                    e.message
                ),
            );
            return false;
        }
        let mut foreign = Vec::new();
        foreign_keywords(fragment, at, &mut foreign, 0);
        for (p, k) in &foreign {
            self.push(
                Rule::SopConstraintSchema,
                p,
                format!(
                    "{what} uses `{k}`: a constraint is self-contained (no references, identifiers, \
                     definitions or dialects)"
                ),
            );
        }
        if !foreign.is_empty() {
            return false;
        }
        if let Err(e) = meta::compiles(fragment) {
            self.push(
                Rule::SopConstraintSchema,
                at,
                format!("{what} does not compile: {e}"),
            );
            return false;
        }
        true
    }

    /// Report where `fragment` contradicts the field `target` (of the schema `root`): its
    /// `type`, keywords of other types, `enum`/`const` values the field never accepts, bounds
    /// that leave no value, and (recursively) `properties` and `items`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn agree(
        &mut self,
        at: &str,
        fragment: &Value,
        root: &Value,
        target: &Value,
        what: &str,
        field: &str,
        depth: usize,
    ) {
        let (Some(frag), Some(target)) = (fragment.as_object(), walk::resolve(root, target)) else {
            return;
        };
        let Some(ft) = walk::type_of(root, target) else {
            return;
        };
        let compatible = |t: &str| JsonType::parse(t).is_some_and(|t| t.fits(ft) || ft.fits(t));
        match frag.get("type") {
            Some(Value::String(t)) if !compatible(t) => self.push(
                Rule::SopConstraintType,
                &format!("{at}/type"),
                format!(
                    "{what} says `\"type\": \"{t}\"`, but {field} is of type `{}`",
                    ft.as_str()
                ),
            ),
            Some(Value::Array(ts)) if !ts.iter().filter_map(Value::as_str).any(compatible) => self
                .push(
                    Rule::SopConstraintType,
                    &format!("{at}/type"),
                    format!(
                        "{what} allows none of the types it lists: {field} is of type `{}`",
                        ft.as_str()
                    ),
                ),
            _ => {}
        }
        for (keys, types, noun) in TYPED_KEYWORDS {
            if types.contains(&ft) {
                continue;
            }
            for k in keys.iter().filter(|k| frag.contains_key(**k)) {
                self.push_help(
                    Rule::SopConstraintType,
                    &format!("{at}/{k}"),
                    format!(
                        "{what} uses `{k}`, which constrains only {noun}, but {field} is of type `{}`",
                        ft.as_str()
                    ),
                    "JSON Schema ignores the keyword for other types, so the constraint would not constrain anything",
                );
            }
        }
        self.values_agree(at, frag, root, target, ft, what, field);
        self.bounds_agree(at, frag, target, what, field);
        if depth > 16 {
            return;
        }
        match ft {
            JsonType::Object => {
                let props = walk::properties(root, target);
                if let Some(fp) = frag.get("properties").and_then(Value::as_object) {
                    for (name, sub) in fp {
                        let sat = format!("{at}/properties/{}", escape(name));
                        match props.iter().find(|(k, _, _)| *k == name) {
                            Some((_, ts, _)) => {
                                let f = format!("{field}'s field `{name}`");
                                self.agree(&sat, sub, root, ts, what, &f, depth + 1);
                            }
                            None => self.push(
                                Rule::SopConstraintField,
                                &sat,
                                format!("{what} constrains `{name}`, which {field} does not have"),
                            ),
                        }
                    }
                }
                if let Some(req) = frag.get("required").and_then(Value::as_array) {
                    for (i, r) in req.iter().enumerate() {
                        if let Some(r) = r.as_str() {
                            if !props.iter().any(|(k, _, _)| *k == r) {
                                self.push(
                                    Rule::SopConstraintField,
                                    &format!("{at}/required/{i}"),
                                    format!("{what} requires `{r}`, which {field} does not have"),
                                );
                            }
                        }
                    }
                }
            }
            JsonType::Array => {
                if let (Some(fi), Some(ti)) = (frag.get("items"), target.get("items")) {
                    let f = format!("the items of {field}");
                    self.agree(&format!("{at}/items"), fi, root, ti, what, &f, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// `enum`/`const` values of the fragment that the field never accepts.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn values_agree(
        &mut self,
        at: &str,
        frag: &Map<String, Value>,
        root: &Value,
        target: &Value,
        ft: JsonType,
        what: &str,
        field: &str,
    ) {
        let mut values: Vec<(String, &Value)> = Vec::new();
        if let Some(c) = frag.get("const") {
            values.push((format!("{at}/const"), c));
        }
        if let Some(e) = frag.get("enum").and_then(Value::as_array) {
            values.extend(
                e.iter()
                    .enumerate()
                    .map(|(i, v)| (format!("{at}/enum/{i}"), v)),
            );
        }
        if values.is_empty() {
            return;
        }
        let validator = field_validator(root, target);
        for (vat, v) in values {
            let type_ok = match JsonType::of_value(v) {
                None => false,
                Some(t) => {
                    t.fits(ft)
                        || (ft == JsonType::Integer && v.as_f64().is_some_and(|f| f.fract() == 0.0))
                }
            };
            if !type_ok {
                self.push(
                    Rule::SopConstraintType,
                    &vat,
                    format!(
                        "{what} allows {v}, but {field} is of type `{}`",
                        ft.as_str()
                    ),
                );
            } else if validator.as_ref().is_some_and(|val| !val.is_valid(v)) {
                self.push(
                    Rule::SopConstraintType,
                    &vat,
                    format!("{what} allows {v}, which {field} never accepts (its own schema rejects it)"),
                );
            }
        }
    }

    /// Lower bounds of the fragment above the field's upper bounds, and the reverse.
    pub(super) fn bounds_agree(
        &mut self,
        at: &str,
        frag: &Map<String, Value>,
        target: &Value,
        what: &str,
        field: &str,
    ) {
        let num = |m: &Value, k: &str| m.get(k).and_then(Value::as_f64);
        let fnum = |k: &str| frag.get(k).and_then(Value::as_f64);
        let pairs: [Bound; 8] = [
            ("minimum", "maximum", |f, t| f > t),
            ("exclusiveMinimum", "maximum", |f, t| f >= t),
            ("maximum", "minimum", |f, t| f < t),
            ("exclusiveMaximum", "minimum", |f, t| f <= t),
            ("minLength", "maxLength", |f, t| f > t),
            ("maxLength", "minLength", |f, t| f < t),
            ("minItems", "maxItems", |f, t| f > t),
            ("maxItems", "minItems", |f, t| f < t),
        ];
        for (fk, tk, empty) in pairs {
            if let (Some(f), Some(t)) = (fnum(fk), num(target, tk)) {
                if empty(f, t) {
                    self.push(
                        Rule::SopConstraintType,
                        &format!("{at}/{fk}"),
                        format!(
                            "{what} says `{fk}: {}`, but {field} has `{tk}: {}`: no value satisfies both",
                            frag[fk], target[tk]
                        ),
                    );
                }
            }
        }
    }
}

/// Keywords that make a fragment depend on something outside itself (or switch its dialect).
pub(super) const NOT_SELF_CONTAINED: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$defs",
    "definitions",
    "$schema",
    "$vocabulary",
];

/// Keywords that constrain only values of some JSON types (and are silently ignored for the
/// others, which is why a constraint using them on another type is a contradiction).
pub(super) const TYPED_KEYWORDS: &[(&[&str], &[JsonType], &str)] = &[
    (
        &[
            "minLength",
            "maxLength",
            "pattern",
            "format",
            "contentEncoding",
            "contentMediaType",
            "contentSchema",
        ],
        &[JsonType::String],
        "strings",
    ),
    (
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
        &[JsonType::Integer, JsonType::Number],
        "numbers",
    ),
    (
        &[
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "unevaluatedItems",
        ],
        &[JsonType::Array],
        "lists",
    ),
    (
        &[
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
        ],
        &[JsonType::Object],
        "objects",
    ),
];

/// A fragment keyword, the field keyword it is compared with, and whether the two leave no
/// value.
pub(super) type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);

/// A validator for values of the field `target` (its `$defs` references resolved against
/// `root`).
pub(super) fn field_validator(root: &Value, target: &Value) -> Option<meta::Validator> {
    let mut schema = target.clone();
    if let (Some(obj), Some(defs)) = (schema.as_object_mut(), root.get("$defs")) {
        obj.insert("$defs".into(), defs.clone());
    }
    meta::validator(&schema).ok().flatten()
}

/// Keywords of a fragment (at any schema depth) that are not self-contained.
pub(super) fn foreign_keywords(
    schema: &Value,
    at: &str,
    out: &mut Vec<(String, String)>,
    depth: usize,
) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    if depth > 32 {
        return;
    }
    for (k, v) in obj {
        let here = format!("{at}/{}", escape(k));
        if NOT_SELF_CONTAINED.contains(&k.as_str()) {
            out.push((here, k.clone()));
            continue;
        }
        match k.as_str() {
            "properties" | "patternProperties" | "dependentSchemas" => {
                for (n, s) in v.as_object().into_iter().flatten() {
                    foreign_keywords(s, &format!("{here}/{}", escape(n)), out, depth + 1);
                }
            }
            "items"
            | "additionalProperties"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "contentSchema" => {
                foreign_keywords(v, &here, out, depth + 1);
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                    foreign_keywords(s, &format!("{here}/{i}"), out, depth + 1);
                }
            }
            _ => {}
        }
    }
}
