//! The cheap listing of Gemini CLI sessions. A session file is a list of records that replace
//! and rewind each other, so the scan applies them like the reader does (`records::Conversation`),
//! but to light messages: each line is deserialised into only the fields the listing needs, and
//! tool calls, their results and everything else are skipped by the JSON lexer unread.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

// Checked as `Value` checks it (`IgnoredAny` lets a lone surrogate escape, a number out of
// range or deep nesting through): a line the reader finds malformed is one here too, so the
// listing counts what the reader reads and a fold's first pass agrees with its read.
use crate::jsonl::fields::Skip as IgnoredAny;
use serde_json::{Map, Value};

use super::records::{self, Conversation, PartView, Record};
use crate::model::{MessageKind, Summary};

/// Session files: `tmp/<project>/chats/session-*.jsonl` and `session-*.json`, and subagent
/// transcripts in `chats/<parent>/*.jsonl`, in every project folder (slugs and old hashes).
pub fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(projects) = std::fs::read_dir(super::tmp_dir(home)) else {
        return out;
    };
    for project in projects.filter_map(|e| e.ok()) {
        let chats = project.path().join("chats");
        let Ok(entries) = std::fs::read_dir(&chats) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let Ok(ft) = e.file_type() else { continue };
            let name = e.file_name().to_string_lossy().into_owned();
            if ft.is_file()
                && name.starts_with("session-")
                && (name.ends_with(".jsonl") || name.ends_with(".json"))
            {
                out.push(e.path());
            } else if ft.is_dir() {
                let Ok(subs) = std::fs::read_dir(e.path()) else {
                    continue;
                };
                for s in subs.filter_map(|s| s.ok()) {
                    if s.file_type().is_ok_and(|t| t.is_file())
                        && s.file_name().to_string_lossy().ends_with(".jsonl")
                    {
                        out.push(s.path());
                    }
                }
            }
        }
    }
    out.sort();
    out
}

pub fn summarize(path: &Path) -> Result<Summary> {
    let size = std::fs::metadata(path)?.len();
    let mut conv: Conversation<Light> = Conversation::default();
    let relay_of = apply_lines(path, &mut conv)?;
    let first_ts = conv.messages().find_map(|m| m.timestamp.as_deref());
    let last_ts = conv
        .messages()
        .filter_map(|m| m.timestamp.as_deref())
        .last();
    let (created, updated) = records::times(&conv.meta, first_ts, last_ts, relay_of.is_some());
    let counted = Counted::of(&conv);
    let id = conv
        .meta_str("sessionId")
        .map(str::to_string)
        .unwrap_or_else(|| {
            path.file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        });
    Ok(Summary {
        id,
        agent: super::NAME.to_string(),
        path: path.to_path_buf(),
        cwd: records::resolve_cwd(path, &conv.meta, counted.first_context.as_deref()),
        title: records::title(&conv.meta, counted.first_prompt.as_deref()),
        created,
        updated,
        messages: counted.messages,
        size,
        archived: false,
        parent_id: super::subagent_parent(path),
        subagents: 0,
        relay_of,
    })
}

