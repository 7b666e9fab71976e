//! `hooks install|uninstall|status` on settings files of every shape, and `hook run` as the
//! agents run it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::TestEnv;

fn settings(env: &TestEnv) -> PathBuf {
    env.claude_home().join("settings.json")
}

/// The file's JSON without session-relay's handlers, and without empty event lists and an
/// empty `hooks` object (on both sides of a comparison).
fn without_ours(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(events) = v.get_mut("hooks").and_then(Value::as_object_mut) {
        for groups in events.values_mut() {
            if let Some(gs) = groups.as_array_mut() {
                for g in gs.iter_mut() {
                    if let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) {
                        hs.retain(|h| {
                            !h["command"]
                                .as_str()
                                .unwrap_or("")
                                .contains("session-relay hook run")
                        });
                    }
                }
                gs.retain(|g| g["hooks"].as_array().is_none_or(|h| !h.is_empty()));
            }
        }
        events.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
        if events.is_empty() {
            v.as_object_mut().unwrap().remove("hooks");
        }
    }
    v
}

fn ours<'a>(v: &'a Value, event: &str) -> Vec<&'a Value> {
    v["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
        .filter(|h| {
            h["command"]
                .as_str()
                .unwrap_or("")
                .contains("session-relay hook run")
        })
        .collect()
}

/// Settings files people have: other keys and hooks, odd layouts.
const SHAPES: &[(&str, &str)] = &[
    (
        "other hooks, four spaces",
        "{\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n    \"hooks\": {\n        \"Stop\": [\n            {\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}\n        ],\n        \"PreCompact\": [\n            {\n                \"matcher\": \"auto\",\n                \"hooks\": [\n                    {\n                        \"type\": \"command\",\n                        \"command\": \"~/bin/save-transcript.sh\",\n                        \"timeout\": 5\n                    }\n                ]\n            }\n        ]\n    }\n}\n",
    ),
    ("one line", "{\"model\":\"sonnet\",\"env\":{\"A\":\"1\"}}"),
    (
        "tabs and CRLF",
        "{\r\n\t\"theme\": \"dark\",\r\n\t\"hooks\": {\r\n\t\t\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"guard\"}]}]\r\n\t}\r\n}\r\n",
    ),
    (
        "odd spacing, unicode, no final newline",
        "{ \"statusLine\" : { \"type\" : \"command\" , \"command\" : \"echo ✓ \\u00e9\" } ,\n  \"hooks\" : { } }",
    ),
    ("empty object", "{}\n"),
];

#[test]
fn install_and_uninstall_round_trip_on_every_shape() {
    for (what, original) in SHAPES {
        let env = TestEnv::empty();
        let file = settings(&env);
        std::fs::write(&file, original).unwrap();
        let before: Value = serde_json::from_str(original).unwrap();

        let r = env.json(&["hooks", "install", "--agent", "claude", "--json"]);
        assert_eq!(r["changed"], true, "{what}");
        assert_eq!(r["created_file"], false, "{what}");
        let installed = std::fs::read_to_string(&file).unwrap();
        let after: Value = serde_json::from_str(&installed).unwrap();
        assert_eq!(
            without_ours(&after),
            without_ours(&before),
            "{what}:\n{installed}"
        );
        let hooks = ours(&after, "PreCompact");
        assert_eq!(hooks.len(), 1, "{what}");
        assert_eq!(hooks[0]["type"], "command");
        assert_eq!(hooks[0]["timeout"], 60);
        assert!(
            hooks[0]["command"]
                .as_str()
                .unwrap()
                .contains("session-relay hook run --to codex --home codex="),
            "{}",
            hooks[0]["command"]
        );
        // Every byte of the original is still there, in order: only text was added.
        let mut rest = installed.as_str();
        for c in original.chars() {
            let at = rest
                .find(c)
                .unwrap_or_else(|| panic!("{what}: lost {c:?}:\n{installed}"));
            rest = &rest[at + c.len_utf8()..];
        }
        if original.contains("\r\n") {
            assert!(
                !installed.replace("\r\n", "").contains('\n'),
                "{what}: LF added"
            );
        }
        // The backup is the original.
        let backup = PathBuf::from(r["backup"].as_str().unwrap());
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), *original);

        // Twice adds nothing.
        let again = env.json(&["hooks", "install", "--agent", "claude", "--json"]);
        assert_eq!(again["changed"], false, "{what}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), installed, "{what}");

        let status = env.json(&["hooks", "status", "--json"]);
        let claude = status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "claude")
            .unwrap();
        assert_eq!(claude["hooks"][0]["event"], "PreCompact", "{what}");
        assert_eq!(claude["hooks"][0]["to"], "codex");
        assert_eq!(claude["hooks"][0]["trust"], "not_needed");

        // Nothing else changed: uninstall gives the file back byte for byte.
        let u = env.json(&["hooks", "uninstall", "--agent", "claude", "--json"]);
        assert_eq!(u["removed"], 1, "{what}");
        assert_eq!(u["restored"], true, "{what}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), *original, "{what}");
        let none = env.json(&["hooks", "uninstall", "--agent", "claude", "--json"]);
        assert_eq!(none["removed"], 0);
    }
}

