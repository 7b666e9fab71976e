//! Reads a Qwen Code session as the CLI rebuilds it on resume (0.24.4's transcript loader):
//! records without a valid identity or of an unknown type are skipped; the branch is the chain
//! from the last conversation record back through `parentUuid`, records that share a `uuid`
//! being one record whose parts add up; the last `chat_compression` on it replaces everything
//! before it with its `compressedHistory`. The listing reads the same way (`summarize`), so
//! `list` and `show` agree.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;
use serde::de::MapAccess;
use serde_json::{Value, json};

use crate::adapter::part::{Cuts, LineSize};
use crate::adapter::tree::{self, Id, Parent};
use crate::adapter::{OutputCut, ReadOptions, as_call, tally};
use crate::jsonl::fields::{self, Fields, NoFields, Present, Scalar, Str, Val, fields_struct};
use crate::jsonl::{self, Line, str_field};
use crate::model::{GitInfo, Message, MessageKind, Role, Session, Summary, Timestamp};

/// The four record types; any other is skipped by the CLI.
const TYPES: &[&str] = &["user", "assistant", "tool_result", "system"];

/// System subtypes that are not part of the conversation: never a leaf.
const NOT_CONVERSATION: &[&str] = &[
    "session_sources_snapshot",
    "managed_session_header_v1",
    "managed_session_event_v1",
    "managed_session_commit_v1",
    "session_artifact_event",
    "session_artifact_snapshot",
];

/// The record type session-relay writes into a relayed session (Qwen Code skips it).
pub const RELAY_RECORD: &str = "session-relay";

/// The field a relay sets on the user records it writes: `"context"` for what is not the
/// person's words (the handoff brief, summaries). Qwen Code keeps and ignores it.
pub const RELAY_FIELD: &str = "sessionRelay";

/// The session in `path`, and the provenance record a relay embedded in it.
///
/// Read in two passes: the first keeps of each record what places it in the chain (`Rec`) and
/// what the file says of itself; the second parses only the records of the branch, each
/// converted as it comes, its tool outputs cut as `opts` ask and older turns folded.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<(Session, Option<Value>)> {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let mut session = Session::new(super::NAME, "qwen-jsonl", stem.into_owned());
    session.source_path = Some(path.display().to_string());
    let mut file = FileFacts::default();
    let (valid, pass) = validate(path, &mut session, &mut file)?;
    let chain = resolve(&valid, &mut session);
    // The last compression on the branch replaces everything before it.
    let start = chain.iter().rposition(|g| valid[g[0]].compression);
    if let Some(at) = start {
        let replaced = chain[..at]
            .iter()
            .flatten()
            .filter(|&&i| valid[i].carries)
            .count();
        if replaced > 0 {
            let skipped = &mut session.stats.skipped_types;
            tally(skipped, "replaced by chat_compression", replaced);
        }
    }
    let kept = &chain[start.map_or(0, |at| at + 1)..];
    let cuts = Cuts::of(opts, || kept.iter().flatten().map(|&i| valid[i].size));
    let groups: Vec<Vec<usize>> = chain
        .iter()
        .map(|g| g.iter().map(|&i| valid[i].size.line).collect())
        .collect();
    drop(chain);
    drop(valid);
    let mut conv = Convert::default();
    let from = groups.iter().flatten().min().copied().unwrap_or(0);
    let branch = tree::Branch {
        groups,
        pass: jsonl::Pass {
            step: None,
            ..jsonl::Pass::from(from, &pass, None)
        },
        what: "records",
    };
    let fold = opts.fold.as_ref();
    branch.read(
        path,
        fold,
        &mut session,
        |_, v| lighten(v),
        |g, no, records, session| match start.map(|c| g.cmp(&c)) {
            Some(Ordering::Less) => {
                for v in &records {
                    conv.effects(v, session);
                }
            }
            Some(Ordering::Equal) => conv.compressed(&records[0], no, session),
            _ => {
                conv.cut = cuts.cut(no);
                match records.len() {
                    1 => conv.record(&records[0], no, session),
                    _ => conv.record(&aggregate(records.iter()), no, session),
                }
            }
        },
    )?;
    let provenance = file.provenance.take();
    finish(&mut session, file, conv);
    Ok((session, provenance))
}

