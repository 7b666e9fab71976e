//! The file-state snapshot: every file the session changed (`model::files`), what it did to
//! each and in which turn it last did it, how each stands on disk now against that change, and
//! the repository's state. The brief carries it (as many files as the budget allows, the rest
//! counted by folder), and `show` prints it whole.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::brief::GitState;
use crate::model::files::{FileFacts, FileRecord};
use crate::redact::{Counts, Redactor};

/// How long after the session's change a file's modification time may be and still be that
/// change: file systems keep times to a second or two, and the session records the time of the
/// call's result a moment after the file was written.
const SAME_CHANGE_SECS: i64 = 2;

/// How a file stands on disk now against the session's last change to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    /// As the session left it: present and not modified since, or still gone.
    Unchanged,
    /// Modified after the session's last change to it (or back after the session removed it).
    ChangedSince,
    /// Gone, though the session left it in place.
    Gone,
    /// Present, but the session recorded no time to compare with.
    Present,
    /// Not looked at: the session's working directory does not exist here, or the path is not one this
    /// machine can look up.
    NotChecked,
}

impl FileState {
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Unchanged => "unchanged",
            FileState::ChangedSince => "changed since",
            FileState::Gone => "gone",
            FileState::Present => "present",
            FileState::NotChecked => "not checked",
        }
    }
}

/// One file of the snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SnapshotFile {
    /// Relative to the working directory when it is under it (or under the session's own),
    /// else as the session named it.
    pub path: String,
    /// Its folder as `path` names it (`./` for the working directory), and its name in it.
    pub folder: String,
    pub name: String,
    /// What the session did, in words (`created, then edited 2x`).
    pub did: String,
    pub created: bool,
    /// Writes and edits besides the one that created it.
    pub edits: usize,
    pub deleted: bool,
    pub moved_to: Option<String>,
    pub moved_from: Option<String>,
    /// The turn of the session's last change to it, when known.
    pub turn: Option<usize>,
    /// When that change was made, as the session recorded it (UTC).
    pub changed_at: Option<String>,
    pub state: FileState,
    /// Where the last change was among the session's messages (ranks the files by recency).
    #[serde(skip, default)]
    place: usize,
}

/// The snapshot: the working directory, its repository, and the files.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    pub working_directory: String,
    /// Where the session ran, when it says: the paths under it are relative to it.
    pub session_directory: Option<String>,
    /// The files' states were read from disk: the session's working directory exists here.
    pub checked: bool,
    pub repository: GitState,
    pub files: Vec<SnapshotFile>,
    /// Taken from a bundle (`carried_to`): the files' states were read when it was made.
    #[serde(skip, default)]
    bundled: bool,
}

impl Snapshot {
    /// The snapshot of `facts` for a session resumed in `cwd` (the session's own working
    /// directory `session_cwd`), the repository there being `git`.
    pub fn take(
        facts: Option<&FileFacts>,
        cwd: &str,
        session_cwd: Option<&str>,
        git: GitState,
    ) -> Snapshot {
        // The files are where the session ran: looked at only where that directory exists.
        let checked = Path::new(session_cwd.unwrap_or(cwd)).is_dir();
        let bases: Vec<&str> = session_cwd.into_iter().chain([cwd]).collect();
        let files = facts
            .map(|f| f.files.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|(path, r)| {
                let shown = relative(path, &bases);
                let (folder, name) = split(&shown);
                SnapshotFile {
                    did: did(r, &bases),
                    state: if checked {
                        state_now(path, r)
                    } else {
                        FileState::NotChecked
                    },
                    path: shown.clone(),
                    folder,
                    name,
                    created: r.created,
                    edits: r.edits,
                    deleted: r.deleted,
                    moved_to: r.moved_to.as_deref().map(|p| relative(p, &bases)),
                    moved_from: r.moved_from.as_deref().map(|p| relative(p, &bases)),
                    turn: r.turn,
                    changed_at: r.time.as_ref().and_then(|t| t.utc()).map(str::to_string),
                    place: r.place,
                }
            })
            .collect();
        Snapshot {
            working_directory: cwd.to_string(),
            session_directory: session_cwd.map(str::to_string),
            checked,
            repository: git,
            files,
            bundled: false,
        }
    }

