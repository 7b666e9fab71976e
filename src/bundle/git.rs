//! A checkout's changes since HEAD carried as a git bundle, and taken into another checkout.
//!
//! The changes (tracked and untracked files, as `.gitignore` leaves them) are committed in a
//! temporary index (`GIT_INDEX_FILE` in a temporary folder) with `git commit-tree`, on HEAD.
//! The branch that names the commit lives in a temporary repository that borrows the
//! checkout's objects (`objects/info/alternates`), where `git bundle create` packs it: the
//! checkout's branch, index, stash and refs are never written, not even for a moment. Only
//! objects are added to its store (the blobs and the commit, unreachable, which `git gc`
//! removes in time).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::exit::{CliError, ExitCode};
use crate::git::{command as git, run};
use crate::redact::Redactor;

/// The changes of the checkout at `dir`, committed in a temporary index.
pub struct Captured {
    /// The checkout's top folder.
    pub top: PathBuf,
    pub base: String,
    pub commit: String,
    pub files: usize,
    /// The commit's author, `Name <email>`: the user's git identity, carried as it is.
    pub author: String,
    /// Where the masking rules find a secret: `file:line (kind)` for a line the changes add,
    /// `file (kind in its name)` for a changed or added file named with one, the file's name
    /// masked in both.
    pub secrets: Vec<String>,
}

/// Commits the working tree's changes at `dir` since HEAD in a temporary index, on HEAD, and
/// scans the lines they add with `redactor`'s rules. `None` when nothing changed.
pub fn capture(dir: &Path, session_id: &str, redactor: &Redactor) -> Result<Option<Captured>> {
    let top = run(
        {
            let mut c = git(dir);
            c.args(["rev-parse", "--show-toplevel"]);
            c
        },
        &format!("find the checkout of {}", dir.display()),
    )
    .map_err(|e| {
        usage(format!(
            "--git: {} is not in a git checkout ({e:#})",
            dir.display()
        ))
    })?;
    let top = PathBuf::from(top);
    let base = run(
        {
            let mut c = git(&top);
            c.args(["rev-parse", "--verify", "HEAD^{commit}"]);
            c
        },
        "read HEAD",
    )
    .map_err(|_| usage(format!("--git: {} has no commit yet", top.display())))?;
    let tmp = tempfile::Builder::new()
        .prefix("session-relay-git-")
        .tempdir()?;
    let index = tmp.path().join("index");
    let with_index = |args: &[&str]| {
        let mut c = git(&top);
        c.env("GIT_INDEX_FILE", &index).args(args);
        c
    };
    run(
        with_index(&["read-tree", &base]),
        "read HEAD into a temporary index",
    )?;
    run(
        with_index(&["add", "-A", "--", "."]),
        "add the changes to a temporary index",
    )?;
    let tree = run(with_index(&["write-tree"]), "write the changes' tree")?;
    let names = run(
        {
            let mut c = git(&top);
            c.args(["diff", "--name-only", "--no-renames", &base, &tree]);
            c
        },
        "list the changed files",
    )?;
    let files = names.lines().filter(|l| !l.is_empty()).count();
    if files == 0 {
        return Ok(None);
    }
    let mut secrets = scan_names(&top, &base, &tree, redactor)?;
    secrets.extend(scan(&top, &base, &tree, redactor)?);
    let message = format!("session-relay: working-tree changes of session {session_id}");
    let mut c = git(&top);
    c.args(["commit-tree", &tree, "-p", &base, "-m", &message]);
    with_identity(&top, &mut c);
    let commit = run(c, "commit the changes")?;
    let author = run(
        {
            let mut c = git(&top);
            c.args(["show", "-s", "--format=%an <%ae>", &commit]);
            c
        },
        "read the commit's author",
    )?;
    Ok(Some(Captured {
        top,
        base,
        commit,
        files,
        author,
        secrets,
    }))
}

fn usage(message: String) -> anyhow::Error {
    CliError::new(ExitCode::Usage, message).into()
}

