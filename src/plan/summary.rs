//! The extractive summary of the turns a relay leaves out. Deterministic: no model is called.
//!
//! Points are chosen across the whole left-out range, by kind: the user's requests first (they
//! carry intent), then what a compaction left, the user's rules and the decisions taken, errors
//! and how they were fixed, and the assistant's conclusions. A kind that does not fit whole is
//! sampled evenly over the range. Points stay in time order, each tagged with its turn number,
//! so the next agent can tell how much is missing and where.

use foldhash::{HashMap, HashSet, HashSetExt};

use super::cues;
use crate::model::{Message, Role, Timestamp};
use crate::text::one_line_cut;
use crate::tokens::Tokenizer;

/// What the fit and the summary need of one turn folded while it was read (see `fold`).
#[derive(Debug, Clone)]
pub struct FoldedTurn {
    /// Its number among the session's user turns (1: the rest of the first turn).
    pub number: usize,
    /// It starts with a user message (else it is the rest of the first turn).
    pub user: bool,
    /// Its messages, as shaped for the target.
    pub messages: usize,
    /// Their `fit::source_tokens`.
    pub source_tokens: usize,
    /// Its first message has a time (then `first_time`).
    pub first_message_timed: bool,
    /// Its first and last times.
    pub first_time: Option<Timestamp>,
    pub last_time: Option<Timestamp>,
    /// Its candidate points for the summary (`summary::turn_points`).
    pub points: FoldedPoints,
}

/// One left-out turn: its number among the session's turns (1 = the first request) and its
/// messages as shaped for the target, or what the fold kept of them.
#[derive(Clone, Copy)]
pub struct LeftOut<'a> {
    pub number: usize,
    pub messages: &'a [Message],
    pub folded: Option<&'a FoldedTurn>,
}

impl<'a> LeftOut<'a> {
    pub fn of(number: usize, messages: &'a [Message]) -> LeftOut<'a> {
        LeftOut {
            number,
            messages,
            folded: None,
        }
    }

    pub fn folded(number: usize, turn: &'a FoldedTurn) -> LeftOut<'a> {
        LeftOut {
            number,
            messages: &[],
            folded: Some(turn),
        }
    }

    /// The time of its first message: `None` without messages, `Some(None)` when that message
    /// has no time.
    pub fn first_message_time(&self) -> Option<Option<&'a Timestamp>> {
        match self.folded {
            Some(f) => Some(f.first_time.as_ref().filter(|_| f.first_message_timed)),
            None => self.messages.first().map(|m| m.timestamp.as_ref()),
        }
    }

    fn first_time(&self) -> Option<&'a Timestamp> {
        match self.folded {
            Some(f) => f.first_time.as_ref(),
            None => self.messages.iter().find_map(|m| m.timestamp.as_ref()),
        }
    }

    fn last_time(&self) -> Option<&'a Timestamp> {
        match self.folded {
            Some(f) => f.last_time.as_ref(),
            None => self
                .messages
                .iter()
                .rev()
                .find_map(|m| m.timestamp.as_ref()),
        }
    }
}

/// What a point is, in the order points are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Request,
    EarlierSummary,
    Rule,
    Decision,
    Error,
    Conclusion,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub turn: usize,
    pub kind: Kind,
    pub text: String,
}

impl Point {
    pub fn view(&self) -> PointRef<'_> {
        PointRef {
            turn: self.turn,
            kind: self.kind,
            text: &self.text,
        }
    }
}

/// A point as the summary reads it, wherever it is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointRef<'a> {
    pub turn: usize,
    pub kind: Kind,
    pub text: &'a str,
}

impl PointRef<'_> {
    fn line(&self) -> String {
        format!("- [turn {}] {}", self.turn, self.text)
    }
}

/// The points of a folded turn, held in one piece: a long session has hundreds of thousands
/// of points, and a string each costs more than its text.
#[derive(Debug, Clone, Default)]
pub struct FoldedPoints {
    text: Box<str>,
    /// Each point's kind and where its text ends.
    ends: Box<[(Kind, usize)]>,
}