    /// The snapshot a bundle carries (read when it was made), for a relay from it resumed in
    /// `cwd`, whose repository is `git`: the files and their states stay those read then.
    pub fn carried_to(mut self, cwd: &str, git: GitState) -> Snapshot {
        self.working_directory = cwd.to_string();
        self.repository = git;
        self.bundled = true;
        // A bundle keeps the turn of each file's last change, not its place among the
        // messages: the turns rank the files by recency as well.
        for f in &mut self.files {
            f.place = f.turn.unwrap_or(0);
        }
        self
    }

    /// Masks the secrets in what the snapshot names: its paths as the session's messages are
    /// masked (counted there already), and the repository's branch, subject and uncommitted
    /// files, which nothing else carries, counted in the returned counts.
    pub fn mask(&mut self, redactor: &Redactor) -> Counts {
        let mut uncounted = Counts::new();
        let mut counts = Counts::new();
        let mask = |t: &mut String, counts: &mut Counts| {
            if let std::borrow::Cow::Owned(m) = redactor.text(t, counts) {
                *t = m;
            }
        };
        mask(&mut self.working_directory, &mut uncounted);
        if let Some(d) = self.session_directory.as_mut() {
            mask(d, &mut uncounted);
        }
        for f in &mut self.files {
            for t in [&mut f.path, &mut f.folder, &mut f.name, &mut f.did]
                .into_iter()
                .chain(f.moved_to.as_mut())
                .chain(f.moved_from.as_mut())
            {
                mask(t, &mut uncounted);
            }
        }
        let g = &mut self.repository;
        for t in g
            .branch
            .iter_mut()
            .chain(g.subject.as_mut())
            .chain(g.dirty_files.iter_mut())
        {
            mask(t, &mut counts);
        }
        counts
    }

    /// The snapshot as the brief and `show` give it: the working directory and repository
    /// line, then the files grouped by folder, at most `most` of them (the changed most
    /// recently and most often; the others counted by folder), all of them when `None`.
    pub fn render(&self, most: Option<usize>) -> String {
        let mut out = format!("Working directory: {}", self.working_directory);
        out.push_str(&self.repository.describe(most.map(|m| (m / 10).max(10))));
        out.push('\n');
        if self.files.is_empty() {
            return out;
        }
        let total = self.files.len();
        let shown = match most {
            Some(m) if m < total => ranked(&self.files).into_iter().take(m).collect(),
            _ => (0..total).collect::<Vec<usize>>(),
        };
        out.push_str(&format!("\nFiles the session changed: {total}"));
        if shown.len() < total {
            out.push_str(&format!(
                ", the {} changed most recently and most often listed",
                shown.len()
            ));
        }
        if let Some(ran) = self
            .session_directory
            .as_deref()
            .filter(|d| *d != self.working_directory)
        {
            out.push_str(&format!(", paths relative to {ran}, where the session ran"));
        }
        out.push_str(if self.checked && self.bundled {
            " (what it did, the turn of its last change, and how the file stood against that change when the session was bundled, on the machine that bundled it):\n"
        } else if self.checked {
            " (what it did, the turn of its last change, and how the file stands now against that change, read at relay time):\n"
        } else if self.bundled {
            " (what it did and the turn of its last change; not checked on disk: the session's working directory did not exist where it was bundled):\n"
        } else {
            " (what it did and the turn of its last change; not checked on disk: the session's working directory does not exist here):\n"
        });
        let mut by_folder: BTreeMap<&str, Vec<&SnapshotFile>> = BTreeMap::new();
        for &i in &shown {
            by_folder
                .entry(&self.files[i].folder)
                .or_default()
                .push(&self.files[i]);
        }
        for (folder, files) in by_folder {
            out.push_str(folder);
            out.push('\n');
            for f in files {
                out.push_str(&format!("  {}: {}", f.name, f.did));
                if let Some(t) = f.turn {
                    out.push_str(&format!(", turn {t}"));
                }
                if f.state != FileState::NotChecked {
                    out.push_str(&format!(", {}", f.state.as_str()));
                }
                out.push('\n');
            }
        }
        if shown.len() < total {
            out.push_str(&self.not_listed(&shown));
        }
        out
    }

