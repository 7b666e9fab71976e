//! `session-relay clean`: deletes relayed sessions, and only those. A file is deleted only when
//! the ledger says session-relay wrote it AND the file still carries its provenance record and
//! declares the session id the ledger names; a relayed session the user went on working in is
//! kept unless asked, and so is one an agent resumes while `clean` runs (see `remove`); native
//! sessions are never candidates at all, whatever their name or age, because candidates come
//! from the ledger alone.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::exit::{CliError, ExitCode};
use crate::ledger::{self, Entry};
use crate::select::{self as store, Store};
use crate::text::describe_age;

pub struct Options<'a> {
    /// Only sessions relayed longer ago than this (`None`: any age).
    pub older_than: Option<Duration>,
    /// Only relays that a later relay of the same source superseded.
    pub superseded: bool,
    pub agent: Option<String>,
    pub dry_run: bool,
    /// Delete without asking.
    pub yes: bool,
    /// Also delete relayed sessions that were continued after the relay.
    pub include_continued: bool,
    /// Asks the user whether to delete N sessions; `None` when nobody can answer (cron).
    pub ask: Option<&'a dyn Fn(usize) -> Result<bool>>,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub dry_run: bool,
    pub sessions: Vec<Outcome>,
    pub notes: Vec<String>,
    /// Relayed sessions the ledger records as in place, before `--agent` and `--superseded`
    /// chose among them.
    pub in_ledger: usize,
    /// The choice made among them, to say why none was a candidate.
    pub superseded: bool,
    pub agent: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Outcome {
    pub agent: String,
    pub id: String,
    pub path: String,
    pub relayed_at: String,
    /// deleted, would_delete, kept, missing
    pub action: &'static str,
    pub reason: String,
}

/// The reason given for a session that was to be deleted and could not be.
const NOT_DELETED: &str = "could not delete: ";

impl Report {
    /// How many sessions could not be deleted: a clean that leaves some behind fails.
    pub fn failures(&self) -> usize {
        self.sessions
            .iter()
            .filter(|s| s.reason.starts_with(NOT_DELETED))
            .count()
    }
}

pub fn run(cfg: &Config, args: &Options) -> Result<Report> {
    let lock = clean_lock()?;
    let stores = store::stores(cfg, args.agent.as_deref());
    let mut notes = Vec::new();
    let mut existing = Vec::new();
    for s in &stores {
        if s.exists() {
            existing.push(s);
        } else {
            notes.push(format!(
                "{} store not found at {}: nothing to clean there",
                s.adapter.display_name(),
                s.adapter.store_dirs(&s.home)[0].display()
            ));
        }
    }
    if existing.is_empty() {
        return Err(CliError::new(ExitCode::NoStore, notes.join("\n")).into());
    }

    let now = Utc::now();
    let cutoff = args.older_than.map(|d| now - d);
    let (ledger_entries, ledger_warnings) = ledger::read();
    notes.extend(ledger_warnings);
    // A session an interrupted clean left set aside is named again, whatever this clean
    // deletes: otherwise no list would show it.
    if !args.dry_run {
        for e in ledger::live_relays(&ledger_entries) {
            notes.extend(put_back_left(Path::new(&e.target.path)));
        }
    }
    let (candidates, in_ledger) =
        candidates(ledger_entries, args.agent.as_deref(), args.superseded);
    let verdict = |e: &Entry| verdict_of(e, &existing, args, cutoff);
    let mut outcomes = judge_all(candidates, &verdict, args);
    let to_delete = outcomes
        .iter()
        .filter(|(o, _)| o.action == "would_delete")
        .count();
    let act = if args.dry_run || to_delete == 0 {
        false
    } else if args.yes {
        true
    } else if let Some(ask) = args.ask {
        ask(to_delete)?
    } else {
        notes.push(format!(
            "{to_delete} session(s) would be deleted; standard input is not a terminal, so nothing was deleted: rerun with --yes"
        ));
        false
    };
    if act {
        if let Some(p) = &args.progress {
            p.start(
                "deleting relayed sessions",
                Some(to_delete as u64),
                crate::progress::Unit::Items,
            );
        }
        for (o, e) in outcomes.iter_mut() {
            let Some(e) = e else { continue };
            if let Some(p) = &args.progress {
                p.advance(1);
            }
            delete_confirmed(cfg, e, o, &verdict, args.superseded, &mut notes);
        }
    }
    notes.extend(remove_stale_temp_files(&existing, now, args.dry_run));
    drop(lock);
    Ok(Report {
        dry_run: args.dry_run,
        sessions: outcomes.into_iter().map(|(o, _)| o).collect(),
        notes,
        in_ledger,
        superseded: args.superseded,
        agent: args.agent.clone(),
    })
}

/// One `clean` at a time: the lock in the state folder, or why not.
fn clean_lock() -> Result<std::fs::File> {
    let state = crate::paths::require_state_dir()?;
    std::fs::create_dir_all(&state)
        .with_context(|| format!("cannot create {}", state.display()))?;
    let lock_path = state.join("clean.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        return Err(CliError::new(
            ExitCode::Busy,
            format!(
                "another `session-relay clean` is running (lock {})",
                lock_path.display()
            ),
        )
        .into());
    }
    Ok(lock)
}

