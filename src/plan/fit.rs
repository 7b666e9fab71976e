//! Fitting a relay-shaped session into the target's context budget.
//!
//! 1. Always kept: the handoff brief, context a compaction or the agent left before the first
//!    request, the first request, and the last turn (the last user message with everything after
//!    it). When they alone exceed the budget they are shortened in three steps, else the relay
//!    fails with the number of tokens it needs.
//! 2. The turns between, newest first, each in the most faithful form that still fits, and more
//!    compressed the older they are: whole (tool outputs cut to head and tail), then tool calls
//!    as one line each, then long texts trimmed, then a digest of the turn (request, last answer,
//!    one line for its tool calls). A turn is given up only when not even its digest fits; it and
//!    every older turn are then left out.
//! 3. An extractive summary of the turns left out (see `summary`).
//! 4. What is left of the budget makes the kept turns more faithful again, newest first, so that
//!    a session larger than the budget fills it (at least 85% in practice, never more than 100%).
//!
//! Costs are exact counts with the target's tokenizer, taken only for what may be kept; the
//! source's own size is an estimate (characters / 4), as counting what is left out exactly would
//! cost more than it tells.

use foldhash::HashMap;
use std::ops::Range;

use anyhow::{Result, bail};
use serde::Serialize;

use super::calls::one_line;
use super::summary::{self, Candidates, FoldedTurn, LeftOut};
use crate::model::{Message, MessageKind, Role, Session};
use crate::tokens::{MESSAGE_OVERHEAD, Tokenizer};

/// Longest tool output kept whole, in characters, before head/tail trimming.
pub const TOOL_OUTPUT_MAX: usize = 8000;
/// Tighter limit used only when the always-kept layer alone exceeds the budget.
const TOOL_OUTPUT_TIGHT: usize = 1200;
const REQUEST_TIGHT: usize = 4000;
/// The shortest a first request or last user message is cut to (its head keeps two thirds).
const USER_TEXT_FLOOR: usize = 1500;
/// Share of the room for middle turns that whole turns may take before older turns are
/// shortened (beyond the `recent_turns` and `tool_call_keep_recent` minimums).
const WHOLE_SHARE: f64 = 0.5;
/// Share of that room after which even one-line turns get their long texts trimmed.
const ONE_LINE_SHARE: f64 = 0.8;

#[derive(Debug, Clone)]
pub struct FitParams {
    pub budget: usize,
    pub tokenizer: Tokenizer,
    /// The newest turns kept whole whenever the budget allows (a minimum, not a maximum).
    pub recent_turns: usize,
    pub summary_max_tokens: usize,
    /// The newest tool calls kept whole whenever the budget allows (a minimum).
    pub tool_call_keep_recent: usize,
}

/// Turns and messages of the source, and their size in source tokens (estimated).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Part {
    pub turns: usize,
    /// Messages as `list` and `show` count them (`is_conversation`).
    pub messages: usize,
    /// Estimated: characters / 4 plus a few tokens a message, the same for every part.
    pub source_tokens: usize,
    /// Exact, with the target's tokenizer: what this part costs as written (0 when left out).
    pub written_tokens: usize,
}

