//! Real MCP servers registered as a new user registers them, through the `escepine` binary
//! only: `mcp-server-time` and `mcp-server-git` from PyPI, `@modelcontextprotocol/server-memory`
//! from npm (installed by `.ci/fixtures`), and a server of the official Python SDK in an OCI
//! image pushed to a real registry on loopback.
//!
//! Each test does what README's "Registering the MCP servers you have" says: `import mcp`,
//! the decisions the import reports made by editing the drafts (only those it asks for), a
//! policy permitting the tools, an envelope admitting the read-only paths (or the registry),
//! `check`, then `call` in the sandbox. Real sandboxes (root, namespaces), real servers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use escepine_ledger::record::{CallResult, Outcome, Record};
use escepine_ledger::sqlite::read_entries;
use escepine_testkit::fixtures;
use serde_json::{json, Value};

/// The principal the policies of these tests permit.
const USER: &str = r#"Agent::"newcomer""#;

fn escepine() -> Command {
    Command::new(env!("CARGO_BIN_EXE_escepine"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `output` with its streams, for assertion messages.
fn shown(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    )
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn write_json(path: &Path, value: &Value) {
    let text = serde_json::to_string_pretty(value).expect("JSON");
    std::fs::write(path, text + "\n")
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

fn strings(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// The folder of one registration: drafts, policies, envelope, ledger.
struct Workdir {
    dir: tempfile::TempDir,
}

impl Workdir {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn records(&self) -> PathBuf {
        self.path("records")
    }

    /// `escepine import mcp [--read-only P]... <extra> --out records [-- command]`.
    fn import(&self, read_only: &[PathBuf], extra: &[&str], command: &[String]) -> Output {
        let mut cmd = escepine();
        cmd.args(["import", "mcp"]);
        for p in read_only {
            cmd.arg("--read-only").arg(p);
        }
        cmd.args(extra).arg("--out").arg(self.records());
        if !command.is_empty() {
            cmd.arg("--").args(command);
        }
        cmd.output().expect("run escepine import mcp")
    }

    /// Every draft in `records/` set to run on `tier` (as a user choosing the tier edits them).
    fn set_tier(&self, tier: &str) {
        for entry in std::fs::read_dir(self.records())
            .expect("records")
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") {
                let mut draft = read_json(&path);
                draft["sandbox_profile"]["isolation"] = json!(tier);
                write_json(&path, &draft);
            }
        }
    }

    /// A policy permitting `tools` to [`USER`], and nothing else.
    fn permit(&self, tools: &[&str]) -> PathBuf {
        let dir = self.path("policies");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let actions: Vec<String> = tools.iter().map(|t| format!("Action::\"{t}\"")).collect();
        std::fs::write(
            dir.join("newcomer.cedar"),
            format!(
                "@id(\"newcomer-uses-the-imported-tools\")\npermit (principal == {USER}, \
                 action in [{}], resource);\n",
                actions.join(", ")
            ),
        )
        .expect("policy");
        dir
    }

    /// The deployment envelope: no egress, `read_only` prefixes, `images` sources.
    fn envelope(&self, read_only: &[PathBuf], images: &[String]) -> PathBuf {
        let path = self.path("envelope.json");
        write_json(
            &path,
            &json!({ "egress": [], "read_only": strings(read_only), "images": images }),
        );
        path
    }

    fn registry_args(&self, envelope: &Path) -> Vec<String> {
        vec![
            "--records".into(),
            self.records().display().to_string(),
            "--policies".into(),
            self.path("policies").display().to_string(),
            "--envelope".into(),
            envelope.display().to_string(),
        ]
    }

    /// `escepine check` of the records, with `extra` flags.
    fn check(&self, envelope: &Path, extra: &[&str]) -> Output {
        escepine()
            .arg("check")
            .args(self.registry_args(envelope))
            .args(extra)
            .output()
            .expect("run escepine check")
    }

    /// `escepine call` of `tool` with `input`, in the sandbox (the default executor).
    fn call(&self, envelope: &Path, tool: &str, input: &Value, extra: &[&str]) -> Output {
        escepine()
            .arg("call")
            .args(self.registry_args(envelope))
            .args(["--principal", USER, "--tool", tool, "--input"])
            .arg(input.to_string())
            .arg("--ledger")
            .arg(self.path("ledger.db"))
            .args(extra)
            .output()
            .expect("run escepine call")
    }

    fn ledger_show(&self) -> String {
        let out = escepine()
            .args(["ledger", "show"])
            .arg(self.path("ledger.db"))
            .output()
            .expect("run escepine ledger show");
        assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
        text(&out.stdout)
    }

    /// The ledger's last outcome entry.
    fn last_outcome(&self) -> Outcome {
        read_entries(&self.path("ledger.db"))
            .expect("the ledger")
            .into_iter()
            .rev()
            .find_map(|e| match e.record {
                Record::Outcome(o) => Some(o),
                _ => None,
            })
            .expect("an outcome")
    }

    fn ledger_verify(&self) {
        let out = escepine()
            .args(["ledger", "verify"])
            .arg(self.path("ledger.db"))
            .output()
            .expect("run escepine ledger verify");
        assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    }

    /// The drafts written to `records/` and `records/needs-decision/`, by tool id.
    fn drafts(&self) -> (Vec<String>, Vec<String>) {
        let ids = |dir: PathBuf| {
            let mut ids: Vec<String> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".json").map(str::to_string)
                })
                .collect();
            ids.sort();
            ids
        };
        (
            ids(self.records()),
            ids(self.records().join("needs-decision")),
        )
    }

    /// Make the decisions the drafts in `needs-decision/` list, as a reviewer does: for each
    /// `DECIDE <pointer>` of a draft's `$comment`, `decide(tool id, pointer, record)` edits the
    /// record (and answers whether it knew that decision: the test fails on any other). Then
    /// the draft comment is deleted, as it asks, and the draft moved up to `records/`. Returns
    /// every `(tool id, pointer)` decided.
    fn decide(&self, decide: impl Fn(&str, &str, &mut Value) -> bool) -> Vec<(String, String)> {
        let pending = self.records().join("needs-decision");
        let mut decided = Vec::new();
        for id in self.drafts().1 {
            let from = pending.join(format!("{id}.json"));
            let mut record = read_json(&from);
            let asked: Vec<String> = record["$comment"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter_map(|c| c.strip_prefix("DECIDE "))
                .filter_map(|c| c.split_once(": ").map(|(p, _)| p.to_string()))
                .collect();
            assert!(
                !asked.is_empty(),
                "{id} is in needs-decision with nothing to decide"
            );
            for pointer in asked {
                assert!(
                    decide(&id, &pointer, &mut record),
                    "an unexpected decision for `{id}` at {pointer}: {:#}",
                    record["$comment"]
                );
                decided.push((id.clone(), pointer));
            }
            if let Some(r) = record.as_object_mut() {
                r.remove("$comment");
            }
            write_json(&self.records().join(format!("{id}.json")), &record);
            std::fs::remove_file(&from).expect("move the decided draft");
        }
        decided
    }
}

/// The `decide:` lines `import` printed, as `(MCP tool, pointer)`.
fn printed_decisions(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("decide: tool `"))
        .filter_map(|l| {
            let (tool, rest) = l.split_once("` at ")?;
            let (pointer, _) = rest.split_once(": ")?;
            Some((tool.to_string(), pointer.to_string()))
        })
        .collect()
}

