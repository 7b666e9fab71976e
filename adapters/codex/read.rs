//! Reads every Codex session shape into the neutral model.
//!
//! The model's view (response items) is the conversation. Event messages (what the TUI draws)
//! are used only when a file has no response items carrying the conversation, since otherwise
//! they would duplicate it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::Result;
use serde_json::{Value, json};

use crate::adapter::OutputCut;
use crate::jsonl::{self, Line, str_field};
use crate::model::{
    GitInfo, Message, MessageKind, Role, Session, TimeSpan, Timestamp, Todo, TodoStatus,
};

mod fast;

/// Envelope line types that carry no conversation.
const NON_CONVERSATION_TYPES: &[&str] = &["turn_context", "world_state", "token_usage_record"];

/// Event types the fallback (event-only files) turns into messages; all others are skipped.
const CONVERSATION_EVENTS: &[&str] = &[
    "user_message",
    "agent_message",
    "agent_reasoning",
    "item_completed",
];

#[derive(Default)]
struct State<'a> {
    /// Response items that carry user or assistant words were seen.
    has_response_conversation: bool,
    /// Messages rebuilt from events, used only when no response items carry the conversation.
    event_messages: Vec<Message>,
    todos: Option<Vec<Todo>>,
    meta_seen: usize,
    last_model: Option<String>,
    /// How tool outputs are cut (see `ReadOptions`); `None`: not at all.
    cut: Option<OutputCut<'a>>,
}

/// A tool result's text, cut as the reader was asked to (see `OutputCut::keep`). `original`
/// is the output's full length when the pruned parse already cut it.
fn output_message(mut m: Message, cut: Option<OutputCut>, original: Option<usize>) -> Message {
    if let Some(cut) = cut {
        let n = original.unwrap_or_else(|| m.content.chars().count());
        if let Some(kept) = cut.keep(&m.content, n) {
            kept.apply_to(&mut m);
        }
    }
    m
}

/// How a relay's read prunes a line: tool outputs (and the outputs events repeat) are cut to
/// `max` characters while parsed; outputs that are JSON documents stay whole, since the exit
/// code of older rollouts is inside them.
fn prune(max: usize) -> jsonl::pruned::Prune {
    use jsonl::pruned::Keep;
    /// Line types read for a few fields: events (most are counted and skipped), the turn
    /// context (its model and cwd), usage records (counted).
    const BOOKKEEPING: &[&str] = &["event_msg", "turn_context", "token_usage_record"];
    jsonl::pruned::Prune {
        skip_root: &[],
        regions: &[
            &["payload", "output"],
            &["payload", "aggregated_output"],
            &["payload", "formatted_output"],
            &["payload", "stdout"],
            &["payload", "stderr"],
            &["payload", "unified_diff"],
            &["payload", "item", "aggregated_output"],
            &["output"],
            // Read only for whether it is there: reasoning the next model cannot decrypt.
            &["payload", "encrypted_content"],
        ],
        max_chars: max,
        keep_json: true,
        keep: &[
            Keep {
                types: BOOKKEEPING,
                at: &[],
                keys: &["type", "timestamp", "payload", "id", "record_type"],
            },
            Keep {
                types: &["event_msg"],
                at: &["payload"],
                keys: &["type", "changes", "item", "message", "text"],
            },
            Keep {
                types: &["event_msg"],
                at: &["payload", "item"],
                keys: &[
                    "type",
                    "id",
                    "content",
                    "summary_text",
                    "command",
                    "aggregated_output",
                    "exit_code",
                    "changes",
                ],
            },
            Keep {
                types: &["turn_context"],
                at: &["payload"],
                keys: &["model", "cwd"],
            },
            Keep {
                types: &["token_usage_record"],
                at: &["payload"],
                keys: &[],
            },
        ],
    }
}

/// The full length of a tool output whose parts the pruned parse cut (`None`: nothing cut).
/// `holder` is the object holding the `output` key.
fn cut_length(holder: &Value, key: &str) -> Option<usize> {
    use crate::jsonl::pruned::ORIGINAL_CHARS;
    let count = |v: &Value| {
        v.get(ORIGINAL_CHARS)
            .and_then(Value::as_u64)
            .map(|n| n as usize)
    };
    match holder.get(key)? {
        Value::String(_) => count(holder),
        Value::Array(parts) if parts.iter().any(|p| count(p).is_some()) => Some(
            parts
                .iter()
                .map(|p| {
                    count(p).unwrap_or_else(|| {
                        text_parts(Some(&Value::Array(vec![p.clone()])))
                            .chars()
                            .count()
                    })
                })
                .sum::<usize>()
                + parts.len().saturating_sub(1),
        ),
        Value::Object(o) if o.contains_key("content") => {
            cut_length(&Value::Object(o.clone()), "content")
        }
        _ => None,
    }
}

