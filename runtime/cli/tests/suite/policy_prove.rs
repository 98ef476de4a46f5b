//! `escepine policy prove` over the catalog, over a widened copy of its policies, and with a
//! solver that is missing or answers `unknown`. The proofs run the real cvc5 (installed by
//! `.ci/cvc5`); without it these tests fail, saying so.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::str::FromStr;

use cedar_policy::EntityUid;
use escepine_contract::Principal;
use escepine_policy::authorize::Authorizer;
use escepine_policy::gate::SchemaGate;
use escepine_policy::BoundRegistry;
use escepine_registry::registry::Sources;
use serde_json::{json, Value};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace holds runtime/cli")
        .to_path_buf()
}

fn catalog(sub: &str) -> PathBuf {
    workspace().join("tools").join(sub)
}

/// The solver the command will run: `$CVC5`, else `cvc5` on `PATH`. A test that needs it
/// fails (never skips) when it is not there.
fn require_cvc5() {
    let found = match std::env::var_os("CVC5") {
        Some(p) => Path::new(&p).is_file(),
        None => std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("cvc5").is_file())),
    };
    assert!(
        found,
        "cvc5 is not installed (neither $CVC5 nor `cvc5` on PATH): run `bash .ci/cvc5` \
         (README's test command runs it through .ci/fixtures)"
    );
}

