//! Fitting a relay-shaped session into the target's context budget, in layers:
//!
//! 1. always kept: the handoff brief, context a compaction left, the first request, and the
//!    last user message with everything after it;
//! 2. recent turns verbatim, newest first, cut only at turn boundaries;
//! 3. an extractive summary of the turns left out, within `summary_max_tokens`;
//! 4. tool compression: the newest `tool_call_keep_recent` calls whole (long outputs cut to head
//!    and tail), older ones as one line each.
//!
//! Costs are exact counts with the target's tokenizer, taken only for what may be kept; turns
//! older than the first one that does not fit are never counted, only summarized.

use std::collections::HashMap;

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::Value;

use super::calls::one_line;
use super::summary;
use crate::model::{Message, Role, Session};
use crate::text::trim_output;
use crate::tokens::Tokenizer;

/// Longest tool output kept whole, in characters, before head/tail trimming.
pub const TOOL_OUTPUT_MAX: usize = 8000;
/// Tighter limit used only when the always-kept layer alone exceeds the budget.
const TOOL_OUTPUT_TIGHT: usize = 1200;
const REQUEST_TIGHT: usize = 4000;

#[derive(Debug, Clone)]
pub struct FitParams {
    pub budget: usize,
    pub tokenizer: Tokenizer,
    pub recent_turns: usize,
    pub summary_max_tokens: usize,
    pub tool_call_keep_recent: usize,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Part {
    pub messages: usize,
    pub turns: usize,
    pub tokens: usize,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FitReport {
    pub tokenizer: String,
    pub budget: usize,
    /// Messages and turns of the session before fitting (after shaping for the target).
    pub source_messages: usize,
    pub source_turns: usize,
    /// Estimated (characters / 4): counting what is left out exactly would cost more than it tells.
    pub source_tokens_estimate: usize,
    pub brief_tokens: usize,
    pub always_kept: Part,
    pub recent_kept: Part,
    /// Turns left out (their tokens estimated).
    pub dropped: Part,
    pub summary_points: usize,
    pub summary_points_kept: usize,
    pub summary_tokens: usize,
    pub tool_calls_whole: usize,
    pub tool_calls_one_line: usize,
    pub tool_outputs_trimmed: usize,
    pub tool_output_chars_cut: usize,
    pub degraded: bool,
    pub total_tokens: usize,
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

struct Costs {
    tok: Tokenizer,
    cache: HashMap<usize, usize>,
}

impl Costs {
    fn of(&mut self, i: usize, msgs: &[Message]) -> usize {
        let tok = self.tok;
        *self.cache.entry(i).or_insert_with(|| cost(tok, &msgs[i]))
    }
    fn range(&mut self, r: std::ops::Range<usize>, msgs: &[Message]) -> usize {
        r.map(|i| self.of(i, msgs)).sum()
    }
}

/// Fits `shaped` (whose first message is the relay preamble) to the budget, putting `brief_text`
/// first. Errors when even the always-kept layer cannot fit.
pub fn fit(mut shaped: Session, brief_text: String, p: &FitParams) -> Result<(Session, FitReport)> {
    let mut report = FitReport {
        tokenizer: p.tokenizer.name().into(),
        budget: p.budget,
        ..Default::default()
    };
    report.source_tokens_estimate = crate::tokens::session_estimate(&shaped);
    // The session is taken, not copied: its messages are the bulk of what a relay holds.
    let mut body: Vec<Message> = std::mem::take(&mut shaped.messages);
    let preamble_time = if body.is_empty() {
        None
    } else {
        body.remove(0).timestamp
    };
    report.source_messages = body.len();

    let brief_msg = Message::new(Role::System, brief_text)
        .with_time(preamble_time)
        .with_meta("kind", "handoff_brief");
    report.brief_tokens = cost(p.tokenizer, &brief_msg);

    let (mut msgs, stats) = compress_tools(body, p.tool_call_keep_recent, TOOL_OUTPUT_MAX);
    report.tool_calls_whole = stats.whole;
    report.tool_calls_one_line = stats.one_line;
    report.tool_outputs_trimmed = stats.trimmed;
    report.tool_output_chars_cut = stats.chars_cut;

    let mut turns = segment(&msgs);
    report.source_turns = turns.iter().filter(|t| t.user).count();
    let mut costs = Costs {
        tok: p.tokenizer,
        cache: HashMap::new(),
    };

    // Layer 1, with degradation steps when it alone exceeds the budget.
    let mut fixed = fixed_cost(&msgs, &turns, &mut costs) + report.brief_tokens;
    let mut step = 0;
    while fixed > p.budget && step < 3 {
        report.degraded = true;
        let last = turns.last().cloned();
        match (step, last) {
            (0, Some(last)) => {
                // Cut every tool output of the last turn harder.
                let tail: Vec<Message> = msgs.drain(last.range.clone()).collect();
                let (tail, s) = compress_tools(tail, usize::MAX, TOOL_OUTPUT_TIGHT);
                report.tool_outputs_trimmed += s.trimmed;
                report.tool_output_chars_cut += s.chars_cut;
                msgs.splice(last.range.start..last.range.start, tail);
            }
            (1, Some(last)) => {
                // Then keep only the last turn's final two calls whole.
                let tail: Vec<Message> = msgs.drain(last.range.clone()).collect();
                let (tail, s) = compress_tools(tail, 2, TOOL_OUTPUT_TIGHT);
                report.tool_calls_one_line += s.one_line;
                report.tool_calls_whole = report.tool_calls_whole.saturating_sub(s.one_line);
                msgs.splice(last.range.start..last.range.start, tail);
            }
            _ => {
                // Finally shorten the first request and carried context themselves.
                let first_user = msgs.iter().position(|m| m.role == Role::User);
                for (i, m) in msgs.iter_mut().enumerate() {
                    let early = first_user.is_none_or(|f| i <= f);
                    if early && matches!(m.role, Role::User | Role::System) {
                        m.content = trim_output(&m.content, REQUEST_TIGHT);
                    }
                }
                if let Some(last) = turns.last() {
                    for m in &mut msgs[last.range.clone()] {
                        if m.content.chars().count() > REQUEST_TIGHT {
                            m.content = trim_output(&m.content, REQUEST_TIGHT);
                        }
                    }
                }
            }
        }
        step += 1;
        turns = segment(&msgs);
        costs.cache.clear();
        fixed = fixed_cost(&msgs, &turns, &mut costs) + report.brief_tokens;
    }
    if fixed > p.budget {
        bail!(
            "the budget of {} tokens is too small: the handoff brief, the first request and the last \
             user message with what follows need {fixed} tokens even when shortened. Use a larger --budget.",
            p.budget
        );
    }

    // Layer 2: recent turns, newest first, between the first and the last.
    let n = turns.len();
    let last_idx = n.saturating_sub(1);
    let first_user_turn = turns.iter().position(|t| t.user);
    let middle: Vec<usize> = (0..last_idx)
        .filter(|&t| turns[t].user || first_user_turn.is_none_or(|f| t > f))
        .collect();
    // The cost a middle turn adds: for the first request's turn, all but the request itself.
    let extra = |t: usize, costs: &mut Costs, msgs: &[Message]| {
        let r = turns[t].range.clone();
        if Some(t) == first_user_turn {
            costs.range(r.start + 1..r.end, msgs)
        } else {
            costs.range(r, msgs)
        }
    };
    let remaining = p.budget - fixed;
    let max_middle = p.recent_turns.saturating_sub(1);
    let mut kept: Vec<usize> = Vec::new();
    let mut used = 0;
    let mut all_fit = middle.len() <= max_middle;
    if all_fit {
        let total: usize = middle.iter().map(|&t| extra(t, &mut costs, &msgs)).sum();
        all_fit = total <= remaining;
        if all_fit {
            kept = middle.clone();
            used = total;
        }
    }
    if !all_fit {
        let reserve = p.summary_max_tokens.min(remaining / 4);
        for &t in middle.iter().rev() {
            if kept.len() >= max_middle {
                break;
            }
            let c = extra(t, &mut costs, &msgs);
            if used + c > remaining - reserve {
                break;
            }
            used += c;
            kept.push(t);
        }
        kept.sort_unstable();
    }
    let dropped: Vec<usize> = middle
        .iter()
        .copied()
        .filter(|t| !kept.contains(t))
        .collect();

    // Layer 3: summary of what was dropped.
    let mut summary: Option<Message> = None;
    if !dropped.is_empty() {
        let slices: Vec<&[Message]> = dropped
            .iter()
            .map(|&t| {
                let r = turns[t].range.clone();
                if Some(t) == first_user_turn {
                    &msgs[r.start + 1..r.end]
                } else {
                    &msgs[r]
                }
            })
            .collect();
        let points = summary::summary_points(&slices);
        report.summary_points = points.len();
        let cap = p.summary_max_tokens.min(remaining - used);
        let time = slices
            .iter()
            .find_map(|s| s.first())
            .and_then(|m| m.timestamp.clone());
        let mut keep: Option<usize> = None;
        loop {
            let text = summary::summary_text(&points, keep);
            let m = Message::new(Role::System, text)
                .with_time(time.clone())
                .with_meta("kind", "relay_summary");
            let c = cost(p.tokenizer, &m);
            if c <= cap && !points.is_empty() {
                report.summary_tokens = c;
                report.summary_points_kept = match keep {
                    None if points.len() <= 15 => points.len(),
                    None => 10,
                    Some(k) => (2 * k).min(points.len()),
                };
                summary = Some(m);
                break;
            }
            let next = match keep {
                None => 4.min(points.len() / 2),
                Some(0) => break,
                Some(k) => k - 1,
            };
            keep = Some(next);
        }
        report.dropped.turns = dropped.len();
        for &t in &dropped {
            let r = turns[t].range.clone();
            let r = if Some(t) == first_user_turn {
                r.start + 1..r.end
            } else {
                r
            };
            report.dropped.messages += r.len();
            report.dropped.tokens += msgs[r]
                .iter()
                .map(|m| {
                    if m.role == Role::Reasoning {
                        0
                    } else {
                        m.content.len().div_ceil(4)
                    }
                })
                .sum::<usize>();
        }
    }

    // Assemble: brief, context and first request, summary, kept turns, last turn.
    let mut out = shaped;
    out.messages = vec![brief_msg];
    let mut always = Part::default();
    let mut recent = Part::default();
    let take =
        |r: std::ops::Range<usize>, part: &mut Part, out: &mut Vec<Message>, costs: &mut Costs| {
            for i in r {
                part.messages += 1;
                part.tokens += costs.of(i, &msgs);
                out.push(msgs[i].clone());
            }
        };
    let context_end = turns
        .first()
        .map_or(0, |t| if t.user { t.range.start } else { t.range.end });
    take(0..context_end, &mut always, &mut out.messages, &mut costs);
    if let Some(f) = first_user_turn {
        let r = turns[f].range.clone();
        take(
            r.start..r.start + 1,
            &mut always,
            &mut out.messages,
            &mut costs,
        );
        if f != last_idx && kept.contains(&f) {
            take(
                r.start + 1..r.end,
                &mut recent,
                &mut out.messages,
                &mut costs,
            );
            recent.turns += 1;
        }
    }
    if let Some(s) = summary {
        out.messages.push(s);
    }
    for &t in &kept {
        if Some(t) == first_user_turn {
            continue;
        }
        take(
            turns[t].range.clone(),
            &mut recent,
            &mut out.messages,
            &mut costs,
        );
        recent.turns += 1;
    }
    if n > 0 && turns[last_idx].user {
        let r = turns[last_idx].range.clone();
        let r = if Some(last_idx) == first_user_turn {
            r.start + 1..r.end
        } else {
            r
        };
        take(r, &mut always, &mut out.messages, &mut costs);
        always.turns += 1;
    }
    report.always_kept = always;
    report.recent_kept = recent;
    report.total_tokens = report.brief_tokens
        + report.always_kept.tokens
        + report.recent_kept.tokens
        + report.summary_tokens;
    debug_assert_eq!(
        report.total_tokens,
        out.messages
            .iter()
            .map(|m| cost(p.tokenizer, m))
            .sum::<usize>()
    );
    Ok((out, report))
}

#[derive(Debug, Clone)]
struct Turn {
    range: std::ops::Range<usize>,
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

/// Layer 1 cost without the brief: context before the first request, the first request, and
/// the last turn whole.
fn fixed_cost(msgs: &[Message], turns: &[Turn], costs: &mut Costs) -> usize {
    let Some(last) = turns.last() else { return 0 };
    let mut c = 0;
    let first_user = turns.iter().position(|t| t.user);
    if let Some(first) = turns.first()
        && !first.user
    {
        c += costs.range(first.range.clone(), msgs);
    }
    if let Some(f) = first_user {
        let start = turns[f].range.start;
        if f == turns.len() - 1 {
            return c + costs.range(last.range.clone(), msgs);
        }
        c += costs.of(start, msgs);
    }
    if last.user {
        c += costs.range(last.range.clone(), msgs);
    }
    c
}

#[derive(Default)]
struct ToolStats {
    whole: usize,
    one_line: usize,
    trimmed: usize,
    chars_cut: usize,
}

/// Layer 4. The newest `keep_recent` tool calls stay whole (outputs over `max_output` characters
/// keep head and tail); older ones become one line each. A structured call and its result are
/// always changed together, so no call is ever separated from its result.
fn compress_tools(
    msgs: Vec<Message>,
    keep_recent: usize,
    max_output: usize,
) -> (Vec<Message>, ToolStats) {
    let mut stats = ToolStats::default();
    // Tool units, in order: a structured call (with its result) or a text transcript.
    let mut results: HashMap<String, usize> = HashMap::new();
    for (i, m) in msgs.iter().enumerate() {
        if m.role == Role::ToolResult
            && let Some(id) = &m.tool_call_id
        {
            results.insert(id.clone(), i);
        }
    }
    let units: Vec<usize> = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::ToolCall || m.kind() == Some("tool_transcript"))
        .map(|(i, _)| i)
        .collect();
    let old_count = units.len().saturating_sub(keep_recent);
    let mut replace: HashMap<usize, Option<Message>> = HashMap::new();
    for (n, &i) in units.iter().enumerate() {
        let m = &msgs[i];
        let result_idx = m
            .tool_call_id
            .as_ref()
            .and_then(|id| results.get(id))
            .copied();
        if n < old_count {
            stats.one_line += 1;
            let line = match m.role {
                Role::ToolCall => one_line(m, result_idx.map(|r| &msgs[r])),
                _ => m
                    .metadata
                    .get("oneline")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| trim_output(&m.content, 200)),
            };
            let mut short = Message::new(Role::Assistant, line)
                .with_time(m.timestamp.clone())
                .with_meta("kind", "tool_oneline");
            short.metadata.remove("line");
            replace.insert(i, Some(short));
            if m.role == Role::ToolCall
                && let Some(r) = result_idx
            {
                replace.insert(r, None);
            }
        } else {
            stats.whole += 1;
            let target = if m.role == Role::ToolCall {
                result_idx
            } else {
                Some(i)
            };
            if let Some(t) = target {
                let text = &msgs[t].content;
                let len = text.chars().count();
                let original = msgs[t].output_chars();
                if original > len && max_output >= TOOL_OUTPUT_MAX {
                    // Already cut to this size while reading.
                    stats.trimmed += 1;
                    stats.chars_cut += original - max_output.min(original);
                } else if len > max_output {
                    let mut r = msgs[t].clone();
                    r.content = trim_output(text, max_output);
                    stats.trimmed += 1;
                    stats.chars_cut += len - max_output;
                    replace.insert(t, Some(r));
                }
            }
        }
    }
    let out = msgs
        .into_iter()
        .enumerate()
        .filter_map(|(i, m)| match replace.remove(&i) {
            Some(r) => r,
            None => Some(m),
        })
        .collect();
    (out, stats)
}
