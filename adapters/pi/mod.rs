//! pi (`@mariozechner/pi-coding-agent`): `$PI_CODING_AGENT_DIR/sessions/--<cwd>--/<time>_<id>.jsonl`,
//! by default under `~/.pi/agent`. A file is a `session` header line, then entries chained by
//! `id` / `parentId`; the last line is the leaf, and the conversation is the path from it up
//! to the first entry. pi keeps no index: a file in its project's folder is listed and resumed.
//!
//! The adapter's home is the agent dir (what `PI_CODING_AGENT_DIR` means to pi).

mod read;
mod tools;
mod usage;
mod write;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use crate::adapter::{Adapter, Agent, Cli, NativeSession, ReadOptions, Store, Usage, WriteRequest};
use crate::model::{Message, RecordedUsage, Session, Summary};

pub struct Pi;

pub static ADAPTER: Pi = Pi;

pub const NAME: &str = "pi";

pub const AGENT: Agent = Agent {
    name: NAME,
    display_name: "pi",
    home_env: "PI_CODING_AGENT_DIR",
    default_home: ".pi/agent",
    cli: Some(Cli {
        command: "pi",
        npm_package: "@mariozechner/pi-coding-agent",
        verified_versions: &["0.73.1"],
    }),
    // pi 0.73.1 starts on its provider's default model, whose catalog windows run from GLM 5.1's
    // 204,800 tokens through Kimi K2.6's 262,144 and GPT-5.4's 272,000 to Claude Opus 4.7's and
    // Gemini 3.1 Pro's 1M: 200k fits every one of them.
    context_window: 200_000,
    // pi 0.73.1's system prompt and its four default tools measured at 5.5 KB (about 1,400
    // tokens) in the request the real CLI sent; pi itself keeps 16,384 tokens free for the answer
    // (its compaction `reserveTokens`); the rest is room for AGENTS.md files and skills.
    reserved_tokens: 20_000,
    // pi runs on any provider's models; o200k_base is the closest tokenizer we can count with
    // for most of its defaults.
    tokenizer: crate::tokens::Tokenizer::O200k,
    new_id: uuid_v7,
};

/// pi names its sessions with version 7 UUIDs (time-ordered); a relay does the same, so that
/// its sessions sort among pi's own.
fn uuid_v7() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The type of the entry in which a relay records its `provenance` (with the `sessionId`), as
/// every writer does and `clean` looks for it. It is a tree entry (id, parent) like any other:
/// pi makes the last entry the leaf whatever its type, and skips the types it does not know
/// when it builds the model's context.
pub(crate) const RELAY_ENTRY: &str = "session-relay";

/// The field a relay sets on a user message that holds context rather than the person's words
/// (the handoff brief, summaries): `"context"`. pi keeps unknown fields of an entry and ignores
/// them.
pub(crate) const RELAY_FIELD: &str = "sessionRelay";

/// `sessions/--<cwd>--/` (or `$PI_CODING_AGENT_SESSION_DIR`). pi keeps no index: it lists every
/// `.jsonl` in the folder whose first line is a session header.
struct Sessions;

impl Store for Sessions {
    fn dirs(&self, home: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![home.join("sessions")];
        dirs.extend(crate::fsutil::dir_from_env(SESSION_DIR_ENV));
        dirs
    }

    fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        session_files(home)
    }

    fn id_from_name(&self, path: &Path) -> Option<String> {
        // pi finds a session by the header's id, whatever the file is called.
        read::header_id(path)
    }
}

impl Usage for Pi {
    fn recorded_usage(&self, path: &Path) -> Option<RecordedUsage> {
        usage::recorded_usage(path)
    }
}

impl Adapter for Pi {
    fn agent(&self) -> &'static Agent {
        &AGENT
    }

    fn store(&self) -> &dyn Store {
        &Sessions
    }

    fn usage(&self) -> Option<&dyn Usage> {
        Some(self)
    }

    fn scan(&self, path: &Path) -> Result<Summary> {
        // Read as a relay reads it, outputs cut short: the listing then counts what `show`
        // counts, by the same rules.
        let opts = ReadOptions {
            max_tool_output: Some(200),
            ..Default::default()
        };
        let s = read::read(path, opts)?;
        crate::adapter::listing_row(path, &s, s.extra.get("provenance"))
    }

    fn read_with(&self, path: &Path, _home: Option<&Path>, opts: ReadOptions) -> Result<Session> {
        read::read(path, opts)
    }

    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool {
        let jsonl = path.extension().is_some_and(|e| e == "jsonl");
        jsonl && head.first_has("type", "session") && head.has_key("parentId")
    }

    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, Value)> {
        if same_agent {
            return crate::adapter::own_tool(call);
        }
        tools::native(call)
    }

    fn resume_command(&self, id: &str, cwd: &str) -> String {
        format!("cd {} && pi --session {id}", crate::text::shell_quote(cwd))
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }
}

/// The environment variable that moves pi's sessions out of the agent dir: pi then keeps every
/// session straight in that folder, with no folder per project. pi's `--session-dir` flag and
/// `sessionDir` setting do the same; a relay cannot see the flag, and does not read the setting.
pub(crate) const SESSION_DIR_ENV: &str = "PI_CODING_AGENT_SESSION_DIR";

/// Session files: `sessions/<folder>/*.jsonl`, the folders pi makes per project, and
/// `$PI_CODING_AGENT_SESSION_DIR/*.jsonl` when it is set.
fn session_files(home: &Path) -> Vec<PathBuf> {
    let mut out = crate::fsutil::jsonl_files_by_project(&home.join("sessions"), "");
    if let Some(dir) = crate::fsutil::dir_from_env(SESSION_DIR_ENV) {
        out.extend(crate::fsutil::jsonl_files_in(&dir));
        out.sort();
        out.dedup();
    }
    out
}

/// pi's folder name for a project directory: `--<path>--`, the leading `/` left out and every
/// `/`, `\` and `:` replaced by `-`.
pub(crate) fn project_dir(cwd: &str) -> String {
    let path = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    let name: String = path
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{name}--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_folders_are_named_as_pi_names_them() {
        assert_eq!(project_dir("/home/dev/proj-pi"), "--home-dev-proj-pi--");
        assert_eq!(project_dir("/a/b c/d.e_f"), "--a-b c-d.e_f--");
        assert_eq!(project_dir("C:\\work\\x"), "--C--work-x--");
    }

    #[test]
    fn new_ids_are_version_7_uuids() {
        let id = uuid_v7();
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 7);
    }
}