fn escepine(args: &[&Path], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_escepine"));
    cmd.args(["policy", "prove"]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("escepine runs")
}

/// `policy prove --records <catalog> --policies P [--invariants DIR] [--against OLD]`.
fn prove(policies: &Path, invariants: Option<&Path>, against: Option<&Path>) -> Output {
    prove_with(policies, invariants, against, &[])
}

fn prove_with(
    policies: &Path,
    invariants: Option<&Path>,
    against: Option<&Path>,
    env: &[(&str, &Path)],
) -> Output {
    let records = catalog("records");
    let mut args: Vec<&Path> = vec![
        Path::new("--records"),
        &records,
        Path::new("--policies"),
        policies,
    ];
    if let Some(dir) = invariants {
        args.extend([Path::new("--invariants"), dir]);
    }
    if let Some(dir) = against {
        args.extend([Path::new("--against"), dir]);
    }
    escepine(&args, env)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn describe(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The catalog's policies without the LinkedIn forbid (`page_read.cedar`), in a temp dir.
fn widened() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for entry in fs::read_dir(catalog("policies")).expect("catalog policies") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("file name");
        if name != "page_read.cedar" {
            fs::copy(&path, dir.path().join(name)).expect("copy");
        }
    }
    dir
}

/// Each `failed:` line of the output with the JSON of its `counterexample:` line.
fn failures(out: &str) -> Vec<(String, Value)> {
    let lines: Vec<&str> = out.lines().collect();
    lines
        .windows(2)
        .filter_map(|w| {
            let failed = w[0].strip_prefix("failed: ")?;
            let json = w[1].strip_prefix("counterexample: ")?;
            let value = serde_json::from_str(json).expect("the counterexample is JSON");
            Some((failed.to_string(), value))
        })
        .collect()
}

#[test]
fn the_catalog_proves_every_invariant_and_that_no_policy_errors() {
    require_cvc5();
    let o = prove(&catalog("policies"), Some(&catalog("invariants")), None);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let out = stdout(&o);
    assert!(!out.contains("failed:"), "{out}");
    for expected in [
        "proved: invariant no-linkedin-page-reads.cedar for Agent, Action::\"firecrawl_scrape\", Tool",
        "proved: invariant no-linkedin-page-reads.cedar for Agent, Action::\"web_fetch_exa\", Tool",
        "proved: invariant bulk-fetch-https-only.cedar for Agent, Action::\"web_fetch_exa\", Tool",
        "proved: invariant bulk-fetch-no-internal-hosts.cedar for Agent, Action::\"web_fetch_exa\", Tool",
        "proved: never-errors page-read-no-linkedin for Agent, Action::\"web_fetch_exa\", Tool",
        "proved: never-errors bulk-fetch-no-internal-addresses for Agent, Action::\"web_fetch_exa\", Tool",
    ] {
        assert!(out.contains(expected), "missing `{expected}` in\n{out}");
    }
    // Every action of the catalog's schema: 9 tools, `Action::"approve"` and
    // `Action::"declassify"` (the flow policies use both); 10 policies and 3 invariants each.
    let last = out.lines().last().unwrap_or_default();
    assert_eq!(last, "143 proved, 0 failed", "{out}");
}

#[test]
fn a_widened_set_fails_the_invariant_with_counterexamples_the_runtime_allows() {
    require_cvc5();
    let wide = widened();
    let o = prove(wide.path(), Some(&catalog("invariants")), None);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let failed = failures(&stdout(&o));
    let names: Vec<&str> = failed.iter().map(|(f, _)| f.as_str()).collect();
    // Exactly the page-read tools, and only the LinkedIn invariant.
    assert_eq!(
        names,
        [
            "invariant no-linkedin-page-reads.cedar for Agent, Action::\"firecrawl_scrape\", Tool",
            "invariant no-linkedin-page-reads.cedar for Agent, Action::\"tavily_crawl\", Tool",
            "invariant no-linkedin-page-reads.cedar for Agent, Action::\"web_fetch_exa\", Tool",
        ],
        "{}",
        describe(&o)
    );

    let records = catalog("records");
    let load = |policies: &Path| {
        escepine_policy::load(&Sources::new().records(&records).policies(policies))
            .expect("the registry loads")
    };
    let widened_registry = load(wide.path());
    let catalog_registry = load(&catalog("policies"));
    let mut realised = 0;
    for (failure, cx) in &failed {
        let Some(call) = RealCall::from_counterexample(&widened_registry, cx) else {
            continue;
        };
        realised += 1;
        let widened_decision = call.authorize(&widened_registry);
        assert!(
            widened_decision.allowed(),
            "{failure}: {call:?} is denied by the widened set: {widened_decision:?}"
        );
        let catalog_decision = call.authorize(&catalog_registry);
        assert!(
            !catalog_decision.allowed(),
            "{failure}: {call:?} is allowed by the catalog's policies"
        );
        assert!(
            catalog_decision
                .policy_ids()
                .iter()
                .any(|p| p == "page-read-no-linkedin"),
            "{failure}: denied, but not by the LinkedIn forbid: {catalog_decision:?}"
        );
    }
    // web_fetch_exa's counterexample always is (its scheme is `https`, the only one allowed).
    assert!(
        realised >= 1,
        "no counterexample could be realised: {failed:?}"
    );
}

/// A counterexample made a call: the tool from the resource, the payload from
/// `context.input` with the URL field set to the URL the `context.url` facts describe.
#[derive(Debug)]
struct RealCall {
    principal: Principal,
    tool: String,
    payload: Value,
    entities: Value,
}

impl RealCall {
    /// `None` when the facts name no URL a parser reads (the solver may pick a scheme such as
    /// `/`, which no URL has; the runtime then never makes such a request).
    fn from_counterexample(registry: &BoundRegistry, cx: &Value) -> Option<Self> {
        let resource = EntityUid::from_str(cx["resource"].as_str()?).expect("resource uid");
        let tool = resource.id().unescaped().to_string();
        let record = registry
            .records()
            .iter()
            .find(|r| r.tool_id() == tool)
            .expect("the resource is a catalog tool");
        let facts = &cx["context"]["url"];
        let scheme = facts["scheme"].as_str()?;
        let valid_scheme = scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if !valid_scheme {
            return None;
        }
        let host = facts["host"].as_str()?;
        let port = facts["port"].as_i64()?;
        let path = facts["path"].as_str()?;
        let url = format!("{scheme}://{host}:{port}{path}");
        url::Url::parse(&url).ok()?;

        let mut payload = cx["context"]["input"].clone();
        let shape = escepine_registry::urls::per_url(record.input_schema());
        if let Some(list) = shape.each.first() {
            let element = match &list.item_url {
                None => json!(url),
                Some(pointer) => {
                    let mut e = json!({});
                    set(&mut e, pointer, json!(url));
                    e
                }
            };
            set(&mut payload, &list.list, json!([element]));
        } else if let Some((pointer, _)) = &shape.single {
            set(&mut payload, pointer, json!(url));
        }
        let gate = SchemaGate::new(record.input_schema()).expect("input gate");
        if let Err(v) = gate.check(&payload) {
            panic!("{tool}: the payload {payload} does not pass the input gate: {v:?}");
        }

        let principal = EntityUid::from_str(cx["principal"].as_str()?).expect("principal uid");
        // The principals and their groups; the authorizer adds the tools and the actions.
        let entities: Vec<Value> = cx["entities"]
            .as_array()?
            .iter()
            .filter(|e| {
                let ty = e["uid"]["type"].as_str().unwrap_or_default();
                ty != "Action" && ty != "Tool"
            })
            .cloned()
            .collect();
        Some(Self {
            principal: Principal {
                entity_type: principal.type_name().to_string(),
                id: principal.id().unescaped().to_string(),
            },
            tool,
            payload,
            entities: Value::Array(entities),
        })
    }

    fn authorize(&self, registry: &BoundRegistry) -> escepine_policy::authorize::Decision {
        let authorizer =
            Authorizer::new(registry.cedar(), registry.records(), Some(&self.entities))
                .expect("the authorizer builds");
        authorizer.authorize(&self.principal, &self.tool, &self.payload)
    }
}

/// Set the field at JSON `pointer` (`/a/b`), making objects on the way.
fn set(value: &mut Value, pointer: &str, to: Value) {
    let mut at = value;
    for key in pointer.split('/').skip(1) {
        if !at.is_object() {
            *at = json!({});
        }
        at = at
            .as_object_mut()
            .expect("an object")
            .entry(key.to_string())
            .or_insert(Value::Null);
    }
    *at = to;
}

#[test]
fn against_the_catalog_a_widening_fails_and_a_restriction_proves() {
    require_cvc5();
    let wide = widened();
    let o = prove(wide.path(), None, Some(&catalog("policies")));
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let failed = failures(&stdout(&o));
    assert_eq!(failed.len(), 3, "{}", describe(&o));
    for (failure, cx) in &failed {
        assert!(failure.starts_with("restricts "), "{failure}");
        let host = cx["context"]["url"]["host"].as_str().unwrap_or_default();
        assert!(
            host == "linkedin.com" || host.ends_with(".linkedin.com"),
            "{failure}: the widening is LinkedIn, not {host}"
        );
    }

    let o = prove(&catalog("policies"), None, Some(wide.path()));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        stdout(&o).contains("proved: restricts "),
        "{}",
        describe(&o)
    );
}

