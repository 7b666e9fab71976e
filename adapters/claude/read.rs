//! Reads a Claude Code transcript into the neutral model, choosing the branch Claude Code itself
//! would load.

use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};

use super::chain::{self, CHAIN_TYPES, Id, Link};
use super::injected::{injected_kind, unescaped};

mod fast;
use crate::adapter::OutputCut;
use crate::jsonl::pruned::ORIGINAL_CHARS;
use crate::jsonl::{self, Line, str_field};
use crate::model::{
    Message, MessageKind, OutputState, Role, Session, SubagentLink, TimeSpan, Timestamp, Todo,
    TodoStatus,
};

/// Known line types that hold no conversation (UI state, request records, bookkeeping).
const NON_CONVERSATION_TYPES: &[&str] = &[
    "summary",
    "custom-title",
    "ai-title",
    "last-prompt",
    "tag",
    "mode",
    "permission-mode",
    "file-history-snapshot",
    "file-history-delta",
    "queue-operation",
    "content-replacement",
    "worktree-state",
    "pr-link",
    "agent-name",
    "cost-state",
    "atis-latch",
    "tools-used",
    "api-request-shape",
    "api-request-blob",
    "api-request",
];

/// A chain line as the thread that parsed it hands it on: what it adds to the session, not the
/// parsed line.
struct Entry {
    line: usize,
    sidechain: bool,
    /// What the line adds to the session, in order (see `stage`).
    ops: Vec<Op>,
    /// A user line with the person's own words: a turn starts here.
    starts_turn: bool,
    /// A tool output of the line was read only in part.
    reduced: bool,
    /// The line's content in characters as a full read keeps it, to size the tail.
    chars: usize,
}

/// A chain line as the reader keeps it until the branch is known. Its messages go straight
/// into the reader's one list of messages in file order (`Entry::keep`): held line by line
/// they took a small allocation each, and freeing them after moving the messages out left a
/// long session's heap full of holes (70 MB of 195 at 300 MB).
struct Kept {
    line: usize,
    sidechain: bool,
    starts_turn: bool,
    reduced: bool,
    chars: usize,
    /// Its messages are `staged[first..first + count]`.
    first: usize,
    count: usize,
    /// Its other operations, each with how many of its messages come before it.
    later: Vec<(usize, Later)>,
}

/// What a chain line does to the session besides adding messages, kept until the branch is
/// known (see `apply`).
enum Later {
    Warn(usize, String),
    Touch(String),
    Todos(Vec<Todo>),
    /// An assistant line's usage: the prompt held everything before its API message.
    Usage {
        tokens: u64,
        message_id: Option<String>,
        model: Option<String>,
    },
    Skipped(String),
}

impl Entry {
    /// Moves the line's messages to the end of `staged`.
    fn keep(self, staged: &mut Vec<Message>) -> Kept {
        let first = staged.len();
        let mut later = Vec::new();
        for op in self.ops {
            match op {
                Op::Push(m) => staged.push(m),
                Op::Then(l) => later.push((staged.len() - first, l)),
            }
        }
        Kept {
            line: self.line,
            sidechain: self.sidechain,
            starts_turn: self.starts_turn,
            reduced: self.reduced,
            chars: self.chars,
            first,
            count: staged.len() - first,
            later,
        }
    }
}

/// One line as the thread that parsed it hands it on.
struct Facts {
    timestamp: Option<String>,
    session_id: Option<String>,
    version: Option<String>,
    branch: Option<String>,
    cwd: Option<String>,
    entrypoint: Option<String>,
    body: Body,
}

enum Body {
    /// Not an object with a string `type`.
    NoType,
    Chain(Entry, Link),
    /// Any other line type, whole.
    Other(String, Value),
}

/// What a chain line does to the session, in file order: staging it where the line is parsed
/// lets the parsed line go there and then.
enum Op {
    Push(Message),
    Then(Later),
}

pub fn read(path: &Path, opts: crate::adapter::ReadOptions) -> Result<Session> {
    let subagent_of = super::subagent_parent(path);
    let mut session = Session::new(
        super::NAME,
        if subagent_of.is_some() {
            "claude-subagent"
        } else {
            "claude-jsonl"
        },
        super::id_of(path),
    );
    session.source_path = Some(path.display().to_string());

    let mut lines = Lines {
        chain: ChainLines::new(path, &opts, subagent_of.is_some(), &mut session),
        envelope: Envelope::default(),
        records: Records::default(),
        untyped: 0,
    };
    let pass = lines.first_pass(path, &opts, &mut session)?;
    session.record_pass(&pass);
    let Lines {
        chain,
        envelope,
        mut records,
        untyped,
    } = lines;
    envelope.describe(&mut session, subagent_of.as_ref());
    records.keep_in(&mut session);

    if chain.fold_broken() {
        // This parse of a line is not the one the branch was chosen by (a line that is not
        // JSON to one parser, a key written twice): what was folded may not be the branch's.
        session.folded.get_or_insert_default().broken = true;
        return Ok(session);
    }
    if chain.count() == 0 {
        warn_no_conversation(&mut session, path, pass.lines, untyped);
    }
    if let Some(t) = chain.into_branch(path, &opts, &pass, &mut session)? {
        session.todos = t;
    }

    session.title = records.title(&session);
    if subagent_of.is_none() {
        session.subagents = find_subagents(path);
    }
    session.pair_tool_calls();
    session.fill_times_from_messages();
    Ok(session)
}

/// The first pass's state: what the lines read so far hold, by kind of line.
struct Lines {
    chain: ChainLines,
    envelope: Envelope,
    records: Records,
    /// Lines that are not an object with a string `type`: when every line is one, the file is
    /// not a transcript.
    untyped: usize,
}

impl Lines {
    /// Reads the whole file, each line parsed on a worker thread and handed on in order. A
    /// relay keeps at most `max` characters of any output: tool outputs are cut while each line
    /// is parsed, and with a tail, outputs before it are kept only to their first line.
    fn first_pass(
        &mut self,
        path: &Path,
        opts: &crate::adapter::ReadOptions,
        session: &mut Session,
    ) -> Result<jsonl::PassStats> {
        let max = opts.max_tool_output;
        let cut = max.map(|max| OutputCut {
            max,
            reduced: opts.full_tail_tokens.is_some(),
            mask: opts.mask.as_ref().map(|m| &*m.0),
        });
        let pass = jsonl::Pass {
            prune: max.map(prune),
            ..Default::default()
        };
        let full_max = max.unwrap_or(usize::MAX);
        let lean = opts.lean;
        jsonl::for_each_line(
            path,
            pass,
            |no, text| cut.and_then(|cut| fast::facts(no, text, cut, full_max, lean)),
            |no, v| facts(no, v, cut, full_max, lean),
            |_, line| {
                if let Line::Json(f) = line {
                    self.line(f, session);
                }
                Ok(())
            },
        )
    }

