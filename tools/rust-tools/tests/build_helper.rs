//! The tool host's build helper (`escepine_toolhost::build::Builder`) on inputs made here: a
//! crate of Rust-first tools only (no records), and a `.cedarschema` the rules reject.

use std::fs;

use escepine_toolhost::build::{BuildError, Builder};

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
    // `SOURCES` names the policies directory the build read (relative to the crate that
    // includes the code, through its `CARGO_MANIFEST_DIR`).
    let manifest = fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    let policies_path = fs::canonicalize(&policies).unwrap();
    let depth = manifest.components().count() - 1;
    let relative = format!(
        "/{}{}",
        "../".repeat(depth),
        policies_path.display().to_string().trim_start_matches('/')
    );
    assert!(
        code.contains(&format!("{relative:?}")),
        "{relative} missing from:\n{code}"
    );

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
