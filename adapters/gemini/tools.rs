//! Gemini CLI's tools as neutral tool kinds, with the argument that says what each call did,
//! and the few neutral kinds a relay writes back as Gemini's own tools.

use serde_json::{Value, json};

use crate::model::{Todo, TodoStatus, ToolKind, first_str, generic_key_arg, status_line};

/// Tools whose `file_path` argument names a file they change.
pub const WRITE_TOOLS: &[&str] = &["write_file", "replace"];

/// The kind of one of Gemini CLI's tools and its key argument, in full. Older releases named
/// some tools and arguments differently (`search_file_content`, `absolute_path`, `path`).
pub fn classify(name: &str, input: &Value) -> (ToolKind, String) {
    let field = |keys: &[&str]| first_str(input, keys);
    let (kind, key) = match name {
        "run_shell_command" => (ToolKind::Shell, field(&["command"])),
        "read_file" => (
            ToolKind::Read,
            field(&["file_path", "absolute_path", "path"]),
        ),
        "read_many_files" => (ToolKind::Read, list(input, &["include", "paths"])),
        "write_file" => (ToolKind::Write, field(&["file_path", "absolute_path"])),
        "replace" => (ToolKind::Edit, field(&["file_path", "absolute_path"])),
        "glob" | "grep_search" | "search_file_content" => (ToolKind::Search, field(&["pattern"])),
        "list_directory" => (ToolKind::Search, field(&["dir_path", "path"])),
        "write_todos" => (ToolKind::Plan, status_line(input, "todos", "description")),
        "google_web_search" => (ToolKind::Web, field(&["query"])),
        "web_fetch" => (ToolKind::Web, field(&["url", "prompt"])),
        "invoke_agent" => (ToolKind::Subagent, field(&["prompt", "agent_name"])),
        _ => (ToolKind::Other, None),
    };
    (kind, key.unwrap_or_else(|| generic_key_arg(input, "")))
}

