use std::io::{self, Write};

use super::Text;
use crate::commands::export::Report;
use crate::text::thousands;

/// The export's own output is the document; this report goes to standard error.
impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(counts) = self.redactions.0.as_ref().filter(|c| !c.is_empty()) {
            writeln!(
                out,
                "masked {} secret(s): {}",
                thousands(self.redactions.total() as u64),
                counts
                    .iter()
                    .map(|(k, n)| format!("{k} {}", thousands(*n as u64)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
        if let Some(f) = &self.fitted {
            writeln!(
                out,
                "fitted for {}: {} of {} tokens ({})",
                crate::adapters::display_name(&f.to),
                thousands(f.total_tokens as u64),
                thousands(f.budget as u64),
                f.budget_from
            )?;
        }
        for w in &self.warnings {
            writeln!(out, "warning: {}", crate::text::safe(w))?;
        }
        if let Some(p) = &self.output {
            writeln!(out, "wrote {}", crate::text::safe(p))?;
        }
        Ok(())
    }
}
