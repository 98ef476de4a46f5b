//! Sandbox roots that are a whole directory tree (what the image store unpacks): the tree is
//! the root, its working directory applies, nothing of the host is mounted, no loader cache is
//! made from its files, and a hostile image's links to host directories change nothing on the
//! host — or are refused, naming the image and the entry. And a binary's root: the loader finds
//! its libraries through a cache of the image's own. Real sandboxes (root, namespaces), the
//! host's python copied in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use escepine_sandbox::deps::{self, DepCache};
use escepine_sandbox::{JobStatus, SandboxBackend, SandboxSpec};
use serde_json::Value;

use escepine_testkit::python_probe::{job, run, PROBE, PYTHON, STDLIB};

/// A root made of a directory tree (what the image store unpacks): the host's python copied in
/// with its libraries and standard library, nothing else of the host.
fn python_tree(dest: &Path) {
    let copy = |from: &Path| {
        let to = dest.join(from.strip_prefix("/").expect("absolute"));
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        let status = std::process::Command::new("cp")
            .args(["-a", "--dereference"])
            .arg(from)
            .arg(&to)
            .status()
            .expect("cp");
        assert!(status.success());
    };
    copy(Path::new(PYTHON));
    copy(Path::new(STDLIB));
    let ldd = std::process::Command::new("ldd")
        .arg(PYTHON)
        .output()
        .expect("ldd");
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        if let Some(path) = line.split_whitespace().find(|w| w.starts_with('/')) {
            copy(Path::new(path));
        }
    }
    std::fs::create_dir_all(dest.join("app")).expect("mkdir");
}

#[tokio::test]
async fn a_tree_is_the_whole_root_and_its_working_directory_applies() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let tree = tempfile::tempdir().expect("tempdir");
    python_tree(tree.path());
    let backend = crate::backend(run_dir.path());
    let spec = SandboxSpec {
        program: PathBuf::from(PYTHON),
        program_identity: "oci:/test@sha256:0".into(),
        program_sha256: None,
        read_only: vec!["/usr".into(), "/lib".into(), "/lib64".into(), "/app".into()],
        binds: Vec::new(),
        root_tree: Some(tree.path().to_path_buf()),
        egress: escepine_contract::EgressGrant::default(),
        limits: Default::default(),
    };
    let argv = vec![PYTHON.to_string(), "-I".into(), "-c".into(), PROBE.into()];
    let (status, facts, stderr) = run(&backend, spec, job(argv, Some("/app"))).await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    assert_eq!(facts["cwd"], "/app");
    assert_eq!(facts["write"], 30, "the root is read-only: {facts}");
    assert_eq!(
        facts["ld_cache"], false,
        "no loader cache is made from an image's files: {facts}"
    );
    let mut mounts: Vec<&str> = facts["mounts"]
        .as_array()
        .expect("mount points")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    mounts.sort();
    assert_eq!(
        mounts,
        ["/", "/proc", "/workspace"],
        "nothing of the host is mounted"
    );
}

/// What the loader of a binary's sandbox reports, and the libraries its cache lists.
const CACHE_PROBE: &str = r#"
import json, re
cache = open("/etc/ld.so.cache", "rb").read()
print(json.dumps(sorted({m.decode() for m in re.findall(rb"/[^\0]+?\.so[^\0]*", cache)})))
"#;

/// A binary's root (the host's python, its libraries and standard library copied in) has a
/// loader cache of its own: the loader finds every library through it, trying no directory,
/// and it lists libraries of the image only — not the host's others, which the host's cache
/// would show the tool.
#[tokio::test]
async fn a_binarys_root_has_a_loader_cache_of_its_own_libraries() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let backend = crate::backend(run_dir.path());
    let python = Path::new(PYTHON);
    let identity = deps::identity(python).expect("the interpreter");
    let mut read_only = DepCache::default()
        .needs(python, &identity)
        .expect("its libraries");
    let copied: Vec<String> = read_only.iter().map(|p| p.display().to_string()).collect();
    read_only.push(STDLIB.into());
    let spec = SandboxSpec {
        program: python.to_path_buf(),
        program_identity: identity,
        program_sha256: None,
        read_only,
        binds: Vec::new(),
        root_tree: None,
        egress: escepine_contract::EgressGrant::default(),
        limits: Default::default(),
    };
    let argv = vec![
        PYTHON.to_string(),
        "-I".into(),
        "-c".into(),
        CACHE_PROBE.into(),
    ];
    let mut job = job(argv, None);
    job.env.push(("LD_DEBUG".into(), "libs".into()));
    let (status, listed, stderr) = run(&backend, spec, job).await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    let listed: Vec<&str> = listed
        .as_array()
        .expect("the cache's libraries")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        listed.iter().any(|l| l.ends_with("/libc.so.6")),
        "the cache lists the C library: {listed:?}"
    );
    for library in &listed {
        assert!(
            copied.iter().any(|c| c == library),
            "the cache lists {library}, which is not a copy in the image (copies: {copied:?})"
        );
    }
    assert!(
        stderr.contains("search cache=/etc/ld.so.cache"),
        "the loader looks in the cache: {stderr}"
    );
    assert!(
        !stderr.contains("search path="),
        "the loader found every library in the cache, without trying a directory: {stderr}"
    );
}

