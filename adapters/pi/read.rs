//! Reads a pi session into the neutral model as pi builds its context: the last entry of the
//! file is the leaf, and the conversation is the path from it up through `parentId`. Entries on
//! other branches stay in the file but are not part of it (counted as abandoned).
//!
//! - `message` entries: user text, assistant `text` / `thinking` / `toolCall` blocks in their
//!   order, `toolResult` messages, and the rarer roles (`bashExecution` for a `!command` typed in
//!   the TUI, `custom`, `branchSummary`, `compactionSummary`);
//! - `compaction`: the summary pi sends in place of what came before `firstKeptEntryId`;
//! - `branch_summary` and `custom_message`: what pi sends as context;
//! - `session_info {name}`: the title (the newest one); `model_change`: the model; a relay's
//!   `session-relay` entry: its provenance. Other known types carry no conversation.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use serde::de::MapAccess;
use serde_json::{Value, json};

use crate::adapter::part::{Cuts, LineSize};
use crate::adapter::tree::{self, Id, Parent};
use crate::adapter::{KeptOutput, OutputCut, ReadOptions, as_call, tally};
use crate::jsonl::fields::{self, Fields, Str, Val, fields_struct};
use crate::jsonl::{self, Line, str_field};
use crate::model::{Message, MessageKind, Role, Session, Timestamp};

/// Entry types that carry no conversation.
const QUIET_TYPES: &[&str] = &[
    "thinking_level_change",
    "label",
    "session_info",
    "model_change",
];

/// An entry of the branch as the second pass hands it on.
struct Entry {
    line: usize,
    value: Value,
    /// A tool result's output as the read keeps it, when it cut it (`OutputCut::keep`): the
    /// entry's own `content` is then dropped.
    kept: Option<KeptOutput>,
    /// A user message a relay wrote as context (see `RELAY_FIELD`).
    relayed_context: bool,
}

/// The id in the session header of the file at `path` (its first line), if it has one.
pub fn header_id(path: &Path) -> Option<String> {
    // A header is one short line; a longer first line is left to the scan.
    let v = crate::adapter::first_line(path, 4096)?;
    is_header(&v).then(|| str_field(&v, "id").map(str::to_string))?
}

fn is_header(v: &Value) -> bool {
    str_field(v, "type") == Some("session") && str_field(v, "id").is_some()
}

/// Reads the file in two passes: the first keeps each entry's id and parent (`Node`), from
/// which the branch is found; the second parses only the branch's entries, each turned into
/// messages as it comes, its tool outputs cut as `opts` ask and older turns folded.
pub fn read(path: &Path, opts: ReadOptions) -> Result<Session> {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let mut session = Session::new(super::NAME, "pi-jsonl", stem.into_owned());
    session.source_path = Some(path.display().to_string());
    let tree = Tree::read(path)?;
    session.record_pass(&tree.pass);
    match &tree.header {
        Some(h) => apply_header(&mut session, h),
        None if tree.first_line.is_some() => session.warn(
            tree.first_line,
            "not a pi session: the first line is not a session header (pi does not list it)",
        ),
        None => session.warn(None, "empty file: no session header"),
    }
    let on_path = branch(&tree.nodes, &mut session);
    let cuts = Cuts::of(&opts, || on_path.iter().map(|&i| tree.nodes[i].size));
    let lines: Vec<usize> = on_path.iter().map(|&i| tree.nodes[i].size.line).collect();
    let Tree { title, .. } = tree;
    let mut state = State::default();
    let branch = tree::Branch {
        groups: lines.into_iter().map(|l| vec![l]).collect(),
        pass: jsonl::Pass::default(),
        what: "entries",
    };
    let prepare = |no, v| prepare(no, v, cuts.cut(no));
    branch.read(
        path,
        opts.fold.as_ref(),
        &mut session,
        prepare,
        |_, _, entries, session| {
            for e in entries {
                entry(e, session, &mut state);
            }
        },
    )?;
    finish(&mut session, title, state);
    Ok(session)
}

