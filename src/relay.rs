//! Turning a neutral session into the shape a target agent can take: which messages travel,
//! which tool calls stay structured (the target has an equivalent tool) and which become
//! readable text, and the preamble that tells the next agent where the session came from.
//!
//! The result is still a neutral `Session`; the target adapter only serialises it. The same
//! shaped session is what the written file is verified against after it is read back.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::adapter::Adapter;
use crate::session::{Message, Role, Session, one_line, truncate_chars};

/// Longest tool output carried as text before it is cut to head and tail.
const TRANSCRIPT_OUTPUT_MAX: usize = 2000;

pub struct Shaped {
    pub session: Session,
    pub notes: Vec<String>,
}

/// What `shape` did, for the report.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ShapeStats {
    pub structured_tool_calls: usize,
    pub text_tool_calls: usize,
    pub dropped_context: usize,
    pub dropped_orphan_results: usize,
    pub reasoning: usize,
}

/// Builds the target-shaped session. `preamble` is the first message the next agent reads.
pub fn shape(
    source: &Session,
    target: &dyn Adapter,
    new_id: &str,
    preamble: String,
) -> (Session, ShapeStats) {
    let mut out = Session::new(target.name(), "relay", new_id);
    out.cwd = source.cwd.clone();
    out.git = source.git.clone();
    out.title = source.title.clone();
    out.todos = source.todos.clone();
    out.files_touched = source.files_touched.clone();
    out.created = source.created.clone();
    out.updated = source.updated.clone();
    let mut stats = ShapeStats::default();

    out.messages.push(
        Message::new(Role::System, preamble)
            .with_time(source.created.clone())
            .with_meta("kind", "relay_preamble"),
    );

    // Pair calls and results by id first: parallel calls complete out of order.
    let mut result_of: HashMap<&str, usize> = HashMap::new();
    for (i, m) in source.messages.iter().enumerate() {
        if m.role == Role::ToolResult
            && let Some(id) = m.tool_call_id.as_deref()
        {
            result_of.entry(id).or_insert(i);
        }
    }
    let mut structured: HashSet<String> = HashSet::new();
    let mut text_calls: HashMap<String, usize> = HashMap::new();
    let mut used_results: HashSet<usize> = HashSet::new();
    let mut id_map: HashMap<String, String> = HashMap::new();

    for (i, m) in source.messages.iter().enumerate() {
        match m.role {
            Role::User => out.messages.push(carry(m, Role::User, m.content.clone())),
            Role::Assistant => {
                if !m.content.trim().is_empty() {
                    out.messages
                        .push(carry(m, Role::Assistant, m.content.clone()));
                }
            }
            Role::Reasoning => {
                if !m.content.trim().is_empty() {
                    stats.reasoning += 1;
                    out.messages
                        .push(carry(m, Role::Reasoning, m.content.clone()));
                }
            }
            Role::System => match m.kind() {
                // The summary a compaction left is the only record of what came before it.
                Some("compact_summary") => out.messages.push(
                    carry(m, Role::System, m.content.clone()).with_meta("kind", "carried_summary"),
                ),
                Some("compaction") if m.content.len() > 40 => out.messages.push(
                    carry(m, Role::System, m.content.clone()).with_meta("kind", "carried_summary"),
                ),
                // Injected environment, instructions and UI lines describe the source agent's
                // own setup; the target injects its own.
                _ => stats.dropped_context += 1,
            },
            Role::ToolCall => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let result = result_of.get(id.as_str()).copied();
                let name = m.tool_name.clone().unwrap_or_else(|| "?".into());
                let input = m.tool_input.clone().unwrap_or(Value::Null);
                let native =
                    result.and_then(|_| target.equivalent_tool(&source.agent, &name, &input));
                match native {
                    Some((native_name, native_input)) => {
                        stats.structured_tool_calls += 1;
                        let new_id = sanitize_call_id(&id, id_map.len());
                        id_map.insert(id.clone(), new_id.clone());
                        structured.insert(id.clone());
                        let mut c = carry(m, Role::ToolCall, m.content.clone());
                        c.tool_call_id = Some(new_id);
                        c.tool_name = Some(native_name);
                        c.tool_input = Some(native_input);
                        if let Some(custom) = m.metadata.get("custom") {
                            c.metadata.insert("custom".into(), custom.clone());
                        }
                        out.messages.push(c);
                    }
                    None => {
                        stats.text_tool_calls += 1;
                        match result {
                            // Rendered where the result arrives, with it.
                            Some(_) => {
                                text_calls.insert(id, i);
                            }
                            None => out.messages.push(
                                carry(m, Role::Assistant, transcript(m, None))
                                    .with_meta("kind", "tool_transcript")
                                    .with_meta("oneline", crate::budget::one_line(m, None)),
                            ),
                        }
                    }
                }
            }
            Role::ToolResult => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                let is_answer = result_of.get(id.as_str()) == Some(&i);
                if !is_answer || !used_results.insert(i) {
                    stats.dropped_orphan_results += 1;
                    continue;
                }
                if structured.contains(&id) {
                    let mut r = carry(m, Role::ToolResult, m.content.clone());
                    r.tool_call_id = id_map.get(&id).cloned();
                    r.is_error = m.is_error;
                    if let Some(code) = m.metadata.get("exit_code") {
                        r.metadata.insert("exit_code".into(), code.clone());
                    }
                    out.messages.push(r);
                } else if let Some(&call) = text_calls.get(&id) {
                    out.messages.push(
                        carry(
                            m,
                            Role::Assistant,
                            transcript(&source.messages[call], Some(m)),
                        )
                        .with_meta("kind", "tool_transcript"),
                    );
                } else {
                    // A result whose call never appeared: nothing can be paired with it.
                    stats.dropped_orphan_results += 1;
                }
            }
        }
    }
    (out, stats)
}

