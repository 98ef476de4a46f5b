//! The root images a backend keeps: one per program (or per OCI image), rebuilt when its spec's
//! key changes, at most [`IMAGES_KEPT`] of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
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
    slots: Mutex<HashMap<PathBuf, Slot>>,
}

/// One program's (or image tree's) place among the kept images.
#[derive(Debug, Default)]
struct Slot {
    /// The image and the key of the spec it was made for.
    kept: Option<(String, Arc<Image>)>,
    /// Held while the slot's image is made: the calls of a burst that find no image wait for
    /// the first one's instead of each making (copying, and for a pin hashing) its own.
    making: Arc<tokio::sync::Mutex<()>>,
}

impl KeptImages {
    /// Images with `extra_dirs` (empty directories at the top, for the backend's mounts).
    pub(crate) fn with_extra_dirs(extra_dirs: &'static [&'static str]) -> Self {
        Self {
            extra_dirs,
            slots: Mutex::default(),
        }
    }

    /// The root image of `spec`, made on first use (off the async workers), by one call at a
    /// time per program.
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
        let making = match self.kept(&slot, &key) {
            Kept::Image(image) => return Ok(image),
            Kept::Making(making) => making,
        };
        let _making = making.lock().await;
        // Another call may have made it while this one waited.
        if let Kept::Image(image) = self.kept(&slot, &key) {
            return Ok(image);
        }
        let for_build = Arc::clone(spec);
        let extra = self.extra_dirs;
        let made = tokio::task::spawn_blocking(move || root::build(&for_build, extra))
            .await
            .map_err(|e| SandboxError::Protocol(format!("making the root image: {e}")))??;
        let made = Arc::new(made);
        if let Ok(mut slots) = self.slots.lock() {
            // One image per program: a newer version replaces the older.
            slots.entry(slot.clone()).or_default().kept = Some((key, Arc::clone(&made)));
            bound(&mut slots, &slot);
        }
        Ok(made)
    }

    /// The image kept in `slot` for `key`, or else the lock to hold while making it.
    fn kept(&self, slot: &Path, key: &str) -> Kept {
        let Ok(mut slots) = self.slots.lock() else {
            // A poisoned map: make the image without keeping or sharing it.
            return Kept::Making(Arc::default());
        };
        let found = slots.entry(slot.to_path_buf()).or_default();
        let kept = match &found.kept {
            Some((k, image)) if k == key => Kept::Image(Arc::clone(image)),
            _ => Kept::Making(Arc::clone(&found.making)),
        };
        // A program whose image is never made (its build fails) holds a slot too.
        bound(&mut slots, slot);
        kept
    }
}

/// Lets go of slots other than `keep`'s until at most [`IMAGES_KEPT`] are left, those without
/// an image first.
fn bound(slots: &mut HashMap<PathBuf, Slot>, keep: &Path) {
    while slots.len() > IMAGES_KEPT {
        let others = || slots.iter().filter(|(k, _)| k.as_path() != keep);
        let Some(old) = others()
            .find(|(_, slot)| slot.kept.is_none())
            .or_else(|| others().next())
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        slots.remove(&old);
    }
}

/// What [`KeptImages::kept`] found.
enum Kept {
    Image(Arc<Image>),
    Making(Arc<tokio::sync::Mutex<()>>),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec running `program` (a system binary), with `also` copied in beside it.
    fn spec(program: &str, also: &[&str]) -> Arc<SandboxSpec> {
        Arc::new(SandboxSpec {
            program: program.into(),
            program_identity: program.to_string(),
            program_sha256: None,
            read_only: std::iter::once(&program)
                .chain(also)
                .map(PathBuf::from)
                .collect(),
            binds: Vec::new(),
            root_tree: None,
            egress: Default::default(),
            limits: Default::default(),
        })
    }

