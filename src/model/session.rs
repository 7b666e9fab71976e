//! The neutral session model every adapter reads into and writes from.
//!
//! It is versioned (`schema_version`) because exported sessions outlive the binary that wrote
//! them. Anything a source format says that has no field here goes into `extra` (session level)
//! or `metadata` (message level), so that nothing the source said is lost.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{IdSet, MessageKind, Meta, OutputState, ToolKind};

/// Bumped whenever a field changes meaning or a required field is added.
pub const SCHEMA_VERSION: u32 = 1;

/// A point in time as the source wrote it, plus its normalised UTC value when it parses.
/// Serialized as `{"utc": ..., "original": ...}` (`utc` left out when the original does not
/// parse).
#[derive(Clone)]
pub struct Timestamp(Repr);

#[derive(Clone)]
enum Repr {
    /// Written as its own normalised value, RFC 3339 in UTC with milliseconds
    /// (`2026-11-30T02:12:39.853Z`), as Claude Code and Codex write every line's time: kept in
    /// place, without a string of its own (a long session keeps one for every message).
    Normal([u8; NORMAL_LEN]),
    /// Boxed: a timestamp is then 32 bytes instead of 40 (one for every message, and two for
    /// each of tens of thousands of folded turns).
    Other(Box<Other>),
}

#[derive(Clone)]
struct Other {
    utc: Option<Box<str>>,
    original: Box<str>,
}

/// The length of a normalised timestamp, `2026-11-30T02:12:39.853Z`.
const NORMAL_LEN: usize = 24;

impl Timestamp {
    pub fn parse(original: &str) -> Timestamp {
        if let Some(b) = normal(original) {
            return Timestamp(Repr::Normal(b));
        }
        Timestamp::new(parse_time(original).map(utc_millis), original.to_string())
    }

    fn new(utc: Option<String>, original: String) -> Timestamp {
        if utc.as_deref() == Some(original.as_str())
            && let Ok(b) = <[u8; NORMAL_LEN]>::try_from(original.as_bytes())
        {
            return Timestamp(Repr::Normal(b));
        }
        Timestamp(Repr::Other(Box::new(Other {
            utc: utc.map(String::into_boxed_str),
            original: original.into_boxed_str(),
        })))
    }

    pub fn from_value(v: &Value) -> Option<Timestamp> {
        match v {
            Value::String(s) if !s.is_empty() => Some(Timestamp::parse(s)),
            Value::Number(n) => {
                // Unix seconds or milliseconds (history files and some legacy records use these).
                let f = n.as_f64()?;
                let ms = if f > 1e12 { f } else { f * 1000.0 };
                let t = DateTime::<Utc>::from_timestamp_millis(ms as i64)?;
                Some(Timestamp::new(Some(utc_millis(t)), n.to_string()))
            }
            _ => None,
        }
    }

    /// RFC 3339 in UTC with millisecond precision, when the original parsed.
    pub fn utc(&self) -> Option<&str> {
        match &self.0 {
            Repr::Normal(b) => Some(text_of(b)),
            Repr::Other(o) => o.utc.as_deref(),
        }
    }

    /// The exact string (or number, rendered) the source wrote.
    pub fn original(&self) -> &str {
        match &self.0 {
            Repr::Normal(b) => text_of(b),
            Repr::Other(o) => &o.original,
        }
    }

    pub fn time(&self) -> Option<DateTime<Utc>> {
        self.utc().and_then(parse_time)
    }
}

/// A timestamp's text kept in place: the bytes of a whole string, so always UTF-8.
fn text_of(b: &[u8; NORMAL_LEN]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

/// `s` when it is its own normalised value: exactly what `utc_millis(parse_time(s))` writes,
/// found without writing it.
fn normal(s: &str) -> Option<[u8; NORMAL_LEN]> {
    let b: [u8; NORMAL_LEN] = s.as_bytes().try_into().ok()?;
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let shape = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ];
    if !shape.iter().all(|&(i, c)| b[i] == c) {
        return None;
    }
    chrono::NaiveDate::from_ymd_opt(
        i32::try_from(digits(0..4)?).ok()?,
        digits(5..7)?,
        digits(8..10)?,
    )?;
    // A leap second (`:60`) takes the long way.
    chrono::NaiveTime::from_hms_milli_opt(
        digits(11..13)?,
        digits(14..16)?,
        digits(17..19)?,
        digits(20..23)?,
    )?;
    Some(b)
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Timestamp) -> bool {
        self.utc() == other.utc() && self.original() == other.original()
    }
}

impl Eq for Timestamp {}

impl std::fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("Timestamp")
            .field("utc", &self.utc())
            .field("original", &self.original())
            .finish()
    }
}

