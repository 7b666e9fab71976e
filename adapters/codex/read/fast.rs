//! The reader's fast path: a response item of the kinds a rollout is mostly made of (messages,
//! reasoning, function and custom tool calls and their outputs), deserialised straight into
//! the fields the reader uses, without a `Value` tree for the line: a tool output is read from
//! the line's text and cut there (see `jsonl::pruned::cut_string`). Any other line, and any
//! line it does not fully know (a key twice, a value of an unexpected type, an output that is
//! not a plain text), it leaves to the general path by returning `None`. Both paths build the
//! item's messages with the same functions; a unit test compares them on every line of every
//! Codex fixture and variants of each.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{
    At, Mapped, arguments_input, call_item, exit_code_in_text, message_item, output_item,
    reasoning_item, text_parts,
};
use crate::adapter::OutputCut;
use crate::model::Timestamp;

type Str<'a> = Option<Cow<'a, str>>;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    timestamp: Str<'a>,
    #[serde(default, borrow)]
    payload: Option<Item<'a>>,
}

/// A line's payload: a response item, or an event (whose `item` and `changes` are the only
/// other fields read).
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
    /// An event's item: only its type is read here.
    #[serde(default, borrow)]
    item: Option<EventItem<'a>>,
    /// A patch event's files: there, whatever they are (such events take the general path).
    #[serde(default, deserialize_with = "crate::jsonl::present")]
    changes: Option<IgnoredAny>,
    #[serde(default, borrow)]
    role: Str<'a>,
    /// A message's parts, and reasoning's raw text: small, read as the general path reads them.
    #[serde(default)]
    content: Option<Value>,
    #[serde(default, borrow)]
    phase: Str<'a>,
    #[serde(default)]
    summary: Option<Value>,
    /// There and not `null`: only that is read.
    #[serde(default)]
    encrypted_content: Option<IgnoredAny>,
    #[serde(default, borrow)]
    name: Str<'a>,
    #[serde(default, borrow)]
    arguments: Str<'a>,
    #[serde(default, borrow)]
    input: Str<'a>,
    #[serde(default, borrow)]
    call_id: Str<'a>,
    #[serde(default, borrow)]
    id: Str<'a>,
    /// A tool output, still as JSON text: cut while it is unescaped.
    #[serde(default, borrow)]
    output: Option<&'a RawValue>,
    #[serde(default)]
    success: Option<bool>,
    /// The key the general path's cut writes beside an output: a source that has it itself
    /// goes that way.
    #[serde(
        rename = "_original_chars",
        default,
        deserialize_with = "crate::jsonl::present"
    )]
    original_chars: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct EventItem<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
}

/// What the general path hands on for line `no` when it is a line the fast path knows, else
/// `None`. `cut` is the reader's `State`'s; `conversation_seen` says that
/// response items carrying the conversation were applied before this line's block (it never
/// goes back to false, so it holds when this line is applied too).
pub(super) fn line(
    no: usize,
    text: &str,
    cut: Option<OutputCut>,
    conversation_seen: bool,
) -> Option<Mapped> {
    #[cfg(test)]
    if tests::GENERAL_ONLY.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    let line: Line = serde_json::from_str(text).ok()?;
    let ts = line
        .timestamp
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(Timestamp::parse);
    let p = line.payload?;
    if p.original_chars.is_some() {
        return None;
    }
    match line.kind.as_ref() {
        "response_item" => item(no, p, ts, cut),
        "event_msg" => event(p, ts, conversation_seen),
        // Usage records are counted, whatever they hold.
        kind @ ("token_usage_record" | "world_state") => {
            Some(Mapped::Skipped(ts, kind.to_string()))
        }
        _ => None,
    }
}

/// An event the reader only counts, or (once response items carry the conversation) one whose
/// conversation it no longer needs; events that touch files go the general way.
fn event(p: Item, ts: Option<Timestamp>, conversation_seen: bool) -> Option<Mapped> {
    let kind = p.kind.as_deref()?;
    let file_change = match kind {
        "patch_apply_begin" | "patch_apply_end" => p.changes.is_some(),
        "item_completed" => p
            .item
            .as_ref()
            .is_some_and(|i| i.kind.as_deref() == Some("FileChange")),
        _ => false,
    };
    if file_change {
        return None;
    }
    if !super::CONVERSATION_EVENTS.contains(&kind) {
        return Some(Mapped::Skipped(ts, format!("event_msg:{kind}")));
    }
    conversation_seen.then_some(Mapped::LateEvent(ts))
}

