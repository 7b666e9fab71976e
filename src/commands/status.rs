//! `session-relay status`: the live sessions with how full their context is, as each agent
//! recorded it at the end of the session file, and whether an up-to-date relay of each exists.

use std::collections::HashMap;

use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;

use super::list::{RelayMark, RelayMarks};
use crate::config::Config;
use crate::ledger::{self, EntryRef, Side};
use crate::model::{Summary, Timestamp};

/// The same scope as `list`'s.
pub use super::list::Options;

#[derive(Debug, Serialize)]
pub struct Report {
    /// The directory shown; `None` with `--all`.
    pub dir: Option<String>,
    pub sessions: Vec<Live>,
    /// Files that could not be listed, with the reason.
    pub warnings: Vec<String>,
}

/// One live session.
#[derive(Debug, Serialize)]
pub struct Live {
    pub agent: String,
    pub id: String,
    pub path: String,
    pub cwd: Option<String>,
    pub title: Option<String>,
    /// Last activity.
    pub updated: Option<Timestamp>,
    /// How full the context was at the newest request; `None` when the file records nothing.
    pub context: Option<Context>,
    /// The newest relay of this session into each agent.
    pub relays: Vec<RelayState>,
    /// Set when this session is itself a relay.
    pub relay: Option<RelayMark>,
}

#[derive(Debug, Serialize)]
pub struct Context {
    /// Tokens the context held at the newest request.
    pub tokens: u64,
    /// The model's context window.
    pub window: u64,
    /// `recorded` (the agent wrote it into the session) or `config` (`context_window` of the
    /// agent in the config, or its default).
    pub window_from: &'static str,
    /// tokens / window, in percent, one decimal.
    pub percent: f64,
    pub model: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct RelayState {
    /// The relay was made from the source as it is now (same size and SHA-256).
    pub up_to_date: bool,
    pub target: Side,
    pub relayed_at: String,
    pub resume_command: String,
}

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
    let scoped = super::list::in_scope(cfg, opts, true)?;
    // Read once, borrowed: the marks and the relays of each session both come from it.
    let bytes = ledger::bytes();
    let entries = ledger::entry_refs(&bytes);
    let relays = newest_relays(&entries);
    let marks = RelayMarks::of_entries(&entries);
    // Each file's tail (and, for a relayed one, its hash) is independent of the others.
    let sessions = scoped
        .sessions
        .into_par_iter()
        .map(|s| {
            let adapter = crate::adapters::by_name(&s.agent);
            let context = adapter.and_then(|a| {
                let u = a.recorded_usage(&s.path)?;
                let (window, window_from) = match u.window {
                    Some(w) => (w, "recorded"),
                    None => (cfg.agent(a.name()).context_window, "config"),
                };
                Some(Context {
                    percent: (u.tokens as f64 * 1000.0 / window.max(1) as f64).round() / 10.0,
                    tokens: u.tokens,
                    window,
                    window_from,
                    model: u.model,
                })
            });
            let relay_states = relays
                .get(&(s.agent.clone(), s.id.clone()))
                .map(|es| es.iter().map(|e| relay_state(e, &s)).collect())
                .unwrap_or_default();
            Live {
                relay: marks.of(&s),
                agent: s.agent,
                id: s.id,
                path: s.path.display().to_string(),
                cwd: s.cwd,
                title: s.title,
                updated: s.updated.or(s.created),
                context,
                relays: relay_states,
            }
        })
        .collect();
    Ok(Report {
        dir: scoped.dir,
        sessions,
        warnings: scoped.warnings,
    })
}

/// The newest relay still in place of each source session into each agent, by source.
fn newest_relays<'e, 'a>(
    entries: &'e [EntryRef<'a>],
) -> HashMap<(String, String), Vec<&'e EntryRef<'a>>> {
    let mut out: HashMap<(String, String), Vec<&EntryRef>> = HashMap::new();
    for e in ledger::live_relays(entries) {
        if !e.is_store_relay() || !std::path::Path::new(&*e.target.path).exists() {
            continue;
        }
        let v = out
            .entry((e.source.agent.to_string(), e.source.id.to_string()))
            .or_default();
        v.retain(|o| o.target.agent != e.target.agent);
        v.push(e);
    }
    out
}

/// The SHA-256 of a listed session as the ledger hashed it when it was relayed: its file's, or
/// for a session kept in a database the bytes that stand for it.
fn source_sha256(s: &Summary) -> Option<String> {
    let standin = crate::adapters::by_name(&s.agent).and_then(|a| a.stand_in(&s.path));
    match standin {
        Some(write) => ledger::Snapshot::of_stand_in(&write, &s.path)
            .ok()
            .map(|s| s.sha256),
        None => ledger::sha256_file(&s.path).ok(),
    }
}

fn relay_state(e: &EntryRef, s: &Summary) -> RelayState {
    // A source that changed size changed; one of the same size is hashed to be sure.
    let up_to_date = e.source_bytes.is_none_or(|b| b == s.size)
        && source_sha256(s).is_some_and(|h| h == e.source.sha256);
    RelayState {
        up_to_date,
        resume_command: crate::adapters::by_name(&e.target.agent)
            .map(|a| a.resume_command(&e.target.id, &e.cwd))
            .unwrap_or_default(),
        target: e.target.to_side(),
        relayed_at: e.time.to_string(),
    }
}
