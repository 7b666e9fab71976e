//! A checkout's changes since HEAD carried as a git bundle, and taken into another checkout.
//!
//! The changes (tracked and untracked files, as `.gitignore` leaves them) are committed in a
//! temporary index (`GIT_INDEX_FILE` in a temporary folder) with `git commit-tree`, on HEAD.
//! The branch that names the commit lives in a temporary repository that borrows the
//! checkout's objects (`objects/info/alternates`), where `git bundle create` packs it: the
//! checkout's branch, index, stash and refs are never written, not even for a moment. Only
//! objects are added to its store (the blobs and the commit, unreachable, which `git gc`
//! removes in time).

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::exit::{CliError, ExitCode};
use crate::git::{command as git, run};
use crate::redact::{Counts, Redactor};

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

/// How much of one line the scan holds at once: a longer line (a minified file, a data blob)
/// is scanned in windows of this size, so that changes of any size take about this much memory.
const WINDOW: usize = 1 << 20;
/// How much consecutive windows of a long line share: any match of a rule no longer than this
/// (the secret, with the name or separator its rule reads before it) lies whole in one of them.
/// The longest the built-in rules take whole, private keys and JSON Web Keys, are a few KB.
const OVERLAP: usize = 64 << 10;
/// How far back from where a long line would be cut a quote is looked for (see `cut`).
const NEAR: usize = 16 << 10;

/// The lines the changes add that hold a secret by the masking rules, as `file:line (kind)`:
/// never the secret itself. git's output is read as it comes, a line (or a window of a long
/// one) at a time: a change of hundreds of MB is never held whole.
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
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().context("cannot run git to read the changes")?;
    // Read beside its output: git would stop once the pipe of its messages is full.
    let mut stderr = child.stderr.take().context("no pipe from git")?;
    let messages = std::thread::spawn(move || {
        let mut m = Vec::new();
        let _ = stderr.read_to_end(&mut m);
        m
    });
    let stdout = child.stdout.take().context("no pipe from git")?;
    let found = secrets_in(BufReader::with_capacity(1 << 16, stdout), redactor);
    let status = child.wait().context("cannot run git to read the changes")?;
    let messages = messages.join().unwrap_or_default();
    if !status.success() {
        bail!(
            "git could not read the changes: {}",
            String::from_utf8_lossy(&messages).trim()
        );
    }
    found.context("cannot read the changes from git")
}

/// The lines a diff read from `r` adds that hold a secret, as `file:line (kind)`: a line
/// read in windows is reported once, with the kinds found in any of them.
fn secrets_in<R: BufRead>(r: R, redactor: &Redactor) -> io::Result<Vec<String>> {
    let mut found = Vec::new();
    let mut counts = Counts::new();
    let mut masked = false;
    added_lines(r, |file, n, text, last| {
        masked |= holds_secret(redactor, text, &mut counts);
        if last {
            if masked {
                let file = redactor.text(file, &mut Default::default());
                found.push(format!("{file}:{n} ({})", kinds(&counts)));
            }
            counts.clear();
            masked = false;
        }
    })?;
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
    let mut counts = Counts::new();
    holds_secret(redactor, text, &mut counts).then(|| kinds(&counts))
}

/// Whether the masking rules find a secret in `text`, adding its kinds to `counts`.
fn holds_secret(redactor: &Redactor, text: &str, counts: &mut Counts) -> bool {
    matches!(redactor.text(text, counts), Cow::Owned(_))
}