impl Part {
    fn add(&mut self, o: Part) {
        self.turns += o.turns;
        self.messages += o.messages;
        self.source_tokens += o.source_tokens;
        self.written_tokens += o.written_tokens;
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FitReport {
    pub tokenizer: String,
    pub budget: usize,
    /// The whole source after shaping: `verbatim + shortened + summarized + left_out`.
    pub source: Part,
    /// Kept as they were (tool outputs longer than `TOOL_OUTPUT_MAX` characters cut).
    pub verbatim: Part,
    /// Kept in a shorter form: tool calls as one line, long texts trimmed, or a digest.
    pub shortened: Part,
    /// Left out, with at least one point in the summary.
    pub summarized: Part,
    /// Left out without a point in the summary.
    pub left_out: Part,
    /// Exact token counts of what is written: brief + kept turns + summary = total.
    pub brief_tokens: usize,
    pub kept_tokens: usize,
    pub summary_tokens: usize,
    pub total_tokens: usize,
    /// Points the summary could have made, and how many it made.
    pub summary_points: usize,
    pub summary_points_kept: usize,
    /// Tool calls in the kept turns: whole, or as one line.
    pub tool_calls_whole: usize,
    pub tool_calls_one_line: usize,
    pub tool_outputs_trimmed: usize,
    pub tool_output_chars_cut: usize,
    /// The always-kept layer had to be shortened to fit.
    pub degraded: bool,
    /// A turn the reader read only in part (its tool outputs cut, see `ReadOptions`) was
    /// chosen whole: the session must be read further back and fitted again.
    #[serde(skip)]
    pub needs_full_read: bool,
}

/// The cost of one message in the target's context. Reasoning never reaches the target model
/// (Codex gets it as UI events only; Claude Code not at all).
pub fn cost(tok: Tokenizer, m: &Message) -> usize {
    if m.role == Role::Reasoning {
        0
    } else {
        tok.message(m)
    }
}

/// Whether a shaped message is one the source counts among its messages (`list`, `show`): the
/// user's and the assistant's words, not a tool call the shaping turned into text.
pub fn is_conversation(m: &Message) -> bool {
    matches!(m.role, Role::User | Role::Assistant) && !m.is(MessageKind::ToolTranscript)
}

/// How many of `msgs` are messages (`is_conversation`).
pub fn conversation(msgs: &[Message]) -> usize {
    msgs.iter().filter(|m| is_conversation(m)).count()
}

/// The source-side size of a message: an estimate, cheap enough for any session, of the
/// message as the source held it (before any output was cut while reading).
pub fn source_tokens(m: &Message) -> usize {
    let input = m.tool_input.as_ref().map_or(0, |i| match i {
        serde_json::Value::String(s) if *s == m.content => 0,
        serde_json::Value::String(s) => s.len(),
        other => json_len(other),
    });
    // An output cut while reading counts at its length before the cut (`Message::output_chars`)
    // or its bytes, the larger; an output read whole at its bytes, never fewer than its
    // characters, which are not counted then: `show` would count every output of a session.
    let content = match m.state().and_then(|s| s.source_chars) {
        Some(n) => n,
        None => match m.original_chars() {
            Some(n) if m.role == Role::ToolResult => n.max(m.content.len()),
            _ => m.content.len(),
        },
    };
    (content + input).div_ceil(4) + MESSAGE_OVERHEAD
}

/// The length of a value's compact JSON text (as `to_string` writes it), without writing it
/// anywhere: a long session has a tool input for every call.
fn json_len(v: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // Writing to a counter cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}

/// How one turn is carried, from the most faithful to the shortest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Form {
    /// Tool calls whole, their outputs cut to `output` characters; texts whole.
    Whole { output: usize },
    /// Tool calls as one line each; texts cut to `text` characters.
    OneLine { text: usize },
    /// The request and the last answer cut to `text` characters, one line for all tool calls.
    Digest { text: usize },
}

const WHOLE: usize = usize::MAX;

/// Every form, most faithful first. The fill and the fit step through it.
const LADDER: &[Form] = &[
    Form::Whole {
        output: TOOL_OUTPUT_MAX,
    },
    Form::Whole { output: 4000 },
    Form::Whole { output: 2000 },
    Form::Whole { output: 1000 },
    Form::Whole { output: 500 },
    Form::OneLine { text: WHOLE },
    Form::OneLine { text: 4000 },
    Form::OneLine { text: 2000 },
    Form::OneLine { text: 1000 },
    Form::OneLine { text: 500 },
    Form::OneLine { text: 250 },
    Form::Digest { text: 600 },
    Form::Digest { text: 300 },
    Form::Digest { text: 150 },
    Form::Digest { text: 60 },
];
const ONE_LINE_START: usize = 5;
const TRIMMED_START: usize = 8;

#[derive(Debug, Clone)]
struct Turn {
    range: Range<usize>,
    /// Starts with a user message (else: context before the first request).
    user: bool,
}

fn segment(msgs: &[Message]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if m.role == Role::User || turns.is_empty() {
            turns.push(Turn {
                range: i..i + 1,
                user: m.role == Role::User,
            });
        } else if let Some(t) = turns.last_mut() {
            t.range.end = i + 1;
        }
    }
    turns
}

/// Tool-call bookkeeping for one rendered turn.
#[derive(Debug, Default, Clone, Copy)]
struct ToolStats {
    whole: usize,
    one_line: usize,
    trimmed: usize,
    chars_cut: usize,
}

impl ToolStats {
    fn add(&mut self, o: ToolStats) {
        self.whole += o.whole;
        self.one_line += o.one_line;
        self.trimmed += o.trimmed;
        self.chars_cut += o.chars_cut;
    }
}

/// Whether a message is a tool call in either travelling form (structured, or as text).
fn is_call(m: &Message) -> bool {
    m.role == Role::ToolCall || m.is(MessageKind::ToolTranscript)
}

/// Whether a message is a tool output in either travelling form (a result, or a call and its
/// result as text): what the Whole forms cut.
fn is_output(m: &Message) -> bool {
    m.role == Role::ToolResult || m.is(MessageKind::ToolTranscript)
}

/// A turn's messages in a form. Structured calls and their results change together, so no
/// call is ever separated from its result.
fn render(msgs: &[Message], form: Form) -> (Vec<Message>, ToolStats) {
    let (out, stats) = render_parts(msgs, form);
    let out = out
        .into_iter()
        .map(|r| match r {
            Rendered::Same(i) => msgs[i].clone(),
            Rendered::New(m) => *m,
        })
        .collect();
    (out, stats)
}

/// A message of a rendered turn: one of the turn's messages as it is (its index), or a new one.
enum Rendered {
    Same(usize),
    New(Box<Message>),
}

/// `render`, without copying the messages that stay as they are: what a turn costs in a form
/// is mostly the cost of messages that every Whole form, and most others, leave alone.
fn render_parts(msgs: &[Message], form: Form) -> (Vec<Rendered>, ToolStats) {
    match form {
        Form::Whole { output } => render_whole(msgs, output),
        Form::OneLine { text } => render_one_line(msgs, text),
        Form::Digest { text } => render_digest(msgs, text),
    }
}

/// Message `i` with its text cut to `max` characters, or as it is when it is not longer.
fn cut(msgs: &[Message], i: usize, max: usize) -> Rendered {
    let m = &msgs[i];
    if max != WHOLE && m.content.chars().count() > max {
        let mut c = m.clone();
        c.content = m.cut_content(max).into_owned();
        Rendered::New(Box::new(c))
    } else {
        Rendered::Same(i)
    }
}

/// `Form::Whole`: every message kept, tool outputs cut to `output` characters. An output the
/// reader cut already counts as trimmed all the same.
fn render_whole(msgs: &[Message], output: usize) -> (Vec<Rendered>, ToolStats) {
    let mut stats = ToolStats::default();
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if is_call(m) {
            stats.whole += 1;
        }
        if !is_output(m) {
            out.push(Rendered::Same(i));
            continue;
        }
        let len = m.content.chars().count();
        let original = m.output_chars();
        if len > output {
            stats.trimmed += 1;
            stats.chars_cut += original - output;
            out.push(cut(msgs, i, output));
        } else {
            if original > len {
                // Already cut to this size while reading.
                stats.trimmed += 1;
                stats.chars_cut += original - len;
            }
            out.push(Rendered::Same(i));
        }
    }
    (out, stats)
}

/// `Form::OneLine`: each tool call and its result as one line, reasoning left out, the other
/// texts cut to `text` characters.
fn render_one_line(msgs: &[Message], text: usize) -> (Vec<Rendered>, ToolStats) {
    let mut stats = ToolStats::default();
    let result_of: HashMap<&str, usize> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::ToolResult)
        .filter_map(|(i, m)| m.tool_call_id.as_deref().map(|id| (id, i)))
        .collect();
    let call_result = |m: &Message| {
        m.tool_call_id
            .as_deref()
            .filter(|_| m.role == Role::ToolCall)
            .and_then(|id| result_of.get(id).copied())
    };
    let mut out = Vec::new();
    let mut answered: Vec<bool> = vec![false; msgs.len()];
    for (i, m) in msgs.iter().enumerate() {
        if answered[i] || m.role == Role::Reasoning {
            continue;
        }
        if is_call(m) {
            stats.one_line += 1;
            let result = call_result(m);
            if let Some(r) = result {
                answered[r] = true;
            }
            out.push(Rendered::New(Box::new(oneline_message(
                m,
                result.map(|r| &msgs[r]),
            ))));
        } else if m.role == Role::ToolResult {
            out.push(Rendered::New(Box::new(result_line(m))));
        } else {
            out.push(cut(msgs, i, text));
        }
    }
    (out, stats)
}

