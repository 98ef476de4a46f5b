//! The flag groups commands share: the registry inputs ([`RegistryArgs`]) and everything that
//! builds a runtime ([`RuntimeArgs`]: entities, overlay, ledger, budgets, executor, secrets).

use std::path::PathBuf;

use escepine_ledger::location::LedgerLocation;
use escepine_ledger::store::Durability;
use escepine_policy::BoundRegistry;
use escepine_runtime::budget::Budgets;
use escepine_runtime::overlay::Overlay;
use escepine_runtime::Runtime;
use serde_json::Value;

use crate::error::CliError;
use crate::exit;
use crate::tool_run::ToolRunArgs;

/// Registry inputs shared by the commands.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RegistryArgs {
    /// Directory of tool records (`*.json`).
    #[arg(long, value_name = "DIR")]
    pub(crate) records: PathBuf,
    /// Directory of Cedar policies (`*.cedar`, optional `*.cedarschema`).
    #[arg(long, value_name = "DIR")]
    pub(crate) policies: Option<PathBuf>,
    /// Deployment envelope; without it the coverage rule is skipped.
    #[arg(long, value_name = "FILE")]
    pub(crate) envelope: Option<PathBuf>,
}

impl RegistryArgs {
    /// The sources these flags name.
    pub(crate) fn sources(&self) -> escepine_registry::registry::Sources {
        let mut s = escepine_registry::registry::Sources::new().records(&self.records);
        if let Some(p) = &self.policies {
            s = s.policies(p);
        }
        if let Some(e) = &self.envelope {
            s = s.envelope(e);
        }
        s
    }

    /// The registry these flags name; invalid inputs are their rendered diagnostics.
    pub(crate) fn load(&self) -> Result<BoundRegistry, CliError> {
        load(&self.sources())
    }
}

/// The registry of `sources`; invalid inputs are their rendered diagnostics (exit 1).
pub(crate) fn load(
    sources: &escepine_registry::registry::Sources,
) -> Result<BoundRegistry, CliError> {
    escepine_policy::load(sources).map_err(|d| CliError::text(exit::INVALID, d.render()))
}

/// The JSON file at `path` (an entities file, say).
///
/// # Errors
/// Exit status `code`, naming the file, when it cannot be read or is not strict JSON (a key
/// given twice is refused with its pointer).
pub(crate) fn read_json(path: &std::path::Path, code: i32) -> Result<Value, CliError> {
    escepine_contract::strict_json::read_file(path).map_err(|e| CliError::new(code, e))
}

/// The policies of `dir` bound to the registry's records (schema merged, strict validation),
/// as the registry's own policies are; invalid ones are their rendered diagnostics (exit 1).
pub(crate) fn bind(
    registry: &BoundRegistry,
    dir: &std::path::Path,
) -> Result<escepine_policy::cedar::Binding, CliError> {
    escepine_policy::cedar::bind(registry.records(), Some(dir))
        .map_err(|d| CliError::text(exit::INVALID, d.render()))
}

/// The flags of every command that builds a runtime (`call`, `run`, `resume`, `serve`,
/// `approve`, `reject`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RuntimeArgs {
    /// Cedar entities JSON (principals, their attributes and parents).
    #[arg(long, value_name = "FILE")]
    pub(crate) entities: Option<PathBuf>,
    /// Extra egress entries for named tools (must lie inside the envelope).
    #[arg(long, value_name = "FILE")]
    pub(crate) overlay: Option<PathBuf>,
    /// The evidence ledger: a SQLite file, or a PostgreSQL database
    /// (`postgres://user:password@host:port/db`).
    #[arg(long, value_name = "PATH|URL")]
    pub(crate) ledger: LedgerLocation,
    /// Candidate Cedar policies (`*.cedar`, optional `*.cedarschema`) evaluated beside the
    /// enforced ones on every call, never enforced; each disagreement is recorded in the
    /// call's intent (`escepine ledger show --disagreements` lists them).
    #[arg(long, value_name = "DIR")]
    pub(crate) shadow_policies: Option<PathBuf>,
    /// Budgets per principal (`{"budgets": [...]}`): calls for ever or in a window, calls in
    /// flight; counted in the ledger's store; an exceeded budget ends the call
    /// `budget_exceeded` (exit 7 for `call`).
    #[arg(long, value_name = "FILE")]
    pub(crate) budgets: Option<PathBuf>,
    /// How long a call allowed only with approval (a determining permit annotated
    /// `@approval`) waits for an approver, in seconds; recorded in its intent.
    #[arg(long, value_name = "SECONDS", default_value_t = escepine_runtime::DEFAULT_APPROVAL_TTL.as_secs())]
    pub(crate) approval_ttl: u64,
    /// A signed checkpoint of the ledger (`escepine ledger checkpoint`) that every entry the
    /// runtime reads back and acts on — an approved call's payload, a resumed run's entries,
    /// a task's output — is checked against, besides the chain's own links. Repeatable.
    #[arg(long = "checkpoint", value_name = "FILE", requires = "public_key")]
    pub(crate) checkpoints: Vec<PathBuf>,
    /// The verifier key (`verifier.pub` of `ledger keygen`) the checkpoints are signed with.
    #[arg(long, value_name = "FILE", requires = "checkpoints")]
    pub(crate) public_key: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) run: ToolRunArgs,
    #[command(flatten)]
    pub(crate) telemetry: crate::telemetry::TelemetryArgs,
}

