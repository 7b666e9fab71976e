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
//! A bundle is opened (`open`) into a temporary folder, each member checked against the
//! manifest (a plain file it lists, of the size it lists) before it is written, and read no
//! further than the manifest lists: a truncated, altered or hostile one is refused, and so is
//! one a newer format wrote.

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
    crate::text::hex(&h.finalize())
}

/// A payload file's content: bytes in memory, or a file (a git bundle is as large as the
/// changes, and is streamed from where git wrote it, never held whole).
#[derive(Clone, Copy)]
pub enum Content<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

/// Writes a new bundle at `path` (never replacing a file): `manifest` with its payload list
/// and checksum filled in from `files` (name, content), then the files.
pub fn write(path: &Path, mut manifest: Manifest, files: &[(&str, Content)]) -> Result<Manifest> {
    manifest.payload = files
        .iter()
        .map(|&(name, content)| {
            let (bytes, sha256) = match content {
                Content::Bytes(b) => (b.len() as u64, crate::ledger::sha256_bytes(b)),
                Content::File(f) => (std::fs::metadata(f)?.len(), crate::ledger::sha256_file(f)?),
            };
            Ok(PayloadFile {
                name: name.to_string(),
                bytes,
                sha256,
            })
        })
        .collect::<Result<_>>()?;
    manifest.payload_sha256 = payload_sum(&manifest.payload);
    let json = serde_json::to_vec_pretty(&manifest)?;
    let mtime = chrono::DateTime::parse_from_rfc3339(&manifest.created_at)
        .map_or(0, |t| t.timestamp().max(0) as u64);
    crate::fsutil::write_new_file_with(path, |w| {
        let enc = zstd::Encoder::new(w, ZSTD_LEVEL)?;
        let mut tar = tar::Builder::new(enc);
        let manifest_file = (MANIFEST, Content::Bytes(json.as_slice()));
        for (name, content) in std::iter::once(manifest_file).chain(files.iter().copied()) {
            let mut header = tar::Header::new_gnu();
            header.set_mode(0o644);
            header.set_mtime(mtime);
            header.set_entry_type(tar::EntryType::Regular);
            match content {
                Content::Bytes(b) => {
                    header.set_size(b.len() as u64);
                    tar.append_data(&mut header, name, b)?;
                }
                Content::File(f) => {
                    let file = std::fs::File::open(f)?;
                    header.set_size(file.metadata()?.len());
                    tar.append_data(&mut header, name, file)?;
                }
            }
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

/// The most a manifest may weigh: it lists three files, in a few hundred bytes.
const MANIFEST_MAX: u64 = 1 << 20;

/// The most a bundle's files may add up to, whatever its manifest says: a session of hundreds
/// of MB and a git bundle of the working tree's changes fit many times over, and no bundle
/// fills the disk it is unpacked on.
pub const UNPACKED_MAX: u64 = 4 << 30;

/// A tar block: each header is one, and each file's data is padded to a whole number of them.
const BLOCK: u64 = 512;

/// The decompressed archive, read no further than `left` bytes: a zstd frame that expands
/// far beyond what the manifest lists is stopped there, not after it has been unpacked (nor
/// after an extension header the tar reader would hold whole in memory).
struct Capped<R> {
    inner: R,
    left: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left.get();
        if left == 0 && !buf.is_empty() {
            return Err(std::io::Error::other(OVER_CAP));
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left.set(left - n as u64);
        Ok(n)
    }
}

const OVER_CAP: &str = "it unpacks to more than its manifest lists";

/// The tar bytes a payload takes: a header, and the data padded to whole blocks.
fn tar_bytes(files: &[PayloadFile]) -> u64 {
    files
        .iter()
        .map(|f| BLOCK + f.bytes.div_ceil(BLOCK) * BLOCK)
        .sum()
}

/// Opens the bundle at `path` into a temporary folder and checks it: the manifest first (a
/// newer format is refused before anything else is read), then each member's header against
/// the manifest before a byte of it is written, then every payload file against its size and
/// sha256, nothing missing and nothing more. The archive is read through `Capped`: no more
/// than the manifest's own block, then no more than the files it lists (`UNPACKED_MAX` at
/// most) take.
pub fn open(path: &Path) -> Result<Opened> {
    let f = std::fs::File::open(path)
        .with_context(|| format!("cannot open the bundle {}", path.display()))?;
    let dec = zstd::Decoder::new(f).map_err(|e| refused(path, e))?;
    let left = std::rc::Rc::new(std::cell::Cell::new(
        BLOCK + MANIFEST_MAX.div_ceil(BLOCK) * BLOCK,
    ));
    let capped = Capped {
        inner: dec,
        left: left.clone(),
    };
    let mut archive = tar::Archive::new(capped);
    // Every header as it is: a GNU long name or a pax extension is a member of its own, which
    // `member` refuses, never one read whole before it is looked at.
    let mut entries = archive
        .entries()
        .map(|e| e.raw(true))
        .map_err(|e| refused(path, e))?;
    let over = |e: std::io::Error| {
        if left.get() == 0 {
            refused(path, OVER_CAP)
        } else {
            refused(path, e)
        }
    };
    let manifest = match entries.next() {
        Some(Ok(mut e)) if e.path_bytes().as_ref() == MANIFEST.as_bytes() => {
            if e.header().entry_type() != tar::EntryType::Regular || e.size() > MANIFEST_MAX {
                return Err(refused(path, "its manifest is no plain file of a few KB"));
            }
            let mut json = Vec::new();
            e.read_to_end(&mut json).map_err(over)?;
            read_manifest(path, &json)?
        }
        Some(Err(e)) => return Err(over(e)),
        _ => {
            return Err(refused(
                path,
                "not a session-relay bundle (no manifest first)",
            ));
        }
    };
    check_listed(path, &manifest)?;
    // From here on: the rest of the manifest's last block, the files it lists, the end block.
    left.set(BLOCK + tar_bytes(&manifest.payload) + BLOCK);
    let dir = tempfile::Builder::new()
        .prefix("session-relay-bundle-")
        .tempdir()
        .context("cannot create a temporary folder for the bundle")?;
    let mut found: BTreeMap<String, PayloadFile> = BTreeMap::new();
    for e in entries {
        let mut e = e.map_err(over)?;
        let want = member(path, &manifest, &e, &found)?;
        let (bytes, sha256) =
            unpack(&mut (&mut e).take(want.bytes), &dir.path().join(&want.name)).map_err(over)?;
        found.insert(
            want.name.clone(),
            PayloadFile {
                name: want.name.clone(),
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

/// The manifest lists only files this format knows, each once, adding up to no more than
/// `UNPACKED_MAX`: checked before anything is unpacked.
fn check_listed(path: &Path, manifest: &Manifest) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for f in &manifest.payload {
        if ![SESSION, SNAPSHOT, CHANGES].contains(&f.name.as_str()) || !seen.insert(&f.name) {
            return Err(refused(
                path,
                format!("its manifest lists {:?}, which no bundle holds", f.name),
            ));
        }
    }
    let total = manifest
        .payload
        .iter()
        .try_fold(0u64, |t, f| t.checked_add(f.bytes))
        .filter(|&t| t <= UNPACKED_MAX);
    if total.is_none() {
        return Err(refused(
            path,
            format!(
                "its manifest lists more than session-relay unpacks ({} at most)",
                crate::text::human_size(UNPACKED_MAX)
            ),
        ));
    }
    Ok(())
}

/// What the manifest says of the member `e`, read from its header alone: refused, before a
/// byte of it is written, when it is no plain file (a link, a device, a folder, an extension
/// header), its name is not one the manifest lists (a path with `..` or `/` never is) or came
/// before, or its size is not the manifest's.
fn member<'m, R: Read>(
    path: &Path,
    manifest: &'m Manifest,
    e: &tar::Entry<'_, R>,
    found: &BTreeMap<String, PayloadFile>,
) -> Result<&'m PayloadFile> {
    let name = String::from_utf8_lossy(&e.path_bytes()).into_owned();
    let shown = crate::text::safe(&name).into_owned();
    let kind = e.header().entry_type();
    if kind != tar::EntryType::Regular {
        return Err(refused(
            path,
            format!("it holds {shown:?} as a {kind:?} entry, not a plain file"),
        ));
    }
    if name.starts_with('/') || name.split('/').any(|p| p == "..") {
        return Err(refused(
            path,
            format!("it holds {shown:?}, a path outside the bundle"),
        ));
    }
    let Some(want) = manifest.payload.iter().find(|f| f.name == name) else {
        return Err(refused(
            path,
            format!("it holds {shown:?}, which its manifest does not list"),
        ));
    };
    if found.contains_key(&name) {
        return Err(refused(path, format!("it holds {shown:?} twice")));
    }
    if e.size() != want.bytes {
        return Err(refused(
            path,
            format!(
                "its {name} is {} bytes, and its manifest says {} (a damaged or hostile bundle)",
                e.size(),
                want.bytes
            ),
        ));
    }
    Ok(want)
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
    Ok((total, crate::text::hex(&h.finalize())))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream far longer than its cap (a zstd frame of zeros expands so) is read to the cap
    /// and then fails: never further.
    #[test]
    fn a_capped_stream_stops_at_its_cap() {
        let cap = 3 * BLOCK + 7;
        let left = std::rc::Rc::new(std::cell::Cell::new(cap));
        let bomb = zstd::encode_all(std::io::repeat(0).take(64 << 20), 1).unwrap();
        let mut r = Capped {
            inner: zstd::Decoder::new(bomb.as_slice()).unwrap(),
            left: left.clone(),
        };
        let mut read = Vec::new();
        let err = r.read_to_end(&mut read).unwrap_err();
        assert_eq!(err.to_string(), OVER_CAP);
        assert_eq!(read.len() as u64, cap);
        assert_eq!(left.get(), 0);
        // Within its cap, a stream reads to its end as it is.
        let left = std::rc::Rc::new(std::cell::Cell::new(cap));
        let mut r = Capped {
            inner: &[1u8; 100][..],
            left: left.clone(),
        };
        let mut read = Vec::new();
        r.read_to_end(&mut read).unwrap();
        assert_eq!(read, [1u8; 100]);
        assert_eq!(left.get(), cap - 100);
    }
}
