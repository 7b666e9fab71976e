//! Reads a pi session into the neutral model as pi builds its context: the last entry of the
//! file is the leaf, and the conversation is the path from it up through `parentId`. Entries on
//! other branches stay in the file but are not part of it (counted as abandoned).
//!
//! - `message` entries: user text, assistant `text` / `thinking` / `toolCall` blocks in their
//!   order, `toolResult` messages, and the rarer roles (`bashExecution` for a `!command` typed in
//!   the TUI, `custom`, `branchSummary`, `compactionSummary`);
//! - `compaction`: the summary pi sends in place of what came before `firstKeptEntryId`;
//! - `branch_summary` and `custom_message`: what pi sends as context;
//! - `session_info {name}`: the title (the newest one); `model_change`: the model; a relay's
//!   `session-relay` entry: its provenance. Other known types carry no conversation.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};

use crate::jsonl::{self, Line, str_field};
use crate::model::{Message, MessageKind, Role, Session, Timestamp};

/// Entry types that carry no conversation.
const QUIET_TYPES: &[&str] = &[
    "thinking_level_change",
    "label",
    "session_info",
    "model_change",
];

/// One line of the file, as the reader keeps it.
struct Entry {
    line: usize,
    value: Value,
    /// For a tool result cut while parsing (`ReadOptions::max_tool_output`): its full length.
    cut_from: Option<usize>,
}

/// The id in the session header of the file at `path` (its first line), if it has one.
pub fn header_id(path: &Path) -> Option<String> {
    // A header is one short line; a longer first line is left to the scan.
    let head = jsonl::head(path, 4096).ok()?;
    let first = jsonl::strip_bom(&head).split(|&b| b == b'\n').next()?;
    let v: Value = serde_json::from_slice(first).ok()?;
    is_header(&v).then(|| str_field(&v, "id").map(str::to_string))?
}

fn is_header(v: &Value) -> bool {
    str_field(v, "type") == Some("session") && str_field(v, "id").is_some()
}

pub fn read(path: &Path, opts: crate::adapter::ReadOptions) -> Result<Session> {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let mut session = Session::new(super::NAME, "pi-jsonl", stem.into_owned());
    session.source_path = Some(path.display().to_string());
    let max = opts.max_tool_output;
    let mut entries: Vec<Entry> = Vec::new();
    let mut first_line = None;
    let pass = jsonl::for_each_line(
        path,
        jsonl::Pass::default(),
        |_, _| None,
        |_, mut v| {
            let cut_from = max.and_then(|max| cut_result(&mut v, max));
            (v, cut_from)
        },
        |no, line| {
            first_line.get_or_insert(no);
            if let Line::Json((value, cut_from)) = line {
                entries.push(Entry {
                    line: no,
                    value,
                    cut_from,
                });
            }
            Ok(())
        },
    )?;
    session.record_pass(&pass);
    let header = match entries.first() {
        Some(e) if Some(e.line) == first_line && is_header(&e.value) => Some(entries.remove(0)),
        _ => None,
    };
    match &header {
        Some(h) => apply_header(&mut session, &h.value),
        None if first_line.is_some() => session.warn(
            first_line,
            "not a pi session: the first line is not a session header (pi does not list it)",
        ),
        None => session.warn(None, "empty file: no session header"),
    }
    let path_entries = branch(&entries, &mut session);
    let mut state = State::default();
    for i in path_entries {
        entry(&entries[i], &mut session, &mut state);
    }
    finish(&mut session, &entries, state);
    Ok(session)
}

fn apply_header(session: &mut Session, h: &Value) {
    if let Some(id) = str_field(h, "id") {
        session.id = id.to_string();
    }
    session.cwd = str_field(h, "cwd").map(str::to_string);
    session.created = h.get("timestamp").and_then(Timestamp::from_value);
    if let Some(v) = h.get("version") {
        session.extra.insert("version".into(), v.clone());
    }
    if let Some(p) = h.get("parentSession") {
        session.extra.insert("parent_session".into(), p.clone());
    }
}