/// Each candidate's outcome as judged now (`would_delete`, `missing` or `kept`), with its
/// entry when it may be deleted.
fn judge_all(
    candidates: Vec<Entry>,
    verdict: &dyn Fn(&Entry) -> Option<Verdict>,
    args: &Options,
) -> Vec<(Outcome, Option<Entry>)> {
    if let Some(p) = &args.progress {
        p.start(
            "checking relayed sessions",
            Some(candidates.len() as u64),
            crate::progress::Unit::Items,
        );
    }
    let mut outcomes = Vec::new();
    for e in candidates {
        if let Some(p) = &args.progress {
            p.advance(1);
        }
        let Some(verdict) = verdict(&e) else {
            continue;
        };
        let mut o = Outcome {
            agent: e.target.agent.clone(),
            id: e.target.id.clone(),
            path: e.target.path.clone(),
            relayed_at: e.time.clone(),
            action: "kept",
            reason: String::new(),
        };
        match verdict {
            Verdict::Delete { continued, .. } => {
                o.action = "would_delete";
                o.reason = deletion_reason(args.superseded, continued);
                outcomes.push((o, Some(e)));
            }
            Verdict::Missing => {
                o.action = "missing";
                o.reason = "already gone".into();
                outcomes.push((o, None));
            }
            Verdict::Keep(why) => {
                o.reason = why;
                outcomes.push((o, None));
            }
        }
    }
    outcomes
}

/// Temporary files a relay killed mid-write left beside a session or an index: named as only
/// session-relay names them, and untouched for an hour (no write still under way). Removed
/// unless `dry_run`; a note says how many.
fn remove_stale_temp_files(stores: &[&Store], now: DateTime<Utc>, dry_run: bool) -> Option<String> {
    let mut stale = 0;
    for s in stores {
        for path in stale_temp_files(&s.home, now) {
            if dry_run || std::fs::remove_file(&path).is_ok() {
                stale += 1;
            }
        }
    }
    (stale > 0).then(|| {
        format!(
            "{} {stale} temporary file(s) left by interrupted relays",
            if dry_run { "would remove" } else { "removed" }
        )
    })
}

/// Regular files under an agent's home (its stores and indexes, symbolic links not followed)
/// named as session-relay names its temporary files, last written over an hour before `now`.
fn stale_temp_files(home: &Path, now: chrono::DateTime<Utc>) -> Vec<PathBuf> {
    let hour_ago = std::time::SystemTime::from(now) - std::time::Duration::from_secs(3600);
    walkdir::WalkDir::new(home)
        .max_depth(6)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(crate::fsutil::TEMP_PREFIX)
        })
        .filter(|e| {
            e.metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .is_some_and(|t| t < hour_ago)
        })
        .map(|e| e.into_path())
        .collect()
}

enum Verdict {
    /// `continued`: the file changed since the relay (deleted with `--include-continued`);
    /// `seen`: the bytes judged, the only ones that may be deleted.
    Delete {
        continued: bool,
        seen: Seen,
    },
    Missing,
    Keep(String),
}

/// A file's bytes as one read of it found them.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    len: u64,
    sha256: String,
}

fn deletion_reason(superseded: bool, continued: bool) -> String {
    format!(
        "{}, {}",
        if superseded {
            "superseded by a newer relay"
        } else {
            "relayed by session-relay"
        },
        if continued {
            "continued after the relay (--include-continued)"
        } else {
            "unchanged"
        }
    )
}

fn verdict_of(
    e: &Entry,
    existing: &[&Store],
    args: &Options,
    cutoff: Option<DateTime<Utc>>,
) -> Option<Verdict> {
    let store = existing
        .iter()
        .find(|s| s.adapter.name() == e.target.agent)?;
    let relayed = DateTime::parse_from_rfc3339(&e.time)
        .map(|t| t.with_timezone(&Utc))
        .ok();
    Some(judge(
        Path::new(&e.target.path),
        e,
        store,
        args,
        relayed,
        cutoff,
    ))
}

