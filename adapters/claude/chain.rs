//! The `parentUuid` chain of a transcript and the branch Claude Code loads from it. The reader
//! and the listing scanner both describe each chain line as a `Link` and ask `active_branch`
//! which lines are on the branch, so that `list` counts exactly what `show` reads.

use foldhash::{HashMap, HashSet};

use chrono::{DateTime, Utc};

/// Line types that are part of the `parentUuid` chain.
pub(super) const CHAIN_TYPES: &[&str] = &["user", "assistant", "attachment", "system", "progress"];

pub(super) use crate::adapter::tree::Id;
#[cfg(test)]
use crate::adapter::tree::uuid_bytes;

/// What the branch choice needs of one chain line.
#[derive(Debug, Default, Clone, Hash)]
pub(super) struct Link {
    /// `type` is `user`.
    pub user: bool,
    /// `type` is `assistant`.
    pub assistant: bool,
    pub uuid: Option<Id>,
    /// `parentUuid`, else `logicalParentUuid` (across a compact boundary).
    pub parent: Option<Id>,
    pub sidechain: bool,
    /// The line's `timestamp`, parsed.
    pub time: Option<DateTime<Utc>>,
    /// `message.id`: the API message the line is part of.
    pub message_id: Option<String>,
    /// Ids of the `tool_use` blocks in `message.content`.
    pub tool_uses: Vec<String>,
    /// `tool_use_id`s of the `tool_result` blocks in `message.content`.
    pub tool_results: Vec<String>,
}

/// Line `no`'s link as a number: a read that chose the branch ahead from the listing's parse
/// checks by it that its own parse of each line agrees (see `read::Ahead`). foldhash's
/// quality hash with a fixed seed: the same in both passes (which run in one process), and
/// two links that differ collide about 1 in 2^64. (SipHash, with the fixed keys it had here,
/// was no harder to collide on purpose, and was a twentieth of `show`'s work.)
pub(super) fn fingerprint(no: usize, link: &Link) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x5e55_1011_2e1a_7000).hash_one((no, link))
}

/// The links of a transcript's chain lines in file order, as the branch choice keeps them: a
/// long transcript has a link for every line, a few hundred thousand in a 1 GB one, and what
/// each link held of its own (its ids as strings, its tool ids in vectors, its time) made this
/// the peak of memory of every read of such a transcript. Each API message id, tool call id,
/// `uuid` and parent is kept as its keyed hash (`id_key`, `uuid_hash`; `model::id_hash`, as
/// `IdSet` holds ids): two ids have the same hash exactly when their texts are the same,
/// unless by a chance of about 1 in 10^8 for a million ids. The hashes are compared as they
/// are, not numbered through a map, and the newest line of each uuid is found as the links
/// come. Every link's tool ids are in one list; of the
/// times, only the newest line's is kept (the walk starts from it).
#[derive(Default)]
pub(super) struct Links {
    links: Vec<KeptLink>,
    /// The newest link of each `uuid`, by `uuid_hash`.
    by_uuid: HashMap<u64, u32>,
    /// The parent of each link whose parent no earlier link is: the text a warning names, if
    /// no later one is either.
    unresolved: HashMap<u32, Id>,
    /// Each link's tool call ids, then the ids its tool results answer, link after link.
    tool_ids: Vec<u64>,
    /// The newest user or assistant link, by time then place: of all links (a subagent's
    /// transcript), and of those not in a sidechain.
    newest: [Option<(Option<DateTime<Utc>>, usize)>; 2],
}

/// A `Link` with its ids hashed (see `Links`).
pub(super) struct KeptLink {
    pub user: bool,
    pub assistant: bool,
    sidechain: bool,
    /// `uuid_hash` of its parent; `NO_ID` without one.
    parent: u64,
    /// `id_key` of its API message id; `NO_ID` without one.
    message_id: u64,
    /// Where its tool ids start in `Links::tool_ids`, and how many are calls and results.
    tools_at: u32,
    uses: u32,
    results: u32,
}

/// What `uuid_hash` stands in for a line without the id.
const NO_ID: u64 = 0;

/// An id as a link keeps it: its keyed hash (see `Links`), never `NO_ID`.
fn uuid_hash(id: &Id) -> u64 {
    crate::model::keyed_hash(id).max(1)
}

