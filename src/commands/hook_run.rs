//! `session-relay hook run`: what an agent's hook runs. It reads the hook's JSON from standard
//! input (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `trigger`), relays that
//! session (fitted, redacted, idempotent: an unchanged session is not written twice), logs what
//! it did, and gives back one line for the agent to show. It never fails the agent: every
//! error becomes that line.
//!
//! Only a session in the store of the agent that runs the hook is relayed (`--from`, which
//! `hooks install` writes into the command; a hook installed without it takes any agent's
//! store). The input comes from whatever runs the command, and the relay copies what it names
//! into another agent's store: a `transcript_path` elsewhere, through a symlink or `..`
//! included, would carry any file there.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use super::relay;
use crate::adapter::Adapter;
use crate::config::Config;
use crate::select::{self, SelectScope};
use crate::text::one_line_cut;

pub struct Options {
    /// The agent to relay to.
    pub to: String,
    pub budget: Option<usize>,
    /// The agent that runs the hook.
    pub from: Option<String>,
}

/// The hook's input, as both agents send it.
#[derive(Debug, Default, Serialize)]
pub struct Payload {
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub event: Option<String>,
    /// `manual`/`auto` for a compaction; the reason a session ended.
    pub trigger: Option<String>,
}

/// What the hook did; `reply` is what the agent reads on standard output.
#[derive(Debug, Serialize)]
pub struct Report {
    pub time: String,
    #[serde(flatten)]
    pub payload: Payload,
    /// `relayed`, `already_relayed` or `error`.
    pub outcome: &'static str,
    pub line: String,
    pub target: Option<crate::ledger::Side>,
    pub resume_command: Option<String>,
    pub millis: u128,
    #[serde(skip)]
    pub reply: String,
}

/// Runs the hook. `cfg` is the config as loaded (or why it could not be).
pub fn run(cfg: Result<Config>, opts: &Options, input: &[u8]) -> Report {
    let start = Instant::now();
    let payload = parse(input);
    let caller = opts.from.as_deref().and_then(crate::adapters::by_name);
    let mut held_by = None;
    let result = cfg.and_then(|cfg| {
        let source = session_of(&cfg, caller, &payload)?;
        held_by = Some(source.agent);
        relay_session(&cfg, opts, &source.session)
    });
    let target = crate::adapters::display_name(&opts.to);
    let (outcome, line, side, resume) = match result {
        Ok(r) if r.already_relayed => (
            "already_relayed",
            format!("Already relayed to {target}: {}", r.resume_command),
            Some(r.target),
            Some(r.resume_command),
        ),
        Ok(r) => (
            "relayed",
            format!("Relayed to {target}: {}", r.resume_command),
            Some(r.target),
            Some(r.resume_command),
        ),
        Err(e) => (
            "error",
            format!(
                "session-relay could not relay this session to {target}: {}",
                one_line_cut(&format!("{e:#}"), 300)
            ),
            None,
            None,
        ),
    };
    let line = crate::text::safe(&line).into_owned();
    let reply = match caller.or(held_by) {
        Some(a) => a.hook_reply(&line),
        None => line.clone(),
    };
    let report = Report {
        time: crate::ledger::time_text(chrono::Utc::now()),
        payload,
        outcome,
        line,
        target: side,
        resume_command: resume,
        millis: start.elapsed().as_millis(),
        reply,
    };
    // A log that cannot be written costs only the record.
    let _ = log(&report);
    report
}

fn parse(input: &[u8]) -> Payload {
    let v: Value = serde_json::from_slice(input).unwrap_or(Value::Null);
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Payload {
        session_id: s("session_id"),
        transcript_path: s("transcript_path"),
        cwd: s("cwd"),
        event: s("hook_event_name"),
        trigger: s("trigger").or_else(|| s("reason")),
    }
}

/// A session the hook may relay.
struct Source {
    /// As `relay` takes it.
    session: String,
    /// The agent whose store holds it.
    agent: &'static dyn Adapter,
}

/// The session the hook's input names, its `transcript_path`, else its `session_id`, when it is
/// a file in the store of `caller` (of any agent without one).
fn session_of(cfg: &Config, caller: Option<&'static dyn Adapter>, p: &Payload) -> Result<Source> {
    let (path, session) = match (&p.transcript_path, &p.session_id) {
        (Some(path), _) if Path::new(path).exists() => (PathBuf::from(path), path.clone()),
        (_, Some(id)) => {
            // A full id alone: `latest`, a prefix or a path would select something else.
            if uuid::Uuid::try_parse(id).is_err() {
                bail!("the hook's session_id `{id}` is not a session id");
            }
            let scope = SelectScope {
                agent: caller.map(|a| a.name()),
                cwd: None,
            };
            let path = select::select(cfg, id, &scope)?.path;
            let session = path.to_str().map_or_else(|| id.clone(), str::to_string);
            (path, session)
        }
        _ => bail!("the hook's input names no session (no transcript_path or session_id)"),
    };
    let real = std::fs::canonicalize(&path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    let stores = select::stores(cfg, caller.map(|a| a.name()));
    let held_by = stores.iter().find(|s| {
        s.adapter
            .store_dirs(&s.home)
            .iter()
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .any(|d| real.starts_with(d))
    });
    if let Some(s) = held_by {
        // The file as judged, links resolved: a link in the store turned to point elsewhere
        // after the check leads nowhere new.
        let session = real.to_str().map_or(session, str::to_string);
        return Ok(Source {
            session,
            agent: s.adapter,
        });
    }
    let whose = caller.map_or_else(
        || "any agent's".to_string(),
        |a| format!("{}'s", a.display_name()),
    );
    let resolved = if real == path {
        String::new()
    } else {
        format!(" (that is {})", real.display())
    };
    let dirs: Vec<String> = stores
        .iter()
        .flat_map(|s| s.adapter.store_dirs(&s.home))
        .map(|d| d.display().to_string())
        .collect();
    bail!(
        "{}{resolved} is not in {whose} session store, so it was not relayed ({})",
        path.display(),
        dirs.join(", ")
    )
}

fn relay_session(cfg: &Config, opts: &Options, session: &str) -> Result<relay::Report> {
    relay::run(
        cfg,
        &relay::Options {
            session: session.to_string(),
            to: opts.to.clone(),
            agent: None,
            cwd: None,
            title: None,
            out: None,
            dry_run: false,
            budget: opts.budget,
            no_redact: false,
            force: false,
            all: false,
            apply_changes: false,
            // The config's `archive:` decides, as for any relay.
            archive: None,
            progress: None,
        },
    )
}

fn log(report: &Report) -> Result<()> {
    let path = super::hooks::log_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::fsutil::append_line(&path, &serde_json::to_string(report)?)
}