/// Judges a session the user agreed to delete once more (the question may have waited for
/// minutes) and deletes it if it still may go, filling in its outcome.
fn delete_confirmed(
    cfg: &Config,
    e: &Entry,
    o: &mut Outcome,
    verdict: &dyn Fn(&Entry) -> Option<Verdict>,
    superseded: bool,
    notes: &mut Vec<String>,
) {
    // The relay's lock: a relay of the same source, or `doctor --fix`, may be registering it.
    let _lock = match super::relay::relay_lock(&e.source.sha256, &e.target.agent) {
        Ok(lock) => lock,
        Err(err) => {
            o.action = "kept";
            o.reason = format!("{NOT_DELETED}{err:#}");
            return;
        }
    };
    let (continued, seen) = match verdict(e) {
        Some(Verdict::Delete { continued, seen }) => (continued, seen),
        Some(Verdict::Keep(why)) => {
            o.action = "kept";
            o.reason = format!("{why} (changed since it was checked)");
            return;
        }
        _ => {
            o.action = "missing";
            o.reason = "already gone".into();
            return;
        }
    };
    // The ledger says first that the session may no longer be registered: a clean killed
    // between taking its index entries out and deleting it leaves a session that `doctor
    // --fix` registers again, not one silently missing from its agent's picker.
    let mut unregister = |id: &str| {
        ledger::append(&Entry {
            event: ledger::UNREGISTERED.into(),
            time: ledger::time_text(Utc::now()),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            supersedes: Vec::new(),
            registered: Some(false),
            ..e.clone()
        })?;
        match crate::adapters::by_name(&e.target.agent) {
            Some(adapter) => adapter.unregister(&cfg.agent(adapter.name()).session_root, id),
            None => Ok(Vec::new()),
        }
    };
    match remove(Path::new(&e.target.path), e, &seen, &mut unregister) {
        Removal::Deleted(mut n) => {
            o.action = "deleted";
            o.reason = deletion_reason(superseded, continued);
            notes.append(&mut n);
            notes.extend(remove_own_folder(e));
            let recorded = ledger::append(&Entry {
                event: "clean".into(),
                time: ledger::time_text(Utc::now()),
                tool_version: env!("CARGO_PKG_VERSION").into(),
                continued: Some(continued),
                ..e.clone()
            });
            if let Err(err) = recorded {
                notes.push(format!(
                    "{}: deleted, but not recorded in the ledger: {err:#}",
                    e.target.path
                ));
            }
        }
        Removal::Missing => {
            o.action = "missing";
            o.reason = "already gone".into();
        }
        Removal::Kept { why, failed } => {
            o.action = "kept";
            o.reason = if failed {
                format!("{NOT_DELETED}{why}")
            } else {
                why
            };
        }
    }
}

/// Removes the folder the target's store keeps for a deleted session alone (Copilot CLI's
/// `session-state/<id>/`, which the relay made), when nothing is left in it: a file the agent or
/// the person put there keeps it, and the folder of a session that shares it is never one.
fn remove_own_folder(e: &Entry) -> Option<String> {
    let adapter = crate::adapters::by_name(&e.target.agent)?;
    let folder = adapter
        .store()
        .own_folder(Path::new(&e.target.path), &e.target.id)?;
    // Removes only an empty folder, at the moment it is removed.
    std::fs::remove_dir(&folder).ok()?;
    Some(format!("{}: its empty folder removed", folder.display()))
}

/// The newest relay entry per target file, without those already cleaned; with `superseded`,
/// only those a later relay of the same source superseded. Also how many there were before
/// `agent` and `superseded` chose.
fn candidates(entries: Vec<Entry>, agent: Option<&str>, superseded: bool) -> (Vec<Entry>, usize) {
    let replaced = ledger::superseded(&entries);
    let mut latest: HashMap<String, Entry> = HashMap::new();
    for e in entries {
        match e.event.as_str() {
            "relay" if !e.standalone => {
                latest.insert(e.target.path.clone(), e);
            }
            "clean" | ledger::WITHDRAWN => {
                latest.remove(&e.target.path);
            }
            _ => {}
        }
    }
    let in_ledger = latest.len();
    let mut v: Vec<Entry> = latest
        .into_values()
        .filter(|e| agent.is_none_or(|a| a == e.target.agent))
        .filter(|e| !superseded || replaced.contains(&e.target.path))
        .collect();
    v.sort_by(|a, b| a.time.cmp(&b.time).then(a.target.path.cmp(&b.target.path)));
    (v, in_ledger)
}

fn judge(
    path: &Path,
    e: &Entry,
    store: &Store,
    args: &Options,
    relayed: Option<DateTime<Utc>>,
    cutoff: Option<DateTime<Utc>>,
) -> Verdict {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) if std::fs::symlink_metadata(quarantine_name(path)).is_ok() => {
            return Verdict::Keep(format!(
                "left as {} by an interrupted clean; a clean without --dry-run names it again",
                quarantine_name(path).display()
            ));
        }
        Err(_) => return Verdict::Missing,
    };
    if meta.file_type().is_symlink() {
        return Verdict::Keep("a symbolic link: never followed".into());
    }
    if !meta.is_file() {
        return Verdict::Keep("not a regular file".into());
    }
    // The file must sit inside the agent's store as configured now.
    if !store.holds(path) {
        return Verdict::Keep("not inside the configured store".into());
    }
    if let (Some(cutoff), Some(age)) = (cutoff, args.older_than)
        && relayed.is_none_or(|t| t > cutoff)
    {
        return Verdict::Keep(format!("newer than {}", describe_age(age)));
    }
    let read = std::fs::File::open(path)
        .map_err(anyhow::Error::from)
        .and_then(|f| read_session(std::io::BufReader::new(f), e));
    let (seen, declared) = match read {
        Ok(r) => r,
        Err(err) => return Verdict::Keep(format!("unreadable: {err:#}")),
    };
    if let Some(why) = declared.refusal(e) {
        return Verdict::Keep(why);
    }
    let changed = seen.len != e.bytes || seen.sha256 != e.target.sha256;
    if changed && !args.include_continued {
        return Verdict::Keep("continued after the relay (use --include-continued)".into());
    }
    Verdict::Delete {
        continued: changed,
        seen,
    }
}

