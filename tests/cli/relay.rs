//! `relay` without the real CLIs: what is written, where, and what is never touched.

use std::os::unix::fs::PermissionsExt;

use crate::common::{TestEnv, fixtures};
use serde_json::Value;

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

#[test]
fn claude_to_codex_writes_a_listed_rollout_with_both_channels() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let source = env
        .claude_home()
        .join("projects/-home-dev-projects-interactive/771ce1df-ae7a-4516-8192-f08c38166af2.jsonl");
    let before = std::fs::read(&source).unwrap();
    let r = relay_json(&env, &["771ce1df", "--to", "codex", "--cwd", &proj]);
    assert_eq!(std::fs::read(&source).unwrap(), before, "source untouched");
    let id = r["target"]["id"].as_str().unwrap();
    let path = r["target"]["path"].as_str().unwrap();
    assert_eq!(r["resume_command"], format!("codex resume {id}"));
    let name = std::path::Path::new(path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("rollout-") && name.ends_with(&format!("-{id}.jsonl")),
        "{name}"
    );
    assert!(path.starts_with(env.codex_home().join("sessions").to_str().unwrap()));
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let ls = lines(path);
    assert_eq!(ls[0]["type"], "session_meta");
    let meta = &ls[0]["payload"];
    assert_eq!(meta["id"], id);
    assert_eq!(meta["cwd"], proj.as_str());
    assert_eq!(meta["source"], "cli");
    assert!(meta.get("model_provider").is_none(), "no foreign provider");
    assert!(meta.get("history_mode").is_none(), "legacy layout");
    assert_eq!(
        meta["session_relay"]["source_id"],
        "771ce1df-ae7a-4516-8192-f08c38166af2"
    );
    assert_eq!(
        meta["session_relay"]["source_sha256"],
        r["source"]["sha256"]
    );
    let count = |t: &str, p: &str| {
        ls.iter()
            .filter(|l| l["type"] == t && l["payload"]["type"] == p)
            .count()
    };
    let user_items = ls
        .iter()
        .filter(|l| l["type"] == "response_item" && l["payload"]["role"] == "user")
        .count();
    assert_eq!(user_items, 8);
    assert_eq!(count("event_msg", "user_message"), 8);
    assert_eq!(
        count("event_msg", "agent_message"),
        count("response_item", "message") - 8 - 1
    );
    // Claude's tools have no guaranteed Codex equivalent: they travel as text, so no call is
    // left unanswered and no unknown tool name reaches the model.
    assert_eq!(count("response_item", "function_call"), 0);
    assert!(
        std::fs::read_to_string(path)
            .unwrap()
            .contains("[tool call: Bash] ls -la && echo hello-from-bash")
    );
    assert_eq!(count("event_msg", "agent_reasoning"), 1);
    assert!(
        !std::fs::read_to_string(path)
            .unwrap()
            .contains("\"type\":\"reasoning\"")
    );

    let index = std::fs::read_to_string(env.codex_home().join("session_index.jsonl")).unwrap();
    let last: Value = serde_json::from_str(index.lines().last().unwrap()).unwrap();
    assert_eq!(last["id"], id);
    let title = last["thread_name"].as_str().unwrap();
    assert!(
        title.starts_with("relay_2") && title.contains(" from claude: THINK Hello!"),
        "{title}"
    );

    // The ledger knows it.
    let ledger =
        std::fs::read_to_string(env.dir.path().join("state/session-relay/ledger.jsonl")).unwrap();
    let entry: Value = serde_json::from_str(ledger.lines().last().unwrap()).unwrap();
    assert_eq!(entry["target"]["id"], id);
    assert_eq!(entry["source"]["agent"], "claude");
    assert_eq!(entry["target"]["sha256"].as_str().unwrap().len(), 64);

    // Our own reader sees the conversation: the listing shows it in that directory.
    let listed = env.list_json(&["list", "--cwd", &proj, "--json"]);
    assert_eq!(listed[0]["id"], id);
}

