//! Reads an OpenCode session into the neutral model: from the database (a listing path under
//! the database file), or from a document in `opencode export`'s shape (an export, or a
//! relay's file). Both are read as the same document: `info` and `messages`, each message
//! `{info, parts}`.
//!
//! - User messages: their `text` parts; a `compaction` part marks a `/compact`. A relay's
//!   context (`sessionRelay: "context"`) is read back as context.
//! - Assistant messages, one per model call: `reasoning`, `text` and `tool` parts in order; a
//!   tool part is the call and its result together (`state.output`, or `state.error`). A
//!   result is placed where it ended: after what started before it ended (the other calls of
//!   its message, text written meanwhile), in the order the results ended. A shell command
//!   that exited non-zero is a failed result with its exit code. The answer of a compaction
//!   (`summary: true`) is the compaction's summary.
//! - `step-start`, `step-finish`, `patch`, `snapshot` parts carry no conversation.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::db::Row;
use crate::adapter::{FoldWindow, ReadOptions};
use crate::jsonl::str_field;
use crate::model::{Message, MessageKind, Role, Session, Timestamp};

/// Parts that carry no conversation.
const QUIET_PARTS: &[&str] = &[
    "step-start",
    "step-finish",
    "patch",
    "snapshot",
    "agent",
    "retry",
];

/// The session at `path`, and its size as the listing gives it (the bytes that stand for it).
pub fn read_sized(path: &Path, opts: ReadOptions) -> Result<(Session, u64)> {
    let mut session = Session::new(super::NAME, "opencode", "");
    session.source_path = Some(path.display().to_string());
    let mut reading = Reading::new(opts);
    let Some((db, id)) = super::row_path(path) else {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let doc: Value = serde_json::from_slice(crate::jsonl::strip_bom(&bytes))
            .with_context(|| format!("{} is not a JSON document", path.display()))?;
        session.format = "opencode-export".into();
        read_doc(&doc, &mut session, reading);
        return Ok((session, bytes.len() as u64));
    };
    session.format = "opencode-db".into();
    // As `ReadOptions::for_file` reads a small file in full (a listing path is no file): older
    // turns are folded only once the rows read stand for more than that.
    let full_below = crate::adapter::full_read_bytes();
    let rows = super::db::walk(
        db,
        &id,
        &mut std::io::sink(),
        Some(&mut |row| match row {
            Row::Info(info) => apply_info(info, &mut session),
            Row::Message(m, read) => reading.message(&m, &mut session, read > full_below),
        }),
    )?;
    reading.finish(&mut session);
    // What the database held that could not be read comes before what its messages say.
    let said = std::mem::take(&mut session.warnings);
    for w in rows.warnings {
        session.warn(None, w);
    }
    session.warnings.extend(said);
    if !rows.todos.is_empty() {
        session.todos = rows.todos;
    }
    Ok((session, rows.size))
}

/// Fills `session` from an export-shaped document.
fn read_doc(doc: &Value, session: &mut Session, mut reading: Reading) {
    let info = &doc["info"];
    if !info.is_object() {
        session.warn(
            None,
            "no `info` object: not an OpenCode session (nothing read)",
        );
        return;
    }
    apply_info(info, session);
    match doc.get("messages").and_then(Value::as_array) {
        Some(messages) => {
            for m in messages {
                reading.message(m, session, true);
            }
        }
        None => session.warn(
            None,
            "no `messages` array: the session holds no conversation",
        ),
    }
    reading.finish(session);
}

fn apply_info(info: &Value, session: &mut Session) {
    let s = |k: &str| str_field(info, k).map(str::to_string);
    session.id = s("id").unwrap_or_default();
    session.cwd = s("directory");
    session.title = s("title")
        .filter(|t| !t.trim().is_empty())
        .map(|t| crate::text::one_line(&t));
    session.parent_id = s("parentID");
    session.source_version = s("version");
    session.created = info["time"].get("created").and_then(Timestamp::from_value);
    session.updated = info["time"].get("updated").and_then(Timestamp::from_value);
    session.archived = info["time"].get("archived").is_some_and(|a| !a.is_null());
    if let Some(p) = info["metadata"].get(super::RELAY_FIELD) {
        session.extra.insert("provenance".into(), p.clone());
    }
    if let Some(p) = s("projectID") {
        session.extra.insert("project_id".into(), json!(p));
    }
}

/// What the reader carries from one message to the next.
struct Reading {
    opts: ReadOptions,
    /// Messages read.
    n: usize,
    /// The model of the newest answer.
    model: Option<String>,
    /// Results not placed yet, with the time each ended.
    pending: Vec<(i64, Message)>,
    /// Where older turns go to the fold as they are read, once folding started.
    window: Option<FoldWindow>,
}

