//! What the adapters' writers share, whatever the format they write: times as the agents write
//! them, a clock that never goes back, JSON Lines out, and each call's tool name for its
//! result. What a format's lines hold stays in its adapter.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::model::{Message, Session, Timestamp, ToolKind};

/// A time as the agents write theirs: RFC 3339 in UTC with milliseconds and `Z`.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A message's time, when it has one that reads as a time.
pub fn time_of(m: &Message) -> Option<DateTime<Utc>> {
    m.timestamp.as_ref().and_then(Timestamp::time)
}

/// The time of the session's first message that has one: where a written session starts.
pub fn first_time(s: &Session) -> Option<DateTime<Utc>> {
    s.messages.iter().find_map(time_of)
}

/// Appends `v` to `out` as one line of compact JSON.
pub fn push_line(out: &mut Vec<u8>, v: &Value) {
    serde_json::to_writer(&mut *out, v).expect("JSON to memory");
    out.push(b'\n');
}

/// Adds the keys of the object `fields` to the object `v`, after its own: a line's envelope
/// first, then what its kind holds (an object keeps its keys in the order they came).
pub fn extend(v: &mut Value, fields: Value) {
    if let (Value::Object(v), Value::Object(f)) = (v, fields) {
        v.extend(f);
    }
}

/// The time of each line written. It never goes back: an agent reads its log in order and
/// takes a later line for a newer one, and a message without a time of its own is taken to
/// be as late as the one before.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now: DateTime<Utc>,
}

impl Clock {
    pub fn new(start: DateTime<Utc>) -> Clock {
        Clock { now: start }
    }

    /// Moves on to `t` when it is later; the time to write either way.
    pub fn at(&mut self, t: Option<DateTime<Utc>>) -> DateTime<Utc> {
        if let Some(t) = t
            && t > self.now
        {
            self.now = t;
        }
        self.now
    }

    /// `at` the message's own time.
    pub fn at_message(&mut self, m: &Message) -> DateTime<Utc> {
        self.at(time_of(m))
    }
}

/// The name a call is written with: its tool's, or `tool` for a call that lost it.
pub fn call_name(m: &Message) -> String {
    m.tool_name.clone().unwrap_or_else(|| "tool".into())
}

/// The input a call is written with: its own, or an empty object.
pub fn call_args(m: &Message) -> Value {
    m.tool_input.clone().unwrap_or_else(|| json!({}))
}

/// Each written call's tool name by the call's id, for formats whose results name their tool.
#[derive(Debug, Default)]
pub struct ToolNames(HashMap<String, String>);

impl ToolNames {
    pub fn insert(&mut self, id: &str, name: &str) {
        self.0.insert(id.to_string(), name.to_string());
    }

    /// The tool of call `id`; `tool` for a result whose call was not written.
    pub fn of(&self, id: &str) -> String {
        self.0.get(id).cloned().unwrap_or_else(|| "tool".into())
    }

    /// How many calls were written.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What a neutral call from another agent does that a writer's own tools can do too, when the
/// call says enough to fill their input: run a command, read a file, write a whole file (its
/// text from the call's `content`), or replace one text in a file (the old and new texts from
/// the call's input under the names agents commonly give them). Anything else travels as text.
#[derive(Debug, PartialEq)]
pub enum Portable<'a> {
    Shell(&'a str),
    Read(&'a str),
    Write {
        path: &'a str,
        content: &'a str,
    },
    Edit {
        path: &'a str,
        old: &'a str,
        new: &'a str,
    },
}

impl<'a> Portable<'a> {
    /// `call` as one of these, `path_ok` saying which key arguments name one file to the
    /// writer's agent, and `old` / `new` the names an edit's texts are looked for under.
    pub fn of(
        call: &'a Message,
        path_ok: impl Fn(&str) -> bool,
        old: &[&str],
        new: &[&str],
    ) -> Option<Portable<'a>> {
        let key = call.key_arg.as_deref()?;
        let input = call.tool_input.as_ref();
        let text = |names: &[&str]| names.iter().find_map(|n| input?.get(*n)?.as_str());
        let path = path_ok(key);
        Some(match call.tool_kind? {
            ToolKind::Shell if !key.trim().is_empty() => Portable::Shell(key),
            ToolKind::Read if path => Portable::Read(key),
            ToolKind::Write if path => Portable::Write {
                path: key,
                content: text(&["content"])?,
            },
            ToolKind::Edit if path => Portable::Edit {
                path: key,
                old: text(old)?,
                new: text(new)?,
            },
            _ => return None,
        })
    }
}

/// Sessions and requests for the writers' tests: each writes the same shapes of calls and
/// results, then reads back what it wrote.
#[cfg(test)]
pub mod test_support {
    use serde_json::{Value, json};