/// An API message id or tool call id as a link keeps it (see `Links`), never `NO_ID`.
fn id_key(id: &str) -> u64 {
    crate::model::id_hash(id).max(1)
}

impl Links {
    pub fn push(&mut self, l: Link) {
        let i = self.links.len();
        // More lines than a u32 counts would take hundreds of GB of transcript.
        let at = u32::try_from(i).expect("fewer than 2^32 chain lines");
        let mut parent = NO_ID;
        if let Some(p) = l.parent {
            parent = uuid_hash(&p);
            if !self.by_uuid.contains_key(&parent) {
                self.unresolved.insert(at, p);
            }
        }
        if let Some(uuid) = &l.uuid {
            self.by_uuid.insert(uuid_hash(uuid), at);
        }
        if l.user || l.assistant {
            let newer = |n: &Option<(Option<DateTime<Utc>>, usize)>| {
                n.as_ref().is_none_or(|(time, _)| l.time >= *time)
            };
            for (slot, eligible) in [(0, true), (1, !l.sidechain)] {
                if eligible && newer(&self.newest[slot]) {
                    self.newest[slot] = Some((l.time, i));
                }
            }
        }
        let message_id = l.message_id.as_deref().map_or(NO_ID, id_key);
        // More tool ids than a u32 counts would take hundreds of GB of transcript.
        let count = |ids: &[String]| u32::try_from(ids.len()).expect("fewer than 2^32 tool ids");
        let tools_at = u32::try_from(self.tool_ids.len()).expect("fewer than 2^32 tool ids");
        let (uses, results) = (count(&l.tool_uses), count(&l.tool_results));
        grow_by_a_quarter(&mut self.tool_ids, l.tool_uses.len() + l.tool_results.len());
        self.tool_ids.extend(
            l.tool_uses
                .iter()
                .chain(&l.tool_results)
                .map(|id| id_key(id)),
        );
        grow_by_a_quarter(&mut self.links, 1);
        self.links.push(KeptLink {
            user: l.user,
            assistant: l.assistant,
            sidechain: l.sidechain,
            parent,
            message_id,
            tools_at,
            uses,
            results,
        });
    }

    /// The ids of `l`'s tool calls.
    fn uses(&self, l: &KeptLink) -> &[u64] {
        let at = l.tools_at as usize;
        &self.tool_ids[at..at + l.uses as usize]
    }

    /// The ids of the calls `l`'s tool results answer.
    fn results(&self, l: &KeptLink) -> &[u64] {
        let at = l.tools_at as usize + l.uses as usize;
        &self.tool_ids[at..at + l.results as usize]
    }
}

/// Makes room in `v` for `more`, growing it by a quarter, not doubling it: in a long transcript
/// these lists are most of what the branch choice holds, and a doubled one is up to half
/// empty. (A list past the allocator's mmap threshold is moved by remapping its pages.)
pub(super) fn grow_by_a_quarter<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() < more {
        v.reserve_exact(more.max(1024).max(v.len() / 4));
    }
}

impl std::ops::Index<usize> for Links {
    type Output = KeptLink;

    fn index(&self, i: usize) -> &KeptLink {
        &self.links[i]
    }
}

/// The lines on the branch, and what went wrong walking it.
pub(super) struct Branch {
    /// By link: on the branch.
    pub included: Vec<bool>,
    /// The walk met this link a second time (a `parentUuid` cycle).
    pub cycle_at: Option<usize>,
    /// This link's parent is not in the file: earlier history is not reachable.
    pub missing_parent: Option<(usize, String)>,
}

/// The branch Claude Code loads: the newest user/assistant line, walked back through its
/// parents (and through compact boundaries to the history they replaced), plus the sibling
/// lines that parallel tool calls produce: every line of an API message on the path and every
/// tool result answering a call on it. In a subagent transcript every line is a sidechain:
/// there it is the main line.
pub(super) fn active_branch(all: &Links, subagent: bool) -> Branch {
    let (mut branch, on_path) = walk(all, subagent);
    let links = &all.links;
    let included = &mut branch.included;
    let eligible = |l: &KeptLink| subagent || !l.sidechain;
    let message_ids: HashSet<u64> = on_path
        .iter()
        .map(|&i| links[i as usize].message_id)
        .filter(|&id| id != NO_ID)
        .collect();
    for (i, l) in links.iter().enumerate() {
        if l.assistant && eligible(l) && message_ids.contains(&l.message_id) {
            included[i] = true;
        }
    }
    let tool_ids: HashSet<u64> = (0..links.len())
        .filter(|&i| included[i])
        .flat_map(|i| all.uses(&links[i]).iter().copied())
        .collect();
    let answers: Vec<usize> = links
        .iter()
        .enumerate()
        .filter(|&(i, l)| {
            l.user
                && eligible(l)
                && !included[i]
                && all.results(l).iter().any(|id| tool_ids.contains(id))
        })
        .map(|(i, _)| i)
        .collect();
    for i in answers {
        included[i] = true;
    }
    branch
}

