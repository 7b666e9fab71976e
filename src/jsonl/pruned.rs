//! Parsing a JSON line into a `Value` while leaving out what a relay will not keep, before it
//! is ever allocated: tool outputs are the bulk of a long session, and a relay keeps at most
//! their head and tail. Strings inside the given regions are cut to head and tail while the
//! line is parsed (`[… N chars cut …]`, exactly as `text::trim_output` cuts them), and the
//! object holding a cut string records its full length as `_original_chars`; the given root
//! keys are skipped without building anything.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// What to leave out of a line.
#[derive(Debug, Clone, Copy)]
pub struct Prune {
    /// Keys of the line's root object that are skipped entirely.
    pub skip_root: &'static [&'static str],
    /// Key paths below which strings are cut; `*` matches any key or array element.
    pub regions: &'static [&'static [&'static str]],
    /// Strings in a region longer than this many characters are cut to this length.
    pub max_chars: usize,
    /// Leave strings that hold a JSON document (start with `{`) whole: their reader parses
    /// them (older Codex outputs carry their exit code that way).
    pub keep_json: bool,
    /// Objects that keep only some of their keys, the others skipped without building
    /// anything: a long session repeats an envelope of a dozen keys on every line, and
    /// building it only to drop it is much of a line's parse.
    pub keep: &'static [Keep],
}

/// Of the lines of some types, the object at a key path keeps only the listed keys.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    /// The root `type`s of the lines it applies to. A key is skipped only once the line's
    /// type is known: where `type` comes late in a line, what precedes it is built whole.
    pub types: &'static [&'static str],
    /// The object's key path (`*` as in `regions`; empty: the root).
    pub at: &'static [&'static str],
    pub keys: &'static [&'static str],
}

/// The key written next to a cut string: its length in characters before the cut.
pub const ORIGINAL_CHARS: &str = "_original_chars";

/// Parses one line, pruned.
pub fn parse(bytes: &[u8], prune: &Prune) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut ctx = Ctx::default();
    let v = Node {
        prune,
        ctx: &mut ctx,
    }
    .deserialize(&mut de)?
    .0;
    de.end()?;
    Ok(v)
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index,
}

/// Where the parse is in a line.
#[derive(Default)]
struct Ctx {
    path: Vec<Step>,
    /// The line's `type`, once read.
    root_type: Option<String>,
}

struct Node<'a> {
    prune: &'a Prune,
    ctx: &'a mut Ctx,
}

impl Node<'_> {
    fn in_region(&self) -> bool {
        self.prune
            .regions
            .iter()
            .any(|region| region.len() <= self.ctx.path.len() && matches(region, &self.ctx.path))
    }
}

/// Whether the start of `path` matches `pattern`.
fn matches(pattern: &[&str], path: &[Step]) -> bool {
    pattern.iter().zip(path.iter()).all(|(r, p)| match p {
        Step::Key(k) => *r == "*" || r == k,
        Step::Index => *r == "*",
    })
}

/// A parsed value, and the length of a string that was cut (to be recorded by its object).
type Parsed = (Value, Option<usize>);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Parsed;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Parsed, D::Error> {
        let cut = if self.in_region() {
            Some(self.prune.max_chars)
        } else {
            None
        };
        d.deserialize_any(NodeVisitor {
            prune: self.prune,
            ctx: self.ctx,
            cut,
        })
    }
}

struct NodeVisitor<'a> {
    prune: &'a Prune,
    ctx: &'a mut Ctx,
    cut: Option<usize>,
}

impl NodeVisitor<'_> {
    /// Whether `key` of the object being read is built (see `Keep`).
    fn keeps(&self, key: &str) -> bool {
        let Some(t) = self.ctx.root_type.as_deref() else {
            return true;
        };
        let path = &self.ctx.path;
        self.prune
            .keep
            .iter()
            .filter(|k| k.at.len() == path.len() && k.types.contains(&t) && matches(k.at, path))
            .all(|k| k.keys.contains(&key))
    }

    fn string(&self, s: &str) -> Parsed {
        let (s, n) = match self.cut {
            Some(max) => cut_string(s, max, self.prune.keep_json),
            None => (s.to_string(), None),
        };
        (Value::String(s), n)
    }
}

/// A string in a cut region as the pruned parse keeps it: cut to `max` characters (see
/// `text::trim_output`), with its length in characters when it was cut; a JSON document stays
/// whole when `keep_json` says so. Readers that parse a line without this module cut with it.
pub fn cut_string(s: &str, max: usize, keep_json: bool) -> (String, Option<usize>) {
    if keep_json && s.trim_start().starts_with('{') {
        return (s.to_string(), None);
    }
    // Counting characters is needed only when the bytes are over the limit.
    if s.len() > max {
        let n = s.chars().count();
        if n > max {
            return (crate::text::trim_output_of(s, max, n), Some(n));
        }
    }
    (s.to_string(), None)
}

