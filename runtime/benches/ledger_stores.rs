//! Durable governed calls per second, SQLite beside PostgreSQL, in one run: `Durability::Full`
//! (SQLite WAL `synchronous=FULL`; PostgreSQL `synchronous_commit = on`), at concurrency 1 and
//! 64 per process, with one and with three processes appending to the same ledger. A call is two
//! appends (intent, outcome), each awaited before the next, as the governed path does.
//!
//! `bash .ci/postgres && cargo bench -p escepine-runtime --bench ledger_stores`
//!
//! Each appending process is this program again (`ESCEPINE_BENCH_APPENDER` set): it opens the
//! ledger, says `ready`, waits for `go` on stdin, makes its calls and says `done`. The figure is
//! all the processes' calls over the time from `go` to the last `done`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_ledger::location::LedgerLocation;
use escepine_ledger::store::{Durability, Ledger};
use escepine_testkit::bench::smoke;
use escepine_testkit::ledger::{intent, outcome};
use escepine_testkit::postgres::TestDatabase;

const CHILD_ENV: &str = "ESCEPINE_BENCH_APPENDER";

/// Calls per process at each concurrency.
fn calls_for(concurrency: usize) -> usize {
    if smoke() {
        concurrency.max(2)
    } else if concurrency == 1 {
        200
    } else {
        concurrency * 40
    }
}

fn appender(spec: &str) {
    let mut parts = spec.splitn(3, ' ');
    let (Some(concurrency), Some(calls), Some(location)) =
        (parts.next(), parts.next(), parts.next())
    else {
        panic!("{CHILD_ENV}: `<concurrency> <calls> <location>`");
    };
    let concurrency: usize = concurrency.parse().expect("concurrency");
    let calls: usize = calls.parse().expect("calls");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ledger = LedgerLocation::parse(location)
        .open(Durability::Full)
        .expect("open the ledger");
    let ledger: Arc<dyn Ledger> = ledger;
    println!("ready");
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).expect("go");
    rt.block_on(async {
        let tasks: Vec<_> = (0..concurrency)
            .map(|t| {
                let ledger = ledger.clone();
                let share = calls / concurrency + usize::from(t < calls % concurrency);
                tokio::spawn(async move {
                    for i in 0..share {
                        let n = t * 1_000_000 + i;
                        ledger.append(intent(n, None)).await.expect("append");
                        ledger.append(outcome(n)).await.expect("append");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
    });
    println!("done");
}

/// Calls per second of `processes` appenders of `concurrency` tasks each on `location`.
fn measure(location: &str, processes: usize, concurrency: usize) -> f64 {
    let calls = calls_for(concurrency);
    let spec = format!("{concurrency} {calls} {location}");
    let exe = std::env::current_exe().expect("this program");
    let mut children: Vec<(Child, BufReader<std::process::ChildStdout>)> = (0..processes)
        .map(|_| {
            let mut c = Command::new(&exe)
                .env(CHILD_ENV, &spec)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("an appender");
            let out = BufReader::new(c.stdout.take().expect("stdout"));
            (c, out)
        })
        .collect();
    let said = |out: &mut BufReader<std::process::ChildStdout>, word: &str| {
        let mut line = String::new();
        out.read_line(&mut line).expect("a line");
        assert_eq!(line.trim_end(), word, "the appender failed");
    };
    for (_, out) in &mut children {
        said(out, "ready");
    }
    let started = Instant::now();
    for (c, _) in &mut children {
        let stdin = c.stdin.as_mut().expect("stdin");
        stdin.write_all(b"go\n").expect("go");
        stdin.flush().expect("go");
    }
    for (_, out) in &mut children {
        said(out, "done");
    }
    let elapsed = started.elapsed();
    for (mut c, _) in children {
        assert!(c.wait().expect("exit").success());
    }
    (processes * calls) as f64 / elapsed.max(Duration::from_micros(1)).as_secs_f64()
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        appender(&spec);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    println!("durable calls/s (2 appends each), Durability::Full");
    println!(
        "{:<12} {:>10} {:>12} {:>12}",
        "store", "processes", "conc. 1", "conc. 64"
    );
    for store in ["sqlite", "postgres"] {
        for processes in [1usize, 3] {
            let mut figures = Vec::new();
            for concurrency in [1usize, 64] {
                // A fresh ledger per figure, so each starts from an empty chain.
                let db = TestDatabase::create();
                let sqlite = dir
                    .path()
                    .join(format!("{processes}-{concurrency}.db"))
                    .display()
                    .to_string();
                let location = if store == "sqlite" { sqlite } else { db.url() };
                let rate = measure(&location, processes, concurrency);
                let check = LedgerLocation::parse(&location)
                    .verify(None)
                    .expect("the chain verifies");
                assert_eq!(
                    check.entries as usize,
                    2 * processes * calls_for(concurrency),
                    "every call is in the chain"
                );
                figures.push(rate);
            }
            println!(
                "{:<12} {:>10} {:>12.0} {:>12.0}",
                store, processes, figures[0], figures[1]
            );
        }
    }
}
