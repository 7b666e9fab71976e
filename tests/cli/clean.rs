//! `clean` over a mixed store: native sessions of both agents, relayed sessions old and new, a
//! continued one, a relayed-looking file the ledger does not know, a symlink out of the store.

use std::path::{Path, PathBuf};

use crate::common::TestEnv;
use serde_json::Value;

fn relay(env: &TestEnv, id: &str, to: &str, proj: &str) -> (String, PathBuf) {
    let r = env.json(&["relay", id, "--to", to, "--cwd", proj, "--json"]);
    (
        r["target"]["id"].as_str().unwrap().to_string(),
        PathBuf::from(r["target"]["path"].as_str().unwrap()),
    )
}

fn ledger(env: &TestEnv) -> PathBuf {
    env.dir.path().join("state/session-relay/ledger.jsonl")
}

/// Moves the relay time of the ledger entries for these target ids `days` into the past.
fn age(env: &TestEnv, ids: &[&str], days: i64) {
    let text = std::fs::read_to_string(ledger(env)).unwrap();
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if ids.contains(&v["target"]["id"].as_str().unwrap()) {
                let t = chrono::Utc::now() - chrono::Duration::days(days);
                v["time"] = Value::String(t.to_rfc3339());
            }
            v.to_string()
        })
        .collect();
    std::fs::write(ledger(env), out.join("\n") + "\n").unwrap();
}

fn outcomes(v: &Value) -> Vec<(String, String)> {
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["action"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn action(v: &Value, id: &str) -> String {
    outcomes(v)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, a)| a)
        .unwrap_or_else(|| "absent".into())
}

/// Gives `path` the time it had two hours ago: older than `clean`'s hour for temporary files.
fn two_hours_old(path: &Path) {
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
}

/// Whether a report's notes hold `note`.
fn noted(report: &Value, note: &str) -> bool {
    report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == note)
}

#[test]
fn clean_deletes_exactly_the_old_unchanged_relays() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let (old_codex, old_codex_path) = relay(&env, "771ce1df", "codex", &proj);
    let (old_claude, old_claude_path) = relay(&env, "01a22a5d", "claude", &proj);
    let (continued, continued_path) = relay(&env, "b62416f1", "claude", &proj);
    let (new_codex, new_codex_path) = relay(&env, "01a22a5c", "codex", &proj);
    age(&env, &[&old_codex, &old_claude, &continued], 40);
    // The user went on working in one of them.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&continued_path)
        .unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"type\":\"last-prompt\",\"lastPrompt\":\"more work\"}\n",
    )
    .unwrap();
    drop(f);
    // A relayed-looking file session-relay did not write (not in the ledger).
    let impostor = old_codex_path
        .with_file_name("rollout-2026-01-01T00-00-00-0199beef-0000-7000-8000-000000000000.jsonl");
    std::fs::copy(&old_codex_path, &impostor).unwrap();
    let index_before =
        std::fs::read_to_string(env.codex_home().join("session_index.jsonl")).unwrap();
    assert!(index_before.contains(&old_codex));
    let before = env.snapshot_stores();

    // Without --yes and without a terminal: a report, nothing deleted.
    let report = env.json(&["clean", "--json"]);
    assert_eq!(action(&report, &old_codex), "would_delete");
    assert!(
        report["notes"].to_string().contains("--yes"),
        "{}",
        report["notes"]
    );
    assert_eq!(before, env.snapshot_stores());
    // --dry-run: the same.
    let dry = env.json(&["clean", "--dry-run", "--yes", "--json"]);
    assert_eq!(action(&dry, &old_claude), "would_delete");
    assert_eq!(before, env.snapshot_stores());

    let done = env.json(&["clean", "--older-than", "30d", "--yes", "--json"]);
    assert_eq!(action(&done, &old_codex), "deleted");
    assert_eq!(action(&done, &old_claude), "deleted");
    assert_eq!(action(&done, &continued), "kept");
    assert_eq!(action(&done, &new_codex), "kept");
    assert_eq!(
        action(&done, "0199beef-0000-7000-8000-000000000000"),
        "absent",
        "not in the ledger: not a candidate"
    );

    let after = env.snapshot_stores();
    let gone: Vec<&PathBuf> = before.keys().filter(|p| !after.contains_key(*p)).collect();
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(gone.contains(&&old_codex_path) && gone.contains(&&old_claude_path));
    let changed: Vec<&PathBuf> = after
        .iter()
        .filter(|(p, h)| before.get(*p) != Some(h))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        changed,
        vec![&env.codex_home().join("session_index.jsonl")],
        "only the index line changed"
    );
    let index_after =
        std::fs::read_to_string(env.codex_home().join("session_index.jsonl")).unwrap();
    assert!(!index_after.contains(&old_codex));
    assert!(index_after.contains(&new_codex));
    assert_eq!(
        index_after.lines().count(),
        index_before.lines().count() - 1
    );
    assert!(impostor.exists() && continued_path.exists() && new_codex_path.exists());
    // The ledger records the deletions; a second run has nothing left to delete.
    let ledger_text = std::fs::read_to_string(ledger(&env)).unwrap();
    assert_eq!(
        ledger_text
            .lines()
            .filter(|l| l.contains("\"event\":\"clean\""))
            .count(),
        2
    );
    let again = env.json(&["clean", "--yes", "--json"]);
    assert!(outcomes(&again).iter().all(|(_, a)| a != "deleted"));

    // Continued sessions go only when asked.
    let all = env.json(&["clean", "--include-continued", "--yes", "--json"]);
    assert_eq!(action(&all, &continued), "deleted");
    assert!(!continued_path.exists());
    // Quiet prints nothing.
    let quiet = env.ok(&["clean", "--yes", "--quiet"]);
    assert_eq!(quiet, "");
    // Everything relayed, at any age.
    let rest = env.json(&["clean", "--older-than", "0d", "--yes", "--json"]);
    assert_eq!(action(&rest, &new_codex), "deleted");
    // Native sessions were never touched.
    for (_, path) in crate::common::fixture_sessions() {
        let rel = path.strip_prefix(crate::common::fixtures()).unwrap();
        let in_env = env.dir.path().join(rel);
        assert!(in_env.exists(), "{} deleted", in_env.display());
    }
}

