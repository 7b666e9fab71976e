//! What a session did, counted from its neutral messages in one pass, whichever agent wrote
//! it: turns, messages, tool calls by kind, failed calls, and where the person stepped in.
//! `stats` adds these up; the listing cache keeps them beside each file's summary, so that a
//! store of thousands of sessions is read whole only once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Message, MessageKind, Role, Session, Timestamp, ToolKind};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCounts {
    /// A user message and everything up to the next (a session that opens with anything else
    /// has one more).
    pub turns: usize,
    pub user_messages: usize,
    pub assistant_messages: usize,
    /// Tool calls by neutral kind (a call its reader did not classify counts as `other`).
    pub tool_calls: BTreeMap<ToolKind, usize>,
    /// Results marked failed, not counting the calls the person rejected.
    pub tool_errors: usize,
    /// The agent's own notes that the person interrupted it.
    pub interruptions: usize,
    /// Results that say the person refused the call.
    pub rejected: usize,
    /// User messages that come right after a tool call or result, with no answer of the
    /// agent's between (only system notes or reasoning): the person stepped into the agent's
    /// work instead of answering it.
    pub corrections: usize,
    /// How full the context was at the newest request, as the agent recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_tokens: Option<u64>,
    /// The conversation's size in tokens, estimated by the caller's measure (`stats` takes
    /// `log`'s: characters / 4).
    pub estimated_tokens: usize,
    /// The first and last time of the messages counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<Timestamp>,
}

impl SessionCounts {
    /// The counts of `s`. A session session-relay wrote (`relayed_at`: when) holds its source's
    /// messages with their own times, already counted in the source: only messages later than
    /// the relay count, what was done in it afterwards. `tokens` estimates a message's size.
    pub fn of(
        s: &Session,
        relayed_at: Option<&str>,
        tokens: impl Fn(&Message) -> usize,
    ) -> SessionCounts {
        let after = relayed_at.and_then(super::parse_time);
        let mut c = SessionCounts {
            recorded_tokens: s.context_usage.as_ref().map(|u| u.tokens),
            ..Default::default()
        };
        let mut counting = after.is_none();
        // The role of the last message that was not a system note or reasoning.
        let mut last: Option<Role> = None;
        let mut first_message = true;
        for m in &s.messages {
            if !counting {
                let later = m
                    .timestamp
                    .as_ref()
                    .and_then(Timestamp::time)
                    .zip(after)
                    .is_some_and(|(t, a)| t > a);
                if !later {
                    continue;
                }
                counting = true;
            }
            c.estimated_tokens += tokens(m);
            c.see(m, &mut last, first_message);
            first_message = false;
        }
        if relayed_at.is_some() && c.first.is_none() {
            // Nothing after the relay: nothing it recorded is this session's own.
            c.recorded_tokens = None;
        }
        c
    }

    fn see(&mut self, m: &Message, last: &mut Option<Role>, first: bool) {
        if let Some(t) = &m.timestamp
            && t.time().is_some()
        {
            if self.first.is_none() {
                self.first = Some(t.clone());
            }
            let later = self
                .last
                .as_ref()
                .and_then(Timestamp::time)
                .is_none_or(|l| t.time().is_some_and(|t| t >= l));
            if later {
                self.last = Some(t.clone());
            }
        }
        match m.role {
            Role::User => {
                self.user_messages += 1;
                self.turns += 1;
                if matches!(last, Some(Role::ToolCall | Role::ToolResult)) {
                    self.corrections += 1;
                }
            }
            Role::Assistant => self.assistant_messages += 1,
            Role::ToolCall => {
                *self
                    .tool_calls
                    .entry(m.tool_kind.unwrap_or(ToolKind::Other))
                    .or_default() += 1;
            }
            Role::ToolResult => {
                if m.metadata.get("rejected") == Some(serde_json::Value::Bool(true)) {
                    self.rejected += 1;
                } else if m.is_error {
                    self.tool_errors += 1;
                }
            }
            Role::System if m.is(MessageKind::Interruption) => self.interruptions += 1,
            Role::System | Role::Reasoning => {}
        }
        if first && m.role != Role::User {
            self.turns += 1;
        }
        if !matches!(m.role, Role::System | Role::Reasoning) {
            *last = Some(m.role);
        }
    }

