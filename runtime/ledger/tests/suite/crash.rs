//! SIGKILL while 64 appenders are in flight: the ledger verifies afterwards, and every append
//! that was acknowledged (its future resolved) is in it, with the acknowledged hash.
//!
//! The child is this very test executable, re-run on the ignored test `crash_child` with
//! `ESCEPINE_LEDGER_CRASH_CHILD` naming the ledger file. It prints `ack <seq> <hash>` for every
//! acknowledged append, one `write` per line; the parent kills it mid-flight.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use escepine_ledger::sqlite::{read_entries, SqliteLedger};
use escepine_ledger::store::{Durability, Ledger};
use escepine_ledger::verify::verify_path;
use escepine_testkit::ledger::{intent, outcome};

const CHILD_ENV: &str = "ESCEPINE_LEDGER_CRASH_CHILD";
const TASKS: usize = 64;
/// The child stops by itself after this long, should the parent never kill it.
const CHILD_LIMIT: Duration = Duration::from_secs(120);

#[test]
#[ignore = "the child process of sigkill_while_64_appenders_are_in_flight"]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let ledger = Arc::new(SqliteLedger::open(&path, Durability::Full).unwrap());
        let started = Instant::now();
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let ledger = ledger.clone();
            tasks.push(tokio::spawn(async move {
                let mut n = t * 1_000_000;
                while started.elapsed() < CHILD_LIMIT {
                    for record in [intent(n, None), outcome(n)] {
                        let c = ledger.append(record).await.unwrap();
                        let line = format!("ack {} {}\n", c.seq, c.hash);
                        let mut out = std::io::stdout().lock();
                        out.write_all(line.as_bytes()).unwrap();
                        out.flush().unwrap();
                    }
                    n += 1;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[test]
fn sigkill_while_64_appenders_are_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "crash::crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acks: Vec<(u64, String)> = Vec::new();
    let mut killed = false;
    let deadline = Instant::now() + Duration::from_secs(90);
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let mut parts = line.split(' ');
        if let (Some("ack"), Some(seq), Some(hash), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        {
            if let (Ok(seq), 64) = (seq.parse::<u64>(), hash.len()) {
                acks.push((seq, hash.to_string()));
            }
        }
        // Kill mid-flight, once the appenders are well under way; keep reading what was
        // acknowledged before the kill landed.
        if !killed && (acks.len() >= 3_000 || Instant::now() > deadline) {
            child.kill().unwrap();
            killed = true;
        }
    }
    let status = child.wait().unwrap();
    assert!(killed, "the child ended before it was killed: {status:?}");
    assert_eq!(
        status.signal(),
        Some(9),
        "the child was killed by SIGKILL: {status:?}"
    );
    assert!(
        acks.len() >= 3_000,
        "only {} appends were acknowledged",
        acks.len()
    );

    let report = verify_path(&path, None).expect("the ledger verifies after SIGKILL");
    let entries = read_entries(&path).unwrap();
    assert_eq!(report.entries, entries.len() as u64);
    for (seq, hash) in &acks {
        let e = entries
            .get((*seq - 1) as usize)
            .unwrap_or_else(|| panic!("acknowledged entry {seq} is missing"));
        assert_eq!(&e.hash, hash, "acknowledged entry {seq} has another hash");
    }
    eprintln!(
        "{} entries after SIGKILL, {} acknowledged",
        entries.len(),
        acks.len()
    );

    // And the ledger opens again and continues its chain.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ledger = SqliteLedger::open(&path, Durability::Full).unwrap();
        let c = ledger.append(intent(0, None)).await.unwrap();
        assert_eq!(c.seq, report.entries + 1);
    });
    assert_eq!(
        verify_path(&path, None).unwrap().entries,
        report.entries + 1
    );
}
