//! The library over the catalog: what it proves, the request model, and how invalid
//! invariants are reported. The proofs run the real cvc5 (`.ci/cvc5` installs it).

use std::fs;
use std::path::{Path, PathBuf};

use escepine_policy::load;
use escepine_policy::BoundRegistry;
use escepine_prove::{
    prove_blocking, read_invariants, read_old_policies, request_model, Obligations, Property,
    ProveError, Solver, Verdict,
};
use escepine_registry::registry::Sources;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace holds registry-build/prove")
        .to_path_buf()
}

fn registry(policies: &Path) -> BoundRegistry {
    load(
        &Sources::new()
            .records(workspace().join("tools/records"))
            .policies(policies),
    )
    .expect("the catalog loads")
}

fn solver() -> Solver {
    let solver = Solver::from_env();
    let program = solver.program_name();
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    assert!(
        Path::new(program).is_file() || on_path,
        "cvc5 `{program}` is not installed: run `bash .ci/cvc5`"
    );
    solver
}

#[test]
fn the_request_model_fixes_each_actions_resource_and_the_url_ranges() {
    let reg = registry(&workspace().join("tools/policies"));
    let model = request_model(reg.records(), &reg.cedar().schema).expect("the model validates");
    let ids: Vec<String> = model.policies().map(|p| p.id().to_string()).collect();
    assert_eq!(ids.len(), reg.records().len() + 1, "{ids:?}");
    assert!(ids.contains(&"escepine-request-model-resource-web_fetch_exa".to_string()));
    assert!(ids.contains(&"escepine-request-model-url".to_string()));
}

#[test]
fn the_catalog_is_proved_with_and_against_itself() {
    let policies = workspace().join("tools/policies");
    let reg = registry(&policies);
    let binding = reg.cedar();
    let obligations = Obligations {
        model: request_model(reg.records(), &binding.schema).expect("model"),
        invariants: read_invariants(&workspace().join("tools/invariants"), &binding.schema)
            .expect("the catalog's invariants validate"),
        against: Some(read_old_policies(&policies, &binding.schema).expect("old")),
    };
    let report = prove_blocking(binding, &obligations, &solver()).expect("the solver answers");
    assert!(
        report.all_proved(),
        "{:?}",
        report.failures().collect::<Vec<_>>()
    );
    // 11 actions (9 tools, `approve`, `declassify`) × (10 policies + 3 invariants + 1 against).
    assert_eq!(report.outcomes.len(), 11 * 14, "{}", report.summary());
    assert!(report.outcomes.iter().any(|o| matches!(
        &o.property,
        Property::Invariant { name } if name == "no-linkedin-page-reads.cedar"
    ) && o.env.action == "Action::\"firecrawl_scrape\""
        && o.verdict == Verdict::Proved));
}

#[test]
fn a_forbid_that_can_error_is_a_never_errors_counterexample() {
    let dir = tempfile::tempdir().expect("temp dir");
    for entry in fs::read_dir(workspace().join("tools/policies")).expect("catalog") {
        let path = entry.expect("entry").path();
        fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    // Long arithmetic overflows: a request with a port near i64::MAX makes it error.
    fs::write(
        dir.path().join("overflow.cedar"),
        "@id(\"port-overflow\")\nforbid (principal, action == Action::\"web_fetch_exa\", resource)\n\
         when { context has url && context.url.port * 1000000000000 > 5 };\n",
    )
    .expect("write");
    let reg = registry(dir.path());
    let report = prove_blocking(reg.cedar(), &Obligations::default(), &solver()).expect("answers");
    let failed: Vec<_> = report.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        failed[0].property,
        Property::NeverErrors {
            policy: "port-overflow".to_string()
        }
    );
    let cx = failed[0].counterexample().expect("a counterexample");
    assert_eq!(cx.action, "Action::\"web_fetch_exa\"");
    let port = cx.context["url"]["port"].as_i64().expect("a port");
    assert!(
        port.checked_mul(1_000_000_000_000).is_none(),
        "{port} does not overflow"
    );
}

#[test]
fn invalid_invariants_are_reported_by_file() {
    let reg = registry(&workspace().join("tools/policies"));
    let schema = &reg.cedar().schema;
    let empty = tempfile::tempdir().expect("temp dir");
    let e = read_invariants(empty.path(), schema).expect_err("no invariant");
    assert!(matches!(e, ProveError::Invalid { .. }), "{e}");
    assert!(e.to_string().contains("no invariant"), "{e}");

    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(
        dir.path().join("ok.cedar"),
        "permit (principal, action, resource);\n",
    )
    .expect("write");
    fs::write(
        dir.path().join("bad.cedar"),
        "forbid (principal, action == Action::\"nope\", resource);\n",
    )
    .expect("write");
    fs::write(dir.path().join("extra.cedarschema"), "entity Extra;\n").expect("write");
    let e = read_invariants(dir.path(), schema).expect_err("invalid");
    let text = e.to_string();
    assert!(
        text.contains("bad.cedar") && text.contains("nope"),
        "{text}"
    );
    assert!(text.contains("extra.cedarschema"), "{text}");
    assert!(!text.contains("ok.cedar"), "{text}");
}
