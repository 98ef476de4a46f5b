//! A killed runtime's sandbox directories in the run directory: the next backend removes them,
//! and nothing else, whatever lies about being one (a symbolic link, a directory with a
//! directory in it, a runtime's directory in another PID namespace whose proxy still listens, a
//! directory made a moment ago, a name that only starts like one). And a name taken first by
//! someone else who may write in the run directory stops no sandbox.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use escepine_sandbox::{LinuxBackend, SandboxBackend};

/// A pid no process can have (above the kernel's largest `pid_max`, 2^22).
const DEAD: u32 = 4_294_967;

fn mkdir(path: &Path) {
    std::fs::create_dir_all(path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
}

/// Dates `dir`'s last change a minute back, as a killed runtime's directory is.
fn age(dir: &Path) {
    std::fs::File::open(dir)
        .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(60)))
        .unwrap_or_else(|e| panic!("dating {}: {e}", dir.display()));
}

/// A killed runtime's directory under `run_dir`: its proxy's socket file left bound but not
/// listening, dated a minute back.
fn leftover(run_dir: &Path, n: u64) -> PathBuf {
    let dir = run_dir.join(format!("escepine-sbx-{DEAD}-{n}"));
    mkdir(&dir);
    drop(UnixListener::bind(dir.join("proxy.sock")).expect("bind"));
    age(&dir);
    dir
}

#[test]
fn only_a_killed_runtimes_directories_are_removed() {
    let run_dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "kept").expect("write");

    // Removed: the socket and a symbolic link to a file outside go, the file stays.
    let stale = leftover(run_dir.path(), 1);
    std::os::unix::fs::symlink(&victim, stale.join("link")).expect("symlink");
    age(&stale);

    // Kept: made a moment ago (its runtime may be about to bind its proxy).
    let fresh = run_dir.path().join(format!("escepine-sbx-{DEAD}-2"));
    mkdir(&fresh);
    // Kept: a proxy still listens (its runtime is in a PID namespace this one cannot see).
    let listening = run_dir.path().join(format!("escepine-sbx-{DEAD}-3"));
    mkdir(&listening);
    let _proxy = UnixListener::bind(listening.join("proxy.sock")).expect("bind");
    age(&listening);
    // Kept: this runtime's own.
    let ours = leftover(run_dir.path(), 0);
    let ours_renamed = run_dir
        .path()
        .join(format!("escepine-sbx-{}-4", std::process::id()));
    std::fs::rename(&ours, &ours_renamed).expect("rename");
    age(&ours_renamed);
    // Kept: it holds a directory (nothing below a directory or mount point is removed).
    let nested = leftover(run_dir.path(), 5);
    mkdir(&nested.join("sub"));
    std::fs::write(nested.join("sub/file"), "kept").expect("write");
    age(&nested);
    // Kept: a symbolic link named like one, to a directory outside; a file named like one; a
    // name that only starts like one.
    let link = run_dir.path().join(format!("escepine-sbx-{DEAD}-6"));
    std::os::unix::fs::symlink(outside.path(), &link).expect("symlink");
    let file = run_dir.path().join(format!("escepine-sbx-{DEAD}-7"));
    std::fs::write(&file, "kept").expect("write");
    let odd = leftover(run_dir.path(), 8);
    let odd_renamed = run_dir.path().join(format!("escepine-sbx-{DEAD}-8-x"));
    std::fs::rename(&odd, &odd_renamed).expect("rename");
    age(&odd_renamed);

    let removed = crate::backend(run_dir.path()).sweep_run_dir();
    assert_eq!(removed, vec![stale.clone()]);
    assert!(!stale.exists());
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "kept");
    for kept in [&fresh, &listening, &ours_renamed, &nested, &odd_renamed] {
        assert!(kept.is_dir(), "{} was removed", kept.display());
    }
    assert!(listening.join("proxy.sock").exists());
    // Nothing of a directory that holds a directory is removed, not even its socket.
    assert!(nested.join("proxy.sock").exists());
    assert_eq!(
        std::fs::read_to_string(nested.join("sub/file")).expect("nested file"),
        "kept"
    );
    assert!(link.symlink_metadata().expect("link").is_symlink());
    assert_eq!(std::fs::read_to_string(&file).expect("file"), "kept");

    // Once the proxy stops listening and its directory has stood a while, it goes too.
    drop(_proxy);
    age(&listening);
    assert_eq!(
        crate::backend(run_dir.path()).sweep_run_dir(),
        vec![listening.clone()]
    );
}