/// Whether a file is the TypeScript CLI's single JSON document rather than JSONL: named
/// `.json`, or a first line that is `{` alone or an object with `session` and `items`.
pub(super) fn is_single_document(path: &Path) -> Result<bool> {
    if path.extension().is_some_and(|e| e == "json") {
        return Ok(true);
    }
    let head = jsonl::head(path, 4096)?;
    let first_line = jsonl::strip_bom(&head)
        .split(|&b| b == b'\n')
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    Ok(first_line == b"{"
        || serde_json::from_slice::<Value>(first_line)
            .ok()
            .is_some_and(|v| v.get("session").is_some() && v.get("items").is_some()))
}

pub fn read(
    path: &Path,
    home: Option<&Path>,
    opts: crate::adapter::ReadOptions,
) -> Result<Session> {
    let fallback_id = super::id_from_file_name(path).unwrap_or_else(|| {
        path.file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    });
    let archived = super::is_archived(path);

    let single_document = is_single_document(path)?;

    let mut session = if single_document {
        read_typescript_document(path, &fallback_id, opts)?
    } else {
        read_lines(path, &fallback_id, opts)?
    };
    session.archived = archived;
    session.source_path = Some(path.display().to_string());
    if let Some(named) = super::id_from_file_name(path)
        && !named.eq_ignore_ascii_case(&session.id)
    {
        // Codex 0.171 lists the thread under its session_meta id and resumes it only by that
        // id (by the file's it refuses: "thread source changed during resume").
        session.warn(
            Some(1),
            format!(
                "the file name says session {named}, its session_meta says {}: Codex lists and \
                 resumes it as {}, and so does session-relay",
                session.id, session.id
            ),
        );
    }

    if let Some(home) = home
        && let Some(title) = super::session_index(home).remove(&session.id)
    {
        session.title = Some(title);
    }
    if session.title.is_none() {
        session.title = session.first_user_prompt().map(crate::text::one_line);
    }
    session.pair_tool_calls();
    session.fill_times_from_messages();
    Ok(session)
}

fn read_lines(
    path: &Path,
    fallback_id: &str,
    opts: crate::adapter::ReadOptions,
) -> Result<Session> {
    // A relay keeps at most `max` characters of any output: outputs are cut while each line is
    // parsed, and with a tail, outputs before it are kept only to their first line.
    let first_max = opts.max_tool_output;
    let cut = first_max.map(|max| OutputCut {
        max,
        reduced: opts.full_tail_tokens.is_some(),
        mask: opts.mask.as_ref().map(|m| &*m.0),
    });
    let mut rollout = Rollout {
        session: Session::new(super::NAME, "codex-rollout", fallback_id),
        state: State {
            cut,
            ..Default::default()
        },
        shape: None,
        unrecognised_lines: 0,
        times: TimeSpan::default(),
        window: opts.fold.as_ref().map(crate::adapter::FoldWindow::new),
    };
    let first_pass = jsonl::Pass {
        prune: first_max.map(prune),
        ..Default::default()
    };
    // Set once response items carrying the conversation are applied: from then on the fast
    // path can read conversation events without a tree (see `fast::line`).
    let conversation_seen = AtomicBool::new(false);
    let pass = jsonl::for_each_line(
        path,
        first_pass,
        |no, text| fast::line(no, text, cut, conversation_seen.load(Relaxed)),
        |no, v| mapped(no, v, cut),
        |no, line| {
            rollout.line(no, line);
            conversation_seen.store(rollout.state.has_response_conversation, Relaxed);
            Ok(())
        },
    )?;
    let mut session = rollout.finish(path, &pass);
    if let (Some(max), Some(tail)) = (opts.max_tool_output, opts.full_tail_tokens) {
        read_tail_in_full(path, &pass, &mut session, tail, max)?;
    }
    Ok(session)
}

/// A rollout's lines applied in file order: the session so far, and what the lines before told
/// of the file.
struct Rollout<'a> {
    session: Session,
    state: State<'a>,
    /// The file's shape, set by its first recognised line: "envelope" or "pre-envelope".
    shape: Option<&'static str>,
    /// Lines of no known shape, skipped.
    unrecognised_lines: usize,
    times: TimeSpan,
    /// Older turns go to the fold once response items carry the conversation: the events'
    /// messages, which replace them otherwise (see `finish`), are never folded.
    window: Option<crate::adapter::FoldWindow>,
}

