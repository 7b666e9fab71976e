//! Token counting. Codex's models use o200k_base, which `bpe` counts exactly over tables built
//! into the binary: the same counts as OpenAI's tiktoken (tests/cli/tokenizer.rs checks them
//! against tiktoken-rs). A session's text is data: special-token text such as
//! `<|endoftext|>` in it counts as the plain text it is, as the API tokenizes it. Claude's
//! tokenizer is not public: `estimate` is a character-based count calibrated on real Claude Code
//! usage (see docs/budget-and-fit.md for the data and how far off it can be).

use serde::{Deserialize, Serialize};

use crate::model::{Message, Session};

mod bpe;
mod layout;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tokenizer {
    O200k,
    Cl100k,
    /// Claude's current models (Opus 4.7 and later, the 5.x family): what Claude Code asks
    /// for by default.
    Estimate,
    /// Claude's models up to Opus 4.6, Sonnet 4.x and Haiku 4.5, whose tokenizer yields about
    /// a quarter fewer tokens for the same text.
    EstimateLegacy,
}

impl Tokenizer {
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200k => "o200k_base",
            Tokenizer::Cl100k => "cl100k_base",
            Tokenizer::Estimate => "estimate",
            Tokenizer::EstimateLegacy => "estimate_legacy",
        }
    }

    pub fn count(self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        match self {
            Tokenizer::O200k => bpe::O200K.count(text),
            Tokenizer::Cl100k => bpe::CL100K.count(text),
            Tokenizer::Estimate => estimate_with(text, CURRENT),
            Tokenizer::EstimateLegacy => estimate_with(text, LEGACY),
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
        n + self.framing(m)
    }

    /// Tokens around a message's text: role markers, and for tool calls and results their ids
    /// and block structure, which Claude's API renders at some 25-30 tokens a block.
    fn framing(self, m: &Message) -> usize {
        let tool = matches!(
            m.role,
            crate::model::Role::ToolCall | crate::model::Role::ToolResult
        );
        match (self, tool) {
            (Tokenizer::Estimate, true) => CURRENT.tool_block,
            (Tokenizer::EstimateLegacy, true) => LEGACY.tool_block,
            (Tokenizer::Estimate | Tokenizer::EstimateLegacy, false) => CURRENT.other_block,
            _ => MESSAGE_OVERHEAD,
        }
    }

    /// The tokenizer of `model`, in the family of this one: Claude's estimates tell its
    /// models apart (`for_claude_model`); the others count every model alike.
    pub fn for_model(self, model: &str) -> Tokenizer {
        match self {
            Tokenizer::Estimate | Tokenizer::EstimateLegacy => Tokenizer::for_claude_model(model),
            other => other,
        }
    }

    /// The estimate for a Claude model by its id: the legacy one for the models before the
    /// tokenizer changed (Opus 4.7).
    pub fn for_claude_model(model: &str) -> Tokenizer {
        let m = model.to_ascii_lowercase();
        let legacy = m.starts_with("claude-3")
            || m.starts_with("claude-2")
            || m.starts_with("claude-instant")
            || ["opus-4", "sonnet-4", "haiku-4"].iter().any(|family| {
                m.find(family).is_some_and(|i| {
                    // claude-opus-4-1..4-6 and claude-sonnet-4(-5) are legacy; 4-7+ are not.
                    let rest = &m[i + family.len()..];
                    let minor = rest
                        .strip_prefix('-')
                        .and_then(|r| r.split(['-', '[', '@']).next())
                        .and_then(|d| d.parse::<u32>().ok().filter(|n| *n < 100));
                    minor.is_none_or(|n| n <= 6)
                })
            });
        if legacy {
            Tokenizer::EstimateLegacy
        } else {
            Tokenizer::Estimate
        }
    }
}

/// Role markers and separators around each message in OpenAI chat formats.
pub const MESSAGE_OVERHEAD: usize = 4;

/// Characters a token and framing of one Claude tokenizer generation.
struct Rates {
    /// ASCII characters per token, times ten.
    ascii_x10: usize,
    tool_block: usize,
    other_block: usize,
}

/// Calibrated on real Claude Code sessions (see docs/budget-and-fit.md): 3.2 ASCII characters
/// a token for the models up to Opus 4.6, and 2.4 for the current ones, whose tokenizer yields
/// about 1.32 times as many tokens on the same text; one token per other character (CJK takes
/// about one, emoji several, Cyrillic less).
const LEGACY: Rates = Rates {
    ascii_x10: 32,
    tool_block: 25,
    other_block: 8,
};
const CURRENT: Rates = Rates {
    ascii_x10: 24,
    tool_block: 30,
    other_block: 8,
};

fn estimate_with(text: &str, r: Rates) -> usize {
    let mut ascii = 0usize;
    let mut other = 0usize;
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
    }
    (ascii * 10).div_ceil(r.ascii_x10) + other
}

/// The estimate for Claude's current models (see `Tokenizer::Estimate`).
pub fn estimate(text: &str) -> usize {
    estimate_with(text, CURRENT)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_models_map_to_their_tokenizer_generation() {
        for legacy in [
            "claude-3-5-sonnet-20241022",
            "claude-sonnet-4-20250514",
            "claude-sonnet-4-5",
            "claude-opus-4-1-20250805",
            "claude-opus-4-6",
            "claude-haiku-4-5",
        ] {
            assert_eq!(
                Tokenizer::for_claude_model(legacy),
                Tokenizer::EstimateLegacy,
                "{legacy}"
            );
        }
        for current in [
            "claude-opus-4-7",
            "claude-opus-5-5",
            "claude-sonnet-5-5",
            "<synthetic>",
        ] {
            assert_eq!(
                Tokenizer::for_claude_model(current),
                Tokenizer::Estimate,
                "{current}"
            );
        }
    }

    #[test]
    fn the_estimates_count_characters_at_their_rates() {
        let text = "a".repeat(240);
        assert_eq!(Tokenizer::Estimate.count(&text), 100);
        assert_eq!(Tokenizer::EstimateLegacy.count(&text), 75);
        assert_eq!(Tokenizer::Estimate.count("日本語"), 3);
    }
}
