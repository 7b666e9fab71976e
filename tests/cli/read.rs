//! What each reader makes of every fixture, pinned by snapshots, plus bad input and the
//! guarantee that reading never writes.

use crate::common::{TestEnv, fixture_sessions, fixtures};
use serde_json::Value;

fn snapshot_name(path: &std::path::Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    let stem = name
        .trim_end_matches(".jsonl")
        .trim_end_matches(".json")
        .replace(['.', ' '], "_");
    // Files of one name in several folders are told apart by a folder above theirs: Gemini CLI
    // keeps an older copy of a session in its legacy project folder (the folder above
    // `chats/`), Copilot CLI names every log `events.jsonl` in a folder named for its session.
    let same: Vec<std::path::PathBuf> = fixture_sessions()
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.file_name() == path.file_name())
        .collect();
    if same.len() < 2 {
        return stem;
    }
    let label = |p: &std::path::Path, up: usize, chars: usize| -> String {
        let folder = p.ancestors().nth(up).and_then(|a| a.file_name()).unwrap();
        folder.to_string_lossy().chars().take(chars).collect()
    };
    let distinct = |up: usize, chars: usize| {
        let labels: std::collections::HashSet<String> =
            same.iter().map(|p| label(p, up, chars)).collect();
        labels.len() == same.len()
    };
    let (up, chars) = [(1, 12), (2, 12)]
        .into_iter()
        .find(|&(up, chars)| distinct(up, chars))
        .unwrap_or((1, usize::MAX));
    format!("{}_{stem}", label(path, up, chars))
}

#[test]
fn show_json_of_every_fixture() {
    let env = TestEnv::with_fixtures();
    for (agent, path) in fixture_sessions() {
        let rel = path.strip_prefix(fixtures().join(agent)).unwrap();
        let in_home = env.home(agent).join(rel);
        let v = env.json(&["show", in_home.to_str().unwrap(), "--json"]);
        assert_eq!(v["session"]["agent"], agent);
        insta::assert_json_snapshot!(
            format!("show_{agent}_{}", snapshot_name(&path)),
            v,
            {
                ".session.source_path" => "[path]",
                ".session.subagents[].path" => "[path]",
            }
        );
    }
}

#[test]
fn small_fixtures_export_to_pinned_neutral_jsonl() {
    let env = TestEnv::with_fixtures();
    for (agent, path) in fixture_sessions() {
        if std::fs::metadata(&path).map_or(0, |m| m.len()) > 16 * 1024 {
            continue;
        }
        let out = env.ok(&["export", path.to_str().unwrap(), "--format", "jsonl"]);
        // Subagent transcripts are named by absolute path: keep the snapshot free of where
        // the repository happens to be checked out.
        let out = out
            .replace(path.to_str().unwrap(), "[path]")
            .replace(fixtures().to_str().unwrap(), "[fixtures]");
        insta::assert_snapshot!(format!("export_{agent}_{}", snapshot_name(&path)), out);
    }
}

fn show(env: &TestEnv, id: &str) -> Value {
    env.json(&["show", id, "--json"])
}

#[test]
fn claude_branches_sidechains_and_parallel_calls() {
    let env = TestEnv::with_fixtures();
    // A rewind leaves an abandoned branch: counted, not read.
    let branch = show(&env, "8a4bcf74");
    assert!(
        branch["session"]["stats"]["abandoned_branch_lines"]
            .as_u64()
            .unwrap()
            > 0
    );
    let hand = show(&env, "5d0c3a1e");
    let stats = &hand["session"]["stats"];
    assert_eq!(stats["abandoned_branch_lines"], 1);
    assert_eq!(stats["sidechain_lines"], 2);
    assert_eq!(stats["malformed_lines"], 1);
    assert_eq!(stats["unknown_types"]["future-thing"], 1);
    assert_eq!(stats["orphan_tool_calls"], 1);
    let export = env.ok(&["export", "5d0c3a1e", "--format", "jsonl"]);
    assert!(!export.contains("OLD ATTEMPT"), "abandoned branch leaked");
    assert!(!export.contains("SIDECHAIN"), "sidechain leaked");
    // Parallel calls: every call has its result although the chain branches.
    let par = show(&env, "771ce1df");
    assert_eq!(par["counts"]["tool_call"], par["counts"]["tool_result"]);
    assert_eq!(par["session"]["stats"].get("orphan_tool_calls"), None);
    let par2 = show(&env, "22e102b9");
    assert_eq!(par2["counts"]["tool_call"], 2);
    assert_eq!(par2["counts"]["tool_result"], 2);
}

