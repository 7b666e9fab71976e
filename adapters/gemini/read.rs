//! Reads a Gemini CLI session into the neutral model, applying its records the way the CLI
//! does: metadata lines and `$set` merge, a message line whose `id` was seen replaces that
//! message in place, `$set.messages` replaces the list, `$rewindTo` drops a message and all after
//! it. The older single-document `.json` is one metadata record with its messages.
//!
//! The listing scan (`scan.rs`) applies the same records to lighter messages; what decides a
//! message's role, text and times lives here, in functions both use.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;
use serde_json::{Map, Value, json};

use crate::jsonl::{self, Line, str_field};
use crate::model::{Message, Role, Session, SubagentLink, Timestamp, Todo};

// ------------------------------------------------------------------------- records, generic

/// One line of a session file, told apart by its keys as the CLI tells them apart.
pub enum Record<M> {
    /// `{"$rewindTo": id}`
    Rewind(String),
    /// A message: any object with a string `id`.
    Message(String, M),
    /// `{"$set": {...}}`: metadata, and with `messages` a whole new list.
    Set {
        meta: Map<String, Value>,
        messages: Option<Vec<(String, M)>>,
    },
    /// A metadata record (string `sessionId` and `projectHash`), maybe with `messages` (the
    /// older single document).
    Meta {
        meta: Map<String, Value>,
        messages: Option<Vec<(String, M)>>,
    },
    /// Anything else: the CLI skips it.
    Other,
}

impl<M> Record<M> {
    /// The record with each message replaced by where it lies in the file (line `no`).
    pub fn placed(self, no: usize) -> Record<super::fold::Place> {
        let list = |l: Option<Vec<(String, M)>>| {
            l.map(|l| {
                l.into_iter()
                    .enumerate()
                    .map(|(k, (id, _))| (id, (no, Some(k))))
                    .collect()
            })
        };
        match self {
            Record::Rewind(id) => Record::Rewind(id),
            Record::Message(id, _) => Record::Message(id, (no, None)),
            Record::Set { meta, messages } => Record::Set {
                meta,
                messages: list(messages),
            },
            Record::Meta { meta, messages } => Record::Meta {
                meta,
                messages: list(messages),
            },
            Record::Other => Record::Other,
        }
    }
}

/// The conversation the records build: metadata and messages in order, by id.
pub struct Conversation<M> {
    pub meta: Map<String, Value>,
    messages: Vec<(String, M)>,
    index: HashMap<String, usize>,
}

