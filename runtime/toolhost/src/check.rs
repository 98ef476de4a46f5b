//! What the test generated for each Rust-first tool checks (feature `check`).
//!
//! [`rust_first`] builds the tool's record from its contract (schemas from its payload types),
//! loads it with the crate's build inputs ([`BuildSources`]: its record-first records, its
//! policies and `.cedarschema`, the envelope, the workspace) — so every registration rule,
//! Cedar strict validation and the checks of a user-declared action (its groups, `Agent`,
//! `Tool`) apply — and then compares the context type the `.cedarschema` declares for the
//! tool's action with the one its payload schema implies (`context.input`, and `context.url` for
//! per-URL requests).

use escepine_contract::{BuildSources, Tool};

/// Check the Rust-first tool `T` against every registration rule and its declared Cedar
/// context; panics with every problem found (this is a test).
#[track_caller]
pub fn rust_first<T: Tool>(sources: &BuildSources) {
    if let Err(problems) = try_rust_first::<T>(sources) {
        panic!("{problems}");
    }
}

/// [`rust_first`], returning the problems instead of panicking.
///
/// # Errors
/// The rendered diagnostics of the registration rules, or the context mismatch.
#[cfg(feature = "check")]
pub fn try_rust_first<T: Tool>(sources: &BuildSources) -> Result<(), String> {
    imp::check(&T::contract(), sources)
}

/// [`rust_first`], returning the problems instead of panicking.
///
/// # Errors
/// Always, without the `check` feature: it says how to enable it.
#[cfg(not(feature = "check"))]
pub fn try_rust_first<T: Tool>(_sources: &BuildSources) -> Result<(), String> {
    Err(format!(
        "checking `{}` needs the `check` feature of escepine-toolhost: add \
         `escepine-toolhost = {{ …, features = [\"check\"] }}` to [dev-dependencies]",
        T::CONTRACT.id
    ))
}

#[cfg(feature = "check")]
mod imp {
    use std::path::Path;

    use escepine_contract::{BuildSources, Contract};
    use escepine_policy::cedar::{context, Binding};
    use escepine_registry::diagnostic::SourceFile;
    use escepine_registry::record::ToolRecord;
    use escepine_registry::registry::Sources;
    use escepine_registry::rule::Rule;

    pub(super) fn check(contract: &Contract, sources: &BuildSources) -> Result<(), String> {
        let id = contract.id;
        let record = contract
            .to_record()
            .map_err(|e| format!("the contract of `{id}` has a schema that is not JSON: {e}"))?;
        let text = serde_json::to_string_pretty(&record).unwrap_or_default();
        let path = format!("#[tool] {id}");
        let (binding, checked) =
            match escepine_policy::load(&base(sources).record_text(&path, text.clone())) {
                Ok(registry) => {
                    let checked = registry
                        .get(id)
                        .cloned()
                        .ok_or_else(|| format!("`{id}` was not registered"))?;
                    (registry.cedar().clone(), checked)
                }
                // An inverse that is not among the crate's records (another Rust-first tool of the
                // crate, say) cannot be checked from here: `escepine check` over the host's
                // `--describe` output checks the compensation map. Every other rule still applies.
                Err(d)
                    if d.iter().all(|d| {
                        d.rule == Rule::CompensationInverse && d.file == Path::new(&path)
                    }) =>
                {
                    eprintln!(
                        "note: the inverse of `{id}` is not among the build's records; its \
                     compensation map is checked by `escepine check` over the `--describe` output"
                    );
                    bind_alone(&text, &path, sources)?
                }
                Err(d) => {
                    return Err(format!(
                        "the contract of Rust-first tool `{id}` breaks registration rules:\n{}",
                        d.render()
                    ))
                }
            };
        context_matches(&binding, &checked)
    }

    /// The build's sources (records, policies, envelope, workspace).
    fn base(sources: &BuildSources) -> Sources {
        let mut s = Sources::new();
        for r in sources.records {
            s = s.records(r);
        }
        if let Some(p) = sources.policies {
            s = s.policies(p);
        }
        if let Some(e) = sources.envelope {
            s = s.envelope(e);
        }
        if let Some(w) = sources.workspace_root {
            s = s.workspace_root(w);
        }
        s
    }

    /// The Cedar binding of the build's records and this tool's record (which passed its own
    /// rules: registered again by them, without the cross-record ones), with the tool's record.
    fn bind_alone(
        text: &str,
        path: &str,
        sources: &BuildSources,
    ) -> Result<(Binding, ToolRecord), String> {
        let base = base(sources);
        let registry = escepine_policy::load(&base)
            .map_err(|d| format!("the build's registry does not load:\n{}", d.render()))?;
        let record = escepine_registry::registry::check_record(&base, &SourceFile::new(path, text))
            .map_err(|d| format!("the record of `{path}` does not register:\n{}", d.render()))?;
        let mut records = registry.records().to_vec();
        records.push(record.clone());
        let binding = escepine_policy::cedar::bind(&records, sources.policies.map(Path::new))
            .map_err(|d| {
                format!(
                    "the Cedar binding of `{}` fails:\n{}",
                    record.tool_id(),
                    d.render()
                )
            })?;
        Ok((binding, record))
    }

    fn context_matches(binding: &Binding, record: &ToolRecord) -> Result<(), String> {
        let action = record.cedar_action();
        let generated_text =
            escepine_policy::cedar::generated_schema_text(std::slice::from_ref(record));
        let expected = context::generated_in(&generated_text, action)
            .map_err(|e| format!("the generated Cedar schema does not parse: {e}"))?;
        let declared = context::declared(&binding.schema_files, action)?;
        let declaration = context::declaration_of(&generated_text, action);
        let Some((file, declared)) = declared else {
            return Err(format!(
                "the action `Action::\"{action}\"` of Rust-first tool `{}` is not declared in a \
                 `.cedarschema` beside the policies; declare it there:\n\n{declaration}",
                record.tool_id()
            ));
        };
        // An action may leave out `context.flow`: its requests then carry no flow, and a policy
        // reading it does not validate (so nothing escapes a rule on flows silently).
        let mut without_flow = expected.clone();
        if let Some(attrs) = without_flow
            .get_mut("Record")
            .and_then(serde_json::Value::as_object_mut)
        {
            attrs.remove(escepine_policy::cedar::flow::FLOW_ATTRIBUTE);
        }
        if declared == expected || declared == without_flow {
            return Ok(());
        }
        Err(format!(
            "{}: the context of `Action::\"{action}\"` does not match the payload of `{}`:\n  \
             declared: {}\n  expected: {}\n\ndeclare the action as its payload implies:\n\n\
             {declaration}",
            file.display(),
            record.tool_id(),
            context::render(&declared),
            context::render(&expected)
        ))
    }
}
