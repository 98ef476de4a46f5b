//! The testtool as a registered tool: [`testtool`] finds `escepine-testtool` (see [`crate::bins`];
//! `ESCEPINE_TESTTOOL=/path/to/escepine-testtool` names another), and [`testtool_record`] is a
//! registered record whose endpoint is the testtool in a given mode.

use std::path::PathBuf;
use std::sync::OnceLock;

use escepine_contract::{FailureOutcome, Filesystem, RetryPolicy, SideEffectClass, Transport};
use registry_build::{EndpointSpec, ResolvedCommand, SandboxProfile, ToolRecord};
use serde_json::json;

use crate::bins;

/// Name of the testtool's binary.
pub const TESTTOOL: &str = bins::TESTTOOL.bin;

/// The path of a current `escepine-testtool`.
///
/// # Panics
/// When it is not built or older than its sources (the message says how to build it).
pub fn testtool() -> PathBuf {
    static TOOL: OnceLock<PathBuf> = OnceLock::new();
    TOOL.get_or_init(|| bins::path(bins::TESTTOOL)).clone()
}

/// A registered record for the testtool in `mode` (its first argument), at its absolute path,
/// with permissive schemas (the executor does not gate) and a 10 s timeout.
///
/// # Panics
/// As [`testtool`].
pub fn testtool_record(tool_id: &str, mode: &str) -> ToolRecord {
    ToolRecord {
        source: PathBuf::from("<test>"),
        tool_id: tool_id.to_string(),
        version: "1.0.0".parse().expect("a semver version"),
        title: None,
        description: format!("escepine-testtool in mode {mode}"),
        open_world: None,
        input_schema: json!({ "type": "object" }),
        output_schema: json!({ "type": "object" }),
        cedar_action: tool_id.to_string(),
        action_groups: Vec::new(),
        side_effect_class: SideEffectClass::ReadOnly,
        compensation: None,
        timeout_ms: 10_000,
        retry: RetryPolicy {
            max_attempts: 1,
            backoff_ms: 0,
        },
        on_failure: vec![FailureOutcome::Halt],
        endpoint: EndpointSpec {
            transport: Transport::StdioJson,
            command: testtool().display().to_string(),
            args: vec![mode.to_string()],
            sha256: None,
            image: None,
            definition_sha256: None,
            resolved: ResolvedCommand::Path(testtool()),
        },
        secrets: Vec::new(),
        sandbox_profile: SandboxProfile {
            egress: Vec::new(),
            authorized_urls: false,
            filesystem: Filesystem::Workspace,
            read_only: Vec::new(),
        },
    }
}
