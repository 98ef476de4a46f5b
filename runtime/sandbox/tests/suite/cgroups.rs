//! Memory cgroups kept for reuse: a destroyed sandbox's emptied cgroup becomes a spare, the next
//! sandbox takes it back with its own bound, an earlier sandbox's OOM kill is not counted
//! against it, and a dropped backend leaves no cgroup behind. Real sandboxes (root).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use escepine_sandbox::deps::{identity, DepCache};
use escepine_sandbox::{JobStatus, Limits, LinuxBackend, SandboxBackend, SandboxSpec};

use escepine_testkit::python_probe::{job, PYTHON, STDLIB};

/// This process's memory cgroup directory (v1's `memory` hierarchy, else the unified one).
fn own_memory_cgroup() -> PathBuf {
    let text = std::fs::read_to_string("/proc/self/cgroup").expect("/proc/self/cgroup");
    let v1 = text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        ctrl.split(',')
            .any(|c| c == "memory")
            .then(|| Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')))
    });
    v1.unwrap_or_else(|| {
        let path = text
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .expect("a cgroup path");
        Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'))
    })
}

/// The names of this process's sandbox cgroups and spares beside it (the v2 runtime leaf's
/// parent too).
fn ours() -> (usize, usize) {
    let pid = std::process::id();
    let dir = own_memory_cgroup();
    let mut dirs = vec![dir.clone()];
    dirs.extend(dir.parent().map(Path::to_path_buf));
    let mut counts = (0, 0);
    for d in dirs {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("escepine-sbx-{pid}-")) {
                counts.0 += 1;
            }
            if name.starts_with(&format!("escepine-spare-{pid}-")) {
                counts.1 += 1;
            }
        }
    }
    counts
}

fn spec(memory_bytes: u64) -> SandboxSpec {
    let program = PathBuf::from(PYTHON);
    let id = identity(&program).expect("python");
    let mut read_only = DepCache::default()
        .needs(&program, &id)
        .expect("python's libraries");
    read_only.push(PathBuf::from(STDLIB));
    SandboxSpec {
        program,
        program_identity: id,
        program_sha256: None,
        read_only,
        binds: Vec::new(),
        root_tree: None,
        egress: escepine_contract::EgressGrant::default(),
        limits: Limits {
            memory_bytes,
            ..Limits::default()
        },
    }
}

/// Python touching `mb` MiB of shared memory (which `RLIMIT_DATA` does not count).
fn touch(mb: u64) -> Vec<String> {
    let code = format!(
        "import mmap\nm = mmap.mmap(-1, {mb} << 20)\nfor i in range(0, {mb} << 20, 1 << 20):\n    m[i:i + (1 << 20)] = b'x' * (1 << 20)\nprint('done')"
    );
    vec![PYTHON.to_string(), "-I".into(), "-c".into(), code]
}

#[tokio::test]
async fn an_emptied_cgroup_is_reused_and_an_earlier_oom_kill_is_not_the_next_sandboxs() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = LinuxBackend::new()
        .expect("this test program dispatches the sandbox init")
        .with_run_dir(run_dir.path());
    assert_eq!(ours(), (0, 0), "a clean start");
    // 256 MiB touched under a 96 MiB bound: the kernel kills it.
    let mut sandbox = backend
        .provision(Arc::new(spec(96 << 20)))
        .await
        .expect("provisioned");
    let out = backend
        .execute(&mut sandbox, job(touch(256), None))
        .await
        .expect("executed");
    assert!(out.memory_exhausted, "{:?} {}", out.status, out.stderr);
    assert_eq!(out.status, JobStatus::Signaled(libc::SIGKILL));
    assert_eq!(ours(), (1, 0), "the sandbox's own cgroup while it exists");
    backend.destroy(sandbox).await;
    assert_eq!(ours(), (0, 1), "emptied and kept as a spare");
    // The next sandbox takes the spare back, with a larger bound, and starts with no OOM kill.
    let mut sandbox = backend
        .provision(Arc::new(spec(512 << 20)))
        .await
        .expect("provisioned");
    assert_eq!(ours(), (1, 0), "the spare is the new sandbox's cgroup");
    let out = backend
        .execute(&mut sandbox, job(touch(128), None))
        .await
        .expect("executed");
    assert_eq!(out.status, JobStatus::Exited(0), "{}", out.stderr);
    assert!(!out.memory_exhausted, "an earlier sandbox's kill counted");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
    backend.destroy(sandbox).await;
    assert_eq!(ours(), (0, 1));
    // The smaller bound again holds on the reused cgroup.
    let mut sandbox = backend
        .provision(Arc::new(spec(96 << 20)))
        .await
        .expect("provisioned");
    let out = backend
        .execute(&mut sandbox, job(touch(256), None))
        .await
        .expect("executed");
    assert!(out.memory_exhausted, "{:?} {}", out.status, out.stderr);
    backend.destroy(sandbox).await;
    drop(backend);
    assert_eq!(ours(), (0, 0), "a dropped backend leaves no cgroup");
}
