//! How full Claude Code's context is: the `usage` of its newest answer, read from the end of the
//! transcript. Claude Code records no window; the config's `context_window` stands for it.

use std::path::Path;

use serde_json::Value;

use crate::jsonl::{may_hold, str_field, tail_rfind};
use crate::model::RecordedUsage;

/// How far back from the end of a transcript to look. Claude Code writes an answer's usage on
/// every line of it, so only a run of lines longer than this (one huge tool result after the
/// newest answer) hides it.
const TAIL: u64 = 8 << 20;

/// The newest answer's usage: input + cache creation + cache read tokens, which is what the
/// prompt held. Lines of one answer repeat the same usage, so the newest line stands for its
/// message. Sidechains (subagent work), API error lines and answers Claude Code made up
/// itself (`<synthetic>`) are not requests the session's context made, and are passed over;
/// the newest real answer decides, so a file whose answers record no usage is not read to its
/// start.
pub fn recorded_usage(path: &Path) -> Option<RecordedUsage> {
    tail_rfind(path, TAIL, |line| {
        if !may_hold(line, b"\"assistant\"") {
            return None;
        }
        // As the reader reads the line: a lone surrogate in its text does not hide its usage.
        let v: Value = serde_json::from_str(&crate::jsonl::reader_text(line).0).ok()?;
        if str_field(&v, "type") != Some("assistant")
            || v.get("isSidechain").and_then(Value::as_bool) == Some(true)
            || v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
        {
            return None;
        }
        let model = v.pointer("/message/model").and_then(Value::as_str);
        if model == Some("<synthetic>") {
            return None;
        }
        let usage = v.pointer("/message/usage").and_then(|u| {
            let n = |k: &str| u.get(k).and_then(crate::jsonl::as_count).unwrap_or(0);
            let tokens =
                n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens");
            (tokens > 0).then(|| RecordedUsage {
                tokens,
                window: None,
                model: model.map(str::to_string),
            })
        });
        Some(usage)
    })
    .ok()
    .flatten()
    .flatten()
}
