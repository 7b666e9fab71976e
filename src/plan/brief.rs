//! The handoff brief: what the next agent reads first. Besides the file-state snapshot, which
//! the budget sizes (`snapshot`), it stays short at any session size (about
//! `BRIEF_MAX_TOKENS`): the goal, the current step and every open todo in full, then the
//! completed steps, the user's rules and the decisions taken, each deduplicated and capped.
//! Deterministic: no model is called.

use foldhash::{HashSet, HashSetExt};
use std::collections::VecDeque;
use std::path::Path;

use serde::Serialize;

use super::cues;
use crate::model::{GitInfo, IdSet, Message, Role, Session, TodoStatus};
use crate::text::{one_line, one_line_cut, truncate_chars};
use crate::tokens;

/// What the brief aims to stay under, in estimated tokens (open todos are never cut, so a
/// session with a very long todo list can exceed it).
pub const BRIEF_MAX_TOKENS: usize = 1200;

/// The repository state at relay time, read from the working directory when it is a checkout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct GitState {
    pub branch: Option<String>,
    pub commit: Option<String>,
    /// HEAD's abbreviated hash and subject, as `git log` gives them.
    pub short: Option<String>,
    pub subject: Option<String>,
    pub dirty: Option<bool>,
    /// The files with uncommitted changes, relative to the working directory when under it,
    /// each with its `git status` code (`M src/a.rs`, `?? notes.md`).
    pub dirty_files: Vec<String>,
    /// Read from the repository now (true) or taken from what the session recorded (false).
    pub live: bool,
}

