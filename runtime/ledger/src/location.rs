//! [`LedgerLocation`]: where a ledger lives — a SQLite file, or a PostgreSQL database named by
//! URL — as the command line gives it.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::entry::{Entry, StoredRow};
use crate::error::LedgerError;
use crate::redact::redact;
use crate::store::{Durability, Ledger};
use crate::verify::{verify_rows, VerifyError, VerifyReport};

/// A ledger's location: `postgres://…` or `postgresql://…` is a PostgreSQL database, anything
/// else the path of a SQLite file.
#[derive(Clone, PartialEq, Eq)]
pub enum LedgerLocation {
    /// A SQLite ledger file.
    Sqlite(PathBuf),
    /// A PostgreSQL database: `postgres://user:password@host:port/db`.
    Postgres(String),
}

impl LedgerLocation {
    /// The location `text` names (see the type); never fails, the store checks it when opened.
    pub fn parse(text: &str) -> Self {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Self::Postgres(text.to_string())
        } else {
            Self::Sqlite(PathBuf::from(text))
        }
    }

    /// Open (or create) the ledger for appending.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] when the store cannot be opened, or was not compiled in
    /// (naming the cargo feature).
    pub fn open(&self, durability: Durability) -> Result<Arc<dyn Ledger>, LedgerError> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(path) => Ok(Arc::new(crate::sqlite::SqliteLedger::open(
                path, durability,
            )?)),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => Ok(Arc::new(crate::postgres::PostgresLedger::open(
                url, durability,
            )?)),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = durability;
                Err(self.not_built())
            }
        }
    }

    /// The entries of call `call_id`, read without writing anything, through the store's index
    /// of call ids ([`crate::calls::CallView`] folds such entries into a call).
    pub fn read_call(&self, call_id: &str) -> Result<Vec<Entry>, LedgerError> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(path) => crate::sqlite::read_call(path, call_id),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => crate::postgres::read_call(url, call_id),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = call_id;
                Err(self.not_built())
            }
        }
    }

    /// Every stored row, unchecked, in `seq` order, read without writing anything.
    pub fn rows(&self) -> Result<Vec<StoredRow>, LedgerError> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(path) => crate::sqlite::read_rows(path),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => crate::postgres::read_rows(url),
            #[allow(unreachable_patterns)]
            _ => Err(self.not_built()),
        }
    }

    /// Every entry, read without writing anything.
    pub fn read_entries(&self) -> Result<Vec<Entry>, LedgerError> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(path) => crate::sqlite::read_entries(path),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => crate::postgres::read_entries(url),
            #[allow(unreachable_patterns)]
            _ => Err(self.not_built()),
        }
    }

    /// Every entry, its hash chain verified first: the rows are read once, verified as stored,
    /// then decoded.
    ///
    /// # Errors
    /// [`VerifyError::Tampered`] naming the first broken entry; [`VerifyError::Unreadable`] when
    /// the ledger cannot be read or an entry's body is not a record.
    pub fn verified_entries(&self) -> Result<Vec<Entry>, VerifyError> {
        let rows = self.rows()?;
        verify_rows(&rows, None)?;
        Ok(rows
            .iter()
            .map(StoredRow::to_entry)
            .collect::<Result<Vec<_>, _>>()?)
    }

    /// Verify the chain (see [`crate::verify`]), optionally against a known head hash.
    pub fn verify(&self, anchor: Option<&str>) -> Result<VerifyReport, VerifyError> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(path) => crate::verify::verify_path(path, anchor),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => crate::postgres::verify_url(url, anchor),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = anchor;
                Err(VerifyError::Unreadable(self.not_built()))
            }
        }
    }

    #[allow(dead_code)]
    fn not_built(&self) -> LedgerError {
        let feature = match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        };
        LedgerError::unavailable(format!(
            "{self}: this build has no {feature} ledger (cargo feature `{feature}` of escepine-ledger, which escepine-runtime forwards)"
        ))
    }
}

impl std::str::FromStr for LedgerLocation {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::parse(s))
    }
}

impl fmt::Display for LedgerLocation {
    /// The path, or the URL with its password hidden.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for LedgerLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Self::Postgres(_) => f.debug_tuple("Postgres").field(&self.to_string()).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_postgres_and_everything_else_a_file() {
        assert_eq!(
            LedgerLocation::parse("ledger.db"),
            LedgerLocation::Sqlite("ledger.db".into())
        );
        assert_eq!(
            LedgerLocation::parse("./postgres://x"),
            LedgerLocation::Sqlite("./postgres://x".into())
        );
        for url in ["postgres://u:p@127.0.0.1:5432/db", "postgresql://u@h/db"] {
            assert_eq!(
                LedgerLocation::parse(url),
                LedgerLocation::Postgres(url.into())
            );
        }
    }

    #[test]
    fn the_password_is_never_shown() {
        let at = LedgerLocation::parse("postgres://user:s3cret@127.0.0.1:5432/db");
        assert_eq!(at.to_string(), "postgres://user:***@127.0.0.1:5432/db");
        assert!(!format!("{at:?}").contains("s3cret"));
        assert_eq!(
            redact("postgres://u:p@h:notaport/db"),
            "postgres://u:***@h:notaport/db"
        );
        assert_eq!(
            redact("postgres://u@h/db?x=a:b@c"),
            "postgres://u@h/db?x=a:b@c"
        );
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }
}
