//! Writes a relay-shaped session as a Gemini CLI session that `gemini --resume <id>` lists and
//! opens in the session's directory: `tmp/<slug>/chats/session-<minute>-<8 chars>.jsonl`.
//!
//! - The metadata record comes first, with a fresh `lastUpdated` (the CLI deletes sessions
//!   older than 30 days at its start), the title as `summary` (the CLI then asks no model for
//!   one) and a `memoryScratchpad` (so that its next start does not append one to our file);
//!   then the provenance record, which the CLI skips; then an `info` line saying where the
//!   session came from (drawn, never sent to the model).
//! - The file name does NOT end in the first 8 characters of the id: Gemini CLI 0.61 deletes,
//!   at the start after a resume, every file ending like the stray file the resume left
//!   (gemini-cli#27368). The CLI finds sessions by the id inside, not by the name.
//! - User words and context (the handoff brief) are `user` messages the model receives, marked
//!   `sessionRelay: "user" | "context"`; text the CLI would skip (starting with `/`, `?`, its
//!   own tags, or empty) gets an escape part first.
//! - An answer, its calls and their results are one `gemini` message with `toolCalls`, each
//!   call carrying its result and `status: "success"` (a failure as `response.error`), so that
//!   the TUI draws them as boxes. Calls of one message were made together; results are ordered
//!   by their `timestamp`. A result that cannot sit in its call (another message came between
//!   them) follows as a `user` message of `functionResponse` parts, as the CLI itself records
//!   results.

use anyhow::Result;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value, json};

use crate::adapter::write::{Clock, ToolNames, call_args, call_name, first_time, push_line, stamp};
use crate::adapter::{NativeSession, WriteRequest, uuid_v4 as new_id};
use crate::model::{Message, Role, Session};

pub fn write(shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
    let path = req.path_or(|| {
        // A home where Gemini CLI never ran gets the folders its first start would make.
        let gemini = super::gemini_dir(&req.home);
        let slug = super::project::slug_for(&gemini, &req.cwd);
        gemini
            .join("tmp")
            .join(slug)
            .join("chats")
            .join(file_name(&req.id, req.now))
    });
    let start = first_time(shaped).unwrap_or(req.now);
    let mut w = Writer {
        out: Vec::new(),
        clock: Clock::new(start),
        current: Pending::default(),
        deferred: Vec::new(),
        responses: Vec::new(),
        responses_time: start,
        names: ToolNames::default(),
    };
    w.line(&json!({
        "sessionId": req.id,
        "projectHash": super::project_hash(&req.cwd),
        "startTime": stamp(start),
        "lastUpdated": stamp(req.now.max(start)),
        "kind": "main",
        "summary": req.title,
        "memoryScratchpad": {"version": 1},
    }));
    w.line(&json!({"type": "session-relay", "provenance": req.provenance}));
    w.line(&json!({
        "id": new_id(),
        "timestamp": stamp(start),
        "type": "info",
        "content": marker_text(&req.provenance),
    }));
    for m in &shaped.messages {
        w.message(m);
    }
    w.flush_all();
    Ok(NativeSession::new(&super::ADAPTER, req, path, w.out))
}

/// `session-<UTC minute>-<8 chars>.jsonl`, the CLI's own pattern, with the id's LAST 8
/// characters (see the module notes).
pub fn file_name(id: &str, now: DateTime<Utc>) -> String {
    let chars: Vec<char> = id.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let mut tail: String = chars[chars.len().saturating_sub(8)..].iter().collect();
    let head: String = id.chars().take(8).collect();
    if tail.len() < 8 || tail == head {
        // `r` and the first 7 of them, padded with zeros: 8 characters, never the head.
        let short: String = tail.chars().take(7).collect();
        tail = format!("{:0>8}", format!("r{short}"));
    }
    format!("session-{}-{tail}.jsonl", now.format("%Y-%m-%dT%H-%M"))
}

