//! A relay into Codex is three writes: the rollout, its row in `state_5.sqlite` and its line in
//! `session_index.jsonl`. A relay is done only when all three are: one that failed to register
//! is not reported as relayed, and one interrupted between them is completed by the next relay
//! of the same session or by `doctor --fix`, never answered "Already relayed" as it is.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{TestEnv, fixtures};
use serde_json::Value;

/// A Codex home holding the fixtures and the thread index Codex 0.171 creates.
fn env_with_thread_index() -> TestEnv {
    let env = TestEnv::with_fixtures();
    std::fs::copy(fixtures().join("codex-index/state_5.sqlite"), db_path(&env)).unwrap();
    env
}

fn db_path(env: &TestEnv) -> PathBuf {
    env.codex_home().join("state_5.sqlite")
}

fn has_row(env: &TestEnv, id: &str) -> bool {
    let conn = rusqlite::Connection::open(db_path(env)).unwrap();
    conn.query_row("SELECT COUNT(*) FROM threads WHERE id = ?1", [id], |r| {
        r.get::<_, i64>(0)
    })
    .unwrap()
        == 1
}

fn index_lines(env: &TestEnv, id: &str) -> usize {
    std::fs::read_to_string(env.codex_home().join("session_index.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["id"] == id)
        .count()
}

fn ledger(env: &TestEnv) -> PathBuf {
    env.dir.path().join("state/session-relay/ledger.jsonl")
}

fn relay(env: &TestEnv) -> Value {
    let proj = env.project();
    env.json(&[
        "relay", "771ce1df", "--to", "codex", "--cwd", &proj, "--json",
    ])
}

/// What a relay killed after its rollout landed leaves: the rollout, the ledger's relay entry,
/// and neither index entry (nor the ledger's word that they were made).
fn forget_registration(env: &TestEnv, id: &str) {
    let conn = rusqlite::Connection::open(db_path(env)).unwrap();
    conn.execute("DELETE FROM threads WHERE id = ?1", [id])
        .unwrap();
    drop(conn);
    let index = env.codex_home().join("session_index.jsonl");
    let kept: String = std::fs::read_to_string(&index)
        .unwrap()
        .lines()
        .filter(|l| !l.contains(id))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&index, kept).unwrap();
    let text = std::fs::read_to_string(ledger(env)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let registered = lines
        .iter()
        .rposition(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["event"] == "registered" && v["target"]["id"] == id
        })
        .unwrap_or_else(|| panic!("no registration of {id} in {text}"));
    lines.remove(registered);
    std::fs::write(ledger(env), format!("{}\n", lines.join("\n"))).unwrap();
}

#[test]
fn a_relay_interrupted_before_registering_is_completed_by_the_next_relay_or_doctor_fix() {
    let env = env_with_thread_index();
    let first = relay(&env);
    let id = first["target"]["id"].as_str().unwrap().to_string();
    assert!(has_row(&env, &id) && index_lines(&env, &id) == 1, "{first}");

    forget_registration(&env, &id);
    let doctor = env.json(&["doctor", "--json"]);
    assert_eq!(
        doctor["state"]["ledger"]["unregistered"][0], first["target"]["path"],
        "{doctor}"
    );
    assert!(
        doctor["problems"].to_string().contains("doctor --fix"),
        "{doctor}"
    );
    let again = relay(&env);
    assert_eq!(again["already_relayed"], true, "{again}");
    assert_eq!(again["target"]["id"], id.as_str());
    assert!(
        again["notes"]
            .to_string()
            .contains("completed its registration"),
        "{again}"
    );
    assert!(has_row(&env, &id), "the next relay registered it");
    assert_eq!(index_lines(&env, &id), 1);
    // Done now: the relay after that has nothing to complete.
    let third = relay(&env);
    assert!(
        !third["notes"].to_string().contains("registration"),
        "{third}"
    );

    forget_registration(&env, &id);
    let fixed = env.json(&["doctor", "--fix", "--json"]);
    assert_eq!(
        fixed["state"]["ledger"]["registered_now"][0], first["target"]["path"],
        "{fixed}"
    );
    assert!(has_row(&env, &id), "doctor --fix registered it");
    assert_eq!(index_lines(&env, &id), 1);
    let after = env.json(&["doctor", "--json"]);
    assert_eq!(
        after["state"]["ledger"]["unregistered"],
        serde_json::json!([])
    );
}

/// A thread index that cannot be written to (held locked past the busy timeout) or read (not
/// a database) fails the relay, and nothing is left of it; it used to be a note, with the relay
/// reported done, a database that could not be read blamed on an unknown schema.
#[test]
fn a_thread_index_that_cannot_be_written_fails_the_relay_and_leaves_nothing() {
    let env = env_with_thread_index();
    let proj = env.project();
    let before = env.snapshot_stores();
    let locked = rusqlite::Connection::open(db_path(&env)).unwrap();
    locked.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let (code, err) = env.fails(&["relay", "771ce1df", "--to", "codex", "--cwd", &proj]);
    assert_ne!(code, 0);
    assert!(err.contains("thread index"), "{err}");
    assert!(err.contains("nothing was relayed"), "{err}");
    locked.execute_batch("ROLLBACK").unwrap();
    drop(locked);
    let mut now = env.snapshot_stores();
    now.retain(|p, _| !p.to_string_lossy().contains("state_5.sqlite"));
    let mut was = before.clone();
    was.retain(|p, _| !p.to_string_lossy().contains("state_5.sqlite"));
    assert_eq!(now, was, "no rollout and no index line left behind");
    // With the lock gone, the relay is a new one, and registered.
    let r = relay(&env);
    assert_eq!(r["already_relayed"], false, "{r}");
    assert!(has_row(&env, r["target"]["id"].as_str().unwrap()));

    std::fs::write(
        db_path(&env),
        b"not a database, and long enough to look like a header",
    )
    .unwrap();
    let (_, err) = env.fails(&["relay", "5d0c3a1e", "--to", "codex", "--cwd", &proj]);
    assert!(err.contains("state_5.sqlite"), "{err}");
    assert!(!err.contains("schema"), "{err}");
}

/// Killed at any moment, a relay leaves either nothing the next relay takes for done, or a
/// relay the next one completes: after each kill, the session is relayed and registered.
#[test]
fn a_relay_killed_at_any_moment_is_registered_by_the_next() {
    let mut rng = crate::common::Rng(0x6b1d_0047);
    let probe = env_with_thread_index();
    let start = Instant::now();
    relay(&probe);
    let took = start.elapsed();
    for round in 0..crate::common::count(4, 12) {
        let env = env_with_thread_index();
        let proj = env.project();
        let at = Duration::from_micros(rng.below(took.as_micros() as u64 * 5 / 4 + 1));
        killed_after(
            &env,
            &["relay", "771ce1df", "--to", "codex", "--cwd", &proj],
            at,
        );
        let r = relay(&env);
        let id = r["target"]["id"].as_str().unwrap();
        assert!(
            has_row(&env, id) && index_lines(&env, id) == 1,
            "round {round}, killed after {at:?}: {r}"
        );
        assert!(Path::new(r["target"]["path"].as_str().unwrap()).is_file());
    }
}

/// Runs session-relay with `args` and kills it after `at`, wherever it then is.
fn killed_after(env: &TestEnv, args: &[&str], at: Duration) {
    let mut child = env
        .std_cmd(assert_cmd::cargo::cargo_bin("session-relay"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(at);
    let _ = child.kill();
    let _ = child.wait();
}

/// `clean` killed at any moment leaves its session either deleted or listed, or known to the
/// ledger as not registered, which `doctor --fix` then registers: never on disk and missing
/// from its agent's picker unnoticed.
#[test]
fn a_clean_killed_at_any_moment_leaves_no_session_silently_unregistered() {
    let mut rng = crate::common::Rng(0x6b1d_0047_0005);
    let probe = env_with_thread_index();
    relay(&probe);
    let start = Instant::now();
    probe.ok(&["clean", "--older-than", "0d", "--yes"]);
    let took = start.elapsed();
    for round in 0..crate::common::count(8, 30) {
        let env = env_with_thread_index();
        let first = relay(&env);
        let id = first["target"]["id"].as_str().unwrap().to_string();
        let path = PathBuf::from(first["target"]["path"].as_str().unwrap());
        let at = Duration::from_micros(rng.below(took.as_micros() as u64 * 5 / 4 + 1));
        killed_after(&env, &["clean", "--older-than", "0d", "--yes"], at);
        // A later clean names again what an interrupted one set aside, and deletes nothing.
        env.ok(&["clean", "--older-than", "999d", "--yes"]);
        if !path.is_file() {
            continue;
        }
        if !has_row(&env, &id) {
            let doctor = env.json(&["doctor", "--json"]);
            assert_eq!(
                doctor["state"]["ledger"]["unregistered"][0], first["target"]["path"],
                "round {round}, killed after {at:?}: on disk, not registered, and the ledger does not say so: {doctor}"
            );
            env.ok(&["doctor", "--fix"]);
        }
        assert!(
            has_row(&env, &id) && index_lines(&env, &id) == 1,
            "round {round}"
        );
    }
}

/// A relay made into one Codex home is registered in that home's index only: `doctor --fix`
/// run with another home refuses it (and says which home to give), and registers nothing there.
#[test]
fn a_relay_is_registered_only_into_the_store_that_holds_it() {
    let env = env_with_thread_index();
    let first = relay(&env);
    let id = first["target"]["id"].as_str().unwrap().to_string();
    forget_registration(&env, &id);
    let other = env.dir.path().join("other-codex");
    std::fs::create_dir_all(other.join("sessions")).unwrap();
    std::fs::copy(
        fixtures().join("codex-index/state_5.sqlite"),
        other.join("state_5.sqlite"),
    )
    .unwrap();
    let elsewhere = format!("codex={}", other.display());
    let v = env.json(&["--home", &elsewhere, "doctor", "--fix", "--json"]);
    assert_eq!(
        v["state"]["ledger"]["registered_now"],
        serde_json::json!([]),
        "{v}"
    );
    assert!(v["problems"].to_string().contains("--home codex="), "{v}");
    let conn = rusqlite::Connection::open(other.join("state_5.sqlite")).unwrap();
    let rows: i64 = conn
        .query_row("SELECT COUNT(*) FROM threads", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0, "nothing registered into the other home");
    assert!(!other.join("session_index.jsonl").exists());
    // Still awaiting in its own home, where `doctor --fix` registers it.
    env.ok(&["doctor", "--fix"]);
    assert!(has_row(&env, &id) && index_lines(&env, &id) == 1);
}

/// Several `doctor --fix` at once, and a `clean` beside them, register each relay once or
/// delete it whole: no index line twice, no row naming a deleted file, no false error.
#[test]
fn doctor_fix_and_clean_at_once_leave_the_index_whole() {
    let env = env_with_thread_index();
    let proj = env.project();
    let mut ids = Vec::new();
    for source in ["771ce1df", "5d0c3a1e", "01a22a5d", "b62416f1"] {
        let r = env.json(&["relay", source, "--to", "codex", "--cwd", &proj, "--json"]);
        ids.push(r["target"]["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        forget_registration(&env, id);
    }
    let bin = assert_cmd::cargo::cargo_bin("session-relay");
    let mut children: Vec<std::process::Child> = (0..4)
        .map(|_| {
            env.std_cmd(&bin)
                .args(["doctor", "--fix", "--json"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children.push(
        env.std_cmd(&bin)
            .args([
                "clean",
                "--older-than",
                "0d",
                "--yes",
                "--include-continued",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for child in children {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("UNIQUE"), "{text}");
    }
    for (id, r) in ids.iter().zip(0..) {
        let path = std::fs::read_to_string(ledger(&env))
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["target"]["id"] == id.as_str())
            .map(|v| PathBuf::from(v["target"]["path"].as_str().unwrap()))
            .unwrap();
        let indexed = index_lines(&env, id);
        assert!(indexed <= 1, "relay {r}: {indexed} index lines");
        if path.is_file() {
            continue;
        }
        assert!(
            !has_row(&env, id) && indexed == 0,
            "relay {r}: deleted, yet its row or index line remains"
        );
    }
}

/// What the relay of 771ce1df registers: the row's approval mode, sandbox policy and provider,
/// or the relay's notes where it registered none.
fn registered_settings(env: &TestEnv) -> Result<(String, String, String), String> {
    let r = relay(env);
    let id = r["target"]["id"].as_str().unwrap().to_string();
    let conn = rusqlite::Connection::open(db_path(env)).unwrap();
    conn.query_row(
        "SELECT approval_mode, sandbox_policy, model_provider FROM threads WHERE id = ?1",
        [&id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .map_err(|_| format!("not registered: {}", r["notes"]))
}

/// Codex 0.171 records the same approval mode, sandbox policy and provider for a rollout
/// without a turn context whatever config.toml sets (tests/realclients.rs compares the rows
/// with the real Codex's): so does the relay, beside a thread of the user's own with other
/// values, with the settings at the top level, in a profile table, or in a file that is not
/// TOML; config.toml is left as it was.
#[test]
fn the_registered_row_is_codex_own_whatever_config_toml_sets() {
    let plain = registered_settings(&env_with_thread_index()).unwrap();
    let settings = "approval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\nmodel_provider = \"mine\"\n";
    let mut wrong = Vec::new();
    for config in [
        settings.to_string(),
        format!("\u{feff}# mine\r\n{}", settings.replace('\n', "\r\n")),
        format!("model = \"x\"\n\n[profiles.x]\n{settings}"),
        format!("[profiles.x]\n{settings}\n[tui]\napproval_policy = \"never\"\n"),
        format!("{settings}approval_policy = \"never"),
    ] {
        for users_thread in [false, true] {
            let env = env_with_thread_index();
            if users_thread {
                let proj = env.project();
                let r = env.json(&[
                    "relay", "5d0c3a1e", "--to", "codex", "--cwd", &proj, "--json",
                ]);
                let conn = rusqlite::Connection::open(db_path(&env)).unwrap();
                conn.execute(
                    "UPDATE threads SET approval_mode = 'never', sandbox_policy = '{\"type\":\"disabled\"}', model_provider = 'mine' WHERE id = ?1",
                    [r["target"]["id"].as_str().unwrap()],
                )
                .unwrap();
            }
            let path = env.codex_home().join("config.toml");
            std::fs::write(&path, &config).unwrap();
            let got = registered_settings(&env);
            if got.as_ref() != Ok(&plain) {
                wrong.push(format!(
                    "config.toml {config:?}, a thread of the user's own: {users_thread}: {got:?}"
                ));
            }
            assert_eq!(std::fs::read_to_string(&path).unwrap(), config);
        }
    }
    assert!(wrong.is_empty(), "not {plain:?}:\n{}", wrong.join("\n"));
}