/// A list argument (`read_many_files`' globs) as one line.
fn list(input: &Value, keys: &[&str]) -> Option<String> {
    let items = keys
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_array))?;
    Some(
        items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// The todo list a `write_todos` call sets. Gemini knows two states the neutral list has not:
/// `cancelled` items are done with (listed as completed, marked), `blocked` ones still open.
pub fn todos(input: &Value) -> Option<Vec<Todo>> {
    let items = input.get("todos")?.as_array()?;
    Some(
        items
            .iter()
            .map(|i| {
                let text = i
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let status = i.get("status").and_then(Value::as_str).unwrap_or("pending");
                match status {
                    "cancelled" => Todo {
                        text: format!("{text} (cancelled)"),
                        status: TodoStatus::Completed,
                    },
                    "blocked" => Todo {
                        text: format!("{text} (blocked)"),
                        status: TodoStatus::Pending,
                    },
                    s => Todo {
                        text: text.to_string(),
                        status: TodoStatus::parse(s),
                    },
                }
            })
            .collect(),
    )
}

/// Gemini CLI's tool for a neutral call from another agent. A shell command and a file read
/// are all a call needs to name for these (`run_shell_command {command}`, `read_file
/// {file_path}`), and both are always among Gemini CLI's tools; writes and edits would need
/// arguments only the source agent's own input holds, so they, and everything else, travel as
/// text.
pub fn native(kind: ToolKind, key: &str) -> Option<(String, Value)> {
    match kind {
        ToolKind::Shell if !key.trim().is_empty() => {
            Some(("run_shell_command".into(), json!({ "command": key })))
        }
        ToolKind::Read if key.starts_with('/') && !key.contains('\n') => {
            Some(("read_file".into(), json!({ "file_path": key })))
        }
        _ => None,
    }
}

/// What Gemini CLI's TUI calls a tool in the box it draws around a call.
pub fn display_name(name: &str) -> String {
    match name {
        "run_shell_command" => "Shell",
        "read_file" => "ReadFile",
        "read_many_files" => "ReadManyFiles",
        "write_file" => "WriteFile",
        "replace" => "Edit",
        "glob" => "FindFiles",
        "grep_search" | "search_file_content" => "SearchText",
        "list_directory" => "ReadFolder",
        "write_todos" => "WriteTodos",
        "google_web_search" => "GoogleSearch",
        "web_fetch" => "WebFetch",
        other => other,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_gets_a_kind_and_what_it_did() {
        let cases = [
            (
                "run_shell_command",
                json!({"command": "sh hello.sh", "description": "Run it."}),
                ToolKind::Shell,
                "sh hello.sh",
            ),
            (
                "read_file",
                json!({"file_path": "/p/a.rs"}),
                ToolKind::Read,
                "/p/a.rs",
            ),
            (
                "read_many_files",
                json!({"include": ["src/**/*.rs", "README.md"]}),
                ToolKind::Read,
                "src/**/*.rs, README.md",
            ),
            (
                "write_file",
                json!({"file_path": "/p/b.rs", "content": "x"}),
                ToolKind::Write,
                "/p/b.rs",
            ),
            (
                "replace",
                json!({"file_path": "/p/c.rs", "old_string": "a", "new_string": "b"}),
                ToolKind::Edit,
                "/p/c.rs",
            ),
            (
                "grep_search",
                json!({"pattern": "fn main"}),
                ToolKind::Search,
                "fn main",
            ),
            (
                "glob",
                json!({"pattern": "**/*.md"}),
                ToolKind::Search,
                "**/*.md",
            ),
            (
                "list_directory",
                json!({"dir_path": "/p"}),
                ToolKind::Search,
                "/p",
            ),
            (
                "write_todos",
                json!({"todos": [{"description": "a", "status": "completed"}]}),
                ToolKind::Plan,
                "a (completed)",
            ),
            (
                "google_web_search",
                json!({"query": "rust"}),
                ToolKind::Web,
                "rust",
            ),
            (
                "web_fetch",
                json!({"prompt": "Summarise https://example.com"}),
                ToolKind::Web,
                "Summarise https://example.com",
            ),
            (
                "invoke_agent",
                json!({"agent_name": "codebase_investigator", "prompt": "map the code"}),
                ToolKind::Subagent,
                "map the code",
            ),
            (
                "update_topic",
                json!({"title": "t"}),
                ToolKind::Other,
                r#"{"title":"t"}"#,
            ),
        ];
        for (name, input, kind, key) in cases {
            assert_eq!(classify(name, &input), (kind, key.to_string()), "{name}");
        }
    }

    #[test]
    fn todos_keep_gemini_states_the_neutral_list_lacks() {
        let t = todos(&json!({"todos": [
            {"description": "a", "status": "in_progress"},
            {"description": "b", "status": "cancelled"},
            {"description": "c", "status": "blocked"},
        ]}))
        .unwrap();
        assert_eq!(t[0].status, TodoStatus::InProgress);
        assert_eq!(
            (t[1].text.as_str(), t[1].status),
            ("b (cancelled)", TodoStatus::Completed)
        );
        assert_eq!(
            (t[2].text.as_str(), t[2].status),
            ("c (blocked)", TodoStatus::Pending)
        );
    }

    #[test]
    fn only_shell_commands_and_file_reads_become_gemini_tools() {
        assert_eq!(
            native(ToolKind::Shell, "ls -la"),
            Some(("run_shell_command".into(), json!({"command": "ls -la"})))
        );
        assert_eq!(
            native(ToolKind::Read, "/a/b.rs"),
            Some(("read_file".into(), json!({"file_path": "/a/b.rs"})))
        );
        assert_eq!(native(ToolKind::Read, "relative.rs"), None);
        assert_eq!(native(ToolKind::Edit, "/a.rs"), None);
        assert_eq!(native(ToolKind::Shell, " "), None);
    }
}
