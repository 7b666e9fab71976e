//! The commands. Each is a thin file: options in, a typed report out (rendered as text or JSON
//! by `render`). None of them prints; warnings travel in the reports.

pub mod bundle;
pub mod clean;
pub mod doctor;
pub mod export;
pub mod hook_run;
pub mod hooks;
pub mod list;
pub mod log;
pub mod pick;
pub mod relay;
pub mod show;
pub mod stats;
pub mod status;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::adapter::{Mask, ReadOptions};
use crate::config::Config;
use crate::model::Session;
use crate::plan::fold::Folder;
use crate::redact::{Counts, Redactor};
use crate::select::{Located, SelectScope};

/// The `schema_version` every `--json` output carries (and the relay report an archive keeps):
/// bumped when a field of any of them changes meaning or goes away.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// Which sessions a command considers: one agent's, one directory's.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub agent: Option<String>,
    /// `--cwd`; `None` is the current directory.
    pub cwd: Option<PathBuf>,
    /// `--all`: every directory's sessions, not only those of `dir()`.
    pub all: bool,
}

impl Scope {
    /// The directory the scope is about: `--cwd`, else the current directory.
    pub fn dir(&self) -> Result<PathBuf> {
        match &self.cwd {
            Some(d) => Ok(std::path::absolute(d).unwrap_or(d.clone())),
            None => current_dir(),
        }
    }

    fn select(&self) -> Result<SelectScope<'_>> {
        Ok(SelectScope {
            agent: self.agent.as_deref(),
            cwd: if self.all { None } else { Some(self.dir()?) },
        })
    }
}

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().context("cannot read the current directory")
}

/// Plans a relay of `source` to `target`, reading the session again in full first when the fit
/// wants whole a turn the first read took only in part (see `ReadOptions::full_tail_tokens`):
/// the plan is then exactly what a full read gives. Returns the plan; the plan takes
/// `source`'s messages, and `source` and `redactions` are replaced when the session was read
/// again.
pub fn plan_relay(
    cfg: &Config,
    located: &Located,
    source: &mut Session,
    redactions: &mut Redactions,
    redactor: Option<&Redactor>,
    target: &crate::plan::Target,
    folder: Option<&Folder>,
) -> Result<crate::plan::Plan> {
    step("fitting the session to the budget");
    let folded = folder.and_then(Folder::take);
    let folded_counts = folded.as_ref().and_then(|f| f.redactions.clone());
    let folded_turns = folded.as_ref().map_or(0, |f| f.turns.len());
    // Read in part: older outputs cut short, or older turns folded.
    let in_part = folded.is_some()
        || source
            .messages
            .iter()
            .any(crate::model::Message::is_reduced);
    let plan = match crate::plan::plan(cfg, source, target, folded, redactor) {
        Ok(plan) => plan,
        // The budget too small: what must always be kept may cost more read in full, and the
        // error says what a full read says.
        Err(_) if in_part => {
            return plan_read_in_full(cfg, located, source, redactions, redactor, target);
        }
        Err(e) => return Err(e),
    };
    if folded_turns > 0 {
        fold_note(
            crate::plan::fold::FOLD_NOTE,
            format!("{folded_turns} turns"),
            plan.fit.needs_full_read,
        );
    }
    if !plan.fit.needs_full_read {
        if let (Some(counts), Some(folded)) = (redactions.0.as_mut(), folded_counts) {
            crate::redact::add_counts(counts, folded);
        }
        add_snapshot_counts(redactions, &plan);
        return Ok(plan);
    }
    plan_read_in_full(cfg, located, source, redactions, redactor, target)
}

/// Adds what masking the plan's file-state snapshot found to the relay's counts.
fn add_snapshot_counts(redactions: &mut Redactions, plan: &crate::plan::Plan) {
    if let (Some(counts), Some(found)) = (redactions.0.as_mut(), &plan.snapshot_redactions) {
        crate::redact::add_counts(counts, found.clone());
    }
}

/// `plan_relay` of `located` read again in full, which replaces `source` and `redactions`.
fn plan_read_in_full(
    cfg: &Config,
    located: &Located,
    source: &mut Session,
    redactions: &mut Redactions,
    redactor: Option<&Redactor>,
    target: &crate::plan::Target,
) -> Result<crate::plan::Plan> {
    let mut full = located.read_with(crate::adapter::ReadOptions {
        lean: true,
        ..crate::plan::read_options_full()
    })?;
    *redactions = redact(redactor, &mut full);
    *source = full;
    let plan = crate::plan::plan(cfg, source, target, None, redactor)?;
    add_snapshot_counts(redactions, &plan);
    Ok(plan)
}

/// Set to read every turn of a relayed session in full, and every tool output of a session
/// `show` reads (for checking that reading in part changes nothing, and for debugging).
pub const FULL_READ_ENV: &str = "SESSION_RELAY_FULL_READ";

fn full_read_asked() -> bool {
    std::env::var_os(FULL_READ_ENV).is_some_and(|v| !v.is_empty())
}

/// How `show` reads a session of `size` bytes: one over 8 MB as a relay reads it, each tool
/// output cut while parsing to what a relay could keep, and without the per-message facts its
/// report never reads (`ReadOptions::lean`: a Claude Code line's uuid and model, a good part
/// of the time a long transcript's read takes). Its report needs only the outputs' sizes, and a
/// full read of 100 MB holds 100 MB of outputs. `long` reads a smaller one so too (the
/// tests of `show`'s fold).
pub fn show_read_options(size: u64, long: bool) -> ReadOptions {
    if (size > 8 << 20 || long) && !full_read_asked() {
        ReadOptions {
            lean: true,
            ..crate::plan::read_options_full()
        }
    } else {
        ReadOptions::default()
    }
}

