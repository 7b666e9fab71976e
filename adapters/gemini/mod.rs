//! Gemini CLI: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl` (and the older
//! single-document `session-*.json`), where `<project>` is the slug `projects.json` gives the
//! project's directory (Gemini CLI 0.29 and later) or, in older homes, the sha256 of its path.
//! Subagent transcripts live in `chats/<parent session id>/<id>.jsonl`.
//!
//! The adapter's home is the folder that CONTAINS `.gemini` (what `GEMINI_CLI_HOME` means to the
//! CLI; by default the user's home).

mod convert;
mod fold;
mod long;
mod project;
mod read;
mod records;
mod scan;
mod tools;
mod write;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::adapter::{Adapter, Agent, Cli, NativeSession, ReadOptions, Store, WriteRequest};
use crate::model::{Message, MessageKind, Session, Summary};

pub struct Gemini;

pub static ADAPTER: Gemini = Gemini;

pub const NAME: &str = "gemini";

pub const AGENT: Agent = Agent {
    name: NAME,
    display_name: "Gemini CLI",
    home_env: "GEMINI_CLI_HOME",
    default_home: "",
    cli: Some(Cli {
        command: "gemini",
        npm_package: "@google/gemini-cli",
        verified_versions: &["0.61.0"],
    }),
    // Gemini CLI 0.61's `tokenLimit()` for every Gemini 2.5 / 3 model it offers.
    context_window: 1_048_576,
    // Gemini CLI 0.61's system prompt, tool declarations and session context measured at 8,500
    // to 10,000 o200k tokens, plus room for GEMINI.md files and MCP tools.
    reserved_tokens: 20_000,
    // Gemini's tokenizer is not public; o200k_base is the closest one we can count with.
    tokenizer: crate::tokens::Tokenizer::O200k,
    new_id: crate::adapter::uuid_v4,
};

/// `.gemini/tmp/<project>/chats/`.
struct Chats;

impl Store for Chats {
    fn dirs(&self, home: &Path) -> Vec<PathBuf> {
        vec![tmp_dir(home)]
    }

    fn session_files(&self, home: &Path) -> Vec<PathBuf> {
        scan::session_files(home)
    }
}

impl Adapter for Gemini {
    fn agent(&self) -> &'static Agent {
        &AGENT
    }

    fn store(&self) -> &dyn Store {
        &Chats
    }

    fn scan(&self, path: &Path) -> Result<Summary> {
        if path.extension().is_some_and(|e| e == "json") {
            // The older single document: small and rare, so read it properly. A relay never
            // writes one: no `relay_of`.
            let s = read::read(path, Default::default())?;
            let size = std::fs::metadata(path)?.len();
            return Ok(Summary::of_session(&s, path, size));
        }
        scan::summarize(path)
    }

    fn read_with(&self, path: &Path, _home: Option<&Path>, opts: ReadOptions) -> Result<Session> {
        read::read(path, opts)
    }

    fn native_tool(&self, call: &Message, same_agent: bool) -> Option<(String, Value)> {
        if same_agent {
            return Some((
                call.tool_name.clone()?,
                call.tool_input.clone().unwrap_or(Value::Null),
            ));
        }
        tools::native(call.tool_kind?, call.key_arg.as_deref()?)
    }

    fn resume_command(&self, id: &str, cwd: &str) -> String {
        format!("cd {} && gemini --resume {id}", shell_quote(cwd))
    }

    fn write_session(&self, shaped: &Session, req: &WriteRequest) -> Result<NativeSession> {
        write::write(shaped, req)
    }

    fn register(
        &self,
        home: &Path,
        written: &NativeSession,
        shaped: &Session,
        _title: &str,
    ) -> Result<Vec<String>> {
        let cwd = shaped
            .cwd
            .as_deref()
            .context("the relayed session names no directory")?;
        project::register(home, written, cwd)
    }

    fn unregister(&self, _home: &Path, _id: &str) -> Result<Vec<String>> {
        // The project's entry in projects.json and its markers stay: Gemini CLI itself creates
        // the same the first time it starts in that directory, and other sessions may use them.
        Ok(Vec::new())
    }

    fn claims(&self, path: &Path, head: &crate::jsonl::sniff::Head) -> bool {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let named =
            name.starts_with("session-") && (name.ends_with(".jsonl") || name.ends_with(".json"));
        named || (head.has_key("sessionId") && head.has_key("projectHash"))
    }
}

/// `<home>/.gemini`: everything Gemini CLI keeps.
pub(crate) fn gemini_dir(home: &Path) -> PathBuf {
    home.join(".gemini")
}