    /// The files `shown` leaves out, counted by folder (the fullest first, at most 20).
    fn not_listed(&self, shown: &[usize]) -> String {
        let listed: std::collections::HashSet<usize> = shown.iter().copied().collect();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, f) in self.files.iter().enumerate() {
            if !listed.contains(&i) {
                *counts.entry(&f.folder).or_default() += 1;
            }
        }
        let mut folders: Vec<(&str, usize)> = counts.into_iter().collect();
        folders.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let n: usize = folders.iter().map(|f| f.1).sum();
        let named: Vec<String> = folders
            .iter()
            .take(20)
            .map(|(f, c)| format!("{f} {c}"))
            .collect();
        let mut out = format!("Not listed, {n} more by folder: {}", named.join(", "));
        if folders.len() > 20 {
            let rest: usize = folders[20..].iter().map(|f| f.1).sum();
            out.push_str(&format!(
                ", and {rest} in {} other folders",
                folders.len() - 20
            ));
        }
        out.push('\n');
        out
    }
}

/// How many files the brief lists for a relay with `budget` tokens: a hundredth of the budget
/// (200 files at 20,000 tokens), never fewer than 20. A line costs about 15 tokens (a file's
/// name, what the session did, its turn and state), so that is about 15% of the budget at
/// most, and only for a session that changed so many files.
pub fn files_for_budget(budget: usize) -> usize {
    (budget / 100).max(20)
}

/// Indexes of `files`, the most recently and the most often changed first, one of each in
/// turn.
fn ranked(files: &[SnapshotFile]) -> Vec<usize> {
    let mut by_recency: Vec<usize> = (0..files.len()).collect();
    let key = |i: usize| {
        (
            files[i].place,
            files[i].edits + usize::from(files[i].created),
        )
    };
    by_recency.sort_by(|&a, &b| key(b).cmp(&key(a)).then(a.cmp(&b)));
    let mut by_count = by_recency.clone();
    by_count.sort_by(|&a, &b| {
        let (ka, kb) = (key(a), key(b));
        kb.1.cmp(&ka.1).then(kb.0.cmp(&ka.0)).then(a.cmp(&b))
    });
    let mut seen = vec![false; files.len()];
    let mut out = Vec::with_capacity(files.len());
    let (mut r, mut c) = (by_recency.into_iter(), by_count.into_iter());
    while out.len() < files.len() {
        for it in [&mut r, &mut c] {
            if let Some(i) = it.find(|&i| !seen[i]) {
                seen[i] = true;
                out.push(i);
            }
        }
    }
    out
}

/// What the session did to a file, in words.
fn did(r: &FileRecord, bases: &[&str]) -> String {
    let times = |n: usize| {
        if n == 1 {
            "once".to_string()
        } else {
            format!("{n}x")
        }
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(from) = &r.moved_from {
        parts.push(format!("moved from {}", relative(from, bases)));
    }
    match (r.created, r.edits) {
        (true, 0) => parts.push("created".into()),
        (true, n) => parts.push(format!("created, then edited {}", times(n))),
        (false, 0) => {}
        (false, n) => parts.push(format!("edited {}", times(n))),
    }
    if r.deleted {
        parts.push("deleted".into());
    }
    if let Some(to) = &r.moved_to {
        parts.push(format!("moved to {}", relative(to, bases)));
    }
    if parts.is_empty() {
        parts.push("changed".into());
    }
    parts.join(", then ")
}

/// How `path` stands now against the session's last change to it, `r`.
fn state_now(path: &str, r: &FileRecord) -> FileState {
    if !path.starts_with('/') {
        return FileState::NotChecked;
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return if r.gone() {
                FileState::Unchanged
            } else {
                FileState::Gone
            };
        }
        Err(_) => return FileState::NotChecked,
    };
    if r.gone() {
        return FileState::ChangedSince;
    }
    let changed = r.time.as_ref().and_then(|t| t.time());
    match (changed, meta.modified()) {
        (Some(at), Ok(modified)) => {
            let modified = chrono::DateTime::<chrono::Utc>::from(modified);
            if modified > at + chrono::Duration::seconds(SAME_CHANGE_SECS) {
                FileState::ChangedSince
            } else {
                FileState::Unchanged
            }
        }
        _ => FileState::Present,
    }
}