/// The indexes of the entries on the path from the leaf (the last entry with an id) to the
/// root, in order, as pi's context follows it. Entries off it are counted as abandoned; an
/// entry without an id, a parent that is missing or a loop are warned of.
fn branch(entries: &[Entry], session: &mut Session) -> Vec<usize> {
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        match str_field(&e.value, "id") {
            Some(id) => {
                by_id.insert(id, i);
            }
            None => session.warn(
                Some(e.line),
                "entry without an id skipped: pi cannot place it in the session's tree",
            ),
        }
    }
    let leaf = entries
        .iter()
        .rposition(|e| str_field(&e.value, "id").is_some());
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut at = leaf;
    while let Some(i) = at {
        if !seen.insert(i) {
            session.warn(
                Some(entries[i].line),
                "the entries' parentId links loop here",
            );
            break;
        }
        path.push(i);
        at = match entries[i].value.get("parentId") {
            Some(Value::String(p)) => {
                let parent = by_id.get(p.as_str()).copied();
                if parent.is_none() {
                    session.warn(
                        Some(entries[i].line),
                        format!("parentId {p} names no entry of the file: the context starts here"),
                    );
                }
                parent
            }
            _ => None,
        };
    }
    path.reverse();
    let ids = entries
        .iter()
        .filter(|e| e.value.get("id").is_some())
        .count();
    session.stats.abandoned_branch_lines = ids - path.len();
    path
}

/// What the path's entries say of the whole session.
#[derive(Default)]
struct State {
    /// The model of the newest answer or `model_change` on the path.
    model: Option<String>,
}

/// One entry on the path.
fn entry(e: &Entry, session: &mut Session, state: &mut State) {
    let v = &e.value;
    let ts = v.get("timestamp").and_then(Timestamp::from_value);
    let kind = str_field(v, "type").unwrap_or_default();
    let summary = |key: &str| str_field(v, key).unwrap_or_default().to_string();
    match kind {
        "message" => match v.get("message") {
            Some(m) => message(m, e, ts, session, state),
            None => session.warn(Some(e.line), "message entry without a message skipped"),
        },
        "compaction" => {
            let mut m = Message::new(Role::System, summary("summary"))
                .with_time(ts)
                .with_meta("line", e.line)
                .with_kind(MessageKind::Compaction);
            for (key, name) in [
                ("firstKeptEntryId", "first_kept"),
                ("tokensBefore", "tokens_before"),
            ] {
                if let Some(x) = v.get(key) {
                    m.metadata.insert(name, x.clone());
                }
            }
            session.messages.push(m);
        }
        "branch_summary" => session.messages.push(
            Message::new(Role::System, summary("summary"))
                .with_time(ts)
                .with_meta("line", e.line)
                .with_kind(MessageKind::CompactSummary),
        ),
        "custom_message" => session.messages.push(
            Message::new(Role::System, text_of(v.get("content")))
                .with_time(ts)
                .with_meta("line", e.line)
                .with_kind(MessageKind::Context),
        ),
        super::RELAY_ENTRY => {
            if let Some(p) = v.get("provenance") {
                session.extra.insert("provenance".into(), p.clone());
            }
            skipped(session, kind);
        }
        "custom" => skipped(session, kind),
        k if QUIET_TYPES.contains(&k) => {
            if k == "model_change"
                && let Some(model) = str_field(v, "modelId")
            {
                state.model = Some(model.to_string());
            }
            skipped(session, k);
        }
        other => {
            *session
                .stats
                .unknown_types
                .entry(other.to_string())
                .or_default() += 1;
        }
    }
}

fn skipped(session: &mut Session, kind: &str) {
    *session
        .stats
        .skipped_types
        .entry(kind.to_string())
        .or_default() += 1;
}

/// A `message` entry's message.
fn message(m: &Value, e: &Entry, ts: Option<Timestamp>, session: &mut Session, state: &mut State) {
    let base = |role: Role, text: String| {
        Message::new(role, text)
            .with_time(ts.clone())
            .with_meta("line", e.line)
    };
    match str_field(m, "role").unwrap_or_default() {
        "user" => {
            let relayed_context = str_field(&e.value, super::RELAY_FIELD) == Some("context");
            let role = if relayed_context {
                Role::System
            } else {
                Role::User
            };
            let mut msg = base(role, text_of(m.get("content")));
            if relayed_context {
                msg = msg.with_kind(MessageKind::Context);
            }
            let images = images(m.get("content"));
            if images > 0 {
                msg = msg.with_meta("images", images);
            }
            session.messages.push(msg);
        }
        "assistant" => assistant(m, &base, session, state),
        "toolResult" => {
            let mut r = base(Role::ToolResult, text_of(m.get("content")));
            r.tool_call_id = str_field(m, "toolCallId").map(str::to_string);
            r.tool_name = str_field(m, "toolName").map(str::to_string);
            r.is_error = m.get("isError").and_then(Value::as_bool).unwrap_or(false);
            if let Some(n) = e.cut_from {
                r.state_mut().original_chars = Some(n);
            }
            session.messages.push(r);
        }
        "bashExecution" => bash_execution(m, &base, session),
        "custom" => session
            .messages
            .push(base(Role::System, text_of(m.get("content"))).with_kind(MessageKind::Context)),
        "branchSummary" => session.messages.push(
            base(
                Role::System,
                str_field(m, "summary").unwrap_or_default().into(),
            )
            .with_kind(MessageKind::CompactSummary),
        ),
        "compactionSummary" => session.messages.push(
            base(
                Role::System,
                str_field(m, "summary").unwrap_or_default().into(),
            )
            .with_kind(MessageKind::Compaction),
        ),
        other => {
            *session
                .stats
                .unknown_types
                .entry(format!("message:{other}"))
                .or_default() += 1;
        }
    }
}

