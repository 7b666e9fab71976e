//! The reader's fast path: a chain line of the shapes Claude Code writes, deserialised straight
//! into what the reader keeps of it (see `facts`), without a `Value` tree for the line. Any line
//! it does not fully know (a key twice, a value of an unexpected type, a block type it has no
//! case for, a tool output in parts, a field the general path treats specially) it leaves to
//! the general path by returning `None`. For every line it takes it gives what the general
//! path gives: a unit test compares the two on every line of every Claude fixture.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::Value;

use super::{
    AssistantBlock, Base, Body, Entry, Facts, Id, Ids, Later, Link, Op, Stage, assistant_block,
    classify_user_text, compaction, informational, injected_kind, tool_result, user_texts,
};
use crate::adapter::{KeptOutput, OutputCut};
use crate::model::{OutputState, Role, Timestamp};

type Str<'a> = Option<Cow<'a, str>>;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    uuid: Str<'a>,
    #[serde(rename = "parentUuid", default, borrow)]
    parent: Str<'a>,
    #[serde(rename = "logicalParentUuid", default, borrow)]
    logical_parent: Str<'a>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(default, borrow)]
    timestamp: Str<'a>,
    #[serde(rename = "sessionId", default, borrow)]
    session_id: Str<'a>,
    #[serde(default, borrow)]
    version: Str<'a>,
    #[serde(rename = "gitBranch", default, borrow)]
    branch: Str<'a>,
    #[serde(default, borrow)]
    cwd: Str<'a>,
    #[serde(default, borrow)]
    entrypoint: Str<'a>,
    #[serde(rename = "isMeta", default)]
    meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    compact_summary: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: Option<bool>,
    #[serde(default, borrow)]
    message: Option<Msg<'a>>,
    #[serde(default, borrow)]
    subtype: Str<'a>,
    /// A system line's text.
    #[serde(default, borrow)]
    content: Str<'a>,
    #[serde(
        rename = "compactMetadata",
        default,
        deserialize_with = "crate::jsonl::present"
    )]
    compact_metadata: Option<Value>,
}

#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(default, borrow)]
    model: Str<'a>,
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default, deserialize_with = "crate::jsonl::de_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::jsonl::de_count")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::jsonl::de_count")]
    cache_read_input_tokens: Option<u64>,
}

/// `message.content`: a text, or blocks.
enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Str<'a>,
    #[serde(default, borrow)]
    text: Str<'a>,
    #[serde(default, borrow)]
    thinking: Str<'a>,
    #[serde(default, borrow)]
    signature: Str<'a>,
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(default, borrow)]
    name: Str<'a>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default, borrow)]
    tool_use_id: Str<'a>,
    /// A tool result's output: only a text is taken here (outputs in parts go the general way).
    #[serde(default, borrow)]
    content: Str<'a>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    source: Option<Value>,
    /// Keys the general path's cut writes: a source that has them itself goes that way.
    #[serde(
        rename = "_original_chars",
        default,
        deserialize_with = "crate::jsonl::present"
    )]
    original_chars: Option<IgnoredAny>,
    #[serde(
        rename = "_reduced",
        default,
        deserialize_with = "crate::jsonl::present"
    )]
    reduced: Option<IgnoredAny>,
    #[serde(
        rename = "_masked",
        default,
        deserialize_with = "crate::jsonl::present"
    )]
    masked: Option<IgnoredAny>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a text or a list of blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// What the reader keeps of line `no` (see `super::facts`), or `None` for the general path.
