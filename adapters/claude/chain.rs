//! The `parentUuid` chain of a transcript and the branch Claude Code loads from it. The reader
//! and the listing scanner both describe each chain line as a `Link` and ask `active_branch`
//! which lines are on the branch, so that `list` counts exactly what `show` reads.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

/// Line types that are part of the `parentUuid` chain.
pub(super) const CHAIN_TYPES: &[&str] = &["user", "assistant", "attachment", "system", "progress"];

/// What the branch choice needs of one chain line.
#[derive(Debug, Default)]
pub(super) struct Link {
    /// `type` is `user`.
    pub user: bool,
    /// `type` is `assistant`.
    pub assistant: bool,
    pub uuid: Option<String>,
    /// `parentUuid`, else `logicalParentUuid` (across a compact boundary).
    pub parent: Option<String>,
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

/// The lines on the branch, and what went wrong walking it.
pub(super) struct Branch {
    /// Indexes into the links, in no particular order.
    pub included: HashSet<usize>,
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
pub(super) fn active_branch(links: &[Link], subagent: bool) -> Branch {
    let by_uuid: HashMap<&str, usize> = links
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.uuid.as_deref().map(|u| (u, i)))
        .collect();
    let eligible = |l: &Link| subagent || !l.sidechain;

    let leaf = links
        .iter()
        .enumerate()
        .filter(|(_, l)| (l.user || l.assistant) && eligible(l))
        .max_by(|(ia, a), (ib, b)| a.time.cmp(&b.time).then(ia.cmp(ib)))
        .map(|(i, _)| i);

    let mut on_path: HashSet<usize> = HashSet::new();
    let mut cycle_at = None;
    let mut missing_parent = None;
    let mut cursor = leaf;
    while let Some(i) = cursor {
        if !on_path.insert(i) {
            cycle_at = Some(i);
            break;
        }
        cursor = match links[i].parent.as_deref() {
            Some(p) => match by_uuid.get(p) {
                Some(&j) => Some(j),
                None => {
                    missing_parent = Some((i, p.to_string()));
                    None
                }
            },
            None => None,
        };
    }

    let message_ids: HashSet<&str> = on_path
        .iter()
        .filter_map(|&i| links[i].message_id.as_deref())
        .collect();
    let mut included = on_path;
    for (i, l) in links.iter().enumerate() {
        if l.assistant
            && eligible(l)
            && l.message_id
                .as_deref()
                .is_some_and(|id| message_ids.contains(id))
        {
            included.insert(i);
        }
    }
    let tool_ids: HashSet<&str> = included
        .iter()
        .flat_map(|&i| links[i].tool_uses.iter().map(String::as_str))
        .collect();
    let answers: Vec<usize> = links
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            l.user
                && eligible(l)
                && !included.contains(i)
                && l.tool_results
                    .iter()
                    .any(|id| tool_ids.contains(id.as_str()))
        })
        .map(|(i, _)| i)
        .collect();
    included.extend(answers);
    Branch {
        included,
        cycle_at,
        missing_parent,
    }
}
