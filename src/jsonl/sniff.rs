//! What the first bytes of a file say about its format: the keys and short string values of
//! each of its lines, read as JSON reads them (escapes decoded, any spacing, any key order),
//! even where the head ends inside a line or a document. `show FILE` of a file outside any
//! store tells the agent by them; a search for `"type":"session_meta"` as written would miss
//! the same line written with spaces or escapes.

use std::collections::HashSet;

/// Longest string value kept: the values a format is told by are short words.
const MAX_VALUE: usize = 64;

/// The keys and short string values of a file's first lines.
#[derive(Debug, Default)]
pub struct Head {
    lines: Vec<Line>,
}

#[derive(Debug, Default)]
struct Line {
    keys: HashSet<String>,
    /// (key, value) for each string value up to `MAX_VALUE` bytes, at any depth.
    pairs: HashSet<(String, String)>,
}

impl Head {
    /// Reads `head` (a byte order mark already taken off) line by line. Anything that is not
    /// JSON is passed over: only strings count, and a string followed by `:` is a key.
    pub fn new(head: &[u8]) -> Head {
        let mut lines = vec![Line::default()];
        let mut key: Option<String> = None;
        // Whether the last thing seen outside strings was the `:` after `key`.
        let mut after_colon = false;
        let mut i = 0;
        while i < head.len() {
            match head[i] {
                b'\n' => {
                    lines.push(Line::default());
                    key = None;
                    after_colon = false;
                    i += 1;
                }
                b'"' => {
                    let (text, end) = string(head, i + 1);
                    i = end;
                    let line = lines.last_mut().expect("one line at least");
                    let next = head[i..]
                        .iter()
                        .find(|b| !matches!(b, b' ' | b'\t' | b'\r'))
                        .copied();
                    if next == Some(b':') {
                        if let Some(k) = &text {
                            line.keys.insert(k.clone());
                        }
                        key = text;
                        after_colon = false;
                    } else {
                        if after_colon
                            && let (Some(k), Some(v)) = (&key, text)
                            && v.len() <= MAX_VALUE
                        {
                            line.pairs.insert((k.clone(), v));
                        }
                        after_colon = false;
                    }
                }
                b':' => {
                    after_colon = true;
                    i += 1;
                }
                b' ' | b'\t' | b'\r' => i += 1,
                _ => {
                    after_colon = false;
                    i += 1;
                }
            }
        }
        Head { lines }
    }

    /// Whether any line has `key` as a key.
    pub fn has_key(&self, key: &str) -> bool {
        self.lines.iter().any(|l| l.keys.contains(key))
    }

    /// Whether any line has a string `value` under any key.
    pub fn has_value(&self, value: &str) -> bool {
        self.lines
            .iter()
            .any(|l| l.pairs.iter().any(|(_, v)| v == value))
    }

    /// Whether any line has the string `value` under `key`.
    pub fn has(&self, key: &str, value: &str) -> bool {
        self.lines
            .iter()
            .any(|l| l.pairs.iter().any(|(k, v)| k == key && v == value))
    }

    /// Whether the first line has the string `value` under `key`.
    pub fn first_has(&self, key: &str, value: &str) -> bool {
        self.lines
            .first()
            .is_some_and(|l| l.pairs.iter().any(|(k, v)| k == key && v == value))
    }
}