fn reason(v: &Value, id: &str) -> String {
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .and_then(|s| s["reason"].as_str())
        .unwrap_or("absent")
        .to_string()
}

/// A relayed session written again by another serializer (its provenance record's words as
/// `\u` escapes) is still proven to be session-relay's, and one deleted with
/// `--include-continued` is said to have been continued, not to be unchanged.
#[test]
fn a_relay_written_again_is_still_proven_and_said_to_be_continued() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let (kept_id, _) = relay(&env, "771ce1df", "gemini", &proj);
    let (id, path) = relay(&env, "01a22a5d", "claude", &proj);
    age(&env, &[&id, &kept_id], 40);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("session-relay"));
    let again: Vec<String> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let t = v
                .to_string()
                .replace("session-relay", "\\u0073ession-relay");
            assert_eq!(serde_json::from_str::<Value>(&t).unwrap(), v);
            t
        })
        .collect();
    std::fs::write(&path, again.join("\n") + "\n").unwrap();
    let dry = env.json(&["clean", "--older-than", "30d", "--dry-run", "--json"]);
    assert_eq!(action(&dry, &id), "kept");
    assert!(reason(&dry, &id).contains("continued"), "{dry}");
    let all = env.json(&[
        "clean",
        "--older-than",
        "30d",
        "--include-continued",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(action(&all, &id), "would_delete", "{all}");
    assert_eq!(
        reason(&all, &id),
        "relayed by session-relay, continued after the relay (--include-continued)"
    );
    assert_eq!(action(&all, &kept_id), "would_delete");
    assert_eq!(
        reason(&all, &kept_id),
        "relayed by session-relay, unchanged"
    );
}

#[test]
fn clean_never_follows_a_symlink_out_of_a_store() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let (id, path) = relay(&env, "771ce1df", "claude", &proj);
    age(&env, &[&id], 40);
    let outside = env.work().join("precious.jsonl");
    std::fs::rename(&path, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &path).unwrap();
    let v = env.json(&["clean", "--yes", "--json"]);
    assert_eq!(action(&v, &id), "kept");
    assert!(v.to_string().contains("symbolic link"), "{v}");
    assert!(outside.exists() && path.symlink_metadata().is_ok());

    // A whole store folder that is a link elsewhere: the file is not inside the store as
    // configured once links are resolved... unless the store itself is that folder.
    let (id2, path2) = relay(&env, "01a22a5d", "codex", &proj);
    age(&env, &[&id2], 40);
    let real_dir = env.work().join("elsewhere");
    let day_dir = path2.parent().unwrap();
    std::fs::rename(day_dir, &real_dir).unwrap();
    std::os::unix::fs::symlink(&real_dir, day_dir).unwrap();
    let moved = real_dir.join(path2.file_name().unwrap());
    let v = env.json(&["clean", "--yes", "--json"]);
    assert_eq!(action(&v, &id2), "kept", "{v}");
    assert!(moved.exists());
}

