//! `stats`: its counts against a count made here from the fixture files' own lines, relays and
//! their continuation across a task relayed Claude Code -> Codex -> Claude Code -> Gemini CLI
//! (kept when `clean` deletes the relayed sessions), and no secret on any of its outputs.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::{TestEnv, fixtures, session_with_prompts};

/// A key the redactor masks.
const SECRET: &str = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";

/// What this file counts of a session, straight from the agent's lines.
#[derive(Debug, Default, PartialEq)]
struct Counted {
    user: u64,
    calls: u64,
    shell: u64,
    errors: u64,
    interruptions: u64,
    corrections: u64,
}

impl std::ops::AddAssign for Counted {
    fn add_assign(&mut self, o: Counted) {
        self.user += o.user;
        self.calls += o.calls;
        self.shell += o.shell;
        self.errors += o.errors;
        self.interruptions += o.interruptions;
        self.corrections += o.corrections;
    }
}

/// A Claude Code transcript with one branch: its prompts (user texts that are not Claude
/// Code's own tags or interruption notes), `tool_use` blocks (`Bash` is a shell), failed
/// `tool_result` blocks, interruption notes, and prompts right after a tool's block.
fn count_claude(path: &Path) -> Counted {
    let mut c = Counted::default();
    let mut after_tool = false;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let kind = v["type"].as_str().unwrap_or("");
        if v["isSidechain"] == json!(true) || v["isMeta"] == json!(true) {
            continue;
        }
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let content = &v["message"]["content"];
        let blocks = match content {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        };
        for b in blocks {
            match b["type"].as_str() {
                Some("tool_use") => {
                    c.calls += 1;
                    c.shell += u64::from(b["name"] == "Bash");
                    after_tool = true;
                }
                Some("tool_result") => {
                    c.errors += u64::from(b["is_error"] == json!(true));
                    after_tool = true;
                }
                Some("text") if kind == "assistant" => after_tool = false,
                Some("text") => {
                    let text = b["text"].as_str().unwrap();
                    if text.starts_with("[Request interrupted") {
                        c.interruptions += 1;
                    } else if !text.trim_start().starts_with('<') {
                        c.user += 1;
                        c.corrections += u64::from(after_tool);
                        after_tool = false;
                    }
                }
                _ => {}
            }
        }
    }
    c
}

/// A pi session: `user` messages, `toolCall` items of `assistant` messages (`bash` is a
/// shell), `toolResult` messages with `isError`.
fn count_pi(path: &Path) -> Counted {
    let mut c = Counted::default();
    let mut after_tool = false;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let m = &v["message"];
        match m["role"].as_str() {
            Some("user") => {
                c.user += 1;
                c.corrections += u64::from(after_tool);
                after_tool = false;
            }
            Some("assistant") => {
                for item in m["content"].as_array().unwrap() {
                    match item["type"].as_str() {
                        Some("toolCall") => {
                            c.calls += 1;
                            c.shell += u64::from(item["name"] == "bash");
                            after_tool = true;
                        }
                        Some("text") => after_tool = false,
                        _ => {}
                    }
                }
            }
            Some("toolResult") => {
                c.errors += u64::from(m["isError"] == json!(true));
                after_tool = true;
            }
            _ => {}
        }
    }
    c
}

