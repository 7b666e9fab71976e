//! The cheap listing: walks `projects/` and reads each transcript as bytes, parsing JSON only
//! for the few lines that can hold the title. Tool outputs, which make up most of a large
//! transcript, are never parsed.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;
use walkdir::WalkDir;

use crate::jsonl::{contains, prefix, raw_str_field, scan_lines, str_field};
use crate::model::{RelaySource, Summary, Timestamp};
use crate::text::one_line;

/// Session files under `projects/`: top-level transcripts and subagent transcripts.
pub fn session_files(home: &Path) -> Vec<PathBuf> {
    let root = home.join("projects");
    WalkDir::new(&root)
        .min_depth(2)
        .max_depth(4)
        .follow_links(false)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                && (p.parent().and_then(Path::parent).map(Path::to_path_buf) == Some(root.clone())
                    || super::subagent_parent(p).is_some())
        })
        .collect()
}

/// How many bytes of a line hold the fields the scanner looks at (they precede the content).
const PREFIX: usize = 600;

pub fn summarize(path: &Path) -> Result<Summary> {
    let meta = std::fs::metadata(path)?;
    let stem = path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let parent_id = super::subagent_parent(path);
    let subagent = parent_id.is_some();
    let mut cwd = None;
    let mut first_ts = None;
    let mut last_ts = None;
    let mut custom_title = None;
    let mut ai_title = None;
    let mut first_prompt: Option<String> = None;
    let mut relay_of = None;
    // The chain (uuid, parent, timestamp, counts-as-message) of every conversation line, so that
    // the count follows the branch Claude Code loads, as `show` does.
    let mut chain: Vec<ChainLine> = Vec::new();
    scan_lines(path, |_, line| {
        let head = prefix(line, PREFIX);
        if let Some(ts) = raw_str_field(head, "timestamp") {
            if first_ts.is_none() {
                first_ts = Some(ts.clone());
            }
            last_ts = Some(ts);
        }
        if cwd.is_none() {
            cwd = raw_str_field(line, "cwd");
        }
        if contains(head, b"\"type\":\"custom-title\"") {
            custom_title =
                parse(line).and_then(|v| str_field(&v, "customTitle").map(str::to_string));
            return true;
        }
        if contains(head, b"\"type\":\"ai-title\"") {
            ai_title = parse(line).and_then(|v| {
                str_field(&v, "aiTitle")
                    .or_else(|| str_field(&v, "title"))
                    .map(str::to_string)
            });
            return true;
        }
        if contains(head, b"\"type\":\"session-relay\"") {
            relay_of = parse(line)
                .and_then(|v| v.get("provenance").and_then(RelaySource::from_provenance));
            return true;
        }
        if !subagent && contains(head, b"\"isSidechain\":true") {
            return true;
        }
        let user = contains(head, b"\"type\":\"user\"");
        let assistant = !user && contains(head, b"\"role\":\"assistant\"");
        if user || assistant {
            let counts = if user {
                let words = is_user_words(line, head);
                if words && first_prompt.is_none() {
                    first_prompt = parse(line).and_then(|v| user_text(&v));
                }
                words
            } else {
                contains(head, b"\"content\":[{\"type\":\"text\"")
            };
            chain.push(ChainLine {
                uuid: raw_str_field(line, "uuid"),
                parent: raw_str_field(head, "parentUuid"),
                timestamp: raw_str_field(line, "timestamp"),
                counts,
            });
        } else if contains(head, b"\"parentUuid\"") {
            chain.push(ChainLine {
                uuid: raw_str_field(line, "uuid"),
                parent: raw_str_field(head, "parentUuid")
                    .or_else(|| raw_str_field(line, "logicalParentUuid")),
                timestamp: None,
                counts: false,
            });
        }
        true
    })?;
    let messages = count_on_active_branch(&chain);
    Ok(Summary {
        id: stem,
        agent: super::NAME.to_string(),
        path: path.to_path_buf(),
        cwd,
        title: custom_title
            .or(ai_title)
            .or(first_prompt.map(|p| one_line(&p))),
        created: first_ts.as_deref().map(Timestamp::parse),
        updated: last_ts.as_deref().map(Timestamp::parse),
        messages,
        size: meta.len(),
        archived: false,
        parent_id,
        subagents: 0,
        relay_of,
    })
}

struct ChainLine {
    uuid: Option<String>,
    parent: Option<String>,
    /// Only set on user/assistant lines: the leaf is the newest of those.
    timestamp: Option<String>,
    counts: bool,
}

/// Messages on the branch that ends at the newest user/assistant line (see `read::active_lines`).
fn count_on_active_branch(chain: &[ChainLine]) -> usize {
    let by_uuid: std::collections::HashMap<&str, usize> = chain
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.uuid.as_deref().map(|u| (u, i)))
        .collect();
    let leaf = chain
        .iter()
        .enumerate()
        .filter(|(_, c)| c.timestamp.is_some())
        .max_by(|(ia, a), (ib, b)| {
            let t = |c: &ChainLine| c.timestamp.as_deref().and_then(crate::model::parse_time);
            t(a).cmp(&t(b)).then(ia.cmp(ib))
        })
        .map(|(i, _)| i);
    let mut seen = vec![false; chain.len()];
    let mut n = 0;
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if std::mem::replace(&mut seen[i], true) {
            break;
        }
        n += usize::from(chain[i].counts);
        cursor = chain[i]
            .parent
            .as_deref()
            .and_then(|p| by_uuid.get(p).copied());
    }
    n
}

fn parse(line: &[u8]) -> Option<Value> {
    serde_json::from_slice(line).ok()
}

/// A user line holding the person's own words (not a tool result, not injected context).
fn is_user_words(line: &[u8], head: &[u8]) -> bool {
    if contains(head, b"\"type\":\"tool_result\"")
        || contains(line, b"\"isMeta\":true")
        || contains(line, b"\"isCompactSummary\":true")
    {
        return false;
    }
    const INJECTED: &[&[u8]] = &[
        b"<command-name>",
        b"<command-message>",
        b"<local-command-",
        b"<task-notification>",
        b"[Request interrupted by user",
        b"<system-reminder>",
    ];
    for start in [b"\"content\":\"".as_slice(), b"\"text\":\"".as_slice()] {
        if let Some(i) = memchr::memmem::find(head, start) {
            let rest = &head[i + start.len()..];
            if INJECTED.iter().any(|p| rest.starts_with(p)) {
                return false;
            }
        }
    }
    true
}

fn user_text(v: &Value) -> Option<String> {
    match v.pointer("/message/content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items
            .iter()
            .find(|b| str_field(b, "type") == Some("text"))
            .and_then(|b| str_field(b, "text").map(str::to_string)),
        _ => None,
    }
    .filter(|s| !s.trim().is_empty())
}
