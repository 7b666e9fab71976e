//! One Gemini CLI message record as neutral messages: text, thoughts, tool calls and their
//! results, usage, todos.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::records::{PartView, gemini_text, split_user};
use crate::jsonl::str_field;
use crate::model::{Message, MessageKind, Role, Session, Timestamp, Todo};

/// The parts of a message's content: a string is one text part (the CLI's `ensurePartArray`).
fn parts(content: Option<&Value>) -> Vec<&Value> {
    match content {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v @ (Value::String(_) | Value::Object(_))) => vec![v],
        _ => Vec::new(),
    }
}

fn view(p: &Value) -> PartView<'_> {
    match p {
        Value::String(s) => PartView {
            text: Some(s),
            thought: false,
        },
        _ => PartView {
            text: str_field(p, "text"),
            thought: p.get("thought").and_then(Value::as_bool) == Some(true),
        },
    }
}

#[derive(Default)]
pub struct Convert {
    /// Calls emitted without a result yet: id -> name.
    open: Vec<(String, String)>,
    /// Calls whose result was emitted.
    answered: HashSet<String>,
    pub(super) todos: Option<Vec<Todo>>,
    pub(super) model: Option<String>,
    pub(super) first_context: Option<String>,
    synthetic: usize,
}

impl Convert {
    /// An id for a call of gemini message `m` recorded without one: the message's id and a
    /// count that runs through the session.
    fn synthetic_id(&mut self, m: &Value) -> String {
        self.synthetic += 1;
        format!(
            "{}#{}",
            str_field(m, "id").unwrap_or("call"),
            self.synthetic
        )
    }
}

pub fn convert(m: &Value, line: usize, session: &mut Session, st: &mut Convert) {
    let ts = m.get("timestamp").and_then(Timestamp::from_value);
    let id = str_field(m, "id").unwrap_or_default();
    let base = |role: Role, content: String| {
        Message::new(role, content)
            .with_time(ts.clone())
            .with_meta("line", line)
            .with_meta("message_id", id)
    };
    let kind = str_field(m, "type").unwrap_or_default();
    let ps = parts(m.get("content"));
    let views: Vec<PartView> = ps.iter().map(|p| view(p)).collect();
    match kind {
        "user" => {
            let relay = str_field(m, super::RELAY_FIELD);
            let split = split_user(&views, relay);
            for (k, text) in split.context {
                if k == MessageKind::Context && st.first_context.is_none() {
                    st.first_context = Some(text.clone());
                }
                session.messages.push(base(Role::System, text).with_kind(k));
            }
            if let Some(words) = split.words {
                let mut msg = base(Role::User, words);
                if let Some(d) = m.get("displayContent").filter(|d| !d.is_null()) {
                    let shown: String =
                        parts(Some(d)).iter().filter_map(|p| view(p).text).collect();
                    if shown != msg.content {
                        msg = msg.with_meta("display_content", shown);
                    }
                }
                session.messages.push(msg);
            }
            for p in &ps {
                if let Some(fr) = p.get("functionResponse") {
                    function_response(fr, &base, session, st);
                }
            }
        }
        "gemini" => gemini(m, &ps, &views, &base, session, st),
        "info" | "warning" | "error" => {
            let text = match m.get("content") {
                Some(Value::String(s)) => s.clone(),
                other => gemini_text(&parts(other).iter().map(|p| view(p)).collect::<Vec<_>>()),
            };
            let line_kind = gemini_line_kind(kind, &text);
            session
                .messages
                .push(base(Role::System, text).with_kind(line_kind));
        }
        other => {
            // The CLI cannot draw it (a resume crashes on it) and does not count it.
            *session
                .stats
                .unknown_types
                .entry(format!(
                    "message:{}",
                    if other.is_empty() { "<no type>" } else { other }
                ))
                .or_default() += 1;
        }
    }
}

