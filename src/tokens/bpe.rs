//! Exact BPE token counts (o200k_base, cl100k_base) over vocabulary tables compiled into the
//! binary by build.rs: nothing to load, so a small relay does not wait for a tokenizer.
//!
//! The algorithm is tiktoken's: the text is split into pieces by the encoding's pattern; a
//! piece that is a token counts one, any other is merged pair by pair, lowest rank first and
//! leftmost among equals, and counts what remains. tests/cli/tokenizer.rs checks the counts
//! against tiktoken-rs on generated text and every fixture string.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

use regex::Regex;

use super::layout::{RANK_BITS, head, token_hash};
const ABSENT: u32 = u32::MAX;

/// The longest piece a thread's `Pieces` remembers, in bytes.
const PIECE_MAX: usize = 16;
/// How many pieces it remembers (18 bytes each, 72 KB: it stays in a core's cache).
const PIECE_SLOTS: usize = 4096;

/// A short piece and its count (`tag`: its length and its encoding's id; 0 for an empty slot).
#[derive(Clone, Copy)]
struct Piece {
    bytes: [u8; PIECE_MAX],
    tag: u8,
    count: u8,
}

/// The counts of the short pieces a thread met last, each in the slot its hash picks: a
/// session's words repeat, and a slot of its own costs less than a lookup in the vocabulary's
/// tables (megabytes, which miss the cache) and far less than merging a piece that is no token.
struct Pieces(Box<[Piece]>);

thread_local! {
    static PIECES: std::cell::RefCell<Pieces> = std::cell::RefCell::new(Pieces(
        vec![
            Piece {
                bytes: [0; PIECE_MAX],
                tag: 0,
                count: 0,
            };
            PIECE_SLOTS
        ]
        .into_boxed_slice(),
    ));
}

/// Where the piece that starts at an ASCII character ends, when that can be told without the
/// regex (`None`: ask the regex).
type FastPath = fn(&[u8], usize) -> Option<usize>;

/// One encoding: its pattern and its vocabulary tables.
pub struct Encoding {
    /// Tells the encodings' pieces apart in a thread's `Pieces`.
    id: u8,
    pattern: &'static str,
    fast: Option<FastPath>,
    regex: OnceLock<Regex>,
    single: &'static [u8],
    pair: &'static [u8],
    slots: &'static [u8],
    arena: &'static [u8],
}

macro_rules! tables {
    ($name:literal) => {
        (
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".single")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".pair")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".slots")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".arena")),
        )
    };
}

impl Encoding {
    const fn new(
        id: u8,
        pattern: &'static str,
        fast: Option<FastPath>,
        (single, pair, slots, arena): (&'static [u8], &'static [u8], &'static [u8], &'static [u8]),
    ) -> Encoding {
        // `Pieces` tags a piece with its length shifted by one bit and this id.
        assert!(id < 2, "one bit tells the encodings apart in `Pieces`");
        Encoding {
            id,
            pattern,
            fast,
            regex: OnceLock::new(),
            single,
            pair,
            slots,
            arena,
        }
    }
}

/// tiktoken's patterns, with the one part the `regex` crate cannot take, the lookahead of
/// `\s+(?!\S)`, left to `lookahead_end`.
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+",
);
const CL100K_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+";

pub static O200K: Encoding = Encoding::new(
    0,
    O200K_PATTERN,
    Some(o200k_ascii_piece),
    tables!("o200k_base"),
);
pub static CL100K: Encoding = Encoding::new(1, CL100K_PATTERN, None, tables!("cl100k_base"));

#[inline]
fn word(table: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([
        table[4 * i],
        table[4 * i + 1],
        table[4 * i + 2],
        table[4 * i + 3],
    ])
}

impl Encoding {
    /// Compiles the pattern, a few milliseconds, the first time a text needs it: the fast path
    /// takes ASCII and common punctuation, so a session in English may never need it.
    pub fn regex(&self) -> &Regex {
        self.regex
            .get_or_init(|| Regex::new(self.pattern).expect("the encoding patterns compile"))
    }

