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
//! # Recognised shapes
//!
//! Three well-known property shapes are caught by their names but are not credentials. Each one
//! is accepted, with a **note** under its own rule (never an error, never silently), and
//! nothing else about the rule changes. A shape matches only a name **written in plain ASCII**
//! (letters, digits, `_`, `-`) whose words (as [`split_words`] gives them, joined by `_`) are
//! exactly one of a closed list, in any case style (`session_name`, `sessionName`,
//! `Session-Name`). So no other reading gets the benefit: `sess1on_name`, `s\u{0435}ssion_name`
//! (Cyrillic e), `session\u{200b}_name`, `sessionname` and `session_names` are read as above
//! and refused. The value must be a **plain string**: `"type": "string"` (through local
//! `$ref`s, or an `enum`/`const` of strings), with no `"format": "password"` and no
//! `"writeOnly": true` anywhere on the way ([`value_kind`]).
//!
//! 1. **A session's name** ([`crate::rule::Rule::RecognisedSessionName`]): `session_name`,
//!    `session_title`, `session_label`, `session_display_name`. The words that pick out a
//!    session (`session`, `session_id`, `sessionid`, `session_key`, `session_token`,
//!    `session_cookie`, `session_secret`) stay credentials: a session's id or key is what
//!    authenticates it; its name or title does not.
//! 2. **A pagination token** ([`crate::rule::Rule::RecognisedPaginationToken`]): `next_token`,
//!    `page_token`, `next_page_token`, `continuation_token`, `pagination_token`,
//!    `starting_token`, `cursor_token`, declared **beside** (in the same `properties` map, or
//!    struct) at least one pagination field: `page`, `page_size`, `page_number`, `page_limit`,
//!    `per_page`, `limit`, `max_results`, `max_items`, `max_records`, `cursor`, `offset`. A
//!    token with no such sibling, or not a plain string (an integer `next_token`), is refused;
//!    `access_token`, `refresh_token`, `id_token`, `auth_token`, `api_token`, `bearer_token`,
//!    `csrf_token` and `token` are not on the list and are refused whatever their siblings.
//! 3. **A user to look up** ([`crate::rule::Rule::RecognisedUserLookup`]): `username`, `user_name`,
//!    `login`, when **no sibling looks like the other half of a login form**: no sibling the
//!    rule catches (other than a recognised session name or pagination token), none marked
//!    secret (`"format": "password"`, `"writeOnly": true`), none with a word `pass`, `passw`,
//!    `pword`, `pswd` or `psw` (`pass`, `user_pass`: names this rule lets through), and none
//!    named exactly `code` or `key`. A user name is not a secret value; beside a password it is
//!    half of a credential pair.
//!
//! The shapes read the property's siblings, so the rule is one function of a whole properties
//! map ([`judge`], over [`Property`] facts): the JSON path builds the facts from the schema
//! ([`judge_schema_property`]), `#[derive(Payload)]` from the struct's fields.
//!
//! # Exemptions
//!
//! A property that is not a credential but that the rule catches, and that cannot be renamed
//! (the server receives the payload verbatim: a `session_id` that is only a label, a
//! `username` beside a `pass` field that is not a password), may carry a reviewed exemption on
//! its own schema: `"x-not-credential": "<why>"`. Only a non-empty string counts; it exempts
//! only that property (not a `$defs` entry's properties, not its siblings). `escepine check`
//! lists every exemption as a note ([`crate::rule::Rule::CredentialExemption`]); a valid exemption
//! on a recognised shape is listed as the exemption (the reviewer's reason wins).
//! [`credential_exemptions`] gives the payload pointers of exempted and recognised properties
//! (the ledger records them with each call). Nothing else relaxes the rule.
//!
//! # Where
//!
//! [`credential_properties`] walks a whole schema document — every `properties` map under
//! every subschema keyword, `$defs` included — so a property reached only through `$ref` is
//! checked where it is defined. The registration rules ([`super::subset::check`]) and the
//! `#[derive(Payload)]` macro apply [`judge`] (and through it [`credential_word`]), this one
//! rule.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

