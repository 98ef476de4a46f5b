//! `@approval` permits and `Action::"approve"`: the generated action, the reserved tool id, and
//! what the authorizer decides for a call and for its approver.

use std::path::Path;

use escepine_contract::Principal;
use escepine_policy::authorize::Authorizer;
use escepine_policy::authorize::AWAITING_APPROVAL;
use escepine_policy::cedar;
use escepine_registry::record::ToolRecord;
use escepine_registry::rule::Rule;
use escepine_registry::rules::names::tool_id_problem;
use escepine_registry::testing::RecordBuilder;
use serde_json::json;

fn records() -> Vec<ToolRecord> {
    ["note_write", "page_read"]
        .into_iter()
        .map(|id| {
            RecordBuilder::new(id)
                .source(format!("tools/records/{id}.json"))
                .description(&format!("The {id} tool."))
                .input_schema(json!({
                    "type": "object", "additionalProperties": false,
                    "properties": {"size": {"type": "integer", "minimum": 0, "maximum": 100}},
                    "required": ["size"]
                }))
                .output_schema(json!({"type": "object", "additionalProperties": false}))
                .binary(Path::new("/bin/true"))
                .registered()
        })
        .collect()
}

fn authorizer(policies: &str) -> Authorizer {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.cedar"), policies).unwrap();
    std::fs::write(
        dir.path().join("s.cedarschema"),
        "entity Team;\nentity Agent in [Team];\n",
    )
    .unwrap();
    let records = records();
    let binding = cedar::bind(&records, Some(dir.path())).unwrap_or_else(|d| panic!("{d}"));
    let entities = json!([
        {"uid": {"type": "Team", "id": "reviewers"}, "attrs": {}, "parents": []},
        {"uid": {"type": "Agent", "id": "alice"}, "attrs": {}, "parents": []},
        {"uid": {"type": "Agent", "id": "bob"}, "attrs": {}, "parents": [{"type": "Team", "id": "reviewers"}]}
    ]);
    Authorizer::new(&binding, &records, Some(&entities)).unwrap()
}

const POLICIES: &str = r#"
@id("reads") permit(principal, action == Action::"page_read", resource);
@id("big-writes-wait") @approval("a big write needs a reviewer")
permit(principal, action == Action::"note_write", resource) when { context.input.size > 10 };
@id("small-writes") permit(principal, action == Action::"note_write", resource) when { context.input.size <= 10 };
@id("also-waits") @approval
permit(principal, action == Action::"note_write", resource) when { context.input.size > 50 };
@id("no-huge") forbid(principal, action == Action::"note_write", resource) when { context.input.size > 90 };
@id("reviewers-approve") permit(principal in Team::"reviewers", action == Action::"approve", resource);
"#;

fn bind(policies: &str) -> cedar::Binding {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.cedar"), policies).unwrap();
    cedar::bind(&records(), Some(dir.path())).unwrap_or_else(|d| panic!("{d}"))
}

#[test]
fn the_schema_declares_approve_only_when_the_policies_use_approval() {
    const APPROVE: &str = "action \"approve\" appliesTo {\n  principal: [Agent],\n  resource: [Tool],\n  context: {},\n};";
    // An unconstrained action scope reading the input validates without the action.
    let plain = bind("permit(principal, action, resource) when { context.input.size > 1 };");
    assert!(
        !plain.schema_text.contains(APPROVE),
        "{}",
        plain.schema_text
    );
    assert!(!cedar::generated_schema_text(&records()).contains(APPROVE));
    for uses in [
        "@approval permit(principal, action == Action::\"note_write\", resource);",
        "permit(principal, action == Action::\"approve\", resource);",
        "permit(principal, action in [Action::\"page_read\", Action::\"approve\"], resource);",
    ] {
        let b = bind(uses);
        assert!(
            b.schema_text.contains(APPROVE),
            "{uses}:\n{}",
            b.schema_text
        );
    }
    // With approval in use, such a policy must say it is not about approving.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.cedar"),
        "@approval permit(principal, action == Action::\"note_write\", resource);\n\
         permit(principal, action, resource) when { context.input.size > 1 };",
    )
    .unwrap();
    let d = cedar::bind(&records(), Some(dir.path())).expect_err("context.input is not on approve");
    assert!(d.to_string().contains("Action::\"approve\""), "{d}");
    bind(
        "@approval permit(principal, action == Action::\"note_write\", resource);\n\
         permit(principal, action, resource) when { context has input && context.input.size > 1 };",
    );
}

#[test]
fn approve_is_a_reserved_tool_id() {
    let (rule, message) = tool_id_problem("approve").expect("refused");
    assert_eq!(rule, Rule::ToolIdReserved);
    assert!(message.contains("approves waiting calls"), "{message}");
    assert!(tool_id_problem("approve_note").is_none());
}

#[test]
fn a_call_determined_by_an_approval_permit_waits_and_others_do_not() {
    let a = authorizer(POLICIES);
    let alice = Principal::agent("alice");
    let read = a.authorize(&alice, "page_read", &json!({"size": 1}));
    assert!(read.allowed() && !read.needs_approval());
    assert_eq!(read.as_str(), "allow");

    let small = a.authorize(&alice, "note_write", &json!({"size": 5}));
    assert_eq!((small.as_str(), small.needs_approval()), ("allow", false));

    let big = a.authorize(&alice, "note_write", &json!({"size": 20}));
    assert!(big.allowed() && big.needs_approval());
    assert_eq!(big.as_str(), AWAITING_APPROVAL);
    assert_eq!(big.policy_ids(), ["big-writes-wait"]);
    assert_eq!(big.approval_reasons(), ["a big write needs a reviewer"]);

    // Two determining approval permits: both named, the one without a value gives no reason.
    let bigger = a.authorize(&alice, "note_write", &json!({"size": 60}));
    assert_eq!(bigger.policy_ids(), ["also-waits", "big-writes-wait"]);
    assert_eq!(bigger.approval_reasons(), ["a big write needs a reviewer"]);

    // A forbid still denies: there is nothing to approve.
    let huge = a.authorize(&alice, "note_write", &json!({"size": 95}));
    assert!(!huge.allowed() && !huge.needs_approval());
    assert_eq!(huge.as_str(), "deny");
}

#[test]
fn an_approver_is_who_cedar_permits_approve_on_the_tool() {
    let a = authorizer(POLICIES);
    let bob = a.authorize_approval(&Principal::agent("bob"), "note_write");
    assert!(bob.allowed(), "{bob:?}");
    assert_eq!(bob.policy_ids(), ["reviewers-approve"]);
    let alice = a.authorize_approval(&Principal::agent("alice"), "note_write");
    assert!(!alice.allowed());
    assert!(
        alice.reasons()[0]
            .contains("no policy permits `Agent::\"alice\"` to approve calls of `note_write`"),
        "{:?}",
        alice.reasons()
    );
    let unknown = a.authorize_approval(&Principal::agent("bob"), "nope");
    assert!(!unknown.allowed());

    // Scoped to one tool's resource.
    let scoped = authorizer(
        r#"@id("reads") permit(principal, action == Action::"page_read", resource);
        @id("notes-only") permit(principal in Team::"reviewers", action == Action::"approve", resource == Tool::"note_write");"#,
    );
    let bob_ = Principal::agent("bob");
    assert!(scoped.authorize_approval(&bob_, "note_write").allowed());
    assert!(!scoped.authorize_approval(&bob_, "page_read").allowed());
}