/// A result whose call is in another turn: one line, like its call would be.
fn result_line(m: &Message) -> Message {
    Message::new(
        Role::Assistant,
        format!(
            "[tool result: {}, {} chars of output]",
            if m.is_error { "error" } else { "ok" },
            m.output_chars()
        ),
    )
    .with_time(m.timestamp.clone())
    .with_kind(MessageKind::ToolOneline)
}

/// `Form::Digest`: the request and the last answer cut to `text` characters, and between them
/// one line for all the turn's tool calls.
fn render_digest(msgs: &[Message], text: usize) -> (Vec<Rendered>, ToolStats) {
    let mut stats = ToolStats::default();
    let mut out = Vec::new();
    let calls = msgs.iter().filter(|m| is_call(m)).count();
    stats.one_line += calls;
    if let Some(u) = msgs.iter().position(|m| m.role == Role::User) {
        out.push(cut(msgs, u, text));
    }
    if calls > 0 {
        out.push(Rendered::New(Box::new(calls_digest(msgs, calls))));
    }
    if let Some(a) = msgs
        .iter()
        .rposition(|m| m.role == Role::Assistant && m.kind.is_none())
    {
        out.push(cut(msgs, a, text));
    }
    (out, stats)
}

/// The one line a digest gives a turn's `calls` tool calls: how many of each tool, and how
/// many failed.
fn calls_digest(msgs: &[Message], calls: usize) -> Message {
    let failed = msgs
        .iter()
        .filter(|m| {
            (m.role == Role::ToolResult && m.is_error)
                || (m.is(MessageKind::ToolTranscript) && m.state().is_some_and(|s| s.failed))
        })
        .count();
    let mut names: Vec<(String, usize)> = Vec::new();
    for m in msgs.iter().filter(|m| is_call(m)) {
        let name = m.tool_name.clone().unwrap_or_else(|| {
            m.content
                .strip_prefix("[tool call: ")
                .and_then(|r| r.split(']').next())
                .unwrap_or("?")
                .to_string()
        });
        match names.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => names.push((name, 1)),
        }
    }
    let list: Vec<String> = names.iter().map(|(n, c)| format!("{n} x{c}")).collect();
    let time = msgs
        .iter()
        .find(|m| is_call(m))
        .and_then(|m| m.timestamp.clone());
    Message::new(
        Role::Assistant,
        format!(
            "[{calls} tool calls: {}{}]",
            list.join(", "),
            if failed > 0 {
                format!("; {failed} failed")
            } else {
                String::new()
            }
        ),
    )
    .with_time(time)
    .with_kind(MessageKind::ToolDigest)
}

/// A call (structured or a text transcript) and its result as one line.
fn oneline_message(m: &Message, result: Option<&Message>) -> Message {
    let line = match m.role {
        Role::ToolCall => one_line(m, result),
        _ => m
            .state()
            .and_then(|s| s.oneline.clone())
            .unwrap_or_else(|| m.cut_content(200).into_owned()),
    };
    Message::new(Role::Assistant, line)
        .with_time(m.timestamp.clone())
        .with_kind(MessageKind::ToolOneline)
}

/// The middle turns' forms and what they cost, with a cache: the fit tries several forms of
/// the same turns.
struct Costs<'a> {
    tok: Tokenizer,
    msgs: &'a [Message],
    cache: HashMap<(usize, usize, Form), usize>,
    /// The cost of each message that some form keeps as it is, by its index in `msgs`.
    same: Vec<Option<usize>>,
    /// Each message's `source_tokens`, by its index in `msgs`.
    source: &'a [usize],
}

impl<'a> Costs<'a> {
    fn new(tok: Tokenizer, msgs: &'a [Message], source: &'a [usize]) -> Costs<'a> {
        Costs {
            tok,
            msgs,
            cache: HashMap::default(),
            same: vec![None; msgs.len()],
            source,
        }
    }

    fn of(&mut self, r: &Range<usize>, form: Form) -> usize {
        let key = (r.start, r.end, form);
        if let Some(&c) = self.cache.get(&key) {
            return c;
        }
        let (tok, msgs, same) = (self.tok, self.msgs, &mut self.same);
        let c = form_cost(tok, &msgs[r.clone()], form, |i| {
            let i = r.start + i;
            *same[i].get_or_insert_with(|| cost(tok, &msgs[i]))
        });
        self.cache.insert(key, c);
        c
    }

    /// Counts ahead, on every core, the messages of the newest middle turns (about twice the
    /// room's worth, by `source_tokens`) that a form could keep as they are: the fit costs turns
    /// one at a time, newest first, and counting is most of its time. Older turns are counted
    /// when the fit reaches them; the counts are the same either way.
    fn count_newest(&mut self, middle: &[Range<usize>], room: usize) {
        use rayon::prelude::*;
        let mut ahead = Vec::new();
        let mut estimate = 0usize;
        for r in middle.iter().rev() {
            if estimate > room.saturating_mul(2) {
                break;
            }
            for i in r.clone() {
                let m = &self.msgs[i];
                estimate += self.source[i];
                // Reasoning costs nothing, and an output longer than any form keeps is cut.
                if m.role != Role::Reasoning
                    && !(is_output(m) && m.content.chars().count() > TOOL_OUTPUT_MAX)
                {
                    ahead.push(i);
                }
            }
        }
        let tok = self.tok;
        let msgs = self.msgs;
        let counted: Vec<(usize, usize)> = ahead
            .par_iter()
            .map(|&i| (i, cost(tok, &msgs[i])))
            .collect();
        for (i, c) in counted {
            self.same[i] = Some(c);
        }
    }

    fn exact(&self, msgs: &[Message]) -> usize {
        msgs.iter().map(|m| cost(self.tok, m)).sum()
    }
}

