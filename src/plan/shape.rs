//! Turning a neutral session into the shape a target agent can take: which messages travel,
//! which tool calls stay structured (the target has an equivalent tool) and which become
//! readable text, and the preamble that tells the next agent where the session came from.
//!
//! The result is still a neutral `Session`; the target adapter only serialises it. The same
//! shaped session is what the written file is verified against after it is read back.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use super::calls;
use crate::adapter::Adapter;
use crate::model::{IdSet, Message, MessageKind, Meta, OutputState, Role, Session};

/// What `shape` did, for the report.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ShapeStats {
    pub structured_tool_calls: usize,
    pub text_tool_calls: usize,
    pub dropped_context: usize,
    pub dropped_orphan_results: usize,
    pub reasoning: usize,
}

/// Builds the target-shaped session from `source`'s `messages`, which it takes: a long
/// session's texts move into the shaped one instead of being copied beside it. `source` gives
/// the rest (its messages are not read). `preamble` is the first message the next agent reads.
pub fn shape(
    source: &Session,
    messages: Vec<Message>,
    target: &dyn Adapter,
    new_id: &str,
    preamble: String,
) -> (Session, ShapeStats) {
    let shaper = Shaper::new(&source.agent, target);
    shape_after(source, messages, shaper, new_id, preamble)
}

/// `shape`, by a `shaper` that has shaped the session's older turns already (they were
/// folded: see `fold`).
pub fn shape_after(
    source: &Session,
    messages: Vec<Message>,
    mut shaper: Shaper,
    new_id: &str,
    preamble: String,
) -> (Session, ShapeStats) {
    let mut shaped = Session::new(shaper.target.name(), "relay", new_id);
    shaped.cwd = source.cwd.clone();
    shaped.git = source.git.clone();
    shaped.title = source.title.clone();
    shaped.todos = source.todos.clone();
    shaped.files_touched = source.files_touched.clone();
    shaped.created = source.created.clone();
    shaped.updated = source.updated.clone();

    let preamble = Message::new(Role::System, preamble)
        .with_time(source.created.clone())
        .with_kind(MessageKind::RelayPreamble);
    shaped.messages = shaper.part(messages, Some(preamble));
    (shaped, shaper.stats)
}

/// Shapes a session part by part, in order: what one part says of the next (which results
/// were seen, which calls travel structured and under what id) is carried over. A part that
/// answers every call it makes, and makes every call it answers, within itself or the parts
/// before it (`fold::closed`), is shaped as it would be in the whole session.
pub struct Shaper<'a> {
    target: &'a dyn Adapter,
    same_agent: bool,
    pub stats: ShapeStats,
    /// The ids of the results seen before this part: only a call's first result answers it.
    results: IdSet,
    /// The ids of the calls that travel structured.
    structured: IdSet,
    /// Calls that travel as text, waiting for their result to be rendered with it.
    text_calls: HashMap<String, Message>,
    /// The target's id for each structured call's, while its result is still to come.
    id_map: HashMap<String, String>,
}

impl<'a> Shaper<'a> {
    pub fn new(source_agent: &str, target: &'a dyn Adapter) -> Shaper<'a> {
        Shaper {
            target,
            same_agent: source_agent == target.name(),
            stats: ShapeStats::default(),
            results: IdSet::default(),
            structured: IdSet::default(),
            text_calls: HashMap::new(),
            id_map: HashMap::new(),
        }
    }

    pub fn target(&self) -> &'a dyn Adapter {
        self.target
    }

