//! The reserved egress words: `authorized-urls` in a sandbox profile (needing the envelope's
//! `public` and a per-URL field), `public` in the envelope, and each refused in the other file.

use std::fs;
use std::path::{Path, PathBuf};

use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::diagnostic::SourceFile;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::record::ToolRecord;
use escepine_registry::registry::check_records;
use escepine_registry::rule::Rule;
use escepine_registry::rules::record::Context;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn base() -> Value {
    let text = fs::read_to_string(fixtures().join("context/valid_base.json")).expect("fixture");
    serde_json::from_str(&text).expect("JSON")
}

fn envelope(v: Value) -> Result<Envelope, Diagnostics> {
    Envelope::parse(&SourceFile::new("deploy/envelope.json", v.to_string()))
}

fn check(record: &Value, envelope: Option<&Envelope>) -> (Vec<ToolRecord>, Diagnostics) {
    let files = [SourceFile::new(
        "records/page_read.json",
        serde_json::to_string_pretty(record).expect("JSON"),
    )];
    let bins = WorkspaceBins::default();
    check_records(
        &files,
        &Context {
            envelope,
            bins: &bins,
        },
    )
}

fn with_egress(egress: Value) -> Value {
    let mut r = base();
    r["sandbox_profile"]["egress"] = egress;
    r
}

/// The one error of `diags`: its rule and pointer.
fn only_error(diags: &Diagnostics) -> (Rule, Option<String>) {
    let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{}", diags.render());
    (errors[0].rule, errors[0].pointer.clone())
}

#[test]
fn authorized_urls_is_a_profile_entry_beside_static_ones() {
    let env = envelope(json!({"egress": ["example.com", "public"]})).expect("an envelope");
    assert!(env.public);
    assert_eq!(env.egress.len(), 1, "`public` is no host entry");
    let (records, diags) = check(
        &with_egress(json!(["example.com:443", "authorized-urls"])),
        Some(&env),
    );
    assert!(!diags.has_errors(), "{}", diags.render());
    let profile = &records[0].sandbox_profile();
    assert!(profile.authorized_urls);
    assert_eq!(profile.egress.len(), 1);
    // The canonical form writes the word back.
    assert_eq!(
        records[0].to_json()["sandbox_profile"]["egress"],
        json!(["example.com:443", "authorized-urls"])
    );
    // Without an envelope, the envelope rules are skipped, as for coverage.
    let (records, diags) = check(&with_egress(json!(["authorized-urls"])), None);
    assert!(
        !diags.has_errors() && records.len() == 1,
        "{}",
        diags.render()
    );
}

#[test]
fn authorized_urls_needs_the_envelopes_public() {
    let env = envelope(json!({"egress": ["example.com"]})).expect("an envelope");
    assert!(!env.public);
    let (records, diags) = check(
        &with_egress(json!(["example.com:443", "authorized-urls"])),
        Some(&env),
    );
    assert!(records.is_empty());
    assert_eq!(
        only_error(&diags),
        (
            Rule::AuthorizedUrlsPublic,
            Some("/sandbox_profile/egress/1".into())
        )
    );
    let rendered = diags.render();
    assert!(
        rendered.contains("page_read.json") && rendered.contains("sandbox/authorized-urls-public"),
        "{rendered}"
    );
}

#[test]
fn authorized_urls_needs_a_per_url_field() {
    let env = envelope(json!({"egress": ["public"]})).expect("an envelope");
    let mut r = with_egress(json!(["authorized-urls"]));
    r["input_schema"] = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "additionalProperties": false,
        "properties": {"query": {"type": "string"}}
    });
    let (records, diags) = check(&r, Some(&env));
    assert!(records.is_empty());
    assert_eq!(
        only_error(&diags),
        (
            Rule::AuthorizedUrlsField,
            Some("/sandbox_profile/egress/0".into())
        )
    );
    // A bulk list marked `x-authorize-each` is a per-URL field.
    r["input_schema"]["properties"] = json!({"urls": {
        "type": "array", "x-authorize-each": true,
        "items": {"type": "string", "format": "uri"}
    }});
    let (records, diags) = check(&r, Some(&env));
    assert!(
        !diags.has_errors() && records.len() == 1,
        "{}",
        diags.render()
    );
}

#[test]
fn each_word_is_refused_in_the_other_file() {
    let env = envelope(json!({"egress": ["public"]})).expect("an envelope");
    let (records, diags) = check(&with_egress(json!(["public"])), Some(&env));
    assert!(records.is_empty());
    assert_eq!(
        only_error(&diags),
        (
            Rule::EgressReservedWord,
            Some("/sandbox_profile/egress/0".into())
        )
    );
    let diags =
        envelope(json!({"egress": ["example.com", "authorized-urls"]})).expect_err("refused");
    assert_eq!(
        only_error(&diags),
        (Rule::EgressReservedWord, Some("/egress/1".into()))
    );
    assert!(diags.render().contains("envelope.json"));
    // Listed twice in a profile: refused as a malformed entry.
    let (_, diags) = check(
        &with_egress(json!(["authorized-urls", "authorized-urls"])),
        Some(&env),
    );
    assert_eq!(
        only_error(&diags),
        (Rule::EgressEntry, Some("/sandbox_profile/egress/1".into()))
    );
}