    /// Takes in a line that parsed (the pass counts those that did not).
    fn line(&mut self, f: Facts, session: &mut Session) {
        match self.envelope.see(f) {
            Body::NoType => {
                self.untyped += 1;
                *session
                    .stats
                    .unknown_types
                    .entry("<no type>".into())
                    .or_default() += 1;
            }
            Body::Chain(entry, link) => self.chain.line(entry, link, session),
            Body::Other(kind, v) => self.records.line(kind, v, &mut session.stats),
        }
    }
}

/// What the lines say of the session around its conversation: its id, version, git branch,
/// directory and entrypoint, and when it ran.
#[derive(Default)]
struct Envelope {
    times: TimeSpan,
    session_id: Option<String>,
    version: Option<String>,
    branch: Option<String>,
    cwd: Option<String>,
    entrypoint: Option<String>,
}

impl Envelope {
    /// Takes in what a line says of the session (the first id, directory and entrypoint; the
    /// last version and branch); gives back the rest of the line.
    fn see(&mut self, f: Facts) -> Body {
        if let Some(ts) = &f.timestamp {
            self.times.see_str(ts);
        }
        if let Some(s) = f.session_id {
            self.session_id.get_or_insert(s);
        }
        if let Some(s) = f.version {
            self.version = Some(s);
        }
        if let Some(s) = f.branch {
            self.branch = Some(s);
        }
        if let Some(s) = f.cwd {
            self.cwd.get_or_insert(s);
        }
        if let Some(s) = f.entrypoint {
            self.entrypoint.get_or_insert(s);
        }
        f.body
    }

    /// Sets it on the session, a subagent's (of the session `subagent_of`) or not.
    fn describe(self, session: &mut Session, subagent_of: Option<&String>) {
        if let Some(id) = self.session_id {
            if subagent_of.is_none() {
                session.id = id;
            } else {
                // A subagent's lines carry the parent's session id; its own id is the file's.
                session.parent_id = Some(id);
            }
        }
        if let Some(p) = subagent_of
            && session.parent_id.is_none()
        {
            session.parent_id = Some(p.clone());
        }
        session.source_version = self.version;
        session.cwd = self.cwd;
        if let Some(b) = self.branch {
            session.git = Some(crate::model::GitInfo {
                branch: Some(b),
                commit: None,
                remote: None,
            });
        }
        // Created: the earliest time a line states; updated: the newest (see `TimeSpan`).
        session.created = self.times.first();
        session.updated = self.times.last();
        if let Some(e) = self.entrypoint {
            session.extra.insert("entrypoint".into(), json!(e));
        }
    }
}

/// What the lines of no conversation hold that the reader keeps: the session's titles,
/// summaries, last prompt and tags.
#[derive(Default)]
struct Records {
    custom_title: Option<String>,
    ai_title: Option<String>,
    summaries: Vec<Value>,
    last_prompt: Option<String>,
    tags: Vec<Value>,
}

impl Records {
    /// A line of type `kind` that is not a chain line: kept, or counted as skipped or unknown.
    fn line(&mut self, kind: String, v: Value, stats: &mut crate::model::ReadStats) {
        match kind.as_str() {
            "custom-title" => self.custom_title = str_field(&v, "customTitle").map(str::to_string),
            "ai-title" => {
                self.ai_title = str_field(&v, "aiTitle")
                    .or_else(|| str_field(&v, "title"))
                    .map(str::to_string)
            }
            "summary" => self.summaries.push(v),
            "last-prompt" => self.last_prompt = str_field(&v, "lastPrompt").map(str::to_string),
            "tag" => self.tags.push(v),
            k if NON_CONVERSATION_TYPES.contains(&k) => {
                *stats.skipped_types.entry(kind).or_default() += 1;
            }
            _ => *stats.unknown_types.entry(kind).or_default() += 1,
        }
    }

    /// Keeps them in the session's extras, but for the titles: the title waits for the
    /// messages (see `title`).
    fn keep_in(&mut self, session: &mut Session) {
        if !self.summaries.is_empty() {
            let summaries = std::mem::take(&mut self.summaries);
            session
                .extra
                .insert("summaries".into(), Value::Array(summaries));
        }
        if let Some(p) = &self.last_prompt {
            session.extra.insert("last_prompt".into(), json!(p));
        }
        if !self.tags.is_empty() {
            let tags = std::mem::take(&mut self.tags);
            session.extra.insert("tags".into(), Value::Array(tags));
        }
        if let Some(t) = &self.ai_title {
            session.extra.insert("ai_title".into(), json!(t));
        }
    }

    /// The session's title: the one the person gave, else the one Claude Code made, else the
    /// first prompt of the branch.
    fn title(self, session: &Session) -> Option<String> {
        self.custom_title
            .or(self.ai_title)
            .or_else(|| session.first_user_prompt().map(crate::text::one_line))
    }
}

/// The chain lines the first pass keeps: every one with its link, its messages staged in the
/// session in file order until the branch is chosen; or, when the branch was chosen ahead (a
/// relay's read that folds), the branch's alone.
struct ChainLines {
    entries: Vec<Kept>,
    links: chain::Links,
    folding: Option<Folding>,
    subagent: bool,
}

impl ChainLines {
    fn new(
        path: &Path,
        opts: &crate::adapter::ReadOptions,
        subagent: bool,
        session: &mut Session,
    ) -> ChainLines {
        // A relay's read folds older turns as it reads them: the branch is chosen ahead.
        let folding = opts.fold.as_ref().and_then(|fold| {
            let ahead = super::scan::branch_ahead(path, subagent).ok()?;
            Some(Folding::new(fold, ahead))
        });
        // Room for a message per KB of the file, more than a long session holds (the bench's
        // transcripts take 3 KB a message): grown by doubling from empty, the list was copied
        // a dozen times, and pages reserved but never written take no memory. A system that
        // will not reserve that much (a huge file, a limit on address space) gets a list that
        // grows.
        if folding.is_none() {
            let _ = session.messages.try_reserve_exact(
                std::fs::metadata(path).map_or(0, |m| usize::try_from(m.len() >> 10).unwrap_or(0)),
            );
        }
        ChainLines {
            entries: Vec::new(),
            links: chain::Links::default(),
            folding,
            subagent,
        }
    }