/// The `info` line: what the TUI draws first.
fn marker_text(provenance: &Value) -> String {
    let s = |k: &str| provenance.get(k).and_then(Value::as_str);
    match (s("source_agent"), s("source_id")) {
        (Some(agent), Some(id)) => format!(
            "Relayed from {} session {id} by session-relay {}",
            crate::adapters::display_name(agent),
            env!("CARGO_PKG_VERSION")
        ),
        _ => format!("Relayed by session-relay {}", env!("CARGO_PKG_VERSION")),
    }
}

/// The gemini message being assembled: thoughts, then text, then calls made together with
/// their results.
#[derive(Default)]
struct Pending {
    time: Option<DateTime<Utc>>,
    thoughts: Vec<Value>,
    text: Option<String>,
    calls: Vec<Call>,
    results: usize,
    last_result: Option<DateTime<Utc>>,
}

struct Call {
    id: String,
    name: String,
    value: Map<String, Value>,
    answered: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.thoughts.is_empty() && self.text.is_none() && self.calls.is_empty()
    }
    fn awaiting(&self) -> bool {
        self.calls.iter().any(|c| !c.answered)
    }
}

struct Writer {
    out: Vec<u8>,
    clock: Clock,
    current: Pending,
    /// Thoughts that came while calls awaited their results: they open the next message.
    deferred: Vec<Value>,
    /// Results written apart from their calls, gathered into one `user` message.
    responses: Vec<Value>,
    responses_time: DateTime<Utc>,
    /// Every call's tool name by id, for results written apart from their call.
    names: ToolNames,
}

impl Writer {
    fn line(&mut self, v: &Value) {
        push_line(&mut self.out, v);
    }

    fn message(&mut self, m: &Message) {
        let t = self.clock.at_message(m);
        if m.role == Role::ToolResult {
            self.result(m, t);
            return;
        }
        self.flush_responses();
        match m.role {
            Role::User | Role::System => self.words(m, t),
            Role::Reasoning => self.thought(m, t),
            Role::Assistant => {
                if self.current.text.is_some() || !self.current.calls.is_empty() {
                    self.flush_current();
                }
                self.current.time.get_or_insert(t);
                self.current.text = Some(m.content.clone());
            }
            Role::ToolCall => self.call(m, t),
            Role::ToolResult => unreachable!("handled above"),
        }
    }

    /// A result: into its call while the message being assembled awaits it, else among the
    /// results written apart (`flush_responses`), after that message and its deferred thoughts.
    fn result(&mut self, m: &Message, t: DateTime<Utc>) {
        let id = m.tool_call_id.clone().unwrap_or_default();
        if self.current.calls.iter().any(|c| c.id == id && !c.answered) {
            self.answer(&id, m, t);
            return;
        }
        self.flush_current();
        self.flush_current();
        if self.responses.is_empty() {
            self.responses_time = t;
        }
        let name = self.names.of(&id);
        self.responses.push(json!({
            "functionResponse": {"id": id, "name": name, "response": response(m)}
        }));
    }

    /// User words or context: a `user` message of their own, marked for the reader, after
    /// everything before them.
    fn words(&mut self, m: &Message, t: DateTime<Utc>) {
        self.flush_all();
        let relay = if m.role == Role::User {
            "user"
        } else {
            "context"
        };
        let mut content = Vec::new();
        if super::cli_ignores(&m.content) {
            content.push(json!({"text": super::ESCAPE_PART}));
        }
        content.push(json!({"text": m.content}));
        let mut v = json!({
            "id": new_id(),
            "timestamp": stamp(t),
            "type": "user",
            "content": content,
        });
        v[super::RELAY_FIELD] = json!(relay);
        self.line(&v);
    }

