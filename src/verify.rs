//! The write and verify stages: a native session lands in the target's store whole or not at
//! all, and is read back with our own reader and compared with what was meant.

use std::borrow::Cow;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::adapter::{Adapter, NativeSession};
use crate::model::{Role, Session};
use crate::text::truncate_chars;

/// Facts recorded in the written session itself, so that a relayed file can be recognised
/// without the ledger.
pub fn provenance(source: &Session, source_sha256: &str, relay_time: &str) -> Value {
    json!({
        "tool": "session-relay",
        "tool_version": env!("CARGO_PKG_VERSION"),
        "relayed_at": relay_time,
        "source_agent": source.agent,
        "source_id": source.id,
        "source_path": source.source_path,
        "source_sha256": source_sha256,
    })
}

/// A comparable digest of the conversation: what must survive a write and a read-back. It
/// borrows the texts: a relay compares the two digests of a long session once, and copying
/// every message twice for it showed in a small relay's time.
pub fn digest(s: &Session) -> Vec<(Role, Cow<'_, str>)> {
    s.messages
        .iter()
        .filter_map(|m| match m.role {
            Role::User | Role::Assistant => Some((m.role, Cow::Borrowed(m.content.trim()))),
            Role::ToolCall => Some((
                m.role,
                Cow::Borrowed(m.tool_name.as_deref().unwrap_or_default()),
            )),
            Role::ToolResult if m.is_error => {
                Some((m.role, Cow::Owned(format!("error: {}", m.content.trim()))))
            }
            Role::ToolResult => Some((m.role, Cow::Borrowed(m.content.trim()))),
            _ => None,
        })
        .collect()
}

/// Writes atomically without replacing anything, reading the file back with our own reader
/// before it takes its name, and comparing it with what was meant to be written. On any
/// difference nothing is written, and the folders made for it are removed. Returns those
/// folders, for a caller that fails later (see `fsutil::remove_created_dirs`).
pub fn write_and_verify(
    target: &dyn Adapter,
    native: &NativeSession,
    shaped: &Session,
    home: &Path,
) -> Result<Vec<std::path::PathBuf>> {
    let created = match native.path.parent() {
        Some(dir) => crate::fsutil::create_dirs(dir)?,
        None => Vec::new(),
    };
    let check = |written: &Path| -> Result<()> {
        let back = target
            .read(written, Some(home))
            .context("reading the written session back")?;
        let want = digest(shaped);
        let got = digest(&back);
        if want != got {
            let at = want
                .iter()
                .zip(&got)
                .position(|(a, b)| a != b)
                .unwrap_or(want.len().min(got.len()));
            bail!(
                "read-back check failed: the written session differs from what was meant at message {at} \
                 (meant {:?}, read {:?}); {} messages meant, {} read",
                want.get(at).map(|m| (m.0, truncate_chars(&m.1, 80))),
                got.get(at).map(|m| (m.0, truncate_chars(&m.1, 80))),
                want.len(),
                got.len()
            );
        }
        Ok(())
    };
    let mtime = native.mtime.map(std::time::SystemTime::from);
    if let Err(e) = crate::fsutil::write_new_file(&native.path, &native.bytes, mtime, check) {
        crate::fsutil::remove_created_dirs(&created);
        return Err(e.context(format!("nothing was written to {}", native.path.display())));
    }
    Ok(created)
}