fn kinds(counts: &Counts) -> String {
    counts
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Hands `f` the lines `git diff -U0` (read from `r`) adds, as it reads them: the file, the
/// line's number in it, the line's text (whole, or a window of a line longer than `WINDOW`),
/// and whether that is the line's last piece.
fn added_lines<R: BufRead>(r: R, mut f: impl FnMut(&str, usize, &str, bool)) -> io::Result<()> {
    let mut pieces = Pieces::new(r);
    let mut diff = Diff::default();
    while let Some(p) = pieces.next()? {
        let text = String::from_utf8_lossy(p.bytes);
        if let Some((n, added)) = diff.take(&text, p.first) {
            f(&diff.file, n, added, p.last);
        }
    }
    Ok(())
}

/// Where a reader of `git diff -U0` is, line by line.
#[derive(Default)]
struct Diff {
    file: String,
    /// A file's header (`--- a/x`, `+++ b/x`) comes before its first hunk: inside a hunk, a
    /// line `+++ ...` is an added line that starts with `++ `, and is scanned as one.
    in_header: bool,
    /// The number of the hunk's next added line: `None` before the first hunk.
    next: Option<usize>,
    /// The number of the line being read, when it is an added one.
    adding: Option<usize>,
}

impl Diff {
    /// Takes a piece of a line (`first`: its start): the number of the added line it is of and
    /// its text, when it is of one.
    fn take<'p>(&mut self, piece: &'p str, first: bool) -> Option<(usize, &'p str)> {
        if !first {
            return self.adding.map(|n| (n, piece));
        }
        self.adding = None;
        if piece.starts_with("diff ") {
            self.in_header = true;
        } else if let (true, Some(name)) = (self.in_header, piece.strip_prefix("+++ ")) {
            self.file = name.strip_prefix("b/").unwrap_or(name).to_string();
        } else if piece.starts_with("@@ ") {
            self.in_header = false;
            // `@@ -a,b +c,d @@`: the added lines start at c.
            let start = piece
                .split(' ')
                .find_map(|p| p.strip_prefix('+'))
                .and_then(|p| p.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            self.next = Some(start);
        } else if let (Some(added), Some(n)) = (piece.strip_prefix('+'), self.next) {
            self.adding = Some(n);
            self.next = Some(n + 1);
            return Some((n, added));
        }
        None
    }
}

/// A piece of a line: its bytes (without the line break), whether it starts the line and
/// whether it ends it.
struct Piece<'a> {
    bytes: &'a [u8],
    first: bool,
    last: bool,
}

/// The lines of a reader in pieces: a line of at most `WINDOW` bytes whole, a longer one in
/// windows of at most `WINDOW` bytes, each starting `OVERLAP` bytes or a little more before the
/// one before it ends.
struct Pieces<R> {
    r: R,
    buf: Vec<u8>,
    /// How many bytes from the start of `buf` the last piece handed out.
    given: usize,
    /// Whether the last piece ended its line.
    ended: bool,
}

impl<R: BufRead> Pieces<R> {
    fn new(r: R) -> Self {
        Pieces {
            r,
            buf: Vec::new(),
            given: 0,
            ended: true,
        }
    }

    fn next(&mut self) -> io::Result<Option<Piece<'_>>> {
        let first = self.ended;
        let from = if first {
            self.buf.len()
        } else {
            cut(&self.buf, self.given - OVERLAP)
        };
        self.buf.drain(..from);
        self.given = self.given.saturating_sub(from);
        loop {
            let room = WINDOW - self.buf.len();
            let read = self.r.fill_buf()?;
            if read.is_empty() {
                // The end, after a line with no line break: the rest of it, once.
                self.ended = true;
                if self.buf.len() == self.given {
                    return Ok(None);
                }
                self.given = self.buf.len();
                return Ok(Some(Piece {
                    bytes: &self.buf,
                    first,
                    last: true,
                }));
            }
            let take = read.len().min(room);
            if let Some(i) = memchr::memchr(b'\n', &read[..take]) {
                self.buf.extend_from_slice(&read[..i]);
                self.r.consume(i + 1);
                self.ended = true;
                self.given = self.buf.len();
                // As `str::lines` reads a line: without the `\r` of a `\r\n`.
                let bytes = self.buf.strip_suffix(b"\r").unwrap_or(&self.buf);
                return Ok(Some(Piece {
                    bytes,
                    first,
                    last: true,
                }));
            }
            self.buf.extend_from_slice(&read[..take]);
            self.r.consume(take);
            if self.buf.len() == WINDOW {
                self.ended = false;
                self.given = cut(&self.buf, WINDOW);
                return Ok(Some(Piece {
                    bytes: &self.buf[..self.given],
                    first,
                    last: false,
                }));
            }
        }
    }
}

