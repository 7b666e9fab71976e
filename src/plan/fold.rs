//! Folding a long session's older turns while it is read: a relay keeps no turn older than
//! some tens of budgets in any form but its summary's points, so the reader hands such turns
//! here (see `adapter::ReadOptions::fold`) and they are masked, shaped and reduced at once to
//! what the plan needs of them: the summary's candidate points, the brief's findings, and the
//! counts the report gives. A relay then holds the newest turns and a record per older one,
//! whatever the session's size.
//!
//! Nothing changes in what a relay writes: each folded turn is masked, shaped and summarized
//! as it would have been in the whole session (`adapter::FoldWindow` folds only turns whose
//! calls and results pair within what was folded), and when the fit would keep a folded turn
//! in any form, the relay reads the session again in full (`FitReport::needs_full_read`).

use std::sync::{Arc, Mutex};

use super::brief::BriefFound;
use super::fit;
use super::shape::Shaper;
use super::summary::{self, FoldedTurn, LeftOut, PointsWriter};
use crate::adapter::{Adapter, Fold, TurnFold};
use crate::model::{Message, Role};
use crate::redact::{Counts, Redactor};

/// How many budgets of the newest turns a relay's reader keeps as messages, in `reach_tokens`.
/// The bench's sessions, relayed at budgets from 2,000 tokens to 400,000, kept turns of at most
/// 0.82 budgets by that estimate (402 turns of a 100 MB Claude Code session shortened to a
/// line per call, worth 27 budgets of source), Codex sessions at most 0.28. Keeping more
/// costs memory; keeping less, a second read whenever the fit wants the newest folded turn
/// (`FitReport::needs_full_read`), which at 1 budget no bench relay did.
pub const KEEP_BUDGETS: f64 = 1.0;

/// Set to a number of budgets to keep instead of `KEEP_BUDGETS` (the tests fold small
/// sessions with it).
pub const KEEP_ENV: &str = "SESSION_RELAY_FOLD_BUDGETS";

/// What a relay says on standard error when it folded turns and `adapter::PART_READ_ENV` is
/// set (the tests that compare reading in part with reading in full tell by it that a fold
/// was made, and whether its plan was kept).
pub const FOLD_NOTE: &str = "session-relay: folded older turns while reading";

/// What the plan keeps of the folded turns.
pub struct FoldedPart {
    /// The shaper that shaped them, to shape the rest of the session after them.
    pub shaper: Shaper<'static>,
    /// The folded turns, in order: the session's second user turn and on.
    pub turns: Vec<FoldedTurn>,
    /// Their points text, sealed in frames when the fold is taken.
    writer: PointsWriter,
    /// The newest of them as shaped: the fit tells by it whether it would have kept more.
    pub newest: Vec<Message>,
    /// How many of them start with a user message.
    pub user_turns: usize,
    pub brief: BriefFound,
    /// The secrets masked in them by kind; `None` when the relay does not mask.
    pub redactions: Option<Counts>,
}

/// A cheap estimate of what a message costs at least in the shortest form the fit keeps an
/// older turn in but its digest (`OneLine { text: 250 }`): a text cut to 250 characters, a
/// call as one line, no output and no reasoning.
pub fn reach_tokens(m: &Message) -> usize {
    crate::tokens::MESSAGE_OVERHEAD
        + match m.role {
            Role::User | Role::Assistant => m.content.len().min(250) / 4,
            Role::ToolCall => 12 + m.key_arg.as_ref().map_or(0, |k| k.len().min(160) / 4),
            Role::ToolResult | Role::Reasoning | Role::System => return 0,
        }
}

/// A relay's `TurnFold`.
pub struct Folder {
    keep: usize,
    redactor: Option<Arc<Redactor>>,
    part: Mutex<FoldedPart>,
}