/// What the turn of `msgs` costs in `form`; `same(i)` is the cost of its message `i`, which
/// the form keeps as it is.
fn form_cost(
    tok: Tokenizer,
    msgs: &[Message],
    form: Form,
    mut same: impl FnMut(usize) -> usize,
) -> usize {
    let (rendered, _) = render_parts(msgs, form);
    let mut c = 0;
    for m in &rendered {
        c += match m {
            Rendered::Same(i) => same(*i),
            Rendered::New(m) => cost(tok, m),
        };
    }
    if matches!(form, Form::Whole { .. }) {
        // A turn read in part costs whole at most this much less than read in full (see
        // `text::reduced_output`): choosing it whole then reads it in full.
        c = c.saturating_sub(reduced_outputs(msgs) * REDUCED_SLACK);
    }
    c
}

/// How many tokens an output read in part may cost, in a whole form of its turn, more than
/// the same output read in full: the reduced cut is a head and tail of the fit's own cuts (or
/// of the whole), so it adds at most its marker (8 or 9 tokens with o200k) and a token or two
/// where it splits a word at each end (see `text::reduced_output`). A whole form of a turn
/// read in part is costed so much lower, with a margin, so that the fit never turns down
/// whole a turn it would keep whole read in full.
const REDUCED_SLACK: usize = 24;

/// Whether a form (an index into `LADDER`) keeps its turn whole.
fn is_whole(form: Option<usize>) -> bool {
    matches!(form, Some(at) if matches!(LADDER[at], Form::Whole { .. }))
}

/// How many of these messages a reader read only in part (see `ReadOptions`).
fn reduced_outputs(msgs: &[Message]) -> usize {
    msgs.iter().filter(|m| m.is_reduced()).count()
}

fn has_reduced(msgs: &[Message]) -> bool {
    reduced_outputs(msgs) > 0
}

/// Where the middle turns stand: each either kept in a form (an index into `LADDER`) or left out.
struct Selection {
    forms: Vec<Option<usize>>,
    used: usize,
    /// Every turn it considered was kept: an older one might have been too.
    reached_oldest: bool,
}

impl Selection {
    /// Layer 4: spends `left` tokens on the kept turns, newest first, each in the most faithful
    /// form that what is left still pays for.
    fn fill(&mut self, middle: &[Range<usize>], costs: &mut Costs, mut left: usize) {
        for i in (0..middle.len()).rev() {
            let Some(at) = self.forms[i] else { continue };
            if at == 0 || left == 0 {
                continue;
            }
            let now = costs.of(&middle[i], LADDER[at]);
            if let Some(better) = (0..at).find(|&j| costs.of(&middle[i], LADDER[j]) <= now + left) {
                let c = costs.of(&middle[i], LADDER[better]);
                left = now + left - c;
                self.used = self.used + c - now;
                self.forms[i] = Some(better);
            }
        }
    }
}

/// Fits `shaped` (whose first message is the relay preamble) to the budget, putting `brief_text`
/// first. Errors when even the always-kept layer cannot fit.
pub fn fit(shaped: Session, brief_text: String, p: &FitParams) -> Result<(Session, FitReport)> {
    fit_folded(shaped, brief_text, p, &[], &[])
}

/// `fit`, with the turns a relay's reader folded (see `fold`), which came right after the
/// first user turn, the newest of them also as its shaped messages: the fit never keeps them,
/// and when it would keep the newest, it says the session must be read again in full
/// (`FitReport::needs_full_read`).
pub fn fit_folded(
    mut shaped: Session,
    brief_text: String,
    p: &FitParams,
    folded: &[FoldedTurn],
    newest_folded: &[Message],
) -> Result<(Session, FitReport)> {
    // The rest of the first turn, shaped to nothing (an empty answer, a dropped line): a full
    // read has no such middle turn (see `Layout::of`), so neither has the fit.
    let folded = match folded.first() {
        Some(t) if !t.user && t.messages == 0 => &folded[1..],
        _ => folded,
    };
    let mut report = FitReport {
        tokenizer: p.tokenizer.name().into(),
        budget: p.budget,
        ..Default::default()
    };
    // The session is taken, not copied: its messages are the bulk of what a relay holds. The
    // first is the preamble, which the brief replaces (and a long session is not shifted
    // down by one to take it out).
    let mut all: Vec<Message> = std::mem::take(&mut shaped.messages);
    let preamble_time = all.first_mut().and_then(|m| m.timestamp.take());
    let msgs: &[Message] = all.get(1..).unwrap_or_default();
    let brief_msg = Message::new(Role::System, brief_text)
        .with_time(preamble_time)
        .with_kind(MessageKind::HandoffBrief);
    report.brief_tokens = cost(p.tokenizer, &brief_msg);

    // Layer 1: the always-kept messages, shortened when they alone exceed the budget.
    let layout = Layout::of(msgs);
    let (fixed_msgs, fixed) = always_kept(msgs, &layout, p, report.brief_tokens)?;
    report.degraded = fixed_msgs.shortened();

    // Layers 2 and 3: the middle turns, newest first, and the summary of what is left out.
    let room = p.budget - fixed;
    // Each message's source size, found once on every core: the estimates below and the
    // report's parts add them up over the whole session.
    let source: Vec<usize> = {
        use rayon::prelude::*;
        msgs.par_iter().map(source_tokens).collect()
    };
    let mut costs = Costs::new(p.tokenizer, msgs, &source);
    costs.count_newest(&layout.middle, room);
    let middle = Middle {
        msgs,
        source: &source,
        ranges: &layout.middle,
        numbers: layout.turn_numbers(folded.iter().filter(|t| t.user).count()),
        fold_at: layout.fold_at,
        folded,
        newest_folded,
    };
    let mut chosen = middle.choose(&mut costs, room, p);
    // Layer 4: fill what is left by making kept turns more faithful, newest first.
    let summary = chosen.summary.as_ref();
    let summary_tokens = summary.map_or(0, |s| s.tokens);
    chosen.sel.fill(
        middle.ranges,
        &mut costs,
        room - chosen.sel.used - summary_tokens,
    );

    // Assemble: brief, context and first request, summary, kept turns, last turn.
    let mut out = shaped;
    out.messages = vec![brief_msg];
    let (head, tail) = fixed_msgs.split();
    out.messages.extend(head);
    if let Some(s) = summary {
        out.messages.push(s.message.clone());
    }
    let mut tally = Tally::default();
    middle.write_kept(&chosen.sel, &mut costs, &mut tally, &mut out.messages);
    out.messages.extend(tail);
    fixed_msgs.tally(
        layout.always_kept_turns(),
        msgs,
        &source,
        &costs,
        &mut tally,
    );
    middle.tally_left_out(&chosen.sel, summary, &mut tally);
    report.needs_full_read = chosen.chose_reduced_whole
        || fixed_msgs.has_reduced(msgs)
        || middle.keeps_reduced_whole(&chosen.sel)
        || chosen.reached_fold;
    report.add_up(&tally, summary);
    // A plan to be made again from a full read costed turns read in part lower (see
    // `REDUCED_SLACK`); it is never written.
    debug_assert!(report.needs_full_read || report.total_tokens == costs.exact(&out.messages));
    // Freeing tens of thousands of messages one by one is a few percent of a long relay, and
    // nothing waits for it.
    std::thread::spawn(move || drop(all));
    Ok((out, report))
}

