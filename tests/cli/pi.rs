//! pi as source and target without the real CLI: where a relay into it lands and how it
//! resumes, what it writes, and sessions found by the id in their header.

use crate::common::TestEnv;
use serde_json::Value;

fn relay_json(env: &TestEnv, args: &[&str]) -> Value {
    let mut full = vec!["relay"];
    full.extend_from_slice(args);
    full.push("--json");
    env.json(&full)
}

/// A relay into pi lands in the folder pi keeps for the directory, named as pi names its
/// files, resumes by its id there, and is written as pi needs it: a version 3 header with the
/// directory, entries chained to the one before, usage on every answer, pi's own tools.
#[test]
fn a_relay_into_pi_lands_in_the_projects_folder_and_is_written_as_pi_needs() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let r = relay_json(&env, &["771ce1df", "--to", "pi", "--cwd", &proj]);
    let id = r["target"]["id"].as_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 7);
    let path = std::path::PathBuf::from(r["target"]["path"].as_str().unwrap());
    let folder = format!("--{}--", proj.trim_start_matches('/').replace('/', "-"));
    assert_eq!(
        path.parent().unwrap(),
        env.home("pi").join("sessions").join(folder)
    );
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with(&format!("Z_{id}.jsonl")), "{name}");
    assert!(
        r["resume_command"]
            .as_str()
            .unwrap()
            .ends_with(&format!("&& pi --session {id}")),
        "{r}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        (&lines[0]["type"], &lines[0]["version"], &lines[0]["cwd"]),
        (
            &Value::from("session"),
            &Value::from(3),
            &Value::from(proj.as_str())
        )
    );
    for pair in lines[1..].windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"]);
    }
    let messages: Vec<&Value> = lines.iter().map(|l| &l["message"]).collect();
    let answers = messages.iter().filter(|m| m["role"] == "assistant");
    assert!(answers.clone().count() > 3);
    for a in answers {
        assert!(a["usage"]["totalTokens"].is_number(), "{a}");
    }
    let tools: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "toolCall")
        .filter_map(|b| b["name"].as_str())
        .collect();
    for tool in ["bash", "read", "write", "edit"] {
        assert!(tools.contains(&tool), "{tool} not among {tools:?}");
    }
    // The listing shows it as a relay, and `clean` takes it back.
    let rows = env.list_json(&["list", "--all", "--agent", "pi", "--json"]);
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap();
    assert!(!row["relay_of"].is_null(), "{row}");
    env.ok(&["clean", "--older-than", "0d", "--yes"]);
    assert!(!path.exists());
}

/// pi finds a session by the id in its header, whatever its file is called; so does the
/// selector, in full and by a unique prefix.
#[test]
fn sessions_are_found_by_the_id_in_their_header() {
    let env = TestEnv::with_fixtures();
    for selector in ["0199a0f0-0000-7000-8000-00000000a001", "01a2495e-dc76"] {
        let shown = env.json(&["show", selector, "--json"]);
        let id = &shown["session"]["id"];
        assert!(
            id.as_str().unwrap().starts_with(selector),
            "{selector}: {id}"
        );
    }
    let shown = env.json(&["show", "0199a0f0-0000-7000-8000-00000000a001", "--json"]);
    let path = shown["session"]["source_path"].as_str().unwrap();
    assert!(path.ends_with("/relay-minimal.jsonl"), "{path}");
    assert_eq!(shown["session"]["title"], "handmade first prompt");
}

/// With `PI_CODING_AGENT_SESSION_DIR` set, pi keeps its sessions straight in that folder (no
/// folder per project): they are listed and read from there, beside those of the agent dir.
#[test]
fn sessions_in_the_folder_pi_coding_agent_session_dir_names_are_listed() {
    let env = TestEnv::with_fixtures();
    let moved = env.dir.path().join("elsewhere/pi-sessions");
    std::fs::create_dir_all(&moved).unwrap();
    let fixture = crate::common::fixtures().join(
        "pi/sessions/--home-dev-proj-pi--/2026-12-06T03-21-02-369Z_01a2495e-8aa0-731f-a814-3fc6fa7371e6.jsonl",
    );
    let text = std::fs::read_to_string(fixture).unwrap().replace(
        "01a2495e-8aa0-731f-a814-3fc6fa7371e6",
        "01a2495e-8aa0-731f-a814-00000000e5d1",
    );
    std::fs::write(moved.join("2026-12-06T03-21-02-369Z_moved.jsonl"), text).unwrap();
    let list = |with_env: bool| -> Vec<String> {
        let mut cmd = env.cmd();
        if with_env {
            cmd.env("PI_CODING_AGENT_SESSION_DIR", &moved);
        }
        let out = cmd
            .args(["list", "--agent", "pi", "--all", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (without, with) = (list(false), list(true));
    let moved_id = "01a2495e-8aa0-731f-a814-00000000e5d1".to_string();
    assert!(!without.contains(&moved_id), "{without:?}");
    assert!(with.contains(&moved_id), "{with:?}");
    // The agent dir's own sessions are still listed.
    assert_eq!(with.len(), without.len() + 1, "{with:?}");
}

/// With `PI_CODING_AGENT_SESSION_DIR` set, a relay into pi lands straight in that folder, where
/// pi then lists and resumes its sessions (one left in the agent dir it would take for another
/// project's); the listing finds it there as a relay, and `clean` takes it back.
#[test]
fn a_relay_into_pi_follows_pi_coding_agent_session_dir() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let moved = env.dir.path().join("elsewhere/pi-sessions");
    let run = |args: &[&str]| -> Value {
        let out = env
            .cmd()
            .env("PI_CODING_AGENT_SESSION_DIR", &moved)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let r = run(&["relay", "771ce1df", "--to", "pi", "--cwd", &proj, "--json"]);
    let id = r["target"]["id"].as_str().unwrap();
    let path = std::path::PathBuf::from(r["target"]["path"].as_str().unwrap());
    assert_eq!(path.parent().unwrap(), moved);
    assert!(path.is_file());
    let folder = format!("--{}--", proj.trim_start_matches('/').replace('/', "-"));
    assert!(!env.home("pi").join("sessions").join(folder).exists());
    let rows = run(&["list", "--all", "--agent", "pi", "--json"]);
    let row = rows["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {rows}"));
    assert_eq!(row["relay"]["from"]["agent"], "claude", "{row}");
    run(&["clean", "--older-than", "0d", "--yes", "--json"]);
    assert!(!path.exists());
}