/// An assistant message: its blocks in order, as reasoning, text and tool calls.
fn assistant(
    m: &Value,
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    state: &mut State,
) {
    let model = str_field(m, "model").filter(|s| !s.is_empty());
    if let Some(model) = model {
        state.model = Some(model.to_string());
    }
    let at = session.messages.len();
    let blocks: &[Value] = match m.get("content") {
        Some(Value::Array(b)) => b,
        Some(Value::String(s)) => {
            session.messages.push(base(Role::Assistant, s.clone()));
            &[]
        }
        _ => &[],
    };
    for b in blocks {
        match str_field(b, "type").unwrap_or_default() {
            "text" => session.messages.push(base(
                Role::Assistant,
                str_field(b, "text").unwrap_or_default().into(),
            )),
            "thinking" => {
                let mut r = base(
                    Role::Reasoning,
                    str_field(b, "thinking").unwrap_or_default().into(),
                );
                if b.get("thinkingSignature").is_some_and(|s| !s.is_null()) {
                    r.metadata.insert("signed", json!(true));
                }
                session.messages.push(r);
            }
            "toolCall" => tool_call(b, base, session),
            other => {
                *session
                    .stats
                    .unknown_types
                    .entry(format!("block:{other}"))
                    .or_default() += 1;
            }
        }
    }
    if let Some(model) = model {
        for m in &mut session.messages[at..] {
            m.metadata.insert("model", json!(model));
        }
    }
    let usage = m.get("usage");
    let n = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(jsonl::as_count)
            .unwrap_or(0)
    };
    let prompt = n("input") + n("cacheRead") + n("cacheWrite");
    if prompt > 0 {
        session.record_context_usage(prompt, at, model);
    }
}

fn tool_call(b: &Value, base: &dyn Fn(Role, String) -> Message, session: &mut Session) {
    let name = str_field(b, "name").unwrap_or_default().to_string();
    let input = b.get("arguments").cloned().unwrap_or_else(|| json!({}));
    let (kind, key) = super::tools::classify(&name, &input);
    if super::tools::WRITE_TOOLS.contains(&name.as_str()) {
        session.touch_file(&key);
    }
    let mut c = base(Role::ToolCall, String::new());
    c.tool_call_id = str_field(b, "id").map(str::to_string);
    c.tool_name = Some(name);
    c.tool_input = Some(input);
    c.tool_kind = Some(kind);
    c.key_arg = Some(key);
    session.messages.push(c);
}

/// A command the person ran with `!` in the TUI: a shell call and its output.
fn bash_execution(m: &Value, base: &dyn Fn(Role, String) -> Message, session: &mut Session) {
    let command = str_field(m, "command").unwrap_or_default().to_string();
    let id = format!("bash-{}", session.end());
    let mut c = base(Role::ToolCall, String::new());
    c.tool_call_id = Some(id.clone());
    c.tool_name = Some("bash".into());
    c.tool_input = Some(json!({"command": command}));
    c.tool_kind = Some(crate::model::ToolKind::Shell);
    c.key_arg = Some(command);
    let mut r = base(
        Role::ToolResult,
        str_field(m, "output").unwrap_or_default().into(),
    );
    r.tool_call_id = Some(id);
    r.tool_name = Some("bash".into());
    let code = m.get("exitCode").and_then(Value::as_f64).map(|c| c as i64);
    r.is_error = code.is_some_and(|c| c != 0) || m.get("cancelled") == Some(&json!(true));
    if let Some(code) = code {
        r.metadata.insert("exit_code", json!(code));
    }
    session.messages.push(c.with_kind(MessageKind::UserShell));
    session.messages.push(r);
}

/// The text of a message's content: a string, or its text blocks one after another.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_field(b, "type") == Some("text"))
            .filter_map(|b| str_field(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn images(content: Option<&Value>) -> usize {
    match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_field(b, "type") == Some("image"))
            .count(),
        _ => 0,
    }
}

