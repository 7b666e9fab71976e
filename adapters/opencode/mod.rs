//! OpenCode (`opencode-ai`): one SQLite database for every project, `<data>/opencode.db`, whose
//! `session`, `message` and `part` rows hold each session (the rows' `data` is JSON: a message
//! without its ids, a part without its ids). `<data>` is OpenCode's data folder,
//! `$XDG_DATA_HOME/opencode`, by default `~/.local/share/opencode`; `OPENCODE_DB` names another
//! database (absolute, or a name in that folder). The database is in WAL mode and OpenCode may
//! have it open: it is read through read-only connections and written in one transaction.
//!
//! The adapter's home is that data folder. A session has no file of its own, so the listing
//! names it by a path under the database file, `<data>/opencode.db/<session id>`
//! (`Store::stand_in` writes what stands for it). A relay writes its session as an
//! `opencode export`-shaped JSON file in `<data>/session-relay/` (what `clean` proves and
//! deletes), then `register` copies it into the database as rows.

mod db;
mod project;
mod read;
mod tools;
mod write;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use crate::adapter::{Adapter, Agent, Cli, NativeSession, ReadOptions, Store, WriteRequest};
use crate::model::{Message, RelaySource, Session, Summary};

pub struct OpenCode;

pub static ADAPTER: OpenCode = OpenCode;

pub const NAME: &str = "opencode";

pub const AGENT: Agent = Agent {
    name: NAME,
    display_name: "OpenCode",
    // OpenCode has no variable for its data folder alone (it follows `XDG_DATA_HOME`, which
    // `data_dir` honours for the default home): this one is session-relay's own.
    home_env: "SESSION_RELAY_OPENCODE_HOME",
    default_home: ".local/share/opencode",
    cli: Some(Cli {
        command: "opencode",
        npm_package: "opencode-ai",
        verified_versions: &["1.18.33"],
    }),
    // OpenCode 1.18.33 takes each model's window from its provider's catalog; the models its
    // providers start on (Claude Sonnet, GLM) have 200,000 tokens, larger ones more.
    context_window: 200_000,
    // OpenCode 1.18.33 compacts once a session reaches the window less the model's answer limit
    // (at most its OUTPUT_TOKEN_MAX, 32,000); its system prompt and 11 tool definitions measured
    // at 7,415 o200k tokens in the request a mock model received (`opencode run`).
    reserved_tokens: 40_000,
    // OpenCode runs any provider's models; o200k_base is the closest one we can count with.
    tokenizer: crate::tokens::Tokenizer::O200k,
    new_id: new_session_id,
};

/// The folder in OpenCode's data folder where a relay keeps the file it registered.
pub(crate) const RELAYED_DIR: &str = "session-relay";

/// The key of a relay's mark: in the session row's `metadata` (its provenance), and in the
/// data of a user message that holds context rather than the person's words (`"context"`).
/// OpenCode keeps both as they are (verified: listed, exported, resumed, and kept after a turn).
pub(crate) const RELAY_FIELD: &str = "sessionRelay";

/// A session id as OpenCode checks it (`ses` prefix), unique and sorting as its own do: newest
/// first (the time's bits inverted), then random characters.
fn new_session_id() -> String {
    let ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    let inverted = !(ms << 12) & 0xffff_ffff_ffff;
    format!("ses_{inverted:012x}{}", random_base62(14))
}