/// A session read by `read_masked`, what masks its secrets, and what it folded.
pub type Masked = (Session, Option<Arc<Redactor>>, Option<Arc<Folder>>);

/// How a relay reads its source: the options, and the target and budget its older turns are
/// folded for (see `plan::fold`).
#[derive(Default)]
pub struct RelayRead {
    pub opts: ReadOptions,
    fold_to: Option<(&'static dyn crate::adapter::Adapter, usize)>,
}

/// How a relay to `target` reads its source (see `plan::read_options`).
pub fn relay_read_options(
    cfg: &Config,
    target: &'static dyn crate::adapter::Adapter,
    budget: Option<usize>,
) -> RelayRead {
    // Read as `show` reads it: the tests compare the two reads' relays.
    if full_read_asked() {
        return RelayRead {
            opts: crate::plan::read_options_full(),
            fold_to: None,
        };
    }
    let budget = crate::plan::budget_for(cfg, target, budget).0;
    RelayRead {
        opts: crate::plan::read_options(budget),
        fold_to: Some((target, budget)),
    }
}

/// Reads `located` with `opts`, and builds what masks its secrets (see `redactor`; its rules
/// compile on another core meanwhile). A reader that reads in part masks what it cuts further
/// (see `adapter::OutputMask`).
///
/// A relay's read in part folds the older turns (see `plan::fold`): the plan takes them from
/// the `Folder` returned.
pub fn read_masked(
    cfg: &Config,
    located: &Located,
    read: RelayRead,
    no_redact: bool,
    warnings: &mut Vec<String>,
) -> Result<Masked> {
    let redactor = redactor(cfg, no_redact, warnings)?;
    // Decided once: a session file still growing must not turn from a full read into one in
    // part (which masks as it cuts) between here and the read.
    let mut opts = read.opts.for_file(&located.path);
    let folder = match (read.fold_to, located.adapter) {
        (Some((target, budget)), Some(source)) if opts.full_tail_tokens.is_some() => {
            let folder = Arc::new(Folder::new(source.name(), target, budget, redactor.clone()));
            opts.fold = Some(folder.fold());
            Some(folder)
        }
        _ => None,
    };
    let partial = opts.full_tail_tokens.is_some();
    if partial && crate::adapter::part_read_asked() {
        eprintln!("{}", crate::adapter::PART_READ_NOTE);
    }
    let mask = redactor.as_ref().filter(|_| partial).map(|r| {
        r.ready();
        Mask(r.clone())
    });
    let opts = ReadOptions { mask, ..opts };
    let session = located.read_with(opts.clone())?;
    if let Some(f) = session.folded.as_ref().filter(|f| f.broken) {
        // A folded turn paired with a later one (a call answered or made after it): it was
        // not shaped as the whole session shapes it. Read again, keeping every turn.
        let turns = folder
            .as_ref()
            .and_then(|f| f.take())
            .map_or(0, |p| p.turns.len());
        let turns = turns.max(usize::from(f.messages > 0));
        fold_note(crate::plan::fold::FOLD_NOTE, format!("{turns} turns"), true);
        let opts = ReadOptions { fold: None, ..opts };
        return Ok((located.read_with(opts)?, redactor, None));
    }
    Ok((session, redactor, folder))
}

/// Says on standard error, when the tests ask (`adapter::PART_READ_ENV`), that a read folded
/// `what` (`note` says for whom), and whether the session was then read again.
pub(super) fn fold_note(note: &str, what: String, read_again: bool) {
    if crate::adapter::part_read_asked() {
        eprintln!(
            "{note}: {what}{}",
            if read_again {
                ", then read again in full"
            } else {
                ""
            }
        );
    }
}

/// The directory a relayed (or fitted) session belongs to: `--cwd`, else the session's own.
pub fn resume_dir(cwd: Option<&Path>, s: &Session) -> Result<String> {
    Ok(match (cwd, &s.cwd) {
        (Some(d), _) => d.display().to_string(),
        (None, Some(c)) => c.clone(),
        (None, None) => current_dir()?.display().to_string(),
    })
}

/// What redaction did to a session: counts by kind, or `None` when the user turned it off.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct Redactions(pub Option<Counts>);

impl Redactions {
    pub fn total(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.values().sum())
    }
}

/// What masks a command's secrets, built once: `None` when the user said not to mask, which
/// is worth a warning. A relay's reader masks with it the outputs it reads only in part (see
/// `adapter::OutputMask`), and `redact` the rest.
pub fn redactor(
    cfg: &Config,
    no_redact: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<Redactor>>> {
    if no_redact {
        warnings.push(
            "--no-redact: secrets in this session (API keys, tokens, passwords) are written as they are"
                .into(),
        );
        return Ok(None);
    }
    Ok(Some(Arc::new(cfg.redactor()?)))
}

/// Masks the secrets of a session read with `redactor` (see `redactor`).
pub fn redact(redactor: Option<&Redactor>, s: &mut Session) -> Redactions {
    let Some(redactor) = redactor else {
        return Redactions(None);
    };
    step("masking secrets");
    Redactions(Some(redactor.session(s)))
}

/// Tells the progress listener, if any, that a step of unknown length begins.
fn step(what: &str) {
    crate::progress::start(what, None, crate::progress::Unit::Items);
}

/// A reader's warnings as `path:line: message` lines.
pub fn reader_warnings(s: &Session) -> Vec<String> {
    let path = s.source_path.as_deref().unwrap_or("");
    s.warnings
        .iter()
        .map(|w| match w.line {
            Some(l) => format!("{path}:{l}: {}", w.message),
            None => format!("{path}: {}", w.message),
        })
        .collect()
}
