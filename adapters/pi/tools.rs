//! pi's built-in tools as neutral tool kinds, and back: `bash {command}`, `read {path}`,
//! `write {path, content}`, `edit {path, edits: [{oldText, newText}]}`, and the optional `grep`,
//! `find`, `ls`.

use serde_json::{Value, json};

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
/// read, write, edit) does what the call did and the call says enough to fill its input. The
/// key argument gives the command or the path; a write's content and an edit's texts come from
/// the call's input under the field names agents commonly give them (`content`; `old_string` /
/// `new_string`, or pi's own `oldText` / `newText`). A patch, a multi-edit or anything else
/// travels as text.
pub fn native(call: &Message) -> Option<(String, Value)> {
    let key = call.key_arg.as_deref()?;
    let input = call.tool_input.as_ref();
    let text = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| input?.get(*n)?.as_str().map(str::to_string))
    };
    // pi resolves a relative path against the session's directory, as the source agent did.
    let path = !key.trim().is_empty() && !key.contains('\n');
    match call.tool_kind? {
        ToolKind::Shell if !key.trim().is_empty() => Some(("bash".into(), json!({"command": key}))),
        ToolKind::Read if path => Some(("read".into(), json!({"path": key}))),
        ToolKind::Write if path => {
            let content = text(&["content"])?;
            Some(("write".into(), json!({"path": key, "content": content})))
        }
        ToolKind::Edit if path => {
            let old = text(&["old_string", "oldText"])?;
            let new = text(&["new_string", "newText"])?;
            let edits = json!([{"oldText": old, "newText": new}]);
            Some(("edit".into(), json!({"path": key, "edits": edits})))
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