/// Applies every line of the file to `conv` as a light record. Returns the relay the
/// provenance record names, when a relay wrote the file.
fn apply_lines(
    path: &Path,
    conv: &mut Conversation<Light>,
) -> Result<Option<crate::model::RelaySource>> {
    let mut reader = crate::jsonl::open(path)?;
    let mut buf = Vec::new();
    let mut relay_of = None;
    let mut line_no = 0usize;
    let mut offset = 0u64;
    loop {
        let (n, terminated) =
            crate::jsonl::read_line_bounded(&mut *reader, &mut buf, crate::jsonl::LONG_LINE)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let start = offset;
        offset += n as u64;
        if n > crate::jsonl::LONG_LINE {
            // Read from the file as the reader reads it (`super::long`).
            let bom = if line_no == 1 && buf.starts_with(crate::jsonl::BOM) {
                crate::jsonl::BOM.len()
            } else {
                0
            };
            let len = (n - bom - usize::from(terminated)) as u64;
            if let Ok(line) = super::long::line(path, start + bom as u64, len)
                && let Some((r, _)) = light_long(line)
            {
                conv.apply(r);
            }
            continue;
        }
        let bytes = if line_no == 1 {
            crate::jsonl::strip_bom(&buf)
        } else {
            &buf
        };
        let (text, _) = crate::jsonl::reader_text(bytes);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        // A relay writes its provenance record right after the metadata line.
        if line_no <= PROVENANCE_LINES && relay_of.is_none() && text.contains("\"session-relay\"") {
            relay_of = provenance_of(text);
        }
        if let Some(r) = light_record(text) {
            conv.apply(r);
        }
    }
    Ok(relay_of)
}

/// What the listing takes from a conversation's messages: how many count as messages, the
/// first prompt (for the title) and the first context (for the working directory).
struct Counted {
    messages: usize,
    first_prompt: Option<String>,
    first_context: Option<String>,
}

impl Counted {
    fn of(conv: &Conversation<Light>) -> Counted {
        let mut counted = Counted {
            messages: 0,
            first_prompt: None,
            first_context: None,
        };
        for m in conv.messages() {
            let views = m.views();
            match m.kind.as_str() {
                "user" => counted.user(records::split_user(&views, m.relay.as_deref())),
                kind => {
                    if records::counts_as_message(kind, &views, None) {
                        counted.messages += 1;
                    }
                }
            }
        }
        counted
    }

    /// A user message: its context parts, then its words, if any.
    fn user(&mut self, split: records::UserSplit) {
        for (k, text) in split.context {
            if k == MessageKind::Context && self.first_context.is_none() {
                self.first_context = Some(text);
            }
        }
        if let Some(w) = split.words {
            self.messages += 1;
            if self.first_prompt.is_none() && !w.trim().is_empty() {
                self.first_prompt = Some(w);
            }
        }
    }
}

/// A line as the listing reads it; `None`: not JSON.
pub(super) fn light_record(text: &str) -> Option<Record<Light>> {
    serde_json::from_str::<Raw>(text).ok().map(Raw::into_record)
}

/// A line longer than `LONG_LINE`, read from the file (`super::long::line`) as `light_record`
/// reads a line, and whether a `$set` or `messages` key in it repeats; `None`: not JSON.
pub(super) fn light_long(line: impl std::io::Read) -> Option<(Record<Light>, bool)> {
    let raw = serde_json::from_reader::<_, Raw>(line).ok()?;
    let repeated = raw.repeated_list;
    Some((raw.into_record(), repeated))
}

/// How many lines from the top the provenance record is looked for in.
const PROVENANCE_LINES: usize = 4;

fn provenance_of(line: &str) -> Option<crate::model::RelaySource> {
    let v: Value = serde_json::from_str(line).ok()?;
    if v.get("type").and_then(Value::as_str) != Some("session-relay") {
        return None;
    }
    crate::model::RelaySource::from_provenance(v.get("provenance")?)
}

// ------------------------------------------------------------------------- light records

/// A message as the listing needs it: its type, time, text parts and relay mark.
#[derive(Default)]
pub struct Light {
    kind: String,
    timestamp: Option<String>,
    parts: Vec<LightPart>,
    relay: Option<String>,
}

#[derive(Default)]
struct LightPart {
    text: Option<String>,
    thought: bool,
}

impl Light {
    fn views(&self) -> Vec<PartView<'_>> {
        self.parts
            .iter()
            .map(|p| PartView {
                text: p.text.as_deref(),
                thought: p.thought,
            })
            .collect()
    }
}