/// A message for the target, keeping the source's time.
fn carry(m: &Message, role: Role, content: String) -> Message {
    Message::new(role, content).with_time(m.timestamp.clone())
}

/// Tool call ids must match `[A-Za-z0-9_-]+` for the Anthropic API; Codex ids already do.
fn sanitize_call_id(id: &str, n: usize) -> String {
    if !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        id.to_string()
    } else {
        format!("toolu_relay_{n:06}")
    }
}

/// A tool call (and its result) as text the next model can read.
pub fn transcript(call: &Message, result: Option<&Message>) -> String {
    let name = call.tool_name.as_deref().unwrap_or("?");
    let arg = key_argument(
        name,
        call.tool_input.as_ref().unwrap_or(&Value::Null),
        &call.content,
    );
    let mut text = format!("[tool call: {name}] {arg}");
    match result {
        Some(r) => {
            let status = if r.is_error { "error" } else { "ok" };
            let body = trim_output(&r.content, TRANSCRIPT_OUTPUT_MAX);
            text.push_str(&format!(
                "\n[result: {status}, {} chars]",
                r.content.chars().count()
            ));
            if !body.trim().is_empty() {
                text.push('\n');
                text.push_str(&body);
            }
        }
        None => text.push_str("\n[no result was recorded]"),
    }
    text
}

