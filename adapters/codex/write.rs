//! Writes a relay-shaped session as a Codex rollout that `codex resume <id>` opens.
//!
//! The legacy (non-paginated) layout is written because every Codex version reads it; the
//! conversation goes on both channels: response items (what the model is sent on resume) and
//! `user_message` / `agent_message` / `agent_reasoning` events (what the TUI draws).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Local, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::adapter::write::{push_line, stamp, time_of};
use crate::adapter::{NativeSession, WriteRequest};
use crate::model::{Message, Role, Session};

pub fn write(shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
    let path = rollout_path(req);
    let mut clock = Clock::new(req.now);
    let start = shaped.messages.first().and_then(time_of).unwrap_or(req.now);
    let mut out: Vec<u8> = Vec::new();
    let meta = session_meta(shaped, req, start);
    line(&mut out, clock.at(Some(start)), "session_meta", meta);

    let mut custom_calls = HashSet::new();
    for m in &shaped.messages {
        let t = clock.at(time_of(m));
        message_lines(&mut out, t, m, &mut custom_calls);
    }
    Ok(NativeSession::new(&super::ADAPTER, req, path, out))
}

/// The standalone path asked for, else where Codex looks for a rollout of now:
/// `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, in local time as Codex names its own.
fn rollout_path(req: &WriteRequest) -> PathBuf {
    if let Some(p) = &req.standalone {
        return p.clone();
    }
    let local = req.now.with_timezone(&Local);
    let file_name = format!(
        "rollout-{}-{}.jsonl",
        local.format("%Y-%m-%dT%H-%M-%S"),
        req.id
    );
    req.home
        .join("sessions")
        .join(local.format("%Y").to_string())
        .join(local.format("%m").to_string())
        .join(local.format("%d").to_string())
        .join(file_name)
}

/// The first line's payload: the thread's id, start, cwd and git state, and the relay's
/// provenance.
fn session_meta(shaped: &Session, req: &WriteRequest, start: DateTime<Utc>) -> Value {
    let mut meta = json!({
        "id": req.id,
        "timestamp": stamp(start),
        "cwd": req.cwd,
        "originator": "session_relay",
        "cli_version": env!("CARGO_PKG_VERSION"),
        "source": "cli",
        "session_relay": req.provenance,
    });
    if let Some(g) = &shaped.git {
        let mut git = serde_json::Map::new();
        if let Some(c) = &g.commit {
            git.insert("commit_hash".into(), json!(c));
        }
        if let Some(b) = &g.branch {
            git.insert("branch".into(), json!(b));
        }
        if let Some(r) = &g.remote {
            git.insert("repository_url".into(), json!(r));
        }
        meta["git"] = Value::Object(git);
    }
    meta
}

/// A message's lines at time `t`: its response item (what the model is sent on resume) and,
/// for words, the event the TUI draws. `custom_calls` are the ids of the custom tool calls
/// written so far, whose results are custom outputs.
fn message_lines(
    out: &mut Vec<u8>,
    t: DateTime<Utc>,
    m: &Message,
    custom_calls: &mut HashSet<String>,
) {
    match m.role {
        // Context for the model, not words of the user: a developer message.
        Role::System => line(
            out,
            t,
            "response_item",
            words_item("developer", "input_text", &m.content),
        ),
        Role::User => {
            let words = super::escaped_user_text(&m.content);
            line(
                out,
                t,
                "response_item",
                words_item("user", "input_text", &words),
            );
            line(
                out,
                t,
                "event_msg",
                json!({"type": "user_message", "message": words, "images": [],
                       "local_images": [], "text_elements": []}),
            );
        }
        Role::Assistant => {
            line(
                out,
                t,
                "response_item",
                words_item("assistant", "output_text", &m.content),
            );
            line(
                out,
                t,
                "event_msg",
                json!({"type": "agent_message", "message": m.content}),
            );
        }
        Role::Reasoning => {
            // Shown in the TUI only: a reasoning item without Codex's own encrypted content
            // must not be sent back to the model.
            line(
                out,
                t,
                "event_msg",
                json!({"type": "agent_reasoning", "text": m.content}),
            );
        }
        Role::ToolCall => line(out, t, "response_item", call_item(m, custom_calls)),
        Role::ToolResult => line(out, t, "response_item", output_item(m, custom_calls)),
    }
}

/// A `message` response item: `text` as one part of `part_type` (input or output text).
fn words_item(role: &str, part_type: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": part_type, "text": text}]})
}

