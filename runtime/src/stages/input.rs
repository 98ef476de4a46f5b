//! Stage 2: the input gate.

use serde_json::Value;

use super::context::CallContext;
use crate::error::CallError;
use escepine_policy::gate;

/// The payload checked against the tool's input schema: deviation is refused, nothing is
/// coerced. The returned value is the one payload authorization and execution both see (in
/// the OpenAI-strict dialect, `null` optional fields dropped first).
pub(crate) fn gate(cx: &CallContext<'_>, mut payload: Value) -> Result<Value, CallError> {
    if cx.opts.openai_strict_nulls {
        gate::drop_null_optionals(cx.tool.record.input_schema(), &mut payload);
    }
    cx.tool
        .input_gate
        .check(&payload)
        .map_err(CallError::InputRejected)?;
    files(cx)?;
    Ok(payload)
}

/// The caller's workspace files against the tool's declared inputs: each given file declared
/// and within its bound, each required input given. Every problem is named, not only the
/// first.
fn files(cx: &CallContext<'_>) -> Result<(), CallError> {
    let declared = &cx.tool.record.sandbox_profile().workspace_inputs;
    let tool = cx.tool.record.tool_id();
    let mut problems = Vec::new();
    for (name, file) in cx.opts.files.iter() {
        match declared.iter().find(|d| d.name == name) {
            None if declared.is_empty() => problems.push(format!(
                "`{name}` is not a workspace input of `{tool}`, which declares none \
                 (sandbox_profile.workspace_inputs)"
            )),
            None => problems.push(format!(
                "`{name}` is not a workspace input of `{tool}` (it declares {})",
                names(declared)
            )),
            Some(d) if file.len() > d.max_bytes => problems.push(format!(
                "the workspace input `{name}` has {} bytes, more than its max_bytes {}",
                file.len(),
                d.max_bytes
            )),
            Some(_) => {}
        }
    }
    for d in declared {
        if d.required && cx.opts.files.get(&d.name).is_none() {
            problems.push(format!(
                "the workspace input `{}` of `{tool}` is required and was not given",
                d.name
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CallError::FilesRejected(problems))
    }
}

/// The declared names, quoted, for an error.
fn names(declared: &[escepine_contract::WorkspaceInput]) -> String {
    declared
        .iter()
        .map(|d| format!("`{}`", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stages::context::CallOptions;
    use crate::stages::testing::{alice, context, loaded, n_schema, record, Fixed};

    #[test]
    fn conforming_payloads_pass_unchanged_and_others_are_refused() {
        let tool = loaded(record("t", n_schema(), n_schema()));
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(Vec::new()));
        assert_eq!(gate(&cx, json!({"n": 3})).ok(), Some(json!({"n": 3})));
        let Err(CallError::InputRejected(v)) = gate(&cx, json!({"n": 10})) else {
            panic!("a bound is enforced");
        };
        assert_eq!(
            (v[0].pointer.as_str(), v[0].keyword.as_str()),
            ("/n", "maximum")
        );
        assert!(matches!(
            gate(&cx, json!({"n": "3"})),
            Err(CallError::InputRejected(_))
        ));
    }

    #[test]
    fn a_tool_declaring_no_workspace_input_refuses_every_file() {
        let tool = loaded(record("t", n_schema(), n_schema()));
        let who = alice();
        let opts = CallOptions {
            files: escepine_contract::WorkspaceFiles::new().with("changelog", "x"),
            ..CallOptions::default()
        };
        let cx = context(&tool, &who, &opts, &Fixed(Vec::new()));
        let Err(CallError::FilesRejected(problems)) = gate(&cx, json!({"n": 3})) else {
            panic!("a file the tool does not declare is refused");
        };
        assert_eq!(
            problems,
            [
                "`changelog` is not a workspace input of `t`, which declares none \
              (sandbox_profile.workspace_inputs)"
            ]
        );
    }

    #[test]
    fn the_strict_dialect_drops_null_optionals_only_when_asked() {
        let schema = json!({
            "type": "object",
            "properties": { "n": { "type": "integer" }, "m": { "type": "integer" } },
            "required": ["n"],
            "additionalProperties": false
        });
        let tool = loaded(record("t", schema.clone(), schema));
        let who = alice();
        let plain = CallOptions::default();
        let cx = context(&tool, &who, &plain, &Fixed(Vec::new()));
        assert!(gate(&cx, json!({"n": 1, "m": null})).is_err());
        let strict = CallOptions {
            openai_strict_nulls: true,
            ..CallOptions::default()
        };
        let cx = context(&tool, &who, &strict, &Fixed(Vec::new()));
        assert_eq!(
            gate(&cx, json!({"n": 1, "m": null})).ok(),
            Some(json!({"n": 1}))
        );
    }
}