    /// The next part of the session, shaped, after `first` when given.
    pub fn part(&mut self, messages: Vec<Message>, first: Option<Message>) -> Vec<Message> {
        let result_of = self.first_results(&messages);
        // The shaped messages are written over the source's, in the same list: a long
        // session's list was otherwise held twice, the source's and the shaped one, at the
        // peak of a relay.
        let mut out_messages = Out::new(InPlace::new(messages, first));
        for i in 0..out_messages.len() {
            let m = out_messages.take(i);
            let out = &mut out_messages;
            match m.role {
                Role::User => out.push(carry(m, Role::User)),
                Role::Assistant => {
                    if !m.content.trim().is_empty() {
                        out.push(carry(m, Role::Assistant));
                    }
                }
                Role::Reasoning => {
                    if !m.content.trim().is_empty() {
                        self.stats.reasoning += 1;
                        out.push(carry(m, Role::Reasoning));
                    }
                }
                Role::System => match m.kind {
                    // The summary a compaction left is the only record of what came before it.
                    Some(MessageKind::CompactSummary) => {
                        out.push(carry(m, Role::System).with_kind(MessageKind::CarriedSummary))
                    }
                    Some(MessageKind::Compaction) if m.content.len() > 40 => {
                        out.push(carry(m, Role::System).with_kind(MessageKind::CarriedSummary))
                    }
                    // Injected environment, instructions and UI lines describe the source
                    // agent's own setup; the target injects its own.
                    _ => self.stats.dropped_context += 1,
                },
                Role::ToolCall => {
                    let id = m.tool_call_id.as_deref().unwrap_or_default();
                    let answered = result_of.contains_key(id) || self.results.contains(id);
                    // Its result is still to come here, where the call is written.
                    let awaits = result_of.get(id).is_some_and(|r| *r > i);
                    self.tool_call(m, answered, awaits, out);
                }
                Role::ToolResult => {
                    let id = m.tool_call_id.as_deref().unwrap_or_default();
                    // Only a call's first result answers it; any other is an orphan.
                    if result_of.get(id) == Some(&i) {
                        self.tool_result(m, out);
                    } else {
                        self.stats.dropped_orphan_results += 1;
                    }
                }
            }
        }
        for id in result_of.keys() {
            self.results.insert(id);
        }
        // A call whose first result came is never answered again: what waited for it goes.
        let results = &self.results;
        self.id_map.retain(|id, _| !results.contains(id));
        self.text_calls.retain(|id, _| !results.contains(id));
        out_messages.finish()
    }

    /// The index in `messages` of each call's first result not seen in an earlier part. Calls
    /// and results are paired by id before any is shaped: parallel calls complete out of order.
    fn first_results(&self, messages: &[Message]) -> HashMap<String, usize> {
        let mut result_of: HashMap<String, usize> = HashMap::new();
        for (i, m) in messages.iter().enumerate() {
            if m.role == Role::ToolResult
                && let Some(id) = m.tool_call_id.as_deref()
                && !self.results.contains(id)
                && !result_of.contains_key(id)
            {
                result_of.insert(id.to_string(), i);
            }
        }
        result_of
    }

    /// A tool call: structured when it is `answered` and the target has an equivalent tool
    /// (it `awaits` its result when that comes after it); else as text, held back to be
    /// rendered with its result when it is answered.
    fn tool_call(&mut self, m: Message, answered: bool, awaits: bool, out: &mut Out) {
        let id = m.tool_call_id.clone().unwrap_or_default();
        let native = if answered {
            self.target.native_tool(&m, self.same_agent)
        } else {
            None
        };
        match native {
            Some((native_name, native_input)) => {
                self.stats.structured_tool_calls += 1;
                let new_id = sanitize_call_id(&id, self.structured.len());
                self.id_map.insert(id.clone(), new_id.clone());
                self.structured.insert(&id);
                let custom = m.metadata.get("custom");
                let (kind, key_arg) = (m.tool_kind, m.key_arg.clone());
                let mut c = carry(m, Role::ToolCall);
                c.tool_call_id = Some(new_id);
                c.tool_name = Some(native_name);
                c.tool_input = Some(native_input);
                c.tool_kind = kind;
                c.key_arg = key_arg;
                if let Some(custom) = custom {
                    c.metadata.insert("custom", custom);
                }
                out.call(c, &id, awaits);
            }
            None => {
                self.stats.text_tool_calls += 1;
                if answered {
                    // Rendered where the result arrives, with it.
                    self.text_calls.insert(id, m);
                } else {
                    out.text(
                        Message::new(Role::Assistant, calls::transcript(&m, None))
                            .with_time(m.timestamp.clone())
                            .with_kind(MessageKind::ToolTranscript)
                            .with_state(OutputState {
                                oneline: Some(calls::one_line(&m, None)),
                                ..OutputState::default()
                            }),
                    )
                }
            }
        }
    }