impl Rollout<'_> {
    /// Line `no` as the parsing thread handed it on (see `Mapped`).
    fn line(&mut self, no: usize, line: Line<Mapped>) {
        if self.state.has_response_conversation
            && let Some(w) = self.window.as_mut()
        {
            w.after_messages(&mut self.session);
        }
        let Line::Json(mapped) = line else {
            return;
        };
        if let Some(t) = mapped.time() {
            self.times.see(t);
        }
        match mapped {
            Mapped::Line(ts, v) => self.whole_line(no, &v, ts),
            mapped => {
                self.shape.get_or_insert("envelope");
                apply_mapped(mapped, &mut self.session, &mut self.state);
            }
        }
    }

    /// A line the parsing thread left as it was: an envelope line of any type, or a line of
    /// the older shapes.
    fn whole_line(&mut self, no: usize, v: &Value, ts: Option<Timestamp>) {
        let (session, state) = (&mut self.session, &mut self.state);
        if let (Some(kind), Some(payload)) = (str_field(v, "type"), v.get("payload")) {
            self.shape.get_or_insert("envelope");
            envelope_line(session, state, no, kind, payload, ts);
        } else if self.shape.is_none() && v.get("id").is_some() && v.get("type").is_none() {
            // Pre-envelope (mid 2025): a bare meta object first, then bare items.
            self.shape = Some("pre-envelope");
            session.format = "codex-pre-envelope".into();
            session_meta(session, state, v, ts);
        } else if let Some(record_type) = str_field(v, "record_type") {
            *session
                .stats
                .skipped_types
                .entry(format!("record_type:{record_type}"))
                .or_default() += 1;
        } else if str_field(v, "type").is_some() && self.shape == Some("pre-envelope") {
            response_item_now(session, state, no, v, ts);
        } else {
            self.unrecognised_lines += 1;
            *session
                .stats
                .unknown_types
                .entry(str_field(v, "type").unwrap_or("<no type>").to_string())
                .or_default() += 1;
        }
    }

    /// The session once every line is applied, with a warning when lines were of no known
    /// shape.
    fn finish(self, path: &Path, pass: &jsonl::PassStats) -> Session {
        let mut session = self.session;
        session.record_pass(pass);
        (session.created, session.updated) =
            created_and_updated(session.created.take(), self.times);
        if self.shape.is_none() && pass.lines > 0 {
            session.warn(
                None,
                format!(
                    "{} is not a recognised Codex session shape ({} line(s), none with a \
                     type/payload envelope or a session header)",
                    path.display(),
                    pass.lines
                ),
            );
        } else if self.unrecognised_lines > 0 {
            session.warn(
                None,
                format!(
                    "{} line(s) of no known Codex shape were skipped",
                    self.unrecognised_lines
                ),
            );
        }
        finish(&mut session, self.state);
        session
    }
}

/// The newest turns, about `tail` tokens of them from the last back to the start of a turn:
/// their tool outputs, read only to their first line in the first pass, read again and cut to
/// `max` instead.
fn read_tail_in_full(
    path: &Path,
    first: &jsonl::PassStats,
    session: &mut Session,
    tail: usize,
    max: usize,
) -> Result<()> {
    let mut tokens = 0usize;
    // With turns folded, the tail reaches back at most to the first turn after them: the
    // first turn's outputs stay as the first pass left them, as any older turn's do.
    let mut from = session
        .folded
        .as_ref()
        .and_then(|f| session.messages.get(f.at))
        .and_then(crate::model::source_line)
        .unwrap_or(0);
    for m in session.messages.iter().rev() {
        tokens += (m.output_chars().min(max) + 200) / 4;
        if m.role == Role::User && tokens >= tail {
            from = crate::model::source_line(m).unwrap_or(0);
            break;
        }
    }
    let wanted: foldhash::HashSet<usize> = session
        .messages
        .iter()
        .filter(|m| m.is_reduced())
        .filter_map(crate::model::source_line)
        .filter(|&l| l >= from)
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let mut outputs: foldhash::HashMap<usize, (String, Option<usize>)> = Default::default();
    jsonl::for_each_line(
        path,
        jsonl::Pass::from(from, first, Some(prune(max))),
        |_, _| None,
        |_, v| v,
        |no, line| {
            let Line::Json(v) = line else { return Ok(()) };
            if !wanted.contains(&no) {
                return Ok(());
            }
            let p = v.get("payload").unwrap_or(&v);
            let found = match p.get("item") {
                Some(item) if str_field(item, "type") == Some("CommandExecution") => Some((
                    str_field(item, "aggregated_output")
                        .unwrap_or_default()
                        .to_string(),
                    cut_length(item, "aggregated_output"),
                )),
                _ => p
                    .get("output")
                    .map(|_| (tool_output(p.get("output")).0, cut_length(p, "output"))),
            };
            if let Some(f) = found {
                outputs.insert(no, f);
            }
            Ok(())
        },
    )?;
    for m in session.messages.iter_mut() {
        let Some(no) = crate::model::source_line(m) else {
            continue;
        };
        if m.role != Role::ToolResult || !m.is_reduced() {
            continue;
        }
        if let Some((text, original)) = outputs.remove(&no) {
            m.state = None;
            let mut fresh = Message::new(Role::ToolResult, text);
            fresh.metadata = std::mem::take(&mut m.metadata);
            let fresh = output_message(
                fresh,
                Some(OutputCut {
                    max,
                    reduced: false,
                    mask: None,
                }),
                original,
            );
            m.content = fresh.content;
            m.state = fresh.state;
            m.metadata = fresh.metadata;
        }
    }
    Ok(())
}

