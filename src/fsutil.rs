//! File writes that land whole or not at all.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::exit::{CliError, ExitCode};

/// Creates `dir` and any missing parents, returning the folders it created, outermost first,
/// so that a write that fails can take them away again (see `remove_created_dirs`).
pub fn create_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(missing)
}

/// Removes the folders `create_dirs` created, innermost first, each only if it is still empty
/// (anything another program put there meanwhile stays).
pub fn remove_created_dirs(created: &[PathBuf]) {
    for d in created.iter().rev() {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
    }
}

/// Writes a new file atomically (temp file in the same folder, fsync, rename) and refuses to
/// replace an existing one. Before the file takes its name, `check` reads it back where it lies
/// (a temporary file in the same folder, with the same extension, since a reader may go by it)
/// while it is flushed to disk on another thread: a file that fails the check never lands, and
/// the rename only names the bytes checked. The file then takes `mtime`, if given.
pub fn write_new_file(
    path: &Path,
    bytes: &[u8],
    mtime: Option<std::time::SystemTime>,
    check: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    write_new_file_checked(path, |w| Ok(w.write_all(bytes)?), mtime, Some(check))
}

/// `write_new_file`, with the content written by `write` as it is made: a long session's
/// export need not be held in memory whole beside the session itself.
pub fn write_new_file_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    write_new_file_checked(path, write, None, None::<fn(&Path) -> Result<()>>)
}

fn write_new_file_checked(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
    mtime: Option<std::time::SystemTime>,
    check: Option<impl FnOnce(&Path) -> Result<()>>,
) -> Result<()> {
    let dir = folder_of(path);
    if path.exists() {
        return Err(CliError::new(
            ExitCode::Error,
            format!(
                "{} already exists; session-relay does not replace files. Remove it or choose another name.",
                path.display()
            ),
        )
        .into());
    }
    // The check reads it as the file it will be, and a reader may go by the extension.
    let suffix = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(&suffix)
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, tmp);
    write(&mut out)?;
    // A failed write or check leaves nothing behind: the temporary file is removed when
    // dropped.
    let tmp = out
        .into_inner()
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error()))?;
    match check {
        None => tmp.as_file().sync_all()?,
        Some(check) => std::thread::scope(|s| -> Result<()> {
            let synced = s.spawn(|| tmp.as_file().sync_all());
            let checked = check(tmp.path());
            let synced = synced
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            checked?;
            Ok(synced?)
        })?,
    }
    // Only now: `clean` takes a temporary file last written over an hour ago for one an
    // interrupted relay left, and a source's time is often older than that.
    if let Some(t) = mtime {
        tmp.as_file().set_modified(t)?;
    }
    tmp.persist_noclobber(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

/// How the temporary files session-relay writes beside a file before renaming it into place
/// begin. A process killed before the rename leaves one (`clean` removes stale ones).
pub const TEMP_PREFIX: &str = ".session-relay-";

/// The folder environment variable `var` names, as a Node CLI reads one: set and not empty,
/// `~` for the home folder, relative to the current directory.
pub fn dir_from_env(var: &str) -> Option<PathBuf> {
    let v = std::env::var_os(var).filter(|v| !v.is_empty())?;
    let p = crate::config::expand_tilde(Path::new(&v));
    Some(std::path::absolute(&p).unwrap_or(p))
}

/// The session files an agent keeps in `dir`: its `*.jsonl` files, without those a relay is
/// still writing or an interrupted one left (`TEMP_PREFIX`), sorted.
pub fn jsonl_files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(files) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = files
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            p.is_file() && name.ends_with(".jsonl") && !name.starts_with(TEMP_PREFIX)
        })
        .collect();
    out.sort();
    out
}

/// `jsonl_files_in` of the folder `sub` of every folder of `root` (`root/*/sub/*.jsonl`; `sub`
/// empty: `root/*/*.jsonl`), as agents that keep a folder per project lay their sessions out.
pub fn jsonl_files_by_project(root: &Path, sub: &str) -> Vec<PathBuf> {
    let Ok(projects) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for project in projects.filter_map(|e| e.ok()) {
        if project.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(jsonl_files_in(&project.path().join(sub)));
        }
    }
    out.sort();
    out
}

