//! One failing fixture per SOP rejection: each fixture is a valid SOP with one violation, and
//! checking it — with `sop::load` and through a `Builder` build — must report that rule (and
//! only that rule), naming the file, the JSON pointer and the state.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use escepine_policy::BoundRegistry;
use escepine_registry::registry::Sources;
use escepine_registry::rule::Rule;
use escepine_registry::sop;
use escepine_registry::sop::State;
use escepine_registry_build::BuildError;
use escepine_registry_build::Builder;
use serde::Deserialize;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sops")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn registry() -> BoundRegistry {
    escepine_policy::load(
        &Sources::new()
            .records(fixtures().join("records"))
            .policies(fixtures().join("policies")),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()))
}

#[derive(Debug, Deserialize)]
struct Expected {
    rule: String,
    state: Option<String>,
    schema_valid: bool,
}

fn expected() -> BTreeMap<String, Expected> {
    serde_json::from_str(&fs::read_to_string(fixtures().join("expected.json")).expect("read"))
        .expect("expected.json")
}

fn invalid(name: &str) -> PathBuf {
    fixtures().join("invalid").join(format!("{name}.json"))
}

#[test]
fn valid_sops_pass_every_rule() {
    let reg = registry();
    let sops =
        sop::load_dir(&fixtures().join("valid"), &reg).unwrap_or_else(|d| panic!("{}", d.render()));
    let ids: Vec<&str> = sops.iter().map(|s| s.sop_id.as_str()).collect();
    assert_eq!(ids, ["bulk", "triage", "trivial"]);

    let triage = &sops[1];
    assert_eq!(triage.start, "read");
    let Some(State::Execution(open)) = triage.state("open") else {
        panic!("`open` is an execution state")
    };
    assert_eq!(open.tool, "ticket_open");
    assert_eq!(
        open.on_failure,
        escepine_contract::FailureOutcome::Compensate
    );
    assert_eq!(
        open.constraints["/priority"],
        serde_json::json!({"maximum": 2})
    );
    let Some(State::Decision(check)) = triage.state("check") else {
        panic!("`check` is a decision")
    };
    assert_eq!(
        check.branches[0].target(),
        Some(("read".to_string(), "output", "/status"))
    );
    assert!(triage.is_transition("check", "open") && triage.is_transition("check", "done"));
    assert!(!triage.is_transition("read", "open"));
    assert_eq!(triage.terminals().collect::<Vec<_>>(), ["done"]);

    // The canonical document loads back to the same SOP.
    let tmp = tempfile::tempdir().expect("tempdir");
    let copy = tmp.path().join("triage.json");
    fs::write(
        &copy,
        serde_json::to_string_pretty(&triage.to_json()).expect("json"),
    )
    .expect("write");
    let again = sop::load(&copy, &reg).unwrap_or_else(|d| panic!("{}", d.render()));
    assert_eq!(again.to_json(), triage.to_json());
    assert_eq!(again.states, triage.states);
}

#[test]
fn the_catalog_sop_passes_against_the_catalog() {
    let ws = workspace();
    let reg = escepine_policy::load(
        &Sources::new()
            .records(ws.join("tools/records"))
            .policies(ws.join("tools/policies"))
            .envelope(ws.join("tools/envelope.json"))
            .workspace_root(&ws)
            .sops(ws.join("tools/sops")),
    )
    .unwrap_or_else(|d| panic!("{}", d.render()));
    let research = reg.sop("research").expect("the research SOP");
    let tools: Vec<&str> = research
        .execution_states()
        .map(|(_, e)| e.tool.as_str())
        .collect();
    for t in [
        "web_search",
        "firecrawl_scrape",
        "note_publish",
        "deliverable_assemble",
    ] {
        assert!(tools.contains(&t), "{t} in {tools:?}");
    }
    let Some(State::Execution(read)) = research.state("read") else {
        panic!("read")
    };
    assert!(read.require_per_url_authorization);
}