/// Created: the session's own start (the first `session_meta`'s time), else the earliest time
/// a line states. Updated: the newest time a line states, or the start if that is newer (see
/// `TimeSpan`). The listing scanner applies the same definition.
pub(super) fn created_and_updated(
    start: Option<Timestamp>,
    mut times: TimeSpan,
) -> (Option<Timestamp>, Option<Timestamp>) {
    match start {
        Some(start) => {
            times.see(&start);
            (Some(start), times.last())
        }
        None => (times.first(), times.last()),
    }
}

/// The TypeScript CLI (spring 2025) wrote one JSON document: `{"session": {...}, "items": [...]}`.
fn read_typescript_document(
    path: &Path,
    fallback_id: &str,
    opts: crate::adapter::ReadOptions,
) -> Result<Session> {
    let mut session = Session::new(super::NAME, "codex-typescript", fallback_id);
    let mut state = State {
        cut: opts.max_tool_output.map(|max| OutputCut {
            max,
            reduced: false,
            mask: None,
        }),
        ..Default::default()
    };
    let Some(bytes) = jsonl::read_document(path)?.bytes(|line, w| session.warn(line, w)) else {
        return Ok(session);
    };
    let text = jsonl::document_text(&bytes, |w| session.warn(None, w));
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            session.warn(
                Some(e.line()),
                format!("{} is not valid JSON: {e}", path.display()),
            );
            session.stats.malformed_lines = 1;
            return Ok(session);
        }
    };
    session.stats.lines = text.lines().count();
    let (Some(meta), Some(items)) = (
        doc.get("session"),
        doc.get("items").and_then(Value::as_array),
    ) else {
        session.warn(
            None,
            format!(
                "{} is a JSON document without `session` and `items`: not a recognised Codex \
                 session shape",
                path.display()
            ),
        );
        return Ok(session);
    };
    let ts = meta.get("timestamp").and_then(Timestamp::from_value);
    session_meta(&mut session, &mut state, meta, ts.clone());
    for (i, item) in items.iter().enumerate() {
        // No per-item times in this shape; items are numbered instead of lines.
        response_item_now(&mut session, &mut state, i + 1, item, None);
    }
    finish(&mut session, state);
    Ok(session)
}

fn finish(session: &mut Session, state: State) {
    if !state.has_response_conversation && !state.event_messages.is_empty() {
        session
            .extra
            .insert("conversation_from".into(), json!("events"));
        // Keep injected context from response items, then the events' conversation.
        session.messages.extend(state.event_messages);
        session
            .messages
            .sort_by_key(|m| crate::model::source_line(m).unwrap_or(0));
    }
    if let Some(t) = state.todos {
        session.todos = t;
    }
    if let Some(m) = state.last_model {
        session.extra.insert("model".into(), json!(m));
    }
    if state.meta_seen > 1 {
        session
            .extra
            .insert("session_meta_lines".into(), json!(state.meta_seen));
    }
    if session.messages.is_empty() && session.warnings.iter().all(|w| w.about_characters()) {
        session.warn(None, "no conversation found in this session");
    }
}

fn envelope_line(
    session: &mut Session,
    state: &mut State,
    no: usize,
    kind: &str,
    payload: &Value,
    ts: Option<Timestamp>,
) {
    match kind {
        "session_meta" => session_meta(session, state, payload, ts),
        "response_item" => response_item_now(session, state, no, payload, ts),
        "event_msg" => event(session, state, no, payload, ts),
        "compacted" => {
            let text = str_field(payload, "message")
                .unwrap_or_default()
                .to_string();
            let kept = payload
                .get("replacement_history")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            session.messages.push(
                Message::new(Role::System, text)
                    .with_time(ts)
                    .with_meta("line", no)
                    .with_kind(MessageKind::Compaction)
                    .with_meta("replacement_items", kept),
            );
        }
        "turn_context" => {
            if let Some(m) = str_field(payload, "model") {
                state.last_model = Some(m.to_string());
            }
            if session.cwd.is_none() {
                session.cwd = str_field(payload, "cwd").map(str::to_string);
            }
            *session
                .stats
                .skipped_types
                .entry(kind.to_string())
                .or_default() += 1;
        }
        k if NON_CONVERSATION_TYPES.contains(&k) => {
            *session
                .stats
                .skipped_types
                .entry(kind.to_string())
                .or_default() += 1;
        }
        other => {
            *session
                .stats
                .unknown_types
                .entry(other.to_string())
                .or_default() += 1
        }
    }
}

