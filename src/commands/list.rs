//! `session-relay list`: sessions, newest first.

use std::collections::{HashMap, HashSet};

use anyhow::Result;
use serde::Serialize;

use super::Scope;
use crate::config::Config;
use crate::ledger;
use crate::model::{RelaySource, Summary};
use crate::select;

pub struct Options {
    /// With `scope.all`, every directory's sessions.
    pub scope: Scope,
    pub limit: Option<usize>,
    /// Titles as they are (by default secrets in them are masked, in the cache too).
    pub no_redact: bool,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
pub struct Report {
    /// The directory listed; `None` with `--all`.
    pub dir: Option<String>,
    pub sessions: Vec<Listed>,
    /// Files that could not be listed, with the reason.
    pub warnings: Vec<String>,
}

/// One session of the listing.
#[derive(Debug, Serialize)]
pub struct Listed {
    #[serde(flatten)]
    pub summary: Summary,
    /// Set for a session session-relay wrote.
    pub relay: Option<RelayMark>,
}

/// What marks a session as a relay: its provenance record, the ledger, or both.
#[derive(Debug, Clone, Serialize)]
pub struct RelayMark {
    /// The session it was relayed from.
    pub from: RelaySource,
    /// The ledger records the relay.
    pub in_ledger: bool,
    /// A newer relay of the same source replaced it (`clean --superseded` removes it).
    pub superseded: bool,
}

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
    // The ledger is read on another core while the stores are scanned (the scan on this
    // thread, which the progress bar follows).
    let (scoped, marks) = rayon::join(|| in_scope(cfg, opts, false), RelayMarks::load);
    let scoped = scoped?;
    Ok(Report {
        dir: scoped.dir,
        sessions: scoped
            .sessions
            .into_iter()
            .map(|summary| Listed {
                relay: marks.of(&summary),
                summary,
            })
            .collect(),
        warnings: scoped.warnings,
    })
}

/// The top-level sessions the options ask for, newest first.
pub struct Scoped {
    /// The directory they belong to; `None` with `--all`.
    pub dir: Option<String>,
    pub sessions: Vec<Summary>,
    pub warnings: Vec<String>,
}

/// The scope `list` and `status` share: one directory's (or every) top-level sessions of one
/// agent (or all), newest first, at most `limit`; `live_only` leaves archived ones out.
pub fn in_scope(cfg: &Config, opts: &Options, live_only: bool) -> Result<Scoped> {
    let redactor = if opts.no_redact {
        None
    } else {
        Some(cfg.redactor()?)
    };
    let listing = crate::progress::scope(&opts.progress, || {
        select::list_with(
            cfg,
            opts.scope.agent.as_deref(),
            &select::ListOptions {
                redactor: redactor.as_ref(),
                save_cache: redactor.is_some(),
            },
        )
    })?;
    let all = opts.scope.all;
    let dir = opts.scope.dir()?;
    let mut sessions: Vec<Summary> = listing
        .sessions
        .into_iter()
        .filter(|s| s.parent_id.is_none() && !(live_only && s.archived))
        .filter(|s| all || select::same_dir(s.cwd.as_deref(), &dir))
        .collect();
    if let Some(n) = opts.limit {
        sessions.truncate(n);
    }
    Ok(Scoped {
        dir: (!all).then(|| dir.display().to_string()),
        sessions,
        warnings: listing.warnings,
    })
}

/// The relays the ledger knows, to mark sessions with.
pub struct RelayMarks {
    /// Target path -> the relay's source.
    by_path: HashMap<String, RelaySource>,
    /// Target agent and id -> target path: a session a store lists under a path that is not a
    /// file (OpenCode's rows, under its database), not the file the relay wrote, is matched by
    /// id.
    by_id: HashMap<(String, String), String>,
    superseded: HashSet<String>,
}

impl RelayMarks {
    pub fn load() -> RelayMarks {
        RelayMarks::of_entries(&ledger::entry_refs(&ledger::bytes()))
    }

    /// The marks the ledger's `entries` give.
    pub fn of_entries(entries: &[ledger::EntryRef]) -> RelayMarks {
        let live = ledger::live_relays(entries);
        RelayMarks {
            by_id: live
                .iter()
                .map(|e| {
                    let (t, path) = (&e.target, e.target.path.to_string());
                    ((t.agent.to_string(), t.id.to_string()), path)
                })
                .collect(),
            by_path: live
                .into_iter()
                .map(|e| {
                    (
                        e.target.path.to_string(),
                        RelaySource {
                            agent: e.source.agent.to_string(),
                            id: e.source.id.to_string(),
                            relayed_at: Some(e.time.to_string()),
                        },
                    )
                })
                .collect(),
            superseded: ledger::superseded(entries),
        }
    }

    /// How a session is marked: by the provenance record it carries, else by the ledger.
    pub fn of(&self, s: &Summary) -> Option<RelayMark> {
        let mut path = s.path.display().to_string();
        if !self.by_path.contains_key(&path)
            && let Some(p) = self.by_id.get(&(s.agent.clone(), s.id.clone()))
            && !s.path.is_file()
        {
            path = p.clone();
        }
        let ledger = self.by_path.get(&path);
        let from = s.relay_of.clone().or_else(|| ledger.cloned())?;
        Some(RelayMark {
            from,
            in_ledger: ledger.is_some(),
            superseded: self.superseded.contains(&path),
        })
    }
}
