//! What a tool host needs of a tool written in Rust: the function behind `#[tool]`, the
//! context of one call, and where the crate's registry came from at build time.

use std::future::Future;
use std::pin::Pin;

use crate::tool::Tool;
use crate::tool_error::{ToolError, ENV_CALL_ID, ENV_IDEMPOTENCY_KEY};

/// A boxed future that need not be `Send`: a tool host runs one call on a current-thread
/// runtime.
pub type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T> + 'static>>;

/// What one call of a tool knows besides its payload.
///
/// On the `stdio-json` transport both come from the environment the runtime sets for the
/// process ([`ENV_CALL_ID`], [`ENV_IDEMPOTENCY_KEY`]); a tool that writes should pass the
/// idempotency key on, since it is the same across the attempts of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallContext {
    /// The call id, when the runtime gave one.
    pub call_id: Option<String>,
    /// The idempotency key, the same for every attempt of one call, when the runtime gave one.
    pub idempotency_key: Option<String>,
}

impl CallContext {
    /// A context with the given ids.
    pub fn new(call_id: Option<String>, idempotency_key: Option<String>) -> Self {
        Self {
            call_id,
            idempotency_key,
        }
    }

    /// The context from the process environment (`ESCEPINE_CALL_ID`,
    /// `ESCEPINE_IDEMPOTENCY_KEY`); an unset or non-UTF-8 variable is `None`.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self::new(var(ENV_CALL_ID), var(ENV_IDEMPOTENCY_KEY))
    }
}

/// A tool implemented by an `async fn` annotated with `#[tool]`: what a tool host serves.
///
/// `#[tool]` implements it for a type named like the function (a braced struct, so the
/// function keeps its name in the value namespace). For a record-first tool, [`ToolFn::Tool`] is
/// the type `registry-build` generated from the record; for a Rust-first tool it is the type
/// itself.
pub trait ToolFn: 'static {
    /// The registered tool this function implements.
    type Tool: Tool;

    /// Run the function on a typed payload.
    fn call(
        input: <Self::Tool as Tool>::Input,
        cx: CallContext,
    ) -> LocalBoxFuture<Result<<Self::Tool as Tool>::Output, ToolError>>;
}

/// Where a crate of macro tools loaded its registry when it was built: written by the tool
/// build step (`escepine_registry_build::Builder`) as `SOURCES` beside the generated types, so
/// that the tests `#[tool]` generates check against the very inputs of the build. Paths are
/// absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildSources {
    /// Record files or directories (the records the crate implements record-first).
    pub records: &'static [&'static str],
    /// The policies directory (`*.cedar` and the `.cedarschema` declaring Rust-first actions).
    pub policies: Option<&'static str>,
    /// The deployment envelope.
    pub envelope: Option<&'static str>,
    /// The workspace whose binaries endpoints name.
    pub workspace_root: Option<&'static str>,
}

/// `Self` is `T`: how the expansion of a record-first `#[tool]` passes the record's generated
/// payload types to the function and back, so that a signature naming other types fails with
/// one message, at the user's type. Implemented only for `T` itself.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the type the record generates: a record-first tool takes and returns the record's types",
    label = "expected the record's `{T}`",
    note = "use the generated types (`<types>::<record>::Input` and `Output`), or declare the tool Rust-first with `id = …`"
)]
pub trait SameType<T> {
    /// `T` as `Self`.
    fn from_same(value: T) -> Self;
    /// `Self` as `T`.
    fn into_same(self) -> T;
}

impl<T> SameType<T> for T {
    fn from_same(value: T) -> Self {
        value
    }

    fn into_same(self) -> T {
        self
    }
}