/// Where a long line is cut, at or before `at`: before a quote when one is near, else where a
/// character starts. Text on either side of a quote reads to the rules as it does in the
/// whole line: a quote is no part of a name or an unquoted value, and the rules that take a
/// text's start or end where a separator may be take a quote for one.
fn cut(buf: &[u8], at: usize) -> usize {
    let from = at.saturating_sub(NEAR);
    let near = &buf[from..at];
    near.iter()
        .rposition(|&b| b == b'"' || b == b'\'')
        .or_else(|| near.iter().rposition(|&b| b & 0xC0 != 0x80))
        .map_or(at, |i| from + i)
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
        let mut got = Vec::new();
        added_lines(diff.as_bytes(), |file, n, text, last| {
            got.push((file.to_string(), n, text.to_string(), last));
        })
        .unwrap();
        let line = |n, text: &str| ("s.txt".to_string(), n, text.to_string(), true);
        assert_eq!(got, vec![line(1, "first"), line(2, "++ token here")]);
    }

    const TOKEN: &str = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";

    /// A diff adding `lines` to `f.txt` from line 1.
    fn diff_adding(lines: &[&str]) -> Vec<u8> {
        let mut d = format!(
            "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,0 +1,{} @@\n",
            lines.len()
        );
        for l in lines {
            d.push('+');
            d.push_str(l);
            d.push('\n');
        }
        d.into_bytes()
    }

    /// A line longer than a window is scanned in windows, none longer than `WINDOW`: a secret
    /// that the first window's end cuts in two is found whole in the next, which starts
    /// `OVERLAP` bytes before, and the line is reported once, with its file and number. So is a
    /// secret deep in a long line, and one on the line after.
    #[test]
    fn a_secret_cut_by_a_long_lines_window_is_found_and_reported_once() {
        // Words and spaces, no quote: the first window ends at a character, one byte before
        // `WINDOW`, in the middle of the token (the diff's `+` is the line's first byte).
        let filler = |n: usize| "lorem ipsum dolor ".repeat(n / 18 + 1)[..n].to_string();
        let mid = WINDOW - 1 - TOKEN.len() / 2;
        let cut = format!("{} {TOKEN} {}", filler(mid - 2), filler(WINDOW));
        let deep = format!("{} {TOKEN} {}", filler(5 * WINDOW / 2), filler(100));
        let last = format!("x {TOKEN}");
        let diff = diff_adding(&["nothing here", &cut, "x", &deep, &last]);
        let mut pieces = Pieces::new(diff.as_slice());
        let mut widest = 0;
        let mut cut_in_two = false;
        while let Some(p) = pieces.next().unwrap() {
            widest = widest.max(p.bytes.len());
            let text = String::from_utf8_lossy(p.bytes);
            cut_in_two |= !p.last && text.ends_with(&TOKEN[..TOKEN.len() / 2]);
        }
        assert!(cut_in_two, "the test's token is not where a window ends");
        assert!(widest <= WINDOW, "a piece of {widest} bytes");
        let redactor = Redactor::new(&[], &[]).unwrap();
        let found = secrets_in(diff.as_slice(), &redactor).unwrap();
        assert_eq!(
            found,
            [
                "f.txt:2 (github_token)",
                "f.txt:4 (github_token)",
                "f.txt:5 (github_token)"
            ]
        );
    }

    /// A long line is cut before a quote near the cut, where the text on each side reads to
    /// the rules as in the line (a window starting at `TOKEN=x` would read as an env line),
    /// else before a character: never inside one.
    #[test]
    fn a_long_line_is_cut_before_a_near_quote_else_between_characters() {
        let mut line = b"a=\"b\" c=\"".to_vec();
        let quote = line.len() - 1;
        line.extend_from_slice(b"#xTOKEN=");
        let at = line.len() - "TOKEN=".len();
        line.extend_from_slice("Zq8vLm3pR7tY2wK9\"".as_bytes());
        assert_eq!(cut(&line, at), quote);
        let redactor = Redactor::new(&[], &[]).unwrap();
        let finds = |b: &[u8]| secret_kinds(&redactor, std::str::from_utf8(b).unwrap());
        assert_eq!(finds(&line[at..]).as_deref(), Some("assignment"));
        assert_eq!(finds(&line[quote..]), None);
        assert_eq!(finds(&line), None);
        let far = [vec![b'"'], vec![b'x'; NEAR], "é".repeat(4).into_bytes()].concat();
        let at = far.len() - 1;
        assert_eq!(cut(&far, at), far.len() - 2);
        assert!(std::str::from_utf8(&far[cut(&far, at)..]).is_ok());
    }
}