    /// A call's first result: structured after a structured call, as one text with a call
    /// that travels as text; a result whose call never appeared is dropped.
    fn tool_result(&mut self, m: Message, out: &mut Out) {
        let id = m.tool_call_id.clone().unwrap_or_default();
        if self.structured.contains(&id) {
            let mut kept = Meta::new();
            // The exit code travels; the output's full length, its size as the source held it
            // and whether the reader took it only in part stay for the fit.
            if let Some(v) = m.metadata.get("exit_code") {
                kept.insert("exit_code", v);
            }
            let state = m.state.as_deref().map(|s| OutputState {
                original_chars: s.original_chars,
                source_chars: s.source_chars,
                reduced: s.reduced,
                ..OutputState::default()
            });
            let is_error = m.is_error;
            let mut r = carry(m, Role::ToolResult);
            r.tool_call_id = self.id_map.get(&id).cloned();
            r.is_error = is_error;
            r.metadata = kept;
            r.state = state.filter(|s| *s != OutputState::default()).map(Box::new);
            out.result(r, &id);
        } else if let Some(call) = self.text_calls.remove(&id) {
            out.text(transcript(&call, &m));
        } else {
            // A result whose call never appeared: nothing can be paired with it.
            self.stats.dropped_orphan_results += 1;
        }
    }
}

/// A call that travels as text and its result, as one transcript.
fn transcript(call: &Message, result: &Message) -> Message {
    let (text, cut_from) = calls::transcript_of(call, Some(result));
    Message::new(Role::Assistant, text)
        .with_time(result.timestamp.clone())
        .with_kind(MessageKind::ToolTranscript)
        .with_state(OutputState {
            oneline: Some(calls::one_line(call, Some(result))),
            // What the source held, for the report: the call's output in full.
            source_chars: Some(result.output_chars()),
            reduced: result.is_reduced(),
            // Said here, not read back from the text: an output may hold the words.
            failed: result.is_error,
            original_chars: cut_from,
            masked: None,
        })
}

/// The shaped messages as they are given out, each tool call that travels structured followed
/// by its result with no text between them: every target's model takes a call's result next
/// to the call (Gemini CLI keeps it inside the call, the Anthropic and Chat Completions APIs
/// refuse a call whose result does not follow it). A call that travels as text is answered
/// where its result came, which for parallel calls can be while another, structured, awaits
/// its own: its text is held until the structured calls before it are answered, and given out
/// after their results. Held text waits only within a run of calls and results: any other
/// message given out (a request, an answer, a thought) comes after it, and ends the wait, so
/// a part is shaped the same whether it is shaped alone or in the whole session (`fold`).
struct Out {
    place: InPlace,
    /// The source ids of the structured calls given out in this run whose result is to come.
    awaiting: HashSet<String>,
    /// Calls as text, given out in this run while a structured call awaited its result.
    held: Vec<Message>,
}

