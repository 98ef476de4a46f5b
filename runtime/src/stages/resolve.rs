//! Stage 1: resolve the tool by name. The one stage before the call context, which holds what
//! it resolves.

use std::collections::HashMap;

use super::context::LoadedTool;
use crate::error::CallError;

/// The registered tool `name`; an unknown name is refused with no call and no record.
pub(crate) fn resolve<'a>(
    tools: &'a HashMap<String, LoadedTool>,
    name: &str,
) -> Result<&'a LoadedTool, CallError> {
    tools
        .get(name)
        .ok_or_else(|| CallError::UnknownTool(name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::{loaded, n_schema, record};

    #[test]
    fn only_registered_names_resolve() {
        let mut tools = HashMap::new();
        tools.insert("t".to_string(), loaded(record("t", n_schema(), n_schema())));
        assert_eq!(
            resolve(&tools, "t").map(|t| t.record.tool_id()).ok(),
            Some("t")
        );
        let err = resolve(&tools, "T").err();
        assert!(
            matches!(&err, Some(CallError::UnknownTool(n)) if n == "T"),
            "{err:?}"
        );
    }
}