    /// The rank of a token, if these bytes are one.
    #[inline]
    pub fn rank(&self, token: &[u8]) -> Option<u32> {
        let rank = match token.len() {
            0 => ABSENT,
            1 => word(self.single, token[0] as usize),
            2 => word(self.pair, (token[0] as usize) << 8 | token[1] as usize),
            len => {
                let mask = self.slots.len() / 16 - 1;
                let key = head(token);
                let mut i = token_hash(token) as usize & mask;
                loop {
                    let packed = word(self.slots, 4 * i + 3);
                    if packed == 0 {
                        break ABSENT;
                    }
                    if (packed >> RANK_BITS) as usize == len
                        && (word(self.slots, 4 * i) as u64
                            | (word(self.slots, 4 * i + 1) as u64) << 32)
                            == key
                    {
                        let at = word(self.slots, 4 * i + 2) as usize;
                        if len <= 8 || self.arena[at..at + len - 8] == token[8..] {
                            break packed & ((1 << RANK_BITS) - 1);
                        }
                    }
                    i = (i + 1) & mask;
                }
            }
        };
        (rank != ABSENT).then_some(rank)
    }

    /// The number of tokens in a text, special-token text counting as the plain text it is.
    pub fn count(&self, text: &str) -> usize {
        PIECES.with(|pieces| {
            let mut pieces = pieces.borrow_mut();
            let bytes = text.as_bytes();
            let (mut pos, mut n) = (0, 0);
            while pos < text.len() {
                if let Some(end) = self.fast.and_then(|f| f(bytes, pos)) {
                    n += self.piece_count_cached(&bytes[pos..end], &mut pieces);
                    pos = end;
                    continue;
                }
                let Some(m) = self.regex().find_at(text, pos) else {
                    break;
                };
                let end = lookahead_end(text, m.start(), m.end());
                n += self.piece_count_cached(&bytes[m.start()..end], &mut pieces);
                pos = end;
            }
            n
        })
    }

    /// `piece_count`, remembered for short pieces: most pieces are words that come back.
    #[inline]
    fn piece_count_cached(&self, piece: &[u8], pieces: &mut Pieces) -> usize {
        if piece.len() <= 1 || piece.len() > PIECE_MAX {
            return self.piece_count(piece);
        }
        let mut bytes = [0u8; PIECE_MAX];
        bytes[..piece.len()].copy_from_slice(piece);
        let tag = (piece.len() as u8) << 1 | self.id;
        let slot = &mut pieces.0[token_hash(piece) as usize & (PIECE_SLOTS - 1)];
        if slot.tag == tag && slot.bytes == bytes {
            return slot.count as usize;
        }
        let n = self.piece_count(piece);
        *slot = Piece {
            bytes,
            tag,
            // A piece of at most `PIECE_MAX` bytes is at most that many tokens.
            count: n as u8,
        };
        n
    }

    fn piece_count(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.rank(piece).is_some() {
            return piece.len().min(1);
        }
        if piece.len() <= SHORT {
            self.merge_short(piece)
        } else {
            self.merge_long(piece)
        }
    }

    fn pair_rank(&self, piece: &[u8], from: usize, to: usize) -> u32 {
        self.rank(&piece[from..to]).unwrap_or(ABSENT)
    }

    /// tiktoken's merge as written: parts as (start, rank of merging it with the next part),
    /// on the stack, the lowest rank found by a scan. Pieces are mostly a word long.
    fn merge_short(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        let mut start = [0u32; SHORT + 1];
        let mut rank = [ABSENT; SHORT + 1];
        for i in 0..n {
            start[i] = i as u32;
            if i + 1 < n {
                rank[i] = self.pair_rank(piece, i, i + 2);
            }
        }
        start[n] = n as u32;
        // Parts are start[..len]; start[len] is the end of the piece.
        let mut len = n;
        loop {
            let mut best = (ABSENT, 0);
            for (i, &r) in rank[..len - 1].iter().enumerate() {
                if r < best.0 {
                    best = (r, i);
                }
            }
            if best.0 == ABSENT {
                return len;
            }
            let i = best.1;
            // Part i takes in part i + 1.
            start.copy_within(i + 2..=len, i + 1);
            rank.copy_within(i + 2..len, i + 1);
            len -= 1;
            let at = |j: usize| start[j] as usize;
            rank[i] = if i + 2 <= len {
                self.pair_rank(piece, at(i), at(i + 2))
            } else {
                ABSENT
            };
            if i > 0 {
                rank[i - 1] = self.pair_rank(piece, at(i - 1), at(i + 1));
            }
            rank[len - 1..].fill(ABSENT);
        }
    }