/// What a relayed file says of itself.
#[derive(Default)]
struct Declared {
    /// It holds a provenance record naming the source the ledger recorded.
    proven: bool,
    /// The session id it declares: the provenance record's own (Codex's `session_meta`
    /// payload, Claude Code's record), else its first record's (Gemini CLI's metadata).
    id: Option<String>,
}

impl Declared {
    /// Why the file must not be deleted for ledger entry `e`, if it must not: only a file the
    /// ledger's relay wrote goes, and only the index entries of the session it declares.
    fn refusal(&self, e: &Entry) -> Option<String> {
        if !self.proven {
            return Some("no session-relay provenance record matching the ledger".into());
        }
        match &self.id {
            Some(id) if *id == e.target.id => None,
            Some(id) => Some(format!(
                "the file declares session {id}, the ledger {}: neither it nor an index entry is touched",
                e.target.id
            )),
            None => Some("the file declares no session id".into()),
        }
    }
}

/// Reads a session from its start: its bytes, hashed, and what it declares of itself.
fn read_session(mut reader: impl BufRead, e: &Entry) -> Result<(Seen, Declared)> {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    let mut len = 0u64;
    let mut declared = Declared::default();
    let mut first_id = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        hash.update(&line);
        let first = len == 0;
        len += n as u64;
        if declared.proven || !(first || crate::jsonl::may_hold(&line, b"session-relay")) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if first {
            first_id = v.get("sessionId").and_then(Value::as_str).map(String::from);
        }
        let (prov, id) = match v.pointer("/payload/session_relay") {
            Some(p) => (Some(p), v.pointer("/payload/id")),
            None => (
                (v.get("type").and_then(Value::as_str) == Some("session-relay"))
                    .then(|| v.get("provenance"))
                    .flatten(),
                v.get("sessionId"),
            ),
        };
        if let Some(p) = prov
            && p.get("tool").and_then(Value::as_str) == Some("session-relay")
            && p.get("source_sha256").and_then(Value::as_str) == Some(e.source.sha256.as_str())
        {
            declared.proven = true;
            declared.id = id.and_then(Value::as_str).map(String::from);
        }
    }
    if declared.proven && declared.id.is_none() {
        declared.id = first_id;
    }
    let sha256 = crate::text::hex(&hash.finalize());
    Ok((Seen { len, sha256 }, declared))
}

/// The name a session takes while `clean` checks it the last time, in its own folder: hidden,
/// and named as no agent names a session, so that none lists or opens it meanwhile; and not
/// named as session-relay's temporary files, which `clean` removes unread once an hour old (a
/// rename keeps the file's time).
fn quarantine_name(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".session-relay-clean");
    path.with_file_name(name)
}

/// Renames without ever replacing a file at `to` (renameat2's RENAME_NOREPLACE where the
/// system has it, else a hard link and an unlink).
fn rename_noclobber(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut path = tempfile::TempPath::try_from_path(from)?;
    // A TempPath removes its file when dropped; this one is the user's and must stay.
    path.disable_cleanup(true);
    path.persist_noclobber(to).map_err(|e| e.error)
}

/// Names a session an interrupted clean left under its quarantine name again, unless its path
/// is taken; the note says which.
fn put_back_left(path: &Path) -> Option<String> {
    let q = quarantine_name(path);
    std::fs::symlink_metadata(&q).ok()?;
    Some(match rename_noclobber(&q, path) {
        Ok(()) => format!(
            "{}: named again (an interrupted clean had left it as {})",
            path.display(),
            q.display()
        ),
        Err(err) => format!(
            "{} was left by an interrupted clean and cannot be named {} again ({err}): compare the two and keep the one you need",
            q.display(),
            path.display()
        ),
    })
}

/// How the removal of one relayed session ended.
enum Removal {
    Deleted(Vec<String>),
    Missing,
    /// `failed`: it was kept against the user's wish, and something is left to do (a clean
    /// that leaves one behind fails).
    Kept {
        why: String,
        failed: bool,
    },
}