impl Reading {
    fn new(opts: ReadOptions) -> Reading {
        Reading {
            opts,
            n: 0,
            model: None,
            pending: Vec::new(),
            window: None,
        }
    }

    /// Reads the next message; with `fold`, older turns may go to the fold from now on.
    fn message(&mut self, m: &Value, session: &mut Session, fold: bool) {
        let n = self.n;
        message(m, n, session, self);
        self.n += 1;
        if fold && self.window.is_none() {
            self.window = self.opts.fold.as_ref().map(FoldWindow::new);
        }
        if let Some(w) = self.window.as_mut() {
            w.after_messages(session);
        }
    }

    fn finish(mut self, session: &mut Session) {
        self.flush(session, None);
        if let Some(m) = self.model {
            session.extra.insert("model".into(), json!(m));
        }
        if session.title.is_none() {
            session.title = session.first_user_prompt().map(crate::text::one_line);
        }
        session.fill_times_from_messages();
        session.pair_tool_calls();
    }

    /// Places the results that ended by `until` (all of them for `None`), in the order they
    /// ended.
    fn flush(&mut self, session: &mut Session, until: Option<i64>) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_by_key(|(end, _)| *end);
        let n = self
            .pending
            .iter()
            .take_while(|(end, _)| until.is_none_or(|t| *end <= t))
            .count();
        session
            .messages
            .extend(self.pending.drain(..n).map(|(_, r)| r));
    }
}

/// When a part started, as OpenCode records it.
fn started(p: &Value) -> Option<i64> {
    p["time"]["start"]
        .as_i64()
        .or_else(|| p["state"]["time"]["start"].as_i64())
}

/// One message `{info, parts}`, the `n`th of the session.
fn message(m: &Value, n: usize, session: &mut Session, reading: &mut Reading) {
    let info = &m["info"];
    let id = str_field(info, "id").unwrap_or("?").to_string();
    let ts = info["time"].get("created").and_then(Timestamp::from_value);
    let parts: &[Value] = m["parts"].as_array().map_or(&[], Vec::as_slice);
    let base = |role: Role, text: String| {
        Message::new(role, text)
            .with_time(ts.clone())
            .with_meta("message_id", id.clone())
    };
    if let Some(t) = info["time"]["created"].as_i64() {
        reading.flush(session, Some(t));
    }
    match str_field(info, "role") {
        Some("user") => user(info, parts, &base, session),
        Some("assistant") => assistant(info, parts, &base, session, reading),
        other => session.warn(
            None,
            format!(
                "message {id} (#{n}) has role {}: left out",
                other.unwrap_or("(none)")
            ),
        ),
    }
}

type Base<'a> = &'a dyn Fn(Role, String) -> Message;

fn user(info: &Value, parts: &[Value], base: Base, session: &mut Session) {
    let mut texts = Vec::new();
    let mut files = 0;
    for p in parts {
        match str_field(p, "type").unwrap_or_default() {
            "text" if p.get("synthetic") != Some(&json!(true)) => {
                texts.push(str_field(p, "text").unwrap_or_default().to_string())
            }
            "text" => quiet_or_unknown(session, "synthetic"),
            "file" => files += 1,
            "compaction" => {
                session
                    .messages
                    .push(base(Role::System, String::new()).with_kind(MessageKind::Compaction));
            }
            kind => quiet_or_unknown(session, kind),
        }
    }
    if texts.is_empty() && files == 0 {
        return;
    }
    let context = str_field(info, super::RELAY_FIELD) == Some("context");
    let mut msg = if context {
        base(Role::System, texts.join("\n")).with_kind(MessageKind::Context)
    } else {
        base(Role::User, texts.join("\n"))
    };
    if files > 0 {
        msg = msg.with_meta("files", files);
    }
    session.messages.push(msg);
}

