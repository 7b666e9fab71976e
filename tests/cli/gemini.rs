//! Gemini CLI as source and target without the real CLI: how its records are applied, how a
//! session kept in several files resolves, what a relay into it writes and registers.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, fixture_sessions, fixtures};
use serde_json::{Value, json};

fn gemini() -> &'static dyn session_relay::adapter::Adapter {
    session_relay::adapters::by_name("gemini").unwrap()
}

fn relay_json(env: &TestEnv, args: &[&str]) -> Value {
    let mut full = vec!["relay"];
    full.extend_from_slice(args);
    full.push("--json");
    env.json(&full)
}

fn lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn export(env: &TestEnv, selector: &str) -> Vec<Value> {
    env.ok(&["export", selector])
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn gemini_dir(env: &TestEnv) -> PathBuf {
    env.home("gemini").join(".gemini")
}

#[test]
fn the_listing_scan_agrees_with_the_reader_on_every_gemini_file() {
    let mut checked = 0;
    for (agent, path) in fixture_sessions() {
        if agent != "gemini" {
            continue;
        }
        let listed = gemini().scan(&path).unwrap();
        let read = gemini().read(&path, None).unwrap();
        let what = path.display();
        assert_eq!(listed.id, read.id, "{what}");
        assert_eq!(listed.messages, read.message_count(), "{what}");
        assert_eq!(listed.title, read.title, "{what}");
        assert_eq!(listed.cwd, read.cwd, "{what}");
        assert_eq!(listed.created, read.created, "{what}");
        assert_eq!(listed.updated, read.updated, "{what}");
        assert_eq!(listed.parent_id, read.parent_id, "{what}");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} Gemini fixtures");
}

#[test]
fn records_apply_as_gemini_cli_applies_them() {
    let env = TestEnv::with_fixtures();
    let odd = export(&env, "7e1c0dd0");
    let text = |m: &Value| m["content"].as_str().unwrap().to_string();
    let users: Vec<String> = odd
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text)
        .collect();
    assert_eq!(
        users,
        [
            "Port the CSV parser to streaming reads; we must never load the whole file.",
            "Run the tests.",
            "Thanks. Commit it as streaming csv.",
        ],
        "$rewindTo dropped the rewound prompt; the prompt after a hook context is words"
    );
    // A message id seen again replaces the message in place, with its last content.
    let answers: Vec<String> = odd
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(text)
        .collect();
    assert!(
        answers.iter().any(|a| a.ends_with("track the rest.")),
        "{answers:?}"
    );
    assert!(
        !answers.iter().any(|a| a.ends_with("Let me")),
        "{answers:?}"
    );
    // Ignored user text and the CLI's own lines are context, with their kind.
    let kinds: Vec<(&str, &str)> = odd
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| {
            (
                m["metadata"]["kind"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    for (kind, start) in [
        ("context", "<session_context>"),
        ("command", "/help"),
        ("command", "?"),
        ("context", "<hook_context>"),
        ("info", "Gemini CLI help"),
        ("warning", "Loop detection"),
        ("error", "[API Error"),
    ] {
        assert!(
            kinds
                .iter()
                .any(|(k, c)| *k == kind && c.starts_with(start)),
            "{kind} {start}: {kinds:?}"
        );
    }
    // A functionCall part without an id is paired with the response that names its tool; the
    // CLI's copies of results already in toolCalls are left out.
    let calls = odd.iter().filter(|m| m["role"] == "tool_call").count();
    let results = odd.iter().filter(|m| m["role"] == "tool_result").count();
    assert_eq!((calls, results), (8, 8));
    let test_run = odd
        .iter()
        .find(|m| m["role"] == "tool_result" && text(m).contains("FAILED"))
        .unwrap();
    assert_eq!(test_run["is_error"], true, "exit code 101");
    assert_eq!(test_run["metadata"]["exit_code"], 101);
    let shown = env.json(&["show", "7e1c0dd0", "--json"]);
    let s = &shown["session"];
    assert_eq!(s["stats"]["unknown_types"]["message:model"], 1);
    assert_eq!(s["stats"]["malformed_lines"], 1);
    assert_eq!(s["extra"]["truncated_last_line"], true);
    assert_eq!(s["stats"]["skipped_types"]["functionResponse copy"], 2);
    assert_eq!(
        s["files_touched"],
        json!(["/home/dev/projects/odd/src/csv.rs"])
    );
    assert_eq!(s["todos"][2]["text"], "Delete the old tests (cancelled)");
    assert_eq!(s["todos"][2]["status"], "completed");
    assert_eq!(s["todos"][3]["status"], "pending");
    assert_eq!(
        s["subagents"][0]["id"],
        "a1b2c3d4-1111-4222-8333-444455556666"
    );
    assert_eq!(s["context_usage"]["tokens"], 1480);
    assert_eq!(s["context_usage"]["model"], "gemini-2.5-pro");
    let kinds = &shown["tool_kinds"];
    for k in ["shell", "read", "edit", "search", "plan", "web", "subagent"] {
        assert!(kinds[k].as_u64().unwrap() > 0, "{k}: {kinds}");
    }

    // After a cancelled call the CLI merged the first prompt into its context message: it is
    // still the person's words; the cancelled turn is gone, `/zzz` is a command.
    let cancel = export(&env, "2b3405f7");
    let first = cancel.iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(first["content"], "Set up a hello script and run it.");
    assert!(!cancel.iter().any(|m| text(m).contains("rm hello.sh")));
    assert!(
        cancel
            .iter()
            .any(|m| m["role"] == "system" && m["content"] == "/zzz")
    );
    let shown = env.json(&["show", "2b3405f7", "--json"]);
    assert_eq!(
        shown["session"]["title"], "Set up and edit a hello shell script",
        "the summary the CLI set is the title"
    );
    // The older single document reads like the JSONL.
    let legacy = env.json(&["show", "5a1e6c3d", "--json"]);
    assert_eq!(legacy["session"]["format"], "gemini-json");
    assert_eq!(legacy["messages"], 5);
    assert_eq!(legacy["counts"]["tool_call"], 2);
}

#[test]
fn a_session_in_several_files_resolves_to_the_one_gemini_resumes() {
    let env = TestEnv::with_fixtures();
    let rows = env.list_json(&["list", "--all", "--agent", "gemini", "--json"]);
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let once = |id: &str| ids.iter().filter(|i| **i == id).count();
    assert_eq!(once("609f289a-9ae0-4ce7-9ed0-b63f796ea21c"), 1, "{ids:?}");
    assert_eq!(once("804052ce-b39a-4855-a415-9a92a3b4274c"), 1, "{ids:?}");
    let tools = env.json(&["show", "609f289a", "--json"]);
    let path = tools["session"]["source_path"].as_str().unwrap();
    assert!(
        path.ends_with("tmp/demo/chats/session-2026-11-30T11-44-609f289a.jsonl"),
        "the resumed file, not the stray one nor the legacy copy: {path}"
    );
    assert_eq!(tools["messages"], 9);
    // The stray file a resume leaves reads as what it is.
    let stray = gemini_dir(&env).join("tmp/demo/chats/session-2026-11-30T11-54-609f289a.jsonl");
    let v = env.json(&["show", stray.to_str().unwrap(), "--json"]);
    assert_eq!(v["messages"], 0);
    assert!(
        v["session"]["warnings"]
            .to_string()
            .contains("no conversation"),
        "{}",
        v["session"]["warnings"]
    );
    // The legacy folder's copy is read with its project's directory (sha256 of the path).
    let old = gemini_dir(&env).join(
        "tmp/db5f20c6d174036b96a44ee52d741548124dd985f5aa1bf26e3b5d54b7b547ce/chats/session-2026-11-30T11-37-804052ce.jsonl",
    );
    let v = env.json(&["show", old.to_str().unwrap(), "--json"]);
    assert_eq!(v["session"]["cwd"], "/home/dev/projects/demo");
    assert_eq!(v["messages"], 6);
    // `latest` in that directory is a session with a conversation.
    let latest = env.json(&[
        "show",
        "latest",
        "--agent",
        "gemini",
        "--cwd",
        "/home/dev/projects/demo",
        "--json",
    ]);
    assert_eq!(
        latest["session"]["id"],
        "609f289a-9ae0-4ce7-9ed0-b63f796ea21c"
    );
    assert_eq!(latest["messages"], 9);
}

#[test]
fn claude_to_gemini_writes_a_session_gemini_lists_and_resumes() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let registry_before = std::fs::read_to_string(gemini_dir(&env).join("projects.json")).unwrap();
    let r = relay_json(&env, &["771ce1df", "--to", "gemini", "--cwd", &proj]);
    let id = r["target"]["id"].as_str().unwrap();
    let path = r["target"]["path"].as_str().unwrap();
    assert_eq!(
        r["resume_command"],
        format!("cd {proj} && gemini --resume {id}")
    );
    // tmp/<slug>/chats/session-<minute>-<8 chars that are NOT the id's first 8>.jsonl
    let chats = gemini_dir(&env).join("tmp/proj/chats");
    assert_eq!(Path::new(path).parent().unwrap(), chats);
    let name = Path::new(path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("session-2") && name.ends_with(".jsonl"),
        "{name}"
    );
    assert!(!name.ends_with(&format!("-{}.jsonl", &id[..8])), "{name}");
    assert!(
        name.ends_with(&format!("-{}.jsonl", &id[id.len() - 8..])),
        "{name}"
    );

    let ls = lines(path);
    let meta = &ls[0];
    assert_eq!(meta["sessionId"], id);
    assert_eq!(meta["kind"], "main");
    assert_eq!(meta["summary"], r["title"]);
    assert_eq!(meta["memoryScratchpad"]["version"], 1);
    use sha2::Digest;
    let hash: String = sha2::Sha256::digest(proj.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(meta["projectHash"], hash);
    let updated =
        chrono::DateTime::parse_from_rfc3339(meta["lastUpdated"].as_str().unwrap()).unwrap();
    assert!(
        (chrono::Utc::now() - updated.with_timezone(&chrono::Utc)).num_minutes() < 5,
        "lastUpdated is fresh, or the CLI's 30-day cleanup deletes the file"
    );
    let source = env.json(&["show", "771ce1df", "--json"]);
    assert_eq!(
        meta["startTime"], source["session"]["created"]["utc"],
        "startTime stays truthful: the source session's start"
    );
    assert_eq!(ls[1]["type"], "session-relay");
    assert_eq!(
        ls[1]["provenance"]["source_id"],
        "771ce1df-ae7a-4516-8192-f08c38166af2"
    );
    assert_eq!(ls[2]["type"], "info");
    // The brief is context the model gets; it does not start with text the CLI skips.
    assert_eq!(ls[3]["type"], "user");
    assert_eq!(ls[3]["sessionRelay"], "context");
    assert!(
        ls[3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("# Handoff brief")
    );
    for l in &ls[2..] {
        assert!(l["id"].is_string() && l["timestamp"].is_string(), "{l}");
        assert!(
            ["user", "gemini", "info"].contains(&l["type"].as_str().unwrap()),
            "{l}"
        );
    }
    // Shell commands and file reads become Gemini's own tools, with results and status.
    let calls: Vec<&Value> = ls
        .iter()
        .filter_map(|l| l["toolCalls"].as_array())
        .flatten()
        .collect();
    assert!(calls.iter().any(|c| c["name"] == "run_shell_command"
        && c["args"]["command"] == "ls -la && echo hello-from-bash"));
    assert!(calls.iter().any(|c| c["name"] == "read_file"));
    for c in &calls {
        assert_eq!(c["status"], "success", "drawn by the TUI: {c}");
        assert!(
            c["result"][0]["functionResponse"]["response"].is_object(),
            "{c}"
        );
    }
    let failed = calls
        .iter()
        .find(|c| c["args"]["command"] == "cat does-not-exist.txt")
        .unwrap();
    assert!(failed["result"][0]["functionResponse"]["response"]["error"].is_string());
    // Everything else travels as text.
    assert!(
        std::fs::read_to_string(path)
            .unwrap()
            .contains("[tool call: Write]")
    );

    // Registered as the CLI registers a new project: merged, markers in tmp/ and history/.
    let registry: Value = serde_json::from_str(
        &std::fs::read_to_string(gemini_dir(&env).join("projects.json")).unwrap(),
    )
    .unwrap();
    let before: Value = serde_json::from_str(&registry_before).unwrap();
    for (p, slug) in before["projects"].as_object().unwrap() {
        assert_eq!(&registry["projects"][p], slug, "other projects kept");
    }
    assert_eq!(registry["projects"][&proj], "proj");
    for base in ["tmp", "history"] {
        let marker = gemini_dir(&env).join(base).join("proj/.project_root");
        assert_eq!(std::fs::read_to_string(marker).unwrap(), proj);
    }
    assert!(!gemini_dir(&env).join("projects.json.lock").exists());
    assert!(
        r["notes"]
            .to_string()
            .contains("registered as Gemini project `proj`")
    );

    // Our own reader takes it back, and lists it for that directory.
    let listed = env.list_json(&["list", "--cwd", &proj, "--json"]);
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["title"], r["title"]);
    // A second relay into the same directory uses the same project and leaves the registry.
    let again = relay_json(&env, &["01a22a5d", "--to", "gemini", "--cwd", &proj]);
    assert!(
        again["target"]["path"]
            .as_str()
            .unwrap()
            .starts_with(chats.to_str().unwrap())
    );
    assert!(!again["notes"].to_string().contains("registered"));
}

#[test]
fn an_existing_project_keeps_its_slug_and_a_taken_name_moves_on() {
    let env = TestEnv::with_fixtures();
    let registry = || std::fs::read_to_string(gemini_dir(&env).join("projects.json")).unwrap();
    let before = registry();
    // /home/dev/projects/demo is registered as `demo` (it need not exist on this machine).
    let r = relay_json(
        &env,
        &[
            "771ce1df",
            "--to",
            "gemini",
            "--cwd",
            "/home/dev/projects/demo",
        ],
    );
    let path = r["target"]["path"].as_str().unwrap();
    assert!(path.contains("/.gemini/tmp/demo/chats/session-"), "{path}");
    assert_eq!(registry(), before, "nothing to register");
    // A new directory also named demo: `demo` and `demo-1` are taken.
    let other = env.work().join("elsewhere/demo");
    std::fs::create_dir_all(&other).unwrap();
    let other = std::fs::canonicalize(other).unwrap().display().to_string();
    let r = relay_json(&env, &["01a22a5d", "--to", "gemini", "--cwd", &other]);
    assert!(
        r["target"]["path"]
            .as_str()
            .unwrap()
            .contains("/.gemini/tmp/demo-2/chats/"),
        "{}",
        r["target"]["path"]
    );
    let v: Value = serde_json::from_str(&registry()).unwrap();
    assert_eq!(v["projects"][&other], "demo-2");
    assert_eq!(v["projects"]["/home/dev/projects/demo"], "demo");
}

#[test]
fn an_old_hashed_folder_is_copied_into_the_new_one_as_the_cli_would() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    use sha2::Digest;
    let hash: String = sha2::Sha256::digest(proj.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let old = gemini_dir(&env).join("tmp").join(&hash).join("chats");
    std::fs::create_dir_all(&old).unwrap();
    let legacy = fixtures().join(
        "gemini/.gemini/tmp/b0bf0b9b594ee4c13a7cfbd9b86c8bd652ec066e148c213422801a303cf2a013/chats/session-2025-06-12T09-30-5a1e6c3d.json",
    );
    std::fs::copy(&legacy, old.join("session-2025-06-12T09-30-5a1e6c3d.json")).unwrap();
    let r = relay_json(&env, &["771ce1df", "--to", "gemini", "--cwd", &proj]);
    let copied = gemini_dir(&env).join("tmp/proj/chats/session-2025-06-12T09-30-5a1e6c3d.json");
    assert!(copied.exists(), "{}", r["notes"]);
    assert!(
        old.join("session-2025-06-12T09-30-5a1e6c3d.json").exists(),
        "copied, not moved"
    );
    assert!(
        r["notes"].to_string().contains("copied 1 file"),
        "{}",
        r["notes"]
    );
}

/// A Claude Code session whose prompts Gemini CLI would skip if written as they are.
fn claude_session_with_odd_prompts(env: &TestEnv) -> String {
    let id = "5d0c3a1e-7b2f-4e8a-9c6d-0000000000aa";
    let dir = env.claude_home().join("projects/-home-dev-projects-odd");
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = Vec::new();
    let mut parent = Value::Null;
    let texts = [
        ("user", "/etc/hosts has a bad line, fix it"),
        ("assistant", "Fixed the line."),
        ("user", "?"),
        ("assistant", "Ask me anything."),
        ("user", "<session_context> is just text I pasted"),
        ("assistant", "Noted."),
    ];
    for (n, (kind, text)) in texts.iter().enumerate() {
        let uuid = format!("u{n}");
        let message = if *kind == "user" {
            json!({"role": "user", "content": text})
        } else {
            json!({"id": format!("m{n}"), "type": "message", "role": "assistant", "model": "x",
                   "content": [{"type": "text", "text": text}]})
        };
        out.push(
            json!({"parentUuid": parent, "isSidechain": false, "type": kind, "message": message,
                   "uuid": uuid, "timestamp": format!("2026-11-29T12:00:{n:02}.000Z"),
                   "userType": "external", "entrypoint": "cli", "cwd": "/home/dev/projects/odd",
                   "sessionId": id, "version": "2.1.332"})
            .to_string(),
        );
        parent = json!(uuid);
    }
    std::fs::write(dir.join(format!("{id}.jsonl")), out.join("\n") + "\n").unwrap();
    id.to_string()
}

#[test]
fn prompts_gemini_would_skip_are_escaped_and_read_back_as_written() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let id = claude_session_with_odd_prompts(&env);
    let r = relay_json(&env, &[&id, "--to", "gemini", "--cwd", &proj]);
    let path = r["target"]["path"].as_str().unwrap();
    let ls = lines(path);
    let users: Vec<&Value> = ls.iter().filter(|l| l["sessionRelay"] == "user").collect();
    assert_eq!(users.len(), 3);
    for u in &users {
        // Joined, the text no longer starts with what the CLI skips.
        let joined: String = u["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["text"].as_str().unwrap())
            .collect();
        assert!(!joined.starts_with('/') && !joined.starts_with('?') && !joined.starts_with('<'));
    }
    // Our reader gives the person's words back exactly.
    let back = export(&env, path);
    let words: Vec<&str> = back
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        words,
        [
            "/etc/hosts has a bad line, fix it",
            "?",
            "<session_context> is just text I pasted"
        ]
    );
}

#[test]
fn a_gemini_fork_keeps_its_calls_and_thoughts_and_gets_a_new_id() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let r = relay_json(&env, &["609f289a", "--to", "gemini", "--cwd", &proj]);
    assert_ne!(r["target"]["id"], "609f289a-9ae0-4ce7-9ed0-b63f796ea21c");
    let ls = lines(r["target"]["path"].as_str().unwrap());
    let names: Vec<&str> = ls
        .iter()
        .filter_map(|l| l["toolCalls"].as_array())
        .flatten()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for tool in [
        "write_todos",
        "write_file",
        "replace",
        "read_file",
        "list_directory",
    ] {
        assert!(names.contains(&tool), "{tool} kept: {names:?}");
    }
    // Parallel calls stay one message.
    assert!(
        ls.iter()
            .any(|l| l["toolCalls"].as_array().is_some_and(|c| c.len() == 2))
    );
    let thought = ls
        .iter()
        .filter_map(|l| l["thoughts"].as_array())
        .flatten()
        .next()
        .unwrap();
    assert_eq!(thought["subject"], "Planning the script");
    // And reading it back gives the same conversation.
    let shown = env.json(&["show", r["target"]["path"].as_str().unwrap(), "--json"]);
    assert_eq!(shown["session"]["todos"].as_array().unwrap().len(), 2);
    assert_eq!(shown["counts"]["tool_call"], shown["counts"]["tool_result"]);
}

#[test]
fn gemini_sessions_relay_into_claude_and_codex() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let r = relay_json(&env, &["609f289a", "--to", "claude", "--cwd", &proj]);
    let text = std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap();
    assert!(
        text.contains("\"name\":\"Bash\""),
        "run_shell_command becomes Bash"
    );
    assert!(text.contains("[tool call: write_file] /home/dev/projects/demo/hello.sh"));
    assert!(
        !text.contains("<session_context>"),
        "Gemini's own context stays behind"
    );
    let r = relay_json(&env, &["7e1c0dd0", "--to", "codex", "--cwd", &proj]);
    let text = std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap();
    assert!(text.contains("[tool call: run_shell_command] cargo test"));
    assert!(
        text.contains("Fix the csv::streams test"),
        "the open todo is in the brief"
    );
    assert!(
        !text.contains("Also delete the old tests"),
        "the rewound prompt stays out"
    );
}