/// Deletes one relayed session, with its index entries (through `unregister`), only if it is
/// still the file `judge` saw (`seen`) at the moment it goes: a session an agent resumes
/// meanwhile, opening it to append or holding it open, is kept whole at its path, with every
/// line the agent wrote. The file first takes its quarantine name, so that no program can open
/// it by its path any more; then it is checked (no other program holds it open to write, the
/// bytes judged, the id the ledger names), its index entries are removed for that id, it is
/// checked again and unlinked; and if a write still reached it (from a program this system
/// does not show), it is put back whole.
fn remove(
    path: &Path,
    e: &Entry,
    seen: &Seen,
    unregister: &mut dyn FnMut(&str) -> Result<Vec<String>>,
) -> Removal {
    let q = quarantine_name(path);
    match rename_noclobber(path, &q) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Removal::Missing,
        Err(err) => {
            return Removal::Kept {
                why: format!("cannot move it aside to {} ({err})", q.display()),
                failed: true,
            };
        }
    }
    let keep = |why: String, unregistered: bool| put_back(&q, path, why, unregistered);
    // Opened only as a regular file (a link or a pipe swapped in is never followed nor
    // waited on); `examine` then makes sure it is the file of that name.
    if !std::fs::symlink_metadata(&q).is_ok_and(|m| m.is_file()) {
        return keep("replaced by another file during clean".into(), false);
    }
    let file = match std::fs::File::open(&q) {
        Ok(f) => f,
        Err(err) => return keep(format!("unreadable during clean: {err}"), false),
    };
    // The id whose index entries go: the one the file declares, and only if the ledger's
    // relay wrote it (a ledger line edited to name a native session leaves that one alone).
    let id = match examine(&file, &q, e, seen) {
        Ok((_, declared)) => match (declared.refusal(e), declared.id) {
            (None, Some(id)) => id,
            (why, _) => return keep(why.unwrap_or_default(), false),
        },
        Err(why) => return keep(why, false),
    };
    let index_note =
        "its index entries were removed: `session-relay doctor --fix` registers it again";
    let notes = match unregister(&id) {
        Ok(notes) => notes,
        Err(err) => {
            return keep(
                format!(
                    "its index entries could not be removed, so it was kept: {err:#}; if some were, `session-relay doctor --fix` registers it again"
                ),
                true,
            );
        }
    };
    let before = match examine(&file, &q, e, seen) {
        Ok((meta, _)) => meta,
        Err(why) => return keep(format!("{why}; {index_note}"), true),
    };
    if std::fs::symlink_metadata(path).is_ok() {
        return keep(format!("written to during clean; {index_note}"), true);
    }
    if let Err(err) = std::fs::remove_file(&q) {
        return keep(format!("cannot remove it ({err}); {index_note}"), true);
    }
    if std::fs::symlink_metadata(path).is_ok() {
        let whole = match join_at(&file, path) {
            Ok(()) => JOINED.to_string(),
            Err(err) => format!("it could not be put back ({err:#})"),
        };
        return Removal::Kept {
            why: format!("written to as it was deleted: {whole}; {index_note}"),
            failed: true,
        };
    }
    // A write that reached the file after its last check: from a program that held it open
    // where this system shows no other program's files.
    let after = file.metadata().ok();
    if after
        .as_ref()
        .is_none_or(|a| a.len() != before.len() || a.modified().ok() != before.modified().ok())
    {
        let whole = match restore(&file, path, &q) {
            Ok(at) => format!("put back whole as {}", at.display()),
            Err(err) => format!("it could not be put back ({err:#})"),
        };
        return Removal::Kept {
            why: format!("written to as it was deleted: {whole}; {index_note}"),
            failed: true,
        };
    }
    Removal::Deleted(notes)
}

