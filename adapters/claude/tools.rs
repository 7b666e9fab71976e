//! Claude Code's tools as neutral tool kinds, with the argument that says what each call did.

use serde_json::Value;

use crate::model::{ToolKind, generic_key_arg, status_line};

/// Tools whose input names a file they write.
pub const WRITE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// The kind of one of Claude Code's tools and its key argument, in full.
pub fn classify(name: &str, input: &Value) -> (ToolKind, String) {
    let field = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_string);
    let (kind, key) = match name {
        "Bash" => (ToolKind::Shell, field("command")),
        "Read" => (ToolKind::Read, field("file_path")),
        "Write" => (ToolKind::Write, field("file_path")),
        "Edit" | "MultiEdit" => (ToolKind::Edit, field("file_path")),
        "NotebookEdit" => (ToolKind::Edit, field("notebook_path")),
        "Grep" | "Glob" => (ToolKind::Search, field("pattern")),
        "TodoWrite" => (ToolKind::Plan, status_line(input, "todos", "content")),
        "WebFetch" => (ToolKind::Web, field("url")),
        "WebSearch" => (ToolKind::Web, field("query")),
        "Task" | "Agent" => (
            ToolKind::Subagent,
            field("description").or_else(|| field("prompt")),
        ),
        _ => (ToolKind::Other, None),
    };
    (kind, key.unwrap_or_else(|| generic_key_arg(input, "")))
}

/// Claude Code's tool for a neutral call from another agent. Only Bash is always among
/// Claude Code's tools (others are deferred or optional), so only shell commands keep their
/// structure; everything else travels as text.
pub fn native(kind: ToolKind, key: &str) -> Option<(String, Value)> {
    match kind {
        ToolKind::Shell if !key.trim().is_empty() => {
            Some(("Bash".to_string(), serde_json::json!({ "command": key })))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_gets_a_kind_and_what_it_did() {
        let cases = [
            (
                "Bash",
                json!({"command": "cargo test"}),
                ToolKind::Shell,
                "cargo test",
            ),
            (
                "Read",
                json!({"file_path": "/a/b.rs"}),
                ToolKind::Read,
                "/a/b.rs",
            ),
            (
                "Edit",
                json!({"file_path": "/a/c.rs", "old_string": "x"}),
                ToolKind::Edit,
                "/a/c.rs",
            ),
            (
                "Grep",
                json!({"pattern": "fn main"}),
                ToolKind::Search,
                "fn main",
            ),
            (
                "TodoWrite",
                json!({"todos": [{"content": "a", "status": "completed"}]}),
                ToolKind::Plan,
                "a (completed)",
            ),
            (
                "Agent",
                json!({"description": "explore", "prompt": "p"}),
                ToolKind::Subagent,
                "explore",
            ),
            ("mcp__x__y", json!({"query": "q"}), ToolKind::Other, "q"),
        ];
        for (name, input, kind, key) in cases {
            assert_eq!(classify(name, &input), (kind, key.to_string()), "{name}");
        }
    }

    #[test]
    fn only_shell_calls_become_claude_tools() {
        assert_eq!(
            native(ToolKind::Shell, "ls -la"),
            Some(("Bash".into(), json!({"command": "ls -la"})))
        );
        assert_eq!(native(ToolKind::Edit, "/a.rs"), None);
        assert_eq!(native(ToolKind::Shell, " "), None);
    }
}