#[test]
fn each_fixture_breaks_exactly_its_rule() {
    let reg = registry();
    let mut failures = Vec::new();
    for (name, exp) in expected() {
        let path = invalid(&name);
        let diags = match sop::load(&path, &reg) {
            Ok(_) => {
                failures.push(format!("{name}: accepted"));
                continue;
            }
            Err(d) => d,
        };
        let rules: Vec<&str> = diags.iter().map(|d| d.rule.id()).collect();
        let rendered = diags.render();
        if rules.iter().any(|r| *r != exp.rule) {
            failures.push(format!(
                "{name}: expected only [{}], got {rules:?}\n{rendered}",
                exp.rule
            ));
        }
        if !diags.iter().all(|d| d.file == path) {
            failures.push(format!(
                "{name}: a diagnostic names another file\n{rendered}"
            ));
        }
        if exp.rule != "json/syntax" && !diags.iter().all(|d| d.pointer.is_some()) {
            failures.push(format!(
                "{name}: a diagnostic has no JSON pointer\n{rendered}"
            ));
        }
        if !rendered.contains(&format!("{name}.json")) || !rendered.contains(&exp.rule) {
            failures.push(format!(
                "{name}: rendering does not name the file and rule:\n{rendered}"
            ));
        }
        if let Some(state) = &exp.state {
            if !rendered.contains(&format!("`{state}`")) {
                failures.push(format!(
                    "{name}: rendering does not name the state `{state}`:\n{rendered}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_sop_rule_has_a_failing_fixture() {
    let covered: BTreeSet<String> = expected().into_values().map(|e| e.rule).collect();
    let untested: Vec<&str> = Rule::ALL
        .iter()
        .map(|r| r.id())
        .filter(|id| id.starts_with("sop/"))
        // covered by `duplicate_sop_ids_are_rejected` (it needs two files)
        .filter(|id| *id != "sop/id-unique")
        .filter(|id| !covered.contains(*id))
        .collect();
    assert!(
        untested.is_empty(),
        "SOP rules without a failing fixture: {untested:?}"
    );
}

#[test]
fn each_fixture_fails_a_builder_build() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for (name, exp) in expected() {
        let result = Builder::new()
            .records(fixtures().join("records"))
            .policies(fixtures().join("policies"))
            .sops(invalid(&name))
            .out_dir(tmp.path())
            .file_name(format!("{name}.rs"))
            .cargo_directives(false)
            .compile();
        match result {
            Err(BuildError::Registry(d)) if d.iter().any(|d| d.rule.id() == exp.rule) => {
                let shown = format!("{:?}", BuildError::Registry(d));
                if !shown.contains(&format!("{name}.json")) || !shown.contains(&exp.rule) {
                    failures.push(format!(
                        "{name}: the build error does not name file and rule:\n{shown}"
                    ));
                }
            }
            Err(e) => failures.push(format!("{name}: wrong build error: {e}")),
            Ok(()) => failures.push(format!("{name}: the build passed")),
        }
        if tmp.path().join(format!("{name}.rs")).exists() {
            failures.push(format!("{name}: a rejected SOP generated code"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn valid_sops_generate_typed_state_machines() {
    let tmp = tempfile::tempdir().expect("tempdir");
    Builder::new()
        .records(fixtures().join("records"))
        .policies(fixtures().join("policies"))
        .sops(fixtures().join("valid"))
        .out_dir(tmp.path())
        .file_name("tools.rs")
        .cargo_directives(false)
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let code = fs::read_to_string(tmp.path().join("tools.rs")).expect("generated");
    for needle in [
        "pub mod sops {",
        "pub mod triage {",
        "pub mod bulk {",
        "pub mod trivial {",
        "impl ::escepine_contract::SopDefinition for Sop {",
        "pub enum State {",
        "impl ::escepine_contract::SopStep for Open {",
        "type Tool = super::super::ticket_open::Tool;",
        "const ON_FAILURE: ::escepine_contract::FailureOutcome = ::escepine_contract::FailureOutcome::Compensate;",
        "const REQUIRE_PER_URL_AUTHORIZATION: bool = true;",
        "(\"/priority\", \"{\\\"maximum\\\":2}\")",
        "Self::Check => &[State::Open, State::Done]",
        "pub const START: State = State::Read;",
    ] {
        assert!(code.contains(needle), "missing {needle:?} in\n{code}");
    }
    // Decisions and terminals are states, not steps.
    assert!(!code.contains("SopStep for Check") && !code.contains("SopStep for Done"));
}

#[test]
fn duplicate_sop_ids_are_rejected() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let text = fs::read_to_string(fixtures().join("valid/triage.json")).expect("read");
    fs::write(tmp.path().join("a.json"), &text).expect("write");
    fs::write(tmp.path().join("b.json"), &text).expect("write");
    let diags = sop::load_dir(tmp.path(), &registry()).expect_err("two SOPs share an id");
    let rules: Vec<Rule> = diags.iter().map(|d| d.rule).collect();
    assert_eq!(rules, [Rule::SopIdUnique], "{}", diags.render());
    let d = diags.iter().next().expect("one");
    assert!(
        d.file.ends_with("b.json") && d.message.contains("a.json"),
        "{d}"
    );
}

#[test]
fn all_problems_of_all_files_in_one_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in [
        "unknown_tool",
        "constraint_out_of_range",
        "unreachable_state",
    ] {
        let text = fs::read_to_string(invalid(name)).expect("read");
        // Distinct ids, so the files do not also collide.
        let text = text.replace("\"triage\"", &format!("\"{name}\""));
        fs::write(tmp.path().join(format!("{name}.json")), text).expect("write");
    }
    let diags = sop::load_dir(tmp.path(), &registry()).expect_err("three broken SOPs");
    let files: BTreeSet<_> = diags.iter().map(|d| d.file.clone()).collect();
    assert_eq!(files.len(), 3, "{}", diags.render());
    for rule in [
        Rule::SopUnknownTool,
        Rule::SopConstraintType,
        Rule::SopUnreachableState,
    ] {
        assert!(diags.has(rule), "{rule} in {}", diags.render());
    }
}

#[test]
fn diagnostics_name_pointer_line_and_state() {
    let path = invalid("constraint_field_missing");
    let diags = sop::load(&path, &registry()).expect_err("rejected");
    let d = diags.iter().next().expect("one");
    assert_eq!(
        d.pointer.as_deref(),
        Some("/states/open/constraints/~1priorty")
    );
    assert!(d.message.contains("state `open`"), "{d}");
    assert_eq!(d.help.as_deref(), Some("did you mean `/priority`?"));
    let text = fs::read_to_string(&path).expect("read");
    let (line, _) = d.line_col.expect("line and column");
    assert!(
        text.lines()
            .nth(line - 1)
            .is_some_and(|l| l.contains("/priorty")),
        "line {line} of\n{text}"
    );
    let rendered = d.render();
    assert!(
        rendered.contains("sop/constraint-field") && rendered.contains("/priorty"),
        "{rendered}"
    );
}

#[test]
fn typos_get_did_you_mean() {
    let reg = registry();
    let cases = [
        ("unknown_tool", "did you mean `ticket_open`?"),
        ("start_undefined", "did you mean `read`?"),
        ("outcome_unknown", "halt"),
        ("unknown_field", "closed"),
    ];
    for (name, help) in cases {
        let diags = sop::load(&invalid(name), &reg).expect_err(name);
        let helps: Vec<String> = diags.iter().filter_map(|d| d.help.clone()).collect();
        assert!(helps.iter().any(|h| h.contains(help)), "{name}: {helps:?}");
    }
}

#[test]
fn a_failing_record_is_not_reported_again_through_its_sops() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let records = tmp.path().join("records");
    fs::create_dir(&records).expect("mkdir");
    for e in fs::read_dir(fixtures().join("records"))
        .expect("records")
        .flatten()
    {
        fs::copy(e.path(), records.join(e.file_name())).expect("copy");
    }
    // Break ticket_open's record: the SOP binding it must not add `sop/unknown-tool`.
    let p = records.join("ticket_open.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&p).expect("read")).expect("json");
    v["timeout_ms"] = Value::from(0);
    fs::write(&p, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    let diags = escepine_policy::load(
        &Sources::new()
            .records(&records)
            .policies(fixtures().join("policies"))
            .sops(fixtures().join("valid")),
    )
    .expect_err("a broken record");
    let rules: BTreeSet<&str> = diags.iter().map(|d| d.rule.id()).collect();
    assert!(rules.contains("timeout-ms/positive"), "{}", diags.render());
    assert!(
        !rules.iter().any(|r| r.starts_with("sop/")),
        "{}",
        diags.render()
    );
}

#[test]
fn a_missing_sop_directory_is_reported() {
    let diags = escepine_policy::load(
        &Sources::new()
            .records(fixtures().join("records"))
            .policies(fixtures().join("policies"))
            .sops(fixtures().join("no-such-dir")),
    )
    .expect_err("missing");
    assert!(diags.has(Rule::Missing), "{}", diags.render());
}

#[test]
fn unbound_loading_checks_the_graph_but_not_the_tools() {
    // Without a registry the tool rules cannot apply …
    sop::load_unbound(&invalid("unknown_tool")).unwrap_or_else(|d| panic!("{}", d.render()));
    // … but the graph rules do.
    let d = sop::load_unbound(&invalid("unreachable_state")).expect_err("unreachable");
    assert!(d.has(Rule::SopUnreachableState), "{}", d.render());
}

/// Validate `instance` against `registry-build/sop.schema.json`.
fn schema_valid(validator: &jsonschema::Validator, path: &Path) -> Option<bool> {
    let text = fs::read_to_string(path).expect("read");
    let value: Value = serde_json::from_str(&text).ok()?;
    Some(validator.is_valid(&value))
}

#[test]
fn the_json_schema_of_the_format_agrees_with_the_fixtures() {
    let schema: Value = serde_json::from_str(
        &fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("sop.schema.json"))
            .expect("sop.schema.json"),
    )
    .expect("schema JSON");
    jsonschema::draft202012::meta::validate(&schema).expect("a well-formed 2020-12 schema");
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the schema compiles");
    let mut failures = Vec::new();
    let mut valid_files: Vec<PathBuf> = fs::read_dir(fixtures().join("valid"))
        .expect("valid")
        .flatten()
        .map(|e| e.path())
        .collect();
    valid_files.extend(
        fs::read_dir(workspace().join("tools/sops"))
            .expect("tools/sops")
            .flatten()
            .map(|e| e.path()),
    );
    for p in valid_files {
        if schema_valid(&validator, &p) != Some(true) {
            failures.push(format!("{}: a valid SOP fails the schema", p.display()));
        }
    }
    for (name, exp) in expected() {
        let got = schema_valid(&validator, &invalid(&name)).unwrap_or(false);
        if got != exp.schema_valid {
            failures.push(format!(
                "{name}: the schema {} it, expected {}",
                if got { "accepts" } else { "rejects" },
                if exp.schema_valid {
                    "accepted (a registry rule, not a shape rule)"
                } else {
                    "rejected"
                }
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn graphs_mark_compensation_and_failures() {
    let reg = registry();
    let triage = sop::load(&fixtures().join("valid/triage.json"), &reg)
        .unwrap_or_else(|d| panic!("{}", d.render()));
    let m = sop::graph::mermaid(&triage, reg.records());
    for needle in [
        "stateDiagram-v2",
        "[*] --> read",
        "read --> check : ok",
        "state check <<choice>>",
        "check --> open : when /read/output/status",
        "check --> done : otherwise",
        "open --> compensated : failure / compensate",
        "read --> halted : failure / halt",
        "close --> escalated : failure / halt_and_escalate",
        "class open compensatable",
        "note right of open : compensatable, undone by ticket_close on rollback",
        "class close supersede",
        "done --> [*]",
    ] {
        assert!(m.contains(needle), "missing {needle:?} in\n{m}");
    }
    let d = sop::graph::dot(&triage, reg.records());
    for needle in [
        "digraph \"triage\" {",
        "\"open\" -> \"compensated\" [label=\"failure: compensate\"",
        "class=\"compensatable\"",
        "class=\"supersede\"",
        "\"check\" -> \"open\" [label=\"/read/output/status\\n{\\\"minimum\\\":200,\\\"maximum\\\":299}\"];",
        "shape=diamond",
        "shape=doublecircle",
    ] {
        assert!(d.contains(needle), "missing {needle:?} in\n{d}");
    }
    // Without records nothing is marked by class.
    let bare = sop::graph::mermaid(&triage, &[]);
    assert!(!bare.contains("class open compensatable"), "{bare}");
}
