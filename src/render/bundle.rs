use std::io::{self, Write};

use super::Text;
use crate::commands::bundle::Report;
use crate::text::{human_size, safe, thousands};

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        let m = &self.manifest;
        writeln!(
            out,
            "Bundled {} session {} -> {} ({})",
            crate::adapters::display_name(&m.source.agent),
            safe(&m.source.id),
            safe(&self.output),
            human_size(self.bytes)
        )?;
        writeln!(
            out,
            "  holds      the session (neutral JSONL), the file-state snapshot ({} files){}",
            thousands(self.files as u64),
            match &m.git {
                Some(g) => format!(
                    ", git changes on branch {} ({} files, on {})",
                    safe(&g.branch),
                    thousands(g.files as u64),
                    safe(&g.base[..g.base.len().min(12)])
                ),
                None => String::new(),
            }
        )?;
        writeln!(
            out,
            "  secrets    {}",
            super::relay::redactions(&self.redactions)
        )?;
        for s in &self.secrets_allowed {
            writeln!(
                out,
                "  warning: --allow-secrets: the changes carry a secret at {}",
                safe(s)
            )?;
        }
        for n in &self.notes {
            writeln!(out, "  note: {}", safe(n))?;
        }
        writeln!(
            out,
            "Relay it on another machine with:\n  session-relay relay {} --to AGENT --cwd DIR{}",
            // A command to copy: a path with a space or a quote stays one word.
            crate::text::shell_quote(&safe(&self.output)),
            if m.git.is_some() {
                " --apply-changes"
            } else {
                ""
            }
        )?;
        Ok(())
    }
}
