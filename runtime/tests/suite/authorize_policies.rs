//! Cedar authorization with policy sets written for the test: a `forbid` on a class group,
//! IDN hosts, decimal exactness, evaluation errors, and policy ids.

use crate::support::authorize;
use std::fs;

use crate::support::authorize::{
    authorizer, catalog_entities, load, record, workspace, TempCatalog,
};
use escepine_contract::Principal;
use escepine_policy::authorize::Authorizer;
use serde_json::{json, Value};

fn alice() -> Principal {
    Principal::agent("alice")
}

fn url_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["url"],
           "properties": {"url": {"type": "string", "format": "uri"}}})
}

fn measure_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["ratio"],
           "properties": {
               "ratio": {"type": "number"},
               "count": {"type": "integer"},
               "tags": {"type": "array", "items": {"type": "string"}},
               "limits": {"type": "object", "additionalProperties": false,
                          "properties": {"max": {"type": "number"}}}}})
}

fn temp_authorizer(records: &[Value], policies: &str) -> Authorizer {
    let cat = TempCatalog::new(records, policies);
    let registry = cat.load();
    Authorizer::new(
        registry.cedar(),
        registry.records(),
        Some(&catalog_entities()),
    )
    .expect("authorizer builds")
}

#[test]
fn a_forbid_on_a_class_group_denies_the_real_catalog_tools() {
    let dir = tempfile::tempdir().expect("temp dir");
    for entry in fs::read_dir(workspace().join("tools/policies")).expect("policies") {
        let path = entry.expect("entry").path();
        fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    fs::write(
        dir.path().join("freeze.cedar"),
        "@id(\"freeze-compensatable\")\nforbid (principal, action in Action::\"compensatable\", resource);\n\
         @id(\"freeze-read-only\")\nforbid (principal == Agent::\"mallory\", action in Action::\"read-only\", resource);\n",
    )
    .expect("write");
    let registry = load(&workspace().join("tools/records"), dir.path());
    let a = authorizer(&registry);
    // note_publish is compensatable: the editors' permit no longer suffices.
    let d = a.authorize(
        &alice(),
        "note_publish",
        &json!({"title": "t", "body": "b"}),
    );
    assert!(!d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["freeze-compensatable"]);
    // note_retract is supersede: still permitted.
    let d = a.authorize(&alice(), "note_retract", &json!({"note_id": "n1"}));
    assert!(d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["publishing-editors"]);
    // The read-only group in a forbid, against the read-only group's own permit.
    let d = a.authorize(
        &Principal::agent("mallory"),
        "web_search",
        &json!({"query": "q"}),
    );
    assert!(!d.allowed());
    assert_eq!(d.policy_ids(), ["freeze-read-only"]);
    let d = a.authorize(
        &Principal::agent("mallory"),
        "web_fetch_exa",
        &json!({"urls": ["https://a.example.com/"]}),
    );
    assert!(!d.allowed());
    assert_eq!(d.policy_ids(), ["freeze-read-only"]);
    assert_eq!(d.reasons().len(), 2, "the call and its element: {d:?}");
}

#[test]
fn idn_hosts_match_in_every_spelling() {
    let a = temp_authorizer(
        &[record("scrape", "read-only", &["page-read"], url_schema())],
        r#"@id("all") permit (principal, action, resource);
           @id("no-buecher")
           forbid (principal, action in Action::"page-read", resource)
           when { context has url && (context.url.host == "xn--bcher-kva.example" || context.url.host like "*.xn--bcher-kva.example") };
        "#,
    );
    for url in [
        "https://xn--bcher-kva.example/",
        "https://XN--BCHER-KVA.EXAMPLE./",
        "https://bücher.example/",
        "https://BÜCHER.example:443/x",
        "https://www.bücher.example./",
        "https://b%C3%BCcher.example/",
    ] {
        let d = a.authorize(&alice(), "scrape", &json!({ "url": url }));
        assert!(!d.allowed(), "{url}: {d:?}");
        assert_eq!(d.policy_ids(), ["no-buecher"], "{url}");
    }
    for url in [
        "https://bucher.example/",
        "https://xn--bcher-kva.example.org/",
    ] {
        let d = a.authorize(&alice(), "scrape", &json!({ "url": url }));
        assert!(d.allowed(), "{url}: {d:?}");
    }
}

#[test]
fn decimals_are_exact_or_the_call_is_denied() {
    let a = temp_authorizer(
        &[record("measure", "read-only", &[], measure_schema())],
        r#"@id("all") permit (principal, action, resource);
           @id("ratio-cap")
           forbid (principal, action == Action::"measure", resource)
           when { context.input.ratio.greaterThan(decimal("0.5")) };
           @id("max-cap")
           forbid (principal, action == Action::"measure", resource)
           when { context.input has limits && context.input.limits has max &&
                  context.input.limits.max.greaterThanOrEqual(decimal("922337203685477.0")) };
        "#,
    );
    let call = |p: Value| a.authorize(&alice(), "measure", &p);
    for ok in [
        json!({"ratio": 0.4}),
        json!({"ratio": 0.5}),
        json!({"ratio": 0.4999}),
        json!({"ratio": -3}),
        json!({"ratio": 0, "count": 9_007_199_254_740_993_i64, "tags": ["a", "a"]}),
        json!({"ratio": 0.1, "limits": {}}),
        json!({"ratio": 0.1, "limits": {"max": 922337203685476.5_f64}}),
    ] {
        let d = call(ok.clone());
        assert!(d.allowed(), "{ok}: {d:?}");
        assert_eq!(d.policy_ids(), ["all"]);
    }
    for (denied, by) in [
        (json!({"ratio": 0.5001}), "ratio-cap"),
        (json!({"ratio": 1}), "ratio-cap"),
        (
            json!({"ratio": 0, "limits": {"max": 922337203685477_i64}}),
            "max-cap",
        ),
    ] {
        let d = call(denied.clone());
        assert!(!d.allowed(), "{denied}");
        assert_eq!(d.policy_ids(), [by], "{denied}");
    }
    // Never rounded: 0.50001 would round to 0.5000 (allowed); it is refused instead.
    for (inexact, pointer) in [
        (json!({"ratio": 0.50001}), "/ratio"),
        (
            json!({"ratio": 0.1, "limits": {"max": 0.00001}}),
            "/limits/max",
        ),
        (json!({"ratio": 1e300}), "/ratio"),
        (json!({"ratio": 922337203685478_i64}), "/ratio"),
        (json!({"ratio": 0.1, "count": u64::MAX}), "/count"),
    ] {
        let d = call(inexact.clone());
        assert!(!d.allowed(), "{inexact}: {d:?}");
        assert_eq!(d.requests(), 0);
        assert!(d.policy_ids().is_empty());
        assert!(
            d.reasons()[0].contains(&format!("`{pointer}`")),
            "{inexact}: {d:?}"
        );
        assert!(d.reasons()[0].contains("exactly"), "{d:?}");
    }
}

#[test]
fn an_evaluation_error_denies_even_when_cedar_allows() {
    let a = temp_authorizer(
        &[record("measure", "read-only", &[], measure_schema())],
        r#"@id("all") permit (principal, action, resource);
           @id("overflowing-forbid")
           forbid (principal, action == Action::"measure", resource)
           when { context.input has count && context.input.count + 9223372036854775000 < 0 };
        "#,
    );
    // No overflow: the forbid is evaluated and not satisfied.
    let d = a.authorize(&alice(), "measure", &json!({"ratio": 0, "count": 7}));
    assert!(d.allowed(), "{d:?}");
    // Overflow: Cedar skips the erroring forbid and allows through `all`; the call is denied.
    let d = a.authorize(&alice(), "measure", &json!({"ratio": 0, "count": 1000}));
    assert!(!d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["overflowing-forbid"]);
    assert!(
        d.reasons()
            .iter()
            .any(|r| r.contains("overflowing-forbid") && r.contains("overflow")),
        "{d:?}"
    );
}

#[test]
fn policy_ids_are_the_annotations_or_file_and_index() {
    let a = temp_authorizer(
        &[record("reader", "read-only", &[], json!({"type": "object", "additionalProperties": false,
                 "properties": {"q": {"type": "string"}}}))],
        "permit (principal, action == Action::\"reader\", resource);\n\
         @id(\"named\")\npermit (principal in Team::\"editors\", action in Action::\"read-only\", resource);\n\
         forbid (principal == Agent::\"bob\", action, resource) when { context.input has q && context.input.q == \"x\" };\n",
    );
    let d = a.authorize(&alice(), "reader", &json!({"q": "x"}));
    assert!(d.allowed());
    assert_eq!(d.policy_ids(), ["named", "policies.cedar:0"]);
    let d = a.authorize(&Principal::agent("bob"), "reader", &json!({"q": "x"}));
    assert!(!d.allowed());
    assert_eq!(d.policy_ids(), ["policies.cedar:2"]);
    let d = a.authorize(&Principal::agent("bob"), "reader", &json!({}));
    assert!(d.allowed());
    assert_eq!(d.policy_ids(), ["policies.cedar:0"]);
}

#[test]
fn a_tool_with_a_single_url_and_a_bulk_list_authorizes_both() {
    let schema = json!({"type": "object", "additionalProperties": false, "required": ["start"],
        "properties": {
            "start": {"type": "string", "format": "uri"},
            "more": {"type": "array", "x-authorize-each": true,
                     "items": {"type": "string", "format": "uri"}}}});
    let a = temp_authorizer(
        &[record("crawl", "read-only", &["page-read"], schema)],
        r#"@id("all") permit (principal, action, resource);
           @id("no-bad") forbid (principal, action in Action::"page-read", resource)
           when { context has url && context.url.host == "bad.example" };
        "#,
    );
    let d = a.authorize(
        &alice(),
        "crawl",
        &json!({"start": "https://good.example/"}),
    );
    assert!(d.allowed() && d.requests() == 1, "{d:?}");
    let d = a.authorize(&alice(), "crawl", &json!({"start": "https://BAD.example/"}));
    assert!(
        !d.allowed() && d.reasons()[0].starts_with("the call"),
        "{d:?}"
    );
    let d = a.authorize(
        &alice(),
        "crawl",
        &json!({"start": "https://good.example/", "more": ["https://ok.example", "https://bad.example./"]}),
    );
    assert!(!d.allowed() && d.requests() == 3, "{d:?}");
    assert_eq!(d.policy_ids(), ["no-bad"]);
    assert!(d.reasons()[0].contains("element 1 of `/more`"), "{d:?}");
}

#[test]
fn entities_are_validated_against_the_schema() {
    let cat = TempCatalog::new(
        &[record(
            "reader",
            "read-only",
            &[],
            json!({"type": "object", "additionalProperties": false}),
        )],
        "permit (principal, action, resource);\n",
    );
    let registry = cat.load();
    let bad = json!([{"uid": {"type": "Agent", "id": "a"}, "attrs": {"level": 3}, "parents": []}]);
    let e = Authorizer::new(registry.cedar(), registry.records(), Some(&bad)).expect_err("invalid");
    assert!(e.to_string().contains("entities"), "{e}");
    let unknown = json!([{"uid": {"type": "Robot", "id": "r"}, "attrs": {}, "parents": []}]);
    assert!(Authorizer::new(registry.cedar(), registry.records(), Some(&unknown)).is_err());
    assert!(Authorizer::new(registry.cedar(), registry.records(), None).is_ok());
}

#[test]
fn requests_are_validated_only_for_actions_declared_differently_by_the_user() {
    let searcher = json!({"type": "object", "additionalProperties": false, "required": ["query"],
        "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}}});
    let cat = TempCatalog::with_schema(
        &[
            record("searcher", "read-only", &[], searcher.clone()),
            record("plain", "read-only", &[], searcher),
        ],
        "@id(\"reads\") permit (principal, action in Action::\"read-only\", resource);\n",
        "action \"searcher\" in [\"read-only\"] appliesTo {\n  principal: [Agent],\n  resource: [Tool],\n  \
         context: { input: { query: String } },\n};\n",
    );
    let registry = cat.load();
    let a = Authorizer::new(
        registry.cedar(),
        registry.records(),
        Some(&catalog_entities()),
    )
    .expect("authorizer builds");
    assert_eq!(a.validates_requests("plain"), Some(false));
    assert_eq!(a.validates_requests("searcher"), Some(true));
    let d = a.authorize(&alice(), "searcher", &json!({"query": "q"}));
    assert!(d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["reads"]);
    // The user's declaration has no `max_results`: the request does not conform, so it denies.
    let d = a.authorize(
        &alice(),
        "searcher",
        &json!({"query": "q", "max_results": 3}),
    );
    assert!(!d.allowed(), "{d:?}");
    assert!(d.reasons()[0].contains("request cannot be built"), "{d:?}");
    assert!(a
        .authorize(&alice(), "plain", &json!({"query": "q", "max_results": 3}))
        .allowed());
    // The real catalog declares no tool action itself: every request takes the fast path.
    let catalog = authorize::catalog();
    let a = authorizer(&catalog);
    for r in catalog.records() {
        assert_eq!(
            a.validates_requests(r.tool_id()),
            Some(false),
            "{}",
            r.tool_id()
        );
    }
}

#[test]
fn a_marked_list_of_objects_is_authorized_on_each_objects_url() {
    // The URL field has no `format`: its name makes it one, and the list is marked.
    let schema = json!({"type": "object", "additionalProperties": false, "required": ["pages"],
        "properties": {"pages": {"type": "array", "x-authorize-each": true,
            "items": {"$ref": "#/$defs/page"}}},
        "$defs": {"page": {"type": "object", "additionalProperties": false, "required": ["link"],
            "properties": {"link": {"type": "string"}, "title": {"type": "string"}}}}});
    let a = temp_authorizer(
        &[record("pages", "read-only", &["page-read"], schema)],
        r#"@id("all") permit (principal, action, resource);
           @id("no-bad") forbid (principal, action in Action::"page-read", resource)
           when { context has url && context.url.host == "bad.example.com" };
        "#,
    );
    let ok = json!({"pages": [{"link": "https://good.example.com/"}, {"link": "https://ok.example.com/", "title": "t"}]});
    let d = a.authorize(&alice(), "pages", &ok);
    assert!(d.allowed() && d.requests() == 3, "{d:?}");
    let bad = json!({"pages": [{"link": "https://good.example.com/"}, {"link": "https://BAD.example.com./x"}]});
    let d = a.authorize(&alice(), "pages", &bad);
    assert!(!d.allowed(), "{d:?}");
    assert_eq!(d.policy_ids(), ["no-bad"]);
    assert!(d.reasons()[0].contains("element 1 of `/pages`"), "{d:?}");
    // A constrained tool's URL that Cedar cannot judge denies: no scheme, no host.
    let d = a.authorize(
        &alice(),
        "pages",
        &json!({"pages": [{"link": "bad.example.com/x"}]}),
    );
    assert!(!d.allowed(), "{d:?}");
}