#[test]
fn codex_to_claude_writes_a_chain_with_paired_tools_and_no_thinking() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let r = relay_json(&env, &["01a22a5d", "--to", "claude", "--cwd", &proj]);
    let id = r["target"]["id"].as_str().unwrap();
    let path = r["target"]["path"].as_str().unwrap();
    let escaped = session_relay::adapters::claude::escape_project_dir(&proj);
    assert_eq!(
        std::path::Path::new(path),
        env.claude_home()
            .join("projects")
            .join(escaped)
            .join(format!("{id}.jsonl"))
    );
    assert_eq!(
        r["resume_command"],
        format!("cd {proj} && claude --resume {id}")
    );
    let ls = lines(path);
    let chain: Vec<&Value> = ls.iter().filter(|l| l["uuid"].is_string()).collect();
    assert!(chain[0]["parentUuid"].is_null());
    for w in chain.windows(2) {
        assert_eq!(w[1]["parentUuid"], w[0]["uuid"], "a real parentUuid chain");
        assert!(
            w[1]["timestamp"].as_str() > w[0]["timestamp"].as_str(),
            "times increase"
        );
    }
    let mut ids = std::collections::HashSet::new();
    let mut uses = std::collections::HashSet::new();
    let mut results = std::collections::HashSet::new();
    for l in &chain {
        assert_eq!(l["entrypoint"], "cli");
        assert_eq!(l["isSidechain"], false);
        assert_eq!(l["sessionId"], id);
        assert_eq!(l["cwd"], proj.as_str());
        let content = l["message"]["content"]
            .as_array()
            .expect("content as blocks");
        if l["type"] == "assistant" {
            assert!(
                ids.insert(l["message"]["id"].as_str().unwrap().to_string()),
                "unique message.id"
            );
            assert_eq!(l["message"]["model"], "<synthetic>");
        }
        for b in content {
            assert_ne!(b["type"], "thinking", "no unsigned thinking");
            if b["type"] == "tool_use" {
                uses.insert(b["id"].as_str().unwrap().to_string());
                assert_eq!(b["name"], "Bash", "exec_command becomes Bash");
            }
            if b["type"] == "tool_result" {
                results.insert(b["tool_use_id"].as_str().unwrap().to_string());
            }
        }
    }
    assert_eq!(uses, results, "every call paired");
    assert_eq!(uses.len(), 6);
    let title = ls.iter().find(|l| l["type"] == "custom-title").unwrap();
    assert!(
        title["customTitle"]
            .as_str()
            .unwrap()
            .contains("from codex: SHELL: look around")
    );
    assert!(
        ls.iter()
            .any(|l| l["type"] == "session-relay" && l["provenance"]["source_agent"] == "codex")
    );
    // mtime = the last message's time, so that `claude -c` does not pick the relayed session.
    let last =
        chrono::DateTime::parse_from_rfc3339(chain.last().unwrap()["timestamp"].as_str().unwrap())
            .unwrap();
    let mtime: chrono::DateTime<chrono::Utc> =
        std::fs::metadata(path).unwrap().modified().unwrap().into();
    assert_eq!(mtime.timestamp_millis(), last.timestamp_millis());
    // apply_patch and update_plan have no always-present Claude tool: text transcripts.
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("[tool call: apply_patch] patch: Update File: app.py"));
    assert!(text.contains("[tool call: update_plan]"));
}

#[test]
fn same_agent_relays_are_forks_that_keep_structure() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let r = relay_json(&env, &["01a22a5c", "--to", "codex", "--cwd", &proj]);
    let text = std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap();
    assert!(text.contains("\"type\":\"function_call\""));
    assert!(
        text.contains("\"type\":\"custom_tool_call\""),
        "apply_patch stays a custom tool call"
    );
    assert_ne!(
        r["target"]["id"], "01a22a5c-a0f8-7040-b2c7-f5dd0f81a290",
        "a new id"
    );
    let r = relay_json(&env, &["771ce1df", "--to", "claude", "--cwd", &proj]);
    let text = std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap();
    for tool in [
        "\"name\":\"Write\"",
        "\"name\":\"Edit\"",
        "\"name\":\"TodoWrite\"",
        "\"name\":\"Read\"",
    ] {
        assert!(text.contains(tool), "{tool} kept");
    }
}