use super::walk::{escape, JsonType};
use crate::rule::Rule;

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

/// The names of a session's name (words joined by `_`).
const SESSION_NAMES: &[&str] = &[
    "session_name",
    "session_title",
    "session_label",
    "session_display_name",
];

/// The names of a pagination token (words joined by `_`).
const PAGINATION_TOKENS: &[&str] = &[
    "next_token",
    "page_token",
    "next_page_token",
    "continuation_token",
    "pagination_token",
    "starting_token",
    "cursor_token",
];

/// The pagination fields one of which must sit beside a pagination token (words joined by `_`).
const PAGINATION_FIELDS: &[&str] = &[
    "page",
    "page_size",
    "page_number",
    "page_limit",
    "per_page",
    "limit",
    "max_results",
    "max_items",
    "max_records",
    "cursor",
    "offset",
];

/// The names of a user to look up (words joined by `_`).
const USER_LOOKUPS: &[&str] = &["username", "user_name", "login"];

/// A sibling with one of these words makes a user name half of a login form (the rule itself
/// lets these words through).
const LOGIN_COMPANION_WORDS: &[&str] = &["pass", "passw", "pword", "pswd", "psw"];

/// A sibling named exactly this (words joined by `_`) makes a user name half of a login form.
const LOGIN_COMPANION_NAMES: &[&str] = &["code", "key"];

/// The most `$ref` steps [`value_kind`] follows.
const MAX_REFS: usize = 64;

/// A well-known property shape the credential-name rule catches by name but accepts, with a
/// note (see the module documentation, "Recognised shapes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `session_name`, `session_title`, …: a session's name, not its id or key.
    SessionName,
    /// `next_token`, `page_token`, … beside a pagination field: a pagination cursor.
    PaginationToken,
    /// `username`, `user_name`, `login` with no login-form sibling: a user to look up.
    UserLookup,
}

impl Shape {
    /// The rule whose note reports the shape.
    pub const fn rule(self) -> Rule {
        match self {
            Self::SessionName => Rule::RecognisedSessionName,
            Self::PaginationToken => Rule::RecognisedPaginationToken,
            Self::UserLookup => Rule::RecognisedUserLookup,
        }
    }

    /// What the shape is, for a note: `a pagination token`.
    pub const fn what(self) -> &'static str {
        match self {
            Self::SessionName => "a session's name",
            Self::PaginationToken => "a pagination token",
            Self::UserLookup => "a user name to look up",
        }
    }
}

/// What a property's value is, as far as the recognised shapes care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A string with nothing marking it secret.
    PlainString,
    /// Marked secret (`"format": "password"`, `"writeOnly": true`), or, for a Rust field, of a
    /// schema its attributes may change (`#[schemars(with = …)]`, `extend`, …).
    Secret,
    /// Anything else.
    Other,
}

/// One property of a `properties` map (or one wire name of a payload struct's field), as the
/// rule reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Property<'a> {
    /// The property name.
    pub name: &'a str,
    /// Its value.
    pub value: ValueKind,
}

/// What the credential-name rule makes of one property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The name names no credential.
    Clear,
    /// The name names a credential ([`credential_word`]): refused.
    Credential {
        /// The credential word, described.
        word: String,
    },
    /// The name is caught, but the property has a recognised shape: accepted with a note.
    Recognised {
        /// The credential word the name is caught by, described.
        word: String,
        /// The shape.
        shape: Shape,
        /// Why it is that shape (`a string beside the pagination field `limit``).
        because: String,
    },
}

