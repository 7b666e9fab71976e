//! Writes a relay-shaped session as the document `opencode export` writes (and `opencode
//! import` takes), with session-relay's provenance beside it: `<data>/session-relay/<id>.json`.
//! `register` then copies it into OpenCode's database as rows (see `db`), which is what the CLI
//! lists and resumes. The rows are written directly rather than through `opencode import`: the
//! import needs the CLI, binds the session to the folder it runs in, and leaves an empty
//! session behind when a message fails its check; one transaction lands whole or not at all.
//!
//! - `info`: the session, titled, in the directory; its `metadata` carries the relay's mark
//!   (the provenance and how many messages it wrote), which OpenCode keeps.
//! - User words are user messages with one `text` part; context (the handoff brief,
//!   summaries) too, marked `sessionRelay: "context"`. Each has the `agent` and `model` the
//!   TUI needs to draw it.
//! - An answer is an assistant message (one per model call, `parentID` its request) with its
//!   reasoning, text and tool parts; each call's result is written into its tool part
//!   (`completed` with `output`, or `error`), a shell command's output also as
//!   `metadata.output`, which the TUI draws. A call without a result is an `error` part marked
//!   `unanswered`.
//! - Times grow by at least a millisecond from one message to the next: OpenCode orders
//!   messages by them.

use std::collections::HashMap;

use anyhow::Result;
use serde_json::{Value, json};

use crate::adapter::{NativeSession, WriteRequest};
use crate::model::{Message, Role, Session};

/// The provider and model a relayed message names. OpenCode answers a resumed session with the
/// user's own model; the TUI only needs a message to name one.
const PROVIDER: &str = "session-relay";
const MODEL: &str = "relayed";

pub fn write(shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
    let path = req.path_or(|| super::relayed_file(&req.home, &req.id));
    let first = crate::adapter::write::first_time(shaped)
        .unwrap_or(req.now)
        .min(req.now);
    let mut w = Writer {
        cwd: req.cwd.clone(),
        clock: first.timestamp_millis(),
        ..Default::default()
    };
    for m in &shaped.messages {
        w.message(m);
    }
    w.close();
    w.unanswered();
    let count = w.messages.len();
    let mut mark = req.provenance.clone();
    mark["sessionId"] = json!(req.id);
    mark["messages"] = json!(count);
    let version = super::AGENT
        .cli
        .as_ref()
        .and_then(|c| c.verified_versions.last());
    let doc = json!({
        "type": "session-relay",
        "sessionId": req.id,
        "provenance": req.provenance,
        "info": {
            "id": req.id,
            "slug": format!("relay-{}", super::random_base62(6).to_lowercase()),
            "projectID": "",
            "directory": req.cwd,
            "path": "",
            "title": crate::text::one_line(&req.title),
            "version": version.copied().unwrap_or_default(),
            "metadata": {super::RELAY_FIELD: mark},
            "time": {"created": first.timestamp_millis(), "updated": w.clock.max(req.now.timestamp_millis())},
        },
        "messages": w.messages,
    });
    let mut bytes = serde_json::to_vec(&doc)?;
    bytes.push(b'\n');
    Ok(NativeSession::new(&super::ADAPTER, req, path, bytes))
}

#[derive(Default)]
struct Writer {
    cwd: String,
    /// The time of the last message written, in epoch milliseconds: never goes backwards.
    clock: i64,
    /// Ids are made from the clock and this counter, so they sort as they are written.
    counter: u64,
    messages: Vec<Value>,
    /// The id of the newest user message: the `parentID` of the answers after it.
    parent: Option<String>,
    /// The assistant message being assembled (its place in `messages`), and whether it holds
    /// calls (its `finish` is then `tool-calls`).
    open: Option<(usize, bool)>,
    /// Every call awaiting its result: where its part is.
    calls: HashMap<String, (usize, usize)>,
}

