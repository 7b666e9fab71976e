//! Copilot CLI's tools as neutral tool kinds, with the argument that says what each call did,
//! and the neutral calls a relay writes back as Copilot's own tools.

use serde_json::{Value, json};

use crate::model::{Message, ToolKind, first_str, generic_key_arg};

/// Tools whose `path` argument names a file they change.
pub const WRITE_TOOLS: &[&str] = &["create", "edit", "str_replace_editor"];

/// The kind of one of Copilot CLI's tools and its key argument, in full.
pub fn classify(name: &str, input: &Value) -> (ToolKind, String) {
    let field = |keys: &[&str]| first_str(input, keys);
    let (kind, key) = match name {
        "bash" | "powershell" => (ToolKind::Shell, field(&["command"])),
        "view" | "read_file" => (ToolKind::Read, field(&["path"])),
        "create" => (ToolKind::Write, field(&["path"])),
        "edit" | "str_replace_editor" | "apply_patch" => (ToolKind::Edit, field(&["path"])),
        "grep" | "glob" | "rg" | "grep_search" | "file_search" => {
            (ToolKind::Search, field(&["pattern", "query"]))
        }
        "update_todo" => (ToolKind::Plan, None),
        "web_fetch" => (ToolKind::Web, field(&["url"])),
        "task" => (ToolKind::Subagent, field(&["prompt", "description"])),
        _ => (ToolKind::Other, None),
    };
    (kind, key.unwrap_or_else(|| generic_key_arg(input, "")))
}

/// Copilot CLI's tool for a call from another agent, when the call names all that tool needs:
/// a shell command (`bash`), a file read (`view`), a whole file written (`create`, with the
/// text the source's input holds) or one replacement in a file (`edit`, with its old and new
/// text). These four are always among Copilot CLI's tools; everything else travels as text.
pub fn native(call: &Message) -> Option<(String, Value)> {
    let key = call.key_arg.as_deref()?;
    let input = call.tool_input.as_ref().unwrap_or(&Value::Null);
    let text = |keys: &[&str]| keys.iter().find_map(|k| input.get(*k)?.as_str());
    let absolute = key.starts_with('/') && !key.contains('\n');
    match call.tool_kind? {
        ToolKind::Shell if !key.trim().is_empty() => Some((
            "bash".into(),
            json!({"command": key, "description": crate::text::one_line_cut(key, 80)}),
        )),
        ToolKind::Read if absolute => Some(("view".into(), json!({ "path": key }))),
        ToolKind::Write if absolute => {
            let file_text = text(&["content", "file_text", "contents"])?;
            Some((
                "create".into(),
                json!({"path": key, "file_text": file_text}),
            ))
        }
        // One replacement: an edit of every occurrence is not what Copilot's `edit` does.
        ToolKind::Edit if absolute && input.get("replace_all") != Some(&Value::Bool(true)) => {
            let old = text(&["old_string", "old_str"])?;
            let new = text(&["new_string", "new_str"])?;
            Some((
                "edit".into(),
                json!({"path": key, "old_str": old, "new_str": new}),
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_call as call;

    #[test]
    fn every_tool_gets_a_kind_and_what_it_did() {
        let cases = [
            (
                "bash",
                json!({"command": "ls", "description": "d"}),
                ToolKind::Shell,
                "ls",
            ),
            (
                "view",
                json!({"path": "/p/a.rs"}),
                ToolKind::Read,
                "/p/a.rs",
            ),
            (
                "create",
                json!({"path": "/p/b", "file_text": "x"}),
                ToolKind::Write,
                "/p/b",
            ),
            (
                "edit",
                json!({"path": "/p/c", "old_str": "a"}),
                ToolKind::Edit,
                "/p/c",
            ),
            (
                "grep",
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
                "task",
                json!({"prompt": "map it"}),
                ToolKind::Subagent,
                "map it",
            ),
            (
                "sql",
                json!({"query": "select 1"}),
                ToolKind::Other,
                "select 1",
            ),
        ];
        for (name, input, kind, key) in cases {
            assert_eq!(classify(name, &input), (kind, key.to_string()), "{name}");
        }
    }

    #[test]
    fn calls_that_name_all_a_copilot_tool_needs_become_one() {
        let bash = native(&call(ToolKind::Shell, "ls -la", json!({"cmd": "ls -la"}))).unwrap();
        assert_eq!(bash.0, "bash");
        assert_eq!(bash.1["command"], "ls -la");
        let write = call(
            ToolKind::Write,
            "/p/a.py",
            json!({"file_path": "/p/a.py", "content": "x = 1\n"}),
        );
        assert_eq!(
            native(&write),
            Some((
                "create".into(),
                json!({"path": "/p/a.py", "file_text": "x = 1\n"})
            ))
        );
        let edit = call(
            ToolKind::Edit,
            "/p/a.py",
            json!({"file_path": "/p/a.py", "old_string": "1", "new_string": "2"}),
        );
        assert_eq!(native(&edit).unwrap().1["new_str"], "2");
        let all = call(
            ToolKind::Edit,
            "/p/a.py",
            json!({"old_string": "1", "new_string": "2", "replace_all": true}),
        );
        assert_eq!(native(&all), None);
        assert_eq!(native(&call(ToolKind::Read, "rel.rs", json!({}))), None);
        assert_eq!(native(&call(ToolKind::Write, "/p/a", json!({}))), None);
        assert_eq!(native(&call(ToolKind::Search, "x", json!({}))), None);
    }
}
