//! The plan stage: a neutral source session becomes what the target agent will receive.
//!
//! - `shape`: which messages travel, which tool calls stay structured (the target has a tool of
//!   the same kind) and which become text;
//! - `brief`: the handoff brief the next agent reads first;
//! - `snapshot`: the files the session changed and how they stand now, which the brief carries;
//! - `summary`: the extractive summary of the turns left out;
//! - `fit`: the layered fit to the target's token budget;
//! - `calls`: tool calls as text (a transcript, or one line).
//!
//! The result is still a neutral `Session`; the target adapter only serialises it.

pub mod brief;
pub mod calls;
pub mod cues;
pub mod fit;
pub mod fold;
pub mod shape;
pub mod snapshot;
pub mod summary;

use anyhow::Result;
use serde::Serialize;

use crate::adapter::{Adapter, ReadOptions};
use crate::config::Config;
use crate::model::{GitInfo, Session};

pub use fit::{FitReport, Part};
pub use shape::ShapeStats;

/// A relay keeps at most `fit::TOOL_OUTPUT_MAX` characters of any tool output, so it reads no
/// more; and of a long session it keeps only the newest turns whole, so it reads in full only
/// the newest `TAIL_FACTOR` budgets' worth (the fit asks for more when it needs it).
pub fn read_options(budget: usize) -> ReadOptions {
    ReadOptions {
        max_tool_output: Some(fit::TOOL_OUTPUT_MAX),
        full_tail_tokens: Some(budget.saturating_mul(TAIL_FACTOR)),
        mask: None,
        lean: true,
        fold: None,
    }
}

/// `read_options` without the tail: every turn in full, outputs still cut, and every fact
/// kept (as `show` reads a long session).
pub fn read_options_full() -> ReadOptions {
    ReadOptions {
        max_tool_output: Some(fit::TOOL_OUTPUT_MAX),
        full_tail_tokens: None,
        mask: None,
        lean: false,
        fold: None,
    }
}

/// How many budgets' worth of the newest turns a relay reads in full. Whole turns take at most
/// about half the budget, so two budgets is ample; three leaves a margin for estimates.
pub const TAIL_FACTOR: usize = 3;

/// The budget for a target and how it was derived: `--budget`, else from the target's context
/// window: the one its own newest sessions record when the config file does not set one, else
/// the configured (or default) window.
pub fn budget_for(cfg: &Config, target: &dyn Adapter, flag: Option<usize>) -> (usize, String) {
    if let Some(n) = flag {
        return (n, "--budget".into());
    }
    let a = cfg.agent(target.name());
    let recorded = (a.context_window_from == crate::config::Origin::Default)
        .then(|| target.recorded_context_window(&a.session_root))
        .flatten();
    let (window, from) = match &recorded {
        Some((w, file)) => (
            *w,
            format!(
                "{} context_window (recorded by {} in {})",
                crate::text::thousands(*w),
                target.display_name(),
                file.display()
            ),
        ),
        None => (
            a.context_window,
            format!(
                "{} context_window",
                crate::text::thousands(a.context_window)
            ),
        ),
    };
    (
        a.budget_for_window(window),
        format!(
            "({from} - {} reserved_tokens) x {} safety_ratio",
            crate::text::thousands(a.reserved_tokens),
            a.safety_ratio
        ),
    )
}

/// What a relay to one target carries, and how it was made to fit.
pub struct Plan {
    /// The session to write: the brief first, then what fits.
    pub session: Session,
    /// The file-state snapshot the brief carries (masked).
    pub snapshot: snapshot::Snapshot,
    /// The secrets masked in the snapshot that the session does not hold (the repository's
    /// branch, HEAD's subject, the files not committed); `None` when the relay does not mask.
    pub snapshot_redactions: Option<crate::redact::Counts>,
    pub shape: ShapeStats,
    pub fit: FitReport,
    pub budget_from: String,
}

/// The parts of a plan a report shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanReport {
    pub budget_from: String,
    pub shape: ShapeStats,
    pub fit: FitReport,
}

impl Plan {
    pub fn report(&self) -> PlanReport {
        PlanReport {
            budget_from: self.budget_from.clone(),
            shape: self.shape.clone(),
            fit: self.fit.clone(),
        }
    }
}

