//! Registries for tests (feature `testing`): records made by
//! [`RecordBuilder`], policies, a Cedar schema, an envelope and SOPs given as text and loaded by
//! [`load`](crate::load), so every registration rule and Cedar's strict validation apply.

use std::collections::BTreeSet;

use escepine_registry::diagnostic::Diagnostics;
use escepine_registry::registry::Sources;
use escepine_registry::testing::RecordBuilder;
use serde_json::Value;

use crate::BoundRegistry;

/// A registry under construction: records, policies, a Cedar schema, an envelope and SOPs,
/// given as text and loaded by [`load`](crate::load).
#[derive(Debug, Clone, Default)]
pub struct RegistryBuilder {
    records: Vec<RecordBuilder>,
    sources: Sources,
}

impl RegistryBuilder {
    /// An empty registry (no policies: every call would be denied).
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a record.
    pub fn record(mut self, record: RecordBuilder) -> Self {
        self.records.push(record);
        self
    }

    /// Add a policy file's text (`*.cedar`).
    pub fn policy(mut self, name: &str, text: &str) -> Self {
        self.sources = self
            .sources
            .policy_text(format!("<test>/policies/{name}.cedar"), text);
        self
    }

    /// Add a Cedar schema's text (`*.cedarschema`), declaring actions and types the policies
    /// use beyond the generated ones.
    pub fn cedar_schema(mut self, name: &str, text: &str) -> Self {
        self.sources = self
            .sources
            .policy_text(format!("<test>/policies/{name}.cedarschema"), text);
        self
    }

    /// Set the deployment envelope (its JSON), so the rules that compare with it apply.
    pub fn envelope(mut self, envelope: &Value) -> Self {
        let text = serde_json::to_string_pretty(envelope).unwrap_or_default();
        self.sources = self.sources.envelope_text("<test>/envelope.json", text);
        self
    }

    /// Add an SOP (its JSON), checked against the records.
    pub fn sop(mut self, name: &str, sop: &Value) -> Self {
        let text = serde_json::to_string_pretty(sop).unwrap_or_default();
        self.sources = self
            .sources
            .sop_text(format!("<test>/sops/{name}.json"), text);
        self
    }

    /// The loaded registry: every rule applied, the policies validated strictly.
    ///
    /// # Errors
    /// Every problem of every file, as [`load`](crate::load) reports them.
    pub fn build(&self) -> Result<BoundRegistry, Diagnostics> {
        let mut sources = self.sources.clone();
        let mut bins = BTreeSet::new();
        for r in &self.records {
            sources.record_texts.push(r.to_source());
            bins.extend(r.workspace_bins().iter().cloned());
        }
        sources.workspace_bins = Some(bins);
        crate::load(&sources)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use escepine_contract::SideEffectClass;
    use escepine_registry::rule::Rule;
    use serde_json::json;

    #[test]
    fn a_registry_applies_the_cross_record_rules_and_the_policies() {
        let publish = RecordBuilder::new("note_publish")
            .class(SideEffectClass::Compensatable)
            .output_schema(json!({"type": "object", "additionalProperties": false,
                "properties": {"note_id": {"type": "string"}}}))
            .compensation("note_retract", [("note_id", "/output/note_id")]);
        // Alone, its own rules pass; in a registry its inverse must be registered.
        assert!(publish.build().is_ok());
        let d = RegistryBuilder::new()
            .record(publish.clone())
            .build()
            .expect_err("no inverse");
        assert!(d.has(Rule::CompensationInverse), "{}", d.render());

        let retract = RecordBuilder::new("note_retract")
            .class(SideEffectClass::Supersede)
            .input_schema(json!({"type": "object", "additionalProperties": false,
                "required": ["note_id"], "properties": {"note_id": {"type": "string"}}}));
        let registry = RegistryBuilder::new()
            .record(publish)
            .record(retract)
            .policy("all", "permit(principal, action, resource);")
            .build()
            .unwrap_or_else(|d| panic!("{}", d.render()));
        let ids: Vec<&str> = registry.records().iter().map(|r| r.tool_id()).collect();
        assert_eq!(ids, ["note_publish", "note_retract"]);
        assert_eq!(registry.cedar().policies.policies().count(), 1);

        let d = RegistryBuilder::new()
            .record(RecordBuilder::new("t"))
            .policy(
                "bad",
                "permit(principal, action == Action::\"nope\", resource);",
            )
            .build()
            .expect_err("an unknown action");
        assert!(d.iter().any(|d| d.is_error()), "{}", d.render());
    }
}