    fn line(&mut self, entry: Entry, link: Link, session: &mut Session) {
        match self.folding.as_mut() {
            Some(fold) => fold.chain_line(entry, &link, session, &mut self.entries, self.subagent),
            None => {
                self.entries.push(entry.keep(&mut session.messages));
                self.links.push(link);
            }
        }
    }

    /// Whether a fold was given up: this read's chain lines are not those the branch was
    /// chosen by.
    fn fold_broken(&self) -> bool {
        self.folding
            .as_ref()
            .is_some_and(|fold| fold.differs || fold.next != fold.ahead.chain_lines())
    }

    /// How many chain lines the file holds.
    fn count(&self) -> usize {
        self.folding.as_ref().map_or(self.entries.len(), |f| f.next)
    }

    /// Leaves the branch's messages in the session, the tail's read again in full when `opts`
    /// ask for a tail, and does what else the branch's lines do. Gives the branch's last todo
    /// list.
    fn into_branch(
        self,
        path: &Path,
        opts: &crate::adapter::ReadOptions,
        pass: &jsonl::PassStats,
        session: &mut Session,
    ) -> Result<Option<Vec<Todo>>> {
        let active = match &self.folding {
            Some(fold) => {
                warn_branch(
                    session,
                    fold.ahead.cycle_line,
                    fold.ahead.missing_parent.clone(),
                );
                vec![true; self.entries.len()]
            }
            None => active_lines(&self.entries, &self.links, self.subagent, session),
        };
        let ChainLines {
            mut entries,
            links,
            folding,
            ..
        } = self;
        drop(links);
        if let (Some(max), Some(tokens)) = (opts.max_tool_output, opts.full_tail_tokens) {
            let tail = Tail {
                tokens,
                max,
                lean: opts.lean,
            };
            // The tail reaches back at most to the first line after the folded turns.
            let floor = session
                .folded
                .as_ref()
                .map_or(0, |f| entries.partition_point(|e| e.first < f.at));
            let messages = &mut session.messages;
            read_tail_in_full(path, pass, &mut entries, messages, &active, floor, tail)?;
        }
        Ok(match folding {
            // What the lines do besides adding messages was done as they were read.
            Some(fold) => {
                for (line, w) in fold.warnings {
                    session.warn(Some(line), w);
                }
                fold.todos
            }
            None => keep_branch(entries, active, session),
        })
    }
}

/// Of lines read whole (no fold): keeps the branch's messages, in place, then does what else
/// its lines do, in file order. Gives the branch's last todo list.
fn keep_branch(entries: Vec<Kept>, active: Vec<bool>, session: &mut Session) -> Option<Vec<Todo>> {
    let mut on_branch = entries
        .iter()
        .zip(&active)
        .flat_map(|(e, &on)| std::iter::repeat_n(on, e.count));
    session
        .messages
        .retain(|_| on_branch.next().unwrap_or(false));
    session.messages.shrink_to_fit();
    let mut todos = None;
    let mut seen = 0;
    let mut usages = Usages::of(&session.messages);
    for (e, on) in entries.into_iter().zip(active) {
        if on {
            for (after, op) in e.later {
                apply(op, seen + after, session, &mut todos, &mut usages);
            }
            seen += e.count;
        }
    }
    todos
}

/// Warns of a file without a chain line: not a transcript at all when no line has a type.
fn warn_no_conversation(session: &mut Session, path: &Path, lines: usize, untyped: usize) {
    if lines > 0 && untyped == lines {
        session.warn(
            None,
            format!(
                "{} is not a Claude Code transcript: no line has a `type`",
                path.display()
            ),
        );
    } else {
        session.warn(None, "no conversation lines in this transcript".to_string());
    }
}

/// The keys of a line's `message` that `stage` reads, and of its `usage`.
const KEPT_MESSAGE_KEYS: &[&str] = &["role", "id", "model", "content", "usage"];
const KEPT_USAGE_KEYS: &[&str] = &[
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
];

/// What the reader keeps of line `no`, worked out where it was parsed. `cut` cuts tool
/// outputs (see `shrink`). `full_max` is what a full read cuts outputs to (for
/// `Entry::chars`). `lean`: see `ReadOptions::lean`.
fn facts(no: usize, mut v: Value, cut: Option<OutputCut>, full_max: usize, lean: bool) -> Facts {
    let field = |v: &Value, k: &str| str_field(v, k).map(str::to_string);
    let Some(kind) = field(&v, "type") else {
        return Facts {
            timestamp: None,
            session_id: None,
            version: None,
            branch: None,
            cwd: None,
            entrypoint: None,
            body: Body::NoType,
        };
    };
    let mut f = Facts {
        timestamp: field(&v, "timestamp"),
        session_id: field(&v, "sessionId"),
        version: field(&v, "version"),
        branch: field(&v, "gitBranch"),
        cwd: field(&v, "cwd"),
        entrypoint: field(&v, "entrypoint"),
        body: Body::NoType,
    };
    f.body = if CHAIN_TYPES.contains(&kind.as_str()) {
        shrink(&mut v, cut);
        let (entry, link) = chain_entry(no, kind, &v, full_max, lean);
        Body::Chain(entry, link)
    } else {
        Body::Other(kind, v)
    };
    f
}

/// A chain line staged (see `Op`), and its link for the branch choice.
fn chain_entry(no: usize, kind: String, v: &Value, full_max: usize, lean: bool) -> (Entry, Link) {
    let uuid = str_field(v, "uuid");
    let timestamp = str_field(v, "timestamp");
    let sidechain = v.get("isSidechain").and_then(Value::as_bool) == Some(true);
    let ids = |block_kind: &str, key: &str| -> Vec<String> {
        blocks(v)
            .filter(|b| str_field(b, "type") == Some(block_kind))
            .filter_map(|b| str_field(b, key).map(str::to_string))
            .collect()
    };
    let link = Link {
        user: kind == "user",
        assistant: kind == "assistant",
        uuid: uuid.map(Id::new),
        parent: str_field(v, "parentUuid")
            .or_else(|| str_field(v, "logicalParentUuid"))
            .map(Id::new),
        sidechain,
        time: timestamp.and_then(crate::model::parse_time),
        message_id: v
            .get("message")
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string),
        tool_uses: ids("tool_use", "id"),
        tool_results: ids("tool_result", "tool_use_id"),
    };
    let entry = Entry {
        line: no,
        sidechain,
        ops: stage(no, &kind, uuid, timestamp, v, lean),
        starts_turn: kind == "user" && starts_turn(v),
        reduced: blocks(v).any(|b| b.get(REDUCED).is_some()),
        chars: content_chars(v, full_max),
    };
    (entry, link)
}

