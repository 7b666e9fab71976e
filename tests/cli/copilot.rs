//! GitHub Copilot CLI specifics: the session folder a relay writes (the log and its
//! `workspace.yaml`), what `clean` removes of it, and the hook Copilot CLI runs before it
//! compacts, with the input the real CLI 1.0.102 gives its hooks.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::TestEnv;

/// Relays `source` into Copilot; returns the new session's id and folder.
fn relay_to_copilot(env: &TestEnv, source: &str, proj: &str) -> (String, PathBuf) {
    let out = env.json(&["relay", source, "--to", "copilot", "--cwd", proj, "--json"]);
    let id = out["target"]["id"].as_str().unwrap().to_string();
    let path = PathBuf::from(out["target"]["path"].as_str().unwrap());
    assert_eq!(
        path,
        env.home("copilot")
            .join("session-state")
            .join(&id)
            .join("events.jsonl")
    );
    (id, path.parent().unwrap().to_path_buf())
}

#[test]
fn a_relay_writes_a_log_named_for_its_folder_and_a_workspace_that_titles_it() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let (id, folder) = relay_to_copilot(&env, "771ce1df", &proj);
    let text = std::fs::read_to_string(folder.join("events.jsonl")).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "session.start");
    assert_eq!(events[0]["data"]["sessionId"], id.as_str());
    assert_eq!(events[0]["data"]["context"]["cwd"], proj.as_str());
    assert_eq!(events[1]["type"], "session-relay");
    assert_eq!(events[1]["sessionId"], id.as_str());
    // Every event chained to the one before, with a UUID id and a time with its zone.
    for w in events.windows(2) {
        assert_eq!(w[1]["parentId"], w[0]["id"]);
    }
    for e in &events {
        let eid = e["id"].as_str().unwrap();
        assert!(uuid::Uuid::try_parse(eid).is_ok(), "{eid}");
        assert!(e["timestamp"].as_str().unwrap().ends_with('Z'), "{e}");
    }
    // Each call the model is told of has its start and its completion.
    let ids = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| e["data"]["toolCallId"].as_str().unwrap().to_string())
            .collect()
    };
    let requested: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "assistant.message")
        .flat_map(|e| e["data"]["toolRequests"].as_array().unwrap().clone())
        .map(|r| r["toolCallId"].as_str().unwrap().to_string())
        .collect();
    assert!(!requested.is_empty());
    // Started in the order they were requested; parallel calls complete in the order their
    // results came.
    assert_eq!(requested, ids("tool.execution_start"));
    let (mut requested, mut completed) = (requested, ids("tool.execution_complete"));
    requested.sort();
    completed.sort();
    assert_eq!(requested, completed);
    let ws = std::fs::read_to_string(folder.join("workspace.yaml")).unwrap();
    assert!(ws.starts_with("# written by session-relay"), "{ws}");
    assert!(ws.contains(&format!("id: \"{id}\"")), "{ws}");
    assert!(ws.contains("user_named: true"), "{ws}");
    // Listed under the relay's title, resumed by the folder's id.
    let listed = env.list_json(&["list", "--agent", "copilot", "--all", "--json"]);
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap()
        .clone();
    assert!(
        row["title"]
            .as_str()
            .unwrap()
            .contains("from claude: THINK Hello!"),
        "{row}"
    );
    assert_eq!(row["relay_of"]["agent"], "claude");
}

#[test]
fn line_separators_in_a_prompt_are_escaped_in_the_log() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    // The hand-made Copilot session holds a raw U+2028 in its first prompt.
    let (_, folder) = relay_to_copilot(&env, "5e1a0f00-0000-4000-8000-00000000c0dd", &proj);
    let text = std::fs::read_to_string(folder.join("events.jsonl")).unwrap();
    assert!(!text.contains('\u{2028}'));
    assert!(text.contains("\\u2028 separator"), "{text}");
}

/// `clean` removes a relay's log and workspace, and its folder when nothing else is left in
/// it; what Copilot CLI or the person put in a folder stays, and so does the folder.
#[test]
fn clean_removes_the_log_and_its_workspace_but_not_what_copilot_made() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let (_, kept_folder) = relay_to_copilot(&env, "771ce1df", &proj);
    let (_, folder) = relay_to_copilot(&env, "b62416f1", &proj);
    let (_, emptied) = relay_to_copilot(&env, "4b2030ed", &proj);
    let others: Vec<PathBuf> = std::fs::read_dir(env.home("copilot").join("session-state"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| ![&kept_folder, &folder, &emptied].contains(&p))
        .collect();
    // Copilot CLI adds files of its own to a session's folder when it resumes it, and may
    // rename the session (then the workspace.yaml is its own, without our first line).
    std::fs::create_dir_all(folder.join("checkpoints")).unwrap();
    std::fs::write(folder.join("checkpoints/index.md"), "# checkpoints\n").unwrap();
    let renamed = "id: x\nname: mine\nuser_named: true\n";
    std::fs::write(kept_folder.join("workspace.yaml"), renamed).unwrap();
    let out = env.ok(&["clean", "--older-than", "0m", "--yes", "--agent", "copilot"]);
    assert!(out.contains("deleted"), "{out}");
    assert!(!folder.join("events.jsonl").exists());
    assert!(!folder.join("workspace.yaml").exists());
    assert!(folder.join("checkpoints/index.md").exists());
    assert!(!kept_folder.join("events.jsonl").exists());
    assert_eq!(
        std::fs::read_to_string(kept_folder.join("workspace.yaml")).unwrap(),
        renamed
    );
    assert!(!emptied.exists(), "{out}");
    assert!(out.contains("its empty folder removed"), "{out}");
    // The sessions Copilot CLI wrote itself keep their folders.
    assert!(!others.is_empty());
    for p in &others {
        assert!(p.is_dir(), "{}", p.display());
    }
}

#[test]
fn the_pre_compact_hook_goes_into_settings_json_and_relays_what_copilot_names() {
    let env = TestEnv::with_fixtures();
    env.ok(&["hooks", "install", "--agent", "copilot", "--to", "claude"]);
    let settings: Value =
        serde_json::from_slice(&std::fs::read(env.home("copilot").join("settings.json")).unwrap())
            .unwrap();
    let command = settings["hooks"]["PreCompact"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(command.contains("hook run --to claude"), "{command}");
    assert!(command.contains("--from copilot"), "{command}");
    // The input Copilot CLI 1.0.102 gave a PreCompact hook, for a fixture of its store.
    let id = "8115de0d-43fd-46f8-8b65-0cfbedf277ab";
    let input = json!({
        "hook_event_name": "PreCompact",
        "session_id": id,
        "timestamp": "2026-12-06T11:43:53.258Z",
        "cwd": "/home/dev/proj-copilot-tools",
        "transcript_path": env.home("copilot").join("session-state").join(id).join("events.jsonl"),
        "trigger": "manual",
        "custom_instructions": "",
    });
    let out = env
        .cmd()
        .args(["hook", "run", "--to", "claude", "--from", "copilot"])
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(
        line.starts_with(
            "Relayed to Claude Code: cd /home/dev/proj-copilot-tools && claude --resume "
        ),
        "{line}"
    );
    let status = env.json(&["hooks", "status", "--json"]);
    assert!(status.to_string().contains("copilot"), "{status}");
}