/// Where each turn of the session (the preamble taken out) stands: in the always-kept layer
/// (context, first request, last turn) or among the middle turns the fit weighs.
struct Layout {
    turns: Vec<Turn>,
    first_user: Option<usize>,
    /// The last turn, always kept whole; a session whose only turn is the first request keeps
    /// that turn as its last.
    last: Option<usize>,
    /// Context a compaction or the agent left before the first request.
    context: Option<Range<usize>>,
    /// User turns after the first and before the last, plus the rest of the first turn (after
    /// its request) when it is not also the last.
    middle: Vec<Range<usize>>,
    /// Middle turns older than this one were folded, or are older than those (the rest of the
    /// first turn).
    fold_at: usize,
}

impl Layout {
    fn of(msgs: &[Message]) -> Layout {
        let turns = segment(msgs);
        let n = turns.len();
        let first_user = turns.iter().position(|t| t.user);
        let last = turns.iter().rposition(|t| t.user);
        let context = turns.first().filter(|t| !t.user).map(|t| t.range.clone());
        let mut middle: Vec<Range<usize>> = Vec::new();
        let mut fold_at = 0;
        if let Some(f) = first_user
            && Some(f) != last
        {
            let r = turns[f].range.clone();
            if r.len() > 1 {
                middle.push(r.start + 1..r.end);
                fold_at = 1;
            }
            for t in turns.iter().take(last.unwrap_or(n)).skip(f + 1) {
                middle.push(t.range.clone());
            }
        }
        Layout {
            turns,
            first_user,
            last,
            context,
            middle,
            fold_at,
        }
    }

    /// The user turns the always-kept layer holds: the first, and the last when it is another.
    fn always_kept_turns(&self) -> usize {
        usize::from(self.first_user.is_some())
            + usize::from(self.last.is_some() && self.last != self.first_user)
    }

    /// The number of each middle turn among the session's user turns (1 = the first request),
    /// `folded` turns having come after the first.
    fn turn_numbers(&self, folded: usize) -> Vec<usize> {
        let turns = &self.turns;
        let mut number_of: HashMap<usize, usize> = HashMap::default();
        let mut n = 0;
        for t in turns {
            if t.user {
                n += 1;
                number_of.insert(t.range.start, if n > 1 { n + folded } else { n });
            }
        }
        let first_start = self.first_user.map(|f| turns[f].range.start);
        self.middle
            .iter()
            .map(|r| match number_of.get(&r.start) {
                Some(&k) => k,
                // The rest of the first turn, after its request.
                None if first_start.is_some_and(|s| r.start == s + 1) => 1,
                None => 0,
            })
            .collect()
    }
}

/// Layer 1: the always-kept messages, shortened step by step while they alone exceed the budget,
/// and what they cost with the brief. Errors, with the tokens they need, when even the shortest
/// do not fit.
fn always_kept(
    msgs: &[Message],
    layout: &Layout,
    p: &FitParams,
    brief_tokens: usize,
) -> Result<(Fixed, usize)> {
    let mut fixed_msgs = fixed_layer(
        msgs,
        layout.context.clone(),
        &layout.turns,
        layout.first_user,
        layout.last,
    );
    let fixed_count = |m: &[Message]| m.iter().map(|x| cost(p.tokenizer, x)).sum::<usize>();
    let mut fixed = fixed_count(&fixed_msgs.all()) + brief_tokens;
    let mut step = 0;
    while fixed > p.budget && step < 3 {
        let room = p.budget.saturating_sub(brief_tokens);
        fixed_msgs.degrade(step, msgs, &|m: &[Message]| fixed_count(m) <= room);
        step += 1;
        fixed = fixed_count(&fixed_msgs.all()) + brief_tokens;
    }
    if fixed > p.budget {
        bail!(
            "the budget of {} tokens is too small: the handoff brief, the first request and the last \
             user message with what follows need {} tokens even when shortened. Use a larger --budget.",
            crate::text::thousands(p.budget as u64),
            crate::text::thousands(fixed as u64)
        );
    }
    Ok((fixed_msgs, fixed))
}

/// The source side of the messages in `range`, `turns` of the user's turns: how many messages
/// the source counts there, and their estimated size (`source` holds each message's).
fn source_part(msgs: &[Message], source: &[usize], range: &Range<usize>, turns: usize) -> Part {
    Part {
        turns,
        messages: conversation(&msgs[range.clone()]),
        source_tokens: source[range.clone()].iter().sum::<usize>(),
        written_tokens: 0,
    }
}

/// The middle turns as layers 2 and 3 weigh them, and the turns the reader folded, which stand
/// among them (before `fold_at`) and are never kept.
struct Middle<'a> {
    msgs: &'a [Message],
    /// Each message's `source_tokens`, by its index in `msgs`.
    source: &'a [usize],
    ranges: &'a [Range<usize>],
    /// Each middle turn's number among the session's user turns (`Layout::turn_numbers`).
    numbers: Vec<usize>,
    fold_at: usize,
    folded: &'a [FoldedTurn],
    /// The newest folded turn's messages, as shaped.
    newest_folded: &'a [Message],
}

