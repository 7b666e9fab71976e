//! Token counting with a real tokenizer (o200k_base, what Codex's models use).

use crate::session::{Message, Session};

/// Exact o200k_base count of a text.
pub fn count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// What a message costs in a model's context: its text and, for a tool call, its input.
pub fn message_tokens(m: &Message) -> usize {
    let mut n = count(&m.content);
    if let Some(input) = &m.tool_input {
        n += match input {
            serde_json::Value::String(s) if *s == m.content => 0,
            serde_json::Value::String(s) => count(s),
            other => count(&other.to_string()),
        };
    }
    if let Some(name) = &m.tool_name {
        n += count(name);
    }
    // Per-message framing in chat formats costs a few tokens.
    n + 4
}

pub fn session_tokens(s: &Session) -> usize {
    s.messages.iter().map(message_tokens).sum()
}
