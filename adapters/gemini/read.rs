//! Reads a Gemini CLI session into the neutral model, applying its records the way the CLI
//! does: metadata lines and `$set` merge, a message line whose `id` was seen replaces that
//! message in place, `$set.messages` replaces the list, `$rewindTo` drops a message and all after
//! it. The older single-document `.json` is one metadata record with its messages.
//!
//! The records and the rules that decide a message's role, text and times are in `records.rs`,
//! which the listing scan (`scan.rs`) applies to lighter messages too; a message record becomes
//! neutral messages in `convert.rs`.

use std::path::Path;

use anyhow::Result;
use serde_json::{Map, Value, json};

use super::convert::{Convert, convert, shrink_to};
use super::records::{Conversation, RELAY_RECORD, Record, is_relay, resolve_cwd, times, title};
use crate::jsonl::{self, Line, str_field};
use crate::model::{Role, Session, SubagentLink};

// ------------------------------------------------------------------------- reading

/// The format of a file: the older single JSON document, or JSONL.
fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Metadata fields kept in the session's `extra`.
const KEPT_META: [&str; 5] = [
    "projectHash",
    "kind",
    "directories",
    "summary",
    "memoryScratchpad",
];

pub fn read(path: &Path, opts: crate::adapter::ReadOptions) -> Result<Session> {
    let parent = super::subagent_parent(path);
    let mut session = empty_session(path, parent.is_some());
    let mut conv: Conversation<(Value, usize)> = Conversation::default();
    let max = opts.max_tool_output;

    let mut read_lines = true;
    if is_document(path) {
        read_lines = !read_document(path, &mut session, &mut conv, max)?;
    }
    let mut converted = None;
    if read_lines {
        // The older single document is one record: nothing in it is final before its end.
        let fold = opts.fold.as_ref().filter(|_| !is_document(path));
        converted = read_records(path, fold, max, &mut session, &mut conv)?;
    }

    if let Some(id) = conv.meta_str("sessionId") {
        session.id = id.to_string();
    }
    session.parent_id = parent;
    for key in KEPT_META {
        if let Some(v) = conv.meta.get(key).filter(|v| !v.is_null()) {
            session.extra.insert(key.to_string(), v.clone());
        }
    }
    let meta = std::mem::take(&mut conv.meta);
    let state = match converted {
        Some((_, state, (first_ts, last_ts))) => {
            (session.created, session.updated) = times(
                &meta,
                first_ts.as_deref(),
                last_ts.as_deref(),
                is_relay(&session),
            );
            state
        }
        None => convert_messages(conv, &meta, &mut session),
    };
    if let Some(t) = state.todos {
        session.todos = t;
    }
    if let Some(model) = state.model {
        session.extra.insert("model".into(), json!(model));
    }
    session.cwd = resolve_cwd(path, &meta, state.first_context.as_deref());
    session.title = title(&meta, session.first_user_prompt());
    if session.parent_id.is_none() {
        session.subagents = find_subagents(path, &session.id);
    }
    warn_if_no_conversation(&mut session);
    session.pair_tool_calls();
    Ok(session)
}

/// The session of the file at `path` before anything is read: named for its format, with
/// the file's name as its id until a record states one.
fn empty_session(path: &Path, subagent: bool) -> Session {
    let format = if subagent {
        "gemini-subagent"
    } else if is_document(path) {
        "gemini-json"
    } else {
        "gemini-jsonl"
    };
    let stem = path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut session = Session::new(super::NAME, format, stem);
    session.source_path = Some(path.display().to_string());
    session
}

