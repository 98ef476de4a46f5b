//! A job's start in a real sandbox (root): the tool's process is started and confined while
//! the sandbox is built, so a job it cannot start — a working directory or a program missing
//! from the root — is reported by name after the sandbox has long been ready, and a sandbox
//! destroyed without a job leaves no process behind. And the zygote's side of a start: a long
//! provision, a zygote slow to read it, a `clone` the kernel refuses.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use escepine_sandbox::{JobStatus, LinuxBackend, SandboxBackend, SandboxError, SandboxSpec};

use escepine_testkit::python_probe::{job, script, PYTHON};
use escepine_testkit::sandbox_host::{sandbox_processes, zygotes};

fn spec() -> SandboxSpec {
    crate::cgroups::spec(escepine_sandbox::Limits::default().memory_bytes)
}

/// The error of `argv` in `cwd`, run in a sandbox provisioned and left idle a moment first (as
/// a pooled one is).
async fn failure(backend: &LinuxBackend, argv: &[&str], cwd: Option<&str>) -> String {
    let mut sandbox = backend
        .provision(Arc::new(spec()))
        .await
        .expect("provisioned");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let argv = argv.iter().map(|a| (*a).to_string()).collect();
    let err = backend
        .execute(&mut sandbox, job(argv, cwd))
        .await
        .expect_err("the job cannot start");
    backend.destroy(sandbox).await;
    assert!(matches!(err, SandboxError::Init(_)), "{err:?}");
    err.to_string()
}

#[tokio::test]
async fn a_job_that_cannot_start_is_reported_by_name_and_a_good_one_still_runs() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = crate::backend(run_dir.path());

    let err = failure(&backend, &[PYTHON, "-c", "pass"], Some("/no-such-dir")).await;
    assert!(
        err.contains("chdir /no-such-dir: No such file or directory"),
        "{err}"
    );
    let err = failure(&backend, &["/usr/bin/not-in-the-root"], None).await;
    assert!(
        err.contains("cannot execute /usr/bin/not-in-the-root: No such file or directory"),
        "{err}"
    );

    let (status, facts, stderr) = escepine_testkit::python_probe::run(
        &backend,
        spec(),
        script("import json, os; print(json.dumps({'cwd': os.getcwd(), 'pid': os.getpid()}))"),
    )
    .await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    assert_eq!(facts["cwd"], "/workspace");
    assert_eq!(facts["pid"], 2, "the tool is PID 1's only child");
}

#[tokio::test]
async fn a_sandbox_destroyed_without_a_job_leaves_no_process() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = crate::backend(run_dir.path());
    let before = sandbox_processes().len();
    let mut sandboxes = Vec::new();
    for _ in 0..3 {
        sandboxes.push(
            backend
                .provision(Arc::new(spec()))
                .await
                .expect("provisioned"),
        );
    }
    // Each holds PID 1 and the waiting tool's process.
    assert_eq!(sandbox_processes().len(), before + 6);
    for sandbox in sandboxes {
        backend.destroy(sandbox).await;
    }
    let mut left = usize::MAX;
    for _ in 0..100 {
        left = sandbox_processes().len();
        if left == before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(left, before, "every sandbox's processes ended");
}

/// A provision longer than the control socket's buffer holds (3,000 read-only paths of 200-odd
/// bytes each, more than twice the socket's default send buffer), which the host sends only in
/// part before the zygote reads, and the zygote in many reads: every path is in the sandbox's
/// root.
#[tokio::test]
async fn a_provision_longer_than_the_sockets_buffer_arrives_whole() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = crate::backend(run_dir.path());
    let files = tempfile::tempdir().expect("tempdir");
    let spec = long_spec(files.path());
    let buffer: usize = std::fs::read_to_string("/proc/sys/net/core/wmem_default")
        .expect("the socket's default send buffer")
        .trim()
        .parse()
        .expect("a number");
    let listed: usize = spec.read_only.iter().map(|p| p.as_os_str().len()).sum();
    assert!(
        listed > 2 * buffer,
        "{listed} bytes of paths, a buffer of {buffer}"
    );
    let dir = files.path().display().to_string();
    let code = format!(
        "import json, os; names = os.listdir({dir:?}); \
         print(json.dumps({{'n': len(names), 'last': open(os.path.join({dir:?}, max(names))).read()}}))"
    );
    // A provision stuck between the host and the zygote would hang, not fail: bounded.
    let (status, facts, stderr) = tokio::time::timeout(
        Duration::from_secs(60),
        escepine_testkit::python_probe::run(&backend, spec, script(code)),
    )
    .await
    .expect("the provision reached the zygote");
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    assert_eq!(facts["n"], 3000, "every read-only path is in the root");
    assert_eq!(facts["last"], "2999");
}

/// The zygote `backend` starts (it starts one on its first sandbox, provisioned and destroyed
/// here), and the zygotes there were before it.
async fn zygote_of(backend: &LinuxBackend) -> (u32, BTreeSet<u32>) {
    let before = zygotes();
    let first = backend
        .provision(Arc::new(spec()))
        .await
        .expect("provisioned");
    backend.destroy(first).await;
    let started = zygotes_since(&before);
    let [zygote] = started[..] else {
        panic!("one zygote started by this backend: {started:?}");
    };
    (zygote, before)
}

/// The zygotes of this process that are not among `before`.
fn zygotes_since(before: &BTreeSet<u32>) -> Vec<u32> {
    zygotes().difference(before).copied().collect()
}

