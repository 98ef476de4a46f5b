//! [`PgError`]: why the PostgreSQL store failed, before it becomes a [`LedgerError`].

use crate::error::LedgerError;

/// Why the PostgreSQL store failed.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The location is not a PostgreSQL URL the client accepts.
    #[error("{location}: not a PostgreSQL URL: {source}")]
    Url {
        /// The URL, its password hidden.
        location: String,
        /// The client's complaint.
        source: tokio_postgres::Error,
    },
    /// A statement or the connection failed.
    #[error("cannot {what}: {}", describe(.source))]
    Db {
        /// What the store was doing.
        what: &'static str,
        /// The client's error.
        source: tokio_postgres::Error,
    },
    /// The `entries` table has columns other than LEDGER.md's.
    #[error("the entries table has another shape than `seq bigint, prev character(64), hash character(64), at_ms bigint, body text, call_id text`: it has {0}")]
    Shape(String),
    /// The database has no `entries` table (reading never creates it).
    #[error("the database has no entries table")]
    NoTable,
    /// A stored value is out of range.
    #[error("{0}")]
    Corrupt(String),
    /// The store's worker thread or writer has stopped.
    #[error("the ledger's connection thread has stopped")]
    Stopped,
    /// The connection thread could not start.
    #[error("cannot start the ledger's connection thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The reading pool could not be built or give a connection.
    #[error("cannot get a reading connection: {0}")]
    Pool(String),
}

/// The server's message and detail when there is one, else the client's error with its causes.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            s.push_str(&format!(" ({detail})"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    s
}

/// A mapper from the client's error to [`PgError::Db`] doing `what`.
pub fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> PgError {
    move |source| PgError::Db { what, source }
}

impl PgError {
    /// As the ledger reports it, prefixed by the ledger's location.
    pub fn at(self, location: &str) -> LedgerError {
        LedgerError::failed(location, self)
    }
}
