//! `session-relay clean`: deletes relayed sessions, and only those. A file is deleted only when
//! the ledger says session-relay wrote it AND the file still carries its provenance record; a
//! relayed session the user went on working in is kept unless asked; native sessions are never
//! candidates at all, whatever their name or age, because candidates come from the ledger alone.

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
    let mut outcomes: Vec<(Outcome, Option<Entry>)> = Vec::new();
    let (ledger_entries, ledger_warnings) = ledger::read();
    notes.extend(ledger_warnings);
    let candidates = candidates(ledger_entries, args.agent.as_deref(), args.superseded);
    let progress = &args.progress;
    if let Some(p) = progress {
        p.start(
            "checking relayed sessions",
            Some(candidates.len() as u64),
            crate::progress::Unit::Items,
        );
    }
    let verdict = |e: &Entry| {
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
    };
    for e in candidates {
        if let Some(p) = progress {
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
            Verdict::Delete { continued } => {
                o.action = "would_delete";
                o.reason = format!(
                    "{}, {}",
                    if args.superseded {
                        "superseded by a newer relay"
                    } else {
                        "relayed by session-relay"
                    },
                    if continued {
                        "continued after the relay (--include-continued)"
                    } else {
                        "unchanged"
                    }
                );
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
        if let Some(p) = progress {
            p.start(
                "deleting relayed sessions",
                Some(to_delete as u64),
                crate::progress::Unit::Items,
            );
        }
        for (o, e) in outcomes.iter_mut() {
            let Some(e) = e else { continue };
            if let Some(p) = progress {
                p.advance(1);
            }
            // Judged again: the file may have been continued (or replaced) since, and a
            // question to the user can wait for minutes.
            match verdict(e) {
                Some(Verdict::Delete { .. }) => {}
                Some(Verdict::Keep(why)) => {
                    o.action = "kept";
                    o.reason = format!("{why} (changed since it was checked)");
                    continue;
                }
                _ => {
                    o.action = "missing";
                    o.reason = "already gone".into();
                    continue;
                }
            }
            match delete(cfg, e) {
                Ok(mut n) => {
                    o.action = "deleted";
                    notes.append(&mut n);
                }
                Err(err) => {
                    o.action = "kept";
                    o.reason = format!("{NOT_DELETED}{err:#}");
                }
            }
        }
    }

    // Temporary files a relay killed mid-write left beside a session or an index: named as
    // only session-relay names them, and untouched for an hour (no write still under way).
    let mut stale = 0;
    for s in &existing {
        for path in stale_temp_files(&s.home, now) {
            if args.dry_run || std::fs::remove_file(&path).is_ok() {
                stale += 1;
            }
        }
    }
    if stale > 0 {
        notes.push(format!(
            "{} {stale} temporary file(s) left by interrupted relays",
            if args.dry_run {
                "would remove"
            } else {
                "removed"
            }
        ));
    }

    drop(lock);
    Ok(Report {
        dry_run: args.dry_run,
        sessions: outcomes.into_iter().map(|(o, _)| o).collect(),
        notes,
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
    /// `continued`: the file changed since the relay (deleted with `--include-continued`).
    Delete {
        continued: bool,
    },
    Missing,
    Keep(String),
}

/// The newest relay entry per target file, without those already cleaned; with `superseded`,
/// only those a later relay of the same source superseded.
fn candidates(entries: Vec<Entry>, agent: Option<&str>, superseded: bool) -> Vec<Entry> {
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
    let mut v: Vec<Entry> = latest
        .into_values()
        .filter(|e| agent.is_none_or(|a| a == e.target.agent))
        .filter(|e| !superseded || replaced.contains(&e.target.path))
        .collect();
    v.sort_by(|a, b| a.time.cmp(&b.time).then(a.target.path.cmp(&b.target.path)));
    v
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
        Err(_) => return Verdict::Missing,
    };
    if meta.file_type().is_symlink() {
        return Verdict::Keep("a symbolic link: never followed".into());
    }
    if !meta.is_file() {
        return Verdict::Keep("not a regular file".into());
    }
    // The file must sit inside the agent's store as configured now (after resolving any
    // symbolic links in the folders above it).
    let inside = path
        .parent()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .is_some_and(|dir| {
            store
                .adapter
                .store_dirs(&store.home)
                .iter()
                .filter_map(|d| std::fs::canonicalize(d).ok())
                .any(|d| dir.starts_with(d))
        });
    if !inside {
        return Verdict::Keep("not inside the configured store".into());
    }
    if let (Some(cutoff), Some(age)) = (cutoff, args.older_than)
        && relayed.is_none_or(|t| t > cutoff)
    {
        return Verdict::Keep(format!("newer than {}", describe_age(age)));
    }
    match carries_provenance(path, e) {
        Ok(true) => {}
        Ok(false) => {
            return Verdict::Keep("no session-relay provenance record matching the ledger".into());
        }
        Err(err) => return Verdict::Keep(format!("unreadable: {err:#}")),
    }
    let changed =
        meta.len() != e.bytes || ledger::sha256_file(path).map_or(true, |h| h != e.target.sha256);
    if changed && !args.include_continued {
        return Verdict::Keep("continued after the relay (use --include-continued)".into());
    }
    Verdict::Delete { continued: changed }
}

/// Whether the file holds a provenance record naming the source the ledger recorded.
fn carries_provenance(path: &Path, e: &Entry) -> Result<bool> {
    let f = std::fs::File::open(path)?;
    let reader = std::io::BufReader::new(f);
    for line in reader.split(b'\n') {
        let line = line?;
        if !crate::jsonl::may_hold(&line, b"session-relay") {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let prov = v.pointer("/payload/session_relay").or_else(|| {
            (v.get("type").and_then(Value::as_str) == Some("session-relay"))
                .then(|| v.get("provenance"))
                .flatten()
        });
        if let Some(p) = prov
            && p.get("tool").and_then(Value::as_str) == Some("session-relay")
            && p.get("source_sha256").and_then(Value::as_str) == Some(e.source.sha256.as_str())
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Deletes one relayed session and its index entries, and records it in the ledger. The
/// entries go first: a session whose index entries cannot be removed (a database another
/// program holds locked) is kept, to be cleaned by a later run, rather than left named by an
/// index that outlives it.
fn delete(cfg: &Config, e: &Entry) -> Result<Vec<String>> {
    let path = PathBuf::from(&e.target.path);
    let mut notes = Vec::new();
    if let Some(adapter) = crate::adapters::by_name(&e.target.agent) {
        let home = &cfg.agent(adapter.name()).session_root;
        let mut n = adapter
            .unregister(home, &e.target.id)
            .context("its index entries could not be removed, so it was kept")?;
        notes.append(&mut n);
    }
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    ledger::append(&Entry {
        event: "clean".into(),
        time: ledger::time_text(Utc::now()),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        ..e.clone()
    })?;
    Ok(notes)
}
