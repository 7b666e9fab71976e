//! A bundle: one session carried to another machine in one file. A tar archive compressed with
//! zstd, holding, in this order:
//!
//! - `manifest.json`: the format and its version, the tool's version, the source (agent, id,
//!   sha256 of its file), when it was made, what was masked (counts by kind, never values),
//!   the git changes when there are some, and each payload file's size and sha256;
//! - `session.jsonl`: the neutral session (`model::neutral`), already masked;
//! - `snapshot.json`: the file-state snapshot (`plan::snapshot`) read when the bundle was made;
//! - `changes.gitbundle` (with `--git`): a git bundle of the branch `relay/<short id>`, one
//!   commit on the checkout's HEAD holding the working tree's changes (see `git`).
//!
//! A bundle is opened (`open`) whole into a temporary folder and checked against its manifest
//! before anything reads it: a truncated or altered one is refused, and so is one a newer
//! format wrote.

pub mod git;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::exit::{CliError, ExitCode};

/// What the manifest's `format` says.
pub const FORMAT: &str = "session-relay/bundle";
/// Bumped when a bundle's layout changes so that an older build would misread it.
pub const FORMAT_VERSION: u32 = 1;

pub const MANIFEST: &str = "manifest.json";
pub const SESSION: &str = "session.jsonl";
pub const SNAPSHOT: &str = "snapshot.json";
pub const CHANGES: &str = "changes.gitbundle";

