use std::io::{self, Write};

use super::Text;
use crate::commands::log::{Chain, ChainSession, Relay, Report};
use crate::ledger::Secrets;
use crate::text::{one_line_cut, safe, thousands};

impl Text for Report {
    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        super::warnings(&self.warnings);
        if self.chains.is_empty() {
            return writeln!(out, "No relays recorded: no session is part of a chain.");
        }
        for (i, chain) in self.chains.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            write_chain(chain, out)?;
        }
        if let Some(dir) = &self.archive {
            let branch = self
                .chains
                .iter()
                .flat_map(|c| &c.relays)
                .find_map(|r| Some(r.archive.clone()??.branch));
            writeln!(out, "\nArchive: {}", safe(dir))?;
            if let Some(b) = branch {
                writeln!(
                    out,
                    "  git -C {} log -p {}",
                    crate::text::shell_quote(dir),
                    safe(&b)
                )?;
            }
        }
        Ok(())
    }
}

/// `claude -> codex -> claude -> gemini (4 sessions, 3 relays)`, then each session with the
/// relays made from it.
fn write_chain(chain: &Chain, out: &mut dyn Write) -> io::Result<()> {
    let agents: Vec<&str> = chain.sessions.iter().map(|s| s.agent.as_str()).collect();
    let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    writeln!(
        out,
        "Chain {} ({}, {})",
        safe(&agents.join(" -> ")),
        plural(chain.sessions.len(), "session"),
        plural(chain.relays.len(), "relay")
    )?;
    for (i, s) in chain.sessions.iter().enumerate() {
        let mark = if chain.asked == Some(i) { "*" } else { " " };
        writeln!(out, "{mark}{:>2}. {}", i + 1, session_line(s))?;
        if let Some(cwd) = &s.cwd {
            writeln!(out, "      {}", safe(cwd))?;
        }
        if let Some(t) = &s.title {
            writeln!(out, "      {}", safe(&one_line_cut(t, 100)))?;
        }
        for r in chain.relays.iter().filter(|r| r.from == i) {
            let to = &chain.sessions[r.to];
            writeln!(
                out,
                "      -> {}. {} {}  {}",
                r.to + 1,
                safe(&to.agent),
                safe(&super::short_id(&to.id)),
                when(r.relayed_at.as_deref())
            )?;
            for line in relay_lines(r) {
                writeln!(out, "           {line}")?;
            }
        }
    }
    Ok(())
}

/// `claude 771ce1df-…  2026-11-30 02:51 .. 02:52  12 turns  ~3.4k tokens`, or gone.
fn session_line(s: &ChainSession) -> String {
    let head = format!("{} {}", safe(&s.agent), safe(&s.id));
    if let Some(b) = &s.bundle {
        return format!("{head}  [from bundle {}]", safe(b));
    }
    if s.gone {
        let why = if s.cleaned {
            "deleted by session-relay clean"
        } else {
            "deleted"
        };
        return format!("{head}  [gone: {why}]");
    }
    let time = |t: &Option<crate::model::Timestamp>| {
        super::list::time_cell(t.as_ref().and_then(|t| t.time()))
    };
    let mut parts = vec![
        head,
        format!("{} .. {}", time(&s.created), time(&s.updated)),
    ];
    if let Some(n) = s.turns {
        parts.push(format!("{} turns", thousands(n as u64)));
    }
    if let Some(n) = s.messages {
        parts.push(format!("{} messages", thousands(n as u64)));
    }
    if let Some(n) = s.tokens {
        parts.push(format!("~{} tokens", thousands(n as u64)));
    }
    if let Some(n) = s.context_tokens {
        parts.push(format!("context {}", thousands(n)));
    }
    parts.join("  ")
}

fn when(t: Option<&str>) -> String {
    match t.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()) {
        Some(t) => format!(
            "relayed {}",
            t.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M")
        ),
        None => "relayed (time unknown)".into(),
    }
}

/// What a relay kept, masked and wrote, and what became of its session.
fn relay_lines(r: &Relay) -> Vec<String> {
    if !r.in_ledger {
        let mut lines = vec!["not in the ledger: known by its provenance record only".into()];
        lines.extend(archive_line(r));
        return lines;
    }
    let mut lines = Vec::new();
    if let (Some(total), Some(budget)) = (r.written_tokens, r.budget) {
        lines.push(format!(
            "budget     {} of {} tokens",
            thousands(total as u64),
            thousands(budget as u64)
        ));
    }
    lines.push(match &r.kept {
        Some(k) => format!(
            "kept       {} turns verbatim, {} shortened, {} summarized, {} left out",
            thousands(k.verbatim.turns as u64),
            thousands(k.shortened.turns as u64),
            thousands(k.summarized.turns as u64),
            thousands(k.left_out.turns as u64)
        ),
        None => "kept       not recorded (an older relay)".into(),
    });
    lines.push(format!("secrets    {}", secrets(r.secrets.as_ref())));
    let state = match r.continued {
        Some(true) => "continued after the relay",
        Some(false) => "not continued",
        None => "unknown (gone)",
    };
    let superseded = if r.superseded {
        ", superseded by a newer relay"
    } else {
        ""
    };
    lines.push(format!("target     {state}{superseded}"));
    lines.extend(archive_line(r));
    lines
}

/// With `--archive`: the relay's commit there.
fn archive_line(r: &Relay) -> Option<String> {
    Some(match r.archive.as_ref()? {
        Some(a) => format!(
            "archive    {} on {}",
            &a.commit[..a.commit.len().min(12)],
            safe(&a.branch)
        ),
        None => "archive    not archived".into(),
    })
}

/// As `relay` says it: `2 masked (aws_access_key 1, github_token 1)`, `none found`, or not.
fn secrets(s: Option<&Secrets>) -> String {
    match s {
        None => "not recorded (an older relay)".into(),
        Some(s) if !s.redacted => "NOT masked (--no-redact)".into(),
        Some(s) => super::relay::redactions(&crate::commands::Redactions(Some(s.masked.clone()))),
    }
}
