//! Tolerant field extraction for the listing scanners.
//!
//! A scanner deserializes each line into a small struct of the fields it needs (see `Fields`);
//! everything else is skipped by the parser without being built into a tree. Whatever the
//! serializer did, the answer is the one a `serde_json::Value` gives: keys in any order, with
//! whitespace around them, escaped (`"\u0074ype"`), or repeated (the last wins); a field of an
//! unexpected type reads as absent, as `Value::as_str` would. Strings are borrowed from the
//! line unless they hold escapes.
//!
//! Skipped values are still checked as strictly as `serde_json::from_str::<Value>` checks them
//! (numbers in range, well-formed `\u` escapes, nesting depth), so that a line is malformed for
//! a scanner exactly when it is malformed for a reader.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The fields of interest of a JSON object. `field` reads the value of `key` from `map` when it
/// is one of them (and returns true); otherwise the caller skips the value.
pub trait Fields<'de>: Default {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;
}

/// Declares a struct of `Fields`, each read from its JSON key, for the objects whose every field
/// is read as its type reads it: `fields_struct! { struct Name<'a> { field: Type = "key", ... } }`.
macro_rules! fields_struct {
    ($(#[$m:meta])* struct $name:ident<$a:lifetime> {
        $($(#[$fm:meta])* $field:ident: $ty:ty = $key:literal),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Default)]
        struct $name<$a> {
            $($(#[$fm])* $field: $ty),*
        }

        impl<'de> $crate::jsonl::fields::Fields<'de> for $name<'de> {
            fn field<A: serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> Result<bool, A::Error> {
                match key {
                    $($key => self.$field = map.next_value()?,)*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}
pub(crate) use fields_struct;

/// Parses one line (as `for_each_line` hands it to a reader: trimmed, valid UTF-8) into `T`.
/// `None` when the line is not JSON; `T::default()` when it is JSON but not an object.
pub fn parse<'a, T: Fields<'a>>(text: &'a str) -> Option<T> {
    match serde_json::from_str::<Val<'a, T>>(text).ok()? {
        Val::Obj(t) => Some(t),
        _ => Some(T::default()),
    }
}

/// Implements visit methods of a visitor for values it does not want (`bool`, `i64`, `u64`,
/// `f64`, `str`, `unit`, `seq`, `map`, as listed): the value is skipped and `$absent` returned.
macro_rules! absent {
    ($absent:expr; $($kind:ident)*) => { $( absent!(@ $kind $absent); )* };
    (@ bool $a:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($a)
        }
    };
    (@ i64 $a:expr) => {
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($a)
        }
    };
    (@ u64 $a:expr) => {
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($a)
        }
    };
    (@ f64 $a:expr) => {
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($a)
        }
    };
    (@ str $a:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($a)
        }
    };
    (@ unit $a:expr) => {
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($a)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($a)
        }
    };
    (@ seq $a:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<Skip>()?.is_some() {}
            Ok($a)
        }
    };
    (@ map $a:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<Skip, Skip>()?.is_some() {}
            Ok($a)
        }
    };
}

/// Implements the string visits of a visitor whose value is built from a `Cow<str>`.
macro_rules! cow_str {
    ($wrap:expr) => {
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok($wrap(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok($wrap(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok($wrap(Cow::Owned(v)))
        }
    };
}

/// Any JSON value, checked and dropped. Unlike `serde::de::IgnoredAny`, which lets the parser
/// skip a value with lighter checks, it is parsed as `Value` parses it (strings are decoded into
/// the parser's scratch buffer, never allocated), so that a line that `Value` rejects (a number
/// out of range, a lone surrogate escape, nesting past the recursion limit) is rejected here too.
pub struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            absent!(Skip; bool i64 u64 f64 str unit seq map);
        }
        d.deserialize_any(V)
    }
}

/// A key, borrowed unless escaped.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            cow_str!(Key);
        }
        d.deserialize_str(V)
    }
}

/// A value read only for whether it is a string (`Value::as_str`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    pub fn is(&self, s: &str) -> bool {
        self.get() == Some(s)
    }

    pub fn owned(&self) -> Option<String> {
        self.get().map(str::to_string)
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            absent!(Str(None); bool i64 u64 f64 unit seq map);
            cow_str!(|s| Str(Some(s)));
        }
        d.deserialize_any(V)
    }
}

/// A value read only for whether it is a boolean (`Value::as_bool`).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Flag(pub Option<bool>);

