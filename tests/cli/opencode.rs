//! OpenCode specifics: its sessions are rows of one SQLite database. A relay writes its
//! document, then the rows in one transaction; a database another program holds locked is
//! refused and left untouched; `clean` removes only the relay's rows; reading never changes
//! the database.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{TestEnv, fnv};

fn db(env: &TestEnv) -> PathBuf {
    env.home("opencode").join("opencode.db")
}

fn rows(db: &Path, sql: &str, id: &str) -> Vec<String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map([id], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_relay_lands_as_rows_that_list_under_the_directory_and_clean_removes_them() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let before = rows(&db(&env), "SELECT id FROM session WHERE ?1 = ?1", "x");
    let out = env.json(&[
        "relay", "771ce1df", "--to", "opencode", "--cwd", &proj, "--json",
    ]);
    let id = out["target"]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("ses_"), "{id}");
    let file = PathBuf::from(out["target"]["path"].as_str().unwrap());
    assert_eq!(
        file,
        env.home("opencode")
            .join("session-relay")
            .join(format!("{id}.json"))
    );
    // The session row: outside a git checkout OpenCode's project is `global`, with the path
    // from `/`; the relay's mark and its message count in the metadata.
    let db = db(&env);
    let session = rows(
        &db,
        "SELECT project_id || '|' || directory || '|' || path || '|' || metadata FROM session WHERE id = ?1",
        &id,
    );
    let fields: Vec<&str> = session[0].splitn(4, '|').collect();
    assert_eq!(fields[..3], ["global", proj.as_str(), &proj[1..]]);
    let meta: Value = serde_json::from_str(fields[3]).unwrap();
    let mark = &meta["sessionRelay"];
    assert_eq!(mark["tool"], "session-relay");
    assert_eq!(mark["source_agent"], "claude");
    let messages = rows(&db, "SELECT data FROM message WHERE session_id = ?1", &id);
    assert_eq!(mark["messages"], messages.len());
    // Every user message names the agent and a model (the TUI needs both, and OpenCode answers
    // the next prompt with the last one's model): with no OpenCode config, the model of the
    // newest prompt in the database (the fixtures' rows that do not parse are passed over).
    for m in &messages {
        let m: Value = serde_json::from_str(m).unwrap();
        if m["role"] == "user" {
            assert_eq!(m["agent"], "build");
            assert_eq!(
                m["model"],
                serde_json::json!({"providerID": "mock", "modelID": "mock-model"})
            );
        } else {
            assert!(m["parentID"].as_str().unwrap().starts_with("msg_"), "{m}");
        }
    }
    // Listed under the project, read back from the database with the relay's source.
    let listed = env.list_json(&["list", "--agent", "opencode", "--cwd", &proj, "--json"]);
    let row = &listed.as_array().unwrap()[0];
    assert_eq!(row["id"], id.as_str());
    assert_eq!(row["relay"]["from"]["agent"], "claude");
    // The ledger names the relay's document, the listing the row under the database: the
    // relay is known to the ledger all the same.
    assert_eq!(row["relay"]["in_ledger"], true, "{row}");
    let shown = env.json(&["show", &id, "--json"]);
    assert_eq!(shown["session"]["format"], "opencode-db");
    // `clean` removes the relay's rows and its document, and nothing else.
    env.ok(&[
        "clean",
        "--yes",
        "--older-than",
        "0m",
        "--agent",
        "opencode",
    ]);
    assert!(!file.exists());
    let after = rows(&db, "SELECT id FROM session WHERE ?1 = ?1", "x");
    assert_eq!(after, before);
    assert!(rows(&db, "SELECT id FROM message WHERE session_id = ?1", &id).is_empty());
    assert!(rows(&db, "SELECT id FROM part WHERE session_id = ?1", &id).is_empty());
}

#[test]
fn a_session_continued_in_opencode_is_not_cleaned() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let out = env.json(&[
        "relay", "771ce1df", "--to", "opencode", "--cwd", &proj, "--json",
    ]);
    let id = out["target"]["id"].as_str().unwrap().to_string();
    // OpenCode appends a prompt to it.
    let conn = rusqlite::Connection::open(db(&env)).unwrap();
    conn.execute(
        "INSERT INTO message VALUES ('msg_zzzz', ?1, 9999999999999, 9999999999999, '{\"role\":\"user\"}')",
        [&id],
    )
    .unwrap();
    drop(conn);
    let (_, err) = env.fails(&[
        "clean",
        "--yes",
        "--older-than",
        "0m",
        "--agent",
        "opencode",
    ]);
    assert!(err.contains("could not be deleted"), "{err}");
    let out = env.ok(&[
        "clean",
        "--dry-run",
        "--older-than",
        "0m",
        "--agent",
        "opencode",
    ]);
    assert!(out.contains(&id), "{out}");
    assert!(!rows(&db(&env), "SELECT id FROM session WHERE id = ?1", &id).is_empty());
}