/// Applies the records of a JSONL file to `conv`, or with `fold` to a fold of the older turns;
/// then the fold's metadata is `conv`'s, and what the fold converted is returned.
fn read_records(
    path: &Path,
    fold: Option<&crate::adapter::Fold>,
    max: Option<usize>,
    session: &mut Session,
    conv: &mut Conversation<(Value, usize)>,
) -> Result<Option<Folded>> {
    let mut folding = match fold {
        Some(fold) => Some(super::fold::Folding::new(super::fold::places(path)?, fold)),
        None => None,
    };
    let prepare = move |v: &mut Value| shrink_to(v, max);
    let lines = jsonl::Pass {
        stream_long: true,
        ..Default::default()
    };
    let mut long = LongLines::default();
    let prepared = |_, mut v| {
        prepare(&mut v);
        v
    };
    let mut pass = jsonl::for_each_line(
        path,
        lines,
        |_, _| None,
        prepared,
        |no, line| {
            let r = match line {
                Line::Json(v) => record(v, no, session),
                Line::Long {
                    start,
                    len,
                    terminated,
                } => {
                    let read = read_long(path, (no, start, len), max, session, &mut folding);
                    match long.take(no, terminated, read) {
                        Some(r) => r,
                        None => return Ok(()),
                    }
                }
                Line::Malformed(_) => return Ok(()),
            };
            match folding.as_mut() {
                Some(f) => f.apply(r, no, session),
                None => conv.apply(r),
            }
            Ok(())
        },
    )?;
    let mut converted = folding.map(|f| f.finish(session));
    long.record(&mut pass, session);
    if let Some((meta, _, _)) = converted.as_mut() {
        conv.meta = std::mem::take(meta);
    }
    if pass.lines > 0 && !conv.meta.contains_key("sessionId") {
        session.warn(
            None,
            format!(
                "{} is not a Gemini CLI session: no record has a sessionId and a projectHash \
                 (Gemini CLI skips it and its cleanup deletes it)",
                path.display()
            ),
        );
    }
    Ok(converted)
}

/// What a fold hands back once every line is read: the metadata, the conversion of the turns
/// it kept, and the first and last message times.
type Folded = (Map<String, Value>, Convert, super::fold::Times);

/// What reading long lines found beyond their records, told with what the pass found.
#[derive(Default)]
struct LongLines {
    /// Lines that are not JSON, and why.
    malformed: Vec<(usize, String)>,
    /// Lines with bytes that are not UTF-8, replaced.
    lossy: Vec<usize>,
    /// Lines whose lone surrogate escapes were replaced.
    halves: Vec<usize>,
    /// The last line is cut off: an agent still writing, not a malformed line.
    cut_off: bool,
}

impl LongLines {
    /// The record `read_long` read of line `no`, if there is one to apply, noting what the read
    /// replaced or why it failed.
    fn take(
        &mut self,
        no: usize,
        terminated: bool,
        read: Result<LongRead, String>,
    ) -> Option<Record<(Value, usize)>> {
        if let Ok((_, replaced)) = &read {
            if replaced.utf8 {
                self.lossy.push(no);
            }
            if replaced.surrogates {
                self.halves.push(no);
            }
        }
        match read.map(|r| r.0) {
            Ok(r) => r,
            Err(_) if !terminated => {
                self.cut_off = true;
                None
            }
            Err(e) => {
                self.malformed.push((no, e));
                None
            }
        }
    }

    /// Records the pass in the session's figures, with the long lines among its lines, then
    /// warns of each malformed long line.
    fn record(self, pass: &mut jsonl::PassStats, session: &mut Session) {
        pass.truncated_tail |= self.cut_off;
        for (lines, long) in [
            (&mut pass.invalid_utf8_lines, self.lossy),
            (&mut pass.lone_surrogate_lines, self.halves),
        ] {
            if !long.is_empty() {
                lines.extend(long);
                lines.sort_unstable();
            }
        }
        session.record_pass(pass);
        for (no, e) in self.malformed {
            session.stats.malformed_lines += 1;
            session.warn(Some(no), format!("malformed JSON line skipped: {e}"));
        }
    }
}

/// Converts the messages the conversation ends with, in order, after taking the session's
/// times from them (the read without a fold).
fn convert_messages(
    conv: Conversation<(Value, usize)>,
    meta: &Map<String, Value>,
    session: &mut Session,
) -> Convert {
    let messages = conv.into_messages();
    let first_ts = messages
        .iter()
        .find_map(|(m, _)| str_field(m, "timestamp").filter(|s| !s.is_empty()));
    let last_ts = messages
        .iter()
        .rev()
        .find_map(|(m, _)| str_field(m, "timestamp").filter(|s| !s.is_empty()));
    (session.created, session.updated) = times(meta, first_ts, last_ts, is_relay(session));
    let mut state = Convert::default();
    for (m, line) in &messages {
        convert(m, *line, session, &mut state);
    }
    state
}

