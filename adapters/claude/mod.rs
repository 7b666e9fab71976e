//! Claude Code: `$CLAUDE_CONFIG_DIR/projects/<escaped cwd>/<session uuid>.jsonl`, with subagent
//! transcripts in `<session uuid>/subagents/agent-<id>.jsonl`.

mod read;
mod scan;
mod write;

pub use write::escape_project_dir;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::adapter::{Adapter, NativeSession, ReadOptions, Summary, WriteRequest};
use crate::session::Session;

pub struct Claude;

pub static ADAPTER: Claude = Claude;

pub const NAME: &str = "claude";

impl Adapter for Claude {
    fn name(&self) -> &'static str {
        NAME
    }

    fn display_name(&self) -> &'static str {
        "Claude Code"
    }

    fn home_env(&self) -> &'static str {
        "CLAUDE_CONFIG_DIR"
    }

    fn default_home(&self) -> Option<PathBuf> {
        dirs::home_dir().map(|h| h.join(".claude"))
    }

    fn default_context_window(&self) -> u64 {
        // Claude Sonnet / Opus 4.x: 200k tokens (1M is an opt-in beta).
        200_000
    }

    fn default_reserved_tokens(&self) -> u64 {
        // Claude Code's system prompt and tool definitions take about 15-20k tokens; the rest is
        // room for the answer and the auto-compact margin.
        40_000
    }

    fn default_tokenizer(&self) -> crate::tokens::Tokenizer {
        crate::tokens::Tokenizer::Estimate
    }

    fn ids(&self, home: &Path) -> Vec<(String, PathBuf)> {
        scan::session_files(home)
            .into_iter()
            .map(|p| {
                (
                    p.file_stem()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned(),
                    p,
                )
            })
            .collect()
    }

    fn store_dirs(&self, home: &Path) -> Vec<PathBuf> {
        vec![home.join("projects")]
    }

    fn list(&self, home: &Path, cache: &crate::listcache::ListCache) -> Result<Vec<Summary>> {
        scan::list(home, cache)
    }

    fn read_with(&self, path: &Path, _home: Option<&Path>, opts: ReadOptions) -> Result<Session> {
        read::read(path, opts)
    }

    fn equivalent_tool(
        &self,
        source_agent: &str,
        name: &str,
        input: &serde_json::Value,
    ) -> Option<(String, serde_json::Value)> {
        if source_agent == NAME {
            return Some((name.to_string(), input.clone()));
        }
        // Only Bash is always among Claude Code's tools (others are deferred or optional), so
        // only shell commands keep their structure; everything else travels as text.
        let command = match name {
            "exec_command" => input
                .get("cmd")
                .and_then(|c| c.as_str())
                .map(str::to_string),
            "shell" | "local_shell" | "container.exec" => input
                .get("command")
                .and_then(|c| c.as_array())
                .map(|words| shell_command(words)),
            _ => None,
        }?;
        Some((
            "Bash".to_string(),
            serde_json::json!({ "command": command }),
        ))
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }

    fn register(
        &self,
        _home: &Path,
        _written: &NativeSession,
        _shaped: &Session,
        _title: &str,
    ) -> Result<Vec<String>> {
        // Claude Code keeps no index: the file under projects/<dir>/ is all it needs.
        Ok(Vec::new())
    }

    fn unregister(&self, _home: &Path, _id: &str) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    fn claims(&self, path: &Path, head: &[u8]) -> bool {
        let under_projects = path.components().any(|c| c.as_os_str() == "projects");
        let ext_ok = path.extension().is_some_and(|e| e == "jsonl");
        // Claude lines carry `sessionId` and `uuid`/`parentUuid`; Codex lines never do.
        let looks = crate::jsonl::contains(head, b"\"sessionId\"")
            && (crate::jsonl::contains(head, b"\"parentUuid\"")
                || crate::jsonl::contains(head, b"\"leafUuid\""));
        ext_ok && (looks || (under_projects && !crate::jsonl::contains(head, b"\"payload\"")))
    }
}

/// Whether a path is a subagent transcript (`.../<session>/subagents/agent-<id>.jsonl`).
pub(crate) fn subagent_parent(path: &Path) -> Option<String> {
    let parent = path.parent()?;
    if parent.file_name()? != "subagents" {
        return None;
    }
    Some(parent.parent()?.file_name()?.to_string_lossy().into_owned())
}

/// `["bash", "-lc", "ls -la"]` is the command `ls -la`; other argv are joined shell-quoted.
fn shell_command(words: &[serde_json::Value]) -> String {
    let words: Vec<&str> = words.iter().filter_map(|w| w.as_str()).collect();
    match words.as_slice() {
        [sh, flag, cmd] if sh.ends_with("sh") && flag.starts_with('-') && flag.contains('c') => {
            cmd.to_string()
        }
        _ => words
            .iter()
            .map(|w| write::shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
    }
}
