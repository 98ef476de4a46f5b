//! The pin race: a pinned `#!` script whose path is swapped, every half
//! millisecond, between the pinned content and another script, while calls run.
//!
//! Both scripts print one JSON object naming their content (`{"marker": "pinned"}` or
//! `{"marker": "swapped"}`); a call that ran must have run the pinned one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use escepine_runtime::executor::{ExecError, Execution};
use sha2::{Digest, Sha256};

/// The marker of the pinned script.
pub const PINNED: &str = "pinned";
/// The marker of the script swapped in.
pub const SWAPPED: &str = "swapped";

/// Two scripts and a path swapped between them until this value is dropped.
pub struct PinRace {
    _dir: tempfile::TempDir,
    path: PathBuf,
    digest: String,
    stop: Arc<AtomicBool>,
    swapper: Option<std::thread::JoinHandle<u64>>,
}

fn script(marker: &str) -> String {
    format!("#!/bin/sh\necho '{{\"marker\": \"{marker}\"}}'\n")
}

impl PinRace {
    /// Starts swapping: the tool's path holds the pinned script first.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let pinned = dir.path().join("pinned.sh");
        let swapped = dir.path().join("swapped.sh");
        let path = dir.path().join("tool.sh");
        for (file, marker) in [(&pinned, PINNED), (&swapped, SWAPPED)] {
            std::fs::write(file, script(marker)).expect("write a script");
            set_executable(file);
        }
        let digest = hex::encode(Sha256::digest(script(PINNED).as_bytes()));
        std::fs::hard_link(&pinned, &path).expect("link the tool");
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, path, dir) = (Arc::clone(&stop), path.clone(), dir.path().to_path_buf());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                let next = dir.join("next.sh");
                while !stop.load(Ordering::Relaxed) {
                    let from = if swaps.is_multiple_of(2) {
                        &swapped
                    } else {
                        &pinned
                    };
                    // A new name for one of the two files, renamed over the tool's path: the
                    // path names one complete script at every instant.
                    let _ = std::fs::remove_file(&next);
                    if std::fs::hard_link(from, &next).is_ok()
                        && std::fs::rename(&next, &path).is_ok()
                    {
                        swaps += 1;
                    }
                    std::thread::sleep(Duration::from_micros(500));
                }
                swaps
            })
        };
        Self {
            _dir: dir,
            path,
            digest,
            stop,
            swapper: Some(swapper),
        }
    }

    /// The path the record names.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pinned script's SHA-256 digest.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Stops swapping; returns how many swaps were made.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.swapper
            .take()
            .map(|h| h.join().expect("the swapper"))
            .unwrap_or(0)
    }
}

impl Drop for PinRace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.swapper.take() {
            let _ = h.join();
        }
    }
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// What the calls of a race did: each ran the pinned content, or was refused before running.
#[derive(Debug, Default)]
pub struct Outcomes {
    /// Calls that ran (the pinned content).
    pub ran: usize,
    /// Calls refused because the file was not the pinned one.
    pub refused: usize,
}

impl Outcomes {
    /// Whether the race has gone on long enough: at least `min` calls, and both outcomes seen
    /// a few times.
    pub fn enough(&self, calls: usize, min: usize) -> bool {
        calls >= min && self.ran >= 5 && self.refused >= 5
    }

    /// Count one call; a call that ran other content, or failed otherwise, fails the test.
    pub fn count(&mut self, result: Result<Execution, ExecError>) {
        match result {
            Ok(done) => {
                assert_eq!(
                    done.output,
                    serde_json::json!({ "marker": PINNED }),
                    "a call ran content other than the pinned one"
                );
                self.ran += 1;
            }
            Err(ExecError::Spawn(m)) if m.contains("refusing to run") => self.refused += 1,
            Err(e) => panic!("{e:?}"),
        }
    }

    /// Both outcomes were seen while the path was swapped at least ten times.
    pub fn assert_raced(&self, swaps: u64) {
        assert!(
            self.ran > 0 && self.refused > 0,
            "ran {}, refused {}",
            self.ran,
            self.refused
        );
        assert!(swaps >= 10, "{swaps} swaps");
    }
}