/// `message.<key>` of a line (`Value::pointer` parses its path on every call).
fn message_field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get("message").and_then(|m| m.get(key))
}

/// A line's content in characters as a full read keeps it: what the tail is sized by.
fn content_chars(v: &Value, max: usize) -> usize {
    message_field(v, "content").map_or(0, |c| match c {
        Value::String(s) => s.len(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get(ORIGINAL_CHARS).and_then(Value::as_u64) {
                Some(n) => (n as usize).min(max),
                None => text_bytes(b),
            })
            .sum(),
        _ => 0,
    })
}

/// About the length of a value as JSON, without writing it out: its strings' bytes and a few
/// for each key and value around them.
fn text_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len() + 2,
        Value::Array(items) => items.iter().map(|x| text_bytes(x) + 1).sum::<usize>() + 2,
        Value::Object(map) => {
            map.iter()
                .map(|(k, x)| k.len() + 4 + text_bytes(x))
                .sum::<usize>()
                + 2
        }
        _ => 8,
    }
}

/// Applies one of a line's operations other than its messages to the session, whose messages
/// are the branch's up to the line's: `now` of them, in the whole session, come before it.
fn apply(
    op: Later,
    now: usize,
    session: &mut Session,
    todos: &mut Option<Vec<Todo>>,
    usages: &mut Usages,
) {
    match op {
        Later::Warn(line, w) => session.warn(Some(line), w),
        Later::Touch(p) => session.touch_file_at(&p, now),
        Later::Todos(t) => *todos = Some(t),
        Later::Usage {
            tokens,
            message_id,
            model,
        } => {
            let at = usages.start_of(session, message_id, now);
            let compacted = session
                .context_usage
                .as_ref()
                .is_some_and(|u| usages.compacted(u.at_message, now));
            session.record_context_usage_after(tokens, at, compacted, model.as_deref());
        }
        Later::Skipped(k) => *session.stats.skipped_types.entry(k).or_default() += 1,
    }
}

/// A relay's read that folds older turns as it reads them (`ReadOptions::fold`). The branch was
/// chosen ahead (`scan::branch_ahead`), so each chain line is kept or dropped as it comes, and
/// what a kept line does besides adding messages is done there and then, at its place in the
/// whole session, before its turn may be folded.
struct Folding {
    window: crate::adapter::FoldWindow,
    ahead: super::scan::Ahead,
    /// Chain lines met.
    next: usize,
    /// This read's parse of a chain line is not the one the branch was chosen by: the fold is
    /// given up, and the session read again.
    differs: bool,
    usages: Usages,
    todos: Option<Vec<Todo>>,
    /// The lines' own warnings, given after the branch's, as a full read gives them.
    warnings: Vec<(usize, String)>,
}

impl Folding {
    fn new(fold: &crate::adapter::Fold, ahead: super::scan::Ahead) -> Folding {
        Folding {
            window: crate::adapter::FoldWindow::new(fold),
            ahead,
            next: 0,
            differs: false,
            usages: Usages {
                compactions: Vec::new(),
                last: None,
            },
            todos: None,
            warnings: Vec::new(),
        }
    }

    /// Keeps or drops the next chain line, and folds what the window lets go. `entries` are
    /// the kept lines not folded, their messages' places in `session.messages`.
    fn chain_line(
        &mut self,
        entry: Entry,
        link: &Link,
        session: &mut Session,
        entries: &mut Vec<Kept>,
        subagent: bool,
    ) {
        if self.differs {
            return;
        }
        let on = match self
            .ahead
            .on_branch(self.next, chain::fingerprint(entry.line, link))
        {
            Some(on) => on,
            None => {
                self.differs = true;
                return;
            }
        };
        self.next += 1;
        if !on {
            let kind = (link.user, link.assistant);
            count_off_branch(session, kind, entry.sidechain, subagent);
            return;
        }
        let mut kept = entry.keep(&mut session.messages);
        let first = session.end() - kept.count;
        for (i, m) in session.messages[kept.first..].iter().enumerate() {
            if m.is(MessageKind::Compaction) {
                self.usages.compactions.push(first + i);
            }
        }
        for (after, op) in std::mem::take(&mut kept.later) {
            match op {
                Later::Warn(line, w) => self.warnings.push((line, w)),
                op => apply(
                    op,
                    first + after,
                    session,
                    &mut self.todos,
                    &mut self.usages,
                ),
            }
        }
        entries.push(kept);
        let folded = |s: &Session| s.folded.as_ref().map_or(0, |f| f.messages);
        let before = folded(session);
        self.window.after_messages(session);
        let moved = folded(session) - before;
        if let Some(at) = session.folded.as_ref().map(|f| f.at)
            && moved > 0
        {
            // The folded lines' messages are gone; the later ones moved down.
            entries.retain_mut(|e| match e.first {
                f if f < at => true,
                f if f < at + moved => false,
                _ => {
                    e.first -= moved;
                    true
                }
            });
        }
    }
}

/// Where the API message of a usage record starts, and whether the agent compacted its
/// context between two records, over the branch's messages. Claude Code writes an API
/// message as a line per content block, each with the message's usage: found from scratch
/// for each record, both went over the message's lines again for every line, in time that
/// grows with the square of its blocks (a turn of a hundred parallel calls).
struct Usages {
    /// The compactions' places among the messages, in order.
    compactions: Vec<usize>,
    /// The record before: its API message id, where that message starts, and where the
    /// record is.
    last: Option<(String, usize, usize)>,
}