/// The credential-name rule on the property `map[at]` of one `properties` map (every entry of
/// `map` is a sibling, in the same object): [`credential_word`] on its name, then the
/// recognised shapes. An index outside `map` is [`Verdict::Clear`].
pub fn judge(map: &[Property<'_>], at: usize) -> Verdict {
    let Some(word) = map.get(at).and_then(|p| credential_word(p.name)) else {
        return Verdict::Clear;
    };
    match shape_of(map, at, true) {
        Some((shape, because)) => Verdict::Recognised {
            word,
            shape,
            because,
        },
        None => Verdict::Credential { word },
    }
}

/// [`judge`] on the property `name` of the schema `properties` map `properties`, in the schema
/// document `root` (for local `$ref`s). A name not in the map is judged on its name alone.
pub fn judge_schema_property(properties: &Map<String, Value>, name: &str, root: &Value) -> Verdict {
    let map: Vec<Property<'_>> = properties
        .iter()
        .map(|(n, s)| Property {
            name: n,
            value: value_kind(s, root),
        })
        .collect();
    match map.iter().position(|p| p.name == name) {
        Some(at) => judge(&map, at),
        None => judge(
            &[Property {
                name,
                value: ValueKind::Other,
            }],
            0,
        ),
    }
}

/// The kind of a property schema's value in the document `root`: [`ValueKind::Secret`] if it
/// or a schema its `$ref`s lead to says `"format": "password"` or `"writeOnly": true`;
/// [`ValueKind::PlainString`] if the schema at the end of its `$ref`s is a string (its `type`,
/// or its `enum`/`const` values); else (a dangling or remote `$ref` too) [`ValueKind::Other`].
pub fn value_kind(property: &Value, root: &Value) -> ValueKind {
    let mut node = property;
    for _ in 0..MAX_REFS {
        let secret = node.get("writeOnly") == Some(&Value::Bool(true))
            || node
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.eq_ignore_ascii_case("password"));
        if secret {
            return ValueKind::Secret;
        }
        let Some(r) = node.get("$ref") else {
            return if super::walk::type_of(root, node) == Some(JsonType::String) {
                ValueKind::PlainString
            } else {
                ValueKind::Other
            };
        };
        let Some(def) = r
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .map(|n| n.replace("~1", "/").replace("~0", "~"))
            .and_then(|n| root.get("$defs")?.get(n))
        else {
            return ValueKind::Other;
        };
        node = def;
    }
    ValueKind::Other
}

/// A name's words joined by `_`, if it is written in plain ASCII (letters, digits, `_`, `-`):
/// the only spelling a recognised shape matches.
fn written(name: &str) -> Option<String> {
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        .then(|| split_words(name).join("_"))
}

/// The recognised shape of `map[at]`, with why; `user_lookup` false leaves that shape out (it
/// is judged by its siblings' shapes).
fn shape_of(map: &[Property<'_>], at: usize, user_lookup: bool) -> Option<(Shape, String)> {
    let p = map.get(at)?;
    if p.value != ValueKind::PlainString {
        return None;
    }
    let name = written(p.name)?;
    let is = |list: &[&str], w: &Option<String>| w.as_deref().is_some_and(|w| list.contains(&w));
    let mut siblings = map
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(i, s)| (i, s, written(s.name)));
    let name = Some(name);
    if is(SESSION_NAMES, &name) {
        return Some((
            Shape::SessionName,
            "a string naming a session (not its id, key or cookie)".to_string(),
        ));
    }
    if is(PAGINATION_TOKENS, &name) {
        let (_, field, _) = siblings.find(|(_, _, w)| is(PAGINATION_FIELDS, w))?;
        return Some((
            Shape::PaginationToken,
            format!("a string beside the pagination field `{}`", field.name),
        ));
    }
    if user_lookup && is(USER_LOOKUPS, &name) {
        if siblings.any(|(i, s, w)| {
            s.value == ValueKind::Secret
                || (credential_word(s.name).is_some() && shape_of(map, i, false).is_none())
                || split_words(s.name)
                    .iter()
                    .any(|w| LOGIN_COMPANION_WORDS.contains(&w.as_str()))
                || is(LOGIN_COMPANION_NAMES, &w)
        }) {
            return None;
        }
        return Some((
            Shape::UserLookup,
            "a plain string with no password-like field beside it".to_string(),
        ));
    }
    None
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

/// A property of a schema document the rule catches by name but accepts as a recognised
/// shape ([`judge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecognisedProperty {
    /// The property, as [`credential_properties`] would list it.
    pub property: CredentialProperty,
    /// Its shape.
    pub shape: Shape,
    /// Why it is that shape.
    pub because: String,
}

