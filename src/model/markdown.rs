//! The Markdown handoff document: what a person or another agent needs to pick the work up.

use std::fmt::Write;

use super::{Role, Session, TodoStatus};
use crate::text::{one_line, one_line_cut, truncate_chars};

/// One user request and what followed it, as indexes into `messages`.
pub struct Turn {
    pub user: Option<usize>,
    pub rest: Vec<usize>,
}

/// Splits a session at the user's own messages. Context before the first request forms a turn
/// without a user message.
pub fn turns(s: &Session) -> Vec<Turn> {
    let mut out: Vec<Turn> = Vec::new();
    for (i, m) in s.messages.iter().enumerate() {
        if m.role == Role::User {
            out.push(Turn {
                user: Some(i),
                rest: Vec::new(),
            });
        } else {
            match out.last_mut() {
                Some(t) => t.rest.push(i),
                None => out.push(Turn {
                    user: None,
                    rest: vec![i],
                }),
            }
        }
    }
    out
}

pub fn markdown(s: &Session, agent_display: &str) -> String {
    let mut md = String::new();
    let title = s
        .title
        .as_deref()
        .map(one_line)
        .unwrap_or_else(|| s.id.clone());
    let _ = writeln!(md, "# Handoff: {}\n", truncate_chars(&title, 120));
    let _ = writeln!(md, "- Source: {agent_display} session `{}`", s.id);
    if let Some(p) = &s.source_path {
        let _ = writeln!(md, "- Source file: `{p}`");
    }
    let _ = writeln!(
        md,
        "- Working directory: `{}`",
        s.cwd.as_deref().unwrap_or("(unknown)")
    );
    if let Some(g) = &s.git {
        if let Some(b) = &g.branch {
            let _ = writeln!(md, "- Git branch: `{b}`");
        }
        if let Some(c) = &g.commit {
            let _ = writeln!(md, "- Git commit: `{c}`");
        }
    }
    if let (Some(c), Some(u)) = (&s.created, &s.updated) {
        let _ = writeln!(
            md,
            "- Active: {} to {}",
            c.utc().unwrap_or(c.original()),
            u.utc().unwrap_or(u.original())
        );
    }

    let _ = writeln!(md, "\n## Goal\n");
    match s.first_user_prompt() {
        Some(goal) => {
            let _ = writeln!(md, "{}", quote(&truncate_chars(goal, 1200)));
        }
        None => {
            let _ = writeln!(md, "(no user request recorded)");
        }
    }

    let turns = turns(s);
    let _ = writeln!(md, "\n## Completed steps\n");
    let done: Vec<&str> = s.completed_todos().map(|t| t.text.as_str()).collect();
    if !done.is_empty() {
        for t in done {
            let _ = writeln!(md, "- [x] {}", one_line(t));
        }
    } else {
        // Without a todo list, each answered request is a completed step.
        let mut any = false;
        for t in &turns {
            let (Some(u), Some(a)) = (t.user, last_answer(s, t)) else {
                continue;
            };
            any = true;
            let _ = writeln!(
                md,
                "- {} → {}",
                one_line_cut(&s.messages[u].content, 100),
                one_line_cut(&s.messages[a].content, 150)
            );
        }
        if !any {
            let _ = writeln!(md, "(none recorded)");
        }
    }

    let _ = writeln!(md, "\n## Pending steps\n");
    let pending: Vec<_> = s.open_todos().collect();
    if pending.is_empty() {
        let _ = writeln!(md, "(no open todo or plan items)");
    } else {
        for t in pending {
            let mark = if t.status == TodoStatus::InProgress {
                "[~] (in progress)"
            } else {
                "[ ]"
            };
            let _ = writeln!(md, "- {mark} {}", one_line(&t.text));
        }
    }

    let _ = writeln!(md, "\n## Key dialogue\n");
    for t in &turns {
        let Some(u) = t.user else { continue };
        let _ = writeln!(
            md,
            "**User:** {}\n",
            one_line_cut(&s.messages[u].content, 500)
        );
        let tools: Vec<String> = t
            .rest
            .iter()
            .map(|&i| &s.messages[i])
            .filter(|m| m.role == Role::ToolCall)
            .map(|m| m.tool_name.clone().unwrap_or_default())
            .collect();
        if !tools.is_empty() {
            let _ = writeln!(md, "_Tools used: {}_\n", tools.join(", "));
        }
        if let Some(a) = last_answer(s, t) {
            let _ = writeln!(
                md,
                "**Assistant:** {}\n",
                one_line_cut(&s.messages[a].content, 600)
            );
        }
    }

    let _ = writeln!(md, "## Files touched\n");
    if s.files_touched.is_empty() {
        let _ = writeln!(md, "(none)");
    } else {
        for f in &s.files_touched {
            let _ = writeln!(md, "- `{f}`");
        }
    }
    md
}

fn last_answer(s: &Session, t: &Turn) -> Option<usize> {
    t.rest.iter().rev().copied().find(|&i| {
        s.messages[i].role == Role::Assistant && !s.messages[i].content.trim().is_empty()
    })
}

fn quote(text: &str) -> String {
    text.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