impl Folder {
    /// A fold for a relay from `source_agent` to `target` with `budget`, masking with
    /// `redactor`.
    pub fn new(
        source_agent: &str,
        target: &'static dyn Adapter,
        budget: usize,
        redactor: Option<Arc<Redactor>>,
    ) -> Folder {
        let budgets = std::env::var(KEEP_ENV)
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|b| *b >= 0.0)
            .unwrap_or(KEEP_BUDGETS);
        Folder {
            keep: (budget as f64 * budgets) as usize,
            part: Mutex::new(FoldedPart {
                shaper: Shaper::new(source_agent, target),
                turns: Vec::new(),
                writer: PointsWriter::default(),
                newest: Vec::new(),
                user_turns: 0,
                brief: BriefFound::default(),
                redactions: redactor.as_ref().map(|_| Counts::new()),
            }),
            redactor,
        }
    }

    /// For a reader.
    pub fn fold(self: &Arc<Folder>) -> Fold {
        Fold(self.clone())
    }

    /// What was folded; `None` when nothing was.
    pub fn take(&self) -> Option<FoldedPart> {
        let mut part = self.part.lock().unwrap_or_else(|e| e.into_inner());
        if part.turns.is_empty() {
            return None;
        }
        let part = &mut *part;
        part.writer.seal(&mut part.turns);
        let target = part.shaper.target();
        let fresh = FoldedPart {
            shaper: Shaper::new("", target),
            turns: Vec::new(),
            writer: PointsWriter::default(),
            newest: Vec::new(),
            user_turns: 0,
            brief: BriefFound::default(),
            redactions: None,
        };
        Some(std::mem::replace(&mut *part, fresh))
    }
}

impl TurnFold for Folder {
    fn keep_tokens(&self) -> usize {
        self.keep
    }

    fn reach_tokens(&self, m: &Message) -> usize {
        reach_tokens(m)
    }

    fn head(&self, messages: &[Message]) {
        // Masked as the plan will mask them, the counts aside: they are not folded. A copy of
        // the first request and what came before it.
        let mut head = messages.to_vec();
        if let Some(r) = &self.redactor {
            r.messages(&mut head, false);
        }
        let mut part = self.part.lock().unwrap_or_else(|e| e.into_inner());
        part.brief.head(&head);
    }

    fn fold(&self, mut turn: Vec<Message>) {
        let mut part = self.part.lock().unwrap_or_else(|e| e.into_inner());
        let part = &mut *part;
        if let (Some(r), Some(counts)) = (&self.redactor, part.redactions.as_mut()) {
            for m in turn.iter_mut() {
                r.message(m, counts);
            }
        }
        for m in &turn {
            part.brief.add(m);
        }
        let shaped = part.shaper.part(turn, None);
        // The first request is never folded: a turn without a user message is the rest of
        // the first turn, and the first that has one is the session's second.
        let user = shaped.first().is_some_and(|m| m.role == Role::User);
        part.user_turns += usize::from(user);
        let number = 1 + part.user_turns;
        let points = part
            .writer
            .add(&summary::turn_points(&LeftOut::of(number, &shaped)));
        // Grown by a quarter, not doubled: a long session's records are most of what a relay
        // holds of its older turns.
        if part.turns.len() == part.turns.capacity() {
            part.turns.reserve_exact(64.max(part.turns.len() / 4));
        }
        part.turns.push(FoldedTurn {
            number,
            user,
            messages: shaped.len() as u32,
            conversation: fit::conversation(&shaped) as u32,
            source_tokens: shaped.iter().map(fit::source_tokens).sum(),
            first_message_timed: shaped.first().is_some_and(|m| m.timestamp.is_some()),
            first_time: shaped.iter().find_map(|m| m.timestamp.clone()),
            last_time: shaped.iter().rev().find_map(|m| m.timestamp.clone()),
            points,
        });
        if part.writer.full() {
            part.writer.seal(&mut part.turns);
        }
        part.newest = shaped;
    }
}