/// The state `git status` reports of `cwd` now, when it is a checkout with a commit, with
/// HEAD's subject.
pub fn live_git_state(cwd: &str) -> Option<GitState> {
    if !Path::new(cwd).is_dir() || !may_be_in_a_checkout(Path::new(cwd)) {
        return None;
    }
    // Never the index lock (`git::command`): reading the state must not write to the
    // repository.
    let git = |args: &[&str]| {
        let mut c = crate::git::command(Path::new(cwd));
        c.args(args).stderr(std::process::Stdio::null());
        c
    };
    // HEAD's subject beside the status: the two take no longer than one.
    let log = git(&["log", "-1", "--no-show-signature", "--format=%h%x00%s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok();
    // One `git status` gives the commit, the branch and the files not committed.
    let out = git(&[
        "status",
        "--porcelain=v2",
        "--branch",
        "--untracked-files=normal",
    ])
    .output()
    .ok()?;
    let log = log.and_then(|l| l.wait_with_output().ok());
    if !out.status.success() {
        return None;
    }
    let mut state = parse_status(&String::from_utf8_lossy(&out.stdout))?;
    if let Some(log) = log.filter(|l| l.status.success()) {
        let text = String::from_utf8_lossy(&log.stdout);
        if let Some((short, subject)) = text.trim_end_matches('\n').split_once('\0') {
            state.short = Some(short.to_string());
            state.subject = Some(subject.to_string());
        }
    }
    if let Some(top) = checkout_top(Path::new(cwd)) {
        let real = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.into());
        for f in state.dirty_files.iter_mut() {
            if let Some((code, path)) = f.split_once(' ') {
                let under = top.join(path);
                let shown = under.strip_prefix(&real).map_or(under.as_path(), |p| p);
                // An untracked folder keeps its `/`.
                let slash = if path.ends_with('/') { "/" } else { "" };
                *f = format!("{code} {}{slash}", shown.display());
            }
        }
    }
    Some(state)
}

/// The folder of the checkout `dir` is in (where git finds its `.git`), when `GIT_DIR` does
/// not point elsewhere.
fn checkout_top(dir: &Path) -> Option<std::path::PathBuf> {
    if std::env::var_os("GIT_DIR").is_some() {
        return None;
    }
    let real = std::fs::canonicalize(dir).ok()?;
    real.ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// Whether git could find a repository for `dir`: a `.git` (folder, or file in a worktree or
/// submodule) in it or above it, where git looks (from the real path, as git does), or
/// `GIT_DIR` set. Starting git where it can only fail cost a small relay a few milliseconds.
fn may_be_in_a_checkout(dir: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() {
        return true;
    }
    let Ok(real) = std::fs::canonicalize(dir) else {
        return true;
    };
    real.ancestors()
        .any(|d| d.join(".git").symlink_metadata().is_ok())
}

/// What the session recorded, for a directory that is no checkout (or no longer exists here).
pub fn recorded_git_state(recorded: Option<&GitInfo>) -> GitState {
    GitState {
        branch: recorded.and_then(|g| g.branch.clone()),
        commit: recorded.and_then(|g| g.commit.clone()),
        ..Default::default()
    }
}

/// The state `git status --porcelain=v2 --branch` reports; `None` before the first commit
/// (no commit to name). A detached HEAD is named `HEAD`, as `git rev-parse --abbrev-ref HEAD`
/// names it.
fn parse_status(status: &str) -> Option<GitState> {
    let mut commit = None;
    let mut branch = None;
    let mut dirty_files = Vec::new();
    for line in status.lines() {
        if let Some(oid) = line.strip_prefix("# branch.oid ") {
            commit = (oid != "(initial)").then(|| oid.to_string());
        } else if let Some(head) = line.strip_prefix("# branch.head ") {
            branch = Some(if head == "(detached)" { "HEAD" } else { head }.to_string());
        } else if !line.starts_with('#') && !line.is_empty() {
            dirty_files.push(status_entry(line));
        }
    }
    Some(GitState {
        branch,
        commit: Some(commit?),
        dirty: Some(!dirty_files.is_empty()),
        dirty_files,
        live: true,
        ..Default::default()
    })
}

/// A changed entry of `git status --porcelain=v2` as its code and path (`M src/a.rs`, `R b.rs`
/// for a rename, `?? new.txt`); the path relative to the checkout's top.
fn status_entry(line: &str) -> String {
    // Ordinary, renamed and unmerged entries have 8, 9 and 10 fields before the path.
    let fields = match line.as_bytes()[0] {
        b'1' => 9,
        b'2' => 10,
        b'u' => 11,
        _ => 2,
    };
    let parts: Vec<&str> = line.splitn(fields, ' ').collect();
    let code = match parts.first() {
        Some(&"?") => "??".to_string(),
        Some(&"!") => "!!".to_string(),
        _ => parts.get(1).unwrap_or(&"").replace('.', ""),
    };
    let path = parts.last().unwrap_or(&"");
    // A rename's path is followed by a tab and the path it had.
    let path = path.split('\t').next().unwrap_or(path);
    format!("{code} {path}")
}

/// How much of each capped section the brief shows; halved until the brief fits.
#[derive(Debug, Clone, Copy)]
struct Caps {
    completed: usize,
    constraints: usize,
    decisions: usize,
    text: usize,
}

impl Caps {
    const FULL: Caps = Caps {
        completed: 8,
        constraints: 8,
        decisions: 5,
        text: 300,
    };

    fn smaller(self) -> Option<Caps> {
        if self.completed <= 1 && self.constraints <= 2 && self.decisions <= 1 {
            return None;
        }
        Some(Caps {
            completed: (self.completed / 2).max(1),
            constraints: (self.constraints / 2).max(2),
            decisions: (self.decisions / 2).max(1),
            text: (self.text * 2 / 3).max(120),
        })
    }
}

/// The rules the user stated, deduplicated, the latest last; at most `max`, keeping the
/// strongest ("never", "must") over the weaker ("prefer") when there are more.
pub fn constraints(s: &Session, max: usize) -> Vec<String> {
    keep_strongest_latest(constraints_found(s, None, max), max)
}

/// The rules a message states: (text, strength).
pub fn rules_in(m: &Message) -> Vec<(String, usize)> {
    cues::constraints_in(m)
        .map(|sentence| {
            let strength = cues::constraint_strength(sentence).unwrap_or(usize::MAX);
            (one_line(sentence), strength)
        })
        .collect()
}

/// The decisions a message announces.
pub fn decisions_of(m: &Message) -> Vec<String> {
    cues::decisions_in(m).map(one_line).collect()
}

/// The rules the user stated, deduplicated, as (order, strength, text): of all of them, the
/// `most` that `keep_strongest_latest` picks, which hold what it picks for any smaller number.
/// The folded messages' came where they were taken out (`Session::folded`): those `BriefFound`
/// kept of them (the strongest, which hold those picked of all), then the later messages'
/// that none of the folded ones said. A long session states thousands; keeping them all (and a
/// lower-case copy of each) made the brief the relay's peak of memory, growing with the
/// session.
fn constraints_found(
    s: &Session,
    folded: Option<&BriefFound>,
    most: usize,
) -> Vec<(usize, usize, String)> {
    debug_assert!(folded.is_none() || most <= Caps::FULL.constraints);
    let mut seen = IdSet::default();
    let mut found = Strongest::new(most);
    let per_message = in_each_message(s, rules_in);
    let (before, after) = around_fold(s, per_message);
    for (text, strength) in before.into_iter().flatten() {
        if seen.insert(&text.to_lowercase()) {
            found.push(strength, text);
        }
    }
    if let Some(f) = folded {
        // Not said before them (`BriefFound::head`), each said once.
        for (_, strength, text) in f.rules.kept() {
            found.push(strength, text);
        }
    }
    for (text, strength) in after.into_iter().flatten() {
        let lower = text.to_lowercase();
        if !folded.is_some_and(|f| f.seen_rules.contains(&lower)) && seen.insert(&lower) {
            found.push(strength, text);
        }
    }
    found.finish()
}

/// The `most` strongest of a stream of rules, ties going to the latest, held in bounded memory:
/// (order, strength, text), the order counting every rule pushed.
#[derive(Debug)]
struct Strongest {
    most: usize,
    order: usize,
    found: Vec<(usize, usize, String)>,
}

impl Strongest {
    fn new(most: usize) -> Strongest {
        Strongest {
            most,
            order: 0,
            found: Vec::new(),
        }
    }

    fn push(&mut self, strength: usize, text: String) {
        self.found.push((self.order, strength, text));
        self.order += 1;
        // Cut back now and then, not at every rule: a sort per few dozen rules.
        if self.found.len() >= self.most.saturating_mul(2).max(64) {
            strongest_latest(&mut self.found, self.most);
        }
    }

    fn finish(mut self) -> Vec<(usize, usize, String)> {
        strongest_latest(&mut self.found, self.most);
        self.found
    }

    /// What `finish` would give, leaving this one as it is.
    fn kept(&self) -> Vec<(usize, usize, String)> {
        let mut found = self.found.clone();
        strongest_latest(&mut found, self.most);
        found
    }
}

/// Keeps the `max` strongest of `found`, ties going to the latest, in order.
fn strongest_latest(found: &mut Vec<(usize, usize, String)>, max: usize) {
    if found.len() > max {
        found.sort_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
        found.truncate(max);
        found.sort_by_key(|f| f.0);
    }
}

/// The decisions the assistant announced, deduplicated, the latest `max`.
pub fn decisions(s: &Session, max: usize) -> Vec<String> {
    latest(decisions_found(s, None, max), max)
}

/// The latest `most` decisions the assistant announced, deduplicated, in order: of the folded
/// messages' those `BriefFound` kept (the latest), then the later messages' that none of the
/// folded ones announced.
fn decisions_found(s: &Session, folded: Option<&BriefFound>, most: usize) -> Vec<String> {
    debug_assert!(folded.is_none() || most <= Caps::FULL.decisions);
    let mut seen = IdSet::default();
    let per_message = in_each_message(s, decisions_of);
    let (before, after) = around_fold(s, per_message);
    let mut found = VecDeque::new();
    for text in before.into_iter().flatten() {
        if seen.insert(&text.to_lowercase()) {
            push_latest(&mut found, most, text);
        }
    }
    for text in folded.iter().flat_map(|f| f.decisions.iter()) {
        push_latest(&mut found, most, text.clone());
    }
    for text in after.into_iter().flatten() {
        let lower = text.to_lowercase();
        if !folded.is_some_and(|f| f.seen_decisions.contains(&lower)) && seen.insert(&lower) {
            push_latest(&mut found, most, text);
        }
    }
    found.into()
}

/// Adds `text` to the latest `most`.
fn push_latest(latest: &mut VecDeque<String>, most: usize, text: String) {
    if latest.len() == most {
        latest.pop_front();
    }
    latest.push_back(text);
}

/// What was found in each kept message: in those before the folded ones (`Session::folded`),
/// and in those after.
fn around_fold<T>(s: &Session, mut per_message: Vec<Vec<T>>) -> (Vec<Vec<T>>, Vec<Vec<T>>) {
    let at = s.folded.as_ref().map_or(per_message.len(), |f| f.at);
    let after = per_message.split_off(at.min(per_message.len()));
    (per_message, after)
}

/// What the brief finds in messages folded while they were read (see `fold`): the user
/// messages, and of the rules and decisions, each the first time it was said, those the brief
/// can show whatever the rest of the session says: the strongest rules and the latest
/// decisions (`Caps::FULL`). Of the others only a keyed hash of the lowercase text is kept, so
/// that a later message that repeats one does not state it anew. Rules and decisions that the
/// kept messages before the folded ones (`head`) stated are not new either. A long session
/// states thousands, and their texts were a part of a long relay's memory that grew with the
/// session.
#[derive(Debug)]
pub struct BriefFound {
    pub user_messages: usize,
    rules: Strongest,
    decisions: VecDeque<String>,
    /// What was found already, by their lowercase text (see `IdSet`).
    seen_rules: IdSet,
    seen_decisions: IdSet,
}

impl Default for BriefFound {
    fn default() -> BriefFound {
        BriefFound {
            user_messages: 0,
            rules: Strongest::new(Caps::FULL.constraints),
            decisions: Default::default(),
            seen_rules: IdSet::default(),
            seen_decisions: IdSet::default(),
        }
    }
}

impl BriefFound {
    /// Takes note of the messages kept before the first folded one, as the brief will read
    /// them (masked): what they state, a folded message does not state first.
    pub fn head(&mut self, messages: &[Message]) {
        for m in messages {
            for (text, _) in rules_in(m) {
                self.seen_rules.insert(&text.to_lowercase());
            }
            for text in decisions_of(m) {
                self.seen_decisions.insert(&text.to_lowercase());
            }
        }
    }

    /// Takes note of the next folded message.
    pub fn add(&mut self, m: &Message) {
        if m.role == Role::User {
            self.user_messages += 1;
        }
        for (text, strength) in rules_in(m) {
            if self.seen_rules.insert(&text.to_lowercase()) {
                self.rules.push(strength, text);
            }
        }
        for text in decisions_of(m) {
            if self.seen_decisions.insert(&text.to_lowercase()) {
                push_latest(&mut self.decisions, Caps::FULL.decisions, text);
            }
        }
    }
}

/// What `find` finds in each message, in order, found on every core: the brief's scans read
/// every message of the session, and a long one has a hundred thousand.
fn in_each_message<T: Send>(
    s: &Session,
    find: impl Fn(&crate::model::Message) -> Vec<T> + Sync,
) -> Vec<Vec<T>> {
    use rayon::prelude::*;
    s.messages.par_iter().map(&find).collect()
}

/// The last `max` of `found`.
fn latest(mut found: Vec<String>, max: usize) -> Vec<String> {
    let skip = found.len().saturating_sub(max);
    found.split_off(skip)
}

/// From (order, strength, text): the `max` strongest, ties going to the latest, in order.
fn keep_strongest_latest(mut found: Vec<(usize, usize, String)>, max: usize) -> Vec<String> {
    strongest_latest(&mut found, max);
    found.into_iter().map(|f| f.2).collect()
}

pub struct BriefInput<'a> {
    pub session: &'a Session,
    pub source_display: &'a str,
    pub title: &'a str,
    /// The file-state snapshot as the brief gives it (`snapshot::Snapshot::render`): the
    /// working directory, its repository and the files the session changed. Sized by the
    /// budget, not by the brief's own cap.
    pub snapshot: &'a str,
    /// What was found in the messages folded while reading, if any.
    pub folded: Option<&'a BriefFound>,
}

/// The brief: provenance, goal, current step and open todos, completed steps, files changed,
/// repository state, the user's rules, decisions, and the instruction to go on.
pub fn brief(b: &BriefInput) -> String {
    let s = b.session;
    // What the brief finds in the whole session, found once for every size it tries.
    let found = Found {
        turns: s.messages.iter().filter(|m| m.role == Role::User).count()
            + b.folded.map_or(0, |f| f.user_messages),
        rules: constraints_found(s, b.folded, Caps::FULL.constraints),
        decisions: decisions_found(s, b.folded, Caps::FULL.decisions),
    };
    let mut caps = Caps::FULL;
    loop {
        let text = render(b, &found, caps, "");
        if tokens::estimate(&text) <= BRIEF_MAX_TOKENS {
            break;
        }
        match caps.smaller() {
            Some(c) => caps = c,
            None => break,
        }
    }
    render(b, &found, caps, b.snapshot)
}

/// What the brief shows of the whole session, before it is capped.
struct Found {
    /// User turns.
    turns: usize,
    rules: Vec<(usize, usize, String)>,
    decisions: Vec<String>,
}

fn render(b: &BriefInput, found: &Found, caps: Caps, snapshot: &str) -> String {
    let s = b.session;
    let t = caps.text;
    let mut out = String::new();
    let turns = found.turns;
    out.push_str(&format!(
        "# Handoff brief\nThis session was relayed by session-relay from {} session {} ({}); it ran from {} to {} over {turns} turns. Title: {}.\n",
        b.source_display,
        s.id,
        truncate_chars(s.source_path.as_deref().unwrap_or("unknown file"), t),
        s.created.as_ref().map_or("?", |t| t.utc().unwrap_or(t.original())),
        s.updated.as_ref().map_or("?", |t| t.utc().unwrap_or(t.original())),
        one_line_cut(b.title, t),
    ));
    if let Some(goal) = s.first_user_prompt() {
        out.push_str(&format!(
            "\nGoal (the first request): {}\n",
            one_line_cut(goal, t)
        ));
    }
    push_steps(&mut out, s, caps);
    out.push('\n');
    out.push_str(snapshot);
    let rules = keep_strongest_latest(found.rules.clone(), caps.constraints);
    if !rules.is_empty() {
        out.push_str("\nThe user's constraints and preferences, quoted:\n");
        for r in rules {
            out.push_str(&format!("- \"{}\"\n", truncate_chars(&r, t)));
        }
    }
    let decided = latest(found.decisions.clone(), caps.decisions);
    if !decided.is_empty() {
        out.push_str("\nDecisions taken:\n");
        for d in decided {
            out.push_str(&format!("- {}\n", truncate_chars(&d, t)));
        }
    }
    out.push_str(
        "\nContinue from where the session stopped; do not redo completed steps. The most recent \
         turns follow verbatim; earlier turns are shortened or summarized; older tool calls are \
         shortened to one line each. Tool calls that this agent has no equivalent for appear as \
         text transcripts.",
    );
    out
}

/// The todo list's sections: the current step and every open todo in full, then the last
/// completed steps, as many as `caps` allows, each cut to `caps.text` characters.
fn push_steps(out: &mut String, s: &Session, caps: Caps) {
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
    let done = dedup(s.completed_todos().map(|t| one_line(&t.text)));
    if !done.is_empty() {
        out.push_str("\nCompleted steps");
        let skip = done.len().saturating_sub(caps.completed);
        if skip > 0 {
            out.push_str(&format!(" (the last {}; {skip} earlier)", caps.completed));
        }
        out.push_str(":\n");
        for d in &done[skip..] {
            out.push_str(&format!("- {}\n", truncate_chars(d, caps.text)));
        }
    }
}

impl GitState {
    /// What the brief says of the repository after the working directory (nothing when
    /// neither the repository nor the session tells anything), and where it was read: the
    /// branch, HEAD's short hash and subject, and the files not committed, at most
    /// `most_dirty` of them named (all when `None`).
    pub fn describe(&self, most_dirty: Option<usize>) -> String {
        if !(self.live || self.branch.is_some() || self.commit.is_some()) {
            return String::new();
        }
        let mut parts = Vec::new();
        if let Some(br) = &self.branch {
            parts.push(format!("branch {br}"));
        }
        match (&self.short, &self.commit) {
            (Some(short), _) => parts.push(format!("commit {short}")),
            (None, Some(c)) => parts.push(format!("commit {}", &c[..c.len().min(12)])),
            (None, None) => {}
        }
        if let Some(subject) = &self.subject {
            parts.push(format!("\"{}\"", one_line_cut(subject, 120)));
        }
        match self.dirty {
            Some(true) => {
                let n = self.dirty_files.len();
                let most = most_dirty.unwrap_or(n);
                let mut named = self.dirty_files[..n.min(most)].join(", ");
                if n > most {
                    named.push_str(&format!(", and {} more", n - most));
                }
                parts.push(format!(
                    "uncommitted changes in {n} file{}: {named}",
                    if n == 1 { "" } else { "s" }
                ));
            }
            Some(false) => parts.push("working tree clean".into()),
            None => {}
        }
        format!(
            "; git: {} ({})",
            parts.join(", "),
            if self.live {
                "read from the repository at relay time"
            } else {
                "as the session recorded it"
            }
        )
    }
}

/// Items without repeats (compared case-insensitively), first occurrence kept.
fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    items.filter(|i| seen.insert(i.to_lowercase())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules kept while a long session streams by pick what all of them would pick, for the
    /// number the brief starts with and every smaller one it tries: random strengths (many
    /// ties), lengths around the cut-back point.
    #[test]
    fn the_strongest_kept_while_streaming_are_those_of_all_the_rules() {
        let mut next = crate::text::test_rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..400 {
            let most = [1, 2, 3, 8, 40][next(5)];
            let len = next(300);
            let all: Vec<(usize, usize, String)> = (0..len)
                .map(|i| {
                    let strength = match next(5) {
                        4 => usize::MAX,
                        s => s,
                    };
                    (i, strength, format!("rule {i}"))
                })
                .collect();
            let mut streamed = Strongest::new(most);
            for (_, strength, text) in &all {
                streamed.push(*strength, text.clone());
            }
            let streamed = streamed.finish();
            assert!(streamed.len() <= most);
            for max in 1..=most {
                assert_eq!(
                    keep_strongest_latest(streamed.clone(), max),
                    keep_strongest_latest(all.clone(), max),
                    "{len} rules, {most} kept, {max} asked"
                );
            }
        }
    }

    /// The rules and decisions found with older messages folded while the session was read
    /// (`BriefFound`, which keeps a few) are those found in the whole session: random sessions
    /// that state more than the brief shows and repeat rules and decisions (in other cases
    /// too) before, inside and after the folded messages.
    #[test]
    fn what_folded_messages_state_is_found_as_in_the_whole_session() {
        use crate::model::Folded;
        let mut next = crate::text::test_rng(0x5eed_b21e_f01d_0001);
        let cues = [
            "never", "must", "don't", "always", "avoid", "prefer", "only",
        ];
        let mut evicted = 0;
        for round in 0..600 {
            let n = 2 + next(70);
            let pool = 1 + next(40) as u64;
            let mut messages: Vec<Message> = (0..n)
                .map(|_| {
                    let said = |next: &mut dyn FnMut(u64) -> usize, kind: usize| {
                        let r = next(pool);
                        let text = match kind {
                            0 => format!("{} touch file {r}", cues[r % cues.len()]),
                            _ => format!("we decided to use tool {r}"),
                        };
                        if next(4) == 0 {
                            text.to_uppercase()
                        } else {
                            text
                        }
                    };
                    let user = next(2) == 0;
                    let text: Vec<String> = (0..1 + next(3))
                        .map(|_| said(&mut next, usize::from(!user)))
                        .collect();
                    let role = if user { Role::User } else { Role::Assistant };
                    Message::new(role, text.join(". "))
                })
                .collect();
            let mut at = 1 + next(n as u64 - 1);
            let mut folded = next((n - at) as u64 + 1);
            if round == 0 {
                // Ten rules of one strength folded, the brief keeps the latest eight: a later
                // message that repeats the first is not the latest rule.
                let rule = |i: usize| Message::new(Role::User, format!("never touch file {i}"));
                messages = (0..12).map(rule).collect();
                messages.push(rule(1));
                (at, folded) = (1, 10);
            }
            let mut whole = Session::new("claude", "jsonl", "s");
            whole.messages = messages.clone();
            let mut read = Session::new("claude", "jsonl", "s");
            read.messages = [&messages[..at], &messages[at + folded..]].concat();
            read.folded = Some(Box::new(Folded {
                at,
                messages: folded,
                ..Default::default()
            }));
            let mut found = BriefFound::default();
            found.head(&messages[..at]);
            for m in &messages[at..at + folded] {
                found.add(m);
            }
            let rules = |s: &Session, f: Option<&BriefFound>| {
                constraints_found(s, f, Caps::FULL.constraints)
            };
            let (got, want) = (rules(&read, Some(&found)), rules(&whole, None));
            for max in 1..=Caps::FULL.constraints {
                assert_eq!(
                    keep_strongest_latest(got.clone(), max),
                    keep_strongest_latest(want.clone(), max),
                    "round {round}: {max} rules of {messages:?}, {folded} folded at {at}"
                );
            }
            let decisions =
                |s: &Session, f: Option<&BriefFound>| decisions_found(s, f, Caps::FULL.decisions);
            assert_eq!(
                decisions(&read, Some(&found)),
                decisions(&whole, None),
                "round {round}: decisions of {messages:?}, {folded} folded at {at}"
            );
            evicted += usize::from(found.seen_rules.len() > found.rules.kept().len() + 4);
        }
        // The folded part often stated more than was kept: the bound is exercised.
        assert!(evicted > 100, "{evicted}");
    }

    /// git is started only where it could find a repository: in a checkout's folder or below
    /// it (also through a link, and where `.git` is a worktree's file), not elsewhere.
    #[test]
    fn git_is_asked_only_where_a_repository_can_be_found() {
        let root = tempfile::tempdir().unwrap();
        let plain = root.path().join("plain/deep");
        std::fs::create_dir_all(&plain).unwrap();
        let checkout = root.path().join("checkout");
        std::fs::create_dir_all(checkout.join(".git")).unwrap();
        std::fs::create_dir_all(checkout.join("src/sub")).unwrap();
        let worktree = root.path().join("worktree");
        std::fs::create_dir_all(&worktree).unwrap();
        std::fs::write(
            worktree.join(".git"),
            "gitdir: ../checkout/.git/worktrees/w\n",
        )
        .unwrap();
        // Unless the temporary folder is itself in a checkout.
        let above = root
            .path()
            .ancestors()
            .skip(1)
            .any(|d| d.join(".git").exists());
        if std::env::var_os("GIT_DIR").is_none() && !above {
            assert!(!may_be_in_a_checkout(&plain));
            assert!(!may_be_in_a_checkout(root.path()));
            assert_eq!(live_git_state(plain.to_str().unwrap()), None);
        }
        assert!(may_be_in_a_checkout(&checkout));
        assert!(may_be_in_a_checkout(&checkout.join("src/sub")));
        assert!(may_be_in_a_checkout(&worktree));
        #[cfg(unix)]
        {
            let link = root.path().join("plain/link");
            std::os::unix::fs::symlink(checkout.join("src"), &link).unwrap();
            assert!(may_be_in_a_checkout(&link));
        }
    }
    use crate::model::Message;

    #[test]
    fn git_status_v2_gives_commit_branch_and_dirtiness() {
        let oid = "0123456789abcdef0123456789abcdef01234567";
        let clean = format!(
            "# branch.oid {oid}\n# branch.head main\n# branch.upstream origin/main\n# branch.ab +0 -0\n"
        );
        let g = parse_status(&clean).unwrap();
        assert_eq!(
            (g.branch.as_deref(), g.commit.as_deref(), g.dirty, g.live),
            (Some("main"), Some(oid), Some(false), true)
        );
        let dirty = format!(
            "# branch.oid {oid}\n# branch.head (detached)\n1 .M N... 100644 100644 100644 aa bb a.txt\n? new.txt\n"
        );
        let g = parse_status(&dirty).unwrap();
        assert_eq!((g.branch.as_deref(), g.dirty), (Some("HEAD"), Some(true)));
        assert_eq!(g.dirty_files, ["M a.txt", "?? new.txt"]);
        let renamed = format!(
            "# branch.oid {oid}\n2 R. N... 100644 100644 100644 aa bb R100 new name.rs\told.rs\n"
        );
        assert_eq!(
            parse_status(&renamed).unwrap().dirty_files,
            ["R new name.rs"]
        );
        let untracked_only = format!("# branch.oid {oid}\n# branch.head main\n? new.txt\n");
        assert_eq!(parse_status(&untracked_only).unwrap().dirty, Some(true));
        // No commit yet: nothing to name, as `git rev-parse HEAD` fails there.
        assert!(parse_status("# branch.oid (initial)\n# branch.head main\n? a.txt\n").is_none());
    }

    #[test]
    fn a_brief_of_thousands_of_rules_stays_short() {
        let mut s = Session::new("claude", "test", "id");
        for i in 0..3000 {
            s.messages.push(Message::new(
                Role::User,
                format!("We must keep module {i} small. Never rename file {i}."),
            ));
        }
        let text = brief(&BriefInput {
            session: &s,
            source_display: "Claude Code",
            title: "t",
            snapshot: "Working directory: /project\n",
            folded: None,
        });
        assert!(tokens::estimate(&text) <= BRIEF_MAX_TOKENS, "{text}");
        assert!(
            text.contains("Never rename file 2999"),
            "the latest rule kept: {text}"
        );
        assert!(text.contains("\nWorking directory: /project\n"), "{text}");
    }

    #[test]
    fn the_strongest_rules_win_when_there_are_too_many() {
        let found = vec![
            (0, 0, "never a".to_string()),
            (1, 6, "prefer b".to_string()),
            (2, 6, "prefer c".to_string()),
            (3, 1, "must d".to_string()),
        ];
        assert_eq!(
            keep_strongest_latest(found, 3),
            vec!["never a", "prefer c", "must d"]
        );
    }
}