#[test]
fn dry_run_and_clean_for_gemini() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let before = env.snapshot_stores();
    let out = env.ok(&[
        "relay",
        "771ce1df",
        "--to",
        "gemini",
        "--cwd",
        &proj,
        "--dry-run",
    ]);
    assert!(out.contains("Dry run: nothing was written."), "{out}");
    assert!(out.contains("gemini --resume"), "{out}");
    assert!(
        out.contains("514,288 tokens = (1,048,576 context_window - 20,000 reserved_tokens) x 0.5"),
        "{out}"
    );
    assert_eq!(
        before,
        env.snapshot_stores(),
        "no session, registry or marker written"
    );

    let r = relay_json(&env, &["771ce1df", "--to", "gemini", "--cwd", &proj]);
    let id = r["target"]["id"].as_str().unwrap().to_string();
    let path = PathBuf::from(r["target"]["path"].as_str().unwrap());
    let ledger = env.dir.path().join("state/session-relay/ledger.jsonl");
    let aged: Vec<String> = std::fs::read_to_string(&ledger)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["time"] = json!((chrono::Utc::now() - chrono::Duration::days(40)).to_rfc3339());
            v.to_string()
        })
        .collect();
    std::fs::write(&ledger, aged.join("\n") + "\n").unwrap();
    let done = env.json(&["clean", "--yes", "--json", "--agent", "gemini"]);
    let outcome = done["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .unwrap();
    assert_eq!(outcome["action"], "deleted", "{done}");
    assert!(!path.exists());
    // The project stays registered: Gemini CLI registers it the same way on its first start.
    let registry = std::fs::read_to_string(gemini_dir(&env).join("projects.json")).unwrap();
    assert!(registry.contains(&proj));
}

