//! A record-first tool: the function takes and returns the types generated from the record.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use escepine_contract::{CallContext, Tool, ToolError, ToolFn};
use escepine_registry_macros::tool;

/// What registry-build generates from a record `echo` (here by hand, in its shape).
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
            pub key: Option<String>,
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

use registry::echo::{Input, Output};

#[tool(record = "echo")]
async fn echo(input: Input, cx: CallContext) -> Result<Output, ToolError> {
    Ok(Output {
        text: input.text,
        key: cx.idempotency_key,
    })
}

/// An infallible record-first tool with the path spelled out and `types` given.
#[tool(record = "echo", types = self::registry)]
async fn echo_again(input: registry::echo::Input) -> registry::echo::Output {
    Output {
        text: input.text,
        key: None,
    }
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn main() {
    let cx = CallContext::new(None, Some("key-1".into()));
    let out = block_on(<echo as ToolFn>::call(Input { text: "hi".into() }, cx)).unwrap();
    assert_eq!(
        (out.text.as_str(), out.key.as_deref()),
        ("hi", Some("key-1"))
    );
    let out = block_on(<echo_again as ToolFn>::call(
        Input { text: "yo".into() },
        CallContext::default(),
    ))
    .unwrap();
    assert_eq!(out.text, "yo");
    assert_eq!(<<echo as ToolFn>::Tool as Tool>::CONTRACT.id, "echo");
}
