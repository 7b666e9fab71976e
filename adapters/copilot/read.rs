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
use serde_json::{Map, Value, json};

use crate::adapter::ReadOptions;
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

/// Where a read cut a tool output, with its length before the cut.
const CUT: &str = "_sessionRelayOriginalChars";

/// What a line becomes before the reader takes it, on the parsing threads: the data nobody
/// reads dropped, tool outputs cut to `max` characters (recording their length).
fn prepare(mut v: Value, max: Option<usize>) -> Value {
    let kind = str_field(&v, "type").unwrap_or_default();
    if data_unread(kind) {
        if let Some(d) = v.get_mut("data") {
            *d = Value::Null;
        }
        return v;
    }
    if kind != "tool.execution_complete" {
        return v;
    }
    let Some(data) = v.get_mut("data").and_then(Value::as_object_mut) else {
        return v;
    };
    data.remove(CUT);
    data.remove("toolTelemetry");
    if let Some(r) = data.get_mut("result").and_then(Value::as_object_mut) {
        r.remove("detailedContent");
    }
    let Some(max) = max else { return v };
    let mut cut = None;
    for at in ["/result/content", "/error/message"] {
        if let Some(Value::String(s)) = data_pointer(data, at) {
            let n = s.chars().count();
            if n > max {
                *s = crate::text::trim_output(s, max);
                cut = Some(cut.unwrap_or(0) + n);
            }
        }
    }
    if let Some(n) = cut {
        data.insert(CUT.into(), json!(n));
    }
    v
}

fn data_pointer<'a>(data: &'a mut Map<String, Value>, at: &str) -> Option<&'a mut Value> {
    let (key, rest) = at[1..].split_once('/')?;
    data.get_mut(key)?.get_mut(rest)
}

pub fn read(path: &Path, opts: ReadOptions) -> Result<Session> {
    let stem = path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut session = Session::new(super::NAME, "copilot-events", stem);
    session.source_path = Some(path.display().to_string());
    let max = opts.max_tool_output;
    let mut st = State::default();
    let pass = jsonl::for_each_line(
        path,
        jsonl::Pass::default(),
        |_, _| None,
        |_, v| prepare(v, max),
        |no, line| {
            if let Line::Json(v) = line {
                st.event(v, no, &mut session);
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
}

impl State {
    fn event(&mut self, v: Value, no: usize, session: &mut Session) {
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
            "tool.execution_complete" => result(&data, at, session),
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
fn result(data: &Value, at: Event, session: &mut Session) {
    let Some(id) = str_field(data, "toolCallId") else {
        session.warn(
            Some(at.no),
            "a tool.execution_complete without toolCallId skipped",
        );
        return;
    };
    let output = data.pointer("/result/content").and_then(Value::as_str);
    let success = data.get("success").and_then(Value::as_bool) != Some(false);
    let content = if success {
        output.unwrap_or_default().to_string()
    } else {
        let error = data.pointer("/error/message").and_then(Value::as_str);
        [error, output]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let mut m = at.message(Role::ToolResult, &content);
    m.tool_call_id = Some(id.to_string());
    m.is_error = !success;
    if let Some(code) = data
        .pointer("/shellExecution/exitCode")
        .and_then(jsonl::as_whole)
    {
        m.metadata.insert("exit_code", json!(code));
        m.is_error |= code != 0;
    }
    if let Some(n) = data.get(CUT).and_then(Value::as_u64) {
        m.state_mut().original_chars = Some(n as usize);
    }
    session.messages.push(m);
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
        let p = prepare(v, Some(20));
        assert_eq!(p["data"][CUT], 50);
        assert!(p["data"]["result"].get("detailedContent").is_none());
        assert!(p["data"].get("toolTelemetry").is_none());
        assert!(p["data"]["result"]["content"].as_str().unwrap().len() < 50);
        let sys = prepare(
            json!({"type": "system.message", "data": {"content": "prompt"}}),
            None,
        );
        assert!(sys["data"].is_null());
    }
}
