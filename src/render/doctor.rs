use std::io::{self, Write};

use colored::Colorize;

use super::Text;
use crate::commands::doctor::{CliStatus, Level, Report};
use crate::text::{safe, thousands};

fn ok(s: &str) -> String {
    s.green().to_string()
}

fn warn(s: &str) -> String {
    s.yellow().to_string()
}

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{} {}", "session-relay".bold(), self.version)?;
        for a in &self.agents {
            agent(a, out)?;
        }
        self.config_and_state(out)?;
        self.hooks_lines(out)?;
        self.problems_lines(out)
    }
}

/// An agent's home, stores, sessions and CLI.
fn agent(a: &crate::commands::doctor::AgentCheck, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{} ({})", a.display_name.bold(), a.agent)?;
    let from = match a.home_from {
        crate::config::Origin::Default => "default".to_string(),
        crate::config::Origin::File => "from the config file".to_string(),
        crate::config::Origin::Env => format!("from {}", a.home_env),
        crate::config::Origin::Flag => "from --home".to_string(),
    };
    writeln!(
        out,
        "  home      {} ({from}) {}",
        safe(&a.home),
        if a.home_exists {
            ok("found")
        } else {
            warn("not found")
        }
    )?;
    for s in &a.stores {
        writeln!(
            out,
            "  store     {} {}",
            safe(&s.path),
            if s.exists { ok("found") } else { warn("none") }
        )?;
    }
    if a.home_exists {
        writeln!(out, "  sessions  {}", thousands(a.sessions as u64))?;
    }
    let c = &a.cli;
    let verified = c.verified.join(", ");
    let line = match (c.command, c.status) {
        (_, CliStatus::NoCli) | (None, _) => "no CLI to check".to_string(),
        (Some(cmd), CliStatus::NotInstalled) => {
            format!("{cmd}: {}", warn("not found on PATH"))
        }
        (Some(cmd), status) => {
            let found = format!(
                "{cmd} {} at {}",
                c.version.as_deref().unwrap_or("(version unknown)"),
                safe(c.path.as_deref().unwrap_or("?"))
            );
            let verdict = match status {
                CliStatus::Verified => ok(&format!("verified ({verified})")),
                CliStatus::Newer => warn(&format!("newer than verified ({verified})")),
                CliStatus::Older => warn(&format!("older than verified ({verified})")),
                CliStatus::Unverified => warn(&format!("not verified ({verified})")),
                _ => warn("version unknown"),
            };
            format!("{found}: {verdict}")
        }
    };
    writeln!(out, "  cli       {line}")?;
    Ok(())
}

impl Report {
    fn config_and_state(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out)?;
        match (&self.config.file, &self.config.error) {
            (_, Some(_)) => writeln!(out, "{}    {}", "Config".bold(), warn("cannot be used"))?,
            (Some(f), None) => writeln!(out, "{}    {}", "Config".bold(), safe(f))?,
            (None, None) => writeln!(
                out,
                "{}    none, the defaults apply (looked for {})",
                "Config".bold(),
                safe(self.config.default_path.as_deref().unwrap_or("-"))
            )?,
        }
        writeln!(
            out,
            "{}     {}",
            "State".bold(),
            safe(self.state.dir.as_deref().unwrap_or("(none)"))
        )?;
        let l = &self.state.ledger;
        if l.exists {
            writeln!(
                out,
                "  ledger    {} relay(s), {} cleaned, {} relayed session(s) on disk",
                thousands(l.relays as u64),
                thousands(l.cleaned as u64),
                thousands(l.relayed_present as u64)
            )?;
        } else {
            writeln!(out, "  ledger    none yet (nothing relayed)")?;
        }
        for d in &l.damaged {
            writeln!(out, "  {} {}", warn("damaged:"), safe(d))?;
        }
        for p in &l.unregistered {
            writeln!(out, "  {} {}", warn("not registered:"), safe(p))?;
        }
        for p in &l.registered_now {
            writeln!(out, "  registered now: {}", safe(p))?;
        }
        Ok(())
    }

    fn hooks_lines(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.hooks.supported && self.hooks.hooks.is_empty() {
            writeln!(
                out,
                "{}     none installed (`session-relay hooks install --agent AGENT` relays before \
                 the agent compacts)",
                "Hooks".bold()
            )?;
        } else if self.hooks.supported {
            writeln!(out, "{}", "Hooks".bold())?;
            for h in &self.hooks.hooks {
                writeln!(
                    out,
                    "  {:<9} {} {}",
                    safe(&h.agent),
                    safe(&h.path),
                    safe(&h.state)
                )?;
            }
        } else {
            writeln!(
                out,
                "{}     none (this version installs no hooks)",
                "Hooks".bold()
            )?;
        }
        Ok(())
    }

    fn problems_lines(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out)?;
        if self.problems.is_empty() {
            writeln!(out, "{}", ok("No problems found."))?;
            return Ok(());
        }
        writeln!(
            out,
            "{} problem{}:",
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            let label = match p.level {
                Level::Error => "error:".red().bold().to_string(),
                Level::Warning => warn("warning:"),
                Level::Note => "note:".to_string(),
            };
            writeln!(out, "  {label} {}", safe(&p.problem))?;
            writeln!(out, "    fix: {}", safe(&p.fix))?;
        }
        Ok(())
    }
}
