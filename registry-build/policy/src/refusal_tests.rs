//! Tests of refusals no registered record can reach: a record whose fields only this crate can
//! change, given to a later stage that must not rely on the registration rules.

mod cedar_schema {
    use std::path::PathBuf;

    use serde_json::json;

    use crate::cedar::try_generated_schema_text;
    use escepine_registry::rule::Rule;
    use escepine_registry::testing::RecordBuilder;

    #[test]
    fn recursive_input_schema_is_a_cedar_schema_error_naming_the_record() {
        // The record rules refuse a recursive schema first; the generator does not rely on it.
        // Only this crate can hold such a record: a registered one with its schema replaced.
        let r = RecordBuilder::new("tree_walk")
            .source("tools/records/tree_walk.json")
            .registered_with_input_schema(json!({"type": "object", "additionalProperties": false,
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "additionalProperties": false,
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}));
        let diags = try_generated_schema_text(std::slice::from_ref(&r))
            .expect_err("a recursive schema has no Cedar type");
        let d = diags.iter().next().expect("one diagnostic");
        assert_eq!(d.rule, Rule::CedarSchema);
        assert_eq!(d.file, PathBuf::from("tools/records/tree_walk.json"));
        assert_eq!(
            d.pointer.as_deref(),
            Some("/input_schema/$defs/Node/properties/children/items")
        );
        let diags = crate::cedar::bind(&[r], None).expect_err("bind refuses it too");
        assert!(diags.has(Rule::CedarSchema));
    }
}
