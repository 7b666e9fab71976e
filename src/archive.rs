//! The versioned archive (opt-in: `archive: git` in the config, or `relay --archive DIR`):
//! a bare git repository where every relay commits what it carried, masked: the relayed
//! session in neutral form (`session.jsonl`), the relay's report as `relay --json` prints it
//! (`report.json`) and the file-state snapshot its brief carries (`snapshot.json`). One commit
//! per relay, on one branch per task chain (`chain/<agent>-<id>` of the chain's first session),
//! so that `git log` and `git diff` there show how the task evolved.
//!
//! Written with the git CLI, as `bundle --git` is: no git library to build and keep up to date,
//! and the repository is one any git reads. Only plumbing runs (`hash-object`, `mktree`,
//! `commit-tree`, `update-ref`), so no work tree or index is ever written, and the branch moves
//! only from the commit this relay read (`update-ref NEW OLD`): relays archiving at the same
//! time each add their commit, one after the other, none lost.
//!
//! Archiving never fails a relay: the relay says why it was not archived, as a warning.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::git::{command as git, run};

/// The files of each commit: the same names every time, so that `git diff` between two relays
/// shows what changed.
pub const SESSION: &str = "session.jsonl";
pub const REPORT: &str = "report.json";
pub const SNAPSHOT: &str = "snapshot.json";

/// The trailers of an archive commit's message that name the relay's sides.
const SOURCE_TRAILER: &str = "Source: ";
const TARGET_TRAILER: &str = "Target: ";

/// How often a commit is made again on a branch another relay moved meanwhile.
const ATTEMPTS: usize = 8;

/// Where a relay was archived.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Archived {
    /// The archive: a bare git repository.
    pub dir: String,
    pub branch: String,
    pub commit: String,
}

/// The branch of the chain whose first session is `agent`'s `id`: `chain/<agent>-<id>`, with
/// only letters, digits, `-` and `_` kept (an id is whatever a session file says).
pub fn branch_name(agent: &str, id: &str) -> String {
    let clean = |s: &str, n: usize| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(n)
            .collect()
    };
    let id = clean(id, 80);
    format!(
        "chain/{}-{}",
        clean(agent, 20),
        if id.is_empty() { "unnamed".into() } else { id }
    )
}

/// One relay's commit.
pub struct Commit<'a> {
    pub branch: &'a str,
    pub message: &'a str,
    /// The relay's time: the commit's date.
    pub time: chrono::DateTime<chrono::Utc>,
    /// `(name, bytes)`, the tree of the commit.
    pub files: &'a [(&'a str, &'a [u8])],
}

/// Adds `c` to the archive at `dir` (created when new) as the branch's next commit, and makes
/// it the archive's HEAD (a plain `git log` there shows the latest chain). Returns its id.
pub fn commit(dir: &Path, c: &Commit) -> Result<String> {
    open_or_create(dir)?;
    let tree = write_tree(dir, c.files)?;
    let reference = format!("refs/heads/{}", c.branch);
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            // Another relay holds the branch's lock, or moved it since it was read.
            std::thread::sleep(std::time::Duration::from_millis(10 << attempt.min(5)));
        }
        let parent = tip(dir, &reference)?;
        let commit = commit_tree(dir, &tree, parent.as_deref(), c)?;
        let mut u = archive_git(dir);
        u.args(["update-ref", "-m", "session-relay: relay archived"])
            .arg(&reference)
            .arg(&commit)
            // The empty old value: the branch must not exist yet.
            .arg(parent.as_deref().unwrap_or(""));
        if run(u, "move the chain's branch").is_ok() {
            let mut h = archive_git(dir);
            h.args(["symbolic-ref", "HEAD", &reference]);
            // HEAD only helps a plain `git log`: the commit is in whatever it says.
            let _ = run(h, "point HEAD at the chain's branch");
            return Ok(commit);
        }
    }
    bail!(
        "git could not move the branch {} in {}",
        c.branch,
        dir.display()
    )
}

/// git in the archive, as session-relay itself: its own name on commits, and none of the
/// user's or the system's git config (a `commit.gpgSign` there would ask for a passphrase).
fn archive_git(dir: &Path) -> Command {
    let mut c = git(dir);
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "session-relay")
        .env("GIT_AUTHOR_EMAIL", "session-relay@localhost")
        .env("GIT_COMMITTER_NAME", "session-relay")
        .env("GIT_COMMITTER_EMAIL", "session-relay@localhost");
    c
}

