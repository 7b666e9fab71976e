//! Writes a relay-shaped session as a Copilot CLI session log that `copilot --resume=<id>`
//! opens: `session-state/<id>/events.jsonl`, the folder named for the session (the CLI looks a
//! session up by its folder), and, once the log is in place, a `workspace.yaml` naming it.
//!
//! - `session.start` comes first (without it the CLI calls the log corrupted), with the
//!   directory as `context.cwd`; every event has a UUID `id`, a time with its zone and the id
//!   of the event before it as `parentId`, as the CLI writes them.
//! - Then the provenance, as an event of session-relay's own type: the CLI passes over event
//!   types it does not know, keeping them in the log.
//! - User words are `user.message`s; context (the handoff brief, summaries) too, marked with
//!   `sessionRelay: "context"`, so that the model receives it and the reader tells it apart.
//! - An answer is an `assistant.message` with its reasoning (`reasoningText`) and the calls
//!   made together (`toolRequests`); each call then has its `tool.execution_start`, and its
//!   result a `tool.execution_complete`, as the CLI records its own tools.
//! - One JSON object per line, compact, with U+2028 and U+2029 escaped: a line the CLI's
//!   reader splits is the whole log lost (github/copilot-cli#2649, #2012).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::adapter::write::{Clock, call_args, call_name, extend, first_time, stamp};
use crate::adapter::{NativeSession, WriteRequest, uuid_v4 as new_id};
use crate::model::{Message, Role, Session};

pub fn write(shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
    let path = req.path_or(|| {
        super::state_dir(&req.home)
            .join(&req.id)
            .join(super::EVENTS)
    });
    let start = first_time(shaped).unwrap_or(req.now);
    let mut w = Writer {
        out: Vec::new(),
        parent: None,
        clock: Clock::new(start),
        pending: Pending::default(),
    };
    let version = super::AGENT.cli.as_ref().map(|c| c.verified_versions);
    w.event(
        "session.start",
        json!({
            "sessionId": req.id,
            "version": 1,
            "producer": "copilot-agent",
            "copilotVersion": version.and_then(|v| v.last()).copied().unwrap_or_default(),
            "startTime": stamp(start),
            "context": {"cwd": req.cwd},
        }),
        None,
    );
    w.event(
        "session-relay",
        json!({}),
        Some(json!({"provenance": req.provenance, "sessionId": req.id})),
    );
    for m in &shaped.messages {
        w.message(m);
    }
    w.flush();
    Ok(NativeSession::new(&super::ADAPTER, req, path, w.out))
}

/// The assistant message being assembled: its reasoning, its text and the calls made together.
#[derive(Default)]
struct Pending {
    time: Option<DateTime<Utc>>,
    reasoning: Vec<String>,
    text: Option<String>,
    calls: Vec<Value>,
}

struct Writer {
    out: Vec<u8>,
    /// The id of the event written last.
    parent: Option<String>,
    clock: Clock,
    pending: Pending,
}

impl Writer {
    /// Writes one event, with `extra` keys beside the envelope's.
    fn event(&mut self, kind: &str, data: Value, extra: Option<Value>) {
        let id = new_id();
        let mut v = json!({
            "type": kind,
            "data": data,
            "id": id,
            "timestamp": stamp(self.clock.now),
            "parentId": self.parent,
        });
        if let Some(extra) = extra {
            extend(&mut v, extra);
        }
        let start = self.out.len();
        serde_json::to_writer(&mut self.out, &v).expect("JSON to memory");
        escape_line_separators(&mut self.out, start);
        self.out.push(b'\n');
        self.parent = Some(id);
    }

    fn message(&mut self, m: &Message) {
        let t = self.clock.at_message(m);
        match m.role {
            Role::User | Role::System => {
                self.flush();
                let mut data = json!({"content": m.content});
                if m.role == Role::System {
                    data[super::RELAY_FIELD] = json!("context");
                }
                self.event("user.message", data, None);
            }
            Role::Reasoning => {
                if self.pending.text.is_some() || !self.pending.calls.is_empty() {
                    self.flush();
                }
                self.pending.time.get_or_insert(t);
                self.pending.reasoning.push(m.content.clone());
            }
            Role::Assistant => {
                if self.pending.text.is_some() || !self.pending.calls.is_empty() {
                    self.flush();
                }
                self.pending.time.get_or_insert(t);
                self.pending.text = Some(m.content.clone());
            }
            Role::ToolCall => {
                self.pending.time.get_or_insert(t);
                self.pending.calls.push(json!({
                    "toolCallId": m.tool_call_id.clone().unwrap_or_else(new_id),
                    "name": call_name(m),
                    "arguments": call_args(m),
                    "type": "function",
                }));
            }
            Role::ToolResult => {
                self.flush();
                self.event("tool.execution_complete", result_data(m), None);
            }
        }
    }

    /// Writes the assistant message being assembled, then the start of each of its calls.
    fn flush(&mut self) {
        let p = std::mem::take(&mut self.pending);
        if p.reasoning.is_empty() && p.text.is_none() && p.calls.is_empty() {
            return;
        }
        let now = self.clock.now;
        self.clock.now = p.time.unwrap_or(now);
        let mut data = json!({
            "messageId": new_id(),
            "content": p.text.unwrap_or_default(),
            "toolRequests": p.calls,
        });
        if !p.reasoning.is_empty() {
            data["reasoningText"] = json!(p.reasoning.join("\n\n"));
        }
        self.event("assistant.message", data, None);
        for c in p.calls {
            self.event(
                "tool.execution_start",
                json!({"toolCallId": c["toolCallId"], "toolName": c["name"], "arguments": c["arguments"]}),
                None,
            );
        }
        self.clock.now = now;
    }
}

