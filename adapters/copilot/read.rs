//! Reads a Copilot CLI session log into the neutral model: user and assistant messages, the
//! reasoning Copilot records (`reasoningText`), tool requests paired with their executions'
//! results, and compaction summaries. The CLI's bookkeeping (turns, usage records, shutdowns,
//! the system prompt it stores at every turn, the model calls of a compaction) is passed over.
//!
//! The CLI sends a resumed model only what follows the last compaction, after its summary; the
//! reader keeps the whole log, the compaction standing where it happened, as the other readers
//! keep a compacted session.

use std::path::Path;

use anyhow::Result;
use serde::de::MapAccess;
use serde_json::{Map, Value, json};

use crate::adapter::part::{self, Cuts};
use crate::adapter::{FoldWindow, KeptOutput, OutputCut, ReadOptions};
use crate::jsonl::fields::{self, Fields, Scalar, Str};
use crate::jsonl::{self, Line, str_field};
use crate::model::{Message, MessageKind, Role, Session, TimeSpan, Timestamp};

/// Events that carry nothing of the conversation: the CLI's own bookkeeping.
const BOOKKEEPING: &[&str] = &[
    "system.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "tool.execution_start",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "session.shutdown",
    "session.compaction_start",
    "session.info",
    "session.mode_changed",
    "session.truncation",
    "session.title_changed",
    "hook.start",
    "hook.end",
];

/// Events whose data the reader never looks at, dropped as they are parsed: the system prompt
/// and the compaction's whole model request can be most of a log.
fn data_unread(kind: &str) -> bool {
    kind.starts_with("model.") || kind == "system.message"
}

/// A line as the parsing threads hand it on.
enum Prepared {
    /// An event whose data the reader never looks at (`data_unread`, `BOOKKEEPING`), parsed
    /// for its type, time and agent without a tree.
    Skipped {
        kind: String,
        ts: Option<Timestamp>,
        subagent: bool,
    },
    /// Any other line, whole but for what is never read; for a tool execution, its output as
    /// the read keeps it when it cut it.
    Whole(Value, Option<KeptOutput>),
}

/// What a line becomes before the reader takes it, on the parsing threads: the data nobody
/// reads dropped, a tool's output cut as `cut` says.
fn prepare(mut v: Value, cut: Option<OutputCut>) -> Prepared {
    let kind = str_field(&v, "type").unwrap_or_default();
    if data_unread(kind) {
        if let Some(d) = v.get_mut("data") {
            *d = Value::Null;
        }
        return Prepared::Whole(v, None);
    }
    if kind != "tool.execution_complete" {
        return Prepared::Whole(v, None);
    }
    let Some(data) = v.get_mut("data").and_then(Value::as_object_mut) else {
        return Prepared::Whole(v, None);
    };
    data.remove("toolTelemetry");
    if let Some(r) = data.get_mut("result").and_then(Value::as_object_mut) {
        r.remove("detailedContent");
    }
    let kept = cut.and_then(|cut| {
        let (text, n) = output(data);
        let kept = cut.keep(&text, n)?;
        // The output is read from what was kept from here on.
        for at in [["result", "content"], ["error", "message"]] {
            if let Some(o) = data.get_mut(at[0]).and_then(Value::as_object_mut) {
                o.remove(at[1]);
            }
        }
        Some(kept)
    });
    Prepared::Whole(v, kept)
}

/// What a tool execution's result reads as, and its length in characters: its output
/// (`result.content`), or for a failure the error message, then the output.
fn output(data: &Map<String, Value>) -> (String, usize) {
    let at = |a: &str, b: &str| data.get(a).and_then(|o| o.get(b)).and_then(Value::as_str);
    let (error, output) = (at("error", "message"), at("result", "content"));
    let text = if data.get("success").and_then(Value::as_bool) != Some(false) {
        output.unwrap_or_default().to_string()
    } else {
        [error, output]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let n = text.chars().count();
    (text, n)
}

/// The fields of an event the reader needs when it reads nothing of its data.
#[derive(Default)]
struct Head<'a> {
    kind: Str<'a>,
    timestamp: Scalar<'a>,
    agent: Str<'a>,
}

