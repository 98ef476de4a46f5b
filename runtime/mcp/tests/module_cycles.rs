//! No two modules of this crate depend on each other (a `super` from a child to its parent
//! counts): a helper used by two modules lives below both.

use std::path::Path;

#[test]
fn the_module_graph_is_acyclic() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = escepine_module_graph::read(&src).unwrap_or_else(|e| panic!("{e}"));
    assert!(graph.modules().count() > 5, "the crate's modules are read");
    if let Err(cycles) = graph.check_acyclic() {
        panic!("{cycles}");
    }
}
