//! Codex CLI: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl` (also `.jsonl.zst`),
//! `archived_sessions/`, titles in `session_index.jsonl`, and the older shapes: the pre-envelope
//! JSONL of mid 2025 and the TypeScript CLI's single JSON document.

mod hooks;
mod read;
mod scan;
mod state_db;
mod tools;
mod usage;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::adapter::{
    Adapter, Agent, Cli, HookSetup, HookTrust, Hooks, NativeSession, ReadOptions, Store, TrustStep,
    Usage, WriteRequest,
};
use crate::model::{Message, RecordedUsage, Session, Summary};

pub struct Codex;

pub static ADAPTER: Codex = Codex;

pub const NAME: &str = "codex";

pub const AGENT: Agent = Agent {
    name: NAME,
    display_name: "Codex CLI",
    home_env: "CODEX_HOME",
    default_home: ".codex",
    cli: Some(Cli {
        command: "codex",
        npm_package: "@openai/codex",
        verified_versions: &["0.171.0"],
    }),
    // What Codex 0.171 records as `model_context_window` for its gpt-5.x models (95% of the
    // catalogue's 272k); the window recorded in the user's own rollouts wins.
    context_window: 258_400,
    // Codex 0.171's instructions, tool definitions and injected context measured at 8.5k to
    // 13.9k tokens, plus room for AGENTS.md and MCP tools.
    reserved_tokens: 20_000,
    tokenizer: crate::tokens::Tokenizer::O200k,
    new_id: new_thread_id,
};

/// Codex names threads with time-ordered v7 uuids.
fn new_thread_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// `sessions/YYYY/MM/DD/` and `archived_sessions/`, titled by `session_index.jsonl`.
struct Sessions;

impl Store for Sessions {
    fn dirs(&self, home: &Path) -> Vec<PathBuf> {
        vec![home.join("sessions"), home.join("archived_sessions")]
    }

    fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        scan::session_files(home)
    }

    fn id_from_name(&self, path: &Path) -> Option<String> {
        let named = id_from_file_name(path)?;
        scan::id_from_first_line(path).filter(|id| *id == named)
    }

    fn index_titles(&self, home: &Path) -> HashMap<String, String> {
        session_index(home)
    }
}

impl Usage for Codex {
    fn recorded_usage(&self, path: &Path) -> Option<RecordedUsage> {
        usage::recorded_usage(path)
    }

    fn recorded_context_window(&self, home: &Path) -> Option<(u64, PathBuf)> {
        // The newest rollouts by modification time; a `token_count` event near the end of one
        // carries the window of the model the user runs.
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = scan::session_files(home)
            .into_iter()
            .filter(|p| !is_archived(p))
            .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        // Sessions session-relay wrote record none: only the lines that may name the window are
        // parsed, or each relay into a store of earlier relays parsed their tails whole.
        files.into_iter().take(20).find_map(|(_, p)| {
            crate::jsonl::tail_rfind(&p, 256 << 10, |l| {
                if !crate::jsonl::may_hold(l, b"model_context_window") {
                    return None;
                }
                let v: Value = serde_json::from_slice(l).ok()?;
                let w = crate::jsonl::as_count(v.pointer("/payload/info/model_context_window")?)?;
                (w > 0).then_some(w)
            })
            .ok()
            .flatten()
            .map(|w| (w, p))
        })
    }
}

impl Hooks for Codex {
    fn setup(&self, home: &Path) -> HookSetup {
        HookSetup {
            file: hooks::file(home),
            pre_compact: "PreCompact",
            session_end: "SessionEnd",
            // Codex's own default is 600 s, but 1 s for SessionEnd.
            timeout_secs: 60,
            trust: Some(TrustStep {
                how: "start codex, type /hooks, and review and trust the PreCompact hook",
                recorded_in: "hooks.state in config.toml",
            }),
        }
    }

    fn reply(&self, line: &str) -> String {
        // Codex reads a hook's standard output as JSON; `systemMessage` is shown to the user.
        serde_json::json!({ "systemMessage": line }).to_string()
    }

