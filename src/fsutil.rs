//! File writes that land whole or not at all.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::exit::{CliError, ExitCode};

/// Writes a new file atomically (temp file in the same folder, fsync, rename) and refuses to
/// replace an existing one.
pub fn write_new_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
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
    let mut tmp = tempfile::Builder::new()
        .prefix(".session-relay-")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist_noclobber(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}