/// The archive at `dir`, created (a bare repository) when the folder is new or empty. A folder
/// that holds anything else is not written to.
fn open_or_create(dir: &Path) -> Result<()> {
    let is_repo = || dir.join("HEAD").is_file() && dir.join("objects").is_dir();
    if is_repo() {
        return Ok(());
    }
    let empty = match std::fs::read_dir(dir) {
        Ok(mut d) => d.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => {
            return Err(anyhow::Error::new(e))
                .with_context(|| format!("cannot read the archive folder {}", dir.display()));
        }
    };
    if !empty {
        bail!(
            "{} holds other files and is no archive session-relay made",
            dir.display()
        );
    }
    // Made beside it and renamed into place: a relay archiving at the same moment never sees
    // a repository half made.
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create the folder {}", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".session-relay-archive-")
        .tempdir_in(parent)
        .with_context(|| format!("cannot create the archive in {}", parent.display()))?;
    let mut c = archive_git(tmp.path());
    c.args(["-c", "init.defaultBranch=main", "init", "-q", "--bare", "."]);
    run(c, "create the archive repository")?;
    match std::fs::rename(tmp.path(), dir) {
        Ok(()) => Ok(()),
        Err(_) if is_repo() => Ok(()),
        Err(e) => Err(anyhow::Error::new(e))
            .with_context(|| format!("cannot create the archive {}", dir.display())),
    }
}

/// The tree of `files`: their blobs written in one `hash-object`, then `mktree`.
fn write_tree(dir: &Path, files: &[(&str, &[u8])]) -> Result<String> {
    let tmp = tempfile::Builder::new()
        .prefix("session-relay-archive-")
        .tempdir()
        .context("cannot create a temporary folder")?;
    let mut c = archive_git(dir);
    c.args(["hash-object", "-w", "--no-filters", "--"]);
    for (name, bytes) in files {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).with_context(|| format!("cannot write {}", p.display()))?;
        c.arg(p);
    }
    let blobs = run(c, "store the relay's files")?;
    let mut listing = String::new();
    for ((name, _), blob) in files.iter().zip(blobs.lines()) {
        listing.push_str(&format!("100644 blob {blob}\t{name}\n"));
    }
    let mut c = archive_git(dir);
    c.arg("mktree");
    run_with_input(c, listing.as_bytes(), "write the relay's tree")
}

/// The commit the branch `reference` names, `None` when there is no such branch yet.
fn tip(dir: &Path, reference: &str) -> Result<Option<String>> {
    let mut c = archive_git(dir);
    c.args(["rev-parse", "--verify", "--quiet", reference]);
    let out = c
        .output()
        .context("cannot run git to read the chain's branch")?;
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((out.status.success() && !id.is_empty()).then_some(id))
}

fn commit_tree(dir: &Path, tree: &str, parent: Option<&str>, c: &Commit) -> Result<String> {
    let date = format!("{} +0000", c.time.timestamp());
    let mut g = archive_git(dir);
    g.env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .args(["commit-tree", tree]);
    if let Some(p) = parent {
        g.args(["-p", p]);
    }
    g.args(["-F", "-"]);
    run_with_input(g, c.message.as_bytes(), "commit the relay")
}