/// What the first pass keeps of the file.
struct Tree {
    pass: jsonl::PassStats,
    /// The first line that is not blank, JSON or not.
    first_line: Option<usize>,
    header: Option<Value>,
    /// Every JSON line but the header, in file order.
    nodes: Vec<Node>,
    /// The newest `session_info`'s name (`Some(None)`: it has none).
    title: Option<Option<String>>,
}

/// What the first pass keeps of an entry: how it links, and its size for the tail.
struct Node {
    /// `id`, when it is a string.
    id: Option<Id>,
    /// It has an `id`, whatever its value.
    has_id: bool,
    /// `parentId`, when it is a string.
    parent: Option<Id>,
    size: LineSize,
}

/// A line as the first pass parses it: the few fields it keeps, nothing else built.
#[derive(Default)]
struct Light<'a> {
    kind: Str<'a>,
    id: Str<'a>,
    has_id: bool,
    parent: Str<'a>,
    name: Str<'a>,
    relay: Str<'a>,
    message: Val<'a, MessageRole<'a>>,
}

impl<'de> Fields<'de> for Light<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "id" => {
                self.has_id = true;
                self.id = map.next_value()?;
            }
            "parentId" => self.parent = map.next_value()?,
            "name" => self.name = map.next_value()?,
            super::RELAY_FIELD => self.relay = map.next_value()?,
            "message" => self.message = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

fields_struct! {
    /// A message's role.
    struct MessageRole<'a> {
        role: Str<'a> = "role",
    }
}

/// A line as the first pass hands it on.
struct Seen {
    node: Node,
    /// The whole line, when it is a session header.
    header: Option<Value>,
    /// A `session_info`'s name.
    info_name: Option<Option<String>>,
}

/// The first pass's view of line `no` (`None`: not JSON).
fn seen(no: usize, text: &str) -> Option<Seen> {
    let l = fields::parse::<Light>(text)?;
    let header = match l.kind.is("session") {
        true => serde_json::from_str::<Value>(text).ok().filter(is_header),
        false => None,
    };
    let role = l.message.obj().and_then(|m| m.role.get());
    Some(Seen {
        node: Node {
            id: l.id.get().map(Id::new),
            has_id: l.has_id,
            parent: l.parent.get().map(Id::new),
            size: LineSize {
                line: no,
                bytes: text.len(),
                turn: role == Some("user") && !l.relay.is("context"),
            },
        },
        header,
        info_name: l.kind.is("session_info").then(|| l.name.owned()),
    })
}

impl Tree {
    fn read(path: &Path) -> Result<Tree> {
        let mut tree = Tree {
            pass: Default::default(),
            first_line: None,
            header: None,
            nodes: Vec::new(),
            title: None,
        };
        tree.pass = jsonl::for_each_line(
            path,
            jsonl::Pass {
                step: Some(TREE_STEP),
                ..Default::default()
            },
            seen,
            // Only a line `Light` could not parse comes here, and it is not JSON to `Value`
            // either: this cannot be called.
            |no, v| seen(no, &v.to_string()).expect("a Value is JSON"),
            |no, line| {
                let first = tree.first_line.is_none();
                tree.first_line.get_or_insert(no);
                if let Line::Json(s) = line {
                    if first && s.header.is_some() {
                        tree.header = s.header;
                        return Ok(());
                    }
                    if let Some(name) = s.info_name {
                        tree.title = Some(name);
                    }
                    tree.nodes.push(s.node);
                }
                Ok(())
            },
        )?;
        Ok(tree)
    }
}

/// The progress step of the first pass: the read after it is `reading`.
const TREE_STEP: &str = "finding the branch in";

