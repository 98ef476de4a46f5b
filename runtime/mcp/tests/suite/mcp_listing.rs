//! Which tools `tools/list` shows a principal, decided from the policies alone
//! (`tests/fixtures/mcp/policies`), both ways: the conservative scope analysis always, Cedar's
//! partial evaluation with the feature `mcp-partial-eval` — and the guarantee that matters: a
//! hidden tool is one no request of that principal can be permitted to call.

use escepine_contract::Principal;
use escepine_mcp::listing::{Analysis, Listing, Visibility};
use escepine_policy::authorize::Authorizer;
use serde_json::json;

use escepine_testkit::bins::workspace_root;
use escepine_testkit::mcp::fixture;

fn registry(policies: &str) -> escepine_policy::BoundRegistry {
    escepine_policy::load(
        &escepine_registry::registry::Sources::new()
            .records(fixture("records"))
            .policies(fixture(policies))
            .workspace_root(workspace_root()),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

fn listed(listing: &Listing, who: &str) -> Vec<String> {
    listing
        .visible(&Principal::agent(who))
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_scope_analysis_hides_what_scopes_alone_rule_out() {
    let reg = registry("policies");
    let l = Listing::new(&reg, None)
        .expect("listing")
        .with_analysis(Analysis::Scope);
    // m_publish: `forbid-supersede` has no condition. m_guarded: its forbid for alice and its
    // permit for the auditor are conditional, so the scopes alone cannot rule it out.
    assert_eq!(listed(&l, "alice"), ["m_echo", "m_guarded", "m_note"]);
    assert_eq!(listed(&l, "bob"), ["m_echo", "m_guarded"]);
    assert_eq!(listed(&l, "auditor"), ["m_guarded"]);
    assert_eq!(
        l.visibility(&Principal::agent("alice"), "m_publish"),
        Some(Visibility::Hidden {
            reason: "forbidden unconditionally".into(),
            policy_ids: vec!["forbid-supersede".into()],
        })
    );
    assert!(matches!(
        l.visibility(&Principal::agent("bob"), "m_note"),
        Some(Visibility::Hidden { policy_ids, .. }) if policy_ids.is_empty()
    ));
}

#[cfg(feature = "mcp-partial-eval")]
#[test]
fn partial_evaluation_also_decides_conditions_on_the_principal() {
    let reg = registry("policies");
    let l = Listing::new(&reg, None).expect("listing");
    assert_eq!(
        l.analysis(),
        Analysis::PartialEval,
        "the best analysis is the default"
    );
    assert_eq!(listed(&l, "alice"), ["m_echo", "m_note"]);
    assert_eq!(listed(&l, "bob"), ["m_echo"]);
    assert_eq!(listed(&l, "auditor"), ["m_guarded"]);
    assert_eq!(listed(&l, "carol"), Vec::<String>::new());
    assert_eq!(
        l.visibility(&Principal::agent("alice"), "m_guarded"),
        Some(Visibility::Hidden {
            reason: "forbidden whatever the payload".into(),
            policy_ids: vec!["forbid-guarded-for-alice".into()],
        })
    );
    // A condition on the payload stays open: m_echo is listed, and denied only for its text.
    assert!(l
        .visibility(&Principal::agent("alice"), "m_echo")
        .is_some_and(|v| v.is_listed()));
}

#[cfg(not(feature = "mcp-partial-eval"))]
#[test]
fn without_the_feature_the_scope_analysis_is_the_default() {
    let reg = registry("policies");
    let l = Listing::new(&reg, None).expect("listing");
    assert_eq!(l.analysis(), Analysis::Scope);
    assert_eq!(listed(&l, "alice"), ["m_echo", "m_guarded", "m_note"]);
}

/// Every analysis lists a superset of what partial evaluation lists, and a hidden tool is never
/// callable: no payload of a probe set is allowed by the authorizer the runtime uses.
#[test]
fn a_hidden_tool_is_never_permitted() {
    let reg = registry("policies");
    let authorizer = Authorizer::new(reg.cedar(), reg.records(), None).expect("authorizer");
    let analyses = [
        Analysis::Scope,
        #[cfg(feature = "mcp-partial-eval")]
        Analysis::PartialEval,
    ];
    let payloads = [json!({ "text": "hi" }), json!({ "text": "forbidden" })];
    for analysis in analyses {
        let l = Listing::new(&reg, None)
            .expect("listing")
            .with_analysis(analysis);
        for who in ["alice", "bob", "carol", "auditor"] {
            let p = Principal::agent(who);
            for record in reg.records() {
                let allowed_somewhere = payloads.iter().any(|payload| {
                    authorizer
                        .authorize(&p, record.tool_id(), payload)
                        .allowed()
                });
                let listed = l
                    .visibility(&p, record.tool_id())
                    .expect("known tool")
                    .is_listed();
                assert!(
                    listed || !allowed_somewhere,
                    "{analysis:?}: {} is hidden from {who} but a call is allowed",
                    record.tool_id()
                );
            }
        }
    }
}

#[test]
fn open_policies_list_everything_and_a_foreign_principal_type_nothing() {
    let reg = registry("policies-open");
    let l = Listing::new(&reg, None).expect("listing");
    assert_eq!(
        listed(&l, "anyone"),
        ["m_echo", "m_guarded", "m_note", "m_publish"]
    );
    let robot = Principal {
        entity_type: "Robot".into(),
        id: "r2".into(),
    };
    assert!(
        l.visible(&robot).is_empty(),
        "Robot is not a principal type of any action"
    );
}
