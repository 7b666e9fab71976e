//! The cheap listing of Claude Code transcripts. Each line is deserialized into the few fields
//! the listing needs (`jsonl::fields`): tool outputs, tool inputs and thinking are skipped by the
//! parser, never built. The branch and the message count follow the reader's own rules
//! (`chain::active_branch`, `injected::injected_kind`), so that `list` says what `show` reads
//! whatever the layout of the JSON.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::de::MapAccess;
use walkdir::WalkDir;

use super::chain::{self, CHAIN_TYPES, Id, Link};
use crate::jsonl::fields::{self, Fields, Flag, Str, Val};
use crate::jsonl::scan_lines;
use crate::jsonl::skim::Skim;
use crate::model::{RelaySource, Summary, TimeSpan, parse_time};
use crate::text::one_line;

/// Session files under `projects/`: top-level transcripts and subagent transcripts.
pub fn session_files(home: &Path) -> Vec<PathBuf> {
    let root = home.join("projects");
    WalkDir::new(&root)
        .min_depth(2)
        .max_depth(4)
        .follow_links(false)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                // A relay's file before it takes its name, or one an interrupted relay left.
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(crate::fsutil::TEMP_PREFIX))
                && (p.parent().and_then(Path::parent).map(Path::to_path_buf) == Some(root.clone())
                    || super::subagent_parent(p).is_some())
        })
        .collect()
}

/// The top-level fields of a transcript line the listing needs.
#[derive(Default)]
struct Line<'a> {
    kind: Str<'a>,
    uuid: Str<'a>,
    parent: Str<'a>,
    logical_parent: Str<'a>,
    sidechain: Flag,
    timestamp: Str<'a>,
    cwd: Str<'a>,
    meta: Flag,
    compact_summary: Flag,
    custom_title: Str<'a>,
    ai_title: Str<'a>,
    title: Str<'a>,
    message: Val<'a, MessageFields<'a>>,
    /// The record session-relay writes into a relayed session.
    provenance: Option<serde_json::Value>,
}

impl<'de> Fields<'de> for Line<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "uuid" => self.uuid = map.next_value()?,
            "parentUuid" => self.parent = map.next_value()?,
            "logicalParentUuid" => self.logical_parent = map.next_value()?,
            "isSidechain" => self.sidechain = map.next_value()?,
            "timestamp" => self.timestamp = map.next_value()?,
            "cwd" => self.cwd = map.next_value()?,
            "isMeta" => self.meta = map.next_value()?,
            "isCompactSummary" => self.compact_summary = map.next_value()?,
            "customTitle" => self.custom_title = map.next_value()?,
            "aiTitle" => self.ai_title = map.next_value()?,
            "title" => self.title = map.next_value()?,
            "message" => self.message = map.next_value()?,
            "provenance" => self.provenance = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[derive(Default)]
struct MessageFields<'a> {
    id: Str<'a>,
    content: Val<'a, Block<'a>>,
}

impl<'de> Fields<'de> for MessageFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "id" => self.id = map.next_value()?,
            "content" => self.content = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A content block: its type, the ids that pair calls with results, a text block's text and
/// an image's media type. A tool result's `content` and a call's `input` are skipped.
#[derive(Default)]
struct Block<'a> {
    kind: Str<'a>,
    id: Str<'a>,
    tool_use_id: Str<'a>,
    text: Str<'a>,
    source: Val<'a, Source<'a>>,
}

impl<'de> Fields<'de> for Block<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "id" => self.id = map.next_value()?,
            "tool_use_id" => self.tool_use_id = map.next_value()?,
            "text" => self.text = map.next_value()?,
            "source" => self.source = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[derive(Default)]
struct Source<'a> {
    media_type: Str<'a>,
}

impl<'de> Fields<'de> for Source<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "media_type" => self.media_type = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// What the listing keeps of a chain line besides its link.
struct Counted {
    /// User and assistant messages the reader makes of the line.
    messages: usize,
    /// The person's words, when the line holds them (for the title).
    prompt: Option<String>,
}