/// A response item (see `line`).
fn item(no: usize, p: Item, ts: Option<Timestamp>, cut: Option<OutputCut>) -> Option<Mapped> {
    let at = At { no, ts: ts.clone() };
    let mut out = Vec::new();
    match p.kind.as_deref()? {
        "message" => message_item(
            &mut out,
            &at,
            text_parts(p.content.as_ref()),
            p.role.as_deref().unwrap_or("user"),
            p.phase.as_deref(),
        ),
        "reasoning" => reasoning_item(
            &mut out,
            &at,
            text_parts(p.summary.as_ref()),
            text_parts(p.content.as_ref()),
            p.encrypted_content.is_some(),
        ),
        kind @ ("function_call" | "custom_tool_call") => {
            let (input, content) = if kind == "function_call" {
                (
                    arguments_input(p.arguments.as_deref().unwrap_or_default()),
                    String::new(),
                )
            } else {
                let input = p.input.as_deref().unwrap_or_default().to_string();
                (Value::String(input.clone()), input)
            };
            let call_id = p.call_id.as_deref().or(p.id.as_deref());
            let name = p.name.as_deref().unwrap_or("?");
            call_item(&mut out, &at, kind, name, input, content, call_id);
        }
        "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
            let (content, original) = match p.output {
                None => (String::new(), None),
                Some(raw) => output_text(raw, cut.map(|c| c.max))?,
            };
            let exit = exit_code_in_text(&content);
            output_item(
                &mut out,
                &at,
                (content, exit),
                p.call_id.as_deref(),
                p.success == Some(false),
                original,
                cut,
            );
        }
        _ => return None,
    }
    Some(Mapped::Item(ts, out))
}

/// A tool output given as a JSON string, as the pruned parse keeps it (cut to `max`, with its
/// full length when cut); `None` for any other JSON, and for a text that is itself a JSON
/// document (older rollouts wrap the output and its exit code in one).
fn output_text(raw: &RawValue, max: Option<usize>) -> Option<(String, Option<usize>)> {
    struct Cut(Option<usize>);
    impl Visitor<'_> for Cut {
        type Value = Option<(String, Option<usize>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a text")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            if s.trim_start().starts_with('{') {
                return Ok(None);
            }
            Ok(Some(match self.0 {
                Some(max) => crate::jsonl::pruned::cut_string(s, max, true),
                None => (s.to_string(), None),
            }))
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de::Deserializer::deserialize_str(&mut de, Cut(max)).ok()?
}

#[cfg(test)]
mod tests {
    use super::super::{State, apply_mapped, envelope_line, mapped, prune};
    use super::*;
    use crate::jsonl::str_field;
    use crate::jsonl::variants::{fixture_lines, written_ways};
    use crate::model::{Message, Role, Session};
    use serde_json::json;

    /// What a line does to a session and the reader's state, from either path. `seen` says
    /// whether response items already carried the conversation; the events gathered so far
    /// hold one message, to see whether they are dropped.
    fn effect(m: Mapped, seen: bool) -> Value {
        let mut session = Session::new("codex", "codex-rollout", "id");
        let mut state = State {
            has_response_conversation: seen,
            event_messages: vec![Message::new(Role::User, "earlier")],
            ..Default::default()
        };
        let ts = match m {
            Mapped::Line(ts, v) => {
                let (Some(kind), Some(p)) = (str_field(&v, "type"), v.get("payload")) else {
                    return json!("not an envelope line");
                };
                envelope_line(&mut session, &mut state, 1, kind, p, ts.clone());
                ts
            }
            other => {
                let ts = other.time().cloned();
                apply_mapped(other, &mut session, &mut state);
                ts
            }
        };
        json!({
            "time": serde_json::to_value(ts).unwrap(),
            "session": serde_json::to_value(&session).unwrap(),
            "events": serde_json::to_value(&state.event_messages).unwrap(),
            "conversation": state.has_response_conversation,
            "todos": serde_json::to_value(&state.todos).unwrap(),
            "model": state.last_model,
            "meta_seen": state.meta_seen,
        })
    }

