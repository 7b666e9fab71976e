//! Lines longer than `jsonl::LONG_LINE`. At every resume the CLI writes the whole history again
//! as one `$set.messages` line, so a long session that was resumed holds a line as long as
//! itself. Parsed whole, it would be held whole; past `MAX_LINE`, cut to its ends like other
//! agents' long lines, the conversation would be lost. So such a line is read straight from
//! the file instead, a message at a time.
//!
//! A long line is read twice. The first time as the listing reads a line (`scan::light_long`):
//! that checks all of it as `Value` would (a line that fails there fails whole, as a short one
//! does) and tells what record it is, which depends on all its keys, in any order. The second
//! time its list is handed on a message at a time, so that the read holds one message of it.
//! Invalid UTF-8 is replaced as in a line read whole, so a long line reads as a short one.

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::rc::Rc;

use anyhow::{Context, Result};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::jsonl::LossyUtf8;
use crate::jsonl::fields::Skip;
use crate::jsonl::str_field;
use crate::jsonl::surrogates::Repaired;

/// The text of a long line, `len` bytes from `start`, as a line read whole is parsed.
pub fn line(path: &Path, start: u64, len: u64) -> Result<impl Read + use<>> {
    Ok(line_noting_lossy(path, start, len)?.0)
}

/// What reading a long line replaced in it, known once it has been read.
pub struct Replacing {
    utf8: Rc<Cell<bool>>,
    halves: Rc<Cell<bool>>,
}

impl Replacing {
    pub fn get(&self) -> crate::jsonl::Replaced {
        crate::jsonl::Replaced {
            utf8: self.utf8.get(),
            surrogates: self.halves.get(),
        }
    }
}

/// `line`, and what reading it replaced.
pub fn line_noting_lossy(
    path: &Path,
    start: u64,
    len: u64,
) -> Result<(impl Read + use<>, Replacing)> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    file.seek(SeekFrom::Start(start))
        .with_context(|| format!("cannot read {}", path.display()))?;
    // Buffered again after the replacement: the parser reads a byte at a time, which only a
    // `BufReader` hands out without a call to `read` per byte.
    let lossy = LossyUtf8::trimmed(BufReader::with_capacity(1 << 20, file.take(len)));
    let utf8 = lossy.replaced();
    let repaired = Repaired::new(lossy);
    let halves = repaired.replaced();
    Ok((
        BufReader::with_capacity(1 << 16, repaired),
        Replacing { utf8, halves },
    ))
}

/// The whole line as one `Value` (a long line that is not a list of messages).
pub fn whole(path: &Path, start: u64, len: u64) -> Result<Value> {
    Ok(serde_json::from_reader(line(path, start, len)?)?)
}

/// Which list of a record a long line's messages are in.
#[derive(Clone, Copy)]
pub enum List {
    /// `{"$set": {"messages": [...], ...}}`
    Set,
    /// A metadata record's own `messages` (`sessionId`, `projectHash`, `messages`).
    Meta,
}

/// The list a long line's record (as the first read found it) holds, if it can be streamed:
/// a `$set` or metadata record with a list, whose `$set` and `messages` keys do not repeat.
pub fn list_of<M>(record: &super::records::Record<M>, repeated: bool) -> Option<List> {
    use super::records::Record;
    match record {
        _ if repeated => None,
        Record::Set {
            messages: Some(_), ..
        } => Some(List::Set),
        Record::Meta {
            messages: Some(_), ..
        } => Some(List::Meta),
        _ => None,
    }
}

/// Hands each message of the line's list that has a string `id` to `each`, in order, and
/// returns the record's metadata (the other keys of `$set`, or of a metadata record) and
/// what reading it replaced. The line must hold `$set` or `messages` once (the first read
/// says so).
pub fn stream_list(
    path: &Path,
    start: u64,
    len: u64,
    list: List,
    each: &mut dyn FnMut(String, Value),
) -> Result<(Map<String, Value>, crate::jsonl::Replaced)> {
    let (line, lossy) = line_noting_lossy(path, start, len)?;
    let mut de = serde_json::Deserializer::from_reader(line);
    let meta = match list {
        List::Set => SetRecord { each }.deserialize(&mut de)?,
        // The record itself holds the list and the metadata.
        List::Meta => Holder { each }.deserialize(&mut de)?,
    };
    de.end()?;
    Ok((meta, lossy.get()))
}

/// A `$set` record: only its `$set` counts.
struct SetRecord<'a> {
    each: &'a mut dyn FnMut(String, Value),
}

impl<'de> DeserializeSeed<'de> for SetRecord<'_> {
    type Value = Map<String, Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SetRecord<'_> {
    type Value = Map<String, Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a $set record")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "$set" {
                meta = map.next_value_seed(Holder {
                    each: &mut *self.each,
                })?;
            } else {
                map.next_value::<Skip>()?;
            }
        }
        Ok(meta)
    }
}

/// The object holding the list (`$set`'s value, or a metadata record): its `messages` handed
/// on, its other keys the metadata.
struct Holder<'a> {
    each: &'a mut dyn FnMut(String, Value),
}

impl<'de> DeserializeSeed<'de> for Holder<'_> {
    type Value = Map<String, Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Holder<'_> {
    type Value = Map<String, Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with a message list")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut meta = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "messages" {
                map.next_value_seed(Messages {
                    each: &mut *self.each,
                })?;
            } else {
                let v = map.next_value::<Value>()?;
                meta.insert(key, v);
            }
        }
        Ok(meta)
    }
}

/// The message list, handed on a message at a time.
struct Messages<'a> {
    each: &'a mut dyn FnMut(String, Value),
}

impl<'de> DeserializeSeed<'de> for Messages<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Messages<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(m) = seq.next_element::<Value>()? {
            // As the reader keeps a list's messages: those with a string id.
            if let Some(id) = str_field(&m, "id") {
                (self.each)(id.to_string(), m);
            }
        }
        Ok(())
    }
}
