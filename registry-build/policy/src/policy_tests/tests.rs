//! The runner and the loader over a small registry written for the test.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::testing::RegistryBuilder;
use escepine_contract::SideEffectClass;
use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::rule::Rule;
use escepine_registry::testing::RecordBuilder;

fn registry() -> BoundRegistry {
    let fetch = RecordBuilder::new("fetch").input_schema(json!({
        "type": "object", "additionalProperties": false, "required": ["url"],
        "properties": {"url": {"type": "string", "format": "uri"}}}));
    let bulk = RecordBuilder::new("bulk").input_schema(json!({
        "type": "object", "additionalProperties": false, "required": ["urls"],
        "properties": {"urls": {"type": "array", "minItems": 1, "x-authorize-each": true,
                                "items": {"type": "string", "format": "uri"}}}}));
    let publish = RecordBuilder::new("publish")
        .class(SideEffectClass::Supersede)
        .input_schema(json!({
            "type": "object", "additionalProperties": false, "required": ["title"],
            "properties": {"title": {"type": "string", "minLength": 1}}}));
    RegistryBuilder::new()
        .record(fetch)
        .record(bulk)
        .record(publish)
        .cedar_schema("teams", "entity Team;\nentity Agent in [Team];\n")
        .policy(
            "p",
            "@id(\"reads\")\npermit (principal, action in Action::\"read-only\", resource);\n\
             @id(\"no-blocked\")\nforbid (principal, action in Action::\"read-only\", resource)\n\
             when { context has url && context.url.host == \"blocked.example\" };\n\
             @id(\"editors\")\npermit (principal in Team::\"editors\", action == Action::\"publish\", resource);\n",
        )
        .build()
        .expect("the test registry loads")
}

fn editors() -> Value {
    json!([{"uid": {"type": "Team", "id": "editors"}, "attrs": {}, "parents": []},
           {"uid": {"type": "Agent", "id": "ed"}, "attrs": {},
            "parents": [{"type": "Team", "id": "editors"}]}])
}

/// A directory holding `files` (name, JSON text).
fn dir(files: &[(&str, String)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        fs::write(d.path().join(name), text).expect("write");
    }
    d
}

fn cases(cases: Value) -> String {
    json!({ "cases": cases }).to_string()
}

fn case(name: &str, tool: &str, input: Value, expect: &str) -> Value {
    json!({"name": name, "principal": "Agent::\"bot\"", "tool": tool, "input": input,
           "expect": expect})
}

fn files_error(path: &Path) -> Diagnostics {
    match load(&registry(), path) {
        Err(PolicyTestError::Files(d)) => d,
        other => panic!("expected file diagnostics, got {other:?}"),
    }
}

#[test]
fn passing_cases_report_their_count_and_the_determining_policies() {
    let mut publish = case(
        "an editor publishes",
        "publish",
        json!({"title": "t"}),
        "allow",
    );
    publish["principal"] = json!("Agent::\"ed\"");
    publish["entities"] = editors();
    publish["policies"] = json!(["editors"]);
    let d = dir(&[(
        "a.json",
        cases(json!([
            case(
                "a page",
                "fetch",
                json!({"url": "https://ok.example/"}),
                "allow"
            ),
            case(
                "blocked",
                "fetch",
                json!({"url": "https://Blocked.Example./x"}),
                "deny"
            ),
            case(
                "bulk with one blocked",
                "bulk",
                json!({"urls": ["https://ok.example/", "https://blocked.example/"]}),
                "deny"
            ),
            case(
                "no one else publishes",
                "publish",
                json!({"title": "t"}),
                "deny"
            ),
            publish,
        ])),
    )]);
    let report = check(&registry(), d.path()).expect("every case passes");
    assert_eq!(report.cases(), 5);
    assert_eq!(report.summary(), "5 cases passed");
    assert_eq!(
        report
            .determining()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["editors", "no-blocked", "reads"]
    );
}

