//! The commands: list, show, export.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use colored::Colorize;
use serde_json::{Value, json};

use crate::adapter::Summary;
use crate::cli::{ExportArgs, ExportFormat, ListArgs, Scope, ShowArgs};
use crate::config::Config;
use crate::exit::{CliError, ExitCode};
use crate::session::{Role, Session, TodoStatus, one_line, truncate_chars};
use crate::store::{self, SelectScope};
use crate::{handoff, neutral, tokens};

fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().context("cannot read the current directory")
}

fn scope_dir(scope: &Scope) -> Result<PathBuf> {
    match &scope.cwd {
        Some(d) => Ok(std::path::absolute(d).unwrap_or(d.clone())),
        None => current_dir(),
    }
}

pub fn list(cfg: &Config, args: &ListArgs) -> Result<()> {
    let all = store::list_all(cfg, args.scope.agent.as_deref())?;
    let dir = scope_dir(&args.scope)?;
    let mut rows: Vec<Summary> = all
        .into_iter()
        .filter(|s| s.parent_id.is_none())
        .filter(|s| args.all || store::same_dir(s.cwd.as_deref(), &dir))
        .collect();
    if let Some(n) = args.limit {
        rows.truncate(n);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(());
    }
    if rows.is_empty() {
        if args.all {
            writeln!(out, "No sessions.")?;
        } else {
            writeln!(
                out,
                "No sessions for {}. Use --all to list every directory's sessions.",
                dir.display()
            )?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "{}",
        format!(
            "{:<16}  {:<6}  {:<8}  {:>5}  {:>7}  {}",
            "UPDATED", "AGENT", "ID", "MSGS", "SIZE", "TITLE"
        )
        .bold()
    )?;
    for s in &rows {
        let updated = s
            .sort_time()
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_else(|| "-".into());
        let mut title = truncate_chars(&one_line(s.title.as_deref().unwrap_or("")), 60);
        if s.archived {
            title = format!("[archived] {title}");
        }
        if s.subagents > 0 {
            title = format!("{title} (+{} subagent)", s.subagents);
        }
        writeln!(
            out,
            "{:<16}  {:<6}  {:<8}  {:>5}  {:>7}  {}",
            updated,
            s.agent,
            short_id(&s.id),
            s.messages,
            human_size(s.size),
            title
        )?;
        if args.all {
            writeln!(
                out,
                "{:<16}  {}",
                "",
                s.cwd.as_deref().unwrap_or("(no cwd)").dimmed()
            )?;
        }
    }
    Ok(())
}

fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn load(
    cfg: &Config,
    selector: &str,
    scope: &Scope,
    opts: crate::adapter::ReadOptions,
) -> Result<Session> {
    let located = store::select(
        cfg,
        selector,
        &SelectScope {
            agent: scope.agent.as_deref(),
            cwd: scope_dir(scope)?,
        },
    )?;
    located.read_with(opts)
}

/// The directory a relayed (or fitted) session belongs to: `--cwd`, else the session's own.
fn resume_dir(scope: &Scope, s: &Session) -> Result<String> {
    Ok(match (&scope.cwd, &s.cwd) {
        (Some(d), _) => d.display().to_string(),
        (None, Some(c)) => c.clone(),
        (None, None) => current_dir()?.display().to_string(),
    })
}

fn display_name(agent: &str) -> &'static str {
    store::adapter(agent).map_or("unknown agent", |a| a.display_name())
}

/// Above this much text `show` estimates tokens instead of counting them exactly.
const EXACT_COUNT_MAX: usize = 4 << 20;

/// Everything `show` reports, as one JSON value (also the source of the text output).
pub fn report(s: &Session) -> Value {
    let mut header = serde_json::to_value(s).expect("session serialises");
    if let Some(o) = header.as_object_mut() {
        o.remove("messages");
        // Agents' own system prompts and similar blobs ride along in `extra` (the export keeps
        // them whole); a report names their size instead.
        if let Some(Value::Object(extra)) = o.get_mut("extra") {
            for v in extra.values_mut() {
                let len = v.to_string().len();
                if len > 400 {
                    *v = json!({ "elided_bytes": len });
                }
            }
        }
    }
    let counts: BTreeMap<&str, usize> = s
        .role_counts()
        .into_iter()
        .map(|(r, n)| (r.as_str(), n))
        .collect();
    let mut tools: BTreeMap<String, usize> = BTreeMap::new();
    for m in s.messages.iter().filter(|m| m.role == Role::ToolCall) {
        *tools
            .entry(m.tool_name.clone().unwrap_or_else(|| "?".into()))
            .or_default() += 1;
    }
    // An exact count of a huge session costs seconds and says little more than an estimate.
    let size: usize = s.messages.iter().map(|m| m.content.len()).sum();
    let (estimated, tokenizer) = if size <= EXACT_COUNT_MAX {
        (tokens::session_tokens(s), "o200k_base")
    } else {
        (tokens::session_estimate(s), "estimate (characters / 4)")
    };
    json!({
        "session": header,
        "messages": s.message_count(),
        "counts": counts,
        "tool_calls": tools,
        "estimated_tokens": estimated,
        "tokenizer": tokenizer,
    })
}

