//! What the readers of agents that chain their records by parent id share: the compact ids
//! a first pass keeps of every record, the walk from the leaf up to the root, and the order in
//! which a second pass hands on the records of the branch it found.
//!
//! Claude Code's transcripts, pi's sessions and Qwen Code's all chain their records so, and the
//! branch in effect is known only once the whole file is read: a reader keeps the ids of every
//! record in a first pass (`Id`: 16 bytes a UUID), chooses the branch, then reads only the
//! branch's records in a second pass (`Branch::read`), converting each as it comes and
//! forgetting it.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use super::{Fold, FoldWindow};
use crate::jsonl::{self, Line};
use crate::model::Session;

/// A line's `uuid` (or its parent's) as the walk compares them. Claude Code writes lowercase
/// hyphenated UUIDs, kept in 16 bytes instead of a 36-character string of their own (a long
/// transcript has one or two a line); any other text is kept as it is. Two ids are equal
/// exactly when their texts are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    Uuid([u8; 16]),
    Text(Box<str>),
}

impl Id {
    pub fn new(s: &str) -> Id {
        match uuid_bytes(s) {
            Some(b) => Id::Uuid(b),
            None => Id::Text(s.into()),
        }
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Id::Uuid(b) => {
                for (i, byte) in b.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        f.write_str("-")?;
                    }
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
            Id::Text(t) => f.write_str(t),
        }
    }
}

/// The bytes of a UUID written as 8-4-4-4-12 lowercase hex digits, the one form whose text
/// can be written back exactly; `None` for any other text.
pub fn uuid_bytes(s: &str) -> Option<[u8; 16]> {
    // Where each byte's two digits start: every line has an id or two, read in both passes,
    // and an iterator that filtered out the hyphens cost some 500 instructions an id.
    const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    let s = s.as_bytes();
    if s.len() != 36 || s[8] != b'-' || s[13] != b'-' || s[18] != b'-' || s[23] != b'-' {
        return None;
    }
    // A digit's value; 16 for any other byte (uppercase included).
    const DIGIT: [u8; 256] = {
        let mut t = [16u8; 256];
        let mut i = 0;
        while i < 16 {
            t[b"0123456789abcdef"[i] as usize] = i as u8;
            i += 1;
        }
        t
    };
    let mut out = [0u8; 16];
    let mut bad = 0;
    for (byte, &i) in out.iter_mut().zip(&AT) {
        let (hi, lo) = (DIGIT[usize::from(s[i])], DIGIT[usize::from(s[i + 1])]);
        bad |= hi | lo;
        *byte = hi << 4 | (lo & 15);
    }
    (bad < 16).then_some(out)
}

/// The walk from a leaf up through the parents: the records on it, root first, and what
/// stopped it early.
#[derive(Debug, Default, PartialEq)]
pub struct Walk {
    /// The records' places, root first.
    pub path: Vec<usize>,
    /// The record met a second time: the walk stopped there.
    pub looped_at: Option<usize>,
    /// The record whose parent names no record, with that parent.
    pub missing_parent: Option<(usize, String)>,
}

/// What a record's parent is, as `walk_up` follows it.
pub enum Parent {
    /// The record starts the chain.
    Root,
    At(usize),
    /// It names a record that is not there.
    Missing(String),
}

/// Walks from record `leaf` up through `parent`, as pi and Qwen Code build the context they
/// resume: to the root, to a record seen before, or to a parent that names no record.
pub fn walk_up(leaf: Option<usize>, parent: impl Fn(usize) -> Parent) -> Walk {
    let mut walk = Walk::default();
    let mut seen = std::collections::HashSet::new();
    let mut at = leaf;
    while let Some(i) = at {
        if !seen.insert(i) {
            walk.looped_at = Some(i);
            break;
        }
        walk.path.push(i);
        at = match parent(i) {
            Parent::Root => None,
            Parent::At(p) => Some(p),
            Parent::Missing(p) => {
                walk.missing_parent = Some((i, p));
                None
            }
        };
    }
    walk.path.reverse();
    walk
}

/// Hands on what a second pass parsed of the branch's records in the branch's order, each
/// group of lines (a record written in parts is one group) once all of it has come, however
/// the file orders them. In a file written as the agent writes (each record after its parent)
/// no more than one group waits at a time.
pub struct InOrder<T> {
    /// The groups' lines, group after group (group `g` ends at `ends[g]`).
    lines: Vec<usize>,
    ends: Vec<usize>,
    next: usize,
    waiting: HashMap<usize, T>,
}

impl<T> InOrder<T> {
    pub fn new(groups: impl IntoIterator<Item = impl IntoIterator<Item = usize>>) -> InOrder<T> {
        let (mut lines, mut ends) = (Vec::new(), Vec::new());
        for g in groups {
            lines.extend(g);
            ends.push(lines.len());
        }
        InOrder {
            lines,
            ends,
            next: 0,
            waiting: HashMap::new(),
        }
    }