/// The output JSON of a successful call.
fn output_of(call: &Output) -> Value {
    assert_eq!(call.status.code(), Some(0), "{}", shown(call));
    serde_json::from_slice(&call.stdout)
        .unwrap_or_else(|e| panic!("the output is not JSON ({e}): {}", shown(call)))
}

fn mcp_server_time_from_pypi_is_imported_checked_and_called_in_its_sandbox(tier: &str) {
    let w = Workdir::new();
    let read_only = fixtures::python_read_only_paths().expect("the fixtures are installed");
    let command = fixtures::mcp_server_time_cmd().expect("the fixtures are installed");

    let import = w.import(&read_only, &[], &command);
    assert_eq!(import.status.code(), Some(0), "{}", shown(&import));
    let stdout = text(&import.stdout);
    let (ready, pending) = w.drafts();
    assert_eq!(
        (
            ready.len() + pending.len(),
            ready.iter().chain(&pending).count()
        ),
        (2, 2),
        "{stdout}"
    );
    let mut all: Vec<&String> = ready.iter().chain(&pending).collect();
    all.sort();
    assert_eq!(all, ["convert_time", "get_current_time"], "{stdout}");
    // Both tools are annotated readOnlyHint: true and declare an outputSchema: as imported,
    // nothing is left to decide.
    assert_eq!(printed_decisions(&stdout), Vec::new(), "{stdout}");
    assert!(pending.is_empty(), "{stdout}");
    let draft = read_json(&w.records().join("get_current_time.json"));
    assert_eq!(draft["side_effect_class"], "read-only");
    assert_eq!(draft["endpoint"]["command"], command[0]);
    assert_eq!(
        draft["sandbox_profile"]["read_only"],
        json!(strings(&read_only))
    );
    assert!(
        draft["endpoint"]["definition_sha256"].is_string(),
        "{draft:#}"
    );

    w.set_tier(tier);
    w.permit(&["get_current_time", "convert_time"]);
    let envelope = w.envelope(&read_only, &[]);
    let check = w.check(&envelope, &["--show-root", "get_current_time"]);
    assert_eq!(check.status.code(), Some(0), "{}", shown(&check));
    let root = text(&check.stdout);
    // The script's interpreter is copied; the virtualenv is bound read-only.
    let venv = fixtures::python_venv().expect("the venv");
    assert!(root.contains(&venv.display().to_string()), "{root}");
    assert!(root.contains("/workspace"), "{root}");

    let call = w.call(
        &envelope,
        "get_current_time",
        &json!({"timezone": "UTC"}),
        &[],
    );
    let out = output_of(&call);
    assert_eq!(out["timezone"], "UTC", "{out}");
    assert_eq!(out["is_dst"], false, "{out}");
    let datetime = out["datetime"].as_str().expect("a datetime");
    assert!(datetime.ends_with("+00:00"), "{datetime}");
    let converted = output_of(&w.call(
        &envelope,
        "convert_time",
        &json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        &[],
    ));
    assert_eq!(converted["target"]["timezone"], "Asia/Tokyo", "{converted}");
    assert_eq!(converted["time_difference"], "+9.0h", "{converted}");
    // Outside the input schema: refused before any sandbox (exit 4).
    let refused = w.call(&envelope, "get_current_time", &json!({"tz": "UTC"}), &[]);
    assert_eq!(refused.status.code(), Some(4), "{}", shown(&refused));
    w.ledger_verify();
}

