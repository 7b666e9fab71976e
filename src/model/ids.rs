//! Sets of tool call ids that a long relay carries over every call of a session (see
//! `Folded`, `plan::shape::Shaper`): a set of strings cost some 80 bytes an id, tens of
//! thousands of ids in a long session, where the relay's memory must not grow with its size.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// A set of ids, each held as a 64-bit hash keyed at random once per process: no two ids a
/// session holds share one unless by chance (about 1 in 10^11 for a hundred thousand ids),
/// and no session can be written to make them share one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IdSet(HashSet<u64, foldhash::fast::FixedState>);

fn key() -> &'static std::collections::hash_map::RandomState {
    static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    KEY.get_or_init(Default::default)
}

/// `id` as an `IdSet` holds it: its 64-bit hash, keyed at random once per process.
pub fn id_hash(id: &str) -> u64 {
    key().hash_one(id)
}

/// Any value's 64-bit hash, keyed as `id_hash`: equal values have equal hashes, and other
/// values the same one only by chance.
pub fn keyed_hash<T: std::hash::Hash + ?Sized>(value: &T) -> u64 {
    key().hash_one(value)
}

impl IdSet {
    /// Adds `id`; whether it was not there.
    pub fn insert(&mut self, id: &str) -> bool {
        self.0.insert(id_hash(id))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.0.contains(&id_hash(id))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_set_holds_what_was_put_in_and_nothing_else() {
        let mut set = IdSet::default();
        let mut strings = std::collections::HashSet::new();
        let mut next = crate::text::test_rng(0x1d5e_7000_0000_0001);
        for _ in 0..20_000 {
            let id = format!("call_{:x}", next(5000));
            assert_eq!(set.insert(&id), strings.insert(id.clone()), "{id}");
        }
        assert_eq!(set.len(), strings.len());
        for n in 0..6000 {
            let id = format!("call_{n:x}");
            assert_eq!(set.contains(&id), strings.contains(&id), "{id}");
        }
        assert!(!set.contains("toolu_never"));
    }
}
