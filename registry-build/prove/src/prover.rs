//! The proofs: for every request environment of the schema, each policy never errors, the
//! enforced set implies each invariant, and (with an old set) the enforced set implies it.

use cedar_policy::{PolicySet, RequestEnv, Schema};
use cedar_policy_symcc::err::Error as SymccError;
use cedar_policy_symcc::solver::LocalSolver;
use cedar_policy_symcc::{CedarSymCompiler, CompiledPolicy, CompiledPolicySet, Env};
use escepine_policy::cedar::Binding;
use serde_json::Value;

use crate::error::ProveError;
use crate::obligations::Obligations;
use crate::report::{Counterexample, Outcome, Property, Report, RequestEnvironment, Step, Verdict};
use crate::solver::Solver;

/// Prove every property of `binding`'s enforced policies and of `obligations`, with one
/// solver process for the whole run. Stops at the first solver or compiler error; a property
/// that does not hold is an outcome with its counterexample, not an error.
///
/// # Errors
/// [`ProveError::SolverMissing`], [`ProveError::SolverFailed`], [`ProveError::SolverUnknown`]
/// (never a pass), [`ProveError::Symbolic`] or [`ProveError::Environment`].
pub async fn prove(
    binding: &Binding,
    obligations: &Obligations,
    solver: &Solver,
) -> Result<Report, ProveError> {
    let mut run = Run {
        compiler: compiler(solver)?,
        program: solver.program_name().to_string(),
    };
    let modelled = with_model(&binding.policies, &obligations.model);
    let mut envs: Vec<RequestEnv> = binding.schema.request_envs().collect();
    envs.sort_by_key(|req| environment(req).to_string());
    let mut report = Report::default();
    for req in envs {
        let env = environment(&req);
        let enforced = compile_set(&modelled, &req, &binding.schema).map_err(|source| {
            ProveError::Environment {
                env: Box::new(env.clone()),
                source,
            }
        })?;
        for policy in binding.policies.policies() {
            let property = Property::NeverErrors {
                policy: policy.id().to_string(),
            };
            let compiled = CompiledPolicy::compile(policy, &req, &binding.schema)
                .map_err(|e| symbolic(e, &property, &env))?;
            let found = run
                .compiler
                .check_never_errors_with_counterexample_opt(&compiled)
                .await;
            report.outcomes.push(run.outcome(property, &env, found)?);
        }
        let mut implied: Vec<(Property, &PolicySet)> = obligations
            .invariants
            .iter()
            .map(|i| {
                let name = i.name.clone();
                (Property::Invariant { name }, &i.policies)
            })
            .collect();
        if let Some(old) = &obligations.against {
            let old_label = old.label.clone();
            implied.push((Property::OnlyRestricts { old: old_label }, &old.policies));
        }
        for (property, set) in implied {
            let other = compile_set(set, &req, &binding.schema)
                .map_err(|e| symbolic(*e, &property, &env))?;
            let found = run.implies(enforced.as_ref(), other.as_ref()).await;
            report.outcomes.push(run.outcome(property, &env, found)?);
        }
    }
    Ok(report)
}

/// [`prove`] from synchronous code, on a runtime of its own.
///
/// # Errors
/// As [`prove`], and [`ProveError::Runtime`] when no runtime can be started.
pub fn prove_blocking(
    binding: &Binding,
    obligations: &Obligations,
    solver: &Solver,
) -> Result<Report, ProveError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ProveError::Runtime)?;
    runtime.block_on(prove(binding, obligations, solver))
}

/// One proof run: the compiler over one solver process.
struct Run {
    compiler: CedarSymCompiler<LocalSolver>,
    program: String,
}

