use std::io::{self, Write};

use colored::Colorize;

use super::{Text, short_id};
use crate::commands::status::{Context, Report};
use crate::text::{one_line_cut, safe};

/// `128.4k`, `200k`, `1M`: token counts in a column.
fn tokens(n: u64) -> String {
    let (v, unit) = match n {
        n if n >= 1_000_000 => (n as f64 / 1e6, "M"),
        n if n >= 1_000 => (n as f64 / 1e3, "k"),
        n => return n.to_string(),
    };
    let s = format!("{v:.1}");
    format!("{}{unit}", s.strip_suffix(".0").unwrap_or(&s))
}

/// ` 64% 128.4k/200.0k`, or `unknown`.
fn context(c: Option<&Context>) -> String {
    match c {
        Some(c) => format!(
            "{:>3.0}% {}/{}",
            c.percent,
            tokens(c.tokens),
            tokens(c.window)
        ),
        None => "unknown".into(),
    }
}

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        if self.sessions.is_empty() {
            return super::list::no_sessions(self.dir.as_deref(), out);
        }
        writeln!(
            out,
            "{}",
            format!(
                "{:<16}  {:<6}  {:<8}  {:<18}  {:<20}  {}",
                "UPDATED", "AGENT", "ID", "CONTEXT", "RELAY", "TITLE"
            )
            .bold()
        )?;
        for s in &self.sessions {
            let updated = super::list::time_cell(s.updated.as_ref().and_then(|t| t.time()));
            let relay = match s.relays.as_slice() {
                [] => "-".to_string(),
                rs => rs
                    .iter()
                    .map(|r| {
                        format!(
                            "{} {}",
                            r.target.agent,
                            if r.up_to_date {
                                "up to date"
                            } else {
                                "outdated"
                            }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let mut title = one_line_cut(s.title.as_deref().unwrap_or(""), 50);
            if let Some(r) = &s.relay {
                title = format!("{} {title}", super::list::relay_marker(r));
            }
            let pct = s.context.as_ref().map_or(0.0, |c| c.percent);
            let ctx = format!("{:<18}", context(s.context.as_ref()));
            let ctx = if pct >= 80.0 {
                ctx.red().to_string()
            } else if pct >= 60.0 {
                ctx.yellow().to_string()
            } else {
                ctx
            };
            writeln!(
                out,
                "{:<16}  {:<6}  {:<8}  {}  {:<20}  {}",
                updated,
                safe(&s.agent),
                safe(&short_id(&s.id)),
                ctx,
                safe(&relay),
                safe(&title)
            )?;
            if self.dir.is_none() {
                super::list::dir_line(s.cwd.as_deref(), out)?;
            }
            for r in s.relays.iter().filter(|r| r.up_to_date) {
                writeln!(
                    out,
                    "{:<16}  {} {}",
                    "",
                    "resume:".dimmed(),
                    safe(&r.resume_command)
                )?;
            }
        }
        Ok(())
    }
}
