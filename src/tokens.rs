//! Token counting. Codex's models use o200k_base, which tiktoken-rs counts exactly. Claude's
//! tokenizer is not public: `estimate` is a deliberately high character-based count (see the
//! README for how far off it can be).

use serde::{Deserialize, Serialize};

use crate::model::{Message, Session};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tokenizer {
    O200k,
    Cl100k,
    Estimate,
}

impl Tokenizer {
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k_base",
            Tokenizer::Cl100k => "cl100k_base",
            Tokenizer::Estimate => "estimate",
        }
    }

    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        match self {
            Tokenizer::O200k => tiktoken_rs::o200k_base_singleton()
                .encode_with_special_tokens(text)
                .len(),
            Tokenizer::Cl100k => tiktoken_rs::cl100k_base_singleton()
                .encode_with_special_tokens(text)
                .len(),
            Tokenizer::Estimate => estimate(text),
        }
    }

    /// What a message costs in a model's context: its text, a tool call's name and input, and
    /// a few tokens of per-message framing.
    pub fn message(self, m: &Message) -> usize {
        let mut n = self.count(&m.content);
        if let Some(input) = &m.tool_input {
            n += match input {
                serde_json::Value::String(s) if *s == m.content => 0,
                serde_json::Value::String(s) => self.count(s),
                other => self.count(&other.to_string()),
            };
        }
        if let Some(name) = &m.tool_name {
            n += self.count(name);
        }
        n + MESSAGE_OVERHEAD
    }
}

/// Role markers and separators around each message in chat formats.
pub const MESSAGE_OVERHEAD: usize = 4;

/// Claude estimate: one token per 3.5 ASCII characters (code and JSON tokenise at 3-3.5
/// characters a token, English prose at about 4-4.5, so this errs high) and one token per
/// non-ASCII character (CJK and emoji take one or more tokens each).
pub fn estimate(text: &str) -> usize {
    let mut ascii = 0usize;
    let mut other = 0usize;
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
    }
    (ascii * 2).div_ceil(7) + other
}

/// Exact o200k_base count of a text (what `show` reports).
pub fn count(text: &str) -> usize {
    Tokenizer::O200k.count(text)
}

pub fn message_tokens(m: &Message) -> usize {
    Tokenizer::O200k.message(m)
}

pub fn session_tokens(s: &Session) -> usize {
    s.messages.iter().map(message_tokens).sum()
}

/// A cheap estimate for a whole session, used where an exact count would cost more than it
/// tells (the source side of a relay report).
pub fn session_estimate(s: &Session) -> usize {
    s.messages
        .iter()
        .map(|m| {
            let input = m.tool_input.as_ref().map_or(0, |i| match i {
                serde_json::Value::String(s) if *s == m.content => 0,
                serde_json::Value::String(s) => s.len(),
                other => other.to_string().len(),
            });
            (m.content.len() + input).div_ceil(4) + MESSAGE_OVERHEAD
        })
        .sum()
}

/// Loading o200k's tables takes a third of a second: do it on another core while the session
/// is read.
pub fn warm(tok: Tokenizer) {
    if tok != Tokenizer::Estimate {
        std::thread::spawn(move || tok.count("warm"));
    }
}