pub fn summarize(path: &Path) -> Result<Summary> {
    let meta = std::fs::metadata(path)?;
    let stem = super::id_of(path);
    let parent_id = super::subagent_parent(path);
    let subagent = parent_id.is_some();
    let mut cwd = None;
    let mut times = TimeSpan::default();
    let mut custom_title = None;
    let mut ai_title = None;
    let mut relay_of = None;
    let mut links = chain::Links::default();
    let mut counted: Vec<Counted> = Vec::new();
    scan_lines(path, |_, text| {
        // The reader skips lines that are not JSON and lines without a type.
        let Some(line) = fields::parse::<Line>(text) else {
            return true;
        };
        let Some(kind) = line.kind.get() else {
            return true;
        };
        if let Some(ts) = line.timestamp.get() {
            times.see_str(ts);
        }
        if cwd.is_none() {
            cwd = line.cwd.owned();
        }
        match kind {
            k if CHAIN_TYPES.contains(&k) => {
                links.push(link(kind, &line));
                counted.push(count(kind, &line));
            }
            "custom-title" => custom_title = line.custom_title.owned(),
            "ai-title" => ai_title = line.ai_title.owned().or_else(|| line.title.owned()),
            "session-relay" => {
                relay_of = line
                    .provenance
                    .as_ref()
                    .and_then(RelaySource::from_provenance);
            }
            _ => {}
        }
        true
    })?;
    let included = chain::active_branch(&links, subagent).included;
    let on_branch: Vec<usize> = (0..included.len()).filter(|&i| included[i]).collect();
    let messages = on_branch.iter().map(|&i| counted[i].messages).sum();
    let first_prompt = on_branch.iter().find_map(|&i| counted[i].prompt.as_deref());
    Ok(Summary {
        id: stem,
        agent: super::NAME.to_string(),
        path: path.to_path_buf(),
        cwd,
        title: custom_title.or(ai_title).or(first_prompt.map(one_line)),
        created: times.first(),
        updated: times.last(),
        messages,
        size: meta.len(),
        archived: false,
        parent_id,
        subagents: 0,
        relay_of,
    })
}

/// The branch of a transcript chosen ahead, from the listing's parse of its chain lines, before
/// the reader parses anything else: a relay's read folds older turns as it goes, and must know
/// which lines are on the branch when it meets them (see `read::Ahead`).
pub(super) struct Ahead {
    /// By chain line, in file order: its link's `chain::fingerprint` with the lowest bit set
    /// when the line is on the branch (8 bytes a line: a 1 GB transcript has 400,000 of them).
    lines: Vec<u64>,
    /// The line where the walk met a `parentUuid` cycle.
    pub cycle_line: Option<usize>,
    /// The line whose parent is not in the file, and that parent.
    pub missing_parent: Option<(usize, String)>,
}

/// The progress step of `branch_ahead`, before the file's name: the relay's read follows it
/// as `reading`, and two steps of the same name looked like one started over.
pub(super) const BRANCH_STEP: &str = "finding the branch in";

impl Ahead {
    /// Whether the `i`th chain line is on the branch, if the link a read finds there has the
    /// `print` this one had (`chain::fingerprint`, but for its lowest bit); `None` if not, or
    /// if there is no such line.
    pub fn on_branch(&self, i: usize, print: u64) -> Option<bool> {
        let line = *self.lines.get(i)?;
        (line >> 1 == print >> 1).then_some(line & 1 == 1)
    }

    /// How many chain lines there were.
    pub fn chain_lines(&self) -> usize {
        self.lines.len()
    }
}