#[test]
fn claude_meta_compaction_titles_and_todos() {
    let env = TestEnv::with_fixtures();
    let hand = show(&env, "5d0c3a1e");
    assert_eq!(
        hand["session"]["title"], "Parser hardening",
        "custom-title wins"
    );
    assert_eq!(hand["session"]["git"]["branch"], "fix/parser");
    assert_eq!(hand["session"]["todos"][1]["status"], "pending");
    let lines: Vec<Value> = env
        .ok(&["export", "5d0c3a1e"])
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let meta = lines
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .contains("Project uses Rust 2024")
        })
        .unwrap();
    assert_eq!(meta["role"], "system", "isMeta is context, not user words");
    let first_user = lines.iter().find(|m| m["role"] == "user").unwrap();
    assert!(
        first_user["content"]
            .as_str()
            .unwrap()
            .starts_with("Fix the parser")
    );
    assert_eq!(
        first_user["metadata"]["images"][0]["media_type"],
        "image/png"
    );
    let interrupted = lines
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .starts_with("[Request interrupted")
        })
        .unwrap();
    assert_eq!(interrupted["role"], "system");
    let failed = lines
        .iter()
        .find(|m| m["tool_call_id"] == "toolu_edit" && m["role"] == "tool_result")
        .unwrap();
    assert_eq!(failed["is_error"], true);
    let thinking = lines.iter().find(|m| m["role"] == "reasoning").unwrap();
    assert_eq!(thinking["metadata"]["signed"], true);

    // Compaction: boundary and summary kept as context, history before it still readable.
    let compact: Vec<Value> = env
        .ok(&["export", "b62416f1"])
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = compact
        .iter()
        .filter_map(|m| m["metadata"]["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"compaction") && kinds.contains(&"compact_summary"));
    let first = compact.iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(first["content"], "THINK Hi, please DO_BASH to look around.");
    let last = compact.iter().rev().find(|m| m["role"] == "user").unwrap();
    assert_eq!(
        last["content"],
        "Great, thanks. Summarise what we did in one line."
    );
}

#[test]
fn codex_shapes_read_to_the_same_model() {
    let env = TestEnv::with_fixtures();
    let legacy = show(&env, "5973b6c0");
    assert_eq!(legacy["session"]["format"], "codex-pre-envelope");
    assert_eq!(legacy["session"]["cwd"], "/home/dev/projects/legacy");
    assert_eq!(legacy["session"]["git"]["branch"], "feature/legacy");
    assert_eq!(legacy["counts"]["tool_call"], 3);
    assert_eq!(
        legacy["session"]["files_touched"][0],
        "/home/dev/projects/legacy/notes.md"
    );
    let ts = show(&env, "0c5f1e7a");
    assert_eq!(ts["session"]["format"], "codex-typescript");
    assert_eq!(ts["messages"], 2);
    let paginated = show(&env, "01a22a5d");
    assert_eq!(paginated["session"]["format"], "codex-paginated");
    assert_eq!(paginated["session"]["todos"].as_array().unwrap().len(), 4);
    assert_eq!(
        paginated["session"]["files_touched"],
        serde_json::json!(["/home/dev/projects/greeter/app.py"])
    );
    let events = show(&env, "0199a000-0000-7000-8000-0000000e7e27");
    assert_eq!(
        events["messages"], 2,
        "events carry the conversation when items do not"
    );
    assert_eq!(events["session"]["extra"]["conversation_from"], "events");
    // Where response items exist, events are not read a second time.
    let full = show(&env, "0199a000-0000-7000-8000-00000000e0e0");
    assert_eq!(full["counts"]["user"], 1);
    assert_eq!(full["counts"]["assistant"], 1);
}

#[test]
fn codex_injected_context_outputs_and_oddities() {
    let env = TestEnv::with_fixtures();
    let lines: Vec<Value> = env
        .ok(&["export", "0199b111"])
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let instr = lines
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .contains("<user_instructions>")
        })
        .unwrap();
    assert_eq!(instr["role"], "system");
    let web = lines
        .iter()
        .find(|m| m["tool_name"] == "web_search")
        .unwrap();
    assert_eq!(web["tool_input"]["query"], "zstd frame format");
    let shell = lines
        .iter()
        .find(|m| m["tool_name"] == "local_shell")
        .unwrap();
    assert_eq!(shell["tool_call_id"], "call_ls");
    let lossy = lines
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("latin-1"))
        .unwrap();
    assert!(lossy["content"].as_str().unwrap().contains('\u{FFFD}'));
    let compaction = lines
        .iter()
        .find(|m| m["metadata"]["kind"] == "compaction")
        .unwrap();
    assert!(
        compaction["content"]
            .as_str()
            .unwrap()
            .contains("zstd reader patched")
    );

    let shown = show(&env, "0199b111");
    let warnings: Vec<String> = shown["session"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("{}: {}", w["line"], w["message"].as_str().unwrap()))
        .collect();
    let all = warnings.join("\n");
    assert!(all.contains("6: malformed JSON line skipped"), "{all}");
    assert!(all.contains("invalid UTF-8"), "{all}");
    assert!(all.contains("call_orphan"), "{all}");
    assert!(all.contains("call_nobody"), "{all}");
    assert!(
        !all.contains("19:"),
        "a cut-off last line is not an error: {all}"
    );
    assert_eq!(shown["session"]["extra"]["truncated_last_line"], true);
    assert_eq!(
        shown["session"]["stats"]["unknown_types"]["future_line_type"],
        1
    );

    // Legacy outputs that are JSON strings with an `output` field, and their exit codes.
    let legacy: Vec<Value> = env
        .ok(&["export", "5973b6c0"])
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ls = legacy
        .iter()
        .find(|m| m["tool_call_id"] == "call_a" && m["role"] == "tool_result")
        .unwrap();
    assert_eq!(ls["content"], "a.txt\nb.txt\n");
    let failed = legacy
        .iter()
        .find(|m| m["tool_call_id"] == "call_c" && m["role"] == "tool_result")
        .unwrap();
    assert_eq!(failed["is_error"], true);
    // 0.171 plain-text outputs state their exit code.
    let tui: Vec<Value> = env
        .ok(&["export", "01a22a5c"])
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let errors = tui.iter().filter(|m| m["is_error"] == true).count();
    assert_eq!(errors, 1, "exactly the FAIL command failed");
}

