//! `escepine run` and `escepine resume` as two runtimes on one PostgreSQL ledger: the run
//! driven by runtime A (`escepine run … --ledger postgres://…`) is SIGKILLed mid-step and
//! resumed by runtime B, another process; the run ends as an uninterrupted one does, no write
//! is applied twice (the loopback store counts by idempotency key), and the run's lease — a
//! session advisory lock — is never held by two sessions at once. `escepine ledger verify` and
//! `escepine ledger show` read the same database by its URL.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use escepine_ledger::postgres::read_entries;
use escepine_testkit::postgres::{tokio_postgres, TestDatabase};

use crate::sop_harness;

use sop_harness::SopCli;

/// The harness over a PostgreSQL ledger: a database of the test's own.
struct Cli {
    sop: SopCli,
    db: TestDatabase,
}

impl std::ops::Deref for Cli {
    type Target = SopCli;
    fn deref(&self) -> &SopCli {
        &self.sop
    }
}

impl Cli {
    fn new() -> Self {
        let db = TestDatabase::create();
        let url = db.url();
        Self {
            sop: SopCli::new(|_| url.into()),
            db,
        }
    }

    /// `escepine run` of the five-step SOP as run `run_id`.
    fn run(&self, run_id: &str) -> Command {
        self.sop.run("five_steps", &["--run-id", run_id])
    }

    fn ledger(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_escepine"))
            .arg("ledger")
            .args(args)
            .output()
            .unwrap()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Watches `pg_locks` until stopped: the most sessions seen holding a run lease (a one-key
/// advisory lock, `objsubid = 1`) in the test's database at once.
struct LeaseWatch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u32>,
}

impl LeaseWatch {
    fn start(db: &TestDatabase) -> Self {
        let url = db.url();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                let mut most = 0;
                while !stopping.load(Ordering::Relaxed) {
                    let n: i64 = client
                        .query_one(
                            "SELECT count(*) FROM pg_locks \
                             WHERE locktype = 'advisory' AND objsubid = 1 AND granted \
                             AND database = (SELECT oid FROM pg_database \
                                             WHERE datname = current_database())",
                            &[],
                        )
                        .await
                        .unwrap()
                        .get(0);
                    most = most.max(u32::try_from(n).unwrap());
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                most
            })
        });
        Self { stop, thread }
    }

    fn most(self) -> u32 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

#[test]
fn a_run_killed_in_one_runtime_is_resumed_by_another_on_postgres() {
    // The uninterrupted run, for comparison.
    let reference = Cli::new();
    let o = reference.run("whole-run").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout)
        .trim_end()
        .ends_with("run whole-run completed"));

    let cli = Cli::new();
    let watch = LeaseWatch::start(&cli.db);
    // Runtime A: killed by the store when the third write (version_a) arrives, which it applies.
    let mut a = cli
        .run("killed-run")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    cli.store.kill_at(3, a.id(), true);
    let status = a.wait().unwrap();
    assert_eq!(status.signal(), Some(9));
    assert_eq!(cli.store.log(), ["PUT a", "PUT b", "POST a"]);

    // Runtime B: another process, with nothing but the database URL in common.
    let o = cli.command(&["resume", "killed-run"]).output().unwrap();
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let most = watch.most();
    assert!(out.contains("run_resumed"), "{out}");
    assert!(
        !out.contains("step_started  put_a"),
        "put_a is not run again"
    );
    assert!(
        out.trim_end().ends_with("run killed-run completed"),
        "{out}"
    );
    assert_eq!(
        most, 1,
        "the lease was seen held, and never by two sessions"
    );

    // The state of the uninterrupted run, with no write applied twice.
    assert_eq!(cli.store.items(), reference.store.items());
    assert_eq!(cli.store.log(), reference.store.log());
    assert_eq!(
        cli.store.applied().values().max(),
        Some(&1),
        "{:?}",
        cli.store.applied()
    );
    assert_eq!(
        cli.store.replayed().values().sum::<u32>(),
        1,
        "version_a answered from its key"
    );
    assert_eq!(cli.store.unkeyed_writes(), 0);

    // The CLI reads the chain by the URL, positionally.
    let url = cli.db.url();
    let entries = read_entries(&url).unwrap();
    let o = cli.ledger(&["verify", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let head = &entries.last().unwrap().hash;
    assert_eq!(
        text(&o.stdout).trim_end(),
        format!("intact: {} entries, head {head}", entries.len())
    );
    let o = cli.ledger(&["show", &url, "--run", "killed-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("run killed-run"),
        "{}",
        text(&o.stdout)
    );

    // Tampering through SQL is found by the same verifier as for SQLite.
    cli.db
        .execute("UPDATE entries SET body = replace(body, 'a2', 'a3') WHERE body LIKE '%\"a2\"%'");
    let o = cli.ledger(&["verify", &url]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stdout).starts_with("tampered: entry "),
        "{}",
        text(&o.stdout)
    );
    assert!(text(&o.stdout).contains("changed"), "{}", text(&o.stdout));
    // An unreachable database is unreadable (exit 2), its password never printed.
    let o = cli.ledger(&["verify", "postgres://escepine:hunter2@127.0.0.1:1/nothing"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o.stderr).contains("hunter2"), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("escepine:***@127.0.0.1:1"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_runtime_whose_lease_session_ends_stops_and_another_finishes_the_run() {
    let reference = Cli::new();
    let o = reference.run("whole-run").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));

    let cli = Cli::new();
    let watch = LeaseWatch::start(&cli.db);
    // Runtime A is kept inside its third step (the write version_a), its process alive.
    cli.store.hold_at(3);
    let a = cli
        .run("fenced-run")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        cli.store.wait_held(std::time::Duration::from_secs(120)),
        "runtime A reached its third write"
    );
    // Only the session holding A's lease ends (a cut connection, an administrator).
    cli.db
        .terminate_lock_holder(escepine_ledger::postgres::lease::lease_key("fenced-run"));

    // Runtime B takes the lease and finishes the run while A still waits inside its step.
    let o = cli.command(&["resume", "fenced-run"]).output().unwrap();
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.trim_end().ends_with("run fenced-run completed"),
        "{out}"
    );
    let finished = read_entries(&cli.db.url()).unwrap().len();

    // A's write is answered at last (from its idempotency key: B applied it); A records
    // nothing more for the run and stops, saying why.
    cli.store.release();
    let a = a.wait_with_output().unwrap();
    let err = text(&a.stderr);
    assert_eq!(
        a.status.code(),
        Some(14),
        "the run is not driven here: {err}"
    );
    assert!(
        err.contains("the lease of run `fenced-run` was lost"),
        "{err}"
    );
    assert_eq!(
        read_entries(&cli.db.url()).unwrap().len(),
        finished,
        "A appended nothing after B finished the run"
    );
    assert_eq!(watch.most(), 1, "the lease was never held by two sessions");

    // The state of the uninterrupted run, each write applied once.
    assert_eq!(cli.store.items(), reference.store.items());
    assert_eq!(cli.store.log(), reference.store.log());
    assert_eq!(cli.store.applied().values().max(), Some(&1));
    assert_eq!(cli.store.unkeyed_writes(), 0);
    let o = cli.ledger(&["verify", &cli.db.url()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}
