//! Writes a relay-shaped session as a Qwen Code session that `qwen --resume <id>` opens from
//! the session's directory: `projects/<project folder>/chats/<id>.jsonl` under the runtime
//! base (`$QWEN_RUNTIME_DIR`, else the home).
//!
//! - Compact JSON, one record a line, every record with the session id, `cwd` and a fresh v4
//!   `uuid` chained to the one before: the CLI lists a file only when its first record's `cwd`
//!   is the project's, and finds the title by a raw search for `"customTitle"` in compact JSON.
//! - First a `custom_title` record (the picker's title; repeated at the end of a file longer
//!   than the window the CLI searches at each end), then the provenance record, whose unknown
//!   type the CLI skips.
//! - User words are `user` records; context (the handoff brief, summaries) too, marked
//!   `sessionRelay: "context"` for the reader. An answer's thoughts, text and calls are one
//!   `assistant` record of parts; each result a `tool_result` record whose `functionResponse`
//!   answers its call by id, with the `toolCallResult` the TUI draws.

use anyhow::Result;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::read::{RELAY_FIELD, RELAY_RECORD};
use crate::adapter::write::{
    Clock, ToolNames, call_args, call_name, extend, first_time, push_line, stamp, time_of,
};
use crate::adapter::{NativeSession, WriteRequest};
use crate::model::{Message, Role, Session};

/// The transcript version written in every record's `version`: the CLI records its own there;
/// this is the release whose loader the written shape was verified against.
pub const COMPAT_VERSION: &str = "0.24.4";

/// The CLI looks for the title this far from each end of the file.
const TITLE_WINDOW: usize = 64 * 1024;

pub fn write(shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
    let path = req.path_or(|| {
        // Qwen Code's runtime base, which holds `projects/`: `$QWEN_RUNTIME_DIR` when it is
        // set (it comes before the home for the CLI), else the home.
        crate::fsutil::dir_from_env(super::RUNTIME_DIR_ENV)
            .unwrap_or_else(|| req.home.clone())
            .join("projects")
            .join(super::project_dir(&req.cwd))
            .join("chats")
            .join(format!("{}.jsonl", req.id))
    });
    let start = first_time(shaped).unwrap_or(req.now);
    let mut w = Writer {
        req,
        branch: shaped.git.as_ref().and_then(|g| g.branch.clone()),
        out: Vec::new(),
        parent: None,
        clock: Clock::new(start),
        parts: Vec::new(),
        parts_time: None,
        names: ToolNames::default(),
    };
    w.title();
    w.line(&json!({"type": RELAY_RECORD, "provenance": req.provenance, "sessionId": req.id}));
    for m in &shaped.messages {
        w.message(m);
    }
    w.flush();
    if w.out.len() > TITLE_WINDOW {
        w.title();
    }
    Ok(NativeSession {
        mtime: Some(w.clock.now),
        ..NativeSession::new(&super::ADAPTER, req, path, w.out)
    })
}

struct Writer<'a> {
    req: &'a WriteRequest,
    branch: Option<String>,
    out: Vec<u8>,
    parent: Option<String>,
    clock: Clock,
    /// The parts of the assistant record being assembled, and its time.
    parts: Vec<Value>,
    parts_time: Option<DateTime<Utc>>,
    /// Every call's tool name by id, for its result.
    names: ToolNames,
}

