//! GitHub Copilot CLI: `$COPILOT_HOME/session-state/<session id>/events.jsonl`, one folder per
//! session for every project (the store is global), beside a `workspace.yaml` that names the
//! session and its directory. The folder's name is what `copilot --resume=<id>` looks up.
//!
//! `events.jsonl` is an append-only log of events `{type, data, id, timestamp, parentId}`:
//! `session.start` first, then user and assistant messages, tool executions, compactions and
//! the CLI's own bookkeeping (turns, usage, shutdowns), which the reader passes over.

mod read;
mod scan;
mod tools;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use crate::adapter::{
    Adapter, Agent, Cli, HookSetup, Hooks, NativeSession, ReadOptions, Store, Usage, WriteRequest,
};
use crate::model::{Message, RecordedUsage, Session, Summary};

pub struct Copilot;

pub static ADAPTER: Copilot = Copilot;

pub const NAME: &str = "copilot";

pub const AGENT: Agent = Agent {
    name: NAME,
    display_name: "GitHub Copilot CLI",
    home_env: "COPILOT_HOME",
    default_home: ".copilot",
    cli: Some(Cli {
        command: "copilot",
        npm_package: "@github/copilot",
        verified_versions: &["1.0.102"],
    }),
    // Copilot CLI 1.0.102 records `tokenLimit: 128000` in its compactions and
    // `context_token_limit: 128000` in its tool telemetry: the prompt budget it serves its
    // models with, whatever their own window.
    context_window: 128_000,
    // Copilot CLI 1.0.102's system prompt measured at 4,600 to 4,700 tokens (its compactions
    // record `systemTokens`), its 17 built-in tool definitions at about 6,500 more (26 KB of
    // JSON in the request a mock model received), plus room for instructions files, MCP tools
    // and the answer.
    reserved_tokens: 20_000,
    // Copilot's default models are OpenAI's (o200k) and Anthropic's (not public): o200k_base is
    // the closest one we can count with.
    tokenizer: crate::tokens::Tokenizer::O200k,
    new_id: crate::adapter::uuid_v4,
};

/// The session log inside a session's folder.
pub(crate) const EVENTS: &str = "events.jsonl";

/// The file beside it that names the session.
pub(crate) const WORKSPACE: &str = "workspace.yaml";

/// `session-state/<id>/events.jsonl`.
struct SessionState;

impl Store for SessionState {
    fn dirs(&self, home: &Path) -> Vec<PathBuf> {
        vec![state_dir(home)]
    }

    /// Every session folder that holds a log: the CLI leaves folders without one behind
    /// (github/copilot-cli#3908), which it does not list either.
    fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(state_dir(home)) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path().join(EVENTS))
            .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
            .collect();
        out.sort();
        out
    }

    fn id_from_name(&self, path: &Path) -> Option<String> {
        folder_id(path)
    }

    fn own_folder(&self, path: &Path, id: &str) -> Option<PathBuf> {
        (folder_id(path)? == id).then(|| path.parent().map(Path::to_path_buf))?
    }

    fn index_titles(&self, home: &Path) -> HashMap<String, String> {
        self.session_files(home)
            .iter()
            .filter_map(|p| Some((folder_id(p)?, workspace_name(p)?)))
            .collect()
    }
}

/// Copilot CLI 1.0.102 reads hooks from its `settings.json` in the schema Claude Code uses
/// (PascalCase events, `matcher`/`hooks` groups, `command` and `timeout`), runs them without a
/// trust step, and gives them Claude Code's input (`session_id`, `transcript_path`, `cwd`,
/// `hook_event_name`, `trigger`): `PreCompact` before `/compact` or an automatic compaction,
/// `SessionEnd` when a run ends.
impl Hooks for Copilot {
    fn setup(&self, home: &Path) -> HookSetup {
        HookSetup {
            file: home.join("settings.json"),
            pre_compact: "PreCompact",
            session_end: "SessionEnd",
            timeout_secs: 60,
            trust: None,
        }
    }
}

