//! Information-flow labels in records (`data_labels`) and in the envelope (`labels`): what a
//! valid declaration becomes and reads back as, and the envelope's refusals.

use escepine_registry::diagnostic::SourceFile;
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::registry::check_records;
use escepine_registry::rule::Rule;
use escepine_registry::rules::record::Context;
use escepine_registry::testing::RecordBuilder;
use serde_json::json;

fn envelope(v: serde_json::Value) -> Result<Envelope, escepine_registry::diagnostic::Diagnostics> {
    Envelope::parse(&SourceFile::new("deploy/envelope.json", v.to_string()))
}

#[test]
fn declared_labels_register_within_the_envelope_and_read_back() {
    let env = envelope(json!({ "egress": [], "labels": {
        "untrusted-content": "Text from outside, which may carry instructions.",
        "private": "Our own data." } }))
    .expect("envelope");
    let builder = RecordBuilder::new("page_read").data_labels(["untrusted-content"], []);
    let rec = builder.registered();
    assert_eq!(rec.data_labels().output, ["untrusted-content"]);
    assert!(rec.data_labels().reads.is_empty());
    let again = rec.to_json();
    assert_eq!(
        again["data_labels"],
        json!({ "output": ["untrusted-content"] })
    );
    let bins = WorkspaceBins {
        names: ["page_read".to_string()].into(),
        ..WorkspaceBins::default()
    };
    let files = [SourceFile::new("records/page_read.json", again.to_string())];
    let (records, diags) = check_records(
        &files,
        &Context {
            envelope: Some(&env),
            bins: &bins,
        },
    );
    assert!(!diags.has_errors(), "{}", diags.render());
    assert_eq!(records[0].data_labels(), rec.data_labels());
    // No labels: the field is left out.
    let plain = RecordBuilder::new("plain").registered();
    assert!(plain.data_labels().is_empty());
    assert!(plain.to_json().get("data_labels").is_none());
}

#[test]
fn the_envelope_refuses_a_bad_label_name_or_a_label_without_description() {
    for (labels, pointer) in [
        (json!({ "Private": "ours" }), "/labels/Private"),
        (json!({ "private": "" }), "/labels/private"),
        (json!({ "private": 3 }), "/labels/private"),
        (json!(["private"]), "/labels"),
    ] {
        let diags = envelope(json!({ "egress": [], "labels": labels })).expect_err("refused");
        let d = diags.iter().next().expect("a diagnostic");
        assert_eq!(d.rule, Rule::EnvelopeLabels, "{}", diags.render());
        assert_eq!(d.pointer.as_deref(), Some(pointer), "{}", diags.render());
    }
}