/// `<home>/.gemini/tmp`: one folder per project, each with its `chats/`.
pub(crate) fn tmp_dir(home: &Path) -> PathBuf {
    gemini_dir(home).join("tmp")
}

/// The `.gemini` folder and the project folder (`tmp/<slug or hash>`) a session file lives in,
/// when it lives in a store: `.../.gemini/tmp/<project>/chats/<file>` or, for a subagent,
/// `.../chats/<parent>/<file>`.
pub(crate) fn store_location(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let chats = path
        .ancestors()
        .skip(1)
        .take(2)
        .find(|a| a.file_name().is_some_and(|n| n == "chats"))?;
    let project = chats.parent()?;
    let tmp = project.parent()?;
    if tmp.file_name()? != "tmp" {
        return None;
    }
    Some((tmp.parent()?.to_path_buf(), project.to_path_buf()))
}

/// For a subagent transcript (`chats/<parent session id>/<id>.jsonl`): the parent's id.
pub(crate) fn subagent_parent(path: &Path) -> Option<String> {
    let parent = path.parent()?;
    if parent.parent()?.file_name()? != "chats" {
        return None;
    }
    Some(parent.file_name()?.to_string_lossy().into_owned())
}

/// Text that a relay puts before a user message the CLI would otherwise skip (one starting
/// with `/`, `?` or its own context tags): a separate first part, recognised on reading only in
/// messages a relay wrote (see `RELAY_FIELD`).
pub(crate) const ESCAPE_PART: &str = "(relayed) ";

/// The field a relay sets on the user messages it writes: `"user"` for the person's words,
/// `"context"` for what is not (the handoff brief, summaries). Gemini CLI keeps unknown fields
/// of a message, and ignores them.
pub(crate) const RELAY_FIELD: &str = "sessionRelay";

/// Gemini CLI's `trim()`: JavaScript's whitespace (no U+0085, but the byte-order mark).
pub(crate) fn cli_trim(s: &str) -> &str {
    s.trim_matches(|c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}')
}

/// What sort of user text the CLI neither lists nor sends to the model (its
/// `isIgnoredUserContent`), for text already trimmed: `command` for `/` and `?`, `context` for
/// its own injected context. Empty text is ignored too, as nothing.
pub(crate) fn ignored_kind(trimmed: &str) -> Option<MessageKind> {
    if trimmed.starts_with('/') || trimmed.starts_with('?') {
        Some(MessageKind::Command)
    } else if trimmed.starts_with("<session_context>") || trimmed.starts_with("<hook_context>") {
        Some(MessageKind::Context)
    } else {
        None
    }
}

/// Whether Gemini CLI would skip this user text (for the writer: any trimming either side may
/// apply counts).
pub(crate) fn cli_ignores(text: &str) -> bool {
    let t = cli_trim(text);
    t.is_empty() || ignored_kind(t).is_some() || ignored_kind(text.trim()).is_some()
}

/// sha256 of a project path, hex: Gemini's `projectHash` and its old folder names.
pub(crate) fn project_hash(path: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::text::hex(&Sha256::digest(path.as_bytes()))
}

pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_locations_and_subagents() {
        let p = Path::new("/h/.gemini/tmp/demo/chats/session-2026-11-30T11-37-804052ce.jsonl");
        assert_eq!(
            store_location(p),
            Some((
                PathBuf::from("/h/.gemini"),
                PathBuf::from("/h/.gemini/tmp/demo")
            ))
        );
        assert_eq!(subagent_parent(p), None);
        let sub = Path::new("/h/.gemini/tmp/demo/chats/0199-parent/abc.jsonl");
        assert_eq!(
            store_location(sub).map(|l| l.1),
            Some(PathBuf::from("/h/.gemini/tmp/demo"))
        );
        assert_eq!(subagent_parent(sub).as_deref(), Some("0199-parent"));
        assert_eq!(store_location(Path::new("/work/out/relay.jsonl")), None);
    }

    #[test]
    fn ignored_user_text_is_what_the_cli_skips() {
        assert_eq!(ignored_kind("/help"), Some(MessageKind::Command));
        assert_eq!(ignored_kind("?"), Some(MessageKind::Command));
        assert_eq!(
            ignored_kind("<session_context>\nx"),
            Some(MessageKind::Context)
        );
        assert_eq!(ignored_kind("fix /etc/hosts"), None);
        assert!(cli_ignores("  /etc/hosts is wrong"));
        assert!(cli_ignores("\u{feff}?"));
        assert!(cli_ignores(" \n "));
        assert!(!cli_ignores("# Handoff brief"));
        assert_eq!(
            project_hash("/home/dev/projects/demo"),
            "db5f20c6d174036b96a44ee52d741548124dd985f5aa1bf26e3b5d54b7b547ce"
        );
    }
}