/// Cuts a tool result's text to `max` characters while the line is parsed, so that a long
/// session is never held with its outputs whole. Returns the text's full length when it cut.
fn cut_result(v: &mut Value, max: usize) -> Option<usize> {
    let m = v.get_mut("message")?;
    if str_field(m, "role") != Some("toolResult") {
        return None;
    }
    if let Some(o) = m.as_object_mut() {
        // `details` repeats the output (an edit's diff) and is never read.
        o.remove("details");
    }
    let text = text_of(m.get("content"));
    let n = text.chars().count();
    if n <= max {
        return None;
    }
    m["content"] = json!([{"type": "text", "text": crate::text::trim_output(&text, max)}]);
    Some(n)
}

/// What the whole file says beyond the path: the title (the newest `session_info`, wherever it
/// is), the model, the times.
fn finish(session: &mut Session, entries: &[Entry], state: State) {
    // pi's title is the newest `session_info`'s name; an empty one clears it.
    let named = entries
        .iter()
        .rev()
        .find(|e| str_field(&e.value, "type") == Some("session_info"))
        .and_then(|e| str_field(&e.value, "name"))
        .filter(|n| !n.trim().is_empty())
        .map(crate::text::one_line);
    session.title = named.or_else(|| session.first_user_prompt().map(crate::text::one_line));
    if let Some(model) = state.model {
        session.extra.insert("model".into(), json!(model));
    }
    session.fill_times_from_messages();
    session.pair_tool_calls();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_lines(lines: &[&str], opts: crate::adapter::ReadOptions) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        read(&path, opts).unwrap()
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"0199-x","timestamp":"2026-11-28T09:00:00.000Z","cwd":"/p"}"#;

    fn user(id: &str, parent: &str, text: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-11-28T09:00:01.000Z","message":{{"role":"user","content":"{text}"}}}}"#
        )
    }

    /// The conversation is the path from the last entry up its parents: a later branch that
    /// starts from an earlier entry leaves the first one out, as pi's context does.
    #[test]
    fn the_last_entry_is_the_leaf_and_other_branches_are_left_out() {
        let lines = [
            HEADER.to_string(),
            user("a0000001", "null", "first"),
            user("a0000002", r#""a0000001""#, "abandoned"),
            user("a0000003", r#""a0000001""#, "kept"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let s = read_lines(&lines, Default::default());
        let texts: Vec<&str> = s.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["first", "kept"]);
        assert_eq!(s.stats.abandoned_branch_lines, 1);
        assert_eq!((s.id.as_str(), s.cwd.as_deref()), ("0199-x", Some("/p")));
    }

    /// Every line the reader cannot place is said, with its number: never dropped silently.
    #[test]
    fn bad_lines_are_warned_of_with_their_line() {
        let lines = [
            "{\"type\":\"message\",\"id\":\"cut".to_string(),
            user("a0000001", "null", "first"),
            r#"{"type":"label","label":"no id"}"#.to_string(),
            user("a0000002", r#""gone0000""#, "orphan"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let s = read_lines(&lines, Default::default());
        let warned: Vec<Option<usize>> = s.warnings.iter().map(|w| w.line).collect();
        assert_eq!(
            warned,
            [Some(1), Some(1), Some(3), Some(4)],
            "{:?}",
            s.warnings
        );
        assert!(s.warnings[1].message.contains("not a pi session"));
        assert_eq!(s.messages.len(), 1, "the orphan starts the context");
        // A loop of parents ends the walk, said.
        let looped = [
            HEADER.to_string(),
            user("a0000001", r#""a0000002""#, "one"),
            user("a0000002", r#""a0000001""#, "two"),
        ];
        let looped: Vec<&str> = looped.iter().map(String::as_str).collect();
        let s = read_lines(&looped, Default::default());
        assert!(
            s.warnings.iter().any(|w| w.message.contains("loop")),
            "{:?}",
            s.warnings
        );
    }

    /// A long tool output is cut while parsing, and says how long it was.
    #[test]
    fn long_outputs_are_cut_as_the_options_ask() {
        let output = "x".repeat(5000);
        let result = format!(
            r#"{{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-11-28T09:00:02.000Z","message":{{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{{"type":"text","text":"{output}"}}],"details":{{"diff":"d"}},"isError":false}}}}"#
        );
        let call = r#"{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-11-28T09:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"yes"}}],"usage":{"input":10,"cacheRead":5,"totalTokens":15}}}"#;
        let opts = crate::adapter::ReadOptions {
            max_tool_output: Some(1000),
            ..Default::default()
        };
        let s = read_lines(&[HEADER, call, &result], opts);
        let r = &s.messages[1];
        assert!(r.content.chars().count() < 1200, "{}", r.content.len());
        assert_eq!(r.original_chars(), Some(5000));
        assert_eq!(s.context_usage.as_ref().map(|u| u.tokens), Some(15));
        let whole = read_lines(&[HEADER, call, &result], Default::default());
        assert_eq!(whole.messages[1].content, output);
    }
}
