//! What Gemini CLI's records are and how it applies them (metadata lines and `$set` merge, a
//! message id seen again replaces that message, `$set.messages` the list, `$rewindTo` drops a
//! message and all after it), and the rules that decide a message's role, text and times: the
//! reader and the listing scan both go by them.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::model::{MessageKind, Session, Timestamp};

// ------------------------------------------------------------------------- records, generic

/// One line of a session file, told apart by its keys as the CLI tells them apart.
pub enum Record<M> {
    /// `{"$rewindTo": id}`
    Rewind(String),
    /// A message: any object with a string `id`.
    Message(String, M),
    /// `{"$set": {...}}`: metadata, and with `messages` a whole new list.
    Set {
        meta: Map<String, Value>,
        messages: Option<Vec<(String, M)>>,
    },
    /// A metadata record (string `sessionId` and `projectHash`), maybe with `messages` (the
    /// older single document).
    Meta {
        meta: Map<String, Value>,
        messages: Option<Vec<(String, M)>>,
    },
    /// Anything else: the CLI skips it.
    Other,
}

/// Where a message lies: its line, and its place among the messages of that line's list
/// (`None`: the line is the message).
pub type Place = (usize, Option<usize>);

impl<M> Record<M> {
    /// The record with each message replaced by where it lies in the file (line `no`).
    pub fn placed(self, no: usize) -> Record<Place> {
        let list = |l: Option<Vec<(String, M)>>| {
            l.map(|l| {
                l.into_iter()
                    .enumerate()
                    .map(|(k, (id, _))| (id, (no, Some(k))))
                    .collect()
            })
        };
        match self {
            Record::Rewind(id) => Record::Rewind(id),
            Record::Message(id, _) => Record::Message(id, (no, None)),
            Record::Set { meta, messages } => Record::Set {
                meta,
                messages: list(messages),
            },
            Record::Meta { meta, messages } => Record::Meta {
                meta,
                messages: list(messages),
            },
            Record::Other => Record::Other,
        }
    }
}

/// The conversation the records build: metadata and messages in order, by id.
pub struct Conversation<M> {
    pub meta: Map<String, Value>,
    messages: Vec<(String, M)>,
    index: HashMap<String, usize>,
}

