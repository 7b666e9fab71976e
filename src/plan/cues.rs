//! What the brief and the summary look for in the conversation: the user's rules and the
//! decisions taken, found by the words people use to state them. Deterministic, no model.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use crate::model::{Message, Role};

/// Words with which a user states a rule, strongest first.
static CONSTRAINT_CUES: Cues = Cues::new(&[
    "never",
    "must",
    "don't",
    "do not",
    "always",
    "avoid",
    "prefer",
    "make sure",
    "only",
]);

/// Phrases with which a decision is announced.
static DECISION_CUES: Cues = Cues::new(&[
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
]);

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
    CONSTRAINT_CUES
        .words
        .iter()
        .position(|cue| has_word(&lower, cue))
}

/// Whether a sentence announces a decision.
pub fn is_decision(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    DECISION_CUES.words.iter().any(|cue| lower.contains(cue))
}

/// A list of cue words, with the scan that finds any of them, built the first time it is used.
struct Cues {
    words: &'static [&'static str],
    scan: OnceLock<AhoCorasick>,
}

impl Cues {
    const fn new(words: &'static [&'static str]) -> Cues {
        Cues {
            words,
            scan: OnceLock::new(),
        }
    }

    /// Whether a text may hold any cue at all: one case-insensitive scan, so that the
    /// sentences of the many messages without one are never split or lowercased. ASCII case:
    /// what the cues are then checked against is the sentence lowercased, where the only other
    /// character that turns into a letter of a cue is the Kelvin sign (into `k`); the long s
    /// (`ſ`), which a Unicode-insensitive search would also take for an `s`, stays itself and
    /// matches no cue.
    fn may_hold(&self, text: &str) -> bool {
        self.scan
            .get_or_init(|| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(self.words)
                    .expect("cue words build")
            })
            .is_match(text)
            || text.contains('\u{212A}')
    }
}

/// The rules a user message states, in order.
pub fn constraints_in(m: &Message) -> impl Iterator<Item = &str> {
    let user = m.role == Role::User && CONSTRAINT_CUES.may_hold(&m.content);
    sentences(if user { &m.content } else { "" }).filter(|s| constraint_strength(s).is_some())
}

/// The decisions an assistant message announces, in order.
pub fn decisions_in(m: &Message) -> impl Iterator<Item = &str> {
    let answer =
        m.role == Role::Assistant && m.kind.is_none() && DECISION_CUES.may_hold(&m.content);
    sentences(if answer { &m.content } else { "" }).filter(|s| is_decision(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick scan never hides a message that states a rule or a decision: whatever the
    /// case and the characters that lowercase into a cue's letters, a text it turns away has
    /// no sentence that the cues find.
    #[test]
    fn the_quick_scan_keeps_every_text_with_a_cue() {
        let pieces = [
            "never",
            "MUST",
            "Do Not",
            "ma\u{212A}e sure",
            "mu\u{17F}t",
            "\u{130} will use",
            "DECIDED",
            "we'll",
            "Going With",
            "instead of",
            "\u{212A}",
            "\u{17F}",
            "\u{130}",
            "x",
            " ",
            ". ",
            "\n",
            "é",
        ];
        let mut next = crate::text::test_rng(0x3c6e_f372_fe94_f82b);
        let (mut kept, mut turned_away) = (0, 0);
        for _ in 0..20_000 {
            let text: String = (0..next(6))
                .map(|_| pieces[next(pieces.len() as u64)])
                .collect();
            let states = sentences(&text).any(|s| constraint_strength(s).is_some());
            let announces = sentences(&text).any(is_decision);
            if CONSTRAINT_CUES.may_hold(&text) {
                kept += 1;
            } else {
                assert!(!states, "{text:?}");
                turned_away += 1;
            }
            if !DECISION_CUES.may_hold(&text) {
                assert!(!announces, "{text:?}");
            }
        }
        assert!(kept > 1000 && turned_away > 1000, "{kept} {turned_away}");
        assert!(CONSTRAINT_CUES.may_hold("ma\u{212A}e sure it builds"));
    }

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
