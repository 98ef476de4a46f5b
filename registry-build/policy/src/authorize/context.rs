//! `context.input`: a payload as a Cedar restricted expression, built straight from the value
//! and the tool's Cedar input type (no JSON round trip through Cedar's schema-directed parser).
//!
//! string → `String`, integer → `Long`, boolean → `Bool`, number → `decimal`, array → `Set`,
//! object → record (an absent optional property is left out); a string of `format: date-time`
//! → `datetime`, `ipv4`/`ipv6` → `ipaddr`, `duration` → `duration`, spelled by
//! [`crate::cedar::formats`]. A value Cedar cannot hold exactly — an integer beyond
//! `Long`, a number with more than four fraction digits or beyond `decimal`'s range, a
//! date-time finer than milliseconds or on a leap second, a duration in years or months — is
//! an [`Unrepresentable`] error, never rounded. A string outside its `enum` is one too.
//!
//! The payload passed the input gate, so it conforms to the input schema and hence to the
//! type; a value that does not (a bug upstream) is reported the same way rather than trusted.

use cedar_policy::RestrictedExpression;
use serde_json::{Number, Value};

use crate::cedar::formats;
use crate::cedar::types::CedarType;

/// A payload value Cedar cannot hold exactly (the call is denied).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the payload value at `{pointer}` cannot be held exactly by Cedar: {why}")]
pub struct Unrepresentable {
    /// JSON pointer into the payload.
    pub pointer: String,
    /// What is wrong with it.
    pub why: String,
}

/// The error while unwinding: pointer tokens are collected innermost first.
struct Failure {
    tokens: Vec<String>,
    why: String,
}

impl Failure {
    fn new(why: impl Into<String>) -> Self {
        Self {
            tokens: Vec::new(),
            why: why.into(),
        }
    }

    fn at(mut self, token: impl Into<String>) -> Self {
        self.tokens.push(token.into());
        self
    }

    fn finish(self) -> Unrepresentable {
        let mut pointer = String::new();
        for t in self.tokens.iter().rev() {
            pointer.push('/');
            pointer.push_str(&t.replace('~', "~0").replace('/', "~1"));
        }
        Unrepresentable {
            pointer,
            why: self.why,
        }
    }
}

/// `payload` as a Cedar value of type `ty`.
///
/// # Errors
/// [`Unrepresentable`] for a value Cedar cannot hold exactly or that does not have the type.
pub fn to_expression(
    payload: &Value,
    ty: &CedarType,
) -> Result<RestrictedExpression, Unrepresentable> {
    convert(payload, ty, 0).map_err(Failure::finish)
}

/// Deeper than any type the schema generator produces (it refuses beyond 64).
const MAX_DEPTH: usize = 128;

