//! Qwen Code's tools as neutral tool kinds, with the argument that says what each call did,
//! and the neutral calls a relay writes back as Qwen's own tools.

use serde_json::{Value, json};

use crate::adapter::write::Portable;
use crate::model::{Message, ToolKind, first_str, generic_key_arg, status_line};

/// Tools whose `file_path` argument names a file they change.
pub const WRITE_TOOLS: &[&str] = &["write_file", "edit", "notebook_edit"];

/// The tool that sets the todo list.
pub const TODO_TOOL: &str = "todo_write";

/// The kind of one of Qwen Code's tools (0.24.4 names) and its key argument, in full.
pub fn classify(name: &str, input: &Value) -> (ToolKind, String) {
    let field = |keys: &[&str]| first_str(input, keys);
    let (kind, key) = match name {
        "run_shell_command" | "exec" | "monitor" => (ToolKind::Shell, field(&["command"])),
        "read_file" | "zoom_image" => (ToolKind::Read, field(&["file_path", "absolute_path"])),
        "write_file" => (ToolKind::Write, field(&["file_path"])),
        "edit" | "notebook_edit" => (ToolKind::Edit, field(&["file_path", "notebook_path"])),
        "glob" | "grep_search" | "tool_search" => (ToolKind::Search, field(&["pattern", "query"])),
        "list_directory" => (ToolKind::Search, field(&["path", "dir_path"])),
        TODO_TOOL => (ToolKind::Plan, status_line(input, "todos", "content")),
        "web_fetch" => (ToolKind::Web, field(&["url", "prompt"])),
        "web_search" => (ToolKind::Web, field(&["query"])),
        "agent" | "task_create" => (
            ToolKind::Subagent,
            field(&["description", "prompt", "subagent_type"]),
        ),
        _ => (ToolKind::Other, None),
    };
    (kind, key.unwrap_or_else(|| generic_key_arg(input, "")))
}

/// Qwen Code's tool for a neutral call from another agent, when its arguments can be told
/// (`Portable`): its paths absolute, an edit's texts under `old_string` and `new_string`.
pub fn native(call: &Message) -> Option<(String, Value)> {
    let absolute = |p: &str| p.starts_with('/') && !p.contains('\n');
    Some(
        match Portable::of(call, absolute, &["old_string"], &["new_string"])? {
            Portable::Shell(command) => ("run_shell_command".into(), json!({ "command": command })),
            Portable::Read(path) => ("read_file".into(), json!({ "file_path": path })),
            Portable::Write { path, content } => (
                "write_file".into(),
                json!({ "file_path": path, "content": content }),
            ),
            Portable::Edit { path, old, new } => (
                "edit".into(),
                json!({ "file_path": path, "old_string": old, "new_string": new }),
            ),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_gets_a_kind_and_what_it_did() {
        let cases = [
            (
                "run_shell_command",
                json!({"command": "python3 hello.py", "description": "run"}),
                ToolKind::Shell,
                "python3 hello.py",
            ),
            (
                "write_file",
                json!({"file_path": "/p/hello.py", "content": "x"}),
                ToolKind::Write,
                "/p/hello.py",
            ),
            (
                "edit",
                json!({"file_path": "/p/hello.py", "old_string": "a", "new_string": "b"}),
                ToolKind::Edit,
                "/p/hello.py",
            ),
            (
                "todo_write",
                json!({"todos": [{"id": "1", "content": "a", "status": "in_progress"}]}),
                ToolKind::Plan,
                "a (in_progress)",
            ),
            (
                "grep_search",
                json!({"pattern": "fn"}),
                ToolKind::Search,
                "fn",
            ),
            ("mcp_x", json!({"query": "q"}), ToolKind::Other, "q"),
        ];
        for (name, input, kind, key) in cases {
            assert_eq!(classify(name, &input), (kind, key.to_string()), "{name}");
        }
    }

    #[test]
    fn writes_and_edits_become_qwen_tools_only_with_their_texts() {
        let call = crate::model::test_call;
        let w = call(
            ToolKind::Write,
            "/p/a.py",
            json!({"file_path": "/p/a.py", "content": "x"}),
        );
        assert_eq!(
            native(&w),
            Some((
                "write_file".into(),
                json!({"file_path": "/p/a.py", "content": "x"})
            ))
        );
        let patch = call(ToolKind::Edit, "/p/a.py", json!({"patch": "*** Begin"}));
        assert_eq!(native(&patch), None);
        let sh = call(ToolKind::Shell, "ls", json!({"cmd": ["ls"]}));
        assert_eq!(
            native(&sh),
            Some(("run_shell_command".into(), json!({"command": "ls"})))
        );
        assert_eq!(native(&call(ToolKind::Read, "rel.txt", json!({}))), None);
    }
}
