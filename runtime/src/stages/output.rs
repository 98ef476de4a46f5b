//! Stage 6: the output gate — before anything is committed or returned.

use serde_json::Value;

use super::context::CallContext;
use super::ended::Ended;
use crate::report::CallOutcome;
use escepine_ledger::entry::{canonical_json, sha256_hex};
use escepine_policy::gate::violation_list;

/// The output scrubbed of the call's secrets, then checked against the output schema: a
/// conforming output ends the call `ok`; any other is rejected (its hash recorded, the output
/// never returned).
pub(crate) fn gate(cx: &CallContext<'_>, mut output: Value) -> Ended {
    cx.scrubber.value(&mut output);
    let hash = Some(sha256_hex(canonical_json(&output).as_bytes()));
    match cx.tool.output_gate.check(&output) {
        Ok(()) => Ended {
            outcome: CallOutcome::Ok(output),
            output_hash: hash,
            error: None,
        },
        Err(violations) => Ended {
            error: Some(format!("output rejected: {}", violation_list(&violations))),
            outcome: CallOutcome::OutputRejected { violations },
            output_hash: hash,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stages::context::CallOptions;
    use crate::stages::testing::{alice, builder, context, loaded, Fixed};

    #[test]
    fn outputs_are_scrubbed_before_the_gate_and_rejected_ones_only_hashed() {
        let out = json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 12 } },
            "required": ["text"],
            "additionalProperties": false
        });
        let rec = builder(
            "t",
            json!({"type": "object", "additionalProperties": false}),
            out,
        )
        .secrets(["KEY"])
        .registered();
        let tool = loaded(rec);
        let (who, opts) = (alice(), CallOptions::default());
        let cx = context(&tool, &who, &opts, &Fixed(vec![("KEY", "s3cr3t")]));

        let ended = gate(&cx, json!({"text": "s3cr3t"}));
        let CallOutcome::Ok(v) = &ended.outcome else {
            panic!("conforms: {ended:?}");
        };
        assert!(!v.to_string().contains("s3cr3t"), "{v}");
        assert_eq!(
            ended.output_hash,
            Some(sha256_hex(canonical_json(v).as_bytes()))
        );

        let ended = gate(&cx, json!({"text": "ok", "extra": 1}));
        let CallOutcome::OutputRejected { violations } = &ended.outcome else {
            panic!("rejected: {ended:?}");
        };
        assert_eq!(violations[0].keyword, "additionalProperties");
        assert!(ended.output_hash.is_some());
        assert!(ended
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("output rejected: ")));
    }
}