/// The argument that says what a tool call did: the command, the file, the query.
pub fn key_argument(name: &str, input: &Value, content: &str) -> String {
    let s = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    };
    if let Value::String(text) = input {
        // Freeform tools (apply_patch): the headers say which files.
        return patch_headline(text).unwrap_or_else(|| truncate_chars(&one_line(text), 200));
    }
    for key in [
        "command",
        "cmd",
        "file_path",
        "notebook_path",
        "path",
        "pattern",
        "query",
        "url",
        "prompt",
        "description",
    ] {
        if let Some(v) = input.get(key).and_then(s) {
            let v = if key == "command" || key == "cmd" {
                strip_shell_wrapper(&v)
            } else {
                v
            };
            return truncate_chars(&one_line(&v), 300);
        }
    }
    if let Some(items) = input
        .get("plan")
        .or_else(|| input.get("todos"))
        .and_then(Value::as_array)
    {
        let steps: Vec<String> = items
            .iter()
            .map(|i| {
                format!(
                    "{} ({})",
                    i.get("step")
                        .or_else(|| i.get("content"))
                        .and_then(Value::as_str)
                        .unwrap_or("?"),
                    i.get("status").and_then(Value::as_str).unwrap_or("?")
                )
            })
            .collect();
        return truncate_chars(&steps.join("; "), 400);
    }
    if let Some(p) = input.get("input").and_then(Value::as_str) {
        return patch_headline(p).unwrap_or_else(|| truncate_chars(&one_line(p), 200));
    }
    if !content.is_empty() {
        return truncate_chars(&one_line(content), 200);
    }
    let _ = name;
    truncate_chars(&input.to_string(), 200)
}

fn strip_shell_wrapper(cmd: &str) -> String {
    for prefix in [
        "bash -lc ",
        "/bin/bash -lc ",
        "bash -c ",
        "sh -c ",
        "zsh -lc ",
    ] {
        if let Some(rest) = cmd.strip_prefix(prefix) {
            return rest.to_string();
        }
    }
    cmd.to_string()
}

fn patch_headline(patch: &str) -> Option<String> {
    let files: Vec<&str> = patch
        .lines()
        .filter(|l| {
            l.starts_with("*** Add File: ")
                || l.starts_with("*** Update File: ")
                || l.starts_with("*** Delete File: ")
        })
        .collect();
    if files.is_empty() {
        None
    } else {
        Some(format!("patch: {}", files.join("; ").replace("*** ", "")))
    }
}

/// Long outputs keep their head and tail, with a marker saying how much was cut.
pub fn trim_output(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head_len = max * 2 / 3;
    let tail_len = max - head_len;
    let head: String = text.chars().take(head_len).collect();
    let tail: String = text.chars().skip(n - tail_len).collect();
    format!(
        "{head}\n[… {} chars cut …]\n{tail}",
        n - head_len - tail_len
    )
}

/// Facts recorded in the written session itself, so that a relayed file can be recognised
/// without the ledger.
pub fn provenance(source: &Session, source_sha256: &str, relay_time: &str) -> Value {
    json!({
        "tool": "session-relay",
        "tool_version": env!("CARGO_PKG_VERSION"),
        "relayed_at": relay_time,
        "source_agent": source.agent,
        "source_id": source.id,
        "source_path": source.source_path,
        "source_sha256": source_sha256,
    })
}