/// A `gemini` message: its thoughts, its text, its calls and the results recorded with them,
/// and the context its request carried.
fn gemini(
    m: &Value,
    ps: &[&Value],
    views: &[PartView],
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    st: &mut Convert,
) {
    // Its place in the whole session: older turns may have been folded.
    let first = session.end();
    if let Some(model) = str_field(m, "model") {
        st.model = Some(model.to_string());
    }
    for t in thoughts(m, views)
        .into_iter()
        .filter(|t| !t.trim().is_empty())
    {
        session.messages.push(base(Role::Reasoning, t));
    }
    let text = gemini_text(views);
    if !text.trim().is_empty() {
        session.messages.push(base(Role::Assistant, text));
    }
    // Calls: the recorded toolCalls, then functionCall parts they do not cover (the history
    // the CLI rewrites after a cancelled call has only those).
    let (ids, results) = recorded_calls(m, base, session, st);
    part_calls(m, ps, &ids, base, session, st);
    session.messages.extend(results);
    if let Some(tokens) = m.get("tokens").filter(|t| t.is_object()) {
        usage(tokens, first, str_field(m, "model"), session);
    }
}

/// A gemini message's thoughts: the recorded ones, else the thought parts of rewritten content.
fn thoughts(m: &Value, views: &[PartView]) -> Vec<String> {
    match m.get("thoughts").and_then(Value::as_array) {
        Some(t) if !t.is_empty() => t
            .iter()
            .map(|t| {
                let subject = str_field(t, "subject").unwrap_or_default().trim();
                let body = str_field(t, "description").unwrap_or_default();
                if subject.is_empty() {
                    body.to_string()
                } else {
                    format!("**{subject}**\n\n{body}")
                }
            })
            .collect(),
        _ => views
            .iter()
            .filter(|p| p.thought)
            .filter_map(|p| p.text.map(str::to_string))
            .collect(),
    }
}

/// Pushes the calls of a gemini message's `toolCalls`. Returns their ids, and the results
/// recorded with them, to follow every call of the message: in the order the calls finished
/// (their timestamps), as recorded when a time is missing.
fn recorded_calls(
    m: &Value,
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    st: &mut Convert,
) -> (Vec<String>, Vec<Message>) {
    let calls = m
        .get("toolCalls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut ids = Vec::new();
    let mut results: Vec<(usize, Option<chrono::DateTime<chrono::Utc>>, Message)> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let name = str_field(c, "name").unwrap_or("?").to_string();
        let call_id = match str_field(c, "id") {
            Some(id) => id.to_string(),
            None => st.synthetic_id(m),
        };
        let args = c.get("args").cloned().unwrap_or(Value::Null);
        let status = str_field(c, "status").unwrap_or_default();
        let mut call = tool_call(base, &call_id, &name, args, session, st, status);
        call = call.with_meta("status", status);
        if let Some(d) = str_field(c, "displayName") {
            call = call.with_meta("display_name", d);
        }
        session.messages.push(call);
        ids.push(call_id.clone());
        match c.get("result").filter(|r| !r.is_null()) {
            Some(r) => {
                let mut res = base(Role::ToolResult, String::new());
                if let Some(t) = c.get("timestamp").and_then(Timestamp::from_value) {
                    res.timestamp = Some(t);
                }
                res.tool_call_id = Some(call_id.clone());
                fill_result(&mut res, r, &call_id, status);
                st.answered.insert(call_id.clone());
                let t = c
                    .get("timestamp")
                    .and_then(Timestamp::from_value)
                    .and_then(|t| t.time());
                results.push((i, t, res));
            }
            None => st.open.push((call_id, name)),
        }
    }
    if results.iter().all(|r| r.1.is_some()) {
        results.sort_by_key(|r| (r.1, r.0));
    }
    (ids, results.into_iter().map(|(_, _, r)| r).collect())
}

/// Pushes the calls of a gemini message's `functionCall` parts that `toolCalls` does not
/// record (`recorded`: the ids it does), each awaiting its result.
fn part_calls(
    m: &Value,
    ps: &[&Value],
    recorded: &[String],
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    st: &mut Convert,
) {
    for p in ps {
        let Some(fc) = p.get("functionCall") else {
            continue;
        };
        let part_id = str_field(fc, "id");
        if part_id.is_some_and(|i| recorded.iter().any(|x| x == i)) {
            continue;
        }
        let name = str_field(fc, "name").unwrap_or("?").to_string();
        let call_id = match part_id {
            Some(id) => id.to_string(),
            None => st.synthetic_id(m),
        };
        let args = fc.get("args").cloned().unwrap_or(Value::Null);
        let call = tool_call(base, &call_id, &name, args, session, st, "");
        session.messages.push(call);
        st.open.push((call_id, name));
    }
}