    /// The same merge for long pieces (a run of spaces, minified code, base64): parts in a
    /// linked list by start, candidate merges in a heap. Entries whose part has merged since
    /// are stale: their rank is no longer the part's.
    fn merge_long(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        let mut next: Vec<u32> = (1..=n as u32).collect();
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        let mut rank = vec![ABSENT; n];
        let mut heap = BinaryHeap::new();
        for (i, r) in rank[..n - 1].iter_mut().enumerate() {
            *r = self.pair_rank(piece, i, i + 2);
            if *r != ABSENT {
                heap.push(Reverse((*r, i as u32)));
            }
        }
        let merged = |i: usize, next: &[u32]| -> u32 {
            let j = next[i] as usize;
            if j >= n {
                return ABSENT;
            }
            self.pair_rank(piece, i, next[j] as usize)
        };
        let mut parts = n;
        while let Some(Reverse((r, i))) = heap.pop() {
            let i = i as usize;
            if rank[i] != r {
                continue;
            }
            let j = next[i] as usize;
            let k = next[j];
            next[i] = k;
            if (k as usize) < n {
                prev[k as usize] = i as u32;
            }
            rank[j] = ABSENT;
            parts -= 1;
            rank[i] = merged(i, &next);
            if rank[i] != ABSENT {
                heap.push(Reverse((rank[i], i as u32)));
            }
            if i > 0 {
                let p = prev[i] as usize;
                rank[p] = merged(p, &next);
                if rank[p] != ABSENT {
                    heap.push(Reverse((rank[p], p as u32)));
                }
            }
        }
        parts
    }
}

/// The width of the character at `j` when it is one of the General Punctuation block's
/// punctuation and symbols (U+2010..=U+2027, U+2030..=U+205E: dashes, quotes, `…`, `•`, `‰`):
/// no letter, number, mark or space, so for the pattern exactly what ASCII punctuation is.
/// Our own cut marker (`[… N chars cut …]`) holds `…`, and without this every relay that cut
/// an output compiled the pattern (a few milliseconds of a small relay).
fn general_punctuation(b: &[u8], j: usize) -> Option<usize> {
    match b.get(j..j + 3)? {
        [0xe2, 0x80, 0x90..=0xa7 | 0xb0..=0xbf] | [0xe2, 0x81, 0x80..=0x9e] => Some(3),
        _ => None,
    }
}

