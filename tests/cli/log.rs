//! `log`: one task relayed Claude Code -> Codex -> Claude Code -> Gemini CLI, with a user turn
//! appended to each of the first two relayed sessions, shown whole from any session of it.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::{TestEnv, session_with_prompts};

/// A key the redactor masks, planted in the first prompt of the source.
pub(crate) const SECRET: &str = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";

/// `relay ID --to AGENT` into the project: the target's id and path.
fn relay(env: &TestEnv, id: &str, to: &str, proj: &str) -> (String, String) {
    let r = env.json(&["relay", id, "--to", to, "--cwd", proj, "--json"]);
    (
        r["target"]["id"].as_str().unwrap().to_string(),
        r["target"]["path"].as_str().unwrap().to_string(),
    )
}

pub(crate) fn append_line(path: &str, line: &Value) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(f, "{line}").unwrap();
}

/// A user turn as Codex writes one at the end of a rollout.
pub(crate) fn codex_user_turn(text: &str) -> Value {
    json!({"timestamp": "2026-12-01T10:00:00.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": text}]}})
}

/// A user turn as Claude Code writes one, chained to the transcript's last line.
pub(crate) fn claude_user_turn(path: &str, id: &str, cwd: &str, text: &str) -> Value {
    let last_uuid = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["uuid"].as_str().map(str::to_string));
    json!({"parentUuid": last_uuid, "isSidechain": false, "type": "user",
        "message": {"role": "user", "content": text}, "uuid": "appended-user-turn",
        "timestamp": "2026-12-01T11:00:00.000Z", "userType": "external", "cwd": cwd,
        "sessionId": id, "version": "2.1.332"})
}

/// The chain's sessions as (agent, id, gone) and its relays as (from, to, continued).
type Shape = (Vec<(String, String, bool)>, Vec<(u64, u64, Value)>);

fn shape(chain: &Value) -> Shape {
    let sessions = chain["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["agent"].as_str().unwrap().to_string(),
                s["id"].as_str().unwrap().to_string(),
                s["gone"].as_bool().unwrap(),
            )
        })
        .collect();
    let relays = chain["relays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["from"].as_u64().unwrap(),
                r["to"].as_u64().unwrap(),
                r["continued"].clone(),
            )
        })
        .collect();
    (sessions, relays)
}