impl RuntimeArgs {
    /// The `--entities` file, read as JSON (none without the flag).
    ///
    /// # Errors
    /// Exit 1, naming the file, when it cannot be read or is not JSON.
    pub(crate) fn entities(&self) -> Result<Option<Value>, CliError> {
        self.entities
            .as_deref()
            .map(|path| read_json(path, exit::INVALID))
            .transpose()
    }

    /// The runtime over `registry`: the shadow policies bound, the ledger opened, the executor
    /// made ready (its images fetched), the secrets read, then the entities, the overlay, and
    /// the build.
    ///
    /// # Errors
    /// `unavailable` (the command's status for it) when the ledger cannot be opened or the
    /// executor made ready; exit 1 for invalid shadow policies, secrets, entities, overlay or
    /// runtime.
    pub(crate) async fn build(
        &self,
        registry: BoundRegistry,
        unavailable: i32,
    ) -> Result<Runtime, CliError> {
        let shadow = self
            .shadow_policies
            .as_ref()
            .map(|dir| bind(&registry, dir))
            .transpose()?;
        let budgets = self
            .budgets
            .as_deref()
            .map(|path| Budgets::load(path, &registry))
            .transpose()
            .map_err(|e| CliError::new(exit::INVALID, e))?;
        let ledger = self
            .ledger
            .open(Durability::Full)
            .map_err(|e| CliError::new(unavailable, e))?;
        let executor = self
            .run
            .executor(&registry)
            .await
            .map_err(|e| CliError::new(unavailable, e))?;
        let secrets = self
            .run
            .secrets()
            .map_err(|e| CliError::new(exit::INVALID, e))?;
        let mut builder = Runtime::builder(registry)
            .ledger(ledger)
            .executor(executor)
            .secrets(secrets)
            .approval_ttl(std::time::Duration::from_secs(self.approval_ttl));
        if let Some(entities) = self.entities()? {
            builder = builder.entities(entities);
        }
        if let Some(path) = &self.overlay {
            let overlay = Overlay::load(path).map_err(|e| CliError::new(exit::INVALID, e))?;
            builder = builder.overlay(overlay);
        }
        if let Some(shadow) = shadow {
            builder = builder.shadow_policies(shadow);
        }
        if let Some(budgets) = budgets {
            builder = builder.budgets(budgets);
        }
        if let Some(key) = &self.public_key {
            builder = builder.trusted_checkpoints(trusted_checkpoints(&self.checkpoints, key)?);
        }
        builder.build().map_err(|e| CliError::new(exit::INVALID, e))
    }
}

/// The checkpoint files `files`, each opened (its signature verified) with the verifier key
/// in `key_file`.
///
/// # Errors
/// Exit 1, naming the file, for an unreadable or malformed key or checkpoint, or a checkpoint
/// whose signature does not verify.
fn trusted_checkpoints(
    files: &[PathBuf],
    key_file: &std::path::Path,
) -> Result<Vec<escepine_ledger::checkpoint::Checkpoint>, CliError> {
    use escepine_ledger::checkpoint::{self, VerifierKey};
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .map_err(|e| CliError::new(exit::INVALID, format!("{}: {e}", path.display())))
    };
    let key = VerifierKey::parse(&read(key_file)?)
        .map_err(|e| CliError::new(exit::INVALID, format!("{}: {e}", key_file.display())))?;
    files
        .iter()
        .map(|file| {
            checkpoint::open(&read(file)?, &key)
                .map_err(|e| CliError::new(exit::INVALID, format!("{}: {e}", file.display())))
        })
        .collect()
}

/// How long a command that ran calls waits, before it exits, for their sandboxes to be destroyed.
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Before a command that ran calls exits: waits, at most [`SETTLE_LIMIT`], until `runtime`'s
/// executor has destroyed the sandboxes of the calls that returned ([`Runtime::settled`]), so
/// that the command leaves no cgroup, directory or process of them behind. Awaited on the
/// async runtime the calls ran on, whatever they returned.
pub(crate) async fn settle(runtime: &Runtime) {
    if tokio::time::timeout(SETTLE_LIMIT, runtime.settled())
        .await
        .is_err()
    {
        tracing::warn!(
            "the sandboxes of this command's calls were still being destroyed after \
             {SETTLE_LIMIT:?}; the next runtime on this machine removes what is left"
        );
    }
}

/// A multi-threaded async runtime for a command.
///
/// # Errors
/// `code` when it cannot be started.
pub(crate) fn async_runtime(code: i32) -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(code, format!("cannot start the async runtime: {e}")))
}
