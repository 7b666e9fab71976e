//! `status`: the context usage each agent recorded, computed here independently from every
//! fixture (a whole-file pass, where `status` reads only the tail), and whether a relay of each
//! session is up to date.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{TestEnv, fixture_sessions, fixtures};

/// (tokens, recorded window) as the agent recorded them for its newest request, from a
/// forward pass over the whole file.
fn recorded(agent: &str, path: &Path) -> Option<(u64, Option<u64>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok());
    match agent {
        "claude" => {
            // One count per API message (its lines repeat the usage); the newest answer the
            // session's own context produced decides.
            let mut per_message: Vec<(String, Option<u64>)> = Vec::new();
            for v in lines {
                let answer = v["type"] == "assistant"
                    && v["isSidechain"] != true
                    && v["isApiErrorMessage"] != true
                    && v["message"]["model"] != "<synthetic>";
                if !answer {
                    continue;
                }
                let u = &v["message"]["usage"];
                let n = |k: &str| u[k].as_u64().unwrap_or(0);
                let tokens = n("input_tokens")
                    + n("cache_creation_input_tokens")
                    + n("cache_read_input_tokens");
                let id = v["message"]["id"].as_str().unwrap_or("").to_string();
                per_message.retain(|(m, _)| *m != id || id.is_empty());
                per_message.push((id, (tokens > 0).then_some(tokens)));
            }
            per_message.last().and_then(|(_, t)| *t).map(|t| (t, None))
        }
        "codex" => lines
            .filter(|v| v["payload"]["type"] == "token_count" && v["payload"]["info"].is_object())
            // Forward to the end, on purpose: the whole file, where status reads the tail.
            .fold(None, |_, v| Some(v))
            .and_then(|v| {
                let info = &v["payload"]["info"];
                Some((
                    info["last_token_usage"]["total_tokens"].as_u64()?,
                    info["model_context_window"].as_u64(),
                ))
            }),
        // The newest model call of the session itself (a subagent's are its own).
        "copilot" => lines
            .filter(|v| v["type"] == "session.usage_record" && !v["agentId"].is_string())
            .fold(None, |_, v| Some(v))
            .and_then(|v| v["data"]["usage"]["inputTokens"].as_u64())
            .filter(|t| *t > 0)
            .map(|t| (t, None)),
        "qwen" => lines
            .filter(|v| v["type"] == "assistant")
            .filter_map(|v| v["usageMetadata"]["promptTokenCount"].as_u64())
            .filter(|n| *n > 0)
            // Forward to the end, on purpose: the whole file, where status reads the tail.
            .fold(None, |_, n| Some(n))
            .map(|t| (t, None)),
        // The newest answer decides: input + cache read + cache write of its usage.
        "pi" => lines
            .filter(|v| v["type"] == "message" && v["message"]["role"] == "assistant")
            .fold(None, |_, v| Some(v))
            .and_then(|v| {
                let u = &v["message"]["usage"];
                let n = |k: &str| u[k].as_u64().unwrap_or(0);
                let tokens = n("input") + n("cacheRead") + n("cacheWrite");
                (tokens > 0).then_some((tokens, None))
            }),
        _ => None,
    }
}

#[test]
fn status_reports_the_usage_every_fixture_records() {
    let env = TestEnv::with_fixtures();
    let report = env.json(&["status", "--all", "--json"]);
    assert_eq!(report["schema_version"], 1);
    let shown: BTreeMap<PathBuf, Value> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (PathBuf::from(s["path"].as_str().unwrap()), s.clone()))
        .collect();
    let mut compared = 0;
    let mut with_usage = Vec::new();
    for (agent, path) in fixture_sessions() {
        let rel = path.strip_prefix(fixtures().join(agent)).unwrap();
        let copy = env.home(agent).join(rel);
        let name = rel.display().to_string();
        // Subagent transcripts and archived sessions are not live sessions of their own.
        if name.contains("/subagents/") || name.starts_with("archived_sessions") {
            assert!(!shown.contains_key(&copy), "{name} is not a live session");
            continue;
        }
        if path.extension().is_some_and(|e| e == "zst") {
            continue; // compressed: status does not read it (nor does any tail reader)
        }
        let Some(s) = shown.get(&copy) else {
            // One row per session: another copy of the same session (Gemini keeps one under
            // its project's old hash folder and one under its slug) stands for this one, and
            // a subagent transcript is not a live session of its own.
            let session = env.json(&["show", copy.to_str().unwrap(), "--json"]);
            let id = &session["session"]["id"];
            let subagent = !session["session"]["parent_id"].is_null()
                || session["session"]["extra"]["kind"] == "subagent";
            assert!(
                subagent || shown.values().any(|row| &row["id"] == id),
                "{name} missing from status, and no other copy of session {id} is shown"
            );
            continue;
        };
        let expected = recorded(agent, &path);
        match expected {
            None => assert!(s["context"].is_null(), "{name}: {}", s["context"]),
            Some((tokens, window)) => {
                let c = &s["context"];
                assert_eq!(c["tokens"], tokens, "{name}");
                let adapter = session_relay::adapters::by_name(agent).unwrap();
                let default = adapter.default_context_window();
                assert_eq!(c["window"], window.unwrap_or(default), "{name}");
                assert_eq!(
                    c["window_from"],
                    if window.is_some() {
                        "recorded"
                    } else {
                        "config"
                    },
                    "{name}"
                );
                let pct = tokens as f64 * 100.0 / window.unwrap_or(default) as f64;
                assert!(
                    (c["percent"].as_f64().unwrap() - pct).abs() <= 0.05,
                    "{name}"
                );
                with_usage.push(name.clone());
            }
        }
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} sessions compared");
    // The genuine sessions record usage: the real Claude API ones, Claude Code 2.1.332's,
    // Codex 0.171's and Copilot CLI 1.0.102's.
    for must in [
        "session-state/8115de0d-43fd-46f8-8b65-0cfbedf277ab/events.jsonl",
        "-Users-pete-git-moredip-session-share/4b2030ed",
        "-Users-pete-tmp-claude-code-sessions/0ccf1a04",
        "-home-dev-projects-compact/b62416f1",
        "2026/11/30/rollout-2026-11-30T02-52-17-01a22a5e",
        "2026/06/05/rollout-2026-06-05T04-58-20",
    ] {
        assert!(
            with_usage.iter().any(|n| n.contains(must)),
            "{must} should record usage: {with_usage:?}"
        );
    }
}

