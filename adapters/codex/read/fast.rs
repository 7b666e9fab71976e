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

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
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
}

/// What the general path keeps of line `no` when it is a response item the fast path knows,
/// else `None`. `max_output` and `reduced` are the reader's `State`'s.
pub(super) fn item(
    no: usize,
    text: &str,
    max_output: Option<usize>,
    reduced: bool,
) -> Option<Mapped> {
    let line: Line = serde_json::from_str(text).ok()?;
    if line.kind != "response_item" {
        return None;
    }
    let p = line.payload?;
    let ts = line
        .timestamp
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(Timestamp::parse);
    let at = At { no, ts: ts.clone() };
    let mut out = Vec::new();
    match p.kind.as_ref() {
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
                Some(raw) => output_text(raw, max_output)?,
            };
            let exit = exit_code_in_text(&content);
            output_item(
                &mut out,
                &at,
                (content, exit),
                p.call_id.as_deref(),
                p.success == Some(false),
                original,
                (max_output, reduced),
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
    use super::super::{Op, mapped, prune};
    use super::*;
    use serde_json::json;

    /// What a line gives, in a form to compare: `None` when it is not a response item.
    fn describe(m: &Mapped) -> Option<Value> {
        let Mapped::Item(ts, ops) = m else {
            return None;
        };
        let ops: Vec<Value> = ops
            .iter()
            .map(|op| match op {
                Op::Push(m) => serde_json::to_value(m).unwrap(),
                Op::CwdIfNone(c) => json!({ "cwd_if_none": c }),
                Op::Conversation => json!("conversation"),
                Op::Todos(t) => json!({ "todos": serde_json::to_value(t).unwrap() }),
                Op::TouchPatchPath(p) => json!({ "touch": p }),
                Op::Unknown(k) => json!({ "unknown": k }),
            })
            .collect();
        Some(json!({ "time": serde_json::to_value(ts).unwrap(), "ops": ops }))
    }

    /// The line with every object's keys in reverse order.
    fn reversed(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .rev()
                    .map(|(k, x)| (k.clone(), reversed(x)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }

    /// Every string made `times` times longer (outputs over every cut, long texts).
    fn lengthened(v: &Value, times: usize) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (k.clone(), lengthened(x, times)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| lengthened(x, times)).collect()),
            Value::String(s) if s.len() > 8 => Value::String(s.repeat(times)),
            other => other.clone(),
        }
    }

    /// Non-ASCII characters written as `\u` escapes.
    fn escaped(text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
        out
    }

    fn lines() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut out = Vec::new();
        for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
            let entry = entry.unwrap();
            let p = entry.path();
            let in_codex = p
                .strip_prefix(&root)
                .unwrap()
                .iter()
                .next()
                .is_some_and(|d| d == "codex" || d == "fuzz-regressions");
            if !in_codex || p.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(p).unwrap_or_default().lines() {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                out.push(line.to_string());
                out.push(reversed(&v).to_string());
                out.push(lengthened(&v, 40).to_string());
                out.push(escaped(&serde_json::to_string_pretty(&v).unwrap()));
                let Value::Object(o) = v else { continue };
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
                let edits: [(&str, Option<Value>); 24] = [
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
        }
        out
    }

    #[test]
    fn the_fast_path_gives_what_the_general_path_gives() {
        let lines = lines();
        assert!(lines.len() > 1000, "only {} lines", lines.len());
        let mut taken = 0;
        let mut items = 0;
        for (i, text) in lines.iter().enumerate() {
            for (max, reduced) in [(Some(40), true), (Some(1000), false), (None, false)] {
                let value = match max {
                    Some(m) => crate::jsonl::pruned::parse(text.as_bytes(), &prune(m)),
                    None => serde_json::from_str(text),
                };
                let Ok(value) = value else {
                    continue;
                };
                let general = mapped(i + 1, value, max, reduced);
                items += usize::from(describe(&general).is_some());
                let Some(fast) = item(i + 1, text, max, reduced) else {
                    continue;
                };
                taken += 1;
                assert_eq!(
                    describe(&fast),
                    describe(&general),
                    "line {text} with max {max:?}"
                );
            }
        }
        // Most response items take the fast path; the rest were compared above by being left
        // to the general one.
        assert!(taken * 10 > items * 7, "{taken} of {items} items");
    }
}
