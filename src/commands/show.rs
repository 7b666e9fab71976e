//! `session-relay show`: one session's header, counts, tools, files, todos, tokens and
//! warnings; with `--to AGENT`, how a relay to that agent would fit its budget.

use std::collections::BTreeMap;

use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::{Scope, redact, resume_dir};
use crate::config::Config;
use crate::model::{Role, Session};
use crate::plan::{self, PlanReport};
use crate::tokens;

pub struct Options {
    pub session: String,
    pub scope: Scope,
    /// Preview a relay to this agent instead.
    pub to: Option<String>,
    pub budget: Option<usize>,
    /// Print the header as it is (by default secrets in it are masked).
    pub no_redact: bool,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Report {
    Session(Box<SessionReport>),
    Fit(Box<FitPreview>),
}

#[derive(Debug, Serialize)]
pub struct SessionReport {
    /// Everything the reader learnt but the messages; blobs in `extra` are named by size.
    pub session: Session,
    /// User and assistant messages.
    pub messages: usize,
    /// Messages by role.
    pub counts: BTreeMap<&'static str, usize>,
    /// Tool calls by the source agent's tool name.
    pub tool_calls: BTreeMap<String, usize>,
    /// Tool calls by neutral kind.
    pub tool_kinds: BTreeMap<&'static str, usize>,
    pub estimated_tokens: usize,
    pub tokenizer: &'static str,
    /// The agent's own record of its context at the newest request, next to our estimate of
    /// the conversation up to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_check: Option<ContextCheck>,
}

#[derive(Debug, Serialize)]
pub struct ContextCheck {
    /// What the agent recorded at its newest request (for Claude Code: input + cache tokens).
    pub recorded_tokens: u64,
    /// What its prompt grew by from the first recorded request to the newest: the
    /// conversation in between, without the agent's own system prompt and tools.
    pub recorded_growth: u64,
    /// Our count of the messages in between, with the tokenizer for the recorded model.
    pub estimated_growth: usize,
    pub tokenizer: &'static str,
    /// recorded_growth / estimated_growth (1.0 = exact; below 1 our count is high); none when
    /// no message lies between the two requests (one request, or none since the last
    /// compaction).
    pub ratio: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct FitPreview {
    pub source: SourceRef,
    pub to: String,
    #[serde(flatten)]
    pub plan: PlanReport,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct SourceRef {
    pub agent: String,
    pub id: String,
}

/// Above this much text `show` estimates tokens instead of counting them exactly.
const EXACT_COUNT_MAX: usize = 4 << 20;

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
    crate::progress::scope(&opts.progress, || run_in_scope(cfg, opts))
}

fn run_in_scope(cfg: &Config, opts: &Options) -> Result<Report> {
    match &opts.to {
        Some(to) => Ok(Report::Fit(Box::new(preview(cfg, opts, to)?))),
        None => {
            let located = crate::select::select(cfg, &opts.session, &opts.scope.select()?)?;
            let size = std::fs::metadata(&located.path).map_or(0, |m| m.len());
            // Built first: its rules compile on another core while the session is read.
            let redactor = (!opts.no_redact).then(|| cfg.redactor()).transpose()?;
            let mut s = located.read_with(super::show_read_options(size))?;
            if let Some(r) = &redactor {
                r.header(&mut s);
            }
            let report = session_report(&s);
            // Freeing a long session takes a while and nothing waits for it (see `relay`).
            std::thread::spawn(move || drop(s));
            Ok(Report::Session(Box::new(report)))
        }
    }
}

/// Everything `show` says of a session.
pub fn session_report(s: &Session) -> SessionReport {
    let mut header = s.header();
    // Agents' own system prompts and similar blobs ride along in `extra` (the export keeps
    // them whole); a report names their size instead.
    for v in header.extra.values_mut() {
        let len = v.to_string().len();
        if len > 400 {
            *v = json!({ "elided_bytes": len });
        }
    }
    let counts = s
        .role_counts()
        .into_iter()
        .map(|(r, n)| (r.as_str(), n))
        .collect();
    let mut tool_calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut tool_kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    for m in s.messages.iter().filter(|m| m.role == Role::ToolCall) {
        *tool_calls
            .entry(m.tool_name.as_deref().unwrap_or("?"))
            .or_default() += 1;
        *tool_kinds
            .entry(m.tool_kind.map_or("unknown", |k| k.as_str()))
            .or_default() += 1;
    }
    let tool_calls = tool_calls
        .into_iter()
        .map(|(name, n)| (name.to_string(), n))
        .collect();
    // An exact count of a huge session costs seconds and says little more than an estimate.
    let size: usize = s.messages.iter().map(|m| m.content.len()).sum();
    let cut = s
        .messages
        .iter()
        .any(|m| m.metadata.contains_key("original_chars"));
    let (estimated_tokens, tokenizer) = if size <= EXACT_COUNT_MAX && !cut {
        (tokens::session_tokens(s), "o200k_base")
    } else {
        // Outputs cut while reading count at their size in the source.
        // On every core: a tool input's size is that of its JSON text, written out to count.
        let n = s.messages.par_iter().map(plan::fit::source_tokens).sum();
        (n, "estimate (characters / 4)")
    };
    let context_check = s.context_usage.as_ref().map(|u| {
        let tok = match u.model.as_deref() {
            Some(model) if s.agent == "claude" => tokens::Tokenizer::for_claude_model(model),
            _ => crate::adapters::by_name(&s.agent)
                .map_or(tokens::Tokenizer::O200k, |a| a.default_tokenizer()),
        };
        let end = u.at_message.min(s.messages.len());
        let start = u.first_at_message.min(end);
        // An output cut while reading counts in proportion to its size in the source.
        let estimated: usize = s.messages[start..end]
            .iter()
            .map(|m| {
                let n = crate::plan::fit::cost(tok, m);
                match m.metadata.get_u64("original_chars") {
                    Some(original) => {
                        let kept = m.content.chars().count().max(1);
                        (n as u64 * original / kept as u64) as usize
                    }
                    None => n,
                }
            })
            .sum();
        let growth = u.tokens.saturating_sub(u.first_tokens);
        ContextCheck {
            recorded_tokens: u.tokens,
            recorded_growth: growth,
            estimated_growth: estimated,
            tokenizer: tok.name(),
            ratio: (estimated > 0).then(|| growth as f64 / estimated as f64),
        }
    });
    SessionReport {
        context_check,
        session: header,
        messages: s.message_count(),
        counts,
        tool_calls,
        tool_kinds,
        estimated_tokens,
        tokenizer,
    }
}

/// `show --to AGENT`: how a relay of this session would fit the target's budget.
fn preview(cfg: &Config, opts: &Options, to: &str) -> Result<FitPreview> {
    let target = crate::adapters::by_name(to).expect("clap checked the agent name");
    let read = super::relay_read_options(cfg, target, opts.budget);
    let located = crate::select::select(cfg, &opts.session, &opts.scope.select()?)?;
    let mut warnings = Vec::new();
    let (mut s, redactor, folder) = super::read_masked(cfg, &located, read, false, &mut warnings)?;
    let mut redactions = redact(redactor.as_deref(), &mut s);
    let cwd = resume_dir(opts.scope.cwd.as_deref(), &s)?;
    let title = s.title.clone().unwrap_or_default();
    let plan = super::plan_relay(
        cfg,
        &located,
        &mut s,
        &mut redactions,
        redactor.as_deref(),
        &plan::Target {
            adapter: target,
            id: "dry-run",
            cwd: &cwd,
            title: &title,
            budget: opts.budget,
            live_git: None,
        },
        folder.as_deref(),
    )?;
    warnings.extend(super::reader_warnings(&s));
    Ok(FitPreview {
        source: SourceRef {
            agent: s.agent.clone(),
            id: s.id.clone(),
        },
        to: to.to_string(),
        plan: plan.report(),
        warnings,
    })
}
