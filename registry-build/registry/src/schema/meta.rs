//! JSON Schema 2020-12 itself: whether a schema is well formed by the meta-schema and compiles
//! (formats asserted), and a validator for values. The one place the registry calls
//! `jsonschema` (default feature `schema-validation`).
//!
//! Without the feature (the proc macros, which check drafts whose schemas they generated from
//! Rust types) a schema is taken as well formed and no validator is made: the subset rules
//! still apply, and the registry that loads the record at run time, built with the feature,
//! applies these checks too.

use serde_json::Value;

/// Where a schema breaks the 2020-12 meta-schema: the pointer inside it, and what is wrong.
#[derive(Debug, Clone)]
pub struct Malformed {
    /// The JSON pointer inside the schema.
    pub pointer: String,
    /// What the meta-schema refuses.
    pub message: String,
}

/// Whether this build validates schemas (feature `schema-validation`): without it
/// [`well_formed`] accepts every schema and [`validator`] makes none.
pub fn enabled() -> bool {
    cfg!(feature = "schema-validation")
}

/// A compiled schema that says whether a value is valid.
#[cfg(feature = "schema-validation")]
pub type Validator = jsonschema::Validator;

/// Without `schema-validation` no validator is ever made ([`validator`] is `None`).
#[cfg(not(feature = "schema-validation"))]
#[derive(Debug)]
pub enum Validator {}

#[cfg(not(feature = "schema-validation"))]
impl Validator {
    /// Whether `value` is valid (never called: no validator exists without the feature).
    pub fn is_valid(&self, _value: &Value) -> bool {
        match *self {}
    }
}

/// Whether `schema` is a well-formed JSON Schema 2020-12.
///
/// # Errors
/// The first place the meta-schema refuses.
pub fn well_formed(schema: &Value) -> Result<(), Malformed> {
    #[cfg(feature = "schema-validation")]
    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
        return Err(Malformed {
            pointer: e.instance_path().as_str().to_string(),
            message: e.to_string(),
        });
    }
    #[cfg(not(feature = "schema-validation"))]
    let _ = schema;
    Ok(())
}

/// Whether `schema` compiles with formats asserted.
///
/// # Errors
/// Why it does not.
pub fn compiles(schema: &Value) -> Result<(), String> {
    validator(schema).map(drop)
}

/// `schema` compiled with formats asserted (without `schema-validation`, an error never and a
/// validator never: the result is `Ok` with nothing to validate with).
///
/// # Errors
/// Why it does not compile.
#[cfg(feature = "schema-validation")]
pub fn validator(schema: &Value) -> Result<Option<Validator>, String> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// `schema` compiled with formats asserted (without `schema-validation`, an error never and a
/// validator never: the result is `Ok` with nothing to validate with).
///
/// # Errors
/// Why it does not compile.
#[cfg(not(feature = "schema-validation"))]
pub fn validator(schema: &Value) -> Result<Option<Validator>, String> {
    let _ = schema;
    Ok(None)
}
