//! A skim over one JSON text: the members of its objects by key, each value the caller wants
//! read, every other value stepped over by its quotes and brackets alone, with no tree and
//! no string unescaped. A parse, even one that ignores what it does not keep, checks every
//! byte of every tool output; a skim finds each string's end with `memchr`.
//!
//! A skim does not validate: text that is not JSON may skim as if it were. Its callers check
//! what they found against a real parse (see `adapters/claude/read.rs`, `Ahead`).

use std::borrow::Cow;

pub struct Skim<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Skim<'a> {
    pub fn new(text: &'a str) -> Skim<'a> {
        Skim {
            text,
            b: text.as_bytes(),
            i: 0,
        }
    }

    fn ws(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Steps over a string whose opening quote is at the cursor; its text, quotes included.
    /// A quote ends it unless an odd run of backslashes comes before: tool outputs escape a
    /// newline every line, and looking for quotes alone passes over them.
    fn string_raw(&mut self) -> Option<&'a str> {
        let start = self.i;
        let mut from = self.i + 1;
        loop {
            let at = from + memchr::memchr(b'"', self.b.get(from..)?)?;
            let slashes = self.b[start + 1..at]
                .iter()
                .rev()
                .take_while(|&&c| c == b'\\')
                .count();
            if slashes % 2 == 0 {
                self.i = at + 1;
                // Quotes are ASCII: both ends are boundaries of the text's characters.
                return Some(&self.text[start..self.i]);
            }
            from = at + 1;
        }
    }

    /// The string at the cursor, unescaped only if it holds an escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let raw = self.string_raw()?;
        if raw.contains('\\') {
            serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(&raw[1..raw.len() - 1]))
        }
    }

    /// Steps over the value at the cursor. `None`: the text ended first.
    pub fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string_raw().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.i)? {
                        b'"' => {
                            self.string_raw()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                // A number or a literal: up to what ends it.
                let start = self.i;
                while self.b.get(self.i).is_some_and(|c| {
                    !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }

    /// The value at the cursor if it is a string (else it is stepped over: `Some(None)`).
    pub fn str_value(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? == b'"' {
            self.string().map(Some)
        } else {
            self.skip().map(|_| None)
        }
    }

    /// Whether the value at the cursor is `true` (any other value is stepped over).
    pub fn is_true(&mut self) -> Option<bool> {
        self.ws();
        if self.b[self.i..].starts_with(b"true") {
            self.skip()?;
            return Some(&self.b[self.i - 4..self.i] == b"true");
        }
        self.skip().map(|_| false)
    }

    /// Calls `member(key, skim)` for each member of the object at the cursor, in order;
    /// `member` reads or steps over the value. `Some(false)`: the value is not an object (and
    /// was stepped over); `None`: the text is not JSON as far as the skim can tell.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&str, &mut Skim<'a>) -> Option<()>,
    ) -> Option<bool> {
        if !self.eat(b'{') {
            return self.skip().map(|_| false);
        }
        if self.eat(b'}') {
            return Some(true);
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            if !self.eat(b':') {
                return None;
            }
            member(&key, self)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(true);
        }
    }

    /// Calls `item(skim)` for each item of the array at the cursor, as `object` does.
    pub fn array(&mut self, mut item: impl FnMut(&mut Skim<'a>) -> Option<()>) -> Option<bool> {
        if !self.eat(b'[') {
            return self.skip().map(|_| false);
        }
        if self.eat(b']') {
            return Some(true);
        }
        loop {
            item(self)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b']').then_some(true);
        }
    }

    /// The text ends after what was skimmed (but for whitespace).
    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The members a skim finds, with their values' texts, against serde_json's.
    fn members(text: &str) -> Option<Vec<(String, String)>> {
        let mut s = Skim::new(text);
        let mut out = Vec::new();
        s.object(|k, s| {
            let start = s.i;
            s.skip()?;
            out.push((k.to_string(), text[start..s.i].trim().to_string()));
            Some(())
        })?;
        s.at_end().then_some(out)
    }

    #[test]
    fn a_skim_finds_the_members_a_parse_finds() {
        let texts = [
            r#"{"a":1,"b":"x\"y\\","c":{"d":[1,{"e":"]}"}]},"f":null,"g":true}"#,
            " { \"k\\u0041\" : [ ] , \"s\" : \"\\\\\" } ",
            r#"{}"#,
            r#"{"t":"日本語 \n","n":-1.5e3}"#,
        ];
        for text in texts {
            let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).unwrap();
            let found = members(text).unwrap();
            let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(
                keys,
                v.keys().map(String::as_str).collect::<Vec<_>>(),
                "{text}"
            );
            for (k, raw) in &found {
                let parsed: serde_json::Value = serde_json::from_str(raw).unwrap();
                assert_eq!(&parsed, &v[k], "{text}");
            }
        }
    }

    /// Generated objects whose keys and strings, short and long, hold escapes anywhere (an
    /// escaped quote, a run of backslashes before a quote): the members, and each string
    /// value read as a string, are what serde_json reads.
    #[test]
    fn generated_strings_skim_as_they_parse() {
        let mut rng = crate::text::test_rng(7);
        let pieces = [
            "a", "é", "日", " ", "\\\"", "\\\\", "\\n", "\\u0041", "\\/", "]", "}",
        ];
        let string = |rng: &mut dyn FnMut(u64) -> usize| {
            let len = match rng(3) {
                0 => rng(8),
                1 => 40 + rng(30),
                _ => rng(150),
            };
            let mut t = String::from("\"");
            while t.len() < len + 1 {
                t.push_str(pieces[rng(pieces.len() as u64)]);
            }
            t.push('"');
            t
        };
        let mut checked = 0;
        for _ in 0..3000 {
            let mut text = String::from("{");
            for m in 0..1 + rng(5) {
                if m > 0 {
                    text.push(',');
                }
                let key = string(&mut rng);
                let value = match rng(3) {
                    0 => format!("[{},{{\"x\":{}}}]", string(&mut rng), string(&mut rng)),
                    _ => string(&mut rng),
                };
                text.push_str(&format!("{key}:{value}"));
            }
            text.push('}');
            let Ok(v) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text)
            else {
                continue;
            };
            let mut s = Skim::new(&text);
            let mut found = Vec::new();
            s.object(|k, s| {
                found.push((k.to_string(), s.str_value()?));
                Some(())
            })
            .unwrap_or_else(|| panic!("{text}"));
            let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
            if keys.len() != v.len() {
                // A key repeated: the map keeps one member for it.
                continue;
            }
            checked += 1;
            assert_eq!(
                keys,
                v.keys().map(String::as_str).collect::<Vec<_>>(),
                "{text}"
            );
            for (k, value) in &found {
                let want = v[k].as_str().map(str::to_string);
                assert_eq!(value.as_deref().map(str::to_string), want, "{text}");
            }
        }
        assert!(checked > 2500, "{checked}");
    }

    #[test]
    fn cut_texts_do_not_skim() {
        for text in [
            r#"{"a":"x"#,
            r#"{"a":[1,2"#,
            r#"{"a""#,
            r#"{"a":1"#,
            r#"{"a":"\"#,
        ] {
            assert!(members(text).is_none(), "{text}");
        }
    }

    #[test]
    fn strings_and_flags_are_read_as_they_parse() {
        let mut s = Skim::new(r#"{"a":"x\u0041","b":true,"c":"true","d":5}"#);
        let mut got = Vec::new();
        s.object(|k, s| {
            got.push(match k {
                "a" | "c" | "d" => format!("{:?}", s.str_value()?),
                _ => format!("{:?}", s.is_true()?),
            });
            Some(())
        })
        .unwrap();
        assert_eq!(got, ["Some(\"xA\")", "true", "Some(\"true\")", "None"]);
    }
}
