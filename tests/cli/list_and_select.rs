//! `list`, the session selector, discovery and configuration, through the built binary.

use crate::common::{TestEnv, fixtures};
use serde_json::Value;

/// What the listing must say of every shared sample (and of the hand-made legacy shapes):
/// id, agent, working directory, title. Read off the sample files themselves.
const EXPECTED: &[(&str, &str, Option<&str>, &str)] = &[
    (
        "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68",
        "claude",
        Some("/Users/pete/tmp/claude-code-sessions"),
        "Spaw sub-agents to write poems about Thai green curry, Thai yellow curry and Thai red curry. Each subagent should do a web search to understand the most common adjectives used for these caries as part of preparing for its poetry. run the agents in the background, and while we wait for them to complete write your own poem about sushi",
    ),
    (
        "4b2030ed-5563-49ea-b703-6a002f2d3cc8",
        "claude",
        Some("/Users/pete/git/moredip/session-share"),
        "spawn a subagent to perform a websearch to determine what is the most popular color of thai curry",
    ),
    (
        "771ce1df-ae7a-4516-8192-f08c38166af2",
        "claude",
        Some("/home/dev/projects/interactive"),
        "THINK Hello! Please DO_BASH to look around the project.",
    ),
    (
        "b62416f1-9c34-46de-82bd-94e9673c1162",
        "claude",
        Some("/home/dev/projects/compact"),
        "THINK Hi, please DO_BASH to look around.",
    ),
    (
        "8a4bcf74-cd1a-4e6f-9a85-ad82a111e463",
        "claude",
        Some("/home/dev/projects/branch"),
        "First, DO_BASH to look around.",
    ),
    (
        "4603a70c-807c-4d39-b768-221cd1b09dfd",
        "claude",
        Some("/home/dev/projects/subagent"),
        "Please DO_AGENT: have a subagent inspect the project files.",
    ),
    (
        "22e102b9-1989-435e-97c6-36525d092081",
        "claude",
        Some("/home/dev/projects/gen_parallel"),
        "USE_TWO_TOOLS now",
    ),
    (
        "9e758c30-6791-4534-8e69-ed4833d9c8b8",
        "claude",
        Some("/home/dev/projects/my_app.v2"),
        "USE_TOOL THINK please",
    ),
    (
        "5d0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c6d",
        "claude",
        Some("/home/dev/projects/handmade"),
        "Parser hardening",
    ),
    (
        "01a22a5e-1137-71a3-a6d7-914d1c237ed7",
        "codex",
        Some("/home/dev/projects/greeter"),
        "SHELL: look around the project and show me the README",
    ),
    (
        "01a22a5d-3239-7e41-8a8f-0a5aa323f5f9",
        "codex",
        Some("/home/dev/projects/greeter"),
        "SHELL: look around the project and show me the README",
    ),
    (
        "01a22a5c-a0f8-7040-b2c7-f5dd0f81a290",
        "codex",
        Some("/home/dev/projects/greeter"),
        "SHELL: look around the project and show me the README",
    ),
    (
        "01a22a5b-8cb6-72e1-a33f-68d549eab431",
        "codex",
        Some("/home/dev/projects/greeter"),
        "SHELL: look around the project and show me the README",
    ),
    (
        "01a22a44-c657-7b40-b808-4c3ee4cefcb3",
        "codex",
        Some("/home/dev/projects/webapp"),
        "TUI-NEW-SESSION prompt",
    ),
    (
        "01a22a2f-fdfe-70d3-8516-3d195b15cce8",
        "codex",
        Some("/home/dev/projects/webapp"),
        "please run echo for me",
    ),
    (
        "0199a000-0000-7000-8000-000000000001",
        "codex",
        Some("/home/dev/projects/webapp"),
        "HANDMADE-USER: what is 2+2? (full)",
    ),
    (
        "0199a000-0000-7000-8000-00000000e0e0",
        "codex",
        Some("/home/dev/projects/webapp"),
        "what is 2+2?",
    ),
    (
        "0199a000-0000-7000-8000-00000000e0e1",
        "codex",
        Some("/home/dev/projects/webapp"),
        "what is 2+2? (minimal)",
    ),
    (
        "019e9625-802f-7e91-840a-cfe88d14117a",
        "codex",
        Some("/tmp/agent-history-real-agent/codex/workspace"),
        "[REDACTED_PROMPT]",
    ),
    (
        "0199b111-2222-7333-8444-555566667777",
        "codex",
        Some("/home/dev/projects/odd"),
        "Patch the zstd reader",
    ),
    (
        "0199a000-0000-7000-8000-0000000e7e27",
        "codex",
        Some("/home/dev/projects/events"),
        "only events here",
    ),
    (
        "0199a000-0000-7000-8000-0000000a0c1d",
        "codex",
        Some("/home/dev/projects/webapp"),
        "an archived question",
    ),
    (
        "5973b6c0-94b8-487b-a530-2aeb6098ae0e",
        "codex",
        Some("/home/dev/projects/legacy"),
        "List the files and add a notes.md",
    ),
    (
        "0c5f1e7a-3d2b-4c1a-9e8f-7a6b5c4d3e2f",
        "codex",
        None,
        "Fix the failing test in utils.ts",
    ),
    // Gemini CLI: a session kept in several files (the legacy folder's older copy, the stray
    // file a resume leaves) is one row, the file the CLI itself would resume.
    (
        "804052ce-b39a-4855-a415-9a92a3b4274c",
        "gemini",
        Some("/home/dev/projects/demo"),
        "Hello, what can you tell me about this project",
    ),
    (
        "609f289a-9ae0-4ce7-9ed0-b63f796ea21c",
        "gemini",
        Some("/home/dev/projects/demo"),
        "Set up a hello script and run it.",
    ),
    (
        "2b3405f7-f3bb-4278-a845-4f4f2ebd5b1b",
        "gemini",
        Some("/home/dev/projects/demo"),
        "Set up and edit a hello shell script",
    ),
    (
        "d1ffa35c-57bd-4f7f-916e-ac04c4d13da1",
        "gemini",
        Some("/home/dev/work/demo"),
        "Create a NOTES.md with one item and show it.",
    ),
    (
        "0199a0f0-6c1e-7a51-9d2b-5e0c1a2b3c4d",
        "gemini",
        Some("/home/dev/projects/demo"),
        "[relay from claude] Add a greeting script and run it",
    ),
    (
        "7e1c0dd0-5a5a-4b4b-9c9c-0000000000dd",
        "gemini",
        Some("/home/dev/projects/odd"),
        "Port the CSV parser to streaming reads; we must never load the whole file.",
    ),
    (
        "5a1e6c3d-2f4b-4e8a-9c1d-0e2f3a4b5c6d",
        "gemini",
        None,
        "Add a RELEASING.md with the release checklist",
    ), // GitHub Copilot CLI: titled by the workspace.yaml beside the log (the CLI named the
    // handmade c001 after the prompt its resume was given), else by the first prompt.
    (
        "759874fd-b261-4852-bc16-4b935a5c7299",
        "copilot",
        Some("/home/dev/proj-copilot"),
        "Hello copilot, first chat turn.",
    ),
    (
        "8115de0d-43fd-46f8-8b65-0cfbedf277ab",
        "copilot",
        Some("/home/dev/proj-copilot-tools"),
        "THINK then DO_ALL: create hello.py, run it, edit it, run it again.",
    ),
    (
        "9cb14419-eba0-491d-ad14-96dfe45884d7",
        "copilot",
        Some("/home/dev/proj-copilot-hand"),
        "relay from claude fix the greeting",
    ),
    (
        "a2602d90-e16c-4048-8d01-588962576d83",
        "copilot",
        Some("/home/dev/proj-copilot-hand"),
        "relay from claude fix the greeting",
    ),
    (
        "5e1a0f00-0000-4000-8000-00000000c001",
        "copilot",
        Some("/home/dev/proj-copilot-hand"),
        "follow-up on handmade",
    ),
    (
        "5e1a0f00-0000-4000-8000-00000000c005",
        "copilot",
        Some("/home/dev/proj-copilot-hand"),
        "probe prompt c005",
    ),
    (
        "5e1a0f00-0000-4000-8000-00000000c0dd",
        "copilot",
        Some("/home/dev/proj-copilot-odd"),
        "Odd session: check the separator and the failures",
    ),
    (
        "67a11450-ffa9-4452-9780-2decc9462a72",
        "qwen",
        Some("/home/dev/proj-qwen"),
        "Hello qwen, first chat turn.",
    ),
    (
        "c73c50cb-8968-40d5-aeb0-61c3933a377d",
        "qwen",
        Some("/home/dev/proj-qwen-tools"),
        "THINK then DO_ALL: create hello.py, run it, edit it, run it again.",
    ),
    (
        "5e1a0f00-0000-4000-8000-00000000b001",
        "qwen",
        Some("/home/dev/proj-qwen-hand"),
        "handmade first prompt",
    ),
    (
        "5e1a0f00-0000-4000-8000-00000000b002",
        "qwen",
        Some("/home/dev/proj-qwen-hand"),
        "[relay from claude] fix the greeting",
    ),
    (
        "5e1a0f00-0000-4000-8000-00000000b0dd",
        "qwen",
        Some("/home/dev/proj-qwen-odd"),
        "Start the odd session: plan the work ✓",
    ),
    // pi: the title is the newest `session_info` name, else the first prompt; the file's name
    // does not matter (`relay-minimal.jsonl`).
    (
        "01a2495e-8aa0-731f-a814-3fc6fa7371e6",
        "pi",
        Some("/home/dev/proj-pi"),
        "Hello pi, this is the first chat turn.",
    ),
    (
        "01a2495e-dc76-70e7-9e93-7c506f83998c",
        "pi",
        Some("/home/dev/proj-pi-tools"),
        "THINK then DO_ALL: create hello.py, run it, edit it, run it again.",
    ),
    (
        "0199a0f0-0000-7000-8000-00000000a001",
        "pi",
        Some("/home/dev/proj-pi-hand"),
        "handmade first prompt",
    ),
    (
        "0199a0f0-0000-7000-8000-00000000a002",
        "pi",
        Some("/home/dev/proj-pi-hand"),
        "[relay from claude] fix the greeting",
    ),
    (
        "0199a0dd-0000-7000-8000-00000000a0dd",
        "pi",
        Some("/home/dev/proj-pi-odd"),
        "Odd hand-made session",
    ),
    (
        "ses_db6a1a539ffeY9fU0B9TmElKxJ",
        "opencode",
        Some("/home/dev/proj-oc"),
        "## Summary",
    ),
    (
        "ses_db6a0bf41ffeVg2sdKoSaY2B12",
        "opencode",
        Some("/home/dev/proj-oc"),
        "Tool session",
    ),
    (
        "ses_db6a46e27ffelEahjBjRa0P6P1",
        "opencode",
        Some("/home/dev/proj-oc-hand"),
        "[relay] hand-placed session",
    ),
    (
        "ses_db6a00000ffeOddHandMade0001",
        "opencode",
        Some("/home/dev/proj-oc-odd"),
        "Odd hand-made session",
    ),
];

