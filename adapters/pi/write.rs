//! Writes a relay-shaped session as a pi session that `pi --session <id>` resumes in the
//! session's directory: `sessions/--<cwd>--/<time>_<id>.jsonl`, or `<time>_<id>.jsonl` straight
//! in `$PI_CODING_AGENT_SESSION_DIR` when it is set.
//!
//! - A version 3 `session` header with the directory, then the title as `session_info` (what
//!   pi's picker and footer show) and the provenance in a `session-relay` entry (an entry type
//!   pi does not know: kept, never sent).
//! - Entries chained by fresh 8-hex ids, each the parent of the next: the last line is the
//!   leaf pi continues from.
//! - One assistant message per answer: thinking, text and the calls made together, with a
//!   `usage` (zeros) on every one (pi reads `usage.totalTokens` of each and sends nothing
//!   without it). No provider or model: pi answers with the user's own model, without a
//!   warning about one it cannot restore.
//! - Each result is a `toolResult` message after its call's message. Context that is not the
//!   person's words (the handoff brief, summaries) is a user message marked
//!   `sessionRelay: "context"`, which pi sends as any user message.

use std::collections::HashSet;

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::adapter::write::{Clock, ToolNames, call_args, call_name, extend, push_line, stamp};
use crate::adapter::{NativeSession, WriteRequest};
use crate::model::{Message, Role, Session};

pub fn write(shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
    let path = req.path_or(|| session_dir(req).join(file_name(&req.id, req.now)));
    let mut w = Writer {
        out: Vec::new(),
        parent: None,
        ids: HashSet::new(),
        clock: Clock::new(req.now),
        names: ToolNames::default(),
        pending: Vec::new(),
        pending_time: req.now,
        awaiting: HashSet::new(),
        deferred: Vec::new(),
    };
    w.line(json!({
        "type": "session",
        "version": 3,
        "id": req.id,
        "timestamp": stamp(req.now),
        "cwd": req.cwd,
    }));
    if let Some(first) = crate::adapter::write::first_time(shaped) {
        w.clock = Clock::new(first.min(req.now));
    }
    let now = w.clock.now;
    w.entry("session_info", now, json!({"name": req.title}));
    w.entry(
        super::RELAY_ENTRY,
        now,
        json!({"provenance": req.provenance, "sessionId": req.id}),
    );
    for m in &shaped.messages {
        w.message(m);
    }
    w.flush();
    w.flush_deferred();
    Ok(NativeSession::new(&super::ADAPTER, req, path, w.out))
}

/// The folder pi keeps the session in: `$PI_CODING_AGENT_SESSION_DIR` itself when it is set
/// (pi then lists and resumes only the sessions straight in it, and takes one found elsewhere
/// for another project's), else the project's folder under the agent dir.
fn session_dir(req: &WriteRequest) -> std::path::PathBuf {
    crate::fsutil::dir_from_env(super::SESSION_DIR_ENV)
        .unwrap_or_else(|| req.home.join("sessions").join(super::project_dir(&req.cwd)))
}

/// `<header time>_<id>.jsonl`, pi's own pattern: the time with `:` and `.` as `-`.
pub fn file_name(id: &str, now: DateTime<Utc>) -> String {
    format!("{}_{id}.jsonl", now.format("%Y-%m-%dT%H-%M-%S-%3fZ"))
}

struct Writer {
    out: Vec<u8>,
    /// The id of the last entry written: the next one's parent.
    parent: Option<String>,
    ids: HashSet<String>,
    clock: Clock,
    /// Every call's tool name by id, for its result.
    names: ToolNames,
    /// The blocks of the assistant message being assembled, and its time.
    pending: Vec<Value>,
    pending_time: DateTime<Utc>,
    /// Calls written whose results are not yet.
    awaiting: HashSet<String>,
    /// Thinking that came while calls awaited their results: it opens the next answer, as a
    /// model's request must give each call its result before anything else.
    deferred: Vec<Value>,
}

impl Writer {
    fn line(&mut self, v: Value) {
        push_line(&mut self.out, &v);
    }

    /// A fresh 8-hex entry id, as pi makes them, never one used before in the file.
    fn new_id(&mut self) -> String {
        loop {
            let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
            if self.ids.insert(id.clone()) {
                return id;
            }
        }
    }

    /// An entry of `kind` chained to the one before, with `fields`.
    fn entry(&mut self, kind: &str, t: DateTime<Utc>, fields: Value) {
        let id = self.new_id();
        let mut v = json!({
            "type": kind,
            "id": id,
            "parentId": self.parent,
            "timestamp": stamp(t),
        });
        extend(&mut v, fields);
        self.line(v);
        self.parent = Some(id);
    }

    fn message_entry(&mut self, t: DateTime<Utc>, message: Value, extra: Value) {
        let mut fields = json!({"message": message});
        extend(&mut fields, extra);
        self.entry("message", t, fields);
    }