/// Every entry beneath `dir` (links not followed): its path, inode, and content (a file's
/// bytes, a link's target).
fn host_snapshot(dir: &Path) -> Vec<(PathBuf, u64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        let meta = std::fs::symlink_metadata(&at).expect("stat");
        let content = if meta.file_type().is_symlink() {
            std::fs::read_link(&at)
                .expect("readlink")
                .into_os_string()
                .into_encoded_bytes()
        } else if meta.is_file() {
            std::fs::read(&at).expect("read")
        } else {
            Vec::new()
        };
        if meta.is_dir() {
            for entry in std::fs::read_dir(&at).expect("list") {
                todo.push(entry.expect("entry").path());
            }
        }
        out.push((at, meta.ino(), content));
    }
    out.sort();
    out
}

/// A host directory an attacker's image points at: `dev`, `etc`, `proc`, `tmp`, `workspace`
/// and `var` beneath it, each holding files of the names the root builder writes.
fn host_targets() -> tempfile::TempDir {
    let host = tempfile::tempdir().expect("tempdir");
    for sub in ["dev", "etc", "proc", "tmp", "workspace", "var"] {
        let dir = host.path().join(sub);
        std::fs::create_dir(&dir).expect("mkdir");
        for name in [
            "null", "zero", "full", "random", "urandom", "fd", "stdin", "stdout", "stderr",
            "hosts", "passwd", "group",
        ] {
            std::fs::write(dir.join(name), format!("host {sub}/{name}\n")).expect("write");
        }
    }
    host
}

fn image_spec(tree: &Path, read_only: &[&str], binds: Vec<PathBuf>) -> SandboxSpec {
    SandboxSpec {
        program: PathBuf::from(PYTHON),
        program_identity: "oci:/hostile@sha256:1".into(),
        program_sha256: None,
        read_only: read_only.iter().map(PathBuf::from).collect(),
        binds,
        root_tree: Some(tree.to_path_buf()),
        egress: escepine_contract::EgressGrant::default(),
        limits: Default::default(),
    }
}

/// A host directory bound read-only beneath `/var/tmp` (where a hostile image's `var` leads).
fn bound_dir() -> tempfile::TempDir {
    let bound = tempfile::Builder::new()
        .prefix("escepine-bind-")
        .tempdir_in("/var/tmp")
        .expect("tempdir");
    std::fs::write(bound.path().join("fact"), "bound").expect("write");
    bound
}