/// `cut`, `full_max` and `lean` are `super::facts`'s.
pub(super) fn facts(
    no: usize,
    text: &str,
    cut: OutputCut,
    full_max: usize,
    lean: bool,
) -> Option<Facts> {
    let line: Line = serde_json::from_str(text).ok()?;
    let kind = line.kind.as_ref();
    if !matches!(kind, "user" | "assistant" | "system") {
        return None;
    }
    let message = line.message.as_ref();
    let blocks: &[Block] = match message.and_then(|m| m.content.as_ref()) {
        Some(Content::Blocks(b)) => b,
        _ => &[],
    };
    for b in blocks {
        let known = matches!(
            (kind, b.kind.as_deref()),
            (_, None)
                | ("user", Some("text" | "image" | "tool_result"))
                | (
                    "assistant",
                    Some(
                        "text" | "thinking" | "redacted_thinking" | "tool_use" | "server_tool_use"
                    )
                )
        );
        if !known || b.original_chars.is_some() || b.reduced.is_some() || b.masked.is_some() {
            return None;
        }
    }
    let of_kind = |block_kind: &'static str| {
        blocks
            .iter()
            .filter(move |b| b.kind.as_deref() == Some(block_kind))
    };
    let link = Link {
        user: kind == "user",
        assistant: kind == "assistant",
        uuid: line.uuid.as_deref().map(Id::new),
        parent: line
            .parent
            .as_deref()
            .or(line.logical_parent.as_deref())
            .map(Id::new),
        sidechain: line.sidechain == Some(true),
        time: line.timestamp.as_deref().and_then(crate::model::parse_time),
        message_id: message.and_then(|m| m.id.as_deref()).map(str::to_string),
        tool_uses: of_kind("tool_use")
            .filter_map(|b| b.id.as_deref().map(str::to_string))
            .collect(),
        tool_results: of_kind("tool_result")
            .filter_map(|b| b.tool_use_id.as_deref().map(str::to_string))
            .collect(),
    };
    let (ops, reduced) = stage(no, &line, cut, lean)?;
    let meta = line.meta == Some(true);
    let summary = line.compact_summary == Some(true);
    let starts_turn = kind == "user"
        && match message.and_then(|m| m.content.as_ref()) {
            Some(Content::Text(s)) => injected_kind(s, meta, summary).is_none(),
            Some(Content::Blocks(b)) => b.iter().any(|b| {
                b.kind.as_deref() == Some("text")
                    && injected_kind(b.text.as_deref().unwrap_or(""), meta, summary).is_none()
            }),
            None => false,
        };
    let chars = match message.and_then(|m| m.content.as_ref()) {
        Some(Content::Text(s)) => s.len(),
        Some(Content::Blocks(b)) => b.iter().map(|b| block_chars(b, full_max)).sum(),
        None => 0,
    };
    let entry = Entry {
        line: no,
        sidechain: link.sidechain,
        ops,
        starts_turn,
        reduced,
        chars,
    };
    let owned = |s: &Str| s.as_deref().map(str::to_string);
    Some(Facts {
        timestamp: owned(&line.timestamp),
        session_id: owned(&line.session_id),
        version: owned(&line.version),
        branch: owned(&line.branch),
        cwd: owned(&line.cwd),
        entrypoint: owned(&line.entrypoint),
        body: Body::Chain(entry, link),
    })
}

/// About a block's size as JSON (see `super::content_chars`): a tool output at most `max`.
fn block_chars(b: &Block, max: usize) -> usize {
    let len = |s: &Str| s.as_deref().map_or(0, |s| s.len() + 12);
    match (b.kind.as_deref(), b.content.as_deref()) {
        (Some("tool_result"), Some(c)) if c.len() > max => max,
        _ => {
            len(&b.kind)
                + len(&b.text)
                + len(&b.thinking)
                + len(&b.signature)
                + len(&b.id)
                + len(&b.name)
                + len(&b.tool_use_id)
                + len(&b.content)
                + b.input.as_ref().map_or(0, |i| super::text_bytes(i) + 8)
                + 2
        }
    }
}