fn convert(value: &Value, ty: &CedarType, depth: usize) -> Result<RestrictedExpression, Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::new("nested too deeply"));
    }
    match (ty, value) {
        (CedarType::String, Value::String(s)) => Ok(RestrictedExpression::new_string(s.clone())),
        (CedarType::Bool, Value::Bool(b)) => Ok(RestrictedExpression::new_bool(*b)),
        (CedarType::Long, Value::Number(n)) => long(n).map(RestrictedExpression::new_long),
        (CedarType::Decimal, Value::Number(n)) => decimal(n).map(RestrictedExpression::new_decimal),
        (CedarType::Enum(values), Value::String(s)) if values.contains(s) => {
            Ok(RestrictedExpression::new_string(s.clone()))
        }
        (CedarType::Enum(_), Value::String(s)) => Err(Failure::new(format!(
            "{} is not one of the schema's `enum` values",
            Value::String(s.clone())
        ))),
        (CedarType::IpAddr, Value::String(s)) => formats::cedar_ipaddr(s)
            .map(RestrictedExpression::new_ip)
            .map_err(|e| Failure::new(e.to_string())),
        (CedarType::DateTime, Value::String(s)) => formats::cedar_datetime(s)
            .map(RestrictedExpression::new_datetime)
            .map_err(|e| Failure::new(e.to_string())),
        (CedarType::Duration, Value::String(s)) => formats::cedar_duration(s)
            .map(RestrictedExpression::new_duration)
            .map_err(|e| Failure::new(e.to_string())),
        (CedarType::Set(element), Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(convert(item, element, depth + 1).map_err(|f| f.at(i.to_string()))?);
            }
            Ok(RestrictedExpression::new_set(out))
        }
        (CedarType::Record(attributes), Value::Object(map)) => {
            let mut fields = Vec::with_capacity(attributes.len());
            let mut seen = 0usize;
            for a in attributes {
                match map.get(&a.name) {
                    // `null` for an optional property is its absence (the documented
                    // OpenAI-strict mapping); anywhere else it has no Cedar value.
                    Some(Value::Null) if !a.required => seen += 1,
                    Some(v) => {
                        seen += 1;
                        let e = convert(v, &a.ty, depth + 1).map_err(|f| f.at(&a.name))?;
                        fields.push((a.name.clone(), e));
                    }
                    None if a.required => {
                        return Err(Failure::new(format!(
                            "the required property `{}` is missing",
                            a.name
                        )))
                    }
                    None => {}
                }
            }
            if seen != map.len() {
                let extra = map
                    .keys()
                    .find(|k| !attributes.iter().any(|a| &a.name == *k))
                    .cloned()
                    .unwrap_or_default();
                return Err(Failure::new("a property the schema does not declare").at(extra));
            }
            RestrictedExpression::new_record(fields).map_err(|e| Failure::new(e.to_string()))
        }
        (ty, value) => Err(Failure::new(format!(
            "a {} where the schema's Cedar type is {}",
            kind(value),
            ty.to_cedar(0).lines().next().unwrap_or("?")
        ))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An integer as a Cedar `Long` (a JSON number with no fraction counts, as in JSON Schema).
fn long(n: &Number) -> Result<i64, Failure> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    if n.is_u64() {
        return Err(Failure::new(format!("{n} is beyond Cedar's Long range")));
    }
    let scaled = exact_scaled(&n.to_string(), 0)
        .ok_or_else(|| Failure::new(format!("{n} is not an integer within Cedar's Long range")))?;
    i64::try_from(scaled).map_err(|_| Failure::new(format!("{n} is beyond Cedar's Long range")))
}

/// Digits after the point in a Cedar `decimal`.
const DECIMAL_DIGITS: u32 = 4;

/// A number as the argument of Cedar's `decimal(…)` constructor (`-?\d+\.\d{4}`), when it
/// can be held exactly: at most four fraction digits, and within the 64-bit range of
/// `value × 10⁴`.
///
/// A JSON number is held as the value it was parsed to (an `f64` unless it is an integer);
/// its decimal spelling is the shortest one that reads back to that value (`0.1` is `0.1`),
/// which is also what the tool will receive.
fn decimal(n: &Number) -> Result<String, Failure> {
    let text = n.to_string();
    let scaled = exact_scaled(&text, DECIMAL_DIGITS).ok_or_else(|| {
        Failure::new(format!(
            "{text} does not fit a Cedar decimal (at most {DECIMAL_DIGITS} fraction digits, \
             magnitude below 922337203685477.5808)"
        ))
    })?;
    let scaled = i64::try_from(scaled).map_err(|_| {
        Failure::new(format!(
            "{text} is beyond a Cedar decimal's range (±922337203685477.5807)"
        ))
    })?;
    Ok(format_scaled(scaled))
}

/// `value × 10^digits` as an integer, when that is exact and fits an `i128`; `text` is a JSON
/// number (`-?\d+(\.\d+)?([eE][+-]?\d+)?`).
fn exact_scaled(text: &str, digits: u32) -> Option<i128> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], rest[at + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty()
        || !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    // value = digits × 10^exp10, with `digits` the mantissa's digits (point removed).
    let all: String = int_part.chars().chain(frac_part.chars()).collect();
    let all = all.trim_start_matches('0');
    let frac_len = i64::try_from(frac_part.len()).ok()?;
    let mut exp10 = exponent
        .checked_sub(frac_len)?
        .checked_add(i64::from(digits))?;
    // Drop trailing zeros into the exponent so exactness is about significant digits only.
    let mut significant = all;
    while let Some(s) = significant.strip_suffix('0') {
        significant = s;
        exp10 = exp10.checked_add(1)?;
    }
    if significant.is_empty() {
        return Some(0);
    }
    if exp10 < 0 || significant.len() > 38 {
        return None;
    }
    let mut value: i128 = significant.parse().ok()?;
    for _ in 0..exp10 {
        value = value.checked_mul(10)?;
    }
    Some(if negative { -value } else { value })
}

