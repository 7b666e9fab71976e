//! Re-relaying a session that grew: a new relay that supersedes the earlier one in the ledger,
//! `clean --superseded` for the replaced relays nobody continued, and `list` marking relays.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::TestEnv;

const SOURCE: &str =
    "projects/-home-dev-projects-interactive/771ce1df-ae7a-4516-8192-f08c38166af2.jsonl";

fn grow(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    std::io::Write::write_all(
        &mut f,
        format!("{{\"type\":\"last-prompt\",\"lastPrompt\":\"{text}\"}}\n").as_bytes(),
    )
    .unwrap();
}

fn relay(env: &TestEnv, proj: &str) -> Value {
    env.json(&[
        "relay", "771ce1df", "--to", "codex", "--cwd", proj, "--json",
    ])
}

/// The ledger's relay entries (each store relay is followed by the entry of its registration).
fn ledger(env: &TestEnv) -> Vec<Value> {
    std::fs::read_to_string(env.dir.path().join("state/session-relay/ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] != "registered")
        .collect()
}

#[test]
fn a_grown_session_is_relayed_again_and_supersedes_the_earlier_relay() {
    let mut env = TestEnv::with_fixtures();
    env.removing_stores(); // the source grows on purpose
    let proj = env.project();
    let source = env.claude_home().join(SOURCE);

    let first = relay(&env, &proj);
    assert_eq!(first["already_relayed"], false);
    assert_eq!(first["supersedes"], serde_json::json!([]));
    let again = relay(&env, &proj);
    assert_eq!(again["already_relayed"], true);
    assert_eq!(again["target"]["id"], first["target"]["id"]);

    grow(&source, "one more thing");
    let second = relay(&env, &proj);
    assert_eq!(second["already_relayed"], false, "{second}");
    assert_ne!(second["target"]["id"], first["target"]["id"]);
    assert_eq!(second["supersedes"][0]["id"], first["target"]["id"]);
    assert!(
        second["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("clean --superseded")),
        "{second}"
    );
    let last = ledger(&env).pop().unwrap();
    assert_eq!(last["supersedes"][0]["path"], first["target"]["path"]);
    assert_eq!(
        last["source_bytes"],
        std::fs::metadata(&source).unwrap().len()
    );
    // Unchanged since: answered from the ledger with the newest relay.
    let text = env.ok(&["relay", "771ce1df", "--to", "codex", "--cwd", &proj]);
    assert!(
        text.starts_with(&format!(
            "Already relayed as Codex CLI session {}",
            second["target"]["id"].as_str().unwrap()
        )),
        "{text}"
    );
    // A dry run of a grown source says what it would supersede and records nothing.
    grow(&source, "and another");
    let before = ledger(&env).len();
    let dry = env.json(&[
        "relay",
        "771ce1df",
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--dry-run",
        "--json",
    ]);
    assert_eq!(dry["supersedes"][0]["id"], second["target"]["id"]);
    assert_eq!(ledger(&env).len(), before);
    // A third relay supersedes the second only: the first is superseded already.
    let third = relay(&env, &proj);
    let replaced: Vec<&Value> = third["supersedes"].as_array().unwrap().iter().collect();
    assert_eq!(replaced.len(), 1);
    assert_eq!(replaced[0]["id"], second["target"]["id"]);
}

#[test]
fn clean_superseded_removes_replaced_relays_nobody_continued() {
    let mut env = TestEnv::with_fixtures();
    env.removing_stores();
    let proj = env.project();
    let source = env.claude_home().join(SOURCE);
    let first = relay(&env, &proj);
    grow(&source, "step 2");
    let second = relay(&env, &proj);
    grow(&source, "step 3");
    let third = relay(&env, &proj);
    // Someone resumed the second relay and went on working in it.
    let continued = PathBuf::from(second["target"]["path"].as_str().unwrap());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&continued)
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"timestamp\":\"2026-12-01T00:00:00Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"user_message\",\"message\":\"go on\"}}\n").unwrap();
    drop(f);
    // Another session relayed once: not superseded, not a candidate.
    let other = env.json(&[
        "relay", "01a22a5d", "--to", "claude", "--cwd", &proj, "--json",
    ]);

    let listed = env.list_json(&["list", "--cwd", &proj, "--json"]);
    let mark = |id: &Value| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == *id)
            .map(|s| s["relay"].clone())
            .unwrap()
    };
    assert_eq!(mark(&first["target"]["id"])["superseded"], true);
    assert_eq!(mark(&first["target"]["id"])["in_ledger"], true);
    assert_eq!(
        mark(&first["target"]["id"])["from"]["id"],
        "771ce1df-ae7a-4516-8192-f08c38166af2"
    );
    assert_eq!(mark(&third["target"]["id"])["superseded"], false);
    assert_eq!(mark(&other["target"]["id"])["from"]["agent"], "codex");
    let text = env.ok(&["list", "--cwd", &proj]);
    assert!(text.contains("[relay, superseded] relay_"), "{text}");
    assert!(text.contains("[relay] relay_"), "{text}");
    // Native sessions carry no mark.
    let all = env.list_json(&["list", "--all", "--json"]);
    let native = all
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "771ce1df-ae7a-4516-8192-f08c38166af2")
        .unwrap();
    assert!(native["relay"].is_null(), "{native}");

    let dry = env.json(&["clean", "--superseded", "--dry-run", "--json"]);
    let actions: Vec<(String, String)> = dry["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![
            (
                first["target"]["id"].as_str().unwrap().to_string(),
                "would_delete".into()
            ),
            (
                second["target"]["id"].as_str().unwrap().to_string(),
                "kept".into()
            ),
        ],
        "{dry}"
    );
    let done = env.json(&["clean", "--superseded", "--yes", "--json"]);
    assert_eq!(done["sessions"][0]["action"], "deleted");
    assert!(!Path::new(first["target"]["path"].as_str().unwrap()).exists());
    assert!(continued.exists());
    assert!(Path::new(third["target"]["path"].as_str().unwrap()).exists());
    assert!(Path::new(other["target"]["path"].as_str().unwrap()).exists());
    // Its title line left Codex's index with it.
    let index = std::fs::read_to_string(env.codex_home().join("session_index.jsonl")).unwrap();
    assert!(!index.contains(first["target"]["id"].as_str().unwrap()));
    assert!(index.contains(third["target"]["id"].as_str().unwrap()));
}