/// The context the request that produced a gemini message carried, as the CLI recorded it.
fn usage(tokens: &Value, at: usize, model: Option<&str>, session: &mut Session) {
    let input = tokens
        .get("input")
        .and_then(crate::jsonl::as_count)
        .unwrap_or(0);
    if input == 0 {
        return;
    }
    session.record_context_usage(input, at, model);
}

fn tool_call(
    base: &dyn Fn(Role, String) -> Message,
    id: &str,
    name: &str,
    args: Value,
    session: &mut Session,
    st: &mut Convert,
    status: &str,
) -> Message {
    let done = !matches!(status, "error" | "cancelled");
    if done && super::tools::WRITE_TOOLS.contains(&name) {
        for key in ["file_path", "absolute_path"] {
            if let Some(p) = str_field(&args, key) {
                session.touch_file(p);
                break;
            }
        }
    }
    if done
        && name == "write_todos"
        && let Some(t) = super::tools::todos(&args)
    {
        st.todos = Some(t);
    }
    let (kind, key) = super::tools::classify(name, &args);
    let mut call = base(Role::ToolCall, String::new());
    call.tool_call_id = Some(id.to_string());
    call.tool_name = Some(name.to_string());
    call.tool_kind = Some(kind);
    call.key_arg = Some(key);
    call.tool_input = Some(args).filter(|v| !v.is_null());
    call
}

/// A `functionResponse` in a user message: the result of a call emitted without one (the
/// CLI's own copies of results already in toolCalls are left out).
fn function_response(
    fr: &Value,
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    st: &mut Convert,
) {
    let name = str_field(fr, "name").unwrap_or_default();
    let id = match str_field(fr, "id") {
        Some(i) => i.to_string(),
        None => match st.open.iter().find(|(_, n)| n == name) {
            Some((i, _)) => i.clone(),
            None => {
                st.synthetic += 1;
                format!("response#{}", st.synthetic)
            }
        },
    };
    if st.answered.contains(&id) {
        *session
            .stats
            .skipped_types
            .entry("functionResponse copy".into())
            .or_default() += 1;
        return;
    }
    st.open.retain(|(i, _)| *i != id);
    st.answered.insert(id.clone());
    let mut res = base(Role::ToolResult, String::new());
    res.tool_call_id = Some(id.clone());
    fill_result(&mut res, &json!([{ "functionResponse": fr }]), &id, "");
    session.messages.push(res);
}

