//! The input gate over the schema `#[derive(Payload)]` emits (`schema_of`): a Rust integer's
//! width bounds what the gate lets through, so a value the type cannot hold is refused before
//! any tool runs, instead of failing the tool's own decoding.

use escepine_contract::payload::schema_of;
use escepine_policy::gate::SchemaGate;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Input {
    limit: u32,
    offset: i16,
    #[serde(default)]
    small: Option<u8>,
}

#[test]
fn a_value_the_rust_type_cannot_hold_is_refused_by_the_gate() {
    let schema = schema_of::<Input>();
    let gate = SchemaGate::new(&schema).expect("the schema compiles");
    let ok = json!({"limit": 4_294_967_295u64, "offset": -32768, "small": 255});
    assert!(gate.check(&ok).is_ok(), "{schema}");
    let cases = [
        (
            json!({"limit": 5_000_000_000u64, "offset": 0}),
            "/limit",
            "maximum",
        ),
        (json!({"limit": -1, "offset": 0}), "/limit", "minimum"),
        (json!({"limit": 1, "offset": 32768}), "/offset", "maximum"),
        (json!({"limit": 1, "offset": -32769}), "/offset", "minimum"),
        (
            json!({"limit": 1, "offset": 0, "small": 256}),
            "/small",
            "maximum",
        ),
    ];
    for (value, pointer, keyword) in cases {
        let violations = gate.check(&value).expect_err("refused");
        assert!(
            violations
                .iter()
                .any(|v| v.pointer == pointer && v.keyword == keyword),
            "{value}: {violations:?}"
        );
        // What the gate refuses is what the type cannot decode.
        assert!(serde_json::from_value::<Input>(value).is_err());
    }
}
