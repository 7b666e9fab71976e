use std::io::{self, Write};

use colored::Colorize;

use super::Text;
use crate::commands::show::ContextCheck;
use crate::commands::show::{FitPreview, Report, SessionReport};
use crate::model::{Timestamp, TodoStatus};
use crate::text::{one_line, safe, thousands, truncate_chars};

/// `23 (user 8, assistant 15); besides them 9 tool calls, 9 tool results, 1 reasoning`: the
/// messages as `list` counts them (the user's and the assistant's words), whose parts add up
/// to them, then what else the session holds, named for what it is.
fn messages_line(r: &SessionReport) -> String {
    let n = |role: &str| r.counts.get(role).copied().unwrap_or(0) as u64;
    let mut line = format!(
        "{} (user {}, assistant {})",
        thousands(r.messages as u64),
        thousands(n("user")),
        thousands(n("assistant"))
    );
    let others: Vec<String> = [
        ("tool_call", "tool call", "tool calls"),
        ("tool_result", "tool result", "tool results"),
        ("reasoning", "reasoning", "reasoning"),
        ("system", "context message", "context messages"),
    ]
    .iter()
    .filter(|(role, _, _)| n(role) > 0)
    .map(|(role, one, many)| {
        let count = n(role);
        format!(
            "{} {}",
            thousands(count),
            if count == 1 { one } else { many }
        )
    })
    .collect();
    if !others.is_empty() {
        line.push_str(&format!("; besides them {}", others.join(", ")));
    }
    line
}

/// What the agent recorded of its context, and how our count of the same growth compares.
fn context_line(c: &ContextCheck, agent: &str) -> String {
    let mut line = format!(
        "{} tokens at the newest request, as {agent} recorded it",
        thousands(c.recorded_tokens)
    );
    let since = "since the first request (or the last compaction)";
    match c.ratio {
        Some(ratio) if c.recorded_growth > 0 => line.push_str(&format!(
            "; {since} it grew by {} as recorded and by {} as we count it ({}): recorded / counted = {ratio:.2}",
            thousands(c.recorded_growth),
            thousands(c.estimated_growth as u64),
            c.tokenizer
        )),
        // A constant record (a mock model's) leaves nothing to compare the count with.
        Some(_) => line.push_str(&format!(
            "; {since} it recorded no growth, where we count {} ({}): nothing to compare",
            thousands(c.estimated_growth as u64),
            c.tokenizer
        )),
        None => {}
    }
    line
}

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
        self.header(out)?;
        self.counts(out)?;
        self.snapshot(out)?;
        lists(&self.session, out)?;
        read_stats(&self.session, out)
    }
}

impl SessionReport {
    /// Where the session is, when it ran, and its title.
    fn header(&self, out: &mut dyn Write) -> io::Result<()> {
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
        if let Some(b) = &self.bundle {
            let git = b.git.as_ref().map_or(String::new(), |g| {
                format!(
                    "; git changes on branch {} ({} files)",
                    safe(&g.branch),
                    g.files
                )
            });
            let bundle = format!(
                "format {}, made {} by session-relay {}{git}",
                b.format_version,
                safe(&b.created_at),
                safe(&b.tool_version)
            );
            writeln!(out, "{}", field("bundle", &bundle))?;
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

        Ok(())
    }

    /// The files it changed and how they stand now, as a relay's brief gives them.
    fn snapshot(&self, out: &mut dyn Write) -> io::Result<()> {
        let snap = &self.file_snapshot;
        if snap.files.is_empty() && !snap.repository.live {
            return Ok(());
        }
        writeln!(out, "\n{}", "File-state snapshot:".bold())?;
        for line in snap.render(None).lines() {
            writeln!(out, "  {}", safe(line))?;
        }
        Ok(())
    }

    /// Its messages, tool calls, tokens and context.
    fn counts(&self, out: &mut dyn Write) -> io::Result<()> {
        let s = &self.session;
        let display = crate::adapters::display_name(&s.agent);
        writeln!(out, "\n{} {}", "Messages:".bold(), messages_line(self))?;
        if !self.tool_calls.is_empty() {
            let parts: Vec<String> = self
                .tool_calls
                .iter()
                .map(|(k, v)| format!("{} {}", safe(k), thousands(*v as u64)))
                .collect();
            writeln!(out, "{} {}", "Tool calls:".bold(), parts.join(", "))?;
        }
        writeln!(
            out,
            "{} {} ({})",
            "Estimated tokens:".bold(),
            thousands(self.estimated_tokens as u64),
            self.tokenizer
        )?;
        if let Some(c) = &self.context_check {
            writeln!(out, "{} {}", "Context:".bold(), context_line(c, display))?;
        }
        Ok(())
    }
}

/// Its todos and its subagents.
fn lists(s: &crate::model::Session, out: &mut dyn Write) -> io::Result<()> {
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
    Ok(())
}

/// What the reader met: lines, malformed and skipped ones, and its warnings.
fn read_stats(s: &crate::model::Session, out: &mut dyn Write) -> io::Result<()> {
    let st = &s.stats;
    let mut read = vec![format!("{} lines", thousands(st.lines as u64))];
    read.push(format!(
        "{} malformed",
        thousands(st.malformed_lines as u64)
    ));
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