/// How hard the archive is compressed: a session's JSON shrinks about tenfold at this level,
/// and a few MB take well under a second.
const ZSTD_LEVEL: i32 = 9;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub format_version: u32,
    /// The session-relay that wrote it.
    pub tool_version: String,
    /// When it was made (UTC, RFC 3339).
    pub created_at: String,
    pub source: Source,
    /// The working directory the session ran in (masked), which a relay from the bundle names
    /// in its brief.
    pub cwd: Option<String>,
    /// What was masked, by kind: counts only. `None`: made with `--no-redact`.
    pub redactions: Option<crate::redact::Counts>,
    /// With `--git`: the branch the git bundle carries.
    pub git: Option<GitChanges>,
    /// Every file of the archive but the manifest, in archive order, with its size and sha256.
    pub payload: Vec<PayloadFile>,
    /// The sha256 of the payload's `name sha256` lines: one checksum of the whole payload.
    pub payload_sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Source {
    pub agent: String,
    pub id: String,
    /// Of the session's file (or the bytes that stand for it in a database) when bundled.
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GitChanges {
    /// `relay/<short id>`.
    pub branch: String,
    /// The commit the changes are on (HEAD when bundled): a checkout needs it to take them.
    pub base: String,
    /// The commit holding the changes.
    pub commit: String,
    /// Files changed, added or deleted since `base`.
    pub files: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PayloadFile {
    pub name: String,
    pub bytes: u64,
    pub sha256: String,
}

/// The checksum of the payload: the sha256 of its `name sha256` lines.
fn payload_sum(files: &[PayloadFile]) -> String {
    let mut h = Sha256::new();
    for f in files {
        h.update(format!("{} {}\n", f.name, f.sha256).as_bytes());
    }
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes a new bundle at `path` (never replacing a file): `manifest` with its payload list
/// and checksum filled in from `files` (name, bytes), then the files.
pub fn write(path: &Path, mut manifest: Manifest, files: &[(&str, &[u8])]) -> Result<Manifest> {
    manifest.payload = files
        .iter()
        .map(|(name, bytes)| PayloadFile {
            name: name.to_string(),
            bytes: bytes.len() as u64,
            sha256: crate::ledger::sha256_bytes(bytes),
        })
        .collect();
    manifest.payload_sha256 = payload_sum(&manifest.payload);
    let json = serde_json::to_vec_pretty(&manifest)?;
    let mtime = chrono::DateTime::parse_from_rfc3339(&manifest.created_at)
        .map_or(0, |t| t.timestamp().max(0) as u64);
    crate::fsutil::write_new_file_with(path, |w| {
        let enc = zstd::Encoder::new(w, ZSTD_LEVEL)?;
        let mut tar = tar::Builder::new(enc);
        for (name, bytes) in
            std::iter::once((MANIFEST, json.as_slice())).chain(files.iter().copied())
        {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(mtime);
            header.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut header, name, bytes)?;
        }
        tar.into_inner()?.finish()?.flush()?;
        Ok(())
    })
    .with_context(|| format!("cannot write the bundle {}", path.display()))?;
    Ok(manifest)
}

/// A bundle opened and checked: its files in a temporary folder, removed when this is dropped.
#[derive(Debug)]
pub struct Opened {
    /// The bundle file.
    pub path: PathBuf,
    pub manifest: Manifest,
    dir: tempfile::TempDir,
}

impl Opened {
    /// Where a payload file was unpacked (it may be missing: see `has`).
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.manifest.payload.iter().any(|f| f.name == name)
    }

    /// The file-state snapshot read when the bundle was made.
    pub fn snapshot(&self) -> Result<Option<crate::plan::snapshot::Snapshot>> {
        if !self.has(SNAPSHOT) {
            return Ok(None);
        }
        let bytes = std::fs::read(self.file(SNAPSHOT))?;
        Ok(Some(serde_json::from_slice(&bytes).with_context(|| {
            format!("{}: invalid {SNAPSHOT}", self.path.display())
        })?))
    }
}

/// The error of a bundle that cannot be read as one: nothing is written from it.
fn refused(path: &Path, why: impl std::fmt::Display) -> anyhow::Error {
    CliError::new(
        ExitCode::Error,
        format!(
            "{}: {why}; the bundle is refused and nothing was written",
            path.display()
        ),
    )
    .into()
}

/// The zstd frame's first bytes.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether `path` is a bundle: a file named `*.bundle`, or a zstd file whose archive starts
/// with the manifest (a Codex rollout may be zstd too, but is no archive).
pub fn is_bundle(path: &Path) -> bool {
    if !path.is_file() {
        return false;
    }
    if path.extension().is_some_and(|e| e == "bundle") {
        return true;
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut magic = [0u8; 4];
    if f.read_exact(&mut magic).is_err() || magic != ZSTD_MAGIC {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(dec) = zstd::Decoder::new(f) else {
        return false;
    };
    let mut head = [0u8; 100];
    dec.take(100).read_exact(&mut head).is_ok() && head.starts_with(b"manifest.json\0")
}

/// Opens the bundle at `path` into a temporary folder and checks it: the manifest first (a
/// newer format is refused before anything else is read), then every payload file against its
/// size and sha256, nothing missing and nothing more.
pub fn open(path: &Path) -> Result<Opened> {
    let f = std::fs::File::open(path)
        .with_context(|| format!("cannot open the bundle {}", path.display()))?;
    let dec = zstd::Decoder::new(f).map_err(|e| refused(path, e))?;
    let mut archive = tar::Archive::new(dec);
    let dir = tempfile::Builder::new()
        .prefix("session-relay-bundle-")
        .tempdir()
        .context("cannot create a temporary folder for the bundle")?;
    let mut entries = archive.entries().map_err(|e| refused(path, e))?;
    let manifest = match entries.next() {
        Some(Ok(mut e)) if e.path_bytes().as_ref() == MANIFEST.as_bytes() => {
            let mut json = Vec::new();
            e.read_to_end(&mut json).map_err(|e| refused(path, e))?;
            read_manifest(path, &json)?
        }
        Some(Err(e)) => return Err(refused(path, e)),
        _ => {
            return Err(refused(
                path,
                "not a session-relay bundle (no manifest first)",
            ));
        }
    };
    let mut found: BTreeMap<String, PayloadFile> = BTreeMap::new();
    for e in entries {
        let mut e = e.map_err(|e| refused(path, e))?;
        let name = String::from_utf8_lossy(&e.path_bytes()).into_owned();
        // Only the names this format knows: a name is a path under the temporary folder.
        let known = [SESSION, SNAPSHOT, CHANGES].contains(&name.as_str());
        if !known || !manifest.payload.iter().any(|f| f.name == name) || found.contains_key(&name) {
            return Err(refused(
                path,
                format!("it holds {name}, which its manifest does not list"),
            ));
        }
        let (bytes, sha256) =
            unpack(&mut e, &dir.path().join(&name)).map_err(|e| refused(path, e))?;
        found.insert(
            name.clone(),
            PayloadFile {
                name,
                bytes,
                sha256,
            },
        );
    }
    check_payload(path, &manifest, &found)?;
    Ok(Opened {
        // As the ledger records it, whatever the current directory later is.
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        manifest,
        dir,
    })
}

/// The manifest, refused when it is of another format or a newer version.
fn read_manifest(path: &Path, json: &[u8]) -> Result<Manifest> {
    let v: serde_json::Value = serde_json::from_slice(json)
        .map_err(|e| refused(path, format!("invalid manifest: {e}")))?;
    if v["format"] != FORMAT {
        return Err(refused(path, "not a session-relay bundle"));
    }
    match v["format_version"].as_u64() {
        Some(n) if n <= u64::from(FORMAT_VERSION) => {}
        Some(n) => {
            return Err(CliError::new(
                ExitCode::Error,
                format!(
                    "{}: written by a newer session-relay ({}, bundle format {n}); this one ({}) reads bundle format {FORMAT_VERSION} at most. Update session-relay to read it; nothing was written.",
                    path.display(),
                    v["tool_version"].as_str().unwrap_or("unknown version"),
                    env!("CARGO_PKG_VERSION"),
                ),
            )
            .into());
        }
        None => return Err(refused(path, "its manifest has no format_version")),
    }
    serde_json::from_value(v).map_err(|e| refused(path, format!("invalid manifest: {e}")))
}

/// Writes an archive entry to `to`, returning its size and sha256.
fn unpack(entry: &mut impl Read, to: &Path) -> std::io::Result<(u64, String)> {
    let mut out = std::fs::File::create(to)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = entry.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n])?;
        total += n as u64;
    }
    Ok((total, hex(&h.finalize())))
}