/// The folder `path` is (or will be) in: `.` for a bare file name.
pub fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The file a path names: a symbolic link's target (a dotfile manager keeps agents' settings
/// and indexes as links into its own folder), else the path itself.
fn link_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// Replaces a file's content atomically (temp file in the same folder with the file's
/// permissions, fsync, rename over it), or creates it. A symbolic link is followed: the file
/// it points to is replaced and the link stays.
/// Whether the folders `path` needs exist as folders or can be made: the nearest of them that
/// exists is a folder, not a file (a store whose `sessions` was replaced by a file).
pub fn folders_can_hold(path: &Path) -> Result<()> {
    let Some(nearest) = path.ancestors().skip(1).find(|a| a.exists()) else {
        return Ok(());
    };
    if !nearest.is_dir() {
        anyhow::bail!(
            "cannot write {}: {} is not a folder",
            path.display(),
            nearest.display()
        );
    }
    Ok(())
}

pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let path = &link_target(path);
    let dir = folder_of(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

/// Removes the lines of a file an agent owns (an index) for which `ours` holds, keeping every
/// other byte; false when there is none. The file is replaced atomically (`replace_file`), and
/// lines the agent appends meanwhile are kept: what reached the old file after it was read is
/// appended to the new one once it is in place (an agent opens the index to append a line).
pub fn remove_lines(path: &Path, ours: impl Fn(&[u8]) -> bool) -> Result<bool> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let path = &link_target(path);
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    let mut kept = Vec::with_capacity(bytes.len());
    let mut removed = false;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if ours(line) {
            removed = true;
        } else {
            kept.extend_from_slice(line);
        }
    }
    if !removed {
        return Ok(false);
    }
    let dir = folder_of(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.as_file().set_permissions(f.metadata()?.permissions())?;
    tmp.write_all(&kept)?;
    tmp.as_file().sync_all()?;
    let mut new = tmp
        .persist(path)
        .map_err(|e| anyhow::anyhow!("cannot rewrite {}: {}", path.display(), e.error))?;
    // Appended to the old file after it was read (`f` still reads it): a line the agent was
    // writing as the new file took its place. An appender that opened the old file just before
    // the rename may be descheduled for a while before it writes, so the watch ends only after
    // the old file has stayed quiet for `QUIET` (not after one quiet poll: on a busy machine
    // that lost lines), and in any case after `WATCH_AT_MOST`.
    const POLL: std::time::Duration = std::time::Duration::from_millis(2);
    const QUIET: std::time::Duration = std::time::Duration::from_millis(40);
    const WATCH_AT_MOST: std::time::Duration = std::time::Duration::from_secs(2);
    let mut copied = bytes.len() as u64;
    let started = std::time::Instant::now();
    let mut last_growth = started;
    while last_growth.elapsed() < QUIET && started.elapsed() < WATCH_AT_MOST {
        std::thread::sleep(POLL);
        let now = f.metadata()?.len();
        if now <= copied {
            continue;
        }
        let mut late = vec![0u8; (now - copied) as usize];
        f.read_exact_at(&mut late, copied)?;
        std::io::Seek::seek(&mut new, std::io::SeekFrom::End(0))?;
        new.write_all(&late)?;
        copied = now;
        last_growth = std::time::Instant::now();
    }
    new.sync_all()?;
    Ok(true)
}