#[test]
fn dry_run_writes_nothing_anywhere() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let before = env.snapshot_stores();
    let out = env.ok(&[
        "relay",
        "771ce1df",
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--dry-run",
    ]);
    assert!(out.contains("Dry run: nothing was written."), "{out}");
    assert!(out.contains("would write"), "{out}");
    assert!(out.contains("codex resume"), "{out}");
    let r = relay_json(
        &env,
        &["01a22a5d", "--to", "claude", "--cwd", &proj, "--dry-run"],
    );
    assert_eq!(r["dry_run"], true);
    assert!(!std::path::Path::new(r["target"]["path"].as_str().unwrap()).exists());
    assert_eq!(before, env.snapshot_stores(), "stores byte for byte");
    assert!(!env.dir.path().join("state").exists(), "no ledger written");
}

#[test]
fn relaying_an_unchanged_source_again_is_answered_from_the_ledger() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let first = relay_json(&env, &["01a22a2f", "--to", "claude", "--cwd", &proj]);
    let again = env.ok(&["relay", "01a22a2f", "--to", "claude", "--cwd", &proj]);
    assert!(again.contains("Already relayed as"), "{again}");
    assert!(
        again.contains(first["target"]["id"].as_str().unwrap()),
        "{again}"
    );
    let forced = relay_json(
        &env,
        &["01a22a2f", "--to", "claude", "--cwd", &proj, "--force"],
    );
    assert_ne!(forced["target"]["id"], first["target"]["id"]);
    // Another target is another relay.
    let other = relay_json(&env, &["01a22a2f", "--to", "codex", "--cwd", &proj]);
    assert_eq!(other["already_relayed"], false);
}

#[test]
fn out_writes_a_standalone_relay_file_and_leaves_the_stores_alone() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let dest = env.work().join("out");
    std::fs::create_dir_all(&dest).unwrap();
    let before = env.snapshot_stores();
    let r = relay_json(
        &env,
        &[
            "771ce1df",
            "--to",
            "codex",
            "--cwd",
            &proj,
            "--out",
            dest.to_str().unwrap(),
        ],
    );
    let path = std::path::PathBuf::from(r["target"]["path"].as_str().unwrap());
    assert_eq!(path.parent().unwrap(), dest);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let short = &r["target"]["id"].as_str().unwrap()[..8];
    assert!(
        name.starts_with("relay_2") && name.ends_with(&format!("_{short}.jsonl")),
        "{name}"
    );
    assert_eq!(
        name.len(),
        "relay_YYYYMMDD_HHMMSS_".len() + 8 + ".jsonl".len()
    );
    assert_eq!(before, env.snapshot_stores());
    // It is a native Codex session our reader takes.
    let shown = env.json(&["show", path.to_str().unwrap(), "--json"]);
    assert_eq!(shown["session"]["agent"], "codex");
    assert_eq!(shown["session"]["id"], r["target"]["id"]);
    // An explicit file name is used as given, and never replaced.
    let file = env.work().join("mine.jsonl");
    relay_json(
        &env,
        &[
            "771ce1df",
            "--to",
            "claude",
            "--cwd",
            &proj,
            "--out",
            file.to_str().unwrap(),
        ],
    );
    assert!(file.exists());
    let (code, err) = env.fails(&[
        "relay",
        "771ce1df",
        "--to",
        "claude",
        "--cwd",
        &proj,
        "--out",
        file.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("already exists"), "{err}");
}