/// Every file the manifest lists was found whole, and the payload's checksum holds.
fn check_payload(
    path: &Path,
    manifest: &Manifest,
    found: &BTreeMap<String, PayloadFile>,
) -> Result<()> {
    for want in &manifest.payload {
        match found.get(&want.name) {
            None => {
                return Err(refused(
                    path,
                    format!("{} is missing (a truncated bundle?)", want.name),
                ));
            }
            Some(got) if got != want => {
                return Err(refused(
                    path,
                    format!(
                        "{} does not match its checksum in the manifest (a truncated or altered bundle)",
                        want.name
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if payload_sum(&manifest.payload) != manifest.payload_sha256 {
        return Err(refused(
            path,
            "its manifest's payload checksum does not match (an altered bundle)",
        ));
    }
    Ok(())
}

/// The session `selector` names, and the bundle it was read from when it names one (kept
/// open while the session is read: its files are unpacked in a temporary folder).
pub fn select(
    cfg: &crate::config::Config,
    selector: &str,
    scope: &crate::select::SelectScope,
) -> Result<(crate::select::Located, Option<Opened>)> {
    let path = Path::new(selector);
    if !is_bundle(path) {
        return Ok((crate::select::select(cfg, selector, scope)?, None));
    }
    let opened = open(path)?;
    let located = crate::select::Located {
        path: opened.file(SESSION),
        adapter: None,
        home: None,
    };
    Ok((located, Some(opened)))
}