impl<M> Default for Conversation<M> {
    fn default() -> Self {
        Conversation {
            meta: Map::new(),
            messages: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<M> Conversation<M> {
    pub fn apply(&mut self, r: Record<M>) {
        match r {
            Record::Rewind(id) => match self.index.get(&id) {
                Some(&at) => self.truncate(at),
                None => self.truncate(0),
            },
            Record::Message(id, m) => self.put(id, m),
            Record::Set { meta, messages } => {
                if let Some(list) = messages {
                    self.truncate(0);
                    for (id, m) in list {
                        self.put(id, m);
                    }
                }
                self.meta.extend(meta);
            }
            Record::Meta { meta, messages } => {
                self.meta.extend(meta);
                for (id, m) in messages.into_iter().flatten() {
                    self.put(id, m);
                }
            }
            Record::Other => {}
        }
    }

    /// First position, last content.
    fn put(&mut self, id: String, m: M) {
        match self.index.get(&id) {
            Some(&at) => self.messages[at].1 = m,
            None => {
                self.index.insert(id.clone(), self.messages.len());
                self.messages.push((id, m));
            }
        }
    }

    fn truncate(&mut self, at: usize) {
        for (id, _) in self.messages.drain(at..) {
            self.index.remove(&id);
        }
    }

    /// The messages with their ids, in order.
    pub fn entries(&self) -> &[(String, M)] {
        &self.messages
    }

    pub fn into_entries(self) -> Vec<(String, M)> {
        self.messages
    }

    pub fn messages(&self) -> impl Iterator<Item = &M> {
        self.messages.iter().map(|(_, m)| m)
    }

    pub fn into_messages(self) -> Vec<M> {
        self.messages.into_iter().map(|(_, m)| m).collect()
    }

    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(Value::as_str)
    }
}

// ------------------------------------------------------------------------- shared rules

/// What the reader and the scan need of one content part.
pub struct PartView<'a> {
    pub text: Option<&'a str>,
    pub thought: bool,
}

/// What a user message is, by its text parts.
pub struct UserSplit {
    /// Injected context and commands the CLI skips: (kind, text).
    pub context: Vec<(&'static str, String)>,
    /// The person's words, when there are any.
    pub words: Option<String>,
}

/// Splits a user message the way the CLI treats it: text starting with `/` or `?` is a
/// command, `<session_context>` / `<hook_context>` its own context; the rest is the person's
/// words. After a cancelled call the CLI merges the first prompt into its context message as a
/// second part: that part is words again. `relay` is the message's `sessionRelay` field (a
/// message a relay wrote: its kind is said, a leading escape part is not part of the text).
pub fn split_user(parts: &[PartView], relay: Option<&str>) -> UserSplit {
    let mut texts: Vec<&str> = parts
        .iter()
        .filter(|p| !p.thought)
        .filter_map(|p| p.text)
        .collect();
    if let Some(kind) = relay {
        if texts.len() > 1 && texts[0] == super::ESCAPE_PART {
            texts.remove(0);
        }
        let text = texts.concat();
        return if kind == "context" {
            UserSplit {
                context: vec![("context", text)],
                words: None,
            }
        } else {
            UserSplit {
                context: Vec::new(),
                words: Some(text),
            }
        };
    }
    let mut split = UserSplit {
        context: Vec::new(),
        words: None,
    };
    let joined = texts.concat();
    let trimmed = super::cli_trim(&joined);
    match super::ignored_kind(trimmed) {
        None if trimmed.is_empty() => {}
        None => split.words = Some(joined),
        Some("command") => split.context.push(("command", joined)),
        Some(kind) => {
            // Leading context parts, then what follows them.
            let lead = texts
                .iter()
                .take_while(|t| super::ignored_kind(super::cli_trim(t)) == Some("context"))
                .count()
                .max(1);
            split.context.push((kind, texts[..lead].concat()));
            let rest = texts[lead..].concat();
            if !super::cli_trim(&rest).is_empty() {
                split.words = Some(rest);
            }
        }
    }
    split
}

/// A gemini message's own text: its string content, or its text parts without thoughts.
pub fn gemini_text(parts: &[PartView]) -> String {
    parts
        .iter()
        .filter(|p| !p.thought)
        .filter_map(|p| p.text)
        .collect()
}

/// Whether a message counts as the person's words or an answer (what `show` counts).
pub fn counts_as_message(kind: &str, parts: &[PartView], relay: Option<&str>) -> bool {
    match kind {
        "user" => split_user(parts, relay).words.is_some(),
        "gemini" => !gemini_text(parts).trim().is_empty(),
        _ => false,
    }
}

/// The first directory the CLI's session context names (`Workspace Directories:`), for files
/// outside a store whose project cannot be looked up.
pub fn context_cwd(text: &str) -> Option<String> {
    if !text.trim_start().starts_with("<session_context>") {
        return None;
    }
    let rest = &text[text.find("Workspace Directories:")?..];
    rest.lines()
        .skip(1)
        .map(str::trim)
        .find_map(|l| l.strip_prefix("- "))
        .map(|p| p.trim().to_string())
        .filter(|p| p.starts_with('/'))
}

/// Where a session file's directory comes from, in order: the project folder it is in, the
/// registered path whose sha256 is its `projectHash`, the `directories` it records, the
/// directory its session context names.
pub fn resolve_cwd(
    path: &Path,
    meta: &Map<String, Value>,
    context: Option<&str>,
) -> Option<String> {
    if let Some((gemini, folder)) = super::store_location(path)
        && let Some(cwd) = super::project::folder_cwd(&gemini, &folder)
    {
        return Some(cwd);
    }
    meta.get("projectHash")
        .and_then(Value::as_str)
        .and_then(|h| super::project::cwd_for_hash(path, h))
        .or_else(|| {
            meta.get("directories")
                .and_then(|d| d.get(0))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| context.and_then(context_cwd))
}

/// Start and last activity: the metadata's `startTime` / `lastUpdated`, else the first and last
/// message times. A relay's `lastUpdated` says when it was written, not when anyone was active
/// in it (it is written fresh, or the CLI would delete the relay of an old session at its next
/// start): its last activity is its newest message's time, as for a relay into any other store.
pub fn times(
    meta: &Map<String, Value>,
    first_message: Option<&str>,
    last_message: Option<&str>,
    relayed: bool,
) -> (Option<Timestamp>, Option<Timestamp>) {
    let message = |t: Option<&str>| t.filter(|s| !s.is_empty()).map(Timestamp::parse);
    let stamp = |key: &str, fallback: Option<&str>| {
        meta.get(key)
            .and_then(Timestamp::from_value)
            .or_else(|| message(fallback))
    };
    let updated = match message(last_message) {
        Some(last) if relayed => Some(last),
        _ => stamp("lastUpdated", last_message),
    };
    (stamp("startTime", first_message), updated)
}

/// Whether the reader met the provenance record a relay writes.
fn is_relay(session: &Session) -> bool {
    session
        .stats
        .skipped_types
        .contains_key(&format!("type:{}", RELAY_RECORD))
}

/// The `type` of the provenance record a relay writes after the metadata.
const RELAY_RECORD: &str = "session-relay";

/// The title: the summary the CLI (or a relay) set, else the first prompt.
pub fn title(meta: &Map<String, Value>, first_prompt: Option<&str>) -> Option<String> {
    meta.get("summary")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(crate::text::one_line)
        .or_else(|| first_prompt.map(crate::text::one_line))
}

// ------------------------------------------------------------------------- reading

/// The format of a file: the older single JSON document, or JSONL.
fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

pub fn read(path: &Path, opts: crate::adapter::ReadOptions) -> Result<Session> {
    let parent = super::subagent_parent(path);
    let format = if parent.is_some() {
        "gemini-subagent"
    } else if is_document(path) {
        "gemini-json"
    } else {
        "gemini-jsonl"
    };
    let stem = path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut session = Session::new(super::NAME, format, stem);
    session.source_path = Some(path.display().to_string());
    let mut conv: Conversation<(Value, usize)> = Conversation::default();
    let max = opts.max_tool_output;

    let mut read_lines = true;
    if is_document(path) {
        read_lines = !read_document(path, &mut session, &mut conv, max)?;
    }
    // The older single document is one record: nothing in it is final before its end.
    let mut folding = match &opts.fold {
        Some(fold) if read_lines && !is_document(path) => {
            Some(super::fold::Folding::new(super::fold::places(path)?, fold))
        }
        _ => None,
    };
    let mut converted = None;
    if read_lines {
        let prepare = move |v: &mut Value| shrink_to(v, max);
        let lines = jsonl::Pass {
            stream_long: true,
            ..Default::default()
        };
        let (mut long_malformed, mut long_lossy, mut long_halves) =
            (Vec::new(), Vec::new(), Vec::new());
        let mut cut_off = false;
        let mut pass = jsonl::for_each_line_with(path, lines, prepare, |no, line| {
            let r = match line {
                Line::Json(v) => record(v, no, &mut session),
                Line::Long {
                    start,
                    len,
                    terminated,
                } => {
                    let at = (no, start, len);
                    let read = read_long(path, at, max, &mut session, &mut folding);
                    if let Ok((_, replaced)) = &read {
                        if replaced.utf8 {
                            long_lossy.push(no);
                        }
                        if replaced.surrogates {
                            long_halves.push(no);
                        }
                    }
                    match read.map(|r| r.0) {
                        Ok(Some(r)) => r,
                        Ok(None) => return Ok(()),
                        Err(_) if !terminated => {
                            cut_off = true;
                            return Ok(());
                        }
                        Err(e) => {
                            long_malformed.push((no, e));
                            return Ok(());
                        }
                    }
                }
                Line::Malformed(_) => return Ok(()),
            };
            match folding.as_mut() {
                Some(f) => f.apply(r, no, &mut session),
                None => conv.apply(r),
            }
            Ok(())
        })?;
        converted = folding.map(|f| f.finish(&mut session));
        pass.truncated_tail |= cut_off;
        for (lines, long) in [
            (&mut pass.invalid_utf8_lines, long_lossy),
            (&mut pass.lone_surrogate_lines, long_halves),
        ] {
            if !long.is_empty() {
                lines.extend(long);
                lines.sort_unstable();
            }
        }
        session.record_pass(&pass);
        for (no, e) in long_malformed {
            session.stats.malformed_lines += 1;
            session.warn(Some(no), format!("malformed JSON line skipped: {e}"));
        }
        if let Some((meta, _, _)) = converted.as_mut() {
            conv.meta = std::mem::take(meta);
        }
        if pass.lines > 0 && !conv.meta.contains_key("sessionId") {
            session.warn(
                None,
                format!(
                    "{} is not a Gemini CLI session: no record has a sessionId and a projectHash \
                     (Gemini CLI skips it and its cleanup deletes it)",
                    path.display()
                ),
            );
        }
    }

    if let Some(id) = conv.meta_str("sessionId") {
        session.id = id.to_string();
    }
    session.parent_id = parent;
    for key in [
        "projectHash",
        "kind",
        "directories",
        "summary",
        "memoryScratchpad",
    ] {
        if let Some(v) = conv.meta.get(key).filter(|v| !v.is_null()) {
            session.extra.insert(key.to_string(), v.clone());
        }
    }
    let meta = std::mem::take(&mut conv.meta);
    let state = match converted {
        Some((_, state, (first_ts, last_ts))) => {
            (session.created, session.updated) = times(
                &meta,
                first_ts.as_deref(),
                last_ts.as_deref(),
                is_relay(&session),
            );
            state
        }
        None => {
            let messages = conv.into_messages();
            let first_ts = messages
                .iter()
                .find_map(|(m, _)| str_field(m, "timestamp").filter(|s| !s.is_empty()));
            let last_ts = messages
                .iter()
                .rev()
                .find_map(|(m, _)| str_field(m, "timestamp").filter(|s| !s.is_empty()));
            (session.created, session.updated) =
                times(&meta, first_ts, last_ts, is_relay(&session));
            let mut state = Convert::default();
            for (m, line) in &messages {
                convert(m, *line, &mut session, &mut state);
            }
            state
        }
    };
    if let Some(t) = state.todos {
        session.todos = t;
    }
    if let Some(model) = state.model {
        session.extra.insert("model".into(), json!(model));
    }
    session.cwd = resolve_cwd(path, &meta, state.first_context.as_deref());
    session.title = title(&meta, session.first_user_prompt());
    if session.parent_id.is_none() {
        session.subagents = find_subagents(path, &session.id);
    }
    let conversation = session.message_count() > 0
        || session.messages.iter().any(|m| m.role == Role::ToolCall)
        || session.folded.as_ref().is_some_and(|f| f.messages > 0);
    if !conversation && session.warnings.iter().all(|w| w.about_characters()) {
        session.warn(
            None,
            "no conversation in this session (Gemini CLI does not list it, and deletes it at its next start)",
        );
    }
    session.pair_tool_calls();
    Ok(session)
}

/// What `read_long` read: a record to apply, and what reading it replaced.
type LongRead = (Option<Record<(Value, usize)>>, jsonl::Replaced);

/// Reads line `no`, longer than `LONG_LINE`, from the file (`super::long`): a list of messages a
/// message at a time, anything else whole. Returns the record to apply (`None`: the list's
/// messages were handed to the fold already) and what reading it replaced, or why the line
/// is malformed.
fn read_long(
    path: &Path,
    (no, start, len): (usize, u64, u64),
    max: Option<usize>,
    session: &mut Session,
    folding: &mut Option<super::fold::Folding>,
) -> Result<LongRead, String> {
    use super::long::{self, List};
    // A fold's first pass has read the line once already.
    let list = match folding.as_ref().and_then(|f| f.long_list(no)) {
        Some(list) => list,
        None => {
            let (line, lossy) =
                long::line_noting_lossy(path, start, len).map_err(|e| format!("{e:#}"))?;
            let light = super::scan::light_long(line);
            let lossy = lossy.get();
            let Some((light, repeated)) = light else {
                // Parsed again for the parser's own words.
                return Err(match long::whole(path, start, len) {
                    Err(e) => format!("{e:#}"),
                    Ok(_) => "not valid JSON".into(),
                });
            };
            match long::list_of(&light, repeated) {
                Some(list) => list,
                // A message, a rewind, metadata alone: one record, whatever its length.
                None => {
                    let r = whole_long(path, (no, start, len), max, session)?;
                    return Ok((Some(r), lossy));
                }
            }
        }
    };
    if let List::Set = list {
        *session
            .stats
            .skipped_types
            .entry("$set".into())
            .or_default() += 1;
    }
    let shrunk = |mut v: Value| {
        shrink_to(&mut v, max);
        v
    };
    fn listed<M>(list: List, meta: Map<String, Value>, messages: Vec<(String, M)>) -> Record<M> {
        let messages = Some(messages);
        match list {
            List::Set => Record::Set { meta, messages },
            List::Meta => Record::Meta { meta, messages },
        }
    }
    let failed = |e: anyhow::Error| format!("{e:#}");
    match folding {
        Some(f) => {
            let mut placed = Vec::new();
            let (meta, lossy) = long::stream_list(path, start, len, list, &mut |id, v| {
                f.offer_listed(&id, no, placed.len(), shrunk(v), session);
                let k = placed.len();
                placed.push((id, (no, Some(k))));
            })
            .map_err(|e| {
                // Messages of it were taken already: the read cannot be what a full read is.
                session.folded.get_or_insert_default().broken = true;
                failed(e)
            })?;
            f.listed(listed(list, meta, placed));
            Ok((None, lossy))
        }
        None => {
            let mut messages = Vec::new();
            let (meta, lossy) = long::stream_list(path, start, len, list, &mut |id, v| {
                messages.push((id, (shrunk(v), no)));
            })
            .map_err(failed)?;
            Ok((Some(listed(list, meta, messages)), lossy))
        }
    }
}

/// A long line that is not a list of messages, parsed whole.
fn whole_long(
    path: &Path,
    (no, start, len): (usize, u64, u64),
    max: Option<usize>,
    session: &mut Session,
) -> Result<Record<(Value, usize)>, String> {
    let mut v = super::long::whole(path, start, len).map_err(|e| format!("{e:#}"))?;
    shrink_to(&mut v, max);
    Ok(record(v, no, session))
}

/// Reads the older single JSON document. Returns false when the file is not one (then it is
/// read as JSONL).
fn read_document(
    path: &Path,
    session: &mut Session,
    conv: &mut Conversation<(Value, usize)>,
    max: Option<usize>,
) -> Result<bool> {
    let Some(bytes) = jsonl::read_document(path)?.bytes(|line, w| session.warn(line, w)) else {
        return Ok(true);
    };
    let text = jsonl::document_text(&bytes, |w| session.warn(None, w));
    let Ok(mut v) = serde_json::from_str::<Value>(&text) else {
        return Ok(false);
    };
    shrink_to(&mut v, max);
    session.stats.lines = text.lines().count();
    let r = record(v, 1, session);
    if !matches!(r, Record::Meta { .. }) {
        session.warn(
            None,
            format!(
                "{} is a JSON document without sessionId and projectHash: not a Gemini CLI session",
                path.display()
            ),
        );
    }
    conv.apply(r);
    Ok(true)
}

fn is_str(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(Value::is_string)
}

/// One parsed line as a record, messages carrying their line number.
fn record(v: Value, no: usize, session: &mut Session) -> Record<(Value, usize)> {
    let Value::Object(mut obj) = v else {
        *session
            .stats
            .unknown_types
            .entry("<not an object>".into())
            .or_default() += 1;
        return Record::Other;
    };
    let list = |v: Option<Value>| match v {
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .filter_map(|m| {
                    let id = str_field(&m, "id")?.to_string();
                    Some((id, (m, no)))
                })
                .collect::<Vec<_>>(),
        ),
        _ => None,
    };
    if obj.get("$rewindTo").is_some_and(Value::is_string) {
        let Some(Value::String(id)) = obj.remove("$rewindTo") else {
            unreachable!()
        };
        *session
            .stats
            .skipped_types
            .entry("$rewindTo".into())
            .or_default() += 1;
        return Record::Rewind(id);
    }
    if obj.get("id").is_some_and(Value::is_string) {
        let id = obj["id"].as_str().unwrap_or_default().to_string();
        return Record::Message(id, (Value::Object(obj), no));
    }
    if obj.get("$set").is_some_and(Value::is_object) {
        let Some(Value::Object(mut set)) = obj.remove("$set") else {
            unreachable!()
        };
        let messages = list(set.remove("messages"));
        *session
            .stats
            .skipped_types
            .entry("$set".into())
            .or_default() += 1;
        return Record::Set {
            meta: set,
            messages,
        };
    }
    let v = Value::Object(obj);
    if is_str(&v, "sessionId") && is_str(&v, "projectHash") {
        let Value::Object(mut obj) = v else {
            unreachable!()
        };
        let messages = list(obj.remove("messages"));
        return Record::Meta {
            meta: obj,
            messages,
        };
    }
    let kind = str_field(&v, "type")
        .map(|t| format!("type:{t}"))
        .unwrap_or_else(|| "<no id, $set or sessionId>".into());
    if str_field(&v, "type") == Some(RELAY_RECORD) {
        // The provenance record a relay leaves; Gemini CLI skips it.
        *session.stats.skipped_types.entry(kind).or_default() += 1;
    } else {
        *session.stats.unknown_types.entry(kind).or_default() += 1;
    }
    Record::Other
}

/// The parts of a message's content: a string is one text part (the CLI's `ensurePartArray`).
fn parts(content: Option<&Value>) -> Vec<&Value> {
    match content {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v @ (Value::String(_) | Value::Object(_))) => vec![v],
        _ => Vec::new(),
    }
}

fn view(p: &Value) -> PartView<'_> {
    match p {
        Value::String(s) => PartView {
            text: Some(s),
            thought: false,
        },
        _ => PartView {
            text: str_field(p, "text"),
            thought: p.get("thought").and_then(Value::as_bool) == Some(true),
        },
    }
}