fn apply_header(session: &mut Session, h: &Value) {
    if let Some(id) = str_field(h, "id") {
        session.id = id.to_string();
    }
    session.cwd = str_field(h, "cwd").map(str::to_string);
    session.created = h.get("timestamp").and_then(Timestamp::from_value);
    if let Some(v) = h.get("version") {
        session.extra.insert("version".into(), v.clone());
    }
    if let Some(p) = h.get("parentSession") {
        session.extra.insert("parent_session".into(), p.clone());
    }
}

/// The indexes of the entries on the path from the leaf (the last entry with an id) to the
/// root, in order, as pi's context follows it. Entries off it are counted as abandoned; an
/// entry without an id, a parent that is missing or a loop are warned of.
fn branch(nodes: &[Node], session: &mut Session) -> Vec<usize> {
    let mut by_id: HashMap<&Id, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        match &n.id {
            Some(id) => {
                by_id.insert(id, i);
            }
            None => session.warn(
                Some(n.size.line),
                "entry without an id skipped: pi cannot place it in the session's tree",
            ),
        }
    }
    let leaf = nodes.iter().rposition(|n| n.id.is_some());
    let walk = tree::walk_up(leaf, |i| match &nodes[i].parent {
        Some(p) => by_id
            .get(p)
            .map_or_else(|| Parent::Missing(p.to_string()), |&at| Parent::At(at)),
        None => Parent::Root,
    });
    if let Some(i) = walk.looped_at {
        session.warn(
            Some(nodes[i].size.line),
            "the entries' parentId links loop here",
        );
    }
    if let Some((i, p)) = walk.missing_parent {
        session.warn(
            Some(nodes[i].size.line),
            format!("parentId {p} names no entry of the file: the context starts here"),
        );
    }
    let ids = nodes.iter().filter(|n| n.has_id).count();
    session.stats.abandoned_branch_lines = ids - walk.path.len();
    walk.path
}

/// What the path's entries say of the whole session.
#[derive(Default)]
struct State {
    /// The model of the newest answer or `model_change` on the path.
    model: Option<String>,
}

/// One entry on the path.
fn entry(mut e: Entry, session: &mut Session, state: &mut State) {
    let value = std::mem::take(&mut e.value);
    let v = &value;
    let ts = v.get("timestamp").and_then(Timestamp::from_value);
    let kind = str_field(v, "type").unwrap_or_default();
    let summary = |key: &str| str_field(v, key).unwrap_or_default().to_string();
    match kind {
        "message" => match v.get("message") {
            Some(m) => message(m, &mut e, ts, session, state),
            None => session.warn(Some(e.line), "message entry without a message skipped"),
        },
        "compaction" => {
            let mut m = Message::new(Role::System, summary("summary"))
                .with_time(ts)
                .with_meta("line", e.line)
                .with_kind(MessageKind::Compaction);
            for (key, name) in [
                ("firstKeptEntryId", "first_kept"),
                ("tokensBefore", "tokens_before"),
            ] {
                if let Some(x) = v.get(key) {
                    m.metadata.insert(name, x.clone());
                }
            }
            session.messages.push(m);
        }
        "branch_summary" => session.messages.push(
            Message::new(Role::System, summary("summary"))
                .with_time(ts)
                .with_meta("line", e.line)
                .with_kind(MessageKind::CompactSummary),
        ),
        "custom_message" => session.messages.push(
            Message::new(Role::System, text_of(v.get("content")))
                .with_time(ts)
                .with_meta("line", e.line)
                .with_kind(MessageKind::Context),
        ),
        super::RELAY_ENTRY => {
            if let Some(p) = v.get("provenance") {
                session.extra.insert("provenance".into(), p.clone());
            }
            skipped(session, kind);
        }
        "custom" => skipped(session, kind),
        k if QUIET_TYPES.contains(&k) => {
            if k == "model_change"
                && let Some(model) = str_field(v, "modelId")
            {
                state.model = Some(model.to_string());
            }
            skipped(session, k);
        }
        other => {
            tally(&mut session.stats.unknown_types, other, 1);
        }
    }
}

