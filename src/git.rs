//! Running the git CLI on a checkout the user owns (the handoff brief's state, `bundle --git`,
//! the archive, OpenCode's project ids): never asking on a terminal, never taking a lock a
//! plain read could take, never pointed at another repository by the environment.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// `git` in `dir`, with no optional locks (a plain `git status` may otherwise refresh the
/// index), nothing asked on a terminal, and none of the variables that point git at another
/// repository or index (set when session-relay runs from a git hook).
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new("git");
    for v in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
    ] {
        c.env_remove(v);
    }
    c.arg("-C")
        .arg(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null());
    c
}

/// Runs `c`, returning its standard output trimmed; fails with git's own message.
pub fn run(mut c: Command, what: &str) -> Result<String> {
    let out = c
        .output()
        .with_context(|| format!("cannot run git to {what}"))?;
    if !out.status.success() {
        bail!(
            "git could not {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `git ARGS` in `dir`: its standard output without the final line break, or `None` when git
/// fails, is missing, or prints nothing (its error output is dropped).
pub fn output(dir: &Path, args: &[&str]) -> Option<String> {
    let out = command(dir)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim_end_matches(['\r', '\n']);
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}
