//! The module import graph of a crate, read from its source tree, and a check that it has no
//! cycles.
//!
//! A module is a source file: `lib.rs` (or `main.rs`) is `crate`, `a.rs` and `a/mod.rs` are
//! `crate::a`, `a/b.rs` is `crate::a::b`. Module `A` depends on module `B` when a `use` item or
//! a path anywhere in `A`'s file (inline `mod tests { … }` blocks included, as part of their
//! file) names `B` or an item inside it: `crate::b::x`, `super::x` (a child naming its parent
//! counts), `self::child::x`, or `child::x` for a child module of `A`. A `pub use` re-export is a
//! dependency too; a `mod` declaration alone is not. Paths inside macro invocations are not read.
//!
//! ```no_run
//! let graph = escepine_module_graph::read(std::path::Path::new("src")).unwrap();
//! if let Err(cycles) = graph.check_acyclic() {
//!     panic!("{cycles}");
//! }
//! ```

#![deny(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Why a source tree could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A directory or file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid Rust.
    #[error("{path} is not valid Rust: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: syn::Error,
    },
}

/// One reference from a module to another: the file it is written in and the path as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    /// The file holding the reference.
    pub file: PathBuf,
    /// The path, as written (`crate::registry::list_files`, `super::Tools`).
    pub path: String,
}

/// Modules (by path, `crate::a::b`) and, for each, the modules it depends on with the references
/// that make it depend on them.
#[derive(Debug, Clone, Default)]
pub struct ModuleGraph {
    modules: BTreeMap<String, PathBuf>,
    edges: BTreeMap<String, BTreeMap<String, Vec<Reference>>>,
}

/// Every cycle found: each a set of modules that depend on each other, with the references
/// between them.
#[derive(Debug, Clone)]
pub struct Cycles(pub Vec<Cycle>);

/// Modules that depend on each other (a strongly connected component of more than one module).
#[derive(Debug, Clone)]
pub struct Cycle {
    /// The modules, sorted.
    pub modules: Vec<String>,
    /// `(from, to, first reference)` for every dependency inside the cycle.
    pub edges: Vec<(String, String, Reference)>,
}

impl fmt::Display for Cycles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} module import cycle(s):", self.0.len())?;
        for c in &self.0 {
            writeln!(f, "- {}", c.modules.join(" <-> "))?;
            for (from, to, r) in &c.edges {
                writeln!(
                    f,
                    "    {from} -> {to}: `{}` in {}",
                    r.path,
                    r.file.display()
                )?;
            }
        }
        write!(
            f,
            "a helper used by two modules lives in a module below both of them"
        )
    }
}

impl std::error::Error for Cycles {}

/// Read the module graph of the crate whose source directory is `src_dir`.
pub fn read(src_dir: &Path) -> Result<ModuleGraph, Error> {
    let mut files = Vec::new();
    list_rs(src_dir, &mut files)?;
    files.sort();
    let mut graph = ModuleGraph::default();
    for file in &files {
        if let Some(module) = module_of(src_dir, file) {
            graph.modules.insert(module, file.clone());
        }
    }
    let known: BTreeSet<String> = graph.modules.keys().cloned().collect();
    for (module, file) in graph.modules.clone() {
        let text = fs::read_to_string(&file).map_err(|source| Error::Io {
            path: file.clone(),
            source,
        })?;
        let ast = syn::parse_file(&text).map_err(|source| Error::Parse {
            path: file.clone(),
            source,
        })?;
        let mut collect = Collect {
            known: &known,
            file_module: &module,
            scope: split(&module),
            found: Vec::new(),
        };
        collect.visit_file(&ast);
        for (target, path) in collect.found {
            if target != module {
                graph
                    .edges
                    .entry(module.clone())
                    .or_default()
                    .entry(target)
                    .or_default()
                    .push(Reference {
                        file: file.clone(),
                        path,
                    });
            }
        }
    }
    Ok(graph)
}

impl ModuleGraph {
    /// Every module, by path.
    pub fn modules(&self) -> impl Iterator<Item = &str> {
        self.modules.keys().map(String::as_str)
    }