/// The listing row of a session file, as `read` reads it.
pub fn summarize(path: &Path) -> Result<Summary> {
    let opts = ReadOptions {
        max_tool_output: Some(200),
        lean: true,
        ..Default::default()
    };
    let (session, provenance) = read(path, &opts)?;
    crate::adapter::listing_row(path, &session, provenance.as_ref())
}

/// What a record keeps in memory: the TUI's drawing of a result and the payloads of telemetry
/// and snapshots carry nothing the reader needs.
fn lighten(mut v: Value) -> Value {
    if let Some(r) = v.get_mut("toolCallResult").and_then(Value::as_object_mut) {
        r.remove("resultDisplay");
    }
    let heavy = matches!(
        str_field(&v, "subtype"),
        Some("ui_telemetry" | "attribution_snapshot" | "file_history_snapshot" | "slash_command")
    );
    if heavy && let Some(o) = v.as_object_mut() {
        o.remove("systemPayload");
    }
    v
}

/// What the whole file says, whichever branch is loaded.
#[derive(Default)]
struct FileFacts {
    id: Option<String>,
    cwd: Option<String>,
    branch: Option<String>,
    version: Option<String>,
    title: Option<String>,
    /// The first prompt among the first records: the CLI's listing shows it without a title.
    prompt: Option<String>,
    records: usize,
    first: Option<Timestamp>,
    last: Option<Timestamp>,
    /// What the first record a relay wrote says of the relay.
    provenance: Option<Value>,
}

/// What the first pass keeps of a record the CLI accepts.
struct Rec {
    /// Its `uuid`, when it may be on the branch (see `is_conversation`).
    uuid: Option<Id>,
    /// Its `parentUuid`, when a string.
    parent: Option<Id>,
    /// It adds to what the model is sent (it has a `message`).
    carries: bool,
    /// A `chat_compression` with its history.
    compression: bool,
    size: LineSize,
}

/// A record as the first pass parses it: the few fields it keeps, nothing else built.
#[derive(Default)]
struct Light<'a> {
    kind: Str<'a>,
    subtype: Str<'a>,
    uuid: Str<'a>,
    session_id: Str<'a>,
    /// `parentUuid`: `None` when null, `Some` of what it is otherwise.
    parent: Option<Str<'a>>,
    has_parent: bool,
    cwd: Str<'a>,
    git_branch: Str<'a>,
    version: Str<'a>,
    timestamp: Scalar<'a>,
    relay: Str<'a>,
    payload: Val<'a, Payload<'a>>,
    has_message: bool,
    message: Val<'a, MessageParts<'a>>,
    provenance: Option<Value>,
}

impl<'de> Fields<'de> for Light<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "subtype" => self.subtype = map.next_value()?,
            "uuid" => self.uuid = map.next_value()?,
            "sessionId" => self.session_id = map.next_value()?,
            "parentUuid" => {
                self.has_parent = true;
                self.parent = map.next_value()?;
            }
            "cwd" => self.cwd = map.next_value()?,
            "gitBranch" => self.git_branch = map.next_value()?,
            "version" => self.version = map.next_value()?,
            "timestamp" => self.timestamp = map.next_value()?,
            RELAY_FIELD => self.relay = map.next_value()?,
            "systemPayload" => self.payload = map.next_value()?,
            "message" => {
                self.has_message = true;
                self.message = map.next_value()?;
            }
            "provenance" => self.provenance = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fields_struct! {
    struct Payload<'a> {
        custom_title: Str<'a> = "customTitle",
        compressed_history: Val<'a, NoFields> = "compressedHistory",
    }
}