/// What layers 2 and 3 chose.
struct Chosen {
    sel: Selection,
    summary: Option<Summary>,
    /// A turn read in part chosen whole in any round: the rounds that follow depend on it (the
    /// summary's reserve), so the whole fit must be made again from a full read.
    chose_reduced_whole: bool,
    /// The fit would keep a folded turn in some form, in any round.
    reached_fold: bool,
}

/// What the fit kept and left out of the source, added up while the relay is assembled.
#[derive(Default)]
struct Tally {
    verbatim: Part,
    shortened: Part,
    summarized: Part,
    left_out: Part,
    tools: ToolStats,
}

impl<'a> Middle<'a> {
    /// Layers 2 and 3 within `room`: the turns to keep and the summary of the others. Room for
    /// the summary is set aside first, unless the whole middle may fit; a summary smaller than
    /// what was set aside leaves room, so the turns are chosen again with it (three rounds at
    /// most).
    fn choose(&self, costs: &mut Costs, room: usize, p: &FitParams) -> Chosen {
        let estimate: usize = (self.ranges.iter())
            .map(|r| self.source[r.clone()].iter().sum::<usize>())
            .sum::<usize>()
            + self.folded.iter().map(|t| t.source_tokens).sum::<usize>();
        let mut reserve = if estimate <= room {
            0
        } else {
            p.summary_max_tokens.min(room / 4)
        };
        let mut candidates = Candidates::default();
        let mut chose_reduced_whole = false;
        let mut reached_fold = false;
        let beyond = Some(self.newest_folded).filter(|_| !self.folded.is_empty());
        let oldest = if self.folded.is_empty() {
            0
        } else {
            self.fold_at
        };
        let mut round = 0;
        loop {
            let sel = choose(
                self.ranges,
                oldest,
                beyond,
                costs,
                room.saturating_sub(reserve),
                p,
            );
            reached_fold |= !self.folded.is_empty() && sel.reached_oldest;
            chose_reduced_whole |= self.keeps_reduced_whole(&sel);
            let left = self.left_out(&sel);
            let summary = if left.is_empty() {
                None
            } else {
                let cap = p.summary_max_tokens.min(room - sel.used);
                summarize(&left, cap, p.tokenizer, &mut candidates)
            };
            let s = summary.as_ref().map_or(0, |x| x.tokens);
            round += 1;
            if left.is_empty() || round >= 3 || s + 8 >= reserve {
                return Chosen {
                    sel,
                    summary,
                    chose_reduced_whole,
                    reached_fold,
                };
            }
            reserve = s;
        }
    }

    /// The turns `sel` leaves out, in order (keyed for `Candidates`): the middle turns not
    /// chosen, with the folded turns in their place.
    fn left_out(&self, sel: &Selection) -> Vec<(usize, LeftOut<'a>)> {
        let mut left: Vec<(usize, LeftOut)> = (0..self.ranges.len())
            .filter(|&i| sel.forms[i].is_none())
            .map(|i| {
                (
                    i,
                    LeftOut::of(self.numbers[i], &self.msgs[self.ranges[i].clone()]),
                )
            })
            .collect();
        let folded_at = left.partition_point(|(i, _)| *i < self.fold_at);
        left.splice(
            folded_at..folded_at,
            (self.folded.iter().enumerate())
                .map(|(j, t)| (self.ranges.len() + j, LeftOut::folded(t.number, t))),
        );
        left
    }

    /// Whether `sel` keeps whole a turn the reader read only in part.
    fn keeps_reduced_whole(&self, sel: &Selection) -> bool {
        (self.ranges.iter())
            .zip(&sel.forms)
            .any(|(r, f)| is_whole(*f) && has_reduced(&self.msgs[r.clone()]))
    }

    /// A middle turn's source side (one of the user's turns when it starts with a request).
    fn source_part(&self, r: &Range<usize>) -> Part {
        let user = self.msgs[r.start].role == Role::User;
        source_part(self.msgs, self.source, r, usize::from(user))
    }

    /// Writes the kept turns to `out`, each in its chosen form, and tallies them.
    fn write_kept(
        &self,
        sel: &Selection,
        costs: &mut Costs,
        tally: &mut Tally,
        out: &mut Vec<Message>,
    ) {
        for (i, r) in self.ranges.iter().enumerate() {
            let Some(at) = sel.forms[i] else { continue };
            let (rendered, stats) = render(&self.msgs[r.clone()], LADDER[at]);
            tally.tools.add(stats);
            let mut part = self.source_part(r);
            // Costed already, when the turn's form was chosen.
            part.written_tokens = costs.of(r, LADDER[at]);
            if at == 0 {
                tally.verbatim.add(part);
            } else {
                tally.shortened.add(part);
            }
            out.extend(rendered);
        }
    }

    /// Tallies the turns left out, the folded ones with them: summarized when the summary
    /// makes a point of them.
    fn tally_left_out(&self, sel: &Selection, summary: Option<&Summary>, tally: &mut Tally) {
        let with_point: std::collections::HashSet<usize> = summary
            .map(|s| s.turns.iter().copied().collect())
            .unwrap_or_default();
        let mut add = |number: usize, part: Part| {
            if with_point.contains(&number) {
                tally.summarized.add(part);
            } else {
                tally.left_out.add(part);
            }
        };
        for (i, r) in self.ranges.iter().enumerate() {
            if sel.forms[i].is_none() {
                add(self.numbers[i], self.source_part(r));
            }
        }
        for t in self.folded {
            let part = Part {
                turns: usize::from(t.user),
                messages: t.conversation as usize,
                source_tokens: t.source_tokens,
                written_tokens: 0,
            };
            add(t.number, part);
        }
    }
}

