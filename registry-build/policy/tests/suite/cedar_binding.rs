//! The Cedar binding end to end: the generated schema, strict validation of the catalog's
//! policies and of one rejecting fixture per kind of mistake, and real authorization requests
//! showing that one `forbid` on the `page-read` group covers the single-URL tool and the bulk
//! tool alike.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, EntityUid, Request, Schema, SchemaFragment,
};
use escepine_contract::{RetryPolicy, SideEffectClass};
use escepine_policy::cedar;
use escepine_policy::cedar::ActionInfo;
use escepine_policy::cedar::Binding;
use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::record::ToolRecord;
use escepine_registry::rule::Rule;
use escepine_registry::testing::RecordBuilder;
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cedar")
}

fn catalog_policies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/policies")
}

fn builder(
    id: &str,
    class: SideEffectClass,
    groups: &[&str],
    properties: Value,
    required: &[&str],
) -> RecordBuilder {
    let builder = RecordBuilder::new(id)
        .source(format!("tools/records/{id}.json"))
        .description(&format!("The {id} tool."))
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "required": required,
            "properties": properties,
        }))
        .output_schema(json!({"type": "object", "additionalProperties": false}))
        .action_groups(groups.iter().copied())
        .class(class)
        .retry(RetryPolicy {
            max_attempts: 2,
            backoff_ms: 100,
        })
        .binary(Path::new("/bin/true"));
    if class == SideEffectClass::Compensatable {
        builder.compensation("note_retract", [("note_id", "/output/note_id")])
    } else {
        builder
    }
}

fn record(
    id: &str,
    class: SideEffectClass,
    groups: &[&str],
    properties: Value,
    required: &[&str],
) -> ToolRecord {
    builder(id, class, groups, properties, required).registered()
}

/// The catalog's tools, as `tools/records` declares them (only what the Cedar binding reads).
fn catalog() -> Vec<ToolRecord> {
    use SideEffectClass::*;
    let uri = json!({"type": "string", "format": "uri", "maxLength": 2048});
    vec![
        builder(
            "web_search",
            ReadOnly,
            &[],
            json!({"query": {"type": "string"}, "max_results": {"type": "integer", "minimum": 1}}),
            &["query"],
        ),
        builder(
            "tavily_search",
            ReadOnly,
            &[],
            json!({"query": {"type": "string"}, "max_results": {"type": "integer"},
                   "search_depth": {"type": "string", "enum": ["basic", "advanced"]}}),
            &["query"],
        ),
        builder(
            "tavily_crawl",
            ReadOnly,
            &["page-read"],
            json!({"url": uri, "max_results": {"type": "integer"},
                   "max_depth": {"type": "integer"}}),
            &["url"],
        ),
        builder(
            "firecrawl_scrape",
            ReadOnly,
            &["page-read"],
            json!({"url": uri}),
            &["url"],
        ),
        builder(
            "web_fetch_exa",
            ReadOnly,
            &["page-read"],
            json!({"urls": {"type": "array", "minItems": 1, "maxItems": 20,
                            "x-authorize-each": true, "items": uri}}),
            &["urls"],
        ),
        {
            let b = builder(
                "deliverable_assemble",
                Supersede,
                &[],
                json!({"title": {"type": "string"}, "format": {"enum": ["markdown", "html", "json"]},
                       "score": {"type": "number"},
                       "sources": {"type": "array", "items": {"$ref": "#/$defs/source"}}}),
                &["title", "format", "sources"],
            );
            let mut schema = b.to_json()["input_schema"].clone();
            schema["$defs"] = json!({"source": {
                "type": "object", "additionalProperties": false, "required": ["url"],
                "properties": {"url": uri, "ledger_entry": {"type": "string"}}}});
            b.input_schema(schema)
        },
        builder(
            "note_publish",
            Compensatable,
            &[],
            json!({"title": {"type": "string"}, "body": {"type": "string"}}),
            &["title", "body"],
        ),
        builder(
            "url_normalize",
            ReadOnly,
            &[],
            json!({"url": uri, "drop_query": {"type": "boolean"}}),
            &["url"],
        ),
        builder(
            "note_retract",
            Supersede,
            &[],
            json!({"note_id": {"type": "string"}}),
            &["note_id"],
        ),
    ]
    .into_iter()
    .map(|b| b.registered())
    .collect()
}