impl<M> Default for Conversation<M> {
    fn default() -> Self {
        Conversation {
            meta: Map::new(),
            messages: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<M> Conversation<M> {
    pub fn apply(&mut self, r: Record<M>) {
        match r {
            Record::Rewind(id) => match self.index.get(&id) {
                Some(&at) => self.truncate(at),
                None => self.truncate(0),
            },
            Record::Message(id, m) => self.put(id, m),
            Record::Set { meta, messages } => {
                if let Some(list) = messages {
                    self.truncate(0);
                    for (id, m) in list {
                        self.put(id, m);
                    }
                }
                self.meta.extend(meta);
            }
            Record::Meta { meta, messages } => {
                self.meta.extend(meta);
                for (id, m) in messages.into_iter().flatten() {
                    self.put(id, m);
                }
            }
            Record::Other => {}
        }
    }

    /// First position, last content.
    fn put(&mut self, id: String, m: M) {
        match self.index.get(&id) {
            Some(&at) => self.messages[at].1 = m,
            None => {
                self.index.insert(id.clone(), self.messages.len());
                self.messages.push((id, m));
            }
        }
    }

    fn truncate(&mut self, at: usize) {
        for (id, _) in self.messages.drain(at..) {
            self.index.remove(&id);
        }
    }

    /// The messages with their ids, in order.
    pub fn entries(&self) -> &[(String, M)] {
        &self.messages
    }

    pub fn into_entries(self) -> Vec<(String, M)> {
        self.messages
    }

    pub fn messages(&self) -> impl Iterator<Item = &M> {
        self.messages.iter().map(|(_, m)| m)
    }

    pub fn into_messages(self) -> Vec<M> {
        self.messages.into_iter().map(|(_, m)| m).collect()
    }

    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(Value::as_str)
    }
}

// ------------------------------------------------------------------------- shared rules

/// What the reader and the scan need of one content part.
pub struct PartView<'a> {
    pub text: Option<&'a str>,
    pub thought: bool,
}

/// What a user message is, by its text parts.
pub struct UserSplit {
    /// Injected context and commands the CLI skips: (kind, text).
    pub context: Vec<(MessageKind, String)>,
    /// The person's words, when there are any.
    pub words: Option<String>,
}

/// Splits a user message the way the CLI treats it: text starting with `/` or `?` is a
/// command, `<session_context>` / `<hook_context>` its own context; the rest is the person's
/// words. After a cancelled call the CLI merges the first prompt into its context message as a
/// second part: that part is words again. `relay` is the message's `sessionRelay` field (a
/// message a relay wrote: its kind is said, a leading escape part is not part of the text).
pub fn split_user(parts: &[PartView], relay: Option<&str>) -> UserSplit {
    let mut texts: Vec<&str> = parts
        .iter()
        .filter(|p| !p.thought)
        .filter_map(|p| p.text)
        .collect();
    if let Some(kind) = relay {
        if texts.len() > 1 && texts[0] == super::ESCAPE_PART {
            texts.remove(0);
        }
        let text = texts.concat();
        return if kind == "context" {
            UserSplit {
                context: vec![(MessageKind::Context, text)],
                words: None,
            }
        } else {
            UserSplit {
                context: Vec::new(),
                words: Some(text),
            }
        };
    }
    let mut split = UserSplit {
        context: Vec::new(),
        words: None,
    };
    let joined = texts.concat();
    let trimmed = super::cli_trim(&joined);
    match super::ignored_kind(trimmed) {
        None if trimmed.is_empty() => {}
        None => split.words = Some(joined),
        Some(MessageKind::Command) => split.context.push((MessageKind::Command, joined)),
        Some(kind) => {
            // Leading context parts, then what follows them.
            let lead = texts
                .iter()
                .take_while(|t| {
                    super::ignored_kind(super::cli_trim(t)) == Some(MessageKind::Context)
                })
                .count()
                .max(1);
            split.context.push((kind, texts[..lead].concat()));
            let rest = texts[lead..].concat();
            if !super::cli_trim(&rest).is_empty() {
                split.words = Some(rest);
            }
        }
    }
    split
}

/// A gemini message's own text: its string content, or its text parts without thoughts.
pub fn gemini_text(parts: &[PartView]) -> String {
    parts
        .iter()
        .filter(|p| !p.thought)
        .filter_map(|p| p.text)
        .collect()
}

/// Whether a message counts as the person's words or an answer (what `show` counts).
pub fn counts_as_message(kind: &str, parts: &[PartView], relay: Option<&str>) -> bool {
    match kind {
        "user" => split_user(parts, relay).words.is_some(),
        "gemini" => !gemini_text(parts).trim().is_empty(),
        _ => false,
    }
}

/// The first directory the CLI's session context names (`Workspace Directories:`), for files
/// outside a store whose project cannot be looked up.
pub fn context_cwd(text: &str) -> Option<String> {
    if !text.trim_start().starts_with("<session_context>") {
        return None;
    }
    let rest = &text[text.find("Workspace Directories:")?..];
    rest.lines()
        .skip(1)
        .map(str::trim)
        .find_map(|l| l.strip_prefix("- "))
        .map(|p| p.trim().to_string())
        .filter(|p| p.starts_with('/'))
}

/// Where a session file's directory comes from, in order: the project folder it is in, the
/// registered path whose sha256 is its `projectHash`, the `directories` it records, the
/// directory its session context names.
pub fn resolve_cwd(
    path: &Path,
    meta: &Map<String, Value>,
    context: Option<&str>,
) -> Option<String> {
    if let Some((gemini, folder)) = super::store_location(path)
        && let Some(cwd) = super::project::folder_cwd(&gemini, &folder)
    {
        return Some(cwd);
    }
    meta.get("projectHash")
        .and_then(Value::as_str)
        .and_then(|h| super::project::cwd_for_hash(path, h))
        .or_else(|| {
            meta.get("directories")
                .and_then(|d| d.get(0))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| context.and_then(context_cwd))
}

/// Start and last activity: the metadata's `startTime` / `lastUpdated`, else the first and last
/// message times. A relay's `lastUpdated` says when it was written, not when anyone was active
/// in it (it is written fresh, or the CLI would delete the relay of an old session at its next
/// start): its last activity is its newest message's time, as for a relay into any other store.
pub fn times(
    meta: &Map<String, Value>,
    first_message: Option<&str>,
    last_message: Option<&str>,
    relayed: bool,
) -> (Option<Timestamp>, Option<Timestamp>) {
    let message = |t: Option<&str>| t.filter(|s| !s.is_empty()).map(Timestamp::parse);
    let stamp = |key: &str, fallback: Option<&str>| {
        meta.get(key)
            .and_then(Timestamp::from_value)
            .or_else(|| message(fallback))
    };
    let updated = match message(last_message) {
        Some(last) if relayed => Some(last),
        _ => stamp("lastUpdated", last_message),
    };
    (stamp("startTime", first_message), updated)
}

/// Whether the reader met the provenance record a relay writes.
pub(super) fn is_relay(session: &Session) -> bool {
    session
        .stats
        .skipped_types
        .contains_key(&format!("type:{}", RELAY_RECORD))
}

/// The `type` of the provenance record a relay writes after the metadata.
pub(super) const RELAY_RECORD: &str = "session-relay";

/// The title: the summary the CLI (or a relay) set, else the first prompt.
pub fn title(meta: &Map<String, Value>, first_prompt: Option<&str>) -> Option<String> {
    meta.get("summary")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(crate::text::one_line)
        .or_else(|| first_prompt.map(crate::text::one_line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> PartView<'_> {
        PartView {
            text: Some(t),
            thought: false,
        }
    }

    #[test]
    fn user_text_splits_like_the_cli_treats_it() {
        let s = split_user(&[text("Fix the parser")], None);
        assert_eq!(s.words.as_deref(), Some("Fix the parser"));
        let s = split_user(&[text("/stats")], None);
        assert_eq!(s.context[0].0, MessageKind::Command);
        assert!(s.words.is_none());
        let s = split_user(
            &[
                text("<session_context>\nx\n</session_context>"),
                text("Set up"),
            ],
            None,
        );
        assert_eq!(s.context[0].0, MessageKind::Context);
        assert_eq!(s.words.as_deref(), Some("Set up"));
        let s = split_user(&[text(" ")], None);
        assert!(s.words.is_none() && s.context.is_empty());
        // A relay's own messages say what they are.
        let s = split_user(
            &[text(super::super::ESCAPE_PART), text("/etc/hosts")],
            Some("user"),
        );
        assert_eq!(s.words.as_deref(), Some("/etc/hosts"));
        let s = split_user(&[text("# Handoff brief")], Some("context"));
        assert_eq!(
            s.context[0],
            (MessageKind::Context, "# Handoff brief".to_string())
        );
    }

    #[test]
    fn records_replace_rewind_and_reset_like_the_cli() {
        let mut c: Conversation<&str> = Conversation::default();
        c.apply(Record::Message("a".into(), "a1"));
        c.apply(Record::Message("b".into(), "b1"));
        c.apply(Record::Message("a".into(), "a2"));
        assert_eq!(c.messages().copied().collect::<Vec<_>>(), ["a2", "b1"]);
        c.apply(Record::Message("c".into(), "c1"));
        c.apply(Record::Rewind("b".into()));
        assert_eq!(c.messages().copied().collect::<Vec<_>>(), ["a2"]);
        c.apply(Record::Rewind("nope".into()));
        assert_eq!(c.messages().count(), 0);
        c.apply(Record::Message("x".into(), "x1"));
        c.apply(Record::Set {
            meta: Map::new(),
            messages: Some(vec![("y".into(), "y1")]),
        });
        assert_eq!(c.messages().copied().collect::<Vec<_>>(), ["y1"]);
    }
}