/// The o200k piece that starts at `i`, for the common case of ASCII (and the punctuation of
/// `general_punctuation`): where `O200K_PATTERN` (with the lookahead) ends it. `None` whenever
/// another non-ASCII character could change the answer (a letter, digit, space or mark that
/// would extend a run): the regex decides those. The branches, in the pattern's order of
/// preference: a word with at most one leading character that is no letter, digit or line
/// break; up to three digits; punctuation after at most one space, with line breaks and
/// slashes after it; whitespace up to its last line break; other whitespace, less its last
/// character when a non-space follows.
fn o200k_ascii_piece(b: &[u8], i: usize) -> Option<usize> {
    let n = b.len();
    let at = |j: usize| b.get(j).copied();
    let c0 = b[i];
    let w0 = if c0 < 0x80 {
        1
    } else {
        general_punctuation(b, i)?
    };
    // Whether the run that ended at `j` surely ended there: the text's end, an ASCII byte, or
    // punctuation (never a letter, digit or space, so it ends those runs).
    let ends = |j: usize| j == n || b[j] < 0x80 || general_punctuation(b, j).is_some();
    // The end of the run of bytes from `j` that `class` takes; `None` if a non-ASCII
    // character ends it that might extend it.
    let run = |mut j: usize, class: fn(u8) -> bool| -> Option<usize> {
        while j < n && b[j] < 0x80 && class(b[j]) {
            j += 1;
        }
        ends(j).then_some(j)
    };
    let punct = |c: u8| !c.is_ascii_whitespace() && !c.is_ascii_alphanumeric() && c != 0x0b;
    // A run of punctuation, ASCII or not, from `j`.
    let punct_run = |mut j: usize| -> Option<usize> {
        loop {
            if j < n && b[j] < 0x80 && punct(b[j]) {
                j += 1;
            } else if let Some(w) = general_punctuation(b, j) {
                j += w;
            } else {
                return (j == n || b[j] < 0x80).then_some(j);
            }
        }
    };
    let letter_at = match (c0.is_ascii_alphabetic(), at(i + w0)) {
        (true, _) => Some(i),
        (false, Some(c1)) if !matches!(c0, b'\r' | b'\n') && !c0.is_ascii_digit() => {
            if c1 >= 0x80 && general_punctuation(b, i + w0).is_none() {
                return None;
            }
            c1.is_ascii_alphabetic().then_some(i + w0)
        }
        _ => None,
    };
    if let Some(p) = letter_at {
        // [A-Z]*[a-z]+ if the capitals are followed by a small letter, else [A-Z]+.
        let upper = run(p, |c| c.is_ascii_uppercase())?;
        let mut end = if upper == p || at(upper).is_some_and(|c| c.is_ascii_lowercase()) {
            run(upper, |c| c.is_ascii_lowercase())?
        } else {
            upper
        };
        if at(end) == Some(b'\'') {
            // (?i:'s|'t|'re|'ve|'m|'ll|'d); case-insensitive `s` also takes `ſ`, and `k`-like
            // signs aside, any non-ASCII byte here is left to the regex.
            let lower = |j: usize| at(j).map(|c| c.to_ascii_lowercase());
            if at(end + 1).is_some_and(|c| c >= 0x80) || at(end + 2).is_some_and(|c| c >= 0x80) {
                return None;
            }
            end += match (lower(end + 1), lower(end + 2)) {
                (Some(b's' | b't' | b'm' | b'd'), _) => 2,
                (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
                _ => 0,
            };
        }
        return Some(end);
    }
    if c0.is_ascii_digit() {
        let mut end = i;
        while end < n && end - i < 3 && b[end].is_ascii_digit() {
            end += 1;
        }
        // A fourth digit starts the next piece; a non-ASCII number could be one of the three.
        return (end - i == 3 || ends(end)).then_some(end);
    }
    let start = if c0 == b' '
        && (at(i + 1).is_some_and(|c| c < 0x80 && punct(c))
            || general_punctuation(b, i + 1).is_some())
    {
        i + 1
    } else {
        i
    };
    if w0 == 3 || punct(b[start]) {
        let end = punct_run(start)?;
        return run(end, |c| matches!(c, b'\r' | b'\n' | b'/'));
    }
    // Whitespace (ASCII's is \t \n \x0b \x0c \r and space).
    let space = |c: u8| c.is_ascii_whitespace() || c == 0x0b;
    let end = run(i, space)?;
    if let Some(last) = b[i..end].iter().rposition(|&c| matches!(c, b'\r' | b'\n')) {
        return Some(i + last + 1);
    }
    Some(if end - i > 1 && end < n { end - 1 } else { end })
}

/// Pieces up to this many bytes merge on the stack.
const SHORT: usize = 64;

/// Where a match ends once the pattern's `\s+(?!\S)` is honoured: a run of whitespace followed
/// by a non-space gives its last character to what follows (`"  x"` is `" "`, `" x"`). A run
/// that ends a line came from `\s*[\r\n]+`, which has no lookahead. As the tiktoken crate does.
fn lookahead_end(text: &str, start: usize, end: usize) -> usize {
    let bytes = text.as_bytes();
    if end - start <= 1 || end >= bytes.len() || matches!(bytes[end - 1], b'\r' | b'\n') {
        return end;
    }
    let run = &text[start..end];
    if !run.chars().all(char::is_whitespace) {
        return end;
    }
    if text[end..].chars().next().is_some_and(char::is_whitespace) {
        return end;
    }
    let last = run.chars().next_back().map_or(0, char::len_utf8);
    if end - last <= start { end } else { end - last }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_hold_every_token_of_both_vocabularies() {
        // The sizes tiktoken gives; ranks are dense from 0.
        for (enc, size) in [(&O200K, 199_998), (&CL100K, 100_256)] {
            let single = (0..256).filter(|&i| word(enc.single, i) != ABSENT).count();
            let pair = (0..1 << 16)
                .filter(|&i| word(enc.pair, i) != ABSENT)
                .count();
            let long = (0..enc.slots.len() / 16)
                .filter(|&i| word(enc.slots, 4 * i + 3) != 0)
                .count();
            assert_eq!(single + pair + long, size);
        }
        assert_eq!(O200K.rank(b"hello"), Some(24912));
        assert_eq!(CL100K.rank(b"hello"), Some(15339));
        assert_eq!(O200K.rank(b" world"), Some(2375));
        assert_eq!(O200K.rank(b"zqxjv"), None);
    }

    /// The piece the pattern (and the lookahead) gives at `i`.
    fn by_regex(enc: &Encoding, text: &str, i: usize) -> usize {
        let m = enc
            .regex()
            .find_at(text, i)
            .expect("a piece at every character");
        assert_eq!(m.start(), i, "{text:?}");
        lookahead_end(text, i, m.end())
    }

    #[test]
    fn the_ascii_fast_path_splits_as_the_pattern_does() {
        #[rustfmt::skip]
        const BITS: &[&str] = &[
            "a", "z", "Q", "Z", "Ab", "0", "9", "123", " ", "  ", "\t", "\n", "\r", "\r\n", "\x0b",
            "\x0c", "'", "'s", "'S", "'re", "'LL", "'Ve", "'d", "'x", ".", "/", "-", "\"", "\\",
            "\0", "\x1f", "\x7f", "é", "É", "ß", "日", "\u{a0}", "\u{3000}", "\u{85}", "٣", "ſ",
            "\u{212a}", "²", "—", "\u{301}", "…", "‐", "‧", "‰", "⁞", "“", "’", "\u{200f}",
            "\u{2028}", "\u{202f}", "\u{205f}", "\u{2060}", "⁰",
        ];
        let mut rng = crate::text::test_rng(0x9e37_79b9_7f4a_7c15u64);
        let mut next = move |n: usize| rng(n as u64);
        let (mut fast, mut deferred) = (0, 0);
        for _ in 0..100_000 {
            let text: String = (0..1 + next(10)).map(|_| BITS[next(BITS.len())]).collect();
            for (i, _) in text.char_indices() {
                match o200k_ascii_piece(text.as_bytes(), i) {
                    Some(end) => {
                        fast += 1;
                        assert_eq!(end, by_regex(&O200K, &text, i), "{text:?} at {i}");
                    }
                    None => deferred += 1,
                }
            }
        }
        // The comparison must have covered both ways.
        eprintln!("fast {fast} deferred {deferred}");
        assert!(fast > 100_000 && deferred > 10_000, "{fast} {deferred}");
    }

    /// A thread's remembered pieces give what counting each piece afresh gives, with both
    /// encodings counting the same words in turn (a piece is a token in one and is merged in
    /// the other; the same piece in both takes the same slot) and new words each round, so
    /// that slots are taken over.
    #[test]
    fn remembered_pieces_count_as_pieces_counted_afresh() {
        #[rustfmt::skip]
        const WORDS: &[&str] = &[
            "hello", " world", "zqxjv", "Tokenizer", " relay", "0123", "   ", "\n", "日本語",
            "'s", "session_relay", "QmFzZTY0", "abcdefghijklmnop", "abcdefghijklmnopq", "…",
        ];
        let mut next = crate::text::test_rng(0x0b1e_c7ed_ca5e_2026);
        let afresh = |enc: &Encoding, text: &str| {
            let mut pieces = Vec::new();
            let mut i = 0;
            while i < text.len() {
                let end = by_regex(enc, text, i);
                pieces.push(&text.as_bytes()[i..end]);
                i = end;
            }
            pieces.iter().map(|p| enc.piece_count(p)).sum::<usize>()
        };
        for round in 0..3000 {
            let mut text: String = (0..1 + next(12))
                .map(|_| WORDS[next(WORDS.len() as u64)])
                .collect();
            // Words of every length up to past the longest remembered, new ones each round.
            text.push_str(&format!(" w{round:x}{}", "q".repeat(next(20))));
            for enc in [&O200K, &CL100K, &O200K] {
                assert_eq!(enc.count(&text), afresh(enc, &text), "{text:?}");
            }
        }
    }

    #[test]
    fn long_and_short_merges_agree() {
        // Every piece that fits on the stack, merged both ways.
        let texts = [
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "abcabcabcabcabcabcabcabcXYZ",
            "QmFzZTY0IGVuY29kZWQgdGV4dCBoZXJl",
            "0123456789abcdef0123456789abcdef0123456789abcdef",
            "日本語のテキストです日本語のテキストです",
            "================================================================",
            "zzzzqqqqxxxxjjjjvvvv",
        ];
        for enc in [&O200K, &CL100K] {
            for t in texts {
                for cut in 2..=t.len().min(SHORT) {
                    let piece = &t.as_bytes()[..cut];
                    assert_eq!(enc.merge_short(piece), enc.merge_long(piece), "{piece:?}");
                }
            }
        }
    }
}
