//! The host's python run in a sandbox, as the sandbox tests of the runtime and of the sandbox
//! crate both run it (feature `sandbox`): the probe script that reports what the interpreter
//! sees, a job of it, and one provision-execute-destroy of a job on a backend.

use std::sync::Arc;
use std::time::Duration;

use escepine_sandbox::{Job, JobStatus, SandboxBackend, SandboxSpec};
use serde_json::Value;

/// Debian's interpreter the probes run.
pub const PYTHON: &str = crate::fixtures::PYTHON_BASE;
/// Its standard library.
pub const STDLIB: &str = crate::fixtures::PYTHON_STDLIB;

/// What the probe script reports, as JSON on stdout: the executable, the working directory,
/// where the standard library's `json.decoder` was found, whether the standard library is
/// writable (`"allowed"` or the errno), whether the root has a loader cache
/// (`/etc/ld.so.cache`), and every mount point.
pub const PROBE: &str = r#"
import json, os, sys
facts = {"executable": sys.executable, "cwd": os.getcwd()}
try:
    import json.decoder
    facts["stdlib"] = json.decoder.__file__
except Exception as e:
    facts["stdlib"] = repr(e)
try:
    open("/usr/lib/python3.11/escepine-probe", "w")
    facts["write"] = "allowed"
except OSError as e:
    facts["write"] = e.errno
facts["ld_cache"] = os.path.lexists("/etc/ld.so.cache")
mounts = [l.split()[4] for l in open("/proc/self/mountinfo")]
facts["mounts"] = mounts
print(json.dumps(facts))
"#;

/// A job of `argv` (no stdin, `PATH` only, 20 s) in `cwd` (`None`: the workspace).
pub fn job(argv: Vec<String>, cwd: Option<&str>) -> Job {
    Job {
        argv,
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: cwd.map(str::to_string),
        stdin: String::new(),
        files: Default::default(),
        deadline: tokio::time::Instant::now() + Duration::from_secs(20),
        stdout_limit: 1 << 20,
        stderr_limit: 1 << 16,
        scrubber: Default::default(),
    }
}

/// A [`job`] of the interpreter running `code` (`python3 -c code`) in the workspace.
pub fn script(code: impl Into<String>) -> Job {
    job(vec![PYTHON.into(), "-c".into(), code.into()], None)
}

/// `job` in a fresh sandbox of `spec` on `backend`: how it ended, its stdout as JSON (`null`
/// if it is not), and its stderr.
pub async fn run(
    backend: &dyn SandboxBackend,
    spec: SandboxSpec,
    job: Job,
) -> (JobStatus, Value, String) {
    let mut sandbox = backend
        .provision(Arc::new(spec))
        .await
        .expect("provisioned");
    let out = backend.execute(&mut sandbox, job).await.expect("executed");
    backend.destroy(sandbox).await;
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status, value, out.stderr)
}
