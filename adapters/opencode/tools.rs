//! OpenCode's built-in tools (1.18.33 names and argument keys) as neutral tool kinds, and the
//! neutral calls a relay writes back as OpenCode's own: `bash {command}`, `read {filePath}`,
//! `write {filePath, content}`, `edit {filePath, oldString, newString}`, `todowrite {todos}`.

use serde_json::{Value, json};

use crate::adapter::write::Portable;
use crate::model::{Message, ToolKind, first_str, generic_key_arg, status_line};

/// Tools whose `filePath` names a file they change.
pub const WRITE_TOOLS: &[&str] = &["write", "edit"];

/// The tool that sets the todo list.
pub const TODO_TOOL: &str = "todowrite";

/// The kind of one of OpenCode's tools and its key argument, in full.
pub fn classify(name: &str, input: &Value) -> (ToolKind, String) {
    let field = |keys: &[&str]| first_str(input, keys);
    let (kind, key) = match name {
        "bash" => (ToolKind::Shell, field(&["command"])),
        "read" => (ToolKind::Read, field(&["filePath"])),
        "write" => (ToolKind::Write, field(&["filePath"])),
        "edit" | "multiedit" | "apply_patch" => (ToolKind::Edit, field(&["filePath"])),
        "glob" | "grep" => (ToolKind::Search, field(&["pattern"])),
        "list" => (ToolKind::Search, field(&["path"])),
        TODO_TOOL => (ToolKind::Plan, status_line(input, "todos", "content")),
        "webfetch" => (ToolKind::Web, field(&["url"])),
        "websearch" => (ToolKind::Web, field(&["query"])),
        "task" => (ToolKind::Subagent, field(&["description", "prompt"])),
        _ => (ToolKind::Other, None),
    };
    (kind, key.unwrap_or_else(|| generic_key_arg(input, "")))
}

/// OpenCode's own tool for a neutral call from another agent, when one of its tools does what
/// the call did (`Portable`): an edit's texts under the names agents commonly give them or
/// OpenCode's own. Anything else travels as text.
pub fn native(call: &Message) -> Option<(String, Value)> {
    let path = |p: &str| !p.trim().is_empty() && !p.contains('\n');
    let old = ["old_string", "oldString", "oldText"];
    let new = ["new_string", "newString", "newText"];
    Some(match Portable::of(call, path, &old, &new)? {
        Portable::Shell(command) => ("bash".into(), json!({"command": command})),
        Portable::Read(path) => ("read".into(), json!({"filePath": path})),
        Portable::Write { path, content } => (
            "write".into(),
            json!({"filePath": path, "content": content}),
        ),
        Portable::Edit { path, old, new } => {
            let input = json!({"filePath": path, "oldString": old, "newString": new});
            ("edit".into(), input)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    #[test]
    fn every_tool_gets_a_kind_and_what_it_did() {
        let cases = [
            (
                "bash",
                json!({"command": "ls -la"}),
                ToolKind::Shell,
                "ls -la",
            ),
            (
                "read",
                json!({"filePath": "/a/b.rs"}),
                ToolKind::Read,
                "/a/b.rs",
            ),
            (
                "write",
                json!({"filePath": "/a/c", "content": "x"}),
                ToolKind::Write,
                "/a/c",
            ),
            (
                "edit",
                json!({"filePath": "/a/d", "oldString": "a"}),
                ToolKind::Edit,
                "/a/d",
            ),
            (
                "grep",
                json!({"pattern": "fn main"}),
                ToolKind::Search,
                "fn main",
            ),
            (
                "webfetch",
                json!({"url": "https://x"}),
                ToolKind::Web,
                "https://x",
            ),
            ("mcp_tool", json!({"query": "q"}), ToolKind::Other, "q"),
        ];
        for (name, input, kind, key) in cases {
            assert_eq!(classify(name, &input), (kind, key.to_string()), "{name}");
        }
        let todo =
            json!({"todos": [{"content": "Ship it", "status": "in_progress", "priority": "low"}]});
        assert_eq!(
            classify(TODO_TOOL, &todo),
            (ToolKind::Plan, "Ship it (in_progress)".to_string())
        );
    }

    fn call(kind: ToolKind, key: &str, input: Value) -> Message {
        let mut m = Message::new(Role::ToolCall, "");
        m.tool_kind = Some(kind);
        m.key_arg = Some(key.into());
        m.tool_input = Some(input);
        m
    }

    #[test]
    fn calls_become_opencode_tools_when_their_input_says_enough() {
        let edit = call(
            ToolKind::Edit,
            "/p/a.py",
            json!({"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}),
        );
        assert_eq!(
            native(&edit),
            Some((
                "edit".into(),
                json!({"filePath": "/p/a.py", "oldString": "a", "newString": "b"})
            ))
        );
        let patch = call(
            ToolKind::Edit,
            "/p/a.py",
            json!({"input": "*** Begin Patch"}),
        );
        assert_eq!(native(&patch), None);
        let shell = call(ToolKind::Shell, "ls", json!({"cmd": ["ls"]}));
        assert_eq!(
            native(&shell),
            Some(("bash".into(), json!({"command": "ls"})))
        );
        let many = call(ToolKind::Read, "a.py\nb.py", json!({}));
        assert_eq!(native(&many), None, "several files travel as text");
        assert_eq!(native(&call(ToolKind::Web, "https://x", json!({}))), None);
    }
}