    /// A thought opens a message, or joins the thoughts opening the one being assembled; while
    /// calls await their results it waits for the next message.
    fn thought(&mut self, m: &Message, t: DateTime<Utc>) {
        let thought = thought(&m.content, t);
        if self.current.awaiting() {
            self.deferred.push(thought);
            return;
        }
        if self.current.text.is_some() || !self.current.calls.is_empty() {
            self.flush_current();
        }
        self.current.time.get_or_insert(t);
        self.current.thoughts.push(thought);
    }

    /// A call joins the calls of the message being assembled (made together), unless results
    /// of them came already.
    fn call(&mut self, m: &Message, t: DateTime<Utc>) {
        if self.current.results > 0 {
            self.flush_current();
        }
        self.current.time.get_or_insert(t);
        let id = m.tool_call_id.clone().unwrap_or_else(new_id);
        let name = call_name(m);
        let value = call_value(m, &id, &name, t);
        self.names.insert(&id, &name);
        self.current.calls.push(Call {
            id,
            name,
            value,
            answered: false,
        });
    }

    /// Puts a result into its call. Results of one message are read back in the order of their
    /// timestamps, so each is later than the one before.
    fn answer(&mut self, id: &str, m: &Message, t: DateTime<Utc>) {
        let t = match self.current.last_result {
            Some(last) if t <= last => last + Duration::milliseconds(1),
            _ => t,
        };
        self.clock.at(Some(t));
        self.current.last_result = Some(t);
        self.current.results += 1;
        let call = self
            .current
            .calls
            .iter_mut()
            .find(|c| c.id == id && !c.answered)
            .expect("checked by the caller");
        call.answered = true;
        call.value.insert(
            "result".into(),
            json!([{"functionResponse": {"id": call.id, "name": call.name, "response": response(m)}}]),
        );
        call.value.insert("timestamp".into(), json!(stamp(t)));
        call.value
            .insert("resultDisplay".into(), json!(m.cut_content(2000)));
    }

    fn flush_current(&mut self) {
        let p = std::mem::take(&mut self.current);
        self.current.thoughts = std::mem::take(&mut self.deferred);
        if !self.current.thoughts.is_empty() {
            self.current.time = Some(self.clock.now);
        }
        if p.is_empty() {
            return;
        }
        let mut v = json!({
            "id": new_id(),
            "timestamp": stamp(p.time.unwrap_or(self.clock.now)),
            "type": "gemini",
            "content": p.text.unwrap_or_default(),
        });
        if !p.thoughts.is_empty() {
            v["thoughts"] = Value::Array(p.thoughts);
        }
        if !p.calls.is_empty() {
            v["toolCalls"] = Value::Array(
                p.calls
                    .into_iter()
                    .map(|c| Value::Object(c.value))
                    .collect(),
            );
        }
        self.line(&v);
    }

    /// The message being assembled, and then the thoughts deferred to the next one.
    fn flush_all(&mut self) {
        self.flush_current();
        self.flush_current();
        self.flush_responses();
    }

    fn flush_responses(&mut self) {
        if self.responses.is_empty() {
            return;
        }
        let parts = std::mem::take(&mut self.responses);
        let v = json!({
            "id": new_id(),
            "timestamp": stamp(self.responses_time),
            "type": "user",
            "content": parts,
        });
        self.line(&v);
    }
}

/// A `toolCalls` entry for call `m`, as the CLI records a successful one (its result is added
/// when it comes, see `Writer::answer`).
fn call_value(m: &Message, id: &str, name: &str, t: DateTime<Utc>) -> Map<String, Value> {
    let key = crate::text::truncate_chars(
        &crate::text::one_line(m.key_arg.as_deref().unwrap_or_default()),
        300,
    );
    let mut value = Map::new();
    value.insert("id".into(), json!(id));
    value.insert("name".into(), json!(name));
    value.insert("args".into(), call_args(m));
    value.insert("status".into(), json!("success"));
    value.insert("timestamp".into(), json!(stamp(t)));
    value.insert(
        "displayName".into(),
        json!(super::tools::display_name(name)),
    );
    value.insert("description".into(), json!(key));
    value.insert("renderOutputAsMarkdown".into(), json!(false));
    value
}