/// Names the quarantined file `q` `path` again, as `remove` keeps it for `why`; a failure once
/// its index entries went (`unregistered`), or a failure to put it back, is a failed clean.
fn put_back(q: &Path, path: &Path, why: String, unregistered: bool) -> Removal {
    match rename_noclobber(q, path) {
        Ok(()) => Removal::Kept {
            why,
            failed: unregistered,
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Removal::Kept {
            why: format!("{why}; it is no longer at {}", q.display()),
            failed: true,
        },
        // An agent that appends with O_CREAT (Claude Code) made a new file at the path.
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => match join_back(q, path) {
            Ok(()) => Removal::Kept {
                why: format!("{why}; {JOINED}"),
                failed: unregistered,
            },
            Err(join) => Removal::Kept {
                why: format!(
                    "{why}; a file appeared at {} meanwhile and the two could not be joined ({join:#}), so the session is {}",
                    path.display(),
                    q.display()
                ),
                failed: true,
            },
        },
        Err(err) => Removal::Kept {
            why: format!(
                "{why}; it could not be named {} again ({err}), so it is {}",
                path.display(),
                q.display()
            ),
            failed: true,
        },
    }
}

/// Checks a file `remove` holds open under its quarantine name: it is still the file of that
/// name, no other program holds it open to write, and it holds the bytes judged. Gives its
/// metadata as it was before it was read, and what it declares; or why it must stay.
fn examine(
    file: &std::fs::File,
    q: &Path,
    e: &Entry,
    seen: &Seen,
) -> std::result::Result<(std::fs::Metadata, Declared), String> {
    use std::os::unix::fs::MetadataExt;
    let unreadable = |err: &dyn std::fmt::Display| format!("unreadable during clean: {err}");
    let meta = file.metadata().map_err(|err| unreadable(&err))?;
    let named =
        std::fs::symlink_metadata(q).map_err(|err| format!("moved away during clean ({err})"))?;
    if !named.is_file() || (named.dev(), named.ino()) != (meta.dev(), meta.ino()) {
        return Err("replaced by another file during clean".into());
    }
    let writers = writers(&meta, q);
    if !writers.is_empty() {
        return Err(format!(
            "in use: open for writing in {}",
            writers.join(", ")
        ));
    }
    let mut reader = std::io::BufReader::new(file);
    std::io::Seek::rewind(&mut reader).map_err(|err| unreadable(&err))?;
    let (now, declared) = read_session(reader, e).map_err(|err| unreadable(&format!("{err:#}")))?;
    if now != *seen {
        return Err(format!(
            "written to during clean ({} bytes, {} when judged)",
            now.len, seen.len
        ));
    }
    Ok((meta, declared))
}

/// What a kept session's reason says when an agent made a new file at its path meanwhile.
const JOINED: &str = "a new file appeared at its path meanwhile (an agent appending to it): the session was put back there with what the agent wrote after it";

/// Joins the session set aside as `q` with the file an agent created at `path` meanwhile (see
/// `join_at`), and lets go of `q`.
fn join_back(q: &Path, path: &Path) -> Result<()> {
    let session = std::fs::File::open(q).with_context(|| format!("cannot read {}", q.display()))?;
    join_at(&session, path)?;
    std::fs::remove_file(q).with_context(|| format!("cannot remove {}", q.display()))
}

/// Puts a session back at `path`, where an agent that opens its session to append with
/// O_CREAT (as Claude Code does) made a new file holding only what it wrote while the session
/// was set aside: the session's bytes first, then the new file's, the whole replacing the new
/// file at once; and what the agent appended to the new file in between is added after.
fn join_at(session: &std::fs::File, path: &Path) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut bytes = Vec::new();
    let mut reader = session;
    reader.rewind()?;
    reader.read_to_end(&mut bytes)?;
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        anyhow::bail!("{} is not a regular file", path.display());
    }
    let mut written = std::fs::File::open(path)?;
    let mut taken = written.read_to_end(&mut bytes)? as u64;
    crate::fsutil::replace_file(path, &bytes)?;
    // An append between the read and the replacing went to the new file's old inode.
    for _ in 0..100 {
        let len = written.metadata()?.len();
        if len <= taken {
            return Ok(());
        }
        let mut more = Vec::new();
        written.seek(SeekFrom::Start(taken))?;
        (&mut written).take(len - taken).read_to_end(&mut more)?;
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(&more)?;
        taken = len;
    }
    anyhow::bail!("{} kept growing while it was joined", path.display())
}

/// Writes the bytes of a file unlinked while still open whole at `path`, or at `q` if a file
/// was created at `path` meanwhile; never replacing either. Returns where.
fn restore(file: &std::fs::File, path: &Path, q: &Path) -> Result<PathBuf> {
    let mut bytes = Vec::new();
    let mut reader = file;
    std::io::Seek::rewind(&mut reader)?;
    std::io::Read::read_to_end(&mut reader, &mut bytes)?;
    let mtime = file.metadata()?.modified().ok();
    let to = if std::fs::symlink_metadata(path).is_err() {
        path
    } else {
        q
    };
    crate::fsutil::write_new_file(to, &bytes, mtime, |_| Ok(()))?;
    Ok(to.to_path_buf())
}

/// The programs that hold the file `meta` describes open to write, as "name (pid N)": an agent
/// running in a session goes on writing into it after it is deleted. Read from /proc, which
/// shows the processes of this user (an agent runs as its user); a descriptor's link there
/// names the file by its current name, so only those named as `q` is are looked at closer.
#[cfg(target_os = "linux")]
fn writers(meta: &std::fs::Metadata, q: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let me = std::process::id().to_string();
    let Some(name) = q.file_name() else {
        return Vec::new();
    };
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for p in processes.flatten() {
        let pid = p.file_name();
        let Some(pid) = pid
            .to_str()
            .filter(|s| *s != me && s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let same = std::fs::read_link(fd.path()).is_ok_and(|l| l.file_name() == Some(name))
                && std::fs::metadata(fd.path())
                    .is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino()));
            if same && opened_to_write(&p.path().join("fdinfo").join(fd.file_name())) {
                let program = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
                found.push(format!("{} (pid {pid})", program.trim()));
                break;
            }
        }
    }
    found
}

/// Where no /proc shows other programs' files: none seen (`remove` still puts back a file
/// written to as it went).
#[cfg(not(target_os = "linux"))]
fn writers(_meta: &std::fs::Metadata, _q: &Path) -> Vec<String> {
    Vec::new()
}

