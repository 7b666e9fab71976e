//! What the brief and the summary look for in the conversation: the user's rules and the
//! decisions taken, found by the words people use to state them. Deterministic, no model.

use crate::model::{Message, Role};

/// Words with which a user states a rule, strongest first.
const CONSTRAINT_CUES: &[&str] = &[
    "never",
    "must",
    "don't",
    "do not",
    "always",
    "avoid",
    "prefer",
    "make sure",
    "only",
];

/// Phrases with which a decision is announced.
const DECISION_CUES: &[&str] = &[
    "decided",
    "decision",
    "we will",
    "we'll",
    "i will use",
    "i'll use",
    "going with",
    "chose",
    "instead of",
    "switched to",
];

/// Sentences of a text: split at sentence ends and line breaks, without the short scraps.
pub fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', '!', '?', '\n'])
        .map(str::trim)
        .filter(|s| s.chars().count() > 3)
}

/// Whether `word` occurs in `text` as a whole word (or phrase).
pub fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

/// How strongly a sentence states a rule: `None` when it states none; lower is stronger.
pub fn constraint_strength(sentence: &str) -> Option<usize> {
    let lower = sentence.to_lowercase();
    CONSTRAINT_CUES.iter().position(|cue| has_word(&lower, cue))
}

/// Whether a sentence announces a decision.
pub fn is_decision(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    DECISION_CUES.iter().any(|cue| lower.contains(cue))
}

/// Whether a text may hold any cue at all: one case-insensitive scan, so that the sentences of
/// the many messages without one are never split or lowercased.
fn may_hold(text: &str, cues: &[&str]) -> bool {
    use std::sync::OnceLock;
    static RULES: OnceLock<regex::Regex> = OnceLock::new();
    static DECISIONS: OnceLock<regex::Regex> = OnceLock::new();
    let cell = if cues.as_ptr() == CONSTRAINT_CUES.as_ptr() {
        &RULES
    } else {
        &DECISIONS
    };
    cell.get_or_init(|| {
        let alternatives: Vec<String> = cues.iter().map(|c| regex::escape(c)).collect();
        regex::Regex::new(&format!("(?i){}", alternatives.join("|"))).expect("cue regex")
    })
    .is_match(text)
}

/// The rules a user message states, in order.
pub fn constraints_in(m: &Message) -> impl Iterator<Item = &str> {
    let user = m.role == Role::User && may_hold(&m.content, CONSTRAINT_CUES);
    sentences(if user { &m.content } else { "" }).filter(|s| constraint_strength(s).is_some())
}

/// The decisions an assistant message announces, in order.
pub fn decisions_in(m: &Message) -> impl Iterator<Item = &str> {
    let answer =
        m.role == Role::Assistant && m.kind().is_none() && may_hold(&m.content, DECISION_CUES);
    sentences(if answer { &m.content } else { "" }).filter(|s| is_decision(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_decisions_are_found_by_whole_words() {
        assert_eq!(constraint_strength("Never push to main"), Some(0));
        assert_eq!(constraint_strength("we MUST keep the API stable"), Some(1));
        assert_eq!(
            constraint_strength("Please don't touch the lockfile"),
            Some(2)
        );
        assert_eq!(constraint_strength("The mustard is yellow"), None);
        assert_eq!(constraint_strength("add the parser module"), None);
        assert!(is_decision("We decided to use rayon instead of threads"));
        assert!(!is_decision("The tests pass"));
    }
}
