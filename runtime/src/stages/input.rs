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
    Ok(payload)
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
