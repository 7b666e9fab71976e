//! The cheap listing of Codex sessions: the first line gives id, cwd and start time; the rest of
//! the file is scanned as bytes (line prefixes only) for the message count and last activity.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;
use walkdir::WalkDir;

use crate::jsonl::{contains, prefix, raw_str_field, scan_lines, str_field};
use crate::model::{RelaySource, Summary, Timestamp};
use crate::text::one_line;

fn is_rollout_name(p: &Path) -> bool {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    name.starts_with("rollout-")
        && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst") || name.ends_with(".json"))
}

pub fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["sessions", "archived_sessions"] {
        for e in WalkDir::new(home.join(dir))
            .follow_links(false)
            .into_iter()
            .filter_map(|e| e.ok())
        {
            if e.file_type().is_file() && is_rollout_name(e.path()) {
                out.push(e.into_path());
            }
        }
    }
    out
}

const PREFIX: usize = 400;

pub fn summarize(path: &Path) -> Result<Summary> {
    let archived = super::is_archived(path);
    let size = std::fs::metadata(path)?.len();
    if path.extension().is_some_and(|e| e == "json") {
        // The TypeScript era's single document: small and rare, so read it properly.
        let s = super::read::read(path, None, Default::default())?;
        return Ok(Summary {
            id: s.id.clone(),
            agent: super::NAME.to_string(),
            path: path.to_path_buf(),
            cwd: s.cwd.clone(),
            title: s.title.clone(),
            created: s.created.clone(),
            updated: s.updated.clone(),
            messages: s.message_count(),
            size,
            archived,
            parent_id: None,
            subagents: 0,
            // session-relay never writes this format.
            relay_of: None,
        });
    }
    let mut id = super::id_from_file_name(path);
    let mut cwd = None;
    let mut created = None;
    let mut last_ts = None;
    let mut first_prompt: Option<String> = None;
    let mut item_messages = 0usize;
    let mut event_messages = 0usize;
    let mut event_prompt: Option<String> = None;
    let mut first = true;
    let mut relay_of = None;
    scan_lines(path, |_, line| {
        let head = prefix(line, PREFIX);
        if first && !line.trim_ascii().is_empty() {
            first = false;
            if let Ok(v) = serde_json::from_slice::<Value>(line) {
                let meta = v.get("payload").unwrap_or(&v);
                if let Some(i) = str_field(meta, "id") {
                    id = Some(i.to_string());
                }
                cwd = str_field(meta, "cwd").map(str::to_string);
                created = meta
                    .get("timestamp")
                    .or_else(|| v.get("timestamp"))
                    .and_then(Timestamp::from_value);
                relay_of = meta
                    .get("session_relay")
                    .and_then(RelaySource::from_provenance);
            }
        }
        if cwd.is_none() && contains(head, b"<environment_context>") {
            // Files older than session_meta's `cwd` state it only in the injected context.
            cwd = between(line, b"<cwd>", b"</cwd>");
        }
        if let Some(ts) = raw_str_field(head, "timestamp") {
            last_ts = Some(ts);
        }
        if contains(head, b"\"type\":\"message\"") && !contains(head, b"\"event_msg\"") {
            let user = contains(head, b"\"role\":\"user\"");
            if user && !injected(head) {
                item_messages += 1;
                if first_prompt.is_none() {
                    first_prompt = serde_json::from_slice::<Value>(line).ok().and_then(|v| {
                        let p = v.get("payload").unwrap_or(&v);
                        first_text(p.get("content"))
                    });
                }
            } else if contains(head, b"\"role\":\"assistant\"") {
                item_messages += 1;
            }
        } else if contains(head, b"\"type\":\"user_message\"") {
            event_messages += 1;
            if event_prompt.is_none() {
                event_prompt = raw_str_field(line, "message");
            }
        } else if contains(head, b"\"type\":\"agent_message\"") {
            event_messages += 1;
        }
        true
    })?;
    let (messages, prompt) = if item_messages > 0 {
        (item_messages, first_prompt)
    } else {
        (event_messages, event_prompt)
    };
    Ok(Summary {
        id: id.unwrap_or_else(|| {
            path.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        }),
        agent: super::NAME.to_string(),
        path: path.to_path_buf(),
        cwd,
        title: prompt.map(|p| one_line(&p)),
        created,
        updated: last_ts.as_deref().map(Timestamp::parse),
        messages,
        size,
        archived,
        parent_id: None,
        subagents: 0,
        relay_of,
    })
}

fn between(line: &[u8], open: &[u8], close: &[u8]) -> Option<String> {
    let start = memchr::memmem::find(line, open)? + open.len();
    let len = memchr::memmem::find(&line[start..], close)?;
    let raw = String::from_utf8_lossy(&line[start..start + len]);
    Some(raw.trim().to_string()).filter(|s| !s.is_empty())
}

fn injected(head: &[u8]) -> bool {
    const PAT: &[u8] = b"\"text\":\"";
    match memchr::memmem::find(head, PAT) {
        Some(i) => {
            let rest = String::from_utf8_lossy(&head[i + PAT.len()..]);
            super::is_injected_user_text(&rest)
        }
        None => false,
    }
}

fn first_text(content: Option<&Value>) -> Option<String> {
    content?
        .as_array()?
        .iter()
        .find_map(|p| str_field(p, "text").map(str::to_string))
        .filter(|t| !t.trim().is_empty())
}
