use std::io::{self, Write};

use super::Text;
use crate::adapter::HookTrust;
use crate::commands::{hook_run, hooks};
use crate::text::safe;

fn trust(t: HookTrust) -> &'static str {
    match t {
        HookTrust::NotNeeded => "runs",
        HookTrust::Trusted => "trusted",
        HookTrust::Untrusted => "NOT trusted yet (skipped until you trust it)",
        HookTrust::Disabled => "DISABLED: the agent's settings turn every hook off",
        HookTrust::TurnedOff => "DISABLED: the agent's settings turn this hook off",
        HookTrust::Unknown => "CANNOT TELL: the agent's settings do not parse",
    }
}

fn hook_lines(hooks: &[hooks::Installed], out: &mut dyn Write) -> io::Result<()> {
    for h in hooks {
        writeln!(
            out,
            "  {:<11} -> {:<7} {}",
            safe(&h.event),
            safe(h.to.as_deref().unwrap_or("?")),
            trust(h.trust)
        )?;
    }
    Ok(())
}

impl Text for hooks::InstallReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let agent = crate::adapters::display_name(&self.agent);
        if self.changed {
            writeln!(
                out,
                "Installed session-relay's hook for {agent} in {}{}",
                safe(&self.file),
                if self.created_file { " (new file)" } else { "" }
            )?;
        } else {
            writeln!(
                out,
                "session-relay's hook for {agent} is already in {}",
                safe(&self.file)
            )?;
        }
        hook_lines(&self.hooks, out)?;
        if let Some(h) = self.hooks.first() {
            writeln!(out, "  command     {}", safe(&h.command))?;
        }
        if let Some(b) = &self.backup {
            writeln!(out, "  backup      {}", safe(b))?;
        }
        for n in &self.notes {
            writeln!(out, "  note: {}", safe(n))?;
        }
        let to = self
            .hooks
            .first()
            .and_then(|h| h.to.as_deref())
            .map_or("the other agent", crate::adapters::display_name);
        writeln!(
            out,
            "Before {agent} compacts a session, it relays the session to {to} and shows the command that resumes it."
        )?;
        Ok(())
    }
}

impl Text for hooks::UninstallReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let agent = crate::adapters::display_name(&self.agent);
        if self.removed > 0 {
            writeln!(
                out,
                "Removed session-relay's hook for {agent} from {}{}",
                safe(&self.file),
                if self.restored {
                    " (the file is back as it was before the install)"
                } else {
                    ""
                }
            )?;
        }
        for n in &self.notes {
            writeln!(out, "  note: {}", safe(n))?;
        }
        Ok(())
    }
}

impl Text for hooks::StatusReport {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        for a in &self.agents {
            let agent = crate::adapters::display_name(&a.agent);
            match (&a.error, a.hooks.is_empty()) {
                (Some(e), _) => writeln!(out, "{agent}: cannot read {}", safe(e))?,
                (None, true) => writeln!(
                    out,
                    "{agent}: not installed ({}); session-relay hooks install --agent {}",
                    safe(&a.file),
                    a.agent
                )?,
                (None, false) => {
                    writeln!(out, "{agent}: installed in {}", safe(&a.file))?;
                    hook_lines(&a.hooks, out)?;
                }
            }
        }
        if !self.recent.is_empty() {
            writeln!(
                out,
                "Recent hook runs ({}):",
                safe(self.log.as_deref().unwrap_or(""))
            )?;
            for r in &self.recent {
                let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("");
                writeln!(
                    out,
                    "  {}  {:<11} {}",
                    safe(s("time").get(..19).unwrap_or(s("time"))),
                    safe(s("event")),
                    safe(s("line"))
                )?;
            }
        }
        Ok(())
    }
}

impl Text for hook_run::Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", self.reply)
    }
}