/// Someone who may write in the shared run directory swaps a leftover for a link to another
/// directory and back, over and over, while sweeps run: nothing is ever listed or unlinked
/// through the link, so the other directory's files all stay.
#[test]
fn a_leftover_swapped_for_a_link_during_a_sweep_removes_nothing_through_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let run_dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victims: Vec<PathBuf> = (0..8)
        .map(|i| outside.path().join(format!("v{i}")))
        .collect();
    for v in &victims {
        std::fs::write(v, "kept").expect("write");
    }
    let backend = crate::backend(run_dir.path());
    for n in 0..200 {
        let stale = leftover(run_dir.path(), n);
        for i in 0..8 {
            // Named as the victims are, so that a path through the link would name them.
            std::fs::write(stale.join(format!("v{i}")), "leftover").expect("write");
        }
        age(&stale);
        let aside = run_dir.path().join(format!("aside-{n}"));
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stale, aside, target, stop) = (
                stale.clone(),
                aside.clone(),
                outside.path().to_path_buf(),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if std::fs::rename(&stale, &aside).is_err() {
                        break;
                    }
                    let _ = std::os::unix::fs::symlink(&target, &stale);
                    let _ = std::fs::remove_file(&stale);
                    if std::fs::rename(&aside, &stale).is_err() {
                        break;
                    }
                }
            })
        };
        backend.sweep_run_dir();
        stop.store(true, Ordering::Relaxed);
        swapper.join().expect("the swapper");
        for v in &victims {
            assert_eq!(
                std::fs::read_to_string(v).expect("a file outside the run directory"),
                "kept",
                "removed through a swapped link, round {n}"
            );
        }
        let _ = std::fs::remove_file(&stale);
        let _ = std::fs::remove_dir_all(&stale);
        let _ = std::fs::remove_dir_all(&aside);
    }
}

#[tokio::test]
async fn the_first_sandbox_with_egress_sweeps_in_the_background() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let stale = leftover(run_dir.path(), 1);
    let backend = crate::backend(run_dir.path());

    // Without egress, no directory is needed and none is swept.
    let sandbox = backend
        .provision(Arc::new(crate::cgroups::spec(
            escepine_sandbox::Limits::default().memory_bytes,
        )))
        .await
        .expect("provisioned");
    backend.destroy(sandbox).await;
    std::thread::sleep(Duration::from_millis(200));
    assert!(stale.exists(), "swept without a sandbox with egress");

    swept_by_a_sandbox_with_egress(&backend, &stale).await;
    assert_eq!(
        std::fs::read_dir(run_dir.path()).expect("run dir").count(),
        0,
        "the sandbox's own directory is removed at destroy"
    );
}

#[test]
fn a_gvisor_directory_goes_only_once_nothing_is_mounted_in_it() {
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = escepine_sandbox::GvisorBackend::new(None)
        .expect("this test program dispatches the sandbox init")
        .with_run_dir(run_dir.path());
    let dir = run_dir.path().join(format!("escepine-gv-{DEAD}-1"));
    let rootfs = dir.join("bundle/rootfs");
    mkdir(&rootfs);
    mkdir(&dir.join("state"));
    std::fs::write(dir.join("state/container.state"), "{}").expect("write");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "escepine-test", &rootfs.to_string_lossy()])
        .status()
        .expect("mount");
    assert!(mounted.success(), "mount a tmpfs at {}", rootfs.display());
    std::fs::write(rootfs.join("image-file"), "kept").expect("write");
    age(&dir);

    let removed = backend.sweep_run_dir();
    let still = std::fs::read_to_string(rootfs.join("image-file"));
    let unmounted = std::process::Command::new("umount")
        .arg(&rootfs)
        .status()
        .expect("umount");
    assert!(unmounted.success());
    assert_eq!(removed, Vec::<PathBuf>::new(), "removed across a mount");
    assert_eq!(still.expect("the mounted file"), "kept");
    assert!(dir.join("state/container.state").exists());

    age(&dir);
    assert_eq!(backend.sweep_run_dir(), vec![dir.clone()]);
    assert!(!dir.exists());
}

