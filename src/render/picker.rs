//! The interactive session picker (nucleo-picker): a fuzzy-searchable list on standard error,
//! one entry per session — title; agent, directory, age, size and message count; the first
//! request and the last exchange — with the sessions session-relay wrote marked. Entries appear
//! as their previews are read, newest first, so a large store never keeps the list from
//! opening.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use nucleo_picker::error::PickError;
use nucleo_picker::{PickerOptions, Render};

use crate::commands::pick::{Candidate, Candidates, Preview};
use crate::config::Config;
use crate::text::{ago, human_size, one_line, one_line_cut, safe, tilde};

/// What the person did with the picker.
#[derive(Debug)]
pub enum Picked {
    /// This session's file.
    Session(PathBuf),
    /// Closed it (Esc, Ctrl-C) without picking.
    Cancelled,
    /// There was nothing to pick from.
    Empty,
}

struct Entry {
    path: PathBuf,
    text: String,
}

/// What the picker shows and searches of an entry: its text.
struct EntryText;

impl Render<Entry> for EntryText {
    type Str<'a> = &'a str;

    fn render<'a>(&self, e: &'a Entry) -> &'a str {
        &e.text
    }
}

/// Opens the picker over `found` and waits for a pick. Only call it when standard input and
/// standard error are a terminal.
pub fn pick(cfg: &Config, found: Candidates) -> Result<Picked> {
    if found.sessions.is_empty() {
        return Ok(Picked::Empty);
    }
    let mut picker = PickerOptions::default().picker(EntryText);
    let injector = picker.injector();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        let cfg = cfg.clone();
        let now = chrono::Utc::now();
        std::thread::spawn(move || {
            for c in found.sessions {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                // A session that cannot be read is still offered: picking it says why.
                let preview = crate::commands::pick::preview(&cfg, &c.summary).unwrap_or_default();
                injector.push(Entry {
                    path: c.summary.path.clone(),
                    text: entry_text(&c, &preview, now),
                });
            }
        })
    };
    let picked = match picker.pick() {
        Ok(Some(e)) => Picked::Session(e.path.clone()),
        Ok(None) | Err(PickError::UserInterrupted) => Picked::Cancelled,
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            return Err(anyhow::anyhow!(
                "the session picker failed: {e}. Name the session instead (an id prefix or `latest`)."
            ));
        }
    };
    // The reader stops at its next session; it holds nothing the command needs.
    stop.store(true, Ordering::Relaxed);
    drop(reader);
    Ok(picked)
}

/// The lines of one entry (what is searched, too):
///
/// ```text
/// Fix the flaky parser test
///    Claude Code · ~/src/app · 2 h ago · 14.7 KB · 32 messages · 771ce1df
///    first: Please fix the flaky test in parser.rs
///    last:  run it again → All 12 tests pass.
/// ```
pub fn entry_text(c: &Candidate, p: &Preview, now: chrono::DateTime<chrono::Utc>) -> String {
    let s = &c.summary;
    let field = |t: &str, max: usize| safe(&one_line_cut(t, max)).into_owned();
    let mut title = field(
        s.title
            .as_deref()
            .or(p.first_request.as_deref())
            .unwrap_or("(untitled)"),
        100,
    );
    if let Some((agent, id)) = &c.relayed_from {
        title.push_str(&format!(
            "  [relayed from {} {}]",
            crate::adapters::display_name(agent),
            field(&super::short_id(id), 8)
        ));
    }
    if s.archived {
        title.push_str("  [archived]");
    }
    let mut facts = vec![
        crate::adapters::display_name(&s.agent).to_string(),
        field(&tilde(s.cwd.as_deref().unwrap_or("(no directory)")), 60),
    ];
    if let Some(t) = s.sort_time() {
        facts.push(ago(t, now));
    }
    facts.push(human_size(s.size));
    facts.push(format!(
        "{} message{}",
        crate::text::thousands(s.messages as u64),
        if s.messages == 1 { "" } else { "s" }
    ));
    facts.push(field(&super::short_id(&s.id), 8));
    if !c.relayed_to.is_empty() {
        let to: Vec<&str> = c
            .relayed_to
            .iter()
            .map(|a| crate::adapters::display_name(a))
            .collect();
        facts.push(format!("relayed to {}", to.join(", ")));
    }
    let mut lines = vec![title, format!("   {}", facts.join(" · "))];
    // A title that is the first request already says it.
    if let Some(first) = p.first_request.as_deref().filter(|f| {
        s.title
            .as_deref()
            .is_none_or(|t| one_line(t) != one_line(f))
    }) {
        lines.push(format!("   first: {}", field(first, 100)));
    }
    match (&p.last_request, &p.last_reply) {
        (Some(q), Some(a)) => lines.push(format!("   last:  {} → {}", field(q, 50), field(a, 70))),
        (Some(q), None) => lines.push(format!("   last:  {}", field(q, 100))),
        (None, Some(a)) => lines.push(format!("   reply: {}", field(a, 100))),
        (None, None) => {}
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Summary;

    #[test]
    fn an_entry_shows_title_facts_preview_and_relay_marks_without_control_characters() {
        let now = chrono::Utc::now();
        let c = Candidate {
            summary: Summary {
                id: "771ce1df-ae7a".into(),
                agent: "claude".into(),
                path: "/x/771ce1df-ae7a.jsonl".into(),
                cwd: Some("/srv/app".into()),
                title: Some("Fix the \x1b[31mflaky\nparser test".into()),
                created: None,
                updated: Some(crate::model::Timestamp::parse(
                    &(now - chrono::Duration::hours(2)).to_rfc3339(),
                )),
                messages: 32,
                size: 15_053,
                archived: false,
                parent_id: None,
                subagents: 0,
                relay_of: None,
            },
            relayed_from: Some(("codex".into(), "01a22a8e-0000".into())),
            relayed_to: vec![],
        };
        let p = Preview {
            first_request: Some("Please fix the flaky test".into()),
            last_request: Some("run it again".into()),
            last_reply: Some("All 12 tests pass.".into()),
        };
        let text = entry_text(&c, &p, now);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].starts_with("Fix the \\x1b[31mflaky parser test"),
            "{text}"
        );
        assert!(
            lines[0].ends_with("[relayed from Codex CLI 01a22a8e]"),
            "{text}"
        );
        assert_eq!(
            lines[1],
            "   Claude Code · /srv/app · 2 h ago · 14.7 KB · 32 messages · 771ce1df"
        );
        assert_eq!(lines[2], "   first: Please fix the flaky test");
        assert_eq!(lines[3], "   last:  run it again → All 12 tests pass.");
        assert!(!text.contains('\x1b'));
    }
}