fn bind_dir(dir: &Path) -> Result<Binding, Diagnostics> {
    cedar::bind(&catalog(), Some(dir))
}

fn expect_err(dir: &Path) -> Diagnostics {
    match bind_dir(dir) {
        Ok(b) => panic!("{} should be rejected; ids {:?}", dir.display(), ids(&b)),
        Err(d) => d,
    }
}

fn ids(b: &Binding) -> BTreeSet<String> {
    b.policies.policies().map(|p| p.id().to_string()).collect()
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The generated schema

#[test]
fn generated_schema_parses_and_has_the_model() {
    let text = cedar::generated_schema_text(&catalog());
    let (_schema, _) = Schema::from_cedarschema_str(&text).unwrap_or_else(|e| {
        panic!("generated schema does not parse: {e:?}\n{text}");
    });
    for line in [
        "entity Agent;",
        "entity Tool = {",
        "action \"read-only\", \"compensatable\", \"supersede\";",
        "action \"page-read\";",
        "action \"firecrawl_scrape\" in [\"read-only\", \"page-read\"] appliesTo {",
        "action \"note_publish\" in [\"compensatable\"] appliesTo {",
        "      urls: Set<String>,",
        "    url?: {",
        "      score?: __cedar::decimal,",
        "      sources: Set<{",
        "      search_depth?: String,",
        "      max_results?: Long,",
    ] {
        assert!(text.contains(line), "missing `{line}` in\n{text}");
    }
    // The single-URL tool always carries `url`; the bulk tool only in per-element requests.
    let scrape = &text[text.find("action \"firecrawl_scrape\"").expect("scrape")..];
    let scrape = &scrape[..scrape.find("};").expect("end")];
    assert!(scrape.contains("\n    url: {"), "{scrape}");
    let web_search = &text[text.find("action \"web_search\"").expect("web_search")..];
    let web_search = &web_search[..web_search.find("};").expect("end")];
    assert!(!web_search.contains("url"), "{web_search}");
    // Deterministic, whatever the order of the records.
    let mut reversed = catalog();
    reversed.reverse();
    assert_eq!(cedar::generated_schema_text(&reversed), text);
}

#[test]
fn actions_list_groups_then_tools() {
    let actions = cedar::actions(&catalog());
    let group = |id: &str| ActionInfo {
        id: id.to_string(),
        is_group: true,
        groups: Vec::new(),
    };
    assert_eq!(
        actions[..4],
        [
            group("read-only"),
            group("compensatable"),
            group("supersede"),
            group("page-read")
        ]
    );
    let tools: Vec<&str> = actions[4..].iter().map(|a| a.id.as_str()).collect();
    assert_eq!(
        tools,
        [
            "deliverable_assemble",
            "firecrawl_scrape",
            "note_publish",
            "note_retract",
            "tavily_crawl",
            "tavily_search",
            "url_normalize",
            "web_fetch_exa",
            "web_search"
        ]
    );
    let fetch = actions
        .iter()
        .find(|a| a.id == "web_fetch_exa")
        .expect("web_fetch_exa");
    assert!(!fetch.is_group);
    assert_eq!(fetch.groups, ["read-only", "page-read"]);
}

#[test]
fn recursive_input_schema_is_refused_at_registration() {
    // The Cedar generator refuses one too (its unit tests): no record reaches it.
    let diags = builder("tree_walk", SideEffectClass::ReadOnly, &[], json!({}), &[])
        .input_schema(json!({"type": "object", "additionalProperties": false,
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "additionalProperties": false,
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}))
        .build()
        .expect_err("a recursive schema is outside the subset");
    let d = diags.iter().next().expect("one diagnostic");
    assert_eq!(d.rule, Rule::SchemaRef);
    assert_eq!(d.file, PathBuf::from("tools/records/tree_walk.json"));
    assert_eq!(d.pointer.as_deref(), Some("/input_schema/$defs/Node"));
}

#[test]
fn without_policies_the_binding_is_the_generated_schema() {
    let b = cedar::bind(&catalog(), None).expect("binds");
    assert_eq!(b.policies.policies().count(), 0);
    assert_eq!(b.schema_text, cedar::generated_schema_text(&catalog()));
    let actions = b.actions();
    assert!(actions.iter().any(|a| a.id == "page-read" && a.is_group));
    assert!(actions.iter().any(|a| a.id == "firecrawl_scrape"
        && !a.is_group
        && a.groups == ["page-read", "read-only"]));
}

#[test]
fn a_missing_policies_directory_is_reported() {
    let d = expect_err(&fixtures().join("no-such-dir"));
    assert!(d.has(Rule::Missing), "{d}");
}

// ---------------------------------------------------------------------------------------------
// Policies that pass

#[test]
fn the_catalog_policies_validate_strictly() {
    let b = bind_dir(&catalog_policies()).unwrap_or_else(|d| panic!("{}", d.render()));
    assert_eq!(
        ids(&b),
        [
            "bulk-fetch-https-only",
            "bulk-fetch-no-internal-addresses",
            "bulk-fetch-no-internal-hosts",
            "flow-reviewers-approve",
            "flow-reviewers-declassify",
            "flow-trifecta-new-origin",
            "page-read-no-linkedin",
            "publishing-editors",
            "read-only-tools",
            "url-normalize-web-only"
        ]
        .into_iter()
        .map(String::from)
        .collect()
    );
    assert!(b.schema_text.contains("entity Agent in [Team];"));
    assert!(!b.schema_text.contains("entity Agent;"));
    assert!(b.warnings.is_empty(), "{:?}", b.warnings);
    let origin = b.origin("page-read-no-linkedin").expect("origin");
    assert_eq!(file_name(&origin.file), "page_read.cedar");
    assert_eq!(origin.index, 0);
}

#[test]
fn the_design_forbid_and_unannotated_ids_are_accepted() {
    let b = bind_dir(&fixtures().join("accept")).unwrap_or_else(|d| panic!("{}", d.render()));
    let ids = ids(&b);
    for id in [
        "page-read-no-linkedin",
        "page_read.cedar:1",
        "page_read.cedar:2",
        "page_read.cedar:3",
    ] {
        assert!(ids.contains(id), "{id} not in {ids:?}");
    }
    // The user's `Agent` (with an attribute) replaced the generated one.
    assert!(b.schema_text.contains("\"display-name\"?: String"));
}

#[test]
fn a_user_declared_tool_action_replaces_the_generated_one() {
    let b = bind_dir(&fixtures().join("accept_user_action"))
        .unwrap_or_else(|d| panic!("{}", d.render()));
    assert!(b
        .schema_text
        .contains("its action is declared in the user's .cedarschema"));
    let search = b
        .actions()
        .into_iter()
        .find(|a| a.id == "web_search")
        .expect("web_search");
    assert_eq!(search.groups, ["read-only"]);
}

#[test]
fn the_real_catalog_loads_with_its_policies() {
    // End to end over `tools/records` (written beside this crate) and `tools/policies`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sources = escepine_registry::registry::Sources::new()
        .records(root.join("tools/records"))
        .policies(root.join("tools/policies"))
        .workspace_root(&root);
    let registry = escepine_policy::load(&sources).unwrap_or_else(|d| panic!("{}", d.render()));
    assert!(registry.cedar().origin("page-read-no-linkedin").is_some());
    assert!(
        registry.cedar().warnings.is_empty(),
        "{:?}",
        registry.cedar().warnings
    );
}

// ---------------------------------------------------------------------------------------------
// Policies that are rejected: the right rule, the file and the line

fn assert_one(dir: &str, rule: Rule, file: &str, line: usize) {
    let diags = expect_err(&fixtures().join("reject").join(dir));
    let found = diags.iter().find(|d| d.rule == rule).unwrap_or_else(|| {
        panic!("{dir}: no `{rule}` in\n{}", diags.render());
    });
    assert_eq!(file_name(&found.file), file, "{dir}: {found}");
    assert_eq!(found.line_col.map(|(l, _)| l), Some(line), "{dir}: {found}");
    let rendered = found.render();
    assert!(rendered.contains(file), "{rendered}");
    assert!(rendered.contains(rule.id()), "{rendered}");
}

#[test]
fn like_on_a_set_is_rejected() {
    assert_one("like_on_set", Rule::PolicyValidation, "bulk.cedar", 3);
    let d = expect_err(&fixtures().join("reject/like_on_set"));
    let msg = &d.iter().next().expect("one").message;
    assert!(
        msg.contains("Set<String>") && msg.contains("bulk-like-on-set"),
        "{msg}"
    );
}

#[test]
fn an_unknown_action_is_rejected() {
    assert_one("unknown_action", Rule::PolicyValidation, "actions.cedar", 3);
}

#[test]
fn an_unknown_attribute_is_rejected() {
    assert_one(
        "unknown_attribute",
        Rule::PolicyValidation,
        "attrs.cedar",
        3,
    );
}

#[test]
fn a_type_mismatch_is_rejected() {
    assert_one("type_mismatch", Rule::PolicyValidation, "types.cedar", 3);
}

#[test]
fn a_syntax_error_is_rejected() {
    assert_one("syntax_error", Rule::PolicySyntax, "syntax.cedar", 3);
}

#[test]
fn a_duplicate_id_is_rejected() {
    assert_one("duplicate_id", Rule::PolicyId, "b.cedar", 2);
    let d = expect_err(&fixtures().join("reject/duplicate_id"));
    let msg = &d.iter().next().expect("one").message;
    assert!(msg.contains("a.cedar:1"), "{msg}");
}

#[test]
fn an_empty_id_is_rejected() {
    assert_one("empty_id", Rule::PolicyId, "empty.cedar", 2);
}

#[test]
fn a_user_schema_syntax_error_points_into_it() {
    assert_one("schema_syntax", Rule::CedarSchema, "schema.cedarschema", 4);
}

#[test]
fn a_user_schema_that_does_not_merge_points_into_it() {
    assert_one("schema_merge", Rule::CedarSchema, "schema.cedarschema", 3);
}

#[test]
fn a_user_declared_tool_action_must_join_its_groups() {
    assert_one(
        "user_action_groups",
        Rule::CedarSchema,
        "schema.cedarschema",
        3,
    );
    let d = expect_err(&fixtures().join("reject/user_action_groups"));
    let msg = &d.iter().next().expect("one").message;
    assert!(msg.contains("read-only"), "{msg}");
}

#[test]
fn every_problem_of_every_file_is_reported_in_one_run() {
    let diags = expect_err(&fixtures().join("reject/many_files"));
    let got: Vec<(Rule, String, usize)> = diags
        .iter()
        .map(|d| (d.rule, file_name(&d.file), d.line_col.map_or(0, |(l, _)| l)))
        .collect();
    assert!(
        got.contains(&(Rule::PolicyValidation, "one.cedar".into(), 3)),
        "{got:?}"
    );
    assert!(
        got.contains(&(Rule::PolicyValidation, "one.cedar".into(), 5)),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|(r, f, _)| *r == Rule::PolicySyntax && f == "two.cedar"),
        "{got:?}"
    );
    assert!(
        diags.summary().contains("in 2 files"),
        "{}",
        diags.summary()
    );
}

