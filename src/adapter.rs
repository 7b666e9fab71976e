//! What every agent adapter provides. Adapters live in `adapters/<name>/` and are listed in
//! `adapters/mod.rs`; nothing in `src/` names a particular agent except through this trait.
//! Adapters depend only on the model and the I/O helpers (`jsonl`, `text`, `fsutil`, and
//! `adapter::write` for what their writers share).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;

use crate::model::{ContextUsage, Message, RecordedUsage, Role, Session, Summary};

pub mod part;
pub mod sqlite;
pub mod tree;
pub mod write;

/// How much of a session a reader keeps.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Cut tool outputs longer than this many characters to head and tail while reading (the
    /// relay keeps no more than that of any output, so reading more only costs memory).
    /// `None` reads everything, as `show` and `export` must.
    pub max_tool_output: Option<usize>,
    /// Read in full only the newest turns, about this many tokens of them (estimated); of older
    /// turns keep texts, tool calls and what their outputs were (length, error, first line as
    /// a full read keeps it: `text::kept_output`) but not the outputs themselves, marking such
    /// messages `reduced`. A relay
    /// keeps older turns at most as one line per tool call, so it needs no more; if its fit
    /// wants more, it reads again in full. `None` reads every turn in full.
    pub full_tail_tokens: Option<usize>,
    /// Masks secrets in the outputs of older turns before they are cut further than a full
    /// read cuts them (see `OutputMask`); `None` when the relay does not mask.
    pub mask: Option<Mask>,
    /// Keep no per-message fact that no plan stage reads (Claude Code's line `uuid`, the
    /// `model` of each message, whether a thinking block was signed): a relay's read. `show`
    /// and `export` keep everything.
    pub lean: bool,
    /// Hand the whole turns older than the newest `TurnFold::keep_tokens` to this fold instead
    /// of keeping them (`Session::folded` says what was taken out); `None` keeps every turn. A
    /// relay keeps no older turn in any form but its summary's points, so the plan folds them
    /// into those as they are read, and a long session is never held whole. A reader that
    /// cannot fold ignores it.
    pub fold: Option<Fold>,
}

/// Where a relay's reader hands the turns it need not keep (see `ReadOptions::fold`).
pub trait TurnFold: Send + Sync {
    /// How much of the newest turns the reader keeps, in `reach_tokens`.
    fn keep_tokens(&self) -> usize;
    /// What a message costs the fit at least if it kept its turn (an estimate).
    fn reach_tokens(&self, m: &Message) -> usize;
    /// Takes the next whole turn, in order: a user message and what followed it until the
    /// next (the first is the rest of the first turn, after its request, when it has one),
    /// never the session's first request or its last turn.
    fn fold(&self, turn: Vec<Message>);
    /// Told, before the first turn is folded, the messages kept before it (the session's
    /// first request and what came before), which stay in the session.
    fn head(&self, _messages: &[Message]) {}
    /// `fold`, told where the turn's first message is in the whole session and the context
    /// the session had recorded when the turn was let go (`show` counts what its context
    /// check will need of it).
    fn fold_at(&self, turn: Vec<Message>, _first_place: usize, _usage: Option<&ContextUsage>) {
        self.fold(turn)
    }
}

/// A shared `TurnFold`.
#[derive(Clone)]
pub struct Fold(pub Arc<dyn TurnFold>);

impl std::fmt::Debug for Fold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fold")
    }
}

/// A reader's side of a fold: which turns of `Session::messages` it keeps, and when the oldest
/// go to the fold. A reader calls `after_messages` whenever it has added messages.
pub struct FoldWindow {
    fold: Arc<dyn TurnFold>,
    /// Messages of `Session::messages` looked at.
    seen: usize,
    /// The session's first user message was seen: it, and what came before, are kept.
    first_user: bool,
    /// The turns that may be folded, oldest first: where each starts in `Session::messages`,
    /// and its tokens. The first is the rest of the first turn, after its request, when it has
    /// one: folded turns are shaped in the session's order, so only what comes before them
    /// (the context and the first request, which hold no tool call) is kept.
    turns: std::collections::VecDeque<(usize, usize)>,
    /// Tokens of all of them.
    tokens: usize,
    /// A turn that could not be folded was met: nothing after it is folded either.
    stopped: bool,
}

impl FoldWindow {
    pub fn new(fold: &Fold) -> FoldWindow {
        FoldWindow {
            fold: fold.0.clone(),
            seen: 0,
            first_user: false,
            turns: Default::default(),
            tokens: 0,
            stopped: false,
        }
    }