impl Usages {
    fn of(messages: &[Message]) -> Usages {
        Usages {
            compactions: messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m.is(MessageKind::Compaction))
                .map(|(i, _)| i)
                .collect(),
            last: None,
        }
    }

    /// Where the run of messages of API message `id` that ends at `now` starts (`now` without
    /// an id), in the whole session. A folded message is of no run: runs of one API message
    /// hold no request, and folds end before one.
    fn start_of(&mut self, session: &Session, id: Option<String>, now: usize) -> usize {
        let Some(id) = id else {
            self.last = None;
            return now;
        };
        let (fold_at, folded) = session
            .folded
            .as_ref()
            .map_or((0, 0), |f| (f.at, f.messages));
        let same = |i: usize| {
            let kept = match i.checked_sub(fold_at) {
                None => Some(i),
                Some(past) => past.checked_sub(folded).map(|p| fold_at + p),
            };
            kept.and_then(|k| session.messages.get(k))
                .is_some_and(|m| m.metadata.get_str("message_id") == Some(id.as_str()))
        };
        let at = match &self.last {
            // The run goes on from the record before: it starts where that one's did.
            Some((last, at, upto)) if *last == id && *upto <= now && (*upto..now).all(same) => *at,
            _ => {
                let mut at = now;
                while at > 0 && same(at - 1) {
                    at -= 1;
                }
                at
            }
        };
        self.last = Some((id, at, now));
        at
    }

    /// `Session::compacted_between(from, to)`.
    fn compacted(&self, from: usize, to: usize) -> bool {
        let i = self.compactions.partition_point(|&c| c < from);
        self.compactions.get(i).is_some_and(|&c| c < to)
    }
}

/// Collects a chain line's operations (see `Op`).
struct Stage(Vec<Op>);

impl Stage {
    /// The operations, in order: the reading thread moves them out (`Entry::keep`).
    fn into_ops(self) -> Vec<Op> {
        self.0
    }

    fn push(&mut self, m: Message) {
        self.0.push(Op::Push(m));
    }
    fn then(&mut self, l: Later) {
        self.0.push(Op::Then(l));
    }
    fn touch_file(&mut self, p: &str) {
        self.then(Later::Touch(p.to_string()));
    }
    fn skip(&mut self, kind: String) {
        self.then(Later::Skipped(kind));
    }
}

/// By entry: on the branch Claude Code loads (see `chain::active_branch`).
fn active_lines(
    entries: &[Kept],
    links: &chain::Links,
    subagent: bool,
    session: &mut Session,
) -> Vec<bool> {
    let branch = chain::active_branch(links, subagent);
    warn_branch(
        session,
        branch.cycle_at.map(|i| entries[i].line),
        branch.missing_parent.map(|(i, p)| (entries[i].line, p)),
    );
    for (i, e) in entries.iter().enumerate() {
        let link = &links[i];
        if !branch.included[i] {
            count_off_branch(session, (link.user, link.assistant), e.sidechain, subagent);
        }
    }
    branch.included
}

/// What went wrong walking the branch: the line where the walk met a cycle, and the line whose
/// parent is not in the file.
fn warn_branch(session: &mut Session, cycle: Option<usize>, missing: Option<(usize, String)>) {
    if let Some(line) = cycle {
        session.warn(Some(line), "parentUuid cycle; walk stopped");
    }
    if let Some((line, p)) = missing {
        session.warn(
            Some(line),
            format!("parentUuid {p} not found; earlier history is not reachable"),
        );
    }
}

/// Counts a chain line off the branch (`user_or_assistant`: of type user, of type assistant).
fn count_off_branch(
    session: &mut Session,
    user_or_assistant: (bool, bool),
    sidechain: bool,
    subagent: bool,
) {
    if user_or_assistant.0 || user_or_assistant.1 {
        if sidechain && !subagent {
            session.stats.sidechain_lines += 1;
        } else {
            session.stats.abandoned_branch_lines += 1;
        }
    }
}

fn blocks(v: &Value) -> impl Iterator<Item = &Value> {
    message_field(v, "content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Where a chain line's messages come from: each starts with the line's time, number and uuid
/// (no uuid when the read is lean: see `ReadOptions::lean`).
struct Base<'a> {
    ts: Option<Timestamp>,
    line: usize,
    uuid: Option<&'a str>,
}

impl Base<'_> {
    fn message(&self, role: Role, content: String) -> Message {
        let mut m = Message::new(role, content)
            .with_time(self.ts.clone())
            .with_meta("line", self.line);
        if let Some(u) = self.uuid {
            m = m.with_meta("uuid", u);
        }
        m
    }
}

/// The API message an assistant line is part of, carried by each of its messages.
struct Ids<'a> {
    message_id: Option<&'a str>,
    model: Option<&'a str>,
    api_error: bool,
    /// Leave out what no plan stage reads (`ReadOptions::lean`): the model, signatures.
    lean: bool,
}

impl Ids<'_> {
    fn on(&self, mut m: Message) -> Message {
        if let Some(id) = self.message_id {
            m = m.with_meta("message_id", id);
        }
        if let Some(model) = self.model.filter(|_| !self.lean) {
            m = m.with_meta("model", model);
        }
        if self.api_error {
            m = m.with_meta("api_error", true);
        }
        m
    }

    /// The line's usage: each line of an API message repeats it, the last one seen is the
    /// newest, and the prompt held everything before the message's first line.
    fn usage(&self, out: &mut Stage, tokens: u64) {
        if tokens > 0 && !self.api_error {
            out.then(Later::Usage {
                tokens,
                message_id: self.message_id.map(str::to_string),
                model: self.model.map(str::to_string),
            });
        }
    }
}

/// An assistant block of a kind the reader knows, as either path read it.
enum AssistantBlock<'a> {
    Text(&'a str),
    Thinking {
        text: &'a str,
        signed: bool,
    },
    Redacted,
    ToolUse {
        name: &'a str,
        input: Value,
        id: Option<&'a str>,
    },
}

fn assistant_block(out: &mut Stage, base: &Base, ids: &Ids, block: AssistantBlock) {
    let m = match block {
        AssistantBlock::Text(t) => ids.on(base.message(Role::Assistant, t.to_string())),
        AssistantBlock::Thinking { text, signed } => {
            let m = ids.on(base.message(Role::Reasoning, text.to_string()));
            if ids.lean {
                m
            } else {
                m.with_meta("signed", signed)
            }
        }
        AssistantBlock::Redacted => ids
            .on(base.message(Role::Reasoning, String::new()))
            .with_meta("redacted", true),
        AssistantBlock::ToolUse { name, input, id } => {
            note_tool_effects(out, name, &input);
            let mut m = ids.on(base.message(Role::ToolCall, String::new()));
            m.tool_call_id = id.map(str::to_string);
            let (kind, key) = super::tools::classify(name, &input);
            m.tool_kind = Some(kind);
            m.key_arg = Some(key);
            m.tool_name = Some(name.to_string());
            // An absent input and a null one are the same to every writer (and to the
            // neutral JSONL, which cannot tell them apart).
            m.tool_input = Some(input).filter(|v| !v.is_null());
            m
        }
    };
    out.push(m);
}