/// An image whose `dev`, `proc`, `tmp` and `workspace` are links to host directories, and whose
/// `var` is an absolute link to a directory of its own: the sandbox starts with plain
/// directories of its own for the first four, a bind beneath `/var` is mounted where the
/// image's link leads inside the image, and no host path changes.
#[tokio::test]
async fn an_image_linking_its_system_directories_to_the_host_changes_nothing_on_it() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let targets = host_targets();
    let tree = tempfile::tempdir().expect("tempdir");
    python_tree(tree.path());
    for name in ["dev", "proc", "tmp", "workspace"] {
        std::os::unix::fs::symlink(targets.path().join(name), tree.path().join(name))
            .expect("symlink");
    }
    // `/var -> /image-var`: absolute, so on the host it would name the host's `/image-var`.
    std::fs::create_dir(tree.path().join("image-var")).expect("mkdir");
    std::os::unix::fs::symlink("/image-var", tree.path().join("var")).expect("symlink");
    let bound = bound_dir();
    let before = host_snapshot(targets.path());
    let backend = crate::backend(run_dir.path());
    let spec = image_spec(
        tree.path(),
        &["/usr", "/lib", "/lib64", "/app", "/image-var", "/var"],
        vec![bound.path().to_path_buf()],
    );
    let code = format!(
        "import json, os\n\
         facts = {{'dev': os.path.islink('/dev'), 'null': os.major(os.stat('/dev/null').st_rdev),\n\
                   'workspace': os.path.islink('/workspace'), 'proc': os.path.islink('/proc'),\n\
                   'tmp': os.path.islink('/tmp'), 'cwd': os.getcwd(),\n\
                   'bound': open('{}/fact').read(), 'hosts': open('/etc/hosts').read()}}\n\
         open('/workspace/out', 'w').write('x')\n\
         print(json.dumps(facts))",
        bound.path().display()
    );
    let argv = vec![PYTHON.to_string(), "-I".into(), "-c".into(), code];
    let (status, facts, stderr) = run(&backend, spec, job(argv, None)).await;
    assert_eq!(status, JobStatus::Exited(0), "stderr: {stderr}");
    assert_eq!(facts["dev"], false, "{facts}");
    assert_eq!(
        facts["null"], 1,
        "the host's null device (major 1): {facts}"
    );
    assert_eq!(facts["workspace"], false, "{facts}");
    assert_eq!(facts["proc"], false, "{facts}");
    assert_eq!(facts["tmp"], false, "{facts}");
    assert_eq!(facts["cwd"], "/workspace", "{facts}");
    assert_eq!(
        facts["bound"], "bound",
        "the bind, through the image's link: {facts}"
    );
    assert!(
        facts["hosts"]
            .as_str()
            .is_some_and(|h| h.contains("localhost")),
        "{facts}"
    );
    assert_eq!(
        host_snapshot(targets.path()),
        before,
        "every host path the image links to is unchanged (names, inodes, contents)"
    );
    assert!(
        !Path::new("/image-var").exists(),
        "nothing made on the host"
    );
}

/// An image whose `var` links to a host directory, with a bind beneath `/var`: the mount point
/// would be made on the host, so the image is refused, naming it and the link; nothing on the
/// host changes.
#[tokio::test]
async fn an_image_leading_a_mount_point_onto_the_host_is_refused_and_changes_nothing() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let targets = host_targets();
    let tree = tempfile::tempdir().expect("tempdir");
    python_tree(tree.path());
    let var = targets.path().join("var");
    std::os::unix::fs::symlink(&var, tree.path().join("var")).expect("symlink");
    let bound = bound_dir();
    let before = host_snapshot(targets.path());
    let backend = crate::backend(run_dir.path());
    let spec = image_spec(
        tree.path(),
        &["/usr", "/lib", "/lib64", "/app"],
        vec![bound.path().to_path_buf()],
    );
    let err = backend
        .provision(Arc::new(spec))
        .await
        .expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("oci:/hostile@sha256:1"), "{text}");
    assert!(text.contains("`/var`"), "{text}");
    assert!(text.contains(&var.display().to_string()), "{text}");
    assert_eq!(host_snapshot(targets.path()), before);
}

/// An image whose `etc` is a link to a host directory is refused, naming the image and the
/// entry; the host directory is unchanged.
#[tokio::test]
async fn an_image_linking_its_etc_to_the_host_is_refused_and_changes_nothing_on_it() {
    let _host = crate::HOST.lock().await;
    let run_dir = tempfile::tempdir().expect("tempdir");
    let targets = host_targets();
    let tree = tempfile::tempdir().expect("tempdir");
    python_tree(tree.path());
    let etc = targets.path().join("etc");
    std::os::unix::fs::symlink(&etc, tree.path().join("etc")).expect("symlink");
    let before = host_snapshot(targets.path());
    let backend = crate::backend(run_dir.path());
    let spec = image_spec(tree.path(), &["/usr", "/lib", "/lib64", "/app"], Vec::new());
    let err = backend
        .provision(Arc::new(spec))
        .await
        .expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("oci:/hostile@sha256:1"), "{text}");
    assert!(text.contains("`/etc`"), "{text}");
    assert!(text.contains(&etc.display().to_string()), "{text}");
    assert_eq!(host_snapshot(targets.path()), before);
}
