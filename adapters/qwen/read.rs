//! Reads a Qwen Code session as the CLI rebuilds it on resume (0.24.4's transcript loader):
//! records without a valid identity or of an unknown type are skipped; the branch is the chain
//! from the last conversation record back through `parentUuid`, records that share a `uuid`
//! being one record whose parts add up; the last `chat_compression` on it replaces everything
//! before it with its `compressedHistory`. The listing reads the same way (`summarize`), so
//! `list` and `show` agree.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};

use crate::adapter::ReadOptions;
use crate::jsonl::{self, Line, str_field};
use crate::model::{GitInfo, Message, MessageKind, RelaySource, Role, Session, Summary, Timestamp};

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
pub fn read(path: &Path, opts: &ReadOptions) -> Result<(Session, Option<Value>)> {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let mut session = Session::new(super::NAME, "qwen-jsonl", stem.into_owned());
    session.source_path = Some(path.display().to_string());
    let mut records: Vec<(usize, Value)> = Vec::new();
    let pass = jsonl::for_each_line(
        path,
        jsonl::Pass::default(),
        |_, _| None,
        |_, v| lighten(v),
        |no, line| {
            if let Line::Json(v) = line {
                records.push((no, v));
            }
            Ok(())
        },
    )?;
    session.record_pass(&pass);
    let mut file = FileFacts::default();
    let valid = validate(records, &mut session, &mut file);
    let chain = resolve(&valid, &mut session);
    let mut conv = Convert {
        max: opts.max_tool_output,
        ..Default::default()
    };
    let start = match chain
        .iter()
        .rposition(|r| compression(&valid[r[0]].1).is_some())
    {
        Some(at) => {
            let (no, rec) = &valid[chain[at][0]];
            let replaced = chain[..at]
                .iter()
                .flatten()
                .filter(|&&i| carries(&valid[i].1))
                .count();
            for &i in chain[..at].iter().flatten() {
                conv.effects(&valid[i].1, &mut session);
            }
            if replaced > 0 {
                *session
                    .stats
                    .skipped_types
                    .entry("replaced by chat_compression".into())
                    .or_default() += replaced;
            }
            conv.compressed(rec, *no, &mut session);
            at + 1
        }
        None => 0,
    };
    for records in &chain[start..] {
        let (no, first) = &valid[records[0]];
        match records.len() {
            1 => conv.record(first, *no, &mut session),
            _ => conv.record(
                &aggregate(records.iter().map(|&i| &valid[i].1)),
                *no,
                &mut session,
            ),
        }
    }
    finish(&mut session, file, conv);
    Ok((session, file_provenance(&valid)))
}

/// The listing row of a session file, as `read` reads it.
pub fn summarize(path: &Path) -> Result<Summary> {
    let opts = ReadOptions {
        max_tool_output: Some(200),
        lean: true,
        ..Default::default()
    };
    let (session, provenance) = read(path, &opts)?;
    let size = std::fs::metadata(path)?.len();
    let mut summary = Summary::of_session(&session, path, size);
    summary.relay_of = provenance.as_ref().and_then(RelaySource::from_provenance);
    Ok(summary)
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
}

/// The records the CLI accepts (line number, record), noting what the file says of itself;
/// the others are counted and warned of with their line.
fn validate(
    records: Vec<(usize, Value)>,
    session: &mut Session,
    file: &mut FileFacts,
) -> Vec<(usize, Value)> {
    let mut valid = Vec::with_capacity(records.len());
    let mut unknown: HashSet<String> = HashSet::new();
    for (no, v) in records {
        let kind = str_field(&v, "type").unwrap_or_default().to_string();
        if kind == RELAY_RECORD {
            *session.stats.skipped_types.entry(kind).or_default() += 1;
            valid.push((no, v));
            continue;
        }
        let nonempty = |k: &str| str_field(&v, k).is_some_and(|s| !s.is_empty());
        let parent_ok = matches!(v.get("parentUuid"), Some(Value::String(_) | Value::Null));
        if !(nonempty("uuid") && nonempty("sessionId") && parent_ok) {
            session.warn(
                Some(no),
                "record skipped: no uuid, parentUuid or sessionId (Qwen Code skips it too)",
            );
            continue;
        }
        if !TYPES.contains(&kind.as_str()) {
            if unknown.insert(kind.clone()) {
                session.warn(
                    Some(no),
                    format!("record of unknown type {kind:?} skipped (Qwen Code skips it too)"),
                );
            }
            *session.stats.unknown_types.entry(kind).or_default() += 1;
            continue;
        }
        note_file_facts(&v, file);
        valid.push((no, v));
    }
    valid
}