#[derive(Default)]
pub struct Convert {
    /// Calls emitted without a result yet: id -> name.
    open: Vec<(String, String)>,
    /// Calls whose result was emitted.
    answered: HashSet<String>,
    todos: Option<Vec<Todo>>,
    model: Option<String>,
    first_context: Option<String>,
    synthetic: usize,
}

pub fn convert(m: &Value, line: usize, session: &mut Session, st: &mut Convert) {
    let ts = m.get("timestamp").and_then(Timestamp::from_value);
    let id = str_field(m, "id").unwrap_or_default();
    let base = |role: Role, content: String| {
        Message::new(role, content)
            .with_time(ts.clone())
            .with_meta("line", line)
            .with_meta("message_id", id)
    };
    let kind = str_field(m, "type").unwrap_or_default();
    let ps = parts(m.get("content"));
    let views: Vec<PartView> = ps.iter().map(|p| view(p)).collect();
    match kind {
        "user" => {
            let relay = str_field(m, super::RELAY_FIELD);
            let split = split_user(&views, relay);
            for (k, text) in split.context {
                if k == "context" && st.first_context.is_none() {
                    st.first_context = Some(text.clone());
                }
                session
                    .messages
                    .push(base(Role::System, text).with_meta("kind", k));
            }
            if let Some(words) = split.words {
                let mut msg = base(Role::User, words);
                if let Some(d) = m.get("displayContent").filter(|d| !d.is_null()) {
                    let shown: String =
                        parts(Some(d)).iter().filter_map(|p| view(p).text).collect();
                    if shown != msg.content {
                        msg = msg.with_meta("display_content", shown);
                    }
                }
                session.messages.push(msg);
            }
            for p in &ps {
                if let Some(fr) = p.get("functionResponse") {
                    function_response(fr, &base, session, st);
                }
            }
        }
        "gemini" => gemini(m, &ps, &views, &base, session, st),
        "info" | "warning" | "error" => {
            let text = match m.get("content") {
                Some(Value::String(s)) => s.clone(),
                other => gemini_text(&parts(other).iter().map(|p| view(p)).collect::<Vec<_>>()),
            };
            session
                .messages
                .push(base(Role::System, text).with_meta("kind", kind));
        }
        other => {
            // The CLI cannot draw it (a resume crashes on it) and does not count it.
            *session
                .stats
                .unknown_types
                .entry(format!(
                    "message:{}",
                    if other.is_empty() { "<no type>" } else { other }
                ))
                .or_default() += 1;
        }
    }
}