/// Copilot CLI records every model call's tokens in a `session.usage_record`: the newest one's
/// input is what the context held at the newest request.
impl Usage for Copilot {
    fn recorded_usage(&self, path: &Path) -> Option<RecordedUsage> {
        let newest = crate::jsonl::tail_rfind(path, 8 << 20, |line| {
            if !crate::jsonl::may_hold(line, b"session.usage_record") {
                return None;
            }
            let v: Value = serde_json::from_slice(line).ok()?;
            let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            if str_of(&v, "type").as_deref() != Some("session.usage_record")
                || str_of(&v, "agentId").is_some()
            {
                return None;
            }
            let usage = v.get("data").map(|d| d.get("usage").unwrap_or(d))?;
            let tokens = usage.get("inputTokens").and_then(crate::jsonl::as_count)?;
            (tokens > 0).then(|| RecordedUsage {
                tokens,
                window: None,
                model: str_of(usage, "model"),
            })
        });
        newest.ok().flatten()
    }
}

impl Adapter for Copilot {
    fn agent(&self) -> &'static Agent {
        &AGENT
    }

    fn store(&self) -> &dyn Store {
        &SessionState
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

    fn read_with(&self, path: &Path, _home: Option<&Path>, opts: ReadOptions) -> Result<Session> {
        read::read(path, opts)
    }

    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, Value)> {
        if same_agent {
            return crate::adapter::own_tool(call);
        }
        tools::native(call)
    }

    fn resume_command(&self, id: &str, cwd: &str) -> String {
        format!(
            "cd {} && copilot --resume={id}",
            crate::text::shell_quote(cwd)
        )
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }

    fn register(
        &self,
        _home: &Path,
        written: &NativeSession,
        shaped: &Session,
        title: &str,
    ) -> Result<Vec<String>> {
        write::register(written, shaped, title)
    }

    fn unregister(&self, home: &Path, id: &str) -> Result<Vec<String>> {
        write::unregister(home, id)
    }

    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool {
        head.first_has("type", "session.start")
            || head.has("producer", "copilot-agent")
            || (path.file_name().is_some_and(|n| n == EVENTS)
                && head.has_key("parentId")
                && head.has_key("data"))
    }
}

/// `<home>/session-state`: one folder per session.
pub(crate) fn state_dir(home: &Path) -> PathBuf {
    home.join("session-state")
}

/// The id the CLI resumes a session log by: its folder's name, when the log is a store's
/// `session-state/<id>/events.jsonl`.
pub(crate) fn folder_id(path: &Path) -> Option<String> {
    if path.file_name()? != EVENTS {
        return None;
    }
    let folder = path.parent()?;
    if folder.parent()?.file_name()? != "session-state" {
        return None;
    }
    Some(folder.file_name()?.to_string_lossy().into_owned())
}

/// What `workspace.yaml` beside a session log says, when it parses.
pub(crate) fn workspace(path: &Path) -> Option<serde_yaml_ng::Mapping> {
    let text = std::fs::read_to_string(path.parent()?.join(WORKSPACE)).ok()?;
    serde_yaml_ng::from_str(&text).ok()
}

/// A string field of `workspace.yaml`, when it is a non-blank string.
pub(crate) fn workspace_str(ws: &serde_yaml_ng::Mapping, key: &str) -> Option<String> {
    ws.get(key)?
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

/// The session's name in `workspace.yaml` (its title in the CLI's Sessions list).
pub(crate) fn workspace_name(path: &Path) -> Option<String> {
    workspace_str(&workspace(path)?, "name").map(|n| crate::text::one_line(&n))
}

/// The field a relay sets on a user message that holds context rather than the person's words
/// (the handoff brief, a summary): the CLI keeps and ignores unknown fields of an event's data,
/// and sends the message to the model like any other.
pub(crate) const RELAY_FIELD: &str = "sessionRelay";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_known_by_its_folder_in_a_store_only() {
        let p = Path::new("/h/.copilot/session-state/8115de0d-43fd/events.jsonl");
        assert_eq!(folder_id(p).as_deref(), Some("8115de0d-43fd"));
        assert_eq!(folder_id(Path::new("/tmp/x/events.jsonl")), None);
        assert_eq!(
            folder_id(Path::new("/h/.copilot/session-state/a/.tmp.jsonl")),
            None
        );
    }
}