/// The paths `server-memory` needs, and the one wrapper that gives it an environment variable
/// (a record names a command and arguments; it cannot set the server's environment).
const ENV: &str = "/usr/bin/env";

/// The one decision server-memory's drafts ask for: the class of each tool that writes. The
/// graph's writes replace what they name; none is an exact inverse of another (a deleted
/// entity loses its relations), so none is `compensatable`.
fn memory_class(id: &str, pointer: &str, record: &mut Value) -> bool {
    if pointer != "/side_effect_class" {
        return false;
    }
    let class = match id {
        "read_graph" | "search_nodes" | "open_nodes" => "read-only",
        _ => "supersede",
    };
    record["side_effect_class"] = json!(class);
    true
}

fn server_memory_from_npm_runs_one_sandbox_per_call_and_keeps_nothing(tier: &str) {
    let w = Workdir::new();
    let read_only = fixtures::node_read_only_paths().expect("the fixtures are installed");
    let command = fixtures::server_memory_cmd().expect("the fixtures are installed");

    let import = w.import(&read_only, &[], &command);
    assert_eq!(import.status.code(), Some(0), "{}", shown(&import));
    let stdout = text(&import.stdout);
    let (ready, pending) = w.drafts();
    let mut all: Vec<String> = ready.iter().chain(&pending).cloned().collect();
    all.sort();
    assert_eq!(
        all,
        [
            "add_observations",
            "create_entities",
            "create_relations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "open_nodes",
            "read_graph",
            "search_nodes"
        ],
        "{stdout}"
    );
    // The decisions asked are classes only, one per tool not annotated readOnlyHint: true.
    let asked = printed_decisions(&stdout);
    assert!(!asked.is_empty(), "{stdout}");
    assert!(
        asked.iter().all(|(_, p)| p == "/side_effect_class"),
        "{asked:?}"
    );
    let decided = w.decide(memory_class);
    assert_eq!(decided.len(), asked.len(), "{decided:?} vs {asked:?}");
    w.set_tier(tier);
    let tools = ["create_entities", "read_graph"];
    w.permit(&tools);
    let envelope = w.envelope(&read_only, &[]);
    let check = w.check(&envelope, &[]);
    assert_eq!(check.status.code(), Some(0), "{}", shown(&check));

    let entities = json!({"entities": [
        {"name": "escepine", "entityType": "project", "observations": ["governs tools"]}
    ]});
    // As imported, the server keeps its graph beside its own code, which is read-only in the
    // sandbox: the write fails, and says why.
    let failed = w.call(&envelope, "create_entities", &entities, &[]);
    assert_eq!(failed.status.code(), Some(5), "{}", shown(&failed));
    let why = text(&failed.stderr);
    // On gVisor the tool's own user meets the root's ownership before the read-only mount.
    assert!(
        why.contains("EROFS")
            || why.contains("read-only file system")
            || (tier == "gvisor" && why.contains("EACCES")),
        "{why}"
    );

    // `MEMORY_FILE_PATH` under /workspace, through `env` (the record cannot set it): the write
    // succeeds, in that call's sandbox only.
    let mut wrapped = vec![
        ENV.to_string(),
        "MEMORY_FILE_PATH=/workspace/memory.jsonl".to_string(),
    ];
    wrapped.extend(command.iter().cloned());
    let again = w.import(&read_only, &["--force"], &wrapped);
    assert_eq!(again.status.code(), Some(0), "{}", shown(&again));
    w.decide(memory_class);
    w.set_tier(tier);
    let draft = read_json(&w.records().join("create_entities.json"));
    assert_eq!(draft["endpoint"]["command"], ENV, "{draft:#}");
    let check = w.check(&envelope, &[]);
    assert_eq!(check.status.code(), Some(0), "{}", shown(&check));
    let created = output_of(&w.call(&envelope, "create_entities", &entities, &[]));
    assert_eq!(created["entities"][0]["name"], "escepine", "{created}");
    // The next call runs in a fresh sandbox: the graph written in the last one is gone.
    let graph = output_of(&w.call(&envelope, "read_graph", &json!({}), &[]));
    assert_eq!(graph, json!({"entities": [], "relations": []}));
    w.ledger_verify();
}