/// A user line's texts and images: one message (tool results stand alone).
fn user_texts(
    out: &mut Stage,
    base: &Base,
    texts: Vec<String>,
    images: Vec<Value>,
    meta: bool,
    summary: bool,
) {
    if texts.is_empty() {
        return;
    }
    let mut m = base.message(Role::User, texts.join("\n"));
    if !images.is_empty() {
        m = m.with_meta("images", Value::Array(images));
    }
    out.push(classify_user_text(m, meta, summary));
}

/// A tool result: its output (cut as `state` says), the call it answers.
fn tool_result(
    base: &Base,
    output: String,
    tool_use_id: Option<&str>,
    is_error: bool,
    state: OutputState,
) -> Message {
    let mut m = base.message(Role::ToolResult, output);
    m.tool_call_id = tool_use_id.map(str::to_string);
    m.is_error = is_error;
    if state != OutputState::default() {
        m.state = Some(Box::new(state));
    }
    m
}

/// What chain line `line` of type `kind` adds to the session (see `Op`).
fn stage(
    line: usize,
    kind: &str,
    uuid: Option<&str>,
    timestamp: Option<&str>,
    v: &Value,
    lean: bool,
) -> Vec<Op> {
    let mut out = Stage(Vec::new());
    let base = Base {
        ts: timestamp.map(Timestamp::parse),
        line,
        uuid: uuid.filter(|_| !lean),
    };
    match kind {
        "user" => user_line(&mut out, &base, v),
        "assistant" => assistant_line(&mut out, &base, v, lean),
        "system" => system_line(&mut out, &base, v),
        kind => {
            let sub = v
                .pointer("/attachment/type")
                .and_then(Value::as_str)
                .map(|s| format!("{kind}:{s}"))
                .unwrap_or_else(|| kind.to_string());
            out.skip(sub);
        }
    }
    out.into_ops()
}

/// A user line: the person's words (or what Claude Code wrote in their name), with its images
/// in one message, and each tool result on its own.
fn user_line(out: &mut Stage, base: &Base, v: &Value) {
    let meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
    let summary = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
    match message_field(v, "content") {
        Some(Value::String(s)) => {
            out.push(classify_user_text(
                base.message(Role::User, s.clone()),
                meta,
                summary,
            ));
        }
        Some(Value::Array(items)) => {
            let mut texts: Vec<String> = Vec::new();
            let mut images: Vec<Value> = Vec::new();
            for b in items {
                match str_field(b, "type") {
                    Some("text") => {
                        texts.push(str_field(b, "text").unwrap_or_default().to_string())
                    }
                    Some("image") => {
                        let media = b
                            .pointer("/source/media_type")
                            .and_then(Value::as_str)
                            .unwrap_or("image");
                        texts.push(format!("[image: {media}]"));
                        images.push(b.get("source").cloned().unwrap_or(Value::Null));
                    }
                    Some("tool_result") => out.push(tool_result_block(base, b, v)),
                    Some(other) => {
                        out.push(
                            base.message(Role::System, format!("[{other} block]"))
                                .with_kind(MessageKind::UnsupportedBlock)
                                .with_meta("block", b.clone()),
                        );
                    }
                    None => {}
                }
            }
            user_texts(out, base, texts, images, meta, summary);
        }
        _ => out.then(Later::Warn(
            base.line,
            "user line without message content".into(),
        )),
    }
}

/// Tool result block `b` of user line `v`, as `shrink` left it; rejected when the line's copy
/// for the UI says the person refused the call.
fn tool_result_block(base: &Base, b: &Value, v: &Value) -> Message {
    let m = tool_result(
        base,
        flatten_content(b.get("content")),
        str_field(b, "tool_use_id"),
        b.get("is_error").and_then(Value::as_bool) == Some(true),
        kept_state(b),
    );
    match v.get("toolUseResult") {
        Some(Value::String(s)) if s.starts_with("User rejected") => m.with_meta("rejected", true),
        _ => m,
    }
}

/// What `shrink` noted in tool result block `b` of how it cut and masked the output.
fn kept_state(b: &Value) -> OutputState {
    let count = |key: &str| b.get(key).and_then(Value::as_u64).map(|n| n as usize);
    let source_chars = count(REDUCED);
    OutputState {
        original_chars: count(ORIGINAL_CHARS),
        source_chars,
        reduced: source_chars.is_some(),
        masked: b
            .get(MASKED)
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        ..OutputState::default()
    }
}

/// An assistant line: one block of an API message (Claude Code writes a line per block), its
/// usage, and its texts, thinking and tool calls.
fn assistant_line(out: &mut Stage, base: &Base, v: &Value, lean: bool) {
    let ids = Ids {
        message_id: message_field(v, "id").and_then(Value::as_str),
        model: message_field(v, "model").and_then(Value::as_str),
        api_error: v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true),
        lean,
    };
    if let Some(u) = message_field(v, "usage") {
        let n = |k: &str| u.get(k).and_then(crate::jsonl::as_count).unwrap_or(0);
        ids.usage(
            out,
            n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens"),
        );
    }
    let content = message_field(v, "content");
    let items: Vec<Value> = match content {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        _ => {
            out.then(Later::Warn(
                base.line,
                "assistant line without message content".into(),
            ));
            Vec::new()
        }
    };
    for b in &items {
        let block = match str_field(b, "type") {
            Some("text") => AssistantBlock::Text(str_field(b, "text").unwrap_or_default()),
            Some("thinking") => AssistantBlock::Thinking {
                text: str_field(b, "thinking").unwrap_or_default(),
                signed: str_field(b, "signature").is_some_and(|s| !s.is_empty()),
            },
            Some("redacted_thinking") => AssistantBlock::Redacted,
            Some("tool_use") | Some("server_tool_use") => AssistantBlock::ToolUse {
                name: str_field(b, "name").unwrap_or("?"),
                input: b.get("input").cloned().unwrap_or(Value::Null),
                id: str_field(b, "id"),
            },
            Some(other) => {
                out.push(
                    ids.on(base.message(Role::System, format!("[{other} block]")))
                        .with_kind(MessageKind::UnsupportedBlock)
                        .with_meta("block", b.clone()),
                );
                continue;
            }
            None => continue,
        };
        assistant_block(out, base, &ids, block);
    }
}