// ---------------------------------------------------------------------------------------------
// Real authorization: one forbid on the group covers both tools

struct Authz {
    binding: Binding,
    entities: Entities,
}

impl Authz {
    fn catalog() -> Self {
        let binding = bind_dir(&catalog_policies()).unwrap_or_else(|d| panic!("{}", d.render()));
        let schema = &binding.schema;
        let actions = schema.action_entities().expect("action entities");
        let mut entities = Entities::from_json_value(
            json!([
                {"uid": {"type": "Team", "id": "editors"}, "attrs": {}, "parents": []},
                {"uid": {"type": "Agent", "id": "editor"}, "attrs": {},
                 "parents": [{"type": "Team", "id": "editors"}]},
                {"uid": {"type": "Agent", "id": "reader"}, "attrs": {}, "parents": []},
            ]),
            Some(schema),
        )
        .expect("entities");
        let tools: Vec<Value> = catalog()
            .iter()
            .map(|r| {
                json!({"uid": {"type": "Tool", "id": r.tool_id()},
                       "attrs": {"side_effect_class": r.side_effect_class().as_str(),
                                 "version": r.version().to_string()},
                       "parents": []})
            })
            .collect();
        entities = entities
            .add_entities_from_json_value(Value::Array(tools), Some(schema))
            .expect("tools");
        entities = entities
            .add_entities(actions.iter().cloned(), Some(schema))
            .expect("actions");
        Self { binding, entities }
    }

