use std::io::{self, Write};

use colored::Colorize;

use super::{Text, short_id};
use crate::commands::list::Report;
use crate::text::{human_size, one_line_cut, safe, thousands};

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        if self.sessions.is_empty() {
            return no_sessions(self.dir.as_deref(), out);
        }
        writeln!(
            out,
            "{}",
            format!(
                "{:<16}  {:<6}  {:<8}  {:>5}  {:>7}  {}",
                "UPDATED", "AGENT", "ID", "MSGS", "SIZE", "TITLE"
            )
            .bold()
        )?;
        for listed in &self.sessions {
            let s = &listed.summary;
            let updated = time_cell(s.sort_time());
            let mut title = one_line_cut(s.title.as_deref().unwrap_or(""), 60);
            if let Some(r) = &listed.relay {
                title = format!("{} {title}", relay_marker(r));
            }
            if s.archived {
                title = format!("[archived] {title}");
            }
            if s.subagents > 0 {
                title = format!("{title} (+{} subagent)", s.subagents);
            }
            writeln!(
                out,
                "{:<16}  {:<6}  {:<8}  {:>5}  {:>7}  {}",
                updated,
                safe(&s.agent),
                safe(&short_id(&s.id)),
                thousands(s.messages as u64),
                human_size(s.size),
                safe(&title)
            )?;
            if self.dir.is_none() {
                dir_line(s.cwd.as_deref(), out)?;
            }
        }
        Ok(())
    }
}

/// What a listing of nothing says: which directory had none, and how to see every one.
pub fn no_sessions(dir: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
    match dir {
        None => writeln!(out, "No sessions."),
        Some(dir) => writeln!(
            out,
            "No sessions for {}. Use --all to see every directory's sessions.",
            safe(dir)
        ),
    }
}

/// The UPDATED column.
pub fn time_cell(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| "-".into())
}

/// With `--all`, the session's directory under its row.
pub fn dir_line(cwd: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<16}  {}",
        "",
        safe(cwd.unwrap_or("(no cwd)")).dimmed()
    )
}

/// `[relay]`, or `[relay, superseded]` when a newer relay of the same source replaced it.
pub fn relay_marker(r: &crate::commands::list::RelayMark) -> &'static str {
    if r.superseded {
        "[relay, superseded]"
    } else {
        "[relay]"
    }
}