#[test]
fn every_failure_is_reported_naming_file_and_case() {
    let mut wrong_policies = case(
        "wrong policies",
        "fetch",
        json!({"url": "https://blocked.example/"}),
        "deny",
    );
    wrong_policies["policies"] = json!(["reads"]);
    let d = dir(&[
        (
            "a.json",
            cases(json!([
                case(
                    "expects deny",
                    "fetch",
                    json!({"url": "https://ok.example/"}),
                    "deny"
                ),
                case(
                    "fine",
                    "fetch",
                    json!({"url": "https://ok.example/"}),
                    "allow"
                ),
            ])),
        ),
        (
            "b.json",
            cases(json!([
                case(
                    "bulk expects allow",
                    "bulk",
                    json!({"urls": ["https://ok.example/", "https://blocked.example/"]}),
                    "allow"
                ),
                wrong_policies,
                case("invalid input", "fetch", json!({"url": 7}), "deny"),
            ])),
        ),
    ]);
    let Err(PolicyTestError::Failed(report)) = check(&registry(), d.path()) else {
        panic!("cases fail");
    };
    assert_eq!(report.cases(), 5);
    assert_eq!(report.summary(), "4 of 5 cases failed");
    let lines: Vec<String> = report.failures().iter().map(ToString::to_string).collect();
    let a = d.path().join("a.json").display().to_string();
    let b = d.path().join("b.json").display().to_string();
    assert_eq!(
        lines[0],
        format!("{a}: case \"expects deny\": expected deny, got allow (determining: [reads])")
    );
    assert!(
        lines[1].starts_with(&format!(
            "{b}: case \"bulk expects allow\": expected allow, got deny (determining: [no-blocked]); "
        )) && lines[1].contains("https://blocked.example/"),
        "{}", lines[1]
    );
    assert_eq!(
        lines[2],
        format!(
            "{b}: case \"wrong policies\": expected determining policies [reads], got [no-blocked]"
        )
    );
    // An input the gate refuses fails even though the call would be "denied".
    assert!(matches!(
        report.failures()[3].problem,
        Problem::InputRejected(_)
    ));
    assert!(
        lines[3].contains("case \"invalid input\": the input gate rejects the input")
            && lines[3].contains("/url"),
        "{}",
        lines[3]
    );
    assert!(report.to_string().ends_with("4 of 5 cases failed"));
}

#[test]
fn entities_are_the_cases_own() {
    let mut with = case("with", "publish", json!({"title": "t"}), "allow");
    with["principal"] = json!("Agent::\"ed\"");
    with["entities"] = editors();
    let mut without = case("without", "publish", json!({"title": "t"}), "allow");
    without["principal"] = json!("Agent::\"ed\"");
    let d = dir(&[("a.json", cases(json!([with, without])))]);
    let Err(PolicyTestError::Failed(report)) = check(&registry(), d.path()) else {
        panic!("the case without entities fails");
    };
    assert_eq!(report.failures().len(), 1);
    assert_eq!(report.failures()[0].case, "without");
}

