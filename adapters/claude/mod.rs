//! Claude Code: `$CLAUDE_CONFIG_DIR/projects/<escaped cwd>/<session uuid>.jsonl`, with subagent
//! transcripts in `<session uuid>/subagents/agent-<id>.jsonl`.

mod chain;
mod injected;
mod read;
mod scan;
mod tools;
mod usage;
mod write;

pub use write::escape_project_dir;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::adapter::{
    Adapter, Agent, Cli, HookSetup, HookTrust, Hooks, NativeSession, ReadOptions, Store, Usage,
    WriteRequest,
};
use crate::model::{Message, RecordedUsage, Session, Summary};

pub struct Claude;

pub static ADAPTER: Claude = Claude;

pub const NAME: &str = "claude";

pub const AGENT: Agent = Agent {
    name: NAME,
    display_name: "Claude Code",
    home_env: "CLAUDE_CONFIG_DIR",
    default_home: ".claude",
    cli: Some(Cli {
        command: "claude",
        npm_package: "@anthropic-ai/claude-code",
        verified_versions: &["2.1.332"],
    }),
    // Claude Sonnet / Opus 4.x: 200k tokens (1M is an opt-in beta).
    context_window: 200_000,
    // Claude Code 2.1.332's system prompt, tool definitions and injected context measured at
    // 14k (`-p`) to 19k (interactive) tokens, plus room for CLAUDE.md, MCP and skills.
    reserved_tokens: 30_000,
    tokenizer: crate::tokens::Tokenizer::Estimate,
    new_id: crate::adapter::uuid_v4,
};

/// `projects/<escaped cwd>/`, and the subagent transcripts beside each session. Claude Code
/// keeps no index: the file in its project's folder is all it needs.
struct Projects;

impl Store for Projects {
    fn dirs(&self, home: &Path) -> Vec<PathBuf> {
        vec![home.join("projects")]
    }

    fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        scan::session_files(home)
    }

    fn id_from_name(&self, path: &Path) -> Option<String> {
        if subagent_parent(path).is_some() {
            return None;
        }
        Some(id_of(path))
    }
}

impl Usage for Claude {
    fn recorded_usage(&self, path: &Path) -> Option<RecordedUsage> {
        usage::recorded_usage(path)
    }
}

impl Hooks for Claude {
    fn setup(&self, home: &Path) -> HookSetup {
        // Claude Code 2.1.332 reads the user's hooks from `settings.json` in its config dir
        // (strict JSON: a comment makes it ignore the whole file). A PreCompact hook's standard
        // output is shown to the user and also given to the summarizer as "Additional
        // Instructions"; the hook's one line is both.
        HookSetup {
            file: std::path::absolute(home)
                .unwrap_or_else(|_| home.to_path_buf())
                .join("settings.json"),
            pre_compact: "PreCompact",
            session_end: "SessionEnd",
            timeout_secs: 60,
            trust: None,
        }
    }

    fn trust(&self, home: &Path, _event: &str, _group: usize, _handler: usize) -> HookTrust {
        // `"disableAllHooks": true` in the same settings turns every hook off; read as Claude
        // Code's JSON.parse reads it, the last of a key given twice.
        HookTrust::unless_all_hooks_off(&self.setup(home).file)
    }
}

impl Adapter for Claude {
    fn agent(&self) -> &'static Agent {
        &AGENT
    }

    fn store(&self) -> &dyn Store {
        &Projects
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

    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, serde_json::Value)> {
        if same_agent {
            return crate::adapter::own_tool(call);
        }
        tools::native(call.tool_kind?, call.key_arg.as_deref()?)
    }

    fn resume_command(&self, id: &str, cwd: &str) -> String {
        format!(
            "cd {} && claude --resume {id}",
            crate::text::shell_quote(cwd)
        )
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }

    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool {
        let under_projects = path.components().any(|c| c.as_os_str() == "projects");
        let ext_ok = path.extension().is_some_and(|e| e == "jsonl");
        // Claude lines carry `sessionId` and `uuid`/`parentUuid`; Codex lines never do.
        let looks =
            head.has_key("sessionId") && (head.has_key("parentUuid") || head.has_key("leafUuid"));
        // Another agent chains its records by `parentUuid` too, with Gemini-style messages
        // (`"role": "model"`) and system payloads Claude Code never writes.
        let other = head.has("role", "model") || head.has_key("systemPayload");
        ext_ok && !other && (looks || (under_projects && !head.has_key("payload")))
    }
}

/// Whether a path is a subagent transcript (`.../<session>/subagents/agent-<id>.jsonl`).
/// A transcript's id: its file name, whatever its lines say.
pub(crate) fn id_of(path: &Path) -> String {
    path.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

pub(crate) fn subagent_parent(path: &Path) -> Option<String> {
    let parent = path.parent()?;
    if parent.file_name()? != "subagents" {
        return None;
    }
    Some(parent.parent()?.file_name()?.to_string_lossy().into_owned())
}