    /// More small programs of `/usr/bin` than [`IMAGES_KEPT`] (small: a test keeps dozens of
    /// images in memory at once).
    fn more_programs_than_kept() -> Vec<String> {
        let programs: Vec<_> = std::fs::read_dir("/usr/bin")
            .expect("/usr/bin")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.metadata().is_ok_and(|m| m.is_file() && m.len() < 1 << 20))
            .filter_map(|p| p.to_str().map(str::to_string))
            .take(IMAGES_KEPT + 8)
            .collect();
        assert_eq!(
            programs.len(),
            IMAGES_KEPT + 8,
            "enough programs in /usr/bin"
        );
        programs
    }

    /// A pinned program whose copy does not match: every call of a burst is refused with the
    /// digests named, and nothing is kept (the next call checks again).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_digest_that_does_not_match_is_refused_to_every_call_and_never_kept() {
        let kept = Arc::new(KeptImages::default());
        let mut pinned = (*spec("/bin/true", &[])).clone();
        pinned.program_sha256 = Some("0".repeat(64));
        let pinned = Arc::new(pinned);
        let burst: Vec<_> = (0..8)
            .map(|_| {
                let (kept, spec) = (Arc::clone(&kept), Arc::clone(&pinned));
                tokio::spawn(async move { kept.get(&spec).await })
            })
            .collect();
        for call in burst {
            match call.await.expect("joined") {
                Err(SandboxError::DigestMismatch { expected, .. }) => {
                    assert_eq!(expected, "0".repeat(64));
                }
                other => panic!("expected a digest mismatch, got {other:?}"),
            }
        }
        {
            let slots = kept.slots.lock().expect("not poisoned");
            assert!(
                slots.values().all(|slot| slot.kept.is_none()),
                "no image kept for a refused program"
            );
        }
        // Programs whose image is never made do not pile up slots either.
        for program in &more_programs_than_kept() {
            let mut refused = (*spec(program, &[])).clone();
            refused.program_sha256 = Some("0".repeat(64));
            assert!(kept.get(&Arc::new(refused)).await.is_err(), "{program}");
        }
        let slots = kept.slots.lock().expect("not poisoned").len();
        assert!(slots <= IMAGES_KEPT, "{slots} slots for refused programs");
    }

    /// Calls that find no image at once share the one the first makes; a spec whose key
    /// changed gets an image of its own, which replaces the older; the slots stay bounded by
    /// [`IMAGES_KEPT`] however many programs come. Needs root, as an image does.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_shares_one_image_and_the_slots_stay_bounded() {
        let kept = Arc::new(KeptImages::default());
        let first = spec("/bin/true", &[]);
        let burst: Vec<_> = (0..16)
            .map(|_| {
                let (kept, spec) = (Arc::clone(&kept), Arc::clone(&first));
                tokio::spawn(async move { kept.get(&spec).await })
            })
            .collect();
        let mut images = Vec::new();
        for call in burst {
            images.push(call.await.expect("joined").expect("an image (as root)"));
        }
        assert!(
            images.iter().all(|i| Arc::ptr_eq(i, &images[0])),
            "every call of the burst got the one image"
        );
        let again = kept.get(&first).await.expect("kept");
        assert!(Arc::ptr_eq(&again, &images[0]), "a later call gets it too");
        let changed = kept
            .get(&spec("/bin/true", &["/bin/false"]))
            .await
            .expect("an image");
        assert!(
            !Arc::ptr_eq(&changed, &images[0]),
            "a changed spec, a new image"
        );
        let replaced = kept.get(&first).await.expect("an image");
        assert!(
            !Arc::ptr_eq(&replaced, &images[0]) && !Arc::ptr_eq(&replaced, &changed),
            "the slot holds the newer image only, so the older spec's is made again"
        );
        for program in &more_programs_than_kept() {
            kept.get(&spec(program, &[])).await.expect("an image");
        }
        let slots = kept.slots.lock().expect("not poisoned").len();
        assert_eq!(slots, IMAGES_KEPT, "at most {IMAGES_KEPT} slots kept");
    }
}