impl Writer<'_> {
    fn line(&mut self, v: &Value) {
        push_line(&mut self.out, v);
    }

    /// A record on the chain: the fields every record carries, then `fields`.
    fn record(&mut self, kind: &str, t: DateTime<Utc>, fields: Value) {
        let uuid = uuid::Uuid::new_v4().to_string();
        let mut v = json!({
            "uuid": uuid,
            "parentUuid": self.parent,
            "sessionId": self.req.id,
            "timestamp": stamp(t),
            "type": kind,
            "cwd": self.req.cwd,
            "version": COMPAT_VERSION,
        });
        if let Some(b) = &self.branch {
            v["gitBranch"] = json!(b);
        }
        extend(&mut v, fields);
        self.line(&v);
        self.parent = Some(uuid);
    }

    fn title(&mut self) {
        let t = self.clock.now;
        let payload = json!({"customTitle": self.req.title, "titleSource": "manual"});
        self.record(
            "system",
            t,
            json!({"subtype": "custom_title", "systemPayload": payload}),
        );
    }

    fn message(&mut self, m: &Message) {
        match m.role {
            Role::User | Role::System => {
                self.flush();
                let t = self.clock.at_message(m);
                let mut fields =
                    json!({"message": {"role": "user", "parts": [{"text": m.content}]}});
                if m.role == Role::System {
                    fields[RELAY_FIELD] = json!("context");
                }
                self.record("user", t, fields);
            }
            Role::Reasoning => {
                if !self.parts.is_empty() {
                    self.flush();
                }
                self.part(m, json!({"text": m.content, "thought": true}));
            }
            Role::Assistant => {
                if self.parts.iter().any(|p| p.get("thought").is_none()) {
                    self.flush();
                }
                self.part(m, json!({"text": m.content}));
            }
            Role::ToolCall => {
                let id = m
                    .tool_call_id
                    .clone()
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
                let name = call_name(m);
                self.names.insert(&id, &name);
                let args = call_args(m);
                self.part(
                    m,
                    json!({"functionCall": {"id": id, "name": name, "args": args}}),
                );
            }
            Role::ToolResult => {
                self.flush();
                self.result(m);
            }
        }
    }

    fn part(&mut self, m: &Message, part: Value) {
        if self.parts.is_empty() {
            self.parts_time = time_of(m);
        }
        self.parts.push(part);
    }

    /// Writes the assistant record being assembled.
    fn flush(&mut self) {
        if self.parts.is_empty() {
            return;
        }
        let parts = std::mem::take(&mut self.parts);
        let time = self.parts_time.take();
        let t = self.clock.at(time);
        self.record(
            "assistant",
            t,
            json!({"message": {"role": "model", "parts": parts}}),
        );
    }

    fn result(&mut self, m: &Message) {
        let t = self.clock.at_message(m);
        let id = m.tool_call_id.clone().unwrap_or_default();
        let name = self.names.of(&id);
        let (response, status) = if m.is_error {
            (json!({"error": m.content}), "error")
        } else {
            (json!({"output": m.content}), "success")
        };
        let fields = json!({
            "message": {"role": "user", "parts": [
                {"functionResponse": {"id": id, "name": name, "response": response}}
            ]},
            "toolCallResult": {
                "callId": id,
                "status": status,
                "resultDisplay": m.cut_content(2000),
            },
        });
        self.record("tool_result", t, fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::write::test_support::*;

    /// What is written reads back as it was meant: words, context, thoughts, parallel calls
    /// and their results, a failure, and texts between a call and its result.
    #[test]
    fn a_written_session_reads_back_as_written() {
        let call = |id: &str| echo_call(id, "run_shell_command", true);
        let result = echo_result;
        let s = session(
            "claude",
            vec![
                Message::new(Role::System, "# Handoff brief"),
                Message::new(Role::User, "/etc/hosts first"),
                Message::new(Role::Reasoning, "Two at once."),
                Message::new(Role::Assistant, "Running both."),
                call("a"),
                call("b"),
                result("b", false),
                result("a", true),
                call("c"),
                Message::new(Role::Assistant, "c is slow"),
                result("c", false),
                Message::new(Role::Assistant, "Done."),
                Message::new(Role::Assistant, "Really."),
            ],
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s.jsonl");
        let id = "5e1a0f00-0000-4000-8000-00000000aaaa";
        let req = request(&out, id, "[relay from claude] t", from_claude());
        let native = write(&s, &req).unwrap();
        std::fs::write(&out, &native.bytes).unwrap();
        let (back, provenance) = super::super::read::read(&out, &Default::default()).unwrap();
        assert_eq!(crate::verify::digest(&back), crate::verify::digest(&s));
        assert_eq!(back.id, req.id);
        assert_eq!(back.cwd.as_deref(), Some("/tmp/x"));
        assert_eq!(back.title.as_deref(), Some("[relay from claude] t"));
        assert_eq!(provenance.unwrap()["source_agent"], "claude");
        assert!(back.warnings.is_empty(), "{:?}", back.warnings);
        let text = String::from_utf8(native.bytes).unwrap();
        assert!(text.starts_with(r#"{"uuid":"#), "compact, uuid first");
        for line in text.lines().filter(|l| !l.contains(RELAY_RECORD)) {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["cwd"], "/tmp/x");
            assert_eq!(v["sessionId"], req.id.as_str());
        }
        assert!(text.contains(r#""subtype":"custom_title","systemPayload":{"customTitle":"#));
    }
}
