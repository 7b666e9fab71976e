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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<Timestamp>,
    /// User and assistant messages on the branch the agent loads (as `show` counts them).
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

    /// Which of several files holding one session the listing shows, highest first: one with
    /// a conversation, then the newest, then by path (an agent may keep a session in several
    /// files: Gemini CLI leaves a copy of its start beside every resumed session).
    pub fn listing_rank(&self) -> impl Ord + use<> {
        (
            self.messages > 0,
            self.sort_time(),
            std::cmp::Reverse(self.path.clone()),
        )
    }
}
