//! The handoff brief (what the next agent reads first) and the extractive summary of the turns
//! a relay leaves out. Both are deterministic: no model is called.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use crate::model::{GitInfo, Role, Session, TodoStatus};
use crate::text::{one_line, truncate_chars};

/// The repository state at relay time, read from the working directory when it is a checkout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitState {
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub dirty: Option<bool>,
    /// Read from the repository now (true) or taken from what the session recorded (false).
    pub live: bool,
}

pub fn git_state(cwd: &str, recorded: Option<&GitInfo>) -> GitState {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(cwd)
            .args(args)
            // Never take the index lock: reading the state must not write to the repository.
            .env("GIT_OPTIONAL_LOCKS", "0")
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    if Path::new(cwd).is_dir()
        && let Some(commit) = git(&["rev-parse", "HEAD"])
    {
        return GitState {
            branch: git(&["rev-parse", "--abbrev-ref", "HEAD"]),
            commit: Some(commit),
            dirty: git(&["status", "--porcelain", "--untracked-files=normal"])
                .map(|s| !s.is_empty()),
            live: true,
        };
    }
    GitState {
        branch: recorded.and_then(|g| g.branch.clone()),
        commit: recorded.and_then(|g| g.commit.clone()),
        dirty: None,
        live: false,
    }
}

/// Sentences in which the user stated a rule or a preference.
pub fn constraints(s: &Session, max: usize) -> Vec<String> {
    const CUES: &[&str] = &["must", "never", "don't", "do not", "always", "prefer"];
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for m in s.messages.iter().filter(|m| m.role == Role::User) {
        for sentence in sentences(&m.content) {
            let lower = sentence.to_lowercase();
            let hit = CUES.iter().any(|cue| has_word(&lower, cue));
            if hit && seen.insert(lower.clone()) {
                out.push(truncate_chars(&one_line(sentence), 200));
            }
        }
    }
    // The latest statements matter most when there are many.
    if out.len() > max {
        out.drain(..out.len() - max);
    }
    out
}

fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

pub(super) fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', '!', '?', '\n'])
        .map(str::trim)
        .filter(|s| s.len() > 3)
}

pub struct BriefInput<'a> {
    pub session: &'a Session,
    pub source_display: &'a str,
    pub title: &'a str,
    pub cwd: &'a str,
    pub git: &'a GitState,
}

/// The brief: goal, progress, open work, files, repository state, the user's rules, provenance
/// and the instruction to go on. Every open todo and every touched file is listed.
pub fn brief(b: &BriefInput) -> String {
    let s = b.session;
    let mut out = String::new();
    out.push_str(&format!(
        "# Handoff brief\nThis session was relayed by session-relay from {} session {} ({}); it ran from {} to {}. Title: {}.\n",
        b.source_display,
        s.id,
        s.source_path.as_deref().unwrap_or("unknown file"),
        s.created.as_ref().map_or("?", |t| t.utc.as_deref().unwrap_or(&t.original)),
        s.updated.as_ref().map_or("?", |t| t.utc.as_deref().unwrap_or(&t.original)),
        b.title,
    ));
    if let Some(goal) = s.first_user_prompt() {
        out.push_str(&format!(
            "\nGoal (the first request): {}\n",
            truncate_chars(&one_line(goal), 300)
        ));
    }
    let done: Vec<&str> = s.completed_todos().map(|t| t.text.as_str()).collect();
    if !done.is_empty() {
        out.push_str("\nCompleted steps:\n");
        for t in done {
            out.push_str(&format!("- {}\n", one_line(t)));
        }
    }
    if let Some(current) = s.todos.iter().find(|t| t.status == TodoStatus::InProgress) {
        out.push_str(&format!("\nCurrent step: {}\n", one_line(&current.text)));
    }
    let open: Vec<&str> = s.open_todos().map(|t| t.text.as_str()).collect();
    if !open.is_empty() {
        out.push_str("\nOpen todos:\n");
        for t in open {
            out.push_str(&format!("- [ ] {}\n", one_line(t)));
        }
    }
    if !s.files_touched.is_empty() {
        out.push_str(&format!(
            "\nFiles touched: {}\n",
            s.files_touched.join(", ")
        ));
    }
    out.push_str(&format!("\nWorking directory: {}", b.cwd));
    let g = b.git;
    if g.live || g.branch.is_some() || g.commit.is_some() {
        let mut parts = Vec::new();
        if let Some(br) = &g.branch {
            parts.push(format!("branch {br}"));
        }
        if let Some(c) = &g.commit {
            parts.push(format!("commit {}", &c[..c.len().min(12)]));
        }
        match g.dirty {
            Some(true) => parts.push("uncommitted changes present".into()),
            Some(false) => parts.push("working tree clean".into()),
            None => {}
        }
        out.push_str(&format!(
            "; git: {} ({})",
            parts.join(", "),
            if g.live {
                "read from the repository at relay time"
            } else {
                "as the session recorded it"
            }
        ));
    }
    out.push('\n');
    let rules = constraints(s, 8);
    if !rules.is_empty() {
        out.push_str("\nThe user's constraints and preferences, quoted:\n");
        for r in rules {
            out.push_str(&format!("- \"{r}\"\n"));
        }
    }
    out.push_str(
        "\nContinue from where the session stopped; do not redo completed steps. The most recent \
         turns follow verbatim; earlier turns are summarized; older tool calls are shortened to one \
         line each. Tool calls that this agent has no equivalent for appear as text transcripts.",
    );
    out
}