/// [`spec`] with 3,000 read-only paths of 200-odd bytes each, files made in `dir`: a provision
/// longer than the control socket's buffer.
fn long_spec(dir: &std::path::Path) -> SandboxSpec {
    let mut spec = spec();
    for i in 0..3000 {
        let path = dir.join(format!("{i:04}-{}", "p".repeat(200)));
        std::fs::write(&path, i.to_string()).expect("write");
        spec.read_only.push(path);
    }
    spec
}

/// While the zygote reads nothing (stopped), a provision longer than the control socket's buffer
/// waits for it without holding the runtime's one thread: a timer on that thread keeps firing.
/// Once the zygote goes on, the sandbox is provisioned.
#[tokio::test]
async fn a_provision_waiting_for_the_zygote_blocks_no_thread_of_the_runtime() {
    use rustix::process::{kill_process, Pid, Signal};
    use std::sync::atomic::{AtomicUsize, Ordering};

    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = Arc::new(crate::backend(run_dir.path()));
    let (zygote, _) = zygote_of(&backend).await;
    let zygote = Pid::from_raw(i32::try_from(zygote).expect("a pid")).expect("a pid");

    let files = tempfile::tempdir().expect("tempdir");
    let long = long_spec(files.path());
    let long = Arc::new(long);
    // Once with the zygote running: the spec's root image is made, and cached.
    let first = backend
        .provision(Arc::clone(&long))
        .await
        .expect("provisioned");
    backend.destroy(first).await;
    kill_process(zygote, Signal::STOP).expect("SIGSTOP the zygote");
    // Should the provision hold the thread, the zygote goes on after 3 s all the same, and the
    // timer below has not fired meanwhile.
    let (resumed, resume_now) = std::sync::mpsc::channel::<()>();
    let resume = std::thread::spawn(move || {
        let _ = resume_now.recv_timeout(Duration::from_secs(3));
        let _ = kill_process(zygote, Signal::CONT);
    });
    let ticks = Arc::new(AtomicUsize::new(0));
    let ticker = tokio::spawn({
        let ticks = Arc::clone(&ticks);
        async move {
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                ticks.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let provision = tokio::spawn({
        let backend = Arc::clone(&backend);
        async move { backend.provision(long).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ticked = ticks.load(Ordering::Relaxed);
    let finished = provision.is_finished();
    kill_process(zygote, Signal::CONT).expect("SIGCONT the zygote");
    let _ = resumed.send(());
    ticker.abort();
    let sandbox = tokio::time::timeout(Duration::from_secs(60), provision)
        .await
        .expect("provisioned once the zygote went on")
        .expect("the task ran")
        .expect("provisioned");
    backend.destroy(sandbox).await;
    resume.join().expect("the thread that resumes the zygote");
    assert!(
        !finished,
        "nothing was provisioned while the zygote was stopped"
    );
    assert!(
        ticked >= 10,
        "the runtime's thread ran {ticked} ticks of 10 ms in 500 ms"
    );
}

/// A pids cgroup of this test's own, holding one process at most; moved out of and removed on
/// drop.
struct PidsLimit {
    dir: std::path::PathBuf,
}

impl PidsLimit {
    /// Moves `pid` into a new pids cgroup that admits no other process.
    fn hold(pid: u32) -> Self {
        let root = std::path::Path::new("/sys/fs/cgroup/pids");
        assert!(
            root.join("cgroup.procs").exists(),
            "this test needs the cgroup v1 pids controller at {}",
            root.display()
        );
        let dir = root.join(format!("escepine-test-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("a pids cgroup");
        let limit = Self { dir };
        std::fs::write(limit.dir.join("cgroup.procs"), pid.to_string()).expect("moved in");
        limit.set_max("1");
        limit
    }

    fn set_max(&self, max: &str) {
        std::fs::write(self.dir.join("pids.max"), max).expect("pids.max");
    }
}

impl Drop for PidsLimit {
    fn drop(&mut self) {
        let root = std::path::Path::new("/sys/fs/cgroup/pids/cgroup.procs");
        if let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in procs.lines() {
                let _ = std::fs::write(root, pid);
            }
        }
        // Processes of ended sandboxes may still be leaving it.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// When the zygote's `clone` of a PID 1 fails (here its pids cgroup admits no other process),
/// the provision fails with the kernel's reason, nothing of the sandbox is left, and the same
/// zygote starts the next sandbox once it may.
#[tokio::test]
async fn a_clone_the_kernel_refuses_fails_that_sandbox_only() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = crate::backend(run_dir.path());
    let (zygote, before) = zygote_of(&backend).await;
    let cgroups = escepine_testkit::sandbox_host::sandbox_cgroups_of(std::process::id()).len();

    let limit = PidsLimit::hold(zygote);
    let err = backend
        .provision(Arc::new(spec()))
        .await
        .expect_err("no PID 1 can be made");
    let message = err.to_string();
    assert!(
        message.contains("cannot create the sandbox's namespaces")
            && message.contains("Resource temporarily unavailable"),
        "{message}"
    );
    assert!(zygotes().contains(&zygote), "the zygote goes on");
    let mut left = usize::MAX;
    for _ in 0..100 {
        left = escepine_testkit::sandbox_host::sandbox_cgroups_of(std::process::id()).len();
        if left == cgroups {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(left, cgroups, "no cgroup of the failed sandbox is left");

    limit.set_max("max");
    let (status, facts, stderr) = escepine_testkit::python_probe::run(
        &backend,
        spec(),
        script("import json, os; print(json.dumps({'pid': os.getpid()}))"),
    )
    .await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    assert_eq!(facts["pid"], 2);
    assert_eq!(
        zygotes_since(&before),
        [zygote],
        "the same zygote started it"
    );
    drop(limit);
}
