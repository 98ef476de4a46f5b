//! The credential-free rule: no property name of an input schema may name a credential.
//!
//! # Reading a name
//!
//! A name is first brought to the letters it shows, so that a credential word cannot hide in
//! another spelling of the same letters:
//!
//! 1. **NFKC**: full-width (`ｐａｓｓｗｏｒｄ`), mathematical (`𝐩𝐚𝐬𝐬`), circled, superscript and
//!    ligature forms become their plain letters;
//! 2. **default-ignorable code points are removed** (zero-width space and joiners, soft hyphen,
//!    word joiner, variation selectors, bidi controls): `pass\u{200b}word` is `password`;
//! 3. **small capitals** (`ᴘᴀssᴡᴏʀᴅ`) are folded to their letters: Unicode has no
//!    decomposition for them and UTS #39 keeps most as their own prototypes;
//! 4. the name is split into words (camelCase, snake_case, kebab-case, dots, spaces, digits);
//! 5. each run of adjacent words is compared as a **UTS #39 confusables skeleton**, lower-cased
//!    and with combining marks removed, to the skeletons of the credential words: Cyrillic
//!    `pаssword` and Greek `tοken` are `password` and `token`, and `contraseña` is `contrasena`.
//!
//! A second reading takes **digits and symbols for letters** (`0`→o, `1`→l or i, `3`→e, `4`→a,
//! `5`→s, `7`→t, `@`→a, `$`→s) inside each word, trailing digits dropped: `passw0rd`, `t0ken`,
//! `s3cret`, `p@ssword`.
//!
//! # The classes
//!
//! A name fails when a run of adjacent words read together (one word, or several: `api_key`,
//! `pass phrase`, `mot_de_passe`, `paSSword` split by its case):
//!
//! - **is a credential word** (or its plural): the password family (`password`, `passwd`,
//!   `passphrase`, `passcode`, `passkey`, `pwd`, `pw`) and "password" in German (`passwort`,
//!   `kennwort`), French (`mot de passe`, `mdp`), Spanish (`contraseña`, `clave`), Portuguese
//!   (`senha`, `palavra-passe`) and Dutch (`wachtwoord`); `secret`, `token`, `jwt`, `bearer`,
//!   `cookie`, `session`, `sessionid`, `sid`, `csrf`, `xsrf`, `auth`, `oauth`, `authorization`,
//!   `credential`, `login`, `username`, `clientsecret`; one-time codes (`otp`, `totp`, `hotp`,
//!   `2fa`, `pin`);
//! - **is a qualified key**: `<qualifier> key` for a qualifier naming what only a holder has —
//!   api, pass, private/priv, signing/sign, encryption, decryption, master, hmac, consumer,
//!   client, app, auth, session, ssh, subscription, access, secret, license, shared;
//! - **is a qualified code**: `<qualifier> code` for pin, mfa, otp, totp, 2fa, sms, auth,
//!   access, verification, security, recovery, backup, one time;
//! - **ends in a credential word** written as one word: `accesstoken`, `mypassword`,
//!   `userapikey`, `phpsessid`;
//! - **contains a distinctive credential word** anywhere: `passwordhint`, `userpasswordhash`.
//!
//! Words are whole: `max_tokens` passes (`tokens`, a count, is a different word from `token`,
//! and the one plural that is not a credential), as do `sort_key` and `primary_key` (no
//! qualifier), `keyword`, `monkey`, `pinned`, `spin`, `opinion`, `sidebar`, `passenger`,
//! `author`, `secretary`, `possession` and `enclave`. `token_count` fails: `token` is a whole
//! word there (name a count of tokens `tokens`, `max_tokens` or `num_tokens`).
//!
//! # Exemptions
//!
//! A property that is not a credential but that the rule catches, and that cannot be renamed
//! (the server receives the payload verbatim: `session_name` of a browser tool, a GitHub
//! `username` to look up), may carry a reviewed exemption on its own schema:
//! `"x-not-credential": "<why>"`. Only a non-empty string counts; it exempts only that property
//! (not a `$defs` entry's properties, not its siblings). `escepine check` lists every exemption
//! as a note ([`crate::Rule::CredentialExemption`]); [`credential_exemptions`] gives their
//! payload pointers. Nothing else relaxes the rule.
//!
//! # Where
//!
//! [`credential_properties`] walks a whole schema document — every `properties` map under
//! every subschema keyword, `$defs` included — so a property reached only through `$ref` is
//! checked where it is defined. The registration rules ([`super::subset::check`]) and the
//! `#[derive(Payload)]` macro apply [`credential_word`], this one rule.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

