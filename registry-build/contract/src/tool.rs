//! The traits generated code implements: a tool known at compile time, its Cedar action, and
//! the seam the typed client calls through.

use std::future::Future;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::contract::Contract;
use crate::files::WorkspaceFiles;
use crate::principal::Principal;

/// A registered tool known at compile time.
///
/// Implemented by the types `registry-build` generates from JSON records and by the `#[tool]`
/// attribute macro. The runtime treats both alike: everything it needs is in [`Tool::CONTRACT`].
pub trait Tool: Send + Sync + 'static {
    /// The typed payload (closed at every depth: `#[serde(deny_unknown_fields)]`).
    type Input: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The typed output.
    type Output: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The Cedar action marker this tool is bound to at compile time.
    type Action: CedarAction;
    /// The registered contract: id, version, class, limits, profile, schemas.
    ///
    /// A Rust-first tool (`#[tool(id = …)]`) derives its schemas from its payload types when
    /// the program runs, so its `CONTRACT` leaves `input_schema` and `output_schema` empty;
    /// [`Tool::contract`] has them.
    const CONTRACT: Contract;

    /// The contract with its schema texts: [`Tool::CONTRACT`] for a tool generated from a
    /// record; for a Rust-first tool, `CONTRACT` with the normalised schemas of its payload
    /// types (computed once per process).
    fn contract() -> Contract {
        Self::CONTRACT
    }
}

/// A Cedar action of the generated schema, as a type (`actions::firecrawl_scrape`).
pub trait CedarAction: Send + Sync + 'static {
    /// The action's entity id: `Action::"<ACTION_ID>"`.
    const ACTION_ID: &'static str;
    /// Whether this action is an action group (a class group or a record's `action_groups`).
    const IS_GROUP: bool;
    /// The context type a `.cedarschema` declares for the action, as the build step read it
    /// ([`Shape::Unchecked`](crate::cedar_shape::Shape::Unchecked) when no schema file
    /// declares it): what `#[tool]` checks its input against while the crate compiles.
    const CONTEXT: crate::cedar_shape::Shape = crate::cedar_shape::Shape::Unchecked;
    /// The `.cedarschema` file declaring the action, as the crate names it (empty when none).
    const SCHEMA_FILE: &'static str = "";
}

/// The seam between the generated typed client and whatever executes calls (the runtime).
///
/// The generated client trait is implemented for every `Invoke` type, so
/// `runtime.firecrawl_scrape(&principal, input).await` type-checks against the record's schema.
pub trait Invoke: Send + Sync {
    /// The error a call can end with.
    type Error: Send;

    /// Run one governed call of tool `T` for `principal`, with no workspace files.
    fn invoke<T: Tool>(
        &self,
        principal: &Principal,
        input: T::Input,
    ) -> impl Future<Output = Result<T::Output, Self::Error>> + Send {
        self.invoke_with_files::<T>(principal, input, WorkspaceFiles::new())
    }

    /// Run one governed call of tool `T` for `principal`, giving it `files`: each placed
    /// read-only at `/workspace/<name>` when the tool declares it
    /// (`sandbox_profile.workspace_inputs`); a file it does not declare refuses the call.
    fn invoke_with_files<T: Tool>(
        &self,
        principal: &Principal,
        input: T::Input,
        files: WorkspaceFiles,
    ) -> impl Future<Output = Result<T::Output, Self::Error>> + Send;
}
