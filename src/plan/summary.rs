//! The extractive summary of the turns a relay leaves out. Deterministic: no model is called.
//!
//! Points are chosen across the whole left-out range, by kind: the user's requests first (they
//! carry intent), then what a compaction left, the user's rules and the decisions taken, errors
//! and how they were fixed, and the assistant's conclusions. A kind that does not fit whole is
//! sampled evenly over the range. Points stay in time order, each tagged with its turn number,
//! so the next agent can tell how much is missing and where.

use std::sync::{Arc, OnceLock};

use foldhash::{HashMap, HashSet, HashSetExt};

use super::cues;
use crate::model::{Message, MessageKind, Role, Timestamp};
use crate::text::one_line_cut;
use crate::tokens::Tokenizer;

/// What the fit and the summary need of one turn folded while it was read (see `fold`).
#[derive(Debug, Clone)]
pub struct FoldedTurn {
    /// Its number among the session's user turns (1: the rest of the first turn).
    pub number: usize,
    /// It starts with a user message (else it is the rest of the first turn).
    pub user: bool,
    /// Its messages, as shaped for the target (32 bits: a record is kept for each of a long
    /// session's tens of thousands of folded turns).
    pub messages: u32,
    /// Of those, the messages the source counts as such (`fit::is_conversation`).
    pub conversation: u32,
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
        PointRef::Here(self)
    }
}

/// A point as the summary reads it, wherever it is kept: 16 bytes, for the tens of thousands
/// of points of a long session that the fit holds at once.
#[derive(Debug, Clone, Copy)]
pub enum PointRef<'a> {
    Here(&'a Point),
    /// The `n`th point of a folded turn, its text in the turn's compressed frame (read with a
    /// `FrameCache`).
    Folded(&'a FoldedTurn, u32),
}

impl<'a> PointRef<'a> {
    /// The number of its turn.
    pub fn turn(&self) -> usize {
        match self {
            PointRef::Here(p) => p.turn,
            PointRef::Folded(t, _) => t.number,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            PointRef::Here(p) => p.kind,
            PointRef::Folded(t, n) => t.points.kind(*n as usize),
        }
    }

    fn text<'c>(&self, frames: &'c mut FrameCache) -> &'c str
    where
        'a: 'c,
    {
        match self {
            PointRef::Here(p) => &p.text,
            PointRef::Folded(t, n) => t.points.text(*n as usize, frames),
        }
    }

    /// Its line in the summary.
    fn line(&self, frames: &mut FrameCache) -> String {
        Self::line_of(self.turn(), self.text(frames))
    }

    fn line_of(turn: usize, text: &str) -> String {
        format!("- [turn {turn}] {text}")
    }
}

/// Uncompressed bytes of points text compressed together: a long session's folded turns hold
/// some 300 bytes of points each, most of what a relay held of them, and the bench's points
/// compress four- to fivefold in frames this size. The summary reads each frame once for the
/// costs, and again for the text of the points it chooses (in order: a frame at a time).
const FRAME_BYTES: usize = 64 << 10;

/// The points of consecutive folded turns: their text, compressed, and each point's kind and
/// where its text ends in it, turn after turn (held here rather than by each turn: a vector a
/// turn cost some 60 bytes more for each of tens of thousands).
#[derive(Debug)]
pub struct PointsFrame {
    compressed: Box<[u8]>,
    len: usize,
    ends: Box<[(Kind, u32)]>,
}