use super::walk::escape;

/// Credential words: a run of words that reads as one of these (or its plural) fails.
const WORDS: &[&str] = &[
    // The password family.
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "passkey",
    "pwd",
    "pw",
    // "Password" in German, French, Spanish, Portuguese and Dutch.
    "passwort",
    "kennwort",
    "motdepasse",
    "motsdepasse",
    "mdp",
    "contrasena",
    "clave",
    "senha",
    "palavrapasse",
    "palavraspasse",
    "wachtwoord",
    // Secrets, tokens, sessions.
    "secret",
    "token",
    "jwt",
    "bearer",
    "cookie",
    "session",
    "sessionid",
    "sessid",
    "sid",
    "csrf",
    "xsrf",
    "auth",
    "oauth",
    "authorization",
    "credential",
    "login",
    "username",
    "clientsecret",
    // One-time codes.
    "otp",
    "totp",
    "hotp",
    "2fa",
    "pin",
];

/// Words whose plural is not a credential: `tokens` counts tokens, `pins` are map pins.
const NO_PLURAL: &[&str] = &["token", "pin"];

/// `<qualifier> key` is a credential.
const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "pass",
    "private",
    "priv",
    "signing",
    "sign",
    "encryption",
    "decryption",
    "master",
    "hmac",
    "consumer",
    "client",
    "app",
    "auth",
    "session",
    "ssh",
    "subscription",
    "access",
    "secret",
    "license",
    "shared",
];

/// `<qualifier> code` is a credential (a one-time or recovery code).
const CODE_QUALIFIERS: &[&str] = &[
    "pin",
    "mfa",
    "otp",
    "totp",
    "2fa",
    "pass",
    "sms",
    "auth",
    "access",
    "verification",
    "security",
    "recovery",
    "backup",
    "onetime",
];

/// A single run-together word ending in one of these is a credential (`accesstoken`), as is one
/// ending in a qualified key or code (`userapikey`).
const SUFFIXES: &[&str] = &[
    "token",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "credential",
    "credentials",
    "cookie",
    "sessionid",
    "sessid",
    "passwort",
    "kennwort",
    "motdepasse",
    "contrasena",
    "senha",
    "wachtwoord",
];

/// Words distinctive enough that containing them anywhere makes a credential name.
const CONTAINED: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passwort",
    "kennwort",
    "motdepasse",
    "contrasena",
    "palavrapasse",
    "wachtwoord",
    "apikey",
    "privatekey",
    "privkey",
    "clientsecret",
];

/// Latin small capitals and their letters (UTS #39 keeps most of them as their own prototypes).
const SMALL_CAPITALS: &[(char, char)] = &[
    ('\u{1d00}', 'a'),
    ('\u{0299}', 'b'),
    ('\u{1d04}', 'c'),
    ('\u{1d05}', 'd'),
    ('\u{1d07}', 'e'),
    ('\u{a730}', 'f'),
    ('\u{0262}', 'g'),
    ('\u{029c}', 'h'),
    ('\u{026a}', 'i'),
    ('\u{1d0a}', 'j'),
    ('\u{1d0b}', 'k'),
    ('\u{029f}', 'l'),
    ('\u{1d0d}', 'm'),
    ('\u{0274}', 'n'),
    ('\u{1d0f}', 'o'),
    ('\u{1d18}', 'p'),
    ('\u{a7af}', 'q'),
    ('\u{0280}', 'r'),
    ('\u{a731}', 's'),
    ('\u{1d1b}', 't'),
    ('\u{1d1c}', 'u'),
    ('\u{1d20}', 'v'),
    ('\u{1d21}', 'w'),
    ('\u{028f}', 'y'),
    ('\u{1d22}', 'z'),
];

