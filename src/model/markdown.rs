//! The Markdown handoff document: what a person or another agent needs to pick the work up.

use std::io::Write;

use anyhow::Result;

use super::{Message, Role, Session, TodoStatus};
use crate::text::{one_line, one_line_cut, truncate_chars};

/// What the handoff document shows of one message, cut as it shows it: a user request, a tool
/// used, an answer. A long session's older turns are exported as these (see `write`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Mention {
    /// A user message, as a completed step and as the dialogue show it.
    Request {
        step: String,
        dialogue: String,
    },
    Tool(String),
    /// An assistant message that says something.
    Answer {
        step: String,
        dialogue: String,
    },
}

/// What the document shows of `m`, if anything.
pub fn mention(m: &Message) -> Option<Mention> {
    match m.role {
        Role::User => Some(Mention::Request {
            step: one_line_cut(&m.content, 100),
            dialogue: one_line_cut(&m.content, 500),
        }),
        Role::ToolCall => Some(Mention::Tool(m.tool_name.clone().unwrap_or_default())),
        Role::Assistant if !m.content.trim().is_empty() => Some(Mention::Answer {
            step: one_line_cut(&m.content, 150),
            dialogue: one_line_cut(&m.content, 600),
        }),
        _ => None,
    }
}

/// The mentions of a session's messages in order, given one by one to `f`, as often as the
/// document needs them.
pub trait Mentions {
    fn each(&mut self, f: &mut dyn FnMut(Mention) -> Result<()>) -> Result<()>;
}

/// The mentions of a session held whole.
pub struct Held<'a>(pub &'a [Message]);

impl Mentions for Held<'_> {
    fn each(&mut self, f: &mut dyn FnMut(Mention) -> Result<()>) -> Result<()> {
        self.0.iter().filter_map(mention).try_for_each(f)
    }
}

/// The mentions of a session whose reader handed its older turns to a fold
/// (`Session::folded`): `folded` holds theirs, one JSON line each, and they go where the
/// turns were.
pub struct Folded<'a, R> {
    pub session: &'a Session,
    pub folded: R,
}

impl<R: std::io::Read + std::io::Seek> Mentions for Folded<'_, R> {
    fn each(&mut self, f: &mut dyn FnMut(Mention) -> Result<()>) -> Result<()> {
        use std::io::BufRead;
        let messages = &self.session.messages;
        let at = self
            .session
            .folded
            .as_ref()
            .map_or(messages.len(), |f| f.at)
            .min(messages.len());
        Held(&messages[..at]).each(f)?;
        self.folded.rewind()?;
        for line in std::io::BufReader::with_capacity(1 << 16, &mut self.folded).lines() {
            f(serde_json::from_str(&line?)?)?;
        }
        Held(&messages[at..]).each(f)
    }
}

/// A user request and what the document shows of what followed it until the next.
struct TurnMention {
    request: (String, String),
    tools: Vec<String>,
    /// The last answer.
    answer: Option<(String, String)>,
}

/// Calls `f` with each turn that starts with a user request (what comes before the first
/// request is no turn of the document's).
fn each_turn(
    mentions: &mut dyn Mentions,
    f: &mut dyn FnMut(&TurnMention) -> Result<()>,
) -> Result<()> {
    let mut turn: Option<TurnMention> = None;
    mentions.each(&mut |m| {
        match m {
            Mention::Request { step, dialogue } => {
                if let Some(t) = turn.take() {
                    f(&t)?;
                }
                turn = Some(TurnMention {
                    request: (step, dialogue),
                    tools: Vec::new(),
                    answer: None,
                });
            }
            Mention::Tool(name) => {
                if let Some(t) = &mut turn {
                    t.tools.push(name);
                }
            }
            Mention::Answer { step, dialogue } => {
                if let Some(t) = &mut turn {
                    t.answer = Some((step, dialogue));
                }
            }
        }
        Ok(())
    })?;
    match turn {
        Some(t) => f(&t),
        None => Ok(()),
    }
}