    fn message(&mut self, m: &Message) {
        let t = self.clock.at_message(m);
        match m.role {
            Role::User | Role::System => {
                self.flush();
                self.flush_deferred();
                let extra = if m.role == Role::System {
                    json!({super::RELAY_FIELD: "context"})
                } else {
                    json!({})
                };
                let message = json!({
                    "role": "user",
                    "content": [{"type": "text", "text": m.content}],
                    "timestamp": t.timestamp_millis(),
                });
                self.message_entry(t, message, extra);
            }
            Role::Reasoning => {
                self.block(t, json!({"type": "thinking", "thinking": m.content}));
            }
            Role::Assistant => self.block(t, json!({"type": "text", "text": m.content})),
            Role::ToolCall => {
                let id = m
                    .tool_call_id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}", self.names.len()));
                let name = call_name(m);
                self.names.insert(&id, &name);
                let args = call_args(m);
                self.block(
                    t,
                    json!({"type": "toolCall", "id": id, "name": name, "arguments": args}),
                );
            }
            Role::ToolResult => {
                self.flush();
                let id = m.tool_call_id.clone().unwrap_or_default();
                self.awaiting.remove(&id);
                let name = self.names.of(&id);
                let message = json!({
                    "role": "toolResult",
                    "toolCallId": id,
                    "toolName": name,
                    "content": [{"type": "text", "text": m.content}],
                    "isError": m.is_error,
                    "timestamp": t.timestamp_millis(),
                });
                self.message_entry(t, message, json!({}));
            }
        }
    }

    /// A block of the assistant message being assembled. Text or thinking after a call starts
    /// a new message: pi's message keeps its blocks in order, and the calls of one message
    /// are those made together, last. Thinking while calls await their results waits for the
    /// next message (`deferred`); text cannot, its place among the results being part of what
    /// is relayed.
    fn block(&mut self, t: DateTime<Utc>, block: Value) {
        let calls_made = self.pending.iter().any(|b| b["type"] == "toolCall");
        if block["type"] == "thinking" && (calls_made || !self.awaiting.is_empty()) {
            self.deferred.push(block);
            return;
        }
        if calls_made && block["type"] != "toolCall" {
            self.flush();
        }
        if self.pending.is_empty() {
            self.pending_time = t;
            self.pending.append(&mut self.deferred);
        }
        self.pending.push(block);
    }

    /// Thinking still deferred when words or the end come: an answer of its own.
    fn flush_deferred(&mut self) {
        if !self.deferred.is_empty() {
            self.pending = std::mem::take(&mut self.deferred);
            self.pending_time = self.clock.now;
            self.flush();
        }
    }

    /// Writes the assistant message being assembled.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let blocks = std::mem::take(&mut self.pending);
        let calls = blocks.iter().any(|b| b["type"] == "toolCall");
        for b in blocks.iter().filter(|b| b["type"] == "toolCall") {
            self.awaiting
                .insert(b["id"].as_str().unwrap_or_default().to_string());
        }
        let zero = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0});
        let mut usage = zero.clone();
        usage["totalTokens"] = json!(0);
        let mut cost = zero;
        cost["total"] = json!(0);
        usage["cost"] = cost;
        let t = self.pending_time;
        let message = json!({
            "role": "assistant",
            "content": blocks,
            "usage": usage,
            "stopReason": if calls { "toolUse" } else { "stop" },
            "timestamp": t.timestamp_millis(),
        });
        self.message_entry(t, message, json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::write::test_support::*;

    #[test]
    fn file_names_are_the_header_time_and_the_id() {
        let now = DateTime::parse_from_rfc3339("2026-12-06T03:21:02.369Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            file_name("01a2495e-8aa0-731f-a814-3fc6fa7371e6", now),
            "2026-12-06T03-21-02-369Z_01a2495e-8aa0-731f-a814-3fc6fa7371e6.jsonl"
        );
    }

    /// Calls, results, words and thoughts in any order read back as written; every assistant
    /// message has its usage, and every entry chains to the one before.
    #[test]
    fn what_is_written_reads_back_and_chains() {
        let call = |id: &str| echo_call(id, "bash", false);
        let result = echo_result;
        let s = session(
            "pi",
            vec![
                Message::new(Role::System, "# Handoff brief"),
                Message::new(Role::User, "/etc/hosts first"),
                Message::new(Role::Reasoning, "think"),
                Message::new(Role::Assistant, "Two at once."),
                call("a"),
                call("b"),
                result("b", false),
                result("a", true),
                call("c"),
                Message::new(Role::Reasoning, "c takes its time"),
                Message::new(Role::Assistant, "c is slow"),
                result("c", false),
                call("d"),
                Message::new(Role::Reasoning, "d is next"),
                result("d", false),
                Message::new(Role::Assistant, "Done."),
            ],
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s.jsonl");
        let id = "01a2495e-0000-7000-8000-00000000aaaa";
        let req = request(&out, id, "[relay from claude] t", from_claude());
        let native = write(&s, &req).unwrap();
        std::fs::write(&out, &native.bytes).unwrap();
        let back = super::super::read::read(&out, Default::default()).unwrap();
        assert_eq!(crate::verify::digest(&back), crate::verify::digest(&s));
        assert_eq!(back.messages[0].role, Role::System);
        assert_eq!(back.title.as_deref(), Some("[relay from claude] t"));
        assert_eq!(back.cwd.as_deref(), Some("/tmp/x"));
        assert!(back.extra.contains_key("provenance"));
        assert!(back.warnings.is_empty(), "{:?}", back.warnings);
        let lines = lines(&native);
        assert_eq!(lines[0]["version"], 3);
        for pair in lines[1..].windows(2) {
            assert_eq!(pair[1]["parentId"], pair[0]["id"]);
        }
        let assistants: Vec<&Value> = lines
            .iter()
            .filter(|l| l["message"]["role"] == "assistant")
            .collect();
        // [thinking, text, a, b], [c], [c is slow], [d], [d is next, Done.]: the thinking
        // that came while d awaited its result opens the next answer.
        assert_eq!(assistants.len(), 5);
        let last = &assistants[4]["message"]["content"];
        assert_eq!(
            (&last[0]["type"], &last[1]["text"]),
            (&json!("thinking"), &json!("Done."))
        );
        assert!(
            assistants
                .iter()
                .all(|a| a["message"]["usage"]["totalTokens"] == 0)
        );
    }
}
