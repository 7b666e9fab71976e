use std::io::{self, Write};

use super::Text;
use crate::commands::Redactions;
use crate::commands::relay::Report;
use crate::text::{human_size, safe, thousands};

/// `3 masked (github_token 2, aws_access_key 1)`, `none found`, or `NOT masked`.
pub fn redactions(r: &Redactions) -> String {
    match &r.0 {
        Some(c) if c.is_empty() => "none found".into(),
        Some(c) => format!(
            "{} masked ({})",
            thousands(r.total() as u64),
            c.iter()
                .map(|(k, n)| format!("{k} {}", thousands(*n as u64)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "NOT masked (--no-redact)".into(),
    }
}

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        let target_display = crate::adapters::display_name(&self.target.agent);
        if self.already_relayed {
            writeln!(
                out,
                "Already relayed as {target_display} session {} ({}) on {}; the source has not changed since. \
                 Use --force to relay again.",
                safe(&self.target.id),
                safe(&self.target.path),
                self.relayed_at.as_deref().unwrap_or("?")
            )?;
            if !self.resume_command.is_empty() {
                writeln!(out, "Resume it with:\n  {}", safe(&self.resume_command))?;
            }
            return Ok(());
        }
        let dry = self.dry_run;
        if dry {
            writeln!(out, "Dry run: nothing was written.")?;
        }
        writeln!(
            out,
            "{} {} session {} -> {target_display} session {}",
            if dry { "Would relay" } else { "Relayed" },
            crate::adapters::display_name(&self.source.agent),
            safe(&self.source.id),
            safe(&self.target.id)
        )?;
        writeln!(
            out,
            "  {} {} ({} messages, {})",
            if dry { "would write" } else { "wrote" },
            safe(&self.target.path),
            thousands(self.messages as u64),
            human_size(self.bytes as u64)
        )?;
        writeln!(out, "  title      {}", safe(&self.title))?;
        writeln!(out, "  directory  {}", safe(&self.cwd))?;
        for n in &self.notes {
            writeln!(out, "  note: {}", safe(n))?;
        }
        writeln!(out, "  secrets    {}", redactions(&self.redactions))?;
        let fit = &self.plan.fit;
        if dry {
            super::fit::itemized(&self.plan, out)?;
        } else {
            writeln!(
                out,
                "  budget     {} of {} tokens: {} turns kept verbatim, {} shortened, {} summarized, {} left out",
                thousands(fit.total_tokens as u64),
                thousands(fit.budget as u64),
                thousands(fit.verbatim.turns as u64),
                thousands(fit.shortened.turns as u64),
                thousands(fit.summarized.turns as u64),
                thousands(fit.left_out.turns as u64)
            )?;
            writeln!(out, "  tool calls {}", super::fit::tool_calls(&self.plan))?;
        }
        if let Some(a) = &self.archive {
            writeln!(
                out,
                "  archived   {} on {} in {}",
                &a.commit[..a.commit.len().min(12)],
                safe(&a.branch),
                safe(&a.dir)
            )?;
        }
        if !self.resume_command.is_empty() {
            writeln!(
                out,
                "{}\n  {}",
                if dry {
                    "It would resume with:"
                } else {
                    "Resume it with:"
                },
                safe(&self.resume_command)
            )?;
        }
        Ok(())
    }
}
