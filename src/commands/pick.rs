//! What the session picker offers when `relay`, `show` or `export` is run on a terminal without
//! a SESSION: the sessions `list` would show (this directory's, or with `--all` every
//! directory's), which of them session-relay wrote or relayed (from the ledger), and a preview
//! of each. Drawing the picker and reading the keyboard is `render::picker`'s.

use std::collections::HashMap;

use anyhow::Result;

use super::Scope;
use crate::adapter::ReadOptions;
use crate::config::Config;
use crate::ledger;
use crate::model::{Role, Session, Summary};
use crate::select::Located;
use crate::text::{one_line, truncate_chars};

pub struct Options {
    pub scope: Scope,
    pub progress: crate::progress::Handle,
}

/// One session the picker offers.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub summary: Summary,
    /// session-relay wrote this session: relayed from this agent's session (agent, id).
    pub relayed_from: Option<(String, String)>,
    /// This session was relayed to these agents.
    pub relayed_to: Vec<String>,
}

pub struct Candidates {
    /// The directory the sessions are of; `None` with `--all`.
    pub dir: Option<String>,
    pub sessions: Vec<Candidate>,
    pub warnings: Vec<String>,
}

/// The sessions to pick from, newest first, as `list` scopes them.
pub fn candidates(cfg: &Config, opts: &Options) -> Result<Candidates> {
    let listed = super::list::run(
        cfg,
        &super::list::Options {
            scope: opts.scope.clone(),
            limit: None,
            no_redact: false,
            progress: opts.progress.clone(),
        },
    )?;
    let mut from: HashMap<String, (String, String)> = HashMap::new();
    let mut to: HashMap<String, Vec<String>> = HashMap::new();
    let bytes = ledger::bytes();
    for e in ledger::entry_refs(&bytes) {
        match &*e.event {
            "relay" => {
                from.insert(
                    e.target.path.to_string(),
                    (e.source.agent.to_string(), e.source.id.to_string()),
                );
                let agents = to.entry(e.source.path.to_string()).or_default();
                if !agents.iter().any(|a| *a == e.target.agent) {
                    agents.push(e.target.agent.to_string());
                }
            }
            "clean" => {
                from.remove(&*e.target.path);
            }
            _ => {}
        }
    }
    let sessions = listed
        .sessions
        .into_iter()
        .map(|listed| {
            let summary = listed.summary;
            let key = summary.path.display().to_string();
            Candidate {
                // The provenance record marks a relay even when the ledger has lost it.
                relayed_from: listed
                    .relay
                    .map(|r| (r.from.agent, r.from.id))
                    .or_else(|| from.get(&key).cloned()),
                relayed_to: to.get(&key).cloned().unwrap_or_default(),
                summary,
            }
        })
        .collect();
    Ok(Candidates {
        dir: listed.dir,
        sessions,
        warnings: listed.warnings,
    })
}

/// What the picker shows of a session's conversation: its first request and its last exchange,
/// each on one line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preview {
    pub first_request: Option<String>,
    pub last_request: Option<String>,
    pub last_reply: Option<String>,
}

/// Characters of each preview text kept.
const PREVIEW_CHARS: usize = 160;

/// Reads a session just enough for its preview (tool outputs are not kept).
pub fn preview(cfg: &Config, summary: &Summary) -> Result<Preview> {
    let located = Located {
        path: summary.path.clone(),
        adapter: crate::adapters::by_name(&summary.agent),
        home: Some(cfg.agent(&summary.agent).session_root.clone()),
    };
    let session = located.read_with(ReadOptions {
        max_tool_output: Some(0),
        full_tail_tokens: Some(0),
        mask: None,
        lean: true,
        fold: None,
    })?;
    Ok(preview_of(&session))
}

/// The preview of a session already read.
pub fn preview_of(s: &Session) -> Preview {
    let text = |s: &str| {
        let t = one_line(s);
        (!t.is_empty()).then(|| truncate_chars(&t, PREVIEW_CHARS))
    };
    let is_request = |m: &&crate::model::Message| m.is_real_user() && !m.content.trim().is_empty();
    let first_request = s.first_user_prompt().and_then(text);
    let last = s.messages.iter().rposition(|m| is_request(&m));
    let last_request = last
        .filter(|&i| s.messages.iter().position(|m| is_request(&m)) != Some(i))
        .and_then(|i| text(&s.messages[i].content));
    let last_reply = s
        .messages
        .iter()
        .skip(last.unwrap_or(0))
        .rev()
        .find(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
        .and_then(|m| text(&m.content));
    Preview {
        first_request,
        last_request,
        last_reply,
    }
}