/// `path` relative to the first of `bases` it is under, else as it is.
fn relative(path: &str, bases: &[&str]) -> String {
    for base in bases {
        let base = base.trim_end_matches('/');
        if base.is_empty() {
            continue;
        }
        if let Some(rest) = path.strip_prefix(base)
            && let Some(rest) = rest.strip_prefix('/')
            && !rest.is_empty()
        {
            return rest.to_string();
        }
    }
    path.to_string()
}

/// A shown path's folder (with its `/`; `./` for none) and name.
fn split(path: &str) -> (String, String) {
    match path.rfind('/') {
        Some(i) => (path[..=i].to_string(), path[i + 1..].to_string()),
        None => ("./".to_string(), path.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(folder: &str, name: &str, place: usize, edits: usize) -> SnapshotFile {
        SnapshotFile {
            path: format!("{folder}{name}"),
            folder: folder.into(),
            name: name.into(),
            did: format!("edited {edits}x"),
            created: false,
            edits,
            deleted: false,
            moved_to: None,
            moved_from: None,
            turn: Some(place),
            changed_at: None,
            state: FileState::Unchanged,
            place,
        }
    }

    #[test]
    fn past_the_bound_the_rest_is_counted_by_folder() {
        let mut files: Vec<SnapshotFile> = (0..30)
            .map(|i| file("src/gen/", &format!("g{i:02}.rs"), i, 1))
            .collect();
        files.push(file("./", "Cargo.toml", 0, 9));
        files.push(file("docs/", "a.md", 3, 1));
        let s = Snapshot {
            working_directory: "/w".into(),
            session_directory: Some("/w".into()),
            checked: true,
            repository: GitState::default(),
            files,
            bundled: false,
        };
        let text = s.render(Some(4));
        assert!(
            text.contains(
                "Files the session changed: 32, the 4 changed most recently and most often listed"
            ),
            "{text}"
        );
        // The latest and the most changed lead.
        assert!(
            text.contains("  g29.rs: edited 1x, turn 29, unchanged"),
            "{text}"
        );
        assert!(text.contains("./\n  Cargo.toml: edited 9x"), "{text}");
        assert!(
            text.contains("Not listed, 28 more by folder: src/gen/ 27, docs/ 1"),
            "{text}"
        );
        let all = s.render(None);
        assert_eq!(all.matches(": edited").count(), 32, "{all}");
    }

    /// Paths are masked as the messages naming them are (counted there); the repository's
    /// subject, branch and uncommitted files, which nothing else carries, are counted here.
    #[test]
    fn secrets_in_paths_and_in_the_repository_are_masked() {
        let token = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";
        let mut f = file("keys/", &format!("{token}.txt"), 1, 1);
        f.moved_to = Some(format!("old/{token}"));
        let mut s = Snapshot {
            working_directory: "/w".into(),
            session_directory: None,
            checked: true,
            repository: GitState {
                branch: Some("main".into()),
                subject: Some(format!("Rotate {token}")),
                dirty_files: vec![format!("?? keys/{token}.txt")],
                dirty: Some(true),
                live: true,
                ..Default::default()
            },
            files: vec![f],
            bundled: false,
        };
        let counts = s.mask(&Redactor::new(&[], &[]).unwrap());
        let text = s.render(None);
        assert!(!text.contains(token), "{text}");
        assert!(text.contains("[REDACTED"), "{text}");
        assert_eq!(counts.values().sum::<usize>(), 2, "{counts:?}");
    }

    #[test]
    fn paths_are_relative_to_the_working_directory_when_under_it() {
        let bases = ["/home/u/p", "/real/p"];
        assert_eq!(relative("/home/u/p/src/a.rs", &bases), "src/a.rs");
        assert_eq!(relative("/real/p/a.rs", &bases), "a.rs");
        assert_eq!(relative("/home/u/px/a.rs", &bases), "/home/u/px/a.rs");
        assert_eq!(split("a.rs"), ("./".into(), "a.rs".into()));
        assert_eq!(split("/etc/hosts"), ("/etc/".into(), "hosts".into()));
    }
}