/// The newest eligible user/assistant line walked back through its parents: the branch
/// without its siblings, and the lines on the path from the newest back.
fn walk(all: &Links, subagent: bool) -> (Branch, Vec<u32>) {
    let links = &all.links;
    let leaf = all.newest[usize::from(!subagent)].map(|(_, i)| i);

    // By link, as a flag: a long transcript has a few hundred thousand links.
    let mut included = vec![false; links.len()];
    // `push` counted the links in a u32.
    let mut on_path: Vec<u32> = Vec::new();
    let mut cycle_at = None;
    let mut missing_parent = None;
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if std::mem::replace(&mut included[i], true) {
            cycle_at = Some(i);
            break;
        }
        on_path.push(i as u32);
        cursor = match links[i].parent {
            NO_ID => None,
            p => match all.by_uuid.get(&p) {
                Some(&j) => Some(j as usize),
                None => {
                    // `push` counted the links in a u32.
                    let text = all.unresolved.get(&(i as u32)).map(Id::to_string);
                    missing_parent = Some((i, text.expect("a parent no line is was kept")));
                    None
                }
            },
        };
    }

    (
        Branch {
            included,
            cycle_at,
            missing_parent,
        },
        on_path,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use foldhash::HashSet;

    /// Ids are kept as 16 bytes exactly when they are lowercase hyphenated UUIDs (as the
    /// way the old filter read them, kept here as the reference), and written back as read.
    #[test]
    fn uuids_are_read_as_the_filter_read_them() {
        fn by_filter(s: &str) -> Option<[u8; 16]> {
            let s = s.as_bytes();
            if s.len() != 36 || [8, 13, 18, 23].iter().any(|&i| s[i] != b'-') {
                return None;
            }
            let digit = |c: u8| match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            };
            let mut hex = s.iter().copied().filter(|&c| c != b'-');
            let mut out = [0u8; 16];
            for byte in &mut out {
                *byte = digit(hex.next()?)? << 4 | digit(hex.next()?)?;
            }
            Some(out)
        }
        let mut rng = crate::text::test_rng(36);
        let alphabet = b"0123456789abcdefABCDEFgz-/:@`G ";
        for n in 0..100_000 {
            let mut id: Vec<u8> = (0..36).map(|_| b"0123456789abcdef"[rng(16)]).collect();
            for i in [8, 13, 18, 23] {
                id[i] = b'-';
            }
            for _ in 0..rng(3) {
                id[rng(36)] = alphabet[rng(alphabet.len() as u64)];
            }
            if n % 50 == 0 {
                id.truncate(rng(40));
            }
            let id = String::from_utf8(id).unwrap();
            assert_eq!(uuid_bytes(&id), by_filter(&id), "{id}");
            assert_eq!(Id::new(&id).to_string(), id);
        }
    }

    /// A link's fingerprint changes with its line and with any of what the branch choice
    /// reads of it, one field at a time, and not otherwise: the read tells by it that its
    /// parse of a line agrees with the parse the branch was chosen from.
    #[test]
    fn a_fingerprint_tells_links_apart_by_every_field() {
        let id = |s: &str| Some(Id::new(s));
        let base = Link {
            user: true,
            assistant: false,
            uuid: id("aaaaaaaa-0000-4000-8000-000000000001"),
            parent: id("aaaaaaaa-0000-4000-8000-000000000000"),
            sidechain: false,
            time: "2026-11-20T10:00:00Z".parse().ok(),
            message_id: Some("msg_1".into()),
            tool_uses: vec!["toolu_1".into()],
            tool_results: vec!["toolu_0".into()],
        };
        let changes: [fn(&mut Link); 12] = [
            |l| l.user = false,
            |l| l.assistant = true,
            |l| l.uuid = Some(Id::new("aaaaaaaa-0000-4000-8000-000000000002")),
            |l| l.uuid = None,
            |l| l.parent = Some(Id::new("not a uuid")),
            |l| l.sidechain = true,
            |l| l.time = "2026-11-20T10:00:00.001Z".parse().ok(),
            |l| l.message_id = None,
            |l| l.tool_uses.push("toolu_2".into()),
            |l| l.tool_uses.clear(),
            |l| l.tool_results = vec!["toolu_9".into()],
            |l| std::mem::swap(&mut l.tool_uses, &mut l.tool_results),
        ];
        let print = fingerprint(7, &base);
        assert_eq!(print, fingerprint(7, &base.clone()));
        let mut seen = HashSet::default();
        seen.insert(print);
        assert!(seen.insert(fingerprint(8, &base)), "another line");
        for (i, change) in changes.iter().enumerate() {
            let mut l = base.clone();
            change(&mut l);
            assert!(seen.insert(fingerprint(7, &l)), "change {i}");
        }
    }

    /// The walk as it was made over every link at once, ids compared as they are: the newest
    /// line by time then place, parents found by their latest line.
    fn walk_with_ids(raw: &[Link], subagent: bool) -> (Branch, Vec<usize>) {
        let by_uuid: HashMap<&Id, usize> = raw
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.uuid.as_ref().map(|u| (u, i)))
            .collect();
        let leaf = raw
            .iter()
            .enumerate()
            .filter(|(_, l)| (l.user || l.assistant) && (subagent || !l.sidechain))
            .max_by(|(ia, a), (ib, b)| a.time.cmp(&b.time).then(ia.cmp(ib)))
            .map(|(i, _)| i);
        let mut included = vec![false; raw.len()];
        let (mut on_path, mut cycle_at, mut missing_parent) = (Vec::new(), None, None);
        let mut cursor = leaf;
        while let Some(i) = cursor {
            if std::mem::replace(&mut included[i], true) {
                cycle_at = Some(i);
                break;
            }
            on_path.push(i);
            cursor = raw[i].parent.as_ref().and_then(|p| {
                let j = by_uuid.get(p).copied();
                if j.is_none() {
                    missing_parent = Some((i, p.to_string()));
                }
                j
            });
        }
        let branch = Branch {
            included,
            cycle_at,
            missing_parent,
        };
        (branch, on_path)
    }

    /// The branch as it was found with ids compared as strings (the code before `Links`): the
    /// reference for `Links`.
    fn with_strings(raw: &[Link], subagent: bool) -> Branch {
        let (mut branch, on_path) = walk_with_ids(raw, subagent);
        let included = &mut branch.included;
        let eligible = |l: &Link| subagent || !l.sidechain;
        let message_ids: HashSet<&str> = on_path
            .iter()
            .filter_map(|&i| raw[i].message_id.as_deref())
            .collect();
        for (i, l) in raw.iter().enumerate() {
            if l.assistant
                && eligible(l)
                && l.message_id
                    .as_deref()
                    .is_some_and(|id| message_ids.contains(id))
            {
                included[i] = true;
            }
        }
        let tool_ids: HashSet<&str> = (0..raw.len())
            .filter(|&i| included[i])
            .flat_map(|i| raw[i].tool_uses.iter().map(String::as_str))
            .collect();
        let answers: Vec<usize> = raw
            .iter()
            .enumerate()
            .filter(|&(i, l)| {
                l.user
                    && eligible(l)
                    && !included[i]
                    && l.tool_results
                        .iter()
                        .any(|id| tool_ids.contains(id.as_str()))
            })
            .map(|(i, _)| i)
            .collect();
        for i in answers {
            included[i] = true;
        }
        branch
    }

    /// The branch chosen with ids hashed is the branch chosen with ids compared as strings:
    /// random chains (forks, parents missing or later, cycles, sidechains, equal times) whose
    /// lines share API message ids and tool call ids from small pools.
    #[test]
    fn hashed_ids_choose_the_branch_strings_choose() {
        let mut next = crate::text::test_rng(0xb4a2_c0de_0000_0025);
        let mut forked = 0;
        for round in 0..3000 {
            let n = 1 + next(30);
            let uuid = |i: usize| format!("0198c1a2-7b3c-7def-8a12-{i:012x}");
            let raw: Vec<Link> = (0..n)
                .map(|i| {
                    let kind = next(4);
                    let pick = |next: &mut dyn FnMut(u64) -> usize, pool: u64, most: u64| {
                        (0..next(most + 1))
                            .map(|_| format!("toolu_{}", next(pool)))
                            .collect::<Vec<_>>()
                    };
                    Link {
                        user: kind == 0,
                        assistant: kind == 1,
                        uuid: match next(12) {
                            0 => None,
                            // Written twice: the latest line of a uuid is its parent's.
                            1 if i > 0 => Some(Id::new(&uuid(next(i as u64)))),
                            _ => Some(Id::new(&uuid(i))),
                        },
                        parent: match next(8) {
                            0 => None,
                            1 => Some(Id::new("not-in-this-file")),
                            // A later line now and then: a cycle, or a fork's other side.
                            2 => Some(Id::new(&uuid(next(n as u64)))),
                            _ if i > 0 => Some(Id::new(&uuid(i - 1 - next(i.min(3) as u64)))),
                            _ => None,
                        },
                        sidechain: next(6) == 0,
                        time: DateTime::from_timestamp(1_700_000_000 + next(20) as i64, 0)
                            .filter(|_| next(8) > 0),
                        message_id: (next(3) > 0).then(|| format!("msg_{}", next(5))),
                        tool_uses: pick(&mut next, 6, 2),
                        tool_results: pick(&mut next, 6, 2),
                    }
                })
                .collect();
            let subagent = round % 7 == 0;
            let mut links = Links::default();
            for l in raw.iter().cloned() {
                links.push(l);
            }
            assert_eq!(
                walk(&links, subagent).1,
                walk_with_ids(&raw, subagent)
                    .1
                    .into_iter()
                    .map(|i| i as u32)
                    .collect::<Vec<_>>(),
                "round {round}: the path of {raw:?}"
            );
            let want = with_strings(&raw, subagent);
            let got = active_branch(&links, subagent);
            assert_eq!(got.included, want.included, "round {round}: {raw:?}");
            assert_eq!(got.cycle_at, want.cycle_at, "round {round}");
            assert_eq!(got.missing_parent, want.missing_parent, "round {round}");
            forked += usize::from(want.included.iter().filter(|&&x| !x).count() > 0);
        }
        // Most chains leave lines off the branch: the choice is exercised, not trivial.
        assert!(forked > 1500, "{forked}");
    }

    /// An id writes back the text it was made from, and two ids are equal exactly when their
    /// texts are, whichever form each is kept in.
    #[test]
    fn ids_keep_their_text_and_compare_as_text() {
        let mut texts = vec![
            String::new(),
            "not-a-uuid".into(),
            "0198c1a2-7b3c-7def-8a12-3456789abcde".into(),
            "0198C1A2-7B3C-7DEF-8A12-3456789ABCDE".into(),
            "{0198c1a2-7b3c-7def-8a12-3456789abcde}".into(),
            "0198c1a27b3c7def8a123456789abcde".into(),
            "0198c1a2-7b3c-7def-8a12-3456789abcdg".into(),
            "0198c1a2_7b3c-7def-8a12-3456789abcde".into(),
            "0198c1a2-7b3c-7def-8a12-3456789abcd日".into(),
        ];
        let mut state = 0x853c_49e6_748f_ea9bu64;
        for _ in 0..300 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = uuid::Uuid::from_u64_pair(state, state.rotate_left(29)).to_string();
            // The same UUID, and one digit off.
            texts.push(u.clone());
            let mut off = u.into_bytes();
            let at = (state % 36) as usize;
            if off[at] != b'-' {
                off[at] = if off[at] == b'0' { b'1' } else { b'0' };
            }
            texts.push(String::from_utf8(off).unwrap());
        }
        let ids: Vec<Id> = texts.iter().map(|t| Id::new(t)).collect();
        assert!(ids.iter().filter(|i| matches!(i, Id::Uuid(_))).count() >= 300);
        for (a, ia) in texts.iter().zip(&ids) {
            assert_eq!(&ia.to_string(), a);
            for (b, ib) in texts.iter().zip(&ids) {
                assert_eq!(a == b, ia == ib, "{a} vs {b}");
            }
        }
    }
}