impl FitReport {
    /// The report's parts and totals, from what the fit kept and left out.
    fn add_up(&mut self, t: &Tally, summary: Option<&Summary>) {
        self.verbatim = t.verbatim;
        self.shortened = t.shortened;
        self.summarized = t.summarized;
        self.left_out = t.left_out;
        let mut source = Part::default();
        for part in [t.verbatim, t.shortened, t.summarized, t.left_out] {
            source.add(part);
        }
        source.written_tokens = 0;
        self.source = source;
        self.kept_tokens = t.verbatim.written_tokens + t.shortened.written_tokens;
        self.summary_tokens = summary.map_or(0, |s| s.tokens);
        self.summary_points = summary.map_or(0, |s| s.points);
        self.summary_points_kept = summary.map_or(0, |s| s.turns.len());
        self.tool_calls_whole = t.tools.whole;
        self.tool_calls_one_line = t.tools.one_line;
        self.tool_outputs_trimmed = t.tools.trimmed;
        self.tool_output_chars_cut = t.tools.chars_cut;
        self.total_tokens = self.brief_tokens + self.kept_tokens + self.summary_tokens;
    }
}

/// Layer 2: each middle turn from `oldest` on, newest first, in the most faithful form its age
/// allows that fits `room`; the first turn that fits in no form ends it.
/// `beyond`: the turn before `oldest`, when it was folded (its messages as shaped): whether
/// the fit would keep it in some form is `Selection::reached_oldest`.
fn choose(
    middle: &[Range<usize>],
    oldest: usize,
    beyond: Option<&[Message]>,
    costs: &mut Costs,
    room: usize,
    p: &FitParams,
) -> Selection {
    let mut forms = vec![None; middle.len()];
    let mut used = 0;
    let mut whole_turns = 0;
    let mut whole_calls = 0;
    let mut reached_oldest = true;
    // The first form a turn may take, by how much is used and how many were kept whole.
    let first_form = |calls: usize, used: usize, whole_turns: usize, whole_calls: usize| {
        let recent = whole_turns + 1 < p.recent_turns
            || whole_calls + calls <= p.tool_call_keep_recent
            || (used as f64) < WHOLE_SHARE * room as f64;
        if recent {
            0
        } else if (used as f64) < ONE_LINE_SHARE * room as f64 {
            ONE_LINE_START
        } else {
            TRIMMED_START
        }
    };
    for i in (oldest..middle.len()).rev() {
        let r = &middle[i];
        let calls = costs.msgs[r.clone()].iter().filter(|m| is_call(m)).count();
        let start = first_form(calls, used, whole_turns, whole_calls);
        let fits = (start..LADDER.len()).find(|&j| used + costs.of(r, LADDER[j]) <= room);
        match fits {
            Some(j) => {
                used += costs.of(r, LADDER[j]);
                forms[i] = Some(j);
                if matches!(LADDER[j], Form::Whole { .. }) {
                    whole_turns += 1;
                    whole_calls += calls;
                }
            }
            None => {
                reached_oldest = false;
                break;
            }
        }
    }
    if reached_oldest && let Some(msgs) = beyond {
        let calls = msgs.iter().filter(|m| is_call(m)).count();
        let start = first_form(calls, used, whole_turns, whole_calls);
        let tok = costs.tok;
        reached_oldest = (start..LADDER.len())
            .any(|j| used + form_cost(tok, msgs, LADDER[j], |i| cost(tok, &msgs[i])) <= room);
    }
    Selection {
        forms,
        used,
        reached_oldest,
    }
}

/// Layer 3's summary of the turns left out.
struct Summary {
    message: Message,
    tokens: usize,
    /// The points it could have made.
    points: usize,
    /// The numbers of the turns it makes a point of.
    turns: Vec<usize>,
}

/// Layer 3: the summary of the turns left out, within `cap` tokens. `known` keeps each turn's
/// candidate points for the next summary of the same relay.
fn summarize(
    keyed: &[(usize, LeftOut)],
    cap: usize,
    tok: Tokenizer,
    known: &mut Candidates,
) -> Option<Summary> {
    let (points, costs) = known.points(keyed, tok);
    let left: Vec<LeftOut> = keyed.iter().map(|(_, t)| *t).collect();
    let time = left
        .iter()
        .find_map(LeftOut::first_message_time)
        .flatten()
        .cloned();
    let mut chosen = summary::select(&points, &costs, cap, tok);
    loop {
        if chosen.is_empty() {
            return None;
        }
        let text = summary::summary_text(&left, &points, &chosen);
        let m = Message::new(Role::System, text)
            .with_time(time.clone())
            .with_kind(MessageKind::RelaySummary);
        let c = cost(tok, &m);
        if c <= cap {
            let turns = chosen.iter().map(|&i| points[i].turn()).collect();
            return Some(Summary {
                message: m,
                tokens: c,
                points: points.len(),
                turns,
            });
        }
        // Counted in one piece the text costs a little more than its lines did: drop the last
        // point of the least important kind until it fits.
        let worst = (0..chosen.len())
            .max_by_key(|&k| (points[chosen[k]].kind(), k))
            .unwrap_or(0);
        chosen.remove(worst);
    }
}

/// The always-kept layer: context before the first request, the first request, and the last
/// turn, with the degradation steps that shorten them.
struct Fixed {
    context: Vec<Message>,
    context_range: Option<Range<usize>>,
    request: Vec<Message>,
    request_range: Option<Range<usize>>,
    last: Vec<Message>,
    last_range: Option<Range<usize>>,
    shortened: bool,
    tools: ToolStats,
}

fn fixed_layer(
    msgs: &[Message],
    context: Option<Range<usize>>,
    turns: &[Turn],
    first_user: Option<usize>,
    last: Option<usize>,
) -> Fixed {
    let request_range = match (first_user, last) {
        (Some(f), Some(l)) if f != l => Some(turns[f].range.start..turns[f].range.start + 1),
        _ => None,
    };
    // Without a user turn, everything is context; with one, the last user turn to the end.
    let last_range = last.map(|l| turns[l].range.start..msgs.len());
    let context_range = match (context, last_range.as_ref()) {
        (Some(c), _) => Some(c),
        (None, None) if !msgs.is_empty() => Some(0..msgs.len()),
        _ => None,
    };
    let mut tools = ToolStats::default();
    let mut take = |r: &Option<Range<usize>>| {
        let Some(r) = r else { return Vec::new() };
        let (rendered, stats) = render(
            &msgs[r.clone()],
            Form::Whole {
                output: TOOL_OUTPUT_MAX,
            },
        );
        tools.add(stats);
        rendered
    };
    let context = take(&context_range);
    let request = take(&request_range);
    let last = take(&last_range);
    Fixed {
        context,
        request,
        last,
        context_range,
        request_range,
        last_range,
        shortened: false,
        tools,
    }
}