#[test]
fn relay_refuses_what_it_cannot_do_well() {
    let env = TestEnv::with_fixtures();
    // No working directory recorded and none given.
    let (code, err) = env.fails(&["relay", "0c5f1e7a", "--to", "claude"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cwd"), "{err}");
    // A target home that does not exist.
    let proj = env.project();
    let missing = env.dir.path().join("no-such-codex-home");
    let flag = format!("codex={}", missing.display());
    let (code, err) = env.fails(&[
        "--home", &flag, "relay", "771ce1df", "--to", "codex", "--cwd", &proj,
    ]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists(), "nothing created");
    // A session without any user message.
    let empty = env.codex_home().join("sessions/2026/01/01/rollout-2026-01-01T00-00-00-0199dead-0000-7000-8000-000000000009.jsonl");
    std::fs::create_dir_all(empty.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join("broken/empty.jsonl"), &empty).unwrap();
    let (code, err) = env.fails(&[
        "relay",
        empty.to_str().unwrap(),
        "--to",
        "claude",
        "--cwd",
        &proj,
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("no user message"), "{err}");
}

#[test]
fn relays_fit_the_budget_and_report_it() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let r = relay_json(
        &env,
        &[
            "b62416f1",
            "--to",
            "codex",
            "--cwd",
            &proj,
            "--dry-run",
            "--budget",
            "900",
        ],
    );
    let fit = &r["fit"];
    assert_eq!(fit["budget"], 900);
    assert_eq!(r["budget_from"], "--budget");
    assert!(fit["total_tokens"].as_u64().unwrap() <= 900, "{fit}");
    assert!(
        fit["summarized"]["turns"].as_u64().unwrap() + fit["left_out"]["turns"].as_u64().unwrap()
            > 0,
        "a small budget leaves turns out: {fit}"
    );
    assert_eq!(fit["tokenizer"], "o200k_base");
    // The default budget comes from the config: (200000 - 30000) x 0.5 for Claude.
    let r = relay_json(
        &env,
        &["b62416f1", "--to", "claude", "--cwd", &proj, "--dry-run"],
    );
    assert_eq!(r["fit"]["budget"], 85000);
    assert_eq!(r["fit"]["tokenizer"], "estimate");
    assert!(
        r["budget_from"]
            .as_str()
            .unwrap()
            .contains("200,000 context_window")
    );
    let cfg = env.dir.path().join("c.yaml");
    std::fs::write(&cfg, "agents:\n  claude:\n    context_window: 100000\n    reserved_tokens: 10000\n    safety_ratio: 0.5\n").unwrap();
    let out = env.json(&[
        "--config",
        cfg.to_str().unwrap(),
        "show",
        "b62416f1",
        "--to",
        "claude",
        "--json",
    ]);
    assert_eq!(out["fit"]["budget"], 45000);
    let text = env.ok(&["show", "b62416f1", "--to", "codex", "--budget", "900"]);
    for line in [
        "Budget: 900 tokens",
        "kept verbatim",
        "kept shortened",
        "summarized",
        "left out",
        "= source",
        "handoff brief",
        "total written",
        "tool calls",
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    // A written relay is what the report said.
    let r = relay_json(
        &env,
        &[
            "b62416f1", "--to", "claude", "--cwd", &proj, "--budget", "900",
        ],
    );
    let written = lines(r["target"]["path"].as_str().unwrap());
    let first = &written[0]["message"]["content"][0]["text"];
    assert!(
        first.as_str().unwrap().starts_with("# Handoff brief"),
        "{first}"
    );
    let users: Vec<&str> = written
        .iter()
        .filter(|l| l["type"] == "user" && l.get("isMeta").is_none())
        .filter_map(|l| l["message"]["content"][0]["text"].as_str())
        .collect();
    assert_eq!(
        users.first(),
        Some(&"THINK Hi, please DO_BASH to look around.")
    );
    assert_eq!(
        users.last(),
        Some(&"Great, thanks. Summarise what we did in one line.")
    );
    // Too small to hold even the brief: a clear refusal, nothing written.
    let (code, err) = env.fails(&[
        "relay", "b62416f1", "--to", "claude", "--cwd", &proj, "--budget", "50", "--force",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("too small"), "{err}");
}

#[test]
fn the_brief_reads_the_repository_at_relay_time() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&proj)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(format!("{proj}/a.txt"), "a").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    git(&["checkout", "-q", "-b", "relay-test"]);
    std::fs::write(format!("{proj}/a.txt"), "changed").unwrap();
    let r = relay_json(&env, &["5d0c3a1e", "--to", "codex", "--cwd", &proj]);
    let written = lines(r["target"]["path"].as_str().unwrap());
    let brief = written[1]["payload"]["content"][0]["text"]
        .as_str()
        .unwrap();
    // The branch, HEAD's short hash and subject, and the files not committed, by name.
    assert!(brief.contains("branch relay-test, commit "), "{brief}");
    assert!(
        brief.contains("\"first\", uncommitted changes in 1 file: M a.txt"),
        "{brief}"
    );
    assert!(
        brief.contains("read from the repository at relay time"),
        "{brief}"
    );
    // The user's rules, quoted, and the open todo and touched file of the session.
    assert!(
        brief.contains("\"Fix the parser; we must never drop a line silently\""),
        "{brief}"
    );
    assert!(brief.contains("- [ ] Count malformed lines"), "{brief}");
    // Relative to where the session ran, which does not exist here: not looked at.
    assert!(
        brief.contains("relative to /home/dev/projects/handmade, where the session ran"),
        "{brief}"
    );
    assert!(
        brief.contains("\nsrc/\n  parser.rs: edited once, turn 1\n"),
        "{brief}"
    );
    assert!(brief.contains("do not redo completed steps"), "{brief}");
    assert_eq!(written[0]["payload"]["git"]["branch"], "relay-test");

    // Committed and detached: a clean tree, the branch named HEAD, the new commit.
    git(&["commit", "-q", "-am", "second"]);
    git(&["checkout", "-q", "--detach"]);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&proj)
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_string();
    let r = relay_json(
        &env,
        &["5d0c3a1e", "--to", "codex", "--cwd", &proj, "--force"],
    );
    let written = lines(r["target"]["path"].as_str().unwrap());
    let brief = written[1]["payload"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        brief.contains(&format!(
            "branch HEAD, commit {}, \"second\", working tree clean",
            &head[..7]
        )),
        "{brief}"
    );
    assert_eq!(written[0]["payload"]["git"]["commit_hash"], head.as_str());
}

#[test]
fn the_window_codex_records_sets_the_budget_unless_the_config_sets_one() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    // The genuine 0.171 rollouts record `model_context_window: 258400` in token_count events.
    let r = relay_json(
        &env,
        &["771ce1df", "--to", "codex", "--cwd", &proj, "--dry-run"],
    );
    let from = r["budget_from"].as_str().unwrap();
    assert!(
        from.contains("258,400 context_window (recorded by Codex CLI in"),
        "{from}"
    );
    let settings = env.config();
    let codex = settings.agent("codex");
    assert_eq!(
        r["fit"]["budget"].as_u64().unwrap() as usize,
        codex.budget_for_window(258400)
    );
    // A window in the config file wins: the user knows their model.
    let file = env.dir.path().join("c.yaml");
    std::fs::write(&file, "agents:\n  codex:\n    context_window: 128000\n").unwrap();
    let r = env.json(&[
        "--config",
        file.to_str().unwrap(),
        "relay",
        "771ce1df",
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--dry-run",
        "--json",
    ]);
    assert!(
        r["budget_from"]
            .as_str()
            .unwrap()
            .starts_with("(128,000 context_window - "),
        "{}",
        r["budget_from"]
    );
    // No rollout records one: the default.
    let mut empty = TestEnv::with_fixtures();
    empty.removing_stores();
    for e in walkdir::WalkDir::new(empty.codex_home().join("sessions"))
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
    {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        if text.contains("model_context_window") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    let r = relay_json(
        &empty,
        &["771ce1df", "--to", "codex", "--cwd", &proj, "--dry-run"],
    );
    assert!(
        !r["budget_from"].as_str().unwrap().contains("recorded"),
        "{}",
        r["budget_from"]
    );
}

#[test]
fn a_full_disk_during_the_index_append_leaves_codexs_index_as_it_was() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    // An index that ends 20 bytes before a 1 KiB boundary, and a file-size limit at that
    // boundary: the relay's line is cut after 20 bytes (EFBIG), as on a full disk.
    let index = env.codex_home().join("session_index.jsonl");
    let mut text = std::fs::read_to_string(&index).unwrap();
    let mut n = 0;
    while text.len() < 200 * 1024 - 20 - 200 {
        text.push_str(&format!(
            "{{\"id\":\"0199aaaa-0000-7000-8000-{n:012}\",\"thread_name\":\"padding {n}\",\"updated_at\":\"2026-11-01T00:00:00Z\"}}\n"
        ));
        n += 1;
    }
    let pad = 200 * 1024 - 20 - text.len();
    text.push_str(&format!(
        "{{\"id\":\"pad\",\"thread_name\":\"{}\"}}\n",
        "p".repeat(pad - 30)
    ));
    assert_eq!(text.len(), 200 * 1024 - 20);
    std::fs::write(&index, &text).unwrap();
    let before = std::fs::read(&index).unwrap();
    let sessions_before = env.snapshot_stores().len();

    let bin = assert_cmd::cargo::cargo_bin("session-relay");
    let out = env
        .cmd_of("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 200; exec \"$0\" \"$@\"")
        .arg(&bin)
        .args(["relay", "771ce1df", "--to", "codex", "--cwd", &proj])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the relay must fail: {err}");
    assert!(err.contains("session_index.jsonl"), "{err}");
    assert!(err.contains("nothing was relayed"), "{err}");
    let now = std::fs::read(&index).unwrap();
    assert!(
        now == before,
        "Codex's index is not byte for byte what it was ({} bytes, was {})",
        now.len(),
        before.len()
    );
    assert_eq!(
        env.snapshot_stores().len(),
        sessions_before,
        "no relayed session left behind"
    );
    // And a later relay with room appends a whole line.
    let r = env.json(&[
        "relay", "771ce1df", "--to", "codex", "--cwd", &proj, "--json",
    ]);
    let after = std::fs::read_to_string(&index).unwrap();
    assert!(after.starts_with(&text));
    let added = &after[text.len()..];
    let v: serde_json::Value = serde_json::from_str(added.trim_end()).unwrap();
    assert_eq!(v["id"], r["target"]["id"]);
}

