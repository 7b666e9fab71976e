//! Registering a relayed rollout in Codex's thread index (`state_5.sqlite`, Codex 0.17x).
//!
//! Once that database exists, Codex's TUI picker and `--last` read only it, so a rollout added
//! behind its back is invisible there until something indexes it. A row is written only when
//! the schema is one whose rows were compared with the rows Codex itself writes (migration 64
//! of codex 0.171); otherwise the user is told to open the session once by id.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{Connection, OptionalExtension, params};

use crate::adapter::sqlite::AgentDb;

/// `_sqlx_migrations` versions whose `threads` table this module knows.
const KNOWN_MIGRATIONS: &[i64] = &[64];

/// Columns written here; every NOT NULL column without a default must be among them.
const WRITTEN: &[&str] = &[
    "id",
    "rollout_path",
    "created_at",
    "updated_at",
    "created_at_ms",
    "updated_at_ms",
    "recency_at",
    "recency_at_ms",
    "source",
    "model_provider",
    "cwd",
    "title",
    "first_user_message",
    "preview",
    "sandbox_policy",
    "approval_mode",
    "cli_version",
    "git_sha",
    "git_branch",
    "git_origin_url",
    "history_mode",
    "originator",
];

// What codex 0.171 records for a rollout without a turn_context, indexed into an index that
// exists, whatever config.toml sets (`approval_policy`, `sandbox_mode` and `model_provider` at
// the top level or in a profile table alike: tests/realclients.rs compares the rows with the
// ones the real Codex writes). Only the backfill that creates the index records the configured
// provider ("openai" unless set); an empty one lists under the default provider all the same.
const DEFAULT_SANDBOX_POLICY: &str = r#"{"type":"managed","file_system":{"type":"restricted","entries":[{"path":{"type":"special","value":{"kind":"root"}},"access":"read"}]},"network":"restricted"}"#;
const DEFAULT_APPROVAL_MODE: &str = "on-request";
const DEFAULT_MODEL_PROVIDER: &str = "";

pub struct ThreadRow<'a> {
    pub id: &'a str,
    pub rollout_path: &'a Path,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub cwd: &'a str,
    pub first_user_message: &'a str,
    pub cli_version: &'a str,
    pub git_sha: Option<&'a str>,
    pub git_branch: Option<&'a str>,
    pub git_origin_url: Option<&'a str>,
}

/// Returns a note for the user: registered, or why not.
pub fn register(home: &Path, row: &ThreadRow) -> Result<Option<String>> {
    let db = home.join("state_5.sqlite");
    if !db.exists() {
        // Codex backfills its index from the rollout files when it first creates it.
        return Ok(None);
    }
    let resume = format!(
        "run `codex resume {}` once to make it appear in Codex's picker",
        row.id
    );
    // The checks and the row in one transaction: no other writer comes between them.
    index(&db).write(|conn| {
        let migration = migration(conn, &db)?;
        if !migration.is_some_and(|m| KNOWN_MIGRATIONS.contains(&m)) {
            return Ok(Some(format!(
                "{} has a schema session-relay does not know (migration {}); not registered: {resume}",
                db.display(),
                migration.map_or("?".to_string(), |m| m.to_string())
            )));
        }
        if let Some(col) = unknown_column(conn)? {
            return Ok(Some(format!(
                "{}: the threads table differs from the known schema (column {col}); not registered: {resume}",
                db.display()
            )));
        }
        if has_thread(conn, row.id)? {
            return Ok(Some(format!("{} already lists {}", db.display(), row.id)));
        }
        insert(conn, row)?;
        Ok(Some(format!(
            "registered in Codex's thread index {}",
            db.display()
        )))
    })
}

/// Codex's thread index at `path`. Codex writes it in short transactions: a relay waits for
/// many of them before it is refused.
fn index(path: &Path) -> AgentDb<'_> {
    AgentDb {
        path,
        agent: "Codex",
        busy: std::time::Duration::from_secs(3),
    }
}

/// The newest `_sqlx_migrations` version (`None`: no such table, or no row in it).
fn migration(conn: &Connection, db: &Path) -> Result<Option<i64>> {
    // A database that cannot be read (full disk, damage, a lock held past the timeout) is an
    // error, not a schema of another version: the relay is then not done.
    if !has_table(conn, "_sqlx_migrations")? {
        return Ok(None);
    }
    conn.query_row("SELECT MAX(version) FROM _sqlx_migrations", [], |r| {
        r.get(0)
    })
    .with_context(|| format!("cannot read {}", db.display()))
}

/// The first column of `threads` that keeps `insert` from writing a whole row: a required one
/// it does not write, else one it writes that is not there.
fn unknown_column(conn: &Connection) -> Result<Option<String>> {
    let mut stmt = conn.prepare("PRAGMA table_info(threads)")?;
    let columns: Vec<(String, bool, bool)> = stmt
        .query_map([], |r| {
            let name: String = r.get(1)?;
            let not_null: bool = r.get(3)?;
            let default: Option<String> = r.get(4)?;
            Ok((name, not_null, default.is_some()))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let unknown_required = columns.iter().find(|(name, not_null, has_default)| {
        *not_null && !has_default && !WRITTEN.contains(&name.as_str())
    });
    let missing = WRITTEN
        .iter()
        .find(|w| !columns.iter().any(|(name, _, _)| name == *w));
    Ok(unknown_required
        .map(|c| c.0.clone())
        .or(missing.map(|w| w.to_string())))
}

/// Whether `threads` has a row for `id` already.
fn has_thread(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM threads WHERE id = ?1", [id], |_| Ok(true))
        .optional()?
        .unwrap_or(false))
}

/// Writes the thread's row: every `WRITTEN` column, in that order.
fn insert(conn: &Connection, row: &ThreadRow) -> Result<()> {
    let preview: String = row.first_user_message.chars().take(1000).collect();
    conn.execute(
        &format!(
            "INSERT INTO threads ({}) VALUES ({})",
            WRITTEN.join(", "),
            (1..=WRITTEN.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        params![
            row.id,
            row.rollout_path.display().to_string(),
            row.created_ms / 1000,
            row.updated_ms / 1000,
            row.created_ms,
            row.updated_ms,
            row.updated_ms / 1000,
            row.updated_ms,
            "cli",
            DEFAULT_MODEL_PROVIDER,
            row.cwd,
            preview,
            row.first_user_message,
            preview,
            DEFAULT_SANDBOX_POLICY,
            DEFAULT_APPROVAL_MODE,
            row.cli_version,
            row.git_sha,
            row.git_branch,
            row.git_origin_url,
            "legacy",
            "session_relay",
        ],
    )?;
    Ok(())
}

/// Removes a thread's row; only rows session-relay registered are ever asked for.
pub fn unregister(home: &Path, id: &str) -> Result<bool> {
    let db = home.join("state_5.sqlite");
    if !db.exists() {
        return Ok(false);
    }
    index(&db).write(|conn| {
        if !has_table(conn, "threads")? {
            return Ok(false);
        }
        Ok(conn.execute("DELETE FROM threads WHERE id = ?1", [id])? > 0)
    })
}

fn has_table(conn: &Connection, name: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |_| Ok(true),
        )
        .optional()?
        .unwrap_or(false))
}