/// The string starting at `at` (after its opening quote), decoded, and where it ends (after its
/// closing quote, or at the end of the head). `None` for a string longer than `MAX_VALUE` bytes
/// once decoded, or cut off by the end of the head.
fn string(head: &[u8], at: usize) -> (Option<String>, usize) {
    let mut units: Vec<u16> = Vec::new();
    let mut out = String::new();
    let mut long = false;
    let mut i = at;
    // Pending UTF-16 units (escapes) are turned into text when anything else follows.
    let flush = |units: &mut Vec<u16>, out: &mut String| {
        out.extend(char::decode_utf16(units.drain(..)).map(|c| c.unwrap_or('\u{fffd}')));
    };
    while i < head.len() {
        match head[i] {
            b'"' => {
                flush(&mut units, &mut out);
                return ((!long).then_some(out), i + 1);
            }
            b'\n' => break,
            b'\\' => {
                let Some(&e) = head.get(i + 1) else { break };
                let simple = match e {
                    b'"' => Some('"'),
                    b'\\' => Some('\\'),
                    b'/' => Some('/'),
                    b'b' => Some('\u{8}'),
                    b'f' => Some('\u{c}'),
                    b'n' => Some('\n'),
                    b'r' => Some('\r'),
                    b't' => Some('\t'),
                    _ => None,
                };
                if let Some(c) = simple {
                    flush(&mut units, &mut out);
                    out.push(c);
                    i += 2;
                } else if e == b'u'
                    && let Some(hex) = head.get(i + 2..i + 6)
                    && let Some(unit) = std::str::from_utf8(hex)
                        .ok()
                        .and_then(|h| u16::from_str_radix(h, 16).ok())
                {
                    units.push(unit);
                    i += 6;
                } else {
                    // Not JSON: passed over.
                    i += 2;
                }
            }
            _ => {
                flush(&mut units, &mut out);
                // Raw text: copied up to the next quote, escape or line end at once.
                let end = head[i..]
                    .iter()
                    .position(|b| matches!(b, b'"' | b'\\' | b'\n'))
                    .map_or(head.len(), |n| i + n);
                if !long {
                    out.push_str(&String::from_utf8_lossy(&head[i..end]));
                }
                i = end;
            }
        }
        if out.len() > MAX_VALUE {
            long = true;
            out.clear();
        }
    }
    (None, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key and short string value of generated JSON lines, written with any spacing and
    /// escapes, is found as `serde_json` reads it, and nothing else is; a head cut anywhere
    /// finds a part of them.
    #[test]
    fn a_head_holds_the_keys_and_values_serde_json_reads() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let words = [
            "type",
            "session_meta",
            "sessionId",
            "a b",
            "é",
            "日本",
            "😀",
            "q\"uote",
            "back\\slash",
            "line\nbreak",
            "",
            ":",
            "{",
        ];
        for case in 0..2000 {
            // A line of nested objects and arrays with words as keys and values.
            let mut expected_keys = HashSet::new();
            let mut expected_pairs = HashSet::new();
            let write_string = |s: &str, next: &mut dyn FnMut(u64) -> u64| {
                let mut out = String::from("\"");
                for c in s.chars() {
                    match (c, next(4)) {
                        ('"', _) => out.push_str("\\\""),
                        ('\\', _) => out.push_str("\\\\"),
                        ('\n', _) => out.push_str("\\n"),
                        (c, 0) => {
                            let mut units = [0u16; 2];
                            for u in c.encode_utf16(&mut units) {
                                out.push_str(&format!("\\u{u:04X}"));
                            }
                        }
                        (c, _) => out.push(c),
                    }
                }
                out.push('"');
                out
            };
            let sp = |next: &mut dyn FnMut(u64) -> u64| [" ", "", "\t", "  "][next(4) as usize];
            let mut line = String::from("{");
            for k in 0..1 + next(5) {
                let key = words[next(words.len() as u64) as usize];
                let value = words[next(words.len() as u64) as usize];
                if k > 0 {
                    line.push(',');
                }
                line.push_str(sp(&mut next));
                line.push_str(&write_string(key, &mut next));
                line.push_str(sp(&mut next));
                line.push(':');
                line.push_str(sp(&mut next));
                expected_keys.insert(key.to_string());
                match next(4) {
                    0 => line.push_str("12.5e3"),
                    1 => {
                        // An array of the value: values in arrays are not under a key.
                        line.push('[');
                        line.push_str(&write_string(value, &mut next));
                        line.push(']');
                    }
                    2 => {
                        line.push_str("{ ");
                        line.push_str(&write_string(value, &mut next));
                        line.push_str(" : true }");
                        expected_keys.insert(value.to_string());
                    }
                    _ => {
                        line.push_str(&write_string(value, &mut next));
                        expected_pairs.insert((key.to_string(), value.to_string()));
                    }
                }
            }
            line.push('}');
            assert!(
                serde_json::from_str::<serde_json::Value>(&line).is_ok(),
                "{line}"
            );
            let head = Head::new(line.as_bytes());
            assert_eq!(head.lines.len(), 1);
            assert_eq!(head.lines[0].keys, expected_keys, "case {case}: {line}");
            // Values in arrays are found too, under the array's key; only the pairs written
            // as `"key": "value"` are required.
            for (k, v) in &expected_pairs {
                assert!(
                    head.lines[0].pairs.contains(&(k.clone(), v.clone())),
                    "case {case}: {k}={v} in {line}"
                );
            }
            // Cut anywhere (on a character boundary): no panic, and no key it does not hold.
            let cut = next(line.len() as u64 + 1) as usize;
            if line.is_char_boundary(cut) {
                let part = Head::new(&line.as_bytes()[..cut]);
                assert!(
                    part.lines[0].keys.is_subset(&expected_keys),
                    "case {case}: {:?} cut at {cut}",
                    &line[..cut]
                );
            }
        }
    }

    #[test]
    fn lines_are_told_apart_and_long_values_are_not_kept() {
        let long = "x".repeat(MAX_VALUE + 1);
        let text = format!(
            "{{\"t\\u0079pe\" : \"session\\u005fmeta\"}}\n{{\"payload\":{{\"type\":\"{long}\"}}}}\n{{\"a\":\"b"
        );
        let head = Head::new(text.as_bytes());
        assert!(head.first_has("type", "session_meta"));
        assert!(head.has_key("payload") && head.has_key("a"));
        assert!(!head.has_value(&long) && !head.has_value("b"));
        assert!(
            !Head::new(b"{\"x\":1}\n{\"type\":\"session_meta\"}").first_has("type", "session_meta")
        );
    }
}