fn skipped(session: &mut Session, kind: &str) {
    tally(&mut session.stats.skipped_types, kind, 1);
}

/// A `message` entry's message.
fn message(
    m: &Value,
    e: &mut Entry,
    ts: Option<Timestamp>,
    session: &mut Session,
    state: &mut State,
) {
    let base = |role: Role, text: String| {
        Message::new(role, text)
            .with_time(ts.clone())
            .with_meta("line", e.line)
    };
    match str_field(m, "role").unwrap_or_default() {
        "user" => {
            let relayed_context = e.relayed_context;
            let role = if relayed_context {
                Role::System
            } else {
                Role::User
            };
            let mut msg = base(role, text_of(m.get("content")));
            if relayed_context {
                msg = msg.with_kind(MessageKind::Context);
            }
            let images = images(m.get("content"));
            if images > 0 {
                msg = msg.with_meta("images", images);
            }
            session.messages.push(msg);
        }
        "assistant" => assistant(m, &base, session, state),
        "toolResult" => {
            let mut r = base(Role::ToolResult, String::new());
            r.tool_call_id = str_field(m, "toolCallId").map(str::to_string);
            r.tool_name = str_field(m, "toolName").map(str::to_string);
            r.is_error = m.get("isError").and_then(Value::as_bool).unwrap_or(false);
            match e.kept.take() {
                Some(kept) => kept.apply_to(&mut r),
                None => r.content = text_of(m.get("content")),
            }
            session.messages.push(r);
        }
        "bashExecution" => bash_execution(m, &base, session),
        "custom" => session
            .messages
            .push(base(Role::System, text_of(m.get("content"))).with_kind(MessageKind::Context)),
        "branchSummary" => session.messages.push(
            base(
                Role::System,
                str_field(m, "summary").unwrap_or_default().into(),
            )
            .with_kind(MessageKind::CompactSummary),
        ),
        "compactionSummary" => session.messages.push(
            base(
                Role::System,
                str_field(m, "summary").unwrap_or_default().into(),
            )
            .with_kind(MessageKind::Compaction),
        ),
        other => {
            tally(
                &mut session.stats.unknown_types,
                format!("message:{other}"),
                1,
            );
        }
    }
}

/// An assistant message: its blocks in order, as reasoning, text and tool calls.
fn assistant(
    m: &Value,
    base: &dyn Fn(Role, String) -> Message,
    session: &mut Session,
    state: &mut State,
) {
    let model = str_field(m, "model").filter(|s| !s.is_empty());
    if let Some(model) = model {
        state.model = Some(model.to_string());
    }
    let at = session.messages.len();
    // Where the answer starts in the whole session, folded turns counted.
    let at_whole = session.end();
    let blocks: &[Value] = match m.get("content") {
        Some(Value::Array(b)) => b,
        Some(Value::String(s)) => {
            session.messages.push(base(Role::Assistant, s.clone()));
            &[]
        }
        _ => &[],
    };
    for b in blocks {
        match str_field(b, "type").unwrap_or_default() {
            "text" => session.messages.push(base(
                Role::Assistant,
                str_field(b, "text").unwrap_or_default().into(),
            )),
            "thinking" => {
                let mut r = base(
                    Role::Reasoning,
                    str_field(b, "thinking").unwrap_or_default().into(),
                );
                if b.get("thinkingSignature").is_some_and(|s| !s.is_null()) {
                    r.metadata.insert("signed", json!(true));
                }
                session.messages.push(r);
            }
            "toolCall" => tool_call(b, base, session),
            other => {
                tally(
                    &mut session.stats.unknown_types,
                    format!("block:{other}"),
                    1,
                );
            }
        }
    }
    if let Some(model) = model {
        for m in &mut session.messages[at..] {
            m.metadata.insert("model", json!(model));
        }
    }
    let usage = m.get("usage");
    let n = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(jsonl::as_count)
            .unwrap_or(0)
    };
    let prompt = n("input") + n("cacheRead") + n("cacheWrite");
    if prompt > 0 {
        session.record_context_usage(prompt, at_whole, model);
    }
    // The person stopped the answer (Escape): pi keeps what came and records why it ended.
    if str_field(m, "stopReason") == Some("aborted") {
        let why = str_field(m, "errorMessage").unwrap_or("aborted");
        session
            .messages
            .push(base(Role::System, why.into()).with_kind(MessageKind::Interruption));
    }
}

