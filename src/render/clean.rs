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
            writeln!(out, "{}", self.nothing_to_clean())?;
        }
        for n in &self.notes {
            writeln!(out, "note: {}", crate::text::safe(n))?;
        }
        Ok(())
    }
}

impl Report {
    /// Why no session was a candidate: none relayed, or none of those relayed chosen.
    fn nothing_to_clean(&self) -> String {
        let n = self.in_ledger;
        let relayed = format!(
            "{} relayed session{} in the ledger",
            crate::text::thousands(n as u64),
            if n == 1 { "" } else { "s" }
        );
        let agent = self.agent.as_deref().map(crate::adapters::display_name);
        match (n, self.superseded, agent) {
            (0, ..) => "No relayed sessions in the ledger.".into(),
            (_, true, None) => format!(
                "None of the {relayed} is superseded (relayed again since, to the same agent and directory): nothing to clean."
            ),
            (_, true, Some(a)) => {
                format!("None of the {relayed} is superseded and in {a}'s store: nothing to clean.")
            }
            (_, false, Some(a)) => {
                format!("None of the {relayed} is in {a}'s store: nothing to clean.")
            }
            (_, false, None) => format!("None of the {relayed} is in a store found here."),
        }
    }
}