impl<'de> Fields<'de> for Head<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "timestamp" => self.timestamp = map.next_value()?,
            "agentId" => self.agent = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Whether a line may be an event whose data is never read (its type, quote included, is
/// in its text: prose that says "model." does not count).
fn may_skip(text: &str) -> bool {
    [
        b"\"system.message\"".as_slice(),
        b"\"model.",
        b"\"assistant.turn_",
        b"\"hook.",
        b"\"tool.execution_start\"",
        b"\"tool.execution_p",
    ]
    .iter()
    .any(|k| jsonl::contains(text.as_bytes(), k))
}

/// A line of an event whose data is never read, without a tree: the system prompt at every
/// turn and the model calls of a compaction are much of a log. `None` for any other line
/// (and for one that is not JSON, which the full parse then reports).
fn skipped(text: &str) -> Option<Prepared> {
    if !may_skip(text) {
        return None;
    }
    let head = fields::parse::<Head>(text)?;
    let kind = head.kind.get()?;
    if !(BOOKKEEPING.contains(&kind) || data_unread(kind)) {
        return None;
    }
    Some(Prepared::Skipped {
        kind: kind.to_string(),
        ts: head
            .timestamp
            .to_value()
            .and_then(|t| Timestamp::from_value(&t)),
        subagent: head.agent.get().is_some(),
    })
}

/// What a line counts for in the newest turns, and whether it starts a turn, told from its
/// text (an estimate): the CLI's bookkeeping, the start of each tool's execution among it (its
/// call is in the answer before), makes no message.
fn measure(text: &str) -> (usize, bool) {
    if may_skip(text) {
        return (0, false);
    }
    let turn = jsonl::contains(text.as_bytes(), b"\"user.message\"");
    (text.len(), turn)
}

/// Reads the log in one pass, each event turned into messages as it comes and older turns
/// folded as `opts` ask; with a tail, a first pass sizes the lines (see `adapter::part`).
pub fn read(path: &Path, opts: ReadOptions) -> Result<Session> {
    let stem = path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut session = Session::new(super::NAME, "copilot-events", stem);
    session.source_path = Some(path.display().to_string());
    let sizes = match Cuts::want_sizes(&opts) {
        true => part::line_sizes(path, measure)?,
        false => Vec::new(),
    };
    let cuts = Cuts::new(&opts, &sizes);
    drop(sizes);
    let mut window = opts.fold.as_ref().map(FoldWindow::new);
    let mut st = State::default();
    let pass = jsonl::for_each_line(
        path,
        jsonl::Pass::default(),
        |_, text| skipped(text),
        |no, v| prepare(v, cuts.cut(no)),
        |no, line| {
            if let Line::Json(p) = line {
                st.event(p, no, &mut session);
                if let Some(w) = window.as_mut() {
                    w.after_messages(&mut session);
                }
            }
            Ok(())
        },
    )?;
    session.record_pass(&pass);
    st.finish(path, pass.lines, &mut session);
    Ok(session)
}

/// What the reader learns of the session beside its messages.
#[derive(Default)]
struct State {
    id: Option<String>,
    cwd: Option<String>,
    start: Option<Timestamp>,
    times: TimeSpan,
    model: Option<String>,
    started: bool,
    /// The calls the person refused at the permission prompt, by call id.
    refused: std::collections::HashSet<String>,
}

impl State {
    fn event(&mut self, p: Prepared, no: usize, session: &mut Session) {
        let (v, kept) = match p {
            Prepared::Whole(v, kept) => (v, kept),
            Prepared::Skipped { kind, ts, subagent } => {
                if let Some(t) = &ts {
                    self.times.see(t);
                }
                match subagent {
                    true => session.stats.sidechain_lines += 1,
                    false => count(&mut session.stats.skipped_types, &kind),
                }
                return;
            }
        };
        let Value::Object(mut obj) = v else {
            count(&mut session.stats.unknown_types, "<not an object>");
            return;
        };
        let kind = match obj.get("type").and_then(Value::as_str) {
            Some(k) => k.to_string(),
            None => {
                count(&mut session.stats.unknown_types, "<no type>");
                return;
            }
        };
        let ts = obj.get("timestamp").and_then(Timestamp::from_value);
        if let Some(t) = &ts {
            self.times.see(t);
        }
        // A subagent's own events: its conversation is not the session's.
        if obj.get("agentId").and_then(Value::as_str).is_some() {
            session.stats.sidechain_lines += 1;
            return;
        }
        let data = obj.remove("data").unwrap_or(Value::Null);
        let at = Event { no, ts: &ts };
        match kind.as_str() {
            "session.start" => self.start(&data, &ts, session),
            "session.resume" => self.context(&data),
            "session.model_change" => {
                if let Some(m) = str_field(&data, "newModel") {
                    self.model = Some(m.to_string());
                }
            }
            "user.message" => user(&data, at, session),
            "assistant.message" => self.assistant(&data, at, session),
            "tool.execution_complete" => result(&data, kept, at, &self.refused, session),
            "permission.completed" => {
                let human = str_field(&data, "decisionSource") == Some("human_response");
                let kind = data.pointer("/result/kind").and_then(Value::as_str);
                if let (true, Some("denied-interactively-by-user"), Some(id)) =
                    (human, kind, str_field(&data, "toolCallId"))
                {
                    self.refused.insert(id.to_string());
                }
                count(&mut session.stats.skipped_types, "permission.completed");
            }
            "abort" => abort(&data, at, session),
            "session.compaction_complete" => compaction(&data, at, session),
            "session.usage_record" => self.usage(&data, session),
            "session-relay" => {
                if let Some(p) = obj.remove("provenance") {
                    session.extra.insert("session_relay".into(), p);
                }
            }
            k if BOOKKEEPING.contains(&k) || data_unread(k) => {
                count(&mut session.stats.skipped_types, k)
            }
            k => count(&mut session.stats.unknown_types, k),
        }
    }

    fn start(&mut self, data: &Value, ts: &Option<Timestamp>, session: &mut Session) {
        if self.started {
            count(&mut session.stats.skipped_types, "session.start (again)");
            return;
        }
        self.started = true;
        self.id = str_field(data, "sessionId").map(str::to_string);
        self.start = data
            .get("startTime")
            .and_then(Timestamp::from_value)
            .or(ts.clone());
        session.source_version = str_field(data, "copilotVersion").map(str::to_string);
        self.context(data);
    }

    /// The directory and model a start or a resume names (the first directory wins).
    fn context(&mut self, data: &Value) {
        if self.cwd.is_none() {
            self.cwd = data
                .pointer("/context/cwd")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_string);
        }
        if let Some(m) = str_field(data, "selectedModel") {
            self.model = Some(m.to_string());
        }
    }

    fn assistant(&mut self, data: &Value, at: Event, session: &mut Session) {
        if let Some(m) = str_field(data, "model") {
            self.model = Some(m.to_string());
        }
        if let Some(r) = str_field(data, "reasoningText").filter(|r| !r.trim().is_empty()) {
            session.messages.push(at.message(Role::Reasoning, r));
        }
        if let Some(c) = str_field(data, "content").filter(|c| !c.trim().is_empty()) {
            session.messages.push(at.message(Role::Assistant, c));
        }
        let requests = data.get("toolRequests").and_then(Value::as_array);
        for r in requests.into_iter().flatten() {
            let (Some(id), Some(name)) = (str_field(r, "toolCallId"), str_field(r, "name")) else {
                session.warn(
                    Some(at.no),
                    "a tool request without toolCallId or name skipped",
                );
                continue;
            };
            let args = r.get("arguments").cloned().unwrap_or(Value::Null);
            if super::tools::WRITE_TOOLS.contains(&name)
                && let Some(p) = str_field(&args, "path")
            {
                session.touch_file(p);
            }
            let (kind, key) = super::tools::classify(name, &args);
            let mut call = at.message(Role::ToolCall, "");
            call.tool_call_id = Some(id.to_string());
            call.tool_name = Some(name.to_string());
            call.tool_kind = Some(kind);
            call.key_arg = Some(key);
            call.tool_input = Some(args).filter(|a| !a.is_null());
            session.messages.push(call);
        }
    }

    /// The context the model call about to be answered carried, as the CLI counted it.
    fn usage(&mut self, data: &Value, session: &mut Session) {
        let usage = data.get("usage").unwrap_or(data);
        let tokens = usage.get("inputTokens").and_then(jsonl::as_count);
        if let Some(t) = tokens.filter(|t| *t > 0) {
            let model = str_field(usage, "model").or(self.model.as_deref());
            let model = model.map(str::to_string);
            session.record_context_usage(t, session.end(), model.as_deref());
        }
    }

    fn finish(self, path: &Path, lines: usize, session: &mut Session) {
        if lines > 0 && !self.started {
            session.warn(
                None,
                format!(
                    "{} has no session.start event: Copilot CLI refuses to resume it (\"Session file is corrupted or incompatible\")",
                    path.display()
                ),
            );
        }
        if let Some(id) = super::folder_id(path).or(self.id) {
            session.id = id;
        }
        let ws = super::workspace(path);
        let ws_str = |k: &str| ws.as_ref().and_then(|w| super::workspace_str(w, k));
        session.cwd = self.cwd.or_else(|| ws_str("cwd"));
        session.title = ws_str("name")
            .or_else(|| session.first_user_prompt().map(str::to_string))
            .map(|t| crate::text::one_line(&t));
        session.created = self.start.or_else(|| self.times.first());
        session.updated = self.times.last();
        if let Some(m) = self.model {
            session.extra.insert("model".into(), json!(m));
        }
        session.pair_tool_calls();
    }
}