fn tool_call(b: &Value, base: &dyn Fn(Role, String) -> Message, session: &mut Session) {
    let name = str_field(b, "name").unwrap_or_default().to_string();
    let input = b.get("arguments").cloned().unwrap_or_else(|| json!({}));
    let what = super::tools::classify(&name, &input);
    if super::tools::WRITE_TOOLS.contains(&name.as_str()) {
        session.touch_file(&what.1);
    }
    let id = str_field(b, "id").map(str::to_string);
    let c = as_call(
        base(Role::ToolCall, String::new()),
        id,
        name,
        Some(input),
        what,
    );
    session.messages.push(c);
}

/// A command the person ran with `!` in the TUI: a shell call and its output.
fn bash_execution(m: &Value, base: &dyn Fn(Role, String) -> Message, session: &mut Session) {
    let command = str_field(m, "command").unwrap_or_default().to_string();
    let id = format!("bash-{}", session.end());
    let mut c = base(Role::ToolCall, String::new());
    c.tool_call_id = Some(id.clone());
    c.tool_name = Some("bash".into());
    c.tool_input = Some(json!({"command": command}));
    c.tool_kind = Some(crate::model::ToolKind::Shell);
    c.key_arg = Some(command);
    let mut r = base(
        Role::ToolResult,
        str_field(m, "output").unwrap_or_default().into(),
    );
    r.tool_call_id = Some(id);
    r.tool_name = Some("bash".into());
    let code = m.get("exitCode").and_then(Value::as_f64).map(|c| c as i64);
    r.is_error = code.is_some_and(|c| c != 0) || m.get("cancelled") == Some(&json!(true));
    if let Some(code) = code {
        r.metadata.insert("exit_code", json!(code));
    }
    session.messages.push(c.with_kind(MessageKind::UserShell));
    session.messages.push(r);
}