    /// Takes note of the messages added since the last call, and folds the oldest turns while
    /// the newer ones hold more than the fold keeps (by a quarter more: the kept messages move
    /// down once for many turns, not for each).
    pub fn after_messages(&mut self, session: &mut Session) {
        if self.stopped {
            return;
        }
        for (i, m) in session.messages.iter().enumerate().skip(self.seen) {
            if m.role == Role::User && !self.first_user {
                self.first_user = true;
                // The first request is the session's goal and title (`first_user_prompt`),
                // and what comes before it is kept: it must be this message, and hold no call
                // that a folded turn could pair with.
                let pairs = |m: &Message| matches!(m.role, Role::ToolCall | Role::ToolResult);
                if m.content.trim().is_empty() || session.messages[..i].iter().any(pairs) {
                    self.stopped = true;
                    return;
                }
                continue;
            }
            if self.first_user && (m.role == Role::User || self.turns.is_empty()) {
                self.turns.push_back((i, 0));
            }
            if let Some(t) = self.turns.back_mut() {
                let n = self.fold.reach_tokens(m);
                t.1 += n;
                self.tokens += n;
            }
        }
        self.seen = session.messages.len();
        let keep = self.fold.keep_tokens();
        let newer = |w: &FoldWindow| w.tokens - w.turns.front().map_or(0, |t| t.1);
        if self.turns.len() < 2 || newer(self) <= keep.saturating_add(keep / 4) {
            return;
        }
        let mut count = 0;
        let mut tokens = self.tokens;
        while count + 1 < self.turns.len() && tokens - self.turns[count].1 > keep {
            tokens -= self.turns[count].1;
            count += 1;
        }
        let at = self.turns[0].0;
        if session.folded.is_none() {
            self.fold.head(&session.messages[..at]);
        }
        let folded = session.folded.get_or_insert_with(|| {
            let mut folded = crate::model::Folded {
                at,
                ..Default::default()
            };
            folded.files.add_all(&session.messages[..at]);
            Box::new(folded)
        });
        debug_assert_eq!(folded.at, at);
        // A turn that pairs with a later one (a call answered after it, a result given before
        // its call) is shaped here as the whole session would not shape it: the later one
        // finds out (`Folded::broken`), and the relay reads the session again, so nothing
        // more is folded.
        let end = self.turns[count].0;
        for k in 0..count {
            folded.add(&session.messages[self.turns[k].0..self.turns[k + 1].0]);
            if folded.broken {
                self.stopped = true;
                self.turns.clear();
                return;
            }
        }
        let usage = session.context_usage.clone();
        let mut place = folded.at + folded.messages - (end - at);
        let mut taken = session.messages.drain(at..end);
        for k in 0..count {
            let len = self.turns[k + 1].0 - self.turns[k].0;
            let turn = taken.by_ref().take(len).collect();
            self.fold.fold_at(turn, place, usage.as_ref());
            place += len;
        }
        drop(taken);
        let moved = end - at;
        for _ in 0..count {
            if let Some((_, n)) = self.turns.pop_front() {
                self.tokens -= n;
            }
        }
        for t in self.turns.iter_mut() {
            t.0 -= moved;
        }
        self.seen -= moved;
    }
}

/// Masks the secrets in a text, as the relay's redaction masks a tool output.
///
/// A reader that keeps an older output only in part (`ReadOptions::full_tail_tokens`) masks
/// it first, as a full read keeps it: a secret whose rule needs text the further cut drops
/// (a connection string's `Data Source=` lines below its password, a private key's END line)
/// would otherwise go through unmasked, and the counts would differ from a full read's.
pub trait OutputMask: Send + Sync {
    /// `text` masked, adding to `counts` how many secrets of each kind were masked.
    fn mask<'a>(&self, text: &'a str, counts: &mut BTreeMap<String, usize>) -> Cow<'a, str>;
}

/// For tests: masks a word wherever it is, counted as kind `word`.
#[cfg(test)]
pub struct WordMask(pub &'static str);

#[cfg(test)]
impl OutputMask for WordMask {
    fn mask<'a>(&self, text: &'a str, counts: &mut BTreeMap<String, usize>) -> Cow<'a, str> {
        let n = text.matches(self.0).count();
        if n == 0 {
            return Cow::Borrowed(text);
        }
        *counts.entry("word".into()).or_default() += n;
        Cow::Owned(text.replace(self.0, "[REDACTED:word]"))
    }
}

/// A shared `OutputMask`.
#[derive(Clone)]
pub struct Mask(pub Arc<dyn OutputMask>);

impl std::fmt::Debug for Mask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mask")
    }
}

/// How a reader cuts the tool outputs of a part of a session.
#[derive(Clone, Copy)]
pub struct OutputCut<'a> {
    /// No output is kept longer than this many characters (`ReadOptions::max_tool_output`).
    pub max: usize,
    /// The part is read only in part (`ReadOptions::full_tail_tokens`).
    pub reduced: bool,
    pub mask: Option<&'a dyn OutputMask>,
}

