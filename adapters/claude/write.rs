//! Writes a relay-shaped session as a Claude Code transcript that `claude --resume <id>` opens
//! from the session's directory.

use anyhow::Result;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use crate::adapter::write::{extend, push_line, stamp, time_of};
use crate::adapter::{NativeSession, WriteRequest};
use crate::model::{Message, Role, Session};

/// The transcript format version written in every line's `version`. Claude Code records its own
/// version there; this is the version whose loader the written shape was verified against.
pub const COMPAT_VERSION: &str = "2.1.332";

/// Claude Code's project folder name for a directory: every UTF-16 unit that is not an ASCII
/// letter or digit becomes `-`; names over 200 characters are cut and get a hash suffix.
pub fn escape_project_dir(path: &str) -> String {
    let units: Vec<u16> = path.encode_utf16().collect();
    let escaped: String = units
        .iter()
        .map(|&u| {
            if u < 128 && (u as u8).is_ascii_alphanumeric() {
                u as u8 as char
            } else {
                '-'
            }
        })
        .collect();
    if escaped.len() <= 200 {
        return escaped;
    }
    let mut h: i32 = 0;
    for &u in &units {
        h = h.wrapping_shl(5).wrapping_sub(h).wrapping_add(u as i32);
    }
    let mut n = (h as i64).unsigned_abs();
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut b36 = Vec::new();
    loop {
        b36.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    b36.reverse();
    format!("{}-{}", &escaped[..200], String::from_utf8(b36).unwrap())
}

struct Writer<'a> {
    req: &'a WriteRequest,
    branch: Option<String>,
    out: Vec<u8>,
    parent: Option<String>,
    last: DateTime<Utc>,
    pending: Pending,
}

/// Assistant blocks and tool results not yet written. They accumulate so that one API message
/// holds parallel calls and the next user message holds all their results, as the API requires.
#[derive(Default)]
struct Pending {
    assistant: Vec<Value>,
    results: Vec<Value>,
    time: Option<DateTime<Utc>>,
}

impl Writer<'_> {
    /// Strictly increasing times: Claude Code picks the newest line as the leaf.
    fn time(&mut self, t: Option<DateTime<Utc>>) -> String {
        let mut t = t.unwrap_or(self.last);
        if t <= self.last {
            t = self.last + Duration::milliseconds(1);
        }
        self.last = t;
        stamp(t)
    }

    fn push(&mut self, kind: &str, t: Option<DateTime<Utc>>, message: Value, extra: Value) {
        let uuid = uuid::Uuid::new_v4().to_string();
        let ts = self.time(t);
        let mut line = json!({
            "parentUuid": self.parent,
            "isSidechain": false,
            "userType": "external",
            "cwd": self.req.cwd,
            "sessionId": self.req.id,
            "version": COMPAT_VERSION,
            "gitBranch": self.branch.clone().unwrap_or_default(),
            "entrypoint": "cli",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": ts,
        });
        extend(&mut line, extra);
        push_line(&mut self.out, &line);
        self.parent = Some(uuid);
    }

    fn assistant(&mut self, t: Option<DateTime<Utc>>, blocks: Vec<Value>) {
        let has_tool = blocks.iter().any(|b| b["type"] == "tool_use");
        let id = format!("msg_relay_{}", uuid::Uuid::new_v4().simple());
        let message = json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": "<synthetic>",
            "content": blocks,
            "stop_reason": if has_tool { "tool_use" } else { "end_turn" },
            "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        });
        self.push("assistant", t, message, json!({}));
    }

    fn user(&mut self, t: Option<DateTime<Utc>>, blocks: Vec<Value>, meta: bool) {
        let extra = if meta {
            json!({"isMeta": true})
        } else {
            json!({})
        };
        self.push("user", t, json!({"role": "user", "content": blocks}), extra);
    }

    /// A user or system message: a user line of its own, after what is pending.
    fn user_message(&mut self, m: &Message) {
        self.flush();
        // The person's words must not start as Claude Code's own texts do.
        let words = match m.role {
            Role::User if super::injected::injected_kind(&m.content, false, false).is_some() => {
                format!("{}{}", super::injected::ESCAPE, m.content)
            }
            _ => m.content.clone(),
        };
        let blocks = vec![json!({"type": "text", "text": words})];
        self.user(time_of(m), blocks, m.role == Role::System);
    }

    /// An assistant text or a tool call: a block of the pending API message, which starts
    /// anew after results.
    fn assistant_block(&mut self, m: &Message) {
        if !self.pending.results.is_empty() {
            self.flush();
        }
        if self.pending.assistant.is_empty() {
            self.pending.time = time_of(m);
        }
        self.pending.assistant.push(if m.role == Role::Assistant {
            json!({"type": "text", "text": m.content})
        } else {
            json!({
                "type": "tool_use",
                "id": m.tool_call_id,
                "name": m.tool_name,
                "input": m.tool_input.clone().unwrap_or(json!({})),
            })
        });
    }

    /// A tool result: the pending API message is written, the result waits for the others.
    fn tool_result(&mut self, m: &Message) {
        if !self.pending.assistant.is_empty() {
            let blocks = std::mem::take(&mut self.pending.assistant);
            self.assistant(self.pending.time, blocks);
        }
        self.pending.time = time_of(m);
        self.pending.results.push(json!({
            "tool_use_id": m.tool_call_id,
            "type": "tool_result",
            "content": m.content,
            "is_error": m.is_error,
        }));
    }

    /// Writes what is pending: the API message, then the user line of its results.
    fn flush(&mut self) {
        let assistant = std::mem::take(&mut self.pending.assistant);
        let results = std::mem::take(&mut self.pending.results);
        let time = self.pending.time;
        if !assistant.is_empty() {
            self.assistant(time, assistant);
        }
        if !results.is_empty() {
            self.user(time, results, false);
        }
    }
}

