//! The credential-free rule at the level of record files: a credential name in another
//! spelling, wherever it sits in the input schema (nested objects, list items, `$defs` reached
//! through `$ref`), is reported with the rule id, the file and the JSON pointer of the property;
//! ordinary names in the same places pass.

use std::fs;
use std::path::{Path, PathBuf};

use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::diagnostic::Severity;
use escepine_registry::diagnostic::SourceFile;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::registry::check_records;
use escepine_registry::rule::Rule;
use escepine_registry::rules::record::Context;
use serde_json::{json, Value};

fn base_record() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/context/valid_base.json");
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Where a property is placed in the input schema, and the pointer it is reported at.
#[derive(Debug, Clone, Copy)]
enum Place {
    Root,
    Nested,
    ListItems,
    DefsThroughRef,
    /// Declared beside a `$ref` (other rules may refuse the sibling too; this one must fire).
    BesideRef,
}

impl Place {
    const ALL: [Place; 4] = [
        Place::Root,
        Place::Nested,
        Place::ListItems,
        Place::DefsThroughRef,
    ];
    const FAILING: [Place; 5] = [
        Place::Root,
        Place::Nested,
        Place::ListItems,
        Place::DefsThroughRef,
        Place::BesideRef,
    ];

    fn put(self, record: &mut Value, name: &str) -> String {
        let schema = &mut record["input_schema"];
        let prop = json!({"type": "string"});
        let token = name.replace('~', "~0").replace('/', "~1");
        match self {
            Place::Root => {
                schema["properties"][name] = prop;
                format!("/input_schema/properties/{token}")
            }
            Place::Nested => {
                schema["properties"]["options"]["properties"][name] = prop;
                format!("/input_schema/properties/options/properties/{token}")
            }
            Place::ListItems => {
                schema["properties"]["entries"] = json!({
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {name: prop}
                    }
                });
                format!("/input_schema/properties/entries/items/properties/{token}")
            }
            Place::DefsThroughRef => {
                schema["$defs"] = json!({
                    "extra": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {name: prop}
                    }
                });
                schema["properties"]["extra"] = json!({"$ref": "#/$defs/extra"});
                format!("/input_schema/$defs/extra/properties/{token}")
            }
            Place::BesideRef => {
                schema["$defs"] = json!({
                    "extra": {"type": "object", "additionalProperties": false}
                });
                schema["properties"]["extra"] = json!({
                    "$ref": "#/$defs/extra",
                    "properties": {name: prop}
                });
                format!("/input_schema/properties/extra/properties/{token}")
            }
        }
    }
}

fn check(name: &str, place: Place) -> (PathBuf, String, Diagnostics) {
    let mut record = base_record();
    let pointer = place.put(&mut record, name);
    let file = PathBuf::from(format!("records/{place:?}.json"));
    let text = serde_json::to_string_pretty(&record).unwrap();
    let bins = WorkspaceBins::default();
    let (_, diags) = check_records(
        &[SourceFile::new(&file, text)],
        &Context {
            envelope: None,
            bins: &bins,
        },
    );
    (file, pointer, diags)
}

/// Credential names in the spellings an attacker reaches for: homoglyphs, invisible splits,
/// compatibility forms, joined words and pairs, qualified keys, one-time codes, digits for
/// letters, other languages.
const MUST_FAIL: &[&str] = &[
    "p\u{0430}ssword",                                                  // Cyrillic a
    "tok\u{0435}n",                                                     // Cyrillic e
    "pass\u{200b}word",                                                 // zero-width space
    "pa\u{00ad}ssword",                                                 // soft hyphen
    "to\u{200d}ken",                                                    // zero-width joiner
    "\u{ff50}\u{ff41}\u{ff53}\u{ff53}\u{ff57}\u{ff4f}\u{ff52}\u{ff44}", // full-width
    "\u{1d18}\u{1d00}ss\u{1d21}\u{1d0f}\u{0280}\u{1d05}",               // small capitals
    "passphrase",
    "pass_phrase",
    "privkey",
    "priv_key",
    "signingKey",
    "encryption_key",
    "hmac-key",
    "consumerKey",
    "ssh_key",
    "subscription_key",
    "otp",
    "totp",
    "mfa_code",
    "2fa",
    "pin",
    "pinCode",
    "passcode",
    "passw0rd",
    "t0ken",
    "s3cret",
    "p@ssword",
    "Passwort",
    "kennwort",
    "mot_de_passe",
    "mdp",
    "contrase\u{00f1}a",
    "clave",
    "senha",
    "palavra-passe",
    "wachtwoord",
    "oauth",
    "sid",
    "csrf",
    "pw",
];

/// Ordinary names, some of which contain a credential word's letters.
const MUST_PASS: &[&str] = &[
    "sort_key",
    "primary_key",
    "max_tokens",
    "keyword",
    "monkey",
    "pinned",
    "spin",
    "opinion",
    "sidebar",
    "passenger",
    "apple",
    "cursor",
];