/// A runtime killed while the run directory's default was the temporary directory left a
/// sandbox's directory there: a backend with its run directory elsewhere removes it too, on its
/// first sandbox with egress.
#[tokio::test]
async fn a_leftover_in_the_temporary_directory_goes_with_the_first_sweep() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    // A number no other test's leftover has, in the shared temporary directory.
    let n = u64::from(std::process::id()) * 1_000 + 7;
    let stale = leftover(&std::env::temp_dir(), n);
    let backend = crate::backend(run_dir.path());
    swept_by_a_sandbox_with_egress(&backend, &stale).await;
}

/// Someone else who may write in a shared run directory (`/dev/shm`, `/tmp`) makes directories
/// under the names this runtime's sandboxes would get without a random end — its pid, the next
/// few hundred numbers — and under one with a random end: sandboxes with egress are made all the
/// same, each in a directory of its own with a random end, and nothing of theirs is touched.
#[tokio::test]
async fn a_name_taken_first_in_the_run_directory_stops_no_sandbox() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let pid = std::process::id();
    let mut taken = Vec::new();
    for n in 0..512 {
        let dir = run_dir.path().join(format!("escepine-sbx-{pid}-{n}"));
        mkdir(&dir);
        taken.push(dir);
    }
    let guessed = run_dir
        .path()
        .join(format!("escepine-sbx-{pid}-1-0000000000000000"));
    mkdir(&guessed);
    std::fs::write(guessed.join("planted"), "kept").expect("write");
    taken.push(guessed.clone());
    let backend = crate::backend(run_dir.path());
    let spec = crate::cgroups::spec_with_egress();
    let spec = Arc::new(spec);
    let mut ours = Vec::new();
    let mut sandboxes = Vec::new();
    for _ in 0..3 {
        let before: Vec<PathBuf> = entries(run_dir.path());
        sandboxes.push(
            backend
                .provision(Arc::clone(&spec))
                .await
                .expect("provisioned though its names were taken"),
        );
        let new: Vec<PathBuf> = entries(run_dir.path())
            .into_iter()
            .filter(|e| !before.contains(e))
            .collect();
        let [dir] = &new[..] else {
            panic!("one new directory per sandbox: {new:?}")
        };
        ours.push(dir.clone());
    }
    for dir in &ours {
        let name = dir
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let nonce = name
            .strip_prefix(&format!("escepine-sbx-{pid}-"))
            .and_then(|rest| rest.split_once('-'))
            .map(|(_, nonce)| nonce.to_string())
            .unwrap_or_default();
        assert!(
            nonce.len() == 16 && nonce.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name} ends in 16 random hex digits"
        );
    }
    for sandbox in sandboxes {
        let teardown = backend.destroy(sandbox).await;
        assert!(teardown.problems.is_empty(), "{:?}", teardown.problems);
    }
    for dir in &ours {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
    for dir in &taken {
        assert!(dir.is_dir(), "{} was removed", dir.display());
    }
    assert_eq!(
        std::fs::read_to_string(guessed.join("planted")).expect("planted"),
        "kept"
    );
}

/// The entries of `dir`.
fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("the run directory")
        .map(|e| e.expect("an entry").path())
        .collect()
}

/// Provisions a sandbox with egress on `backend` (whose first such sandbox sweeps), waits up
/// to 10 s for `dir` to be swept — failing, and removing it, since it may lie in the shared
/// temporary directory, if it is not — and destroys the sandbox.
async fn swept_by_a_sandbox_with_egress(backend: &LinuxBackend, dir: &Path) {
    let sandbox = backend
        .provision(Arc::new(crate::cgroups::spec_with_egress()))
        .await
        .expect("provisioned");
    let deadline = Instant::now() + Duration::from_secs(10);
    while dir.exists() {
        if Instant::now() > deadline {
            let _ = std::fs::remove_dir_all(dir);
            panic!("{} not swept", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let teardown = backend.destroy(sandbox).await;
    assert!(teardown.problems.is_empty(), "{:?}", teardown.problems);
}
