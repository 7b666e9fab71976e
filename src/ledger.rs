//! The relay ledger: one JSON line per relay in the platform state dir. Idempotence (and the
//! later `clean`) rely on it: it is the record of what session-relay wrote.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::adapter::StandIn;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Side {
    pub agent: String,
    pub id: String,
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    pub event: String,
    pub time: String,
    pub tool_version: String,
    pub source: Side,
    pub target: Side,
    /// The directory the relayed session belongs to.
    pub cwd: String,
    #[serde(default)]
    pub standalone: bool,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub messages: usize,
    /// Kept as written: nothing reads it back, and a ledger of thousands of relays parses
    /// much faster without a map built for each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Box<serde_json::value::RawValue>>,
    /// The source's size when it was relayed (entries before 0.1 lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_bytes: Option<u64>,
    /// Earlier relays of the same source, to the same agent and directory, that this one
    /// replaces (the source had grown since, or the relay was forced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<Side>,
    /// The title given to the target's index, to register the relay again if it must be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// On a store relay: `false` until a `registered` entry says the target's indexes list it
    /// (entries before 0.1 lack it: they were registered before they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered: Option<bool>,
    /// What the fit kept of the source: the turns and messages kept verbatim, shortened,
    /// summarized and left out (`Kept`; entries before 0.1 lack it). Kept as written, as
    /// `tokens` is: only `log` reads it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<Box<serde_json::value::RawValue>>,
    /// The secrets masked in what was written (`Secrets`; entries before 0.1 lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Box<serde_json::value::RawValue>>,
    /// On a `clean` entry: whether the session it deleted had been continued after the relay
    /// (entries before 0.1 lack it). Once the file is gone, only this tells `stats`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continued: Option<bool>,
}

/// Turns and messages of one part of a relay's fit.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Count {
    pub turns: usize,
    pub messages: usize,
}

/// An entry's `fit`: where the source's turns went.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Kept {
    pub verbatim: Count,
    pub shortened: Count,
    pub summarized: Count,
    pub left_out: Count,
}

/// An entry's `secrets`: whether the relay masked secrets (not with --no-redact), and how
/// many it masked by kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Secrets {
    pub redacted: bool,
    #[serde(default)]
    pub masked: std::collections::BTreeMap<String, usize>,
}

impl Entry {
    /// The entry's `fit`, when it records one that reads.
    pub fn kept(&self) -> Option<Kept> {
        serde_json::from_str(self.fit.as_ref()?.get()).ok()
    }

    /// The entry's `secrets`, when it records them in a form that reads.
    pub fn secrets_masked(&self) -> Option<Secrets> {
        serde_json::from_str(self.secrets.as_ref()?.get()).ok()
    }

    /// A relay into an agent's store (not a standalone file).
    pub fn is_store_relay(&self) -> bool {
        self.event == "relay" && !self.standalone
    }
}

/// An `Entry` read with its strings borrowed from the ledger's line, for what only looks
/// (`list` marking relayed sessions): a long ledger parsed into owned entries spends most of
/// its time allocating. It has every field an `Entry` has, of the same types,
/// so that a line reads as one exactly when it reads as the other.
#[derive(Debug, Deserialize)]
#[allow(
    dead_code,
    reason = "read only to accept exactly the lines an `Entry` accepts"
)]
pub struct EntryRef<'a> {
    #[serde(borrow)]
    pub event: Cow<'a, str>,
    #[serde(borrow)]
    pub time: Cow<'a, str>,
    #[serde(borrow)]
    tool_version: Cow<'a, str>,
    #[serde(borrow)]
    pub source: SideRef<'a>,
    #[serde(borrow)]
    pub target: SideRef<'a>,
    #[serde(borrow)]
    pub cwd: Cow<'a, str>,
    #[serde(default)]
    pub standalone: bool,
    #[serde(default)]
    bytes: u64,
    #[serde(default)]
    messages: usize,
    #[serde(default, borrow)]
    tokens: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    pub source_bytes: Option<u64>,
    #[serde(default, borrow)]
    pub supersedes: Vec<SideRef<'a>>,
    #[serde(default, borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(default)]
    registered: Option<bool>,
    #[serde(default, borrow)]
    fit: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow)]
    secrets: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    continued: Option<bool>,
}

impl EntryRef<'_> {
    /// See `Entry::is_store_relay`.
    pub fn is_store_relay(&self) -> bool {
        self.event == "relay" && !self.standalone
    }
}

/// A `Side` borrowed (see `EntryRef`).
#[derive(Debug, Deserialize)]
#[allow(
    dead_code,
    reason = "read only to accept exactly the lines a `Side` accepts"
)]
pub struct SideRef<'a> {
    #[serde(borrow)]
    pub agent: Cow<'a, str>,
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow)]
    pub path: Cow<'a, str>,
    #[serde(borrow)]
    pub sha256: Cow<'a, str>,
}

