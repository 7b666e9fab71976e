//! Qwen Code: `$QWEN_HOME/projects/<project folder>/chats/<session uuid>.jsonl`, one record a
//! line chained by `uuid`/`parentUuid` (Claude-Code-like, not Gemini CLI's format) with
//! Gemini-style `parts` in each record's `message`. `<project folder>` is the directory the
//! session ran in with every character outside `[A-Za-z0-9]` replaced by `-`.
//!
//! The adapter's home is `$QWEN_HOME`, else `~/.qwen`, where Qwen Code keeps its settings and,
//! by default, its runtime base. `$QWEN_RUNTIME_DIR` moves the runtime base: its `projects/`
//! are listed too. The `advanced.runtimeOutputDir` setting moves it as well; it is not read
//! (`--home qwen=DIR` points at such a folder).

mod read;
mod tools;
mod write;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use crate::adapter::{
    Adapter, Agent, Cli, HookSetup, HookTrust, Hooks, NativeSession, ReadOptions, Store, Usage,
    WriteRequest,
};
use crate::model::{Message, RecordedUsage, Session, Summary};

pub struct Qwen;

pub static ADAPTER: Qwen = Qwen;

pub const NAME: &str = "qwen";

pub const AGENT: Agent = Agent {
    name: NAME,
    display_name: "Qwen Code",
    home_env: "QWEN_HOME",
    default_home: ".qwen",
    cli: Some(Cli {
        command: "qwen",
        npm_package: "@qwen-code/qwen-code",
        verified_versions: &["0.24.4"],
    }),
    // Qwen Code 0.24.4's `tokenLimit()` for its default model (`coder-model`, Qwen OAuth) and
    // for Qwen3-Coder-Plus/Flash and Qwen3.x; its open Qwen3-Coder models have 262,144 (set
    // `context_window` for those).
    context_window: 1_000_000,
    // Qwen Code 0.24.4's system prompt and tool declarations measured at 10,800 o200k tokens in
    // a headless request (which offers the read-only tools), plus room for more tools, QWEN.md
    // and MCP.
    reserved_tokens: 25_000,
    // Qwen's own tokenizer is not bundled; o200k_base is the closest one we can count with.
    tokenizer: crate::tokens::Tokenizer::O200k,
    // Qwen Code resumes by a UUID of version 1 to 5 only (`--resume <v7>` is taken as a title).
    new_id: crate::adapter::uuid_v4,
};

/// `projects/<project folder>/chats/`. Qwen Code keeps no index: it lists the files in the
/// project's `chats/` folder.
struct Projects;

impl Store for Projects {
    fn dirs(&self, home: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![home.join("projects")];
        dirs.extend(crate::fsutil::dir_from_env(RUNTIME_DIR_ENV).map(|d| d.join("projects")));
        dirs
    }

    fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        session_files(home)
    }

    fn id_from_name(&self, path: &Path) -> Option<String> {
        // A session's id is its records' `sessionId`, which the CLI names the file for.
        let stem = path.file_stem()?.to_string_lossy().into_owned();
        if !is_session_name(&stem) {
            return None;
        }
        let v = crate::adapter::first_line(path, 64 * 1024)?;
        (v.get("sessionId").and_then(Value::as_str) == Some(stem.as_str())).then_some(stem)
    }
}