    fn trust(&self, home: &Path, event: &str, group: usize, handler: usize) -> HookTrust {
        hooks::trust(home, event, group, handler)
    }

    fn record_trust(
        &self,
        home: &Path,
        event: &str,
        group: usize,
        handler: usize,
    ) -> Result<String> {
        hooks::trust_with_codex(home, event, group, handler)
    }
}

impl Adapter for Codex {
    fn agent(&self) -> &'static Agent {
        &AGENT
    }

    fn store(&self) -> &dyn Store {
        &Sessions
    }

    fn hooks(&self) -> Option<&dyn Hooks> {
        Some(self)
    }

    fn usage(&self) -> Option<&dyn Usage> {
        Some(self)
    }

    fn scan(&self, path: &Path) -> Result<Summary> {
        scan::summarize(path)
    }

    fn read_with(&self, path: &Path, home: Option<&Path>, opts: ReadOptions) -> Result<Session> {
        let home = home.map(Path::to_path_buf).or_else(|| home_of(path));
        read::read(path, home.as_deref(), opts)
    }

    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, Value)> {
        // Codex's tool set depends on the model and the config (shell or exec_command,
        // update_plan only when enabled), so a foreign call cannot be known to match a tool the
        // resumed thread has: only Codex's own calls keep their structure.
        same_agent.then(|| {
            (
                call.tool_name.clone().unwrap_or_default(),
                call.tool_input.clone().unwrap_or(Value::Null),
            )
        })
    }

    fn resume_command(&self, id: &str, _cwd: &str) -> String {
        format!("codex resume {id}")
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }

    fn register(
        &self,
        home: &Path,
        written: &NativeSession,
        shaped: &Session,
        title: &str,
    ) -> Result<Vec<String>> {
        let first_user = shaped
            .messages
            .iter()
            .find(|m| m.role == crate::model::Role::User)
            .map_or("", |m| m.content.as_str());
        let ms = |t: Option<&crate::model::Timestamp>| {
            t.and_then(crate::model::Timestamp::time)
                .map(|t| t.timestamp_millis())
        };
        let now = chrono::Utc::now().timestamp_millis();
        let git = shaped.git.as_ref();
        let row = state_db::ThreadRow {
            id: &written.id,
            rollout_path: &std::path::absolute(&written.path)?,
            created_ms: ms(shaped.messages.first().and_then(|m| m.timestamp.as_ref()))
                .unwrap_or(now),
            updated_ms: now,
            cwd: shaped.cwd.as_deref().unwrap_or(""),
            first_user_message: first_user,
            cli_version: env!("CARGO_PKG_VERSION"),
            git_sha: git.and_then(|g| g.commit.as_deref()),
            git_branch: git.and_then(|g| g.branch.as_deref()),
            git_origin_url: git.and_then(|g| g.remote.as_deref()),
        };
        // The database first: it is what Codex's picker reads, and what fails (a lock, a full
        // disk) leaves nothing else to take back.
        let mut notes: Vec<String> = state_db::register(home, &row)
            .with_context(|| {
                format!(
                    "cannot register it in Codex's thread index {}",
                    home.join("state_5.sqlite").display()
                )
            })?
            .into_iter()
            .collect();
        match write::register(home, &written.id, title) {
            Ok(mut n) => notes.append(&mut n),
            Err(e) => {
                if let Err(undo) = state_db::unregister(home, &written.id) {
                    return Err(e.context(crate::adapter::PartlyRegistered(format!(
                        "its row stays in Codex's thread index ({undo:#})"
                    ))));
                }
                return Err(e);
            }
        }
        Ok(notes)
    }

    fn unregister(&self, home: &Path, id: &str) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        // The database first: Codex may hold it locked, and then nothing has changed yet.
        if state_db::unregister(home, id)? {
            notes.push(format!("{id}: row removed from state_5.sqlite"));
        }
        if write::unindex(home, id)? {
            notes.push(format!("{id}: title line removed from session_index.jsonl"));
        }
        Ok(notes)
    }

    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        name.starts_with("rollout-")
            || head.first_has("type", "session_meta")
            || (head.has_key("payload") && head.has_value("response_item"))
            || (head.has_key("session") && head.has_key("items"))
            // The rollouts before the `payload` envelope (mid 2025): state lines between the
            // response items, whose content parts are typed as the Responses API types them.
            || head.has("record_type", "state")
            || head.has("type", "input_text")
    }
}