#[test]
fn list_all_reports_every_sample_with_agent_id_cwd_and_title() {
    let env = TestEnv::with_fixtures();
    let rows = env.list_json(&["list", "--all", "--json"]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), EXPECTED.len(), "one row per top-level session");
    for (id, agent, cwd, title) in EXPECTED {
        let row = rows
            .iter()
            .find(|r| r["id"] == *id)
            .unwrap_or_else(|| panic!("{id} missing from list"));
        assert_eq!(row["agent"], *agent, "{id}");
        assert_eq!(row["cwd"].as_str(), *cwd, "{id}");
        assert_eq!(row["title"], *title, "{id}");
    }
    // Newest first.
    let times: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["updated"]["utc"].as_str())
        .collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted);
}

#[test]
fn listing_counts_match_what_show_reads() {
    let env = TestEnv::with_fixtures();
    let rows = env.list_json(&["list", "--all", "--json"]);
    for row in rows.as_array().unwrap() {
        let id = row["id"].as_str().unwrap();
        let shown = env.json(&["show", id, "--json"]);
        assert_eq!(row["messages"], shown["messages"], "message count of {id}");
        for field in ["cwd", "title", "created", "updated"] {
            assert_eq!(row[field], shown["session"][field], "{field} of {id}");
        }
        if row["agent"] == "gemini" {
            // An id kept in several files resolves to the file the listing shows.
            assert_eq!(row["path"], shown["session"]["source_path"], "file of {id}");
        }
    }
}