    fn lines() -> Vec<String> {
        let mut out = Vec::new();
        for (line, v) in fixture_lines(&["codex", "fuzz-regressions"]) {
            out.extend(written_ways(&line, &v));
            let Value::Object(o) = v else { continue };
            if o.get("type").and_then(Value::as_str) == Some("event_msg") {
                let events: [Value; 9] = [
                    json!({"type": "patch_apply_end", "changes": {"src/a.rs": {}, "/abs/b.rs": {}}}),
                    json!({"type": "patch_apply_begin", "changes": null}),
                    json!({"type": "patch_apply_begin"}),
                    json!({"type": "item_completed", "item": {"type": "FileChange", "changes": {"c.rs": {}}}}),
                    json!({"type": "item_completed", "item": {"type": "CommandExecution", "id": "x", "command": "ls", "aggregated_output": "out".repeat(500)}}),
                    json!({"type": "item_completed", "item": {"type": 3}}),
                    json!({"type": "item_completed", "item": null}),
                    json!({"type": "agent_message", "message": "done ✓"}),
                    json!({"message": "no type"}),
                ];
                for payload in events {
                    let mut changed = o.clone();
                    changed.insert("payload".into(), payload);
                    out.push(Value::Object(changed).to_string());
                }
            }
            if o.get("type").and_then(Value::as_str) != Some("response_item") {
                continue;
            }
            // The envelope's time in the other shapes the general path reads.
            for ts in [json!(1764460800123u64), Value::Null, json!(""), json!(7.5)] {
                let mut changed = o.clone();
                changed.insert("timestamp".into(), ts);
                out.push(Value::Object(changed).to_string());
            }
            let mut changed = o.clone();
            changed.insert("payload".into(), Value::Null);
            out.push(Value::Object(changed).to_string());
            // The payload's fields in every shape either path must take or leave.
            let edits: [(&str, Option<Value>); 25] = [
                ("success", Some(json!(false))),
                ("success", Some(json!("false"))),
                ("output", Some(Value::Null)),
                (
                    "output",
                    Some(json!([{"type": "input_text", "text": "a part"}])),
                ),
                ("output", Some(json!({"content": "wrapped"}))),
                ("output", Some(json!(12))),
                (
                    "output",
                    Some(json!(
                        "  {\"output\": \"x\", \"metadata\": {\"exit_code\": 3}}"
                    )),
                ),
                (
                    "output",
                    Some(json!("Exit code: 2\nWall time: 1s\nOutput:\nboom ✗")),
                ),
                (
                    "output",
                    Some(json!("Process exited with code 0\n".repeat(300))),
                ),
                ("type", None),
                ("type", Some(json!(5))),
                ("content", Some(Value::Null)),
                ("content", Some(json!("plain content"))),
                (
                    "content",
                    Some(json!([7, "loose", {"type": "input_image"}, {"text": "no type"}])),
                ),
                ("phase", Some(json!("final_answer"))),
                ("role", Some(json!("developer"))),
                ("role", None),
                ("encrypted_content", Some(Value::Null)),
                ("encrypted_content", Some(json!("gAAAA"))),
                ("arguments", Some(json!("not json {"))),
                ("arguments", Some(json!({"cmd": ["ls"]}))),
                ("call_id", None),
                ("name", Some(json!("update_plan"))),
                (
                    "summary",
                    Some(json!([{"type": "summary_text", "text": "thought"}])),
                ),
                ("_original_chars", Some(json!(100_000))),
            ];
            for (key, value) in edits {
                let mut changed = o.clone();
                if let Some(Value::Object(p)) = changed.get_mut("payload") {
                    match value {
                        Some(v) => drop(p.insert(key.into(), v)),
                        None => drop(p.remove(key)),
                    }
                    out.push(Value::Object(changed).to_string());
                }
            }
            // A key written twice: the general path takes the last.
            let text = Value::Object(o.clone()).to_string();
            out.push(text.replacen("\"payload\":{", "\"payload\":{\"type\":\"other\",", 1));
        }
        out
    }