/// Symbols read as letters in the second reading (they separate words in the first).
const LEET_SYMBOLS: &[char] = &['@', '$'];

/// The longest run of adjacent words read together.
const MAX_RUN: usize = 16;

/// Split a property name into lower-case words (camelCase, snake_case, kebab-case, dots,
/// digits), as written: no normalisation (see [`credential_word`] for that).
pub fn split_words(name: &str) -> Vec<String> {
    split(name, Reading::Plain)
        .into_iter()
        .map(|w| w.shown)
        .collect()
}

/// The credential word (or run of words) a property name contains, if any, described for a
/// diagnostic: `token`, `api key`, `passw0rd (read as `password`)`.
pub fn credential_word(name: &str) -> Option<String> {
    let prepared = prepare(name);
    let plain = split(&prepared, Reading::Plain);
    let leet = split(&prepared, Reading::Leet);
    let readings = [plain, leet_words(&leet, 'l'), leet_words(&leet, 'i')];
    let classes = classes();
    readings.iter().find_map(|words| {
        (1..=MAX_RUN.min(words.len()))
            .find_map(|len| words.windows(len).find_map(|run| classes.matches(run)))
    })
}

/// A property of a schema document whose name is a credential word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialProperty {
    /// JSON pointer of the property's schema from the document root
    /// (`/properties/options/properties/apiKey`, `/$defs/auth/properties/token`).
    pub pointer: String,
    /// The property name.
    pub name: String,
    /// The credential word it names ([`credential_word`]).
    pub word: String,
}

/// The keyword of a reviewed exemption from the credential-name rule, written on the schema of
/// the one property it exempts: `"session_name": {"type": "string", "x-not-credential": "a
/// browser session's display name, not a session id"}`.
pub const NOT_CREDENTIAL: &str = "x-not-credential";

/// A reviewed exemption from the credential-name rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialExemption {
    /// Where the exempted property sits in a payload (a JSON pointer whose list steps are
    /// `/-`): `/session_name`, `/pages/-/session_name`.
    pub pointer: String,
    /// The reason written in `x-not-credential`.
    pub reason: String,
}

/// The reason of a property schema's exemption, if it carries a valid one (a non-empty
/// string).
pub fn exemption_reason(property: &Value) -> Option<&str> {
    property
        .get(NOT_CREDENTIAL)?
        .as_str()
        .filter(|r| !r.trim().is_empty())
}

/// Every property of the schema document `schema` whose name is a credential word, wherever it
/// is declared: under `properties`, list `items`, `$defs` (so also what `$ref` reaches), and
/// any other subschema keyword, in document order. A property whose schema carries a valid
/// exemption ([`exemption_reason`]) is not listed: see [`exempted_properties`].
pub fn credential_properties(schema: &Value) -> Vec<CredentialProperty> {
    caught(schema)
        .into_iter()
        .filter(|(_, reason)| reason.is_none())
        .map(|(p, _)| p)
        .collect()
}

/// The properties [`credential_properties`] would list but for their valid exemption, each
/// with its reason, in document order.
pub fn exempted_properties(schema: &Value) -> Vec<(CredentialProperty, String)> {
    caught(schema)
        .into_iter()
        .filter_map(|(p, reason)| reason.map(|r| (p, r)))
        .collect()
}

/// Every credential-named property of the document, with its exemption's reason if valid.
fn caught(schema: &Value) -> Vec<(CredentialProperty, Option<String>)> {
    let mut found = Vec::new();
    each_schema(schema, "", None, 0, &mut |node, at, name| {
        if let Some(word) = name.and_then(credential_word) {
            found.push((
                CredentialProperty {
                    pointer: at.to_string(),
                    name: name.unwrap_or_default().to_string(),
                    word,
                },
                exemption_reason(node).map(str::to_string),
            ));
        }
    });
    found
}

