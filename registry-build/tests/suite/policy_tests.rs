//! The catalog's policy tests (`tools/policy-tests`): they pass, every policy of
//! `tools/policies` determines at least one case, and a build whose policies no longer keep
//! page reads away from LinkedIn fails, naming the cases.

use std::fs;
use std::path::{Path, PathBuf};

use escepine_policy::policy_tests;
use escepine_policy::policy_tests::PolicyTestError;
use escepine_policy::BoundRegistry;
use escepine_registry::registry::Sources;
use escepine_registry_build::BuildError;
use escepine_registry_build::Builder;

fn workspace() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    fs::canonicalize(&root).unwrap_or(root)
}

fn catalog(policies: &Path) -> BoundRegistry {
    let ws = workspace();
    let sources = Sources::new()
        .records(ws.join("tools/records"))
        .policies(policies)
        .envelope(ws.join("tools/envelope.json"))
        .workspace_root(&ws);
    escepine_policy::load(&sources).unwrap_or_else(|d| panic!("{}", d.render()))
}

fn tests_dir() -> PathBuf {
    workspace().join("tools/policy-tests")
}

/// A copy of `tools/policies` with `edit` applied to the named file's text.
fn edited_policies(file: &str, edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for entry in fs::read_dir(workspace().join("tools/policies")).expect("policies") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("file name");
        let text = fs::read_to_string(&path).expect("read");
        let text = if name == file { edit(&text) } else { text };
        fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

#[test]
fn the_catalogs_policy_tests_pass() {
    let registry = catalog(&workspace().join("tools/policies"));
    let report = match policy_tests::check(&registry, &tests_dir()) {
        Ok(report) => report,
        Err(e) => panic!("{e}"),
    };
    assert!(report.cases() >= 40, "{}", report.summary());
    assert_eq!(report.summary(), format!("{} cases passed", report.cases()));
}

#[test]
fn every_catalog_policy_determines_some_case() {
    let registry = catalog(&workspace().join("tools/policies"));
    let tests = policy_tests::load(&registry, &tests_dir()).unwrap_or_else(|e| panic!("{e}"));
    let report = tests.run();
    // A case is a call of a tool: the policies on the generated actions that are not a tool's
    // (who may approve a waiting call, who may declassify a flow's label) are exercised by the
    // runtime's flow and approval tests instead.
    let on_tools = |p: &&cedar_policy::Policy| match p.action_constraint() {
        cedar_policy::ActionConstraint::Eq(uid) => {
            !matches!(uid.id().unescaped(), "approve" | "declassify")
        }
        _ => true,
    };
    let untested: Vec<String> = registry
        .cedar()
        .policies
        .policies()
        .filter(on_tools)
        .map(|p| p.id().to_string())
        .filter(|id| !report.determining().contains(id))
        .collect();
    assert!(
        untested.is_empty(),
        "policies of tools/policies that determine no case of tools/policy-tests: {untested:?}"
    );
    assert!(registry.cedar().policies.policies().count() >= 7);
}

#[test]
fn a_build_without_the_linkedin_forbid_fails_naming_the_cases() {
    // The forbid weakened to the bare domain: sub-domains and every other spelling get through.
    let policies = edited_policies("page_read.cedar", |text| {
        let weakened = text.replace(" || context.url.host like \"*.linkedin.com\"", "");
        assert_ne!(weakened, text, "the edit applies");
        weakened
    });
    let out = tempfile::tempdir().expect("temp dir");
    let ws = workspace();
    let result = Builder::new()
        .records(ws.join("tools/records"))
        .policies(policies.path())
        .envelope(ws.join("tools/envelope.json"))
        .workspace_root(&ws)
        .policy_tests(tests_dir())
        .out_dir(out.path())
        .cargo_directives(false)
        .compile();
    let Err(BuildError::PolicyTests(PolicyTestError::Failed(report))) = result else {
        panic!("the build must fail on the policy tests, got {result:?}");
    };
    let failed: Vec<&str> = report.failures().iter().map(|f| f.case.as_str()).collect();
    for case in [
        "scrape: sub-domain",
        "scrape: trailing dot",
        "crawl: linkedin sub-domain",
        "bulk: one linkedin element among others",
    ] {
        assert!(failed.contains(&case), "{case} must fail: {failed:?}");
    }
    // The bare domain is still denied.
    assert!(!failed.contains(&"scrape: linkedin.com"), "{failed:?}");
    let text = BuildError::PolicyTests(PolicyTestError::Failed(report)).to_string();
    let line = format!(
        "{}: case \"scrape: sub-domain\": expected deny, got allow (determining: [read-only-tools])",
        tests_dir().join("page_read.json").display()
    );
    assert!(text.contains(&line), "{text}");
    assert!(
        !out.path().join("escepine_tools.rs").exists(),
        "nothing is generated"
    );
    // The same catalog with the forbid intact builds.
    Builder::new()
        .records(ws.join("tools/records"))
        .policies(ws.join("tools/policies"))
        .envelope(ws.join("tools/envelope.json"))
        .workspace_root(&ws)
        .policy_tests(tests_dir())
        .out_dir(out.path())
        .cargo_directives(false)
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.path().join("escepine_tools.rs").exists());
}
