//! The generation benchmark of `benches/codegen.rs` in a program whose global allocator is
//! mimalloc, as a build script may choose: the generator makes and frees millions of small token
//! trees, and the allocator is about half of its time with glibc's.
//!
//! ```text
//! cargo bench -p escepine-registry-build --bench codegen --bench codegen_mimalloc
//! ```

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "codegen.rs"]
mod codegen;

fn main() {
    codegen::main();
}