#[test]
fn a_missing_solver_exits_2_never_0() {
    let o = prove_with(
        &catalog("policies"),
        Some(&catalog("invariants")),
        None,
        &[("CVC5", Path::new("/nonexistent"))],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/nonexistent") && err.contains(".ci/cvc5"),
        "{err}"
    );
    assert!(!stdout(&o).contains("proved:"), "{}", describe(&o));
}

#[test]
fn a_solver_answering_unknown_exits_2_never_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fake = dir.path().join("cvc5");
    // Reads commands line by line and answers `unknown` to every (check-sat).
    fs::write(
        &fake,
        "#!/bin/sh\nwhile IFS= read -r line; do\n  case \"$line\" in\n    \
         *'(check-sat)'*) echo unknown ;;\n  esac\ndone\n",
    )
    .expect("write the fake solver");
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).expect("chmod");
    let o = prove_with(
        &catalog("policies"),
        Some(&catalog("invariants")),
        None,
        &[("CVC5", &fake)],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown"), "{err}");
}

#[test]
fn an_invariant_that_does_not_validate_names_its_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(
        dir.path().join("typo.cedar"),
        "permit (principal, action, resource);\n\
         forbid (principal, action == Action::\"web_fetch_exa\", resource)\n\
         when { context has url && context.url.shceme != \"https\" };\n",
    )
    .expect("write");
    let o = prove_with(
        &catalog("policies"),
        Some(dir.path()),
        None,
        &[("CVC5", Path::new("/nonexistent"))],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("typo.cedar") && err.contains("shceme"),
        "{err}"
    );
}
