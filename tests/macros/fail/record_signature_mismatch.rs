use escepine_contract::ToolError;
use escepine_registry_macros::tool;

/// What registry-build generates from a record `echo`, in its shape.
mod registry {
    pub mod actions {
        #[allow(non_camel_case_types)]
        pub struct echo;
        impl escepine_contract::CedarAction for echo {
            const ACTION_ID: &'static str = "echo";
            const IS_GROUP: bool = false;
        }
    }
    pub mod echo {
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Input {
            pub text: String,
        }
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Output {
            pub text: String,
        }
        pub struct Tool;
        impl escepine_contract::Tool for Tool {
            type Input = Input;
            type Output = Output;
            type Action = super::actions::echo;
            const CONTRACT: escepine_contract::Contract = escepine_contract::Contract {
                id: "echo",
                version: "1.0.0",
                title: None,
                description: "Echo.",
                open_world: None,
                cedar_action: "echo",
                action_groups: &[],
                class: escepine_contract::SideEffectClass::ReadOnly,
                compensation: None,
                timeout_ms: 1000,
                retry: escepine_contract::RetryPolicy {
                    max_attempts: 1,
                    backoff_ms: 0,
                },
                on_failure: &[escepine_contract::FailureOutcome::Halt],
                endpoint: escepine_contract::Endpoint {
                    transport: escepine_contract::Transport::StdioJson,
                    command: "tools",
                    args: &["echo"],
                    sha256: None,
                    image: None,
                    definition_sha256: None, url: None, tool: None,
                },
                secrets: &[],
                egress: &[],
                filesystem: escepine_contract::Filesystem::Workspace,
                isolation: escepine_contract::Isolation::Namespaces,
                read_only: &[],
                input_schema: "{}",
                output_schema: "{}",
            };
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct MyOutput {
    pub text: String,
}

#[tool(record = "echo")]
async fn echo(input: String) -> Result<MyOutput, ToolError> {
    Ok(MyOutput { text: input })
}

fn main() {}