#[test]
fn broken_files_get_clear_messages() {
    let env = TestEnv::with_fixtures();
    let broken = fixtures().join("broken");
    // Outside any store, a file of no known shape is refused with its name.
    let (code, err) = env.fails(&["show", broken.join("not-a-session.jsonl").to_str().unwrap()]);
    assert_eq!(code, 3);
    assert!(
        err.contains("not-a-session.jsonl") && err.contains("does not look like"),
        "{err}"
    );
    // Inside a store, the same content is read and warned about, never silently empty.
    let dir = env.codex_home().join("sessions/2026/01/01");
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("rollout-2026-01-01T00-00-00-0199dead-0000-7000-8000-000000000000.jsonl");
    std::fs::copy(broken.join("not-a-session.jsonl"), &target).unwrap();
    let v = env.json(&["show", target.to_str().unwrap(), "--json"]);
    let w = v["session"]["warnings"].to_string();
    assert!(w.contains("not a recognised Codex session shape"), "{w}");
    assert!(
        w.contains("rollout-2026-01-01"),
        "the warning names the file: {w}"
    );

    let target = dir.join("rollout-2026-01-01T00-00-01-0199dead-0000-7000-8000-000000000001.jsonl");
    std::fs::copy(broken.join("all-malformed.jsonl"), &target).unwrap();
    let v = env.json(&["show", target.to_str().unwrap(), "--json"]);
    assert_eq!(v["session"]["stats"]["malformed_lines"], 2);
    let lines: Vec<u64> = v["session"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["line"].as_u64())
        .collect();
    assert_eq!(lines, [1, 2]);

    let target = dir.join("rollout-2026-01-01T00-00-02-0199dead-0000-7000-8000-000000000002.jsonl");
    std::fs::copy(broken.join("empty.jsonl"), &target).unwrap();
    let v = env.json(&["show", target.to_str().unwrap(), "--json"]);
    assert_eq!(v["messages"], 0);
    assert!(
        !v["session"]["warnings"].as_array().unwrap().is_empty(),
        "an empty file is reported"
    );

    // A directory where a file was expected.
    let (code, err) = env.fails(&["show", dir.to_str().unwrap()]);
    assert_eq!(code, 3);
    assert!(err.contains("is a directory"), "{err}");
    // The listing survives all of them.
    env.ok(&["list", "--all"]);
}

