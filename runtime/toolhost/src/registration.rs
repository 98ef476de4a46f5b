//! One served tool, with its types erased to JSON bytes.

use std::fmt;

use escepine_contract::{CallContext, Contract, LocalBoxFuture, Tool, ToolError, ToolFn};

/// Why one call through a [`Registration`] ended without an output.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The payload is not JSON of the tool's input type: permanent.
    #[error("the payload does not match the input type of `{tool}`: {source}")]
    Payload {
        /// The tool id.
        tool: &'static str,
        /// What serde reported.
        source: serde_json::Error,
    },
    /// The tool failed (transiently or not).
    #[error("{0}")]
    Tool(ToolError),
    /// The output did not serialise (a bug of the tool's output type).
    #[error("the output of `{tool}` does not serialise: {source}")]
    Output {
        /// The tool id.
        tool: &'static str,
        /// What serde reported.
        source: serde_json::Error,
    },
}

/// One call over JSON bytes: the payload in, the output out.
type RunJson = fn(&[u8], CallContext) -> LocalBoxFuture<Result<Vec<u8>, Failure>>;

/// A tool a host serves: its contract and its function, over JSON bytes.
///
/// Made with [`Registration::of`] from the type `#[tool]` defines beside the function.
#[derive(Clone, Copy)]
pub struct Registration {
    contract: fn() -> Contract,
    run: RunJson,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// The registration of the tool function `F`.
    pub const fn of<F: ToolFn>() -> Self {
        Self {
            contract: <F::Tool as Tool>::contract,
            run: run::<F>,
        }
    }

    /// The tool's contract, schemas included.
    pub fn contract(&self) -> Contract {
        (self.contract)()
    }

    /// The tool id.
    pub fn id(&self) -> &'static str {
        self.contract().id
    }

    /// Run one call: deserialise `payload`, await the function, serialise its output.
    pub fn call_json(
        &self,
        payload: &[u8],
        cx: CallContext,
    ) -> LocalBoxFuture<Result<Vec<u8>, Failure>> {
        (self.run)(payload, cx)
    }
}

fn run<F: ToolFn>(payload: &[u8], cx: CallContext) -> LocalBoxFuture<Result<Vec<u8>, Failure>> {
    let tool = <F::Tool as Tool>::CONTRACT.id;
    let input = match serde_json::from_slice(payload) {
        Ok(input) => input,
        Err(source) => {
            return Box::pin(std::future::ready(Err(Failure::Payload { tool, source })));
        }
    };
    Box::pin(async move {
        let output = F::call(input, cx).await.map_err(Failure::Tool)?;
        serde_json::to_vec(&output).map_err(|source| Failure::Output { tool, source })
    })
}
