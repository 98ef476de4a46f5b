//! Memory cgroups kept for reuse: a destroyed sandbox's emptied cgroup becomes a spare, the next
//! sandbox takes it back with its own bound, an earlier sandbox's OOM kill is not counted
//! against it, and a dropped backend leaves no cgroup behind. Real sandboxes (root).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use escepine_sandbox::deps::{identity, DepCache};
use escepine_sandbox::{JobStatus, Limits, LinuxBackend, SandboxBackend, SandboxSpec};

use escepine_testkit::python_probe::{job, script, PYTHON, STDLIB};
use escepine_testkit::sandbox_host::{cgroups_of, SANDBOX_CGROUP, SPARE_CGROUP};

/// This process's sandbox cgroups (`escepine-sbx-`) or spares (`escepine-spare-`).
fn our_dirs(prefix: &str) -> Vec<PathBuf> {
    cgroups_of(std::process::id(), prefix)
}

/// How many sandbox cgroups and spares this process has.
fn ours() -> (usize, usize) {
    (our_dirs(SANDBOX_CGROUP).len(), our_dirs(SPARE_CGROUP).len())
}

/// The memory charged to the cgroup `dir` (v1 `memory.usage_in_bytes`, v2 `memory.current`).
fn usage(dir: &Path) -> u64 {
    ["memory.usage_in_bytes", "memory.current"]
        .iter()
        .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .and_then(|t| t.trim().parse().ok())
        .expect("a memory usage file")
}

/// A spec of the host's python (its libraries and standard library copied in) under a memory
/// bound of `memory_bytes`.
pub(crate) fn spec(memory_bytes: u64) -> SandboxSpec {
    spec_with_binds(memory_bytes, Vec::new())
}

/// [`spec`] under the default memory bound, with an egress entry (so its sandboxes get the
/// relay, a proxy and a directory in the run directory).
pub(crate) fn spec_with_egress() -> SandboxSpec {
    let mut spec = spec(Limits::default().memory_bytes);
    spec.egress = escepine_contract::EgressGrant::new(vec!["example.test:443"
        .parse()
        .expect("an egress entry")]);
    spec
}

fn spec_with_binds(memory_bytes: u64, binds: Vec<PathBuf>) -> SandboxSpec {
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
        binds,
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

#[tokio::test]
async fn a_spare_is_emptied_of_a_large_page_cache_its_sandbox_left() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    const FILE: u64 = 16 << 20;
    // The file is well over what a spare may keep.
    const { assert!(FILE >= 4 * escepine_sandbox::SPARE_RESIDUE_KEPT) };
    let _host = crate::HOST.lock().await;
    // 16 MiB of a host file that is in no page cache: the sandbox reads it through a bind,
    // which brings its pages in, charged to the sandbox's cgroup; they stay cached (and
    // charged) after the sandbox's processes end.
    let data = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    std::fs::set_permissions(data.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let file = data.path().join("cached.bin");
    {
        let mut f = std::fs::File::create(&file).expect("create");
        f.write_all(&vec![7u8; FILE as usize]).expect("write");
        f.sync_all().expect("fsync");
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).expect("fadvise");
    }
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = LinuxBackend::new()
        .expect("this test program dispatches the sandbox init")
        .with_run_dir(run_dir.path());
    let read = format!(
        "print(len(open({:?}, 'rb').read()))",
        file.display().to_string()
    );
    let mut sandbox = backend
        .provision(Arc::new(spec_with_binds(
            256 << 20,
            vec![data.path().to_path_buf()],
        )))
        .await
        .expect("provisioned");
    let out = backend
        .execute(
            &mut sandbox,
            job(vec![PYTHON.into(), "-I".into(), "-c".into(), read], None),
        )
        .await
        .expect("executed");
    assert_eq!(out.status, JobStatus::Exited(0), "{}", out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        FILE.to_string()
    );
    let [cgroup] = &our_dirs(SANDBOX_CGROUP)[..] else {
        panic!("one sandbox cgroup: {:?}", our_dirs(SANDBOX_CGROUP));
    };
    let left = usage(cgroup);
    assert!(
        left >= FILE,
        "the file's pages are charged to the sandbox: {left} bytes"
    );
    backend.destroy(sandbox).await;
    let [spare] = &our_dirs(SPARE_CGROUP)[..] else {
        panic!("one spare: {:?}", our_dirs(SPARE_CGROUP));
    };
    let kept = usage(spare);
    assert!(
        kept <= escepine_sandbox::SPARE_RESIDUE_KEPT,
        "a spare keeps at most {} bytes of its last sandbox; this one kept {kept}",
        escepine_sandbox::SPARE_RESIDUE_KEPT
    );
    drop(backend);
    assert_eq!(ours(), (0, 0), "a dropped backend leaves no cgroup");
}

/// The tool's cgroups, as it reads them: the root of every hierarchy. Its cgroup namespace is
/// made once PID 1 is in the sandbox's memory cgroup, so not even that cgroup's name (nor the
/// runtime's place in the host's hierarchy) shows inside.
#[tokio::test]
async fn the_sandbox_sees_its_own_cgroup_as_the_root() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = crate::backend(run_dir.path());
    let code = "import json; print(json.dumps(open('/proc/self/cgroup').read().splitlines()))";
    let (status, lines, stderr) = escepine_testkit::python_probe::run(
        &backend,
        spec(Limits::default().memory_bytes),
        script(code),
    )
    .await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    let lines: Vec<String> = serde_json::from_value(lines).expect("the lines of /proc/self/cgroup");
    // `hierarchy:controllers:path`; the memory controller's line on v1, the unified one on v2.
    let memory = lines.iter().find(|l| {
        let controllers = l.split(':').nth(1).unwrap_or_default();
        controllers.split(',').any(|c| c == "memory") || l.starts_with("0::")
    });
    assert!(memory.is_some(), "no memory cgroup: {lines:?}");
    for line in &lines {
        assert!(
            line.ends_with(":/"),
            "a cgroup path shows inside: {line} ({lines:?})"
        );
    }
}