#[test]
fn status_shows_this_directorys_sessions_and_their_relays() {
    let mut env = TestEnv::with_fixtures();
    let proj = env.project();
    // Only this directory's sessions by default (the fixtures' directories do not exist here).
    let none = env.json(&["status", "--json"]);
    assert_eq!(none["sessions"].as_array().unwrap().len(), 0);
    let text = env.ok(&["status"]);
    assert!(text.starts_with("No sessions for "), "{text}");

    let r = env.json(&[
        "relay", "771ce1df", "--to", "codex", "--cwd", &proj, "--json",
    ]);
    let target = r["target"]["id"].as_str().unwrap().to_string();
    let dir = "/home/dev/projects/interactive";
    let s = env.json(&["status", "--cwd", dir, "--json"]);
    let sessions = s["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{s}");
    let relays = sessions[0]["relays"].as_array().unwrap();
    assert_eq!(relays.len(), 1);
    assert_eq!(relays[0]["up_to_date"], true);
    assert_eq!(relays[0]["target"]["id"], target.as_str());
    assert_eq!(
        relays[0]["resume_command"],
        format!("codex resume {target}").as_str()
    );
    let text = env.ok(&["status", "--cwd", dir]);
    assert!(text.contains("codex up to date"), "{text}");
    assert!(
        text.contains(&format!("resume: codex resume {target}")),
        "{text}"
    );
    // The relayed session is a live session of the project, marked as a relay.
    let here = env.json(&["status", "--cwd", &proj, "--json"]);
    let relayed = &here["sessions"][0];
    assert_eq!(relayed["id"], target.as_str());
    assert_eq!(
        relayed["relay"]["from"]["id"],
        "771ce1df-ae7a-4516-8192-f08c38166af2"
    );
    assert!(env.ok(&["status", "--cwd", &proj]).contains("[relay]"));

    // The session grows: the relay is outdated.
    env.removing_stores();
    let source = env
        .claude_home()
        .join("projects/-home-dev-projects-interactive/771ce1df-ae7a-4516-8192-f08c38166af2.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&source)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"type\":\"last-prompt\",\"lastPrompt\":\"more\"}\n",
    )
    .unwrap();
    drop(f);
    let s = env.json(&["status", "--cwd", dir, "--json"]);
    assert_eq!(s["sessions"][0]["relays"][0]["up_to_date"], false, "{s}");
    assert!(env.ok(&["status", "--cwd", dir]).contains("codex outdated"));
}

#[test]
fn status_finds_the_newest_usage_behind_long_lines() {
    // A Codex rollout of 30 MB of one-megabyte lines; the newest token_count with usage comes
    // before one without (rate limits only).
    let env = TestEnv::empty();
    let dir = env.codex_home().join("sessions/2026/11/30");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rollout-2026-11-30T10-00-00-0199a000-0000-7000-8000-00000000aaaa.jsonl");
    let cwd = env.project();
    let mut text = format!(
        "{{\"timestamp\":\"2026-11-30T10:00:00Z\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"0199a000-0000-7000-8000-00000000aaaa\",\"timestamp\":\"2026-11-30T10:00:00Z\",\"cwd\":\"{cwd}\",\"source\":\"cli\"}}}}\n"
    );
    text.push_str("{\"timestamp\":\"2026-11-30T10:00:01Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"user_message\",\"message\":\"hi\"}}\n");
    let filler = format!(
        "{{\"timestamp\":\"2026-11-30T10:00:02Z\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"last_token_usage\":{{\"total_tokens\":1}},\"model_context_window\":1}}}},\"pad\":\"{}\"}}\n",
        "x".repeat(1 << 20)
    );
    for _ in 0..30 {
        text.push_str(&filler);
    }
    text.push_str("{\"timestamp\":\"2026-11-30T10:00:03Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":{\"last_token_usage\":{\"input_tokens\":100000,\"output_tokens\":500,\"total_tokens\":100500},\"model_context_window\":200000}}}\n");
    text.push_str("{\"timestamp\":\"2026-11-30T10:00:04Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"info\":null,\"rate_limits\":{}}}\n");
    std::fs::write(&path, text).unwrap();
    let s = env.json(&["status", "--cwd", &cwd, "--json"]);
    let c = &s["sessions"][0]["context"];
    assert_eq!(c["tokens"], 100_500, "{s}");
    assert_eq!(c["window"], 200_000);
    assert_eq!(c["percent"], 50.3);
}