fn assistant(
    info: &Value,
    parts: &[Value],
    base: Base,
    session: &mut Session,
    reading: &mut Reading,
) {
    if let Some(m) = str_field(info, "modelID").filter(|m| !m.is_empty()) {
        reading.model = Some(m.to_string());
    }
    if info.get("summary") == Some(&json!(true)) {
        let text: Vec<&str> = parts
            .iter()
            .filter(|p| str_field(p, "type") == Some("text"))
            .filter_map(|p| str_field(p, "text"))
            .collect();
        session
            .messages
            .push(base(Role::System, text.join("\n")).with_kind(MessageKind::Compaction));
        return;
    }
    let at = session.messages.len();
    // Where the answer starts in the whole session, folded turns counted.
    let at_whole = session.end();
    for p in parts {
        if let Some(t) = started(p) {
            reading.flush(session, Some(t));
        }
        match str_field(p, "type").unwrap_or_default() {
            "text" => {
                let text = str_field(p, "text").unwrap_or_default();
                if !text.is_empty() {
                    session.messages.push(base(Role::Assistant, text.into()));
                }
            }
            "reasoning" => {
                let text = str_field(p, "text").unwrap_or_default();
                session.messages.push(base(Role::Reasoning, text.into()));
            }
            "tool" => {
                let (call, result) = tool(p, base, &reading.opts);
                if super::tools::WRITE_TOOLS.contains(&call.tool_name.as_deref().unwrap_or(""))
                    && let Some(k) = &call.key_arg
                {
                    session.touch_file(k);
                }
                if call.tool_name.as_deref() == Some(super::tools::TODO_TOOL)
                    && let Some(t) = (call.tool_input.as_ref())
                        .and_then(|i| crate::model::todo_list(i, "todos", "content"))
                {
                    session.todos = t;
                }
                session.messages.push(call);
                reading.pending.extend(result);
            }
            kind => quiet_or_unknown(session, kind),
        }
    }
    if let Some(m) = reading.model.clone() {
        for msg in &mut session.messages[at..] {
            msg.metadata.insert("model", json!(m));
        }
    }
    let tokens = &info["tokens"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let prompt = n(&tokens["input"]) + n(&tokens["cache"]["read"]) + n(&tokens["cache"]["write"]);
    if prompt > 0 {
        session.record_context_usage(prompt, at_whole, reading.model.as_deref());
    }
    // The person stopped the answer (Esc, Ctrl+C): OpenCode records it only as its error.
    if str_field(&info["error"], "name") == Some("MessageAbortedError") {
        let why = str_field(&info["error"]["data"], "message").unwrap_or("aborted");
        let note = base(Role::System, why.into()).with_kind(MessageKind::Interruption);
        session.messages.push(note);
    }
}

/// A tool part: its call, and its result (with the time it ended, to order it) unless it has
/// none yet (pending, running, or a relay's call that had no result).
fn tool(p: &Value, base: Base, opts: &ReadOptions) -> (Message, Option<(i64, Message)>) {
    let name = str_field(p, "tool").unwrap_or_default().to_string();
    let state = &p["state"];
    let input = state.get("input").cloned().unwrap_or_else(|| json!({}));
    let what = super::tools::classify(&name, &input);
    let call_id = str_field(p, "callID").map(str::to_string);
    let c = crate::adapter::as_call(
        base(Role::ToolCall, String::new()),
        call_id.clone(),
        name.clone(),
        Some(input),
        what,
    );
    let unanswered = state["metadata"].get(super::RELAY_FIELD) == Some(&json!("unanswered"));
    let (text, is_error) = match str_field(state, "status") {
        Some("completed") => (str_field(state, "output").unwrap_or_default(), false),
        Some("error") if !unanswered => (str_field(state, "error").unwrap_or_default(), true),
        _ => return (c, None),
    };
    let mut r = base(Role::ToolResult, String::new());
    r.tool_call_id = call_id;
    r.tool_name = Some(name);
    r.is_error = is_error;
    // "Reject" at the permission prompt, with or without feedback (not a config rule's denial).
    if is_error && text.contains("rejected permission to use this specific tool call") {
        r.metadata.insert("rejected", json!(true));
    }
    if let Some(code) = state["metadata"].get("exit").and_then(Value::as_i64) {
        r.is_error |= code != 0;
        r.metadata.insert("exit_code", json!(code));
    }
    let chars = text.chars().count();
    match opts.max_tool_output {
        Some(max) if chars > max => {
            r.content = crate::text::trim_output(text, max);
            r.state_mut().original_chars = Some(chars);
        }
        _ => r.content = text.to_string(),
    }
    let end = state["time"]["end"].as_i64().unwrap_or(i64::MAX);
    (c, Some((end, r)))
}

/// A part of `kind` that makes no message, counted as skipped if it is one of `QUIET_PARTS`
/// (or a user's synthetic text), else as unknown.
fn quiet_or_unknown(session: &mut Session, kind: &str) {
    let stats = &mut session.stats;
    match QUIET_PARTS.contains(&kind) || kind == "synthetic" {
        true => crate::adapter::tally(&mut stats.skipped_types, kind, 1),
        false => crate::adapter::tally(&mut stats.unknown_types, format!("part:{kind}"), 1),
    }
}