impl Writer {
    fn id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        let n = ((self.clock.max(0) as u64) << 12 | (self.counter & 0xfff)) & 0xffff_ffff_ffff;
        format!("{prefix}_{n:012x}{}", super::random_base62(14))
    }

    /// The time of message `m`: its own, if later than the last one written, else a millisecond
    /// after that.
    fn tick(&mut self, m: &Message) -> i64 {
        let own = crate::adapter::write::time_of(m).map(|t| t.timestamp_millis());
        self.clock = own.filter(|t| *t > self.clock).unwrap_or(self.clock + 1);
        self.clock
    }

    fn message(&mut self, m: &Message) {
        match m.role {
            Role::User | Role::System => {
                self.close();
                self.user(m);
            }
            // Into the open message even after its calls: what comes before their results
            // is read back before them (the reader gives a message's results after its parts).
            Role::Reasoning | Role::Assistant => {
                let kind = if m.role == Role::Reasoning {
                    "reasoning"
                } else {
                    "text"
                };
                let at = self.assistant(m);
                let t = self.clock;
                let part = json!({"type": kind, "text": m.content, "time": {"start": t, "end": t}});
                self.push_part(at, part);
            }
            Role::ToolCall => {
                let at = self.assistant(m);
                if let Some(o) = self.open.as_mut() {
                    o.1 = true;
                }
                let id = m.tool_call_id.clone().unwrap_or_else(|| self.id("call"));
                let t = self.clock;
                let part = json!({
                    "type": "tool",
                    "tool": m.tool_name.as_deref().unwrap_or("tool"),
                    "callID": id,
                    "state": {"status": "pending", "input": m.tool_input.clone().unwrap_or_else(|| json!({})), "time": {"start": t}},
                });
                let index = self.push_part(at, part);
                self.calls.insert(id, (at, index));
            }
            Role::ToolResult => self.result(m),
        }
    }

    fn user(&mut self, m: &Message) {
        let t = self.tick(m);
        let id = self.id("msg");
        let mut info = json!({
            "id": id, "role": "user", "time": {"created": t}, "agent": "build",
            "model": {"providerID": PROVIDER, "modelID": MODEL},
        });
        if m.role == Role::System {
            info[super::RELAY_FIELD] = json!("context");
        }
        let part = json!({"id": self.id("prt"), "type": "text", "text": m.content});
        self.messages.push(json!({"info": info, "parts": [part]}));
        self.parent = Some(id);
    }

    /// The assistant message `m` goes into: the open one, or a new one.
    fn assistant(&mut self, m: &Message) -> usize {
        if let Some((at, _)) = self.open {
            return at;
        }
        let t = self.tick(m);
        let info = json!({
            "id": self.id("msg"), "role": "assistant", "parentID": self.parent,
            "modelID": MODEL, "providerID": PROVIDER, "mode": "build", "agent": "build",
            "path": {"cwd": self.cwd, "root": self.cwd}, "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "time": {"created": t, "completed": t}, "finish": "stop",
        });
        self.messages.push(json!({"info": info, "parts": []}));
        self.open = Some((self.messages.len() - 1, false));
        self.messages.len() - 1
    }

    fn push_part(&mut self, at: usize, mut part: Value) -> usize {
        part["id"] = json!(self.id("prt"));
        let parts = self.messages[at]["parts"]
            .as_array_mut()
            .expect("parts are an array");
        parts.push(part);
        parts.len() - 1
    }

    fn close(&mut self) {
        if let Some((at, calls)) = self.open.take()
            && calls
        {
            self.messages[at]["info"]["finish"] = json!("tool-calls");
        }
    }

    /// A result, written into its call's part; results end one after another, in their order.
    fn result(&mut self, m: &Message) {
        self.close();
        let Some(id) = m.tool_call_id.as_deref() else {
            return;
        };
        let Some((at, index)) = self.calls.remove(id) else {
            return;
        };
        let end = self.tick(m);
        let part = &mut self.messages[at]["parts"][index];
        let start = part["state"]["time"]["start"].clone();
        let input = part["state"]["input"].take();
        let bash = part["tool"] == "bash";
        // A shell command's exit code says whether it failed, as OpenCode records one.
        let exit =
            (m.metadata.get_i64("exit_code")).filter(|code| bash && (*code != 0) == m.is_error);
        part["state"] = if m.is_error && exit.is_none() {
            json!({"status": "error", "error": m.content, "metadata": {}})
        } else {
            let title = title_of(&input, &part["tool"]);
            let mut state =
                json!({"status": "completed", "output": m.content, "title": title, "metadata": {}});
            if bash {
                state["metadata"]["output"] = json!(m.content);
            }
            if let Some(code) = exit {
                state["metadata"]["exit"] = json!(code);
            }
            state
        };
        part["state"]["input"] = input;
        part["state"]["time"] = json!({"start": start, "end": end});
        self.messages[at]["info"]["time"]["completed"] = json!(end);
    }

    /// Calls no result answered: failed parts marked so, which OpenCode accepts and the reader
    /// reads as calls without a result.
    fn unanswered(&mut self) {
        let calls: Vec<(usize, usize)> = self.calls.drain().map(|(_, at)| at).collect();
        for (at, index) in calls {
            let state = &mut self.messages[at]["parts"][index]["state"];
            let start = state["time"]["start"].clone();
            state["status"] = json!("error");
            state["error"] = json!("no result was recorded for this call");
            state["metadata"] = json!({super::RELAY_FIELD: "unanswered"});
            state["time"] = json!({"start": start, "end": start});
        }
    }
}

/// A completed tool part's title, as OpenCode gives one: the command, else the file's name.
fn title_of(input: &Value, tool: &Value) -> String {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    let file = s("filePath").map(|p| p.rsplit('/').next().unwrap_or(p));
    let title = s("command").or(s("description")).or(file).or(tool.as_str());
    crate::text::one_line(title.unwrap_or("tool"))
}