/// A tool result's text and error state from a toolCall's `result` (functionResponse parts, a
/// string, or one part).
fn fill_result(res: &mut Message, result: &Value, call_id: &str, status: &str) {
    let mut error = matches!(status, "error" | "cancelled");
    let mut original: Option<u64> = None;
    let mut cut_text = None;
    let content = match result {
        Value::String(s) => s.clone(),
        other => {
            let ps = parts(Some(other));
            let responses: Vec<&Value> = ps
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .collect();
            let mine = responses
                .iter()
                .find(|r| str_field(r, "id") == Some(call_id))
                .or(responses.first());
            let mut texts = Vec::new();
            if let Some(r) = mine {
                original = r.get("_original_chars").and_then(Value::as_u64);
                let resp = r.get("response").unwrap_or(&Value::Null);
                if let Some(e) = resp.get("error").filter(|e| !e.is_null()) {
                    error = true;
                    texts.push(as_text(e));
                } else if let Some(o) = resp.get("output") {
                    texts.push(as_text(o));
                } else if !resp.is_null() {
                    texts.push(resp.to_string());
                }
                cut_text = texts.first().map(|t| t.chars().count() as u64);
            }
            for p in &ps {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => texts.push(t.to_string()),
                    None if p.get("inlineData").is_some() => texts.push("[inline data]".into()),
                    None => {}
                }
            }
            let content = texts.join("\n");
            // The whole result's length, not only the cut text's: other parts go with it.
            if let (Some(n), Some(cut)) = (original, cut_text) {
                original = Some(n + (content.chars().count() as u64 - cut));
            }
            content
        }
    };
    if let Some(code) = exit_code(&content) {
        res.metadata.insert("exit_code", json!(code));
        if code != 0 {
            error = true;
        }
    }
    // Esc (or "No") at the approval prompt; a call cancelled while it ran, or queued behind a
    // refused one, gives another reason.
    if status == "cancelled" && content.contains("Reason: User denied execution.") {
        res.metadata.insert("rejected", json!(true));
    }
    if let Some(n) = original {
        res.state_mut().original_chars = Some(n as usize);
    }
    res.content = content;
    res.is_error = error;
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The exit code in a Gemini shell output (`Exit Code: N` in its `<untrusted_context>` block,
/// or after `Command:` / `Output:` in older releases).
pub fn exit_code(output: &str) -> Option<i64> {
    let head = output.trim_start();
    if !(head.starts_with("<untrusted_context>")
        || head.starts_with("Command:")
        || head.starts_with("Output:"))
    {
        return None;
    }
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit Code: "))
        .and_then(|c| c.trim().parse().ok())
}

/// Drops what a relay will not keep before a line is stored: the TUI's drawing of each result
/// (`resultDisplay`), and the middle of tool outputs over `max` characters.
/// `shrink` when the read cuts outputs (`ReadOptions::max_tool_output`).
/// Without `max` it only drops a source's own `_original_chars`, which would pass for a cut.
pub(super) fn shrink_to(v: &mut Value, max: Option<usize>) {
    shrink(v, max);
}

fn shrink(v: &mut Value, max: Option<usize>) {
    if let Some(set) = v.get_mut("$set").and_then(|s| s.get_mut("messages"))
        && let Some(items) = set.as_array_mut()
    {
        for m in items {
            shrink(m, max);
        }
    }
    if let Some(items) = v.get_mut("messages").and_then(Value::as_array_mut) {
        for m in items {
            shrink(m, max);
        }
    }
    if let Some(calls) = v.get_mut("toolCalls").and_then(Value::as_array_mut) {
        for c in calls {
            if let Some(o) = c.as_object_mut()
                && max.is_some()
            {
                o.remove("resultDisplay");
            }
            if let Some(r) = c.get_mut("result") {
                shrink_parts(r, max);
            }
        }
    }
    if let Some(c) = v.get_mut("content") {
        shrink_parts(c, max);
    }
}

/// Cuts a functionResponse's output and error over `max` characters, recording in
/// `_original_chars` the length of the one the result shows (`fill_result`: the error when
/// there is one). A source's own `_original_chars` is dropped: only this read's cut is one.
fn shrink_parts(parts: &mut Value, max: Option<usize>) {
    let items: Vec<&mut Value> = match parts {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(_) => vec![parts],
        _ => return,
    };
    for p in items {
        let Some(fr) = p.get_mut("functionResponse") else {
            continue;
        };
        if let Some(o) = fr.as_object_mut() {
            o.remove("_original_chars");
        }
        let Some(max) = max else {
            continue;
        };
        let mut cut = None;
        if let Some(resp) = fr.get_mut("response") {
            let shown = if resp.get("error").is_some_and(|e| !e.is_null()) {
                "error"
            } else {
                "output"
            };
            for key in ["output", "error"] {
                if let Some(Value::String(s)) = resp.get_mut(key) {
                    let n = s.chars().count();
                    if n > max {
                        *s = crate::text::trim_output(s, max);
                        if key == shown {
                            cut = Some(n);
                        }
                    }
                }
            }
        }
        if let (Some(n), Some(o)) = (cut, fr.as_object_mut()) {
            o.insert("_original_chars".into(), json!(n));
        }
    }
}

/// The kind of one of the CLI's own lines (`info`, `warning`, `error`): the info line the TUI
/// adds when the person cancels a request (Esc, or refusing every call of an answer) is an
/// interruption.
fn gemini_line_kind(kind: &str, text: &str) -> MessageKind {
    match kind {
        "warning" => MessageKind::Warning,
        "error" => MessageKind::Error,
        _ if text == "Request cancelled." => MessageKind::Interruption,
        _ => MessageKind::Info,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_exit_codes_are_read_from_gemini_outputs_only() {
        assert_eq!(
            exit_code(
                "<untrusted_context>\nOutput: no\nExit Code: 2\nProcess Group PGID: 1\n</untrusted_context>"
            ),
            Some(2)
        );
        assert_eq!(exit_code("Command: ls\nOutput: x\nExit Code: 0"), Some(0));
        assert_eq!(exit_code("some tool said\nExit Code: 3"), None);
    }
}