/// Every property of the schema document `schema` the rule refuses: its name is a credential
/// word ([`judge`]), wherever it is declared — under `properties`, list `items`, `$defs` (so
/// also what `$ref` reaches), and any other subschema keyword — in document order. A property
/// whose schema carries a valid exemption ([`exemption_reason`]) is not listed (see
/// [`exempted_properties`]), nor one of a recognised shape (see [`recognised_properties`]).
pub fn credential_properties(schema: &Value) -> Vec<CredentialProperty> {
    caught(schema)
        .into_iter()
        .filter_map(|(p, o)| matches!(o, Outcome::Refused).then_some(p))
        .collect()
}

/// The properties [`credential_properties`] would list but for their valid exemption, each
/// with its reason, in document order.
pub fn exempted_properties(schema: &Value) -> Vec<(CredentialProperty, String)> {
    caught(schema)
        .into_iter()
        .filter_map(|(p, o)| match o {
            Outcome::Exempted(reason) => Some((p, reason)),
            _ => None,
        })
        .collect()
}

/// The properties the rule catches by name but accepts as a recognised shape (and that carry
/// no exemption), in document order.
pub fn recognised_properties(schema: &Value) -> Vec<RecognisedProperty> {
    caught(schema)
        .into_iter()
        .filter_map(|(property, o)| match o {
            Outcome::Recognised(shape, because) => Some(RecognisedProperty {
                property,
                shape,
                because,
            }),
            _ => None,
        })
        .collect()
}

/// What becomes of a property the rule catches by name.
enum Outcome {
    Refused,
    /// A valid `x-not-credential`, with its reason (it wins over a recognised shape).
    Exempted(String),
    Recognised(Shape, String),
}

/// Every credential-named property of the document, with what becomes of it.
fn caught(schema: &Value) -> Vec<(CredentialProperty, Outcome)> {
    let mut found = Vec::new();
    each_schema(schema, "", None, 0, &mut |node, at, owner| {
        let Some((name, map)) = owner else {
            return;
        };
        let (word, outcome) = match judge_schema_property(map, name, schema) {
            Verdict::Clear => return,
            Verdict::Credential { word } | Verdict::Recognised { word, .. }
                if exemption_reason(node).is_some() =>
            {
                let reason = exemption_reason(node).unwrap_or_default().to_string();
                (word, Outcome::Exempted(reason))
            }
            Verdict::Credential { word } => (word, Outcome::Refused),
            Verdict::Recognised {
                word,
                shape,
                because,
            } => (word, Outcome::Recognised(shape, because)),
        };
        found.push((
            CredentialProperty {
                pointer: at.to_string(),
                name: name.to_string(),
                word,
            },
            outcome,
        ));
    });
    found
}