    fn decide(&self, principal: &str, tool: &str, context: Value) -> (Decision, Vec<String>) {
        /// The context completed as the runtime completes it: an empty flow, and the URL's
        /// origin spelled from its scheme, host and port.
        fn with_flow(mut context: Value) -> Value {
            if let Some(obj) = context.as_object_mut() {
                obj.entry("flow")
                    .or_insert(json!({"calls": 0, "labels": [], "origins": [], "tools": []}));
                if let Some(url) = obj.get_mut("url").and_then(Value::as_object_mut) {
                    let origin = format!(
                        "{}://{}:{}",
                        url["scheme"].as_str().unwrap_or_default(),
                        url["host"].as_str().unwrap_or_default(),
                        url["port"]
                    );
                    url.entry("origin").or_insert(Value::String(origin));
                }
            }
            context
        }
        let schema = &self.binding.schema;
        let action = EntityUid::from_str(&format!("Action::\"{tool}\"")).expect("action");
        let principal = EntityUid::from_str(&format!("Agent::\"{principal}\"")).expect("agent");
        let resource = EntityUid::from_str(&format!("Tool::\"{tool}\"")).expect("tool");
        let context = Context::from_json_value(with_flow(context), Some((schema, &action)))
            .unwrap_or_else(|e| panic!("context: {e}"));
        let request = Request::new(principal, action, resource, context, Some(schema))
            .unwrap_or_else(|e| panic!("request: {e}"));
        let response =
            Authorizer::new().is_authorized(&request, &self.binding.policies, &self.entities);
        assert_eq!(
            response.diagnostics().errors().count(),
            0,
            "evaluation errors"
        );
        let mut reasons: Vec<String> = response
            .diagnostics()
            .reason()
            .map(ToString::to_string)
            .collect();
        reasons.sort();
        (response.decision(), reasons)
    }
}

