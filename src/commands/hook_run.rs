//! `session-relay hook run`: what an agent's hook runs. It reads the hook's JSON from standard
//! input (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `trigger`), relays that
//! session (fitted, redacted, idempotent: an unchanged session is not written twice), logs what
//! it did, and gives back one line for the agent to show. It never fails the agent: every
//! error becomes that line.

use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use super::relay;
use crate::config::Config;
use crate::text::one_line_cut;

pub struct Options {
    /// The agent to relay to.
    pub to: String,
    pub budget: Option<usize>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::ledger::Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_command: Option<String>,
    pub millis: u128,
    #[serde(skip)]
    pub reply: String,
}

/// Runs the hook. `cfg` is the config as loaded (or why it could not be).
pub fn run(cfg: Result<Config>, opts: &Options, input: &[u8]) -> Report {
    let start = Instant::now();
    let payload = parse(input);
    let source_agent = payload
        .transcript_path
        .as_deref()
        .and_then(|p| agent_of(cfg.as_ref().ok(), p));
    let result = cfg.and_then(|cfg| relay_session(&cfg, opts, &payload));
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
    let reply = match source_agent {
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

/// The agent whose session file `path` is.
fn agent_of(cfg: Option<&Config>, path: &str) -> Option<&'static dyn crate::adapter::Adapter> {
    crate::select::locate_file(cfg?, std::path::Path::new(path))
        .ok()?
        .adapter
}

fn relay_session(cfg: &Config, opts: &Options, p: &Payload) -> Result<relay::Report> {
    let session = match (&p.transcript_path, &p.session_id) {
        (Some(path), _) if std::path::Path::new(path).is_file() => path.clone(),
        (_, Some(id)) => id.clone(),
        _ => anyhow::bail!("the hook's input names no session (no transcript_path or session_id)"),
    };
    relay::run(
        cfg,
        &relay::Options {
            session,
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
