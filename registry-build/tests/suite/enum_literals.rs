//! The enum-literal rule and the Cedar extension types of string formats, through the Cedar
//! binding and a real `Builder` build of the catalog.

use std::fs;
use std::path::{Path, PathBuf};

use escepine_contract::SideEffectClass;
use escepine_policy::cedar;
use escepine_registry::diagnostic::Diagnostic;
use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::record::ToolRecord;
use escepine_registry::rule::Rule;
use escepine_registry::testing::RecordBuilder;
use serde_json::{json, Value};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn record(id: &str, groups: &[&str], properties: Value) -> ToolRecord {
    RecordBuilder::new(id)
        .source(format!("tools/records/{id}.json"))
        .description(&format!("The {id} tool."))
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "required": [],
            "properties": properties,
        }))
        .output_schema(json!({"type": "object", "additionalProperties": false}))
        .action_groups(groups.iter().copied())
        .class(SideEffectClass::ReadOnly)
        .binary(Path::new("/bin/true"))
        .registered()
}

/// `tavily_search` (an enum `search_depth`, a set of enum `topics`), `web_search` (the same
/// name as a plain string), both in the `search` group; `report_fetch` with formats.
fn records() -> Vec<ToolRecord> {
    vec![
        record(
            "tavily_search",
            &["search"],
            json!({
                "query": {"type": "string"},
                "search_depth": {"type": "string", "enum": ["basic", "advanced"]},
                "topics": {"type": "array", "items": {"enum": ["general", "news"]}},
                "mode": {"const": "fast"},
                "page-kind": {"enum": ["html", "pdf"]},
            }),
        ),
        record(
            "web_search",
            &["search"],
            json!({"query": {"type": "string"}, "search_depth": {"type": "string"}}),
        ),
        record(
            "report_fetch",
            &[],
            json!({
                "since": {"type": "string", "format": "date-time"},
                "client": {"type": "string", "format": "ipv4"},
                "peer": {"type": "string", "format": "ipv6"},
                "window": {"type": "string", "format": "duration"},
                "day": {"type": "string", "format": "date"},
            }),
        ),
    ]
}

/// Bind `policies` (one file, `p.cedar`) against [`records`].
fn bind(policies: &str) -> Result<cedar::Binding, Diagnostics> {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("p.cedar"), policies).expect("write");
    cedar::bind(&records(), Some(dir.path()))
}

fn enum_errors(policies: &str) -> Vec<Diagnostic> {
    match bind(policies) {
        Ok(_) => panic!("accepted:\n{policies}"),
        Err(d) => {
            let found: Vec<Diagnostic> = d
                .iter()
                .filter(|d| d.rule == Rule::PolicyEnumLiteral)
                .cloned()
                .collect();
            assert_eq!(found.len(), d.len(), "other problems too:\n{}", d.render());
            found
        }
    }
}

#[test]
fn a_misspelled_enum_literal_is_refused_with_line_column_and_the_allowed_values() {
    let text = "@id(\"deep-search-editors\")\n\
                forbid(principal, action == Action::\"tavily_search\", resource)\n\
                when { context.input has search_depth && context.input.search_depth == \"advnced\" };\n";
    let errors = enum_errors(text);
    assert_eq!(errors.len(), 1);
    let e = &errors[0];
    assert_eq!(e.file.file_name().and_then(|n| n.to_str()), Some("p.cedar"));
    let col = text
        .lines()
        .nth(2)
        .and_then(|l| l.find("\"advnced\""))
        .expect("col")
        + 1;
    assert_eq!(e.line_col, Some((3, col)));
    assert_eq!(
        e.message,
        "\"advnced\" is not a value of context.input.search_depth (allowed: \"basic\", \"advanced\")"
    );
    assert!(e
        .help
        .as_deref()
        .unwrap_or("")
        .contains("deep-search-editors"));
    let shown = e.to_string();
    assert!(
        shown.contains(&format!("p.cedar:3:{col}: [cedar/enum-literal]")),
        "{shown}"
    );
    assert!(e.render().contains("cedar/enum-literal"));
}