/// Writes the document of `s`, whose messages `mentions` gives (all of them: a session read
/// in part holds only some), to `out`.
pub fn write(
    s: &Session,
    agent_display: &str,
    mentions: &mut dyn Mentions,
    out: &mut dyn Write,
) -> Result<()> {
    let out = &mut Inert(out);
    write_header(s, agent_display, out)?;
    writeln!(out, "\n## Goal\n")?;
    match s.first_user_prompt() {
        Some(goal) => writeln!(out, "{}", quote(&truncate_chars(goal, 1200)))?,
        None => writeln!(out, "(no user request recorded)")?,
    }
    write_steps(s, mentions, out)?;
    writeln!(out, "\n## Key dialogue\n")?;
    each_turn(mentions, &mut |t| {
        writeln!(out, "**User:** {}\n", t.request.1)?;
        if !t.tools.is_empty() {
            writeln!(out, "_Tools used: {}_\n", t.tools.join(", "))?;
        }
        if let Some((_, answer)) = &t.answer {
            writeln!(out, "**Assistant:** {answer}\n")?;
        }
        Ok(())
    })?;
    writeln!(out, "## Files touched\n")?;
    if s.files_touched.is_empty() {
        writeln!(out, "(none)")?;
    } else {
        for f in &s.files_touched {
            writeln!(out, "- `{f}`")?;
        }
    }
    Ok(())
}

/// The document's title and where the session comes from: agent, file, directory, git, when.
fn write_header(s: &Session, agent_display: &str, out: &mut dyn Write) -> Result<()> {
    let title = s
        .title
        .as_deref()
        .map(one_line)
        .unwrap_or_else(|| s.id.clone());
    writeln!(out, "# Handoff: {}\n", truncate_chars(&title, 120))?;
    writeln!(out, "- Source: {agent_display} session `{}`", s.id)?;
    if let Some(p) = &s.source_path {
        writeln!(out, "- Source file: `{p}`")?;
    }
    writeln!(
        out,
        "- Working directory: `{}`",
        s.cwd.as_deref().unwrap_or("(unknown)")
    )?;
    if let Some(g) = &s.git {
        if let Some(b) = &g.branch {
            writeln!(out, "- Git branch: `{b}`")?;
        }
        if let Some(c) = &g.commit {
            writeln!(out, "- Git commit: `{c}`")?;
        }
    }
    if let (Some(c), Some(u)) = (&s.created, &s.updated) {
        writeln!(
            out,
            "- Active: {} to {}",
            c.utc().unwrap_or(c.original()),
            u.utc().unwrap_or(u.original())
        )?;
    }
    Ok(())
}

/// The completed and pending steps: the todo list's, or without one, each answered request as
/// a completed step.
fn write_steps(s: &Session, mentions: &mut dyn Mentions, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "\n## Completed steps\n")?;
    let done: Vec<&str> = s.completed_todos().map(|t| t.text.as_str()).collect();
    if !done.is_empty() {
        for t in done {
            writeln!(out, "- [x] {}", one_line(t))?;
        }
    } else {
        let mut any = false;
        each_turn(mentions, &mut |t| {
            if let Some((answer, _)) = &t.answer {
                any = true;
                writeln!(out, "- {} → {answer}", t.request.0)?;
            }
            Ok(())
        })?;
        if !any {
            writeln!(out, "(none recorded)")?;
        }
    }
    writeln!(out, "\n## Pending steps\n")?;
    let pending: Vec<_> = s.open_todos().collect();
    if pending.is_empty() {
        writeln!(out, "(no open todo or plan items)")?;
    } else {
        for t in pending {
            let mark = if t.status == TodoStatus::InProgress {
                "[~] (in progress)"
            } else {
                "[ ]"
            };
            writeln!(out, "- {mark} {}", one_line(&t.text))?;
        }
    }
    Ok(())
}

/// Writes text with its terminal controls escaped (`text::safe_lines`): the document goes to a
/// terminal or a pager as often as to an editor, and every part of it (title, directory,
/// branch, dialogue, files) comes from a session. Formatted writes hand over whole strings.
struct Inert<'a>(&'a mut dyn Write);

impl Write for Inert<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0
            .write_all(crate::text::safe_lines(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn quote(text: &str) -> String {
    text.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