impl Out {
    fn new(place: InPlace) -> Out {
        Out {
            place,
            awaiting: HashSet::new(),
            held: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.place.len()
    }

    fn take(&mut self, i: usize) -> Message {
        self.place.take(i)
    }

    /// A message that is neither a call nor a result: after what was held, ending the run.
    fn push(&mut self, m: Message) {
        self.release();
        self.awaiting.clear();
        self.place.push(m);
    }

    /// A structured call (`id`, the source's), which `awaits` its result when it comes later.
    fn call(&mut self, m: Message, id: &str, awaits: bool) {
        if awaits {
            self.awaiting.insert(id.to_string());
        }
        self.place.push(m);
    }

    /// The result of structured call `id`, and what was held for it when it was the last
    /// awaited.
    fn result(&mut self, m: Message, id: &str) {
        self.place.push(m);
        self.awaiting.remove(id);
        if self.awaiting.is_empty() {
            self.release();
        }
    }

    /// A call as text: held while a structured call awaits its result.
    fn text(&mut self, m: Message) {
        if self.awaiting.is_empty() {
            self.place.push(m);
        } else {
            self.held.push(m);
        }
    }

    fn release(&mut self) {
        for m in std::mem::take(&mut self.held) {
            self.place.push(m);
        }
    }

    fn finish(mut self) -> Vec<Message> {
        self.release();
        self.place.finish()
    }
}

/// A list whose messages are taken one by one, in order, and replaced by what they become:
/// never more than one message ahead of what was taken (the preamble), which waits its turn.
struct InPlace {
    messages: Vec<Message>,
    /// Messages written, at the front.
    written: usize,
    /// The next one to write, while its place still holds a message not yet taken.
    waiting: Option<Message>,
    /// Messages taken so far.
    taken: usize,
}

impl InPlace {
    fn new(messages: Vec<Message>, first: Option<Message>) -> InPlace {
        InPlace {
            messages,
            written: 0,
            waiting: first,
            taken: 0,
        }
    }

    fn len(&self) -> usize {
        self.messages.len()
    }

    /// Message `i`, the next not yet taken.
    fn take(&mut self, i: usize) -> Message {
        debug_assert_eq!(i, self.taken);
        let m = std::mem::replace(&mut self.messages[i], Message::new(Role::System, ""));
        self.taken = i + 1;
        if let Some(w) = self.waiting.take() {
            self.push(w);
        }
        m
    }

    fn push(&mut self, m: Message) {
        if self.written < self.taken {
            self.messages[self.written] = m;
            self.written += 1;
        } else {
            debug_assert!(self.waiting.is_none());
            self.waiting = Some(m);
        }
    }

    fn finish(mut self) -> Vec<Message> {
        self.messages.truncate(self.written);
        if let Some(w) = self.waiting.take() {
            self.messages.push(w);
        }
        self.messages.shrink_to_fit();
        self.messages
    }
}

/// A message for the target with the source message's text and time.
fn carry(m: Message, role: Role) -> Message {
    Message::new(role, m.content).with_time(m.timestamp)
}

/// Tool call ids must match `[A-Za-z0-9_-]+` for the Anthropic API; Codex ids already do.
fn sanitize_call_id(id: &str, n: usize) -> String {
    if !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        id.to_string()
    } else {
        format!("toolu_relay_{n:06}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever each message becomes (nothing, itself, or a message held back and given out
    /// later, as a call travelling as text waits for its result), the list written in place
    /// is the first message followed by what a new list would have received, in order.
    #[test]
    fn writing_in_place_gives_what_a_new_list_gives() {
        let mut next = crate::text::test_rng(0x5eed_1234_abcd_0001);
        for _ in 0..500 {
            let n = next(40);
            let source: Vec<Message> = (0..n)
                .map(|i| Message::new(Role::User, format!("m{i}")))
                .collect();
            let mut want = vec![Message::new(Role::System, "first")];
            let mut place = InPlace::new(source.clone(), Some(Message::new(Role::System, "first")));
            let mut held: Vec<Message> = Vec::new();
            for (i, s) in source.iter().enumerate() {
                let m = place.take(i);
                assert_eq!(m.content, s.content);
                let out = match next(4) {
                    0 => None,
                    1 => {
                        held.push(m);
                        None
                    }
                    2 if !held.is_empty() => Some(held.remove(0)),
                    _ => Some(m),
                };
                if let Some(o) = out {
                    want.push(o.clone());
                    place.push(o);
                }
            }
            let got: Vec<String> = place.finish().into_iter().map(|m| m.content).collect();
            let want: Vec<String> = want.into_iter().map(|m| m.content).collect();
            assert_eq!(got, want);
        }
    }
}
