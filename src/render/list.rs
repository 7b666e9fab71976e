use std::io::{self, Write};

use super::table::{Paint, Table, Under, screen_width};
use super::{Text, short_id};
use crate::commands::list::Report;
use crate::text::{human_size, one_line, safe, thousands};

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        if self.sessions.is_empty() {
            return no_sessions(self.dir.as_deref(), out);
        }
        let mut table = Table::new(
            &["UPDATED", "AGENT", "ID", "MSGS", "SIZE", "TITLE"],
            &[3, 4],
        );
        for listed in &self.sessions {
            let s = &listed.summary;
            let mut title = one_line(s.title.as_deref().unwrap_or(""));
            if let Some(r) = &listed.relay {
                title = format!("{} {title}", relay_marker(r));
            }
            if s.archived {
                title = format!("[archived] {title}");
            }
            if s.subagents > 0 {
                title = format!("{title} (+{} subagent)", s.subagents);
            }
            let under = match self.dir {
                None => vec![Under::Dim(
                    safe(s.cwd.as_deref().unwrap_or("(no cwd)")).into_owned(),
                )],
                Some(_) => Vec::new(),
            };
            table.row(
                [
                    time_cell(s.sort_time()),
                    safe(&s.agent).into_owned(),
                    safe(&short_id(&s.id)).into_owned(),
                    thousands(s.messages as u64),
                    human_size(s.size),
                    safe(&title).into_owned(),
                ]
                .into_iter()
                .map(|c| (c, Paint::Plain))
                .collect(),
                under,
            );
        }
        table.write(out, screen_width())?;
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

/// `[relay]`, or `[relay, superseded]` when a newer relay of the same source replaced it.
pub fn relay_marker(r: &crate::commands::list::RelayMark) -> &'static str {
    if r.superseded {
        "[relay, superseded]"
    } else {
        "[relay]"
    }
}
