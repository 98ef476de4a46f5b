//! Property: the policy set sliced per action decides exactly as the whole set.
//!
//! Policies are generated (permit/forbid; principal scopes; action scopes `any`, `==` a tool,
//! `==` a group, `in` a group, `in` a list of tools and groups; resource scopes; conditions on
//! `context.input`, `context.url` and `principal`, some of which fail to evaluate), and so
//! are payloads (single-URL and bulk tools, hosts in several spellings, numbers that overflow
//! or cannot be held). The sliced [`Authorizer::new`] and the unsliced
//! [`Authorizer::unsliced`] must return the same decision, policy ids, reasons and request
//! counts. The policies are not validated, so ill-typed conditions (errors) are covered too.

use std::str::FromStr;
use std::sync::OnceLock;

use crate::support::authorize::{catalog_entities, record, TempCatalog};
use cedar_policy::{PolicyId, PolicySet};
use escepine_contract::Principal;
use escepine_policy::authorize::{Authorizer, Decision};
use escepine_policy::BoundRegistry;
use proptest::prelude::*;
use serde_json::{json, Value};

const TOOLS: [&str; 6] = ["t0", "t1", "t2", "t3", "t4", "t5"];
const GROUPS: [&str; 5] = ["read-only", "supersede", "compensatable", "g1", "g2"];

fn registry() -> &'static BoundRegistry {
    // The registry holds what it loaded; the catalog's directory goes once it is loaded.
    static REGISTRY: OnceLock<BoundRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let single = json!({"type": "object", "additionalProperties": false, "required": ["n"],
                "properties": {"n": {"type": "integer"}, "r": {"type": "number"},
                               "url": {"type": "string", "format": "uri"}}});
        let bulk = json!({"type": "object", "additionalProperties": false, "required": ["n"],
                "properties": {"n": {"type": "integer"}, "r": {"type": "number"},
                               "urls": {"type": "array", "x-authorize-each": true,
                                        "items": {"type": "string", "format": "uri"}}}});
        let records = [
            record("t0", "read-only", &["g1"], single.clone()),
            record("t1", "read-only", &["g1", "g2"], bulk.clone()),
            record("t2", "read-only", &[], single.clone()),
            record("t3", "supersede", &["g2"], single.clone()),
            record("t4", "supersede", &[], bulk),
            record("t5", "read-only", &["g2"], single),
        ];
        let cat = TempCatalog::new(&records, "permit (principal, action, resource);\n");
        cat.load()
    })
}

fn principal_scope() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("principal".to_string()),
        Just("principal == Agent::\"alice\"".to_string()),
        Just("principal in Team::\"editors\"".to_string()),
        Just("principal is Agent".to_string()),
    ]
}

fn action_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(TOOLS.to_vec()),
        prop::sample::select(GROUPS.to_vec())
    ]
    .prop_map(|a| format!("Action::\"{a}\""))
}

fn action_scope() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("action".to_string()),
        action_name().prop_map(|a| format!("action == {a}")),
        action_name().prop_map(|a| format!("action in {a}")),
        prop::collection::vec(action_name(), 1..4)
            .prop_map(|v| format!("action in [{}]", v.join(", "))),
    ]
}

fn resource_scope() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("resource".to_string()),
        1 => prop::sample::select(TOOLS.to_vec()).prop_map(|t| format!("resource == Tool::\"{t}\"")),
    ]
}

fn condition() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        (-5i64..20).prop_map(|k| format!(" when {{ context.input.n > {k} }}")),
        Just(" when { context has url && context.url.host == \"h1.example\" }".to_string()),
        Just(" when { context has url && context.url.host like \"*.h2.example\" }".to_string()),
        Just(" when { context has url && context.url.scheme == \"http\" }".to_string()),
        Just(" unless { context has url }".to_string()),
        Just(" when { context.input.n + 9223372036854775800 > 0 }".to_string()),
        Just(
            " when { context.input has r && context.input.r.greaterThan(decimal(\"0.5\")) }"
                .to_string()
        ),
        // Ill-typed for tools without `url` or `r`: an evaluation error where the scope matches.
        Just(" when { context.url.port == 443 }".to_string()),
        Just(" when { principal == Agent::\"bob\" }".to_string()),
        Just(" when { resource.side_effect_class == \"supersede\" }".to_string()),
    ]
}

fn policy() -> impl Strategy<Value = String> {
    (
        prop::bool::ANY,
        principal_scope(),
        action_scope(),
        resource_scope(),
        condition(),
    )
        .prop_map(|(permit, p, a, r, c)| {
            format!(
                "{} ({p}, {a}, {r}){c};",
                if permit { "permit" } else { "forbid" }
            )
        })
}

