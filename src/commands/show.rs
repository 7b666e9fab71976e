//! `session-relay show`: one session's header, counts, tools, files, todos, tokens and
//! warnings; with `--to AGENT`, how a relay to that agent would fit its budget.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::{Scope, redact, resume_dir};
use crate::adapter::{Fold, ReadOptions};
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
    pub context_check: Option<ContextCheck>,
    /// The files the session changed and how they stand now, as a relay's brief gives them
    /// (every file here), read in the session's working directory.
    pub file_snapshot: plan::snapshot::Snapshot,
    /// For a bundle: its manifest (the snapshot is then the one read when it was made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<crate::bundle::Manifest>,
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
            let (located, bundle) =
                crate::bundle::select(cfg, &opts.session, &opts.scope.select()?)?;
            let size = session_size(&located);
            // Built first: its rules compile on another core while the session is read.
            let redactor = (!opts.no_redact).then(|| cfg.redactor()).transpose()?;
            let keep = keep_tokens_asked();
            let mut read = super::show_read_options(size, keep.is_some());
            // A long session's older turns are counted as they are read, and let go.
            let agent = located.adapter.map_or("", |a| a.name());
            let tally = read
                .lean
                .then(|| Arc::new(Tally::new(keep.unwrap_or(SHOW_KEEP_TOKENS), agent)));
            read.fold = tally.as_ref().map(|t| Fold(t.clone()));
            let mut s = located.read_with(read.clone())?;
            let counted = match (&tally, s.folded.as_deref()) {
                // A fold that broke may have broken before it took a turn: the branch chosen
                // ahead was not the one the parse found, and what was read is not the session.
                (Some(t), Some(f)) if f.messages > 0 || f.broken => {
                    let counted = t.take();
                    let fits = !f.broken && counted.answers(&s, f);
                    super::fold_note(SHOW_FOLD_NOTE, format!("{} messages", f.messages), !fits);
                    if fits {
                        Some(counted)
                    } else {
                        s = located.read_with(ReadOptions { fold: None, ..read })?;
                        None
                    }
                }
                _ => None,
            };
            if let Some(r) = &redactor {
                r.header(&mut s);
            }
            let mut report = session_report_with(&s, counted.as_ref());
            if let Some(r) = &redactor {
                report.file_snapshot.mask(r);
            }
            if let Some(b) = bundle {
                if let Some(snap) = b.snapshot()? {
                    report.file_snapshot = snap;
                }
                report.bundle = Some(b.manifest);
            }
            // Freeing a long session takes a while and nothing waits for it (see `relay`).
            std::thread::spawn(move || drop(s));
            Ok(Report::Session(Box::new(report)))
        }
    }
}