/// The exemptions of an input schema, at the payload pointers of the properties they exempt
/// (a `$defs` entry reached from two places gives two pointers). Only exemptions of names the
/// rule catches count.
pub fn credential_exemptions(schema: &Value) -> Vec<CredentialExemption> {
    let mut out = Vec::new();
    for node in super::visit::nodes(schema) {
        if node.ty != Some(super::walk::JsonType::Object) {
            continue;
        }
        let props = node.schema.get("properties").and_then(Value::as_object);
        for (name, sub) in props.into_iter().flatten() {
            if let (Some(_), Some(reason)) = (credential_word(name), exemption_reason(sub)) {
                let exemption = CredentialExemption {
                    pointer: format!("{}/{}", node.pointer, escape(name)),
                    reason: reason.to_string(),
                };
                if !out.contains(&exemption) {
                    out.push(exemption);
                }
            }
        }
    }
    out
}

/// A misplaced or malformed `x-not-credential`, or one that exempts nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExemptionProblem {
    /// JSON pointer of the keyword from the document root.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
    /// Whether the schema stays acceptable (an exemption of a name the rule does not catch).
    pub harmless: bool,
}

/// Every `x-not-credential` of the document that is not a non-empty reason on a property
/// schema, and every valid one on a name the rule does not catch. In an output schema
/// (`in_input` false) every `x-not-credential` is a problem: the rule reads input names only.
pub fn exemption_problems(schema: &Value, in_input: bool) -> Vec<ExemptionProblem> {
    let mut out = Vec::new();
    each_schema(schema, "", None, 0, &mut |node, at, name| {
        let Some(v) = node.get(NOT_CREDENTIAL) else {
            return;
        };
        let pointer = format!("{at}/{NOT_CREDENTIAL}");
        let (message, harmless) = match name {
            _ if !in_input => (
                format!(
                    "`{NOT_CREDENTIAL}` belongs in the input schema: the credential-name rule \
                     reads input property names only"
                ),
                false,
            ),
            None => (
                format!(
                    "`{NOT_CREDENTIAL}` exempts one property: write it on the schema of that \
                     property (under `properties`), not here"
                ),
                false,
            ),
            Some(_) if exemption_reason(node).is_none() => (
                format!(
                    "`{NOT_CREDENTIAL}` is {v}; it must be a non-empty string saying why the \
                     property is not a credential"
                ),
                false,
            ),
            Some(n) if credential_word(n).is_none() => (
                format!(
                    "the credential-name rule does not catch `{n}`: this `{NOT_CREDENTIAL}` \
                     exempts nothing; remove it"
                ),
                true,
            ),
            Some(_) => return,
        };
        out.push(ExemptionProblem {
            pointer,
            message,
            harmless,
        });
    });
    out
}

/// Keywords whose value is one subschema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value maps names to subschemas (besides `properties`).
const SCHEMA_MAPS: &[&str] = &[
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];
/// Keywords whose value is a list of subschemas (or, for `items`, one).
const SCHEMA_LISTS: &[&str] = &["items", "prefixItems", "allOf", "anyOf", "oneOf"];

/// Deeper than any schema a JSON parser hands over; a bound for values built in code.
const MAX_DEPTH: usize = 256;

/// Visit every subschema of the document (pre-order) with its pointer and, for a property's
/// schema, the property name.
fn each_schema(
    node: &Value,
    at: &str,
    name: Option<&str>,
    depth: usize,
    visit: &mut dyn FnMut(&Value, &str, Option<&str>),
) {
    let Some(obj) = node.as_object().filter(|_| depth < MAX_DEPTH) else {
        return;
    };
    visit(node, at, name);
    for (key, value) in obj {
        let here = format!("{at}/{}", escape(key));
        let k = key.as_str();
        if k == "properties" {
            for (name, sub) in value.as_object().into_iter().flatten() {
                let pointer = format!("{here}/{}", escape(name));
                each_schema(sub, &pointer, Some(name), depth + 1, visit);
            }
        } else if SCHEMA_MAPS.contains(&k) {
            for (name, sub) in value.as_object().into_iter().flatten() {
                each_schema(
                    sub,
                    &format!("{here}/{}", escape(name)),
                    None,
                    depth + 1,
                    visit,
                );
            }
        } else if SCHEMA_LISTS.contains(&k) {
            match value {
                Value::Array(items) => {
                    for (i, sub) in items.iter().enumerate() {
                        each_schema(sub, &format!("{here}/{i}"), None, depth + 1, visit);
                    }
                }
                sub => each_schema(sub, &here, None, depth + 1, visit),
            }
        } else if ONE_SCHEMA.contains(&k) {
            each_schema(value, &here, None, depth + 1, visit);
        }
    }
}