/// What a reader keeps of a tool output it cuts (see `OutputCut::keep`).
#[derive(Debug, PartialEq)]
pub struct KeptOutput {
    pub content: String,
    /// The output's length in characters (`Message::output_chars`), `content` being less.
    pub original_chars: Option<usize>,
    /// Cut further than a full read cuts it: the message is marked `reduced`, and its
    /// `source_chars` are what `fit::source_tokens` counts of the output read in full.
    pub reduced: Option<usize>,
    /// The secrets masked in it by kind, when the reader masked it (the message is marked
    /// `masked`; redaction adds these counts and leaves its text alone).
    pub masked: Option<BTreeMap<String, usize>>,
}

impl KeptOutput {
    /// Puts the kept output in `m`, with what was done to it.
    pub fn apply_to(self, m: &mut Message) {
        m.content = self.content;
        let state = m.state_mut();
        state.original_chars = self.original_chars;
        state.source_chars = self.reduced;
        state.reduced = self.reduced.is_some();
        state.masked = self.masked;
        if m.state()
            .is_some_and(|s| *s == crate::model::OutputState::default())
        {
            m.state = None;
        }
    }
}

impl OutputCut<'_> {
    /// What a reader keeps of a tool output `n` characters long, of which `text` holds at
    /// least the first and the last `max` characters (pieces cut earlier at the same `max`);
    /// `None`: `text` as it is.
    ///
    /// A whole read cuts it to `max` (`text::trim_output_of`). Read only in part, an output
    /// longer than `text::REDUCED_OUTPUT_CHARS` is cut as a full read cuts it, masked, and
    /// then reduced (`text::reduced_output`), which keeps what the relay reads of an older
    /// turn's output: its length, whether it failed, and its first line as the summary
    /// quotes it.
    pub fn keep(&self, text: &str, n: usize) -> Option<KeptOutput> {
        if !self.reduced || n <= crate::text::REDUCED_OUTPUT_CHARS {
            return (n > self.max).then(|| KeptOutput {
                content: crate::text::trim_output_of(text, self.max, n),
                original_chars: Some(n),
                reduced: None,
                masked: None,
            });
        }
        let full = if n > self.max {
            Cow::Owned(crate::text::trim_output_of(text, self.max, n))
        } else {
            Cow::Borrowed(text)
        };
        let mut counts = BTreeMap::new();
        let full = match self.mask {
            Some(mask) => match mask.mask(&full, &mut counts) {
                Cow::Owned(masked) => Cow::Owned(masked),
                Cow::Borrowed(_) => full,
            },
            None => full,
        };
        // As a full read counts it: the output's length when it was cut, else its text's.
        let chars = if n > self.max {
            n
        } else {
            full.chars().count()
        };
        let masked = self.mask.map(|_| counts);
        match crate::text::reduced_output(&full, (n > self.max).then_some(n)) {
            Some(content) => Some(KeptOutput {
                content,
                original_chars: Some(chars),
                reduced: Some(chars.max(full.len())),
                masked,
            }),
            None if n > self.max || masked.is_some() => Some(KeptOutput {
                content: full.into_owned(),
                original_chars: (n > self.max).then_some(n),
                reduced: None,
                masked,
            }),
            None => None,
        }
    }
}

/// Set to read a session in part whatever its size (see `ReadOptions::for_file`): the tests
/// that compare reading in part with reading in full set it for their small sessions. A read
/// that then goes in part says so on standard error (`PART_READ_NOTE`), so that they can tell.
pub const PART_READ_ENV: &str = "SESSION_RELAY_PART_READ";

/// What a read in part says on standard error when `PART_READ_ENV` is set.
pub const PART_READ_NOTE: &str = "session-relay: reading in part (SESSION_RELAY_PART_READ)";

/// Whether `PART_READ_ENV` is set.
pub fn part_read_asked() -> bool {
    std::env::var_os(PART_READ_ENV).is_some_and(|v| !v.is_empty())
}

/// A session file up to this size is read in full at once even when the relay would read it
/// in part: one pass over it costs less than reading it in part, masking its older outputs
/// there and reading its tail again, and holds little more; far larger files are where
/// reading in part saves time and memory.
pub const FULL_READ_BYTES: u64 = 16 << 20;

/// `FULL_READ_BYTES`, or 0 when a read in part is asked for (`PART_READ_ENV`).
pub fn full_read_bytes() -> u64 {
    if part_read_asked() {
        0
    } else {
        FULL_READ_BYTES
    }
}

