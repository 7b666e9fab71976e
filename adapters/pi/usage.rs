//! How full pi's context is: the `usage` of its newest answer, read from the end of the file
//! (the leaf's answer, as pi appends each turn at the end). pi records no window; the config's
//! `context_window` stands for it.

use std::path::Path;

use crate::jsonl::{as_count, str_field};
use crate::model::RecordedUsage;

/// The newest answer's prompt: input + cache read + cache write tokens, as the reader records
/// it. An answer without them (a relayed one, usage zero) decides too: what came before it is
/// not what the context holds now.
pub fn recorded_usage(path: &Path) -> Option<RecordedUsage> {
    crate::adapter::newest_usage(path, b"\"assistant\"", |v| {
        let m = v.get("message")?;
        if str_field(v, "type") != Some("message") || str_field(m, "role") != Some("assistant") {
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
}
