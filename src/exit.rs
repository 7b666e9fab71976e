//! Exit codes (documented in docs/usage.md) and the error that carries one.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Anything unexpected: unreadable file, bad config, I/O failure.
    Error = 1,
    /// Bad command line (clap uses 2 as well).
    Usage = 2,
    /// The selector matched no session, or more than one.
    NotFound = 3,
    /// No session store exists where the tool looked.
    NoStore = 4,
    /// Another `clean` holds the lock.
    Busy = 6,
    /// The session picker was closed without picking (Esc, Ctrl-C), as a shell's interrupt.
    Cancelled = 130,
}

#[derive(Debug)]
pub struct CliError {
    pub code: ExitCode,
    pub message: String,
}

impl CliError {
    pub fn new(code: ExitCode, message: impl Into<String>) -> CliError {
        CliError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// The exit code for an error from anywhere in the program.
pub fn code_of(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<CliError>())
        .map_or(ExitCode::Error as i32, |e| e.code as i32)
}