fields_struct! {
    struct MessageParts<'a> {
        parts: Val<'a, TextPart<'a>> = "parts",
    }
}

fields_struct! {
    struct TextPart<'a> {
        text: Str<'a> = "text",
        thought: Present = "thought",
    }
}

/// A record as the first pass hands it on: what validation, the file's facts and the chain
/// need of it.
struct Seen {
    kind: String,
    /// It has a non-empty `uuid` and `sessionId`, and a `parentUuid` that is a string or null.
    identified: bool,
    session_id: Option<String>,
    cwd: Option<String>,
    git_branch: Option<String>,
    version: Option<String>,
    timestamp: Option<Timestamp>,
    custom_title: Option<String>,
    /// A user record's text parts, joined (for the listing's prompt).
    text: Option<String>,
    provenance: Option<Value>,
    rec: Rec,
}

/// The first pass's view of line `no` (`None`: not JSON).
fn seen(no: usize, text: &str) -> Option<Seen> {
    let l = fields::parse::<Light>(text)?;
    let owned = |s: &Str| s.get().filter(|s| !s.is_empty()).map(str::to_string);
    let parent_ok = l.has_parent && l.parent.as_ref().is_none_or(|p| p.get().is_some());
    let kind = l.kind.get().unwrap_or_default();
    let subtype = l.subtype.get();
    let conversation = TYPES.contains(&kind)
        && !(kind == "system" && subtype.is_some_and(|s| NOT_CONVERSATION.contains(&s)));
    let payload = l.payload.obj();
    let parts = (kind == "user").then(|| {
        l.message
            .obj()
            .into_iter()
            .flat_map(|m| m.parts.objects())
            .filter(|p| !p.thought.0)
            .filter_map(|p| p.text.get())
            .collect()
    });
    Some(Seen {
        kind: kind.to_string(),
        identified: owned(&l.uuid).is_some() && owned(&l.session_id).is_some() && parent_ok,
        session_id: owned(&l.session_id),
        cwd: owned(&l.cwd),
        git_branch: owned(&l.git_branch),
        version: owned(&l.version),
        timestamp: l
            .timestamp
            .to_value()
            .and_then(|t| Timestamp::from_value(&t)),
        custom_title: payload
            .and_then(|p| p.custom_title.get())
            .filter(|_| subtype == Some("custom_title"))
            .map(str::to_string),
        text: parts,
        provenance: l.provenance.filter(|_| kind == RELAY_RECORD),
        rec: Rec {
            uuid: l.uuid.get().filter(|_| conversation).map(Id::new),
            parent: l.parent.as_ref().and_then(Str::get).map(Id::new),
            carries: l.has_message,
            compression: kind == "system"
                && subtype == Some("chat_compression")
                && payload.is_some_and(|p| matches!(p.compressed_history, Val::List(_))),
            size: LineSize {
                line: no,
                bytes: text.len(),
                turn: kind == "user" && subtype.is_none() && !l.relay.is("context"),
            },
        },
    })
}

