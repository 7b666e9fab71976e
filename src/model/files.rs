//! What a session did to files, found in its tool calls by their neutral kinds (see
//! `ToolKind`): a write or an edit names its file, a patch (`*** Begin Patch`, whichever tool
//! carried it) the files it adds, updates, moves and deletes, and a shell command the files it
//! removes, moves, edits in place or writes through a redirection (see `shell`). One pass over
//! the messages, in order, whatever agent wrote them; a call that failed changed nothing.
//!
//! A reader that folds older turns away (`adapter::ReadOptions::fold`) hands them to
//! `Folded::add`, which takes note of them here as they go by (`Folded::files`), so the facts
//! of a session read in part are those of the whole session.

mod shell;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{Message, Role, Session, Timestamp, ToolKind};

/// What one tool call did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Written whole; whether it was new, the call's result may say (`Created` then).
    Write,
    /// Made new (a patch's `Add File`, a write whose result says it created the file).
    Created,
    /// Changed in place.
    Edit,
    Delete,
    /// Moved (renamed) to this path.
    MoveTo(String),
}

/// What a tool call did to files: (path as the call names it, effect). Paths may be relative
/// to the session's working directory.
pub fn effects_of_call(m: &Message) -> Vec<(String, Effect)> {
    if m.role != Role::ToolCall {
        return Vec::new();
    }
    if let Some(patch) = patch_text(m) {
        return patch_effects(patch);
    }
    let key = || {
        m.key_arg
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
    };
    match m.tool_kind {
        Some(ToolKind::Write) => key().map(|k| vec![(k.to_string(), Effect::Write)]),
        // An edit's key argument names its file, unless it is a patch's headline.
        Some(ToolKind::Edit) => key()
            .filter(|k| !k.starts_with("patch:"))
            .map(|k| vec![(k.to_string(), Effect::Edit)]),
        Some(ToolKind::Shell) => key().map(shell::effects),
        _ => None,
    }
    .unwrap_or_default()
}

/// The patch a call carries, in the format Codex's `apply_patch` takes (which other agents'
/// patch tools take too): from `*** Begin Patch` on, wherever the call holds it (its free
/// text, its input, an argv, a shell command's here-document).
fn patch_text(m: &Message) -> Option<&str> {
    const BEGIN: &str = "*** Begin Patch";
    let input = m.tool_input.as_ref();
    let fields = ["input", "patch", "command", "cmd"];
    let from_input = input.into_iter().flat_map(|v| {
        let whole = v.as_str().into_iter();
        let fields = fields
            .iter()
            .filter_map(|f| v.get(*f))
            .flat_map(|f| match f {
                Value::String(s) => vec![s.as_str()],
                Value::Array(words) => words.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            });
        whole.chain(fields)
    });
    std::iter::once(m.content.as_str())
        .chain(from_input)
        .chain(m.key_arg.as_deref())
        .find_map(|t| t.find(BEGIN).map(|at| &t[at..]))
}

/// The files a patch adds, updates (and moves) and deletes, in order.
fn patch_effects(patch: &str) -> Vec<(String, Effect)> {
    let mut out: Vec<(String, Effect)> = Vec::new();
    for line in patch.lines() {
        let Some(rest) = line.strip_prefix("*** ") else {
            continue;
        };
        let file = |marker: &str| rest.strip_prefix(marker).map(|p| p.trim().to_string());
        if let Some(p) = file("Add File: ") {
            out.push((p, Effect::Created));
        } else if let Some(p) = file("Update File: ") {
            out.push((p, Effect::Edit));
        } else if let Some(p) = file("Delete File: ") {
            out.push((p, Effect::Delete));
        } else if let Some(to) = file("Move to: ") {
            // Moves the file the update before it names: that one goes, this one holds it.
            if let Some((from, e)) = out.last_mut()
                && *e == Effect::Edit
            {
                let from = std::mem::replace(from, to.clone());
                out.insert(out.len() - 1, (from, Effect::MoveTo(to)));
            }
        } else if rest.starts_with("End Patch") {
            break;
        }
    }
    out.retain(|(p, _)| !p.is_empty());
    out
}