impl Hooks for Qwen {
    fn setup(&self, home: &Path) -> HookSetup {
        // Qwen Code 0.24.4 reads the user's hooks from `settings.json` in its home, in Claude
        // Code's schema, and gives a command hook the same input (`session_id`,
        // `transcript_path`, `cwd`, `trigger`); timeouts are in seconds (60 by default).
        // `PreCompact` runs before `/compress` and before an automatic compression, headless
        // too; `SessionEnd` when an interactive session ends.
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

    fn reply(&self, line: &str) -> String {
        // A hook's JSON output: `systemMessage` is shown to the user, `additionalContext` of a
        // PreCompact hook is added to the summarizer's instructions; plain text is neither.
        serde_json::json!({
            "systemMessage": line,
            "hookSpecificOutput": {"additionalContext": line},
        })
        .to_string()
    }

    fn trust(&self, home: &Path, _event: &str, _group: usize, _handler: usize) -> HookTrust {
        // `"disableAllHooks": true` in the same settings turns every hook off.
        HookTrust::unless_all_hooks_off(&self.setup(home).file)
    }
}

impl Usage for Qwen {
    /// The newest answer's `usageMetadata.promptTokenCount`: what the prompt held (Qwen Code
    /// records no window).
    fn recorded_usage(&self, path: &Path) -> Option<RecordedUsage> {
        crate::adapter::newest_usage(path, b"promptTokenCount", |v| {
            if crate::jsonl::str_field(v, "type") != Some("assistant") {
                return None;
            }
            let tokens = v
                .pointer("/usageMetadata/promptTokenCount")
                .and_then(crate::jsonl::as_count)
                .filter(|n| *n > 0)?;
            let model = crate::jsonl::str_field(v, "model").map(str::to_string);
            Some(Some(RecordedUsage {
                tokens,
                window: None,
                model,
            }))
        })
    }
}

impl Adapter for Qwen {
    fn agent(&self) -> &'static Agent {
        &AGENT
    }

    fn hooks(&self) -> Option<&dyn Hooks> {
        Some(self)
    }

    fn usage(&self) -> Option<&dyn Usage> {
        Some(self)
    }

    fn store(&self) -> &dyn Store {
        &Projects
    }

    fn scan(&self, path: &Path) -> Result<Summary> {
        read::summarize(path)
    }

    fn read_with(&self, path: &Path, _home: Option<&Path>, opts: ReadOptions) -> Result<Session> {
        Ok(read::read(path, &opts)?.0)
    }

    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool {
        let ext_ok = path.extension().is_some_and(|e| e == "jsonl");
        // Records with `parentUuid` and Gemini-style `parts`, or Qwen's system payloads.
        let looks = head.has_key("sessionId")
            && head.has_key("parentUuid")
            && (head.has_key("parts") || head.has_key("systemPayload"));
        ext_ok && looks
    }

    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, Value)> {
        if same_agent {
            return crate::adapter::own_tool(call);
        }
        tools::native(call)
    }

    fn resume_command(&self, id: &str, cwd: &str) -> String {
        format!("cd {} && qwen --resume {id}", crate::text::shell_quote(cwd))
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }
}

/// Qwen Code's folder name for a project directory: every character outside `[A-Za-z0-9]`
/// becomes `-` (one per UTF-16 unit, as JavaScript's replace sees them).
pub(crate) fn project_dir(cwd: &str) -> String {
    cwd.encode_utf16()
        .map(|u| {
            if u < 128 && (u as u8).is_ascii_alphanumeric() {
                u as u8 as char
            } else {
                '-'
            }
        })
        .collect()
}

/// The names Qwen Code lists in `chats/`: 32 to 36 hex digits and dashes (a session id).
fn is_session_name(stem: &str) -> bool {
    (32..=36).contains(&stem.len()) && stem.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// The environment variable that moves Qwen Code's runtime base, `projects/` with it, out of
/// its home (the `advanced.runtimeOutputDir` setting does too; it is not read).
pub(crate) const RUNTIME_DIR_ENV: &str = "QWEN_RUNTIME_DIR";

/// Every session file: `projects/*/chats/*.jsonl` under the home and under
/// `$QWEN_RUNTIME_DIR` when it is set, without the archived ones (`chats/archive/`, which the
/// CLI does not list) and the `*.runtime.json` sidecars.
fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in Projects.dirs(home) {
        out.extend(crate::fsutil::jsonl_files_by_project(&root, "chats"));
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_folders_and_session_names_are_the_clis() {
        assert_eq!(project_dir("/home/dev/proj-qwen"), "-home-dev-proj-qwen");
        assert_eq!(project_dir("/tmp/a_b.c/é😀"), "-tmp-a-b-c----");
        assert!(is_session_name("c73c50cb-8968-40d5-aeb0-61c3933a377d"));
        assert!(!is_session_name("relay-named"));
    }
}
