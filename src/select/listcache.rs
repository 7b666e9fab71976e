//! A cache of listing summaries keyed by absolute file path, size and modification time, so
//! that a warm `list` of thousands of sessions reads only directory entries and one small file.
//! Agents only append to sessions, which changes both size and mtime: a changed file is
//! scanned again. The cache lives in the state dir; when it cannot be read or written the
//! listing simply scans.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::model::{SessionCounts, Summary};

#[derive(Clone, Serialize, Deserialize)]
struct Cached {
    size: u64,
    mtime_ns: u128,
    summary: Summary,
    /// What `stats` counted in the file (`None` until it has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    counts: Option<SessionCounts>,
}

#[derive(Default)]
pub struct ListCache {
    file: Option<PathBuf>,
    old: HashMap<String, Cached>,
    seen: Mutex<HashMap<String, Cached>>,
    dirty: Mutex<bool>,
}

/// Bumped when the scanners' answers change, so that summaries cached by an older build of the
/// same version are scanned again. 2: the scanners read fields instead of matching bytes, and
/// created/updated have one definition. 3: titles are masked. 4: summaries name the source of
/// a relayed session (`relay_of`). 5: a salvaged line keeps the same tail however it was read
/// in pieces (`jsonl::keep_tail`), so a title taken from one may change by a character. 6: the
/// same when whitespace runs long after the line's JSON or where its kept end starts. 7: a
/// relayed session's source says when it was relayed (`relay_of.relayed_at`). 8: keys are
/// absolute paths, and a Gemini CLI relay's last activity is its newest message. 9: entries
/// may hold `stats`' counts. 10: every agent's reader marks interruptions and refused calls,
/// which those counts hold.
const VERSION: u32 = 10;

/// A file's key: its absolute path. A listing made from another directory must find the same
/// entries, and one made from here must not take another directory's file of the same
/// relative name.
fn key_of(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// A file's modification time in nanoseconds (0: unknown, which is never taken as unchanged).
fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// What says whether a session changed: its file's size and modification time. A session kept
/// in a database has no file of its own (its path is under the database file, see
/// `Store::stand_in`): the database's and its write-ahead log's together then, so that any
/// write to the database summarizes its sessions again.
fn file_state(path: &Path) -> Option<(u64, u128)> {
    let state = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.len(), mtime_ns(&m)));
    if let Some(s) = state(path) {
        return Some(s);
    }
    let db = path.parent().filter(|d| d.is_file())?;
    let (size, mtime) = state(db)?;
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let (wal_size, wal_mtime) = state(Path::new(&wal)).unwrap_or((0, 0));
    Some((size + wal_size, mtime.max(wal_mtime)))
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    tool_version: String,
    entries: HashMap<String, Cached>,
}

impl ListCache {
    /// A cache that never remembers (tests of the scanners, or no state dir).
    pub fn none() -> ListCache {
        ListCache::default()
    }

    pub fn load() -> ListCache {
        let Some(file) = crate::paths::state_dir().map(|d| d.join("list-cache.json")) else {
            return ListCache::none();
        };
        let old = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<OnDisk>(&b).ok())
            // A new version of the scanners may count differently: start over.
            .filter(|d| d.version == VERSION && d.tool_version == env!("CARGO_PKG_VERSION"))
            .map(|d| d.entries)
            .unwrap_or_default();
        ListCache {
            file: Some(file),
            old,
            ..Default::default()
        }
    }

    /// The summary of `path`: from the cache when the file is unchanged, else from `scan`.
    pub fn summarize(
        &self,
        path: &Path,
        scan: impl FnOnce(&Path) -> Result<Summary>,
    ) -> Result<Summary> {
        let Some((size, mtime_ns)) = file_state(path) else {
            return scan(path);
        };
        let key = key_of(path);
        if let Some(c) = self.old.get(&key)
            && c.size == size
            && c.mtime_ns == mtime_ns
            && mtime_ns != 0
        {
            self.seen.lock().unwrap().insert(key, c.clone());
            return Ok(c.summary.clone());
        }
        let summary = scan(path)?;
        *self.dirty.lock().unwrap() = true;
        self.seen.lock().unwrap().insert(
            key,
            Cached {
                size,
                mtime_ns,
                summary: summary.clone(),
                counts: None,
            },
        );
        Ok(summary)
    }

    /// The counts of `path`, a file this listing summarized: from the cache when they were
    /// counted in it as it is now, else from `count`, kept for the next time when the file did
    /// not change meanwhile.
    pub fn counted(
        &self,
        path: &Path,
        count: impl FnOnce(&Path) -> Result<SessionCounts>,
    ) -> Result<SessionCounts> {
        let key = key_of(path);
        let known = self
            .seen
            .lock()
            .unwrap()
            .get(&key)
            .map(|c| (c.size, c.mtime_ns, c.counts.clone()));
        if let Some((_, _, Some(counts))) = &known {
            return Ok(counts.clone());
        }
        let counts = count(path)?;
        let now = file_state(path);
        // Kept only for the file its summary was taken from: one that changed since is
        // summarized and counted again next time.
        if let (Some((size, mtime, None)), Some(now)) = (known, now)
            && now == (size, mtime)
            && mtime != 0
        {
            if let Some(c) = self.seen.lock().unwrap().get_mut(&key) {
                c.counts = Some(counts.clone());
            }
            *self.dirty.lock().unwrap() = true;
        }
        Ok(counts)
    }

    /// Writes what this listing saw (atomically), dropping files that are gone.
    pub fn save(&self) {
        let Some(file) = &self.file else { return };
        let seen = self.seen.lock().unwrap();
        let dirty = *self.dirty.lock().unwrap() || seen.len() != self.old.len();
        if !dirty {
            return;
        }
        let disk = OnDisk {
            version: VERSION,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            entries: seen.clone(),
        };
        let Some(dir) = file.parent() else { return };
        let write = || -> Result<()> {
            std::fs::create_dir_all(dir)?;
            let mut tmp = tempfile::Builder::new()
                .prefix(".list-cache.")
                .tempfile_in(dir)?;
            // Buffered: serde_json writes each token on its own, a syscall apiece unbuffered.
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut tmp);
            serde_json::to_writer(&mut out, &disk)?;
            std::io::Write::flush(&mut out)?;
            drop(out);
            tmp.persist(file)?;
            Ok(())
        };
        // A cache that cannot be written only costs the next listing a scan.
        let _ = write();
    }
}