/// The first pass: the records the CLI accepts, noting what the file says of itself; the
/// others are counted and warned of with their line.
fn validate(
    path: &Path,
    session: &mut Session,
    file: &mut FileFacts,
) -> Result<(Vec<Rec>, jsonl::PassStats)> {
    let mut valid = Vec::new();
    let mut unknown: HashSet<String> = HashSet::new();
    let mut warnings = Vec::new();
    let pass = jsonl::for_each_line(
        path,
        jsonl::Pass {
            step: Some(CHAIN_STEP),
            ..Default::default()
        },
        seen,
        // Only a line `Light` could not parse comes here, and it is not JSON to `Value`
        // either: this cannot be called.
        |no, v| seen(no, &v.to_string()).expect("a Value is JSON"),
        |no, line| {
            let Line::Json(mut s) = line else {
                return Ok(());
            };
            let kind = std::mem::take(&mut s.kind);
            if kind == RELAY_RECORD {
                tally(&mut session.stats.skipped_types, kind, 1);
                if file.provenance.is_none() {
                    file.provenance = s.provenance.take();
                }
                return Ok(());
            }
            if !s.identified {
                warnings.push((
                    no,
                    "record skipped: no uuid, parentUuid or sessionId (Qwen Code skips it too)"
                        .to_string(),
                ));
                return Ok(());
            }
            if !TYPES.contains(&kind.as_str()) {
                if unknown.insert(kind.clone()) {
                    let w =
                        format!("record of unknown type {kind:?} skipped (Qwen Code skips it too)");
                    warnings.push((no, w));
                }
                tally(&mut session.stats.unknown_types, kind, 1);
                return Ok(());
            }
            note_file_facts(&mut s, &kind, file);
            valid.push(s.rec);
            Ok(())
        },
    )?;
    session.record_pass(&pass);
    for (no, w) in warnings {
        session.warn(Some(no), w);
    }
    Ok((valid, pass))
}

/// The progress step of the first pass: the read after it is `reading`.
const CHAIN_STEP: &str = "finding the branch in";

fn note_file_facts(s: &mut Seen, kind: &str, file: &mut FileFacts) {
    if file.id.is_none() {
        // The first record settles the session, its directory and branch, as in the listing.
        file.id = s.session_id.take();
        file.cwd = s.cwd.take();
        file.branch = s.git_branch.take();
    }
    if let Some(version) = s.version.take() {
        file.version = Some(version);
    }
    if let Some(ts) = s.timestamp.take()
        && ts.time().is_some()
    {
        file.first.get_or_insert_with(|| ts.clone());
        file.last = Some(ts);
    }
    if let Some(t) = s.custom_title.take()
        && !t.trim().is_empty()
    {
        file.title = Some(t);
    }
    file.records += 1;
    if file.prompt.is_none() && file.records <= 10 && kind == "user" {
        file.prompt = s.text.take().filter(|t| !t.trim().is_empty());
    }
}

/// The records on the branch the CLI loads, oldest first: for each uuid the indexes in `valid`
/// of its records (a record written in fragments is one record whose parts add up).
fn resolve(valid: &[Rec], session: &mut Session) -> Vec<Vec<usize>> {
    let mut by_uuid: HashMap<&Id, usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut leaf = None;
    for (i, r) in valid.iter().enumerate() {
        let Some(uuid) = &r.uuid else { continue };
        let g = *by_uuid.entry(uuid).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
        leaf = Some(g);
    }
    let line = |g: usize| valid[groups[g][0]].size.line;
    let walk = tree::walk_up(leaf, |g| match &valid[groups[g][0]].parent {
        None => Parent::Root,
        Some(p) => by_uuid
            .get(p)
            .map_or_else(|| Parent::Missing(p.to_string()), |&at| Parent::At(at)),
    });
    if let Some(g) = walk.looped_at {
        session.warn(Some(line(g)), "the parentUuid chain loops here: cut");
    }
    if let Some((g, parent)) = walk.missing_parent {
        session.warn(
            Some(line(g)),
            format!("parent record {parent} is missing: the branch starts here, as in Qwen Code"),
        );
    }
    let on_chain: usize = walk.path.iter().map(|&g| groups[g].len()).sum();
    let all: usize = groups.iter().map(Vec::len).sum();
    session.stats.abandoned_branch_lines = all - on_chain;
    walk.path
        .into_iter()
        .map(|g| std::mem::take(&mut groups[g]))
        .collect()
}

