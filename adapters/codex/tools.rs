//! Codex's tools as neutral tool kinds, with the argument that says what each call did.

use serde_json::Value;

use crate::model::{ToolKind, generic_key_arg, status_line};

/// The kind of one of Codex's tools and its key argument, in full.
pub fn classify(name: &str, input: &Value) -> (ToolKind, String) {
    let field = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_string);
    let (kind, key) = match name {
        // `shell` and `local_shell` take an argv; `shell_command` and `exec_command` a string.
        "shell" | "local_shell" | "container.exec" => match input.get("command") {
            // Older Codex ran apply_patch through the shell tool: ["apply_patch", "<patch>"].
            Some(Value::Array(argv))
                if argv.first().and_then(Value::as_str) == Some("apply_patch") =>
            {
                (
                    ToolKind::Edit,
                    argv.get(1).and_then(Value::as_str).and_then(patch_headline),
                )
            }
            Some(Value::Array(argv)) => (ToolKind::Shell, Some(shell_command(argv))),
            Some(Value::String(s)) => (ToolKind::Shell, Some(s.clone())),
            _ => (ToolKind::Shell, None),
        },
        "shell_command" => (ToolKind::Shell, field("command")),
        "exec_command" => (ToolKind::Shell, field("cmd")),
        "apply_patch" => (
            ToolKind::Edit,
            patch_text(input).and_then(|p| patch_headline(&p)),
        ),
        "update_plan" => (ToolKind::Plan, status_line(input, "plan", "step")),
        "web_search" => (
            ToolKind::Web,
            input
                .get("query")
                .or_else(|| input.pointer("/action/query"))
                .and_then(Value::as_str)
                .map(str::to_string),
        ),
        "view_image" => (ToolKind::Read, field("path")),
        _ => (ToolKind::Other, None),
    };
    (kind, key.unwrap_or_else(|| generic_key_arg(input, "")))
}

/// The patch an `apply_patch` call carries: a freeform input, or a JSON field.
pub fn patch_text(input: &Value) -> Option<String> {
    input
        .as_str()
        .or_else(|| input.get("input").and_then(Value::as_str))
        .or_else(|| input.get("patch").and_then(Value::as_str))
        .map(str::to_string)
}

/// `["bash", "-lc", "ls -la"]` is the command `ls -la`; other argv are joined shell-quoted.
pub fn shell_command(words: &[Value]) -> String {
    let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
    match words.as_slice() {
        [sh, flag, cmd] if sh.ends_with("sh") && flag.starts_with('-') && flag.contains('c') => {
            cmd.to_string()
        }
        _ => words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The files a patch adds, updates or deletes, as one line.
fn patch_headline(patch: &str) -> Option<String> {
    let files: Vec<&str> = patch
        .lines()
        .filter_map(|l| {
            ["Add File: ", "Update File: ", "Delete File: "]
                .iter()
                .find_map(|m| l.strip_prefix("*** ").filter(|r| r.starts_with(m)))
        })
        .collect();
    (!files.is_empty()).then(|| format!("patch: {}", files.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_gets_a_kind_and_what_it_did() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: b.txt\n+hi\n*** End Patch";
        let cases = [
            (
                "shell",
                json!({"command": ["bash", "-lc", "ls -la"]}),
                ToolKind::Shell,
                "ls -la",
            ),
            (
                "shell",
                json!({"command": ["git", "commit", "-m", "a b"]}),
                ToolKind::Shell,
                "git commit -m 'a b'",
            ),
            (
                "exec_command",
                json!({"cmd": "cargo test"}),
                ToolKind::Shell,
                "cargo test",
            ),
            (
                "shell",
                json!({"command": ["apply_patch", patch]}),
                ToolKind::Edit,
                "patch: Update File: src/a.rs; Add File: b.txt",
            ),
            (
                "apply_patch",
                json!(patch),
                ToolKind::Edit,
                "patch: Update File: src/a.rs; Add File: b.txt",
            ),
            (
                "update_plan",
                json!({"plan": [{"step": "read", "status": "completed"}, {"step": "fix", "status": "pending"}]}),
                ToolKind::Plan,
                "read (completed); fix (pending)",
            ),
            (
                "web_search",
                json!({"type": "search", "query": "rust"}),
                ToolKind::Web,
                "rust",
            ),
            (
                "write_stdin",
                json!({"session_id": 3, "chars": "y"}),
                ToolKind::Other,
                r#"{"session_id":3,"chars":"y"}"#,
            ),
        ];
        for (name, input, kind, key) in cases {
            assert_eq!(classify(name, &input), (kind, key.to_string()), "{name}");
        }
    }
}