/// `super::stage` for a typed line: its operations, and whether a tool output was reduced
/// (see `OutputCut::keep`).
fn stage(no: usize, line: &Line, cut: OutputCut, lean: bool) -> Option<(Vec<Op>, bool)> {
    let mut out = Stage(Vec::new());
    let base = Base {
        ts: line.timestamp.as_deref().map(Timestamp::parse),
        line: no,
        uuid: line.uuid.as_deref().filter(|_| !lean),
    };
    let mut reduced = false;
    match line.kind.as_ref() {
        "user" => reduced = user(&mut out, &base, line, cut),
        "assistant" => assistant(&mut out, &base, line, lean),
        "system" => system(&mut out, &base, line),
        _ => return None,
    }
    Some((out.into_ops(), reduced))
}

impl Line<'_> {
    /// `message.content` (the line's own `content` is a system line's text).
    fn message_content(&self) -> Option<&Content<'_>> {
        self.message.as_ref().and_then(|m| m.content.as_ref())
    }
}

/// `super::user_line` for a typed line, and whether a tool output was reduced.
fn user(out: &mut Stage, base: &Base, line: &Line, cut: OutputCut) -> bool {
    let meta = line.meta == Some(true);
    let summary = line.compact_summary == Some(true);
    let mut reduced = false;
    match line.message_content() {
        Some(Content::Text(s)) => {
            out.push(classify_user_text(
                base.message(Role::User, s.to_string()),
                meta,
                summary,
            ));
        }
        Some(Content::Blocks(items)) => {
            let mut texts: Vec<String> = Vec::new();
            let mut images: Vec<Value> = Vec::new();
            for b in items {
                match b.kind.as_deref() {
                    Some("text") => texts.push(b.text.as_deref().unwrap_or("").to_string()),
                    Some("image") => {
                        let source = b.source.clone().unwrap_or(Value::Null);
                        let media = source
                            .get("media_type")
                            .and_then(Value::as_str)
                            .unwrap_or("image");
                        texts.push(format!("[image: {media}]"));
                        images.push(source);
                    }
                    Some("tool_result") => {
                        let kept = kept_output(b, cut);
                        reduced |= kept.reduced.is_some();
                        out.push(tool_result(
                            base,
                            kept.content,
                            b.tool_use_id.as_deref(),
                            b.is_error == Some(true),
                            OutputState {
                                original_chars: kept.original_chars,
                                source_chars: kept.reduced,
                                reduced: kept.reduced.is_some(),
                                masked: kept.masked,
                                ..OutputState::default()
                            },
                        ));
                    }
                    _ => {}
                }
            }
            user_texts(out, base, texts, images, meta, summary);
        }
        None => out.then(Later::Warn(
            base.line,
            "user line without message content".into(),
        )),
    }
    reduced
}

/// What a tool result block keeps of its output: cut as the general path's cut (see
/// `OutputCut::keep`), bytes first: a whole read counts only outputs over `max` bytes.
fn kept_output(b: &Block, cut: OutputCut) -> KeptOutput {
    let output = b.content.as_deref().unwrap_or("");
    let kept = (cut.reduced || output.len() > cut.max)
        .then(|| cut.keep(output, output.chars().count()))
        .flatten();
    kept.unwrap_or_else(|| KeptOutput {
        content: output.to_string(),
        original_chars: None,
        reduced: None,
        masked: None,
    })
}

/// `super::assistant_line` for a typed line.
fn assistant(out: &mut Stage, base: &Base, line: &Line, lean: bool) {
    let message = line.message.as_ref();
    let ids = Ids {
        message_id: message.and_then(|m| m.id.as_deref()),
        model: message.and_then(|m| m.model.as_deref()),
        api_error: line.api_error == Some(true),
        lean,
    };
    if let Some(u) = message.and_then(|m| m.usage.as_ref()) {
        ids.usage(
            out,
            u.input_tokens.unwrap_or(0)
                + u.cache_creation_input_tokens.unwrap_or(0)
                + u.cache_read_input_tokens.unwrap_or(0),
        );
    }
    let single;
    let items: &[Block] = match line.message_content() {
        Some(Content::Blocks(b)) => b,
        Some(Content::Text(s)) => {
            single = [Block::text(s)];
            &single
        }
        None => {
            out.then(Later::Warn(
                base.line,
                "assistant line without message content".into(),
            ));
            &[]
        }
    };
    for block in items.iter().filter_map(Block::of_assistant) {
        assistant_block(out, base, &ids, block);
    }
}