impl SideRef<'_> {
    pub fn to_side(&self) -> Side {
        Side {
            agent: self.agent.to_string(),
            id: self.id.to_string(),
            path: self.path.to_string(),
            sha256: self.sha256.to_string(),
        }
    }
}

/// What `live_relays` and `superseded` read of an entry, owned or borrowed.
pub trait Record {
    fn event(&self) -> &str;
    fn target_path(&self) -> &str;
    /// The target paths of the relays it supersedes.
    fn superseded_paths(&self) -> impl Iterator<Item = &str>;
}

impl Record for Entry {
    fn event(&self) -> &str {
        &self.event
    }
    fn target_path(&self) -> &str {
        &self.target.path
    }
    fn superseded_paths(&self) -> impl Iterator<Item = &str> {
        self.supersedes.iter().map(|s| s.path.as_str())
    }
}

impl Record for EntryRef<'_> {
    fn event(&self) -> &str {
        &self.event
    }
    fn target_path(&self) -> &str {
        &self.target.path
    }
    fn superseded_paths(&self) -> impl Iterator<Item = &str> {
        self.supersedes.iter().map(|s| &*s.path)
    }
}

/// The event that takes back a `relay` entry whose session did not land: a relay is recorded
/// before its session is written, so that a session in a store is always one the ledger
/// knows (and `clean` can remove), even if the relay is killed right after writing it.
pub const WITHDRAWN: &str = "withdrawn";

/// The event that says a store relay's target indexes list it (a `relay` entry is recorded
/// before its session is written, the registration comes after), and the one that says they
/// no longer do (`clean` found the session continued after taking it out of them).
pub const REGISTERED: &str = "registered";
pub const UNREGISTERED: &str = "unregistered";

/// The store relays in place whose session the target's indexes may not list: recorded as
/// `registered: false` or `unregistered` last. Such a relay is not done: the next relay of its
/// source or `doctor --fix` registers it.
pub fn awaiting_registration(entries: &[Entry]) -> Vec<&Entry> {
    let mut state: std::collections::HashMap<&str, (&Entry, bool)> =
        std::collections::HashMap::new();
    for e in entries {
        let path = e.target.path.as_str();
        match e.event.as_str() {
            "relay" if !e.standalone => {
                state.insert(path, (e, e.registered != Some(false)));
            }
            REGISTERED | UNREGISTERED => {
                if let Some(s) = state.get_mut(path) {
                    s.1 = e.event == REGISTERED;
                }
            }
            "clean" | WITHDRAWN => {
                state.remove(path);
            }
            _ => {}
        }
    }
    let mut waiting: Vec<&Entry> = state
        .into_values()
        .filter(|(_, registered)| !registered)
        .map(|(e, _)| e)
        .collect();
    waiting.sort_by(|a, b| a.time.cmp(&b.time).then(a.target.path.cmp(&b.target.path)));
    waiting
}

/// The relays still recorded as in place: every `relay` entry whose target no later `clean`
/// (or `withdrawn`) entry removed, oldest first.
pub fn live_relays<E: Record>(entries: &[E]) -> Vec<&E> {
    // Newest first, so that one pass knows every later removal: a ledger of thousands of
    // relays and cleans would otherwise be searched once per clean.
    let mut removed: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut live: Vec<&E> = Vec::new();
    for e in entries.iter().rev() {
        match e.event() {
            "relay" if !removed.contains(e.target_path()) => live.push(e),
            "clean" | WITHDRAWN => {
                removed.insert(e.target_path());
            }
            _ => {}
        }
    }
    live.reverse();
    live
}

/// The target paths of relays that a later relay superseded (one that was not withdrawn).
pub fn superseded<E: Record>(entries: &[E]) -> std::collections::HashSet<String> {
    let withdrawn: std::collections::HashSet<&str> = entries
        .iter()
        .filter(|e| e.event() == WITHDRAWN)
        .map(|e| e.target_path())
        .collect();
    entries
        .iter()
        .filter(|e| e.event() == "relay" && !withdrawn.contains(e.target_path()))
        .flat_map(|e| e.superseded_paths().map(str::to_string))
        .collect()
}

