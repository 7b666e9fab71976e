//! `stats` as tables on the terminal, and as one page with charts (`page`).

use std::io::{self, Write};

use super::Text;
use super::table::{Paint, Table, screen_width};
use crate::commands::stats::{Figures, Report};
use crate::text::{safe, thousands};

pub mod page;
pub use page::page;

/// The neutral tool kinds, in the order the tables and the page show them.
pub(crate) const KINDS: [&str; 9] = [
    "shell", "read", "write", "edit", "search", "plan", "web", "subagent", "other",
];

/// How many projects and chains the tables show (the JSON and the page have them all).
const SHOWN: usize = 15;

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        writeln!(out, "{}", heading(self))?;
        if self.total.sessions == 0 && self.total.relays_out == 0 {
            return writeln!(out, "No session in range.");
        }
        writeln!(out)?;
        overview(self).write(out, screen_width())?;
        writeln!(out)?;
        tools(self).write(out, screen_width())?;
        writeln!(out)?;
        writeln!(
            out,
            "Projects ({} of {}, most sessions first)",
            self.projects.len().min(SHOWN),
            self.projects.len()
        )?;
        projects(self).write(out, screen_width())?;
        if !self.chains.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "Chains of relayed sessions ({} of {}, newest first)",
                self.chains.len().min(SHOWN),
                self.chains.len()
            )?;
            chains(self).write(out, screen_width())?;
        }
        if !self.flows.is_empty() {
            writeln!(out)?;
            flows(self).write(out, screen_width())?;
        }
        Ok(())
    }
}

/// `Since 2026-11-06 10:00 UTC, every agent, every project: 1,204 sessions, 31 relays`.
pub(crate) fn heading(r: &Report) -> String {
    let since = match &r.since {
        Some(t) => format!("Since {}", day_time(t)),
        None => "All time".to_string(),
    };
    let agent = r.agent.as_deref().unwrap_or("every agent");
    let project = r.project.as_deref().unwrap_or("every project");
    format!(
        "{since}, {}, {}: {} sessions, {} relays",
        safe(agent),
        safe(project),
        thousands(r.total.sessions as u64),
        thousands(r.total.relays_out as u64)
    )
}

fn day_time(t: &str) -> String {
    crate::model::parse_time(t).map_or_else(
        || t.to_string(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    )
}

fn n(v: usize) -> (String, Paint) {
    (thousands(v as u64), Paint::Plain)
}

/// `12.5%`, or `-` when there is nothing to divide by.
pub(crate) fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".into(), |r| format!("{:.1}%", r * 100.0))
}

/// `45s`, `12m`, `3.4h`, `2.1d`.
pub(crate) fn length(seconds: Option<u64>) -> String {
    match seconds {
        None => "-".into(),
        Some(s) if s < 60 => format!("{s}s"),
        Some(s) if s < 3600 => format!("{}m", s / 60),
        Some(s) if s < 86_400 => format!("{:.1}h", s as f64 / 3600.0),
        Some(s) => format!("{:.1}d", s as f64 / 86_400.0),
    }
}

/// `3 of 4 (75%)`.
fn continued(f: &Figures) -> String {
    if f.relays_in == 0 {
        return "-".into();
    }
    format!(
        "{} of {} ({})",
        f.relays_in_continued,
        f.relays_in_known,
        percent(f.continued_rate)
    )
}

fn rows(r: &Report) -> impl Iterator<Item = (&str, &Figures)> {
    r.agents
        .iter()
        .map(|g| (g.name.as_str(), &g.figures))
        .chain(std::iter::once(("all", &r.total)))
}