#[test]
fn uninstall_after_other_changes_removes_only_its_own_hook() {
    let env = TestEnv::empty();
    let file = settings(&env);
    let (_, original) = SHAPES[0];
    std::fs::write(&file, original).unwrap();
    env.ok(&["hooks", "install", "--agent", "claude"]);
    // The user (or Claude Code) changes something else meanwhile.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["model"] = json!("haiku");
    v["hooks"]["Stop"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "say bye"}));
    std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let u = env.json(&["hooks", "uninstall", "--agent", "claude", "--json"]);
    assert_eq!(u["removed"], 1);
    assert_eq!(u["restored"], false);
    let now: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(now, without_ours(&v));
    assert_eq!(now["model"], "haiku");
    assert_eq!(
        now["hooks"]["PreCompact"][0]["hooks"][0]["command"],
        "~/bin/save-transcript.sh"
    );
    assert_eq!(now["hooks"]["Stop"][0]["hooks"][1]["command"], "say bye");
    // The backup of the file before the install is kept and said.
    assert!(
        u["notes"][0]
            .as_str()
            .unwrap()
            .contains(".session-relay.bak"),
        "{u}"
    );
}

#[test]
fn a_missing_file_is_created_and_removed_again() {
    let env = TestEnv::empty();
    let file = settings(&env);
    let r = env.json(&[
        "hooks",
        "install",
        "--agent",
        "claude",
        "--session-end",
        "--json",
    ]);
    assert_eq!(r["created_file"], true);
    assert!(r["backup"].is_null());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(ours(&v, "PreCompact").len(), 1);
    assert_eq!(ours(&v, "SessionEnd").len(), 1);
    // Installing again without --session-end takes that event out again.
    env.ok(&["hooks", "install", "--agent", "claude"]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(ours(&v, "SessionEnd").len(), 0);
    assert!(v["hooks"].get("SessionEnd").is_none(), "{v}");
    // --to and --budget change the one hook in place.
    env.ok(&[
        "hooks", "install", "--agent", "claude", "--to", "claude", "--budget", "5000",
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let h = ours(&v, "PreCompact");
    assert_eq!(h.len(), 1);
    assert!(
        h[0]["command"]
            .as_str()
            .unwrap()
            .contains("--to claude --budget 5000")
    );
    let u = env.json(&["hooks", "uninstall", "--agent", "claude", "--json"]);
    assert_eq!(u["restored"], true);
    assert!(!file.exists());
}

#[test]
fn a_malformed_settings_file_is_refused_and_left_alone() {
    for bad in [
        "{\n  // Claude Code refuses comments too\n  \"model\": \"opus\"\n}\n",
        "{\"model\": \"opus\",}",
        "{\"hooks\": []}",
        "[]",
        "{\"hooks\": {\"PreCompact\": {\"command\": \"x\"}}}",
    ] {
        let env = TestEnv::empty();
        let file = settings(&env);
        std::fs::write(&file, bad).unwrap();
        let (code, err) = env.fails(&["hooks", "install", "--agent", "claude"]);
        assert_eq!(code, 1, "{bad}");
        assert!(err.contains(&file.display().to_string()), "{err}");
        assert!(err.contains("nothing was changed"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);
        let (code, _) = env.fails(&["hooks", "uninstall", "--agent", "claude"]);
        assert_eq!(code, 1);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);
        let names: Vec<String> = std::fs::read_dir(env.claude_home())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("bak")), "{names:?}");
        // status says so, and goes on.
        let s = env.json(&["hooks", "status", "--json"]);
        assert!(
            s["agents"][0]["error"]
                .as_str()
                .unwrap()
                .contains("settings.json")
        );
    }
}

/// Whether `hooks status --json` reports any session-relay hook for `agent`, and its error.
fn status_of(env: &TestEnv, agent: &str) -> (usize, String) {
    let s = env.json(&["hooks", "status", "--json"]);
    let a = s["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == agent)
        .unwrap()
        .clone();
    (
        a["hooks"].as_array().map_or(0, Vec::len),
        a["error"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn a_key_twice_where_the_agent_reads_the_other_one_is_refused_and_not_reported_as_running() {
    // Session-relay's own handler, as an install puts it (with a program that exists, so that
    // only where it stands decides whether it runs).
    let exe = env!("CARGO_BIN_EXE_session-relay");
    let ours = format!(
        "{{\"type\": \"command\", \"command\": \"{exe} hook run --to codex\", \"timeout\": 60}}"
    );
    let other = "{\"type\": \"command\", \"command\": \"notify-send done\"}";
    // Each file: where the agent's parser (the last of a key, for JSON.parse) finds no
    // session-relay hook, though the first of the key holds one; and the key with its line.
    let cases = [
        (
            format!(
                "{{\n  \"hooks\": {{\"PreCompact\": [{{\"hooks\": [{ours}]}}]}},\n  \"model\": \"opus\",\n  \"hooks\": {{\"Stop\": [{{\"hooks\": [{other}]}}]}}\n}}\n"
            ),
            "`hooks` appears twice in one object (lines 2 and 4)",
        ),
        (
            format!(
                "{{\"hooks\": {{\n  \"PreCompact\": [{{\"hooks\": [{ours}]}}],\n  \"PreCompact\": [{{\"hooks\": [{other}]}}]\n}}}}\n"
            ),
            "`hooks.PreCompact` appears twice in one object (lines 2 and 3)",
        ),
        (
            format!(
                "{{\"hooks\": {{\"PreCompact\": [{{\"hooks\": [{{\"type\": \"command\",\n  \"command\": \"{exe} hook run --to codex\",\n  \"command\": \"notify-send done\"}}]}}]}}}}\n"
            ),
            "`hooks.PreCompact[0].hooks[0].command` appears twice in one object (lines 2 and 3)",
        ),
    ];
    for (text, said) in &cases {
        // The premise: the agent's parser finds no session-relay hook in the file.
        let agent_reads: Value = serde_json::from_str(text).unwrap();
        assert!(ours_of(&agent_reads).is_empty(), "{text}");

        let env = TestEnv::empty();
        let file = settings(&env);
        std::fs::write(&file, text).unwrap();
        // status and doctor do not say it runs, and say why.
        let (hooks, error) = status_of(&env, "claude");
        assert_eq!(hooks, 0, "{text}");
        assert!(error.contains(said), "{error}");
        assert!(error.contains(&file.display().to_string()), "{error}");
        let shown = env.ok(&["hooks", "status"]);
        assert!(!shown.contains("runs"), "{shown}");
        let out = env.cmd().args(["doctor", "--json"]).output().unwrap();
        let doctor: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            !doctor["hooks"]["hooks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|h| h["agent"] == "claude"),
            "{doctor:#}"
        );
        assert!(
            doctor["problems"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["agent"] == "claude" && p["problem"].as_str().unwrap().contains(said)),
            "{doctor:#}"
        );
        // install and uninstall refuse it, naming the file, and leave it as it is.
        for args in [
            &["hooks", "install", "--agent", "claude"][..],
            &["hooks", "uninstall", "--agent", "claude"][..],
        ] {
            let (code, err) = env.fails(args);
            assert_eq!(code, 1, "{args:?}");
            assert!(err.contains(&file.display().to_string()), "{err}");
            assert!(err.contains(said), "{err}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), *text);
        }
    }
    // Codex's parser refuses such a file whole; so does session-relay.
    let env = TestEnv::empty();
    let file = env.codex_home().join("hooks.json");
    std::fs::write(&file, &cases[1].0).unwrap();
    let (hooks, error) = status_of(&env, "codex");
    assert_eq!(hooks, 0);
    assert!(error.contains(cases[1].1), "{error}");
    let (code, _) = env.fails(&["hooks", "install", "--agent", "codex"]);
    assert_eq!(code, 1);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), cases[1].0);
}

/// Every session-relay handler in a parsed hooks file, of any event.
fn ours_of(v: &Value) -> Vec<&Value> {
    v["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|events| events.keys())
        .flat_map(|event| ours(v, event))
        .collect()
}

#[test]
fn codex_hooks_need_trust_and_status_reads_it() {
    let env = TestEnv::empty();
    let file = env.codex_home().join("hooks.json");
    let original = "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\n        \"matcher\": \"startup\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"echo hi\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    std::fs::write(&file, original).unwrap();
    let r = env.json(&["hooks", "install", "--agent", "codex", "--json"]);
    assert_eq!(r["hooks"][0]["trust"], "untrusted");
    assert!(
        r["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains("--to claude")
    );
    assert!(
        r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("/hooks")),
        "{r}"
    );
    let text = env.ok(&["hooks", "status"]);
    assert!(text.contains("NOT trusted yet"), "{text}");
    // Codex records trust by the handler's key: path, event, group, handler.
    let key = format!("{}:pre_compact:0:0", file.display());
    std::fs::write(
        env.codex_home().join("config.toml"),
        format!("model = \"gpt-5.5\"\n\n[hooks.state.\"{key}\"]\ntrusted_hash = \"sha256:abc\"\n"),
    )
    .unwrap();
    let s = env.json(&["hooks", "status", "--json"]);
    let codex = s["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "codex")
        .unwrap();
    assert_eq!(codex["hooks"][0]["trust"], "trusted", "{s}");
    let u = env.json(&["hooks", "uninstall", "--agent", "codex", "--json"]);
    assert_eq!(u["restored"], true);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

fn run_hook(env: &TestEnv, to: &str, input: &str) -> (i32, String) {
    let out = env
        .cmd()
        .args(["hook", "run", "--to", to])
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn payload(path: &Path, id: &str, event: &str) -> String {
    json!({
        "session_id": id,
        "transcript_path": path,
        "cwd": "/home/dev/projects/interactive",
        "hook_event_name": event,
        "trigger": "manual",
    })
    .to_string()
}

#[test]
fn hook_run_relays_the_session_once_and_always_exits_0() {
    let env = TestEnv::with_fixtures();
    let source = env
        .claude_home()
        .join("projects/-home-dev-projects-interactive/771ce1df-ae7a-4516-8192-f08c38166af2.jsonl");
    let input = payload(
        &source,
        "771ce1df-ae7a-4516-8192-f08c38166af2",
        "PreCompact",
    );
    let (code, out) = run_hook(&env, "codex", &input);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1, "{out}");
    let id = out
        .trim()
        .strip_prefix("Relayed to Codex CLI: codex resume ")
        .unwrap_or_else(|| panic!("{out}"));
    let listed = env.list_json(&["list", "--agent", "codex", "--all", "--json"]);
    let relayed = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap();
    assert_eq!(relayed["relay"]["from"]["agent"], "claude");
    // Idempotent.
    let (code, out) = run_hook(&env, "codex", &input);
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        format!("Already relayed to Codex CLI: codex resume {id}")
    );

    // A Codex session's hook answers in Codex's JSON.
    let rollout = env.codex_home().join(
        "sessions/2026/11/30/rollout-2026-11-30T02-52-17-01a22a5e-1137-71a3-a6d7-914d1c237ed7.jsonl",
    );
    let (code, out) = run_hook(
        &env,
        "claude",
        &payload(
            &rollout,
            "01a22a5e-1137-71a3-a6d7-914d1c237ed7",
            "PreCompact",
        ),
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .starts_with("Relayed to Claude Code: cd "),
        "{v}"
    );

    // Whatever goes wrong, the agent goes on.
    for bad in [
        "",
        "{not json",
        "{\"session_id\": \"ffffffff-nope\"}",
        "[1]",
    ] {
        let (code, out) = run_hook(&env, "codex", bad);
        assert_eq!(code, 0, "{bad}");
        assert!(
            out.starts_with("session-relay could not relay this session to Codex CLI: "),
            "{bad}: {out}"
        );
        assert_eq!(out.lines().count(), 1);
    }
    let broken_config = env
        .cmd()
        .args([
            "--config",
            "/nonexistent/config.yaml",
            "hook",
            "run",
            "--to",
            "codex",
        ])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert_eq!(broken_config.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&broken_config.stdout).contains("could not relay"));

    // Every run is in the log, and hooks status shows the newest.
    let log =
        std::fs::read_to_string(env.dir.path().join("state/session-relay/hooks.log")).unwrap();
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 8);
    assert_eq!(entries[0]["outcome"], "relayed");
    assert_eq!(entries[0]["event"], "PreCompact");
    assert_eq!(entries[0]["trigger"], "manual");
    assert_eq!(entries[0]["target"]["id"], id);
    assert_eq!(entries[1]["outcome"], "already_relayed");
    assert_eq!(entries[3]["outcome"], "error");
    let status = env.ok(&["hooks", "status"]);
    assert!(status.contains("Recent hook runs"), "{status}");
}

/// `hook run ARGS` with `input` on standard input: (exit code, standard output).
fn run_hook_as(env: &TestEnv, args: &[&str], input: &str) -> (i32, String) {
    let out = env
        .cmd()
        .args(["hook", "run"])
        .args(args)
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn session_files_under(dir: &Path) -> usize {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .count()
}

#[test]
fn hook_run_relays_only_a_transcript_inside_the_calling_agents_store() {
    let env = TestEnv::with_fixtures();
    let id = "771ce1df-ae7a-4516-8192-f08c38166af2";
    let project = env
        .claude_home()
        .join("projects/-home-dev-projects-interactive");
    let inside = project.join(format!("{id}.jsonl"));
    // The same session, outside every agent's store.
    let outside_dir = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside_dir).unwrap();
    let outside = outside_dir.join("5e55105e-0000-4000-8000-000000000001.jsonl");
    std::fs::copy(&inside, &outside).unwrap();
    // A symlink in the store to it, and a path into the store that `..` leads out of.
    let link = project.join("5e55105e-0000-4000-8000-000000000002.jsonl");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let dotdot = env
        .claude_home()
        .join("projects/../../outside/5e55105e-0000-4000-8000-000000000001.jsonl");
    let codex_sessions = env.codex_home().join("sessions");
    let before = session_files_under(&codex_sessions);

    let not_in_store = "session store, so it was not relayed";
    let refused = [
        // A hook installed by an older version says not which agent runs it.
        (
            &["--to", "codex"][..],
            payload(&outside, id, "PreCompact"),
            not_in_store,
        ),
        (
            &["--to", "codex", "--from", "claude"][..],
            payload(&outside, id, "PreCompact"),
            not_in_store,
        ),
        (
            &["--to", "codex", "--from", "claude"][..],
            payload(&link, id, "PreCompact"),
            not_in_store,
        ),
        (
            &["--to", "codex"][..],
            payload(&dotdot, id, "PreCompact"),
            not_in_store,
        ),
        // A session id that is a path is no way around it.
        (
            &["--to", "codex", "--from", "claude"][..],
            json!({"session_id": outside, "hook_event_name": "PreCompact"}).to_string(),
            "is not a session id",
        ),
        // A Claude Code session, but the hook is Codex's.
        (
            &["--to", "claude", "--from", "codex"][..],
            payload(&inside, id, "PreCompact"),
            "is not in Codex CLI's session store, so it was not relayed",
        ),
    ];
    for (args, input, why) in &refused {
        let (code, out) = run_hook_as(&env, args, input);
        assert_eq!(code, 0, "{args:?} {input}");
        assert_eq!(out.lines().count(), 1, "{out}");
        let line = if args.ends_with(&["--from", "codex"]) {
            // Codex reads the hook's answer as JSON.
            let v: Value =
                serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
            v["systemMessage"].as_str().unwrap().to_string()
        } else {
            out.trim().to_string()
        };
        assert!(
            line.starts_with("session-relay could not relay this session to ")
                && line.contains(why),
            "{args:?} {input}: {line}"
        );
        assert_eq!(
            session_files_under(&codex_sessions),
            before,
            "{args:?} {input}"
        );
    }
    // Through the symlink and `..`, the line says where the path leads.
    let (_, out) = run_hook_as(&env, &["--to", "codex"], &payload(&link, id, "PreCompact"));
    let real = std::fs::canonicalize(&outside).unwrap();
    assert!(
        out.contains(&format!("(that is {})", real.display())),
        "{out}"
    );
    assert_eq!(session_files_under(&codex_sessions), before);

    // The calling agent's own session is relayed, by its path or by its id.
    let (code, out) = run_hook_as(
        &env,
        &["--to", "codex", "--from", "claude"],
        &payload(&inside, id, "PreCompact"),
    );
    assert_eq!(code, 0);
    assert!(
        out.starts_with("Relayed to Codex CLI: codex resume "),
        "{out}"
    );
    let by_id = json!({"session_id": id, "hook_event_name": "PreCompact"}).to_string();
    let (_, out) = run_hook_as(&env, &["--to", "codex", "--from", "claude"], &by_id);
    assert!(out.starts_with("Already relayed to Codex CLI: "), "{out}");
    assert_eq!(session_files_under(&codex_sessions), before + 1);
}

#[test]
fn the_installed_command_runs_as_the_agent_would_run_it() {
    // The agent runs the command line through a shell, with the hook's JSON on stdin and
    // without this shell's environment (here: no CODEX_HOME, no CLAUDE_CONFIG_DIR).
    let env = TestEnv::with_fixtures();
    env.ok(&["hooks", "install", "--agent", "claude"]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(settings(&env)).unwrap()).unwrap();
    let command = ours(&v, "PreCompact")[0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(command.contains("--home codex="), "{command}");
    // It says which agent runs it, whose store alone it relays from, and where that store is.
    assert!(
        command.contains(" --from claude --home claude="),
        "{command}"
    );
    let source = env
        .claude_home()
        .join("projects/-home-dev-projects-interactive/771ce1df-ae7a-4516-8192-f08c38166af2.jsonl");
    let out = env
        .cmd_of("sh")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .args(["-c", &command])
        .write_stdin(payload(&source, "771ce1df", "PreCompact"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(
        line.starts_with("Relayed to Codex CLI: codex resume "),
        "{line}"
    );
    let id = line.trim().rsplit(' ').next().unwrap();
    assert!(
        walkdir::WalkDir::new(env.codex_home().join("sessions"))
            .into_iter()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().contains(id))
    );
}

/// The file a hook relays is the one its check judged: a link in the store is followed once,
/// and the relay reads the file it led to, so that a link turned elsewhere after the check
/// leads nowhere new. The ledger names that file.
#[test]
fn hook_run_relays_the_file_it_judged_not_the_link() {
    let env = TestEnv::with_fixtures();
    let id = "771ce1df-ae7a-4516-8192-f08c38166af2";
    let project = env
        .claude_home()
        .join("projects/-home-dev-projects-interactive");
    let real = project.join(format!("{id}.jsonl"));
    let link = project.join("5e55105e-0000-4000-8000-000000000003.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = env
        .cmd()
        .args(["hook", "run", "--to", "codex", "--from", "claude"])
        .write_stdin(payload(&link, id, "PreCompact"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("Relayed to Codex CLI"), "{said}");
    let ledger =
        std::fs::read_to_string(env.dir.path().join("state/session-relay/ledger.jsonl")).unwrap();
    let entry: serde_json::Value = serde_json::from_str(ledger.lines().next().unwrap()).unwrap();
    assert_eq!(
        entry["source"]["path"],
        std::fs::canonicalize(&real).unwrap().to_str().unwrap(),
        "{entry}"
    );
}

/// Claude Code runs no hook when its settings say `"disableAllHooks": true` (the last of the
/// key, given twice, as its JSON.parse reads it): `hooks status` and `doctor` say so instead of
/// "runs"; `false`, or the key absent, runs it.
#[test]
fn hooks_turned_off_by_the_agents_settings_are_said_to_be_off() {
    for (text, off) in [
        ("{\"disableAllHooks\": true}", true),
        (
            "{\"disableAllHooks\": false, \"model\": \"x\", \"disableAllHooks\": true}",
            true,
        ),
        (
            "{\"disableAllHooks\": true, \"disableAllHooks\": false}",
            false,
        ),
        ("{\"model\": \"x\"}", false),
    ] {
        let env = TestEnv::with_fixtures();
        std::fs::write(settings(&env), text).unwrap();
        env.ok(&["hooks", "install", "--agent", "claude"]);
        let status = env.json(&["hooks", "status", "--json"]);
        let claude = status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "claude")
            .unwrap();
        let trust = &claude["hooks"][0]["trust"];
        assert_eq!(*trust == "disabled", off, "{text}: {trust}");
        let doctor = env.json(&["doctor", "--json"]);
        assert_eq!(
            doctor["problems"].to_string().contains("disableAllHooks"),
            off,
            "{text}: {doctor}"
        );
    }
}

/// A Codex config.toml that is not TOML (Codex refuses to start with it) tells nothing about
/// the trust, and session-relay says so: install, status and doctor name it, `--trust` fails
/// on the line before starting Codex, and the file is never written.
#[test]
fn a_codex_config_that_is_not_toml_leaves_the_trust_unknown_and_the_file_alone() {
    let env = TestEnv::with_fixtures();
    let config = env.codex_home().join("config.toml");
    let text = "model = \"x\"\r\n\r\n[hooks.state]\r\n\"a\" = { trusted_hash = \"sha256:00\" \r\n";
    std::fs::write(&config, text).unwrap();
    let r = env.json(&["hooks", "install", "--agent", "codex", "--json"]);
    assert_eq!(r["hooks"][0]["trust"], "unknown", "{r}");
    assert!(r["notes"].to_string().contains("do not parse"), "{r}");
    let status = env.ok(&["hooks", "status"]);
    assert!(status.contains("CANNOT TELL"), "{status}");
    let doctor = env.json(&["doctor", "--json"]);
    assert!(
        doctor["problems"]
            .to_string()
            .contains("cannot tell whether"),
        "{doctor}"
    );
    let out = env
        .cmd()
        .args(["hooks", "install", "--agent", "codex", "--trust"])
        .env("CODEX_BIN", env.dir.path().join("no-codex-here"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("{}:4: not valid TOML", config.display())),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}

/// Codex skips a hook the user turned off in `config.toml` (`hooks.state.<key>.enabled =
/// false`, trusted or not; Codex 0.171's `hooks/list` reports it `enabled: false`): `hooks
/// status`, `doctor` and a new install say it is disabled instead of "trusted" or "NOT trusted
/// yet"; `enabled = true` or another handler's entry leaves it as its trust says.
#[test]
fn a_codex_hook_turned_off_in_config_toml_is_said_to_be_disabled() {
    let env = TestEnv::with_fixtures();
    env.ok(&["hooks", "install", "--agent", "codex"]);
    let file = std::fs::canonicalize(env.codex_home())
        .unwrap()
        .join("hooks.json");
    let key = format!("{}:pre_compact:0:0", file.display());
    let other = format!("{}:pre_compact:1:0", file.display());
    for (state, want) in [
        (
            format!("[hooks.state.\"{key}\"]\nenabled = false\ntrusted_hash = \"sha256:abc\"\n"),
            "disabled",
        ),
        (
            format!("[hooks.state]\n\" {key} \".enabled = false\n"),
            "disabled",
        ),
        (
            format!(
                "hooks.state.\"{key}\" = {{ trusted_hash = \"sha256:abc\", enabled = true }}\n"
            ),
            "trusted",
        ),
        (
            format!("[hooks.state.\"{other}\"]\nenabled = false\n"),
            "untrusted",
        ),
    ] {
        let config = format!("model = \"gpt-5.5\"\n\n{state}");
        std::fs::write(env.codex_home().join("config.toml"), &config).unwrap();
        let s = env.json(&["hooks", "status", "--json"]);
        let codex = s["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "codex")
            .unwrap();
        assert_eq!(codex["hooks"][0]["trust"], want, "{config}: {s}");
        let off = want == "disabled";
        let text = env.ok(&["hooks", "status"]);
        assert_eq!(
            text.contains("DISABLED: the agent's settings turn this hook off"),
            off,
            "{config}: {text}"
        );
        let doctor = env.json(&["doctor", "--json"]);
        assert_eq!(
            doctor["problems"]
                .to_string()
                .contains("settings turn the PreCompact hook"),
            off,
            "{config}: {doctor}"
        );
        let again = env.json(&["hooks", "install", "--agent", "codex", "--json"]);
        assert_eq!(again["hooks"][0]["trust"], want, "{again}");
        assert_eq!(
            again["notes"]
                .to_string()
                .contains("until you turn it on again"),
            off,
            "{again}"
        );
    }
}
