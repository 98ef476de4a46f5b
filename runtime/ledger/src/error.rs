//! [`LedgerError`]: why the ledger could not commit or read.

use std::error::Error;
use std::fmt::{self, Display};
use std::sync::Arc;

/// The cause of a [`LedgerError::Unavailable`]: the store's own error (SQLite's, PostgreSQL's,
/// I/O), shared so that one failed batch can fail every call waiting on it.
pub type Cause = Arc<dyn Error + Send + Sync + 'static>;

/// Why the ledger could not commit or read.
///
/// (`Display` and `Error` are written out: the source of [`LedgerError::Unavailable`] is the
/// store's error itself, not the shared pointer to it, so that it can be downcast.)
#[derive(Debug, Clone)]
pub enum LedgerError {
    /// The store failed (SQLite error, I/O error, closed writer). `what` says what failed and,
    /// when there is a cause, why in its words; the cause itself is the error's
    /// [`source`](Error::source).
    Unavailable {
        /// What failed, with the cause's message.
        what: String,
        /// The store's own error, when there is one.
        cause: Option<Cause>,
    },
    /// Another driver holds the lease of this SOP run (see [`lease`](crate::lease)).
    RunLeased(String),
    /// This driver's lease of the SOP run ended while it drove the run (its database connection
    /// was lost): another driver may hold it now, so nothing more is recorded for the run here.
    LeaseLost(String),
    /// A stored entry could not be decoded.
    Corrupt {
        /// The entry's sequence number.
        seq: u64,
        /// What is wrong.
        why: String,
    },
}

impl Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable { what, .. } => write!(f, "ledger unavailable: {what}"),
            Self::RunLeased(run) => write!(
                f,
                "run `{run}` is being driven by another engine (its lease is held)"
            ),
            Self::LeaseLost(run) => write!(
                f,
                "the lease of run `{run}` was lost (another engine may drive it now); this \
                 engine stops driving it"
            ),
            Self::Corrupt { seq, why } => write!(f, "ledger entry {seq} is corrupt: {why}"),
        }
    }
}

impl Error for LedgerError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Unavailable {
                cause: Some(cause), ..
            } => Some(&**cause),
            _ => None,
        }
    }
}

impl LedgerError {
    /// The store is unavailable for a reason of its own (closed, poisoned), with no cause.
    pub fn unavailable(what: impl Into<String>) -> Self {
        Self::Unavailable {
            what: what.into(),
            cause: None,
        }
    }

    /// `what` failed because of `cause` (`what: <cause>`), the cause kept as the source.
    pub fn failed(what: impl Display, cause: impl Error + Send + Sync + 'static) -> Self {
        Self::Unavailable {
            what: format!("{what}: {cause}"),
            cause: Some(Arc::new(cause)),
        }
    }

    /// `cause` itself, in its words, kept as the source.
    pub fn caused_by(cause: impl Error + Send + Sync + 'static) -> Self {
        Self::Unavailable {
            what: cause.to_string(),
            cause: Some(Arc::new(cause)),
        }
    }

    /// What failed, for an [`LedgerError::Unavailable`].
    pub fn unavailable_what(&self) -> Option<&str> {
        match self {
            Self::Unavailable { what, .. } => Some(what),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_named_and_kept_as_the_source() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no entry");
        let err = LedgerError::failed("cannot open /l.db", io);
        assert_eq!(
            err.to_string(),
            "ledger unavailable: cannot open /l.db: no entry"
        );
        let source = err.source().expect("a source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the I/O error itself");
        assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
        // One failure shared by every waiter keeps its cause.
        let copy = err.clone();
        assert!(copy.source().is_some());
        assert!(LedgerError::unavailable("closed").source().is_none());
    }
}