/// A tool call's response item: a custom tool call (its input a string) when the source's
/// was one, else a function call (its arguments a JSON document in a string).
fn call_item(m: &Message, custom_calls: &mut HashSet<String>) -> Value {
    let id = m.tool_call_id.clone().unwrap_or_default();
    let name = m.tool_name.clone().unwrap_or_default();
    let input = m.tool_input.clone().unwrap_or(Value::Null);
    let custom = m.metadata.get_bool("custom") == Some(true);
    if custom {
        custom_calls.insert(id.clone());
        let text = input
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| input.to_string());
        json!({"type": "custom_tool_call", "call_id": id, "name": name, "input": text})
    } else {
        json!({"type": "function_call", "name": name,
               "arguments": input.to_string(), "call_id": id})
    }
}

/// A tool result's response item, of the kind its call's was.
fn output_item(m: &Message, custom_calls: &HashSet<String>) -> Value {
    let id = m.tool_call_id.clone().unwrap_or_default();
    let kind = if custom_calls.contains(&id) {
        "custom_tool_call_output"
    } else {
        "function_call_output"
    };
    json!({"type": kind, "call_id": id, "output": tool_output(m)})
}

/// A failed call's output carries its exit code the way Codex itself recorded it in legacy
/// rollouts (`{"output", "metadata": {"exit_code"}}`), so that the failure survives the relay.
fn tool_output(m: &Message) -> String {
    let code = m.metadata.get_i64("exit_code");
    match (m.is_error, code) {
        (false, None | Some(0)) => m.content.clone(),
        (_, code) => json!({
            "output": m.content,
            "metadata": {"exit_code": code.filter(|c| *c != 0).unwrap_or(1)},
        })
        .to_string(),
    }
}

/// Line times never go backwards (Codex sorts nothing, but its readers assume order).
struct Clock {
    last: DateTime<Utc>,
    fallback: DateTime<Utc>,
}

impl Clock {
    fn new(fallback: DateTime<Utc>) -> Clock {
        Clock {
            last: DateTime::<Utc>::MIN_UTC,
            fallback,
        }
    }
    fn at(&mut self, t: Option<DateTime<Utc>>) -> DateTime<Utc> {
        let t = t.unwrap_or(if self.last == DateTime::<Utc>::MIN_UTC {
            self.fallback
        } else {
            self.last
        });
        if t > self.last {
            self.last = t;
        }
        self.last
    }
}

fn line(out: &mut Vec<u8>, t: DateTime<Utc>, kind: &str, payload: Value) {
    let v = json!({"timestamp": stamp(t), "type": kind, "payload": payload});
    push_line(out, &v);
}

/// Adds a title line to `session_index.jsonl` (the picker shows `thread_name`), unless the
/// index already names `id` (a registration completed after an interrupted relay).
pub fn register(home: &Path, id: &str, title: &str) -> Result<Vec<String>> {
    let index = home.join("session_index.jsonl");
    if indexed(&index, id)? {
        return Ok(Vec::new());
    }
    let entry = json!({
        "id": id,
        "thread_name": title,
        "updated_at": Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
    });
    // One line, whole or not at all: Codex's own index must never hold half of ours.
    crate::fsutil::append_line(&index, &entry.to_string())?;
    Ok(vec![format!("title added to {}", index.display())])
}

/// Whether a line of the index names `id`.
fn indexed(index: &Path, id: &str) -> Result<bool> {
    let bytes = match std::fs::read(index) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", index.display())),
    };
    // A new id is in no line: most registrations end at the byte search.
    if memchr::memmem::find(&bytes, id.as_bytes()).is_none() {
        return Ok(false);
    }
    Ok(bytes.split(|&b| b == b'\n').any(|line| {
        serde_json::from_slice::<Value>(line)
            .ok()
            .is_some_and(|v| v.get("id").and_then(Value::as_str) == Some(id))
    }))
}

/// Removes `id`'s lines from `session_index.jsonl`, keeping every other line byte for byte.
/// The file is rewritten atomically (temporary file, fsync, rename).
pub fn unindex(home: &Path, id: &str) -> Result<bool> {
    crate::fsutil::remove_lines(&home.join("session_index.jsonl"), |line| {
        serde_json::from_slice::<Value>(line)
            .ok()
            .is_some_and(|v| v.get("id").and_then(Value::as_str) == Some(id))
    })
}