/// Where an event is: its line and time, which every message made of it carries.
#[derive(Clone, Copy)]
struct Event<'a> {
    no: usize,
    ts: &'a Option<Timestamp>,
}

impl Event<'_> {
    fn message(self, role: Role, content: &str) -> Message {
        Message::new(role, content)
            .with_time(self.ts.clone())
            .with_meta("line", self.no)
    }
}

fn count(map: &mut std::collections::BTreeMap<String, usize>, key: &str) {
    *map.entry(key.to_string()).or_default() += 1;
}

/// A user message: the person's words (empty ones too: the CLI sends them), or context a
/// relay wrote (see `RELAY_FIELD`).
fn user(data: &Value, at: Event, session: &mut Session) {
    let Some(text) = str_field(data, "content") else {
        session.warn(Some(at.no), "a user.message without content skipped");
        return;
    };
    if str_field(data, super::RELAY_FIELD) == Some("context") {
        let m = at
            .message(Role::System, text)
            .with_kind(MessageKind::Context);
        session.messages.push(m);
    } else {
        session.messages.push(at.message(Role::User, text));
    }
}

/// A tool execution's result: its output (`result.content`), or for a failure the error
/// message. A shell command that exits non-zero is a success to the CLI, which still draws it
/// as failed: it is a failure here too, with its exit code.
fn result(
    data: &Value,
    kept: Option<KeptOutput>,
    at: Event,
    refused: &std::collections::HashSet<String>,
    session: &mut Session,
) {
    let Some(id) = str_field(data, "toolCallId") else {
        session.warn(
            Some(at.no),
            "a tool.execution_complete without toolCallId skipped",
        );
        return;
    };
    let mut m = at.message(Role::ToolResult, "");
    match (kept, data.as_object()) {
        (Some(kept), _) => kept.apply_to(&mut m),
        (None, Some(data)) => m.content = output(data).0,
        (None, None) => {}
    }
    m.tool_call_id = Some(id.to_string());
    m.is_error = data.get("success").and_then(Value::as_bool) == Some(false);
    if let Some(code) = data
        .pointer("/shellExecution/exitCode")
        .and_then(jsonl::as_whole)
    {
        m.metadata.insert("exit_code", json!(code));
        m.is_error |= code != 0;
    }
    if refused.contains(id) {
        m.metadata.insert("rejected", json!(true));
    }
    session.messages.push(m);
}

