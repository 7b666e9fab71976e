//! Agent-neutral tool kinds. Each reader tags its own tool calls with a kind and the key
//! argument (the command, the file, the query); each writer maps kinds to its own tools or
//! carries the call as text. So no adapter needs to know another agent's tool names.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Runs a shell command; the key argument is the command line as a shell would take it.
    Shell,
    /// Reads a file; the key argument is its path.
    Read,
    /// Writes a whole file; the key argument is its path.
    Write,
    /// Edits or patches files; the key argument names them.
    Edit,
    /// Searches files or code; the key argument is the pattern or query.
    Search,
    /// Updates a todo list or plan.
    Plan,
    /// Fetches or searches the web; the key argument is the URL or query.
    Web,
    /// Starts a subagent; the key argument is its task.
    Subagent,
    Other,
}

impl ToolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Shell => "shell",
            ToolKind::Read => "read",
            ToolKind::Write => "write",
            ToolKind::Edit => "edit",
            ToolKind::Search => "search",
            ToolKind::Plan => "plan",
            ToolKind::Web => "web",
            ToolKind::Subagent => "subagent",
            ToolKind::Other => "other",
        }
    }
}

/// The key argument of a call whose reader did not name one: the first string among the
/// fields tools commonly use, else the free text, else the input itself.
pub fn generic_key_arg(input: &Value, content: &str) -> String {
    if let Value::String(text) = input {
        return text.clone();
    }
    for key in [
        "command",
        "cmd",
        "file_path",
        "path",
        "pattern",
        "query",
        "url",
        "prompt",
        "description",
    ] {
        match input.get(key) {
            Some(Value::String(s)) => return s.clone(),
            Some(Value::Array(words)) => {
                return words
                    .iter()
                    .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            _ => {}
        }
    }
    if !content.is_empty() {
        return content.to_string();
    }
    match input {
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The first of `keys` whose value in a call's input is a string: tools of different releases
/// (or of one family) name the same argument differently.
pub fn first_str(input: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(str::to_string)
}

/// A todo list or plan in one line: each item of the array `list` by its `text` field, with its
/// `status`, `; ` between them (`read (completed); fix (pending)`).
pub fn status_line(input: &Value, list: &str, text: &str) -> Option<String> {
    let items = input.get(list)?.as_array()?;
    Some(
        items
            .iter()
            .map(|i| {
                format!(
                    "{} ({})",
                    i.get(text).and_then(Value::as_str).unwrap_or("?"),
                    i.get("status").and_then(Value::as_str).unwrap_or("?")
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The todo list a call sets, as most agents' todo tools give it: each item of the array `list`
/// by its `text` field, with its `status` (pending when it has none).
pub fn todo_list(input: &Value, list: &str, text: &str) -> Option<Vec<super::Todo>> {
    let items = input.get(list)?.as_array()?;
    fn field<'v>(i: &'v Value, k: &str) -> &'v str {
        i.get(k).and_then(Value::as_str).unwrap_or_default()
    }
    Some(
        items
            .iter()
            .map(|i| super::Todo {
                text: field(i, text).to_string(),
                status: super::TodoStatus::parse(field(i, "status")),
            })
            .collect(),
    )
}

/// A tool call of `kind` whose key argument is `key` and input `input`, for the tests of the
/// writers' tool maps.
#[cfg(test)]
pub fn test_call(kind: ToolKind, key: &str, input: Value) -> super::Message {
    let mut m = super::Message::new(super::Role::ToolCall, "");
    m.tool_kind = Some(kind);
    m.key_arg = Some(key.into());
    m.tool_input = Some(input);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_read_as_one_line_of_items_and_states() {
        let plan = json!({"plan": [{"step": "read", "status": "completed"}, {"step": "fix"}]});
        assert_eq!(
            status_line(&plan, "plan", "step").as_deref(),
            Some("read (completed); fix (?)")
        );
        assert_eq!(status_line(&plan, "todos", "content"), None);
        let input = json!({"path": 1, "file_path": "/a", "dir_path": "/b"});
        assert_eq!(
            first_str(&input, &["path", "file_path", "dir_path"]).as_deref(),
            Some("/a")
        );
        assert_eq!(first_str(&input, &["url"]), None);
    }

    #[test]
    fn the_generic_key_takes_the_field_that_says_what_a_call_did() {
        assert_eq!(generic_key_arg(&json!({"query": "rust"}), ""), "rust");
        assert_eq!(
            generic_key_arg(&json!({"command": ["ls", "-la"]}), ""),
            "ls -la"
        );
        assert_eq!(generic_key_arg(&json!("free text"), ""), "free text");
        assert_eq!(generic_key_arg(&Value::Null, "content"), "content");
        assert_eq!(generic_key_arg(&json!({"n": 1}), ""), r#"{"n":1}"#);
    }
}