/// A scaled decimal as Cedar spells it: `-?\d+\.\d{4}`.
fn format_scaled(scaled: i64) -> String {
    let abs = i128::from(scaled).abs();
    let pow = 10i128.pow(DECIMAL_DIGITS);
    format!(
        "{}{}.{:04}",
        if scaled < 0 { "-" } else { "" },
        abs / pow,
        abs % pow
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dec(v: Value) -> Result<String, String> {
        match v {
            Value::Number(n) => decimal(&n).map_err(|f| f.why),
            _ => unreachable!(),
        }
    }

    #[test]
    fn decimals_are_exact_or_refused() {
        assert_eq!(dec(json!(0.1)).as_deref(), Ok("0.1000"));
        assert_eq!(dec(json!(-0.5)).as_deref(), Ok("-0.5000"));
        assert_eq!(dec(json!(3)).as_deref(), Ok("3.0000"));
        assert_eq!(dec(json!(-3)).as_deref(), Ok("-3.0000"));
        assert_eq!(dec(json!(1.2345)).as_deref(), Ok("1.2345"));
        assert_eq!(dec(json!(1e3)).as_deref(), Ok("1000.0000"));
        assert_eq!(dec(json!(1.5e-3)).as_deref(), Ok("0.0015"));
        assert_eq!(dec(json!(0.0)).as_deref(), Ok("0.0000"));
        assert_eq!(
            dec(json!(922337203685477_i64)).as_deref(),
            Ok("922337203685477.0000")
        );
        assert!(dec(json!(922337203685478_i64)).is_err());
        assert!(dec(json!(1.23456)).is_err());
        assert!(dec(json!(0.30000000000000004)).is_err());
        assert!(dec(json!(1e-5)).is_err());
        assert!(dec(json!(1e300)).is_err());
        assert!(dec(json!(u64::MAX)).is_err());
        assert!(dec(json!(i64::MIN)).is_err());
    }

    #[test]
    fn scaled_parsing() {
        assert_eq!(exact_scaled("12.50", 4), Some(125_000));
        assert_eq!(exact_scaled("-0.0001", 4), Some(-1));
        assert_eq!(exact_scaled("1E+2", 0), Some(100));
        assert_eq!(exact_scaled("100e-2", 0), Some(1));
        assert_eq!(exact_scaled("1.5", 0), None);
        assert_eq!(exact_scaled("", 0), None);
        assert_eq!(exact_scaled("1e99999999999999999999", 0), None);
        assert_eq!(exact_scaled("1e-99999999999", 4), None);
        assert_eq!(format_scaled(i64::MIN), "-922337203685477.5808");
    }

    #[test]
    fn longs() {
        let n = |v: Value| match v {
            Value::Number(n) => long(&n).map_err(|f| f.why),
            _ => unreachable!(),
        };
        assert_eq!(n(json!(5)), Ok(5));
        assert_eq!(n(json!(5.0)), Ok(5));
        assert_eq!(n(json!(i64::MIN)), Ok(i64::MIN));
        assert!(n(json!(u64::MAX)).is_err());
        assert!(n(json!(5.5)).is_err());
        assert!(n(json!(1e300)).is_err());
    }

    #[test]
    fn pointers_name_the_value() {
        let ty = crate::cedar::types::input_type(&json!({
            "type":"object","additionalProperties":false,
            "properties":{"xs":{"type":"array","items":{"type":"object","additionalProperties":false,
                "properties":{"r":{"type":"number"}}}}}}))
        .expect("typed");
        let e = to_expression(&json!({"xs":[{"r":1},{"r":0.00001}]}), &ty).expect_err("inexact");
        assert_eq!(e.pointer, "/xs/1/r");
        let e = to_expression(&json!({"xs":[], "y": 1}), &ty).expect_err("undeclared");
        assert_eq!(e.pointer, "/y");
        assert!(to_expression(&json!({"xs":[{"r":1.25}]}), &ty).is_ok());
        assert!(to_expression(&json!({"xs":null}), &ty).is_ok());
        assert!(to_expression(&json!([]), &ty).is_err());
    }
}
