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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