#[test]
fn a_home_where_gemini_never_ran_gets_what_its_first_start_would_make() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let bare = env.dir.path().join("bare-home");
    std::fs::create_dir_all(&bare).unwrap();
    let flag = format!("gemini={}", bare.display());
    let r = env.json(&[
        "--home", &flag, "relay", "771ce1df", "--to", "gemini", "--cwd", &proj, "--json",
    ]);
    assert!(
        r["target"]["path"]
            .as_str()
            .unwrap()
            .starts_with(bare.join(".gemini/tmp/proj/chats").to_str().unwrap())
    );
    let registry: Value =
        serde_json::from_str(&std::fs::read_to_string(bare.join(".gemini/projects.json")).unwrap())
            .unwrap();
    assert_eq!(registry, json!({"projects": {proj.clone(): "proj"}}));
    // A home that does not exist at all is refused, and nothing is created.
    let missing = env.dir.path().join("no-such-home");
    let flag = format!("gemini={}", missing.display());
    let (code, err) = env.fails(&[
        "--home", &flag, "relay", "771ce1df", "--to", "gemini", "--cwd", &proj, "--force",
    ]);
    assert_eq!(code, 4, "{err}");
    assert!(!missing.exists());
}

#[test]
fn a_registry_the_cli_would_not_read_is_left_as_it_is() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    // A slug outside [a-z0-9-]: Gemini CLI reads the whole file as empty.
    let registry = gemini_dir(&env).join("projects.json");
    let odd = r#"{"projects":{"/somewhere":"Not A Slug"}}"#;
    std::fs::write(&registry, odd).unwrap();
    let r = relay_json(&env, &["771ce1df", "--to", "gemini", "--cwd", &proj]);
    assert_eq!(std::fs::read_to_string(&registry).unwrap(), odd);
    assert!(
        r["notes"].to_string().contains("left as it is"),
        "{}",
        r["notes"]
    );
    // The marker is what the CLI finds the project by.
    let folder = Path::new(r["target"]["path"].as_str().unwrap())
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    assert_eq!(
        std::fs::read_to_string(folder.join(".project_root")).unwrap(),
        proj
    );
}

