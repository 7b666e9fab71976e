//! Where session-relay keeps its own files: the config file and the state folder (ledger,
//! listing cache, locks).

use std::path::PathBuf;

use anyhow::{Context, Result};

pub const STATE_ENV: &str = "SESSION_RELAY_STATE_DIR";

/// `$SESSION_RELAY_STATE_DIR`, else the platform state dir (`~/.local/state/session-relay`).
pub fn state_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(STATE_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .map(|d| d.join("session-relay"))
}

/// The state folder, or an error that says how to set one.
pub fn require_state_dir() -> Result<PathBuf> {
    state_dir().context("no state directory on this platform; set SESSION_RELAY_STATE_DIR")
}

/// The versioned archive's default folder: `<state dir>/archive`, beside the ledger.
pub fn default_archive_dir() -> Option<PathBuf> {
    state_dir().map(|d| d.join("archive"))
}

/// `<config dir>/session-relay/config.yaml`.
pub fn default_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("session-relay").join("config.yaml"))
}