/// The text of a message's content: a string, or its text blocks one after another.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_field(b, "type") == Some("text"))
            .filter_map(|b| str_field(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn images(content: Option<&Value>) -> usize {
    match content {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_field(b, "type") == Some("image"))
            .count(),
        _ => 0,
    }
}

/// Entry `no` as the second pass keeps it, on the thread that parsed it: a tool result's
/// output cut as `cut` says (a long session is never held with its outputs whole), and what
/// is never read dropped.
fn prepare(no: usize, mut v: Value, cut: Option<OutputCut>) -> Entry {
    let relayed_context = str_field(&v, super::RELAY_FIELD) == Some("context");
    let mut kept = None;
    if let Some(m) = v.get_mut("message")
        && str_field(m, "role") == Some("toolResult")
        && let Some(o) = m.as_object_mut()
    {
        // `details` repeats the output (an edit's diff) and is never read.
        o.remove("details");
        if let Some(cut) = cut {
            let text = text_of(o.get("content"));
            kept = cut.keep(&text, text.chars().count());
            if kept.is_some() {
                o.remove("content");
            }
        }
    }
    Entry {
        line: no,
        value: v,
        kept,
        relayed_context,
    }
}

/// What the whole file says beyond the path: the title (`title`: the newest `session_info`'s
/// name, wherever it is), the model, the times.
fn finish(session: &mut Session, title: Option<Option<String>>, state: State) {
    // pi's title is the newest `session_info`'s name; an empty one clears it.
    let named = title
        .flatten()
        .filter(|n| !n.trim().is_empty())
        .map(|n| crate::text::one_line(&n));
    session.title = named.or_else(|| session.first_user_prompt().map(crate::text::one_line));
    if let Some(model) = state.model {
        session.extra.insert("model".into(), json!(model));
    }
    session.fill_times_from_messages();
    session.pair_tool_calls();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_lines(lines: &[&str], opts: crate::adapter::ReadOptions) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        read(&path, opts).unwrap()
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"0199-x","timestamp":"2026-11-28T09:00:00.000Z","cwd":"/p"}"#;

    fn user(id: &str, parent: &str, text: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-11-28T09:00:01.000Z","message":{{"role":"user","content":"{text}"}}}}"#
        )
    }

    /// The conversation is the path from the last entry up its parents: a later branch that
    /// starts from an earlier entry leaves the first one out, as pi's context does.
    #[test]
    fn the_last_entry_is_the_leaf_and_other_branches_are_left_out() {
        let lines = [
            HEADER.to_string(),
            user("a0000001", "null", "first"),
            user("a0000002", r#""a0000001""#, "abandoned"),
            user("a0000003", r#""a0000001""#, "kept"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let s = read_lines(&lines, Default::default());
        let texts: Vec<&str> = s.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["first", "kept"]);
        assert_eq!(s.stats.abandoned_branch_lines, 1);
        assert_eq!((s.id.as_str(), s.cwd.as_deref()), ("0199-x", Some("/p")));
    }

    /// Every line the reader cannot place is said, with its number: never dropped silently.
    #[test]
    fn bad_lines_are_warned_of_with_their_line() {
        let lines = [
            "{\"type\":\"message\",\"id\":\"cut".to_string(),
            user("a0000001", "null", "first"),
            r#"{"type":"label","label":"no id"}"#.to_string(),
            user("a0000002", r#""gone0000""#, "orphan"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let s = read_lines(&lines, Default::default());
        let warned: Vec<Option<usize>> = s.warnings.iter().map(|w| w.line).collect();
        assert_eq!(
            warned,
            [Some(1), Some(1), Some(3), Some(4)],
            "{:?}",
            s.warnings
        );
        assert!(s.warnings[1].message.contains("not a pi session"));
        assert_eq!(s.messages.len(), 1, "the orphan starts the context");
        // A loop of parents ends the walk, said.
        let looped = [
            HEADER.to_string(),
            user("a0000001", r#""a0000002""#, "one"),
            user("a0000002", r#""a0000001""#, "two"),
        ];
        let looped: Vec<&str> = looped.iter().map(String::as_str).collect();
        let s = read_lines(&looped, Default::default());
        assert!(
            s.warnings.iter().any(|w| w.message.contains("loop")),
            "{:?}",
            s.warnings
        );
    }

    /// A long tool output is cut while parsing, and says how long it was.
    #[test]
    fn long_outputs_are_cut_as_the_options_ask() {
        let output = "x".repeat(5000);
        let result = format!(
            r#"{{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-11-28T09:00:02.000Z","message":{{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{{"type":"text","text":"{output}"}}],"details":{{"diff":"d"}},"isError":false}}}}"#
        );
        let call = r#"{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-11-28T09:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"yes"}}],"usage":{"input":10,"cacheRead":5,"totalTokens":15}}}"#;
        let opts = crate::adapter::ReadOptions {
            max_tool_output: Some(1000),
            ..Default::default()
        };
        let s = read_lines(&[HEADER, call, &result], opts);
        let r = &s.messages[1];
        assert!(r.content.chars().count() < 1200, "{}", r.content.len());
        assert_eq!(r.original_chars(), Some(5000));
        assert_eq!(s.context_usage.as_ref().map(|u| u.tokens), Some(15));
        let whole = read_lines(&[HEADER, call, &result], Default::default());
        assert_eq!(whole.messages[1].content, output);
    }
}