/// How a name is split into words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Digits are words of their own; symbols separate words.
    Plain,
    /// Digits and [`LEET_SYMBOLS`] belong to the word they sit in.
    Leet,
}

fn split(name: &str, reading: Reading) -> Vec<Word> {
    let in_word =
        |c: char| c.is_alphanumeric() || (reading == Reading::Leet && LEET_SYMBOLS.contains(&c));
    let digit_split = reading == Reading::Plain;
    let mut words = Vec::new();
    let mut cur = Word::default();
    let chars: Vec<(usize, char)> = name.char_indices().collect();
    let mut push = |cur: &mut Word, end: usize| {
        if !cur.shown.is_empty() {
            cur.end = end;
            cur.read = cur.shown.clone();
            words.push(std::mem::take(cur));
        }
    };
    for (i, &(at, c)) in chars.iter().enumerate() {
        if !in_word(c) {
            push(&mut cur, at);
            continue;
        }
        if !cur.shown.is_empty() {
            let prev = chars[i - 1].1;
            let next = chars.get(i + 1).map(|&(_, c)| c);
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (digit_split && prev.is_alphabetic() && c.is_ascii_digit())
                || (digit_split && prev.is_ascii_digit() && c.is_alphabetic())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(char::is_lowercase));
            if boundary {
                push(&mut cur, at);
            }
        }
        if cur.shown.is_empty() {
            cur.start = at;
        }
        cur.shown.extend(c.to_lowercase());
    }
    push(&mut cur, name.len());
    words
}

/// One word of a reading: as written (lower-cased), as read, and where it is in the name.
#[derive(Debug, Clone, Default)]
struct Word {
    shown: String,
    read: String,
    start: usize,
    end: usize,
}

/// The second reading's words: trailing digits dropped, digits and symbols read as letters
/// (`1` as `one`).
fn leet_words(words: &[Word], one: char) -> Vec<Word> {
    words
        .iter()
        .map(|w| {
            let trimmed = w.shown.trim_end_matches(|c: char| c.is_ascii_digit());
            let base = if trimmed.is_empty() {
                &w.shown
            } else {
                trimmed
            };
            let read = base
                .chars()
                .map(|c| match c {
                    '0' => 'o',
                    '1' => one,
                    '3' => 'e',
                    '4' | '@' => 'a',
                    '5' | '$' => 's',
                    '7' => 't',
                    c => c,
                })
                .collect();
            Word { read, ..w.clone() }
        })
        .collect()
}

/// NFKC, default-ignorable code points removed, small capitals folded.
fn prepare(name: &str) -> String {
    name.nfkc()
        .filter(|c| !is_default_ignorable(*c))
        .map(fold_small_capital)
        .collect()
}

/// Whether `c` is a default-ignorable code point: the one kind of character the UTS #39
/// skeleton drops entirely.
fn is_default_ignorable(c: char) -> bool {
    let mut buf = [0u8; 4];
    let dropped = skeleton(c.encode_utf8(&mut buf)).next().is_none();
    dropped
}

fn fold_small_capital(c: char) -> char {
    SMALL_CAPITALS
        .iter()
        .find(|(cap, _)| *cap == c)
        .map_or(c, |(_, letter)| *letter)
}

