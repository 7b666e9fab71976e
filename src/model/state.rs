//! What a message is and what was done to it, as typed fields of `Message`: its kind, and how
//! its tool output was cut, masked or turned into a transcript. In the neutral JSON they travel
//! as metadata keys (`kind`, `original_chars`, `source_chars`, `reduced`, `masked`, `failed`,
//! `oneline`), so that an export reads the same whatever holds them, and an export written by
//! another version reads back into the same fields.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::{Message, Meta, Role, Timestamp, ToolKind};

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// What sort of message a system or assistant message is, when it is not plain
        /// conversation: set by the readers (injected context, compactions, UI lines) and by
        /// the plan (what it writes in place of turns).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum MessageKind {
            $($(#[$doc])* $variant,)*
        }

        impl MessageKind {
            pub fn as_str(self) -> &'static str {
                match self {
                    $(MessageKind::$variant => $name,)*
                }
            }

            /// The kind named `name`; `None` for a name this build does not know (it then stays
            /// in the metadata as it came).
            pub fn parse(name: &str) -> Option<MessageKind> {
                match name {
                    $($name => Some(MessageKind::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

kinds! {
    /// The agent's injected environment or project context.
    Context => "context",
    /// The agent's own instructions to the model.
    Instructions => "instructions",
    /// A slash command the user typed, and what it printed.
    Command => "command",
    /// The note an agent leaves when the user interrupts it.
    Interruption => "interruption",
    /// A background task's notification.
    TaskNotification => "task_notification",
    /// Where the agent compacted its context (with its summary when it wrote one there).
    Compaction => "compaction",
    /// The summary a compaction left, given to the model as a user message.
    CompactSummary => "compact_summary",
    /// A line the agent drew for the user only.
    Informational => "informational",
    /// A content block this build does not read.
    UnsupportedBlock => "unsupported_block",
    /// A shell command the user ran through the agent's own escape (pi's `!command`).
    UserShell => "user_shell",
    /// Gemini CLI's info, warning and error lines.
    Info => "info",
    Warning => "warning",
    Error => "error",
    /// The plan's note at the head of a relayed session.
    RelayPreamble => "relay_preamble",
    /// The handoff brief.
    HandoffBrief => "handoff_brief",
    /// The extractive summary of the turns left out.
    RelaySummary => "relay_summary",
    /// A compaction's summary carried into the relay.
    CarriedSummary => "carried_summary",
    /// A tool call and its result written as text.
    ToolTranscript => "tool_transcript",
    /// A tool call and its result in one line.
    ToolOneline => "tool_oneline",
    /// Several tool calls of a turn in one line each.
    ToolDigest => "tool_digest",
}

/// Counts of secrets masked, by kind.
pub type MaskedCounts = BTreeMap<String, usize>;

/// What was done to a tool output, or to the transcript that carries one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputState {
    /// The output's length in characters before it was cut (`Message::output_chars`).
    pub original_chars: Option<usize>,
    /// What the fit counts of the output as the source held it (see `fit::source_tokens`).
    pub source_chars: Option<usize>,
    /// Read only in part: cut further than a full read cuts it (see `ReadOptions`).
    pub reduced: bool,
    /// The secrets the reader masked in it, by kind: redaction adds these counts and leaves
    /// the text alone.
    pub masked: Option<MaskedCounts>,
    /// A transcript of a call that failed (said here, not read back from its text).
    pub failed: bool,
    /// A transcript's one-line form, for when the fit keeps the turn only so.
    pub oneline: Option<String>,
}

impl OutputState {
    /// The fields as the metadata entries they travel as, in key order.
    fn entries(&self, kind: Option<MessageKind>) -> Vec<(&'static str, Value)> {
        let mut out = Vec::new();
        if self.failed {
            out.push(("failed", Value::Bool(true)));
        }
        if let Some(k) = kind {
            out.push(("kind", Value::from(k.as_str())));
        }
        if let Some(m) = &self.masked {
            out.push(("masked", serde_json::to_value(m).unwrap_or_default()));
        }
        if let Some(o) = &self.oneline {
            out.push(("oneline", Value::from(o.as_str())));
        }
        if let Some(n) = self.original_chars {
            out.push(("original_chars", Value::from(n)));
        }
        if self.reduced {
            out.push(("reduced", Value::Bool(true)));
        }
        if let Some(n) = self.source_chars {
            out.push(("source_chars", Value::from(n)));
        }
        out
    }

    /// Takes the entries `entries` writes out of `meta`, where they hold what they would hold.
    fn take(meta: &mut Meta) -> (Option<MessageKind>, Option<Box<OutputState>>) {
        let kind = meta
            .get_str("kind")
            .and_then(MessageKind::parse)
            .inspect(|_| {
                meta.remove("kind");
            });
        let mut s = OutputState::default();
        let count = |meta: &mut Meta, key: &str| {
            let n = meta.get_u64(key).and_then(|n| usize::try_from(n).ok());
            n.inspect(|_| {
                meta.remove(key);
            })
        };
        s.original_chars = count(meta, "original_chars");
        s.source_chars = count(meta, "source_chars");
        let flag = |meta: &mut Meta, key: &str| {
            let on = meta.get_bool(key) == Some(true);
            if on {
                meta.remove(key);
            }
            on
        };
        s.reduced = flag(meta, "reduced");
        s.failed = flag(meta, "failed");
        s.oneline = meta.get_str("oneline").map(str::to_string);
        if s.oneline.is_some() {
            meta.remove("oneline");
        }
        if let Some(Ok(counts)) = meta
            .get("masked")
            .map(serde_json::from_value::<MaskedCounts>)
        {
            meta.remove("masked");
            s.masked = Some(counts);
        }
        let state = (s != OutputState::default()).then(|| Box::new(s));
        (kind, state)
    }
}

/// A message as the neutral JSON holds it.
#[derive(Deserialize)]
pub(super) struct WireMessage {
    role: Role,
    content: String,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    tool_input: Option<Value>,
    #[serde(default)]
    tool_kind: Option<ToolKind>,
    #[serde(default)]
    key_arg: Option<String>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    metadata: Meta,
}

impl From<WireMessage> for Message {
    fn from(w: WireMessage) -> Message {
        let mut metadata = w.metadata;
        let (kind, state) = OutputState::take(&mut metadata);
        Message {
            role: w.role,
            content: w.content,
            timestamp: w.timestamp,
            tool_call_id: w.tool_call_id,
            tool_name: w.tool_name,
            tool_input: w.tool_input,
            tool_kind: w.tool_kind,
            key_arg: w.key_arg,
            is_error: w.is_error,
            kind,
            state,
            metadata,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            role: Role,
            content: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            timestamp: Option<&'a Timestamp>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tool_call_id: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tool_name: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tool_input: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tool_kind: Option<ToolKind>,
            #[serde(skip_serializing_if = "Option::is_none")]
            key_arg: Option<&'a str>,
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            is_error: bool,
            #[serde(skip_serializing_if = "MetaView::is_empty")]
            metadata: MetaView<'a>,
        }
        let none = OutputState::default();
        let typed = match (&self.state, self.kind) {
            (None, None) => Vec::new(),
            (state, kind) => state.as_deref().unwrap_or(&none).entries(kind),
        };
        Wire {
            role: self.role,
            content: &self.content,
            timestamp: self.timestamp.as_ref(),
            tool_call_id: self.tool_call_id.as_deref(),
            tool_name: self.tool_name.as_deref(),
            tool_input: self.tool_input.as_ref(),
            tool_kind: self.tool_kind,
            key_arg: self.key_arg.as_deref(),
            is_error: self.is_error,
            metadata: MetaView {
                meta: &self.metadata,
                typed,
            },
        }
        .serialize(s)
    }
}

/// A message's metadata with its typed fields among the keys, in key order.
struct MetaView<'a> {
    meta: &'a Meta,
    typed: Vec<(&'static str, Value)>,
}

impl MetaView<'_> {
    fn is_empty(&self) -> bool {
        self.meta.is_empty() && self.typed.is_empty()
    }
}

impl Serialize for MetaView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.meta.serialize_with(&self.typed, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The neutral JSON of a message is what it was when its kind and state were metadata keys:
    /// the typed fields among the other keys in key order, and a message read back from it is
    /// the same message. A key holding what no typed field can (an unknown kind, a count that is
    /// not a number, `reduced: false`) stays in the metadata as it came.
    #[test]
    fn typed_fields_travel_as_the_metadata_keys_they_were() {
        let kinds = [
            None,
            Some(MessageKind::Compaction),
            Some(MessageKind::ToolTranscript),
        ];
        let extras: [&[(&str, Value)]; 5] = [
            &[],
            &[("line", json!(7)), ("uuid", json!("u1"))],
            &[
                ("a", json!(1)),
                ("zz", json!({"x": [1]})),
                ("images", json!([])),
            ],
            &[
                ("kind", json!("a_kind_from_a_newer_build")),
                ("line", json!(3)),
            ],
            &[("reduced", json!(false)), ("original_chars", json!("12"))],
        ];
        let states = [
            None,
            Some(OutputState {
                original_chars: Some(120_000),
                ..Default::default()
            }),
            Some(OutputState {
                original_chars: Some(9),
                source_chars: Some(40),
                reduced: true,
                masked: Some([("aws_key".to_string(), 2)].into()),
                failed: true,
                oneline: Some("[tool call: Bash] ls".into()),
            }),
        ];
        for kind in kinds {
            for extra in extras {
                for state in &states {
                    // A key a typed field holds comes from the typed field, not twice.
                    let extra: Vec<_> = extra
                        .iter()
                        .filter(|(k, _)| {
                            !(*k == "kind" && kind.is_some()
                                || *k == "reduced" && state.as_ref().is_some_and(|s| s.reduced)
                                || *k == "original_chars"
                                    && state.as_ref().is_some_and(|s| s.original_chars.is_some()))
                        })
                        .collect();
                    let mut m = Message::new(Role::Assistant, "text");
                    m.kind = kind;
                    m.state = state.clone().map(Box::new);
                    let mut want = serde_json::Map::new();
                    for (k, v) in &extra {
                        m.metadata.insert_any((*k).into(), v.clone());
                        want.insert(k.to_string(), v.clone());
                    }
                    let none = OutputState::default();
                    for (k, v) in state.as_ref().unwrap_or(&none).entries(kind) {
                        want.insert(k.into(), v);
                    }
                    let json = serde_json::to_value(&m).unwrap();
                    let got = json.get("metadata").cloned().unwrap_or(json!({}));
                    assert_eq!(got, Value::Object(want.clone()));
                    // Key order too, as a `BTreeMap` orders it.
                    let text = serde_json::to_string(&m).unwrap();
                    let mut keys: Vec<&String> = want.keys().collect();
                    keys.sort();
                    let mut at = 0;
                    for k in keys {
                        let found = text[at..].find(&format!("\"{k}\":"));
                        at += found.unwrap_or_else(|| panic!("{k} out of order in {text}"));
                    }
                    let back: Message = serde_json::from_str(&text).unwrap();
                    assert_eq!(back, m, "{text}");
                }
            }
        }
    }
}