#[test]
fn two_relays_of_one_session_started_together_write_it_once() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let before = env.snapshot_stores();
    let index = env.codex_home().join("session_index.jsonl");
    let index_before = std::fs::read_to_string(&index).unwrap();
    for round in 0..3 {
        let children: Vec<std::process::Child> = (0..2)
            .map(|_| {
                let mut c = env.std_cmd(assert_cmd::cargo::cargo_bin("session-relay"));
                c.args([
                    "relay", "b62416f1", "--to", "codex", "--cwd", &proj, "--json",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
            })
            .collect();
        let mut already = 0;
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            if r["already_relayed"] == true {
                already += 1;
            }
        }
        // The first round writes once; later rounds find it.
        assert_eq!(already, if round == 0 { 1 } else { 2 }, "round {round}");
    }
    let added: Vec<_> = env
        .snapshot_stores()
        .into_keys()
        .filter(|p| !before.contains_key(p) && p.is_file())
        .collect();
    assert_eq!(added.len(), 1, "one relayed session: {added:?}");
    let index_after = std::fs::read_to_string(&index).unwrap();
    assert_eq!(
        index_after.lines().count(),
        index_before.lines().count() + 1
    );
    let ledger = env.dir.path().join("state/session-relay/ledger.jsonl");
    let events: Vec<String> = std::fs::read_to_string(ledger)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].to_string())
        .collect();
    assert_eq!(events, ["\"relay\"", "\"registered\""]);
}