/// Gemini CLI neither lists nor keeps a session without a conversation: said, unless the
/// session has warnings of its own that explain it.
fn warn_if_no_conversation(session: &mut Session) {
    let conversation = session.message_count() > 0
        || session.messages.iter().any(|m| m.role == Role::ToolCall)
        || session.folded.as_ref().is_some_and(|f| f.messages > 0);
    if !conversation && session.warnings.iter().all(|w| w.about_characters()) {
        session.warn(
            None,
            "no conversation in this session (Gemini CLI does not list it, and deletes it at its next start)",
        );
    }
}

/// What `read_long` read: a record to apply, and what reading it replaced.
type LongRead = (Option<Record<(Value, usize)>>, jsonl::Replaced);

/// Reads line `no`, longer than `LONG_LINE`, from the file (`super::long`): a list of messages a
/// message at a time, anything else whole. Returns the record to apply (`None`: the list's
/// messages were handed to the fold already) and what reading it replaced, or why the line
/// is malformed.
fn read_long(
    path: &Path,
    (no, start, len): (usize, u64, u64),
    max: Option<usize>,
    session: &mut Session,
    folding: &mut Option<super::fold::Folding>,
) -> Result<LongRead, String> {
    use super::long::{self, List};
    // A fold's first pass has read the line once already.
    let list = match folding.as_ref().and_then(|f| f.long_list(no)) {
        Some(list) => list,
        None => {
            let (line, lossy) =
                long::line_noting_lossy(path, start, len).map_err(|e| format!("{e:#}"))?;
            let light = super::scan::light_long(line);
            let lossy = lossy.get();
            let Some((light, repeated)) = light else {
                // Parsed again for the parser's own words.
                return Err(match long::whole(path, start, len) {
                    Err(e) => format!("{e:#}"),
                    Ok(_) => "not valid JSON".into(),
                });
            };
            match long::list_of(&light, repeated) {
                Some(list) => list,
                // A message, a rewind, metadata alone: one record, whatever its length.
                None => {
                    let r = whole_long(path, (no, start, len), max, session)?;
                    return Ok((Some(r), lossy));
                }
            }
        }
    };
    if let List::Set = list {
        *session
            .stats
            .skipped_types
            .entry("$set".into())
            .or_default() += 1;
    }
    let shrunk = |mut v: Value| {
        shrink_to(&mut v, max);
        v
    };
    fn listed<M>(list: List, meta: Map<String, Value>, messages: Vec<(String, M)>) -> Record<M> {
        let messages = Some(messages);
        match list {
            List::Set => Record::Set { meta, messages },
            List::Meta => Record::Meta { meta, messages },
        }
    }
    let failed = |e: anyhow::Error| format!("{e:#}");
    match folding {
        Some(f) => {
            let mut placed = Vec::new();
            let (meta, lossy) = long::stream_list(path, start, len, list, &mut |id, v| {
                f.offer_listed(&id, no, placed.len(), shrunk(v), session);
                let k = placed.len();
                placed.push((id, (no, Some(k))));
            })
            .map_err(|e| {
                // Messages of it were taken already: the read cannot be what a full read is.
                session.folded.get_or_insert_default().broken = true;
                failed(e)
            })?;
            f.listed(listed(list, meta, placed));
            Ok((None, lossy))
        }
        None => {
            let mut messages = Vec::new();
            let (meta, lossy) = long::stream_list(path, start, len, list, &mut |id, v| {
                messages.push((id, (shrunk(v), no)));
            })
            .map_err(failed)?;
            Ok((Some(listed(list, meta, messages)), lossy))
        }
    }
}