/// A comparable digest of the conversation: what must survive a write and a read-back.
pub fn digest(s: &Session) -> Vec<(Role, String)> {
    s.messages
        .iter()
        .filter_map(|m| match m.role {
            Role::User | Role::Assistant => Some((m.role, m.content.trim().to_string())),
            Role::ToolCall => Some((m.role, m.tool_name.clone().unwrap_or_default())),
            Role::ToolResult => Some((
                m.role,
                format!(
                    "{}{}",
                    if m.is_error { "error: " } else { "" },
                    m.content.trim()
                ),
            )),
            _ => None,
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// The `relay` command.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::Utc;

use crate::adapter::{NativeSession, WriteRequest};
use crate::cli::RelayArgs;
use crate::config::Config;
use crate::exit::{CliError, ExitCode};
use crate::ledger;
use crate::store::{self, SelectScope};

#[derive(serde::Serialize)]
struct Report<'a> {
    dry_run: bool,
    already_relayed: bool,
    source: ledger::Side,
    target: ledger::Side,
    cwd: &'a str,
    title: &'a str,
    resume_command: String,
    messages: usize,
    bytes: usize,
    shape: ShapeStats,
    budget_from: String,
    fit: crate::budget::FitReport,
    /// Secrets masked, by kind (`null` with --no-redact).
    redactions: Option<crate::redact::Counts>,
    notes: Vec<String>,
}

/// Masks secrets unless the user said not to, which is worth a warning.
pub fn redact_or_warn(
    cfg: &Config,
    s: &mut Session,
    no_redact: bool,
) -> Result<Option<crate::redact::Counts>> {
    if no_redact {
        eprintln!(
            "warning: --no-redact: secrets in this session (API keys, tokens, passwords) are written as they are"
        );
        return Ok(None);
    }
    Ok(Some(cfg.redactor()?.session(s)))
}

/// A relay keeps at most `TOOL_OUTPUT_MAX` characters of any tool output, so it reads no more.
pub fn relay_read_options() -> crate::adapter::ReadOptions {
    crate::adapter::ReadOptions {
        max_tool_output: Some(crate::budget::TOOL_OUTPUT_MAX),
    }
}

/// Loading o200k's tables takes a third of a second: do it on another core while the session
/// is read.
pub fn warm_tokenizer(tok: crate::tokens::Tokenizer) {
    if tok != crate::tokens::Tokenizer::Estimate {
        std::thread::spawn(move || tok.count("warm"));
    }
}

/// The budget for a target and how it was derived.
pub fn budget_for(cfg: &Config, target: &dyn Adapter, flag: Option<usize>) -> (usize, String) {
    match flag {
        Some(n) => (n, "--budget".into()),
        None => {
            let a = cfg.agent(target.name());
            (
                a.budget(),
                format!(
                    "({} context_window - {} reserved_tokens) x {} safety_ratio",
                    a.context_window, a.reserved_tokens, a.safety_ratio
                ),
            )
        }
    }
}

/// Shapes a source session for `target` and fits it to the budget: what a relay writes.
pub fn plan(
    cfg: &Config,
    source: &Session,
    target: &dyn Adapter,
    id: &str,
    cwd: &str,
    title: &str,
    budget_flag: Option<usize>,
) -> Result<(Session, ShapeStats, crate::budget::FitReport, String)> {
    let source_display =
        store::adapter(&source.agent).map_or("an unknown agent", |a| a.display_name());
    let git = crate::brief::git_state(cwd, source.git.as_ref());
    let brief_text = crate::brief::brief(&crate::brief::BriefInput {
        session: source,
        source_display,
        title,
        cwd,
        git: &git,
    });
    let (shaped, stats) = shape(source, target, id, brief_text.clone());
    let (budget, budget_from) = budget_for(cfg, target, budget_flag);
    let params = crate::budget::FitParams {
        budget,
        tokenizer: cfg.agent(target.name()).tokenizer,
        recent_turns: cfg.relay.recent_turns,
        summary_max_tokens: cfg.relay.summary_max_tokens,
        tool_call_keep_recent: cfg.relay.tool_call_keep_recent,
    };
    let (mut fitted, report) = crate::budget::fit(shaped, brief_text, &params)?;
    // The relayed session lives where it will be resumed.
    fitted.cwd = Some(cwd.to_string());
    if let Some(g) = fitted.git.as_mut() {
        if git.live {
            g.branch = git.branch.clone().or(g.branch.take());
            g.commit = git.commit.clone().or(g.commit.take());
        }
    } else if git.live {
        fitted.git = Some(crate::session::GitInfo {
            branch: git.branch.clone(),
            commit: git.commit.clone(),
            remote: None,
        });
    }
    Ok((fitted, stats, report, budget_from))
}

/// The itemized budget report (dry run and `show --budget`).
pub fn print_fit(fit: &crate::budget::FitReport, budget_from: &str) {
    let p = |label: &str, part: &crate::budget::Part| {
        println!(
            "  {label:<22} {:>6} tokens  {:>4} messages  {:>3} turns",
            part.tokens, part.messages, part.turns
        );
    };
    println!(
        "Budget: {} tokens = {budget_from}; counted with {}",
        fit.budget, fit.tokenizer
    );
    println!(
        "  {:<22} {:>6} tokens  {:>4} messages  {:>3} turns  (estimated)",
        "source", fit.source_tokens_estimate, fit.source_messages, fit.source_turns
    );
    println!("  {:<22} {:>6} tokens", "handoff brief", fit.brief_tokens);
    p("always kept", &fit.always_kept);
    p("recent turns kept", &fit.recent_kept);
    println!(
        "  {:<22} {:>6} tokens  {:>4} messages  {:>3} turns  (estimated)",
        "left out", fit.dropped.tokens, fit.dropped.messages, fit.dropped.turns
    );
    println!(
        "  {:<22} {:>6} tokens  {} of {} points",
        "summary of left out", fit.summary_tokens, fit.summary_points_kept, fit.summary_points
    );
    println!(
        "  {:<22} {} whole, {} as one line, {} outputs trimmed ({} chars cut)",
        "tool calls",
        fit.tool_calls_whole,
        fit.tool_calls_one_line,
        fit.tool_outputs_trimmed,
        fit.tool_output_chars_cut
    );
    println!(
        "  {:<22} {:>6} tokens of {} ({:.0}%){}",
        "total",
        fit.total_tokens,
        fit.budget,
        100.0 * fit.total_tokens as f64 / fit.budget.max(1) as f64,
        if fit.degraded {
            "  [always-kept content shortened to fit]"
        } else {
            ""
        }
    );
}

pub fn run(cfg: &Config, args: &RelayArgs) -> Result<()> {
    let target = store::adapter(&args.to).context("unknown target agent")?;
    let scope_dir = match &args.cwd {
        Some(d) => std::path::absolute(d).unwrap_or(d.clone()),
        None => std::env::current_dir()?,
    };
    let located = store::select(
        cfg,
        &args.session,
        &SelectScope {
            agent: args.agent.as_deref(),
            cwd: scope_dir,
        },
    )?;
    warm_tokenizer(cfg.agent(target.name()).tokenizer);
    let mut source = located.read_with(relay_read_options())?;
    let redactions = redact_or_warn(cfg, &mut source, args.no_redact)?;
    if source.messages.iter().all(|m| m.role != Role::User) {
        bail!(
            "{} has no user message to relay{}",
            located.path.display(),
            source
                .warnings
                .first()
                .map(|w| format!(" ({})", w.message))
                .unwrap_or_default()
        );
    }
    let source_sha = ledger::sha256_file(&located.path)?;
    let source_side = ledger::Side {
        agent: source.agent.clone(),
        id: source.id.clone(),
        path: located.path.display().to_string(),
        sha256: source_sha.clone(),
    };
    let home = cfg.agent(target.name()).session_root.clone();
    let mut notes: Vec<String> = Vec::new();

    let cwd = resolve_cwd(args.cwd.as_deref(), source.cwd.as_deref(), &mut notes)?;

    if !args.force
        && let Some(prev) = ledger::entries().into_iter().rev().find(|e| {
            e.event == "relay"
                && e.source.sha256 == source_sha
                && e.target.agent == target.name()
                && e.cwd == cwd
                && e.standalone == args.out.is_some()
                && Path::new(&e.target.path).exists()
        })
    {
        let resume = if prev.standalone {
            String::new()
        } else {
            resume_command(target.name(), &prev.target.id, &cwd)
        };
        if args.json {
            let report = Report {
                dry_run: args.dry_run,
                already_relayed: true,
                source: source_side,
                target: prev.target.clone(),
                cwd: &cwd,
                title: "",
                resume_command: resume,
                messages: prev.messages,
                bytes: prev.bytes as usize,
                shape: ShapeStats::default(),
                budget_from: String::new(),
                fit: Default::default(),
                redactions: None,
                notes: vec!["unchanged since the last relay; use --force to relay again".into()],
            };
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!(
                "Already relayed as {} session {} ({}) on {}; the source has not changed since. \
                 Use --force to relay again.",
                target.display_name(),
                prev.target.id,
                prev.target.path,
                prev.time
            );
            if !resume.is_empty() {
                println!("Resume it with:\n  {resume}");
            }
        }
        return Ok(());
    }

    let now = Utc::now();
    let id = target.new_id();
    let stamp = now.format("%Y%m%d_%H%M%S").to_string();
    let source_display =
        store::adapter(&source.agent).map_or("an unknown agent", |a| a.display_name());
    let title = args.title.clone().unwrap_or_else(|| {
        format!(
            "relay_{stamp} from {}: {}",
            source.agent,
            truncate_chars(&one_line(source.first_user_prompt().unwrap_or("")), 60)
        )
    });
    let standalone = args.out.as_ref().map(|p| {
        if p.is_dir() {
            p.join(format!("relay_{stamp}_{}.jsonl", &id[..8.min(id.len())]))
        } else {
            p.clone()
        }
    });
    let (shaped, shape_stats, fit_report, budget_from) =
        plan(cfg, &source, target, &id, &cwd, &title, args.budget)?;
    let req = WriteRequest {
        home: home.clone(),
        id: id.clone(),
        cwd: cwd.clone(),
        title: title.clone(),
        provenance: provenance(&source, &source_sha, &now.to_rfc3339()),
        now,
        standalone: standalone.clone(),
    };
    let native = target.write_session(&shaped, &req)?;
    notes.extend(native.notes.iter().cloned());
    if shape_stats.dropped_orphan_results > 0 {
        notes.push(format!(
            "{} tool result(s) without a call left out",
            shape_stats.dropped_orphan_results
        ));
    }

    let written_sha = ledger::sha256_bytes(&native.bytes);
    let target_side = ledger::Side {
        agent: target.name().to_string(),
        id: native.id.clone(),
        path: native.path.display().to_string(),
        sha256: written_sha,
    };
    let resume = if standalone.is_some() {
        String::new()
    } else {
        native.resume_command.clone()
    };

    if !args.dry_run {
        if standalone.is_none() && !home.is_dir() {
            return Err(CliError::new(
                ExitCode::NoStore,
                format!(
                    "{} home {} does not exist. Run {} once, or point to its home with {}=DIR or --home {}=DIR.",
                    target.display_name(),
                    home.display(),
                    target.display_name(),
                    target.home_env(),
                    target.name()
                ),
            )
            .into());
        }
        write_and_verify(target, &native, &shaped, &home)?;
        if standalone.is_none() {
            match target.register(&home, &native, &shaped, &title) {
                Ok(n) => notes.extend(n),
                Err(e) => notes.push(format!("could not update the store's index: {e:#}")),
            }
        }
        ledger::append(&ledger::Entry {
            event: "relay".into(),
            time: now.to_rfc3339(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            source: source_side.clone(),
            target: target_side.clone(),
            cwd: cwd.clone(),
            standalone: standalone.is_some(),
            bytes: native.bytes.len() as u64,
            messages: shaped.message_count(),
            tokens: Some(serde_json::json!({
                "budget": fit_report.budget,
                "total": fit_report.total_tokens,
                "tokenizer": fit_report.tokenizer,
                "source_estimate": fit_report.source_tokens_estimate,
            })),
        })?;
    }

    let report = Report {
        dry_run: args.dry_run,
        already_relayed: false,
        source: source_side,
        target: target_side,
        cwd: &cwd,
        title: &title,
        resume_command: resume.clone(),
        messages: shaped.message_count(),
        bytes: native.bytes.len(),
        shape: shape_stats,
        budget_from,
        fit: fit_report,
        redactions,
        notes,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print_report(&report, source_display, target.display_name());
    Ok(())
}

fn resume_command(agent: &str, id: &str, cwd: &str) -> String {
    match store::adapter(agent) {
        Some(a) if a.name() == "codex" => format!("codex resume {id}"),
        _ => format!("cd {cwd} && claude --resume {id}"),
    }
}

fn print_report(r: &Report, source_display: &str, target_display: &str) {
    if r.dry_run {
        println!("Dry run: nothing was written.");
    }
    println!(
        "{} {source_display} session {} -> {target_display} session {}",
        if r.dry_run { "Would relay" } else { "Relayed" },
        r.source.id,
        r.target.id
    );
    println!(
        "  {} {} ({} messages, {})",
        if r.dry_run { "would write" } else { "wrote" },
        r.target.path,
        r.messages,
        crate::commands::human_size(r.bytes as u64)
    );
    println!("  title      {}", r.title);
    println!("  directory  {}", r.cwd);
    println!(
        "  tool calls {} kept structured, {} carried as text",
        r.shape.structured_tool_calls, r.shape.text_tool_calls
    );
    for n in &r.notes {
        println!("  note: {n}");
    }
    match &r.redactions {
        Some(c) if c.is_empty() => println!("  secrets    none found"),
        Some(c) => println!(
            "  secrets    {} masked ({})",
            c.values().sum::<usize>(),
            c.iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => println!("  secrets    NOT masked (--no-redact)"),
    }
    if r.dry_run {
        print_fit(&r.fit, &r.budget_from);
    } else {
        println!(
            "  budget     {} of {} tokens ({} turns kept verbatim, {} summarized)",
            r.fit.total_tokens,
            r.fit.budget,
            r.fit.recent_kept.turns + r.fit.always_kept.turns,
            r.fit.dropped.turns
        );
    }
    if !r.resume_command.is_empty() {
        println!(
            "{}\n  {}",
            if r.dry_run {
                "It would resume with:"
            } else {
                "Resume it with:"
            },
            r.resume_command
        );
    }
}

/// The directory the session will be resumed in, as the target agent will see it: the real
/// path when the directory exists here (Claude Code keys its projects by real path).
fn resolve_cwd(
    flag: Option<&Path>,
    source: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<String> {
    let dir: PathBuf = match (flag, source) {
        (Some(d), _) => std::path::absolute(d).unwrap_or(d.to_path_buf()),
        (None, Some(s)) => PathBuf::from(s),
        (None, None) => {
            return Err(CliError::new(
                ExitCode::Usage,
                "the source session records no working directory; pass --cwd DIR",
            )
            .into());
        }
    };
    match std::fs::canonicalize(&dir) {
        Ok(real) => Ok(real.display().to_string()),
        Err(_) => {
            notes.push(format!(
                "{} does not exist on this machine; the session is filed under it anyway (use --cwd to choose another directory)",
                dir.display()
            ));
            Ok(dir.display().to_string())
        }
    }
}

/// Writes atomically without replacing anything, then reads the file back with our own reader
/// and compares it with what was meant to be written. On any difference the file is removed.
fn write_and_verify(
    target: &dyn Adapter,
    native: &NativeSession,
    shaped: &Session,
    home: &Path,
) -> Result<()> {
    if let Some(dir) = native.path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::commands::write_new_file(&native.path, &native.bytes)?;
    let check = || -> Result<()> {
        if let Some(t) = native.mtime {
            let f = std::fs::File::options().write(true).open(&native.path)?;
            f.set_modified(std::time::SystemTime::from(t))?;
        }
        let back = target
            .read(&native.path, Some(home))
            .context("reading the written session back")?;
        let want = digest(shaped);
        let got = digest(&back);
        if want != got {
            let at = want
                .iter()
                .zip(&got)
                .position(|(a, b)| a != b)
                .unwrap_or(want.len().min(got.len()));
            bail!(
                "read-back check failed: the written session differs from what was meant at message {at} \
                 (meant {:?}, read {:?}); {} messages meant, {} read",
                want.get(at).map(|m| (m.0, truncate_chars(&m.1, 80))),
                got.get(at).map(|m| (m.0, truncate_chars(&m.1, 80))),
                want.len(),
                got.len()
            );
        }
        Ok(())
    };
    if let Err(e) = check() {
        let _ = std::fs::remove_file(&native.path);
        return Err(e.context(format!("removed {}", native.path.display())));
    }
    Ok(())
}
