//! Finding the text of a JSON pointer inside a JSON document, for diagnostics with a caret.
//!
//! A small, total scanner: it never fails, it returns `None` when the pointer (or the text) does
//! not lead anywhere. A pointer to a member's value spans the value; if the member is absent, the
//! closest existing ancestor is returned instead, so a "missing field" points at its object.

/// The byte range `(start, len)` of the value at `pointer`, or of its closest existing ancestor.
pub fn span_of(text: &str, pointer: &str) -> Option<(usize, usize)> {
    let tokens: Vec<String> = if pointer.is_empty() {
        Vec::new()
    } else {
        pointer
            .strip_prefix('/')?
            .split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect()
    };
    let bytes = text.as_bytes();
    let mut pos = skip_ws(bytes, 0);
    let mut best = value_span(bytes, pos);
    for token in &tokens {
        let here = pos;
        match bytes.get(here)? {
            b'{' => match find_member(bytes, here, token) {
                Some((key_start, value_start)) => {
                    pos = value_start;
                    // A member's span is key and value, so the caret underlines both.
                    best =
                        value_span(bytes, value_start).map(|(s, l)| (key_start, s + l - key_start));
                }
                None => return best,
            },
            b'[' => {
                let idx: usize = token.parse().ok()?;
                match find_element(bytes, here, idx) {
                    Some(start) => {
                        pos = start;
                        best = value_span(bytes, start);
                    }
                    None => return best,
                }
            }
            _ => return best,
        }
    }
    best
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// End (exclusive) of the value starting at `i`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

fn value_span(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let end = value_end(b, i)?;
    Some((i, end - i))
}

/// In the object at `obj`, the (key start, value start) of member `key`.
fn find_member(b: &[u8], obj: usize, key: &str) -> Option<(usize, usize)> {
    let mut i = skip_ws(b, obj + 1);
    loop {
        if *b.get(i)? == b'}' {
            return None;
        }
        let key_start = i;
        let key_end = string_end(b, i)?;
        let raw = std::str::from_utf8(&b[i..key_end]).ok()?;
        let this: String = serde_json::from_str(raw).ok()?;
        i = skip_ws(b, key_end);
        if *b.get(i)? != b':' {
            return None;
        }
        let value_start = skip_ws(b, i + 1);
        if this == key {
            return Some((key_start, value_start));
        }
        i = skip_ws(b, value_end(b, value_start)?);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            _ => return None,
        }
    }
}

fn find_element(b: &[u8], arr: usize, idx: usize) -> Option<usize> {
    let mut i = skip_ws(b, arr + 1);
    let mut n = 0;
    loop {
        if *b.get(i)? == b']' {
            return None;
        }
        if n == idx {
            return Some(i);
        }
        i = skip_ws(b, value_end(b, i)?);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            _ => return None,
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{
  "a": { "b/c": [1, {"d": "x\"y"}], "e": true },
  "f": null
}"#;

    fn text_at(p: &str) -> &'static str {
        let (s, l) = span_of(DOC, p).unwrap();
        &DOC[s..s + l]
    }

    #[test]
    fn finds_members_elements_and_escapes() {
        assert_eq!(text_at("/f"), r#""f": null"#);
        assert_eq!(text_at("/a/b~1c/0"), "1");
        assert_eq!(text_at("/a/b~1c/1/d"), r#""d": "x\"y""#);
        assert_eq!(text_at("/a/e"), r#""e": true"#);
    }

    #[test]
    fn missing_member_points_at_closest_ancestor() {
        assert_eq!(
            text_at("/a/zzz"),
            r#""a": { "b/c": [1, {"d": "x\"y"}], "e": true }"#
        );
        assert!(text_at("").starts_with('{'));
    }

    #[test]
    fn line_and_column() {
        let (s, _) = span_of(DOC, "/f").unwrap();
        assert_eq!(line_col(DOC, s), (3, 3));
    }

    #[test]
    fn never_panics_on_garbage() {
        for t in ["", "{", "[1,", "{\"a\":", "\"abc", "{\"a\" 1}"] {
            let _ = span_of(t, "/a/0");
        }
    }
}