/// A result as a `functionResponse.response`: the output, or for a failure the error (unless
/// the output already says it failed, as Gemini's shell outputs do with their exit code).
fn response(m: &Message) -> Value {
    let fails_by_itself = super::convert::exit_code(&m.content).is_some_and(|c| c != 0);
    if m.is_error && !fails_by_itself {
        json!({"error": m.content})
    } else {
        json!({"output": m.content})
    }
}

/// A thought: `**Subject**\n\nbody` (how the reader renders Gemini's thoughts) is split back.
fn thought(text: &str, t: DateTime<Utc>) -> Value {
    let (subject, description) = text
        .strip_prefix("**")
        .and_then(|r| r.split_once("**\n\n"))
        .filter(|(s, _)| !s.contains('\n'))
        .unwrap_or(("", text));
    json!({"subject": subject, "description": description, "timestamp": stamp(t)})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_never_end_in_the_ids_first_8_characters() {
        let now = DateTime::parse_from_rfc3339("2026-11-30T11:37:59Z")
            .unwrap()
            .with_timezone(&Utc);
        let id = "804052ce-b39a-4855-a415-9a92a3b4274c";
        assert_eq!(
            file_name(id, now),
            "session-2026-11-30T11-37-a3b4274c.jsonl"
        );
        let same = "abcdefgh-0000-0000-0000-0000abcdefgh";
        let n = file_name(same, now);
        assert!(!n.ends_with("-abcdefgh.jsonl"), "{n}");
        assert_eq!(n.len(), file_name(id, now).len());
        assert!(file_name("x", now).starts_with("session-2026-11-30T11-37-"));
    }

    /// Any order of calls, results and words reads back as it was written: parallel results
    /// out of order, thoughts and words between a call and its result.
    #[test]
    fn every_order_of_calls_and_results_reads_back_as_written() {
        use crate::adapter::write::test_support::*;
        let call = |id: &str| echo_call(id, "run_shell_command", true);
        let result = echo_result;
        let s = session(
            "gemini",
            vec![
                Message::new(Role::System, "# Handoff brief"),
                Message::new(Role::User, "/etc/hosts first"),
                Message::new(Role::Assistant, "Two at once."),
                call("a"),
                call("b"),
                result("b", false),
                result("a", true),
                call("c"),
                Message::new(Role::Reasoning, "**Wait**\n\nfor c"),
                Message::new(Role::Assistant, "c is slow"),
                result("c", false),
                call("d"),
                result("d", false),
                call("e"),
                result("e", false),
                Message::new(Role::User, ""),
                Message::new(Role::Assistant, "Done."),
            ],
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s.jsonl");
        let req = request(&out, "0199f022-0000-7000-8000-00000000aaaa", "t", json!({}));
        let native = write(&s, &req).unwrap();
        std::fs::write(&out, &native.bytes).unwrap();
        let back = super::super::read::read(&out, Default::default()).unwrap();
        assert_eq!(crate::verify::digest(&back), crate::verify::digest(&s));
        // Results that could sit in their calls do; d and e are one call each.
        let with_result = lines(&native)
            .iter()
            .filter_map(|l| l["toolCalls"].as_array())
            .flatten()
            .filter(|c| c.get("result").is_some())
            .count();
        assert_eq!(with_result, 4, "a, b, d, e");
    }

    #[test]
    fn thoughts_split_back_into_subject_and_body() {
        let t = Utc::now();
        let v = thought("**Planning**\n\nTwo steps.", t);
        assert_eq!(
            (v["subject"].as_str(), v["description"].as_str()),
            (Some("Planning"), Some("Two steps."))
        );
        let v = thought("just thinking", t);
        assert_eq!(
            (v["subject"].as_str(), v["description"].as_str()),
            (Some(""), Some("just thinking"))
        );
    }
}