pub fn write(shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
    let path = req.path_or(|| {
        req.home
            .join("projects")
            .join(escape_project_dir(&req.cwd))
            .join(format!("{}.jsonl", req.id))
    });
    let mut w = Writer {
        req,
        branch: shaped.git.as_ref().and_then(|g| g.branch.clone()),
        out: Vec::new(),
        parent: None,
        last: DateTime::<Utc>::MIN_UTC,
        pending: Pending::default(),
    };
    let mut reasoning_dropped = 0;
    for m in &shaped.messages {
        match m.role {
            Role::System | Role::User => w.user_message(m),
            Role::Assistant | Role::ToolCall => w.assistant_block(m),
            Role::ToolResult => w.tool_result(m),
            // A thinking block needs a signature only Anthropic can make: foreign (and
            // re-written) reasoning is left out rather than faked.
            Role::Reasoning => reasoning_dropped += 1,
        }
    }
    w.flush();
    let mut notes = Vec::new();
    if reasoning_dropped > 0 {
        notes.push(format!(
            "{reasoning_dropped} reasoning message(s) left out: Claude Code accepts only thinking blocks signed by Anthropic"
        ));
    }
    let last = w.last;
    let title = json!({"type": "custom-title", "customTitle": req.title, "sessionId": req.id});
    let provenance =
        json!({"type": "session-relay", "provenance": req.provenance, "sessionId": req.id});
    let mut out = w.out;
    for v in [title, provenance] {
        push_line(&mut out, &v);
    }
    Ok(NativeSession {
        mtime: (last > DateTime::<Utc>::MIN_UTC).then_some(last),
        notes,
        ..NativeSession::new(&super::ADAPTER, req, path, out)
    })
}

#[cfg(test)]
mod tests {
    use super::escape_project_dir;

    #[test]
    fn project_dirs_escape_like_claude_code() {
        assert_eq!(
            escape_project_dir("/home/dev/projects/my_app.v2"),
            "-home-dev-projects-my-app-v2"
        );
        // One UTF-16 unit per BMP character, two for an emoji.
        assert_eq!(escape_project_dir("/tmp/é😀"), "-tmp----");
        let long = format!("/{}", "a".repeat(250));
        let e = escape_project_dir(&long);
        assert!(e.starts_with(&format!("-{}", "a".repeat(199))));
        assert_eq!(e.as_bytes()[200], b'-');
        assert!(e.len() > 201);
    }
}