fn url() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "https://h1.example/x",
        "https://H1.EXAMPLE./",
        "http://a.h2.example:8080/",
        "https://h2.example/",
        "https://other.example/?h1.example",
        "https://user@h1.example",
        "mailto:x@h1.example",
    ])
    .prop_map(str::to_string)
}

fn call() -> impl Strategy<Value = (String, &'static str, Value)> {
    (
        prop::sample::select(vec!["alice", "bob", "carol"]),
        prop::sample::select(TOOLS.to_vec()),
        prop_oneof![(-3i64..30).boxed(), Just(1000i64).boxed()],
        prop_oneof![
            Just(None),
            Just(Some(json!(0.25))),
            Just(Some(json!(0.75))),
            Just(Some(json!(0.123456)))
        ],
        prop::option::of(url()),
        prop::collection::vec(url(), 0..4),
    )
        .prop_map(|(who, tool, n, r, one, many)| {
            let mut payload = json!({ "n": n });
            if let Some(r) = r {
                payload["r"] = r;
            }
            if matches!(tool, "t1" | "t4") {
                payload["urls"] = json!(many);
            } else if let Some(u) = one {
                payload["url"] = json!(u);
            }
            (who.to_string(), tool, payload)
        })
}

fn policy_set(texts: &[String]) -> PolicySet {
    let mut set = PolicySet::new();
    for (i, text) in texts.iter().enumerate() {
        let p = cedar_policy::Policy::from_str(text).expect("generated policy parses");
        set.add(p.new_id(PolicyId::new(format!("p{i}"))))
            .expect("adds");
    }
    set
}

/// A decision's parts, its reasons sorted (their order follows the slice's policy order).
fn normalised(d: Decision) -> (bool, Vec<String>, Vec<String>, usize) {
    let mut reasons = d.reasons().to_vec();
    reasons.sort();
    (d.allowed(), d.policy_ids().to_vec(), reasons, d.requests())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn sliced_and_unsliced_decide_alike(
        texts in prop::collection::vec(policy(), 0..24),
        calls in prop::collection::vec(call(), 1..8),
    ) {
        let registry = registry();
        let mut binding = registry.cedar().clone();
        binding.policies = policy_set(&texts);
        let entities = catalog_entities();
        let sliced = Authorizer::new(&binding, registry.records(), Some(&entities)).expect("builds");
        let whole = Authorizer::unsliced(&binding, registry.records(), Some(&entities)).expect("builds");
        for (who, tool, payload) in &calls {
            let principal = Principal::agent(who.clone());
            let a = normalised(sliced.authorize(&principal, tool, payload));
            let b = normalised(whole.authorize(&principal, tool, payload));
            prop_assert_eq!(a, b, "tool {} payload {} policies {:#?}", tool, payload, texts);
        }
        for tool in TOOLS {
            prop_assert!(sliced.policy_count(tool) <= whole.policy_count(tool));
        }
    }
}

/// The generator reaches every outcome: allows, forbids, default denies and errors.
#[test]
fn the_generated_space_is_not_trivial() {
    let registry = registry();
    let mut binding = registry.cedar().clone();
    binding.policies = policy_set(&[
        "permit (principal, action in Action::\"g1\", resource);".into(),
        "forbid (principal, action in [Action::\"t1\", Action::\"g2\"], resource) when { context has url && context.url.host == \"h1.example\" };".into(),
        "forbid (principal, action == Action::\"t0\", resource) when { context.input.n + 9223372036854775800 < 0 };".into(),
    ]);
    let a =
        Authorizer::new(&binding, registry.records(), Some(&catalog_entities())).expect("builds");
    let alice = Principal::agent("alice");
    assert!(a.authorize(&alice, "t0", &json!({"n": 1})).allowed());
    let d = a.authorize(&alice, "t0", &json!({"n": 1000}));
    assert!(!d.allowed() && d.policy_ids() == ["p2"], "{d:?}");
    let d = a.authorize(
        &alice,
        "t1",
        &json!({"n": 1, "urls": ["https://x.example", "https://H1.example."]}),
    );
    assert!(
        !d.allowed() && d.policy_ids() == ["p1"] && d.requests() == 3,
        "{d:?}"
    );
    let d = a.authorize(&alice, "t2", &json!({"n": 1}));
    assert!(!d.allowed() && d.policy_ids().is_empty(), "{d:?}");
    assert_eq!(a.policy_count("t0"), Some(2));
    assert_eq!(a.policy_count("t1"), Some(2));
    assert_eq!(a.policy_count("t2"), Some(0));
    assert_eq!(a.policy_count("t3"), Some(1));
}
