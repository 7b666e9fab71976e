use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Timestamp;

/// One session as the listing sees it: only what can be learnt without reading the whole
/// conversation. `list` and `show` must agree on every field both report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub id: String,
    pub agent: String,
    pub path: PathBuf,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub created: Option<Timestamp>,
    #[serde(default)]
    pub updated: Option<Timestamp>,
    /// User and assistant messages on the branch the agent loads (as `show` counts them).
    pub messages: usize,
    pub size: u64,
    #[serde(default)]
    pub archived: bool,
    /// For a subagent transcript: its parent session's id. Such summaries are not top-level.
    #[serde(default)]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub subagents: usize,
    /// For a session session-relay wrote: the source its provenance record names.
    #[serde(default)]
    pub relay_of: Option<RelaySource>,
}

/// The session a relayed session was made from, as its provenance record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelaySource {
    pub agent: String,
    pub id: String,
    /// When the relay was written, as its provenance or ledger entry says.
    #[serde(default)]
    pub relayed_at: Option<String>,
}

impl RelaySource {
    /// The source named by a provenance record session-relay embedded in a file.
    pub fn from_provenance(p: &serde_json::Value) -> Option<RelaySource> {
        let s = |k: &str| p.get(k).and_then(serde_json::Value::as_str);
        (s("tool")? == "session-relay").then(|| RelaySource {
            agent: s("source_agent").unwrap_or_default().to_string(),
            id: s("source_id").unwrap_or_default().to_string(),
            relayed_at: s("relayed_at").map(str::to_string),
        })
    }
}

/// How full an agent's context was at its newest request, as the agent itself recorded it at
/// the end of the session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedUsage {
    /// Tokens the context held (Claude Code: input + cache creation + cache read of the newest
    /// answer; Codex: the newest request's total).
    pub tokens: u64,
    /// The model's context window, when the agent records it.
    #[serde(default)]
    pub window: Option<u64>,
    /// The model that answered.
    #[serde(default)]
    pub model: Option<String>,
}

/// Whether a session file's name holds the session's id: the file an agent names for it.
pub fn named_for(path: &std::path::Path, id: &str) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().contains(id))
}

impl Summary {
    /// The time the listing sorts by: last activity, else creation.
    pub fn sort_time(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.updated
            .as_ref()
            .and_then(Timestamp::time)
            .or_else(|| self.created.as_ref().and_then(Timestamp::time))
    }

    /// The listing row of a session read in full (a listing does that for the small, rare
    /// whole-document files instead of scanning them). `relay_of` is the caller's to set.
    pub fn of_session(s: &super::Session, path: &std::path::Path, size: u64) -> Summary {
        Summary {
            id: s.id.clone(),
            agent: s.agent.clone(),
            path: path.to_path_buf(),
            cwd: s.cwd.clone(),
            title: s.title.clone(),
            created: s.created.clone(),
            updated: s.updated.clone(),
            messages: s.message_count(),
            size,
            archived: s.archived,
            parent_id: s.parent_id.clone(),
            subagents: 0,
            relay_of: None,
        }
    }

    /// Which of several files holding one session the listing shows, highest first: the file
    /// named for the session (a Codex rollout, not a renamed copy of it), then one with a
    /// conversation, then the newest, then by path (an agent may keep a session in several
    /// files: Gemini CLI leaves a copy of its start beside every resumed session). Selecting by
    /// a full id relies on the first: it takes the file named for the id without a listing.
    pub fn listing_rank(&self) -> impl Ord + use<> {
        (
            named_for(&self.path, &self.id),
            self.messages > 0,
            self.sort_time(),
            std::cmp::Reverse(self.path.clone()),
        )
    }
}