/// What a run of words is compared by: its UTS #39 skeleton, lower-cased, small capitals
/// folded, combining marks removed.
fn key(text: &str) -> String {
    let mut s = text.to_lowercase();
    for _ in 0..2 {
        let folded: String = s.chars().map(fold_small_capital).collect();
        s = skeleton(&folded).collect::<String>().to_lowercase();
    }
    s.chars().filter(|c| !is_combining_mark(*c)).collect()
}

/// The credential classes, as skeleton keys.
struct Classes {
    /// Key → the credential word.
    exact: BTreeMap<String, String>,
    /// (key, word) of the suffix class.
    suffixes: Vec<(String, String)>,
    /// (key, word) of the contained class.
    contained: Vec<(String, String)>,
}

fn classes() -> &'static Classes {
    static CLASSES: OnceLock<Classes> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let qualified: Vec<String> = KEY_QUALIFIERS
            .iter()
            .map(|q| format!("{q}key"))
            .chain(CODE_QUALIFIERS.iter().map(|q| format!("{q}code")))
            .collect();
        let mut exact = BTreeMap::new();
        for w in WORDS.iter().map(|w| w.to_string()).chain(qualified.clone()) {
            if !NO_PLURAL.contains(&w.as_str()) {
                exact.insert(key(&format!("{w}s")), format!("{w}s"));
            }
            exact.insert(key(&w), w);
        }
        let pairs = |words: Vec<String>| words.into_iter().map(|w| (key(&w), w)).collect();
        Classes {
            exact,
            suffixes: pairs(
                SUFFIXES
                    .iter()
                    .map(|s| s.to_string())
                    .chain(qualified)
                    .collect(),
            ),
            contained: pairs(CONTAINED.iter().map(|s| s.to_string()).collect()),
        }
    })
}