#[test]
fn bad_files_are_errors_at_their_pointer() {
    let ok = case(
        "ok",
        "fetch",
        json!({"url": "https://ok.example/"}),
        "allow",
    );
    let mut unknown = ok.clone();
    unknown["expekt"] = json!("deny");
    let mut principal = ok.clone();
    principal["principal"] = json!("bot");
    let mut tool = ok.clone();
    tool["tool"] = json!("fecth");
    let mut entities = ok.clone();
    entities["name"] = json!("entities");
    entities["entities"] =
        json!([{"uid": {"type": "Robot", "id": "x"}, "attrs": {}, "parents": []}]);
    let mut expect = ok.clone();
    expect["expect"] = json!("maybe");
    let mut flow = ok.clone();
    flow["flow"] = json!({"labels": ["private"], "lables": ["untrusted-content"]});
    let mut calls = ok.clone();
    calls["flow"] = json!({"calls": -1});
    let d = dir(&[
        ("1_syntax.json", "{\"cases\": [".to_string()),
        ("2_unknown.json", cases(json!([ok.clone(), unknown]))),
        ("3_principal.json", cases(json!([principal]))),
        ("4_tool.json", cases(json!([tool]))),
        ("5_duplicate.json", cases(json!([ok.clone(), ok.clone()]))),
        ("6_entities.json", cases(json!([entities]))),
        ("7_expect.json", cases(json!([expect]))),
        ("8_top.json", json!({"cases": [], "extra": 1}).to_string()),
        ("9_flow.json", cases(json!([flow]))),
        ("9_flow_calls.json", cases(json!([calls]))),
    ]);
    let diags = files_error(d.path());
    let found: Vec<(String, Rule, Option<String>)> = diags
        .iter()
        .map(|d| {
            let file = d.file.file_name().map(|f| f.to_string_lossy().into_owned());
            (file.unwrap_or_default(), d.rule, d.pointer.clone())
        })
        .collect();
    let p = |s: &str| Some(s.to_string());
    assert_eq!(
        found,
        [
            ("1_syntax.json".to_string(), Rule::JsonSyntax, None),
            (
                "2_unknown.json".to_string(),
                Rule::PolicyTestShape,
                p("/cases/1/expekt")
            ),
            (
                "3_principal.json".to_string(),
                Rule::PolicyTestPrincipal,
                p("/cases/0/principal")
            ),
            (
                "4_tool.json".to_string(),
                Rule::PolicyTestTool,
                p("/cases/0/tool")
            ),
            (
                "5_duplicate.json".to_string(),
                Rule::PolicyTestName,
                p("/cases/1/name")
            ),
            (
                "6_entities.json".to_string(),
                Rule::PolicyTestEntities,
                p("/cases/0/entities")
            ),
            (
                "7_expect.json".to_string(),
                Rule::PolicyTestShape,
                p("/cases/0/expect")
            ),
            ("8_top.json".to_string(), Rule::PolicyTestShape, p("/extra")),
            (
                "9_flow.json".to_string(),
                Rule::PolicyTestShape,
                p("/cases/0/flow/lables")
            ),
            (
                "9_flow_calls.json".to_string(),
                Rule::PolicyTestShape,
                p("/cases/0/flow/calls")
            ),
        ]
    );
    let rendered = diags.render();
    assert!(rendered.contains("did you mean `fetch`?"), "{rendered}");
    assert!(rendered.contains("unknown field `expekt`"), "{rendered}");
    assert!(rendered.contains("2_unknown.json"), "{rendered}");
}

#[test]
fn a_missing_or_empty_directory_is_an_error() {
    let d = tempfile::tempdir().expect("temp dir");
    assert!(files_error(d.path()).has(Rule::Missing));
    assert!(files_error(&d.path().join("absent")).has(Rule::Missing));
}

#[test]
fn a_case_can_expect_a_call_to_wait_for_approval() {
    let publish = RecordBuilder::new("publish")
        .class(SideEffectClass::Supersede)
        .input_schema(json!({
            "type": "object", "additionalProperties": false, "required": ["title"],
            "properties": {"title": {"type": "string", "minLength": 1}}}));
    let registry = RegistryBuilder::new()
        .record(publish)
        .policy(
            "p",
            "@id(\"publish-waits\")\n@approval(\"a person reads it first\")\n\
             permit (principal, action == Action::\"publish\", resource);\n",
        )
        .build()
        .expect("the test registry loads");
    let waits = case(
        "waits",
        "publish",
        json!({"title": "t"}),
        "awaiting-approval",
    );
    let ok = dir(&[("a.json", cases(json!([waits])))]);
    let report = check(&registry, ok.path()).expect("the case passes");
    assert_eq!(report.cases(), 1);

    let wrong = case(
        "allowed outright",
        "publish",
        json!({"title": "t"}),
        "allow",
    );
    let bad = dir(&[("a.json", cases(json!([wrong])))]);
    let Err(PolicyTestError::Failed(report)) = check(&registry, bad.path()) else {
        panic!("an allow expectation fails on a call that waits");
    };
    let text: Vec<String> = report.failures().iter().map(ToString::to_string).collect();
    assert!(
        text[0].contains("expected allow, got awaiting-approval (determining: [publish-waits])"),
        "{text:?}"
    );
}
