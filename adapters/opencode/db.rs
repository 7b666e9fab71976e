//! OpenCode's database: a session's rows read into the document `opencode export` writes, and a
//! relay's document copied in as rows (and taken out again), as `adapter::sqlite` reads and
//! writes a database an agent may have open.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use crate::adapter::sqlite::AgentDb;
use crate::model::{Todo, TodoStatus};

/// The database at `path`, waiting for its lock as long as OpenCode itself waits
/// (`busy_timeout=5000`).
fn database(path: &Path) -> AgentDb<'_> {
    AgentDb {
        path,
        agent: "OpenCode",
        busy: Duration::from_secs(5),
    }
}

/// What reading a session's rows found besides its messages.
#[derive(Default)]
pub struct Rows {
    pub warnings: Vec<String>,
    /// How many bytes stand for the session (`Store::stand_in`): each row's id and JSON as
    /// stored, in the order read, so that a change to any of them changes the hash.
    pub size: u64,
    /// The current todo list (`todo` rows).
    pub todos: Vec<Todo>,
}

/// One step of a walk over a session's rows.
pub enum Row<'a> {
    /// The `session` row as an export's `info`, before any message.
    Info(&'a Value),
    /// The next message as an export's `{info, parts}`, and how many bytes stand for the
    /// session up to it.
    Message(Value, u64),
}

/// The ids of every session in the database.
pub fn session_ids(db: &Path) -> Result<Vec<String>> {
    let conn = database(db).read()?;
    let mut stmt = conn.prepare("SELECT id FROM session ORDER BY id")?;
    let ids = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(ids)
}

/// Reads session `id`'s rows in order, writing the bytes that stand for it to `out`, and hands
/// each message to `each` as it is read: one message is held at a time, however long the
/// session. Without `each` (the bytes alone), parts are not parsed.
pub fn walk(
    db: &Path,
    id: &str,
    out: &mut dyn Write,
    mut each: Option<&mut dyn FnMut(Row)>,
) -> Result<Rows> {
    let conn = database(db).read()?;
    let cannot = || format!("cannot read session {id} in {}", db.display());
    let mut rows = Rows::default();
    let mut out = Out(std::io::BufWriter::with_capacity(1 << 16, out), 0);
    let info = session_info(&conn, id, &mut out)
        .with_context(cannot)?
        .with_context(|| format!("no session {id} in {}", db.display()))?;
    if let Some(each) = each.as_mut() {
        each(Row::Info(&info));
    }
    messages(&conn, id, &mut out, &mut rows, each).with_context(cannot)?;
    out.0.flush()?;
    rows.size = out.1;
    Ok(rows)
}

/// Where the bytes that stand for a session go, and how many went.
struct Out<'a>(std::io::BufWriter<&'a mut dyn Write>, u64);

impl Out<'_> {
    fn row(&mut self, id: &str, data: &str) -> std::io::Result<()> {
        for piece in [id.as_bytes(), b"\t", data.as_bytes(), b"\n"] {
            self.0.write_all(piece)?;
            self.1 += piece.len() as u64;
        }
        Ok(())
    }
}