/// `run` with `input` on git's standard input.
fn run_with_input(mut c: Command, input: &[u8], what: &str) -> Result<String> {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run git to {what}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    // Small inputs (a tree listing, a message): written whole before the output is read.
    stdin.write_all(input)?;
    drop(stdin);
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "git could not {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The message of a relay's commit: a subject naming source, target and budget, then the
/// trailers `log --archive` finds a relay's commit by.
pub fn message(
    source: &crate::ledger::Side,
    target: &crate::ledger::Side,
    budget: usize,
    written: usize,
    relayed_at: &str,
) -> String {
    let one_line = |s: &str| s.replace(['\n', '\r'], " ");
    let short = |id: &str| one_line(&id.chars().take(8).collect::<String>());
    format!(
        "relay {} {} -> {} {}, budget {} tokens\n\n{} tokens written of a budget of {}.\n\n{SOURCE_TRAILER}{} {}\n{TARGET_TRAILER}{} {}\nBudget: {budget}\nRelayed-At: {}\n",
        one_line(&source.agent),
        short(&source.id),
        one_line(&target.agent),
        short(&target.id),
        crate::text::thousands(budget as u64),
        crate::text::thousands(written as u64),
        crate::text::thousands(budget as u64),
        one_line(&source.agent),
        one_line(&source.id),
        one_line(&target.agent),
        one_line(&target.id),
        one_line(relayed_at),
    )
}

/// Every relay the archive at `dir` holds, by its target session `(agent, id)`: the commit
/// and the branch it is on (the newest, when a target was archived twice).
pub fn relays(dir: &Path) -> Result<HashMap<(String, String), Archived>> {
    let mut c = archive_git(dir);
    // Newest first: the first commit seen of a target is kept.
    c.args([
        "log",
        "--branches",
        "--source",
        "--format=%H%x1f%S%x1f%B%x1e",
    ]);
    let out = run(c, "read the archive")?;
    let mut found = HashMap::new();
    for record in out.split('\x1e') {
        let mut parts = record.trim_start_matches('\n').splitn(3, '\x1f');
        let (Some(commit), Some(source), Some(body)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Some((agent, id)) = body
            .lines()
            .find_map(|l| l.strip_prefix(TARGET_TRAILER)?.split_once(' '))
        else {
            continue;
        };
        found
            .entry((agent.to_string(), id.to_string()))
            .or_insert_with(|| Archived {
                dir: dir.display().to_string(),
                branch: source
                    .strip_prefix("refs/heads/")
                    .unwrap_or(source)
                    .to_string(),
                commit: commit.to_string(),
            });
    }
    Ok(found)
}

/// What to say of an archive that failed: the cause, and what to do about it.
pub fn failure(dir: &Path, e: &anyhow::Error) -> String {
    let no_git = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
    });
    let fix = if no_git {
        "install git (and have it on PATH), or turn the archive off (`archive: off`)".to_string()
    } else {
        "the archive must be a folder you can write to that is new, empty or an archive session-relay made; name another with `archive_dir:` in the config or --archive DIR".to_string()
    };
    let cause = if no_git {
        "git was not found".to_string()
    } else {
        format!("{e:#}")
    };
    format!(
        "the relay was not archived in {}: {cause}; {fix}",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(n: usize) -> Vec<(String, Vec<u8>)> {
        vec![(SESSION.to_string(), format!("line {n}\n").into_bytes())]
    }

    #[test]
    fn branch_names_keep_only_safe_characters() {
        assert_eq!(branch_name("claude", "ab-12_x"), "chain/claude-ab-12_x");
        assert_eq!(branch_name("codex", "../a b:c~^"), "chain/codex-___a_b_c__");
        assert_eq!(branch_name("pi", ""), "chain/pi-unnamed");
    }

    /// Relays archiving on the same branch at once each add their commit.
    #[test]
    fn concurrent_commits_on_one_branch_are_all_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("archive");
        let n = 6;
        std::thread::scope(|s| {
            for i in 0..n {
                let dir = &dir;
                s.spawn(move || {
                    let owned = files(i);
                    let f: Vec<(&str, &[u8])> = owned
                        .iter()
                        .map(|(a, b)| (a.as_str(), b.as_slice()))
                        .collect();
                    commit(
                        dir,
                        &Commit {
                            branch: "chain/claude-x",
                            message: &format!("relay {i}\n\nTarget: codex t{i}\n"),
                            time: chrono::Utc::now(),
                            files: &f,
                        },
                    )
                    .unwrap();
                });
            }
        });
        let found = relays(&dir).unwrap();
        assert_eq!(found.len(), n, "{found:?}");
        let mut c = archive_git(&dir);
        c.args(["rev-list", "--count", "chain/claude-x"]);
        assert_eq!(run(c, "count").unwrap(), n.to_string());
    }

    #[test]
    fn a_folder_holding_something_else_is_not_written_to() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
        let e = commit(
            tmp.path(),
            &Commit {
                branch: "chain/claude-x",
                message: "m",
                time: chrono::Utc::now(),
                files: &[(SESSION, b"x")],
            },
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("holds other files"), "{e:#}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