    use crate::adapter::{NativeSession, WriteRequest};
    use crate::model::{Message, Role, Session};

    /// A shell call `id` of tool `tool` running `echo <id>`, with the key argument a reader
    /// gives it when `key` is set.
    pub fn echo_call(id: &str, tool: &str, key: bool) -> Message {
        let mut m = Message::new(Role::ToolCall, "");
        m.tool_call_id = Some(id.into());
        m.tool_name = Some(tool.into());
        m.tool_input = Some(json!({"command": format!("echo {id}")}));
        if key {
            m.key_arg = Some(format!("echo {id}"));
        }
        m
    }

    /// The result `out <id>` of call `id`, failed when `error`.
    pub fn echo_result(id: &str, error: bool) -> Message {
        let mut m = Message::new(Role::ToolResult, format!("out {id}"));
        m.tool_call_id = Some(id.into());
        m.is_error = error;
        m
    }

    /// A request to write session `id` into the standalone file `out`, in `/tmp/x`.
    pub fn request(
        out: &std::path::Path,
        id: &str,
        title: &str,
        provenance: Value,
    ) -> WriteRequest {
        WriteRequest {
            home: out.parent().expect("a file in a folder").to_path_buf(),
            id: id.into(),
            cwd: "/tmp/x".into(),
            title: title.into(),
            provenance,
            now: chrono::Utc::now(),
            standalone: Some(out.to_path_buf()),
        }
    }

    /// The provenance a relay from Claude Code writes.
    pub fn from_claude() -> Value {
        json!({"tool": "session-relay", "source_agent": "claude", "source_id": "x"})
    }

    /// A session of `agent` holding `messages`.
    pub fn session(agent: &str, messages: Vec<Message>) -> Session {
        let mut s = Session::new(agent, "relay", "id");
        s.messages = messages;
        s
    }

    /// The written session's lines, parsed.
    pub fn lines(native: &NativeSession) -> Vec<Value> {
        std::str::from_utf8(&native.bytes)
            .expect("UTF-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_never_goes_back() {
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        let mut c = Clock::new(t("2026-01-01T00:00:10Z"));
        assert_eq!(
            c.at(Some(t("2026-01-01T00:00:05Z"))),
            t("2026-01-01T00:00:10Z")
        );
        assert_eq!(
            c.at(Some(t("2026-01-01T00:00:20Z"))),
            t("2026-01-01T00:00:20Z")
        );
        assert_eq!(c.at(None), t("2026-01-01T00:00:20Z"));
        assert_eq!(stamp(c.now), "2026-01-01T00:00:20.000Z");
    }

    #[test]
    fn lines_are_compact_with_the_envelope_first() {
        let mut v = json!({"type": "x", "id": "1"});
        extend(&mut v, json!({"data": {"a": 1}, "id": "2"}));
        let mut out = Vec::new();
        push_line(&mut out, &v);
        assert_eq!(out, b"{\"type\":\"x\",\"id\":\"2\",\"data\":{\"a\":1}}\n");
        let mut names = ToolNames::default();
        names.insert("c1", "bash");
        assert_eq!(
            (names.of("c1"), names.of("c2")),
            ("bash".into(), "tool".into())
        );
    }
}