fn session_meta(session: &mut Session, state: &mut State, p: &Value, ts: Option<Timestamp>) {
    state.meta_seen += 1;
    if state.meta_seen > 1 {
        // A resumed or forked rollout can repeat meta lines of its ancestors: the first wins.
        return;
    }
    if let Some(id) = str_field(p, "id") {
        session.id = id.to_string();
    }
    session.created = p.get("timestamp").and_then(Timestamp::from_value).or(ts);
    session.cwd = str_field(p, "cwd").map(str::to_string);
    session.source_version = str_field(p, "cli_version").map(str::to_string);
    if str_field(p, "history_mode") == Some("paginated") {
        session.format = "codex-paginated".into();
    }
    if let Some(g) = p.get("git").filter(|g| g.is_object()) {
        let git = GitInfo {
            branch: str_field(g, "branch").map(str::to_string),
            commit: str_field(g, "commit_hash")
                .or_else(|| str_field(g, "sha"))
                .map(str::to_string),
            remote: str_field(g, "repository_url")
                .or_else(|| str_field(g, "origin_url"))
                .map(str::to_string),
        };
        if !git.is_empty() {
            session.git = Some(git);
        }
    }
    for key in [
        "source",
        "originator",
        "model_provider",
        "history_mode",
        "thread_source",
        "forked_from_id",
        "base_instructions",
    ] {
        if let Some(v) = p.get(key).filter(|v| !v.is_null()) {
            session.extra.insert(key.to_string(), v.clone());
        }
    }
    let instructions = match p.get("instructions") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    if let Some(text) = instructions.filter(|s| !s.trim().is_empty()) {
        session.messages.push(
            Message::new(Role::System, text)
                .with_time(session.created.clone())
                .with_kind(MessageKind::Instructions),
        );
    }
}

fn text_parts(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match str_field(p, "type") {
                Some(
                    "input_text" | "output_text" | "text" | "Text" | "summary_text"
                    | "reasoning_text",
                ) => str_field(p, "text").map(str::to_string),
                Some("input_image") => Some("[image]".to_string()),
                Some(other) => Some(format!("[{other}]")),
                None => p.as_str().map(str::to_string),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What a response item does to the session (see `Op`). `cut` is `State`'s.
fn response_item(
    out: &mut Vec<Op>,
    cut: Option<OutputCut>,
    no: usize,
    p: &Value,
    ts: Option<Timestamp>,
) {
    let at = At { no, ts };
    let item_type = str_field(p, "type").unwrap_or_default();
    match item_type {
        "message" => message_item(
            out,
            &at,
            text_parts(p.get("content")),
            str_field(p, "role").unwrap_or("user"),
            str_field(p, "phase"),
        ),
        "reasoning" => reasoning_item(
            out,
            &at,
            text_parts(p.get("summary")),
            text_parts(p.get("content")),
            p.get("encrypted_content").is_some_and(|e| !e.is_null()),
        ),
        "function_call" | "custom_tool_call" | "local_shell_call" | "tool_search_call" => {
            let name = match item_type {
                "local_shell_call" => "local_shell",
                "tool_search_call" => "tool_search",
                _ => str_field(p, "name").unwrap_or("?"),
            };
            let (input, content) = match item_type {
                "function_call" => (
                    arguments_input(str_field(p, "arguments").unwrap_or_default()),
                    String::new(),
                ),
                "custom_tool_call" => {
                    let input = str_field(p, "input").unwrap_or_default().to_string();
                    (json!(input), input)
                }
                _ => (
                    p.get("action")
                        .or_else(|| p.get("arguments"))
                        .cloned()
                        .unwrap_or(Value::Null),
                    String::new(),
                ),
            };
            let call_id = str_field(p, "call_id").or_else(|| str_field(p, "id"));
            call_item(out, &at, item_type, name, input, content, call_id);
        }
        "function_call_output" | "custom_tool_call_output" | "tool_search_output" => output_item(
            out,
            &at,
            tool_output(p.get("output")),
            str_field(p, "call_id"),
            p.get("success").and_then(Value::as_bool) == Some(false),
            cut_length(p, "output"),
            cut,
        ),
        "web_search_call" => {
            // A self-contained item: the call and its outcome in one. Kept as a paired call.
            let id = str_field(p, "id")
                .map(str::to_string)
                .unwrap_or_else(|| format!("web_search_line_{no}"));
            let action = p.get("action").cloned().unwrap_or(Value::Null);
            let mut call = at.message(Role::ToolCall, String::new());
            call.tool_call_id = Some(id.clone());
            let (kind, key) = super::tools::classify("web_search", &action);
            call.tool_kind = Some(kind);
            call.key_arg = Some(key);
            call.tool_name = Some("web_search".into());
            call.tool_input = Some(action).filter(|v| !v.is_null());
            let mut result = at
                .message(
                    Role::ToolResult,
                    format!("status: {}", str_field(p, "status").unwrap_or("unknown")),
                )
                .with_meta("synthesized", true);
            result.tool_call_id = Some(id);
            out.push(Op::Push(call));
            out.push(Op::Push(result));
        }
        "" => {
            out.push(Op::Unknown("response_item:<no type>".into()));
        }
        other => {
            out.push(Op::Unknown(format!("response_item:{other}")));
        }
    }
}

/// Where a line's messages come from: each starts with the line's time and number.
struct At {
    no: usize,
    ts: Option<Timestamp>,
}

impl At {
    fn message(&self, role: Role, content: String) -> Message {
        Message::new(role, content)
            .with_time(self.ts.clone())
            .with_meta("line", self.no)
    }

    /// A message of the events' conversation, marked as such.
    fn event_message(&self, role: Role, content: String) -> Message {
        self.message(role, content).with_meta("from_event", true)
    }
}

// What each kind of response item adds, from the fields either path read (see `fast`).

fn message_item(out: &mut Vec<Op>, at: &At, text: String, role: &str, phase: Option<&str>) {
    let m = match role {
        "user" if super::is_injected_user_text(&text) => {
            // Files older than session_meta's `cwd` state it only here.
            out.push(Op::CwdIfNone(tag_value(&text, "cwd")));
            let kind = super::injected_kind(&text);
            at.message(Role::System, text).with_kind(kind)
        }
        "user" => {
            out.push(Op::Conversation);
            at.message(Role::User, super::unescaped_user_text(text))
        }
        "assistant" => {
            out.push(Op::Conversation);
            let mut m = at.message(Role::Assistant, text);
            if let Some(phase) = phase {
                m = m.with_meta("phase", phase);
            }
            m
        }
        other => {
            let kind = super::injected_kind(&text);
            at.message(Role::System, text)
                .with_kind(kind)
                .with_meta("source_role", other)
        }
    };
    out.push(Op::Push(m));
}

/// A `reasoning` item: its summary, then its raw text.
fn reasoning_item(out: &mut Vec<Op>, at: &At, mut text: String, raw: String, encrypted: bool) {
    if !raw.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&raw);
    }
    let mut m = at.message(Role::Reasoning, text);
    if encrypted {
        m = m.with_meta("encrypted", true);
    }
    out.push(Op::Push(m));
}

