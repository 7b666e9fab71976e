//! Qwen Code through the binary: what a relay writes into its store (the shape the real CLI
//! needs to list and resume it), and that the listing, `status` and `clean` know the relay by
//! its provenance and the ledger.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::TestEnv;

#[test]
fn a_relay_into_qwen_is_a_session_the_cli_lists_and_clean_removes() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let r = env.json(&[
        "relay", "771ce1df", "--to", "qwen", "--cwd", &proj, "--json",
    ]);
    let id = r["target"]["id"].as_str().unwrap().to_string();
    let path = PathBuf::from(r["target"]["path"].as_str().unwrap());

    // A v4 id (Qwen Code resumes UUIDs of version 1 to 5 only), in the project's folder.
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "4", "{id}");
    let folder: String = proj
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let chats = env.home("qwen").join("projects").join(folder).join("chats");
    assert_eq!(path, chats.join(format!("{id}.jsonl")));

    // Compact JSON; every record of the chain carries the id and the directory, the first is
    // the title, and each points at the one before.
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (line, v) in text.lines().zip(&records) {
        assert_eq!(serde_json::to_string(v).unwrap(), line, "compact");
    }
    assert_eq!(records[0]["subtype"], "custom_title");
    assert_eq!(records[0]["cwd"], proj.as_str());
    assert!(records[0]["parentUuid"].is_null());
    let title = records[0]["systemPayload"]["customTitle"].as_str().unwrap();
    assert!(title.contains("from claude"), "{title}");
    let chain: Vec<&Value> = records
        .iter()
        .filter(|v| v["type"] != "session-relay")
        .collect();
    assert_eq!(chain.len() + 1, records.len(), "one provenance record");
    for pair in chain.windows(2) {
        assert_eq!(pair[1]["parentUuid"], pair[0]["uuid"]);
    }
    for v in &chain {
        assert_eq!(v["sessionId"], id.as_str());
        assert_eq!(v["cwd"], proj.as_str());
    }
    // Shell commands became Qwen's own calls, each answered by a result of the same id.
    let calls: Vec<&Value> = chain
        .iter()
        .filter_map(|v| v["message"]["parts"].as_array())
        .flatten()
        .filter_map(|p| p.get("functionCall"))
        .collect();
    assert!(calls.iter().any(|c| c["name"] == "run_shell_command"));
    for c in &calls {
        let answered = chain
            .iter()
            .any(|v| v["type"] == "tool_result" && v["toolCallResult"]["callId"] == c["id"]);
        assert!(answered, "{c}");
    }

    // The listing knows it as a relay of the Claude Code session.
    let rows = env.list_json(&["list", "--agent", "qwen", "--all", "--json"]);
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap();
    assert_eq!(row["relay"]["from"]["agent"], "claude", "{row}");
    assert_eq!(row["relay"]["in_ledger"], true, "{row}");

    // A month later, `clean` deletes it: the ledger wrote it and the file proves it.
    let ledger = env.dir.path().join("state/session-relay/ledger.jsonl");
    let aged: Vec<String> = std::fs::read_to_string(&ledger)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let t = chrono::Utc::now() - chrono::Duration::days(40);
            v["time"] = Value::String(t.to_rfc3339());
            v.to_string()
        })
        .collect();
    std::fs::write(&ledger, aged.join("\n") + "\n").unwrap();
    let done = env.json(&["clean", "--older-than", "30d", "--yes", "--json"]);
    let action = done["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .map(|s| s["action"].clone());
    assert_eq!(action, Some(Value::from("deleted")), "{done}");
    assert!(!path.exists());
}

/// `status` reads the context Qwen Code recorded at the end of a session.
#[test]
fn status_reads_the_usage_qwen_recorded() {
    let env = TestEnv::with_fixtures();
    let path = env
        .home("qwen")
        .join("projects/-home-dev-proj-qwen-odd/chats/5e1a0f00-0000-4000-8000-00000000b0dd.jsonl");
    let shown = env.json(&["show", path.to_str().unwrap(), "--json"]);
    assert_eq!(
        shown["session"]["context_usage"]["tokens"], 15300,
        "{shown}"
    );
    let adapter = session_relay::adapters::by_name("qwen").unwrap();
    let usage = adapter.recorded_usage(&path).unwrap();
    assert_eq!(usage.tokens, 15300);
    assert_eq!(usage.model.as_deref(), Some("qwen3-coder-plus"));
}

/// With `QWEN_RUNTIME_DIR` set, Qwen Code keeps its `projects/` there instead of in its home:
/// those sessions are listed too, beside the home's.
#[test]
fn sessions_under_qwen_runtime_dir_are_listed() {
    let env = TestEnv::with_fixtures();
    let runtime = env.dir.path().join("elsewhere/qwen-runtime");
    let chats = runtime.join("projects/-home-dev-proj-moved/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let id = "67a11450-ffa9-4452-9780-00000000e5d1";
    let fixture = crate::common::fixtures()
        .join("qwen/projects/-home-dev-proj-qwen/chats/67a11450-ffa9-4452-9780-2decc9462a72.jsonl");
    let text = std::fs::read_to_string(fixture)
        .unwrap()
        .replace("67a11450-ffa9-4452-9780-2decc9462a72", id);
    std::fs::write(chats.join(format!("{id}.jsonl")), text).unwrap();
    let list = |with_env: bool| -> Vec<String> {
        let mut cmd = env.cmd();
        if with_env {
            cmd.env("QWEN_RUNTIME_DIR", &runtime);
        }
        let out = cmd
            .args(["list", "--agent", "qwen", "--all", "--json"])
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
    assert!(!without.iter().any(|s| s == id), "{without:?}");
    assert!(with.iter().any(|s| s == id), "{with:?}");
    assert_eq!(with.len(), without.len() + 1, "{with:?}");
}

/// With `QWEN_RUNTIME_DIR` set, a relay into Qwen Code lands in that runtime base's
/// `projects/`, where the CLI then looks for the project's sessions, and not in the home; the
/// listing finds it there as a relay, and `clean` takes it back.
#[test]
fn a_relay_into_qwen_follows_qwen_runtime_dir() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let runtime = env.dir.path().join("elsewhere/qwen-runtime");
    let run = |args: &[&str]| -> Value {
        let out = env
            .cmd()
            .env("QWEN_RUNTIME_DIR", &runtime)
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
    let r = run(&[
        "relay", "771ce1df", "--to", "qwen", "--cwd", &proj, "--json",
    ]);
    let id = r["target"]["id"].as_str().unwrap();
    let path = PathBuf::from(r["target"]["path"].as_str().unwrap());
    let folder: String = proj
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let chats = |base: &std::path::Path| base.join("projects").join(&folder).join("chats");
    assert_eq!(path, chats(&runtime).join(format!("{id}.jsonl")));
    assert!(path.is_file());
    assert!(!chats(&env.home("qwen")).exists());
    let rows = run(&["list", "--all", "--agent", "qwen", "--json"]);
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
