//! A database an agent owns and may have open while session-relay reads or writes it (OpenCode's
//! sessions, Codex's thread index).
//!
//! Reads go through read-only connections and never change it. A write is one `BEGIN
//! IMMEDIATE` transaction, with foreign keys on as the agents run them (so that a deletion
//! cascades as when the agent deletes), under the agent's own busy timeout: while the agent (or
//! anything else) holds the write lock longer, the write is refused, naming the database, and
//! nothing is written. A write lands whole or not at all.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

pub struct AgentDb<'a> {
    pub path: &'a Path,
    /// The agent's name as the user knows it, for messages.
    pub agent: &'static str,
    /// How long a statement waits for a lock: as long as the agent itself waits.
    pub busy: Duration,
}

impl AgentDb<'_> {
    fn open(&self, flags: OpenFlags) -> Result<Connection> {
        let conn = Connection::open_with_flags(self.path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .with_context(|| {
                format!(
                    "cannot open {}'s database {}",
                    self.agent,
                    self.path.display()
                )
            })?;
        conn.busy_timeout(self.busy)?;
        Ok(conn)
    }

    pub fn read(&self) -> Result<Connection> {
        self.open(OpenFlags::SQLITE_OPEN_READ_ONLY)
    }

    /// Runs `write` in one transaction, committed when it returns `Ok`; dropped (rolled back)
    /// on an error, which then says that nothing was written.
    pub fn write<T>(&self, write: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
        let mut conn = self.open(OpenFlags::SQLITE_OPEN_READ_WRITE)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| self.refusal(e.into()))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.refusal(e.into()))?;
        let done = write(&tx).map_err(|e| self.refusal(e))?;
        tx.commit().map_err(|e| self.refusal(e.into()))?;
        Ok(done)
    }

    /// A lock held past the busy timeout as the refusal it is; another database error as one
    /// that wrote nothing (most likely a schema the agent changed: a table or column missing);
    /// any other error as it is.
    fn refusal(&self, e: anyhow::Error) -> anyhow::Error {
        let Some(code) = e
            .downcast_ref::<rusqlite::Error>()
            .map(|e| e.sqlite_error_code())
        else {
            return e;
        };
        let db = self.path.display();
        if matches!(
            code,
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        ) {
            return anyhow::anyhow!(
                "{}'s database {db} stayed locked for {} s ({} or another program is writing to it): nothing was written; relay again once it is idle",
                self.agent,
                self.busy.as_secs(),
                self.agent,
            );
        }
        e.context(format!(
            "cannot write to {}'s database {db}: nothing was written",
            self.agent
        ))
    }
}