#[test]
fn credential_names_fail_everywhere_with_rule_file_and_pointer() {
    let mut failures = Vec::new();
    for name in MUST_FAIL {
        for place in Place::FAILING {
            let (file, pointer, diags) = check(name, place);
            let hit = diags.iter().any(|d| {
                d.rule == Rule::CredentialName
                    && d.file == file
                    && d.pointer.as_deref() == Some(pointer.as_str())
            });
            let rendered = diags.render();
            if !hit || !rendered.contains(Rule::CredentialName.id()) {
                failures.push(format!(
                    "{name:?} at {place:?}: no `{}` at {pointer}\n{rendered}",
                    Rule::CredentialName.id()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ordinary_names_pass_everywhere() {
    let mut failures = Vec::new();
    for name in MUST_PASS {
        for place in Place::ALL {
            let (_, _, diags) = check(name, place);
            if !diags.is_empty() {
                failures.push(format!("{name:?} at {place:?}:\n{}", diags.render()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `record` with `name` at `place` and `siblings` declared beside it (in the same `properties`
/// map); the file, the property's pointer, the registered tools and the diagnostics.
fn check_beside(
    name: &str,
    place: Place,
    siblings: Value,
) -> (PathBuf, String, usize, Diagnostics) {
    let mut record = base_record();
    let pointer = place.put(&mut record, name);
    let map = pointer
        .rsplit_once('/')
        .map(|(m, _)| m)
        .expect("a property pointer");
    let props = record
        .pointer_mut(map)
        .and_then(Value::as_object_mut)
        .expect("the properties map");
    for (k, v) in siblings.as_object().expect("siblings").clone() {
        props.insert(k, v);
    }
    let file = PathBuf::from(format!("records/{place:?}.json"));
    let text = serde_json::to_string_pretty(&record).unwrap();
    let bins = WorkspaceBins::default();
    let (records, diags) = check_records(
        &[SourceFile::new(&file, text)],
        &Context {
            envelope: None,
            bins: &bins,
        },
    );
    (file, pointer, records.len(), diags)
}

/// The recognised non-credential shapes, each with the siblings it needs and its rule.
fn recognised_cases() -> Vec<(&'static str, Value, Rule)> {
    vec![
        ("session_name", json!({}), Rule::RecognisedSessionName),
        ("sessionTitle", json!({}), Rule::RecognisedSessionName),
        (
            "next_token",
            json!({"limit": {"type": "integer"}}),
            Rule::RecognisedPaginationToken,
        ),
        (
            "pageToken",
            json!({"pageSize": {"type": "integer"}}),
            Rule::RecognisedPaginationToken,
        ),
        (
            "ContinuationToken",
            json!({"MaxResults": {"type": "integer"}}),
            Rule::RecognisedPaginationToken,
        ),
        (
            "username",
            json!({"per_page": {"type": "integer"}}),
            Rule::RecognisedUserLookup,
        ),
    ]
}

#[test]
fn recognised_shapes_register_everywhere_with_a_note_naming_the_pointer_and_the_shape() {
    let mut failures = Vec::new();
    for (name, siblings, rule) in recognised_cases() {
        for place in Place::ALL {
            let (file, pointer, registered, diags) = check_beside(name, place, siblings.clone());
            let rendered = diags.render();
            let notes: Vec<_> = diags.iter().collect();
            let ok = registered == 1
                && !diags.has_errors()
                && notes.len() == 1
                && notes[0].rule == rule
                && notes[0].severity == Severity::Note
                && notes[0].file == file
                && notes[0].pointer.as_deref() == Some(pointer.as_str())
                && notes[0].message.contains(&format!("`{name}`"))
                && notes[0].message.contains("recognised as")
                && rendered.contains(rule.id());
            if !ok {
                failures.push(format!(
                    "{name:?} at {place:?}: expected one `{}` note at {pointer}, {registered} \
                     registered\n{rendered}",
                    rule.id()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn near_misses_of_the_recognised_shapes_fail_everywhere() {
    let cases: Vec<(&str, Value)> = vec![
        ("session", json!({})),
        ("session_id", json!({})),
        ("sessionId", json!({})),
        ("session_key", json!({})),
        ("session_token", json!({"limit": {"type": "integer"}})),
        ("sess1on_name", json!({})),
        ("s\u{0435}ssion_name", json!({})),
        ("access_token", json!({"page": {"type": "integer"}})),
        ("refresh_token", json!({"cursor": {"type": "string"}})),
        ("bearer_token", json!({"limit": {"type": "integer"}})),
        ("next_token", json!({})),
        ("next_token", json!({"max_tokens": {"type": "integer"}})),
        ("page_token", json!({"query": {"type": "string"}})),
        (
            "username",
            json!({"password": {"type": "string", "x-not-credential": "x"}}),
        ),
        ("username", json!({"pass": {"type": "string"}})),
        (
            "username",
            json!({"secret_value": {"type": "string", "writeOnly": true}}),
        ),
    ];
    let mut failures = Vec::new();
    for (name, siblings) in cases {
        for place in Place::ALL {
            let (file, pointer, registered, diags) = check_beside(name, place, siblings.clone());
            let hit = diags.iter().any(|d| {
                d.rule == Rule::CredentialName
                    && d.file == file
                    && d.pointer.as_deref() == Some(pointer.as_str())
            });
            if !hit || registered != 0 {
                failures.push(format!(
                    "{name:?} beside {siblings} at {place:?}: no `{}` at {pointer}\n{}",
                    Rule::CredentialName.id(),
                    diags.render()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A `next_token` typed as an integer is not a pagination token's shape.
#[test]
fn a_pagination_token_must_be_a_string() {
    let mut record = base_record();
    record["input_schema"]["properties"]["next_token"] = json!({"type": "integer"});
    record["input_schema"]["properties"]["limit"] = json!({"type": "integer"});
    let bins = WorkspaceBins::default();
    let (records, diags) = check_records(
        &[SourceFile::new(
            "records/int.json",
            serde_json::to_string_pretty(&record).unwrap(),
        )],
        &Context {
            envelope: None,
            bins: &bins,
        },
    );
    assert!(records.is_empty());
    assert!(diags.has(Rule::CredentialName), "{}", diags.render());
}