fn note_file_facts(v: &Value, file: &mut FileFacts) {
    let s = |k: &str| {
        str_field(v, k)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if file.id.is_none() {
        // The first record settles the session, its directory and branch, as in the listing.
        file.id = s("sessionId");
        file.cwd = s("cwd");
        file.branch = s("gitBranch");
    }
    if let Some(version) = s("version") {
        file.version = Some(version);
    }
    if let Some(ts) = v.get("timestamp").and_then(Timestamp::from_value)
        && ts.time().is_some()
    {
        file.first.get_or_insert_with(|| ts.clone());
        file.last = Some(ts);
    }
    if str_field(v, "subtype") == Some("custom_title")
        && let Some(t) = v
            .pointer("/systemPayload/customTitle")
            .and_then(Value::as_str)
        && !t.trim().is_empty()
    {
        file.title = Some(t.to_string());
    }
    file.records += 1;
    if file.prompt.is_none() && file.records <= 10 && str_field(v, "type") == Some("user") {
        let text: String = v
            .pointer("/message/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|p| p.get("thought").is_none())
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        file.prompt = Some(text).filter(|t| !t.trim().is_empty());
    }
}

/// Whether a record may be the leaf of the loaded branch.
fn is_conversation(v: &Value) -> bool {
    let kind = str_field(v, "type");
    TYPES.contains(&kind.unwrap_or_default())
        && !(kind == Some("system")
            && str_field(v, "subtype").is_some_and(|s| NOT_CONVERSATION.contains(&s)))
}

/// Whether a record adds to what the model is sent.
fn carries(v: &Value) -> bool {
    v.get("message").is_some()
}

/// The records on the branch the CLI loads, oldest first: for each uuid the indexes in `valid`
/// of its records (a record written in fragments is one record whose parts add up).
fn resolve(valid: &[(usize, Value)], session: &mut Session) -> Vec<Vec<usize>> {
    let mut by_uuid: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut leaf = None;
    for (i, (_, v)) in valid.iter().enumerate() {
        if !is_conversation(v) {
            continue;
        }
        let uuid = str_field(v, "uuid").unwrap_or_default();
        by_uuid.entry(uuid).or_default().push(i);
        leaf = Some(uuid);
    }
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut at = leaf;
    while let Some(uuid) = at {
        let Some(records) = by_uuid.get(uuid) else {
            break;
        };
        let first = records[0];
        if !seen.insert(uuid) {
            session.warn(Some(valid[first].0), "the parentUuid chain loops here: cut");
            break;
        }
        chain.push(records.clone());
        at = str_field(&valid[first].1, "parentUuid");
        if let Some(parent) = at
            && !by_uuid.contains_key(parent)
        {
            session.warn(
                Some(valid[first].0),
                format!(
                    "parent record {parent} is missing: the branch starts here, as in Qwen Code"
                ),
            );
            break;
        }
    }
    chain.reverse();
    let on_chain: usize = chain.iter().map(Vec::len).sum();
    let all: usize = by_uuid.values().map(Vec::len).sum();
    session.stats.abandoned_branch_lines = all - on_chain;
    chain
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

/// The `compressedHistory` of a `chat_compression` record.
fn compression(v: &Value) -> Option<&Vec<Value>> {
    if str_field(v, "type") != Some("system") || str_field(v, "subtype") != Some("chat_compression")
    {
        return None;
    }
    v.pointer("/systemPayload/compressedHistory")?.as_array()
}

/// The provenance record a relay wrote, if any.
fn file_provenance(valid: &[(usize, Value)]) -> Option<Value> {
    valid
        .iter()
        .find(|(_, v)| str_field(v, "type") == Some(RELAY_RECORD))
        .and_then(|(_, v)| v.get("provenance").cloned())
}

/// The session's facts once the branch is converted.
fn finish(session: &mut Session, file: FileFacts, conv: Convert) {
    if let Some(id) = file.id {
        session.id = id;
    }
    session.cwd = file.cwd;
    session.source_version = file.version;
    if let Some(branch) = file.branch {
        session.git = Some(GitInfo {
            branch: Some(branch),
            commit: None,
            remote: None,
        });
    }
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
struct Convert {
    max: Option<usize>,
    /// Calls not yet answered: (id, tool name).
    open: Vec<(String, String)>,
    synthetic: usize,
    todos: Option<Vec<crate::model::Todo>>,
    model: Option<String>,
}

impl Convert {
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
                    let at = session.messages.len();
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
                *session
                    .stats
                    .skipped_types
                    .entry(format!("system:{subtype}"))
                    .or_default() += 1;
            }
        }
    }

    /// What a record the compression replaced did to files and the todo list: the files stay
    /// changed and the list set, though the model no longer sees the calls.
    fn effects(&mut self, v: &Value, session: &mut Session) {
        for p in parts(v.get("message")) {
            let Some(call) = p.get("functionCall") else {
                continue;
            };
            let name = str_field(call, "name").unwrap_or_default();
            let args = call.get("args").unwrap_or(&Value::Null);
            if super::tools::WRITE_TOOLS.contains(&name)
                && let Some(path) = str_field(args, "file_path")
            {
                session.touch_file_at(path, 0);
            }
            if name == super::tools::TODO_TOOL
                && let Some(t) = super::tools::todos(args)
            {
                self.todos = Some(t);
            }
        }
    }

    /// A `chat_compression`: its history is what the model is sent of everything before it.
    fn compressed(&mut self, v: &Value, no: usize, session: &mut Session) {
        let ts = v.get("timestamp").and_then(Timestamp::from_value);
        let mut first = true;
        for content in compression(v).into_iter().flatten() {
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
        if super::tools::WRITE_TOOLS.contains(&name.as_str())
            && let Some(p) = str_field(&args, "file_path")
        {
            s.touch_file(p);
        }
        if name == super::tools::TODO_TOOL
            && let Some(t) = super::tools::todos(&args)
        {
            self.todos = Some(t);
        }
        let (kind, key) = super::tools::classify(&name, &args);
        let mut m = Message::new(Role::ToolCall, "")
            .with_time(ts.clone())
            .with_meta("line", no);
        m.tool_call_id = Some(id);
        m.tool_name = Some(name);
        m.tool_kind = Some(kind);
        m.key_arg = Some(key);
        m.tool_input = Some(args).filter(|a| !a.is_null());
        m
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
        if let Some(code) = exit_code(&content) {
            m.metadata.insert("exit_code", json!(code));
        }
        let n = content.chars().count();
        match self.max.filter(|max| n > *max) {
            Some(max) => {
                m.content = crate::text::trim_output_of(&content, max, n);
                m.state_mut().original_chars = Some(n);
            }
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