pub fn show(cfg: &Config, args: &ShowArgs) -> Result<()> {
    if let Some(to) = &args.to {
        let target = store::adapter(to).expect("clap checked the agent name");
        crate::relay::warm_tokenizer(cfg.agent(target.name()).tokenizer);
        let mut s = load(
            cfg,
            &args.session,
            &args.scope,
            crate::relay::relay_read_options(),
        )?;
        crate::relay::redact_or_warn(cfg, &mut s, false)?;
        return show_budget(cfg, &s, to, args);
    }
    let s = load(cfg, &args.session, &args.scope, Default::default())?;
    let rep = report(&s);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rep)?;
        writeln!(out)?;
        return Ok(());
    }
    let field = |label: &str, value: &str| format!("  {:<10} {}", format!("{label}:"), value);
    writeln!(
        out,
        "{} {} {}",
        display_name(&s.agent).bold(),
        s.id.bold(),
        if s.archived { "(archived)" } else { "" }
    )?;
    if let Some(p) = &s.source_path {
        writeln!(out, "{}", field("path", p))?;
    }
    writeln!(out, "{}", field("cwd", s.cwd.as_deref().unwrap_or("-")))?;
    if let Some(g) = &s.git {
        let mut parts = Vec::new();
        if let Some(b) = &g.branch {
            parts.push(format!("branch {b}"));
        }
        if let Some(c) = &g.commit {
            parts.push(format!("commit {c}"));
        }
        if let Some(r) = &g.remote {
            parts.push(format!("remote {r}"));
        }
        writeln!(out, "{}", field("git", &parts.join(", ")))?;
    }
    let ts = |t: &Option<crate::session::Timestamp>| {
        t.as_ref()
            .map(|t| t.utc.clone().unwrap_or_else(|| t.original.clone()))
            .unwrap_or_else(|| "-".into())
    };
    writeln!(out, "{}", field("created", &ts(&s.created)))?;
    writeln!(out, "{}", field("updated", &ts(&s.updated)))?;
    writeln!(
        out,
        "{}",
        field(
            "source",
            &format!(
                "{} {} (format {})",
                display_name(&s.agent),
                s.source_version.as_deref().unwrap_or("(version unknown)"),
                s.format
            )
        )
    )?;
    if let Some(p) = &s.parent_id {
        writeln!(out, "{}", field("parent", p))?;
    }
    writeln!(
        out,
        "{}",
        field(
            "title",
            &truncate_chars(&one_line(s.title.as_deref().unwrap_or("-")), 100)
        )
    )?;

    let counts = s.role_counts();
    let parts: Vec<String> = counts
        .iter()
        .map(|(r, n)| format!("{} {n}", r.as_str()))
        .collect();
    writeln!(
        out,
        "\n{} {} ({})",
        "Messages:".bold(),
        s.message_count(),
        parts.join(", ")
    )?;
    if let Some(tools) = rep["tool_calls"].as_object().filter(|t| !t.is_empty()) {
        let parts: Vec<String> = tools.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(out, "{} {}", "Tool calls:".bold(), parts.join(", "))?;
    }
    writeln!(
        out,
        "{} {} ({})",
        "Estimated tokens:".bold(),
        rep["estimated_tokens"],
        rep["tokenizer"].as_str().unwrap_or("")
    )?;
    if !s.files_touched.is_empty() {
        writeln!(out, "\n{}", "Files touched:".bold())?;
        for f in &s.files_touched {
            writeln!(out, "  {f}")?;
        }
    }
    if !s.todos.is_empty() {
        writeln!(out, "\n{}", "Todo / plan:".bold())?;
        for t in &s.todos {
            let mark = match t.status {
                TodoStatus::Completed => "[x]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Pending => "[ ]",
            };
            writeln!(out, "  {mark} {}", one_line(&t.text))?;
        }
    }
    if !s.subagents.is_empty() {
        writeln!(out, "\n{}", "Subagents:".bold())?;
        for a in &s.subagents {
            writeln!(
                out,
                "  {} {} {}",
                a.id,
                a.agent_type.as_deref().unwrap_or(""),
                a.path.dimmed()
            )?;
        }
    }
    let st = &s.stats;
    let mut read = vec![format!("{} lines", st.lines)];
    read.push(format!("{} malformed", st.malformed_lines));
    if st.abandoned_branch_lines > 0 {
        read.push(format!(
            "{} on abandoned branches",
            st.abandoned_branch_lines
        ));
    }
    if st.sidechain_lines > 0 {
        read.push(format!("{} sidechain", st.sidechain_lines));
    }
    let unknown: usize = st.unknown_types.values().sum();
    if unknown > 0 {
        read.push(format!("{unknown} of unknown type"));
    }
    writeln!(out, "\n{} {}", "Read:".bold(), read.join(", "))?;
    if !s.warnings.is_empty() {
        writeln!(
            out,
            "\n{} ({})",
            "Warnings".yellow().bold(),
            s.warnings.len()
        )?;
        let path = s.source_path.as_deref().unwrap_or("");
        for w in &s.warnings {
            match w.line {
                Some(l) => writeln!(out, "  {path}:{l}: {}", w.message)?,
                None => writeln!(out, "  {path}: {}", w.message)?,
            }
        }
    }
    Ok(())
}