pub(super) fn branch_ahead(path: &Path, subagent: bool) -> Result<Ahead> {
    let mut links = chain::Links::default();
    // Each chain line's fingerprint, and its line number.
    let (mut prints, mut numbers): (Vec<u64>, Vec<u32>) = (Vec::new(), Vec::new());
    // Skimmed on every core, from the same text of each line as the reader parses.
    crate::jsonl::for_each_line(
        path,
        crate::jsonl::Pass {
            step: Some(BRANCH_STEP),
            ..Default::default()
        },
        |no, text| Some(skimmed_link(text).map(|l| (chain::fingerprint(no, &l), l))),
        |_, _| None,
        |no, line| {
            if let crate::jsonl::Line::Json(Some((print, l))) = line {
                chain::grow_by_a_quarter(&mut prints, 1);
                chain::grow_by_a_quarter(&mut numbers, 1);
                prints.push(print);
                // Only a warning names a line by it: past the 4,294,967,295th (a file of
                // billions of blank lines), as that one.
                numbers.push(u32::try_from(no).unwrap_or(u32::MAX));
                links.push(l);
            }
            Ok(())
        },
    )?;
    let branch = chain::active_branch(&links, subagent);
    drop(links);
    let line = |i: usize| numbers[i] as usize;
    let (cycle_line, missing_parent) = (
        branch.cycle_at.map(line),
        branch.missing_parent.map(|(i, p)| (line(i), p)),
    );
    for (print, on) in prints.iter_mut().zip(branch.included) {
        *print = *print & !1 | u64::from(on);
    }
    Ok(Ahead {
        lines: prints,
        cycle_line,
        missing_parent,
    })
}

/// `link` of a chain line, found by a skim (`jsonl::skim`): what the branch needs is a few
/// short strings, and a parse, even one that builds nothing else, checks every byte of every
/// tool output. `None` for any other line. Where a key is written twice the last one counts,
/// as in a parse.
fn skimmed_link(text: &str) -> Option<Link> {
    let mut s = Skim::new(text);
    let (mut kind, mut uuid, mut parent, mut logical_parent, mut time) =
        (None, None, None, None, None);
    let mut sidechain = false;
    let mut message_id = None;
    let (mut tool_uses, mut tool_results) = (Vec::new(), Vec::new());
    s.object(|key, s| {
        match key {
            "type" => kind = s.str_value()?,
            "uuid" => uuid = s.str_value()?,
            "parentUuid" => parent = s.str_value()?,
            "logicalParentUuid" => logical_parent = s.str_value()?,
            "isSidechain" => sidechain = s.is_true()?,
            "timestamp" => time = s.str_value()?,
            "message" => {
                message_id = None;
                tool_uses.clear();
                tool_results.clear();
                s.object(|key, s| {
                    match key {
                        "id" => message_id = s.str_value()?,
                        "content" => {
                            tool_uses.clear();
                            tool_results.clear();
                            s.array(|s| {
                                let (mut kind, mut id, mut tool_use_id) = (None, None, None);
                                s.object(|key, s| {
                                    match key {
                                        "type" => kind = s.str_value()?,
                                        "id" => id = s.str_value()?,
                                        "tool_use_id" => tool_use_id = s.str_value()?,
                                        _ => s.skip()?,
                                    }
                                    Some(())
                                })?;
                                match kind.as_deref() {
                                    Some("tool_use") => tool_uses.extend(id.map(String::from)),
                                    Some("tool_result") => {
                                        tool_results.extend(tool_use_id.map(String::from))
                                    }
                                    _ => {}
                                }
                                Some(())
                            })?;
                        }
                        _ => s.skip()?,
                    }
                    Some(())
                })?;
            }
            _ => s.skip()?,
        }
        Some(())
    })?;
    let kind = kind.filter(|k| CHAIN_TYPES.contains(&&**k) && s.at_end())?;
    Some(Link {
        user: kind == "user",
        assistant: kind == "assistant",
        uuid: uuid.as_deref().map(Id::new),
        parent: parent.or(logical_parent).as_deref().map(Id::new),
        sidechain,
        time: time.as_deref().and_then(parse_time),
        message_id: message_id.map(String::from),
        tool_uses,
        tool_results,
    })
}

fn blocks<'l, 'a>(line: &'l Line<'a>) -> impl Iterator<Item = &'l Block<'a>> {
    line.message
        .obj()
        .into_iter()
        .flat_map(|m| m.content.objects())
}

