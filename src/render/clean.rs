use std::io::{self, Write};

use super::Text;
use crate::commands::clean::Report;

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        for o in &self.sessions {
            writeln!(
                out,
                "{:<12} {:<6} {}  {}{}",
                o.action.replace('_', " "),
                crate::text::safe(&o.agent),
                crate::text::safe(&o.id),
                crate::text::safe(&o.path),
                if o.reason.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", crate::text::safe(&o.reason))
                }
            )?;
        }
        if self.sessions.is_empty() {
            writeln!(out, "No relayed sessions in the ledger.")?;
        }
        for n in &self.notes {
            writeln!(out, "note: {}", crate::text::safe(n))?;
        }
        Ok(())
    }
}
