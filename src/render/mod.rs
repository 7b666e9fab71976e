//! The render stage: every command's report as text for people or as JSON for programs, in one
//! place per command. JSON output always carries `schema_version` (see docs/usage.md).

mod bundle;
mod clean;
mod doctor;
mod export;
mod fit;
mod hooks;
mod list;
mod log;
pub mod picker;
pub mod progress;
mod relay;
mod show;
mod stats;
mod status;
mod table;

use std::io::{self, IsTerminal, Write};

use anyhow::Result;
use serde::Serialize;

pub use stats::page as stats_page;
#[doc(hidden)]
pub use stats::page::CHARTS as STATS_CHARTS;

pub use crate::commands::JSON_SCHEMA_VERSION;

/// A report that people read.
pub trait Text {
    fn text(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// Writes a report as pretty JSON with its `schema_version`.
pub fn json<R: Serialize>(report: &R, out: &mut dyn Write) -> Result<()> {
    #[derive(Serialize)]
    struct Versioned<'a, R> {
        schema_version: u32,
        #[serde(flatten)]
        report: &'a R,
    }
    serde_json::to_writer_pretty(
        &mut *out,
        &Versioned {
            schema_version: JSON_SCHEMA_VERSION,
            report,
        },
    )?;
    writeln!(out)?;
    Ok(())
}

/// A report on standard output, as JSON or text.
pub fn emit<R: Serialize + Text>(report: &R, as_json: bool) -> Result<()> {
    // One write for a listing of thousands of lines, not one a line.
    let mut out = io::BufWriter::new(io::stdout().lock());
    if as_json {
        json(report, &mut out)?;
    } else {
        report.text(&mut out)?;
    }
    Ok(out.flush()?)
}

/// Warnings for people, on standard error.
pub fn warnings(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {}", crate::text::safe(w));
    }
}

/// `--color`: when reports and messages are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    Always,
    Never,
}

/// Whether NO_COLOR asks for no colour (set and not empty, as no-color.org says).
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

impl ColorChoice {
    /// Whether to colour what goes to a stream that is (or is not) a terminal.
    pub fn colors(self, terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color_env(),
        }
    }
}

/// Colours in reports (standard output) as `--color` says: with `auto` only on a terminal, and
/// never when NO_COLOR is set; `always` wins over both.
pub fn init_colors(choice: ColorChoice) {
    colored::control::set_override(choice.colors(io::stdout().is_terminal()));
}

/// An error for people, on standard error: `error: ` and the message, which says what to do.
pub fn error(err: &anyhow::Error, choice: ColorChoice) {
    let message = crate::text::safe(&format!("{err:#}")).replace("\\n", "\n");
    let prefix = if choice.colors(io::stderr().is_terminal()) {
        // Not through `colored`, whose switch follows standard output.
        "\x1b[1;31merror:\x1b[0m".to_string()
    } else {
        "error:".to_string()
    };
    eprintln!("{prefix} {message}");
}

/// The first 8 characters of an id, as the listing shows it.
fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}