/// A long line that is not a list of messages, parsed whole.
fn whole_long(
    path: &Path,
    (no, start, len): (usize, u64, u64),
    max: Option<usize>,
    session: &mut Session,
) -> Result<Record<(Value, usize)>, String> {
    let mut v = super::long::whole(path, start, len).map_err(|e| format!("{e:#}"))?;
    shrink_to(&mut v, max);
    Ok(record(v, no, session))
}

/// Reads the older single JSON document. Returns false when the file is not one (then it is
/// read as JSONL).
fn read_document(
    path: &Path,
    session: &mut Session,
    conv: &mut Conversation<(Value, usize)>,
    max: Option<usize>,
) -> Result<bool> {
    let Some(bytes) = jsonl::read_document(path)?.bytes(|line, w| session.warn(line, w)) else {
        return Ok(true);
    };
    let text = jsonl::document_text(&bytes, |w| session.warn(None, w));
    let Ok(mut v) = serde_json::from_str::<Value>(&text) else {
        return Ok(false);
    };
    shrink_to(&mut v, max);
    session.stats.lines = text.lines().count();
    let r = record(v, 1, session);
    if !matches!(r, Record::Meta { .. }) {
        session.warn(
            None,
            format!(
                "{} is a JSON document without sessionId and projectHash: not a Gemini CLI session",
                path.display()
            ),
        );
    }
    conv.apply(r);
    Ok(true)
}

fn is_str(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(Value::is_string)
}

/// One parsed line as a record, messages carrying their line number.
fn record(v: Value, no: usize, session: &mut Session) -> Record<(Value, usize)> {
    let Value::Object(mut obj) = v else {
        *session
            .stats
            .unknown_types
            .entry("<not an object>".into())
            .or_default() += 1;
        return Record::Other;
    };
    let list = |v: Option<Value>| match v {
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .filter_map(|m| {
                    let id = str_field(&m, "id")?.to_string();
                    Some((id, (m, no)))
                })
                .collect::<Vec<_>>(),
        ),
        _ => None,
    };
    if obj.get("$rewindTo").is_some_and(Value::is_string) {
        let Some(Value::String(id)) = obj.remove("$rewindTo") else {
            unreachable!()
        };
        *session
            .stats
            .skipped_types
            .entry("$rewindTo".into())
            .or_default() += 1;
        return Record::Rewind(id);
    }
    if obj.get("id").is_some_and(Value::is_string) {
        let id = obj["id"].as_str().unwrap_or_default().to_string();
        return Record::Message(id, (Value::Object(obj), no));
    }
    if obj.get("$set").is_some_and(Value::is_object) {
        let Some(Value::Object(mut set)) = obj.remove("$set") else {
            unreachable!()
        };
        let messages = list(set.remove("messages"));
        *session
            .stats
            .skipped_types
            .entry("$set".into())
            .or_default() += 1;
        return Record::Set {
            meta: set,
            messages,
        };
    }
    let v = Value::Object(obj);
    if is_str(&v, "sessionId") && is_str(&v, "projectHash") {
        let Value::Object(mut obj) = v else {
            unreachable!()
        };
        let messages = list(obj.remove("messages"));
        return Record::Meta {
            meta: obj,
            messages,
        };
    }
    let kind = str_field(&v, "type")
        .map(|t| format!("type:{t}"))
        .unwrap_or_else(|| "<no id, $set or sessionId>".into());
    if str_field(&v, "type") == Some(RELAY_RECORD) {
        // The provenance record a relay leaves; Gemini CLI skips it.
        *session.stats.skipped_types.entry(kind).or_default() += 1;
    } else {
        *session.stats.unknown_types.entry(kind).or_default() += 1;
    }
    Record::Other
}

/// Subagent transcripts of a session: `chats/<session id>/*.jsonl` beside its file.
fn find_subagents(path: &Path, id: &str) -> Vec<SubagentLink> {
    let Some(dir) = path.parent().map(|p| p.join(id)) else {
        return Vec::new();
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<SubagentLink> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .map(|p| SubagentLink {
            id: p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            path: p.display().to_string(),
            agent_type: None,
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}
