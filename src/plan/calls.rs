//! Tool calls as text, for targets without an equivalent tool and for older calls the fit
//! shortens: a transcript of the call with its result, or one line.

use serde_json::Value;

use crate::model::{Message, generic_key_arg};
use crate::text::{one_line as collapse, truncate_chars};

/// Longest tool output carried as text before it is cut to head and tail.
const TRANSCRIPT_OUTPUT_MAX: usize = 2000;

/// A tool call (and its result) as text the next model can read.
pub fn transcript(call: &Message, result: Option<&Message>) -> String {
    transcript_of(call, result).0
}

/// `transcript`, and the length the transcript would have with the output whole when the
/// output it holds is cut (a marker of ours in it): cut again to fit a budget, its marker then
/// counts what is missing of the output, as a cut tool result's does (`Message::cut_content`).
pub fn transcript_of(call: &Message, result: Option<&Message>) -> (String, Option<usize>) {
    use std::fmt::Write;
    let name = call.tool_name.as_deref().unwrap_or("?");
    let arg = truncate_chars(&collapse(&key_arg(call)), 300);
    // Sized once: a long session has a transcript for every call the target has no tool for.
    let body = result.map(|r| r.cut_content(TRANSCRIPT_OUTPUT_MAX));
    let mut text = String::with_capacity(
        name.len() + arg.len() + body.as_ref().map_or(32, |b| b.len() + 48) + 16,
    );
    let _ = write!(text, "[tool call: {name}] {arg}");
    let mut source_chars = None;
    match (result, body) {
        (Some(r), Some(body)) => {
            let status = if r.is_error { "error" } else { "ok" };
            let _ = write!(text, "\n[result: {status}, {} chars]", r.output_chars());
            let cut = matches!(body, std::borrow::Cow::Owned(_)) || r.original_chars().is_some();
            if !body.trim().is_empty() {
                text.push('\n');
                text.push_str(&body);
            }
            if cut {
                let around = text.chars().count() - body.chars().count();
                source_chars = Some(around + r.output_chars());
            }
        }
        _ => text.push_str("\n[no result was recorded]"),
    }
    (text, source_chars)
}

/// What a tool call did, in full: the reader's key argument, else a generic guess.
pub fn key_arg(call: &Message) -> String {
    match &call.key_arg {
        Some(k) => k.clone(),
        None => generic_key_arg(
            call.tool_input.as_ref().unwrap_or(&Value::Null),
            &call.content,
        ),
    }
}

/// A structured call and its result in one line: tool, key argument, ok/error, output size.
pub fn one_line(call: &Message, result: Option<&Message>) -> String {
    let name = call.tool_name.as_deref().unwrap_or("?");
    let arg = truncate_chars(&collapse(&key_arg(call)), 160);
    match result {
        Some(r) => format!(
            "[tool call: {name}] {arg} -> {}, {} chars of output",
            if r.is_error { "error" } else { "ok" },
            r.output_chars()
        ),
        None => format!("[tool call: {name}] {arg} -> no result"),
    }
}