/// `show --to AGENT`: how a relay of this session would fit the target's budget.
fn show_budget(cfg: &Config, s: &Session, to: &str, args: &ShowArgs) -> Result<()> {
    let target = store::adapter(to).expect("clap checked the agent name");
    let cwd = resume_dir(&args.scope, s)?;
    let title = s.title.clone().unwrap_or_default();
    let (_, shape, fit, budget_from) =
        crate::relay::plan(cfg, s, target, "dry-run", &cwd, &title, args.budget)?;
    if args.json {
        let v = json!({"source": {"agent": s.agent, "id": s.id}, "to": to, "budget_from": budget_from, "shape": shape, "fit": fit});
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{} session {} relayed to {} (nothing written):",
            display_name(&s.agent),
            s.id,
            target.display_name()
        );
        crate::relay::print_fit(&fit, &budget_from);
    }
    Ok(())
}

pub fn export(cfg: &Config, args: &ExportArgs) -> Result<()> {
    let opts = if args.to.is_some() {
        crate::relay::relay_read_options()
    } else {
        Default::default()
    };
    let mut s = load(cfg, &args.session, &args.scope, opts)?;
    if let Some(counts) = crate::relay::redact_or_warn(cfg, &mut s, args.no_redact)?
        && !counts.is_empty()
    {
        eprintln!(
            "masked {} secret(s): {}",
            counts.values().sum::<usize>(),
            counts
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(to) = &args.to {
        let target = store::adapter(to).expect("clap checked the agent name");
        let cwd = resume_dir(&args.scope, &s)?;
        let title = s.title.clone().unwrap_or_default();
        let id = s.id.clone();
        let (mut fitted, _, fit, budget_from) =
            crate::relay::plan(cfg, &s, target, &id, &cwd, &title, args.budget)?;
        // Still the source session, seen as the target would receive it.
        fitted.agent = s.agent.clone();
        fitted.format = s.format.clone();
        fitted.source_path = s.source_path.clone();
        eprintln!(
            "fitted for {}: {} of {} tokens ({budget_from})",
            target.display_name(),
            fit.total_tokens,
            fit.budget
        );
        s = fitted;
    }
    let mut buf: Vec<u8> = Vec::new();
    match args.format {
        ExportFormat::Jsonl => neutral::write(&s, &mut buf)?,
        ExportFormat::Markdown => buf.extend(handoff::markdown(&s, display_name(&s.agent)).bytes()),
    }
    match &args.output {
        Some(path) => {
            write_new_file(path, &buf)?;
            for w in &s.warnings {
                eprintln!(
                    "warning: {}:{}: {}",
                    s.source_path.as_deref().unwrap_or(""),
                    w.line.map(|l| l.to_string()).unwrap_or_default(),
                    w.message
                );
            }
            eprintln!("wrote {}", path.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&buf)?;
            out.flush()?;
        }
    }
    Ok(())
}

/// Writes a new file atomically (temp file in the same folder, fsync, rename) and refuses to
/// replace an existing one.
pub fn write_new_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if path.exists() {
        return Err(CliError::new(
            ExitCode::Error,
            format!(
                "{} already exists; session-relay does not replace files. Remove it or choose another name.",
                path.display()
            ),
        )
        .into());
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".session-relay-")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist_noclobber(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

/// Colours only on a terminal (and never when NO_COLOR is set, which `colored` honours).
pub fn init_colors() {
    if !std::io::stdout().is_terminal() {
        colored::control::set_override(false);
    }
}