/// The Codex home a rollout lives in (`<home>/sessions/...` or `<home>/archived_sessions/...`).
fn home_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == "sessions" || n == "archived_sessions")
        })
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// Whether a rollout is in `archived_sessions/`.
fn is_archived(path: &Path) -> bool {
    path.ancestors()
        .any(|a| a.file_name().is_some_and(|n| n == "archived_sessions"))
}

/// Titles from `session_index.jsonl`: the newest `thread_name` for each id.
fn session_index(home: &Path) -> HashMap<String, String> {
    let mut titles = HashMap::new();
    let Ok(text) = std::fs::read(home.join("session_index.jsonl")) else {
        return titles;
    };
    for line in text.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let (Some(id), Some(name)) = (
            v.get("id").and_then(Value::as_str),
            v.get("thread_name").and_then(Value::as_str),
        ) && !name.trim().is_empty()
        {
            titles.insert(id.to_string(), name.to_string());
        }
    }
    titles
}

/// The uuid at the end of a rollout file name, used when the file itself does not say.
fn id_from_file_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let stem = name
        .trim_end_matches(".zst")
        .trim_end_matches(".jsonl")
        .trim_end_matches(".json");
    if stem.len() >= 36 {
        let tail = &stem[stem.len() - 36..];
        let shape_ok = tail.chars().enumerate().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
        if shape_ok {
            return Some(tail.to_string());
        }
    }
    None
}

/// Put before a person's words that start as Codex's injected texts do (a prompt beginning
/// with `<environment_context>`): Codex would take the message for context it injected, hide
/// it and not count it as a turn. Codex looks at every part of a message, so the words
/// themselves must not start so. The reader takes it off again.
pub(crate) const ESCAPE: &str = "(relayed) ";

/// A person's words as written to Codex (see `ESCAPE`).
pub(crate) fn escaped_user_text(text: &str) -> std::borrow::Cow<'_, str> {
    if is_injected_user_text(text) {
        std::borrow::Cow::Owned(format!("{ESCAPE}{text}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// A person's words as written (`escaped_user_text` undone).
pub(crate) fn unescaped_user_text(text: String) -> String {
    match text.strip_prefix(ESCAPE) {
        Some(rest) if is_injected_user_text(rest) => rest.to_string(),
        _ => text,
    }
}

/// What a text Codex injected is: the note it records when the person interrupts a turn
/// (`<turn_aborted>`, as a user message, or a developer one for multi-agent v2), or context.
pub(crate) fn injected_kind(text: &str) -> crate::model::MessageKind {
    use crate::model::MessageKind;
    if text.trim_start().starts_with("<turn_aborted>") {
        MessageKind::Interruption
    } else {
        MessageKind::Context
    }
}

/// The whole output Codex gives the model for a call the person denied at its approval prompt
/// (worded so for shell commands and for patches). Esc at the prompt aborts the turn instead:
/// its `aborted by user` is also what a command stopped while it ran says, and the turn's
/// `<turn_aborted>` note counts it.
pub(crate) fn is_rejection(output: &str) -> bool {
    matches!(
        output.trim(),
        "exec command rejected by user" | "patch rejected by user"
    )
}

/// User-role texts that Codex injects (environment, instructions) rather than the user typing.
pub(crate) fn is_injected_user_text(text: &str) -> bool {
    let t = text.trim_start();
    const PREFIXES: &[&str] = &[
        "<environment_context>",
        "<user_instructions>",
        "<permissions instructions>",
        "<skills_instructions>",
        "<INSTRUCTIONS>",
        "# AGENTS.md instructions",
        "<turn_aborted>",
        "<user_shell_command>",
        "<collaboration_mode>",
    ];
    PREFIXES.iter().any(|p| t.starts_with(p))
}
