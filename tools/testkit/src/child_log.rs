//! The standard streams of a fixture server a test starts (an OTLP receiver, an authorization
//! server, a remote MCP server): its standard error echoed with a prefix and kept for failure
//! messages, and its standard output read until the one line that says it is ready.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A started child's log, and the ready line to come.
pub struct ChildLog {
    log: Arc<Mutex<String>>,
    ready: Receiver<String>,
}

impl ChildLog {
    /// Read `child`'s standard error (echoed as `[name] line` unless `quiet` says otherwise,
    /// and kept) and its standard output, whose first line `ready` turns into something is
    /// the ready line; other lines are echoed as `[name stdout] line`.
    ///
    /// # Panics
    /// When the child's standard output or error was not piped.
    pub fn watch(
        child: &mut Child,
        name: &str,
        quiet: fn(&str) -> bool,
        ready: fn(&str) -> Option<String>,
    ) -> Self {
        Self::watch_into(
            child,
            name,
            quiet,
            ready,
            Arc::new(Mutex::new(String::new())),
        )
    }

    /// As [`ChildLog::watch`], keeping the log in `log` (a restarted server's, say).
    ///
    /// # Panics
    /// When the child's standard output or error was not piped.
    pub fn watch_into(
        child: &mut Child,
        name: &str,
        quiet: fn(&str) -> bool,
        ready: fn(&str) -> Option<String>,
        log: Arc<Mutex<String>>,
    ) -> Self {
        let stdout = child.stdout.take().expect("stdout piped");
        let stderr = child.stderr.take().expect("stderr piped");
        let kept = log.clone();
        let prefix = name.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !quiet(&line) {
                    eprintln!("[{prefix}] {line}");
                }
                if let Ok(mut kept) = kept.lock() {
                    kept.push_str(&line);
                    kept.push('\n');
                }
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let prefix = name.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match ready(&line) {
                    Some(said) => {
                        let _ = tx.send(said);
                    }
                    None => eprintln!("[{prefix} stdout] {line}"),
                }
            }
        });
        Self { log, ready: rx }
    }

    /// The ready line, once said within `limit`.
    ///
    /// # Panics
    /// When it is not: `child` is killed and the panic says `what`, why, and quotes the log.
    pub fn ready(&self, child: &mut Child, limit: Duration, what: &str) -> String {
        match self.ready.recv_timeout(limit) {
            Ok(said) => said,
            Err(e) => {
                let _ = child.kill();
                let status = child.wait();
                // The stderr reader takes the last lines.
                std::thread::sleep(Duration::from_millis(200));
                panic!("{what} ({e}; {status:?}); its log:\n{}", self.log());
            }
        }
    }

    /// What it wrote on standard error so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The kept log itself, for a handle that outlives this watcher.
    pub fn shared(&self) -> Arc<Mutex<String>> {
        self.log.clone()
    }
}

/// Echo every line ([`ChildLog::watch`]'s `quiet` for a server whose log is all worth seeing).
pub fn loud(_: &str) -> bool {
    false
}
