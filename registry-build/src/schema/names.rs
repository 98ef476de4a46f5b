//! The credential-free rule: no property name of an input schema may be a credential word.
//!
//! Names are split into words (camelCase, snake_case, kebab-case, dots, digits). A name fails
//! when a whole word, or two adjacent words read together, is a credential word: `password`,
//! `api_key`, `apiKey`, `sessionId` and `page_token` fail; `max_tokens` passes (`tokens` is a
//! different word) and so does `cursor`.

/// Whole words that name credentials.
const WORDS: &[&str] = &[
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "secrets",
    "token",
    "apikey",
    "apikeys",
    "cookie",
    "cookies",
    "session",
    "sessions",
    "sessionid",
    "authorization",
    "auth",
    "bearer",
    "credential",
    "credentials",
    "username",
    "usernames",
    "privatekey",
    "clientsecret",
    "accesskey",
    "secretkey",
    "login",
    "otp",
    "jwt",
];

/// Word pairs that name credentials when adjacent.
const PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("api", "keys"),
    ("private", "key"),
    ("client", "secret"),
    ("user", "name"),
    ("access", "key"),
    ("secret", "key"),
    ("pass", "word"),
    ("session", "id"),
];

/// Suffixes that make a single run-together word a credential (`accesstoken`, `mypassword`).
const SUFFIXES: &[&str] = &[
    "token",
    "password",
    "passwd",
    "secret",
    "apikey",
    "credential",
    "credentials",
    "cookie",
];

/// Split a property name into lower-case words.
pub fn split_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some(prev) = (!cur.is_empty()).then(|| chars[i - 1]) {
            let next = chars.get(i + 1).copied();
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(char::is_lowercase));
            if boundary {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The credential word (or pair) a property name contains, if any.
pub fn credential_word(name: &str) -> Option<String> {
    let words = split_words(name);
    for w in &words {
        if WORDS.contains(&w.as_str()) {
            return Some(w.clone());
        }
        if let Some(s) = SUFFIXES
            .iter()
            .find(|s| w.len() > s.len() && w.ends_with(*s))
        {
            return Some(format!("{w} (ends in `{s}`)"));
        }
    }
    for pair in words.windows(2) {
        if PAIRS.contains(&(pair[0].as_str(), pair[1].as_str())) {
            return Some(format!("{} {}", pair[0], pair[1]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_every_style() {
        assert_eq!(split_words("maxResults"), ["max", "results"]);
        assert_eq!(split_words("max_results"), ["max", "results"]);
        assert_eq!(split_words("max-results"), ["max", "results"]);
        assert_eq!(split_words("APIKey"), ["api", "key"]);
        assert_eq!(split_words("oauth2Token"), ["oauth", "2", "token"]);
    }

    #[test]
    fn credential_names_fail() {
        for n in [
            "password",
            "Password",
            "user_password",
            "passwd",
            "secret",
            "clientSecret",
            "token",
            "page_token",
            "pageToken",
            "apikey",
            "api_key",
            "apiKey",
            "API-KEY",
            "cookie",
            "session",
            "sessionId",
            "session_id",
            "authorization",
            "auth",
            "bearer",
            "credential",
            "credentials",
            "private_key",
            "privateKey",
            "client_secret",
            "username",
            "user_name",
            "userName",
            "accesstoken",
            "x-api-key",
        ] {
            assert!(credential_word(n).is_some(), "{n} passed");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for n in [
            "max_tokens",
            "maxTokens",
            "cursor",
            "url",
            "urls",
            "query",
            "max_results",
            "author",
            "authority",
            "tokens",
            "secretary",
            "possession",
            "format",
            "include_evidence_index",
            "key",
            "user",
            "name",
            "keyword",
        ] {
            assert_eq!(credential_word(n), None, "{n} failed");
        }
    }
}