fn gemini(
    m: &Value,
    ps: &[&Value],
    views: &[PartView],
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    st: &mut Convert,
) {
    // Its place in the whole session: older turns may have been folded.
    let first = session.end();
    if let Some(model) = str_field(m, "model") {
        st.model = Some(model.to_string());
    }
    // Thoughts: the recorded ones, else the thought parts of rewritten content.
    let thoughts: Vec<String> = match m.get("thoughts").and_then(Value::as_array) {
        Some(t) if !t.is_empty() => t
            .iter()
            .map(|t| {
                let subject = str_field(t, "subject").unwrap_or_default().trim();
                let body = str_field(t, "description").unwrap_or_default();
                if subject.is_empty() {
                    body.to_string()
                } else {
                    format!("**{subject}**\n\n{body}")
                }
            })
            .collect(),
        _ => views
            .iter()
            .filter(|p| p.thought)
            .filter_map(|p| p.text.map(str::to_string))
            .collect(),
    };
    for t in thoughts.into_iter().filter(|t| !t.trim().is_empty()) {
        session.messages.push(base(Role::Reasoning, t));
    }
    let text = gemini_text(views);
    if !text.trim().is_empty() {
        session.messages.push(base(Role::Assistant, text));
    }
    // Calls: the recorded toolCalls, then functionCall parts they do not cover (the history
    // the CLI rewrites after a cancelled call has only those).
    let calls = m
        .get("toolCalls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut ids = Vec::new();
    let mut results: Vec<(usize, Option<chrono::DateTime<chrono::Utc>>, Message)> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let name = str_field(c, "name").unwrap_or("?").to_string();
        let call_id = str_field(c, "id").map(str::to_string).unwrap_or_else(|| {
            st.synthetic += 1;
            format!("{}#{}", str_field(m, "id").unwrap_or("call"), st.synthetic)
        });
        let args = c.get("args").cloned().unwrap_or(Value::Null);
        let status = str_field(c, "status").unwrap_or_default();
        let mut call = tool_call(base, &call_id, &name, args, session, st, status);
        call = call.with_meta("status", status);
        if let Some(d) = str_field(c, "displayName") {
            call = call.with_meta("display_name", d);
        }
        session.messages.push(call);
        ids.push(call_id.clone());
        match c.get("result").filter(|r| !r.is_null()) {
            Some(r) => {
                let mut res = base(Role::ToolResult, String::new());
                if let Some(t) = c.get("timestamp").and_then(Timestamp::from_value) {
                    res.timestamp = Some(t);
                }
                res.tool_call_id = Some(call_id.clone());
                fill_result(&mut res, r, &call_id, status);
                st.answered.insert(call_id.clone());
                let t = c
                    .get("timestamp")
                    .and_then(Timestamp::from_value)
                    .and_then(|t| t.time());
                results.push((i, t, res));
            }
            None => st.open.push((call_id, name)),
        }
    }
    for p in ps {
        let Some(fc) = p.get("functionCall") else {
            continue;
        };
        let part_id = str_field(fc, "id");
        if part_id.is_some_and(|i| ids.iter().any(|x| x == i)) {
            continue;
        }
        let name = str_field(fc, "name").unwrap_or("?").to_string();
        let call_id = part_id.map(str::to_string).unwrap_or_else(|| {
            st.synthetic += 1;
            format!("{}#{}", str_field(m, "id").unwrap_or("call"), st.synthetic)
        });
        let args = fc.get("args").cloned().unwrap_or(Value::Null);
        let call = tool_call(base, &call_id, &name, args, session, st, "");
        session.messages.push(call);
        st.open.push((call_id, name));
    }
    // Results in the order the calls finished (their timestamps), as recorded when unknown.
    if results.iter().all(|r| r.1.is_some()) {
        results.sort_by_key(|r| (r.1, r.0));
    }
    for (_, _, r) in results {
        session.messages.push(r);
    }
    if let Some(tokens) = m.get("tokens").filter(|t| t.is_object()) {
        usage(tokens, first, str_field(m, "model"), session);
    }
}