/// One record of the fragments written under one uuid, as the CLI adds them up: the parts in
/// order, the first result status and model, the last usage.
fn aggregate<'a>(mut fragments: impl Iterator<Item = &'a Value>) -> Value {
    let mut base = fragments.next().cloned().unwrap_or(Value::Null);
    let mut parts: Vec<Value> = base
        .pointer("/message/parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for f in fragments {
        if let Some(p) = f.pointer("/message/parts").and_then(Value::as_array) {
            parts.extend(p.iter().cloned());
        }
        for key in ["toolCallResult", "model", "usageMetadata"] {
            if let Some(v) = f.get(key)
                && (key == "usageMetadata" || base.get(key).is_none())
            {
                base[key] = v.clone();
            }
        }
    }
    if base.get("message").is_some() || !parts.is_empty() {
        base["message"]["parts"] = Value::Array(parts);
    }
    base
}

/// The session's facts once the branch is converted.
fn finish(session: &mut Session, file: FileFacts, conv: Convert) {
    if let Some(id) = file.id {
        session.id = id;
    }
    session.cwd = file.cwd;
    session.source_version = file.version;
    session.git = file.branch.map(|b| GitInfo {
        branch: Some(b),
        commit: None,
        remote: None,
    });
    session.created = file.first;
    session.updated = file.last;
    session.fill_times_from_messages();
    if let Some(t) = conv.todos {
        session.todos = t;
    }
    if let Some(model) = conv.model {
        session.extra.insert("model".into(), json!(model));
    }
    session.title = file
        .title
        .or(file.prompt)
        .or_else(|| session.first_user_prompt().map(str::to_string));
    let conversation =
        session.message_count() > 0 || session.messages.iter().any(|m| m.role == Role::ToolCall);
    if !conversation && session.warnings.iter().all(|w| w.about_characters()) {
        session.warn(None, "no conversation in this session");
    }
    session.pair_tool_calls();
}

/// The conversion of the loaded records into messages.
#[derive(Default)]
struct Convert<'a> {
    /// How the outputs of the record being converted are cut.
    cut: Option<OutputCut<'a>>,
    /// Calls not yet answered: (id, tool name).
    open: Vec<(String, String)>,
    synthetic: usize,
    todos: Option<Vec<crate::model::Todo>>,
    model: Option<String>,
}