impl Fixed {
    fn all(&self) -> Vec<Message> {
        let mut v = self.context.clone();
        v.extend(self.request.iter().cloned());
        v.extend(self.last.iter().cloned());
        v
    }

    /// What goes before the middle turns, and what after.
    fn split(&self) -> (Vec<Message>, Vec<Message>) {
        let mut head = self.context.clone();
        head.extend(self.request.iter().cloned());
        (head, self.last.clone())
    }

    fn source_ranges(&self) -> Vec<Range<usize>> {
        [&self.context_range, &self.request_range, &self.last_range]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    fn source_messages(&self, msgs: &[Message]) -> usize {
        self.source_ranges()
            .into_iter()
            .map(|r| conversation(&msgs[r]))
            .sum()
    }

    fn shortened(&self) -> bool {
        self.shortened
    }

    /// Whether the reader read any of the layer's messages only in part.
    fn has_reduced(&self, msgs: &[Message]) -> bool {
        (self.source_ranges().iter()).any(|r| has_reduced(&msgs[r.clone()]))
    }

    /// Tallies the layer, which holds `turns` of the user's turns: shortened when a
    /// degradation step had to shorten it.
    fn tally(
        &self,
        turns: usize,
        msgs: &[Message],
        source: &[usize],
        costs: &Costs,
        tally: &mut Tally,
    ) {
        tally.tools.add(self.tools);
        let part = Part {
            turns,
            messages: self.source_messages(msgs),
            source_tokens: (self.source_ranges().iter())
                .map(|r| source[r.clone()].iter().sum::<usize>())
                .sum(),
            written_tokens: costs.exact(&self.all()),
        };
        if self.shortened() {
            tally.shortened.add(part);
        } else {
            tally.verbatim.add(part);
        }
    }

    /// One step of shortening, each taken only as far as needed: the mildest setting after
    /// which `fits` holds, else the harshest.
    fn degrade(&mut self, step: usize, msgs: &[Message], fits: &dyn Fn(&[Message]) -> bool) {
        self.shortened = true;
        match step {
            // Cut the tool outputs of the last turn harder.
            0 => {
                let Some(r) = self.last_range.clone() else {
                    return;
                };
                let (_, first) = render(
                    &msgs[r.clone()],
                    Form::Whole {
                        output: TOOL_OUTPUT_MAX,
                    },
                );
                for output in [4000, 2000, TOOL_OUTPUT_TIGHT, 600, 300] {
                    let (after, stats) = render(&msgs[r.clone()], Form::Whole { output });
                    self.last = after;
                    // What this step cut on top of what the first render counted.
                    self.tools.trimmed = stats.trimmed.saturating_sub(first.trimmed)
                        + self.tools.trimmed.min(first.trimmed);
                    self.tools.chars_cut = stats.chars_cut.saturating_sub(first.chars_cut)
                        + self.tools.chars_cut.min(first.chars_cut);
                    if fits(&self.all()) {
                        break;
                    }
                }
            }
            // Then the last turn's calls to one line, but for its final two.
            1 => {
                let calls: Vec<usize> = (0..self.last.len())
                    .filter(|&i| is_call(&self.last[i]))
                    .collect();
                if let Some(&keep_from) = calls.get(calls.len().saturating_sub(2)) {
                    let (mut head, stats) =
                        render(&self.last[..keep_from], Form::OneLine { text: WHOLE });
                    self.tools.one_line += stats.one_line;
                    self.tools.whole -= stats.one_line;
                    head.extend(self.last[keep_from..].iter().cloned());
                    self.last = head;
                }
            }
            // Finally shorten the long texts themselves: the first request, carried context
            // and the messages of the last turn.
            _ => {
                let (context, request, last) = (
                    self.context.clone(),
                    self.request.clone(),
                    self.last.clone(),
                );
                for limit in [
                    4 * REQUEST_TIGHT,
                    2 * REQUEST_TIGHT,
                    REQUEST_TIGHT,
                    2000,
                    1000,
                    500,
                    250,
                ] {
                    let cut = |v: &[Message]| -> Vec<Message> {
                        v.iter()
                            .map(|m| {
                                let mut m = m.clone();
                                // The user's own words keep at least their first thousand
                                // characters, whatever the budget.
                                let limit = if m.role == Role::User {
                                    limit.max(USER_TEXT_FLOOR)
                                } else {
                                    limit
                                };
                                if m.content.chars().count() > limit {
                                    m.content = m.cut_content(limit).into_owned();
                                }
                                m
                            })
                            .collect()
                    };
                    self.context = cut(&context);
                    self.request = cut(&request);
                    self.last = cut(&last);
                    if fits(&self.all()) {
                        break;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A random JSON value: strings with escapes, control characters and wide characters,
    /// integers and floats of either sign, nested arrays and objects.
    fn value(next: &mut impl FnMut(u64) -> usize, depth: usize) -> Value {
        const PIECES: &[&str] = &[
            "a", "\"", "\\", "\n", "\t", "\u{1}", "\u{1f}", "é", "漢字", "🙂", "</", " ", "\u{7f}",
        ];
        let text = |next: &mut dyn FnMut(u64) -> usize| -> String {
            (0..next(12))
                .map(|_| PIECES[next(PIECES.len() as u64)])
                .collect()
        };
        match next(if depth > 3 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(next(2) == 0),
            2 => json!(next(1 << 40) as u64),
            3 => json!(-(next(1 << 40) as i64)),
            4 => json!((next(1_000_000) as f64 - 500_000.0) / 7.0),
            5 => Value::String(text(next)),
            6 => Value::Array((0..next(5)).map(|_| value(next, depth + 1)).collect()),
            _ => Value::Object(
                (0..next(5))
                    .map(|_| (text(next), value(next, depth + 1)))
                    .collect(),
            ),
        }
    }

    #[test]
    fn json_len_is_the_length_of_the_json_text() {
        let mut next = crate::text::test_rng(0x15_0a_1e_4e);
        for _ in 0..2000 {
            let v = value(&mut next, 0);
            assert_eq!(json_len(&v), v.to_string().len(), "{v}");
        }
    }
}