/// Another connection holds the write lock (an open write transaction) past the busy timeout:
/// the relay is refused, naming the database, and neither the database nor the store changes.
#[test]
fn a_locked_database_refuses_the_relay_and_is_left_untouched() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let db = db(&env);
    let hash = || fnv(&std::fs::read(&db).unwrap());
    let before = hash();
    let mut holder = rusqlite::Connection::open(&db).unwrap();
    let tx = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    tx.execute("UPDATE project SET time_updated = time_updated WHERE 0", [])
        .unwrap();
    let (_, err) = env.fails(&["relay", "771ce1df", "--to", "opencode", "--cwd", &proj]);
    assert!(err.contains("stayed locked"), "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    tx.rollback().unwrap();
    drop(holder);
    assert_eq!(hash(), before, "the database changed");
    let relayed = env.home("opencode").join("session-relay");
    let left: Vec<_> = std::fs::read_dir(&relayed)
        .map(|d| d.filter_map(|e| e.ok()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    // Once the lock is gone the same relay lands.
    env.ok(&["relay", "771ce1df", "--to", "opencode", "--cwd", &proj]);
}

/// Every fixture session is read without a change to the database.
#[test]
fn reading_every_session_leaves_the_database_as_it_was() {
    let env = TestEnv::with_fixtures();
    let db = db(&env);
    let before = fnv(&std::fs::read(&db).unwrap());
    let listed = env.list_json(&["list", "--agent", "opencode", "--all", "--json"]);
    for s in listed.as_array().unwrap() {
        env.ok(&["show", s["id"].as_str().unwrap()]);
    }
    assert_eq!(fnv(&std::fs::read(&db).unwrap()), before);
    let wal = db.with_extension("db-wal");
    assert!(!wal.exists(), "a read left {}", wal.display());
}

/// A malformed row is said, with the session and the row, and the rest is read.
#[test]
fn bad_rows_are_warned_of_by_id() {
    let env = TestEnv::with_fixtures();
    let shown = env.json(&["show", "ses_db6a00000ffeOddHandMade0001", "--json"]);
    let warnings: Vec<String> = shown["session"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect();
    for needle in [
        "part prt_odd_02e of message msg_odd_02",
        "message msg_odd_03",
        "its 1 part(s) left out",
        "message msg_odd_06",
        "msg_odd_gone",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(needle)),
            "{needle}: {warnings:?}"
        );
    }
    let exported = env.ok(&[
        "export",
        "ses_db6a00000ffeOddHandMade0001",
        "--format",
        "jsonl",
    ]);
    assert!(
        exported.contains("Two checks fail. Shall I fix them?"),
        "{exported}"
    );
}

/// A database whose schema lacks what a relay writes (here a column of `part`, the last table
/// written, after the session and its messages) refuses the relay inside its transaction: the
/// error names the database, the transaction rolls back, and neither the database nor the
/// relay's folder keeps anything.
#[test]
fn a_database_of_another_schema_refuses_the_relay_and_is_left_untouched() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let db = db(&env);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("ALTER TABLE part DROP COLUMN time_updated")
        .unwrap();
    drop(conn);
    let hash = || fnv(&std::fs::read(&db).unwrap());
    let before = hash();
    let sessions = rows(&db, "SELECT id FROM session WHERE ?1 = ?1", "x");
    let (_, err) = env.fails(&["relay", "771ce1df", "--to", "opencode", "--cwd", &proj]);
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("time_updated"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(hash(), before, "the database changed");
    assert_eq!(
        rows(&db, "SELECT id FROM session WHERE ?1 = ?1", "x"),
        sessions
    );
    let relayed = env.home("opencode").join("session-relay");
    let left: Vec<_> = std::fs::read_dir(&relayed)
        .map(|d| d.filter_map(|e| e.ok()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// The listing cache keeps OpenCode's sessions as it keeps files, keyed by the database and its
/// write-ahead log: a warm `list` and `stats` read nothing of an unchanged database, and any
/// write to it (here a title OpenCode changed) is seen by the next listing.
#[test]
fn the_listing_cache_keeps_opencode_sessions_until_the_database_changes() {
    let mut env = TestEnv::with_fixtures();
    let cache = env.dir.path().join("state/session-relay/list-cache.json");
    let first = env.list_json(&["list", "--agent", "opencode", "--all", "--json"]);
    let ids: Vec<&str> = (first.as_array().unwrap().iter())
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(ids.len() >= 2, "{first}");
    env.json(&["stats", "--json", "--agent", "opencode"]);
    let cached = std::fs::read_to_string(&cache).unwrap();
    for id in &ids {
        let key = db(&env).join(id).display().to_string();
        assert!(
            cached.contains(&serde_json::to_string(&key).unwrap()),
            "{id}: {cached}"
        );
    }
    assert_eq!(cached.matches("\"counts\"").count(), ids.len(), "{cached}");
    assert_eq!(
        env.list_json(&["list", "--agent", "opencode", "--all", "--json"]),
        first
    );
    // A title changed in place (as OpenCode would), the database's size and time then put back: the listing is
    // served from the cache (the old title). Its time moved on: the new title.
    env.removing_stores();
    let db = db(&env);
    let (size, time) = {
        let m = std::fs::metadata(&db).unwrap();
        (m.len(), m.modified().unwrap())
    };
    let conn = rusqlite::Connection::open(&db).unwrap();
    let id = ids[0];
    let sql = "UPDATE session SET title = 'Renamed in OpenCode' WHERE id = ?1";
    conn.execute(sql, [id]).unwrap();
    drop(conn);
    assert_eq!(std::fs::metadata(&db).unwrap().len(), size);
    let set_time = |t| {
        let f = std::fs::File::options().write(true).open(&db).unwrap();
        f.set_modified(t).unwrap();
    };
    set_time(time);
    let title = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()["title"]
            .clone()
    };
    let warm = env.list_json(&["list", "--agent", "opencode", "--all", "--json"]);
    assert_eq!(title(&warm), title(&first), "served from the cache");
    set_time(time + std::time::Duration::from_secs(1));
    let after = env.list_json(&["list", "--agent", "opencode", "--all", "--json"]);
    assert_eq!(title(&after), "Renamed in OpenCode", "{after}");
}