/// A `tool.execution_complete`'s data: the output, or for a failure the error. A failed shell
/// command that recorded its exit code is what Copilot's own `bash` records: a success whose
/// exit code is not 0 (the reader counts it failed, as the CLI draws it).
fn result_data(m: &Message) -> Value {
    let id = m.tool_call_id.clone().unwrap_or_default();
    match m.metadata.get_i64("exit_code") {
        Some(code) if (code != 0) == m.is_error => json!({
            "toolCallId": id, "success": true,
            "result": {"content": m.content}, "shellExecution": {"exitCode": code},
        }),
        _ if m.is_error => json!({
            "toolCallId": id, "success": false,
            "error": {"message": m.content, "code": "failure"},
        }),
        _ => json!({"toolCallId": id, "success": true, "result": {"content": m.content}}),
    }
}

/// Escapes the raw U+2028 and U+2029 that serde_json leaves in strings (outside strings, JSON
/// has none), from byte `from` on.
fn escape_line_separators(out: &mut Vec<u8>, from: usize) {
    let raw = |b: &[u8]| {
        b.windows(3)
            .any(|w| w[0] == 0xE2 && w[1] == 0x80 && w[2] & 0xFE == 0xA8)
    };
    if !raw(&out[from..]) {
        return;
    }
    let line = out.split_off(from);
    let text = String::from_utf8(line).expect("serde_json writes UTF-8");
    out.extend_from_slice(
        text.replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029")
            .as_bytes(),
    );
}

/// The first line of the `workspace.yaml` a relay writes: what `unregister` knows it by.
const WORKSPACE_MARK: &str = "# written by session-relay";

/// After the log is in place: its `workspace.yaml`, which names the session in the CLI's
/// Sessions list (without one, the CLI names it after the next prompt typed into it) and
/// gives its directory. Written whole or not at all, and never over one that is there.
pub fn register(written: &NativeSession, shaped: &Session, title: &str) -> Result<Vec<String>> {
    if super::folder_id(&written.path).is_none() {
        return Ok(Vec::new());
    }
    let path = written.path.with_file_name(super::WORKSPACE);
    if std::fs::symlink_metadata(&path).is_ok() {
        if ours(&path, &written.id) {
            return Ok(Vec::new());
        }
        return Ok(vec![format!(
            "{} was there already (Copilot CLI wrote it?); left as it is",
            path.display()
        )]);
    }
    let now = Utc::now();
    let created = first_time(shaped).unwrap_or(now);
    let q = |s: &str| serde_json::to_string(s).expect("a string");
    let mut text = format!("{WORKSPACE_MARK} {}\n", env!("CARGO_PKG_VERSION"));
    for (key, value) in [
        ("id", q(&written.id)),
        ("cwd", q(shaped.cwd.as_deref().unwrap_or_default())),
        ("client_name", "github/cli".into()),
        ("name", q(&crate::text::one_line(title))),
        ("user_named", "true".into()),
        ("summary_count", "0".into()),
        ("fork_count", "0".into()),
        ("created_at", stamp(created)),
        ("updated_at", stamp(now.max(created))),
    ] {
        text.push_str(&format!("{key}: {value}\n"));
    }
    // YAML takes JSON's strings as its double-quoted ones, and U+2028 as a line break.
    let mut bytes = text.into_bytes();
    escape_line_separators(&mut bytes, 0);
    crate::fsutil::write_new_file(&path, &bytes, None, |_| Ok(()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(vec![format!("named in {}", path.display())])
}

/// Whether the `workspace.yaml` at `path` is one a relay wrote for session `id`.
fn ours(path: &Path, id: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.starts_with(WORKSPACE_MARK)
        && serde_yaml_ng::from_str::<serde_yaml_ng::Mapping>(&text)
            .ok()
            .and_then(|m| super::workspace_str(&m, "id"))
            .is_some_and(|i| i == id)
}

/// Before a relayed log is deleted: the `workspace.yaml` the relay wrote beside it, if it is
/// still the relay's (the CLI rewrites it when the session is continued; then it, like the
/// rest of what the CLI made in the folder, is the CLI's and stays).
pub fn unregister(home: &Path, id: &str) -> Result<Vec<String>> {
    let path: PathBuf = super::state_dir(home).join(id).join(super::WORKSPACE);
    if !ours(&path, id) {
        return Ok(Vec::new());
    }
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(vec![format!("{id}: {} removed", path.display())]),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_separators_are_escaped_and_nothing_else_changes() {
        let mut out = b"{\"a\":\"x\"}\n".to_vec();
        let from = out.len();
        serde_json::to_writer(&mut out, &json!({"t": "a\u{2028}b\u{2029}c é"})).unwrap();
        escape_line_separators(&mut out, from);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "{\"a\":\"x\"}\n{\"t\":\"a\\u2028b\\u2029c é\"}");
        let back: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        assert_eq!(back["t"], "a\u{2028}b\u{2029}c é");
    }

    #[test]
    fn a_failed_shell_command_with_its_exit_code_is_written_as_copilot_records_it() {
        let mut m = Message::new(Role::ToolResult, "no such file").with_meta("exit_code", 1);
        m.tool_call_id = Some("c1".into());
        m.is_error = true;
        let d = result_data(&m);
        assert_eq!(
            (
                d["success"].clone(),
                d["shellExecution"]["exitCode"].clone()
            ),
            (json!(true), json!(1))
        );
        m.metadata = Default::default();
        assert_eq!(result_data(&m)["error"]["message"], "no such file");
    }
}
