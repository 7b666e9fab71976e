//! `session-relay list`: sessions, newest first.

use anyhow::Result;
use serde::Serialize;

use super::Scope;
use crate::config::Config;
use crate::model::Summary;
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
    pub sessions: Vec<Summary>,
    /// Files that could not be listed, with the reason.
    pub warnings: Vec<String>,
}

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
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
        .filter(|s| s.parent_id.is_none())
        .filter(|s| all || select::same_dir(s.cwd.as_deref(), &dir))
        .collect();
    if let Some(n) = opts.limit {
        sessions.truncate(n);
    }
    Ok(Report {
        dir: (!all).then(|| dir.display().to_string()),
        sessions,
        warnings: listing.warnings,
    })
}