/// The serialized form, `utc` first.
#[derive(Serialize, Deserialize)]
struct TimestampFields<'a> {
    #[serde(default, skip_serializing_if = "Option::is_none", borrow)]
    utc: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    original: std::borrow::Cow<'a, str>,
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        TimestampFields {
            utc: self.utc().map(std::borrow::Cow::Borrowed),
            original: std::borrow::Cow::Borrowed(self.original()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let f = TimestampFields::deserialize(d)?;
        Ok(Timestamp::new(
            f.utc.map(std::borrow::Cow::into_owned),
            f.original.into_owned(),
        ))
    }
}

/// RFC 3339 with milliseconds, in a string of its exact size: formatting leaves room to spare,
/// and a long session keeps one of these for every line it reads.
fn utc_millis(t: DateTime<Utc>) -> String {
    let mut s = t.to_rfc3339_opts(SecondsFormat::Millis, true);
    s.shrink_to_fit();
    s
}

/// Parses RFC 3339 and the few near-RFC-3339 shapes agents write (no zone means UTC).
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, fmt) {
            return Some(t.and_utc());
        }
    }
    None
}

/// `Timestamp::parse(s).time()`, without building the timestamp when it can be helped.
fn time_of(s: &str) -> Option<DateTime<Utc>> {
    use chrono::{Datelike, SubsecRound, Timelike};
    let t = parse_time(s)?;
    // A timestamp keeps milliseconds: its time is the parsed one cut to them. RFC 3339 writes
    // only four-digit years, and leap seconds are rare enough to take the long way.
    if (0..=9999).contains(&t.year()) && t.nanosecond() < 1_000_000_000 {
        Some(t.trunc_subsecs(3))
    } else {
        Timestamp::parse(s).time()
    }
}

/// When a session began and when it was last active, from the timestamps its lines state.
///
/// One definition for the readers and the listing scanners, so that `list` and `show` agree:
/// `first` is the earliest time (the first written of equal ones), `last` the newest (the last
/// written of equal ones). Times that do not parse count only when none does; then `first` and
/// `last` are the first and the last written, as written.
#[derive(Debug, Default, Clone)]
pub struct TimeSpan {
    earliest: Option<(DateTime<Utc>, SpanMark)>,
    newest: Option<(DateTime<Utc>, SpanMark)>,
    first_raw: Option<Timestamp>,
    last_raw: Option<Timestamp>,
}

#[derive(Debug, Clone)]
enum SpanMark {
    /// As written in a line (`Timestamp::parse` builds the rest); the buffer is reused.
    Str(String),
    Ts(Timestamp),
}

impl SpanMark {
    fn timestamp(&self) -> Timestamp {
        match self {
            SpanMark::Str(s) => Timestamp::parse(s),
            SpanMark::Ts(t) => t.clone(),
        }
    }

    fn set_str(slot: &mut Option<(DateTime<Utc>, SpanMark)>, t: DateTime<Utc>, s: &str) {
        match slot {
            Some((time, SpanMark::Str(buf))) => {
                *time = t;
                buf.clear();
                buf.push_str(s);
            }
            _ => *slot = Some((t, SpanMark::Str(s.to_string()))),
        }
    }
}

impl TimeSpan {
    /// A time as written in a line (what `Timestamp::parse` takes).
    pub fn see_str(&mut self, s: &str) {
        match time_of(s) {
            Some(t) => {
                if self.earliest.as_ref().is_none_or(|(e, _)| t < *e) {
                    SpanMark::set_str(&mut self.earliest, t, s);
                }
                if self.newest.as_ref().is_none_or(|(n, _)| t >= *n) {
                    SpanMark::set_str(&mut self.newest, t, s);
                }
            }
            None => self.see_raw(|| Timestamp::parse(s)),
        }
    }

    pub fn see(&mut self, ts: &Timestamp) {
        match ts.time() {
            Some(t) => {
                if self.earliest.as_ref().is_none_or(|(e, _)| t < *e) {
                    self.earliest = Some((t, SpanMark::Ts(ts.clone())));
                }
                if self.newest.as_ref().is_none_or(|(n, _)| t >= *n) {
                    self.newest = Some((t, SpanMark::Ts(ts.clone())));
                }
            }
            None => self.see_raw(|| ts.clone()),
        }
    }

    fn see_raw(&mut self, ts: impl Fn() -> Timestamp) {
        // Once a time parses, times that do not are never the answer.
        if self.earliest.is_none() {
            if self.first_raw.is_none() {
                self.first_raw = Some(ts());
            }
            self.last_raw = Some(ts());
        }
    }

    pub fn first(&self) -> Option<Timestamp> {
        match &self.earliest {
            Some((_, m)) => Some(m.timestamp()),
            None => self.first_raw.clone(),
        }
    }

    pub fn last(&self) -> Option<Timestamp> {
        match &self.newest {
            Some((_, m)) => Some(m.timestamp()),
            None => self.last_raw.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Context that is not the user's words: instructions, injected environment, compaction
    /// summaries, hidden meta messages.
    System,
    User,
    Assistant,
    ToolCall,
    ToolResult,
    Reasoning,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolCall => "tool_call",
            Role::ToolResult => "tool_result",
            Role::Reasoning => "reasoning",
        }
    }
}