/// Every field of a line (or of a message in a list) the listing looks at; the rest is skipped.
#[derive(Default)]
struct Raw {
    id: Option<Value>,
    kind: Option<Value>,
    timestamp: Option<Value>,
    parts: Vec<LightPart>,
    relay: Option<Value>,
    rewind: Option<Value>,
    set: Option<Option<Box<Raw>>>,
    meta: Map<String, Value>,
    messages: Option<Vec<(String, Light)>>,
    /// Not an object at all.
    not_object: bool,
    /// A `$set` or `messages` key came more than once (here or under `$set`): the last wins,
    /// as in `Value`, which a long line's streamed read does not do (`super::long`).
    repeated_list: bool,
}

const META_KEYS: &[&str] = &[
    "sessionId",
    "projectHash",
    "startTime",
    "lastUpdated",
    "summary",
    "directories",
    "kind",
];

impl Raw {
    fn message(self) -> Option<(String, Light)> {
        let id = self.id.as_ref()?.as_str()?.to_string();
        Some((
            id,
            Light {
                kind: self
                    .kind
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                timestamp: self
                    .timestamp
                    .as_ref()
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                parts: self.parts,
                relay: self
                    .relay
                    .as_ref()
                    .and_then(Value::as_str)
                    .map(str::to_string),
            },
        ))
    }

    fn into_record(mut self) -> Record<Light> {
        if self.not_object {
            return Record::Other;
        }
        if let Some(Value::String(id)) = &self.rewind {
            return Record::Rewind(id.clone());
        }
        if self.id.as_ref().is_some_and(Value::is_string) {
            let (id, m) = self.message().expect("a string id");
            return Record::Message(id, m);
        }
        if let Some(Some(set)) = self.set.take() {
            // `$set` merges every key; the few the listing reads are kept.
            return Record::Set {
                meta: set.meta,
                messages: set.messages,
            };
        }
        let s = |k: &str| self.meta.get(k).is_some_and(Value::is_string);
        if s("sessionId") && s("projectHash") {
            return Record::Meta {
                meta: self.meta,
                messages: self.messages,
            };
        }
        Record::Other
    }
}

impl<'de> serde::Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

/// Accepts any JSON value: objects are read field by field, everything else is skipped.
struct RawVisitor;