/// What `stats --json` says of one agent.
fn reported(stats: &Value, agent: &str) -> (Counted, u64) {
    let a = stats["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == agent)
        .unwrap_or_else(|| panic!("no {agent} in {stats:#}"));
    let n = |k: &str| a[k].as_u64().unwrap();
    (
        Counted {
            user: n("user_messages"),
            calls: n("tool_calls_total"),
            shell: a["tool_calls"]["shell"].as_u64().unwrap_or(0),
            errors: n("tool_errors"),
            interruptions: n("interruptions"),
            corrections: n("corrections"),
        },
        n("sessions"),
    )
}

#[test]
fn stats_counts_match_a_count_of_the_fixture_files_own_lines() {
    let env = TestEnv::empty();
    let claude = [
        "-home-dev-projects-interactive/771ce1df-ae7a-4516-8192-f08c38166af2.jsonl",
        "-home-dev-projects-handmade/5d0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c6d.jsonl",
    ];
    let mut want_claude = Counted::default();
    for rel in claude {
        let from = fixtures().join("claude/projects").join(rel);
        let to = env.claude_home().join("projects").join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
        want_claude += count_claude(&from);
    }
    let pi_rel = "sessions/--home-dev-proj-pi-tools--/2026-12-06T03-21-23-324Z_01a2495e-dc76-70e7-9e93-7c506f83998c.jsonl";
    let pi_from = fixtures().join("pi").join(pi_rel);
    let pi_to = env.home("pi").join(pi_rel);
    std::fs::create_dir_all(pi_to.parent().unwrap()).unwrap();
    std::fs::copy(&pi_from, &pi_to).unwrap();
    let want_pi = count_pi(&pi_from);
    // Something to count in each: the comparison would prove nothing on empty files.
    assert!(want_claude.calls > 5 && want_claude.errors > 0 && want_claude.interruptions > 0);
    assert!(want_claude.corrections > 0, "{want_claude:?}");
    assert!(want_pi.calls > 5 && want_pi.errors > 0, "{want_pi:?}");

    let cold = env.json(&["stats", "--json"]);
    assert_eq!(cold["schema_version"], 1);
    assert_eq!(reported(&cold, "claude"), (want_claude, 2));
    assert_eq!(reported(&cold, "pi"), (want_pi, 1));
    assert_eq!(cold["total"]["sessions"], 3);
    // Counted once, then taken from the listing cache: the same figures.
    let cache = std::fs::read_to_string(env.dir.path().join("state/session-relay/list-cache.json"))
        .unwrap();
    assert_eq!(cache.matches("\"counts\"").count(), 3, "{cache}");
    let warm = env.json(&["stats", "--json"]);
    assert_eq!(warm["total"], cold["total"]);
    assert_eq!(warm["agents"], cold["agents"]);
    // One agent, one project.
    let pi_only = env.json(&["stats", "--json", "--agent", "pi"]);
    assert_eq!(pi_only["total"]["sessions"], 1);
    let project = env.json(&[
        "stats",
        "--json",
        "--project",
        "/home/dev/projects/interactive",
    ]);
    assert_eq!(project["total"]["sessions"], 1);
    assert_eq!(project["total"]["tool_calls_total"], 9);
    // Sessions last active long ago are out of a short range.
    let recent = env.json(&["stats", "--json", "--since", "1h"]);
    assert_eq!(recent["total"]["sessions"], 0);
    let text = env.ok(&["stats"]);
    assert!(text.contains("3 sessions"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("pi ")), "{text}");
}

/// `relay ID --to AGENT` into the project: the target's id and path.
fn relay(env: &TestEnv, id: &str, to: &str, proj: &str) -> (String, String) {
    let r = env.json(&["relay", id, "--to", to, "--cwd", proj, "--json"]);
    (
        r["target"]["id"].as_str().unwrap().to_string(),
        r["target"]["path"].as_str().unwrap().to_string(),
    )
}

fn append_line(path: &str, line: &Value) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(f, "{line}").unwrap();
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A flow's relays and how many were continued, of how many that can be told.
fn flow(stats: &Value, from: &str, to: &str) -> (u64, u64, u64) {
    let f = stats["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["from"] == from && f["to"] == to)
        .unwrap_or_else(|| panic!("no {from} -> {to} in {stats:#}"));
    let n = |k: &str| f[k].as_u64().unwrap();
    (n("relays"), n("continued"), n("known"))
}

/// Each output of `stats` (text, JSON, page): none holds the planted secret.
fn stats_outputs(env: &TestEnv) -> Value {
    let page = env.dir.path().join("stats.html");
    let json_text = env.ok(&["stats", "--json", "--html", page.to_str().unwrap()]);
    let text = env.ok(&["stats"]);
    let html = std::fs::read_to_string(&page).unwrap();
    for (what, out) in [("json", &json_text), ("text", &text), ("page", &html)] {
        assert!(
            !out.contains(SECRET),
            "the planted secret in the {what}:\n{out}"
        );
    }
    assert!(html.contains("REDACTED") && json_text.contains("REDACTED"));
    serde_json::from_str(&json_text).unwrap()
}

#[test]
fn stats_tells_relays_between_agents_and_which_were_continued_even_once_cleaned() {
    let env = TestEnv::empty();
    let proj = env.project();
    let source = session_with_prompts(&env, "claude", &[&format!("Deploy with {SECRET}"), "Go"]);
    // A session whose directory holds the secret too.
    let fixture = fixtures()
        .join("claude/projects/-home-dev-projects-gen-parallel/22e102b9-1989-435e-97c6-36525d092081.jsonl");
    let dir = env.claude_home().join("projects/-home-dev-secret");
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(fixture).unwrap().replace(
        "/home/dev/projects/gen_parallel",
        &format!("/home/dev/{SECRET}/app"),
    );
    std::fs::write(dir.join("22e102b9-1989-435e-97c6-36525d092081.jsonl"), text).unwrap();

    let (codex, codex_path) = relay(&env, &source, "codex", &proj);
    append_line(
        &codex_path,
        &json!({"timestamp": now(), "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "Go on in Codex"}]}}),
    );
    let (claude, claude_path) = relay(&env, &codex, "claude", &proj);
    let last_uuid = std::fs::read_to_string(&claude_path)
        .unwrap()
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["uuid"].as_str().map(str::to_string));
    append_line(
        &claude_path,
        &json!({"parentUuid": last_uuid, "isSidechain": false, "type": "user",
            "message": {"role": "user", "content": "Back in Claude Code"},
            "uuid": "appended", "timestamp": now(), "userType": "external", "cwd": proj,
            "sessionId": claude, "version": "2.1.332"}),
    );
    relay(&env, &claude, "gemini", &proj);

    let stats = stats_outputs(&env);
    assert_eq!(stats["total"]["relays_out"], 3);
    assert_eq!(flow(&stats, "claude", "codex"), (1, 1, 1));
    assert_eq!(flow(&stats, "codex", "claude"), (1, 1, 1));
    assert_eq!(flow(&stats, "claude", "gemini"), (1, 0, 1));
    // A relayed session counts only what was done in it after the relay: the Codex one its
    // appended prompt, the Gemini one nothing.
    assert_eq!(reported(&stats, "codex").0.user, 1);
    assert_eq!(reported(&stats, "gemini").0.user, 0);
    let chains = stats["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 1, "{stats:#}");
    assert_eq!(
        chains[0]["agents"],
        json!(["claude", "codex", "claude", "gemini"])
    );
    assert_eq!(chains[0]["relays_out"], 3);

    // Deleted, the relayed sessions can no longer say they grew: the ledger says it for them.
    env.ok(&[
        "clean",
        "--older-than",
        "0m",
        "--include-continued",
        "--yes",
    ]);
    let ledger =
        std::fs::read_to_string(env.dir.path().join("state/session-relay/ledger.jsonl")).unwrap();
    let cleaned: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "clean")
        .collect();
    assert_eq!(cleaned.len(), 3, "{ledger}");
    let mut continued: Vec<(String, Value)> = cleaned
        .iter()
        .map(|e| {
            (
                e["target"]["agent"].as_str().unwrap().to_string(),
                e["continued"].clone(),
            )
        })
        .collect();
    continued.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        continued,
        [
            ("claude".to_string(), json!(true)),
            ("codex".to_string(), json!(true)),
            ("gemini".to_string(), json!(false))
        ]
    );
    let after = stats_outputs(&env);
    assert_eq!(flow(&after, "claude", "codex"), (1, 1, 1));
    assert_eq!(flow(&after, "codex", "claude"), (1, 1, 1));
    assert_eq!(flow(&after, "claude", "gemini"), (1, 0, 1));
    assert_eq!(after["total"]["relays_in_continued"], 2);
}

/// The page says which colour is which agent before the first chart, and draws every kind of
/// tool call in a colour of its own.
#[test]
fn the_page_names_agent_colours_first_and_gives_each_tool_kind_its_own() {
    let env = TestEnv::with_fixtures();
    let page = env.dir.path().join("stats.html");
    env.ok(&["stats", "--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    let legend = html.find("class=\"legend\"").expect("an agent legend");
    let chart = html.find("<section class=\"chart\"").expect("a chart");
    assert!(legend < chart, "the legend comes after the charts");
    // The kind legend of the tool-call chart: a swatch, then the kind's name.
    let kinds = [
        "shell", "read", "write", "edit", "search", "plan", "web", "subagent", "other",
    ];
    let fills: Vec<&str> = kinds
        .iter()
        .map(|k| {
            let label = format!(">{k}</text>");
            let at = html
                .find(&label)
                .unwrap_or_else(|| panic!("no {k} in the legend"));
            let swatch = &html[..at];
            let fill = swatch.rfind("fill=\"").unwrap() + 6;
            &swatch[fill..fill + 7]
        })
        .collect();
    let distinct: std::collections::BTreeSet<_> = fills.iter().collect();
    assert_eq!(distinct.len(), kinds.len(), "{fills:?}");
}

/// What each agent records when the person steps in, in sessions its real CLI wrote
/// (`fixtures/interventions`): Esc twice at Codex's approval prompt, Esc at Gemini CLI's, Esc
/// during a pi answer, "No" at Qwen Code's prompt and at Copilot CLI's, and Esc Esc during a
/// Copilot CLI answer, "Reject" at OpenCode's prompt and Esc Esc during its answer. A refused
/// call is not a tool error too.
#[test]
fn stats_counts_the_interruptions_and_refusals_every_agent_records() {
    let env = TestEnv::empty();
    let agents = ["codex", "gemini", "pi", "qwen", "copilot", "opencode"];
    for agent in agents {
        let from = fixtures().join("interventions").join(agent);
        crate::common::copy_tree(&from, &env.home(agent));
    }
    let stats = env.json(&["stats", "--json"]);
    let got: Vec<_> = agents
        .iter()
        .map(|agent| {
            let (c, sessions) = reported(&stats, agent);
            let rejected = stats["agents"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["name"] == *agent)
                .unwrap()["rejected"]
                .as_u64()
                .unwrap();
            (*agent, sessions, c.interruptions, rejected, c.errors)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("codex", 1, 2, 0, 0),
            ("gemini", 1, 1, 1, 2),
            ("pi", 1, 1, 0, 0),
            ("qwen", 1, 0, 1, 0),
            ("copilot", 1, 1, 1, 0),
            ("opencode", 1, 1, 1, 0),
        ]
    );
}