/// One message of a session. Serialised by hand (`state`): its typed state travels among the
/// metadata keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "super::state::WireMessage")]
pub struct Message {
    pub role: Role,
    /// Plain text. For a tool call it is empty unless the source carried free text (Codex
    /// custom tools carry their whole input here); the structured input is `tool_input`.
    pub content: String,
    pub timestamp: Option<Timestamp>,
    pub tool_call_id: Option<String>,
    pub tool_name: Option<String>,
    pub tool_input: Option<Value>,
    /// What sort of tool a call is, as its reader classified it.
    pub tool_kind: Option<ToolKind>,
    /// What a call did, in full: the command, the file, the query (see `ToolKind`).
    pub key_arg: Option<String>,
    pub is_error: bool,
    /// What sort of message it is, when it is not plain conversation.
    pub kind: Option<MessageKind>,
    /// What was done to its tool output (cut, masked, made a transcript); `None`: nothing.
    pub state: Option<Box<OutputState>>,
    /// Source-specific facts carried through untouched: source line number, ids, image
    /// sources, signatures' presence, exit codes.
    pub metadata: Meta,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            timestamp: None,
            tool_call_id: None,
            tool_name: None,
            tool_input: None,
            tool_kind: None,
            key_arg: None,
            is_error: false,
            kind: None,
            state: None,
            metadata: Meta::new(),
        }
    }

    pub fn with_time(mut self, ts: Option<Timestamp>) -> Message {
        self.timestamp = ts;
        self
    }

    pub fn with_meta(mut self, key: &'static str, value: impl Into<Value>) -> Message {
        self.metadata.insert(key, value.into());
        self
    }

    pub fn with_kind(mut self, kind: MessageKind) -> Message {
        self.kind = Some(kind);
        self
    }

    pub fn with_state(mut self, state: OutputState) -> Message {
        self.state = Some(Box::new(state));
        self
    }

    /// Whether it is of `kind`.
    pub fn is(&self, kind: MessageKind) -> bool {
        self.kind == Some(kind)
    }

    /// What was done to its output, to be filled in.
    pub fn state_mut(&mut self) -> &mut OutputState {
        self.state.get_or_insert_default()
    }

    /// What was done to its output (nothing when `None`).
    pub fn state(&self) -> Option<&OutputState> {
        self.state.as_deref()
    }

    /// The length its tool output had before it was cut (see `ReadOptions`), in characters.
    pub fn original_chars(&self) -> Option<usize> {
        self.state().and_then(|s| s.original_chars)
    }

    /// Whether it was read only in part (see `OutputState::reduced`).
    pub fn is_reduced(&self) -> bool {
        self.state().is_some_and(|s| s.reduced)
    }

    /// The length a tool output had before a reader cut it (see `ReadOptions`), in characters.
    pub fn output_chars(&self) -> usize {
        self.original_chars()
            .unwrap_or_else(|| self.content.chars().count())
    }

    /// The text cut to `max` characters as `text::trim_output` cuts it, counting in its marker
    /// what a reader cut before (see `text::recut`).
    pub fn cut_content(&self, max: usize) -> std::borrow::Cow<'_, str> {
        crate::text::recut(&self.content, max, self.original_chars())
    }

    /// A user message typed by a person, as opposed to injected context.
    pub fn is_real_user(&self) -> bool {
        self.role == Role::User
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

impl GitInfo {
    pub fn is_empty(&self) -> bool {
        self.branch.is_none() && self.commit.is_none() && self.remote.is_none()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoStatus {
    pub fn parse(s: &str) -> TodoStatus {
        match s {
            "completed" | "done" => TodoStatus::Completed,
            "in_progress" | "in-progress" | "active" => TodoStatus::InProgress,
            _ => TodoStatus::Pending,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub text: String,
    pub status: TodoStatus,
}

/// A reader's complaint about its input, with the line it concerns when there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub message: String,
}

/// How the warnings for characters replaced while reading begin (`record_pass`).
const INVALID_UTF8: &str = "invalid UTF-8 on ";
const LONE_SURROGATES: &str = crate::jsonl::surrogates::WARNING;

impl Warning {
    /// About characters replaced in lines that were read all the same: it does not explain
    /// why a session reads as empty.
    pub fn about_characters(&self) -> bool {
        self.message.starts_with(INVALID_UTF8) || self.message.starts_with(LONE_SURROGATES)
    }
}

/// A subagent transcript that belongs to this session (Claude Code's `subagents/` folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentLink {
    pub id: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
}

/// What the reader saw that is not in `messages`: line counts by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadStats {
    pub lines: usize,
    pub malformed_lines: usize,
    /// Line types the reader does not know, by type name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown_types: BTreeMap<String, usize>,
    /// Known line types that carry no conversation (UI state, usage records...), by type name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped_types: BTreeMap<String, usize>,
    /// Conversation lines on branches the agent itself would not load (rewinds, retries).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abandoned_branch_lines: usize,
    /// Conversation lines of sidechains (subagent work recorded in the parent file).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sidechain_lines: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub orphan_tool_calls: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub orphan_tool_results: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How full the agent's context was at its newest request, as the agent itself recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUsage {
    /// Tokens of the prompt the model received (Claude Code: input + cache creation + cache
    /// read of the newest request).
    pub tokens: u64,
    /// The model's context window, when the agent records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Messages of this session before that request's answer: what the prompt held.
    pub at_message: usize,
    /// The same for the session's first recorded request: the difference between the two is
    /// what the conversation in between added, without the agent's own system prompt and tools.
    pub first_tokens: u64,
    pub first_at_message: usize,
    /// The model that answered the newest request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Changes to one file during a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChanges {
    /// Write / edit / patch calls that changed it.
    pub count: usize,
    /// Where the last change happened: the number of messages before it.
    pub last: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub schema_version: u32,
    pub id: String,
    /// Adapter name of the agent that wrote the source (`claude`, `codex`).
    pub agent: String,
    /// The source's shape, e.g. `claude-jsonl`, `codex-rollout`, `codex-paginated`.
    pub format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    /// Version of the CLI that wrote the source, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
    /// For a subagent transcript: the session it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentLink>,
    /// The latest todo / plan list (Claude TodoWrite, Codex update_plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<Todo>,
    /// Paths written by edit / write / patch tools, in first-touched order, without duplicates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_touched: Vec<String>,
    /// How often and how recently each touched file was changed (the brief ranks them by it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub file_changes: BTreeMap<String, FileChanges>,
    /// The agent's own record of how full its context was at the newest request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsage>,
    #[serde(default)]
    pub stats: ReadStats,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
    /// What a relay's reader folded of the older turns (see `adapter::ReadOptions::fold`):
    /// `messages` then holds only the rest. A relay's own; never written.
    #[serde(skip)]
    pub folded: Option<Box<Folded>>,
    /// What the session did to files (see `files`), found when it was read, before anything
    /// was masked. A reader leaves it `None`; `select::Located::read_with` fills it.
    #[serde(skip)]
    pub file_facts: Option<Box<super::files::FileFacts>>,
    /// Kept last so that the neutral JSONL export can stream it one message per line (its
    /// header is the session without messages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
}

/// What the passes over a whole session (`Session::pair_tool_calls`,
/// `Session::fill_times_from_messages`, the places facts are recorded at) need of the messages
/// a reader handed to a fold instead of keeping them: whole turns, one after the other, taken
/// out of `Session::messages` at `at`. Places stay those of the whole session (see
/// `Session::end`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Folded {
    /// Where the folded messages were, in the whole session, and how many.
    pub at: usize,
    pub messages: usize,
    /// The ids of the tool calls and of the results among them.
    pub call_ids: IdSet,
    pub result_ids: IdSet,
    /// Their earliest and latest times, as `fill_times_from_messages` finds them.
    pub first_time: Option<Timestamp>,
    pub last_time: Option<Timestamp>,
    /// The place of the last compaction among them.
    pub last_compaction: Option<usize>,
    /// The calls among them that nothing folded answered, and the results whose call nothing
    /// folded made: as `pair_tool_calls` warns of them, and their ids as the plan pairs them
    /// (a call without one by the empty id: see `plan::shape`).
    pub unanswered: Vec<(Option<usize>, String)>,
    pub unanswered_ids: IdSet,
    pub uncalled: Vec<(Option<usize>, String)>,
    pub uncalled_ids: IdSet,
    /// A later message paired with one of those: the folded turns were not shaped as the whole
    /// session shapes them, and the session must be read again without folding.
    pub broken: bool,
    /// What the messages before them and they did to files (see `files::FileFacts::of`).
    pub files: super::files::FileLog,
}

impl Folded {
    /// Takes note of a turn folded after what was folded before.
    pub fn add(&mut self, messages: &[Message]) {
        self.files.add_all(messages);
        let ids = |role: Role| -> foldhash::HashSet<&str> {
            messages
                .iter()
                .filter(|m| m.role == role)
                .filter_map(|m| m.tool_call_id.as_deref())
                .collect()
        };
        let (calls, results) = (ids(Role::ToolCall), ids(Role::ToolResult));
        for m in messages {
            let id = m.tool_call_id.as_deref();
            match m.role {
                Role::ToolCall => {
                    // The plan pairs a call without an id by the empty one.
                    let key = id.unwrap_or_default();
                    self.broken |= self.uncalled_ids.contains(key);
                    let answered = |id: &str| results.contains(id) || self.result_ids.contains(id);
                    if !id.is_some_and(answered) {
                        self.unanswered
                            .push((source_line(m), unanswered_call_warning(m)));
                    }
                    if !answered(key) {
                        self.unanswered_ids.insert(key);
                    }
                }
                Role::ToolResult => {
                    self.broken |= id.is_some_and(|id| self.unanswered_ids.contains(id));
                    let called =
                        id.is_some_and(|id| calls.contains(id) || self.call_ids.contains(id));
                    if !called {
                        self.uncalled
                            .push((source_line(m), uncalled_result_warning(m)));
                        if let Some(id) = id {
                            self.uncalled_ids.insert(id);
                        }
                    }
                }
                _ => {}
            }
        }
        for m in messages {
            if let Some(id) = &m.tool_call_id {
                match m.role {
                    Role::ToolCall => {
                        self.call_ids.insert(id);
                    }
                    Role::ToolResult => {
                        self.result_ids.insert(id);
                    }
                    _ => {}
                }
            }
            if m.is(MessageKind::Compaction) {
                self.last_compaction = Some(self.at + self.messages);
            }
            self.messages += 1;
            see_time(
                &mut self.first_time,
                &mut self.last_time,
                m.timestamp.as_ref(),
            );
        }
    }
}

/// `first` and `last` as `fill_times_from_messages` moves them on seeing `ts`.
fn see_time(first: &mut Option<Timestamp>, last: &mut Option<Timestamp>, ts: Option<&Timestamp>) {
    let Some(ts) = ts else { return };
    let Some(t) = ts.time() else { return };
    if first
        .as_ref()
        .and_then(Timestamp::time)
        .is_none_or(|f| t < f)
    {
        *first = Some(ts.clone());
    }
    if last
        .as_ref()
        .and_then(Timestamp::time)
        .is_none_or(|l| t >= l)
    {
        *last = Some(ts.clone());
    }
}

impl Session {
    pub fn new(agent: &str, format: &str, id: impl Into<String>) -> Session {
        Session {
            schema_version: SCHEMA_VERSION,
            id: id.into(),
            agent: agent.to_string(),
            format: format.to_string(),
            source_path: None,
            source_version: None,
            created: None,
            updated: None,
            cwd: None,
            git: None,
            title: None,
            archived: false,
            parent_id: None,
            subagents: Vec::new(),
            todos: Vec::new(),
            files_touched: Vec::new(),
            file_changes: BTreeMap::new(),
            context_usage: None,
            stats: ReadStats::default(),
            warnings: Vec::new(),
            extra: BTreeMap::new(),
            folded: None,
            file_facts: None,
            messages: Vec::new(),
        }
    }

    /// The place after the last message, in the whole session (folded messages included).
    pub fn end(&self) -> usize {
        self.messages.len() + self.folded.as_ref().map_or(0, |f| f.messages)
    }

    /// Everything but the messages: the header of an export or a report, without a second copy
    /// of the conversation.
    pub fn header(&self) -> Session {
        Session {
            schema_version: self.schema_version,
            id: self.id.clone(),
            agent: self.agent.clone(),
            format: self.format.clone(),
            source_path: self.source_path.clone(),
            source_version: self.source_version.clone(),
            created: self.created.clone(),
            updated: self.updated.clone(),
            cwd: self.cwd.clone(),
            git: self.git.clone(),
            title: self.title.clone(),
            archived: self.archived,
            parent_id: self.parent_id.clone(),
            subagents: self.subagents.clone(),
            todos: self.todos.clone(),
            files_touched: self.files_touched.clone(),
            file_changes: self.file_changes.clone(),
            context_usage: self.context_usage.clone(),
            stats: self.stats.clone(),
            warnings: self.warnings.clone(),
            extra: self.extra.clone(),
            folded: None,
            file_facts: None,
            messages: Vec::new(),
        }
    }

    pub fn warn(&mut self, line: Option<usize>, message: impl Into<String>) {
        self.warnings.push(Warning {
            line,
            message: message.into(),
        });
    }

    /// Copies a reading pass's findings into the stats and warnings.
    pub fn record_pass(&mut self, pass: &crate::jsonl::PassStats) {
        use crate::jsonl::MAX_LINE;
        self.stats.lines = pass.lines;
        self.stats.malformed_lines = pass.malformed.len();
        for (no, err) in &pass.malformed {
            self.warn(Some(*no), format!("malformed JSON line skipped: {err}"));
        }
        for (no, len) in &pass.oversized {
            self.warn(
                Some(*no),
                format!(
                    "line of {:.1} MB skipped: longer than the {} MB limit for one line",
                    *len as f64 / (1 << 20) as f64,
                    MAX_LINE >> 20
                ),
            );
        }
        for (no, len) in &pass.salvaged {
            self.warn(
                Some(*no),
                format!(
                    "line of {:.1} MB is longer than the {} MB limit for one line: read as its \
                     first {} MB and last {} KB",
                    *len as f64 / (1 << 20) as f64,
                    MAX_LINE >> 20,
                    crate::jsonl::SALVAGE_HEAD >> 20,
                    crate::jsonl::SALVAGE_TAIL >> 10
                ),
            );
        }
        if let Some(first) = pass.invalid_utf8_lines.first() {
            self.warn(
                Some(*first),
                format!(
                    "{INVALID_UTF8}{} line(s), read lossily (first at line {first})",
                    pass.invalid_utf8_lines.len()
                ),
            );
        }
        if let Some(first) = pass.lone_surrogate_lines.first() {
            self.warn(
                Some(*first),
                crate::jsonl::surrogates::warning(&pass.lone_surrogate_lines),
            );
        }
        if pass.bom {
            self.warn(Some(1), crate::jsonl::BOM_WARNING);
        }
        if pass.truncated_tail {
            self.extra
                .insert("truncated_last_line".into(), Value::Bool(true));
        }
    }

    /// Records a change to a file, at the current end of the conversation.
    pub fn touch_file(&mut self, path: &str) {
        self.touch_file_at(path, self.end());
    }

    /// Records a change to a file made when the conversation had `at` messages.
    pub fn touch_file_at(&mut self, path: &str, at: usize) {
        let path = path.trim();
        if path.is_empty() {
            return;
        }
        match self.file_changes.get_mut(path) {
            Some(c) => {
                c.count += 1;
                c.last = at;
            }
            None => {
                self.files_touched.push(path.to_string());
                self.file_changes
                    .insert(path.to_string(), FileChanges { count: 1, last: at });
            }
        }
    }

    /// The first thing a person asked in this session.
    pub fn first_user_prompt(&self) -> Option<&str> {
        self.messages
            .iter()
            .find(|m| m.is_real_user() && !m.content.trim().is_empty())
            .map(|m| m.content.as_str())
    }

    /// Todo items already done, in list order.
    pub fn completed_todos(&self) -> impl Iterator<Item = &Todo> {
        self.todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
    }

    /// Todo items still to do (pending or in progress), in list order.
    pub fn open_todos(&self) -> impl Iterator<Item = &Todo> {
        self.todos
            .iter()
            .filter(|t| t.status != TodoStatus::Completed)
    }

    /// Whether the agent compacted its context at or after message `from` and before message
    /// `to`: a request before it and one after carried different conversations, so their
    /// recorded sizes do not compare.
    /// Places are the whole session's; with folded messages, `to` is past them.
    pub fn compacted_between(&self, from: usize, to: usize) -> bool {
        let (from, to) = match self.folded.as_deref() {
            Some(f) => {
                if f.last_compaction.is_some_and(|c| c >= from && c < to) {
                    return true;
                }
                let kept = |p: usize| match p.checked_sub(f.at) {
                    Some(past) => f.at + past.saturating_sub(f.messages),
                    None => p,
                };
                (kept(from), kept(to))
            }
            None => (from, to),
        };
        self.messages
            .get(from..to)
            .unwrap_or_default()
            .iter()
            .any(|m| m.is(MessageKind::Compaction))
    }

    /// Records the context a request at message `at` carried (`tokens`, as the agent recorded
    /// it). The session's first request stays the baseline of the newest one until a
    /// compaction; after it, the first request past the compaction is.
    pub fn record_context_usage(&mut self, tokens: u64, at: usize, model: Option<&str>) {
        let compacted = self
            .context_usage
            .as_ref()
            .is_some_and(|u| self.compacted_between(u.at_message, self.end()));
        self.record_context_usage_after(tokens, at, compacted, model);
    }

    /// `record_context_usage` for a reader that knows every message of the session, the ones
    /// after this request included, and whether the agent compacted its context since the
    /// request recorded before (`compacted_between` from that request's `at_message` to this
    /// one's place).
    pub fn record_context_usage_after(
        &mut self,
        tokens: u64,
        at: usize,
        compacted: bool,
        model: Option<&str>,
    ) {
        let (first_tokens, first_at_message) = match &self.context_usage {
            Some(u) if !compacted => (u.first_tokens, u.first_at_message),
            _ => (tokens, at),
        };
        self.context_usage = Some(ContextUsage {
            tokens,
            window: None,
            at_message: at,
            first_tokens,
            first_at_message,
            model: model.map(str::to_string),
        });
    }

    /// Counts per role, in role order.
    pub fn role_counts(&self) -> BTreeMap<Role, usize> {
        let mut counts = BTreeMap::new();
        for m in &self.messages {
            *counts.entry(m.role).or_insert(0) += 1;
        }
        counts
    }

    /// Conversation messages as a person would count them: user and assistant words.
    pub fn message_count(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| matches!(m.role, Role::User | Role::Assistant))
            .count()
    }

    /// Sets `created` / `updated` from the messages when the source gave no better values.
    pub fn fill_times_from_messages(&mut self) {
        // Folded messages came between the kept ones: those before the fold are seen first.
        let (mut first, mut last) = (None, None);
        let at = self.folded.as_ref().map_or(self.messages.len(), |f| f.at);
        for m in &self.messages[..at.min(self.messages.len())] {
            see_time(&mut first, &mut last, m.timestamp.as_ref());
        }
        if let Some(f) = self.folded.as_deref() {
            see_time(&mut first, &mut last, f.first_time.as_ref());
            see_time(&mut first, &mut last, f.last_time.as_ref());
        }
        for m in self.messages.iter().skip(at) {
            see_time(&mut first, &mut last, m.timestamp.as_ref());
        }
        if self.created.is_none() {
            self.created = first;
        }
        if let Some(last) = last
            && self
                .updated
                .as_ref()
                .and_then(Timestamp::time)
                .is_none_or(|u| last.time().is_some_and(|l| l > u))
        {
            self.updated = Some(last);
        }
    }

    /// Pairs every tool call with its result by id; unpaired ones are marked and reported.
    ///
    /// Orphans are kept (they are part of what the source said) but flagged with
    /// `metadata.orphan = true` so that writers can leave them out of a target.
    pub fn pair_tool_calls(&mut self) {
        use foldhash::HashSet;
        // Which calls and results are unpaired, found with the ids borrowed (a long session has
        // tens of thousands), then marked. Those of folded messages pair too.
        let folded = self.folded.as_deref();
        let orphans: Vec<usize> = {
            let mut calls: HashSet<&str> = HashSet::default();
            let mut results: HashSet<&str> = HashSet::default();
            for m in &self.messages {
                if let Some(id) = &m.tool_call_id {
                    match m.role {
                        Role::ToolCall => calls.insert(id),
                        Role::ToolResult => results.insert(id),
                        _ => false,
                    };
                }
            }
            self.messages
                .iter()
                .enumerate()
                .filter(|(_, m)| match (m.role, m.tool_call_id.as_deref()) {
                    (Role::ToolCall, Some(id)) => {
                        !results.contains(id) && !folded.is_some_and(|f| f.result_ids.contains(id))
                    }
                    (Role::ToolResult, Some(id)) => {
                        !calls.contains(id) && !folded.is_some_and(|f| f.call_ids.contains(id))
                    }
                    (Role::ToolCall | Role::ToolResult, None) => true,
                    _ => false,
                })
                .map(|(i, _)| i)
                .collect()
        };
        if let Some(f) = self.folded.as_deref_mut() {
            f.broken |= self
                .messages
                .iter()
                .any(|m| match (m.role, &m.tool_call_id) {
                    (Role::ToolCall, id) => {
                        f.uncalled_ids.contains(id.as_deref().unwrap_or_default())
                    }
                    (Role::ToolResult, Some(id)) => f.unanswered_ids.contains(id),
                    _ => false,
                });
        }
        let mut orphan_calls = Vec::new();
        let mut orphan_results = Vec::new();
        for i in orphans {
            let m = &mut self.messages[i];
            m.metadata.insert("orphan", Value::Bool(true));
            if m.role == Role::ToolCall {
                orphan_calls.push(i);
            } else {
                orphan_results.push(i);
            }
        }
        // Warned of in the session's order: the folded ones came where they were taken out.
        let (at, folded_calls, folded_results) = match self.folded.as_deref_mut() {
            Some(f) => (
                f.at,
                std::mem::take(&mut f.unanswered),
                std::mem::take(&mut f.uncalled),
            ),
            None => (self.messages.len(), Vec::new(), Vec::new()),
        };
        self.stats.orphan_tool_calls = orphan_calls.len() + folded_calls.len();
        self.stats.orphan_tool_results = orphan_results.len() + folded_results.len();
        let in_order = |kept: Vec<usize>,
                        folded: Vec<(Option<usize>, String)>,
                        warning: fn(&Message) -> String| {
            let (before, after): (Vec<usize>, Vec<usize>) = kept.into_iter().partition(|&i| i < at);
            let kept = |ix: Vec<usize>| {
                ix.into_iter()
                    .map(|i| (source_line(&self.messages[i]), warning(&self.messages[i])))
                    .collect::<Vec<_>>()
            };
            let mut all = kept(before);
            all.extend(folded);
            all.extend(kept(after));
            all
        };
        let calls = in_order(orphan_calls, folded_calls, unanswered_call_warning);
        let results = in_order(orphan_results, folded_results, uncalled_result_warning);
        for (line, msg) in calls.into_iter().chain(results) {
            self.warn(line, msg);
        }
    }
}