impl Run {
    /// `check_implies(enforced, other)` with its counterexample: a request `enforced` permits
    /// and `other` does not. An empty set (`None`) permits nothing: it implies every set, and
    /// only a set that permits nothing implies it.
    async fn implies(
        &mut self,
        enforced: Option<&CompiledPolicySet>,
        other: Option<&CompiledPolicySet>,
    ) -> Result<Option<Env>, SymccError> {
        match (enforced, other) {
            (None, _) => Ok(None),
            (Some(enforced), None) => {
                self.compiler
                    .check_always_denies_with_counterexample_opt(enforced)
                    .await
            }
            (Some(enforced), Some(other)) => {
                self.compiler
                    .check_implies_with_counterexample_opt(enforced, other)
                    .await
            }
        }
    }

    /// The outcome of one check, or the error that stopped it.
    fn outcome(
        &self,
        property: Property,
        env: &RequestEnvironment,
        found: Result<Option<Env>, SymccError>,
    ) -> Result<Outcome, ProveError> {
        let verdict = match found {
            Ok(None) => Verdict::Proved,
            Ok(Some(model)) => Verdict::Failed(Box::new(counterexample(&model))),
            Err(SymccError::SolverUnknown) => {
                return Err(ProveError::SolverUnknown {
                    program: self.program.clone(),
                    step: step(property, env),
                })
            }
            Err(source @ SymccError::SolverError(_)) => {
                return Err(ProveError::SolverFailed {
                    program: self.program.clone(),
                    step: step(property, env),
                    source: Box::new(source),
                })
            }
            Err(source) => return Err(symbolic(source, &property, env)),
        };
        Ok(Outcome {
            property,
            env: env.clone(),
            verdict,
        })
    }
}

fn compiler(solver: &Solver) -> Result<CedarSymCompiler<LocalSolver>, ProveError> {
    let process = solver.spawn()?;
    // `new` cannot fail in the pinned version; its error is the compiler's own.
    CedarSymCompiler::new(process).map_err(|source| ProveError::SolverMissing {
        program: solver.program_name().to_string(),
        source: std::io::Error::other(source.to_string()),
    })
}

/// The enforced policies and the request model's `forbid`s, as one set.
fn with_model(enforced: &PolicySet, model: &PolicySet) -> PolicySet {
    let mut set = enforced.clone();
    for policy in model.policies() {
        // The model's ids carry their own prefix; a clash leaves the enforced policy alone.
        let _ = set.add(policy.clone());
    }
    set
}

/// The set compiled for one environment; `None` when it holds no policy.
fn compile_set(
    set: &PolicySet,
    req: &RequestEnv,
    schema: &Schema,
) -> Result<Option<CompiledPolicySet>, Box<SymccError>> {
    if set.policies().next().is_none() {
        return Ok(None);
    }
    CompiledPolicySet::compile(set, req, schema)
        .map(Some)
        .map_err(Box::new)
}

fn symbolic(source: SymccError, property: &Property, env: &RequestEnvironment) -> ProveError {
    ProveError::Symbolic {
        step: step(property.clone(), env),
        source: Box::new(source),
    }
}

fn step(property: Property, env: &RequestEnvironment) -> Box<Step> {
    Box::new(Step {
        property,
        env: env.clone(),
    })
}

fn environment(req: &RequestEnv) -> RequestEnvironment {
    RequestEnvironment {
        principal: req.principal().to_string(),
        action: req.action().to_string(),
        resource: req.resource().to_string(),
    }
}

/// The solver's model as a request: uids as `Type::"id"`, context and entities as Cedar JSON.
fn counterexample(model: &Env) -> Counterexample {
    let uid = |u: Option<&cedar_policy::EntityUid>| u.map(ToString::to_string).unwrap_or_default();
    let request = &model.request;
    Counterexample {
        principal: uid(request.principal()),
        action: uid(request.action()),
        resource: uid(request.resource()),
        context: request
            .context()
            .and_then(|c| c.to_json_value().ok())
            .unwrap_or(Value::Null),
        entities: model.entities.to_json_value().unwrap_or(Value::Null),
    }
}