/// The session's messages as an export's `{info, parts}`, their parts in id order (OpenCode's
/// ids grow with time), each handed to `each` once its last part is read; a message that does
/// not parse is left out with its parts. The parts are joined by message id alone: SQLite
/// then takes the index on it, where a condition on the session too let it pick the session's
/// index and scan every part once per message. SQLite reads the rows in the order asked (the
/// message index, then each message's parts sorted), so nothing here grows with the session.
fn messages(
    conn: &Connection,
    id: &str,
    out: &mut Out,
    rows: &mut Rows,
    mut each: Option<&mut dyn FnMut(Row)>,
) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT m.id, m.data, p.id, p.data FROM message m LEFT JOIN part p \
         ON p.message_id = m.id WHERE m.session_id = ?1 ORDER BY m.time_created, m.id, p.id",
    )?;
    let mut q = stmt.query([id])?;
    // The message being read (`None` when it did not parse, with how many of its parts went
    // with it).
    let (mut last, mut current, mut lost) = (String::new(), None::<Value>, None::<usize>);
    let parse_parts = each.is_some();
    let mut done = |m: Option<Value>, lost: Option<usize>, last: &str, rows: &mut Rows, n| {
        if let (Some(m), Some(each)) = (m, each.as_mut()) {
            each(Row::Message(m, n));
        }
        if let Some(n) = lost.filter(|n| *n > 0) {
            rows.warnings
                .push(format!("message {last}: its {n} part(s) left out with it"));
        }
    };
    while let Some(r) = q.next()? {
        let mid = r.get_ref(0)?.as_str()?;
        if mid != last {
            let before = out.1;
            done(current.take(), lost.take(), &last, rows, before);
            last = mid.to_string();
            let data = r.get_ref(1)?.as_str()?;
            out.row(&last, data)?;
            match object(data, &format!("message {last}"), rows) {
                Some(mut info) => {
                    info.insert("id".into(), json!(last));
                    info.insert("sessionID".into(), json!(id));
                    current = Some(json!({"info": info, "parts": []}));
                }
                None => lost = Some(0),
            }
        }
        let (Some(pid), Some(data)) = (
            r.get_ref(2)?.as_str_or_null()?,
            r.get_ref(3)?.as_str_or_null()?,
        ) else {
            continue;
        };
        if let Some(n) = lost.as_mut() {
            *n += 1;
            continue;
        }
        out.row(pid, data)?;
        if !parse_parts {
            continue;
        }
        if let Some(mut part) = object(data, &format!("part {pid} of message {last}"), rows) {
            part.insert("id".into(), json!(pid));
            part.insert("sessionID".into(), json!(id));
            part.insert("messageID".into(), json!(last));
            if let Some(parts) = current.as_mut().and_then(|m| m["parts"].as_array_mut()) {
                parts.push(Value::Object(part));
            }
        }
    }
    done(current, lost, &last, rows, out.1);
    if !parse_parts {
        return Ok(());
    }
    let mut stmt = conn.prepare(
        "SELECT message_id, count(*) FROM part WHERE session_id = ?1 AND message_id NOT IN \
         (SELECT id FROM message WHERE session_id = ?1) GROUP BY message_id",
    )?;
    let orphans = stmt.query_map([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    for o in orphans {
        let (mid, n) = o?;
        rows.warnings.push(format!(
            "{n} part(s) belong to message {mid}, which the session does not hold: left out"
        ));
    }
    rows.todos = todos(conn, id).unwrap_or_default();
    Ok(())
}

/// The `session` row as an export's `info` (built by SQLite; a JSON column that does not parse
/// is null), its text written to `out`.
fn session_info(conn: &Connection, id: &str, out: &mut Out) -> Result<Option<Value>> {
    let json = |c: &str| format!("json(CASE WHEN json_valid({c}) THEN {c} END)");
    let sql = format!(
        "SELECT json_object('id', id, 'slug', slug, 'projectID', project_id, 'parentID', \
         parent_id, 'directory', directory, 'path', path, 'title', title, 'version', version, \
         'metadata', {}, 'model', {}, 'time', json_object('created', time_created, 'updated', \
         time_updated, 'archived', time_archived)) FROM session WHERE id = ?1",
        json("metadata"),
        json("model")
    );
    let Some(text) = conn
        .query_row(&sql, [id], |r| r.get::<_, String>(0))
        .optional()?
    else {
        return Ok(None);
    };
    out.row(id, &text)?;
    Ok(Some(serde_json::from_str(&text)?))
}

/// A row's JSON object, or a warning naming the row (the session's path names the database).
fn object(data: &str, what: &str, rows: &mut Rows) -> Option<serde_json::Map<String, Value>> {
    let why = match serde_json::from_str::<Value>(data) {
        Ok(Value::Object(o)) => return Some(o),
        Ok(_) => "data is not a JSON object".to_string(),
        Err(e) => format!("data is not JSON ({e})"),
    };
    rows.warnings.push(format!("{what}: {why}: left out"));
    None
}

/// The session's todo list, when the database keeps one.
fn todos(conn: &Connection, id: &str) -> Result<Vec<Todo>> {
    let mut stmt =
        conn.prepare("SELECT content, status FROM todo WHERE session_id = ?1 ORDER BY position")?;
    let todo = |r: &rusqlite::Row| {
        let status: String = r.get(1)?;
        Ok(Todo {
            text: r.get(0)?,
            status: TodoStatus::parse(&status),
        })
    };
    Ok(stmt
        .query_map([id], todo)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Copies the relay's document at `file` into the database as session `id`'s rows, in one
/// transaction, bound to the project OpenCode gives the session's directory.
pub fn register(db: &Path, file: &Path, id: &str) -> Result<Vec<String>> {
    let doc: Value = serde_json::from_slice(
        &std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?,
    )
    .with_context(|| format!("{} is not JSON", file.display()))?;
    let info = &doc["info"];
    let project = super::project::of_dir(info["directory"].as_str().unwrap_or("/"));
    if !db.is_file() {
        bail!(
            "OpenCode's database {} does not exist: start `opencode` once (it creates it), then relay again",
            db.display()
        );
    }
    // A schema that lacks a table or column written here fails a statement, and nothing is
    // written.
    let modelled = database(db).write(|tx| {
        if let Some(mark) = relay_mark(tx, id)? {
            if mark.is_some_and(|m| m == info["metadata"][super::RELAY_FIELD]) {
                return Ok(None);
            }
            bail!(
                "{} holds another session {id} already: not registered",
                db.display()
            );
        }
        Ok(Some(insert(tx, &doc, id, &project)?))
    })?;
    let Some(modelled) = modelled else {
        return Ok(vec![format!("{} already holds {id}", db.display())]);
    };
    let mut notes = vec![format!(
        "registered in OpenCode's database {} (project {})",
        db.display(),
        project.id
    )];
    if !modelled {
        notes.push(
            "OpenCode's config sets no model and no prompt in its database names one: pick a model in OpenCode (`/models`, or `opencode run -m PROVIDER/MODEL`) before the first prompt".into(),
        );
    }
    Ok(notes)
}

/// Whether the database holds session `id`, and then the relay's mark in its `metadata`, when
/// it carries one.
fn relay_mark(tx: &rusqlite::Transaction, id: &str) -> rusqlite::Result<Option<Option<Value>>> {
    let sql = "SELECT metadata FROM session WHERE id = ?1";
    let metadata = tx.query_row(sql, [id], |r| r.get::<_, Option<String>>(0));
    Ok(metadata.optional()?.map(|m| {
        let v: Value = serde_json::from_str(m.as_deref()?).ok()?;
        v.get(super::RELAY_FIELD).cloned()
    }))
}

/// Writes the document's rows; whether its prompts now name a model the user has (else they
/// keep the relay's placeholder).
fn insert(
    tx: &rusqlite::Transaction,
    doc: &Value,
    id: &str,
    project: &super::project::Project,
) -> rusqlite::Result<bool> {
    let info = &doc["info"];
    let now = chrono::Utc::now().timestamp_millis();
    let ms = |v: &Value| v.as_i64().unwrap_or(now);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    tx.execute(
        "INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) \
         VALUES (?1, ?2, ?3, ?4, ?4, '[]')",
        params![project.id, project.worktree, project.vcs, now],
    )?;
    let dir = text(&info["directory"]);
    tx.execute(
        "INSERT INTO session (id, project_id, slug, directory, path, title, version, metadata, \
         agent, time_created, time_updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'build', ?9, ?10)",
        params![
            id,
            project.id,
            text(&info["slug"]),
            dir,
            project.path_of(&dir),
            text(&info["title"]),
            text(&info["version"]),
            info["metadata"].to_string(),
            ms(&info["time"]["created"]),
            ms(&info["time"]["updated"]),
        ],
    )?;
    let mut message = tx.prepare(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
    )?;
    let mut part = tx.prepare(
        "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
         VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
    )?;
    let model = user_model(tx);
    let placeholder = model.is_none();
    for m in doc["messages"].as_array().into_iter().flatten() {
        let mut data = m["info"].clone();
        if data["role"] == "user"
            && let Some(model) = &model
        {
            data["model"] = model.clone();
        }
        let mid = text(&data["id"]);
        let at = ms(&data["time"]["created"]);
        strip(&mut data, &["id", "sessionID"]);
        message.execute(params![mid, id, at, data.to_string()])?;
        for p in m["parts"].as_array().into_iter().flatten() {
            let mut data = p.clone();
            let pid = text(&data["id"]);
            strip(&mut data, &["id", "sessionID", "messageID"]);
            part.execute(params![pid, mid, id, at, data.to_string()])?;
        }
    }
    Ok(!placeholder)
}

/// The model a relayed prompt names, which OpenCode answers the next prompt with: the one
/// OpenCode's config sets, else the one of the newest prompt in the database (the user's last
/// choice). `None` leaves the relay's placeholder, and the user picks one in OpenCode.
fn user_model(tx: &rusqlite::Transaction) -> Option<Value> {
    let configured = config_model().and_then(|m| {
        let (provider, model) = m.split_once('/')?;
        Some(json!({"providerID": provider, "modelID": model}))
    });
    configured.or_else(|| {
        let data: String = tx
            .query_row(
                // A row whose data is not JSON (OpenCode never writes one) is passed over.
                "SELECT data FROM message WHERE CASE WHEN json_valid(data) THEN \
                 json_extract(data, '$.role') = 'user' \
                 AND json_extract(data, '$.model.providerID') IS NOT NULL END \
                 ORDER BY time_created DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .ok()?;
        let v: Value = serde_json::from_str(&data).ok()?;
        Some(json!({"providerID": v["model"]["providerID"], "modelID": v["model"]["modelID"]}))
    })
}

/// The `model` OpenCode's global config file sets (`OPENCODE_CONFIG`, else
/// `$XDG_CONFIG_HOME/opencode/opencode.json`), when it is plain JSON.
fn config_model() -> Option<String> {
    let file = match std::env::var_os("OPENCODE_CONFIG").filter(|v| !v.is_empty()) {
        Some(f) => std::path::PathBuf::from(f),
        None => std::env::var_os("XDG_CONFIG_HOME")
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| dirs::home_dir().map(|h| h.join(".config")))?
            .join("opencode/opencode.json"),
    };
    let v: Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    v.get("model")?.as_str().map(str::to_string)
}

fn strip(v: &mut Value, keys: &[&str]) {
    if let Some(o) = v.as_object_mut() {
        for k in keys {
            o.remove(*k);
        }
    }
}

/// Takes a relayed session's rows out of the database, in one transaction: only a session that
/// carries a relay's mark, and only while it holds no more messages than the relay wrote (one
/// continued in OpenCode is the user's now, and stays).
pub fn unregister(db: &Path, id: &str) -> Result<Vec<String>> {
    if !db.is_file() {
        return Ok(Vec::new());
    }
    let removed = database(db).write(|tx| {
        let Some(mark) = relay_mark(tx, id)? else {
            return Ok(false);
        };
        let Some(mark) = mark else {
            bail!(
                "session {id} in {} carries no session-relay mark: left alone",
                db.display()
            );
        };
        let written = mark.get("messages").and_then(Value::as_u64);
        let sql = "SELECT count(*) FROM message WHERE session_id = ?1";
        let held: i64 = tx.query_row(sql, [id], |r| r.get(0))?;
        if written != Some(held as u64) {
            bail!(
                "session {id} was continued in OpenCode after the relay ({} messages written, {held} now): its rows stay in {}; `opencode session delete {id}` deletes it",
                written.map_or("?".into(), |n| n.to_string()),
                db.display()
            );
        }
        // Its messages, their parts and its todo rows go with it (`ON DELETE CASCADE`, foreign
        // keys on), as when OpenCode deletes a session.
        tx.execute("DELETE FROM session WHERE id = ?1", [id])?;
        Ok(true)
    })?;
    Ok(match removed {
        true => vec![format!("{id}: its rows removed from {}", db.display())],
        false => Vec::new(),
    })
}