#[test]
fn every_comparison_form_is_checked() {
    let text = r#"
@id("forms")
forbid(principal, action == Action::"tavily_search", resource)
when {
  (context.input has search_depth && "basc" != context.input.search_depth) ||
  (context.input has search_depth && ["basic", "advnced"].contains(context.input.search_depth)) ||
  (context.input has topics && context.input.topics.contains("nws")) ||
  (context.input has topics && context.input.topics.containsAny(["general", "sports"])) ||
  (context.input has topics && ["weather"].containsAll(context.input.topics)) ||
  (context.input has mode && context.input.mode == "slow") ||
  (context.input has "page-kind" && context.input["page-kind"] == "doc") ||
  resource.side_effect_class == "read-onyl"
};
"#;
    let got: Vec<(String, usize)> = enum_errors(text)
        .iter()
        .map(|d| (d.message.clone(), d.line_col.map_or(0, |(l, _)| l)))
        .collect();
    let want = [
        ("\"basc\" is not a value of context.input.search_depth (allowed: \"basic\", \"advanced\")", 5),
        ("\"advnced\" is not a value of context.input.search_depth (allowed: \"basic\", \"advanced\")", 6),
        ("\"nws\" is not a value of the elements of context.input.topics (allowed: \"general\", \"news\")", 7),
        ("\"sports\" is not a value of the elements of context.input.topics (allowed: \"general\", \"news\")", 8),
        ("\"weather\" is not a value of the elements of context.input.topics (allowed: \"general\", \"news\")", 9),
        ("\"slow\" is not a value of context.input.mode (allowed: \"fast\")", 10),
        ("\"doc\" is not a value of context.input[\"page-kind\"] (allowed: \"html\", \"pdf\")", 11),
        ("\"read-onyl\" is not a value of resource.side_effect_class (allowed: \"read-only\", \"compensatable\", \"supersede\")", 12),
    ];
    let mut got = got;
    got.sort();
    let mut want: Vec<(String, usize)> = want.iter().map(|(m, l)| (m.to_string(), *l)).collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn correct_literals_and_plain_strings_pass() {
    let b = bind(
        r#"
@id("ok")
forbid(principal, action == Action::"tavily_search", resource)
when {
  (context.input has search_depth && context.input.search_depth == "advanced") ||
  (context.input has topics && context.input.topics.containsAny(["general", "news"])) ||
  (context.input has mode && context.input.mode != "fast") ||
  resource.side_effect_class == "read-only"
};
// `web_search` holds `search_depth` as any string: a policy on the group may mean any value.
@id("group")
forbid(principal, action in Action::"search", resource)
when { context.input has search_depth && context.input.search_depth == "exhaustive" };
// `query` is a plain string everywhere.
@id("query")
forbid(principal, action == Action::"tavily_search", resource)
when { context.input has query && context.input.query == "advnced" };
"#,
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    assert_eq!(b.policies.policies().count(), 3);
}

#[test]
fn a_policy_that_fails_validation_is_not_also_reported_for_its_literals() {
    let d = bind(
        r#"forbid(principal, action == Action::"tavily_search", resource)
           when { context.input.search_depth == "advnced" };"#,
    )
    .expect_err("unguarded optional attribute");
    assert!(d.has(Rule::PolicyValidation), "{}", d.render());
    assert!(!d.has(Rule::PolicyEnumLiteral), "{}", d.render());
}

#[test]
fn formats_reach_cedar_as_extension_types() {
    let text = cedar::generated_schema_text(&records());
    for line in [
        "since?: __cedar::datetime,",
        "client?: __cedar::ipaddr,",
        "peer?: __cedar::ipaddr,",
        "window?: __cedar::duration,",
        // A plain date has no Cedar type of its own: it stays a string.
        "day?: String,",
    ] {
        assert!(text.contains(line), "missing `{line}` in\n{text}");
    }
    let b = bind(
        r#"
@id("old")
forbid(principal, action == Action::"report_fetch", resource)
when { context.input has since && context.input.since < datetime("2024-01-01T00:00:00Z") };
@id("internal")
forbid(principal, action == Action::"report_fetch", resource)
when { context.input has client && context.input.client.isInRange(ip("10.0.0.0/8")) };
@id("long")
forbid(principal, action == Action::"report_fetch", resource)
when { context.input has window && context.input.window > duration("1h") };
"#,
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    assert_eq!(b.policies.policies().count(), 3);
    // Compared as text, a date-time is now a type error.
    let d = bind(
        r#"forbid(principal, action == Action::"report_fetch", resource)
           when { context.input has since && context.input.since == "2024-01-01T00:00:00Z" };"#,
    )
    .expect_err("datetime compared with a string");
    assert!(d.has(Rule::PolicyValidation), "{}", d.render());
}

/// The catalog's policies plus one file, in a temporary directory.
fn catalog_policies_with(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for e in fs::read_dir(workspace().join("tools/policies")).expect("policies") {
        let p = e.expect("entry").path();
        fs::copy(&p, dir.path().join(p.file_name().expect("name"))).expect("copy");
    }
    fs::write(dir.path().join(name), text).expect("write");
    dir
}

fn build(policies: &Path) -> Result<String, escepine_registry_build::BuildError> {
    let ws = workspace();
    escepine_registry_build::Builder::new()
        .records(ws.join("tools/records"))
        .policies(policies)
        .envelope(ws.join("tools/envelope.json"))
        .workspace_root(&ws)
        .manifest_dir(ws.join("examples/catalog-client"))
        .cargo_directives(false)
        .generate()
}

#[test]
fn a_builder_build_of_the_catalog_fails_on_a_misspelled_enum_literal() {
    let text = "// Deep searches only for editors.\n\
                @id(\"deep-search-editors\")\n\
                forbid(principal, action == Action::\"tavily_search\", resource)\n\
                when { context.input has search_depth && context.input.search_depth == \"advnced\" }\n\
                unless { principal in Team::\"editors\" };\n";
    let bad = catalog_policies_with("zz_depth.cedar", text);
    let err = build(bad.path())
        .expect_err("misspelled literal")
        .to_string();
    let col = text
        .lines()
        .nth(3)
        .and_then(|l| l.find("\"advnced\""))
        .expect("col")
        + 1;
    assert!(err.contains("zz_depth.cedar"), "{err}");
    assert!(err.contains(&format!("zz_depth.cedar:4:{col}")), "{err}");
    // The rendered report wraps at 100 columns.
    assert!(
        err.contains("\"advnced\" is not a value of context.input.search_depth"),
        "{err}"
    );
    assert!(err.contains("(allowed: \"basic\", \"advanced\")"), "{err}");
    assert!(err.contains("cedar/enum-literal"), "{err}");
    let good = catalog_policies_with("zz_depth.cedar", &text.replace("advnced", "advanced"));
    build(good.path()).unwrap_or_else(|e| panic!("{e}"));
}