/// A commit needs an author: the user's as git finds it, else session-relay's own (a machine
/// with no git identity set).
fn with_identity(top: &Path, c: &mut Command) {
    let known = git(top)
        .args(["var", "GIT_COMMITTER_IDENT"])
        .output()
        .is_ok_and(|o| o.status.success())
        && git(top)
            .args(["var", "GIT_AUTHOR_IDENT"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !known {
        for (k, v) in [
            ("GIT_AUTHOR_NAME", "session-relay"),
            ("GIT_AUTHOR_EMAIL", "session-relay@localhost"),
            ("GIT_COMMITTER_NAME", "session-relay"),
            ("GIT_COMMITTER_EMAIL", "session-relay@localhost"),
        ] {
            c.env(k, v);
        }
    }
}

/// The lines the changes add that hold a secret by the masking rules, as `file:line (kind)`:
/// never the secret itself.
fn scan(top: &Path, base: &str, tree: &str, redactor: &Redactor) -> Result<Vec<String>> {
    let mut c = git(top);
    c.args([
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        // A file git takes for binary (or `.gitattributes` marks so) would show only as
        // differing: read as text, its lines are scanned like any other.
        "--text",
        "-U0",
        base,
        tree,
    ]);
    let diff = run(c, "read the changes")?;
    let mut found = Vec::new();
    for h in hunks(&diff) {
        for (n, added) in h.lines.iter().enumerate() {
            if let Some(kinds) = secret_kinds(redactor, added) {
                let file = redactor.text(&h.file, &mut Default::default());
                found.push(format!("{file}:{} ({kinds})", h.start + n));
            }
        }
    }
    Ok(found)
}

/// The changed and added files (not the deleted ones, which the other side has) whose name
/// holds a secret by the masking rules, as `file (kind in its name)`, the name masked: a
/// tree carries names as well as contents.
fn scan_names(top: &Path, base: &str, tree: &str, redactor: &Redactor) -> Result<Vec<String>> {
    let mut c = git(top);
    c.args([
        "diff",
        "--name-only",
        "--no-renames",
        "--diff-filter=d",
        // Names as they are, not quoted: a rule matches the name, not an escape of it.
        "-z",
        base,
        tree,
    ]);
    let out = c
        .output()
        .context("cannot run git to list the changed files")?;
    if !out.status.success() {
        bail!(
            "git could not list the changed files: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let mut found = Vec::new();
    for name in out.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name);
        if let Some(kinds) = secret_kinds(redactor, &name) {
            let masked = redactor.text(&name, &mut Default::default());
            found.push(format!("{masked} ({kinds} in its name)"));
        }
    }
    Ok(found)
}

/// The kinds of secret the masking rules find in `text`, if any.
fn secret_kinds(redactor: &Redactor, text: &str) -> Option<String> {
    let mut counts = crate::redact::Counts::new();
    match redactor.text(text, &mut counts) {
        std::borrow::Cow::Owned(_) => Some(
            counts
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

/// The lines one hunk of a diff adds to a file, from line `start` on.
struct Hunk<'a> {
    file: String,
    start: usize,
    lines: Vec<&'a str>,
}

/// The hunks of `git diff -U0`, with what each adds.
fn hunks(diff: &str) -> Vec<Hunk<'_>> {
    let mut out: Vec<Hunk> = Vec::new();
    let mut file = String::new();
    // A file's header (`--- a/x`, `+++ b/x`) comes before its first hunk: inside a hunk, a
    // line `+++ ...` is an added line that starts with `++ `, and is scanned as one.
    let mut in_header = false;
    for l in diff.lines() {
        if l.starts_with("diff ") {
            in_header = true;
        } else if let (true, Some(name)) = (in_header, l.strip_prefix("+++ ")) {
            file = name.strip_prefix("b/").unwrap_or(name).to_string();
        } else if l.starts_with("@@ ") {
            in_header = false;
            // `@@ -a,b +c,d @@`: the added lines start at c.
            let start = l
                .split(' ')
                .find_map(|p| p.strip_prefix('+'))
                .and_then(|p| p.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            out.push(Hunk {
                file: file.clone(),
                start,
                lines: Vec::new(),
            });
        } else if let (Some(added), Some(h)) = (l.strip_prefix('+'), out.last_mut()) {
            h.lines.push(added);
        }
    }
    out
}

/// Writes a git bundle of `captured`'s commit, as the branch `branch` on its base, to `out`.
pub fn bundle(captured: &Captured, branch: &str, out: &Path) -> Result<()> {
    let objects = run(
        {
            let mut c = git(&captured.top);
            c.args(["rev-parse", "--path-format=absolute", "--git-common-dir"]);
            c
        },
        "find the repository",
    )?;
    let objects = Path::new(&objects).join("objects");
    let tmp = tempfile::Builder::new()
        .prefix("session-relay-git-")
        .tempdir()?;
    let repo = tmp.path().join("repo.git");
    run(
        {
            let mut c = git(tmp.path());
            c.args(["init", "-q", "--bare"]).arg(&repo);
            c
        },
        "create a temporary repository",
    )?;
    std::fs::write(
        repo.join("objects/info/alternates"),
        format!("{}\n", objects.display()),
    )?;
    let reference = format!("refs/heads/{branch}");
    run(
        {
            let mut c = git(&repo);
            c.args(["update-ref", &reference, &captured.commit]);
            c
        },
        "name the changes' commit",
    )?;
    run(
        {
            let mut c = git(&repo);
            c.args(["bundle", "create", "-q"])
                .arg(out)
                .arg(&reference)
                .arg(format!("^{}", captured.base));
            c
        },
        "write the git bundle",
    )?;
    Ok(())
}

/// The checkout at `dir` can take the bundled branch: it is one, with nothing uncommitted, and
/// it has the commit the changes are on. Returns its top folder.
pub fn check_target(dir: &Path, changes: &super::GitChanges) -> Result<PathBuf> {
    if !well_formed(changes) {
        return Err(usage(format!(
            "--apply-changes: the bundle names the branch {:?} on {:?}, which session-relay never writes; nothing was written",
            changes.branch, changes.base
        )));
    }
    let top = run(
        {
            let mut c = git(dir);
            c.args(["rev-parse", "--show-toplevel"]);
            c
        },
        "find the checkout",
    )
    .map_err(|_| {
        usage(format!(
            "--apply-changes: {} is not a git checkout; clone the repository there first (the changes are on commit {})",
            dir.display(),
            short(&changes.base)
        ))
    })?;
    let top = PathBuf::from(top);
    let status = run(
        {
            let mut c = git(&top);
            c.args(["status", "--porcelain", "--untracked-files=all"]);
            c
        },
        "read the checkout's status",
    )?;
    if !status.is_empty() {
        let n = status.lines().count();
        return Err(usage(format!(
            "--apply-changes: the checkout {} has uncommitted changes ({n} file(s)); commit or stash them first, nothing was written",
            top.display()
        )));
    }
    let has_base = git(&top)
        .args(["cat-file", "-e", &format!("{}^{{commit}}", changes.base)])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_base {
        return Err(usage(format!(
            "--apply-changes: the checkout {} lacks commit {}, which the changes are on; fetch or pull it first, nothing was written",
            top.display(),
            short(&changes.base)
        )));
    }
    let branch_ref = format!("refs/heads/{}", changes.branch);
    let exists = git(&top)
        .args(["rev-parse", "--verify", "--quiet", &branch_ref])
        .output()
        .is_ok_and(|o| o.status.success());
    if exists {
        return Err(usage(format!(
            "--apply-changes: the checkout {} already has a branch {}; delete or rename it first, nothing was written",
            top.display(),
            changes.branch
        )));
    }
    Ok(top)
}

/// Fetches the bundled branch from `bundle_file` into the checkout at `top` and checks it out.
pub fn apply(top: &Path, bundle_file: &Path, changes: &super::GitChanges) -> Result<()> {
    let branch_ref = format!("refs/heads/{}", changes.branch);
    let mut c = git(top);
    c.arg("fetch")
        .arg("-q")
        .arg(bundle_file)
        .arg(format!("{branch_ref}:{branch_ref}"));
    run(c, "fetch the bundled branch")?;
    let mut c = git(top);
    c.args(["checkout", "-q", &changes.branch]);
    run(c, "check out the bundled branch")?;
    Ok(())
}

/// The manifest is read from a file of unknown origin, and its branch is passed to `git
/// checkout`: only `relay/<letters and digits>` on a commit id, as `bundle` writes them, so that
/// none is read as an option or another ref.
fn well_formed(changes: &super::GitChanges) -> bool {
    let hex = |s: &str| matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit());
    changes
        .branch
        .strip_prefix("relay/")
        .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric()))
        && hex(&changes.base)
        && hex(&changes.commit)
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_branch_and_commits_as_bundle_writes_them_are_taken() {
        let c = |branch: &str, base: &str| super::super::GitChanges {
            branch: branch.into(),
            base: base.into(),
            commit: "b".repeat(40),
            files: 1,
        };
        let base = "a".repeat(40);
        assert!(well_formed(&c("relay/b0d1e5e5", &base)));
        for bad in [
            "-f",
            "relay/--detach",
            "relay/",
            "main",
            "relay/../x",
            "relay/a b",
        ] {
            assert!(!well_formed(&c(bad, &base)), "{bad}");
        }
        assert!(!well_formed(&c("relay/b0d1e5e5", "--orphan")));
    }

    /// An added line that starts with `++ ` reads `+++ ...` in the diff: it is still an added
    /// line of its hunk, not the header of another file, so a secret on it is found.
    #[test]
    fn an_added_line_starting_with_plus_plus_is_scanned() {
        let diff = "diff --git a/s.txt b/s.txt\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/s.txt\n@@ -0,0 +1,2 @@\n+first\n+++ token here\n";
        let h = hunks(diff);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].file, "s.txt");
        assert_eq!(h[0].start, 1);
        assert_eq!(h[0].lines, vec!["first", "++ token here"]);
    }
}