/// The facts of a URL with a public host (the runtime computes `public`; here it is given).
fn url_facts(raw: &str) -> Value {
    url_facts_of(raw, true)
}

fn url_facts_of(raw: &str, public: bool) -> Value {
    let u = url::Url::parse(raw).expect("url");
    json!({
        "raw": raw,
        "scheme": u.scheme(),
        "host": u.host_str().unwrap_or_default(),
        "port": u.port_or_known_default().unwrap_or(0),
        "path": u.path(),
        "public": public,
    })
}

#[test]
fn the_group_forbid_denies_linkedin_on_the_single_url_tool() {
    let a = Authz::catalog();
    for (raw, expected) in [
        ("https://www.linkedin.com/in/x", Decision::Deny),
        ("https://linkedin.com/feed", Decision::Deny),
        ("https://example.com", Decision::Allow),
        ("https://notlinkedin.com/", Decision::Allow),
    ] {
        let ctx = json!({"input": {"url": raw}, "url": url_facts(raw)});
        let (decision, reasons) = a.decide("reader", "firecrawl_scrape", ctx);
        assert_eq!(decision, expected, "{raw}: {reasons:?}");
        if expected == Decision::Deny {
            assert_eq!(reasons, ["page-read-no-linkedin"]);
        } else {
            assert_eq!(reasons, ["read-only-tools"]);
        }
    }
}