/// What the session did to one file, all its changes taken together.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FileRecord {
    /// Made new by the session (and not deleted since, or made again after).
    pub created: bool,
    /// Writes and edits besides the one that created it.
    pub edits: usize,
    /// Its last change deleted it.
    pub deleted: bool,
    /// Its last change moved it there.
    pub moved_to: Option<String>,
    /// It was moved here from there.
    pub moved_from: Option<String>,
    /// The turn of its last change (the user messages up to it), when known.
    pub turn: Option<usize>,
    /// Where its last change was: the messages before it, in the whole session.
    pub place: usize,
    /// When its last change was done, as the session recorded it: the time of the call's
    /// result (the change was made by then), else of the call.
    pub time: Option<Timestamp>,
}

impl FileRecord {
    /// All changes counted.
    pub fn changes(&self) -> usize {
        self.edits + usize::from(self.created)
    }

    /// Gone by the session's own last change to it.
    pub fn gone(&self) -> bool {
        self.deleted || self.moved_to.is_some()
    }

    /// Another file was moved here.
    fn moved_in(&mut self, from: &str, at: &At) {
        self.deleted = false;
        self.moved_to = None;
        self.moved_from = Some(from.to_string());
        self.placed(at);
    }

    fn placed(&mut self, at: &At) {
        self.turn = Some(at.turn);
        self.place = at.place;
        self.time = at.time.clone();
    }

    fn apply(&mut self, effect: &Effect, at: &At) {
        match effect {
            Effect::Created => {
                if self.created && !self.gone() {
                    self.edits += 1;
                }
                self.created = true;
            }
            Effect::Write | Effect::Edit => self.edits += 1,
            Effect::Delete => {}
            Effect::MoveTo(to) => self.moved_to = Some(to.clone()),
        }
        self.deleted = *effect == Effect::Delete;
        if !matches!(effect, Effect::MoveTo(_)) {
            self.moved_to = None;
        }
        self.placed(at);
    }
}

/// When a change happened.
struct At {
    turn: usize,
    place: usize,
    time: Option<Timestamp>,
}

/// A call whose effects wait for its result (a failed call changed nothing).
#[derive(Debug, Clone, PartialEq)]
struct Pending {
    effects: Vec<(String, Effect)>,
    turn: usize,
    place: usize,
    time: Option<Timestamp>,
}

/// The facts gathered so far, message by message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileLog {
    /// Messages and user messages seen.
    messages: usize,
    turns: usize,
    /// Where each user message was: the turn of a place the reader recorded a change at.
    user_places: Vec<usize>,
    pending: BTreeMap<String, Pending>,
    files: BTreeMap<String, FileRecord>,
}

impl FileLog {
    /// Takes note of the next messages of the session, in order.
    pub fn add_all(&mut self, messages: &[Message]) {
        for m in messages {
            self.add(m);
        }
    }