#[test]
fn no_redact_warns_only_when_something_is_written() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let args = [
        "relay",
        "771ce1df",
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--no-redact",
    ];
    let dry = env.cmd().args(args).arg("--dry-run").output().unwrap();
    assert!(dry.status.success());
    assert!(
        !String::from_utf8_lossy(&dry.stderr).contains("--no-redact"),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let wet = env.cmd().args(args).output().unwrap();
    assert!(wet.status.success());
    assert!(String::from_utf8_lossy(&wet.stderr).contains("warning: --no-redact"));
}

fn ledger_events(env: &TestEnv) -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(env.dir.path().join("state/session-relay/ledger.jsonl")).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            (
                v["event"].as_str().unwrap().to_string(),
                v["target"]["path"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A relay is recorded in the ledger before its session is written, so that a session killed
/// right after landing is still one `clean` knows; one that does not land is withdrawn, and
/// neither blocks the next relay nor is offered to `clean`.
#[test]
fn a_relay_that_does_not_land_is_withdrawn_from_the_ledger() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    // Codex's index cannot be appended to: the relay's registration fails.
    let index = env.codex_home().join("session_index.jsonl");
    let original = std::fs::read(&index).unwrap();
    std::fs::remove_file(&index).unwrap();
    std::fs::create_dir(&index).unwrap();
    let (_, err) = env.fails(&["relay", "771ce1df", "--to", "codex", "--cwd", &proj]);
    assert!(err.contains("nothing was relayed"), "{err}");
    let events = ledger_events(&env);
    assert_eq!(
        events.iter().map(|(e, _)| e.as_str()).collect::<Vec<_>>(),
        ["relay", "withdrawn"]
    );
    assert_eq!(events[0].1, events[1].1);
    assert!(!std::path::Path::new(&events[0].1).exists());
    let clean = env.json(&["clean", "--older-than", "0d", "--dry-run", "--json"]);
    assert!(clean["sessions"].as_array().unwrap().is_empty(), "{clean}");
    // With the index back, the next relay is a new one.
    std::fs::remove_dir(&index).unwrap();
    std::fs::write(&index, original).unwrap();
    let r = relay_json(&env, &["771ce1df", "--to", "codex", "--cwd", &proj]);
    assert_eq!(r["already_relayed"], false);
    assert!(r["supersedes"].as_array().unwrap().is_empty(), "{r}");
    // An earlier run cut off mid-line: the next entry starts on a line of its own.
    let ledger = env.dir.path().join("state/session-relay/ledger.jsonl");
    let mut text = std::fs::read_to_string(&ledger).unwrap();
    text.push_str("{\"event\":\"relay\",\"ti");
    std::fs::write(&ledger, text).unwrap();
    let r = relay_json(&env, &["5d0c3a1e", "--to", "codex", "--cwd", &proj]);
    let again = relay_json(&env, &["5d0c3a1e", "--to", "codex", "--cwd", &proj]);
    assert_eq!(again["already_relayed"], true, "{again}");
    assert_eq!(again["target"]["id"], r["target"]["id"]);
}

/// A person's prompt that starts as the target agent's own injected texts do is relayed (the
/// read-back check used to refuse the whole relay): written with an escape the target does not
/// take for its own, and read back as the person wrote it.
#[test]
fn prompts_that_start_as_the_targets_own_texts_are_relayed_as_written() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    for (from, to, tags) in [
        (
            "claude",
            "codex",
            &[
                "<environment_context>",
                "<user_instructions>",
                "<user_shell_command>",
                "<turn_aborted>",
                "<skills_instructions>",
                "<collaboration_mode>",
            ][..],
        ),
        (
            "codex",
            "claude",
            &[
                "<system-reminder>",
                "<command-name>",
                "<command-message>",
                "<local-command-stdout>",
                "<local-command-caveat>",
                "<task-notification>",
            ][..],
        ),
    ] {
        let prompts: Vec<String> = std::iter::once("Start here".to_string())
            .chain(
                tags.iter()
                    .map(|t| format!("{t} is what I pasted, keep it")),
            )
            .collect();
        let refs: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let id = crate::common::session_with_prompts(&env, from, &refs);
        let r = relay_json(&env, &[&id, "--to", to, "--cwd", &proj]);
        let path = r["target"]["path"].as_str().unwrap();
        let raw = std::fs::read_to_string(path).unwrap();
        for t in tags {
            assert!(
                raw.contains(&format!("(relayed) {t}")),
                "{to}: {t} not escaped"
            );
        }
        let back: Vec<String> = env
            .ok(&["export", path])
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect();
        for p in &prompts[1..] {
            assert!(
                back.contains(p),
                "{from} -> {to}: {p:?} not read back: {back:?}"
            );
        }
    }
}