/// How long a session is, to choose how to read it: its file's length, or for a session that
/// is no file of its own (OpenCode's rows) the bytes its store says stand for it (the listing's
/// size).
fn session_size(located: &crate::select::Located) -> u64 {
    std::fs::metadata(&located.path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .or_else(|| {
            let write = located.adapter?.stand_in(&located.path)?;
            write(&mut std::io::sink()).ok()
        })
        .unwrap_or(0)
}

/// What `show` says on standard error when it counted older turns as it read them and
/// `adapter::PART_READ_ENV` is set (the tests tell by it that it did).
pub const SHOW_FOLD_NOTE: &str = "session-relay: counted older turns while reading";

/// Set to the tokens (content bytes / 4) of the newest turns `show` keeps of a long
/// session instead of `SHOW_KEEP_TOKENS`; any session is then read as a long one (the tests
/// count small sessions this way).
pub const SHOW_KEEP_ENV: &str = "SESSION_RELAY_SHOW_KEEP_TOKENS";

/// How much of a long session's newest turns `show` keeps as messages: the context check
/// reads the messages since the last compaction, which an agent makes before its window
/// (at most a million tokens) fills; older turns are only counted.
pub const SHOW_KEEP_TOKENS: usize = 2_000_000;

fn keep_tokens_asked() -> Option<usize> {
    std::env::var(SHOW_KEEP_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
}

/// The tokenizer the context check counts with: the agent's, for the model that recorded the
/// context where the agent's models count apart (Claude's).
fn context_tokenizer(agent: &str, model: Option<&str>) -> tokens::Tokenizer {
    let tokenizer =
        crate::adapters::by_name(agent).map_or(tokens::Tokenizer::O200k, |a| a.default_tokenizer());
    match model {
        Some(model) => tokenizer.for_model(model),
        None => tokenizer,
    }
}

/// What the context check counts of a message: an output cut while reading in proportion to
/// its size in the source.
fn context_cost(tok: tokens::Tokenizer, m: &crate::model::Message) -> usize {
    let n = crate::plan::fit::cost(tok, m);
    match m.original_chars() {
        Some(original) => {
            let kept = m.content.chars().count().max(1);
            (n as u64 * original as u64 / kept as u64) as usize
        }
        None => n,
    }
}

/// `show`'s `TurnFold`: the counts the report gives of the turns the reader let go.
struct Tally {
    keep: usize,
    agent: &'static str,
    counted: Mutex<Counted>,
}

/// What the report says of folded messages (see `session_report`).
#[derive(Default)]
struct Counted {
    roles: BTreeMap<Role, usize>,
    tool_calls: BTreeMap<String, usize>,
    tool_kinds: BTreeMap<&'static str, usize>,
    source_tokens: usize,
    /// Their bytes of content, and whether an output among them was cut while reading: what
    /// decides between an exact count and an estimate.
    content_bytes: usize,
    cut: bool,
    /// What the context check counts of each, in order (`context_cost`), where the session
    /// had recorded a context by then that it may reach back to; and with which tokenizer.
    context: Vec<Option<usize>>,
    context_tokenizer: Option<tokens::Tokenizer>,
    /// Counted with more than one tokenizer (the model changed).
    mixed: bool,
}

impl Tally {
    fn new(keep: usize, agent: &'static str) -> Tally {
        Tally {
            keep,
            agent,
            counted: Mutex::new(Counted::default()),
        }
    }

    fn take(&self) -> Counted {
        std::mem::take(&mut *self.counted.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl crate::adapter::TurnFold for Tally {
    fn keep_tokens(&self) -> usize {
        self.keep
    }

    /// A rough measure: the fold counts each message's source tokens once, in `fold`.
    fn reach_tokens(&self, m: &crate::model::Message) -> usize {
        m.content.len() / 4
    }

    fn fold(&self, turn: Vec<crate::model::Message>) {
        self.fold_at(turn, 0, None);
    }

    /// The context check reads every message from the baseline the session recorded (its
    /// first request, or the first after a compaction) on, and a baseline only moves later:
    /// a message before the one recorded so far is never needed, and without one yet (an
    /// agent that records none) none is counted.
    fn fold_at(
        &self,
        turn: Vec<crate::model::Message>,
        first_place: usize,
        usage: Option<&crate::model::ContextUsage>,
    ) {
        let tok = usage.map(|u| context_tokenizer(self.agent, u.model.as_deref()));
        let costs: Vec<Option<usize>> = turn
            .iter()
            .enumerate()
            .map(|(j, m)| match (usage, tok) {
                (Some(u), Some(tok)) if first_place + j >= u.first_at_message => {
                    Some(context_cost(tok, m))
                }
                _ => None,
            })
            .collect();
        let mut c = self.counted.lock().unwrap_or_else(|e| e.into_inner());
        c.context.extend(costs);
        if let Some(tok) = tok {
            c.mixed |= c.context_tokenizer.is_some_and(|t| t != tok);
            c.context_tokenizer = Some(tok);
        }
        for m in &turn {
            *c.roles.entry(m.role).or_default() += 1;
            if m.role == Role::ToolCall {
                let name = m.tool_name.as_deref().unwrap_or("?");
                match c.tool_calls.get_mut(name) {
                    Some(n) => *n += 1,
                    None => {
                        c.tool_calls.insert(name.to_string(), 1);
                    }
                }
                *c.tool_kinds
                    .entry(m.tool_kind.map_or("unknown", |k| k.as_str()))
                    .or_default() += 1;
            }
            c.source_tokens += plan::fit::source_tokens(m);
            c.content_bytes += m.content.len();
            c.cut |= m.original_chars().is_some();
        }
    }
}

impl Counted {
    /// Whether the report can be made from the kept messages and these counts: it estimates
    /// tokens (as it does for any session this long), and its context check reads kept
    /// messages only. Otherwise the session is read again, every turn kept.
    fn answers(&self, s: &Session, f: &crate::model::Folded) -> bool {
        let size = self.content_bytes + s.messages.iter().map(|m| m.content.len()).sum::<usize>();
        let cut = self.cut || s.messages.iter().any(|m| m.original_chars().is_some());
        let estimated = size > EXACT_COUNT_MAX || cut;
        let check_kept = s.context_usage.as_ref().is_none_or(|u| {
            let mut needed = u.first_at_message.max(f.at)..u.at_message.min(f.at + f.messages);
            needed.is_empty()
                || (!self.mixed
                    && self.context_tokenizer
                        == Some(context_tokenizer(&s.agent, u.model.as_deref()))
                    && needed.all(|p| self.context.get(p - f.at).is_some_and(Option::is_some)))
        });
        estimated && check_kept
    }
}

/// Everything `show` says of a session.
pub fn session_report(s: &Session) -> SessionReport {
    session_report_with(s, None)
}

/// `session_report` of a session whose older turns were `counted` while it was read (their
/// messages are not in `s`, which places its messages as in the whole session).
fn session_report_with(s: &Session, counted: Option<&Counted>) -> SessionReport {
    let mut header = s.header();
    // Agents' own system prompts and similar blobs ride along in `extra` (the export keeps
    // them whole); a report names their size instead.
    for v in header.extra.values_mut() {
        let len = v.to_string().len();
        if len > 400 {
            *v = json!({ "elided_bytes": len });
        }
    }
    let mut roles = s.role_counts();
    let mut tool_calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut tool_kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    if let Some(c) = counted {
        for (r, n) in &c.roles {
            *roles.entry(*r).or_default() += n;
        }
        for (name, n) in &c.tool_calls {
            *tool_calls.entry(name).or_default() += n;
        }
        for (kind, n) in &c.tool_kinds {
            *tool_kinds.entry(kind).or_default() += n;
        }
    }
    let messages = roles
        .iter()
        .filter(|(r, _)| matches!(r, Role::User | Role::Assistant))
        .map(|(_, n)| n)
        .sum();
    let counts = roles.into_iter().map(|(r, n)| (r.as_str(), n)).collect();
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
    let cut = s.messages.iter().any(|m| m.original_chars().is_some());
    let (estimated_tokens, tokenizer) = if counted.is_none() && size <= EXACT_COUNT_MAX && !cut {
        (tokens::session_tokens(s), "o200k_base")
    } else {
        // Outputs cut while reading count at their size in the source.
        // On every core: a tool input's size is that of its JSON text, written out to count.
        let n = s
            .messages
            .par_iter()
            .map(plan::fit::source_tokens)
            .sum::<usize>()
            + counted.map_or(0, |c| c.source_tokens);
        (n, "estimate (characters / 4)")
    };
    let context_check = s.context_usage.as_ref().map(|u| {
        let tok = context_tokenizer(&s.agent, u.model.as_deref());
        // Places are those of the whole session: the folded messages', counted while they
        // were read (`Counted::answers`), lie between the kept ones.
        let (at, gone) = s.folded.as_ref().map_or((0, 0), |f| (f.at, f.messages));
        let estimated: usize = (u.first_at_message..u.at_message)
            .map_while(|p| {
                if p < at {
                    s.messages.get(p).map(|m| context_cost(tok, m))
                } else if p < at + gone {
                    Some(counted.and_then(|c| c.context.get(p - at).copied().flatten())?)
                } else {
                    s.messages.get(p - gone).map(|m| context_cost(tok, m))
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
        file_snapshot: file_snapshot(s),
        bundle: None,
        session: header,
        messages,
        counts,
        tool_calls,
        tool_kinds,
        estimated_tokens,
        tokenizer,
    }
}

/// The file-state snapshot of `s` in its own working directory (not masked).
pub(super) fn file_snapshot(s: &Session) -> plan::snapshot::Snapshot {
    let cwd = s.cwd.as_deref().unwrap_or_default();
    let git = plan::brief::live_git_state(cwd)
        .unwrap_or_else(|| plan::brief::recorded_git_state(s.git.as_ref()));
    plan::snapshot::Snapshot::take(s.file_facts.as_deref(), cwd, s.cwd.as_deref(), git)
}

/// `show --to AGENT`: how a relay of this session would fit the target's budget.
fn preview(cfg: &Config, opts: &Options, to: &str) -> Result<FitPreview> {
    let target = crate::adapters::by_name(to).expect("clap checked the agent name");
    let read = super::relay_read_options(cfg, target, opts.budget);
    let (located, _bundle) = crate::bundle::select(cfg, &opts.session, &opts.scope.select()?)?;
    let mut warnings = Vec::new();
    let (mut s, redactor, folder) = super::read_masked(cfg, &located, read, false, &mut warnings)?;
    let mut redactions = redact(redactor.as_deref(), &mut s);
    // The directory and title the relay would give it (its brief names both, and counts them).
    let cwd = match (opts.scope.cwd.as_deref(), s.cwd.as_deref()) {
        (None, None) => resume_dir(None, &s)?,
        (flag, recorded) => super::relay::resolve_cwd(flag, recorded, &mut Vec::new())?,
    };
    let title = super::relay::default_title(&s, &super::relay::stamp(chrono::Utc::now()));
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
            bundled_from: None,
            bundled_snapshot: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An OpenCode session is a row of a database, not a file: its size is its rows' bytes,
    /// as the listing gives it, not 0.
    #[test]
    fn a_session_of_database_rows_has_its_rows_size() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(fixture.join("fixtures/opencode/opencode.db"), &db).unwrap();
        let adapter = crate::adapters::by_name("opencode").unwrap();
        let path = db.join("ses_db6a00000ffeOddHandMade0001");
        let located = crate::select::Located {
            path: path.clone(),
            adapter: Some(adapter),
            home: None,
        };
        let listed = adapter.scan(&path).unwrap().size;
        assert!(listed > 1000, "{listed}");
        assert_eq!(session_size(&located), listed);
    }
}
