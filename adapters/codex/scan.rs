//! The cheap listing of Codex sessions. Each line is deserialized into the few fields the
//! listing needs (`jsonl::fields`): tool outputs, tool arguments, reasoning and instructions are
//! skipped by the parser, never built. The rules are the reader's (`read::read_lines`): the
//! first `session_meta` gives id, cwd and start, wherever it is; the conversation is the
//! response items', else the events'; so `list` says what `show` reads whatever the layout of
//! the JSON. Titles from `session_index.jsonl` win over the files' (see `Store::index_titles`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::de::MapAccess;
use walkdir::WalkDir;

use crate::jsonl::fields::{self, Fields, Scalar, Str, Val};
use crate::jsonl::scan_lines;
use crate::model::{RelaySource, Summary, TimeSpan, Timestamp};
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

/// The fields the listing reads of a line, of its `payload` and of an event's `item`: one set
/// for all three, since the older shape writes the meta and the items bare.
#[derive(Default)]
struct Record<'a> {
    /// Present (with any value) or absent: the older shape's meta line has no `type`.
    kind: Option<Str<'a>>,
    /// Present (with any value) or absent: an envelope line has a `payload`.
    payload: Option<Box<Val<'a, Record<'a>>>>,
    id: Option<Str<'a>>,
    timestamp: Scalar<'a>,
    record_type: Str<'a>,
    cwd: Str<'a>,
    role: Str<'a>,
    content: Val<'a, Part<'a>>,
    message: Str<'a>,
    item: Option<Box<Val<'a, Record<'a>>>>,
    /// The record session-relay writes into the meta of a relayed rollout.
    session_relay: Option<serde_json::Value>,
}

impl<'de> Fields<'de> for Record<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = Some(map.next_value()?),
            "payload" => self.payload = Some(Box::new(map.next_value()?)),
            "id" => self.id = Some(map.next_value()?),
            "timestamp" => self.timestamp = map.next_value()?,
            "record_type" => self.record_type = map.next_value()?,
            "cwd" => self.cwd = map.next_value()?,
            "role" => self.role = map.next_value()?,
            "content" => self.content = map.next_value()?,
            "message" => self.message = map.next_value()?,
            "item" => self.item = Some(Box::new(map.next_value()?)),
            "session_relay" => self.session_relay = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl Record<'_> {
    fn kind(&self) -> Option<&str> {
        self.kind.as_ref().and_then(Str::get)
    }
}

/// A content part: its type and text.
#[derive(Default)]
struct Part<'a> {
    kind: Str<'a>,
    text: Str<'a>,
}