/// Appends one line to a file an agent owns (an index), whole or not at all: if the file does
/// not end with a newline (an earlier writer was cut off), the line starts on a fresh one
/// rather than gluing onto it; if the write fails part way (disk full, quota), the file is cut
/// back to exactly what it was, unless someone else appended meanwhile.
pub fn append_line(path: &Path, line: &str) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {} to append", path.display()))?;
    let meta = f.metadata()?;
    anyhow::ensure!(meta.is_file(), "{} is not a regular file", path.display());
    let before = meta.len();
    let mut bytes = Vec::with_capacity(line.len() + 2);
    if before > 0 {
        let mut last = [0u8; 1];
        f.read_exact_at(&mut last, before - 1)?;
        if last[0] != b'\n' {
            bytes.push(b'\n');
        }
    }
    bytes.extend_from_slice(line.trim_end_matches('\n').as_bytes());
    bytes.push(b'\n');
    let mut written = 0usize;
    let result = loop {
        match f.write(&bytes[written..]) {
            Ok(0) => break Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
            Ok(n) => {
                written += n;
                if written == bytes.len() {
                    break f.sync_data();
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    if let Err(e) = result {
        let now = f.metadata().map(|m| m.len()).unwrap_or(0);
        let restored = now == before + written as u64 && f.set_len(before).is_ok();
        return Err(anyhow::Error::new(e).context(format!(
            "could not append to {} ({})",
            path.display(),
            if restored {
                "the file is as it was"
            } else {
                "another program appended meanwhile; the file was not cut back"
            }
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent appending to its index while session-relay removes its own lines loses none
    /// of them: the agent's lines all stay, once each, and ours all go. (A line written as the
    /// new file takes the old one's place may come after one written just later.)
    #[test]
    fn removing_lines_keeps_what_is_appended_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("session_index.jsonl");
        let ours: String = (0..40)
            .map(|i| format!("{{\"id\":\"ours-{i}\"}}\n"))
            .collect();
        std::fs::write(&index, ours).unwrap();
        let appender = {
            let index = index.clone();
            std::thread::spawn(move || {
                for i in 0..400 {
                    // As an agent appends: open, write the line, close (here every half millisecond; Codex appends a line per session).
                    std::thread::sleep(std::time::Duration::from_micros(500));
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(&index)
                        .unwrap();
                    f.write_all(format!("{{\"id\":\"agent-{i}\"}}\n").as_bytes())
                        .unwrap();
                }
            })
        };
        for i in 0..40 {
            let id = format!("\"ours-{i}\"");
            remove_lines(&index, |l| {
                std::str::from_utf8(l).is_ok_and(|l| l.contains(&id))
            })
            .unwrap();
        }
        appender.join().unwrap();
        let text = std::fs::read_to_string(&index).unwrap();
        let mut agent: Vec<&str> = text.lines().filter(|l| l.contains("agent-")).collect();
        agent.sort_unstable();
        let mut expected: Vec<String> = (0..400)
            .map(|i| format!("{{\"id\":\"agent-{i}\"}}"))
            .collect();
        expected.sort_unstable();
        let missing = expected
            .iter()
            .filter(|e| !agent.contains(&e.as_str()))
            .count();
        assert!(
            agent.len() == expected.len() && missing == 0,
            "{} of the agent's 400 lines in the index, {missing} missing",
            agent.len()
        );
        assert!(!text.contains("ours-"), "ours all removed");
        assert!(text.ends_with('\n'));
    }

    /// A file kept as a symbolic link (a dotfile manager's) is written through the link.
    #[test]
    fn a_linked_file_is_replaced_where_it_lies_and_the_link_stays() {
        let dir = tempfile::tempdir().unwrap();
        let dotfiles = dir.path().join("dotfiles");
        std::fs::create_dir(&dotfiles).unwrap();
        let real = dotfiles.join("index.jsonl");
        std::fs::write(&real, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n").unwrap();
        let link = dir.path().join("index.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(remove_lines(&link, |l| l.starts_with(b"{\"id\":\"a\"")).unwrap());
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\"id\":\"b\"}\n");
        replace_file(&link, b"{}\n").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{}\n");
        // No temporary file left beside the link or the file.
        for d in [dir.path(), dotfiles.as_path()] {
            for e in std::fs::read_dir(d).unwrap() {
                let name = e.unwrap().file_name();
                assert!(
                    !name.to_string_lossy().starts_with(".session-relay-"),
                    "{name:?}"
                );
            }
        }
    }

    #[test]
    fn an_append_never_glues_onto_a_cut_off_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index.jsonl");
        std::fs::write(&p, "{\"id\":\"a\"}\n{\"id\":\"b\", \"cut").unwrap();
        append_line(&p, "{\"id\":\"c\"}").unwrap();
        append_line(&p, "{\"id\":\"d\"}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\"id\":\"a\"}\n{\"id\":\"b\", \"cut\n{\"id\":\"c\"}\n{\"id\":\"d\"}\n"
        );
        let fresh = dir.path().join("new.jsonl");
        append_line(&fresh, "x").unwrap();
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "x\n");
    }

    /// A file written as it is made lands whole, beyond the writer's buffer, or not at all:
    /// a failure midway leaves neither the file nor a temporary one, and an existing file is
    /// never replaced.
    #[test]
    fn a_new_file_written_as_it_is_made_lands_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("export.jsonl");
        let line = "x".repeat(1000) + "\n";
        write_new_file_with(&p, |w| {
            for _ in 0..500 {
                w.write_all(line.as_bytes())?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), line.repeat(500));

        let failed = dir.path().join("failed.jsonl");
        let err = write_new_file_with(&failed, |w| {
            w.write_all(&vec![b'y'; 300_000])?;
            anyhow::bail!("the session could not be serialised")
        })
        .unwrap_err();
        assert!(err.to_string().contains("could not be serialised"), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, vec!["export.jsonl".to_string()], "{left:?}");

        let again = write_new_file_with(&p, |w| Ok(w.write_all(b"other")?));
        assert!(again.unwrap_err().to_string().contains("already exists"));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), line.repeat(500));
    }

    /// The check reads the whole file, beside where it will lie and by the same extension,
    /// before it has its name; a failed check leaves nothing, and the time given is the file's
    /// only once it has passed (`clean` goes by a temporary file's time).
    #[test]
    fn a_checked_file_lands_only_after_its_check_passed() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = "{\"a\":1}\n".repeat(20_000);
        let when =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let names = |dir: &Path| -> Vec<String> {
            let mut v: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            v.sort();
            v
        };

        let failed = dir.path().join("bad.json");
        let err = write_new_file(&failed, bytes.as_bytes(), Some(when), |seen| {
            assert_eq!(seen.parent(), Some(dir.path()));
            assert!(
                seen.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(TEMP_PREFIX)
            );
            assert_eq!(seen.extension().unwrap(), "json");
            assert_eq!(std::fs::read_to_string(seen).unwrap(), bytes);
            assert!(!failed.exists(), "named before its check");
            anyhow::bail!("reads back as something else")
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("reads back as something else"),
            "{err}"
        );
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));

        let good = dir.path().join("good.jsonl");
        let mut checked_at = None;
        write_new_file(&good, bytes.as_bytes(), Some(when), |seen| {
            assert_eq!(seen.extension().unwrap(), "jsonl");
            assert_eq!(std::fs::read(seen).unwrap(), bytes.as_bytes());
            checked_at = Some(std::fs::metadata(seen)?.modified()?);
            Ok(())
        })
        .unwrap();
        assert!(
            checked_at.is_some_and(|t| t != when),
            "unchecked, or took the old time before its check"
        );
        assert_eq!(names(dir.path()), vec!["good.jsonl".to_string()]);
        assert_eq!(std::fs::read(&good).unwrap(), bytes.as_bytes());
        assert_eq!(std::fs::metadata(&good).unwrap().modified().unwrap(), when);
    }
}

#[cfg(test)]
mod created_dirs_tests {
    use super::*;

    /// The folders made for a write are given back outermost first, and taken away only while
    /// they are empty: a file another program put in one keeps it and the folders above it.
    #[test]
    fn only_the_folders_made_are_taken_away_and_only_when_empty() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("2026")).unwrap();
        let day = root.path().join("2026/12/01");
        let created = create_dirs(&day).unwrap();
        assert_eq!(
            created,
            vec![root.path().join("2026/12"), root.path().join("2026/12/01")]
        );
        assert!(create_dirs(&day).unwrap().is_empty(), "nothing made twice");
        remove_created_dirs(&created);
        assert!(!root.path().join("2026/12").exists());
        assert!(
            root.path().join("2026").is_dir(),
            "a folder that was there stays"
        );

        let created = create_dirs(&day).unwrap();
        std::fs::write(root.path().join("2026/12/other.jsonl"), "{}").unwrap();
        remove_created_dirs(&created);
        assert!(!day.exists(), "the empty day folder goes");
        assert!(root.path().join("2026/12/other.jsonl").is_file());
    }
}