/// `log ARGS --json` (and as text): its one chain, after checking no secret is in either.
fn log_chain(env: &TestEnv, args: &[&str]) -> (Value, String) {
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let json_text = env.ok(&with_json);
    let text = env.ok(args);
    for out in [&json_text, &text] {
        assert!(
            !out.contains(SECRET),
            "the planted secret in log output:\n{out}"
        );
    }
    let v: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(v["schema_version"], 1);
    let chains = v["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 1, "{v:#}");
    (chains[0].clone(), text)
}

#[test]
fn log_shows_a_task_relayed_across_four_agents_from_any_of_its_sessions() {
    let env = TestEnv::empty();
    let proj = env.project();
    let first_prompt = format!("Deploy the greeter with token {SECRET}");
    let source = session_with_prompts(&env, "claude", &[&first_prompt, "Now add a test"]);
    let (codex, codex_path) = relay(&env, &source, "codex", &proj);
    append_line(&codex_path, &codex_user_turn("Go on in Codex"));
    let (claude, claude_path) = relay(&env, &codex, "claude", &proj);
    append_line(
        &claude_path,
        &claude_user_turn(&claude_path, &claude, &proj, "Back in Claude Code"),
    );
    let (gemini, gemini_path) = relay(&env, &claude, "gemini", &proj);
    assert!(Path::new(&gemini_path).is_file());

    let want_sessions: Vec<(String, String, bool)> = [
        ("claude", &source),
        ("codex", &codex),
        ("claude", &claude),
        ("gemini", &gemini),
    ]
    .into_iter()
    .map(|(a, id)| (a.to_string(), id.to_string(), false))
    .collect();
    // The first two relayed sessions were continued; the last was not.
    let want_relays = vec![
        (0, 1, json!(true)),
        (1, 2, json!(true)),
        (2, 3, json!(false)),
    ];
    for (asked, place) in [(&source, 0), (&codex, 1), (&gemini, 3)] {
        let (chain, text) = log_chain(&env, &["log", asked]);
        assert_eq!(shape(&chain), (want_sessions.clone(), want_relays.clone()));
        assert_eq!(chain["asked"], place);
        assert!(
            text.contains("Chain claude -> codex -> claude -> gemini (4 sessions, 3 relays)"),
            "{text}"
        );
        assert_eq!(
            text.matches("continued after the relay").count(),
            2,
            "{text}"
        );
        assert_eq!(text.matches("not continued").count(), 1, "{text}");
    }
    let (chain, _) = log_chain(&env, &["log", &gemini]);
    for r in chain["relays"].as_array().unwrap() {
        assert!(r["in_ledger"].as_bool().unwrap(), "{r}");
        let kept = &r["kept"];
        let turns: u64 = ["verbatim", "shortened", "summarized", "left_out"]
            .iter()
            .map(|k| kept[k]["turns"].as_u64().unwrap())
            .sum();
        assert!(turns >= 2, "{kept}");
        assert!(r["budget"].as_u64().unwrap() >= r["written_tokens"].as_u64().unwrap());
        assert_eq!(r["secrets"]["redacted"], true);
    }
    // The source's key was masked by the first relay (wherever it was repeated).
    let masked = &chain["relays"][0]["secrets"]["masked"]["github_token"];
    assert!(masked.as_u64().is_some_and(|n| n >= 1), "{masked}");
    let s = &chain["sessions"];
    assert_eq!(s[0]["turns"], 2, "{s}");
    assert_eq!(s[1]["cwd"], proj.as_str());

    // Without SESSION: this directory's newest session, which is in the same chain.
    let out = env
        .cmd()
        .args(["log", "--json"])
        .current_dir(&proj)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shape(&v["chains"][0]).0, want_sessions);

    // The middle Codex session deleted: still in its place, as gone, and found by its id.
    std::fs::remove_file(&codex_path).unwrap();
    let mut gone = want_sessions.clone();
    gone[1].2 = true;
    let want_gone = vec![
        (0, 1, Value::Null),
        (1, 2, json!(true)),
        (2, 3, json!(false)),
    ];
    for asked in [&source, &codex, &gemini] {
        let (chain, text) = log_chain(&env, &["log", asked]);
        assert_eq!(shape(&chain), (gone.clone(), want_gone.clone()));
        assert!(
            text.contains(&format!("codex {codex}  [gone: deleted]")),
            "{text}"
        );
    }
    // --all: the one chain.
    let all = env.json(&["log", "--all", "--json"]);
    assert_eq!(all["chains"].as_array().unwrap().len(), 1, "{all:#}");
    assert_eq!(all["chains"][0]["asked"], Value::Null);
    assert_eq!(shape(&all["chains"][0]), (gone.clone(), want_gone.clone()));

    // `clean` takes the one relay nobody continued, the Gemini session: gone, and said so.
    let cleaned = env.json(&["clean", "--older-than", "0m", "--yes", "--json"]);
    let deleted: Vec<&Value> = cleaned["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["action"] == "deleted")
        .map(|s| &s["id"])
        .collect();
    assert_eq!(deleted, [&json!(gemini)], "{cleaned:#}");
    let (chain, text) = log_chain(&env, &["log", &source]);
    let mut both = gone;
    both[3].2 = true;
    let mut want = want_gone;
    want[2].2 = Value::Null;
    assert_eq!(shape(&chain), (both, want));
    assert_eq!(chain["sessions"][3]["cleaned"], true);
    assert!(
        text.contains(&format!(
            "gemini {gemini}  [gone: deleted by session-relay clean]"
        )),
        "{text}"
    );
}

/// A session no relay touched is a chain of one; a ledger written before relays recorded
/// their fit still reads, its figures unknown.
#[test]
fn log_of_a_lone_session_and_of_an_older_ledger_line() {
    let env = TestEnv::empty();
    let proj = env.project();
    let source = session_with_prompts(&env, "claude", &["Hello", "More"]);
    let (chain, text) = log_chain(&env, &["log", &source]);
    assert_eq!(chain["sessions"].as_array().unwrap().len(), 1);
    assert!(text.contains("(1 session, 0 relays)"), "{text}");
    assert_eq!(
        env.json(&["log", "--all", "--json"])["chains"],
        json!([]),
        "no chain without a relay"
    );

    let (target, _) = relay(&env, &source, "codex", &proj);
    // The ledger line as session-relay wrote it before it recorded `fit` and `secrets`.
    let ledger = env.dir.path().join("state/session-relay/ledger.jsonl");
    let text = std::fs::read_to_string(&ledger).unwrap();
    let old: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            assert!(o.contains_key("fit") || o["event"] != "relay", "{l}");
            o.remove("fit");
            o.remove("secrets");
            v.to_string()
        })
        .collect();
    std::fs::write(&ledger, old.join("\n") + "\n").unwrap();
    let (chain, text) = log_chain(&env, &["log", &target]);
    let r = &chain["relays"][0];
    assert_eq!((&r["kept"], &r["secrets"]), (&Value::Null, &Value::Null));
    assert_eq!(r["continued"], false);
    assert!(
        text.contains("kept       not recorded (an older relay)"),
        "{text}"
    );

    // Without the ledger (lost, or kept on another machine), the relayed session's provenance
    // record still links it to its source.
    std::fs::remove_file(&ledger).unwrap();
    let (chain, text) = log_chain(&env, &["log", &source]);
    let ids: Vec<&Value> = chain["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["id"])
        .collect();
    assert_eq!(ids, [&json!(source), &json!(target)]);
    let r = &chain["relays"][0];
    assert_eq!((r["from"].as_u64(), r["to"].as_u64()), (Some(0), Some(1)));
    assert_eq!(r["in_ledger"], false);
    assert!(r["relayed_at"].is_string(), "{r}");
    assert!(
        text.contains("known by its provenance record only"),
        "{text}"
    );
}

/// A relay's source named by a file outside every store (a copy, an export) is read where it
/// is: it is there, not gone.
#[test]
fn log_reads_a_source_outside_the_stores_where_it_is() {
    let env = TestEnv::empty();
    let proj = env.project();
    let id = session_with_prompts(&env, "claude", &["Hello", "More"]);
    let stored = walkdir::WalkDir::new(env.home("claude"))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy() == format!("{id}.jsonl"))
        .expect("the written session")
        .into_path();
    let outside = env.dir.path().join("elsewhere/copy.jsonl");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::rename(&stored, &outside).unwrap();
    let outside = outside.to_str().unwrap();

    let (target, _) = relay(&env, outside, "codex", &proj);
    let (chain, text) = log_chain(&env, &["log", &target]);
    let (sessions, relays) = shape(&chain);
    assert_eq!(
        sessions,
        [
            ("claude".to_string(), id.clone(), false),
            ("codex".to_string(), target.clone(), false),
        ],
        "{text}"
    );
    assert_eq!(relays.len(), 1);
    assert!(!text.contains("gone"), "{text}");
    assert_eq!(chain["sessions"][0]["turns"], 2, "{chain}");

    std::fs::remove_file(outside).unwrap();
    let (chain, _) = log_chain(&env, &["log", &target]);
    assert_eq!(chain["sessions"][0]["gone"], true, "{chain}");
}

