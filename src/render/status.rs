use std::io::{self, Write};

use super::table::{Paint, Table, Under, screen_width};
use super::{Text, short_id};
use crate::commands::status::{Context, Report};
use crate::text::{one_line, safe};

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
        let mut table = Table::new(
            &["UPDATED", "AGENT", "ID", "CONTEXT", "RELAY", "TITLE"],
            &[],
        );
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
            let mut title = one_line(s.title.as_deref().unwrap_or(""));
            if let Some(r) = &s.relay {
                title = format!("{} {title}", super::list::relay_marker(r));
            }
            let pct = s.context.as_ref().map_or(0.0, |c| c.percent);
            let paint = if pct >= 80.0 {
                Paint::Red
            } else if pct >= 60.0 {
                Paint::Yellow
            } else {
                Paint::Plain
            };
            let mut under = Vec::new();
            if self.dir.is_none() {
                under.push(Under::Dim(
                    safe(s.cwd.as_deref().unwrap_or("(no cwd)")).into_owned(),
                ));
            }
            for r in s.relays.iter().filter(|r| r.up_to_date) {
                under.push(Under::Labelled(
                    "resume:",
                    safe(&r.resume_command).into_owned(),
                ));
            }
            table.row(
                vec![
                    (updated, Paint::Plain),
                    (safe(&s.agent).into_owned(), Paint::Plain),
                    (safe(&short_id(&s.id)).into_owned(), Paint::Plain),
                    (context(s.context.as_ref()), paint),
                    (safe(&relay).into_owned(), Paint::Plain),
                    (safe(&title).into_owned(), Paint::Plain),
                ],
                under,
            );
        }
        table.write(out, screen_width())?;
        Ok(())
    }
}