#[test]
fn clean_is_cron_safe() {
    let mut env = TestEnv::with_fixtures();
    // Another run holds the lock.
    let state = env.dir.path().join("state/session-relay");
    std::fs::create_dir_all(&state).unwrap();
    let lock = std::fs::File::create(state.join("clean.lock")).unwrap();
    lock.lock().unwrap();
    let (code, err) = env.fails(&["clean", "--yes"]);
    assert_eq!(code, 6);
    assert!(
        err.contains("another `session-relay clean` is running"),
        "{err}"
    );
    drop(lock);
    env.ok(&["clean", "--yes"]);
    // A missing store is said clearly; no store at all is exit code 4.
    env.removing_stores();
    std::fs::remove_dir_all(env.claude_home().join("projects")).unwrap();
    let out = env.ok(&["clean", "--yes"]);
    assert!(out.contains("Claude Code store not found"), "{out}");
    std::fs::remove_dir_all(env.codex_home().join("sessions")).unwrap();
    std::fs::remove_dir_all(env.codex_home().join("archived_sessions")).unwrap();
    std::fs::remove_dir_all(env.home("gemini").join(".gemini/tmp")).unwrap();
    let (code, err) = env.fails(&["clean", "--yes"]);
    assert_eq!(code, 4, "{err}");
    let (code, err) = env.fails(&["clean", "--older-than", "soon"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn clean_names_the_ledger_lines_it_cannot_read() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let (id, path) = relay(&env, "771ce1df", "codex", &proj);
    age(&env, &[&id], 40);
    let mut text = std::fs::read_to_string(ledger(&env)).unwrap();
    text.insert_str(0, "{\"event\":\"relay\",\"time\":cut off\n");
    std::fs::write(ledger(&env), text).unwrap();
    let v = env.json(&["clean", "--yes", "--json"]);
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("ledger.jsonl:1: ledger line skipped"),
        "{notes}"
    );
    // The readable lines still count: the old relay is cleaned.
    assert!(!path.exists(), "{v}");
}

/// A session whose index entries cannot be removed is kept, whole and still indexed where it
/// was, and the clean fails; a later clean, once the index can be written, deletes it.
#[test]
fn clean_keeps_a_session_its_index_cannot_forget() {
    let mut env = TestEnv::with_fixtures();
    env.removing_stores();
    let proj = env.project();
    let (id, path) = relay(&env, "771ce1df", "codex", &proj);
    let index = env.codex_home().join("session_index.jsonl");
    let text = std::fs::read(&index).unwrap();
    std::fs::remove_file(&index).unwrap();
    std::fs::create_dir(&index).unwrap();
    let (code, out) = env.fails(&["clean", "--older-than", "0d", "--yes"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("could not be deleted"), "{out}");
    assert!(path.exists(), "deleted although its index still names it");
    let ledger_text = std::fs::read_to_string(ledger(&env)).unwrap();
    assert!(!ledger_text.contains("\"event\":\"clean\""));
    std::fs::remove_dir(&index).unwrap();
    std::fs::write(&index, text).unwrap();
    let done = env.json(&["clean", "--older-than", "0d", "--yes", "--json"]);
    assert_eq!(action(&done, &id), "deleted");
    assert!(!path.exists());
    assert!(!std::fs::read_to_string(&index).unwrap().contains(&id));
}

/// A temporary file a relay killed mid-write left in a store is removed once it is an hour
/// old; a fresh one (a relay may be writing it) and files not named as session-relay names
/// its own stay.
#[test]
fn clean_removes_the_temporary_files_of_interrupted_relays() {
    let mut env = TestEnv::with_fixtures();
    env.removing_stores();
    let dir = env.codex_home().join("sessions/2026/11/29");
    let old = dir.join(".session-relay-AbC123");
    let fresh = dir.join(".session-relay-XyZ789");
    let other = dir.join(".tmp-AbC123");
    for p in [&old, &fresh, &other] {
        std::fs::write(p, "{\"half\":").unwrap();
    }
    for p in [&old, &other] {
        two_hours_old(p);
    }
    let dry = env.json(&["clean", "--dry-run", "--json"]);
    assert!(
        noted(
            &dry,
            "would remove 1 temporary file(s) left by interrupted relays"
        ),
        "{dry}"
    );
    assert!(old.exists());
    let done = env.json(&["clean", "--yes", "--json"]);
    assert!(
        noted(
            &done,
            "removed 1 temporary file(s) left by interrupted relays"
        ),
        "{done}"
    );
    assert!(!old.exists() && fresh.exists() && other.exists());
}

/// A Claude Code session is any `.jsonl` in a project folder, and a relay's file is checked
/// beside where it will lie, by that extension, before it takes its name: one an interrupted
/// relay left there is no session of the user's to list, and `clean` takes it away.
#[test]
fn a_relay_file_left_before_its_name_is_not_listed_as_a_session() {
    let mut env = TestEnv::with_fixtures();
    env.removing_stores();
    let before = env.list_json(&["list", "--all", "--json"]);
    let rows = before.as_array().unwrap();
    let claude = rows
        .iter()
        .find(|r| r["agent"] == "claude")
        .expect("a Claude fixture");
    let source = PathBuf::from(claude["path"].as_str().unwrap());
    let left = source.with_file_name(".session-relay-AbC123.jsonl");
    std::fs::copy(&source, &left).unwrap();
    two_hours_old(&left);
    assert_eq!(env.list_json(&["list", "--all", "--json"]), before);
    let done = env.json(&["clean", "--yes", "--json"]);
    assert!(
        noted(
            &done,
            "removed 1 temporary file(s) left by interrupted relays"
        ),
        "{done}"
    );
    assert!(!left.exists() && source.exists());
}