impl Convert<'_> {
    fn record(&mut self, v: &Value, no: usize, session: &mut Session) {
        let ts = v.get("timestamp").and_then(Timestamp::from_value);
        let parts = parts(v.get("message"));
        match str_field(v, "type").unwrap_or_default() {
            "assistant" => {
                if let Some(m) = str_field(v, "model") {
                    self.model = Some(m.to_string());
                }
                if let Some(n) = v
                    .pointer("/usageMetadata/promptTokenCount")
                    .and_then(jsonl::as_count)
                    .filter(|n| *n > 0)
                {
                    let at = session.end();
                    session.record_context_usage(n, at, str_field(v, "model"));
                }
                self.model_parts(&parts, &ts, no, session);
            }
            "user" | "tool_result" => {
                let status = v.pointer("/toolCallResult/status").and_then(Value::as_str);
                let user = self.user_parts(&parts, status, &ts, no, session);
                if let Some(text) = user {
                    session.messages.push(user_message(v, text, &ts, no));
                }
            }
            _ => {
                let subtype = str_field(v, "subtype").unwrap_or("?");
                tally(
                    &mut session.stats.skipped_types,
                    format!("system:{subtype}"),
                    1,
                );
            }
        }
    }

    /// What a record the compression replaced did to files and the todo list: the files stay
    /// changed and the list set, though the model no longer sees the calls.
    fn effects(&mut self, v: &Value, session: &mut Session) {
        for call in parts(v.get("message"))
            .iter()
            .filter_map(|p| p.get("functionCall"))
        {
            let name = str_field(call, "name").unwrap_or_default();
            self.call_effects(name, call.get("args").unwrap_or(&Value::Null), 0, session);
        }
    }

    /// What a call does beyond the conversation: the file it changes (when the conversation had
    /// `at` messages), the todo list it sets.
    fn call_effects(&mut self, name: &str, args: &Value, at: usize, session: &mut Session) {
        if super::tools::WRITE_TOOLS.contains(&name)
            && let Some(path) = str_field(args, "file_path")
        {
            session.touch_file_at(path, at);
        }
        if name == super::tools::TODO_TOOL
            && let Some(t) = crate::model::todo_list(args, "todos", "content")
        {
            self.todos = Some(t);
        }
    }

    /// A `chat_compression`: its history is what the model is sent of everything before it.
    fn compressed(&mut self, v: &Value, no: usize, session: &mut Session) {
        let ts = v.get("timestamp").and_then(Timestamp::from_value);
        let mut first = true;
        // The first pass found it a `chat_compression` with its history.
        let history = v.pointer("/systemPayload/compressedHistory");
        for content in history.and_then(Value::as_array).into_iter().flatten() {
            let parts = parts(Some(content));
            if str_field(content, "role") == Some("model") {
                self.model_parts(&parts, &ts, no, session);
                continue;
            }
            if let Some(text) = self.user_parts(&parts, None, &ts, no, session) {
                let kind = if first {
                    MessageKind::Compaction
                } else {
                    MessageKind::Context
                };
                first = false;
                session.messages.push(
                    Message::new(Role::System, text)
                        .with_time(ts.clone())
                        .with_meta("line", no)
                        .with_kind(kind),
                );
            }
        }
        if first {
            // A compression that kept nothing said: its place is still marked.
            session.messages.push(
                Message::new(Role::System, "Conversation compressed")
                    .with_time(ts)
                    .with_meta("line", no)
                    .with_kind(MessageKind::Compaction),
            );
        }
    }

    /// A model message's parts: thoughts, texts and calls, in order, runs of one kind joined.
    fn model_parts(
        &mut self,
        parts: &[&Value],
        ts: &Option<Timestamp>,
        no: usize,
        s: &mut Session,
    ) {
        let mut run: Option<(Role, String)> = None;
        let flush = |run: &mut Option<(Role, String)>, s: &mut Session| {
            if let Some((role, text)) = run.take()
                && !text.trim().is_empty()
            {
                s.messages.push(
                    Message::new(role, text)
                        .with_time(ts.clone())
                        .with_meta("line", no),
                );
            }
        };
        for p in parts {
            if let Some(call) = p.get("functionCall") {
                flush(&mut run, s);
                let m = self.call(call, ts, no, s);
                s.messages.push(m);
                continue;
            }
            let Some(text) = p.get("text").and_then(Value::as_str) else {
                continue;
            };
            let role = if p.get("thought").and_then(Value::as_bool) == Some(true) {
                Role::Reasoning
            } else {
                Role::Assistant
            };
            match &mut run {
                Some((r, t)) if *r == role => t.push_str(text),
                _ => {
                    flush(&mut run, s);
                    run = Some((role, text.to_string()));
                }
            }
        }
        flush(&mut run, s);
    }

    fn call(
        &mut self,
        call: &Value,
        ts: &Option<Timestamp>,
        no: usize,
        s: &mut Session,
    ) -> Message {
        let name = str_field(call, "name").unwrap_or("tool").to_string();
        let args = call.get("args").cloned().unwrap_or(Value::Null);
        let id = match str_field(call, "id").filter(|i| !i.is_empty()) {
            Some(i) => i.to_string(),
            None => {
                self.synthetic += 1;
                format!("call#{}", self.synthetic)
            }
        };
        self.open.push((id.clone(), name.clone()));
        self.call_effects(&name, &args, s.end(), s);
        let what = super::tools::classify(&name, &args);
        let m = Message::new(Role::ToolCall, "").with_time(ts.clone());
        let input = Some(args).filter(|a| !a.is_null());
        as_call(m.with_meta("line", no), Some(id), name, input, what)
    }

    /// A user or tool_result record's parts: its results are added as they come; its text is
    /// returned.
    fn user_parts(
        &mut self,
        parts: &[&Value],
        status: Option<&str>,
        ts: &Option<Timestamp>,
        no: usize,
        s: &mut Session,
    ) -> Option<String> {
        let mut text = String::new();
        let mut any = false;
        for p in parts {
            if let Some(fr) = p.get("functionResponse") {
                let m = self.result(fr, status, ts, no);
                s.messages.push(m);
            } else if p.get("thought").and_then(Value::as_bool) == Some(true) {
                continue;
            } else if let Some(t) = p.get("text").and_then(Value::as_str) {
                text.push_str(t);
                any = true;
            } else if p.get("inlineData").is_some() || p.get("fileData").is_some() {
                text.push_str("[inline data]");
                any = true;
            }
        }
        // An empty prompt is still a prompt: a relay writes one when its source's had only a
        // block it could not read, and must read it back.
        any.then_some(text)
    }

    fn result(
        &mut self,
        fr: &Value,
        status: Option<&str>,
        ts: &Option<Timestamp>,
        no: usize,
    ) -> Message {
        let name = str_field(fr, "name").unwrap_or_default();
        let id = match str_field(fr, "id").filter(|i| !i.is_empty()) {
            Some(i) => i.to_string(),
            None => match self.open.iter().find(|(_, n)| n == name) {
                Some((i, _)) => i.clone(),
                None => {
                    self.synthetic += 1;
                    format!("call#{}", self.synthetic)
                }
            },
        };
        self.open.retain(|(i, _)| *i != id);
        let response = fr.get("response").unwrap_or(&Value::Null);
        let error = response.get("error").filter(|e| !e.is_null());
        let content = match (error, response.get("output")) {
            (Some(e), _) => as_text(e),
            (None, Some(o)) => as_text(o),
            (None, None) if response.is_null() => String::new(),
            (None, None) => response.to_string(),
        };
        let mut m = Message::new(Role::ToolResult, "")
            .with_time(ts.clone())
            .with_meta("line", no);
        m.tool_call_id = Some(id);
        m.is_error = error.is_some() || matches!(status, Some("error" | "cancelled"));
        if status == Some("cancelled") && content.ends_with(": User did not allow tool call") {
            m.metadata.insert("rejected", json!(true)); // "No" at the approval prompt
        }
        if let Some(code) = exit_code(&content) {
            m.metadata.insert("exit_code", json!(code));
        }
        let n = content.chars().count();
        match self.cut.and_then(|cut| cut.keep(&content, n)) {
            Some(kept) => kept.apply_to(&mut m),
            None => m.content = content,
        }
        m
    }
}