impl PointsFrame {
    fn new(text: &str, ends: Vec<(Kind, u32)>) -> PointsFrame {
        // Level 1, the fastest: frames are compressed on the reader's ordered path.
        let compressed = zstd::bulk::compress(text.as_bytes(), 1)
            .expect("compressing a buffer in memory cannot fail");
        PointsFrame {
            compressed: compressed.into_boxed_slice(),
            len: text.len(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// Where the text of its `n`th point starts and ends.
    fn span(&self, n: usize) -> std::ops::Range<usize> {
        let start = n.checked_sub(1).map_or(0, |p| self.ends[p].1 as usize);
        start..self.ends[n].1 as usize
    }

    fn text(&self) -> String {
        let bytes = zstd::bulk::decompress(&self.compressed, self.len)
            .expect("a frame compressed here decompresses");
        String::from_utf8(bytes).expect("a frame holds the text it was made of")
    }
}

/// The last frame read, kept while points are read in order.
#[derive(Default)]
pub struct FrameCache {
    frame: Option<Arc<PointsFrame>>,
    text: String,
}

impl FrameCache {
    fn text_of(&mut self, frame: &Arc<PointsFrame>) -> &str {
        if !self.frame.as_ref().is_some_and(|f| Arc::ptr_eq(f, frame)) {
            self.text = frame.text();
            self.frame = Some(frame.clone());
        }
        &self.text
    }
}

/// The points of a folded turn: which of its frame's they are (the frame holds the points of
/// the turns folded with it).
#[derive(Debug, Clone, Default)]
pub struct FoldedPoints {
    /// Set when the frame is sealed (`PointsWriter::seal`), before the fit reads it.
    frame: Option<Arc<PointsFrame>>,
    /// Its first point among the frame's, and how many it has.
    first: u32,
    count: u32,
}

impl FoldedPoints {
    fn frame(&self) -> &PointsFrame {
        self.frame.as_ref().expect(SEALED)
    }

    fn len(&self) -> usize {
        self.count as usize
    }

    /// The kind of its `n`th point.
    fn kind(&self, n: usize) -> Kind {
        self.frame().ends[self.first as usize + n].0
    }

    /// The points' kinds and texts, read from `text` (the text of this turn's frame).
    fn iter<'t>(&self, text: &'t str) -> impl Iterator<Item = (Kind, &'t str)> {
        let frame = self.frame();
        let first = self.first as usize;
        (first..first + self.len()).map(move |n| (frame.ends[n].0, &text[frame.span(n)]))
    }

    fn text<'c>(&self, n: usize, frames: &'c mut FrameCache) -> &'c str {
        let frame = self.frame.as_ref().expect(SEALED);
        let span = frame.span(self.first as usize + n);
        &frames.text_of(frame)[span]
    }
}

const SEALED: &str = "a folded turn's frame is sealed before the fit reads it";

/// Gathers the folded turns' points text into frames, in order.
#[derive(Default)]
pub struct PointsWriter {
    open: String,
    /// The kind of each point in `open`, and where its text ends.
    ends: Vec<(Kind, u32)>,
    /// How many of the newest folded turns have their text in `open`.
    waiting: usize,
}

impl PointsWriter {
    /// The next folded turn's points, their text added to the open frame.
    pub fn add(&mut self, points: &[Point]) -> FoldedPoints {
        // A frame is sealed past 64 KB: beyond 4 GB only a single turn's points could take it.
        let at = |n: usize| u32::try_from(n).expect("a frame of points under 4 GB");
        let first = at(self.ends.len());
        for p in points {
            self.open.push_str(&p.text);
            self.ends.push((p.kind, at(self.open.len())));
        }
        self.waiting += 1;
        FoldedPoints {
            frame: None,
            first,
            count: at(points.len()),
        }
    }

    /// Whether the open frame should be sealed.
    pub fn full(&self) -> bool {
        self.open.len() >= FRAME_BYTES
    }

    /// Compresses the open frame and gives it to the turns whose text it holds: the last of
    /// `turns`.
    pub fn seal(&mut self, turns: &mut [FoldedTurn]) {
        if self.waiting == 0 {
            return;
        }
        let frame = Arc::new(PointsFrame::new(&self.open, std::mem::take(&mut self.ends)));
        let first = turns.len() - self.waiting;
        for t in &mut turns[first..] {
            t.points.frame = Some(frame.clone());
        }
        self.open = String::new();
        self.waiting = 0;
    }
}

/// Every left-out turn's candidate points with their costs (see `point_cost`) and repeat keys
/// (see `repeat_key`), kept for the relay: the fit makes the summary again when the first one
/// leaves room, nearly always of the same turns, and finds each turn's points once. A folded
/// turn's points stay in its record: only their costs and keys are kept here, in one list for
/// all folded turns (a vector or two per turn, for tens of thousands of turns, made these the
/// largest part of a long relay's memory while it fits).
#[derive(Default)]
pub struct Candidates {
    /// Turns at hand, by key.
    here: HashMap<usize, AtHand>,
    /// Folded turns, by key: where their points' costs and keys start in `costs` and `keys`.
    folded: HashMap<usize, usize>,
    costs: Vec<u32>,
    keys: Vec<u64>,
}

/// A turn's points, and each one's cost and repeat key.
type AtHand = (Vec<Point>, Vec<(usize, u64)>);

/// What `Candidates::points` finds of a turn it has not seen.
enum Found {
    Here(AtHand),
    Folded(Vec<(usize, u64)>),
}