/// Whether /proc's fdinfo says a descriptor was opened to write (its access mode is not
/// read-only); one that cannot be read counts as opened to write.
#[cfg(target_os = "linux")]
fn opened_to_write(fdinfo: &Path) -> bool {
    std::fs::read_to_string(fdinfo)
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        })
        .is_none_or(|flags| flags & 0o3 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A relayed Codex session in a folder of its own, and its ledger entry.
    struct Relayed {
        dir: tempfile::TempDir,
        path: PathBuf,
        entry: Entry,
        seen: Seen,
    }

    fn relayed() -> Relayed {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join("rollout-2026-12-01T10-00-00-relay-id.jsonl");
        let meta = serde_json::json!({"type": "session_meta", "payload": {"id": "relay-id",
            "session_relay": {"tool": "session-relay", "source_sha256": "source-hash"}}});
        let text = format!(
            "{meta}\n{}\n",
            r#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#
        );
        std::fs::write(&path, &text).unwrap();
        let read = |f| read_session(std::io::BufReader::new(f), &dummy_entry()).unwrap();
        let (seen, _) = read(std::fs::File::open(&path).unwrap());
        let entry: Entry = serde_json::from_value(serde_json::json!({
            "event": "relay", "time": "2026-12-01T10:00:00Z", "tool_version": "0",
            "source": {"agent": "claude", "id": "s", "path": "/s.jsonl", "sha256": "source-hash"},
            "target": {"agent": "codex", "id": "relay-id", "path": path, "sha256": seen.sha256},
            "cwd": "/p", "bytes": seen.len,
        }))
        .unwrap();
        Relayed {
            dir,
            path,
            entry,
            seen,
        }
    }

    fn dummy_entry() -> Entry {
        serde_json::from_value(serde_json::json!({
            "event": "relay", "time": "", "tool_version": "",
            "source": {"agent": "", "id": "", "path": "", "sha256": "source-hash"},
            "target": {"agent": "", "id": "", "path": "", "sha256": ""}, "cwd": "",
        }))
        .unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    fn kept(r: Removal) -> (String, bool) {
        match r {
            Removal::Kept { why, failed } => (why, failed),
            Removal::Deleted(_) => panic!("deleted"),
            Removal::Missing => panic!("missing"),
        }
    }

    /// The id whose index entries go is the one the file declares, asked for once, and the
    /// file goes with nothing left beside it.
    #[test]
    fn a_session_unchanged_to_the_end_goes_with_the_index_entries_of_its_own_id() {
        let r = relayed();
        let mut asked = Vec::new();
        let mut unregister = |id: &str| {
            asked.push(id.to_string());
            Ok(vec![format!("{id}: removed")])
        };
        let removal = remove(&r.path, &r.entry, &r.seen, &mut unregister);
        assert!(matches!(removal, Removal::Deleted(ref n) if n == &["relay-id: removed"]));
        assert_eq!(asked, ["relay-id"]);
        assert!(names(r.dir.path()).is_empty(), "{:?}", names(r.dir.path()));
    }

    /// A ledger entry naming another session than the file declares (a native one's id) gets
    /// no index entry removed, and the file stays as it was.
    #[test]
    fn a_file_declaring_another_id_than_the_ledger_is_kept_and_no_index_touched() {
        let mut r = relayed();
        r.entry.target.id = "native-id".into();
        let before = std::fs::read(&r.path).unwrap();
        let mut unregister = |id: &str| -> Result<Vec<String>> { panic!("asked to forget {id}") };
        let (why, failed) = kept(remove(&r.path, &r.entry, &r.seen, &mut unregister));
        assert!(
            why.contains("relay-id") && why.contains("native-id"),
            "{why}"
        );
        assert!(!failed);
        assert_eq!(std::fs::read(&r.path).unwrap(), before);
        assert_eq!(names(r.dir.path()).len(), 1);
    }

    /// An agent that appends with O_CREAT (Claude Code) while the session is set aside makes
    /// a new file at its path holding only its line: the session is not deleted but put back
    /// there, its own bytes first and the agent's line after them, nothing left beside it.
    #[test]
    fn a_file_created_at_the_path_meanwhile_is_joined_after_the_session() {
        let r = relayed();
        let before = std::fs::read(&r.path).unwrap();
        let line = b"{\"type\":\"user\",\"message\":\"typed while cleaning\"}\n";
        let mut unregister = |_: &str| {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&r.path)
                .unwrap();
            f.write_all(line).unwrap();
            Ok(Vec::new())
        };
        let (why, failed) = kept(remove(&r.path, &r.entry, &r.seen, &mut unregister));
        assert!(why.contains("doctor --fix") && failed, "{why}");
        let mut want = before.clone();
        want.extend_from_slice(line);
        assert_eq!(std::fs::read(&r.path).unwrap(), want);
        assert_eq!(names(r.dir.path()).len(), 1, "{:?}", names(r.dir.path()));
    }

    /// Whatever happens to the file between the first check and the last (written to,
    /// replaced by a file of the same size, by a symbolic link to the same bytes), it is not
    /// deleted: what lies under the quarantine name then is named as the session again, and
    /// the reason says that its index entries were removed and how to register it again.
    #[test]
    fn a_file_changed_after_its_index_entries_went_is_put_back_as_it_is() {
        for change in ["append", "same size", "symlink"] {
            let r = relayed();
            let outside = r.dir.path().join("outside");
            std::fs::create_dir(&outside).unwrap();
            let q = quarantine_name(&r.path);
            let mut unregister = |_: &str| {
                let bytes = std::fs::read(&q).unwrap();
                match change {
                    "append" => {
                        let mut f = std::fs::OpenOptions::new().append(true).open(&q).unwrap();
                        f.write_all(b"{\"more\":1}\n").unwrap();
                    }
                    "same size" => {
                        let other = outside.join("same-size");
                        let mut swapped = bytes.clone();
                        swapped[bytes.len() - 3] ^= 1;
                        std::fs::write(&other, swapped).unwrap();
                        std::fs::rename(&other, &q).unwrap();
                    }
                    _ => {
                        let copy = outside.join("copy.jsonl");
                        std::fs::write(&copy, &bytes).unwrap();
                        std::fs::remove_file(&q).unwrap();
                        std::os::unix::fs::symlink(&copy, &q).unwrap();
                    }
                }
                Ok(Vec::new())
            };
            let before = std::fs::read(&r.path).unwrap();
            let (why, failed) = kept(remove(&r.path, &r.entry, &r.seen, &mut unregister));
            assert!(failed, "{change}");
            assert!(why.contains("doctor --fix"), "{change}: {why}");
            assert!(!q.exists() && q.symlink_metadata().is_err(), "{change}");
            let now = std::fs::read(&r.path).unwrap();
            match change {
                "append" => assert_eq!(now, [&before[..], b"{\"more\":1}\n"].concat()),
                "same size" => assert!(now.len() == before.len() && now != before),
                _ => {
                    assert!(r.path.symlink_metadata().unwrap().is_symlink());
                    assert_eq!(now, before);
                }
            }
        }
    }

    /// A program holding the session open to write (an agent running in it) keeps it, before
    /// any index entry goes; one holding it open only to read does not.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_session_another_program_holds_open_to_write_is_kept() {
        for write in [true, false] {
            let r = relayed();
            let f = if write {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&r.path)
                    .unwrap()
            } else {
                std::fs::File::open(&r.path).unwrap()
            };
            let mut holder = std::process::Command::new("sleep")
                .arg("30")
                .stdin(std::process::Stdio::null())
                .stdout(f)
                .spawn()
                .unwrap();
            let mut asked = 0;
            let mut unregister = |_: &str| {
                asked += 1;
                Ok(Vec::new())
            };
            let removal = remove(&r.path, &r.entry, &r.seen, &mut unregister);
            holder.kill().unwrap();
            holder.wait().unwrap();
            if write {
                let (why, failed) = kept(removal);
                assert!(why.contains("open for writing in sleep (pid"), "{why}");
                assert!(!failed && asked == 0);
                assert!(r.path.is_file());
                assert_eq!(names(r.dir.path()).len(), 1);
            } else {
                assert!(matches!(removal, Removal::Deleted(_)));
                assert!(!r.path.exists() && asked == 1);
            }
        }
    }

    /// A session an interrupted clean left under its quarantine name is named again, unless a
    /// file took its name meanwhile: then both stay, and the note says so.
    #[test]
    fn a_session_an_interrupted_clean_left_aside_is_named_again() {
        let r = relayed();
        let q = quarantine_name(&r.path);
        std::fs::rename(&r.path, &q).unwrap();
        let note = put_back_left(&r.path).unwrap();
        assert!(note.contains("named again"), "{note}");
        assert!(r.path.is_file() && !q.exists());
        assert!(put_back_left(&r.path).is_none());

        std::fs::copy(&r.path, &q).unwrap();
        std::fs::write(&r.path, "{}\n").unwrap();
        let note = put_back_left(&r.path).unwrap();
        assert!(note.contains("compare the two"), "{note}");
        assert!(q.exists());
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), "{}\n");
    }

    /// The quarantine name is hidden, in the session's folder, named as no agent lists a
    /// session, and not taken for an interrupted relay's temporary file, whatever its age.
    #[test]
    fn the_quarantine_name_is_listed_by_no_agent_and_never_taken_for_a_temporary_file() {
        let r = relayed();
        for name in [
            "rollout-2026-12-01T10-00-00-0199.jsonl",
            "0e08ab05-fe32-42e2-a1b1-2572678578a2.jsonl",
            "session-2026-12-06T04-44-d54a77c0.jsonl",
            "session-2025-06-12T09-30-5a1e6c3d.json",
        ] {
            let q = quarantine_name(&r.dir.path().join(name));
            assert_eq!(q.parent(), Some(r.dir.path()));
            let q_name = q.file_name().unwrap().to_string_lossy().into_owned();
            assert!(q_name.starts_with('.'), "{q_name}");
            assert!(!q_name.ends_with(".jsonl") && !q_name.ends_with(".json"));
            std::fs::write(&q, "{}\n").unwrap();
            let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
            std::fs::File::options()
                .write(true)
                .open(&q)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        assert!(stale_temp_files(r.dir.path(), Utc::now()).is_empty());
    }
}
