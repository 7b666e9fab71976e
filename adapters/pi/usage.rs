//! How full pi's context is: the `usage` of its newest answer, read from the end of the file
//! (the leaf's answer, as pi appends each turn at the end). pi records no window; the config's
//! `context_window` stands for it.

use std::path::Path;

use serde_json::Value;

use crate::jsonl::{as_count, may_hold, str_field, tail_rfind};
use crate::model::RecordedUsage;

/// How far back from the end to look: only a run of lines longer than this after the newest
/// answer (a huge tool result) hides it.
const TAIL: u64 = 8 << 20;

/// The newest answer's prompt: input + cache read + cache write tokens, as the reader records
/// it. An answer without them (a relayed one, usage zero) decides too: what came before it is
/// not what the context holds now.
pub fn recorded_usage(path: &Path) -> Option<RecordedUsage> {
    tail_rfind(path, TAIL, |line| {
        if !may_hold(line, b"\"assistant\"") {
            return None;
        }
        let v: Value = serde_json::from_str(&crate::jsonl::reader_text(line).0).ok()?;
        let m = v.get("message")?;
        if str_field(&v, "type") != Some("message") || str_field(m, "role") != Some("assistant") {
            return None;
        }
        let n = |k: &str| {
            m.get("usage")
                .and_then(|u| u.get(k))
                .and_then(as_count)
                .unwrap_or(0)
        };
        let tokens = n("input") + n("cacheRead") + n("cacheWrite");
        Some((tokens > 0).then(|| {
            RecordedUsage {
                tokens,
                window: None,
                model: str_field(m, "model")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            }
        }))
    })
    .ok()
    .flatten()
    .flatten()
}
