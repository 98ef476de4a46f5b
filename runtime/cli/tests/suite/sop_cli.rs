//! `escepine run` and `escepine resume`: the binary, the SOP files and records of
//! `tests/fixtures/sop`, the loopback store admitted by an overlay file, a SQLite ledger.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use escepine_ledger::sqlite::read_entries;
use escepine_ledger::verify::verify_path;

use crate::sop_harness;

use sop_harness::SopCli;

/// The harness over a SQLite ledger in its directory.
struct Cli(SopCli);

impl std::ops::Deref for Cli {
    type Target = SopCli;
    fn deref(&self) -> &SopCli {
        &self.0
    }
}

impl Cli {
    fn new() -> Self {
        Self(SopCli::new(|dir| dir.join("ledger.db").into_os_string()))
    }

    fn ledger(&self) -> PathBuf {
        self.dir.path().join("ledger.db")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn output(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

/// The run id `escepine run` printed first.
fn run_id(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string()
}

#[test]
fn run_prints_each_transition_and_exits_by_the_final_status() {
    let cli = Cli::new();
    let o = output(cli.run("five_steps", &[]));
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let id = run_id(&out);
    for event in [
        "run_started  put_a",
        "step_started  put_a",
        "step_succeeded  put_a",
        "transition  put_b",
        "step_succeeded  read_c",
        "run_ended  done",
    ] {
        assert!(out.contains(event), "no `{event}` in:\n{out}");
    }
    assert!(
        out.trim_end().ends_with(&format!("run {id} completed")),
        "{out}"
    );
    assert_eq!(cli.store.items().len(), 3);

    let o = output(cli.run("two_writes", &["--run-id", &id]));
    assert_eq!(o.status.code(), Some(14), "a run id is used once");
    verify_path(&cli.ledger(), None).unwrap();

    let cli = Cli::new();
    let o = output(cli.run("two_writes", &[]));
    assert_eq!(o.status.code(), Some(12), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("compensated  put_b"));
    assert!(text(&o.stderr).contains("step boom failed (failed)"));
    assert!(cli.store.items().is_empty());

    let cli = Cli::new();
    let o = output(cli.run("denied", &[]));
    assert_eq!(o.status.code(), Some(10), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("no-forbidden-key"));

    let cli = Cli::new();
    let o = output(cli.run("escalate", &[]));
    assert_eq!(o.status.code(), Some(11), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("escalation: {"),
        "{}",
        text(&o.stderr)
    );
    verify_path(&cli.ledger(), None).unwrap();
}

#[test]
fn usage_and_invalid_inputs() {
    let cli = Cli::new();
    let mut cmd = cli.run("five_steps", &[]);
    cmd.args(["--principal", "alice"]);
    let o = output(cmd);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));

    let bad = cli.dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"sop_id":"bad","version":"1.0.0","description":"x","start":"a","states":{"a":{"kind":"execution","tool":"s_nope","on_failure":"halt","next":"done"},"done":{"kind":"terminal"}}}"#,
    )
    .unwrap();
    let mut cmd = cli.command(&["run", bad.to_str().unwrap()]);
    cmd.args(["--principal", r#"Agent::"alice""#]);
    let o = output(cmd);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("s_nope"), "{}", text(&o.stderr));

    let o = output(cli.command(&["resume", "no-such-run"]));
    assert_eq!(o.status.code(), Some(14));
    assert!(
        text(&o.stderr).contains("no-such-run"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_run_killed_mid_step_resumes_from_the_cli() {
    let cli = Cli::new();
    // The store SIGKILLs `escepine run` when the third write (version_a) arrives, then applies it.
    let mut cmd = cli.run("five_steps", &["--run-id", "killed-run"]);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    cli.store.kill_at(3, child.id(), true);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9));
    assert_eq!(cli.store.log(), ["PUT a", "PUT b", "POST a"]);

    // The SOP file and the proposals file are found in the run's `run_started` record.
    let o = output(cli.command(&["resume", "killed-run"]));
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(out.contains("run_resumed"), "{out}");
    assert!(
        !out.contains("step_started  put_a"),
        "put_a is not run again"
    );
    assert!(out.contains("step_succeeded  version_a"), "{out}");
    assert!(
        out.trim_end().ends_with("run killed-run completed"),
        "{out}"
    );
    assert_eq!(
        cli.store.log(),
        ["PUT a", "PUT b", "POST a", "PUT c"],
        "version_a ran again with its key: the store answered from its first response"
    );
    assert_eq!(cli.store.replayed().values().sum::<u32>(), 1);
    assert_eq!(
        cli.store.items().get("a").map(Vec::len),
        Some(2),
        "one new version, not two"
    );

    // Resuming a run that ended records nothing and exits by its status.
    let before = read_entries(&cli.ledger()).unwrap().len();
    let o = output(cli.command(&["resume", "killed-run"]));
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(read_entries(&cli.ledger()).unwrap().len(), before);
    verify_path(&cli.ledger(), None).unwrap();
}
