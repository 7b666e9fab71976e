//! The relay ledger: one JSON line per relay in the platform state dir. Idempotence (and the
//! later `clean`) rely on it: it is the record of what session-relay wrote.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Side {
    pub agent: String,
    pub id: String,
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<serde_json::Value>,
    /// The source's size when it was relayed (entries before 0.1 lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_bytes: Option<u64>,
    /// Earlier relays of the same source, to the same agent and directory, that this one
    /// replaces (the source had grown since, or the relay was forced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<Side>,
}

impl Entry {
    /// A relay into an agent's store (not a standalone file).
    pub fn is_store_relay(&self) -> bool {
        self.event == "relay" && !self.standalone
    }
}

/// The event that takes back a `relay` entry whose session did not land: a relay is recorded
/// before its session is written, so that a session in a store is always one the ledger
/// knows (and `clean` can remove), even if the relay is killed right after writing it.
pub const WITHDRAWN: &str = "withdrawn";

/// The relays still recorded as in place: every `relay` entry whose target no later `clean`
/// (or `withdrawn`) entry removed, oldest first.
pub fn live_relays(entries: &[Entry]) -> Vec<&Entry> {
    let mut live: Vec<&Entry> = Vec::new();
    for e in entries {
        match e.event.as_str() {
            "relay" => live.push(e),
            "clean" | WITHDRAWN => live.retain(|l| l.target.path != e.target.path),
            _ => {}
        }
    }
    live
}

/// The target paths of relays that a later relay superseded (one that was not withdrawn).
pub fn superseded(entries: &[Entry]) -> std::collections::HashSet<String> {
    let withdrawn: std::collections::HashSet<&str> = entries
        .iter()
        .filter(|e| e.event == WITHDRAWN)
        .map(|e| e.target.path.as_str())
        .collect();
    entries
        .iter()
        .filter(|e| e.event == "relay" && !withdrawn.contains(e.target.path.as_str()))
        .flat_map(|e| e.supersedes.iter().map(|s| s.path.clone()))
        .collect()
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

/// Every readable entry, oldest first. A damaged line is skipped, not fatal.
pub fn entries() -> Vec<Entry> {
    read().0
}

/// Every readable entry, oldest first, and a warning (file and line) for each damaged line.
pub fn read() -> (Vec<Entry>, Vec<String>) {
    let Ok(path) = ledger_path() else {
        return (Vec::new(), Vec::new());
    };
    let Ok(bytes) = std::fs::read(&path) else {
        return (Vec::new(), Vec::new());
    };
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice::<Entry>(line) {
            Ok(e) => entries.push(e),
            Err(e) => warnings.push(format!(
                "{}:{}: ledger line skipped ({e}); the relay it records cannot be cleaned",
                path.display(),
                i + 1
            )),
        }
    }
    (entries, warnings)
}

pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = std::io::Read::read(&mut f, &mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