fn overview(r: &Report) -> Table {
    let mut t = Table::new(
        &[
            "AGENT",
            "SESSIONS",
            "TURNS",
            "USER",
            "CALLS",
            "ERRORS",
            "RATE",
            "STEPPED IN",
            "CONTEXT",
            "~TOKENS",
            "MEDIAN",
            "IN",
            "OUT",
            "CONTINUED",
        ],
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    );
    for (name, f) in rows(r) {
        let rate = percent(f.error_rate);
        let paint = match f.error_rate {
            Some(x) if x > 0.2 => Paint::Red,
            Some(x) if x > 0.1 => Paint::Yellow,
            _ => Paint::Plain,
        };
        t.row(
            vec![
                (safe(name).into_owned(), Paint::Plain),
                n(f.sessions),
                n(f.turns),
                n(f.user_messages),
                n(f.tool_calls_total),
                n(f.tool_errors),
                (rate, paint),
                n(f.interventions),
                (thousands(f.recorded_tokens), Paint::Plain),
                (thousands(f.estimated_tokens), Paint::Plain),
                (length(f.median_seconds), Paint::Plain),
                n(f.relays_in),
                n(f.relays_out),
                (continued(f), Paint::Plain),
            ],
            Vec::new(),
        );
    }
    t
}

fn tools(r: &Report) -> Table {
    let mut headers = vec!["AGENT"];
    headers.extend(KINDS.iter().map(|k| match *k {
        "shell" => "SHELL",
        "read" => "READ",
        "write" => "WRITE",
        "edit" => "EDIT",
        "search" => "SEARCH",
        "plan" => "PLAN",
        "web" => "WEB",
        "subagent" => "SUBAGENT",
        _ => "OTHER",
    }));
    headers.extend(["INTERRUPTED", "REJECTED", "CORRECTED"]);
    let right: Vec<usize> = (1..headers.len()).collect();
    let mut t = Table::new(&headers, &right);
    for (name, f) in rows(r) {
        let mut cells = vec![(safe(name).into_owned(), Paint::Plain)];
        cells.extend(
            KINDS
                .iter()
                .map(|k| n(f.tool_calls.get(*k).copied().unwrap_or(0))),
        );
        cells.extend([n(f.interruptions), n(f.rejected), n(f.corrections)]);
        t.row(cells, Vec::new());
    }
    t
}

fn projects(r: &Report) -> Table {
    let mut t = Table::new(
        &[
            "SESSIONS",
            "TURNS",
            "CALLS",
            "RATE",
            "STEPPED IN",
            "RELAYS",
            "PROJECT",
        ],
        &[0, 1, 2, 3, 4, 5],
    );
    for g in r.projects.iter().take(SHOWN) {
        let f = &g.figures;
        t.row(
            vec![
                n(f.sessions),
                n(f.turns),
                n(f.tool_calls_total),
                (percent(f.error_rate), Paint::Plain),
                n(f.interventions),
                n(f.relays_out),
                (safe(&g.name).into_owned(), Paint::Plain),
            ],
            Vec::new(),
        );
    }
    t
}

fn chains(r: &Report) -> Table {
    let mut t = Table::new(
        &[
            "SESSIONS",
            "RELAYS",
            "CONTINUED",
            "TURNS",
            "CALLS",
            "RATE",
            "CHAIN",
        ],
        &[0, 1, 2, 3, 4, 5],
    );
    for c in r.chains.iter().take(SHOWN) {
        let f = &c.figures;
        let title = c
            .title
            .as_deref()
            .map(|t| format!("  {}", crate::text::one_line_cut(t, 60)))
            .unwrap_or_default();
        t.row(
            vec![
                n(c.sessions.len()),
                n(f.relays_out),
                n(f.relays_in_continued),
                n(f.turns),
                n(f.tool_calls_total),
                (percent(f.error_rate), Paint::Plain),
                (
                    safe(&format!("{}{title}", c.agents.join(" -> "))).into_owned(),
                    Paint::Plain,
                ),
            ],
            Vec::new(),
        );
    }
    t
}

fn flows(r: &Report) -> Table {
    let mut t = Table::new(&["FROM", "TO", "RELAYS", "CONTINUED"], &[2]);
    for f in &r.flows {
        let rate = (f.known > 0).then(|| f.continued as f64 / f.known as f64);
        t.row(
            vec![
                (safe(&f.from).into_owned(), Paint::Plain),
                (safe(&f.to).into_owned(), Paint::Plain),
                n(f.relays),
                (
                    format!("{} of {} ({})", f.continued, f.known, percent(rate)),
                    Paint::Plain,
                ),
            ],
            Vec::new(),
        );
    }
    t
}
