//! The extractive summary of the turns a relay leaves out. Deterministic: no model is called.

use std::collections::HashSet;

use super::brief::sentences;
use crate::model::{Message, Role};
use crate::text::{one_line, truncate_chars};

/// Extractive summary points of left-out turns: requests, long answers, decisions.
pub fn summary_points(dropped: &[&[Message]]) -> Vec<String> {
    const DECISION_CUES: &[&str] = &[
        "decided",
        "decision",
        "we will",
        "we'll",
        "i will use",
        "going with",
        "chose",
        "instead of",
    ];
    let mut points = Vec::new();
    let mut seen = HashSet::new();
    let mut push = |p: String| {
        if seen.insert(p.clone()) {
            points.push(p);
        }
    };
    for turn in dropped {
        for m in turn.iter() {
            match m.role {
                Role::User => push(format!(
                    "User asked: {}",
                    truncate_chars(&one_line(&m.content), 100)
                )),
                Role::Assistant if m.kind().is_none() => {
                    let text = one_line(&m.content);
                    for sentence in sentences(&m.content) {
                        let lower = sentence.to_lowercase();
                        if DECISION_CUES.iter().any(|c| lower.contains(c)) {
                            push(format!(
                                "Decision: {}",
                                truncate_chars(&one_line(sentence), 150)
                            ));
                        }
                    }
                    if text.chars().count() > 200 {
                        push(format!("Assistant: {}", truncate_chars(&text, 150)));
                    }
                }
                // What a compaction left is the densest record of the work before it.
                Role::System if m.kind() == Some("carried_summary") => push(format!(
                    "Earlier summary: {}",
                    truncate_chars(&one_line(&m.content), 300)
                )),
                _ => {}
            }
        }
    }
    points
}

/// The summary text: all points when there are at most 15, else the first 5 and the last 5
/// with a marker for what was left out. `keep` narrows that further (to fit a token cap).
pub fn summary_text(points: &[String], keep: Option<usize>) -> String {
    let keep = match keep {
        None if points.len() <= 15 => points.len(),
        None => 5,
        Some(k) => k,
    };
    let mut lines: Vec<String> = Vec::new();
    if 2 * keep >= points.len() {
        lines.extend(points.iter().map(|p| format!("- {p}")));
    } else {
        lines.extend(points[..keep].iter().map(|p| format!("- {p}")));
        lines.push(format!(
            "- [… {} more points left out …]",
            points.len() - 2 * keep
        ));
        lines.extend(
            points[points.len() - keep..]
                .iter()
                .map(|p| format!("- {p}")),
        );
    }
    format!(
        "Summary of the earlier turns that were left out to fit this agent's context:\n{}",
        lines.join("\n")
    )
}