/// What the branch choice needs of a chain line (as `read::link` has it).
fn link(kind: &str, line: &Line) -> Link {
    Link {
        user: kind == "user",
        assistant: kind == "assistant",
        uuid: line.uuid.get().map(Id::new),
        parent: line.parent.get().or(line.logical_parent.get()).map(Id::new),
        sidechain: line.sidechain.is_true(),
        time: line.timestamp.get().and_then(parse_time),
        message_id: line.message.obj().and_then(|m| m.id.owned()),
        tool_uses: blocks(line)
            .filter(|b| b.kind.is("tool_use"))
            .filter_map(|b| b.id.owned())
            .collect(),
        tool_results: blocks(line)
            .filter(|b| b.kind.is("tool_result"))
            .filter_map(|b| b.tool_use_id.owned())
            .collect(),
    }
}

/// The user and assistant messages the reader makes of a chain line (see `read::convert`): a
/// user line is one message when it holds the person's words (text or images, not injected
/// context); an assistant line is one per text block.
fn count(kind: &str, line: &Line) -> Counted {
    let none = Counted {
        messages: 0,
        prompt: None,
    };
    let Some(content) = line.message.obj().map(|m| &m.content) else {
        return none;
    };
    match kind {
        "assistant" => Counted {
            messages: match content {
                Val::Str(_) => 1,
                _ => content.objects().filter(|b| b.kind.is("text")).count(),
            },
            prompt: None,
        },
        "user" => {
            let text: Cow<str> = match content {
                Val::Str(s) => Cow::Borrowed(s),
                Val::List(_) => {
                    let texts: Vec<Cow<str>> = content
                        .objects()
                        .filter_map(|b| match b.kind.get() {
                            Some("text") => Some(Cow::Borrowed(b.text.get().unwrap_or_default())),
                            Some("image") => {
                                let media = b.source.obj().and_then(|s| s.media_type.get());
                                Some(Cow::Owned(format!("[image: {}]", media.unwrap_or("image"))))
                            }
                            _ => None,
                        })
                        .collect();
                    if texts.is_empty() {
                        return none;
                    }
                    Cow::Owned(texts.join("\n"))
                }
                _ => return none,
            };
            let injected = super::injected::injected_kind(
                &text,
                line.meta.is_true(),
                line.compact_summary.is_true(),
            );
            match injected {
                Some(_) => none,
                None => Counted {
                    messages: 1,
                    prompt: Some(match super::injected::unescaped(&text) {
                        Some(rest) => rest.to_string(),
                        None => text.into_owned(),
                    })
                    .filter(|t| !t.trim().is_empty()),
                },
            }
        }
        _ => none,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::progress::Steps;

    /// The skim that chooses a transcript's branch before a relay reads it names its own
    /// progress step: the read after it is `reading`, and two steps of one name looked like a
    /// read started over.
    #[test]
    fn the_branch_skim_names_its_own_step() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
                "\n",
                r#"{"type":"assistant","uuid":"b","parentUuid":"a","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}"#,
                "\n"
            ),
        )
        .unwrap();
        let steps = Arc::new(Steps::default());
        let handle: crate::progress::Handle = Some(steps.clone());
        let ahead = crate::progress::scope(&handle, || super::branch_ahead(&path, false)).unwrap();
        assert_eq!(ahead.chain_lines(), 2);
        assert!(ahead.lines.iter().all(|l| l & 1 == 1));
        assert_eq!(
            *steps.0.lock().unwrap(),
            [format!("{} s.jsonl", super::BRANCH_STEP)]
        );
        // A read names its step as before.
        let read = crate::progress::scope(&handle, || {
            crate::jsonl::for_each_line(
                &path,
                crate::jsonl::Pass::default(),
                |_, _| Some(()),
                |_, _| (),
                |_, _| Ok(()),
            )
        });
        assert_eq!(read.unwrap().lines, 2);
        assert_eq!(steps.0.lock().unwrap()[1], "reading s.jsonl");
    }
}