    /// The lines wanted, in no order.
    pub fn lines(&self) -> &[usize] {
        &self.lines
    }

    /// Takes line `no`'s parse, and gives `f` every group now complete, in order: the group's
    /// number and its lines' parses in the group's order.
    pub fn put(&mut self, no: usize, parsed: T, mut f: impl FnMut(usize, Vec<T>)) {
        self.waiting.insert(no, parsed);
        while self.next < self.ends.len() {
            let start = self.next.checked_sub(1).map_or(0, |g| self.ends[g]);
            let group = &self.lines[start..self.ends[self.next]];
            if !group.iter().all(|l| self.waiting.contains_key(l)) {
                return;
            }
            let parts = group
                .iter()
                .filter_map(|l| self.waiting.remove(l))
                .collect();
            f(self.next, parts);
            self.next += 1;
        }
    }

    /// How many groups were handed on.
    pub fn done(&self) -> usize {
        self.next
    }
}

/// The second pass of a reader whose records chain by parent id: `pass`'s lines, of which only
/// those of `groups` are parsed (the branch's records in its order, a record written in parts
/// being one group of lines).
pub struct Branch {
    pub groups: Vec<Vec<usize>>,
    pub pass: jsonl::Pass,
    /// What the records are called, to say that some were left out.
    pub what: &'static str,
}

impl Branch {
    /// Parses the branch's lines with `map` on the parsing threads, and gives `each` every
    /// group in the branch's order (its number, its first line, its lines' parses), older turns
    /// folded as `fold` asks. Groups the file no longer holds (it changed while read) are said
    /// to be left out.
    pub fn read<T: Send>(
        self,
        path: &Path,
        fold: Option<&Fold>,
        session: &mut Session,
        map: impl Fn(usize, Value) -> T + Sync,
        mut each: impl FnMut(usize, usize, Vec<T>, &mut Session),
    ) -> Result<()> {
        let Some(last) = self.groups.iter().flatten().max().copied() else {
            return Ok(());
        };
        let mut wanted = vec![false; last + 1];
        for &l in self.groups.iter().flatten() {
            wanted[l] = true;
        }
        let firsts: Vec<usize> = self.groups.iter().map(|g| g[0]).collect();
        let mut order = InOrder::new(self.groups);
        let mut window = fold.map(FoldWindow::new);
        jsonl::for_each_line(
            path,
            self.pass,
            // Records off the branch are not parsed at all.
            |no, _| (!wanted.get(no).copied().unwrap_or(false)).then_some(None),
            |no, v| Some(map(no, v)),
            |no, line| {
                if let Line::Json(Some(v)) = line {
                    order.put(no, v, |g, records| {
                        each(g, firsts[g], records, session);
                        if let Some(w) = window.as_mut() {
                            w.after_messages(session);
                        }
                    });
                }
                Ok(())
            },
        )?;
        if order.done() < firsts.len() {
            let what = self.what;
            session.warn(
                None,
                format!(
                    "the file changed while it was read: the {what} after the first that changed are left out"
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk follows parents to the root, and stops at a loop or a missing parent, saying
    /// where.
    #[test]
    fn the_walk_stops_at_the_root_a_loop_or_a_missing_parent() {
        // 0 <- 1 <- 2, 3 <- 4 (4's parent 3 points at 4).
        let parents = [None, Some(0), Some(1), Some(4), Some(3)];
        let parent = |i: usize| match parents[i] {
            None => Parent::Root,
            Some(p) => Parent::At(p),
        };
        assert_eq!(walk_up(Some(2), parent).path, [0, 1, 2]);
        let looped = walk_up(Some(4), parent);
        assert_eq!((looped.path, looped.looped_at), (vec![3, 4], Some(4)));
        let missing = walk_up(Some(1), |i| match i {
            1 => Parent::Missing("gone".into()),
            _ => Parent::Root,
        });
        assert_eq!(missing.path, [1]);
        assert_eq!(missing.missing_parent, Some((1, "gone".to_string())));
        assert_eq!(walk_up(None, parent), Walk::default());
    }

    /// Groups come out in their order, each whole, whatever order their lines come in.
    #[test]
    fn groups_come_out_whole_and_in_order() {
        let mut order = InOrder::new([vec![2], vec![5, 3], vec![4]]);
        let mut out = Vec::new();
        for no in [3, 4, 2, 5] {
            order.put(no, no * 10, |g, parts| out.push((g, parts)));
        }
        assert_eq!(out, [(0, vec![20]), (1, vec![50, 30]), (2, vec![40])]);
        assert_eq!(order.done(), 3);
    }
}