/// A Gemini result's length is what the relay shows of it whole: the output and any other
/// parts with it, and never a length the file itself claims (`_original_chars` is the key the
/// reader records its own cuts under). Found by a hostile helper: the source's own value made
/// the marker say 99,999,998,000 characters were cut, and a text part beside a cut output was
/// left out of the count.
#[test]
fn a_gemini_results_length_is_what_it_holds() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    // Under the 8,000 characters a relay reads of an output: Gemini holds it whole.
    let output: String = (0..500).map(|i| format!("line {i:06}\n")).collect();
    let id = crate::common::session_with_output(&env, "claude", &output);
    let r = relay_json(&env, &[&id, "--to", "gemini", "--cwd", &proj]);
    let path = r["target"]["path"].as_str().unwrap().to_string();
    let extra = "and a note beside the output";
    let mut held = None;
    let edited: Vec<String> = lines(&path)
        .into_iter()
        .map(|mut l| {
            if let Some(result) = l
                .pointer_mut("/toolCalls/0/result")
                .and_then(Value::as_array_mut)
            {
                let fr = &mut result[0]["functionResponse"];
                fr["_original_chars"] = json!(100_000_000_000u64);
                let out = fr["response"]["output"].as_str().unwrap();
                held = Some(out.chars().count() + 1 + extra.chars().count());
                result.push(json!({ "text": extra }));
            }
            l.to_string()
        })
        .collect();
    let held = held.expect("the relayed session holds the call");
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
    for budget in [None, Some("1500"), Some("1000")] {
        let mut args = vec![path.as_str(), "--to", "codex", "--cwd", &proj];
        args.extend(budget.iter().flat_map(|b| ["--budget", b]));
        let r = relay_json(&env, &args);
        let written = r["target"]["path"].as_str().unwrap();
        let raw = std::fs::read_to_string(written).unwrap();
        assert!(
            !raw.contains("100000000000"),
            "{budget:?}: the file's own length was used"
        );
        let mut seen = 0;
        for m in export(&env, written) {
            let text = m["content"].as_str().unwrap_or("");
            let Some(open) = text.find("line 000000") else {
                continue;
            };
            let shown = &text[open..];
            let Some((head, rest)) = shown.split_once("\n[… ") else {
                assert_eq!(shown.chars().count(), held, "{budget:?}");
                seen += 1;
                continue;
            };
            let (cut, tail) = rest.split_once(" chars cut …]\n").unwrap();
            let cut: usize = cut.parse().unwrap();
            assert!(tail.ends_with(extra), "{budget:?}: {tail:?}");
            assert_eq!(head.len() + cut + tail.len(), held, "{budget:?}: {text}");
            seen += 1;
        }
        assert!(seen > 0, "{budget:?}: no output relayed");
    }
}