/// The exemptions of an input schema, at the payload pointers of the properties they exempt
/// (a `$defs` entry reached from two places gives two pointers): the reviewed ones, with
/// their reasons (only exemptions of names the rule catches count), and the recognised
/// shapes, with a reason naming the shape and its rule (`recognised as a pagination token
/// (input/recognised-pagination-token): a string beside the pagination field `limit``).
pub fn credential_exemptions(schema: &Value) -> Vec<CredentialExemption> {
    let mut out = Vec::new();
    for node in super::visit::nodes(schema) {
        if node.ty != Some(super::walk::JsonType::Object) {
            continue;
        }
        let Some(props) = node.schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        for (name, sub) in props {
            let reason = match judge_schema_property(props, name, schema) {
                Verdict::Clear => continue,
                _ if exemption_reason(sub).is_some() => {
                    exemption_reason(sub).unwrap_or_default().to_string()
                }
                Verdict::Credential { .. } => continue,
                Verdict::Recognised { shape, because, .. } => {
                    format!(
                        "recognised as {} ({}): {because}",
                        shape.what(),
                        shape.rule()
                    )
                }
            };
            let exemption = CredentialExemption {
                pointer: format!("{}/{}", node.pointer, escape(name)),
                reason,
            };
            if !out.contains(&exemption) {
                out.push(exemption);
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
    each_schema(schema, "", None, 0, &mut |node, at, owner| {
        let name = owner.map(|(n, _)| n);
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

/// A property's name and the `properties` map it is declared in (its siblings).
type Owner<'a> = Option<(&'a str, &'a Map<String, Value>)>;

/// Visit every subschema of the document (pre-order) with its pointer and, for a property's
/// schema, the property name and the `properties` map holding it.
fn each_schema<'a>(
    node: &'a Value,
    at: &str,
    owner: Owner<'a>,
    depth: usize,
    visit: &mut dyn FnMut(&'a Value, &str, Owner<'a>),
) {
    let Some(obj) = node.as_object().filter(|_| depth < MAX_DEPTH) else {
        return;
    };
    visit(node, at, owner);
    for (key, value) in obj {
        let here = format!("{at}/{}", escape(key));
        let k = key.as_str();
        if k == "properties" {
            let Some(map) = value.as_object() else {
                continue;
            };
            for (name, sub) in map {
                let pointer = format!("{here}/{}", escape(name));
                each_schema(sub, &pointer, Some((name, map)), depth + 1, visit);
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

    /// The verdicts on every property of an object schema's `properties` map.
    fn verdicts(schema: &Value) -> BTreeMap<String, Verdict> {
        let props = schema["properties"].as_object().expect("properties");
        props
            .keys()
            .map(|n| (n.clone(), judge_schema_property(props, n, schema)))
            .collect()
    }

    fn shape(schema: &Value, name: &str) -> Option<Shape> {
        match verdicts(schema).remove(name) {
            Some(Verdict::Recognised { shape, .. }) => Some(shape),
            _ => None,
        }
    }

    fn refused(schema: &Value, name: &str) -> bool {
        matches!(
            verdicts(schema).remove(name),
            Some(Verdict::Credential { .. })
        )
    }

    fn object(props: Value) -> Value {
        json!({"type": "object", "additionalProperties": false, "properties": props})
    }

    #[test]
    fn a_session_name_is_recognised_in_every_case_style() {
        for name in [
            "session_name",
            "sessionName",
            "SessionName",
            "session-name",
            "SESSION_NAME",
            "session_title",
            "sessionLabel",
            "session_display_name",
        ] {
            let s = object(json!({ name: {"type": "string"} }));
            assert_eq!(shape(&s, name), Some(Shape::SessionName), "{name}");
        }
        // Through a local `$ref`, and as a string enum.
        let s = json!({"type": "object", "properties": {
            "session_name": {"$ref": "#/$defs/N", "description": "the window"},
            "session_title": {"enum": ["a", "b"]}
        }, "$defs": {"N": {"type": "string", "maxLength": 64}}});
        assert_eq!(shape(&s, "session_name"), Some(Shape::SessionName));
        assert_eq!(shape(&s, "session_title"), Some(Shape::SessionName));
    }

    #[test]
    fn what_picks_out_a_session_stays_a_credential() {
        for name in [
            "session",
            "session_id",
            "sessionId",
            "sessionid",
            "session_key",
            "session_token",
            "session_cookie",
            "session_secret",
            "session_names",
            "session_name_token",
            "my_session_name",
            // Other readings of the same letters are refused, not recognised.
            "sess1on_name",
            "s\u{0435}ssion_name",
            "session\u{200b}_name",
            "session.name",
            "session name",
        ] {
            let s = object(json!({ name: {"type": "string"} }));
            assert!(refused(&s, name), "{name}: {:?}", verdicts(&s));
        }
        // Not a plain string: a number, an object, a password, write-only, through `$ref` too.
        for value in [
            json!({"type": "integer"}),
            json!({"type": "object", "additionalProperties": false}),
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "string", "format": "password"}),
            json!({"type": "string", "writeOnly": true}),
            json!({"$ref": "#/$defs/Secret"}),
            json!({"$ref": "#/$defs/Missing"}),
        ] {
            let mut s = object(json!({ "session_name": value.clone() }));
            s["$defs"] = json!({"Secret": {"type": "string", "format": "Password"}});
            assert!(refused(&s, "session_name"), "{value}");
        }
    }

    #[test]
    fn a_pagination_token_is_recognised_beside_a_pagination_field() {
        for token in [
            "next_token",
            "nextToken",
            "NextToken",
            "page_token",
            "pageToken",
            "next_page_token",
            "continuation_token",
            "ContinuationToken",
            "pagination_token",
            "starting_token",
            "cursor_token",
        ] {
            for field in [
                "page",
                "page_size",
                "pageSize",
                "limit",
                "max_results",
                "MaxResults",
                "per_page",
                "cursor",
                "offset",
                "max_items",
            ] {
                let s = object(json!({
                    token: {"type": "string"},
                    field: {"type": "integer"},
                    "query": {"type": "string"}
                }));
                assert_eq!(
                    shape(&s, token),
                    Some(Shape::PaginationToken),
                    "{token} beside {field}"
                );
            }
        }
        let s = object(json!({"next_token": {"type": "string"}, "limit": {"type": "integer"}}));
        assert_eq!(
            verdicts(&s).remove("next_token"),
            Some(Verdict::Recognised {
                word: "token".into(),
                shape: Shape::PaginationToken,
                because: "a string beside the pagination field `limit`".into(),
            })
        );
    }

    #[test]
    fn a_token_without_pagination_or_naming_a_secret_is_refused() {
        // No pagination sibling (`max_tokens` counts tokens, it does not page).
        let s = object(json!({
            "next_token": {"type": "string"},
            "page_token": {"type": "string"},
            "max_tokens": {"type": "integer"},
            "query": {"type": "string"}
        }));
        assert!(refused(&s, "next_token"));
        assert!(refused(&s, "page_token"));
        // The pagination field must be a sibling, not nested elsewhere.
        let s = object(json!({
            "next_token": {"type": "string"},
            "options": {"type": "object", "properties": {"limit": {"type": "integer"}}}
        }));
        assert!(refused(&s, "next_token"));
        // Not a string.
        let s = object(json!({"next_token": {"type": "integer"}, "limit": {"type": "integer"}}));
        assert!(refused(&s, "next_token"));
        let s = object(json!({
            "next_token": {"type": "string", "writeOnly": true},
            "limit": {"type": "integer"}
        }));
        assert!(refused(&s, "next_token"));
        // Tokens that are secrets, whatever their siblings.
        for token in [
            "token",
            "access_token",
            "accessToken",
            "refresh_token",
            "id_token",
            "auth_token",
            "api_token",
            "bearer_token",
            "csrf_token",
            "oauth_token",
            "session_token",
            "nexttoken",
            "next_t0ken",
            "next_tok\u{0435}n",
            "next_token_secret",
            "password",
            "secret",
            "api_key",
            "private_key",
            "otp",
        ] {
            let s = object(json!({
                token: {"type": "string"},
                "page": {"type": "integer"},
                "limit": {"type": "integer"},
                "cursor": {"type": "string"}
            }));
            assert!(refused(&s, token), "{token}: {:?}", verdicts(&s));
        }
    }

    #[test]
    fn a_user_name_to_look_up_is_recognised_without_a_login_form() {
        for name in ["username", "user_name", "userName", "UserName", "login"] {
            let s = object(json!({
                name: {"type": "string", "description": "the GitHub user"},
                "page": {"type": "integer"},
                "sort_key": {"type": "string"}
            }));
            assert_eq!(shape(&s, name), Some(Shape::UserLookup), "{name}");
        }
        // A recognised sibling is not half of a login form.
        let s = object(json!({
            "username": {"type": "string"},
            "next_token": {"type": "string"},
            "per_page": {"type": "integer"},
            "session_name": {"type": "string"}
        }));
        assert_eq!(shape(&s, "username"), Some(Shape::UserLookup));
        assert_eq!(shape(&s, "next_token"), Some(Shape::PaginationToken));
        assert_eq!(shape(&s, "session_name"), Some(Shape::SessionName));
    }

    #[test]
    fn a_user_name_in_a_login_form_is_refused() {
        for (sibling, value) in [
            ("password", json!({"type": "string"})),
            ("passw0rd", json!({"type": "string"})),
            ("pass", json!({"type": "string"})),
            ("user_pass", json!({"type": "string"})),
            ("pword", json!({"type": "string"})),
            ("code", json!({"type": "string"})),
            ("key", json!({"type": "string"})),
            ("otp", json!({"type": "string"})),
            ("pin", json!({"type": "string"})),
            ("token", json!({"type": "string"})),
            ("login", json!({"type": "string"})),
            // A name the rule lets through, marked secret.
            ("phrase", json!({"type": "string", "format": "password"})),
            ("value", json!({"type": "string", "writeOnly": true})),
            // A token with no pagination field: not recognised, so a companion.
            ("next_token", json!({"type": "string"})),
        ] {
            let s = object(json!({"username": {"type": "string"}, sibling: value}));
            assert!(refused(&s, "username"), "beside {sibling}");
        }
        // Not a plain string.
        let s = object(json!({"username": {"type": "string", "format": "password"}}));
        assert!(refused(&s, "username"));
        let s = object(json!({"username": {"type": "array", "items": {"type": "string"}}}));
        assert!(refused(&s, "username"));
        // Other spellings.
        for name in [
            "us3rname",
            "user\u{200b}name",
            "usernames",
            "login_name",
            "my_username",
        ] {
            let s = object(json!({ name: {"type": "string"} }));
            assert!(refused(&s, name), "{name}");
        }
    }

    #[test]
    fn the_document_walk_sorts_caught_properties() {
        let schema = json!({
            "type": "object",
            "properties": {
                "session_name": {"type": "string"},
                "session_id": {"type": "string"},
                "username": {"type": "string", "x-not-credential": "a GitHub user"},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Page"}}
            },
            "$defs": {"Page": {"type": "object", "properties": {
                "next_token": {"type": "string"},
                "limit": {"type": "integer"}
            }}}
        });
        let refused: Vec<String> = credential_properties(&schema)
            .into_iter()
            .map(|p| p.pointer)
            .collect();
        assert_eq!(refused, ["/properties/session_id"]);
        let exempted: Vec<String> = exempted_properties(&schema)
            .into_iter()
            .map(|(p, _)| p.pointer)
            .collect();
        assert_eq!(exempted, ["/properties/username"]);
        let recognised: Vec<(String, Shape)> = recognised_properties(&schema)
            .into_iter()
            .map(|r| (r.property.pointer, r.shape))
            .collect();
        assert_eq!(
            recognised,
            [
                ("/properties/session_name".to_string(), Shape::SessionName),
                (
                    "/$defs/Page/properties/next_token".to_string(),
                    Shape::PaginationToken
                ),
            ]
        );
        // Payload pointers: the reviewed exemption and the recognised shapes, each named.
        let exemptions = credential_exemptions(&schema);
        let at: Vec<&str> = exemptions.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(at, ["/session_name", "/username", "/list/-/next_token"]);
        assert_eq!(exemptions[1].reason, "a GitHub user");
        assert_eq!(
            exemptions[2].reason,
            "recognised as a pagination token (input/recognised-pagination-token): a string \
             beside the pagination field `limit`"
        );
    }
}