impl<'de> Fields<'de> for Part<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "text" => self.text = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The text of a message's content, as `read::text_parts` renders it.
fn text_parts(content: &Val<Part>) -> String {
    match content {
        Val::Str(s) => s.to_string(),
        Val::List(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Val::Obj(part) => match part.kind.get()? {
                    "input_text" | "output_text" | "text" | "Text" | "summary_text"
                    | "reasoning_text" => part.text.owned(),
                    "input_image" => Some("[image]".to_string()),
                    other => Some(format!("[{other}]")),
                },
                Val::Str(s) => Some(s.to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[derive(Default, PartialEq)]
enum Shape {
    #[default]
    Unknown,
    Envelope,
    PreEnvelope,
}

/// What the listing learns from the lines, in the order the reader learns it.
#[derive(Default)]
struct Scan {
    relay_of: Option<RelaySource>,
    shape: Shape,
    metas: usize,
    id: Option<String>,
    cwd: Option<String>,
    start: Option<Timestamp>,
    times: TimeSpan,
    /// User and assistant messages among the response items, and the first user prompt.
    items: usize,
    item_prompt: Option<String>,
    /// The same among the events (the conversation when no response item carries it).
    events: usize,
    event_prompt: Option<String>,
}

impl Scan {
    fn line(&mut self, line: &Record) {
        let ts = || {
            line.timestamp
                .to_value()
                .and_then(|v| Timestamp::from_value(&v))
        };
        // As `times.see(&ts())`, without building a timestamp for every line.
        match &line.timestamp {
            Scalar::Str(s) if !s.is_empty() => self.times.see_str(s),
            Scalar::Num(_) => {
                if let Some(t) = ts() {
                    self.times.see(&t);
                }
            }
            _ => {}
        }
        let empty = Record::default();
        match (line.kind(), &line.payload) {
            (Some(kind), Some(payload)) => {
                if self.shape == Shape::Unknown {
                    self.shape = Shape::Envelope;
                }
                let p = payload.obj().unwrap_or(&empty);
                match kind {
                    "session_meta" => self.meta(p, ts()),
                    "response_item" => self.item(p),
                    "event_msg" => self.event(p),
                    "turn_context" if self.cwd.is_none() => self.cwd = p.cwd.owned(),
                    _ => {}
                }
            }
            _ if self.shape == Shape::Unknown && line.id.is_some() && line.kind.is_none() => {
                self.shape = Shape::PreEnvelope;
                self.meta(line, ts());
            }
            _ if line.record_type.get().is_some() => {}
            (Some(_), _) if self.shape == Shape::PreEnvelope => self.item(line),
            _ => {}
        }
    }

    fn meta(&mut self, p: &Record, ts: Option<Timestamp>) {
        self.metas += 1;
        // A resumed or forked rollout can repeat its ancestors' meta lines: the first wins.
        if self.metas > 1 {
            return;
        }
        if let Some(id) = p.id.as_ref().and_then(Str::owned) {
            self.id = Some(id);
        }
        self.start = p
            .timestamp
            .to_value()
            .and_then(|v| Timestamp::from_value(&v))
            .or(ts);
        self.cwd = p.cwd.owned();
        self.relay_of = p
            .session_relay
            .as_ref()
            .and_then(RelaySource::from_provenance);
    }

    fn item(&mut self, p: &Record) {
        if p.kind() != Some("message") {
            return;
        }
        match p.role.get().unwrap_or("user") {
            "user" => {
                let text = text_parts(&p.content);
                if super::is_injected_user_text(&text) {
                    // Files older than session_meta's `cwd` state it only here.
                    if self.cwd.is_none() {
                        self.cwd = super::read::tag_value(&text, "cwd");
                    }
                } else {
                    self.items += 1;
                    first_prompt(&mut self.item_prompt, text);
                }
            }
            "assistant" => self.items += 1,
            _ => {}
        }
    }

    fn event(&mut self, p: &Record) {
        match p.kind().unwrap_or_default() {
            "user_message" => {
                let text = p.message.get().unwrap_or_default();
                if !super::is_injected_user_text(text) {
                    self.events += 1;
                    first_prompt(&mut self.event_prompt, text.to_string());
                }
            }
            "agent_message" => self.events += 1,
            "item_completed" => {
                let item = p.item.as_deref().and_then(Val::obj);
                match item.and_then(Record::kind) {
                    Some("UserMessage") => {
                        self.events += 1;
                        let text = text_parts(&item.expect("an item").content);
                        first_prompt(&mut self.event_prompt, text);
                    }
                    Some("AgentMessage") => self.events += 1,
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

fn first_prompt(slot: &mut Option<String>, text: String) {
    if slot.is_none() && !text.trim().is_empty() {
        *slot = Some(super::unescaped_user_text(text));
    }
}

/// The id of a rollout whose first line is its `session_meta`, as `summarize` gives it (the
/// first meta line's id), from that line alone.
pub fn id_from_first_line(path: &Path) -> Option<String> {
    if super::read::is_single_document(path).ok()? {
        return None;
    }
    let mut scan = Scan::default();
    scan_lines(path, |_, text| {
        if let Some(line) = fields::parse::<Record>(text) {
            scan.line(&line);
        }
        false
    })
    .ok()?;
    (scan.metas == 1).then_some(scan.id).flatten()
}

pub fn summarize(path: &Path) -> Result<Summary> {
    let archived = super::is_archived(path);
    let size = std::fs::metadata(path)?.len();
    if super::read::is_single_document(path)? {
        // The TypeScript era's single document: small and rare, so read it properly.
        let s = super::read::read(path, None, Default::default())?;
        return Ok(Summary {
            archived,
            relay_of: s
                .extra
                .get("session_relay")
                .and_then(RelaySource::from_provenance),
            ..Summary::of_session(&s, path, size)
        });
    }
    let mut scan = Scan::default();
    scan_lines(path, |_, text| {
        // The reader skips lines that are not JSON.
        if let Some(line) = fields::parse::<Record>(text) {
            scan.line(&line);
        }
        true
    })?;
    // The conversation is the response items' when they carry one, else the events'.
    let (messages, prompt) = if scan.items > 0 {
        (scan.items, scan.item_prompt)
    } else {
        (scan.events, scan.event_prompt)
    };
    let (created, updated) = super::read::created_and_updated(scan.start, scan.times);
    Ok(Summary {
        id: scan
            .id
            .or_else(|| super::id_from_file_name(path))
            .unwrap_or_else(|| {
                path.file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            }),
        agent: super::NAME.to_string(),
        path: path.to_path_buf(),
        cwd: scan.cwd,
        title: prompt.map(|p| one_line(&p)),
        created,
        updated,
        messages,
        size,
        archived,
        parent_id: None,
        subagents: 0,
        relay_of: scan.relay_of,
    })
}