impl ReadOptions {
    /// These options for the session file at `path`: one of at most `FULL_READ_BYTES`, or
    /// whose text is no more than the full-read tail (at about four bytes a token), is read in
    /// full at once (read in part, its tail would be most or all of the session, read a second
    /// time; a full read gives the same relay). A compressed file's size says nothing of its
    /// text: it keeps the options.
    pub fn for_file(self, path: &Path) -> ReadOptions {
        self.for_file_below(path, full_read_bytes())
    }

    /// `for_file`, reading in full at once a file of at most `full_below` bytes.
    fn for_file_below(self, path: &Path, full_below: u64) -> ReadOptions {
        let small = |tail: usize| {
            path.extension().is_none_or(|e| e != "zst")
                && std::fs::metadata(path)
                    .is_ok_and(|m| m.len() <= full_below || m.len() / 4 <= tail as u64)
        };
        match self.full_tail_tokens {
            Some(tail) if small(tail) => ReadOptions {
                full_tail_tokens: None,
                fold: None,
                ..self
            },
            _ => self,
        }
    }
}

/// What the relay asks a target adapter to write.
pub struct WriteRequest {
    /// The target agent's home.
    pub home: PathBuf,
    /// The id of the new session.
    pub id: String,
    /// The directory the user will resume in (already resolved to a real path when it exists).
    pub cwd: String,
    /// Title shown in the agent's picker.
    pub title: String,
    /// Provenance record to embed in the file.
    pub provenance: serde_json::Value,
    /// The relay's own time, for the file name and the session start.
    pub now: chrono::DateTime<chrono::Utc>,
    /// Write a standalone file here instead of into the store.
    pub standalone: Option<PathBuf>,
}

/// A native session ready to be written.
pub struct NativeSession {
    pub id: String,
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// Modification time to give the file (agents sort their pickers by it).
    pub mtime: Option<chrono::DateTime<chrono::Utc>>,
    /// The command that resumes it.
    pub resume_command: String,
    /// Things the user should know (skipped content, index not updated, ...).
    pub notes: Vec<String>,
}

impl WriteRequest {
    /// Where the session is written: the standalone file asked for, else `in_store`, the
    /// agent's own place for it.
    pub fn path_or(&self, in_store: impl FnOnce() -> PathBuf) -> PathBuf {
        self.standalone.clone().unwrap_or_else(in_store)
    }
}

impl NativeSession {
    /// The session `adapter` wrote for `req` at `path`, resumed by the adapter's command, with
    /// no modification time of its own and nothing to tell.
    pub fn new(
        adapter: &dyn Adapter,
        req: &WriteRequest,
        path: PathBuf,
        bytes: Vec<u8>,
    ) -> NativeSession {
        NativeSession {
            id: req.id.clone(),
            resume_command: adapter.resume_command(&req.id, &req.cwd),
            path,
            bytes,
            mtime: None,
            notes: Vec::new(),
        }
    }
}

/// The context of a failed `Adapter::register` that left some of its index entries in place.
#[derive(Debug)]
pub struct PartlyRegistered(pub String);

impl std::fmt::Display for PartlyRegistered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where an agent reads its hooks and how session-relay registers its own there. The file
/// holds the hooks schema both supported agents share: `{"hooks": {EVENT: [{"matcher"?,
/// "hooks": [{"type": "command", "command", "timeout"}]}]}}`, other keys left as they are.
#[derive(Debug, Clone)]
pub struct HookSetup {
    /// The agent's own hooks file.
    pub file: PathBuf,
    /// The event that runs before the agent compacts its context.
    pub pre_compact: &'static str,
    /// The event that runs when a session ends (registered on request).
    pub session_end: &'static str,
    /// Seconds the agent gives the hook before it kills it.
    pub timeout_secs: u64,
    /// Set when the agent runs a new hook only after the user trusts it.
    pub trust: Option<TrustStep>,
}

/// How an agent's user trusts a hook, for the notes.
#[derive(Debug, Clone)]
pub struct TrustStep {
    /// What the user does, e.g. "start codex and trust it in /hooks".
    pub how: &'static str,
    /// Where the agent keeps the trust.
    pub recorded_in: &'static str,
}

/// Whether the agent will run session-relay's hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookTrust {
    /// The agent runs hooks without a trust step.
    NotNeeded,
    /// The agent recorded that the user trusted this hook.
    Trusted,
    /// The agent will skip it until the user trusts it.
    Untrusted,
    /// The agent's settings turn every hook off (Claude Code's `disableAllHooks`).
    Disabled,
    /// The agent's settings turn this one hook off, trusted or not (Codex's
    /// `hooks.state.<key>.enabled = false`); `disabled` in JSON, as it does not run either.
    #[serde(rename = "disabled")]
    TurnedOff,
    /// The settings where the agent records its trust do not parse, so whether it runs the hook
    /// cannot be told (Codex refuses to start until its `config.toml` is corrected).
    Unknown,
}