#[test]
fn subagents_are_linked_not_listed() {
    let env = TestEnv::with_fixtures();
    let rows = env.list_json(&["list", "--all", "--json"]);
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .all(|r| !r["id"].as_str().unwrap().starts_with("agent-"))
    );
    let parent = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "4603a70c-807c-4d39-b768-221cd1b09dfd")
        .unwrap();
    assert_eq!(parent["subagents"], 1);
    let shown = env.json(&["show", "4603a70c", "--json"]);
    let subs = shown["session"]["subagents"].as_array().unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0]["id"], "agent-a98379a5cb7008309");
    assert_eq!(subs[0]["agent_type"], "general-purpose");
    // The subagent transcript itself reads as its own session linked to the parent.
    let sub = env.json(&["show", subs[0]["path"].as_str().unwrap(), "--json"]);
    assert_eq!(
        sub["session"]["parent_id"],
        "4603a70c-807c-4d39-b768-221cd1b09dfd"
    );
    assert_eq!(sub["session"]["format"], "claude-subagent");
    assert!(sub["messages"].as_u64().unwrap() >= 2);
}

#[test]
fn default_scope_is_the_current_directory() {
    let env = TestEnv::with_fixtures();
    let out = env.ok(&["list"]);
    assert!(out.contains("No sessions for"), "{out}");
    assert!(out.contains("--all"), "{out}");
    let rows = env.list_json(&["list", "--cwd", "/home/dev/projects/greeter", "--json"]);
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "01a22a5e-1137-71a3-a6d7-914d1c237ed7",
            "01a22a5d-3239-7e41-8a8f-0a5aa323f5f9",
            "01a22a5c-a0f8-7040-b2c7-f5dd0f81a290",
            "01a22a5b-8cb6-72e1-a33f-68d549eab431"
        ]
    );
    let claude_only = env.list_json(&[
        "list", "--all", "--agent", "claude", "--limit", "2", "--json",
    ]);
    let rows = claude_only.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["agent"] == "claude"));
}

