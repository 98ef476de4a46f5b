//! `--executor` and `--secrets`: how the commands that run tools (`call`, `run`, `resume`,
//! `serve`) run them.

use std::path::PathBuf;
use std::sync::Arc;

use std::path::Path;

use escepine_contract::Isolation;
use escepine_oci::ImageStore;
use escepine_policy::BoundRegistry;

use escepine_runtime::executor::{Executor, ProcessExecutor};
use escepine_runtime::images;
use escepine_runtime::sandbox::SandboxExecutor;
use escepine_runtime::secrets::{ChainSecrets, EnvSecrets, MapSecrets, SecretSource};

/// Where tools run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExecutorKind {
    /// One fresh Linux sandbox per attempt (the default).
    Sandbox,
    /// A plain child process: no isolation, no egress fence. Only on request.
    Process,
}

/// The flags shared by the commands that run tools.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ToolRunArgs {
    /// Where tools run: `sandbox` (one fresh Linux sandbox per attempt: namespaces, tmpfs root,
    /// seccomp, landlock, egress only through the proxy) or `process` (an unsandboxed child
    /// process, for machines without user namespaces).
    #[arg(
        long,
        value_enum,
        value_name = "sandbox|process",
        default_value = "sandbox"
    )]
    executor: ExecutorKind,
    /// Secret values as `NAME=value` lines (blank lines and `#` comments ignored), for the names
    /// tools declare in `auth.secrets`. A variable of that name in the environment wins.
    #[arg(long, value_name = "FILE")]
    secrets: Option<PathBuf>,
    /// The image cache (`endpoint.image`: fetched, verified and unpacked once, shared by every
    /// runtime on the machine); default `$ESCEPINE_IMAGE_CACHE`, else
    /// `/var/cache/escepine/images` for root, else `~/.cache/escepine/images`.
    #[arg(long, value_name = "DIR")]
    image_cache: Option<PathBuf>,
    /// gVisor's `runsc`, for the tools whose `sandbox_profile.isolation` is `gvisor` (default:
    /// `runsc` on `PATH`; Debian's package `runsc`).
    #[arg(long, value_name = "PATH")]
    runsc: Option<PathBuf>,
}

impl ToolRunArgs {
    /// The chosen executor, with the images of `registry`'s tools fetched, verified and
    /// unpacked (before any call: never inside a call's timeout).
    ///
    /// # Errors
    /// When the sandbox is chosen and its init binary cannot be found, or an image cannot be
    /// fetched, verified or unpacked.
    pub(crate) async fn executor(
        &self,
        registry: &BoundRegistry,
    ) -> Result<Arc<dyn Executor>, String> {
        match self.executor {
            ExecutorKind::Process => {
                // An unsandboxed child would silently drop the tier the record asks for.
                if let Some(r) = registry
                    .records()
                    .iter()
                    .find(|r| r.sandbox_profile().isolation != Isolation::Namespaces)
                {
                    return Err(format!(
                        "`{}` runs on the `{}` isolation tier; `--executor process` runs tools \
                         unsandboxed",
                        r.tool_id(),
                        r.sandbox_profile().isolation
                    ));
                }
                Ok(Arc::new(ProcessExecutor::new()))
            }
            ExecutorKind::Sandbox => {
                let sandbox = SandboxExecutor::with_runsc(self.runsc.clone()).map_err(|e| {
                    format!(
                        "the sandbox is unavailable: {e} (`--executor process` runs tools \
                         unsandboxed)"
                    )
                })?;
                let prepared = self.images(registry).await?;
                Ok(Arc::new(images::with_images(sandbox, &prepared)))
            }
        }
    }

    /// The images of `registry`'s tools, made ready in the image cache.
    ///
    /// # Errors
    /// The first image that cannot be fetched, verified or unpacked.
    pub(crate) async fn images(
        &self,
        registry: &BoundRegistry,
    ) -> Result<Vec<images::Prepared>, String> {
        if !registry
            .records()
            .iter()
            .any(|r| r.endpoint().image.is_some())
        {
            return Ok(Vec::new());
        }
        let store = image_store(self.image_cache.as_deref())?;
        images::prepare(registry, &store)
            .await
            .map_err(|e| e.to_string())
    }

    /// Where secret values come from: the environment, then the `--secrets` file.
    ///
    /// # Errors
    /// When the file cannot be read or a line is not `NAME=value` (naming the file and line).
    pub(crate) fn secrets(&self) -> Result<Arc<dyn SecretSource>, String> {
        Ok(match &self.secrets {
            None => Arc::new(EnvSecrets),
            Some(path) => Arc::new(ChainSecrets(vec![
                Box::new(EnvSecrets),
                Box::new(MapSecrets::from_file(path)?),
            ])),
        })
    }
}

/// The image cache at `dir`, or the default one.
///
/// # Errors
/// When the cache directory cannot be made.
pub(crate) fn image_store(dir: Option<&Path>) -> Result<ImageStore, String> {
    let root = dir.map_or_else(ImageStore::default_root, Path::to_path_buf);
    ImageStore::open(&root).map_err(|e| format!("the image cache {}: {e}", root.display()))
}