/// The context the request that produced a gemini message carried, as the CLI recorded it.
fn usage(tokens: &Value, at: usize, model: Option<&str>, session: &mut Session) {
    let input = tokens
        .get("input")
        .and_then(crate::jsonl::as_count)
        .unwrap_or(0);
    if input == 0 {
        return;
    }
    session.record_context_usage(input, at, model);
}

fn tool_call(
    base: &dyn Fn(Role, String) -> Message,
    id: &str,
    name: &str,
    args: Value,
    session: &mut Session,
    st: &mut Convert,
    status: &str,
) -> Message {
    let done = !matches!(status, "error" | "cancelled");
    if done && super::tools::WRITE_TOOLS.contains(&name) {
        for key in ["file_path", "absolute_path"] {
            if let Some(p) = str_field(&args, key) {
                session.touch_file(p);
                break;
            }
        }
    }
    if done
        && name == "write_todos"
        && let Some(t) = super::tools::todos(&args)
    {
        st.todos = Some(t);
    }
    let (kind, key) = super::tools::classify(name, &args);
    let mut call = base(Role::ToolCall, String::new());
    call.tool_call_id = Some(id.to_string());
    call.tool_name = Some(name.to_string());
    call.tool_kind = Some(kind);
    call.key_arg = Some(key);
    call.tool_input = Some(args).filter(|v| !v.is_null());
    call
}

