use std::io::{self, Write};

use colored::Colorize;

use super::Text;
use crate::commands::show::{FitPreview, Report, SessionReport};
use crate::model::{Timestamp, TodoStatus};
use crate::text::{one_line, safe, truncate_chars};

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            Report::Session(r) => r.text(out),
            Report::Fit(r) => r.text(out),
        }
    }
}

impl Text for FitPreview {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        writeln!(
            out,
            "{} session {} relayed to {} (nothing written):",
            crate::adapters::display_name(&self.source.agent),
            safe(&self.source.id),
            crate::adapters::display_name(&self.to)
        )?;
        super::fit::itemized(&self.plan, out)
    }
}

impl Text for SessionReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let s = &self.session;
        let field = |label: &str, value: &str| format!("  {:<10} {}", format!("{label}:"), value);
        let display = crate::adapters::display_name(&s.agent);
        writeln!(
            out,
            "{} {} {}",
            display.bold(),
            safe(&s.id).bold(),
            if s.archived { "(archived)" } else { "" }
        )?;
        if let Some(p) = &s.source_path {
            writeln!(out, "{}", field("path", &safe(p)))?;
        }
        writeln!(
            out,
            "{}",
            field("cwd", &safe(s.cwd.as_deref().unwrap_or("-")))
        )?;
        if let Some(g) = &s.git {
            let mut parts = Vec::new();
            if let Some(b) = &g.branch {
                parts.push(format!("branch {b}"));
            }
            if let Some(c) = &g.commit {
                parts.push(format!("commit {c}"));
            }
            if let Some(r) = &g.remote {
                parts.push(format!("remote {r}"));
            }
            writeln!(out, "{}", field("git", &safe(&parts.join(", "))))?;
        }
        let ts = |t: &Option<Timestamp>| {
            t.as_ref()
                .map(|t| t.utc().unwrap_or(t.original()).to_string())
                .unwrap_or_else(|| "-".into())
        };
        writeln!(out, "{}", field("created", &safe(&ts(&s.created))))?;
        writeln!(out, "{}", field("updated", &safe(&ts(&s.updated))))?;
        writeln!(
            out,
            "{}",
            field(
                "source",
                &safe(&format!(
                    "{display} {} (format {})",
                    s.source_version.as_deref().unwrap_or("(version unknown)"),
                    s.format
                ))
            )
        )?;
        if let Some(p) = &s.parent_id {
            writeln!(out, "{}", field("parent", &safe(p)))?;
        }
        writeln!(
            out,
            "{}",
            field(
                "title",
                &safe(&truncate_chars(
                    &one_line(s.title.as_deref().unwrap_or("-")),
                    100
                ))
            )
        )?;

        let parts: Vec<String> = self
            .counts
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        writeln!(
            out,
            "\n{} {} ({})",
            "Messages:".bold(),
            self.messages,
            parts.join(", ")
        )?;
        if !self.tool_calls.is_empty() {
            let parts: Vec<String> = self
                .tool_calls
                .iter()
                .map(|(k, v)| format!("{} {v}", safe(k)))
                .collect();
            writeln!(out, "{} {}", "Tool calls:".bold(), parts.join(", "))?;
        }
        writeln!(
            out,
            "{} {} ({})",
            "Estimated tokens:".bold(),
            self.estimated_tokens,
            self.tokenizer
        )?;
        if let Some(c) = &self.context_check {
            match c.ratio {
                Some(ratio) => writeln!(
                    out,
                    "{} {} tokens at the newest request, as the agent recorded it; it grew by {} since the first request (or the last compaction), which our {} count puts at {} ({:.2}x)",
                    "Context:".bold(),
                    c.recorded_tokens,
                    c.recorded_growth,
                    c.tokenizer,
                    c.estimated_growth,
                    ratio
                )?,
                None => writeln!(
                    out,
                    "{} {} tokens at the newest request, as the agent recorded it",
                    "Context:".bold(),
                    c.recorded_tokens,
                )?,
            }
        }
        if !s.files_touched.is_empty() {
            writeln!(out, "\n{}", "Files touched:".bold())?;
            for f in &s.files_touched {
                writeln!(out, "  {}", safe(f))?;
            }
        }
        if !s.todos.is_empty() {
            writeln!(out, "\n{}", "Todo / plan:".bold())?;
            for t in &s.todos {
                let mark = match t.status {
                    TodoStatus::Completed => "[x]",
                    TodoStatus::InProgress => "[~]",
                    TodoStatus::Pending => "[ ]",
                };
                writeln!(out, "  {mark} {}", safe(&one_line(&t.text)))?;
            }
        }
        if !s.subagents.is_empty() {
            writeln!(out, "\n{}", "Subagents:".bold())?;
            for a in &s.subagents {
                writeln!(
                    out,
                    "  {} {} {}",
                    safe(&a.id),
                    safe(a.agent_type.as_deref().unwrap_or("")),
                    safe(&a.path).dimmed()
                )?;
            }
        }
        let st = &s.stats;
        let mut read = vec![format!("{} lines", st.lines)];
        read.push(format!("{} malformed", st.malformed_lines));
        if st.abandoned_branch_lines > 0 {
            read.push(format!(
                "{} on abandoned branches",
                st.abandoned_branch_lines
            ));
        }
        if st.sidechain_lines > 0 {
            read.push(format!("{} sidechain", st.sidechain_lines));
        }
        let unknown: usize = st.unknown_types.values().sum();
        if unknown > 0 {
            read.push(format!("{unknown} of unknown type"));
        }
        writeln!(out, "\n{} {}", "Read:".bold(), read.join(", "))?;
        if !s.warnings.is_empty() {
            writeln!(
                out,
                "\n{} ({})",
                "Warnings".yellow().bold(),
                s.warnings.len()
            )?;
            for w in crate::commands::reader_warnings(s) {
                writeln!(out, "  {}", safe(&w))?;
            }
        }
        Ok(())
    }
}
