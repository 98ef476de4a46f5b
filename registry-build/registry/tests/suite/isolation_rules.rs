//! Isolation tiers in records (`sandbox_profile.isolation`) and the envelope's `isolation` rule:
//! what registers, what reads back, and what the envelope refuses.

use escepine_contract::{Isolation, SideEffectClass};
use escepine_registry::diagnostic::{Diagnostics, SourceFile};
use escepine_registry::endpoint::WorkspaceBins;
use escepine_registry::envelope::Envelope;
use escepine_registry::record::ToolRecord;
use escepine_registry::registry::check_records;
use escepine_registry::rule::Rule;
use escepine_registry::rules::record::Context;
use escepine_registry::testing::RecordBuilder;
use serde_json::{json, Value};

fn envelope(v: Value) -> Result<Envelope, Diagnostics> {
    Envelope::parse(&SourceFile::new("deploy/envelope.json", v.to_string()))
}

/// `builder`'s record checked against `env`, as `escepine check` does.
fn check(builder: &RecordBuilder, env: &Envelope) -> (Vec<ToolRecord>, Diagnostics) {
    let bins = WorkspaceBins {
        names: builder.workspace_bins().clone(),
        ..WorkspaceBins::default()
    };
    check_records(
        &[builder.to_source()],
        &Context {
            envelope: Some(env),
            bins: &bins,
        },
    )
}

fn rules_of(d: &Diagnostics) -> Vec<(Rule, String)> {
    d.iter()
        .map(|d| (d.rule, d.pointer.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn a_gvisor_record_registers_and_reads_back_and_namespaces_is_the_default() {
    let rec = RecordBuilder::new("untrusted")
        .isolation(Isolation::Gvisor)
        .registered();
    assert_eq!(rec.sandbox_profile().isolation, Isolation::Gvisor);
    assert_eq!(rec.to_json()["sandbox_profile"]["isolation"], "gvisor");
    let plain = RecordBuilder::new("plain").registered();
    assert_eq!(plain.sandbox_profile().isolation, Isolation::Namespaces);
    assert!(plain.to_json()["sandbox_profile"]
        .get("isolation")
        .is_none());
}

#[test]
fn the_envelope_requires_a_tier_by_class_by_group_or_for_every_tool() {
    let env = envelope(json!({ "egress": [], "isolation": {
        "min": "gvisor", "for": ["compensatable", "untrusted-code"] } }))
    .expect("envelope");
    let rule = env.isolation.as_ref().expect("the rule");
    assert_eq!(rule.min, Isolation::Gvisor);
    // By action group: refused on namespaces (written or by default), admitted on gvisor.
    for explicit in [true, false] {
        let mut b = RecordBuilder::new("runs_code").action_groups(["untrusted-code"]);
        if explicit {
            b = b.isolation(Isolation::Namespaces);
        }
        let (records, diags) = check(&b, &env);
        assert!(records.is_empty());
        assert_eq!(
            rules_of(&diags),
            [(
                Rule::IsolationEnvelope,
                "/sandbox_profile/isolation".to_string()
            )],
            "{}",
            diags.render()
        );
        let d = diags.iter().next().expect("one diagnostic");
        assert!(d.file.ends_with("runs_code.json"), "{}", d.file.display());
        assert!(
            d.message.contains("deploy/envelope.json")
                && d.message.contains("action group `untrusted-code`")
                && d.message.contains("`gvisor`"),
            "{}",
            d.message
        );
    }
    let b = RecordBuilder::new("runs_code")
        .action_groups(["untrusted-code"])
        .isolation(Isolation::Gvisor);
    let (records, diags) = check(&b, &env);
    assert!(!diags.has_errors(), "{}", diags.render());
    assert_eq!(records.len(), 1);
    // By side-effect class.
    let b = RecordBuilder::new("thing_create")
        .class(SideEffectClass::Compensatable)
        .compensation("thing_delete", [("id", "/id")]);
    let (_, diags) = check(&b, &env);
    assert!(
        diags.iter().any(|d| d.rule == Rule::IsolationEnvelope
            && d.message.contains("side-effect class `compensatable`")),
        "{}",
        diags.render()
    );
    // A read-only tool in no listed group may stay on namespaces.
    let (records, diags) = check(&RecordBuilder::new("page_read"), &env);
    assert!(!diags.has_errors(), "{}", diags.render());
    assert_eq!(records.len(), 1);
    // `*`: every tool.
    let all = envelope(json!({ "egress": [], "isolation": { "min": "gvisor", "for": ["*"] } }))
        .expect("envelope");
    let (_, diags) = check(&RecordBuilder::new("page_read"), &all);
    assert!(
        diags
            .iter()
            .any(|d| d.rule == Rule::IsolationEnvelope && d.message.contains("every tool")),
        "{}",
        diags.render()
    );
    // A minimum of `namespaces` admits both tiers.
    let weak =
        envelope(json!({ "egress": [], "isolation": { "min": "namespaces", "for": ["*"] } }))
            .expect("envelope");
    let (_, diags) = check(&RecordBuilder::new("page_read"), &weak);
    assert!(!diags.has_errors(), "{}", diags.render());
}

#[test]
fn an_unknown_tier_is_refused_in_a_record() {
    let d = RecordBuilder::new("vm")
        .field(
            "sandbox_profile",
            json!({"egress": [], "filesystem": "workspace", "isolation": "microvm"}),
        )
        .build()
        .expect_err("refused");
    assert_eq!(
        rules_of(&d),
        [(Rule::Isolation, "/sandbox_profile/isolation".to_string())],
        "{}",
        d.render()
    );
    assert!(d.render().contains("namespaces, gvisor"), "{}", d.render());
}

#[test]
fn the_envelope_refuses_a_malformed_isolation_rule() {
    for (isolation, pointer) in [
        (json!("gvisor"), "/isolation"),
        (json!({ "min": "vm", "for": ["*"] }), "/isolation/min"),
        (json!({ "for": ["*"] }), "/isolation"),
        (json!({ "min": "gvisor" }), "/isolation"),
        (json!({ "min": "gvisor", "for": [] }), "/isolation/for"),
        (
            json!({ "min": "gvisor", "for": ["a", "a"] }),
            "/isolation/for/1",
        ),
        (json!({ "min": "gvisor", "for": [""] }), "/isolation/for/0"),
        (json!({ "min": "gvisor", "for": [3] }), "/isolation/for/0"),
    ] {
        let diags = envelope(json!({ "egress": [], "isolation": isolation }))
            .expect_err(&format!("{isolation} refused"));
        assert!(
            rules_of(&diags).contains(&(Rule::EnvelopeIsolation, pointer.to_string())),
            "{isolation}: {}",
            diags.render()
        );
    }
    let diags = envelope(json!({ "egress": [], "isolation": {
        "min": "gvisor", "for": ["*"], "max": "gvisor" } }))
    .expect_err("closed");
    assert!(
        diags
            .iter()
            .any(|d| d.pointer.as_deref() == Some("/isolation/max")),
        "{}",
        diags.render()
    );
}