impl<'de> Visitor<'de> for NodeVisitor<'_> {
    type Value = Parsed;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Parsed, E> {
        Ok((Value::Bool(v), None))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Parsed, E> {
        Ok((Value::Number(v.into()), None))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Parsed, E> {
        Ok((Value::Number(v.into()), None))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Parsed, E> {
        Ok((Number::from_f64(v).map_or(Value::Null, Value::Number), None))
    }
    fn visit_str<E>(self, v: &str) -> Result<Parsed, E> {
        Ok(self.string(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Parsed, E> {
        Ok(self.string(v))
    }
    fn visit_string<E>(self, v: String) -> Result<Parsed, E> {
        Ok(self.string(&v))
    }
    fn visit_unit<E>(self) -> Result<Parsed, E> {
        Ok((Value::Null, None))
    }
    fn visit_none<E>(self) -> Result<Parsed, E> {
        Ok((Value::Null, None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
        let mut out = Vec::new();
        self.ctx.path.push(Step::Index);
        while let Some((v, _)) = seq.next_element_seed(Node {
            prune: self.prune,
            ctx: self.ctx,
        })? {
            out.push(v);
        }
        self.ctx.path.pop();
        Ok((Value::Array(out), None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parsed, A::Error> {
        let root = self.ctx.path.is_empty();
        let mut out = Map::new();
        let mut cut_chars: Option<usize> = None;
        while let Some(key) = map.next_key::<String>()? {
            // A source's own `_original_chars` would pass for this parse's: never kept.
            if (root && self.prune.skip_root.contains(&key.as_str()))
                || !self.keeps(&key)
                || key == ORIGINAL_CHARS
            {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            self.ctx.path.push(Step::Key(key));
            let (v, cut) = map.next_value_seed(Node {
                prune: self.prune,
                ctx: self.ctx,
            })?;
            let Some(Step::Key(key)) = self.ctx.path.pop() else {
                unreachable!("the path holds the key pushed above")
            };
            if let Some(n) = cut {
                cut_chars = Some(cut_chars.unwrap_or(0) + n);
            }
            if root
                && key == "type"
                && let Value::String(t) = &v
            {
                self.ctx.root_type = Some(t.clone());
            }
            out.insert(key, v);
        }
        if let Some(n) = cut_chars {
            out.insert(ORIGINAL_CHARS.into(), Value::from(n));
        }
        Ok((Value::Object(out), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRUNE: Prune = Prune {
        skip_root: &["copy"],
        regions: &[&["message", "content", "*", "content"]],
        max_chars: 30,
        keep_json: false,
        keep: &[],
    };

    #[test]
    fn long_strings_in_a_region_are_cut_and_their_length_recorded() {
        let long: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let line = serde_json::json!({
            "type": "user",
            "copy": {"big": long},
            "message": {"content": [
                {"type": "tool_result", "content": long},
                {"type": "text", "text": long},
            ]},
        });
        let v = parse(line.to_string().as_bytes(), &PRUNE).unwrap();
        assert!(v.get("copy").is_none());
        let block = &v["message"]["content"][0];
        assert_eq!(block["content"], crate::text::trim_output(&long, 30));
        assert_eq!(block[ORIGINAL_CHARS], 100);
        // Outside the region nothing is cut: a user's text stays whole.
        assert_eq!(v["message"]["content"][1]["text"], long.as_str());
        // Everything else is the same value serde_json builds.
        let mut expected = line.clone();
        expected.as_object_mut().unwrap().remove("copy");
        expected["message"]["content"][0]["content"] = block["content"].clone();
        expected["message"]["content"][0][ORIGINAL_CHARS] = 100.into();
        assert_eq!(v, expected);
    }

    #[test]
    fn multibyte_text_is_measured_in_characters() {
        let long = "日本語".repeat(20);
        let line = serde_json::json!({"message": {"content": [{"content": [{"text": long}]}]}});
        let v = parse(line.to_string().as_bytes(), &PRUNE).unwrap();
        let cut = &v["message"]["content"][0]["content"][0];
        assert_eq!(cut[ORIGINAL_CHARS], 60);
        assert_eq!(cut["text"], crate::text::trim_output(&long, 30));
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert!(parse(b"{\"a\":", &PRUNE).is_err());
        assert!(parse(b"{\"a\":1} trailing", &PRUNE).is_err());
        assert_eq!(parse(b" 42 ", &PRUNE).unwrap(), Value::from(42));
    }
}
