//! The build step (`escepine_registry_build::Builder`) on inputs made here: a
//! crate of Rust-first tools only (no records), and a `.cedarschema` the rules reject.

use std::fs;

use escepine_registry_build::{BuildError, Builder};

const SCHEMA: &str = r#"
action "page_summary" in ["read-only", "page-read"] appliesTo {
  principal: [Agent],
  resource: [Tool],
  context: { input: { text: String } },
};
action "page-read";
"#;

#[test]
fn rust_first_only_crate_gets_markers_for_its_declared_actions() {
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    fs::create_dir(&policies).unwrap();
    fs::write(policies.join("schema.cedarschema"), SCHEMA).unwrap();
    fs::write(
        policies.join("open.cedar"),
        "permit(principal, action == Action::\"page_summary\", resource);\n",
    )
    .unwrap();

    let code = Builder::new()
        .policies(&policies)
        .cargo_directives(false)
        .generate()
        .unwrap_or_else(|e| panic!("{e}"));
    // The declared tool action and group, beside the generated class groups.
    for needle in [
        "pub struct page_summary;",
        "const ACTION_ID: &'static str = \"page_summary\";",
        "pub struct page_read;",
        "pub struct read_only;",
        "pub const SOURCES: ::escepine_contract::BuildSources",
    ] {
        assert!(code.contains(needle), "{needle} missing from:\n{code}");
    }
    // `SOURCES` names the policies directory the build read, relative to the crate that
    // includes the code (through its `CARGO_MANIFEST_DIR`): the path it names, resolved there,
    // is the policies directory, however the two paths are spelled.
    let manifest = fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    let policies_path = fs::canonicalize(&policies).unwrap();
    let named = policies_literal(&code);
    let resolved =
        fs::canonicalize(manifest.join(named.trim_start_matches('/'))).unwrap_or_else(|e| {
            panic!(
                "`{named}` does not resolve from {}: {e}",
                manifest.display()
            )
        });
    assert_eq!(resolved, policies_path, "`SOURCES.policies` is `{named}`");

    // `compile` writes it once, and leaves an unchanged file alone.
    let out = dir.path().join("out");
    let builder = Builder::new()
        .policies(&policies)
        .cargo_directives(false)
        .out_dir(&out);
    builder.compile().unwrap();
    let written = out.join("escepine_tools.rs");
    assert_eq!(fs::read_to_string(&written).unwrap(), code);
    let before = fs::metadata(&written).unwrap().modified().unwrap();
    builder.compile().unwrap();
    assert_eq!(fs::metadata(&written).unwrap().modified().unwrap(), before);
}

#[test]
fn a_rejected_policy_fails_the_build_with_its_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("schema.cedarschema"), SCHEMA).unwrap();
    fs::write(
        dir.path().join("bad.cedar"),
        "permit(principal, action == Action::\"page_sumary\", resource);\n",
    )
    .unwrap();
    let err = Builder::new()
        .policies(dir.path())
        .cargo_directives(false)
        .generate()
        .unwrap_err();
    assert!(matches!(err, BuildError::Registry(_)), "{err}");
    let text = err.to_string();
    assert!(text.contains("bad.cedar"), "{text}");
}

/// The path `SOURCES.policies` names after `CARGO_MANIFEST_DIR` in the generated `code`.
fn policies_literal(code: &str) -> String {
    let sources = &code[code.find("pub const SOURCES").expect("SOURCES")..];
    let policies = &sources[sources.find("policies:").expect("a policies field")..];
    let after = &policies[policies
        .find("CARGO_MANIFEST_DIR")
        .expect("relative to the crate")..];
    let mut quoted = after.split('"').skip(2);
    quoted.next().expect("the relative path").to_string()
}