/// `n` (at most 64) random characters of OpenCode's base-62 alphabet (hex digits).
pub(crate) fn random_base62(n: usize) -> String {
    let (a, b) = (uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    format!("{a}{b}")[..n.min(64)].to_string()
}

/// OpenCode's data folder for home `home`: the home, unless it is the default and
/// `XDG_DATA_HOME` moves it (as OpenCode itself follows that variable).
pub(crate) fn data_dir(home: &Path) -> PathBuf {
    let xdg = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let default = dirs::home_dir().map(|h| h.join(AGENT.default_home));
    match xdg {
        Some(x) if default.as_deref() == Some(home) => x.join("opencode"),
        _ => home.to_path_buf(),
    }
}

/// The database under home `home`: `OPENCODE_DB` as OpenCode takes it, else `opencode.db`.
pub(crate) fn db_path(home: &Path) -> PathBuf {
    let data = data_dir(home);
    match std::env::var_os("OPENCODE_DB").filter(|v| !v.is_empty() && v != ":memory:") {
        Some(v) if Path::new(&v).is_absolute() => PathBuf::from(v),
        Some(v) => data.join(v),
        None => data.join("opencode.db"),
    }
}

/// The session a listing path names: (database, session id), when `path` is a path under a
/// database file (not a file of its own).
pub(crate) fn row_path(path: &Path) -> Option<(&Path, String)> {
    let db = path.parent()?;
    let id = path.file_name()?.to_str()?;
    (id.starts_with("ses") && db.is_file()).then(|| (db, id.to_string()))
}

/// The file a relay writes for session `id` under home `home`.
pub(crate) fn relayed_file(home: &Path, id: &str) -> PathBuf {
    data_dir(home).join(RELAYED_DIR).join(format!("{id}.json"))
}

/// The database, with a path under it per session.
struct Database;

impl Store for Database {
    /// The database (a session's listing path is under it) and the folder of the relays'
    /// documents: the store is there once OpenCode has created its database.
    fn dirs(&self, home: &Path) -> Vec<PathBuf> {
        vec![db_path(home), data_dir(home).join(RELAYED_DIR)]
    }

    fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        let db = db_path(home);
        if !db.is_file() {
            return Vec::new();
        }
        // A database that cannot be read lists nothing here; reading a session says why.
        db::session_ids(&db)
            .map(|ids| ids.into_iter().map(|id| db.join(id)).collect())
            .unwrap_or_default()
    }

    fn id_from_name(&self, path: &Path) -> Option<String> {
        row_path(path).map(|(_, id)| id)
    }

    fn stand_in(&self, path: &Path) -> Option<crate::adapter::StandIn> {
        let (db, id) = row_path(path)?;
        let db = db.to_path_buf();
        Some(Box::new(move |out| Ok(db::walk(&db, &id, out, None)?.size)))
    }
}

impl Adapter for OpenCode {
    fn agent(&self) -> &'static Agent {
        &AGENT
    }

    fn store(&self) -> &dyn Store {
        &Database
    }

    fn scan(&self, path: &Path) -> Result<Summary> {
        // Read as a relay reads it, outputs cut short: the listing then counts what `show`
        // counts, by the same rules.
        let opts = ReadOptions {
            max_tool_output: Some(200),
            ..Default::default()
        };
        let (s, size) = read::read_sized(path, opts)?;
        let relay_of = s.extra.get("provenance");
        Ok(Summary {
            relay_of: relay_of.and_then(RelaySource::from_provenance),
            ..Summary::of_session(&s, path, size)
        })
    }

    fn read_with(&self, path: &Path, _home: Option<&Path>, opts: ReadOptions) -> Result<Session> {
        read::read_sized(path, opts).map(|(s, _)| s)
    }

    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool {
        // `opencode export`'s document, or a relay's file in its shape.
        path.extension().is_some_and(|e| e == "json")
            && head.has_key("info")
            && head.has_key("slug")
            && head.has_key("projectID")
    }

    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, Value)> {
        if same_agent {
            return crate::adapter::own_tool(call);
        }
        tools::native(call)
    }

    fn resume_command(&self, id: &str, cwd: &str) -> String {
        format!(
            "cd {} && opencode --session {id}",
            crate::text::shell_quote(cwd)
        )
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }

    fn register(
        &self,
        home: &Path,
        written: &NativeSession,
        _shaped: &Session,
        _title: &str,
    ) -> Result<Vec<String>> {
        db::register(&db_path(home), &written.path, &written.id)
    }

    fn unregister(&self, home: &Path, id: &str) -> Result<Vec<String>> {
        db::unregister(&db_path(home), id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_look_like_opencode_ids_and_sort_newest_first() {
        let a = new_session_id();
        assert!(a.starts_with("ses_") && a.len() == 4 + 12 + 14, "{a}");
        std::thread::sleep(std::time::Duration::from_millis(3));
        let b = new_session_id();
        assert!(b < a, "{b} sorts before {a}");
    }

    #[test]
    fn a_listing_path_names_a_session_under_a_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        std::fs::write(&db, b"").unwrap();
        let p = db.join("ses_abc");
        assert_eq!(row_path(&p).map(|(_, id)| id).as_deref(), Some("ses_abc"));
        assert_eq!(row_path(&dir.path().join("x/ses_abc")), None);
        assert_eq!(row_path(&db.join("msg_abc")), None);
    }
}