/// On a machine with no agent's store left (the homes removed), the ledger still tells its
/// relays, their sessions gone; a damaged ledger line is a warning naming it, not a failure.
#[test]
fn log_without_any_store_shows_what_the_ledger_knows() {
    let mut env = TestEnv::empty();
    env.removing_stores();
    let proj = env.project();
    let source = session_with_prompts(&env, "claude", &["Hello", "More"]);
    let (target, _) = relay(&env, &source, "codex", &proj);
    let ledger = env.dir.path().join("state/session-relay/ledger.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&ledger)
        .unwrap();
    writeln!(f, "{{\"event\": \"relay\", damaged").unwrap();
    let lines = std::fs::read_to_string(&ledger).unwrap().lines().count();
    for agent in session_relay::adapters::names() {
        std::fs::remove_dir_all(env.home(agent)).unwrap();
    }
    let v = env.json(&["log", "--all", "--json"]);
    let chains = v["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 1, "{v:#}");
    let (sessions, relays) = shape(&chains[0]);
    assert_eq!(
        sessions,
        [
            ("claude".to_string(), source.clone(), true),
            ("codex".to_string(), target.clone(), true)
        ]
    );
    assert_eq!(relays.len(), 1, "{v:#}");
    let warned = format!("{}:{lines}", ledger.display());
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains(&warned)),
        "no warning naming {warned}: {v:#}"
    );
    let text = env.ok(&["log", &target]);
    assert!(text.contains(&source), "{text}");
}