/// What `Session::pair_tool_calls` says of a call without a result.
fn unanswered_call_warning(m: &Message) -> String {
    format!(
        "tool call {} ({}) has no result",
        m.tool_call_id.as_deref().unwrap_or("<no id>"),
        m.tool_name.as_deref().unwrap_or("?")
    )
}

/// What `Session::pair_tool_calls` says of a result without a call.
fn uncalled_result_warning(m: &Message) -> String {
    format!(
        "tool result {} has no matching call",
        m.tool_call_id.as_deref().unwrap_or("<no id>")
    )
}

/// The source line a message came from, when the reader recorded it.
pub fn source_line(m: &Message) -> Option<usize> {
    m.metadata.get_u64("line").map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_of_is_the_time_a_timestamp_keeps() {
        for s in [
            "2026-11-30T02:12:39.853Z",
            "2026-11-30T02:12:39.8539999Z",
            "2026-11-30T02:12:39Z",
            "2026-11-30T02:12:39.1+05:30",
            "2026-11-30T23:59:59.9999-11:00",
            "2026-11-30 02:12:39.5",
            "2026-11-30T02:12:39",
            "2016-12-31T23:59:60.5Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999+00:00",
            "9999-12-31T23:59:59.999-01:00",
            "",
            "yesterday",
        ] {
            assert_eq!(time_of(s), Timestamp::parse(s).time(), "{s}");
        }
    }

    /// A timestamp kept in place (written as its own normalised value) reads as one kept as
    /// two strings: normalised shapes with every field at and past its bounds (leap years,
    /// month 13, hour 24, second 60, year 0), near misses (lower case, no zone, more digits,
    /// an offset) and random bytes in those places, against what the strings were.
    #[test]
    fn a_timestamp_kept_in_place_reads_as_its_two_strings() {
        let mut next = crate::text::test_rng(0x7153_0000_2026_1201);
        let field = |next: &mut dyn FnMut(u64) -> usize, width: usize, edges: &[u32]| -> String {
            let n = if next(3) == 0 {
                next(10u64.pow(width as u32)) as u32
            } else {
                edges[next(edges.len() as u64)]
            };
            format!("{n:0width$}")
        };
        let mut checked = 0;
        for _ in 0..20_000 {
            let mut s = if next(2) == 0 {
                // Any valid time.
                format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                    next(10_000),
                    1 + next(12),
                    1 + next(28),
                    next(24),
                    next(60),
                    next(60),
                    next(1000)
                )
            } else {
                format!(
                    "{}-{}-{}T{}:{}:{}.{}Z",
                    field(&mut next, 4, &[0, 1, 1900, 2000, 2024, 2026, 2100, 9999]),
                    field(&mut next, 2, &[0, 1, 2, 9, 12, 13]),
                    field(&mut next, 2, &[0, 1, 28, 29, 30, 31, 32]),
                    field(&mut next, 2, &[0, 9, 23, 24]),
                    field(&mut next, 2, &[0, 59, 60]),
                    field(&mut next, 2, &[0, 59, 60, 61]),
                    field(&mut next, 3, &[0, 1, 500, 999]),
                )
            };
            match next(8) {
                0 => s = s.replace('T', "t"),
                1 => s = s.replace('Z', "z"),
                2 => s = s.replace('Z', "+00:00"),
                3 => s = s.replace('Z', "1Z"),
                4 => s.truncate(s.len() - 1),
                5 => {
                    let at = next(s.len() as u64);
                    let c = [b'a', b' ', b'-', b'9', b':'][next(5)];
                    let mut b = s.into_bytes();
                    b[at] = c;
                    s = String::from_utf8(b).unwrap();
                }
                _ => {}
            }
            let t = Timestamp::parse(&s);
            assert_eq!(t.original(), s);
            assert_eq!(t.utc(), parse_time(&s).map(utc_millis).as_deref(), "{s}");
            let back: Timestamp =
                serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
            assert_eq!(back, t, "{s}");
            checked += usize::from(matches!(t.0, Repr::Normal(_)));
        }
        // Most of the generated times are normalised ones, kept in place.
        assert!(checked > 2_000, "{checked}");
    }

    #[test]
    fn a_span_is_earliest_and_newest_with_ties_to_the_first_and_last_written() {
        let mut span = TimeSpan::default();
        for s in [
            "not a time",
            "2026-01-02T00:00:00.000Z",
            "2026-01-01T00:00:00.000Z",
            "2026-01-01T00:00:00.000+00:00",
            "2026-01-03T00:00:00.000Z",
            "2026-01-03T00:00:00.0001Z",
            "also not",
        ] {
            span.see_str(s);
        }
        assert_eq!(span.first().unwrap().original(), "2026-01-01T00:00:00.000Z");
        assert_eq!(span.last().unwrap().original(), "2026-01-03T00:00:00.0001Z");
        let mut raw = TimeSpan::default();
        raw.see_str("a");
        raw.see(&Timestamp::parse("b"));
        assert_eq!(raw.first().unwrap().original(), "a");
        assert_eq!(raw.last().unwrap().original(), "b");
        assert!(TimeSpan::default().first().is_none());
    }
}
