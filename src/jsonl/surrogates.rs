//! Lone surrogate escapes. JavaScript strings are UTF-16, and a CLI written in it that cuts a
//! string between the two halves of an emoji writes the half it kept as `\ud83d` with no
//! `\ude00` after it. Its own `JSON.parse` reads such a line back (the half shows as `�`), but
//! `serde_json` refuses it, which would lose the whole message. So before a line is parsed, a
//! lone half is replaced with `\ufffd`, what the CLI shows, and the reader says so.

/// How the warning for lines with a lone half replaced begins.
pub const WARNING: &str = "half of a character (a lone UTF-16 surrogate escape";

/// The warning for these lines, whose lone halves were replaced.
pub fn warning(lines: &[usize]) -> String {
    format!(
        "{WARNING}, as JavaScript writes a string cut inside an emoji) on {} line(s), read as \
         U+FFFD (first at line {})",
        lines.len(),
        lines.first().copied().unwrap_or_default()
    )
}

/// Whether `line` holds a surrogate escape at all (`\ud...` or `\uD...`): the cheap test
/// before `repair`, which the lines of most sessions never need.
pub fn may_need_repair(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"\\u").any(|at| matches!(line.get(at + 2), Some(b'd' | b'D')))
}

/// `line` with each lone surrogate escape replaced with `\ufffd`; `None` when it has none.
pub fn repair(line: &str) -> Option<String> {
    if !may_need_repair(line.as_bytes()) {
        return None;
    }
    let mut out = Vec::with_capacity(line.len());
    let (_, replaced) = repair_into(line.as_bytes(), &mut out, true);
    // Only ASCII escapes were replaced by ASCII: still UTF-8.
    replaced.then(|| String::from_utf8(out).expect("ASCII replaced by ASCII"))
}

/// The UTF-16 unit of a `\uXXXX` escape starting at `at`, if complete and well formed.
fn unit(b: &[u8], at: usize) -> Option<u16> {
    let hex = b.get(at..at + 6)?;
    if hex[0] != b'\\' || hex[1] != b'u' {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
}

/// Copies `b` to `out`, each lone surrogate escape replaced. Escapes are walked from the start,
/// so an escaped backslash before `u` is never taken for an escape. Unless `at_end`, an escape
/// that may run past the end of `b` is left for the next call: returns how much of `b` was
/// used, and whether anything was replaced.
pub fn repair_into(b: &[u8], out: &mut Vec<u8>, at_end: bool) -> (usize, bool) {
    let mut replaced = false;
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        let at = i + k;
        out.extend_from_slice(&b[i..at]);
        // A whole escape (a surrogate pair is 12 bytes) must be in view to be judged.
        if !at_end && b.len() - at < 12 {
            return (at, replaced);
        }
        // Only `\ud...` can be a surrogate: other escapes are stepped over undecoded.
        let may_be_half =
            b.get(at + 1) == Some(&b'u') && matches!(b.get(at + 2), Some(b'd' | b'D'));
        let here = if may_be_half { unit(b, at) } else { None };
        let next = match here {
            Some(0xD800..=0xDBFF) => match unit(b, at + 6) {
                Some(0xDC00..=0xDFFF) => at + 12,
                _ => {
                    out.extend_from_slice(b"\\ufffd");
                    replaced = true;
                    i = at + 6;
                    continue;
                }
            },
            Some(0xDC00..=0xDFFF) => {
                out.extend_from_slice(b"\\ufffd");
                replaced = true;
                i = at + 6;
                continue;
            }
            Some(_) => at + 6,
            // Any other escape, `\\` included (its hex digits hold no backslash to mistake);
            // a bad one is the parser's to report.
            None => (at + 2).min(b.len()),
        };
        out.extend_from_slice(&b[at..next]);
        i = next;
    }
    out.extend_from_slice(&b[i..]);
    (b.len(), replaced)
}

/// A long line's bytes with lone surrogate escapes replaced as `repair` replaces them in a
/// line read whole.
pub struct Repaired<R> {
    inner: R,
    input: Vec<u8>,
    out: Vec<u8>,
    at: usize,
    eof: bool,
    replaced: std::rc::Rc<std::cell::Cell<bool>>,
}