#[test]
fn the_group_forbid_denies_linkedin_on_each_element_of_the_bulk_tool() {
    let a = Authz::catalog();
    let urls = ["https://example.com/a", "https://www.linkedin.com/in/x"];
    // The call as a whole: no `url` in the context.
    let (whole, _) = a.decide("reader", "web_fetch_exa", json!({"input": {"urls": urls}}));
    assert_eq!(whole, Decision::Allow);
    // One request per element: the LinkedIn one is denied, so the call is.
    let per_element: Vec<Decision> = urls
        .iter()
        .map(|raw| {
            let ctx = json!({"input": {"urls": urls}, "url": url_facts(raw)});
            a.decide("reader", "web_fetch_exa", ctx).0
        })
        .collect();
    assert_eq!(per_element, [Decision::Allow, Decision::Deny]);
}

#[test]
fn the_bulk_fetch_bounds_hold() {
    let a = Authz::catalog();
    for (raw, expected, policy) in [
        (
            "http://example.com/",
            Decision::Deny,
            "bulk-fetch-https-only",
        ),
        (
            "https://localhost/x",
            Decision::Deny,
            "bulk-fetch-no-internal-hosts",
        ),
        (
            "https://db.internal/x",
            Decision::Deny,
            "bulk-fetch-no-internal-hosts",
        ),
        ("https://example.org/x", Decision::Allow, "read-only-tools"),
    ] {
        let public = expected == Decision::Allow || raw.starts_with("http:");
        let ctx = json!({"input": {"urls": [raw]}, "url": url_facts_of(raw, public)});
        let (decision, reasons) = a.decide("reader", "web_fetch_exa", ctx);
        assert_eq!(decision, expected, "{raw}: {reasons:?}");
        assert_eq!(reasons, [policy], "{raw}");
    }
    // An address literal: the `ipaddr` fact meets the policy's ranges.
    let raw = "https://10.1.2.3/x";
    let mut facts = url_facts_of(raw, false);
    facts["ip"] = json!({"__extn": {"fn": "ip", "arg": "10.1.2.3"}});
    let (decision, reasons) = a.decide(
        "reader",
        "web_fetch_exa",
        json!({"input": {"urls": [raw]}, "url": facts}),
    );
    assert_eq!(decision, Decision::Deny);
    assert_eq!(
        reasons,
        [
            "bulk-fetch-no-internal-addresses",
            "bulk-fetch-no-internal-hosts"
        ]
    );
    // The single-URL tool is not bound by them.
    let raw = "http://example.com/";
    let (decision, _) = a.decide(
        "reader",
        "firecrawl_scrape",
        json!({"input": {"url": raw}, "url": url_facts(raw)}),
    );
    assert_eq!(decision, Decision::Allow);
}

#[test]
fn the_writing_tools_are_for_editors_only() {
    let a = Authz::catalog();
    let note = json!({"input": {"title": "t", "body": "b"}});
    assert_eq!(
        a.decide("editor", "note_publish", note.clone()).0,
        Decision::Allow
    );
    assert_eq!(a.decide("reader", "note_publish", note).0, Decision::Deny);
    let retract = json!({"input": {"note_id": "n1"}});
    assert_eq!(
        a.decide("editor", "note_retract", retract).0,
        Decision::Allow
    );
    let web = json!({"input": {"query": "rust"}});
    assert_eq!(a.decide("editor", "web_search", web).0, Decision::Allow);
}

#[test]
fn the_generated_fragment_merges_with_a_user_fragment_declaring_agent() {
    // What `bind` does, by hand: the user's `Agent` replaces the generated one.
    let b = bind_dir(&catalog_policies()).unwrap_or_else(|d| panic!("{}", d.render()));
    let (frag, _) =
        SchemaFragment::from_cedarschema_str(&b.schema_text).expect("whole text parses");
    let schema = Schema::from_schema_fragments([frag]).expect("one schema");
    assert!(schema.principals().any(|p| p.to_string() == "Agent"));
}