#[test]
fn no_command_writes_to_a_session_store() {
    let env = TestEnv::with_fixtures();
    let before = env.snapshot_stores();
    env.ok(&["list", "--all"]);
    env.ok(&["list", "--all", "--json"]);
    for (_, path) in fixture_sessions() {
        let p = path.to_str().unwrap();
        env.ok(&["show", p]);
        env.ok(&["export", p, "--format", "markdown"]);
    }
    env.ok(&["show", "771ce1df"]);
    let out = env.work().join("x.jsonl");
    env.ok(&["export", "01a22a5d", "-o", out.to_str().unwrap()]);
    assert_eq!(before, env.snapshot_stores());
}

#[test]
fn the_claude_estimate_matches_real_recorded_usage() {
    let env = TestEnv::with_fixtures();
    let mut real = 0;
    for (agent, path) in fixture_sessions() {
        let v = env.json(&["show", path.to_str().unwrap(), "--json"]);
        let Some(check) = v.get("context_check").filter(|c| !c.is_null()) else {
            continue;
        };
        // Sessions written against a mock model record a constant: nothing grows. The
        // OpenCode sessions' mock recorded a quarter of each request's bytes, which grows as
        // the request does but is no model's count.
        if check["recorded_growth"].as_u64().unwrap() < 500 || agent == "opencode" {
            continue;
        }
        assert_eq!(agent, "claude");
        real += 1;
        let ratio = check["ratio"].as_f64().unwrap();
        assert!(
            (0.85..=1.15).contains(&ratio),
            "{}: recorded growth {} vs our {} ({ratio:.2}x with {})",
            path.display(),
            check["recorded_growth"],
            check["estimated_growth"],
            check["tokenizer"]
        );
    }
    assert!(
        real >= 2,
        "the real Claude Code sessions are missing ({real})"
    );
}

/// A compaction starts the agent's context over: the context check compares the newest request
/// with the first one after the last compaction, never with one before it.
#[test]
fn the_context_check_starts_over_at_a_compaction() {
    let env = TestEnv::with_fixtures();
    let source = fixture_sessions()
        .into_iter()
        .find(|(_, p)| p.to_string_lossy().contains("-home-dev-projects-compact/"))
        .expect("the compacted Claude Code fixture")
        .1;
    // The context grows by 100 tokens a line up to the compaction, then starts over small.
    let mut boundary = None;
    let mut recorded = Vec::new();
    let lines: Vec<String> = std::fs::read_to_string(&source)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let mut v: Value = serde_json::from_str(line).unwrap();
            if v["subtype"] == "compact_boundary" {
                boundary = Some(i);
            }
            if let Some(u) = v.pointer_mut("/message/usage") {
                let tokens = if boundary.is_some() { 10 * i } else { 100 * i } as u64;
                u["input_tokens"] = tokens.into();
                recorded.push((i, tokens));
            }
            v.to_string()
        })
        .collect();
    let boundary = boundary.expect("a compact_boundary line");
    let path = env.work().join("compacted.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();

    let v = env.json(&["show", path.to_str().unwrap(), "--json"]);
    let newest = recorded.last().unwrap().1;
    let first_after = recorded.iter().find(|(i, _)| *i > boundary).unwrap().1;
    let check = &v["context_check"];
    assert_eq!(check["recorded_tokens"], newest);
    assert_eq!(check["recorded_growth"], newest - first_after, "{check}");
    assert!(check["estimated_growth"].as_u64().unwrap() > 0, "{check}");
    assert!(check["ratio"].as_f64().is_some(), "{check}");
    // Before the compaction, the same session compares with its very first request.
    let cut = env.work().join("before-compaction.jsonl");
    std::fs::write(&cut, lines[..boundary].join("\n") + "\n").unwrap();
    let v = env.json(&["show", cut.to_str().unwrap(), "--json"]);
    let before: Vec<_> = recorded.iter().filter(|(i, _)| *i < boundary).collect();
    assert_eq!(
        v["context_check"]["recorded_growth"],
        before.last().unwrap().1 - before[0].1
    );
}
