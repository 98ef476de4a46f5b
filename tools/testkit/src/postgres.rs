//! A database of its own per test on the machine's PostgreSQL (feature `postgres`).
//!
//! `.ci/postgres` starts the cluster and makes the role `escepine` (password `escepine`, allowed
//! to create databases); [`TestDatabase::create`] connects as it over loopback TCP (or to the
//! server `ESCEPINE_POSTGRES` names, a URL of its maintenance database), creates a database with
//! a fresh name, and drops it again when dropped. No test shares another's tables. When the
//! default server cannot be reached, the first test of the process runs `.ci/postgres` itself
//! (root, as the tests run), so `cargo test --workspace` needs no step of its own.

use std::sync::atomic::{AtomicU32, Ordering};

use tokio_postgres::NoTls;

/// The client the helpers use, for tests that watch the server themselves.
pub use tokio_postgres;

/// The variable naming the maintenance database to connect to.
pub const SERVER_ENV: &str = "ESCEPINE_POSTGRES";

/// The maintenance database `.ci/postgres` prepares.
pub const DEFAULT_SERVER: &str = "postgres://escepine:escepine@127.0.0.1:5432/postgres";

/// A database created for one test, dropped (with its connections) when this is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    server: String,
}

fn server() -> String {
    std::env::var(SERVER_ENV).unwrap_or_else(|_| DEFAULT_SERVER.to_string())
}

/// Run `sql` on the maintenance database (on a thread of its own, so any caller may use it).
fn admin(server: &str, sql: String) -> Result<(), String> {
    let server = server.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&server, NoTls)
                .await
                .map_err(|e| format!("{server}: {e} (did `.ci/postgres` run?)"))?;
            tokio::spawn(connection);
            client
                .batch_execute(&sql)
                .await
                .map_err(|e| format!("{sql}: {e:?}"))
        })
    })
    .join()
    .map_err(|_| "the admin thread panicked".to_string())?
}

/// Run `.ci/postgres` (start the cluster, make the role), once per process.
fn start_server() -> Result<(), String> {
    static STARTED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    STARTED
        .get_or_init(|| {
            let script =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/postgres");
            let out = std::process::Command::new("bash")
                .arg(&script)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{} failed: {}",
                    script.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        })
        .clone()
}

impl TestDatabase {
    /// Create a fresh, empty database.
    ///
    /// # Panics
    /// When the server cannot be reached or the database cannot be created (a test's setup).
    pub fn create() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "escepine_test_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        let server = server();
        let create = format!("CREATE DATABASE {name}");
        let created = admin(&server, create.clone()).or_else(|first| {
            if std::env::var_os(SERVER_ENV).is_some() {
                return Err(first);
            }
            start_server().map_err(|e| format!("{first}; {e}"))?;
            admin(&server, create)
        });
        if let Err(e) = created {
            panic!("cannot create the test database {name}: {e}");
        }
        Self { name, server }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of the database (`postgres://user:password@host:port/name`).
    pub fn url(&self) -> String {
        match self.server.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{}", self.name),
            None => format!("{}/{}", self.server, self.name),
        }
    }

    /// Run `sql` in the database (to tamper with it, or to look at it).
    ///
    /// # Panics
    /// When it fails.
    pub fn execute(&self, sql: &str) {
        if let Err(e) = admin(&self.url(), sql.to_string()) {
            panic!("{e}");
        }
    }

    /// End the session holding the one-key advisory lock `key` in this database (a run lease:
    /// as a cut connection or an administrator would, while the holder's process lives on).
    ///
    /// # Panics
    /// Unless exactly one session held it.
    pub fn terminate_lock_holder(&self, key: i64) {
        let ended = self.query_strings(&format!(
            "SELECT pg_terminate_backend(pid)::text FROM pg_locks \
             WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
               AND classid = (({key}::int8 >> 32) & 4294967295)::oid \
               AND objid = ({key}::int8 & 4294967295)::oid"
        ));
        assert_eq!(ended, ["true"], "one session held the advisory lock {key}");
    }

    /// The first column of the rows `sql` returns, as text.
    ///
    /// # Panics
    /// When it fails.
    pub fn query_strings(&self, sql: &str) -> Vec<String> {
        let url = self.url();
        let sql = sql.to_string();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, NoTls)
                    .await
                    .expect("connect to the test database");
                tokio::spawn(connection);
                let rows = client.simple_query(&sql).await.expect("query");
                rows.iter()
                    .filter_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => {
                            Some(r.get(0).unwrap_or("").to_string())
                        }
                        _ => None,
                    })
                    .collect()
            })
        })
        .join()
        .expect("the query thread")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let drop_it = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(e) = admin(&self.server, drop_it) {
            eprintln!("cannot drop the test database {}: {e}", self.name);
        }
    }
}