/// A long output is cut when it is read and again to fit the budget. The marker the target
/// reads must still say how much of the output is missing: after two cuts it said
/// "[… 24 chars cut …]" where 397,000 characters were.
#[test]
fn an_output_cut_twice_says_how_much_of_it_is_missing() {
    // Words too short to pass for pieces of a token: a cut next to one masks it.
    let output: String = (0..45_000).map(|i| format!("line {i:06}\n")).collect();
    let full = output.chars().count();
    let mut outputs_seen = 0;
    for (from, to) in [
        ("claude", "codex"),
        ("codex", "claude"),
        ("claude", "gemini"),
        ("codex", "gemini"),
        ("claude", "pi"),
    ] {
        // Tight budgets cut again what the reader cut: a tool result, or a transcript of it.
        for budget in [None, Some("6000"), Some("1500"), Some("1000")] {
            let env = TestEnv::with_fixtures();
            let proj = env.project();
            let id = crate::common::session_with_output(&env, from, &output);
            let mut args = vec![id.as_str(), "--to", to, "--cwd", &proj];
            args.extend(budget.iter().flat_map(|b| ["--budget", b]));
            let r = relay_json(&env, &args);
            let path = r["target"]["path"].as_str().unwrap();
            let mut seen = 0;
            for line in env.ok(&["export", path]).lines().skip(1) {
                let m: Value = serde_json::from_str(line).unwrap();
                let text = m["content"].as_str().unwrap_or("");
                let Some(open) = text.find("line 000000") else {
                    continue;
                };
                let shown = &text[open..];
                let (head, rest) = shown.split_once("\n[… ").unwrap();
                let (cut, tail) = rest.split_once(" chars cut …]\n").unwrap();
                let tail = tail.split_once("\n[").map_or(tail, |(t, _)| t);
                let tail = &tail[..tail.rfind("\n").map_or(0, |i| i + 1)];
                let cut: usize = cut.parse().unwrap();
                assert!(output.starts_with(head), "{from} -> {to}: {head:?}");
                // The tail is the output's own end, up to what the target shows after it.
                let tail_at = output.rfind(tail).unwrap();
                assert_eq!(
                    head.len() + cut + (output.len() - tail_at),
                    full,
                    "{from} -> {to} (budget {budget:?}): {}",
                    &text[..text.len().min(300)]
                );
                seen += 1;
            }
            if budget.is_none_or(|b| b == "6000") {
                assert!(
                    seen > 0,
                    "{from} -> {to} (budget {budget:?}): no output relayed"
                );
            }
            outputs_seen += seen;
        }
    }
    assert!(outputs_seen >= 12, "{outputs_seen}");
}