    /// The modules `module` depends on.
    pub fn dependencies(&self, module: &str) -> impl Iterator<Item = &str> {
        self.edges
            .get(module)
            .into_iter()
            .flat_map(|m| m.keys().map(String::as_str))
    }

    /// Keep only the modules `keep` accepts (and the dependencies between them).
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.modules.retain(|m, _| keep(m));
        self.edges.retain(|m, _| keep(m));
        for targets in self.edges.values_mut() {
            targets.retain(|m, _| keep(m));
        }
    }

    /// Every cycle (strongly connected component of more than one module), sorted.
    pub fn cycles(&self) -> Vec<Cycle> {
        let nodes: Vec<&str> = self.modules.keys().map(String::as_str).collect();
        let index: BTreeMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let succ: Vec<Vec<usize>> = nodes
            .iter()
            .map(|n| {
                self.dependencies(n)
                    .filter_map(|d| index.get(d).copied())
                    .collect()
            })
            .collect();
        tarjan(&succ)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|component| {
                let mut modules: Vec<String> =
                    component.iter().map(|&i| nodes[i].to_string()).collect();
                modules.sort();
                let mut edges = Vec::new();
                for from in &modules {
                    for to in &modules {
                        if let Some(r) = self
                            .edges
                            .get(from)
                            .and_then(|m| m.get(to))
                            .and_then(|v| v.first())
                        {
                            edges.push((from.clone(), to.clone(), r.clone()));
                        }
                    }
                }
                Cycle { modules, edges }
            })
            .collect()
    }

    /// `Ok` when no modules depend on each other, else every cycle.
    pub fn check_acyclic(&self) -> Result<(), Cycles> {
        let cycles = self.cycles();
        if cycles.is_empty() {
            Ok(())
        } else {
            Err(Cycles(cycles))
        }
    }
}

fn list_rs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let rd = fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in rd {
        let path = entry
            .map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?
            .path();
        if path.is_dir() {
            list_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The module path of a source file (`None` for a file that is not a module of the tree, such
/// as `src/bin/x.rs`).
fn module_of(src_dir: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src_dir).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return Some("crate".into());
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(
        std::iter::once("crate".to_string())
            .chain(parts)
            .collect::<Vec<_>>()
            .join("::"),
    )
}

fn split(module: &str) -> Vec<String> {
    module.split("::").map(str::to_string).collect()
}

/// Collects the modules a file's paths name.
struct Collect<'a> {
    known: &'a BTreeSet<String>,
    file_module: &'a str,
    /// The module the visitor is in (the file's module, plus inline modules).
    scope: Vec<String>,
    /// `(target module, path as written)`.
    found: Vec<(String, String)>,
}

impl Collect<'_> {
    /// Record the module `segments` (as written in `self.scope`) names, if any.
    fn name(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut abs: Vec<String> = match first.as_str() {
            "crate" => vec!["crate".into()],
            "self" => self.scope.clone(),
            "super" => {
                let mut s = self.scope.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|x| x == "super") {
                    s.pop();
                    rest = &rest[1..];
                }
                s.extend(rest.iter().cloned());
                return self.record(s, segments);
            }
            _ => {
                // A child module of the current one, else an item or another crate.
                let mut s = self.scope.clone();
                s.push(first.clone());
                if !self.known.contains(&s.join("::")) {
                    return;
                }
                self.scope.clone()
            }
        };
        let skip = usize::from(matches!(first.as_str(), "crate" | "self"));
        abs.extend(segments.iter().skip(skip).cloned());
        self.record(abs, segments);
    }

    fn record(&mut self, abs: Vec<String>, written: &[String]) {
        // The longest prefix that is a module of the tree.
        for len in (1..=abs.len()).rev() {
            let candidate = abs[..len].join("::");
            if self.known.contains(&candidate) {
                if candidate != self.file_module {
                    self.found.push((candidate, written.join("::")));
                }
                return;
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut s = prefix.clone();
                if n.ident != "self" {
                    s.push(n.ident.to_string());
                }
                self.name(&s);
            }
            syn::UseTree::Rename(r) => {
                let mut s = prefix.clone();
                if r.ident != "self" {
                    s.push(r.ident.to_string());
                }
                self.name(&s);
            }
            syn::UseTree::Glob(_) => {
                let s = prefix.clone();
                self.name(&s);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collect<'_> {
    fn visit_item_use(&mut self, i: &'ast syn::ItemUse) {
        let mut prefix = Vec::new();
        self.use_tree(&mut prefix, &i.tree);
    }

    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        if i.content.is_some() {
            self.scope.push(i.ident.to_string());
            syn::visit::visit_item_mod(self, i);
            self.scope.pop();
        }
    }

    /// `pub(crate)` and `pub(super)` name no dependency.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.name(&segments);
        }
        syn::visit::visit_path(self, p);
    }
}