/// A `functionResponse` in a user message: the result of a call emitted without one (the
/// CLI's own copies of results already in toolCalls are left out).
fn function_response(
    fr: &Value,
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    st: &mut Convert,
) {
    let name = str_field(fr, "name").unwrap_or_default();
    let id = match str_field(fr, "id") {
        Some(i) => i.to_string(),
        None => match st.open.iter().find(|(_, n)| n == name) {
            Some((i, _)) => i.clone(),
            None => {
                st.synthetic += 1;
                format!("response#{}", st.synthetic)
            }
        },
    };
    if st.answered.contains(&id) {
        *session
            .stats
            .skipped_types
            .entry("functionResponse copy".into())
            .or_default() += 1;
        return;
    }
    st.open.retain(|(i, _)| *i != id);
    st.answered.insert(id.clone());
    let mut res = base(Role::ToolResult, String::new());
    res.tool_call_id = Some(id.clone());
    fill_result(&mut res, &json!([{ "functionResponse": fr }]), &id, "");
    session.messages.push(res);
}

/// A tool result's text and error state from a toolCall's `result` (functionResponse parts, a
/// string, or one part).
fn fill_result(res: &mut Message, result: &Value, call_id: &str, status: &str) {
    let mut error = matches!(status, "error" | "cancelled");
    let mut original: Option<u64> = None;
    let mut cut_text = None;
    let content = match result {
        Value::String(s) => s.clone(),
        other => {
            let ps = parts(Some(other));
            let responses: Vec<&Value> = ps
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .collect();
            let mine = responses
                .iter()
                .find(|r| str_field(r, "id") == Some(call_id))
                .or(responses.first());
            let mut texts = Vec::new();
            if let Some(r) = mine {
                original = r.get("_original_chars").and_then(Value::as_u64);
                let resp = r.get("response").unwrap_or(&Value::Null);
                if let Some(e) = resp.get("error").filter(|e| !e.is_null()) {
                    error = true;
                    texts.push(as_text(e));
                } else if let Some(o) = resp.get("output") {
                    texts.push(as_text(o));
                } else if !resp.is_null() {
                    texts.push(resp.to_string());
                }
                cut_text = texts.first().map(|t| t.chars().count() as u64);
            }
            for p in &ps {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => texts.push(t.to_string()),
                    None if p.get("inlineData").is_some() => texts.push("[inline data]".into()),
                    None => {}
                }
            }
            let content = texts.join("\n");
            // The whole result's length, not only the cut text's: other parts go with it.
            if let (Some(n), Some(cut)) = (original, cut_text) {
                original = Some(n + (content.chars().count() as u64 - cut));
            }
            content
        }
    };
    if let Some(code) = exit_code(&content) {
        res.metadata.insert("exit_code", json!(code));
        if code != 0 {
            error = true;
        }
    }
    if let Some(n) = original {
        res.metadata.insert("original_chars", json!(n));
    }
    res.content = content;
    res.is_error = error;
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The exit code in a Gemini shell output (`Exit Code: N` in its `<untrusted_context>` block,
/// or after `Command:` / `Output:` in older releases).
pub fn exit_code(output: &str) -> Option<i64> {
    let head = output.trim_start();
    if !(head.starts_with("<untrusted_context>")
        || head.starts_with("Command:")
        || head.starts_with("Output:"))
    {
        return None;
    }
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit Code: "))
        .and_then(|c| c.trim().parse().ok())
}

/// Drops what a relay will not keep before a line is stored: the TUI's drawing of each result
/// (`resultDisplay`), and the middle of tool outputs over `max` characters.
/// `shrink` when the read cuts outputs (`ReadOptions::max_tool_output`).
/// Without `max` it only drops a source's own `_original_chars`, which would pass for a cut.
fn shrink_to(v: &mut Value, max: Option<usize>) {
    shrink(v, max);
}

fn shrink(v: &mut Value, max: Option<usize>) {
    if let Some(set) = v.get_mut("$set").and_then(|s| s.get_mut("messages"))
        && let Some(items) = set.as_array_mut()
    {
        for m in items {
            shrink(m, max);
        }
    }
    if let Some(items) = v.get_mut("messages").and_then(Value::as_array_mut) {
        for m in items {
            shrink(m, max);
        }
    }
    if let Some(calls) = v.get_mut("toolCalls").and_then(Value::as_array_mut) {
        for c in calls {
            if let Some(o) = c.as_object_mut()
                && max.is_some()
            {
                o.remove("resultDisplay");
            }
            if let Some(r) = c.get_mut("result") {
                shrink_parts(r, max);
            }
        }
    }
    if let Some(c) = v.get_mut("content") {
        shrink_parts(c, max);
    }
}

/// Cuts a functionResponse's output and error over `max` characters, recording in
/// `_original_chars` the length of the one the result shows (`fill_result`: the error when
/// there is one). A source's own `_original_chars` is dropped: only this read's cut is one.
fn shrink_parts(parts: &mut Value, max: Option<usize>) {
    let items: Vec<&mut Value> = match parts {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(_) => vec![parts],
        _ => return,
    };
    for p in items {
        let Some(fr) = p.get_mut("functionResponse") else {
            continue;
        };
        if let Some(o) = fr.as_object_mut() {
            o.remove("_original_chars");
        }
        let Some(max) = max else {
            continue;
        };
        let mut cut = None;
        if let Some(resp) = fr.get_mut("response") {
            let shown = if resp.get("error").is_some_and(|e| !e.is_null()) {
                "error"
            } else {
                "output"
            };
            for key in ["output", "error"] {
                if let Some(Value::String(s)) = resp.get_mut(key) {
                    let n = s.chars().count();
                    if n > max {
                        *s = crate::text::trim_output(s, max);
                        if key == shown {
                            cut = Some(n);
                        }
                    }
                }
            }
        }
        if let (Some(n), Some(o)) = (cut, fr.as_object_mut()) {
            o.insert("_original_chars".into(), json!(n));
        }
    }
}

/// Subagent transcripts of a session: `chats/<session id>/*.jsonl` beside its file.
fn find_subagents(path: &Path, id: &str) -> Vec<SubagentLink> {
    let Some(dir) = path.parent().map(|p| p.join(id)) else {
        return Vec::new();
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<SubagentLink> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .map(|p| SubagentLink {
            id: p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            path: p.display().to_string(),
            agent_type: None,
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> PartView<'_> {
        PartView {
            text: Some(t),
            thought: false,
        }
    }

    #[test]
    fn user_text_splits_like_the_cli_treats_it() {
        let s = split_user(&[text("Fix the parser")], None);
        assert_eq!(s.words.as_deref(), Some("Fix the parser"));
        let s = split_user(&[text("/stats")], None);
        assert_eq!(s.context[0].0, "command");
        assert!(s.words.is_none());
        let s = split_user(
            &[
                text("<session_context>\nx\n</session_context>"),
                text("Set up"),
            ],
            None,
        );
        assert_eq!(s.context[0].0, "context");
        assert_eq!(s.words.as_deref(), Some("Set up"));
        let s = split_user(&[text(" ")], None);
        assert!(s.words.is_none() && s.context.is_empty());
        // A relay's own messages say what they are.
        let s = split_user(
            &[text(super::super::ESCAPE_PART), text("/etc/hosts")],
            Some("user"),
        );
        assert_eq!(s.words.as_deref(), Some("/etc/hosts"));
        let s = split_user(&[text("# Handoff brief")], Some("context"));
        assert_eq!(s.context[0], ("context", "# Handoff brief".to_string()));
    }

    #[test]
    fn records_replace_rewind_and_reset_like_the_cli() {
        let mut c: Conversation<&str> = Conversation::default();
        c.apply(Record::Message("a".into(), "a1"));
        c.apply(Record::Message("b".into(), "b1"));
        c.apply(Record::Message("a".into(), "a2"));
        assert_eq!(c.messages().copied().collect::<Vec<_>>(), ["a2", "b1"]);
        c.apply(Record::Message("c".into(), "c1"));
        c.apply(Record::Rewind("b".into()));
        assert_eq!(c.messages().copied().collect::<Vec<_>>(), ["a2"]);
        c.apply(Record::Rewind("nope".into()));
        assert_eq!(c.messages().count(), 0);
        c.apply(Record::Message("x".into(), "x1"));
        c.apply(Record::Set {
            meta: Map::new(),
            messages: Some(vec![("y".into(), "y1")]),
        });
        assert_eq!(c.messages().copied().collect::<Vec<_>>(), ["y1"]);
    }

    #[test]
    fn shell_exit_codes_are_read_from_gemini_outputs_only() {
        assert_eq!(
            exit_code(
                "<untrusted_context>\nOutput: no\nExit Code: 2\nProcess Group PGID: 1\n</untrusted_context>"
            ),
            Some(2)
        );
        assert_eq!(exit_code("Command: ls\nOutput: x\nExit Code: 0"), Some(0));
        assert_eq!(exit_code("some tool said\nExit Code: 3"), None);
    }
}