/// A user record's text: the person's words, or what a relay or the CLI put in as context.
fn user_message(v: &Value, text: String, ts: &Option<Timestamp>, no: usize) -> Message {
    let context = str_field(v, RELAY_FIELD) == Some("context");
    // User records with a subtype are the CLI's own (notifications, cron prompts, goals), but
    // for what a person typed while the model worked.
    let injected = str_field(v, "subtype")
        .filter(|s| !matches!(*s, "mid_turn_user_message" | "realtime_message"));
    let m = match (context, injected) {
        (true, _) => Message::new(Role::System, text).with_kind(MessageKind::Context),
        // The CLI's own prompts (notifications, cron, goals): its record subtype kept as it came.
        (false, Some(subtype)) => Message::new(Role::System, text)
            .with_kind(MessageKind::TaskNotification)
            .with_meta("subtype", subtype.to_string()),
        (false, None) => Message::new(Role::User, text),
    };
    m.with_time(ts.clone()).with_meta("line", no)
}

fn parts(message: Option<&Value>) -> Vec<&Value> {
    message
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The exit code in a Qwen shell output (`Command: ...` then `Exit Code: N`).
fn exit_code(output: &str) -> Option<i64> {
    if !output.trim_start().starts_with("Command:") {
        return None;
    }
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit Code: "))
        .and_then(|c| c.trim().parse().ok())
}
