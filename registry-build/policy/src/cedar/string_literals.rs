//! The string literals of Cedar policy text, with their places: what a diagnostic about a
//! literal points at (Cedar's public API gives no source positions below a policy).

/// One string literal of a policy's text.
pub(crate) struct Token {
    /// Byte offset of the opening quote.
    pub start: usize,
    /// Length in bytes, quotes included.
    pub len: usize,
    /// The string it denotes, escapes read.
    pub value: String,
}

/// The string literals of Cedar text, comments skipped, escapes read.
pub(crate) fn string_tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '/' if chars.peek().is_some_and(|(_, n)| *n == '/') => {
                for (_, n) in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
            }
            '"' => {
                let mut value = String::new();
                let mut end = text.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, 'r')) => value.push('\r'),
                            Some((_, 't')) => value.push('\t'),
                            Some((_, '0')) => value.push('\0'),
                            Some((_, 'u')) => {
                                let mut hex = String::new();
                                if chars.next_if(|(_, c)| *c == '{').is_some() {
                                    while let Some((_, h)) = chars.next_if(|(_, c)| *c != '}') {
                                        hex.push(h);
                                    }
                                    chars.next();
                                }
                                if let Some(ch) =
                                    u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
                                {
                                    value.push(ch);
                                }
                            }
                            Some((_, other)) => value.push(other),
                            None => {}
                        },
                        c => value.push(c),
                    }
                }
                out.push(Token {
                    start: at,
                    len: end - at,
                    value,
                });
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_tokens_skip_comments_and_read_escapes() {
        let text = "// \"not\" this\nwhen { x == \"a\\\"b\" && y == \"\\u{61}\" }";
        let t = string_tokens(text);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].value, "a\"b");
        assert_eq!(&text[t[0].start..t[0].start + t[0].len], "\"a\\\"b\"");
        assert_eq!(t[1].value, "a");
    }
}