impl Classes {
    /// The description of the credential word `run` reads as, if it is one.
    fn matches(&self, run: &[Word]) -> Option<String> {
        let read: String = run.iter().map(|w| w.read.as_str()).collect();
        // As written: words the name separates are shown apart, others together.
        let mut shown = String::new();
        for (i, w) in run.iter().enumerate() {
            if i > 0 && run[i - 1].end != w.start {
                shown.push(' ');
            }
            shown.push_str(&w.shown);
        }
        let k = key(&read);
        if let Some(word) = self.exact.get(&k) {
            return Some(if shown.replace(' ', "") == *word {
                shown
            } else {
                format!("{shown} (read as `{word}`)")
            });
        }
        if let Some((_, word)) = self
            .suffixes
            .iter()
            .find(|(s, _)| k.len() > s.len() && k.ends_with(s.as_str()))
        {
            return Some(format!("{shown} (ends in `{word}`)"));
        }
        self.contained
            .iter()
            .find(|(c, _)| k.contains(c.as_str()))
            .map(|(_, word)| format!("{shown} (contains `{word}`)"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn splits_every_style() {
        assert_eq!(split_words("maxResults"), ["max", "results"]);
        assert_eq!(split_words("max_results"), ["max", "results"]);
        assert_eq!(split_words("max-results"), ["max", "results"]);
        assert_eq!(split_words("APIKey"), ["api", "key"]);
        assert_eq!(split_words("oauth2Token"), ["oauth", "2", "token"]);
    }

    /// Names that must fail, by class.
    const MUST_FAIL: &[&str] = &[
        // Plain words and pairs, in every style.
        "password",
        "Password",
        "PASSWORD",
        "user_password",
        "passwd",
        "secret",
        "secrets",
        "clientSecret",
        "token",
        "page_token",
        "pageToken",
        "accesstoken",
        "refresh-token",
        "apikey",
        "api_key",
        "apiKey",
        "API-KEY",
        "x-api-key",
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
        "login",
        "jwt",
        // Homoglyphs (Cyrillic, Greek), in one word or in several.
        "p\u{0430}ssword",
        "tok\u{0435}n",
        "t\u{03bf}ken",
        "\u{0440}\u{0430}ss\u{051d}\u{043e}rd",
        "api_k\u{0435}y",
        "s\u{0435}cr\u{0435}t",
        // Invisible splits: zero-width, soft hyphen, joiners, word joiner, BOM, variation
        // selector, bidi control; and visible separators inside a word.
        "pass\u{200b}word",
        "pa\u{00ad}ssword",
        "to\u{200d}ken",
        "to\u{200c}ken",
        "sec\u{2060}ret",
        "\u{feff}token",
        "tok\u{fe0f}en",
        "pass\u{202e}word",
        "p-a-s-s-w-o-r-d",
        "pa.ss.wo.rd",
        "paSSword",
        // Compatibility forms: full-width, mathematical, circled, small capitals.
        "\u{ff50}\u{ff41}\u{ff53}\u{ff53}\u{ff57}\u{ff4f}\u{ff52}\u{ff44}",
        "\u{ff34}\u{ff2f}\u{ff2b}\u{ff25}\u{ff2e}",
        "\u{1d429}\u{1d41a}\u{1d42c}\u{1d42c}\u{1d430}\u{1d428}\u{1d42b}\u{1d41d}",
        "\u{24e3}\u{24de}\u{24da}\u{24d4}\u{24dd}",
        "\u{1d18}\u{1d00}ss\u{1d21}\u{1d0f}\u{0280}\u{1d05}",
        "\u{1d1b}\u{1d0f}\u{1d0b}\u{1d07}\u{0274}",
        "\u{a731}\u{1d07}\u{1d04}\u{0280}\u{1d07}\u{1d1b}",
        // Combining marks.
        "pa\u{0301}ssword",
        "to\u{0332}ken",
        // Joined words and pairs.
        "passphrase",
        "pass_phrase",
        "pass phrase",
        "privkey",
        "priv_key",
        "priv key",
        "passkey",
        "mypassword",
        "passwordHint",
        "userpasswordhash",
        // Qualified keys.
        "private key",
        "signingKey",
        "signing_key",
        "encryption_key",
        "encryptionKey",
        "master_key",
        "hmac-key",
        "hmacKey",
        "consumerKey",
        "consumer_key",
        "clientKey",
        "app_key",
        "appKey",
        "authKey",
        "session_key",
        "ssh_key",
        "sshKey",
        "subscription_key",
        "Ocp-Apim-Subscription-Key",
        "access_key",
        "AWSAccessKey",
        "secret_key",
        "secretKeys",
        "license_key",
        // One-time codes.
        "otp",
        "totp",
        "hotp",
        "mfa_code",
        "mfaCode",
        "2fa",
        "2fa_code",
        "pin",
        "pin_code",
        "pinCode",
        "passcode",
        "verification_code",
        "recoveryCodes",
        "one_time_code",
        // Digits and symbols for letters.
        "passw0rd",
        "p4ssw0rd",
        "pa55word",
        "t0ken",
        "70ken",
        "s3cret",
        "s3cr3t",
        "p@ssword",
        "pa$$word",
        "$ecret",
        "api_k3y",
        "1ogin",
        "l0gin",
        "0auth",
        "passw0rd1",
        "myT0ken",
        // Other languages.
        "Passwort",
        "passwort",
        "kennwort",
        "Kennwort",
        "mot_de_passe",
        "motDePasse",
        "mot de passe",
        "mots_de_passe",
        "palavras-passe",
        "Benutzerkennwort",
        "Passw\u{f6}rter",
        "contrase\u{f1}as",
        "mdp",
        "contrase\u{00f1}a",
        "contrasena",
        "clave",
        "senha",
        "palavra-passe",
        "palavra_passe",
        "wachtwoord",
        "userWachtwoord",
        // Auth schemes and protections.
        "oauth",
        "oauth2",
        "oauthToken",
        "sid",
        "csrf",
        "csrf_token",
        "xsrf",
        "pw",
        "pwd",
        "phpsessid",
    ];

    /// Names that must pass.
    const MUST_PASS: &[&str] = &[
        "sort_key",
        "sortKey",
        "primary_key",
        "primaryKey",
        "max_tokens",
        "maxTokens",
        "tokens",
        "num_tokens",
        "cursor",
        "url",
        "urls",
        "query",
        "max_results",
        "author",
        "authority",
        "authors",
        "secretary",
        "possession",
        "format",
        "include_evidence_index",
        "key",
        "keys",
        "user",
        "name",
        "keyword",
        "keywords",
        "monkey",
        "donkey",
        "turnkey",
        "hotkey",
        "pinned",
        "pins",
        "spin",
        "opinion",
        "ping",
        "sidebar",
        "side",
        "inside",
        "passenger",
        "passage",
        "pass",
        "bypass",
        "apple",
        "application",
        "app_id",
        "code",
        "country_code",
        "zip_code",
        "status_code",
        "language_code",
        "barcode",
        "encode",
        "enclave",
        "autoclave",
        "description",
        "topic",
        "top_k",
        "top_p",
        "optional",
        "options",
        "photos",
        "ipv4",
        "utf8",
        "sha256",
        "x509",
        "l10n",
        "page",
        "page_size",
        "word",
        "words",
        "sword",
        "cookbook",
        "possessions",
        "public_key",
        "foreign_key",
        "cache_key",
        "idempotency_key",
        "map_key",
        "partition_key",
        "locale",
        "mode",
        "model",
        "domain",
        "timestamp",
        "csv",
        "pdf",
        "pwm_duty",
    ];

    #[test]
    fn credential_names_fail() {
        let passed: Vec<&str> = MUST_FAIL
            .iter()
            .copied()
            .filter(|n| credential_word(n).is_none())
            .collect();
        assert!(
            passed.is_empty(),
            "credential names that passed: {passed:?}"
        );
    }

    #[test]
    fn ordinary_names_pass() {
        let failed: Vec<String> = MUST_PASS
            .iter()
            .filter_map(|n| credential_word(n).map(|w| format!("{n}: {w}")))
            .collect();
        assert!(failed.is_empty(), "ordinary names that failed: {failed:?}");
    }

    #[test]
    fn token_count_fails_as_a_whole_word() {
        assert_eq!(credential_word("token_count").as_deref(), Some("token"));
    }

    #[test]
    fn descriptions_say_what_was_read() {
        assert_eq!(credential_word("api_key").as_deref(), Some("api key"));
        assert_eq!(credential_word("pageToken").as_deref(), Some("token"));
        assert_eq!(
            credential_word("passw0rd").as_deref(),
            Some("passw0rd (read as `password`)")
        );
        assert_eq!(
            credential_word("p\u{0430}ssword").as_deref(),
            Some("p\u{0430}ssword (read as `password`)")
        );
        assert_eq!(
            credential_word("accesstoken").as_deref(),
            Some("accesstoken (ends in `token`)")
        );
        assert_eq!(
            credential_word("passwordhint").as_deref(),
            Some("passwordhint (contains `password`)")
        );
        assert_eq!(
            credential_word("mot_de_passe").as_deref(),
            Some("mot de passe")
        );
    }

    #[test]
    fn every_property_of_the_document_is_found() {
        let schema = json!({
            "type": "object",
            "properties": {
                "ok": {"type": "string"},
                "token": {"type": "string"},
                "nested": {
                    "type": "object",
                    "properties": {"apiKey": {"type": "string"}}
                },
                "list": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"p\u{0430}ssword": {}}}
                },
                "refd": {"$ref": "#/$defs/d", "properties": {"sid": {}}}
            },
            "$defs": {
                "d": {"type": "object", "properties": {"a/b~secret": {}}}
            },
            "anyOf": [{"properties": {"pin": {}}}],
            "additionalProperties": {"properties": {"otp": {}}},
            "default": {"properties": {"password": "not a schema"}},
            "x-extra": {"properties": {"password": {}}}
        });
        let found: Vec<String> = credential_properties(&schema)
            .into_iter()
            .map(|p| p.pointer)
            .collect();
        assert_eq!(
            found,
            [
                "/properties/token",
                "/properties/nested/properties/apiKey",
                "/properties/list/items/properties/p\u{0430}ssword",
                "/properties/refd/properties/sid",
                "/$defs/d/properties/a~1b~0secret",
                "/anyOf/0/properties/pin",
                "/additionalProperties/properties/otp",
            ]
        );
    }
}