impl Flag {
    pub fn is_true(self) -> bool {
        self.0 == Some(true)
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            absent!(Flag(None); i64 u64 f64 str unit seq map);
            fn visit_bool<E>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(Some(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A value read only for being there, whatever it is (`Value::get(key).is_some()`).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Present(pub bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Skip::deserialize(d).map(|_| Present(true))
    }
}

/// A value read only if it is a string or a number (times may be either).
#[derive(Debug, Default, Clone, PartialEq)]
pub enum Scalar<'a> {
    Str(Cow<'a, str>),
    Num(serde_json::Number),
    #[default]
    Other,
}

impl Scalar<'_> {
    /// The value as `Value` holds it (only strings and numbers; `None` for anything else).
    pub fn to_value(&self) -> Option<serde_json::Value> {
        match self {
            Scalar::Str(s) => Some(serde_json::Value::String(s.to_string())),
            Scalar::Num(n) => Some(serde_json::Value::Number(n.clone())),
            Scalar::Other => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            absent!(Scalar::Other; bool unit seq map);
            cow_str!(Scalar::Str);
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Scalar::Num(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Scalar::Num(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(serde_json::Number::from_f64(v).map_or(Scalar::Other, Scalar::Num))
            }
        }
        d.deserialize_any(V)
    }
}

/// A value that may be an object (read for the fields of `T`), a string, or a list of such
/// values; anything else is `Other`.
#[derive(Debug, Default, Clone, PartialEq)]
pub enum Val<'a, T> {
    Obj(T),
    Str(Cow<'a, str>),
    List(Vec<Val<'a, T>>),
    #[default]
    Other,
}

impl<'a, T> Val<'a, T> {
    pub fn obj(&self) -> Option<&T> {
        match self {
            Val::Obj(t) => Some(t),
            _ => None,
        }
    }

    pub fn str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of a list (none for anything else).
    pub fn items(&self) -> &[Val<'a, T>] {
        match self {
            Val::List(v) => v,
            _ => &[],
        }
    }

    /// The objects of a list (`Value::as_array` then the elements that are objects).
    pub fn objects(&self) -> impl Iterator<Item = &T> {
        self.items().iter().filter_map(Val::obj)
    }
}

impl<'de, T: Fields<'de>> Deserialize<'de> for Val<'de, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Fields<'de>> Visitor<'de> for V<T> {
            type Value = Val<'de, T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            absent!(Val::Other; bool i64 u64 f64 unit);
            cow_str!(Val::Str);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Val<'de, T>>()? {
                    items.push(v);
                }
                Ok(Val::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = T::default();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    if !out.field(&key.0, &mut map)? {
                        map.next_value::<Skip>()?;
                    }
                }
                Ok(Val::Obj(out))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// For objects whose fields are all skipped (`Val<NoFields>` reads only strings and lists).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct NoFields;

impl<'de> Fields<'de> for NoFields {
    fn field<A: MapAccess<'de>>(&mut self, _: &str, _: &mut A) -> Result<bool, A::Error> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug)]
    struct Line<'a> {
        kind: Str<'a>,
        meta: Flag,
        ts: Scalar<'a>,
        message: Val<'a, Message<'a>>,
    }

    #[derive(Default, Debug, PartialEq)]
    struct Message<'a> {
        id: Str<'a>,
    }

    impl<'de> Fields<'de> for Line<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
            match key {
                "type" => self.kind = map.next_value()?,
                "isMeta" => self.meta = map.next_value()?,
                "timestamp" => self.ts = map.next_value()?,
                "message" => self.message = map.next_value()?,
                _ => return Ok(false),
            }
            Ok(true)
        }
    }

    impl<'de> Fields<'de> for Message<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
            match key {
                "id" => self.id = map.next_value()?,
                _ => return Ok(false),
            }
            Ok(true)
        }
    }

    #[test]
    fn any_spacing_order_and_escapes() {
        for text in [
            r#"{"type":"user","isMeta":true,"message":{"id":"m1"}}"#,
            r#"{ "message" : { "x" : [1, {"id": 2}], "id" : "m1" } , "isMeta" : true , "type" : "user" }"#,
            r#"{"\u0074ype":"\u0075ser","isMeta":true,"message":{"id":"m\u0031"}}"#,
            r#"{"type":1,"type":"user","isMeta":"yes","isMeta":true,"message":{"id":"m1"}}"#,
        ] {
            let l: Line = parse(text).unwrap();
            assert!(l.kind.is("user"), "{text}");
            assert!(l.meta.is_true(), "{text}");
            assert_eq!(l.message.obj().unwrap().id.get(), Some("m1"), "{text}");
        }
    }

    #[test]
    fn other_types_read_as_absent() {
        let l: Line =
            parse(r#"{"type":["user"],"isMeta":1,"message":"m","timestamp":17}"#).unwrap();
        assert_eq!(l.kind.get(), None);
        assert_eq!(l.meta.0, None);
        assert!(l.message.obj().is_none());
        assert_eq!(l.ts.to_value(), Some(serde_json::json!(17)));
        // Not an object: valid, no fields.
        let l: Line = parse(r#"["user", true]"#).unwrap();
        assert_eq!(l.kind.get(), None);
    }

    #[test]
    fn malformed_exactly_when_value_says_so() {
        for text in [
            r#"{"type":"user","x":1e400}"#,
            r#"{"type":"user","x":"\ud800"}"#,
            r#"{"type":"user","x":"\ud800\u0041"}"#,
            r#"{"type":"user","x":"a	b"}"#,
            r#"{"type":"user",}"#,
            r#"{"type":"user"} x"#,
            &format!(
                r#"{{"type":"user","x":{}1{}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            ),
        ] {
            let value = serde_json::from_str::<serde_json::Value>(text).is_ok();
            let ours = parse::<Line>(text).is_some();
            assert_eq!(value, ours, "{text}");
            assert!(!ours, "{text}");
        }
        for text in [
            r#"{"type":"user","x":"\ud83d\ude00","y":1e300,"z":-0.0}"#,
            &format!(
                r#"{{"type":"user","x":{}1{}}}"#,
                "[".repeat(100),
                "]".repeat(100)
            ),
        ] {
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_ok(),
                "{text}"
            );
            assert!(parse::<Line>(text).is_some(), "{text}");
        }
    }
}