macro_rules! skip_scalars {
    ($out:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($out)
        }
    };
}

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Gemini CLI record")
    }

    skip_scalars!(Raw {
        not_object: true,
        ..Default::default()
    });

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Raw, E> {
        Ok(Raw {
            not_object: true,
            ..Default::default()
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Raw {
            not_object: true,
            ..Default::default()
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut raw = Raw::default();
        let (mut sets, mut lists) = (0, 0);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "id" => raw.id = Some(map.next_value()?),
                "type" => raw.kind = Some(map.next_value()?),
                "timestamp" => raw.timestamp = Some(map.next_value()?),
                "content" => raw.parts = map.next_value::<Content>()?.0,
                "$rewindTo" => raw.rewind = Some(map.next_value()?),
                "$set" => {
                    sets += 1;
                    let set: Raw = map.next_value()?;
                    raw.repeated_list |= set.repeated_list;
                    raw.set = Some((!set.not_object).then(|| Box::new(set)));
                }
                "messages" => {
                    lists += 1;
                    raw.messages = map.next_value::<MessageList>()?.0;
                }
                k if k == super::RELAY_FIELD => raw.relay = Some(map.next_value()?),
                k if META_KEYS.contains(&k) => {
                    let v: Value = map.next_value()?;
                    raw.meta.insert(k.to_string(), v);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        raw.repeated_list |= sets > 1 || lists > 1;
        Ok(raw)
    }
}

/// A `messages` array: its elements with a string id, as light messages; anything else: none.
struct MessageList(Option<Vec<(String, Light)>>);

impl<'de> serde::Deserialize<'de> for MessageList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MessageList, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a message list")
            }
            skip_scalars!(MessageList(None));
            fn visit_str<E: de::Error>(self, _: &str) -> Result<MessageList, E> {
                Ok(MessageList(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MessageList, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MessageList(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MessageList, A::Error> {
                let mut out = Vec::new();
                while let Some(raw) = seq.next_element::<Raw>()? {
                    if let Some(m) = raw.message() {
                        out.push(m);
                    }
                }
                Ok(MessageList(Some(out)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A message's `content`: a string is one text part, an object one part, an array its parts.
struct Content(Vec<LightPart>);

impl<'de> serde::Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            skip_scalars!(Content(Vec::new()));
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content(vec![LightPart {
                    text: Some(s.to_string()),
                    ..Default::default()
                }]))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content, A::Error> {
                let part = PartVisitor.visit_map(map)?;
                Ok(Content(part.into_iter().collect()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut out = Vec::new();
                while let Some(p) = seq.next_element::<Part>()? {
                    out.extend(p.0);
                }
                Ok(Content(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One part of a Part list: a string is a text part; an object has `text`, `thought` and
/// maybe a `functionResponse` (skipped unread).
struct Part(Option<LightPart>);

impl<'de> serde::Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Part, D::Error> {
        d.deserialize_any(PartVisitor).map(Part)
    }
}

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Option<LightPart>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content part")
    }
    skip_scalars!(Some(LightPart::default()));
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(LightPart {
            text: Some(s.to_string()),
            ..Default::default()
        }))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(LightPart::default()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut part = LightPart::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "text" => {
                    if let Value::String(s) = map.next_value::<Value>()? {
                        part.text = Some(s);
                    }
                }
                "thought" => part.thought = map.next_value::<Value>()? == Value::Bool(true),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(part))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: &str) -> Record<Light> {
        serde_json::from_str::<Raw>(line).unwrap().into_record()
    }

    #[test]
    fn lines_the_reader_finds_malformed_are_malformed_here() {
        let deep = format!(
            "{{\"id\":\"a\",\"x\":{}1{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        for line in [
            r#"{"id":"a","type":"user","toolCalls":"\ud800"}"#,
            r#"{"id":"a","type":"user","x":{"y":"\udc00 tail"}}"#,
            r#"{"id":"a","type":"user","x":1e400}"#,
            deep.as_str(),
        ] {
            assert!(serde_json::from_str::<Value>(line).is_err(), "{line}");
            assert!(light_record(line).is_none(), "{line}");
        }
        assert!(light_record(r#"{"id":"a","type":"user","x":"\ud83d\ude00"}"#).is_some());
    }

    #[test]
    fn lines_are_told_apart_like_the_cli_does() {
        assert!(matches!(record(r#"{"$rewindTo":"a","id":"b"}"#), Record::Rewind(id) if id == "a"));
        assert!(matches!(
            record(r#"{"id":"m","type":"user","content":"hi"}"#),
            Record::Message(..)
        ));
        assert!(matches!(record(r#"{"id":7,"type":"user"}"#), Record::Other));
        assert!(matches!(
            record(r#"{"$set":{"lastUpdated":"x"}}"#),
            Record::Set { .. }
        ));
        assert!(matches!(record(r#"{"$set":"x"}"#), Record::Other));
        assert!(matches!(
            record(r#"{"sessionId":"s","projectHash":"h"}"#),
            Record::Meta { .. }
        ));
        assert!(matches!(record(r#"{"sessionId":"s"}"#), Record::Other));
        assert!(matches!(record(r#"[1,2]"#), Record::Other));
        assert!(matches!(record(r#""text""#), Record::Other));
        let Record::Set {
            messages: Some(list),
            ..
        } = record(
            r#"{"$set":{"messages":[{"id":"a","type":"user","content":[{"text":"x"},{"functionResponse":{"response":{"output":"big"}}}]},{"type":"user"},3]}}"#,
        )
        else {
            panic!()
        };
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].1.parts.len(), 2);
    }
}