#[test]
fn relays_of_one_source_are_listed_newest_relay_first() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    for (source, to) in [("771ce1df", "codex"), ("01a22a5d", "claude")] {
        // Five relays: listed in any other order (by their random ids, say), the check
        // fails but once in 120 runs.
        let relayed: Vec<String> = (0..5)
            .map(|_| {
                let r = env.json(&[
                    "relay", source, "--to", to, "--cwd", &proj, "--force", "--json",
                ]);
                r["target"]["id"].as_str().unwrap().to_string()
            })
            .collect();
        let listed = env.list_json(&["list", "--cwd", &proj, "--agent", to, "--json"]);
        let rows = listed.as_array().unwrap();
        let times: Vec<&Value> = rows.iter().map(|s| &s["updated"]).collect();
        assert!(
            times.iter().all(|t| *t == times[0]),
            "the relays tie on their newest message: {listed}"
        );
        let order: Vec<String> = rows
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect();
        let newest_first: Vec<String> = relayed.iter().rev().cloned().collect();
        assert_eq!(order, newest_first, "{listed}");
        let stamps: Vec<&str> = rows
            .iter()
            .map(|s| s["relay_of"]["relayed_at"].as_str().unwrap())
            .collect();
        assert!(stamps.windows(2).all(|w| w[0] > w[1]), "{stamps:?}");
    }
}

#[test]
fn a_session_is_listed_before_its_relays_that_tie_with_it() {
    // Relayed within its own agent, a session's relays carry its message times: they tie.
    // The session comes first (`latest` picks it, not a copy nobody continued), then its
    // relays, the one relayed last first.
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    // Its newest line is a message, so its relays' newest messages have its time.
    let source = "5d0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c6d";
    let relayed: Vec<String> = (0..4)
        .map(|_| {
            let r = env.json(&[
                "relay", "5d0c3a1e", "--to", "claude", "--cwd", &proj, "--force", "--json",
            ]);
            r["target"]["id"].as_str().unwrap().to_string()
        })
        .collect();
    let listed = env.list_json(&["list", "--all", "--agent", "claude", "--json"]);
    let rows: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == source || relayed.iter().any(|r| s["id"] == r.as_str()))
        .collect();
    assert!(
        rows.iter().all(|s| s["updated"] == rows[0]["updated"]),
        "they tie on their newest message: {rows:?}"
    );
    let order: Vec<&str> = rows.iter().map(|s| s["id"].as_str().unwrap()).collect();
    let want: Vec<&str> = std::iter::once(source)
        .chain(relayed.iter().rev().map(String::as_str))
        .collect();
    assert_eq!(order, want);
}

#[test]
fn a_source_that_grows_while_it_is_relayed_is_recorded_as_far_as_the_relay_read_it() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let mut env = TestEnv::with_fixtures();
    env.removing_stores(); // the source grows on purpose
    let proj = env.project();
    let source = walkdir::WalkDir::new(env.codex_home().join("sessions"))
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .find(|p| p.to_string_lossy().contains("01a22a5d"))
        .unwrap();
    // The agent goes on writing while the relays run: a prompt a few times a millisecond,
    // each line written whole.
    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let (stop, source) = (stop.clone(), source.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&source)
                .unwrap();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let line = format!(
                    "{{\"timestamp\":\"2026-12-01T00:{:02}:{:02}.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"prompt-{n:06}-end\"}}]}}}}\n",
                    (n / 60) % 60,
                    n % 60
                );
                std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
            n
        })
    };
    let prompt = regex::Regex::new(r"prompt-(\d{6})-end").unwrap();
    let mut checked = 0;
    for _ in 0..6 {
        let relayed = env.json(&[
            "relay", "01a22a5d", "--to", "claude", "--cwd", &proj, "--json",
        ]);
        assert_eq!(relayed["already_relayed"], false, "{relayed}");
        let entry = ledger(&env).pop().unwrap();
        let len = entry["source_bytes"].as_u64().unwrap() as usize;
        let now = std::fs::read(&source).unwrap();
        assert!(now.len() >= len);
        // The hash is of the bytes the size says, so that the source is found unchanged only
        // when it is unchanged.
        assert_eq!(
            entry["source"]["sha256"].as_str().unwrap(),
            session_relay::ledger::sha256_bytes(&now[..len]),
            "source_bytes {len}, file now {}",
            now.len()
        );
        // And the relay holds every prompt of those bytes.
        let newest = prompt
            .captures_iter(&String::from_utf8_lossy(&now[..len]))
            .last()
            .map(|c| c[1].to_string());
        let written = std::fs::read_to_string(relayed["target"]["path"].as_str().unwrap()).unwrap();
        if let Some(n) = newest {
            assert!(written.contains(&format!("prompt-{n}-end")), "prompt {n}");
            checked += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(appender.join().unwrap() > 0);
    // The appender was ahead of most relays: the check above ran.
    assert!(checked >= 3, "{checked} relays read an appended prompt");
}