/// Tarjan's strongly connected components of a graph given by successor lists.
fn tarjan(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn connect(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.succ[v] {
            match s.index[w] {
                None => {
                    connect(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = succ.len();
    let mut s = State {
        succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            connect(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempdir::Dir {
        let dir = tempdir::Dir::new();
        for (path, text) in files {
            let p = dir.0.join(path);
            fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
            fs::write(p, text).expect("write");
        }
        dir
    }

    /// A temporary directory removed on drop (no dependency for one test helper).
    mod tempdir {
        use std::path::PathBuf;

        pub struct Dir(pub PathBuf);

        impl Dir {
            pub fn new() -> Self {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let p = std::env::temp_dir().join(format!(
                    "module-graph-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::SeqCst)
                ));
                std::fs::create_dir_all(&p).expect("mkdir");
                Self(p)
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn a_helper_used_both_ways_is_a_cycle_with_its_references() {
        let dir = tree(&[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "use crate::b::helper; pub(crate) fn list() {}"),
            ("b.rs", "pub fn helper() { crate::a::list(); }"),
        ]);
        let graph = read(&dir.0).expect("reads");
        let cycles = graph.check_acyclic().expect_err("a cycle");
        assert_eq!(cycles.0.len(), 1);
        assert_eq!(cycles.0[0].modules, ["crate::a", "crate::b"]);
        let text = cycles.to_string();
        assert!(
            text.contains("crate::a -> crate::b: `crate::b::helper`"),
            "{text}"
        );
        assert!(
            text.contains("crate::b -> crate::a: `crate::a::list`"),
            "{text}"
        );
    }

    #[test]
    fn a_child_naming_its_parent_counts_and_tests_blocks_do_not_loop_on_their_file() {
        let dir = tree(&[
            ("lib.rs", "mod sop;"),
            (
                "sop/mod.rs",
                "mod check; pub use check::run; pub fn type_name() {}",
            ),
            (
                "sop/check.rs",
                "use super::type_name; pub fn run() {} #[cfg(test)] mod tests { use super::*; }",
            ),
        ]);
        let graph = read(&dir.0).expect("reads");
        let cycles = graph.check_acyclic().expect_err("a cycle");
        assert_eq!(cycles.0[0].modules, ["crate::sop", "crate::sop::check"]);
    }

    #[test]
    fn a_helper_below_both_users_is_no_cycle() {
        let dir = tree(&[
            ("lib.rs", "mod a; mod b; mod files;"),
            ("a.rs", "use crate::files::list; use crate::b::f;"),
            ("b.rs", "pub fn f() { super::files::list(); }"),
            (
                "files.rs",
                "pub fn list() { let _ = std::fs::read_dir(\".\"); }",
            ),
        ]);
        let graph = read(&dir.0).expect("reads");
        graph.check_acyclic().expect("acyclic");
        let deps: Vec<&str> = graph.dependencies("crate::a").collect();
        assert_eq!(deps, ["crate::b", "crate::files"]);
        assert_eq!(
            graph.dependencies("crate::b").collect::<Vec<_>>(),
            ["crate::files"]
        );
    }

    #[test]
    fn unparsable_source_names_its_file() {
        let dir = tree(&[("lib.rs", "fn (")]);
        let err = read(&dir.0).expect_err("does not parse");
        assert!(
            err.to_string().contains("lib.rs is not valid Rust"),
            "{err}"
        );
    }
}
