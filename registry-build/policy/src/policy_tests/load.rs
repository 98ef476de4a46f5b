//! Reading policy test files: every file of a directory (or one file), every problem of every
//! file reported at once, each at its JSON pointer; then what the runner needs, built once (an
//! input gate per tool, an authorizer per distinct set of entities).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use escepine_contract::Principal;
use serde_json::Value;

use super::error::PolicyTestError;
use super::format::{Expect, TestFile};
use crate::authorize::{AuthorizeError, Authorizer};
use crate::gate::SchemaGate;
use crate::BoundRegistry;
use escepine_registry::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use escepine_registry::fields;
use escepine_registry::files::read_files;
use escepine_registry::rule::Rule;
use escepine_registry::schema::walk::escape;

/// The cases of every test file, ready to run against one registry.
#[derive(Debug)]
pub struct PolicyTests {
    pub(super) files: Vec<Suite>,
    /// Authorizers by entities: the first has none.
    pub(super) authorizers: Vec<Authorizer>,
}

impl PolicyTests {
    /// How many cases there are, over all files.
    pub fn len(&self) -> usize {
        self.files.iter().map(|f| f.cases.len()).sum()
    }

    /// Whether there is no case at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The cases of one file.
#[derive(Debug)]
pub(super) struct Suite {
    pub file: PathBuf,
    pub cases: Vec<Prepared>,
}

/// One case, checked.
#[derive(Debug)]
pub(super) struct Prepared {
    pub name: String,
    pub principal: Principal,
    pub tool: String,
    /// The tool's input gate.
    pub gate: Arc<SchemaGate>,
    pub input: Value,
    /// The state of the call's flow.
    pub flow: escepine_contract::FlowState,
    /// Index into [`PolicyTests::authorizers`].
    pub authorizer: usize,
    pub expect: Expect,
    pub policies: Option<BTreeSet<String>>,
}

/// Read the test files at `path` (every `*.json` of a directory, or one file) and check each
/// case against `registry`: the file's shape, the principal, the tool, unique case names in a
/// file, the entities.
///
/// # Errors
/// [`PolicyTestError::Files`] with every problem of every file (a missing path, a file that is
/// not JSON, a field the format does not know, a bad principal, an unknown tool, a duplicate
/// case name, entities that do not conform) or no test file at all;
/// [`PolicyTestError::Authorizer`] and [`PolicyTestError::Gate`] when the registry itself
/// cannot be authorized or gated (as the runtime would fail at start-up).
pub fn load(registry: &BoundRegistry, path: &Path) -> Result<PolicyTests, PolicyTestError> {
    let sources = read_files(path).map_err(PolicyTestError::Files)?;
    if sources.is_empty() {
        let mut d = Diagnostics::new();
        d.push(Diagnostic::file(
            Rule::Missing,
            path,
            "no policy test files (`*.json`) here",
        ));
        return Err(PolicyTestError::Files(d));
    }
    let mut tests = PolicyTests {
        files: Vec::new(),
        authorizers: vec![authorizer(registry, None)?],
    };
    let mut gates: HashMap<String, Arc<SchemaGate>> = HashMap::new();
    let mut entity_sets: Vec<Value> = Vec::new();
    let mut diags = Diagnostics::new();
    for src in &sources {
        let Some(file) = parse(src, &mut diags) else {
            continue;
        };
        let mut suite = Suite {
            file: src.path.clone(),
            cases: Vec::new(),
        };
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (i, case) in file.cases.iter().enumerate() {
            let at = |field: &str| format!("/cases/{i}/{}", escape(field));
            let mut ok = true;
            if let Some(first) = names.insert(&case.name, i) {
                diags.push(Diagnostic::at(
                    Rule::PolicyTestName,
                    src,
                    &at("name"),
                    format!(
                        "case name \"{}\" is also the name of case {first} (/cases/{first}/name)",
                        case.name
                    ),
                ));
                ok = false;
            }
            let principal = match case.principal.parse::<Principal>() {
                Ok(p) => Some(p),
                Err(e) => {
                    diags.push(Diagnostic::at(
                        Rule::PolicyTestPrincipal,
                        src,
                        &at("principal"),
                        e.to_string(),
                    ));
                    None
                }
            };
            let gate = match registry.get(&case.tool) {
                Some(record) => match gates.get(&case.tool) {
                    Some(gate) => Some(Arc::clone(gate)),
                    None => {
                        let gate = SchemaGate::new(record.input_schema()).map_err(|message| {
                            PolicyTestError::Gate {
                                tool: case.tool.clone(),
                                message,
                            }
                        })?;
                        let gate = Arc::new(gate);
                        gates.insert(case.tool.clone(), Arc::clone(&gate));
                        Some(gate)
                    }
                },
                None => {
                    let ids = registry.records().iter().map(|r| r.tool_id());
                    let mut d = Diagnostic::at(
                        Rule::PolicyTestTool,
                        src,
                        &at("tool"),
                        format!("no registered tool is named `{}`", case.tool),
                    );
                    if let Some(close) = fields::closest(&case.tool, ids) {
                        d = d.help(format!("did you mean `{close}`?"));
                    }
                    diags.push(d);
                    None
                }
            };
            let index = match &case.entities {
                None => Some(0),
                Some(json) => match entity_sets.iter().position(|e| e == json) {
                    Some(k) => Some(k + 1),
                    None => match authorizer(registry, Some(json)) {
                        Ok(a) => {
                            entity_sets.push(json.clone());
                            tests.authorizers.push(a);
                            Some(entity_sets.len())
                        }
                        Err(PolicyTestError::Authorizer(AuthorizeError::Entities(message))) => {
                            diags.push(Diagnostic::at(
                                Rule::PolicyTestEntities,
                                src,
                                &at("entities"),
                                message,
                            ));
                            None
                        }
                        Err(e) => return Err(e),
                    },
                },
            };
            let (Some(principal), Some(gate), Some(authorizer), true) =
                (principal, gate, index, ok)
            else {
                continue;
            };
            suite.cases.push(Prepared {
                name: case.name.clone(),
                principal,
                tool: case.tool.clone(),
                gate,
                input: case.input.clone(),
                flow: case.flow.as_ref().map(|f| f.state()).unwrap_or_default(),
                authorizer,
                expect: case.expect,
                policies: case.policies.as_ref().map(|p| p.iter().cloned().collect()),
            });
        }
        tests.files.push(suite);
    }
    if diags.has_errors() {
        diags.sort();
        return Err(PolicyTestError::Files(diags));
    }
    Ok(tests)
}

/// The authorizer a real call of `registry` would use, with `entities`.
fn authorizer(
    registry: &BoundRegistry,
    entities: Option<&Value>,
) -> Result<Authorizer, PolicyTestError> {
    Authorizer::new(registry.cedar(), registry.records(), entities)
        .map_err(PolicyTestError::Authorizer)
}

/// The file as the format reads it, or its problem at its JSON pointer.
fn parse(src: &SourceFile, diags: &mut Diagnostics) -> Option<TestFile> {
    let value = match fields::parse(src) {
        Ok(v) => v,
        Err(d) => {
            diags.push(*d);
            return None;
        }
    };
    match serde_path_to_error::deserialize::<_, TestFile>(&value) {
        Ok(file) => Some(file),
        Err(e) => {
            let pointer = pointer_of(e.path());
            diags.push(Diagnostic::at(
                Rule::PolicyTestShape,
                src,
                &pointer,
                e.into_inner().to_string(),
            ));
            None
        }
    }
}

/// A serde path as a JSON pointer (`cases[2].expect` is `/cases/2/expect`).
fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => {
                out.push('/');
                out.push_str(&index.to_string());
            }
            Segment::Map { key } => {
                out.push('/');
                out.push_str(&escape(key));
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}