impl HookTrust {
    /// For an agent that runs hooks without a trust step unless its `settings` file says
    /// `"disableAllHooks": true` (Claude Code, Qwen Code): read as their JSON.parse reads it,
    /// the last of a key given twice.
    pub fn unless_all_hooks_off(settings: &Path) -> HookTrust {
        let off = std::fs::read(settings)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v.get("disableAllHooks") == Some(&serde_json::Value::Bool(true)));
        match off {
            true => HookTrust::Disabled,
            false => HookTrust::NotNeeded,
        }
    }
}

/// What an agent is, as data: one `const` in each adapter's folder. Everything else that
/// knows the agent is behaviour, in its `Adapter`.
pub struct Agent {
    /// Short name used on the command line and in the neutral model (`claude`, `codex`).
    pub name: &'static str,
    /// Product name for messages.
    pub display_name: &'static str,
    /// The environment variable the agent itself reads for its home, e.g. `CODEX_HOME`.
    pub home_env: &'static str,
    /// The agent's home when neither config nor environment says otherwise, under the user's
    /// home folder (empty: that folder itself).
    pub default_home: &'static str,
    /// Its command-line program, when it has one to check.
    pub cli: Option<Cli>,
    /// Context window of the agent's current default models, in tokens.
    pub context_window: u64,
    /// Room the agent needs for its own system prompt, tools and answer, in tokens.
    pub reserved_tokens: u64,
    /// How its tokens are counted when the config does not say.
    pub tokenizer: crate::tokens::Tokenizer,
    /// A fresh session id in the form this agent uses.
    pub new_id: fn() -> String,
}

/// An agent's command-line program.
pub struct Cli {
    /// The program (`codex`, `claude`) `doctor` looks for on PATH and asks for `--version`.
    pub command: &'static str,
    /// The npm package it is published as (`@openai/codex`).
    pub npm_package: &'static str,
    /// The versions this adapter's writer was verified against (the real-client suite opens
    /// relayed sessions in them), oldest first. This is the one list of them in the code:
    /// `doctor` compares the installed CLI with it, and a test checks that docs/agents.md and the
    /// real-client installer name the same versions.
    pub verified_versions: &'static [&'static str],
}

/// `Adapter::native_tool` of a call the same agent wrote: its own name and input, as they were.
pub fn own_tool(call: &Message) -> Option<(String, serde_json::Value)> {
    Some((
        call.tool_name.clone()?,
        call.tool_input.clone().unwrap_or(serde_json::Value::Null),
    ))
}

/// A version 4 UUID, as most agents name their sessions.
pub fn uuid_v4() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What an agent does with its sessions: where they are, reading, listing, writing and
/// registering them, and its hooks.
pub trait Adapter: Sync {
    /// What the agent is.
    fn agent(&self) -> &'static Agent;
    /// Where its sessions are kept under a home.
    fn store(&self) -> &dyn Store;
    /// What the listing shows of one session file, read cheaply (no tool output is parsed).
    /// Subagent transcripts come with `parent_id` set. It must agree with `read`.
    fn scan(&self, path: &Path) -> Result<Summary>;
    /// Reads one session file into the neutral model, keeping only what `opts` asks for.
    /// `home` lets an adapter consult its store's indexes (titles); it may be absent for a
    /// file outside any store.
    fn read_with(&self, path: &Path, home: Option<&Path>, opts: ReadOptions) -> Result<Session>;
    /// Whether a file outside any store (named `path`, its first lines saying `head`) looks
    /// like this agent's session.
    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool;
    /// This agent's own tool for a neutral tool call, if it has one: (name, input). Calls
    /// without one travel as text. `same_agent` says the call was written by this agent, so its
    /// name and input are already this agent's own.
    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, serde_json::Value)>;
    /// The command that resumes session `id` in directory `cwd`.
    fn resume_command(&self, id: &str, cwd: &str) -> String;
    /// Serialises a relay-shaped session as this agent's native, resumable session.
    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession>;
    /// After the file is in place: register it in the store's indexes (titles, databases).
    /// Returns notes for the user. All or nothing: on failure, what was registered is taken
    /// out again, and when it cannot be, the error holds a `PartlyRegistered`. Registering a
    /// session the indexes already list changes nothing. A store that keeps no index (the
    /// file in its folder is all the agent needs) registers nothing.
    fn register(
        &self,
        _home: &Path,
        _written: &NativeSession,
        _shaped: &Session,
        _title: &str,
    ) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// Before a relayed session's file is deleted: remove it from the store's indexes (none
    /// where the store keeps none).
    fn unregister(&self, _home: &Path, _id: &str) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// Its hooks, if it runs any.
    fn hooks(&self) -> Option<&dyn Hooks> {
        None
    }
    /// What it records of a session's context use, if anything.
    fn usage(&self) -> Option<&dyn Usage> {
        None
    }
}

