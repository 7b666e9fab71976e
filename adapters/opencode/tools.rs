//! OpenCode's built-in tools (1.18.33 names and argument keys) as neutral tool kinds, and the
//! neutral calls a relay writes back as OpenCode's own: `bash {command}`, `read {filePath}`,
//! `write {filePath, content}`, `edit {filePath, oldString, newString}`, `todowrite {todos}`.

use serde_json::{Value, json};

use crate::model::{Message, Todo, TodoStatus, ToolKind, first_str, generic_key_arg, status_line};

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

/// The todo list a `todowrite` call sets.
pub fn todos(input: &Value) -> Option<Vec<Todo>> {
    let items = input.get("todos")?.as_array()?;
    Some(
        items
            .iter()
            .map(|i| Todo {
                text: first_str(i, &["content"]).unwrap_or_default(),
                status: TodoStatus::parse(&first_str(i, &["status"]).unwrap_or_default()),
            })
            .collect(),
    )
}

/// OpenCode's own tool for a neutral call from another agent, when the call says enough to
/// fill its input: a shell command and a read need the key argument; a whole-file write and an
/// edit need the texts the source's input holds under the names agents commonly give them.
/// Anything else travels as text.
pub fn native(call: &Message) -> Option<(String, Value)> {
    let key = call.key_arg.as_deref()?;
    let input = call.tool_input.as_ref();
    let text = |names: &[&str]| first_str(input?, names);
    let path = !key.trim().is_empty() && !key.contains('\n');
    match call.tool_kind? {
        ToolKind::Shell if !key.trim().is_empty() => Some(("bash".into(), json!({"command": key}))),
        ToolKind::Read if path => Some(("read".into(), json!({"filePath": key}))),
        ToolKind::Write if path => {
            let content = text(&["content"])?;
            Some(("write".into(), json!({"filePath": key, "content": content})))
        }
        ToolKind::Edit if path => {
            let old = text(&["old_string", "oldString", "oldText"])?;
            let new = text(&["new_string", "newString", "newText"])?;
            let input = json!({"filePath": key, "oldString": old, "newString": new});
            Some(("edit".into(), input))
        }
        _ => None,
    }
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
