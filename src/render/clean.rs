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
                o.agent,
                o.id,
                o.path,
                if o.reason.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", o.reason)
                }
            )?;
        }
        if self.sessions.is_empty() {
            writeln!(out, "No relayed sessions in the ledger.")?;
        }
        for n in &self.notes {
            writeln!(out, "note: {n}")?;
        }
        Ok(())
    }
}