/// Writes the bytes that stand for a session kept as rows of a database (`Store::stand_in`) to
/// an `out` as it reads them, so that they are hashed or compared without being held whole;
/// returns how many it wrote.
pub type StandIn = Box<dyn Fn(&mut dyn std::io::Write) -> Result<u64> + Send>;

/// Where an agent keeps its sessions under a home.
pub trait Store: Sync {
    /// The folders that hold sessions (shown when none exist).
    fn dirs(&self, home: &Path) -> Vec<PathBuf>;
    /// Every session file: top-level sessions and subagent transcripts.
    fn session_files(&self, home: &Path) -> Vec<PathBuf>;
    /// The id `scan` gives a file, when its name and first line settle it without reading the
    /// rest (`None`: only a scan can tell). Selecting a session by its full id uses it to skip
    /// the listing, which scans every session not in its cache whole, the long one included.
    fn id_from_name(&self, _path: &Path) -> Option<String> {
        None
    }
    /// Titles the store's own index gives sessions (id -> title), which win over the files'.
    fn index_titles(&self, _home: &Path) -> HashMap<String, String> {
        HashMap::new()
    }
    /// For a store that keeps its sessions as rows of one database instead of a file each
    /// (OpenCode), `session_files` names each session by a path under the database file, which
    /// is no file: this writes the bytes that stand for such a session, which the ledger hashes
    /// and compares as it does a session file's. `None`: `path` is a file of its own.
    fn stand_in(&self, _path: &Path) -> Option<StandIn> {
        None
    }
    /// The folder the store keeps for session `id`, whose file is `path`, and for nothing else
    /// (Copilot CLI's `session-state/<id>/`; `None` where sessions share a folder): `clean`
    /// removes it with a relayed session when nothing is left in it.
    fn own_folder(&self, _path: &Path, _id: &str) -> Option<PathBuf> {
        None
    }
}

/// An agent's hooks: where it reads them and how it runs session-relay's.
pub trait Hooks: Sync {
    /// Where this agent reads hooks under `home`.
    fn setup(&self, home: &Path) -> HookSetup;
    /// The one line a hook prints, in the form in which the agent shows it to the user.
    fn reply(&self, line: &str) -> String {
        line.to_string()
    }
    /// Whether the agent will run the hook registered in its hooks file as handler `handler`
    /// of group `group` of `event`.
    fn trust(&self, _home: &Path, _event: &str, _group: usize, _handler: usize) -> HookTrust {
        HookTrust::NotNeeded
    }
    /// Records, through the agent's own means, that the user trusts the hook registered as in
    /// `trust`. Returns a note for the user.
    fn record_trust(
        &self,
        _home: &Path,
        _event: &str,
        _group: usize,
        _handler: usize,
    ) -> Result<String> {
        anyhow::bail!("this agent has no hook trust step")
    }
}

/// What an agent records of how full a session's context was.
pub trait Usage: Sync {
    /// How full the context of the session in `path` was at its newest request, as the agent
    /// recorded it, read from the end of the file only; `None` when it records none there.
    fn recorded_usage(&self, path: &Path) -> Option<RecordedUsage>;
    /// The context window the agent recorded in its newest sessions under `home`, if it
    /// records one (Codex writes `model_context_window`), with the file it was read from.
    fn recorded_context_window(&self, _home: &Path) -> Option<(u64, PathBuf)> {
        None
    }
}

/// The listing row of the session `s` read from `path`: a relay's when `provenance` says so.
pub fn listing_row(
    path: &Path,
    s: &Session,
    provenance: Option<&serde_json::Value>,
) -> Result<Summary> {
    let size = std::fs::metadata(path)?.len();
    Ok(Summary {
        relay_of: provenance.and_then(crate::model::RelaySource::from_provenance),
        ..Summary::of_session(s, path, size)
    })
}

/// The first line of the file at `path` as JSON, when it is within its first `max` bytes: where
/// agents that name a session by its first record find its id.
pub fn first_line(path: &Path, max: usize) -> Option<serde_json::Value> {
    let head = crate::jsonl::head(path, max).ok()?;
    let first = crate::jsonl::strip_bom(&head)
        .split(|&b| b == b'\n')
        .next()?;
    serde_json::from_slice(first).ok()
}

/// `m` as a tool call: its id, its tool's name and input, and their neutral kind and key
/// argument as the reader's tool map tells them.
pub fn as_call(
    mut m: Message,
    id: Option<String>,
    name: String,
    input: Option<serde_json::Value>,
    (kind, key): (crate::model::ToolKind, String),
) -> Message {
    m.tool_call_id = id;
    m.tool_name = Some(name);
    m.tool_input = input;
    m.tool_kind = Some(kind);
    m.key_arg = Some(key);
    m
}