#[test]
fn list_of_the_current_directory_uses_its_real_path() {
    let env = TestEnv::empty();
    let project = env.work().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let real = std::fs::canonicalize(&project).unwrap();
    let id = "0199c000-0000-7000-8000-00000000c0c0";
    let dir = env.codex_home().join("sessions/2026/11/01");
    std::fs::create_dir_all(&dir).unwrap();
    let meta = serde_json::json!({"timestamp":"2026-11-01T10:00:00.000Z","type":"session_meta","payload":{"id":id,"timestamp":"2026-11-01T10:00:00.000Z","cwd":real,"cli_version":"0.50.0","source":"cli"}});
    let user = serde_json::json!({"timestamp":"2026-11-01T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"here"}]}});
    std::fs::write(
        dir.join(format!("rollout-2026-11-01T10-00-00-{id}.jsonl")),
        format!("{meta}\n{user}\n"),
    )
    .unwrap();
    let rows = env
        .cmd()
        .current_dir(&project)
        .args(["list", "--json"])
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&rows.stdout).unwrap();
    assert_eq!(rows["sessions"][0]["id"], id);
    // `latest` picks it from that directory too.
    let out = env
        .cmd()
        .current_dir(&project)
        .args(["show", "latest", "--json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["session"]["id"], id);
}

#[test]
fn selectors_full_id_prefix_path_latest() {
    let env = TestEnv::with_fixtures();
    let by_id = env.json(&["show", "771ce1df-ae7a-4516-8192-f08c38166af2", "--json"]);
    assert_eq!(by_id["session"]["agent"], "claude");
    let by_prefix = env.json(&["show", "01a22a5c", "--json"]);
    assert_eq!(
        by_prefix["session"]["id"],
        "01a22a5c-a0f8-7040-b2c7-f5dd0f81a290"
    );
    let path = env
        .codex_home()
        .join("sessions/2026/11/29/rollout-2026-11-29T10-00-00-0199a000-0000-7000-8000-00000000e0e1.jsonl");
    let by_path = env.json(&["show", path.to_str().unwrap(), "--json"]);
    assert_eq!(
        by_path["session"]["id"],
        "0199a000-0000-7000-8000-00000000e0e1"
    );
    let latest = env.json(&[
        "show",
        "latest",
        "--cwd",
        "/home/dev/projects/greeter",
        "--json",
    ]);
    assert_eq!(
        latest["session"]["id"],
        "01a22a5e-1137-71a3-a6d7-914d1c237ed7"
    );
    let latest_codex = env.json(&[
        "show",
        "latest",
        "--agent",
        "codex",
        "--cwd",
        "/home/dev/projects/webapp",
        "--json",
    ]);
    assert_eq!(
        latest_codex["session"]["id"],
        "01a22a44-c657-7b40-b808-4c3ee4cefcb3"
    );
}

/// A full id selects the file the listing shows for it, for every session of every agent:
/// whether the id is settled from the file's name and first line (Claude Code, Codex) or only
/// by the listing (two Claude Code files with one name, a Codex rollout whose name and meta
/// line disagree, Gemini CLI).
#[test]
fn a_full_id_selects_the_file_the_listing_shows() {
    let env = TestEnv::with_fixtures();
    let projects = env.claude_home().join("projects");
    let interactive = "771ce1df-ae7a-4516-8192-f08c38166af2.jsonl";
    let original = std::fs::read_dir(&projects)
        .unwrap()
        .map(|e| e.unwrap().path().join(interactive))
        .find(|p| p.is_file())
        .expect("the interactive fixture");
    let elsewhere = projects.join("-home-dev-projects-elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::copy(&original, elsewhere.join(interactive)).unwrap();
    let rollout = env.codex_home().join(
        "sessions/2026/11/29/rollout-2026-11-29T10-00-00-0199a000-0000-7000-8000-00000000e0e1.jsonl",
    );
    let renamed = rollout
        .with_file_name("rollout-2026-11-29T10-00-00-0199a000-0000-7000-8000-0000000000a1.jsonl");
    std::fs::copy(&rollout, &renamed).unwrap();

    let listed = env.json(&["list", "--all", "--json"]);
    let rows = listed["sessions"].as_array().unwrap();
    let mut checked = 0;
    for row in rows.iter().filter(|r| r["parent_id"].is_null()) {
        let id = row["id"].as_str().unwrap();
        let shown = env.json(&["show", id, "--json"]);
        assert_eq!(
            shown["session"]["source_path"], row["path"],
            "`show {id}` read another file than the listing shows"
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} sessions listed");
    for agent in ["claude", "codex", "gemini"] {
        assert!(
            rows.iter().any(|r| r["agent"] == agent),
            "no {agent} session"
        );
    }
    // The renamed rollout's name holds an id no session has.
    let (code, err) = env.fails(&["show", "0199a000-0000-7000-8000-0000000000a1"]);
    assert_eq!(code, 3, "{err}");
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates() {
    let env = TestEnv::with_fixtures();
    let (code, err) = env.fails(&["show", "0199a000"]);
    assert_eq!(code, 3);
    assert!(err.contains("ambiguous"), "{err}");
    for id in [
        "0199a000-0000-7000-8000-000000000001",
        "0199a000-0000-7000-8000-00000000e0e0",
        "0199a000-0000-7000-8000-00000000e0e1",
    ] {
        assert!(err.contains(id), "{id} not among candidates:\n{err}");
    }
    let (code, err) = env.fails(&["show", "ffffffff"]);
    assert_eq!(code, 3);
    assert!(err.contains("no session matches"), "{err}");
    let (code, err) = env.fails(&["show", "latest"]);
    assert_eq!(code, 3, "{err}");
}

#[test]
fn a_missing_store_names_the_paths_tried_and_how_to_point_elsewhere() {
    let env = TestEnv::empty();
    // OpenCode not started yet: no database.
    std::fs::remove_file(env.home("opencode").join("opencode.db")).unwrap();
    let (code, err) = env.fails(&["list", "--all"]);
    assert_eq!(code, 4);
    assert!(
        err.contains(&env.claude_home().join("projects").display().to_string()),
        "{err}"
    );
    assert!(
        err.contains(&env.codex_home().join("sessions").display().to_string()),
        "{err}"
    );
    assert!(
        err.contains("CLAUDE_CONFIG_DIR") && err.contains("CODEX_HOME"),
        "{err}"
    );
    assert!(err.contains("session_root"), "{err}");
}

#[test]
fn home_precedence_is_flag_then_environment_then_config_file() {
    let env = TestEnv::with_fixtures();
    let other = env.dir.path().join("other-codex");
    crate::common::copy_tree(&fixtures().join("codex"), &other);
    // Remove one session from the other home so that the two homes can be told apart.
    let odd = "sessions/2026/11/28/rollout-2026-11-28T08-00-00-0199b111-2222-7333-8444-555566667777.jsonl";
    std::fs::remove_file(other.join(odd)).unwrap();
    let cfg = env.dir.path().join("config.yaml");
    std::fs::write(
        &cfg,
        format!("agents:\n  codex:\n    session_root: {}\n", other.display()),
    )
    .unwrap();
    let count = |args: &[&str], unset_env: bool| {
        let mut c = env.cmd();
        if unset_env {
            c.env_remove("CODEX_HOME");
        }
        let out = c.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["sessions"].as_array().unwrap().len()
    };
    let base = ["list", "--all", "--agent", "codex", "--json"];
    let full = count(&base, false);
    let cfg_s = cfg.to_str().unwrap();
    // Config file alone: the other home.
    assert_eq!(
        count(&[&["--config", cfg_s], &base[..]].concat(), true),
        full - 1
    );
    // Environment beats the file.
    assert_eq!(
        count(&[&["--config", cfg_s], &base[..]].concat(), false),
        full
    );
    // The flag beats the environment.
    let flag = format!("codex={}", other.display());
    assert_eq!(
        count(&[&["--home", &flag], &base[..]].concat(), false),
        full - 1
    );
    // SESSION_RELAY_CONFIG names the file when --config does not.
    let out = env
        .cmd()
        .env_remove("CODEX_HOME")
        .env("SESSION_RELAY_CONFIG", &cfg)
        .args(base)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sessions"].as_array().unwrap().len(), full - 1);
}

#[test]
fn a_malformed_config_names_file_line_and_key() {
    let env = TestEnv::with_fixtures();
    let cfg = env.dir.path().join("bad.yaml");
    std::fs::write(&cfg, "agents:\n  claude:\n    context_window: lots\n").unwrap();
    let (code, err) = env.fails(&["--config", cfg.to_str().unwrap(), "list"]);
    assert_eq!(code, 1);
    assert!(err.contains(cfg.to_str().unwrap()), "{err}");
    assert!(err.contains(":3:"), "line number missing: {err}");
    assert!(err.contains("context_window"), "{err}");

    std::fs::write(&cfg, "relay:\n  recent_turn: 3\n").unwrap();
    let (_, err) = env.fails(&["--config", cfg.to_str().unwrap(), "list"]);
    assert!(err.contains("recent_turn") && err.contains(":2:"), "{err}");

    std::fs::write(&cfg, "agents:\n  aider:\n    context_window: 10\n").unwrap();
    let (_, err) = env.fails(&["--config", cfg.to_str().unwrap(), "list"]);
    assert!(err.contains("aider") && err.contains(":2"), "{err}");

    std::fs::write(&cfg, "agents:\n  codex:\n    tokenizer: gpt2\n").unwrap();
    let (_, err) = env.fails(&["--config", cfg.to_str().unwrap(), "list"]);
    assert!(err.contains("tokenizer") && err.contains(":3:"), "{err}");

    std::fs::write(&cfg, "agents:\n  codex:\n    safety_ratio: 1.5\n").unwrap();
    let (_, err) = env.fails(&["--config", cfg.to_str().unwrap(), "list"]);
    assert!(err.contains("safety_ratio"), "{err}");

    let missing = env.dir.path().join("nope.yaml");
    let (_, err) = env.fails(&["--config", missing.to_str().unwrap(), "list"]);
    assert!(err.contains("nope.yaml"), "{err}");
}

#[test]
fn the_example_config_is_valid_and_matches_the_defaults() {
    let env = TestEnv::with_fixtures();
    let example = fixtures().join("../config.example.yaml");
    env.ok(&["--config", example.to_str().unwrap(), "list", "--all"]);
    let text = std::fs::read_to_string(&example).unwrap();
    for key in [
        "session_root",
        "context_window",
        "reserved_tokens",
        "recent_turns",
        "summary_max_tokens",
        "tool_call_keep_recent",
        "safety_ratio",
        "tokenizer",
        "archive",
        "archive_dir",
    ] {
        assert!(
            text.contains(key),
            "config.example.yaml does not document {key}"
        );
    }
    // Its values are the defaults: the same settings as an empty config file.
    let example_cfg = session_relay::config::Config::load(&session_relay::config::Overrides {
        config_file: Some(example.clone()),
        homes: Vec::new(),
    })
    .unwrap();
    let defaults = env.config();
    for agent in session_relay::adapters::names() {
        let (a, d) = (example_cfg.agent(agent), defaults.agent(agent));
        assert_eq!(
            (
                a.context_window,
                a.reserved_tokens,
                a.safety_ratio,
                a.tokenizer
            ),
            (
                d.context_window,
                d.reserved_tokens,
                d.safety_ratio,
                d.tokenizer
            ),
            "{agent}: config.example.yaml is not the defaults"
        );
    }
    let (r, d) = (&example_cfg.relay, &defaults.relay);
    assert_eq!(
        (
            r.recent_turns,
            r.summary_max_tokens,
            r.tool_call_keep_recent
        ),
        (
            d.recent_turns,
            d.summary_max_tokens,
            d.tool_call_keep_recent
        )
    );
    assert_eq!(
        (example_cfg.archive.kind, &example_cfg.archive.dir),
        (defaults.archive.kind, &defaults.archive.dir)
    );
}

#[test]
fn archived_and_compressed_codex_sessions_are_found() {
    let env = TestEnv::with_fixtures();
    let rows = env.list_json(&["list", "--all", "--json"]);
    let archived = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "0199a000-0000-7000-8000-0000000a0c1d")
        .unwrap();
    assert_eq!(archived["archived"], true);

    // A .jsonl.zst rollout reads like the plain one.
    let src = fixtures().join(
        "codex/sessions/2026/11/30/rollout-2026-11-30T02-50-43-01a22a5c-a0f8-7040-b2c7-f5dd0f81a290.jsonl",
    );
    let zenv = TestEnv::empty();
    let dir = zenv.codex_home().join("sessions/2026/11/30");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(&src).unwrap();
    let compressed = zstd::encode_all(&bytes[..], 3).unwrap();
    std::fs::write(
        dir.join("rollout-2026-11-30T02-50-43-01a22a5c-a0f8-7040-b2c7-f5dd0f81a290.jsonl.zst"),
        compressed,
    )
    .unwrap();
    let z = zenv.json(&["show", "01a22a5c", "--json"]);
    let plain = env.json(&["show", "01a22a5c", "--json"]);
    assert_eq!(z["messages"], plain["messages"]);
    assert_eq!(z["counts"], plain["counts"]);
    assert_eq!(z["session"]["todos"], plain["session"]["todos"]);
    let rows = zenv.list_json(&["list", "--all", "--json"]);
    assert_eq!(rows[0]["messages"], plain["messages"]);
}

#[test]
fn the_listing_cache_never_serves_a_changed_file() {
    let mut env = TestEnv::with_fixtures();
    let first = env.list_json(&["list", "--all", "--json"]);
    let cache = env.dir.path().join("state/session-relay/list-cache.json");
    assert!(
        cache.exists(),
        "a listing leaves its cache in the state dir"
    );
    assert_eq!(
        env.list_json(&["list", "--all", "--json"]),
        first,
        "a warm listing says the same"
    );
    // The agent appends to a session: the next listing sees it.
    env.removing_stores();
    let path = env.codex_home().join(
        "sessions/2026/11/29/rollout-2026-11-29T10-00-00-0199a000-0000-7000-8000-00000000e0e1.jsonl",
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"timestamp\":\"2026-11-29T11:00:00.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"one more\"}]}}\n",
    )
    .unwrap();
    drop(f);
    let after = env.list_json(&["list", "--all", "--json"]);
    let row = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == "0199a000-0000-7000-8000-00000000e0e1")
            .unwrap()
            .clone()
    };
    assert_eq!(row(&after)["messages"], 3);
    assert_eq!(row(&after)["updated"]["utc"], "2026-11-29T11:00:00.000Z");
    // A damaged cache is ignored, not fatal.
    std::fs::write(&cache, "not json").unwrap();
    assert_eq!(
        row(&env.list_json(&["list", "--all", "--json"]))["messages"],
        3
    );
}

/// `list` and `status` fill the width they are given (the terminal's, else `COLUMNS`) and no
/// more: a title is cut at the edge, not at a fixed 60 characters, and no row wraps; every
/// column starts in one place whatever its cells hold.
#[test]
fn tables_fill_the_width_and_keep_their_columns() {
    use unicode_width::UnicodeWidthStr;
    let env = TestEnv::with_fixtures();
    for command in ["list", "status"] {
        let at = |columns: &str| -> String {
            let out = env
                .cmd()
                .env("COLUMNS", columns)
                .args([command, "--all"])
                .output()
                .unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap()
        };
        let wide = at("200");
        let longest = wide.lines().map(|l| l.width()).max().unwrap();
        assert!(
            longest > 100,
            "{command}: a 200-column screen is used:\n{wide}"
        );
        assert!(longest <= 200, "{command}:\n{wide}");
        let header = wide.lines().next().unwrap();
        let title_at = header.find("TITLE").unwrap();
        for narrow in ["60", "80"] {
            let text = at(narrow);
            let columns: usize = narrow.parse().unwrap();
            for l in text
                .lines()
                .filter(|l| !l.trim_start().starts_with("resume:"))
            {
                assert!(
                    l.width() <= columns.max(title_at + 20),
                    "{command} at {narrow}: {l:?}"
                );
            }
        }
        // Rows start their title where the header does (the relayed marker included).
        for l in wide.lines().skip(1).filter(|l| !l.starts_with(' ')) {
            let cells: Vec<&str> = l[..title_at]
                .split("  ")
                .filter(|c| !c.is_empty())
                .collect();
            assert!(cells.len() >= 4, "{command}: {l:?}");
            assert!(
                l[..title_at].ends_with("  "),
                "{command}: the title starts at column {title_at}: {l:?}"
            );
        }
    }
}

/// Every documented field is in every report, `null`, `false` or `0` when empty: a script reads
/// `row["relay"]` without first asking whether it is there.
#[test]
fn json_reports_carry_every_documented_field() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let rows = env.list_json(&["list", "--all", "--json"]);
    let rows = rows.as_array().unwrap();
    assert!(rows.len() > 20);
    for row in rows {
        for key in [
            "id",
            "agent",
            "path",
            "cwd",
            "title",
            "created",
            "updated",
            "messages",
            "size",
            "archived",
            "parent_id",
            "subagents",
            "relay_of",
            "relay",
        ] {
            assert!(row.get(key).is_some(), "list row without {key}: {row}");
        }
    }
    let shown = env.json(&["show", "771ce1df", "--json"]);
    assert!(shown.get("context_check").is_some(), "{shown}");
    let relayed = env.json(&[
        "relay", "771ce1df", "--to", "codex", "--cwd", &proj, "--json",
    ]);
    assert!(relayed.get("relayed_at").is_some(), "{relayed}");
    // A hook's run that failed is logged with every field too.
    let out = env
        .cmd()
        .args(["hook", "run", "--to", "codex"])
        .write_stdin("not json")
        .output()
        .unwrap();
    assert!(out.status.success());
    let hooks = env.json(&["hooks", "status", "--json"]);
    let run = &hooks["recent"][0];
    assert_eq!(run["outcome"], "error", "{hooks}");
    for key in ["target", "resume_command", "session_id", "transcript_path"] {
        assert!(run.get(key).is_some(), "a logged run without {key}: {run}");
    }
    let status = env.json(&["status", "--all", "--json"]);
    for s in status["sessions"].as_array().unwrap() {
        if let Some(c) = s.get("context").filter(|c| !c.is_null()) {
            assert!(c.get("model").is_some(), "{c}");
        }
    }
}