/// `super::system_line` for a typed line.
fn system(out: &mut Stage, base: &Base, line: &Line) {
    match line.subtype.as_deref() {
        Some("compact_boundary") => out.push(compaction(
            base,
            line.content.as_deref(),
            line.compact_metadata.clone(),
        )),
        Some("informational") | Some("local_command") => {
            if let Some(c) = line.content.as_deref() {
                out.push(informational(base, c));
            }
        }
        other => out.skip(format!("system:{}", other.unwrap_or("?"))),
    }
}

impl<'a> Block<'a> {
    /// The block of an assistant line as `super::assistant_block` takes it; `None` for one
    /// without a type (`facts` leaves those of other types to the general path).
    fn of_assistant(&self) -> Option<AssistantBlock<'_>> {
        Some(match self.kind.as_deref() {
            Some("text") => AssistantBlock::Text(self.text.as_deref().unwrap_or("")),
            Some("thinking") => AssistantBlock::Thinking {
                text: self.thinking.as_deref().unwrap_or(""),
                signed: self.signature.as_deref().is_some_and(|s| !s.is_empty()),
            },
            Some("redacted_thinking") => AssistantBlock::Redacted,
            Some("tool_use" | "server_tool_use") => AssistantBlock::ToolUse {
                name: self.name.as_deref().unwrap_or("?"),
                input: self.input.clone().unwrap_or(Value::Null),
                id: self.id.as_deref(),
            },
            _ => return None,
        })
    }

    /// An assistant's plain-text content as the one text block it stands for.
    fn text(s: &Cow<'a, str>) -> Block<'a> {
        Block {
            kind: Some(Cow::Borrowed("text")),
            text: Some(s.clone()),
            thinking: None,
            signature: None,
            id: None,
            name: None,
            input: None,
            tool_use_id: None,
            content: None,
            is_error: None,
            source: None,
            original_chars: None,
            reduced: None,
            masked: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{facts as general, prune};
    use super::*;
    use crate::jsonl::variants::{fixture_lines, written_ways};

    /// What a line gives, in a form to compare: `None` when it is not a chain line.
    fn describe(f: &Facts) -> Option<Value> {
        let Body::Chain(e, link) = &f.body else {
            return None;
        };
        let ops: Vec<Value> = e
            .ops
            .iter()
            .map(|op| match op {
                Op::Push(m) => serde_json::to_value(m).unwrap(),
                Op::Then(Later::Warn(l, w)) => serde_json::json!({"warn": [l, w]}),
                Op::Then(Later::Touch(p)) => serde_json::json!({"touch": p}),
                Op::Then(Later::Todos(t)) => {
                    serde_json::json!({"todos": serde_json::to_value(t).unwrap()})
                }
                Op::Then(Later::Usage {
                    tokens,
                    message_id,
                    model,
                }) => serde_json::json!({"usage": [tokens, message_id, model]}),
                Op::Then(Later::Skipped(k)) => serde_json::json!({"skipped": k}),
            })
            .collect();
        Some(serde_json::json!({
            "envelope": [f.timestamp, f.session_id, f.version, f.branch, f.cwd, f.entrypoint],
            "line": e.line,
            "sidechain": e.sidechain,
            "starts_turn": e.starts_turn,
            "reduced": e.reduced,
            "ops": ops,
            "link": format!("{link:?}"),
        }))
    }

    fn lines() -> Vec<String> {
        let mut out = Vec::new();
        for (line, v) in fixture_lines(&["claude", "fuzz-regressions"]) {
            out.extend(written_ways(&line, &v));
            let Value::Object(mut o) = v else { continue };
            // Values the general path reads as there-but-null, and types it reads leniently.
            for (key, odd) in [
                ("compactMetadata", Value::Null),
                ("isSidechain", Value::from("true")),
                ("uuid", Value::from(7)),
                ("timestamp", Value::Null),
            ] {
                let mut changed = o.clone();
                changed.insert(key.into(), odd);
                out.push(Value::Object(changed).to_string());
            }
            for (key, set) in [
                ("isApiErrorMessage", Value::Bool(true)),
                ("isMeta", Value::Bool(true)),
                ("isCompactSummary", Value::Bool(true)),
                ("subtype", Value::from("compact_boundary")),
                ("subtype", Value::from("informational")),
            ] {
                let mut changed = o.clone();
                changed.insert(key.into(), set);
                if key == "subtype" {
                    changed.remove("content");
                }
                out.push(Value::Object(changed).to_string());
            }
            let mutations: [fn(&mut serde_json::Map<String, Value>); 7] = [
                |b| drop(b.insert("signature".into(), Value::from(""))),
                |b| drop(b.insert("is_error".into(), Value::Bool(true))),
                |b| drop(b.insert("content".into(), Value::Null)),
                |b| drop(b.insert("type".into(), Value::from("redacted_thinking"))),
                |b| drop(b.insert("type".into(), Value::from("server_tool_use"))),
                |b| drop(b.insert("type".into(), Value::from("image"))),
                |b| drop(b.remove("type")),
            ];
            for mutate in mutations {
                let mut changed = o.clone();
                if let Some(Value::Object(m)) = changed.get_mut("message")
                    && let Some(Value::Array(blocks)) = m.get_mut("content")
                {
                    blocks
                        .iter_mut()
                        .filter_map(Value::as_object_mut)
                        .for_each(mutate);
                    out.push(Value::Object(changed).to_string());
                }
            }
            // A message whose content is one text, and one whose usage counts are null.
            let mut changed = o.clone();
            if let Some(Value::Object(m)) = changed.get_mut("message") {
                m.insert("content".into(), Value::from("one text ✓"));
                m.insert(
                    "usage".into(),
                    serde_json::json!({"input_tokens": null, "cache_read_input_tokens": 5}),
                );
                out.push(Value::Object(changed).to_string());
            }
            if let Some(Value::Object(m)) = o.get_mut("message")
                && let Some(Value::Array(blocks)) = m.get_mut("content")
            {
                for b in blocks.iter_mut() {
                    if let Value::Object(b) = b {
                        b.insert("_original_chars".into(), Value::Null);
                    }
                }
                out.push(Value::Object(o.clone()).to_string());
            }
        }
        out
    }

    #[test]
    fn the_fast_path_gives_what_the_general_path_gives() {
        let lines = lines();
        assert!(lines.len() > 1000, "only {} lines", lines.len());
        let lines = crate::text::test_sample(lines.iter().enumerate(), 8);
        let mut taken = 0;
        for &(i, text) in &lines {
            let mask = crate::adapter::WordMask("e");
            for (max, reduced, mask) in [
                (40, true, None),
                (1000, false, None),
                (usize::MAX, false, None),
                (8000, true, None),
                (8000, true, Some(&mask as &dyn crate::adapter::OutputMask)),
            ] {
                let cut = OutputCut { max, reduced, mask };
                for lean in [false, true] {
                    let Some(fast) = facts(i + 1, text, cut, 8000, lean) else {
                        continue;
                    };
                    taken += 1;
                    let value = crate::jsonl::pruned::parse(text.as_bytes(), &prune(max))
                        .expect("a line the fast path read parses");
                    let general = general(i + 1, value, Some(cut), 8000, lean);
                    assert_eq!(
                        describe(&fast),
                        describe(&general),
                        "line {text} with max {max}, lean {lean}"
                    );
                }
            }
        }
        // Most lines of real sessions take the fast path; the rest were compared above by
        // being left to the general one.
        assert!(taken * 2 > lines.len(), "{taken} of {} lines", lines.len());
    }
}