/// The `git` the server runs: the first on the tools' `PATH`, with its libraries and its
/// exec path (where its helper programs live).
fn git_paths() -> Vec<PathBuf> {
    let git = ["/usr/local/bin/git", "/usr/bin/git", "/bin/git"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("git is installed");
    let mut paths = vec![git.clone()];
    let exec = Command::new(&git)
        .arg("--exec-path")
        .output()
        .expect("git --exec-path");
    let exec = PathBuf::from(text(&exec.stdout).trim());
    if exec.is_dir() {
        paths.push(exec);
    }
    let ldd = Command::new("ldd").arg(&git).output().expect("ldd");
    for line in text(&ldd.stdout).lines() {
        if let Some(lib) = line.split_whitespace().find(|w| w.starts_with('/')) {
            let lib = PathBuf::from(lib);
            if !paths.contains(&lib) {
                paths.push(lib);
            }
        }
    }
    paths
}

/// `git` with `args` in `repo`, as the test's own user.
fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", shown(&out));
}

#[test]
fn mcp_server_git_registers_twelve_text_tools_and_needs_safe_directory() {
    let w = Workdir::new();
    // A repository the server may read, bound read-only.
    let repos = w.path("repos");
    let repo = repos.join("demo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "demo\n").expect("write");
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    std::fs::write(repo.join("untracked.txt"), "new\n").expect("write");
    // A git configuration naming the repository safe, bound read-only too.
    let config_dir = w.path("gitconfig");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    let gitconfig = config_dir.join("gitconfig");
    std::fs::write(
        &gitconfig,
        format!("[safe]\n\tdirectory = {}\n", repo.display()),
    )
    .expect("write");

    let mut read_only = fixtures::python_read_only_paths().expect("the fixtures are installed");
    for p in git_paths()
        .into_iter()
        .chain([repos.clone(), config_dir.clone()])
    {
        // git's libraries are python's too (libc, libz): each path is listed once.
        if !read_only.contains(&p) {
            read_only.push(p);
        }
    }
    let command = fixtures::mcp_server_git_cmd().expect("the fixtures are installed");

    let text_schema = escepine_runtime::mcp::transport::text_output_schema();
    let review = |w: &Workdir, stdout: &str| {
        let (ready, pending) = w.drafts();
        let all: Vec<&String> = ready.iter().chain(&pending).collect();
        assert_eq!(all.len(), 12, "twelve tools: {all:?}\n{stdout}");
        for id in &all {
            let dir = if ready.contains(id) {
                w.records()
            } else {
                w.records().join("needs-decision")
            };
            let draft = read_json(&dir.join(format!("{id}.json")));
            // No tool declares an outputSchema: each gets the text shape.
            assert_eq!(draft["output_schema"], text_schema, "{id}");
        }
        // Only classes are asked for.
        let asked = printed_decisions(stdout);
        assert!(
            asked.iter().all(|(_, p)| p == "/side_effect_class"),
            "{asked:?}"
        );
        let decided = w.decide(|id, pointer, record| {
            if pointer != "/side_effect_class" {
                return false;
            }
            let class = if id.starts_with("git_diff")
                || ["git_status", "git_log", "git_show", "git_branch"].contains(&id)
            {
                "read-only"
            } else {
                "supersede"
            };
            record["side_effect_class"] = json!(class);
            true
        });
        assert_eq!(decided.len(), asked.len());
        assert_eq!(w.drafts().0.len(), 12);
    };

    let import = w.import(&read_only, &[], &command);
    assert_eq!(import.status.code(), Some(0), "{}", shown(&import));
    review(&w, &text(&import.stdout));
    w.permit(&["git_status", "git_log"]);
    let envelope = w.envelope(&read_only, &[]);
    let check = w.check(&envelope, &[]);
    assert_eq!(check.status.code(), Some(0), "{}", shown(&check));

    // The sandbox's uid 0 is an unprivileged uid outside: the repository's owner (root
    // outside) is not the sandbox's user, and git refuses it as "dubious".
    let input = json!({"repo_path": repo.display().to_string()});
    let refused = w.call(&envelope, "git_status", &input, &[]);
    assert_eq!(refused.status.code(), Some(5), "{}", shown(&refused));
    assert!(
        text(&refused.stderr).contains("dubious ownership"),
        "{}",
        shown(&refused)
    );
    let outcome = w.last_outcome();
    assert_eq!(outcome.result, CallResult::Failed);
    let attempt = &outcome.attempts[0];
    assert_eq!(attempt.error_class.map(|c| c.as_str()), Some("permanent"));
    let evidence = attempt.error.as_deref().unwrap_or_default();
    assert!(evidence.contains("dubious ownership"), "{outcome:?}");
    assert!(w.ledger_show().contains("git_status"));

    // The fix: the server started through `env` with GIT_CONFIG_GLOBAL naming the read-only
    // configuration that lists the repository in `safe.directory`.
    let mut wrapped = vec![
        ENV.to_string(),
        format!("GIT_CONFIG_GLOBAL={}", gitconfig.display()),
    ];
    wrapped.extend(command.iter().cloned());
    let again = w.import(&read_only, &["--force"], &wrapped);
    assert_eq!(again.status.code(), Some(0), "{}", shown(&again));
    review(&w, &text(&again.stdout));
    let check = w.check(&envelope, &[]);
    assert_eq!(check.status.code(), Some(0), "{}", shown(&check));
    let status = output_of(&w.call(&envelope, "git_status", &input, &[]));
    let status = status["text"].as_str().expect("a text result");
    assert!(status.contains("On branch main"), "{status}");
    assert!(status.contains("untracked.txt"), "{status}");
    let log = output_of(&w.call(&envelope, "git_log", &input, &[]));
    assert!(
        log["text"].as_str().is_some_and(|t| t.contains("first")),
        "{log}"
    );
    w.ledger_verify();
}

/// The Python SDK server's image, pushed to `registry` as `escepine/py-sdk`: its reference.
async fn push_python_image(registry: &escepine_testkit::registry::Registry, dir: &Path) -> String {
    use escepine_testkit::image::{push, Compression, ImageBuilder, Layer};
    let files = fixtures::python_image_files().expect("the fixtures are installed");
    let config = fixtures::python_image_config();
    let mut layer = Layer::new(Compression::Gzip);
    for (host, at) in &files {
        let inside = at.strip_prefix("/").unwrap_or(at);
        layer = layer.host_file(host, &inside.display().to_string());
    }
    let mut image = ImageBuilder::new()
        .layer(layer)
        .entrypoint(config.entrypoint.clone())
        .working_dir(&config.working_dir);
    for (k, v) in &config.env {
        image = image.env(k, v);
    }
    let layout = dir.join("layout");
    image.write_layout(&layout).expect("the image layout");
    let digest = push(&layout, &registry.addr(), "escepine/py-sdk")
        .await
        .expect("pushed");
    format!("{}/escepine/py-sdk@{digest}", registry.addr())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_in_an_image_from_a_loopback_registry_is_imported_and_called() {
    let w = Workdir::new();
    let registry = escepine_testkit::registry::Registry::start().expect("docker-registry");
    let reference = push_python_image(&registry, w.dir.path()).await;
    let cache = w.path("image-cache");
    let cache_arg = cache.display().to_string();
    let envelope = w.envelope(&[], &[format!("http://{}", registry.addr())]);
    let envelope_arg = envelope.display().to_string();

    // No command: the image's Entrypoint runs.
    let import = w.import(
        &[],
        &[
            "--image",
            &reference,
            "--image-cache",
            &cache_arg,
            "--envelope",
            &envelope_arg,
        ],
        &[],
    );
    assert_eq!(import.status.code(), Some(0), "{}", shown(&import));
    let stdout = text(&import.stdout);
    assert_eq!(
        w.drafts(),
        (
            vec!["shout".to_string(), "word_count".to_string()],
            vec!["whoami".to_string()]
        ),
        "{stdout}"
    );
    assert_eq!(
        printed_decisions(&stdout),
        [("whoami".to_string(), "/side_effect_class".to_string())]
    );
    let draft = read_json(&w.records().join("shout.json"));
    let endpoint = &draft["endpoint"];
    assert_eq!(endpoint["image"], reference.as_str(), "{draft:#}");
    assert!(endpoint.get("command").is_none(), "{draft:#}");
    assert!(endpoint.get("sha256").is_none(), "{draft:#}");
    assert!(
        draft["sandbox_profile"].get("read_only").is_none(),
        "{draft:#}"
    );
    assert_eq!(
        draft["output_schema"],
        escepine_runtime::mcp::transport::text_output_schema()
    );
    // `whoami` only reports where it runs.
    let decided = w.decide(|_, pointer, record| {
        if pointer != "/side_effect_class" {
            return false;
        }
        record["side_effect_class"] = json!("read-only");
        true
    });
    assert_eq!(decided.len(), 1);

    w.permit(&["shout", "word_count", "whoami"]);
    let check = w.check(
        &envelope,
        &["--show-root", "shout", "--image-cache", &cache_arg],
    );
    assert_eq!(check.status.code(), Some(0), "{}", shown(&check));
    // The root is the image's tree (from the cache the import filled), nothing of the host's.
    let root = text(&check.stdout);
    for entry in [
        "/app  (from the image)",
        "/usr  (from the image)",
        "/workspace",
    ] {
        assert!(root.contains(entry), "{entry}: {root}");
    }
    assert!(!root.contains("from the host"), "{root}");
    let call =
        |tool: &str, input: Value| w.call(&envelope, tool, &input, &["--image-cache", &cache_arg]);
    assert_eq!(
        output_of(&call("shout", json!({"text": "hello"}))),
        json!({"text": "HELLO"})
    );
    assert_eq!(
        output_of(&call("word_count", json!({"text": "one two three"}))),
        json!({"words": 3})
    );
    // The server runs on the image's root: the image's interpreter, its working directory,
    // and a root it cannot write.
    let whoami = output_of(&call("whoami", json!({})));
    let facts: Value = serde_json::from_str(whoami["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(facts["executable"], fixtures::PYTHON_BASE, "{facts}");
    assert_eq!(facts["cwd"], fixtures::IMAGE_APP, "{facts}");
    assert_eq!(facts["root_writable"], false, "{facts}");

    // A command inside the image is kept as given; one the image lacks is refused at start.
    let absent = w.import(
        &[],
        &[
            "--image",
            &reference,
            "--image-cache",
            &cache_arg,
            "--envelope",
            &envelope_arg,
            "--force",
        ],
        &["/usr/bin/node".to_string()],
    );
    assert_eq!(absent.status.code(), Some(3), "{}", shown(&absent));
    assert!(
        text(&absent.stderr).contains("not in the image"),
        "{}",
        shown(&absent)
    );
    // Without the envelope's `http://` entry the registry is spoken to over HTTPS only.
    let fresh = w.path("fresh-cache");
    let https = w.import(
        &[],
        &[
            "--image",
            &reference,
            "--image-cache",
            &fresh.display().to_string(),
            "--force",
        ],
        &[],
    );
    assert_eq!(https.status.code(), Some(3), "{}", shown(&https));
    assert!(
        text(&https.stderr).contains("cannot be fetched"),
        "{}",
        shown(&https)
    );
    // A tag is not a pin: usage.
    let tagged = w.import(
        &[],
        &[
            "--image",
            &format!("{}/escepine/py-sdk:latest", registry.addr()),
        ],
        &[],
    );
    assert_eq!(tagged.status.code(), Some(2), "{}", shown(&tagged));
}

/// The npm and PyPI servers on each isolation tier: the same registration, the drafts set to
/// `namespaces` or `gvisor` before `check`.
macro_rules! on_tiers {
    ($($name:ident),* $(,)?) => {
        mod on_namespaces {
            $( #[test] fn $name() { super::$name("namespaces") } )*
        }
        mod on_gvisor {
            $( #[test] fn $name() { super::$name("gvisor") } )*
        }
    };
}

on_tiers!(
    mcp_server_time_from_pypi_is_imported_checked_and_called_in_its_sandbox,
    server_memory_from_npm_runs_one_sandbox_per_call_and_keeps_nothing,
);