/// Counts `n` more of `key` in one of a session's tallies (`SessionStats::skipped_types`,
/// `unknown_types`).
pub fn tally(counts: &mut BTreeMap<String, usize>, key: impl Into<String>, n: usize) {
    *counts.entry(key.into()).or_default() += n;
}

/// The usage an agent recorded with its newest answer, for agents that append each answer as a
/// JSON line: the newest of the last 8 MB's lines that may hold `marker` for which `usage`
/// says something (`Some(None)`: that answer recorded none, and older ones no longer tell).
/// Only a run of lines longer than that after the newest answer (a huge tool result) hides it.
pub fn newest_usage(
    path: &Path,
    marker: &[u8],
    usage: impl Fn(&serde_json::Value) -> Option<Option<RecordedUsage>>,
) -> Option<RecordedUsage> {
    crate::jsonl::tail_rfind(path, 8 << 20, |line| {
        if !crate::jsonl::may_hold(line, marker) {
            return None;
        }
        usage(&serde_json::from_str(&crate::jsonl::reader_text(line).0).ok()?)
    })
    .ok()
    .flatten()
    .flatten()
}

/// The agent's facts and behaviours under the names the rest of the code asks for them.
impl dyn Adapter + '_ {
    pub fn name(&self) -> &'static str {
        self.agent().name
    }
    pub fn display_name(&self) -> &'static str {
        self.agent().display_name
    }
    pub fn home_env(&self) -> &'static str {
        self.agent().home_env
    }
    pub fn default_home(&self) -> Option<PathBuf> {
        let sub = self.agent().default_home;
        dirs::home_dir().map(|h| if sub.is_empty() { h } else { h.join(sub) })
    }
    pub fn cli_command(&self) -> Option<&'static str> {
        self.agent().cli.as_ref().map(|c| c.command)
    }
    pub fn verified_versions(&self) -> &'static [&'static str] {
        self.agent()
            .cli
            .as_ref()
            .map_or(&[], |c| c.verified_versions)
    }
    pub fn npm_package(&self) -> Option<&'static str> {
        self.agent().cli.as_ref().map(|c| c.npm_package)
    }
    /// How to install the newest verified version of the CLI (for `doctor`'s advice): npm's
    /// command for its package at the last of its verified versions.
    pub fn cli_install(&self) -> Option<String> {
        let cli = self.agent().cli.as_ref()?;
        Some(match cli.verified_versions.last() {
            Some(v) => format!("npm install -g {}@{v}", cli.npm_package),
            None => format!("npm install -g {}", cli.npm_package),
        })
    }
    pub fn default_context_window(&self) -> u64 {
        self.agent().context_window
    }
    pub fn default_reserved_tokens(&self) -> u64 {
        self.agent().reserved_tokens
    }
    pub fn default_tokenizer(&self) -> crate::tokens::Tokenizer {
        self.agent().tokenizer
    }
    pub fn new_id(&self) -> String {
        (self.agent().new_id)()
    }
    pub fn store_dirs(&self, home: &Path) -> Vec<PathBuf> {
        self.store().dirs(home)
    }
    pub fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        self.store().session_files(home)
    }
    pub fn id_from_name(&self, path: &Path) -> Option<String> {
        self.store().id_from_name(path)
    }
    pub fn index_titles(&self, home: &Path) -> HashMap<String, String> {
        self.store().index_titles(home)
    }
    pub fn stand_in(&self, path: &Path) -> Option<StandIn> {
        self.store().stand_in(path)
    }
    /// The bytes `stand_in` writes, collected.
    pub fn session_bytes(&self, path: &Path) -> Option<Result<Vec<u8>>> {
        let write = self.stand_in(path)?;
        let mut bytes = Vec::new();
        Some(write(&mut bytes).map(|_| bytes))
    }
    /// Reads one session file whole (see `Adapter::read_with`).
    pub fn read(&self, path: &Path, home: Option<&Path>) -> Result<Session> {
        self.read_with(path, home, ReadOptions::default())
    }
    pub fn recorded_usage(&self, path: &Path) -> Option<RecordedUsage> {
        self.usage()?.recorded_usage(path)
    }
    pub fn recorded_context_window(&self, home: &Path) -> Option<(u64, PathBuf)> {
        self.usage()?.recorded_context_window(home)
    }
    pub fn hook_setup(&self, home: &Path) -> Option<HookSetup> {
        Some(self.hooks()?.setup(home))
    }
    pub fn hook_reply(&self, line: &str) -> String {
        self.hooks()
            .map_or_else(|| line.to_string(), |h| h.reply(line))
    }
    pub fn hook_trust(&self, home: &Path, event: &str, group: usize, handler: usize) -> HookTrust {
        self.hooks().map_or(HookTrust::NotNeeded, |h| {
            h.trust(home, event, group, handler)
        })
    }
    pub fn trust_hook(
        &self,
        home: &Path,
        event: &str,
        group: usize,
        handler: usize,
    ) -> Result<String> {
        match self.hooks() {
            Some(h) => h.record_trust(home, event, group, handler),
            None => anyhow::bail!("{} runs no hooks", self.display_name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output read in part gives the relay what it gives read in full and then masked:
    /// the same length, the same counts of secrets, the same quoted first line; and when it
    /// is not reduced, the same text. Outputs of many lengths around the cuts, with the
    /// masked word near their ends, their cuts and their first lines.
    #[test]
    fn an_output_read_in_part_gives_what_a_full_read_masked_gives() {
        let mask = WordMask("key");
        let mut next = crate::text::test_rng(0x1234_5678_9abc_def1);
        let mut reduced = 0;
        let rounds = crate::text::test_count(300, 2000);
        for _ in 0..rounds {
            let n_target = [500, 999, 1001, 2500, 3000, 5333, 7999, 8000, 8001, 12000][next(10)];
            let mut text = String::new();
            while text.chars().count() < n_target {
                text.push_str(["key", "a", "\n", " ", "é", "\u{3000}", "line of text\n"][next(7)]);
            }
            let n = text.chars().count();
            let max = [8000, 2000][next(2)];
            for with_mask in [false, true] {
                let cut = OutputCut {
                    max,
                    reduced: true,
                    mask: with_mask.then_some(&mask as &dyn OutputMask),
                };
                // Read in full, then masked as redaction masks a session.
                let whole = if n > max {
                    crate::text::trim_output_of(&text, max, n)
                } else {
                    text.clone()
                };
                let mut counts = BTreeMap::new();
                let whole = match with_mask {
                    true => mask.mask(&whole, &mut counts).into_owned(),
                    false => whole,
                };
                let chars = if n > max { n } else { whole.chars().count() };
                let Some(kept) = cut.keep(&text, n) else {
                    // Kept as it is, for redaction to mask as a full read's.
                    assert!(n <= max);
                    assert!(!with_mask || n <= crate::text::REDUCED_OUTPUT_CHARS);
                    continue;
                };
                assert_eq!(kept.masked, with_mask.then(|| counts.clone()));
                match kept.reduced {
                    Some(source_chars) => {
                        reduced += 1;
                        assert_eq!(kept.original_chars, Some(chars));
                        assert_eq!(source_chars, chars.max(whole.len()));
                        assert_eq!(
                            crate::text::quoted_line(&kept.content),
                            crate::text::quoted_line(&whole)
                        );
                        assert!(kept.content.len() < whole.len());
                    }
                    None => {
                        assert_eq!(kept.content, whole);
                        assert_eq!(kept.original_chars, (n > max).then_some(n));
                    }
                }
            }
        }
        assert!(reduced * 2 > rounds, "{reduced} of {rounds}");
    }

    /// A file no larger than the tail's text, or than `FULL_READ_BYTES`, is read in full at
    /// once; a larger one, or a compressed one whatever its size, keeps the tail.
    #[test]
    fn a_file_the_tail_would_hold_whole_is_read_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let opts = |tail| ReadOptions {
            max_tool_output: Some(8000),
            full_tail_tokens: Some(tail),
            ..Default::default()
        };
        for (name, bytes, tail, below, whole) in [
            ("a.jsonl", 4000, 1000, 0, true),
            ("b.jsonl", 4004, 1000, 0, false),
            ("c.jsonl", 0, 0, 0, true),
            ("d.jsonl.zst", 10, 1000, 0, false),
            ("e.jsonl", 4004, 1000, 4004, true),
            ("f.jsonl", 4005, 1000, 4004, false),
            ("g.jsonl.zst", 10, 1000, 4004, false),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![b'x'; bytes]).unwrap();
            let got = opts(tail).for_file_below(&path, below);
            assert_eq!(got.full_tail_tokens.is_none(), whole, "{name}");
            assert_eq!(got.max_tool_output, Some(8000), "{name}");
        }
        // Without a tail (a full read), nothing changes.
        let path = dir.path().join("a.jsonl");
        let full = ReadOptions::default().for_file(&path);
        assert!(full.full_tail_tokens.is_none() && full.max_tool_output.is_none());
        // A file that cannot be read keeps the options: the reader says why.
        let gone = opts(1000).for_file(&dir.path().join("missing.jsonl"));
        assert_eq!(gone.full_tail_tokens, Some(1000));
    }
}
