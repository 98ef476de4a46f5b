//! Compiles what the tools of this crate name: the record `url_normalize` implements
//! (record-first) and the Cedar action markers of `policies/schema.cedarschema` (the actions of
//! the Rust-first tools), validated with this crate's policies and the catalog's envelope.

fn main() -> Result<(), escepine_registry_build::BuildError> {
    escepine_registry_build::Builder::new()
        .records("../records/url_normalize.json")
        .policies("policies")
        .envelope("../envelope.json")
        .workspace_root("../..")
        .compile()
}