/// A turn the person stopped (Ctrl+C, Esc, or an MCP client's `user.abort`); the CLI records
/// only why, which stands for the note here.
fn abort(data: &Value, at: Event, session: &mut Session) {
    let reason = str_field(data, "reason").unwrap_or_default();
    if matches!(reason, "user_initiated" | "user_abort") {
        let m = at.message(Role::System, &format!("abort: {reason}"));
        session
            .messages
            .push(m.with_kind(MessageKind::Interruption));
    } else {
        count(&mut session.stats.skipped_types, "abort");
    }
}

/// A compaction the CLI completed: its summary, which the resumed model gets in place of what
/// came before.
fn compaction(data: &Value, at: Event, session: &mut Session) {
    if data.get("success").and_then(Value::as_bool) == Some(false) {
        count(
            &mut session.stats.skipped_types,
            "session.compaction_complete (failed)",
        );
        return;
    }
    let summary = str_field(data, "summaryContent").unwrap_or("Conversation compacted");
    let mut m = at
        .message(Role::System, summary)
        .with_kind(MessageKind::Compaction);
    if let Some(n) = data.get("checkpointNumber").filter(|n| n.is_number()) {
        m = m.with_meta("checkpoint", n.clone());
    }
    session.messages.push(m);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_cut_while_parsed_and_the_unread_data_dropped() {
        let long = "x".repeat(50);
        let v = json!({"type": "tool.execution_complete", "data": {
            "toolCallId": "c", "success": true, "toolTelemetry": {"a": 1},
            "result": {"content": long, "detailedContent": "diff"}}});
        let cut = OutputCut {
            max: 20,
            reduced: false,
            mask: None,
        };
        let Prepared::Whole(p, Some(kept)) = prepare(v, Some(cut)) else {
            panic!("not cut");
        };
        assert_eq!(kept.original_chars, Some(50));
        assert!(kept.content.len() < 50);
        assert!(p["data"]["result"].get("detailedContent").is_none());
        assert!(p["data"]["result"].get("content").is_none());
        assert!(p["data"].get("toolTelemetry").is_none());
        let Prepared::Whole(sys, None) = prepare(
            json!({"type": "system.message", "data": {"content": "prompt"}}),
            None,
        ) else {
            panic!("not whole");
        };
        assert!(sys["data"].is_null());
    }

    /// An event whose data is never read is taken without a tree, for what a full parse takes
    /// of it; any other line, and one that is not JSON, is left to the full parse.
    #[test]
    fn unread_events_are_skipped_without_a_tree() {
        let line = r#"{"type":"system.message","data":{"content":"a long prompt"},"timestamp":"2026-01-01T00:00:00Z"}"#;
        let Some(Prepared::Skipped { kind, ts, subagent }) = skipped(line) else {
            panic!("not skipped");
        };
        assert_eq!(kind, "system.message");
        assert!(ts.is_some() && !subagent);
        let sub = r#"{"type":"model.call","agentId":"a1","data":{}}"#;
        assert!(matches!(
            skipped(sub),
            Some(Prepared::Skipped { subagent: true, .. })
        ));
        assert!(skipped(r#"{"type":"user.message","data":{"content":"model."}}"#).is_none());
        assert!(skipped(r#"{"type":"system.message","data":"#).is_none());
    }
}
