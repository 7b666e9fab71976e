//! The cheap listing of Copilot CLI sessions: each event is deserialised into the few fields
//! the listing needs (`jsonl::fields`), tool outputs and system prompts skipped by the parser
//! unread. The rules are the reader's (`read.rs`), so that `list` says what `show` reads.

use std::path::Path;

use anyhow::Result;
use serde::de::MapAccess;

use crate::jsonl::fields::{self, Fields, Str, Val};
use crate::model::{RelaySource, Summary, TimeSpan, Timestamp};

/// The fields the listing reads of an event.
#[derive(Default)]
struct Event<'a> {
    kind: Str<'a>,
    timestamp: Str<'a>,
    agent_id: Str<'a>,
    data: Option<Box<Val<'a, Data<'a>>>>,
    provenance: Option<serde_json::Value>,
}

impl<'de> Fields<'de> for Event<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "timestamp" => self.timestamp = map.next_value()?,
            "agentId" => self.agent_id = map.next_value()?,
            "data" => self.data = Some(Box::new(map.next_value()?)),
            "provenance" => self.provenance = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The fields the listing reads of an event's data.
#[derive(Default)]
struct Data<'a> {
    session_id: Str<'a>,
    start_time: Str<'a>,
    content: Str<'a>,
    relay: Str<'a>,
    context: Option<Box<Val<'a, Context<'a>>>>,
}

impl<'de> Fields<'de> for Data<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "sessionId" => self.session_id = map.next_value()?,
            "startTime" => self.start_time = map.next_value()?,
            "content" => self.content = map.next_value()?,
            super::RELAY_FIELD => self.relay = map.next_value()?,
            "context" => self.context = Some(Box::new(map.next_value()?)),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[derive(Default)]
struct Context<'a> {
    cwd: Str<'a>,
}

impl<'de> Fields<'de> for Context<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "cwd" => self.cwd = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// What the listing learns from the events, in the order the reader learns it.
#[derive(Default)]
struct Scan {
    started: bool,
    id: Option<String>,
    start: Option<Timestamp>,
    cwd: Option<String>,
    times: TimeSpan,
    messages: usize,
    prompt: Option<String>,
    relay_of: Option<RelaySource>,
}

impl Scan {
    fn event(&mut self, e: &Event) {
        if let Some(t) = e.timestamp.get().filter(|t| !t.is_empty()) {
            self.times.see_str(t);
        }
        if e.agent_id.get().is_some() {
            return;
        }
        let empty = Data::default();
        let data = e.data.as_deref().and_then(Val::obj).unwrap_or(&empty);
        let content = data.content.get();
        let words = content.filter(|c| !c.trim().is_empty());
        match e.kind.get().unwrap_or_default() {
            "session.start" if !self.started => {
                self.started = true;
                self.id = data.session_id.owned();
                self.start = data
                    .start_time
                    .get()
                    .filter(|t| !t.is_empty())
                    .map(Timestamp::parse)
                    .or_else(|| e.timestamp.get().map(Timestamp::parse));
                self.context(data);
            }
            "session.resume" => self.context(data),
            "user.message" if content.is_some() && !data.relay.is("context") => {
                self.messages += 1;
                if self.prompt.is_none() {
                    self.prompt = words.map(crate::text::one_line);
                }
            }
            "assistant.message" if words.is_some() => self.messages += 1,
            "session-relay" if self.relay_of.is_none() => {
                self.relay_of = e.provenance.as_ref().and_then(RelaySource::from_provenance);
            }
            _ => {}
        }
    }

    fn context(&mut self, data: &Data) {
        if self.cwd.is_none() {
            let ctx = data.context.as_deref().and_then(Val::obj);
            self.cwd = ctx.and_then(|c| c.cwd.owned()).filter(|c| !c.is_empty());
        }
    }
}

pub fn summarize(path: &Path) -> Result<Summary> {
    let size = std::fs::metadata(path)?.len();
    let mut scan = Scan::default();
    crate::jsonl::scan_lines(path, |_, text| {
        if let Some(e) = fields::parse::<Event>(text) {
            scan.event(&e);
        }
        true
    })?;
    let ws = super::workspace(path);
    let ws_str = |k: &str| ws.as_ref().and_then(|w| super::workspace_str(w, k));
    let id = super::folder_id(path).or(scan.id).unwrap_or_else(|| {
        path.file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    });
    Ok(Summary {
        id,
        agent: super::NAME.to_string(),
        path: path.to_path_buf(),
        cwd: scan.cwd.or_else(|| ws_str("cwd")),
        title: scan.prompt,
        created: scan.start.or_else(|| scan.times.first()),
        updated: scan.times.last(),
        messages: scan.messages,
        size,
        archived: false,
        parent_id: None,
        subagents: 0,
        relay_of: scan.relay_of,
    })
}
