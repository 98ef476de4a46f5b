//! The root images a backend keeps: one per program (or per OCI image), rebuilt when its spec's
//! key changes, at most [`IMAGES_KEPT`] of them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::backend::SandboxSpec;
use crate::root::{self, Image};
use crate::SandboxError;

/// How many root images a backend keeps (one per program).
const IMAGES_KEPT: usize = 32;

/// A backend's root images, keyed by program (or image tree).
#[derive(Debug, Default)]
pub(crate) struct KeptImages {
    /// Top-level directories every image of this backend has besides the system ones.
    extra_dirs: &'static [&'static str],
    images: Mutex<HashMap<PathBuf, (String, Arc<Image>)>>,
}

impl KeptImages {
    /// Images with `extra_dirs` (empty directories at the top, for the backend's mounts).
    pub(crate) fn with_extra_dirs(extra_dirs: &'static [&'static str]) -> Self {
        Self {
            extra_dirs,
            images: Mutex::default(),
        }
    }

    /// The root image of `spec`, made on first use (off the async workers).
    pub(crate) async fn get(&self, spec: &Arc<SandboxSpec>) -> Result<Arc<Image>, SandboxError> {
        let key = format!(
            "{}\0{}\0{}\0{:?}\0{:?}\0{:?}",
            spec.program.display(),
            spec.program_identity,
            spec.program_sha256.as_deref().unwrap_or(""),
            spec.read_only,
            spec.binds,
            spec.root_tree
        );
        // One image per program, or per OCI image for an image root.
        let slot = spec
            .root_tree
            .clone()
            .unwrap_or_else(|| spec.program.clone());
        if let Some(found) = self
            .images
            .lock()
            .ok()
            .and_then(|m| m.get(&slot).filter(|(k, _)| *k == key).cloned())
        {
            return Ok(found.1);
        }
        let for_build = Arc::clone(spec);
        let extra = self.extra_dirs;
        let made = tokio::task::spawn_blocking(move || root::build(&for_build, extra))
            .await
            .map_err(|e| SandboxError::Protocol(format!("making the root image: {e}")))??;
        let made = Arc::new(made);
        if let Ok(mut images) = self.images.lock() {
            // One image per program: a newer version replaces the older.
            if images.len() >= IMAGES_KEPT && !images.contains_key(&slot) {
                if let Some(old) = images.keys().next().cloned() {
                    images.remove(&old);
                }
            }
            images.insert(slot, (key, Arc::clone(&made)));
        }
        Ok(made)
    }
}