/// A time as the ledger, the relay's provenance and the hook log record it: RFC 3339 in UTC with
/// milliseconds (`2026-12-05T07:13:21.862Z`), as Claude Code and Codex write their own. A fixed
/// width: `to_rfc3339` wrote 0, 3, 6 or 9 digits of fraction as the clock gave them, so two
/// relays of one source could differ in length for no reason.
pub fn time_text(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub fn ledger_path() -> Result<PathBuf> {
    Ok(crate::paths::require_state_dir()?.join("ledger.jsonl"))
}

pub fn append(entry: &Entry) -> Result<PathBuf> {
    let path = ledger_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Whole or not at all, and never glued onto a line an earlier run left cut off.
    crate::fsutil::append_line(&path, &serde_json::to_string(entry)?)
        .with_context(|| format!("cannot record the relay in the ledger {}", path.display()))?;
    Ok(path)
}

/// The ledger's bytes, to read its entries borrowed (`entry_refs`); empty when there is none.
pub fn bytes() -> Vec<u8> {
    ledger_path()
        .ok()
        .and_then(|p| std::fs::read(p).ok())
        .unwrap_or_default()
}

/// Every readable entry of the ledger's `bytes`, oldest first, borrowed from them; a damaged
/// line is skipped (`read` warns of it).
pub fn entry_refs(bytes: &[u8]) -> Vec<EntryRef<'_>> {
    use rayon::prelude::*;
    // On every core: the lines are independent, and a ledger of thousands of relays is
    // megabytes of JSON.
    let lines: Vec<&[u8]> = lines(bytes).map(|(_, l)| l).collect();
    lines
        .par_iter()
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

/// Every readable entry, oldest first, and a warning (file and line) for each damaged line.
pub fn read() -> (Vec<Entry>, Vec<String>) {
    let Ok(path) = ledger_path() else {
        return (Vec::new(), Vec::new());
    };
    let Ok(bytes) = std::fs::read(&path) else {
        return (Vec::new(), Vec::new());
    };
    let (entries, warnings) = parse_lines(lines(&bytes), &path);
    (entries.into_iter().map(|(_, e)| e).collect(), warnings)
}

/// The readable entries that bear on the relays of the session `id`, oldest first: those that
/// name it (its relays, and their cleans and withdrawals, which repeat the relay's entry),
/// every clean and withdrawal, and every entry that names the target path of one of its
/// relays (a path can be written again, by another session's relay, and `superseded` goes by
/// path). No other entry changes what `live_relays` and `superseded` say of its relays.
///
/// A relay reads the ledger before it writes, and the ledger gains a line a relay: the other
/// lines are left unparsed, so that a relay does not slow down as the ledger grows. A line is
/// left only
/// when it cannot hold such an entry: it has no escape, so every string in it is spelled out,
/// and spells none of the words above.
pub fn entries_about(id: &str) -> Vec<Entry> {
    let Ok(path) = ledger_path() else {
        return Vec::new();
    };
    let Ok(bytes) = std::fs::read(&path) else {
        return Vec::new();
    };
    about(&bytes, &path, id)
}

fn about(bytes: &[u8], path: &Path, id: &str) -> Vec<Entry> {
    use memchr::memmem::Finder;
    let words = [id, "clean", WITHDRAWN].map(Finder::new);
    let (picked, rest): (Vec<_>, Vec<_>) = lines(bytes).partition(|(_, l)| {
        memchr::memchr(b'\\', l).is_some() || words.iter().any(|w| w.find(l).is_some())
    });
    let mut entries = parse_lines(picked, path).0;
    let targets: Vec<&str> = entries
        .iter()
        .filter(|(_, e)| e.event == "relay" && e.source.id == id)
        .map(|(_, e)| e.target.path.as_str())
        .collect();
    if !targets.is_empty() {
        // A session relayed many times names many paths: one automaton for them all.
        let named = aho_corasick::AhoCorasick::new(targets)
            .expect("the paths of a session's relays build an automaton");
        let more = rest.into_iter().filter(|(_, l)| named.is_match(l));
        let more = parse_lines(more, path).0;
        entries.extend(more);
        entries.sort_by_key(|(n, _)| *n);
    }
    entries.into_iter().map(|(_, e)| e).collect()
}

/// The first session of the chain of relays that led to the session `side` names: the relays
/// into it walked back, one source after another, as far as the ledger records them. Only the
/// lines naming each session on the way are read (see `entries_about`).
pub fn chain_root(side: &Side) -> (String, String) {
    let mut at = (side.agent.clone(), side.id.clone(), side.path.clone());
    let Ok(bytes) = ledger_path().and_then(|p| Ok((std::fs::read(&p)?, p))) else {
        return (at.0, at.1);
    };
    let (bytes, path) = bytes;
    let mut seen = std::collections::HashSet::new();
    while seen.insert(at.clone()) {
        // The relay that wrote it: a target is a new session, written by one relay.
        let into = about(&bytes, &path, &at.1).into_iter().rev().find(|e| {
            e.event == "relay"
                && (e.target.path == at.2 || (e.target.agent == at.0 && e.target.id == at.1))
        });
        match into {
            Some(e) => at = (e.source.agent, e.source.id, e.source.path),
            None => break,
        }
    }
    (at.0, at.1)
}

/// The lines of a ledger's `bytes` that hold something, numbered from 1.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    ends.scan(0, |start, end| {
        let line = &bytes[*start..end];
        *start = end + 1;
        Some(line)
    })
    .enumerate()
    .map(|(i, line)| (i + 1, line))
    .filter(|(_, line)| !line.trim_ascii().is_empty())
}

/// The entries on numbered `lines` of the ledger `path`, with their line numbers, and a
/// warning for each damaged line.
fn parse_lines<'a>(
    lines: impl IntoIterator<Item = (usize, &'a [u8])>,
    path: &Path,
) -> (Vec<(usize, Entry)>, Vec<String>) {
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    for (n, line) in lines {
        match serde_json::from_slice::<Entry>(line) {
            Ok(e) => entries.push((n, e)),
            Err(e) => warnings.push(format!(
                "{}:{n}: ledger line skipped ({e}); the relay it records cannot be cleaned",
                path.display(),
            )),
        }
    }
    (entries, warnings)
}