/// A function call's input: its `arguments`, a JSON document in a string (kept as the string
/// when it is not one).
fn arguments_input(args: &str) -> Value {
    serde_json::from_str::<Value>(args).unwrap_or_else(|_| json!(args))
}

fn call_item(
    out: &mut Vec<Op>,
    at: &At,
    item_type: &str,
    name: &str,
    input: Value,
    content: String,
    call_id: Option<&str>,
) {
    note_tool_effects(out, name, &input);
    let mut m = at.message(Role::ToolCall, content);
    let (kind, key) = super::tools::classify(name, &input);
    m.tool_kind = Some(kind);
    m.key_arg = Some(key);
    if item_type == "custom_tool_call" {
        m = m.with_meta("custom", true);
    }
    m.tool_call_id = call_id.map(str::to_string);
    m.tool_name = Some(name.to_string());
    m.tool_input = Some(input).filter(|v| !v.is_null());
    out.push(Op::Push(m));
}

/// A call's output: its text and exit code (see `tool_output`), whether the item says it
/// failed, its full length when the parse cut it, and `State`'s cut.
fn output_item(
    out: &mut Vec<Op>,
    at: &At,
    (content, exit): (String, Option<i64>),
    call_id: Option<&str>,
    failed: bool,
    original: Option<usize>,
    cut: Option<OutputCut>,
) {
    let rejected = super::is_rejection(&content);
    let mut m = at.message(Role::ToolResult, content);
    m.tool_call_id = call_id.map(str::to_string);
    if let Some(code) = exit {
        m.is_error = code != 0;
        m = m.with_meta("exit_code", code);
    }
    if failed || rejected {
        m.is_error = true;
    }
    if rejected {
        m = m.with_meta("rejected", true);
    }
    out.push(Op::Push(output_message(m, cut, original)));
}

pub(super) fn tag_value(text: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{tag}>"))? + start;
    Some(text[start..end].trim().to_string()).filter(|s| !s.is_empty())
}

