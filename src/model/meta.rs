//! A message's metadata: a handful of keys per message, tens of thousands of messages in a long
//! session. A `BTreeMap` gives each message a node of eleven slots (about a kilobyte) for its
//! two or three keys; this keeps them in a small vector sorted by key, and reads, writes and
//! serialises exactly as the `BTreeMap` did (keys in order, a later insert replacing). Keys
//! are nearly always the readers' literals, kept without an allocation each.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meta(Vec<(Cow<'static, str>, Value)>);

impl Meta {
    pub fn new() -> Meta {
        Meta(Vec::new())
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key`, returning the value it replaced.
    pub fn insert(&mut self, key: impl Into<Cow<'static, str>>, value: Value) -> Option<Value> {
        let key = key.into();
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                if self.0.capacity() == 0 {
                    // Most messages get two to four keys: one allocation for all of them.
                    self.0.reserve_exact(4);
                }
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut Value)> {
        self.0.iter_mut().map(|(k, v)| (&**k, v))
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k.as_ref(), v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Meta, D::Error> {
        struct MetaVisitor;
        impl<'de> Visitor<'de> for MetaVisitor {
            type Value = Meta;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of metadata")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Meta, A::Error> {
                let mut meta = Meta::new();
                while let Some((k, v)) = access.next_entry::<String, Value>()? {
                    meta.insert(k, v);
                }
                Ok(meta)
            }
        }
        d.deserialize_map(MetaVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Any sequence of inserts and removes leaves the same map, and the same JSON, as a
    /// `BTreeMap` given the same sequence.
    #[test]
    fn behaves_as_a_btreemap() {
        let keys = [
            "line",
            "uuid",
            "kind",
            "a",
            "zz",
            "message_id",
            "line",
            "kind",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..500 {
            let mut meta = Meta::new();
            let mut reference: BTreeMap<String, Value> = BTreeMap::new();
            for step in 0..12 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let key = keys[(state % keys.len() as u64) as usize];
                if state.is_multiple_of(5) {
                    assert_eq!(meta.remove(key), reference.remove(key));
                } else {
                    let v = Value::from(step);
                    assert_eq!(meta.insert(key, v.clone()), reference.insert(key.into(), v));
                }
                assert_eq!(meta.get(key), reference.get(key));
                assert_eq!(meta.len(), reference.len());
            }
            let json = serde_json::to_string(&meta).unwrap();
            assert_eq!(json, serde_json::to_string(&reference).unwrap());
            let back: Meta = serde_json::from_str(&json).unwrap();
            assert_eq!(back, meta);
        }
    }
}