    fn add(&mut self, m: &Message) {
        let place = self.messages;
        self.messages += 1;
        match m.role {
            Role::User => {
                self.turns += 1;
                self.user_places.push(place);
            }
            Role::ToolCall => {
                let effects = effects_of_call(m);
                if effects.is_empty() {
                    return;
                }
                let pending = Pending {
                    effects,
                    turn: self.turns,
                    place,
                    time: m.timestamp.clone(),
                };
                match &m.tool_call_id {
                    Some(id) => {
                        // A call made again under its id before its result: the first is
                        // taken as done.
                        if let Some(earlier) = self.pending.insert(id.clone(), pending) {
                            self.apply(earlier, None);
                        }
                    }
                    None => self.apply(pending, None),
                }
            }
            Role::ToolResult => {
                let Some(call) = m
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| self.pending.remove(id))
                else {
                    return;
                };
                if !m.is_error {
                    self.apply(call, Some(m));
                }
            }
            _ => {}
        }
    }

    fn apply(&mut self, call: Pending, result: Option<&Message>) {
        let created = result.is_some_and(|r| says_created(&r.content));
        let at = At {
            turn: call.turn,
            place: call.place,
            time: result
                .and_then(|r| r.timestamp.clone())
                .or(call.time.clone()),
        };
        for (path, effect) in call.effects {
            let effect = match effect {
                Effect::Write if created => Effect::Created,
                e => e,
            };
            if let Effect::MoveTo(to) = &effect {
                self.files
                    .entry(to.clone())
                    .or_default()
                    .moved_in(&path, &at);
            }
            self.files.entry(path).or_default().apply(&effect, &at);
        }
    }

    /// The facts of the session whose messages (all of them, or the rest after those folded:
    /// `Session::folded`) this log has now seen, with the files its reader recorded without a
    /// call this log could read (a change an event reported, a call compressed away), and
    /// every path made absolute against the session's working directory.
    pub fn finish(mut self, session: &Session) -> FileFacts {
        // Calls never answered: the change may well have been made.
        for (_, call) in std::mem::take(&mut self.pending) {
            self.apply(call, None);
        }
        let cwd = session.cwd.as_deref();
        let mut files: BTreeMap<String, FileRecord> = BTreeMap::new();
        for (path, mut record) in std::mem::take(&mut self.files) {
            record.moved_to = record.moved_to.map(|p| absolute(cwd, &p));
            record.moved_from = record.moved_from.map(|p| absolute(cwd, &p));
            match files.entry(absolute(cwd, &path)) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(record);
                }
                // The same file named two ways (relative and absolute).
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    let (a, b) = if o.get().place <= record.place {
                        (o.get().clone(), record)
                    } else {
                        (record, o.get().clone())
                    };
                    o.insert(FileRecord {
                        created: a.created || b.created,
                        edits: a.edits + b.edits,
                        moved_from: b.moved_from.clone().or(a.moved_from),
                        ..b
                    });
                }
            }
        }
        for path in &session.files_touched {
            let key = absolute(cwd, path);
            if files.contains_key(&key) {
                continue;
            }
            let recorded = session.file_changes.get(path);
            let place = recorded.map_or(0, |c| c.last);
            files.insert(
                key,
                FileRecord {
                    edits: recorded.map_or(1, |c| c.count),
                    turn: (place > 0).then(|| self.user_places.partition_point(|&u| u < place)),
                    place,
                    ..Default::default()
                },
            );
        }
        FileFacts {
            files: files.into_iter().collect(),
        }
    }
}

/// Whether a write's result says it made a new file ("File created successfully at: …",
/// "Successfully created and wrote to new file: …", "Created file …"), as the agents word it.
fn says_created(result: &str) -> bool {
    let first = result.lines().next().unwrap_or_default();
    first.len() < 400 && first.to_ascii_lowercase().contains("created")
}

/// `path` made absolute against `cwd` (when it is relative and `cwd` is known), with `.` and
/// `..` taken out.
pub fn absolute(cwd: Option<&str>, path: &str) -> String {
    let joined = match cwd {
        Some(c) if !is_absolute(path) && is_absolute(c) => {
            format!("{}/{}", c.trim_end_matches(['/', '\\']), path)
        }
        _ => path.to_string(),
    };
    normalize(&joined)
}

fn is_absolute(p: &str) -> bool {
    p.starts_with('/')
        || p.starts_with('\\')
        || (p.len() > 2 && p.as_bytes()[1] == b':' && p.as_bytes()[0].is_ascii_alphabetic())
}