impl<R: std::io::Read> Repaired<R> {
    pub fn new(inner: R) -> Self {
        Repaired {
            inner,
            input: Vec::new(),
            out: Vec::new(),
            at: 0,
            eof: false,
            replaced: Default::default(),
        }
    }

    /// Becomes true once something was replaced.
    pub fn replaced(&self) -> std::rc::Rc<std::cell::Cell<bool>> {
        self.replaced.clone()
    }
}

impl<R: std::io::Read> std::io::Read for Repaired<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.out.len() {
            if self.eof && self.input.is_empty() {
                return Ok(0);
            }
            let mut chunk = [0u8; 1 << 16];
            if !self.eof {
                let n = self.inner.read(&mut chunk)?;
                self.eof = n == 0;
                self.input.extend_from_slice(&chunk[..n]);
            }
            self.out.clear();
            self.at = 0;
            let (used, replaced) = repair_into(&self.input, &mut self.out, self.eof);
            if replaced {
                self.replaced.set(true);
            }
            self.input.drain(..used);
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What `JSON.parse` makes of a JSON string's body, as UTF-16 and then shown (a lone half
    /// as U+FFFD): the reference a repaired line must parse to.
    fn as_javascript_reads(body: &str) -> String {
        let b = body.as_bytes();
        let mut units: Vec<u16> = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' {
                match b[i + 1] {
                    b'u' => {
                        units.push(unit(b, i).unwrap());
                        i += 6;
                    }
                    c => {
                        units.push(match c {
                            b'n' => 10,
                            b't' => 9,
                            b'"' => 34,
                            b'\\' => 92,
                            _ => unreachable!(),
                        });
                        i += 2;
                    }
                }
            } else {
                let c = body[i..].chars().next().unwrap();
                let mut two = [0u16; 2];
                units.extend_from_slice(c.encode_utf16(&mut two));
                i += c.len_utf8();
            }
        }
        String::from_utf16_lossy(&units)
    }

    #[test]
    fn lone_halves_read_as_javascript_shows_them_whole_or_in_pieces() {
        use std::io::Read;
        let pieces = [
            "a",
            "日本",
            "\u{1f600}",
            "\\ud83d\\ude00",
            "\\uD83D\\uDE00",
            "\\ud83d",
            "\\uDBFF",
            "\\ude00",
            "\\udc00",
            "\\ud83d\\u0041",
            "\\ud83d\\ud83d\\ude00",
            "\\\\ud83d",
            "\\\\",
            "\\u001b[31m",
            "\\u00e9",
            "\\n",
            "\\\"",
            "\\t",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut repaired_lines = 0;
        for case in 0..4000 {
            let body: String = (0..next(12))
                .map(|_| pieces[next(pieces.len() as u64) as usize])
                .collect();
            let line = format!("{{\"k\":\"{body}\",\"n\":1}}");
            let fixed = repair(&line);
            let text = fixed.clone().unwrap_or_else(|| line.clone());
            let v: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("case {case}: {line} -> {text}: {e}"));
            assert_eq!(v["k"], as_javascript_reads(&body), "case {case}: {line}");
            // Nothing replaced exactly when serde_json reads the line as it is.
            assert_eq!(
                fixed.is_none(),
                serde_json::from_str::<Value>(&line).is_ok(),
                "{line}"
            );
            repaired_lines += usize::from(fixed.is_some());
            // In pieces of any size, as a long line is read from the file.
            let reader = Repaired::new(Pieces(line.as_bytes(), 1 + next(13) as usize));
            let replaced = reader.replaced();
            let mut streamed = String::new();
            std::io::BufReader::with_capacity(1 + next(7) as usize, reader)
                .read_to_string(&mut streamed)
                .unwrap();
            assert_eq!(streamed, text, "case {case}");
            assert_eq!(replaced.get(), fixed.is_some(), "case {case}");
        }
        assert!(repaired_lines > 1000, "{repaired_lines}");
    }

    /// A reader that hands out at most `.1` bytes at a time.
    struct Pieces<'a>(&'a [u8], usize);

    impl std::io::Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
}