/// A system line: a compaction, or a note Claude Code showed; other subtypes are skipped.
fn system_line(out: &mut Stage, base: &Base, v: &Value) {
    match str_field(v, "subtype") {
        Some("compact_boundary") => out.push(compaction(
            base,
            str_field(v, "content"),
            v.get("compactMetadata").cloned(),
        )),
        Some("informational") | Some("local_command") => {
            if let Some(c) = str_field(v, "content") {
                out.push(informational(base, c));
            }
        }
        other => out.skip(format!("system:{}", other.unwrap_or("?"))),
    }
}

/// A compact boundary: the compaction's text (Claude Code's default when it gives none).
fn compaction(base: &Base, content: Option<&str>, metadata: Option<Value>) -> Message {
    let mut m = base
        .message(
            Role::System,
            content.unwrap_or("Conversation compacted").to_string(),
        )
        .with_kind(MessageKind::Compaction);
    if let Some(cm) = metadata {
        m = m.with_meta("compact_metadata", cm);
    }
    m
}

fn informational(base: &Base, content: &str) -> Message {
    base.message(Role::System, content.to_string())
        .with_kind(MessageKind::Informational)
}

/// How a relay's read prunes a line: `toolUseResult` (the UI's copy of a tool output) is
/// skipped, tool outputs are cut to `max` characters while parsed.
fn prune(max: usize) -> jsonl::pruned::Prune {
    use jsonl::pruned::Keep;
    jsonl::pruned::Prune {
        skip_root: &["toolUseResult"],
        regions: &[&["message", "content", "*", "content"]],
        max_chars: max,
        keep_json: false,
        keep: &[
            Keep {
                types: CHAIN_TYPES,
                at: &[],
                keys: ROOT_KEYS,
            },
            Keep {
                types: CHAIN_TYPES,
                at: &["message"],
                keys: KEPT_MESSAGE_KEYS,
            },
            Keep {
                types: CHAIN_TYPES,
                at: &["message", "usage"],
                keys: KEPT_USAGE_KEYS,
            },
        ],
    }
}

/// The keys of a chain line the reader uses: those `convert` reads, and those read of every
/// line for the session (its id, times, cwd, branch) and its chain.
const ROOT_KEYS: &[&str] = &[
    "message",
    "isMeta",
    "isCompactSummary",
    "isApiErrorMessage",
    "toolUseResult",
    "subtype",
    "content",
    "compactMetadata",
    "attachment",
    "type",
    "timestamp",
    "sessionId",
    "version",
    "gitBranch",
    "cwd",
    "entrypoint",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "isSidechain",
];

/// Makes each tool output of a (pruned) line one text, cut by `cut` (`OutputCut::keep`),
/// with its full length in `_original_chars` when it was cut and the marks of a reading in
/// part (`_reduced`, `_masked`) that `tool_result` turns into the message's. Those keys are
/// this reader's alone: a source's own are dropped (the pruned parse drops its
/// `_original_chars`; without a cut, nothing was pruned).
fn shrink(v: &mut Value, cut: Option<OutputCut>) {
    if str_field(v, "type") != Some("user") {
        return;
    }
    let Some(blocks) = v
        .pointer_mut("/message/content")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for b in blocks {
        if str_field(b, "type") != Some("tool_result") {
            continue;
        }
        let Value::Object(o) = b else { continue };
        o.remove(REDUCED);
        o.remove(MASKED);
        let Some(cut) = cut else {
            o.remove(ORIGINAL_CHARS);
            continue;
        };
        let (text, n) = flatten_measured(o.get("content"));
        let n = o
            .get(ORIGINAL_CHARS)
            .and_then(Value::as_u64)
            .map_or(n, |o| o as usize);
        if let Some(kept) = cut.keep(&text, n) {
            o.insert("content".into(), Value::String(kept.content));
            match kept.original_chars {
                Some(n) => o.insert(ORIGINAL_CHARS.into(), json!(n)),
                None => o.remove(ORIGINAL_CHARS),
            };
            if let Some(source_chars) = kept.reduced {
                o.insert(REDUCED.into(), json!(source_chars));
            }
            if let Some(counts) = kept.masked {
                o.insert(MASKED.into(), json!(counts));
            }
        }
    }
}

/// The keys `shrink` writes beside an output it reduced, and beside one it masked.
const REDUCED: &str = "_reduced";
const MASKED: &str = "_masked";

/// How `read_tail_in_full` reads the tail: about `tokens` of it, outputs cut to `max`, as lean
/// as the first pass (`ReadOptions::lean`).
struct Tail {
    tokens: usize,
    max: usize,
    lean: bool,
}

/// The newest lines of the branch, about `tail` tokens of them from the last back to the start
/// of a turn, read again with outputs cut to `max` instead of their first line.
fn read_tail_in_full(
    path: &Path,
    first: &jsonl::PassStats,
    entries: &mut [Kept],
    staged: &mut Vec<Message>,
    active: &[bool],
    floor: usize,
    tail: Tail,
) -> Result<()> {
    let Tail {
        tokens: tail,
        max,
        lean,
    } = tail;
    let mut tokens = 0usize;
    let mut from = None;
    for (e, _) in entries[floor..]
        .iter()
        .zip(&active[floor..])
        .rev()
        .filter(|&(_, &on)| on)
    {
        tokens += (e.chars + 200) / 4;
        if tokens >= tail && e.starts_turn {
            from = Some(e.line);
            break;
        }
    }
    // Everything read in part: the tail is the whole session, or all after the folded turns.
    let from = from.unwrap_or(match floor {
        0 => 0,
        _ => entries.get(floor).map_or(0, |e| e.line),
    });
    if !entries.iter().any(|e| e.line >= from && e.reduced) {
        return Ok(());
    }
    let whole = OutputCut {
        max,
        reduced: false,
        mask: None,
    };
    let tail_at = entries.partition_point(|e| e.line < from);
    let at: foldhash::HashMap<usize, usize> = entries[tail_at..]
        .iter()
        .enumerate()
        .map(|(i, e)| (e.line, tail_at + i))
        .collect();
    let mut again: foldhash::HashMap<usize, Entry> = foldhash::HashMap::default();
    jsonl::for_each_line(
        path,
        jsonl::Pass::from(from, first, Some(prune(max))),
        |no, text| fast::facts(no, text, whole, max, lean),
        |no, v| facts(no, v, Some(whole), max, lean),
        |no, line| {
            if let (Line::Json(f), Some(&i)) = (line, at.get(&no))
                && let Body::Chain(entry, _) = f.body
            {
                again.insert(i, entry);
            }
            Ok(())
        },
    )?;
    // The tail's messages are staged again, each line's read in full where it was read again.
    let old = staged.split_off(entries.get(tail_at).map_or(staged.len(), |e| e.first));
    let mut old = old.into_iter();
    for (i, e) in entries.iter_mut().enumerate().skip(tail_at) {
        let before = old.by_ref().take(e.count);
        match again.remove(&i) {
            Some(entry) => {
                before.for_each(drop);
                *e = entry.keep(staged);
            }
            None => {
                e.first = staged.len();
                staged.extend(before);
            }
        }
    }
    Ok(())
}