pub fn sha256_file(path: &Path) -> Result<String> {
    Snapshot::read(path, u64::MAX).map(|s| s.sha256)
}

/// A relay's source as it was when the relay began: as long as it was then, hashed, with its
/// first and last few KB as the hash read them. An agent may append to a session while it is
/// relayed, and the ledger must not take in lines the relay may not have read (a later relay
/// would find the source unchanged and not relay them); `unchanged_since` then tells whether
/// it was only appended to.
pub struct Snapshot {
    pub len: u64,
    pub sha256: String,
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// How much of each end of a source `Snapshot` keeps: where a rewrite shows (a Gemini CLI
/// document's update time at the start, the newest message at the end).
const EDGE: usize = 4096;

/// What a `Snapshot` keeps of bytes given in pieces, up to a length: the hash (when asked for),
/// how many, and the first and last `EDGE` of them.
struct Ends {
    limit: u64,
    len: u64,
    hash: Option<Sha256>,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Ends {
    fn new(limit: u64, hash: bool) -> Ends {
        Ends {
            limit,
            len: 0,
            hash: hash.then(Sha256::new),
            head: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// Takes the next piece, as far as the limit.
    fn add(&mut self, chunk: &[u8]) {
        let room = self.limit - self.len;
        let chunk = &chunk[..chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        let n = chunk.len();
        self.len += n as u64;
        if let Some(h) = self.hash.as_mut() {
            h.update(chunk);
        }
        if self.head.len() < EDGE {
            self.head
                .extend_from_slice(&chunk[..n.min(EDGE - self.head.len())]);
        }
        if n >= EDGE {
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[n - EDGE..]);
        } else {
            self.tail.extend_from_slice(chunk);
            self.tail.drain(..self.tail.len().saturating_sub(EDGE));
        }
    }

    fn snapshot(self) -> Snapshot {
        Snapshot {
            len: self.len,
            sha256: self
                .hash
                .map(|h| crate::text::hex(&h.finalize()))
                .unwrap_or_default(),
            head: self.head,
            tail: self.tail,
        }
    }
}

/// Bytes written to `Ends` are taken in; it counts all of them (`StandIn` says how many it
/// wrote) and keeps what comes before its limit.
impl std::io::Write for Ends {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.add(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Snapshot {
    /// The first `len` bytes of `path`; fails if it has fewer.
    pub fn take(path: &Path, len: u64) -> Result<Snapshot> {
        let s = Snapshot::read(path, len)?;
        if s.len < len {
            return Err(shrank(path, len, s.len));
        }
        Ok(s)
    }

    /// The snapshot of a session that is no file of its own: the bytes that stand for it
    /// (`Store::stand_in`), named `path`.
    pub fn of_stand_in(write: &StandIn, path: &Path) -> Result<Snapshot> {
        let mut d = Ends::new(u64::MAX, true);
        write(&mut d).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(d.snapshot())
    }

    /// At most the first `len` bytes of `path`.
    fn read(path: &Path, len: u64) -> Result<Snapshot> {
        let f =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut f = std::io::Read::take(f, len);
        let mut d = Ends::new(len, true);
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = std::io::Read::read(&mut f, &mut buf)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if n == 0 {
                return Ok(d.snapshot());
            }
            d.add(&buf[..n]);
        }
    }

    /// `unchanged_since` of a session that is no file of its own, given what writes the bytes
    /// that stand for it now (`Store::stand_in`).
    pub fn unchanged_in(&self, now: &StandIn, path: &Path) -> Result<()> {
        // Only the ends of the snapshot's length are compared: nothing needs hashing.
        let mut d = Ends::new(self.len, false);
        let written = now(&mut d)?;
        if written < self.len {
            return Err(shrank(path, self.len, written));
        }
        if d.head != self.head || d.tail != self.tail {
            bail!(
                "{} changed while it was read: it was rewritten, not only appended to. Relay it \
                 again.",
                path.display()
            );
        }
        Ok(())
    }

    /// Fails unless `path` still has the snapshot's length and the bytes it saw at each end:
    /// unless it was at most appended to since. (A rewrite that keeps both ends as they were
    /// goes unseen.)
    pub fn unchanged_since(&self, path: &Path) -> Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let now = f
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        if now < self.len {
            return Err(shrank(path, self.len, now));
        }
        let mut at = |from: u64, want: &[u8]| -> Result<bool> {
            let mut got = vec![0u8; want.len()];
            f.seek(SeekFrom::Start(from))
                .and_then(|_| f.read_exact(&mut got))
                .with_context(|| format!("cannot read {}", path.display()))?;
            Ok(got == want)
        };
        if !at(0, &self.head)? || !at(self.len - self.tail.len() as u64, &self.tail)? {
            bail!(
                "{} changed while it was read: it was rewritten, not only appended to. Relay it \
                 again.",
                path.display()
            );
        }
        Ok(())
    }
}

fn shrank(path: &Path, from: u64, to: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "{} shrank from {from} to {to} bytes while it was read: it was rewritten meanwhile. \
         Relay it again.",
        path.display()
    )
}

pub fn sha256_bytes(bytes: &[u8]) -> String {
    crate::text::hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_rng;

    #[test]
    fn a_snapshot_hashes_exactly_its_length_and_tells_appends_from_rewrites() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut rng = test_rng(7);
        // Across the 64 KB pieces the hash reads in.
        let bytes: Vec<u8> = (0..200_000).map(|_| rng(256) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        for len in [
            0, 1, 4095, 4097, 65_535, 65_536, 65_537, 131_072, 199_999, 200_000,
        ] {
            let s = Snapshot::take(&path, len as u64).unwrap();
            assert_eq!(s.sha256, sha256_bytes(&bytes[..len]), "{len}");
            assert_eq!(s.len, len as u64);
            s.unchanged_since(&path).unwrap();
        }
        assert_eq!(sha256_file(&path).unwrap(), sha256_bytes(&bytes));
        let s = Snapshot::take(&path, 150_000).unwrap();
        // Appended to: unchanged.
        let mut longer = bytes.clone();
        longer.extend_from_slice(b"{\"more\":1}\n");
        std::fs::write(&path, &longer).unwrap();
        s.unchanged_since(&path).unwrap();
        // Shorter than it was.
        std::fs::write(&path, &bytes[..149_999]).unwrap();
        let err = s.unchanged_since(&path).unwrap_err().to_string();
        assert!(err.contains("shrank from 150000 to 149999 bytes"), "{err}");
        // Rewritten as long or longer, changed at either end or just inside it.
        for at in [0, 4095, 150_000 - 4096, 149_999] {
            let mut other = bytes.clone();
            other[at] ^= 1;
            std::fs::write(&path, &other).unwrap();
            let err = s.unchanged_since(&path).unwrap_err().to_string();
            assert!(err.contains("changed while it was read"), "{at}: {err}");
        }
    }

    /// Bytes that stand for a session, written in pieces of any size: the snapshot a file of
    /// them gives, and the same tests of what changed since.
    #[test]
    fn a_stand_in_is_taken_and_compared_as_a_file_is() {
        let mut rng = test_rng(11);
        let bytes: Vec<u8> = (0..150_000).map(|_| rng(256) as u8).collect();
        let writer = |b: Vec<u8>| -> StandIn {
            Box::new(move |out| {
                for piece in b
                    .chunks(20_000)
                    .flat_map(|c| c.chunks(1 + 40 * c[0] as usize))
                {
                    out.write_all(piece)?;
                }
                Ok(b.len() as u64)
            })
        };
        let path = Path::new("opencode.db/ses_x");
        let s = Snapshot::of_stand_in(&writer(bytes.clone()), path).unwrap();
        assert_eq!((s.len, s.sha256.clone()), (150_000, sha256_bytes(&bytes)));
        let mut longer = bytes.clone();
        longer.extend_from_slice(b"more");
        s.unchanged_in(&writer(longer), path).unwrap();
        let err = s.unchanged_in(&writer(bytes[..149_999].to_vec()), path);
        assert!(err.unwrap_err().to_string().contains("shrank"));
        for at in [0, 4095, 150_000 - 4096, 149_999] {
            let mut other = bytes.clone();
            other[at] ^= 1;
            let err = s
                .unchanged_in(&writer(other), path)
                .unwrap_err()
                .to_string();
            assert!(err.contains("changed while it was read"), "{at}: {err}");
        }
    }

    #[test]
    fn times_are_utc_with_milliseconds_whatever_the_clock_gives() {
        use chrono::TimeZone;
        let whole = chrono::Utc
            .with_ymd_and_hms(2026, 12, 5, 7, 13, 21)
            .unwrap();
        for nanos in [0, 1, 862_000_000, 862_345_678, 999_999_999] {
            let t = whole + chrono::Duration::nanoseconds(nanos);
            let text = time_text(t);
            assert_eq!(text.len(), "2026-12-05T07:13:21.862Z".len(), "{text}");
            assert!(
                text.starts_with("2026-12-05T07:13:21.") && text.ends_with('Z'),
                "{text}"
            );
            let back = chrono::DateTime::parse_from_rfc3339(&text).unwrap();
            assert_eq!(back.timestamp_millis(), t.timestamp_millis(), "{text}");
        }
    }

    fn parse(bytes: &[u8]) -> (Vec<Entry>, Vec<String>) {
        let (entries, warnings) = parse_lines(lines(bytes), Path::new("ledger.jsonl"));
        (entries.into_iter().map(|(_, e)| e).collect(), warnings)
    }

    fn entry(event: &str, n: usize, target: usize) -> Entry {
        let side = |agent: &str, id: String| Side {
            agent: agent.into(),
            path: format!("/store/{id}.jsonl"),
            id,
            sha256: format!("{n:064x}"),
        };
        Entry {
            event: event.into(),
            time: format!("2026-12-03T10:{:02}:00Z", n % 60),
            tool_version: "0.1.0".into(),
            source: side("claude", format!("source-{}", n % 3)),
            target: side("codex", format!("target-{target}")),
            cwd: "/work".into(),
            standalone: false,
            bytes: n as u64,
            messages: n,
            tokens: serde_json::value::to_raw_value(&serde_json::json!({"budget": n, "total": 1}))
                .ok(),
            source_bytes: Some(n as u64),
            supersedes: Vec::new(),
            title: None,
            registered: None,
            fit: None,
            secrets: None,
            continued: None,
        }
    }

    /// The definition: a relay is live until a later clean or withdrawal names its target.
    fn live_by_definition(entries: &[Entry]) -> Vec<usize> {
        let mut live: Vec<usize> = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            match e.event.as_str() {
                "relay" => live.push(i),
                "clean" | WITHDRAWN => live.retain(|&l| entries[l].target.path != e.target.path),
                _ => {}
            }
        }
        live
    }

    /// Targets are reused (a standalone file written again), cleaned before and after being
    /// written again, withdrawn, and mixed with events that remove nothing.
    #[test]
    fn live_relays_are_those_no_later_event_removed() {
        let mut next = test_rng(0x51e5_a11e_d6e7_0001);
        for _ in 0..2_000 {
            let targets = 1 + next(8);
            let entries: Vec<Entry> = (0..next(40))
                .map(|n| {
                    let event = ["relay", "relay", "clean", WITHDRAWN, "other"][next(5)];
                    entry(event, n, next(targets as u64))
                })
                .collect();
            // `messages` numbers the entries.
            let live: Vec<usize> = live_relays(&entries)
                .into_iter()
                .map(|e| e.messages)
                .collect();
            assert_eq!(live, live_by_definition(&entries));
        }
    }

    /// A store relay awaits its registration when its own entry says it is not registered yet
    /// and no later entry says it is, or when the last word on it is that it no longer is;
    /// relays of before the field, standalone files and removed relays never do.
    #[test]
    fn relays_await_registration_until_recorded_registered() {
        let mut next = test_rng(0x51e5_a11e_d6e7_0002);
        for _ in 0..2_000 {
            let targets = 1 + next(6);
            let entries: Vec<Entry> = (0..next(30))
                .map(|n| {
                    let event = [
                        "relay",
                        "relay",
                        REGISTERED,
                        UNREGISTERED,
                        "clean",
                        WITHDRAWN,
                        "other",
                    ][next(7)];
                    let mut e = entry(event, n, next(targets as u64));
                    e.registered = [None, Some(false), Some(true)][next(3)];
                    e.standalone = next(8) == 0;
                    e
                })
                .collect();
            let mut want: Vec<usize> = Vec::new();
            for i in live_by_definition(&entries) {
                let e = &entries[i];
                if e.standalone {
                    continue;
                }
                let last_word = entries[i + 1..]
                    .iter()
                    .rfind(|l| {
                        l.target.path == e.target.path
                            && (l.event == REGISTERED || l.event == UNREGISTERED)
                    })
                    .map(|l| l.event == REGISTERED);
                // A later store relay to the same path speaks for it instead.
                let replaced = entries[i + 1..]
                    .iter()
                    .any(|l| l.event == "relay" && !l.standalone && l.target.path == e.target.path);
                if !replaced && !last_word.unwrap_or(e.registered != Some(false)) {
                    want.push(e.messages);
                }
            }
            let mut have: Vec<usize> = awaiting_registration(&entries)
                .into_iter()
                .map(|e| e.messages)
                .collect();
            have.sort_unstable();
            want.sort_unstable();
            assert_eq!(
                have,
                want,
                "{:#?}",
                entries
                    .iter()
                    .map(|e| (&e.event, &e.target.path, e.registered, e.standalone))
                    .collect::<Vec<_>>()
            );
        }
    }

    /// The entries keep the file's order, and each damaged line is named by its number, blank
    /// lines counted.
    #[test]
    fn a_ledger_parses_in_order_and_names_its_damaged_lines() {
        let mut text = String::new();
        let mut want = Vec::new();
        let mut damaged = Vec::new();
        let mut line = 0;
        for n in 0..3_000 {
            line += 1;
            match n % 97 {
                13 => {
                    text.push_str("{\"event\":\"relay\",\"time\":\n");
                    damaged.push(line);
                }
                41 => text.push_str("   \n"),
                _ => {
                    let e = entry("relay", n, n);
                    text.push_str(&serde_json::to_string(&e).unwrap());
                    text.push('\n');
                    want.push(n);
                }
            }
        }
        let (entries, warnings) = parse(text.as_bytes());
        assert_eq!(entries.iter().map(|e| e.messages).collect::<Vec<_>>(), want);
        let named: Vec<usize> = warnings
            .iter()
            .map(|w| w.split(':').nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(named, damaged);
    }

    /// `clean` writes a relay's entry back as its clean event: what it recorded of the fit
    /// stays as it was written, whatever its spacing.
    #[test]
    fn an_entry_written_back_keeps_its_tokens_as_written() {
        let line = serde_json::to_string(&entry("relay", 7, 7))
            .unwrap()
            .replace(
                r#"{"budget":7,"total":1}"#,
                r#"{ "total": 1,  "budget": 7e0 }"#,
            );
        let (entries, warnings) = parse(line.as_bytes());
        assert!(warnings.is_empty(), "{warnings:?}");
        let back = serde_json::to_string(&entries[0]).unwrap();
        assert!(
            back.contains(r#""tokens":{ "total": 1,  "budget": 7e0 }"#),
            "{back}"
        );
        assert_eq!(back, line);
    }

    /// JSON text of `v` as another writer could spell it: spaces anywhere between tokens, and
    /// any character of a string escaped as `\uXXXX`.
    fn respelled(v: &serde_json::Value, next: &mut impl FnMut(u64) -> usize, out: &mut String) {
        use serde_json::Value;
        let space = |next: &mut dyn FnMut(u64) -> usize, out: &mut String| {
            out.push_str(["", "", " ", "\t "][next(4)]);
        };
        let string = |s: &str, next: &mut dyn FnMut(u64) -> usize, out: &mut String| {
            out.push('"');
            for c in s.chars() {
                if next(4) == 0 || c == '"' || c == '\\' || c < ' ' {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                } else {
                    out.push(c);
                }
            }
            out.push('"');
        };
        space(next, out);
        match v {
            Value::Object(o) => {
                out.push('{');
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    space(next, out);
                    string(k, next, out);
                    space(next, out);
                    out.push(':');
                    respelled(x, next, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    respelled(x, next, out);
                }
                out.push(']');
            }
            Value::String(x) => string(x, next, out),
            other => out.push_str(&other.to_string()),
        }
        space(next, out);
    }

    /// A generated ledger of up to 29 entries, numbered by `messages`. Each entry draws one
    /// of `kinds`: all but the last two make a relay with `relay` (given the entry's number,
    /// the entries so far and the places of their relays); the last two clean or withdraw an
    /// earlier relay, or a new target when there is none.
    fn generated(
        next: &mut impl FnMut(u64) -> usize,
        kinds: u64,
        mut relay: impl FnMut(&mut dyn FnMut(u64) -> usize, usize, &[Entry], &[usize]) -> Entry,
    ) -> Vec<Entry> {
        let mut entries: Vec<Entry> = Vec::new();
        for n in 0..next(30) {
            let relays: Vec<usize> = (0..entries.len())
                .filter(|&i| entries[i].event == "relay")
                .collect();
            let mut e = match next(kinds) {
                k if k + 2 < kinds as usize => relay(next, n, &entries, &relays),
                k if relays.is_empty() => entry(["clean", WITHDRAWN][k % 2], n, next(6)),
                k => {
                    let mut e = entries[relays[next(relays.len() as u64)]].clone();
                    e.event = ["clean", WITHDRAWN][k % 2].into();
                    e
                }
            };
            e.messages = n;
            entries.push(e);
        }
        entries
    }

    /// A line of entry `e` as a writer, or damage, could leave it: spelled otherwise, with a
    /// field missing, of another type, written twice, unknown, or cut off.
    fn line_of(e: &Entry, next: &mut impl FnMut(u64) -> usize) -> String {
        use serde_json::{Value, json};
        let mut v = serde_json::to_value(e).unwrap();
        let o = v.as_object_mut().unwrap();
        match next(14) {
            0 => {
                let key = ["event", "time", "tool_version", "source", "target", "cwd"][next(6)];
                o.remove(key);
            }
            1 => {
                let (key, value) = [
                    ("time", json!(5)),
                    ("standalone", json!("yes")),
                    ("messages", json!(-1)),
                    ("bytes", json!(1.5)),
                    (
                        "source",
                        json!({"agent": 1, "id": "x", "path": "/p", "sha256": "0"}),
                    ),
                    ("target", json!({"agent": "codex", "id": "x", "path": "/p"})),
                    ("supersedes", Value::Null),
                    ("supersedes", json!([{"agent": "a"}])),
                    ("tokens", Value::Null),
                    ("tokens", json!("many")),
                    ("source_bytes", Value::Null),
                    ("event", json!(["relay"])),
                    ("fit", json!("kept")),
                    ("secrets", Value::Null),
                ][next(14)]
                .clone();
                o.insert(key.to_string(), value);
            }
            2 => {
                o.insert("written_by".into(), json!({"nested": [1, "two", null]}));
            }
            3 => {
                let text = serde_json::to_string(&v).unwrap();
                return format!("{{\"event\":\"clean\",{}", &text[1..]);
            }
            4 => {
                let text = serde_json::to_string(&v).unwrap();
                let cut = next(text.len() as u64);
                return text[..text.floor_char_boundary(cut)].to_string();
            }
            5..=8 => {
                let mut out = String::new();
                respelled(&v, next, &mut out);
                return out;
            }
            _ => {}
        }
        serde_json::to_string(&v).unwrap()
    }

    /// A ledger read borrowed (`entry_refs`, for `list` and `status`) keeps exactly the lines
    /// an owned read keeps, and tells the same live relays and superseded targets, however its
    /// lines are spelled or damaged.
    #[test]
    fn a_ledger_read_borrowed_reads_as_one_read_owned() {
        let ids = ["s-1", "q\"uote", "back\\slash", "日本"];
        let mut next = test_rng(0x1ed9_e7b0_7707_0003);
        let (mut kept, mut skipped) = (0, 0);
        let rounds = crate::text::test_count(100, 500);
        for _ in 0..rounds {
            let entries = generated(&mut next, 4, |next, n, entries, relays| {
                let mut e = entry("relay", n, next(6));
                e.source.id = ids[next(ids.len() as u64)].to_string();
                e.target.path = format!("/store/{}/{}", e.source.id, next(5));
                e.standalone = next(4) == 0;
                e.supersedes = relays
                    .iter()
                    .filter(|_| next(3) == 0)
                    .map(|&i| entries[i].target.clone())
                    .collect();
                e
            });
            let text: String = entries
                .iter()
                .map(|e| line_of(e, &mut next) + "\n")
                .collect();
            let (owned, warnings) = parse(text.as_bytes());
            let borrowed = entry_refs(text.as_bytes());
            kept += owned.len();
            skipped += warnings.len();
            let facts = |e: &Entry| (e.event.clone(), e.target.path.clone(), e.messages);
            let facts_ref =
                |e: &EntryRef| (e.event.to_string(), e.target.path.to_string(), e.messages);
            assert_eq!(
                owned.iter().map(facts).collect::<Vec<_>>(),
                borrowed.iter().map(facts_ref).collect::<Vec<_>>(),
                "{text}"
            );
            assert_eq!(
                live_relays(&owned)
                    .into_iter()
                    .map(facts)
                    .collect::<Vec<_>>(),
                live_relays(&borrowed)
                    .into_iter()
                    .map(facts_ref)
                    .collect::<Vec<_>>()
            );
            assert_eq!(superseded(&owned), superseded(&borrowed));
            for (o, b) in owned.iter().zip(&borrowed) {
                assert_eq!(o.is_store_relay(), b.is_store_relay());
                assert_eq!(o.target, b.target.to_side());
                assert_eq!((&*o.time, o.source_bytes), (&*b.time, b.source_bytes));
            }
        }
        // Both kinds of line, or the test proves nothing.
        assert!(
            kept > 4 * rounds && skipped > rounds,
            "{kept} kept, {skipped} skipped"
        );
    }

    /// What a relay of session `id` learns from the ledger: its live relays (by number) and
    /// which of them are superseded.
    fn relays_of(entries: &[Entry], id: &str) -> (Vec<usize>, Vec<bool>) {
        let live: Vec<&Entry> = live_relays(entries)
            .into_iter()
            .filter(|e| e.source.id == id)
            .collect();
        let superseded = superseded(entries);
        (
            live.iter().map(|e| e.messages).collect(),
            live.iter()
                .map(|e| superseded.contains(&e.target.path))
                .collect(),
        )
    }

    /// Reading only the lines that may bear on one session tells a relay what reading them
    /// all does, whoever spelled the ledger: sessions whose ids hold quotes, backslashes and
    /// other scripts, target paths written again by another session's relay, cleans and
    /// withdrawals of any relay, and any character escaped.
    #[test]
    fn a_relay_learns_the_same_from_the_lines_about_its_session() {
        let ids = ["s-1", "s-10", "q\"uote", "back\\slash", "日本", "clean"];
        let mut next = test_rng(0xab07_1ed6_e7aa_0002);
        for round in 0..crate::text::test_count(100, 600) {
            let entries = generated(&mut next, 5, |next, n, entries, relays| {
                let mut e = entry("relay", n, next(6));
                e.source.id = ids[next(ids.len() as u64)].to_string();
                // A relay supersedes earlier relays of its own session only.
                e.supersedes = relays
                    .iter()
                    .filter(|&&i| entries[i].source.id == e.source.id && next(2) == 0)
                    .map(|&i| entries[i].target.clone())
                    .collect();
                e
            });
            let mut text = String::new();
            for e in &entries {
                if round % 2 == 0 {
                    text.push_str(&serde_json::to_string(e).unwrap());
                } else {
                    respelled(&serde_json::to_value(e).unwrap(), &mut next, &mut text);
                }
                text.push('\n');
            }
            let (all, warnings) = parse(text.as_bytes());
            assert!(warnings.is_empty(), "{:?}", warnings.first());
            assert_eq!(all.len(), entries.len());
            for id in ids {
                let some = about(text.as_bytes(), Path::new("ledger.jsonl"), id);
                assert_eq!(relays_of(&some, id), relays_of(&all, id), "{id}\n{text}");
            }
        }
    }
}