    /// Every tool call, of any kind.
    pub fn calls(&self) -> usize {
        self.tool_calls.values().sum()
    }

    /// Interruptions, rejected calls and corrections.
    pub fn interventions(&self) -> usize {
        self.interruptions + self.rejected + self.corrections
    }

    /// Seconds from the first message counted to the last.
    pub fn seconds(&self) -> Option<i64> {
        let first = self.first.as_ref()?.time()?;
        let last = self.last.as_ref()?.time()?;
        Some((last - first).num_seconds().max(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(m: Message, t: &str) -> Message {
        m.with_time(Some(Timestamp::parse(t)))
    }

    fn call(kind: ToolKind) -> Message {
        let mut m = Message::new(Role::ToolCall, "");
        m.tool_kind = Some(kind);
        m
    }

    fn result(error: bool) -> Message {
        let mut m = Message::new(Role::ToolResult, "out");
        m.is_error = error;
        m
    }

    #[test]
    fn counts_calls_by_kind_errors_and_each_way_the_person_stepped_in() {
        let mut s = Session::new("claude", "claude-jsonl", "x");
        let rejected = result(true).with_meta("rejected", true);
        s.messages = vec![
            at(Message::new(Role::User, "go"), "2026-12-01T10:00:00.000Z"),
            Message::new(Role::Reasoning, "hm"),
            call(ToolKind::Shell),
            result(true),
            Message::new(Role::Assistant, "failed, retrying"),
            call(ToolKind::Edit),
            rejected,
            Message::new(Role::System, "[Request interrupted by user]")
                .with_kind(MessageKind::Interruption),
            Message::new(Role::User, "no, edit the other file"),
            call(ToolKind::Edit),
            result(false),
            Message::new(Role::Assistant, "done"),
            at(
                Message::new(Role::User, "thanks"),
                "2026-12-01T10:05:00.000Z",
            ),
        ];
        let c = SessionCounts::of(&s, None, |_| 1);
        assert_eq!((c.turns, c.user_messages, c.assistant_messages), (3, 3, 2));
        assert_eq!(c.calls(), 3);
        assert_eq!(c.tool_calls[&ToolKind::Edit], 2);
        assert_eq!((c.tool_errors, c.rejected, c.interruptions), (1, 1, 1));
        // Only the message after the rejected call comes right after a tool's turn.
        assert_eq!(c.corrections, 1);
        assert_eq!(c.interventions(), 3);
        assert_eq!(c.seconds(), Some(300));
        assert_eq!(c.estimated_tokens, s.messages.len());
    }

    #[test]
    fn a_relayed_session_counts_only_what_came_after_the_relay() {
        let mut s = Session::new("codex", "codex-rollout", "x");
        s.messages = vec![
            at(Message::new(Role::User, "old"), "2026-12-01T10:00:00.000Z"),
            at(call(ToolKind::Read), "2026-12-01T10:00:01.000Z"),
            at(
                Message::new(Role::Assistant, "brief"),
                "2026-12-02T09:00:00.000Z",
            ),
            at(Message::new(Role::User, "new"), "2026-12-02T09:30:00.000Z"),
        ];
        let c = SessionCounts::of(&s, Some("2026-12-02T09:00:00.000Z"), |_| 1);
        assert_eq!((c.turns, c.user_messages, c.calls()), (1, 1, 0));
        let untouched = SessionCounts::of(&s, Some("2026-12-03T00:00:00.000Z"), |_| 1);
        assert_eq!(untouched, SessionCounts::default());
    }
}
