//! A message's metadata: a handful of keys per message, tens of thousands of messages in a long
//! session. A `BTreeMap` gives each message a node of eleven slots (about a kilobyte) for its
//! two or three keys; this keeps them in a small vector sorted by key, and reads, writes and
//! serialises exactly as the `BTreeMap` did (keys in order, a later insert replacing). Keys
//! are nearly always the readers' literals, kept without an allocation each.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// The metadata keys `Message`'s typed fields travel as in the neutral JSON (see `model::state`).
pub const TYPED_KEYS: [&str; 7] = [
    "failed",
    "kind",
    "masked",
    "oneline",
    "original_chars",
    "reduced",
    "source_chars",
];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meta(Vec<(Cow<'static, str>, Slot)>);

/// A metadata value as it is kept: a third of a `serde_json::Value` (72 bytes with ordered
/// maps) for the numbers, flags and short strings nearly every value is.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Null,
    Bool(bool),
    /// A non-negative integer (`serde_json` keeps every one as unsigned).
    U64(u64),
    /// A negative integer.
    I64(i64),
    F64(f64),
    Str(Box<str>),
    /// An array or an object.
    Other(Box<Value>),
}

impl From<Value> for Slot {
    fn from(v: Value) -> Slot {
        match v {
            Value::Null => Slot::Null,
            Value::Bool(b) => Slot::Bool(b),
            // A whole number is one whatever its form (`1200`, `1200.0`, `1.2e3`; see
            // `jsonl::as_count`): an export re-saved by a serializer that keeps numbers as
            // floats reads as the original did.
            Value::Number(n) => {
                let v = Value::Number(n);
                match (
                    crate::jsonl::as_count(&v),
                    crate::jsonl::as_whole(&v),
                    v.as_f64(),
                ) {
                    (Some(u), _, _) => Slot::U64(u),
                    (None, Some(i), _) => Slot::I64(i),
                    (None, None, Some(f)) => Slot::F64(f),
                    // Not reachable without serde_json's arbitrary precision; kept exactly anyway.
                    (None, None, None) => Slot::Other(Box::new(v)),
                }
            }
            Value::String(s) => Slot::Str(s.into_boxed_str()),
            other => Slot::Other(Box::new(other)),
        }
    }
}

impl From<Slot> for Value {
    fn from(s: Slot) -> Value {
        match s {
            Slot::Null => Value::Null,
            Slot::Bool(b) => Value::Bool(b),
            Slot::U64(u) => Value::from(u),
            Slot::I64(i) => Value::from(i),
            Slot::F64(f) => Value::from(f),
            Slot::Str(s) => Value::String(s.into_string()),
            Slot::Other(v) => *v,
        }
    }
}

impl Slot {
    fn to_value(&self) -> Value {
        match self {
            Slot::Other(v) => (**v).clone(),
            Slot::Str(s) => Value::String(s.to_string()),
            small => Value::from(small.clone()),
        }
    }
}

impl Meta {
    pub fn new() -> Meta {
        Meta(Vec::new())
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_ref().cmp(key))
    }

    fn slot(&self, key: &str) -> Option<&Slot> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    /// The value of `key`, as JSON (a copy).
    pub fn get(&self, key: &str) -> Option<Value> {
        self.slot(key).map(Slot::to_value)
    }

    /// `get(key)` when it is a string (`Value::as_str`).
    pub fn get_str(&self, key: &str) -> Option<&str> {
        match self.slot(key)? {
            Slot::Str(s) => Some(s),
            Slot::Other(v) => v.as_str(),
            _ => None,
        }
    }

    /// `get(key)` when it is an unsigned integer (`Value::as_u64`).
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        match self.slot(key)? {
            Slot::U64(u) => Some(*u),
            Slot::Other(v) => v.as_u64(),
            _ => None,
        }
    }

    /// `get(key)` when it is an integer that fits an `i64` (`Value::as_i64`).
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        match self.slot(key)? {
            Slot::U64(u) => i64::try_from(*u).ok(),
            Slot::I64(i) => Some(*i),
            Slot::Other(v) => v.as_i64(),
            _ => None,
        }
    }

    /// `get(key)` when it is a boolean (`Value::as_bool`).
    pub fn get_bool(&self, key: &str) -> Option<bool> {
        match self.slot(key)? {
            Slot::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key`, returning the value it replaced. Never a key a typed field of `Message`
    /// travels as (`TYPED_KEYS`): those are set on the message.
    pub fn insert(&mut self, key: impl Into<Cow<'static, str>>, value: Value) -> Option<Value> {
        let key = key.into();
        debug_assert!(
            !TYPED_KEYS.contains(&key.as_ref()),
            "`{key}` is a typed field of Message (see model::state), not a metadata key"
        );
        self.insert_any(key, value)
    }

    /// `insert` of any key: what the neutral JSON holds, before `state` takes out what a typed
    /// field holds.
    pub(super) fn insert_any(&mut self, key: Cow<'static, str>, value: Value) -> Option<Value> {
        let value = Slot::from(value);
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value).into()),
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
        self.find(key).ok().map(|i| self.0.remove(i).1.into())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Calls `f` with every key and its value as JSON, keeping what `f` leaves in the value.
    pub fn for_each_value_mut(&mut self, mut f: impl FnMut(&str, &mut Value)) {
        for (k, slot) in &mut self.0 {
            let mut v = Value::from(std::mem::replace(slot, Slot::Null));
            f(k, &mut v);
            *slot = Slot::from(v);
        }
    }
}

impl Serialize for Slot {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Slot::Null => s.serialize_unit(),
            Slot::Bool(b) => s.serialize_bool(*b),
            Slot::U64(u) => s.serialize_u64(*u),
            Slot::I64(i) => s.serialize_i64(*i),
            Slot::F64(f) => s.serialize_f64(*f),
            Slot::Str(v) => s.serialize_str(v),
            Slot::Other(v) => v.serialize(s),
        }
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

impl Meta {
    /// Serialises the map with `more` entries among its own, in key order (`more` in key order
    /// too, none of them a key of the map).
    pub fn serialize_with<S: Serializer>(
        &self,
        more: &[(&'static str, Value)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len() + more.len()))?;
        let mut more = more.iter().peekable();
        for (k, v) in &self.0 {
            while let Some((mk, mv)) = more.next_if(|(mk, _)| *mk < k.as_ref()) {
                map.serialize_entry(mk, mv)?;
            }
            map.serialize_entry(k.as_ref(), v)?;
        }
        for (mk, mv) in more {
            map.serialize_entry(mk, mv)?;
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
                    meta.insert_any(k.into(), v);
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
    /// `BTreeMap` given the same sequence, whatever JSON the values are; each typed getter
    /// answers as `Value`'s own accessor would.
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
        let values = |n: u64| -> Value {
            match n % 11 {
                0 => Value::Null,
                1 => Value::Bool(n.is_multiple_of(2)),
                2 => Value::from(n),
                3 => Value::from(-(n as i64) - 1),
                // Short enough that serde_json reads back the float it wrote.
                4 => Value::from((n % 4096) as f64 / 8.0 + 0.125),
                5 if n.is_multiple_of(3) => Value::from(-((n % 100) as f64)),
                5 => Value::from(u64::MAX - n),
                6 => Value::from(format!("text {n} \u{1b}[31m 日本")),
                7 => Value::from(""),
                8 => serde_json::json!([n, "x", {"b": 1, "a": [null]}]),
                9 => serde_json::json!({"z": n, "a": "y"}),
                _ => Value::from(i64::MIN),
            }
        };
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..500 {
            let mut meta = Meta::new();
            let mut reference: BTreeMap<String, Value> = BTreeMap::new();
            for _ in 0..12 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let key = keys[(state % keys.len() as u64) as usize];
                if state.is_multiple_of(5) {
                    assert_eq!(meta.remove(key), reference.remove(key));
                } else {
                    let v = values(state >> 8);
                    // A whole number written as a float is kept as the integer it is.
                    let kept = match v.as_f64().filter(|f| f.fract() == 0.0 && !v.is_u64()) {
                        Some(f) if f >= 0.0 => Value::from(f as u64),
                        Some(f) if !v.is_i64() => Value::from(f as i64),
                        _ => v.clone(),
                    };
                    assert_eq!(
                        meta.insert_any(key.into(), v),
                        reference.insert(key.into(), kept)
                    );
                }
                let want = reference.get(key);
                assert_eq!(meta.get(key).as_ref(), want);
                assert_eq!(meta.get_str(key), want.and_then(Value::as_str));
                assert_eq!(meta.get_u64(key), want.and_then(Value::as_u64));
                assert_eq!(meta.get_i64(key), want.and_then(Value::as_i64));
                assert_eq!(meta.get_bool(key), want.and_then(Value::as_bool));
                assert_eq!(meta.len(), reference.len());
            }
            let json = serde_json::to_string(&meta).unwrap();
            assert_eq!(json, serde_json::to_string(&reference).unwrap());
            let back: Meta = serde_json::from_str(&json).unwrap();
            assert_eq!(back, meta);
            // What a visitor leaves is kept, as the same value.
            meta.for_each_value_mut(|k, v| {
                if k == "kind" {
                    *v = Value::from("changed");
                }
            });
            if let Some(v) = reference.get_mut("kind") {
                *v = Value::from("changed");
            }
            assert_eq!(
                serde_json::to_string(&meta).unwrap(),
                serde_json::to_string(&reference).unwrap()
            );
        }
    }
}