/// Where and as what the relayed session will live.
pub struct Target<'a> {
    pub adapter: &'a dyn Adapter,
    /// The new session's id.
    pub id: &'a str,
    /// The directory it will be resumed in.
    pub cwd: &'a str,
    pub title: &'a str,
    /// `--budget`, overriding the target's configured budget.
    pub budget: Option<usize>,
    /// `cwd`'s repository state when it was already read (`brief::live_git_state`), beside
    /// the session; `None` to read it here.
    pub live_git: Option<Option<brief::GitState>>,
    /// For a session from a bundle: the directory it ran in on the machine that bundled it,
    /// which the brief names.
    pub bundled_from: Option<&'a str>,
    /// For a session from a bundle: the file-state snapshot read when it was made, which the
    /// brief carries instead of one read here (where the session's directory may not exist).
    pub bundled_snapshot: Option<&'a snapshot::Snapshot>,
}

/// The snapshot as the brief carries it, at most as many files as `budget` allows, after a
/// line naming where a session from a bundle ran.
fn snapshot_text(snap: &snapshot::Snapshot, t: &Target, budget: usize) -> String {
    let mut text = snap.render(Some(snapshot::files_for_budget(budget)));
    if let Some(ran) = t.bundled_from {
        text.insert_str(
            0,
            &format!(
                "Relayed from a bundle: the session ran in {ran} on the machine that bundled it; it goes on here in {}.\n",
                t.cwd
            ),
        );
    }
    text
}

/// Shapes a source session for the target and fits it to the budget: what a relay writes.
/// The plan takes the source's messages (a long session is not held twice); the rest of
/// `source` stays as it was. `folded`: what the reader folded of it (see `fold`).
pub fn plan(
    cfg: &Config,
    source: &mut Session,
    t: &Target,
    folded: Option<fold::FoldedPart>,
    redactor: Option<&crate::redact::Redactor>,
) -> Result<Plan> {
    let git = t
        .live_git
        .clone()
        .unwrap_or_else(|| brief::live_git_state(t.cwd))
        .unwrap_or_else(|| brief::recorded_git_state(source.git.as_ref()));
    let (budget, budget_from) = budget_for(cfg, t.adapter, t.budget);
    let mut snap = match t.bundled_snapshot {
        Some(b) => b.clone().carried_to(t.cwd, git.clone()),
        None => snapshot::Snapshot::take(
            source.file_facts.as_deref(),
            t.cwd,
            source.cwd.as_deref(),
            git.clone(),
        ),
    };
    let snapshot_redactions = redactor.map(|r| snap.mask(r));
    let snapshot_text = snapshot_text(&snap, t, budget);
    let brief_text = brief::brief(&brief::BriefInput {
        session: source,
        source_display: crate::adapters::display_name(&source.agent),
        title: t.title,
        snapshot: &snapshot_text,
        folded: folded.as_ref().map(|f| &f.brief),
    });
    let messages = std::mem::take(&mut source.messages);
    let (shaper, folded_turns, newest_folded) = match folded {
        Some(f) => (f.shaper, f.turns, f.newest),
        None => (
            shape::Shaper::new(&source.agent, t.adapter),
            Vec::new(),
            Vec::new(),
        ),
    };
    let (shaped, shape_stats) =
        shape::shape_after(source, messages, shaper, t.id, brief_text.clone());
    let params = fit::FitParams {
        budget,
        tokenizer: cfg.agent(t.adapter.name()).tokenizer,
        recent_turns: cfg.relay.recent_turns,
        summary_max_tokens: cfg.relay.summary_max_tokens,
        tool_call_keep_recent: cfg.relay.tool_call_keep_recent,
    };
    let (mut fitted, report) =
        fit::fit_folded(shaped, brief_text, &params, &folded_turns, &newest_folded)?;
    // The relayed session lives where it will be resumed.
    fitted.cwd = Some(t.cwd.to_string());
    if let Some(g) = fitted.git.as_mut() {
        if git.live {
            g.branch = git.branch.clone().or(g.branch.take());
            g.commit = git.commit.clone().or(g.commit.take());
        }
    } else if git.live {
        fitted.git = Some(GitInfo {
            branch: git.branch.clone(),
            commit: git.commit.clone(),
            remote: None,
        });
    }
    Ok(Plan {
        session: fitted,
        snapshot: snap,
        snapshot_redactions,
        shape: shape_stats,
        fit: report,
        budget_from,
    })
}