/// A tool output as text plus the exit code it reports, if any.
///
/// Older rollouts store a JSON string `{"output": ..., "metadata": {"exit_code": ...}}`; newer
/// ones store plain text that states "Process exited with code N" or "Exit code: N"; some
/// store content items.
fn tool_output(output: Option<&Value>) -> (String, Option<i64>) {
    let text = match output {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(_)) => text_parts(output),
        Some(Value::Object(o)) => {
            if let Some(c) = o.get("content") {
                return tool_output(Some(c));
            }
            Value::Object(o.clone()).to_string()
        }
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if text.trim_start().starts_with('{')
        && let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(inner) = v.get("output")
    {
        let exit = v
            .pointer("/metadata/exit_code")
            .and_then(crate::jsonl::as_whole);
        let inner = match inner {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return (inner, exit);
    }
    let exit = exit_code_in_text(&text);
    (text, exit)
}

fn exit_code_in_text(text: &str) -> Option<i64> {
    for line in text.lines().take(6) {
        for prefix in ["Process exited with code ", "Exit code: "] {
            if let Some(rest) = line.trim().strip_prefix(prefix) {
                return rest.trim().parse().ok();
            }
        }
    }
    None
}

fn note_tool_effects(out: &mut Vec<Op>, name: &str, input: &Value) {
    match name {
        "update_plan" => {
            if let Some(items) = input.get("plan").and_then(Value::as_array) {
                out.push(Op::Todos(
                    items
                        .iter()
                        .map(|i| Todo {
                            text: str_field(i, "step").unwrap_or_default().to_string(),
                            status: TodoStatus::parse(str_field(i, "status").unwrap_or("pending")),
                        })
                        .collect(),
                ));
            }
        }
        "apply_patch" => {
            let patch = input
                .as_str()
                .or_else(|| str_field(input, "input"))
                .or_else(|| str_field(input, "patch"))
                .unwrap_or_default();
            touch_patch_files(out, patch);
        }
        "shell" | "local_shell" | "container.exec" => {
            // Older Codex ran apply_patch through the shell tool: ["apply_patch", "<patch>"].
            let cmd = input.get("command").and_then(Value::as_array);
            if let Some(cmd) = cmd {
                let words: Vec<&str> = cmd.iter().filter_map(Value::as_str).collect();
                if let Some(pos) = words.iter().position(|w| *w == "apply_patch")
                    && let Some(patch) = words.get(pos + 1)
                {
                    touch_patch_files(out, patch);
                } else if let Some(last) = words.last()
                    && last.contains("*** Begin Patch")
                {
                    touch_patch_files(out, last);
                }
            }
        }
        _ => {}
    }
}

fn touch_patch_files(out: &mut Vec<Op>, patch: &str) {
    for line in patch.lines() {
        for marker in [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ] {
            if let Some(p) = line.strip_prefix(marker) {
                out.push(Op::TouchPatchPath(p.trim().to_string()));
            }
        }
    }
}

/// Line `no` as the parsing thread hands it on (see `Mapped`): response items, most of a
/// rollout, are worked out where they are parsed. `cut` is `State`'s.
fn mapped(no: usize, v: Value, cut: Option<OutputCut>) -> Mapped {
    let ts = v.get("timestamp").and_then(Timestamp::from_value);
    match (str_field(&v, "type"), v.get("payload")) {
        (Some("response_item"), Some(p)) => {
            let mut ops = Vec::new();
            response_item(&mut ops, cut, no, p, ts.clone());
            Mapped::Item(ts, ops)
        }
        _ => Mapped::Line(ts, v),
    }
}

/// Applies what the parsing thread worked out of a line (a `Line` is the reader's to handle).
fn apply_mapped(mapped: Mapped, session: &mut Session, state: &mut State) {
    match mapped {
        Mapped::Item(_, ops) => apply(ops, session, state),
        Mapped::Skipped(_, kind) => *session.stats.skipped_types.entry(kind).or_default() += 1,
        // What `event` does with a conversation event once response items carry it.
        Mapped::LateEvent(_) => state.event_messages.clear(),
        // Handled by the reader itself, in file order.
        Mapped::Line(..) => {}
    }
}

/// A line as the parsing thread hands it on: a response item already worked out, or any other
/// line with its time.
enum Mapped {
    Item(Option<Timestamp>, Vec<Op>),
    Line(Option<Timestamp>, Value),
    /// A line that is only counted, as skipped under this name (see `fast`).
    Skipped(Option<Timestamp>, String),
    /// A conversation event read after response items carried the conversation: it only
    /// drops the events' messages (see `event`).
    LateEvent(Option<Timestamp>),
}

impl Mapped {
    fn time(&self) -> Option<&Timestamp> {
        match self {
            Mapped::Item(t, _)
            | Mapped::Line(t, _)
            | Mapped::Skipped(t, _)
            | Mapped::LateEvent(t) => t.as_ref(),
        }
    }
}

/// What a response item does to the session, worked out where its line is parsed and applied
/// in file order by `apply`: the reading thread only moves the results into place. Nearly every
/// operation is a `Push`, so boxing the message would only add an allocation to each.
#[allow(clippy::large_enum_variant)]
enum Op {
    Push(Message),
    /// The session's cwd, when none is known yet.
    CwdIfNone(Option<String>),
    /// The item carries user or assistant words.
    Conversation,
    Todos(Vec<Todo>),
    /// A file a patch touched, relative to the session's cwd at that point.
    TouchPatchPath(String),
    Unknown(String),
}

fn apply(ops: Vec<Op>, session: &mut Session, state: &mut State) {
    for op in ops {
        match op {
            Op::Push(m) => session.messages.push(m),
            Op::CwdIfNone(cwd) => {
                if session.cwd.is_none() {
                    session.cwd = cwd;
                }
            }
            Op::Conversation => state.has_response_conversation = true,
            Op::Todos(t) => state.todos = Some(t),
            Op::TouchPatchPath(p) => {
                let path = absolutize(session.cwd.as_deref(), &p);
                session.touch_file(&path);
            }
            Op::Unknown(k) => *session.stats.unknown_types.entry(k).or_default() += 1,
        }
    }
}

/// A response item's operations, applied at once (see `Op`).
fn response_item_now(
    session: &mut Session,
    state: &mut State,
    no: usize,
    p: &Value,
    ts: Option<Timestamp>,
) {
    let mut ops = Vec::new();
    response_item(&mut ops, state.cut, no, p, ts);
    apply(ops, session, state);
}

/// Patch paths are relative to the session's working directory; events use absolute paths.
/// Normalising both keeps one entry per file.
fn absolutize(cwd: Option<&str>, p: &str) -> String {
    match cwd {
        Some(cwd) if !p.starts_with('/') && !cwd.is_empty() => {
            format!("{}/{}", cwd.trim_end_matches('/'), p)
        }
        _ => p.to_string(),
    }
}

/// An `event_msg` line: the files it says changed, and while no response item has carried the
/// conversation, the messages it draws (see `finish`); every other event is counted.
fn event(session: &mut Session, state: &mut State, no: usize, p: &Value, ts: Option<Timestamp>) {
    let kind = str_field(p, "type").unwrap_or_default();
    // File changes are facts about the session whichever channel carries the conversation.
    touch_changed_files(session, kind, p);
    if !CONVERSATION_EVENTS.contains(&kind) {
        *session
            .stats
            .skipped_types
            .entry(format!("event_msg:{kind}"))
            .or_default() += 1;
        return;
    }
    if state.has_response_conversation {
        // The events' conversation is used only when no response item carries one (see
        // `finish`), and once one has, none will be needed: not building them saves a long
        // rollout's every command output a second time.
        state.event_messages.clear();
        return;
    }
    let at = At { no, ts };
    let out = &mut state.event_messages;
    match kind {
        "user_message" => {
            let text = str_field(p, "message").unwrap_or_default().to_string();
            if super::is_injected_user_text(&text) {
                let kind = super::injected_kind(&text);
                out.push(at.event_message(Role::System, text).with_kind(kind));
            } else {
                out.push(at.event_message(Role::User, super::unescaped_user_text(text)));
            }
        }
        "agent_message" => out.push(at.event_message(
            Role::Assistant,
            str_field(p, "message").unwrap_or_default().to_string(),
        )),
        "agent_reasoning" => out.push(at.event_message(
            Role::Reasoning,
            str_field(p, "text").unwrap_or_default().to_string(),
        )),
        "item_completed" => {
            let item = p.get("item").unwrap_or(&Value::Null);
            completed_item(out, &at, item, state.cut);
        }
        _ => {}
    }
}

/// The files a patch event, or a completed `FileChange` item, says it changed.
fn touch_changed_files(session: &mut Session, kind: &str, p: &Value) {
    let changes = match kind {
        "patch_apply_begin" | "patch_apply_end" => p.get("changes"),
        "item_completed"
            if str_field(p.get("item").unwrap_or(&Value::Null), "type") == Some("FileChange") =>
        {
            p.pointer("/item/changes")
        }
        _ => None,
    };
    if let Some(changes) = changes.and_then(Value::as_object) {
        for path in changes.keys() {
            let path = absolutize(session.cwd.as_deref(), path);
            session.touch_file(&path);
        }
    }
}

/// An `item_completed` event's item as the events' messages: words, reasoning, or a command
/// with its output.
fn completed_item(out: &mut Vec<Message>, at: &At, item: &Value, cut: Option<OutputCut>) {
    match str_field(item, "type") {
        Some("UserMessage") => {
            let text = text_parts(item.get("content"));
            out.push(at.event_message(Role::User, text));
        }
        Some("AgentMessage") => {
            out.push(at.event_message(Role::Assistant, text_parts(item.get("content"))))
        }
        Some("Reasoning") => {
            let text = item
                .get("summary_text")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            out.push(at.event_message(Role::Reasoning, text));
        }
        Some("CommandExecution") => command_execution(out, at, item, cut),
        _ => {}
    }
}

/// A `CommandExecution` item: a shell call and its output, paired by the item's id, the output
/// cut as `State`'s `cut` says.
fn command_execution(out: &mut Vec<Message>, at: &At, item: &Value, cut: Option<OutputCut>) {
    let id = str_field(item, "id").unwrap_or_default().to_string();
    let mut call = at.event_message(Role::ToolCall, String::new());
    call.tool_call_id = Some(id.clone());
    let input = json!({"command": item.get("command").cloned().unwrap_or(Value::Null)});
    let (kind, key) = super::tools::classify("shell", &input);
    call.tool_kind = Some(kind);
    call.key_arg = Some(key);
    call.tool_name = Some("shell".into());
    call.tool_input = Some(input);
    let mut result = at.event_message(
        Role::ToolResult,
        str_field(item, "aggregated_output")
            .unwrap_or_default()
            .to_string(),
    );
    result.tool_call_id = Some(id);
    if let Some(code) = item.get("exit_code").and_then(crate::jsonl::as_whole) {
        result.is_error = code != 0;
        result = result.with_meta("exit_code", code);
    }
    let original = cut_length(item, "aggregated_output");
    out.push(call);
    out.push(output_message(result, cut, original));
}