impl FoldedPoints {
    pub fn new(points: &[Point]) -> FoldedPoints {
        let mut text = String::with_capacity(points.iter().map(|p| p.text.len()).sum());
        let mut ends = Vec::with_capacity(points.len());
        for p in points {
            text.push_str(&p.text);
            ends.push((p.kind, text.len()));
        }
        FoldedPoints {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// The points, of turn number `turn`.
    pub fn iter(&self, turn: usize) -> impl Iterator<Item = PointRef<'_>> {
        let mut start = 0;
        self.ends.iter().map(move |&(kind, end)| {
            let text = &self.text[start..end];
            start = end;
            PointRef { turn, kind, text }
        })
    }
}

/// Every left-out turn's candidate points with their costs (see `point_cost`), kept for the
/// relay: the fit makes the summary again when the first one leaves room, nearly always of the
/// same turns, and finds each turn's points once. A folded turn's points stay in its record:
/// only their costs are kept here.
#[derive(Default)]
pub struct Candidates(HashMap<usize, TurnCandidates>);

/// One turn's candidate points (none kept here for a folded turn) and their costs.
type TurnCandidates = (Vec<Point>, Vec<usize>);

impl Candidates {
    /// The candidate points of `turns` (each with a key that names it across calls), in time
    /// order, without repeats, and the cost of each. Each turn's candidates are found on every
    /// core (a long session's left-out turns are most of it); the repeats are taken out after,
    /// in time order: a point repeats an earlier one of its kind whose text differs only in
    /// case.
    pub fn points<'a>(
        &'a mut self,
        turns: &[(usize, LeftOut<'a>)],
        tok: Tokenizer,
    ) -> (Vec<PointRef<'a>>, Vec<usize>) {
        use rayon::prelude::*;
        let new: Vec<(usize, TurnCandidates)> = turns
            .par_iter()
            .filter(|(key, _)| !self.0.contains_key(key))
            .map(|(key, t)| match t.folded {
                Some(f) => {
                    let costs = f.points.iter(t.number).map(|p| point_cost(&p, tok));
                    (*key, (Vec::new(), costs.collect()))
                }
                None => {
                    let found = turn_points(t);
                    let costs = found.iter().map(|p| point_cost(&p.view(), tok)).collect();
                    (*key, (found, costs))
                }
            })
            .collect();
        self.0.extend(new);
        let known = &self.0;
        // Repeats are found by a keyed hash of the lowercase text: a long session has tens of
        // thousands of points, and a lowercase copy of each would be held at once.
        let key = std::collections::hash_map::RandomState::new();
        let mut seen = HashSet::new();
        turns
            .iter()
            .flat_map(|(k, t)| {
                let (points, costs) = &known[k];
                let points: Box<dyn Iterator<Item = PointRef<'a>>> = match t.folded {
                    Some(f) => Box::new(f.points.iter(t.number)),
                    None => Box::new(points.iter().map(Point::view)),
                };
                points.zip(costs.iter().copied())
            })
            .filter(|(p, _)| seen.insert((p.kind, lowercase_hash(&key, p.text))))
            .unzip()
    }
}

/// A hash of `text` in lowercase.
fn lowercase_hash(key: &impl std::hash::BuildHasher, text: &str) -> u64 {
    key.hash_one(text.to_lowercase())
}

/// What a point costs as a line of the summary.
fn point_cost(p: &PointRef, tok: Tokenizer) -> usize {
    tok.count(&p.line()) + 1
}

/// `Candidates::points` of one summary, without the costs.
#[cfg(test)]
fn points(turns: &[LeftOut]) -> Vec<Point> {
    let keyed: Vec<(usize, LeftOut)> = turns.iter().copied().enumerate().collect();
    let mut known = Candidates::default();
    let found = known.points(&keyed, Tokenizer::Estimate).0;
    found
        .into_iter()
        .map(|p| Point {
            turn: p.turn,
            kind: p.kind,
            text: p.text.to_string(),
        })
        .collect()
}

/// The candidate points of one turn of messages, in order, repeats included.
pub fn turn_points(t: &LeftOut) -> Vec<Point> {
    let mut out = Vec::new();
    let mut push = |kind: Kind, text: String| {
        if !text.trim().is_empty() {
            out.push(Point {
                turn: t.number,
                kind,
                text,
            });
        }
    };
    let mut failed: Option<String> = None;
    let mut conclusion: Option<&str> = None;
    for m in t.messages {
        match m.role {
            Role::User => {
                push(
                    Kind::Request,
                    format!("User asked: {}", one_line_cut(&m.content, 160)),
                );
                for rule in cues::constraints_in(m) {
                    push(
                        Kind::Rule,
                        format!("User's rule: \"{}\"", one_line_cut(rule, 200)),
                    );
                }
            }
            Role::System if m.kind() == Some("carried_summary") => push(
                Kind::EarlierSummary,
                format!("Earlier summary: {}", one_line_cut(&m.content, 400)),
            ),
            Role::Assistant if m.kind().is_none() => {
                for d in cues::decisions_in(m) {
                    push(
                        Kind::Decision,
                        format!("Decision: {}", one_line_cut(d, 160)),
                    );
                }
                if m.content.trim().chars().count() >= 40 {
                    conclusion = Some(&m.content);
                }
            }
            Role::ToolResult | Role::Assistant => {
                // A structured result, or a tool call carried as text.
                let (error, label) = outcome(m);
                match (error, failed.take()) {
                    (true, _) => failed = Some(label),
                    (false, Some(what)) => {
                        push(Kind::Error, format!("Error: {what}; fixed by {label}"))
                    }
                    (false, None) => {}
                }
            }
            _ => {}
        }
    }
    if let Some(what) = failed {
        push(Kind::Error, format!("Error left open: {what}"));
    }
    if let Some(c) = conclusion {
        push(
            Kind::Conclusion,
            format!("Assistant: {}", one_line_cut(c, 200)),
        );
    }
    out
}

/// Whether a tool outcome failed, and a short label for it.
fn outcome(m: &Message) -> (bool, String) {
    if m.role == Role::ToolResult {
        // From the start of the first line that is not blank only: what a reader that cut the
        // output (see `text::reduced_output`) still holds.
        let quoted = one_line_cut(crate::text::quoted_line(&m.content), 120);
        let label = format!("a call answered with \"{quoted}\"");
        return (m.is_error, label);
    }
    // A transcript, `[tool call: NAME] ARG` then `[result: error, N chars]`: marked by shape.
    let error = m.kind() == Some("tool_transcript") && m.metadata.contains_key("failed");
    let line: String = m
        .content
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(crate::text::QUOTED_LINE_CHARS)
        .collect();
    (error, one_line_cut(&line, 120))
}

/// Kinds in the order they are chosen, with the share of the summary each may take first;
/// what a kind leaves unused goes to the next, and what is left at the end to the kinds that
/// wanted more, in the same order.
const SHARES: &[(Kind, f64)] = &[
    (Kind::Request, 0.45),
    (Kind::EarlierSummary, 0.15),
    (Kind::Rule, 0.15),
    (Kind::Decision, 0.10),
    (Kind::Error, 0.10),
    (Kind::Conclusion, 0.05),
];

/// The points to keep within `cap` tokens, each kind sampled evenly across the range when it
/// does not fit whole (`costs` are the points' `point_cost`s). Returns indexes into `points`,
/// in time order.
pub fn select(points: &[PointRef], costs: &[usize], cap: usize, tok: Tokenizer) -> Vec<usize> {
    let header = tok.count(&header_text(1, 1, 2, None, None, 1, 1)) + 8;
    let room = cap.saturating_sub(header);
    let of_kind: Vec<Vec<usize>> = SHARES
        .iter()
        .map(|(k, _)| {
            (0..points.len())
                .filter(|&i| points[i].kind == *k)
                .collect()
        })
        .collect();
    let need: Vec<usize> = of_kind
        .iter()
        .map(|ix| ix.iter().map(|&i| costs[i]).sum())
        .collect();
    let mut grant = vec![0usize; SHARES.len()];
    let mut carry = 0usize;
    for (k, (_, share)) in SHARES.iter().enumerate() {
        let offer = (room as f64 * share) as usize + carry;
        grant[k] = need[k].min(offer);
        carry = offer - grant[k];
    }
    let mut left = room.saturating_sub(grant.iter().sum());
    for k in 0..SHARES.len() {
        let more = (need[k] - grant[k]).min(left);
        grant[k] += more;
        left -= more;
    }
    let mut chosen: Vec<usize> = Vec::new();
    for (k, ix) in of_kind.iter().enumerate() {
        chosen.extend(spread(ix, costs, grant[k]));
    }
    chosen.sort_unstable();
    chosen
}

/// Points of one kind within `room`: all when they fit, else as many as fit, spread evenly
/// over the range.
fn spread(ix: &[usize], costs: &[usize], room: usize) -> Vec<usize> {
    let total: usize = ix.iter().map(|&i| costs[i]).sum();
    if total <= room {
        return ix.to_vec();
    }
    let avg = (total / ix.len().max(1)).max(1);
    let mut k = (room / avg).min(ix.len());
    loop {
        if k == 0 {
            return Vec::new();
        }
        let mut picked: Vec<usize> = (0..k)
            .map(|j| ix[(2 * j + 1) * ix.len() / (2 * k)])
            .collect();
        picked.dedup();
        if picked.iter().map(|&i| costs[i]).sum::<usize>() <= room {
            return picked;
        }
        k -= 1;
    }
}

fn header_text(
    first: usize,
    last: usize,
    turns: usize,
    from: Option<&Timestamp>,
    to: Option<&Timestamp>,
    kept: usize,
    with_points: usize,
) -> String {
    let when = match (from.and_then(|t| t.utc()), to.and_then(|t| t.utc())) {
        (Some(a), Some(b)) => format!(", {a} to {b}"),
        _ => String::new(),
    };
    format!(
        "Summary of turns {first} to {last} ({turns} turns{when}), left out to fit this agent's \
         context: {kept} points from {with_points} of those turns, in order; [turn N] says where \
         each comes from, and turns without a point are not summarized."
    )
}

/// The summary message's text for the chosen points.
pub fn summary_text(turns: &[LeftOut], points: &[PointRef], chosen: &[usize]) -> String {
    let first = turns.first().map_or(0, |t| t.number);
    let last = turns.last().map_or(0, |t| t.number);
    let from = turns.first().and_then(LeftOut::first_time);
    let to = turns.last().and_then(LeftOut::last_time);
    let with_points: HashSet<usize> = chosen.iter().map(|&i| points[i].turn).collect();
    let mut text = header_text(
        first,
        last,
        turns.len(),
        from,
        to,
        chosen.len(),
        with_points.len(),
    );
    for &i in chosen {
        text.push('\n');
        text.push_str(&points[i].line());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: usize, texts: &[(Role, &str)]) -> Vec<Message> {
        let _ = n;
        texts
            .iter()
            .map(|(r, t)| Message::new(*r, t.to_string()))
            .collect()
    }

    #[test]
    fn points_cover_the_whole_range_and_rules_survive() {
        let turns: Vec<Vec<Message>> = (1..=400)
            .map(|n| {
                let mut t = vec![(Role::User, format!("Implement step {n} of the parser"))];
                if n == 200 {
                    t[0].1.push_str(". We must never touch the vendored zlib");
                }
                t.push((
                    Role::Assistant,
                    format!("Step {n} is done and the tests pass for every module"),
                ));
                t.into_iter().map(|(r, s)| Message::new(r, s)).collect()
            })
            .collect();
        let left: Vec<LeftOut> = turns
            .iter()
            .enumerate()
            .map(|(i, m)| LeftOut::of(i + 2, m))
            .collect();
        let pts = points(&left);
        let refs: Vec<PointRef> = pts.iter().map(Point::view).collect();
        let costs: Vec<usize> = refs
            .iter()
            .map(|p| point_cost(p, Tokenizer::Estimate))
            .collect();
        let chosen = select(&refs, &costs, 1500, Tokenizer::Estimate);
        let text = summary_text(&left, &refs, &chosen);
        assert!(Tokenizer::Estimate.count(&text) <= 1500, "{}", text.len());
        let turns_seen: Vec<usize> = chosen.iter().map(|&i| pts[i].turn).collect();
        assert!(turns_seen.first() < Some(&40), "{turns_seen:?}");
        assert!(turns_seen.last() > Some(&360), "{turns_seen:?}");
        assert!(
            text.contains("Summary of turns 2 to 401 (400 turns"),
            "{text}"
        );
        let _ = turn(0, &[]);
    }

    #[test]
    fn an_error_and_its_fix_become_one_point() {
        let mut bad = Message::new(Role::ToolResult, "error: cannot find crate `foo`\nmore");
        bad.is_error = true;
        let good = Message::new(Role::ToolResult, "test result: ok");
        let msgs = vec![Message::new(Role::User, "build it"), bad, good];
        let pts = points(&[LeftOut::of(3, &msgs)]);
        assert!(
            pts.iter().any(|p| p.kind == Kind::Error
                && p.text.contains("cannot find crate")
                && p.text.contains("test result: ok")),
            "{pts:?}"
        );
    }

    /// A call carried as text failed when shape says so, whatever its output holds: an output
    /// that prints a transcript's status line is no failure.
    #[test]
    fn a_transcript_fails_by_its_result_not_by_its_text() {
        let transcript = |output: &str, failed: bool| {
            let mut call = Message::new(Role::ToolCall, "");
            call.tool_name = Some("Bash".into());
            call.key_arg = Some(format!("make step {failed}"));
            let mut result = Message::new(Role::ToolResult, output);
            result.is_error = failed;
            let mut m = Message::new(
                Role::Assistant,
                crate::plan::calls::transcript(&call, Some(&result)),
            )
            .with_meta("kind", "tool_transcript");
            if failed {
                m = m.with_meta("failed", true);
            }
            m
        };
        let msgs = vec![
            Message::new(Role::User, "build it"),
            transcript("all good\n[result: error, 5 chars]\nstill good", false),
            transcript("done", false),
            transcript("error: cannot find crate", true),
        ];
        let pts = points(&[LeftOut::of(3, &msgs)]);
        let errors: Vec<&str> = pts
            .iter()
            .filter(|p| p.kind == Kind::Error)
            .map(|p| p.text.as_str())
            .collect();
        assert_eq!(errors.len(), 1, "{pts:?}");
        assert!(
            errors[0].starts_with("Error left open: [tool call: Bash] make step true"),
            "{errors:?}"
        );
    }
}