/// Whether a chain line starts a turn: a user line with the person's own words.
fn starts_turn(v: &Value) -> bool {
    let meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
    let summary = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
    match message_field(v, "content") {
        Some(Value::String(s)) => injected_kind(s, meta, summary).is_none(),
        Some(Value::Array(items)) => items.iter().any(|b| {
            str_field(b, "type") == Some("text")
                && injected_kind(str_field(b, "text").unwrap_or(""), meta, summary).is_none()
        }),
        _ => false,
    }
}

/// A user text is the user's own words unless Claude Code injected it.
fn classify_user_text(mut m: Message, meta: bool, compact_summary: bool) -> Message {
    if let Some(k) = injected_kind(&m.content, meta, compact_summary) {
        m.role = Role::System;
        m = m.with_kind(k);
    } else if let Some(rest) = unescaped(&m.content) {
        m.content = rest.to_string();
    }
    m
}

/// Tool result content as text, with its length in characters before any cut the pruned parse
/// made in its blocks.
fn flatten_measured(c: Option<&Value>) -> (String, usize) {
    let text = flatten_content(c);
    let n = match c {
        Some(Value::Array(items)) if items.iter().any(|b| b.get(ORIGINAL_CHARS).is_some()) => {
            let pieces: usize = items
                .iter()
                .map(|b| match b.get(ORIGINAL_CHARS).and_then(Value::as_u64) {
                    Some(n) => n as usize,
                    None => flatten_content(Some(&Value::Array(vec![b.clone()])))
                        .chars()
                        .count(),
                })
                .sum();
            pieces + items.len().saturating_sub(1)
        }
        _ => text.chars().count(),
    };
    (text, n)
}

/// Renders tool_result content (a string or a list of blocks) as text.
fn flatten_content(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|b| match str_field(b, "type") {
                Some("text") => str_field(b, "text").unwrap_or_default().to_string(),
                Some("image") => "[image]".to_string(),
                Some("tool_reference") => {
                    format!(
                        "[tool_reference: {}]",
                        str_field(b, "tool_name").unwrap_or("?")
                    )
                }
                Some(other) => format!("[{other}]"),
                None => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn note_tool_effects(session: &mut Stage, name: &str, input: &Value) {
    if super::tools::WRITE_TOOLS.contains(&name) {
        for key in ["file_path", "notebook_path", "path"] {
            if let Some(p) = str_field(input, key) {
                session.touch_file(p);
                break;
            }
        }
    }
    if name == "TodoWrite"
        && let Some(items) = input.get("todos").and_then(Value::as_array)
    {
        session.then(Later::Todos(
            items
                .iter()
                .map(|t| Todo {
                    text: str_field(t, "content")
                        .or_else(|| str_field(t, "activeForm"))
                        .unwrap_or_default()
                        .to_string(),
                    status: TodoStatus::parse(str_field(t, "status").unwrap_or("pending")),
                })
                .collect(),
        ));
    }
}

fn find_subagents(path: &Path) -> Vec<SubagentLink> {
    let Some(stem) = path.file_stem() else {
        return Vec::new();
    };
    let dir = path.with_file_name(stem).join("subagents");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<SubagentLink> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| {
            let id = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let meta = p.with_extension("meta.json");
            let agent_type = std::fs::read(&meta)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| str_field(&v, "agentType").map(str::to_string));
            SubagentLink {
                id,
                path: p.display().to_string(),
                agent_type,
            }
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    /// `Usages` finds what walking back from each record and scanning for compactions find,
    /// over generated runs of API messages, messages without an id and compactions.
    #[test]
    fn usages_find_what_a_walk_from_each_record_finds() {
        let mut next = crate::text::test_rng(0x05a9_e5c1_a0de_2026);
        for _ in 0..300 {
            let mut messages = Vec::new();
            for _ in 0..next(40) {
                let m = Message::new(Role::Assistant, "x");
                messages.push(match next(6) {
                    0 => m,
                    1 => m.with_kind(MessageKind::Compaction),
                    // Few ids, so that runs of one id meet and an id comes back later.
                    n => m.with_meta("message_id", format!("msg_{}", n % 3)),
                });
            }
            let mut usages = Usages::of(&messages);
            let mut now = 0;
            let mut last_at = None;
            while now <= messages.len() && next(8) != 0 {
                let id = match next(4) {
                    0 => None,
                    _ => now
                        .checked_sub(1)
                        .and_then(|i| messages[i].metadata.get_str("message_id"))
                        .map(str::to_string)
                        .or_else(|| Some(format!("msg_{}", next(3)))),
                };
                let mut walked = now;
                while walked > 0
                    && id.is_some()
                    && messages[walked - 1].metadata.get_str("message_id") == id.as_deref()
                {
                    walked -= 1;
                }
                let mut s = Session::new("claude", "claude-jsonl", "t");
                s.messages = messages.clone();
                assert_eq!(usages.start_of(&s, id, now), walked);
                for from in [last_at.unwrap_or(0), walked, 0] {
                    assert_eq!(
                        usages.compacted(from, now),
                        s.compacted_between(from, now),
                        "{from}..{now}"
                    );
                }
                last_at = Some(walked);
                now += next(4);
            }
        }
    }
}
