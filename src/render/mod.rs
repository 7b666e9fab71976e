//! The render stage: every command's report as text for people or as JSON for programs, in one
//! place per command. JSON output always carries `schema_version` (see the README).

mod clean;
mod export;
mod fit;
mod hooks;
mod list;
mod relay;
mod show;
mod status;

use std::io::{self, IsTerminal, Write};

use anyhow::Result;
use serde::Serialize;

/// Bumped when a field of any `--json` output changes meaning or goes away.
pub const JSON_SCHEMA_VERSION: u32 = 1;

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

/// Colours only on a terminal (and never when NO_COLOR is set, which `colored` honours).
pub fn init_colors() {
    if !io::stdout().is_terminal() {
        colored::control::set_override(false);
    }
}

/// The first 8 characters of an id, as the listing shows it.
fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}
