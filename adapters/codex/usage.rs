//! How full Codex's context is: its newest `token_count` event, read from the end of the rollout.

use std::path::Path;

use serde_json::Value;

use crate::jsonl::{may_hold, tail_rfind};
use crate::model::RecordedUsage;

/// How far back from the end of a rollout to look: Codex writes a `token_count` event after
/// every request, so only a run of lines longer than this hides the newest one.
const TAIL: u64 = 8 << 20;

/// The newest `token_count` event that carries usage (`info`; events with only rate limits have
/// none) decides: the last request's total tokens (what the context holds now, as Codex's own
/// "context left" counts it) and `model_context_window`, or nothing when its `info` has no
/// `last_token_usage` (so a file that never records it is not read to its start).
pub fn recorded_usage(path: &Path) -> Option<RecordedUsage> {
    tail_rfind(path, TAIL, |line| {
        if !may_hold(line, b"\"token_count\"") {
            return None;
        }
        let v: Value = serde_json::from_slice(line).ok()?;
        let p = v.get("payload").unwrap_or(&v);
        if p.get("type").and_then(Value::as_str) != Some("token_count") {
            return None;
        }
        let info = p.get("info").filter(|i| i.is_object())?;
        let usage = info.get("last_token_usage").and_then(|last| {
            let tokens = last
                .get("total_tokens")
                .and_then(crate::jsonl::as_count)
                .or_else(|| {
                    let n = |k: &str| last.get(k).and_then(crate::jsonl::as_count).unwrap_or(0);
                    Some(n("input_tokens") + n("output_tokens"))
                })?;
            Some(RecordedUsage {
                tokens,
                window: info
                    .get("model_context_window")
                    .and_then(crate::jsonl::as_count)
                    .filter(|w| *w > 0),
                model: None,
            })
        });
        Some(usage)
    })
    .ok()
    .flatten()
    .flatten()
}
