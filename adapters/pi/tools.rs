//! pi's built-in tools as neutral tool kinds, and back: `bash {command}`, `read {path}`,
//! `write {path, content}`, `edit {path, edits: [{oldText, newText}]}`, and the optional `grep`,
//! `find`, `ls`.

use serde_json::{Value, json};

use crate::adapter::write::Portable;
use crate::model::{Message, ToolKind, generic_key_arg};

/// Tools whose input names a file they change.
pub const WRITE_TOOLS: &[&str] = &["write", "edit"];

/// The kind of one of pi's tools and its key argument, in full.
pub fn classify(name: &str, input: &Value) -> (ToolKind, String) {
    let field = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_string);
    let (kind, key) = match name {
        "bash" => (ToolKind::Shell, field("command")),
        "read" => (ToolKind::Read, field("path")),
        "write" => (ToolKind::Write, field("path")),
        "edit" => (ToolKind::Edit, field("path")),
        "grep" | "find" => (ToolKind::Search, field("pattern")),
        "ls" => (ToolKind::Search, field("path")),
        _ => (ToolKind::Other, None),
    };
    (kind, key.unwrap_or_else(|| generic_key_arg(input, "")))
}

/// pi's own tool for a neutral call from another agent, when one of its default tools (bash,
/// read, write, edit) does what the call did (`Portable`): an edit's texts under the names
/// agents commonly give them or pi's own `oldText` / `newText`. A patch, a multi-edit or
/// anything else travels as text.
pub fn native(call: &Message) -> Option<(String, Value)> {
    // pi resolves a relative path against the session's directory, as the source agent did.
    let path = |p: &str| !p.trim().is_empty() && !p.contains('\n');
    let (old, new) = (["old_string", "oldText"], ["new_string", "newText"]);
    Some(match Portable::of(call, path, &old, &new)? {
        Portable::Shell(command) => ("bash".into(), json!({"command": command})),
        Portable::Read(path) => ("read".into(), json!({"path": path})),
        Portable::Write { path, content } => {
            ("write".into(), json!({"path": path, "content": content}))
        }
        Portable::Edit { path, old, new } => {
            let edits = json!([{"oldText": old, "newText": new}]);
            ("edit".into(), json!({"path": path, "edits": edits}))
        }
    })
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
                json!({"command": "ls -la"}),
                ToolKind::Shell,
                "ls -la",
            ),
            (
                "read",
                json!({"path": "/a/b.rs"}),
                ToolKind::Read,
                "/a/b.rs",
            ),
            (
                "write",
                json!({"path": "/a/c.rs", "content": "x"}),
                ToolKind::Write,
                "/a/c.rs",
            ),
            (
                "edit",
                json!({"path": "/a/d.rs", "edits": []}),
                ToolKind::Edit,
                "/a/d.rs",
            ),
            (
                "grep",
                json!({"pattern": "fn main"}),
                ToolKind::Search,
                "fn main",
            ),
            ("ls", json!({"path": "src"}), ToolKind::Search, "src"),
            ("mcp_tool", json!({"query": "q"}), ToolKind::Other, "q"),
        ];
        for (name, input, kind, key) in cases {
            assert_eq!(classify(name, &input), (kind, key.to_string()), "{name}");
        }
    }

    #[test]
    fn calls_become_pi_tools_when_their_input_says_enough() {
        let write = call(
            ToolKind::Write,
            "/p/a.py",
            json!({"file_path": "/p/a.py", "content": "x"}),
        );
        assert_eq!(
            native(&write),
            Some(("write".into(), json!({"path": "/p/a.py", "content": "x"})))
        );
        let edit = call(
            ToolKind::Edit,
            "/p/a.py",
            json!({"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}),
        );
        assert_eq!(
            native(&edit),
            Some((
                "edit".into(),
                json!({"path": "/p/a.py", "edits": [{"oldText": "a", "newText": "b"}]})
            ))
        );
        // A patch names its files but holds no old and new text.
        let patch = call(
            ToolKind::Edit,
            "/p/a.py",
            json!({"input": "*** Begin Patch"}),
        );
        assert_eq!(native(&patch), None);
        let read = call(ToolKind::Read, "src/a.py", json!({}));
        assert_eq!(
            native(&read),
            Some(("read".into(), json!({"path": "src/a.py"})))
        );
        let many = call(ToolKind::Read, "a.py\nb.py", json!({}));
        assert_eq!(native(&many), None, "several files travel as text");
        let shell = call(ToolKind::Shell, "ls", json!({"cmd": ["ls"]}));
        assert_eq!(
            native(&shell),
            Some(("bash".into(), json!({"command": "ls"})))
        );
        assert_eq!(native(&call(ToolKind::Web, "https://x", json!({}))), None);
    }
}
