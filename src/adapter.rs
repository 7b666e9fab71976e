//! What every agent adapter provides. Adapters live in `adapters/<name>/` and are registered by
//! `build.rs`; nothing in `src/` names a particular agent except through this trait.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::listcache::ListCache;

use crate::session::{Session, Timestamp};

/// One session as the listing sees it: only what can be learnt without reading the whole
/// conversation.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Summary {
    pub id: String,
    pub agent: String,
    pub path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<Timestamp>,
    /// User and assistant messages, counted from line prefixes (see the adapter's scanner).
    pub messages: usize,
    pub size: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
    /// For a subagent transcript: its parent session's id. Such summaries are not top-level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub subagents: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Summary {
    /// The time the listing sorts by: last activity, else creation.
    pub fn sort_time(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.updated
            .as_ref()
            .and_then(Timestamp::time)
            .or_else(|| self.created.as_ref().and_then(Timestamp::time))
    }
}

/// How much of a session a reader keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Cut tool outputs longer than this many characters to head and tail while reading (the
    /// relay keeps no more than that of any output, so reading more only costs memory).
    /// `None` reads everything, as `show` and `export` must.
    pub max_tool_output: Option<usize>,
}

/// The output length a tool result had before a reader cut it.
pub fn output_chars(m: &crate::session::Message) -> usize {
    m.metadata
        .get("original_chars")
        .and_then(serde_json::Value::as_u64)
        .map_or_else(|| m.content.chars().count(), |n| n as usize)
}

/// What the relay asks a target adapter to write.
pub struct WriteRequest {
    /// The target agent's home.
    pub home: PathBuf,
    /// The id of the new session.
    pub id: String,
    /// The directory the user will resume in (already resolved to a real path when it exists).
    pub cwd: String,
    /// Title shown in the agent's picker.
    pub title: String,
    /// Provenance record to embed in the file.
    pub provenance: serde_json::Value,
    /// The relay's own time, for the file name and the session start.
    pub now: chrono::DateTime<chrono::Utc>,
    /// Write a standalone file here instead of into the store.
    pub standalone: Option<PathBuf>,
}

/// A native session ready to be written.
pub struct NativeSession {
    pub id: String,
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// Modification time to give the file (agents sort their pickers by it).
    pub mtime: Option<chrono::DateTime<chrono::Utc>>,
    /// The command that resumes it.
    pub resume_command: String,
    /// Things the user should know (skipped content, index not updated, ...).
    pub notes: Vec<String>,
}

pub trait Adapter: Sync {
    /// Short name used on the command line and in the neutral model (`claude`, `codex`).
    fn name(&self) -> &'static str;
    /// Product name for messages.
    fn display_name(&self) -> &'static str;
    /// The environment variable the agent itself reads for its home, e.g. `CODEX_HOME`.
    fn home_env(&self) -> &'static str;
    /// The agent's home when neither config nor environment says otherwise.
    fn default_home(&self) -> Option<PathBuf>;
    /// Context window of the agent's current default models, in tokens.
    fn default_context_window(&self) -> u64;
    /// Room the agent needs for its own system prompt, tools and answer, in tokens.
    fn default_reserved_tokens(&self) -> u64;
    /// How this agent's tokens are counted when the config does not say.
    fn default_tokenizer(&self) -> crate::tokens::Tokenizer;
    /// The folders under `home` that hold sessions (shown when none exist).
    fn store_dirs(&self, home: &Path) -> Vec<PathBuf>;
    /// Every session file under `home`, cheaply. Subagent transcripts come with `parent_id` set.
    fn list(&self, home: &Path, cache: &ListCache) -> Result<Vec<Summary>>;
    /// Session ids and their files, from file names alone (for selecting by id or prefix).
    fn ids(&self, home: &Path) -> Vec<(String, PathBuf)>;
    /// Reads one session file into the neutral model. `home` lets an adapter consult its
    /// store's indexes (titles); it may be absent for a file outside any store.
    fn read(&self, path: &Path, home: Option<&Path>) -> Result<Session> {
        self.read_with(path, home, ReadOptions::default())
    }
    /// `read`, keeping only what `opts` asks for.
    fn read_with(&self, path: &Path, home: Option<&Path>, opts: ReadOptions) -> Result<Session>;
    /// Whether a file (named `path`, starting with `head`) looks like this agent's session.
    fn claims(&self, path: &Path, head: &[u8]) -> bool;
    /// A fresh session id in the form this agent uses.
    fn new_id(&self) -> String {
        uuid::Uuid::new_v4().to_string()
    }
    /// This agent's own tool equivalent to `source_agent`'s tool call, if it has one:
    /// (name, input). Calls without an equivalent travel as text.
    fn equivalent_tool(
        &self,
        source_agent: &str,
        name: &str,
        input: &serde_json::Value,
    ) -> Option<(String, serde_json::Value)>;
    /// Serialises a relay-shaped session as this agent's native, resumable session.
    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession>;
    /// After the file is in place: register it in the store's indexes (titles, databases).
    /// Returns notes for the user.
    fn register(
        &self,
        home: &Path,
        written: &NativeSession,
        shaped: &Session,
        title: &str,
    ) -> Result<Vec<String>>;
    /// Before a relayed session's file is deleted: remove it from the store's indexes.
    fn unregister(&self, home: &Path, id: &str) -> Result<Vec<String>>;
}