/// Bind `records` against one policy file holding `policy`; the per-URL shape diagnostics.
fn per_url_shape(records: &[ToolRecord], policy: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("p.cedar"), policy).expect("writes");
    match cedar::bind(records, Some(dir.path())) {
        Ok(_) => Vec::new(),
        Err(d) => {
            let others: Vec<_> = d.iter().filter(|d| d.rule != Rule::PerUrlShape).collect();
            assert!(others.is_empty(), "{}", d.render());
            d.iter().map(|d| d.message.clone()).collect()
        }
    }
}

const PAGE_READ_FORBID: &str = r#"
    @id("no-linkedin")
    forbid (principal, action in Action::"page-read", resource)
    when { context has url && context.url.host like "*linkedin.com" };
    @id("open") permit (principal, action, resource);
"#;

#[test]
fn a_url_constrained_tool_presents_every_url_to_cedar_one_at_a_time() {
    use SideEffectClass::ReadOnly;
    let uri = json!({"type": "string", "format": "uri"});
    // Two URL fields: a request could authorize only one of them.
    let two = record(
        "two_urls",
        ReadOnly,
        &["page-read"],
        json!({"url": uri, "mirror": uri}),
        &["url"],
    );
    let found = per_url_shape(std::slice::from_ref(&two), PAGE_READ_FORBID);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found
        .iter()
        .all(|m| m.contains("`/url`") && m.contains("`/mirror`")));

    // URLs inside a list of objects that is not marked.
    let page = json!({"type": "object", "additionalProperties": false, "required": ["href"],
        "properties": {"href": {"type": "string"}, "title": {"type": "string"}}});
    let unmarked = record(
        "pages_unmarked",
        ReadOnly,
        &["page-read"],
        json!({"pages": {"type": "array", "items": page}}),
        &[],
    );
    let found = per_url_shape(&[unmarked], PAGE_READ_FORBID);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("`/pages/-/href`") && found[0].contains("not marked"));

    // Marked, each object is authorized on its one URL: accepted.
    let marked = record(
        "pages_marked",
        ReadOnly,
        &["page-read"],
        json!({"pages": {"type": "array", "x-authorize-each": true, "items": page}}),
        &[],
    );
    assert!(per_url_shape(&[marked], PAGE_READ_FORBID).is_empty());

    // A URL field without a format, beside the one with it.
    let named = record(
        "named_link",
        ReadOnly,
        &["page-read"],
        json!({"url": uri, "link": {"type": "string"}}),
        &["url"],
    );
    let found = per_url_shape(&[named], PAGE_READ_FORBID);
    assert_eq!(found.len(), 2, "{found:?}");

    // The same shapes outside the constrained group keep their freedom.
    let free_props = json!({"url": uri, "mirror": uri, "links": {"type": "array", "items": uri}});
    let free = record("free_tool", ReadOnly, &[], free_props.clone(), &["url"]);
    let reader = record(
        "reader",
        ReadOnly,
        &["page-read"],
        json!({"url": uri}),
        &["url"],
    );
    assert!(per_url_shape(&[free.clone(), reader], PAGE_READ_FORBID).is_empty());
    // ... until a policy on every action reads `context.url`.
    let everywhere = r#"forbid (principal, action, resource) when { context has url && context.url.scheme == "ftp" };"#;
    let found = per_url_shape(std::slice::from_ref(&free), everywhere);
    assert_eq!(found.len(), 3, "{found:?}");
    // ... or its profile's egress is the origins of the URLs Cedar authorized.
    let fenced = builder("free_tool", ReadOnly, &[], free_props, &["url"])
        .egress(["authorized-urls"])
        .registered();
    let found = per_url_shape(
        &[fenced],
        "@id(\"open\") permit (principal, action, resource);",
    );
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found.iter().all(|m| m.contains("authorized-urls")),
        "{found:?}"
    );
}