/// A path without `.` and `..` parts or doubled separators, lexically (a link is not followed:
/// the file named is the one the session named).
fn normalize(p: &str) -> String {
    let sep = if p.contains('/') || !p.contains('\\') {
        '/'
    } else {
        '\\'
    };
    let absolute = p.starts_with(sep);
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split(sep) {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            other => parts.push(other),
        }
    }
    let joined = parts.join(&sep.to_string());
    match (absolute, joined.is_empty()) {
        (true, _) => format!("{sep}{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// What a session did to files: every file it changed, by absolute path (where the session's
/// working directory is known), in path order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileFacts {
    pub files: Vec<(String, FileRecord)>,
}

impl FileFacts {
    /// The facts of `session` as read (all its messages, or those its reader folded and the
    /// rest).
    pub fn of(session: &Session) -> FileFacts {
        let (mut log, rest) = match &session.folded {
            Some(f) => (
                f.files.clone(),
                &session.messages[f.at.min(session.messages.len())..],
            ),
            None => (FileLog::default(), &session.messages[..]),
        };
        log.add_all(rest);
        log.finish(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(kind: ToolKind, key: &str, input: Value, id: &str) -> Message {
        let mut m = Message::new(Role::ToolCall, "");
        m.tool_kind = Some(kind);
        m.key_arg = Some(key.into());
        m.tool_input = Some(input);
        m.tool_call_id = Some(id.into());
        m
    }

    fn result(id: &str, text: &str, error: bool) -> Message {
        let mut m = Message::new(Role::ToolResult, text);
        m.tool_call_id = Some(id.into());
        m.is_error = error;
        m
    }

    #[test]
    fn a_patch_adds_updates_moves_and_deletes_its_files() {
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-x\n+y\n*** Delete File: old.rs\n*** Update File: c.rs\n@@\n*** End Patch";
        let m = call(ToolKind::Edit, "patch: …", json!(patch), "c1");
        assert_eq!(
            effects_of_call(&m),
            vec![
                ("new.txt".into(), Effect::Created),
                ("src/a.rs".into(), Effect::MoveTo("src/b.rs".into())),
                ("src/b.rs".into(), Effect::Edit),
                ("old.rs".into(), Effect::Delete),
                ("c.rs".into(), Effect::Edit),
            ]
        );
        // Through the shell, as a here-document.
        let heredoc = format!("apply_patch <<'EOF'\n{patch}\nEOF");
        let m = call(ToolKind::Shell, &heredoc, json!({"cmd": heredoc}), "c2");
        assert_eq!(effects_of_call(&m).len(), 5);
    }

    #[test]
    fn the_log_counts_changes_skips_failures_and_places_each_last_change() {
        let mut s = Session::new("claude", "t", "id");
        s.cwd = Some("/p".into());
        let w = |p: &str, id: &str| call(ToolKind::Write, p, json!({}), id);
        let e = |p: &str, id: &str| call(ToolKind::Edit, p, json!({}), id);
        s.messages = vec![
            Message::new(Role::User, "go"),
            w("/p/a.rs", "1"),
            result("1", "File created successfully at: /p/a.rs", false),
            e("/p/a.rs", "2"),
            result("2", "ok", false),
            Message::new(Role::User, "more"),
            e("b.rs", "3"),
            result("3", "String not found", true),
            call(ToolKind::Shell, "cd sub && rm -f x.txt", json!({}), "4"),
            result("4", "", false),
            w("/p/c.rs", "5"),
            result("5", "The file /p/c.rs has been updated.", false),
            Message::new(Role::User, "again"),
            e("/p/c.rs", "6"),
        ];
        let facts = FileFacts::of(&s);
        let got: BTreeMap<&str, &FileRecord> =
            facts.files.iter().map(|(p, r)| (p.as_str(), r)).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        let a = got["/p/a.rs"];
        assert_eq!((a.created, a.edits, a.turn), (true, 1, Some(1)));
        let x = got["/p/sub/x.txt"];
        assert_eq!((x.deleted, x.turn), (true, Some(2)));
        // An unanswered call is taken as done.
        let c = got["/p/c.rs"];
        assert_eq!(
            (c.created, c.edits, c.turn, c.place),
            (false, 2, Some(3), 13)
        );
    }

    #[test]
    fn folded_then_read_is_as_read_whole() {
        let mut s = Session::new("codex", "t", "id");
        s.cwd = Some("/p".into());
        s.messages = (0..30)
            .flat_map(|i| {
                let id = format!("c{i}");
                [
                    Message::new(Role::User, format!("turn {i}")),
                    call(ToolKind::Edit, &format!("f{}.rs", i % 7), json!({}), &id),
                    result(&id, "ok", i % 5 == 0),
                ]
            })
            .collect();
        let whole = FileFacts::of(&s);
        for at in [1, 4, 16] {
            let mut part = s.clone();
            let mut folded = crate::model::Folded {
                at,
                ..Default::default()
            };
            folded.files.add_all(&s.messages[..at]);
            let turns: Vec<Message> = part.messages.drain(at..at + 30).collect();
            folded.add(&turns);
            folded.messages = turns.len();
            part.folded = Some(Box::new(folded));
            assert_eq!(FileFacts::of(&part), whole, "folded at {at}");
        }
    }

    #[test]
    fn paths_are_made_absolute_and_plain() {
        assert_eq!(absolute(Some("/p/q"), "./a/../b.rs"), "/p/q/b.rs");
        assert_eq!(absolute(Some("/p"), "/x//y/./z"), "/x/y/z");
        assert_eq!(absolute(None, "a/b"), "a/b");
        assert_eq!(absolute(Some("C:\\w"), "C:\\w\\a.rs"), "C:\\w\\a.rs");
    }
}
