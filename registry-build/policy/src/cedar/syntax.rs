//! Spelling names and strings in Cedar syntax (schema and policies).

/// Cedar's reserved identifiers: an attribute name that is one of them must be quoted
/// (checked against cedar-policy 4.14: other keywords such as `type` or `tags` parse bare).
const RESERVED: &[&str] = &[
    "__cedar", "else", "false", "has", "if", "in", "is", "like", "then", "true",
];

/// Whether `name` can be written bare: an identifier `[_a-zA-Z][_a-zA-Z0-9]*` that is not reserved.
pub fn is_plain_ident(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    starts_well && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()) && !RESERVED.contains(&name)
}

/// `s` as a Cedar string literal, quotes included.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An attribute name as written in a schema record type: bare when possible, else quoted.
pub fn attr_name(name: &str) -> String {
    if is_plain_ident(name) {
        name.to_string()
    } else {
        quote(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_quoted_names() {
        assert!(is_plain_ident("max_results"));
        assert!(is_plain_ident("_x9"));
        assert!(!is_plain_ident("9x"));
        assert!(!is_plain_ident("page-size"));
        assert!(!is_plain_ident(""));
        assert!(!is_plain_ident("in"));
        assert_eq!(attr_name("page-size"), "\"page-size\"");
        assert_eq!(attr_name("if"), "\"if\"");
        assert_eq!(attr_name("url"), "url");
    }

    #[test]
    fn quoting_escapes() {
        assert_eq!(quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(quote("\u{1}"), "\"\\u{1}\"");
    }
}