    /// Set to have every line take the general path. Both paths give the same, so other tests
    /// that read meanwhile are not affected, but the test counting which lines take the fast
    /// path holds `SWITCH` while it counts.
    pub(super) static GENERAL_ONLY: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);
    static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A rollout of many blocks, read with and without the fast path, gives the same session:
    /// this covers what the reader hands the fast path between blocks (whether response items
    /// already carried the conversation).
    #[test]
    fn a_long_rollout_reads_the_same_without_the_fast_path() {
        use std::sync::atomic::Ordering::Relaxed;
        let _switch = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex");
        let mut files: Vec<std::path::PathBuf> = walkdir::WalkDir::new(&root)
            .sort_by_file_name()
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.retain(|p| !p.ends_with("session_index.jsonl"));
        let mut head = String::new();
        let mut body = String::new();
        for f in &files {
            for l in std::fs::read_to_string(f).unwrap_or_default().lines() {
                let Ok(v) = serde_json::from_str::<Value>(l) else {
                    continue;
                };
                if v.get("type").and_then(Value::as_str) == Some("session_meta") {
                    if head.is_empty() {
                        head = format!("{l}\n");
                    }
                } else {
                    body.push_str(l);
                    body.push('\n');
                }
            }
        }
        assert!(!head.is_empty() && body.len() > 10_000);
        // Events that carry the conversation first, then enough rounds for several blocks.
        let mut text = head;
        text.push_str(
            "{\"timestamp\":\"2026-11-30T00:00:00.000Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"user_message\",\"message\":\"first\"}}\n",
        );
        while text.len() < 10 << 20 {
            text.push_str(&body);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout-2026-11-30T00-00-00-long.jsonl");
        std::fs::write(&path, &text).unwrap();
        for opts in crate::text::test_cases(
            [
                crate::adapter::ReadOptions::default(),
                crate::adapter::ReadOptions {
                    max_tool_output: Some(8000),
                    ..Default::default()
                },
                crate::adapter::ReadOptions {
                    max_tool_output: Some(8000),
                    full_tail_tokens: Some(30_000),
                    ..Default::default()
                },
            ],
            2,
        ) {
            let read = |general_only: bool| {
                GENERAL_ONLY.store(general_only, Relaxed);
                let s = super::super::read_lines(&path, "long", opts.clone()).unwrap();
                GENERAL_ONLY.store(false, Relaxed);
                serde_json::to_value(&s).unwrap()
            };
            let (fast, general) = (read(false), read(true));
            assert!(fast["messages"].as_array().unwrap().len() > 1000);
            assert!(fast == general, "the two paths differ with {opts:?}");
        }
    }

    #[test]
    fn the_fast_path_gives_what_the_general_path_gives() {
        let _switch = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
        let lines = lines();
        assert!(lines.len() > 1000, "only {} lines", lines.len());
        let lines = crate::text::test_sample(lines.iter().enumerate(), 8);
        let (mut taken, mut items, mut items_taken) = (0, 0, 0);
        for &(i, text) in &lines {
            let mask = crate::adapter::WordMask("e");
            for (max, reduced, mask) in [
                (Some(40), true, None),
                (Some(1000), false, None),
                (None, false, None),
                (
                    Some(8000),
                    true,
                    Some(&mask as &dyn crate::adapter::OutputMask),
                ),
            ] {
                let cut = max.map(|max| OutputCut { max, reduced, mask });
                let parse = || match max {
                    Some(m) => crate::jsonl::pruned::parse(text.as_bytes(), &prune(m)),
                    None => serde_json::from_str(text),
                };
                let Ok(value) = parse() else {
                    continue;
                };
                let is_item = matches!(mapped(i + 1, value, cut), Mapped::Item(..));
                items += usize::from(is_item);
                for seen in [false, true] {
                    let Some(fast) = line(i + 1, text, cut, seen) else {
                        continue;
                    };
                    taken += 1;
                    items_taken += usize::from(is_item && !seen);
                    let general = mapped(i + 1, parse().unwrap(), cut);
                    assert_eq!(
                        effect(fast, seen),
                        effect(general, seen),
                        "line {text} with max {max:?}, conversation seen: {seen}"
                    );
                }
            }
        }
        // Most response items take the fast path; the rest were compared above by being left
        // to the general one.
        assert!(
            items_taken * 10 > items * 7,
            "{items_taken} of {items} items"
        );
        assert!(taken > items_taken * 2, "{taken} lines in all");
    }
}