impl Candidates {
    /// The candidate points of `turns` (each with a key that names it across calls), in time
    /// order, without repeats, and the cost of each. Each turn's candidates are found on every
    /// core (a long session's left-out turns are most of it), folded turns a frame at a time;
    /// the repeats are taken out after, in time order: a point repeats an earlier one of its
    /// kind whose text differs only in case.
    pub fn points<'a>(
        &'a mut self,
        turns: &[(usize, LeftOut<'a>)],
        tok: Tokenizer,
    ) -> (Vec<PointRef<'a>>, Vec<usize>) {
        use rayon::prelude::*;
        // What a point costs as a line of the summary, and its repeat key.
        let costed = |turn: usize, kind: Kind, text: &str| {
            (
                tok.count(&PointRef::line_of(turn, text)) + 1,
                repeat_key(kind, text),
            )
        };
        // Runs of turns to read together: the folded turns of one frame, or one turn.
        let frame = |t: &LeftOut<'a>| t.folded.and_then(|f| f.points.frame.as_ref());
        let runs: Vec<&[(usize, LeftOut<'a>)]> = turns
            .chunk_by(|(_, a), (_, b)| {
                matches!((frame(a), frame(b)), (Some(x), Some(y)) if Arc::ptr_eq(x, y))
            })
            .collect();
        let known = |key: &usize, t: &LeftOut| match t.folded {
            Some(_) => self.folded.contains_key(key),
            None => self.here.contains_key(key),
        };
        let new: Vec<(usize, Found)> = runs
            .par_iter()
            .flat_map_iter(|run| {
                let todo: Vec<&(usize, LeftOut)> =
                    run.iter().filter(|(key, t)| !known(key, t)).collect();
                let frame = match todo.first().and_then(|(_, t)| t.folded) {
                    Some(f) => f.points.frame.as_ref().expect(SEALED).text(),
                    None => String::new(),
                };
                todo.into_iter()
                    .map(|(key, t)| match t.folded {
                        Some(f) => {
                            let keyed = f.points.iter(&frame);
                            let costs = keyed.map(|(kind, text)| costed(t.number, kind, text));
                            (*key, Found::Folded(costs.collect()))
                        }
                        None => {
                            let found = turn_points(t);
                            let costs = found
                                .iter()
                                .map(|p| costed(p.turn, p.kind, &p.text))
                                .collect();
                            (*key, Found::Here((found, costs)))
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        for (key, found) in new {
            match found {
                Found::Here(at_hand) => {
                    self.here.insert(key, at_hand);
                }
                Found::Folded(costs) => {
                    self.folded.insert(key, self.costs.len());
                    for (cost, key) in costs {
                        // A line of a few hundred characters.
                        self.costs.push(u32::try_from(cost).unwrap_or(u32::MAX));
                        self.keys.push(key);
                    }
                }
            }
        }
        let this = &*self;
        let mut seen = HashSet::new();
        turns
            .iter()
            .flat_map(
                |(k, t)| -> Box<dyn Iterator<Item = (PointRef<'a>, (usize, u64))>> {
                    match t.folded {
                        Some(f) => {
                            let at = this.folded[k];
                            let costs = this.costs[at..].iter().map(|&c| c as usize);
                            let keyed = costs.zip(this.keys[at..].iter().copied());
                            let n = f.points.count;
                            Box::new((0..n).map(|n| PointRef::Folded(f, n)).zip(keyed))
                        }
                        None => {
                            let (points, costs) = &this.here[k];
                            Box::new(points.iter().map(Point::view).zip(costs.iter().copied()))
                        }
                    }
                },
            )
            .filter(|(_, (_, key))| seen.insert(*key))
            .map(|(p, (cost, _))| (p, cost))
            .unzip()
    }
}

/// What tells a point from another of its kind whose text differs only in case: a keyed hash
/// of the kind and the lowercase text (a long session has tens of thousands of points, and a
/// lowercase copy of each would be held at once), keyed at random once per process, as
/// `model::IdSet` is.
fn repeat_key(kind: Kind, text: &str) -> u64 {
    use std::hash::BuildHasher;
    static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    KEY.get_or_init(Default::default)
        .hash_one((kind, text.to_lowercase()))
}

/// What a point costs as a line of the summary.
#[cfg(test)]
fn point_cost(p: &PointRef, tok: Tokenizer) -> usize {
    tok.count(&p.line(&mut FrameCache::default())) + 1
}

/// `Candidates::points` of one summary, without the costs.
#[cfg(test)]
fn points(turns: &[LeftOut]) -> Vec<Point> {
    let keyed: Vec<(usize, LeftOut)> = turns.iter().copied().enumerate().collect();
    let mut known = Candidates::default();
    let found = known.points(&keyed, Tokenizer::Estimate).0;
    let mut frames = FrameCache::default();
    found
        .into_iter()
        .map(|p| Point {
            turn: p.turn(),
            kind: p.kind(),
            text: p.text(&mut frames).to_string(),
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
            Role::System if m.is(MessageKind::CarriedSummary) => push(
                Kind::EarlierSummary,
                format!("Earlier summary: {}", one_line_cut(&m.content, 400)),
            ),
            Role::Assistant if m.kind.is_none() => {
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
    let error = m.is(MessageKind::ToolTranscript) && m.state().is_some_and(|s| s.failed);
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
                .filter(|&i| points[i].kind() == *k)
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
    let with_points: HashSet<usize> = chosen.iter().map(|&i| points[i].turn()).collect();
    let mut frames = FrameCache::default();
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
        text.push_str(&points[i].line(&mut frames));
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

    /// Folded turns' points, written over many frames, read back as they were written: by
    /// the summary's pass over whole frames and one point at a time, in any order.
    #[test]
    fn folded_points_read_back_from_their_frames() {
        let mut next = crate::text::test_rng(0x5eed_f0ad_0000_0001);
        let words = [
            "build",
            "テスト",
            "naïve",
            "\"quoted\"",
            "🦀",
            "x",
            "a\\b",
            "{}",
        ];
        let kinds = [Kind::Request, Kind::Rule, Kind::Decision, Kind::Conclusion];
        let mut writer = PointsWriter::default();
        let mut turns: Vec<FoldedTurn> = Vec::new();
        let mut written: Vec<Vec<Point>> = Vec::new();
        for number in 2..900 {
            let points: Vec<Point> = (0..next(5))
                .map(|_| Point {
                    turn: number,
                    kind: kinds[next(kinds.len() as u64)],
                    text: (0..next(60))
                        .map(|_| words[next(8)])
                        .collect::<Vec<_>>()
                        .join(" "),
                })
                .collect();
            let folded = writer.add(&points);
            turns.push(FoldedTurn {
                number,
                user: true,
                messages: 1,
                conversation: 1,
                source_tokens: 1,
                first_message_timed: false,
                first_time: None,
                last_time: None,
                points: folded,
            });
            written.push(points);
            if writer.full() {
                writer.seal(&mut turns);
            }
        }
        writer.seal(&mut turns);
        let frames: Vec<*const PointsFrame> = turns
            .iter()
            .map(|t| Arc::as_ptr(t.points.frame.as_ref().unwrap()))
            .collect();
        assert!(frames.windows(2).filter(|w| w[0] != w[1]).count() >= 3);
        let left: Vec<(usize, LeftOut)> = turns
            .iter()
            .enumerate()
            .map(|(i, t)| (i, LeftOut::folded(t.number, t)))
            .collect();
        let mut known = Candidates::default();
        let (refs, costs) = known.points(&left, Tokenizer::Estimate);
        // As the same points at hand, repeats taken out.
        let mut seen = std::collections::HashSet::new();
        let expected: Vec<&Point> = written
            .iter()
            .flatten()
            .filter(|p| seen.insert((p.kind, p.text.to_lowercase())))
            .collect();
        assert_eq!(refs.len(), expected.len());
        let mut frames = FrameCache::default();
        for ((r, cost), p) in refs.iter().zip(&costs).zip(&expected) {
            assert_eq!((r.turn(), r.kind()), (p.turn, p.kind));
            assert_eq!(r.text(&mut frames), p.text);
            assert_eq!(*cost, point_cost(&p.view(), Tokenizer::Estimate));
        }
        for i in (0..refs.len()).rev().step_by(7) {
            let mut cold = FrameCache::default();
            assert_eq!(refs[i].text(&mut cold), expected[i].text);
        }
        // The fit holds one for every point of a long session, the relay a record for each of
        // its tens of thousands of folded turns.
        assert_eq!(std::mem::size_of::<PointRef>(), 16);
        assert!(std::mem::size_of::<FoldedTurn>() <= 112);
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
            .with_kind(MessageKind::ToolTranscript);
            if failed {
                m.state_mut().failed = true;
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
