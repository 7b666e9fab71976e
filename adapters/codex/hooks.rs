//! Codex's hooks, as codex 0.171 runs them (verified against the real binary):
//!
//! - `$CODEX_HOME/hooks.json` holds `{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type":
//!   "command", "command", "timeout"}]}]}}`, strict JSON; events include `PreCompact`,
//!   `PostCompact`, `SessionStart` and `SessionEnd` (whose default timeout is one second).
//! - A hook runs only once the user trusted it: Codex keys each handler as
//!   `<hooks.json path>:<event in snake case>:<group>:<handler>` and records
//!   `[hooks.state."<key>"] trusted_hash = "sha256:..."` in `config.toml`, the hash of the
//!   handler's definition as Codex normalises it. Untrusted hooks are skipped without a word in
//!   `codex exec`. The TUI's `/hooks` trusts them; so does its app-server (`hooks/list` gives
//!   each hook's `currentHash`, `config/batchWrite` records it), which `trust` uses rather than
//!   computing Codex's hash itself.
//! - `enabled = false` beside it (or alone) turns the handler off, trusted or not; a value of
//!   the wrong type anywhere under `hooks.state` makes Codex refuse to start.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use toml_edit::{Document, Item, Table};

use crate::adapter::HookTrust;

pub fn file(home: &Path) -> PathBuf {
    std::path::absolute(home)
        .unwrap_or_else(|_| home.to_path_buf())
        .join("hooks.json")
}

/// `PreCompact` -> `pre_compact`.
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The key under which Codex records its trust in one handler.
pub fn key(home: &Path, event: &str, group: usize, handler: usize) -> String {
    format!(
        "{}:{}:{group}:{handler}",
        file(home).display(),
        snake(event)
    )
}

/// Codex's `config.toml`, parsed as Codex parses it (TOML, a leading BOM skipped): `None` when
/// there is none. One that is not TOML, or whose `hooks.state` Codex cannot take, is an error
/// naming its line; Codex refuses to start with it, so nothing can be told from it.
fn config(home: &Path) -> Result<Option<Document<String>>> {
    let path = home.join("config.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let at_line = |at: usize| text[..at.min(text.len())].matches('\n').count() + 1;
    // `Document` keeps each value's place in the text, to name the line of one Codex refuses.
    let doc = Document::parse(text.clone()).map_err(|e| {
        let line = at_line(e.span().map_or(0, |s| s.start));
        anyhow!(
            "{}:{line}: not valid TOML ({}); Codex refuses to start until it is corrected",
            path.display(),
            e.message().trim_end()
        )
    })?;
    if let Some((at, what)) = misfit_state(&doc) {
        bail!(
            "{}:{}: {what}; Codex refuses to start until it is corrected",
            path.display(),
            at_line(at)
        );
    }
    Ok(Some(doc))
}

/// Where `hooks.state` holds what Codex's typed config cannot take (each entry is a table whose
/// `enabled` is a boolean and `trusted_hash` a string): the byte offset and what is wrong.
fn misfit_state(config: &Table) -> Option<(usize, String)> {
    let state = config.get("hooks")?.get("state")?;
    let at = |item: &Item| item.span().map_or(0, |s| s.start);
    let Some(entries) = state.as_table_like() else {
        return Some((at(state), "hooks.state is not a table".into()));
    };
    for (key, entry) in entries.iter() {
        let Some(fields) = entry.as_table_like() else {
            return Some((at(entry), format!("hooks.state.{key:?} is not a table")));
        };
        for (field, fits) in [
            ("enabled", Item::is_bool as fn(&Item) -> bool),
            ("trusted_hash", Item::is_str),
        ] {
            if let Some(v) = fields.get(field).filter(|v| !fits(v)) {
                let want = if field == "enabled" {
                    "a boolean"
                } else {
                    "a string"
                };
                return Some((at(v), format!("hooks.state.{key:?}.{field} is not {want}")));
            }
        }
    }
    None
}

/// What Codex recorded for the handler under `key` in `hooks.state` (keys trimmed, as Codex
/// trims them), in whichever spelling (tables, dotted keys, inline tables) the file uses:
/// whether the user turned it off (`enabled = false`), and the hash they trusted.
fn recorded_state<'a>(config: &'a Table, key: &str) -> (Option<bool>, Option<&'a str>) {
    let (mut enabled, mut hash) = (None, None);
    let entries = config
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(Item::as_table_like);
    for (_, entry) in entries
        .into_iter()
        .flat_map(|t| t.iter())
        .filter(|(k, _)| k.trim() == key)
    {
        enabled = entry.get("enabled").and_then(Item::as_bool).or(enabled);
        hash = entry
            .get("trusted_hash")
            .and_then(Item::as_str)
            .filter(|h| !h.is_empty())
            .or(hash);
    }
    (enabled, hash)
}

/// Whether Codex runs the handler: not when the user turned it off in `config.toml`
/// (`hooks.state.<key>.enabled = false`, which Codex honours whatever the trust), else once
/// `config.toml` records a trusted hash for it. The hash itself is Codex's to check: a handler
/// changed since it was trusted shows as trusted here and runs only once the user trusts it
/// again. A file Codex cannot load leaves it unknown.
pub fn trust(home: &Path, event: &str, group: usize, handler: usize) -> HookTrust {
    match config(home) {
        Ok(Some(c)) => match recorded_state(&c, &key(home, event, group, handler)) {
            (Some(false), _) => HookTrust::TurnedOff,
            (_, Some(_)) => HookTrust::Trusted,
            _ => HookTrust::Untrusted,
        },
        Ok(None) => HookTrust::Untrusted,
        Err(_) => HookTrust::Unknown,
    }
}

/// Trusts the handler the way Codex's own `/hooks` does, through `codex app-server`.
pub fn trust_with_codex(home: &Path, event: &str, group: usize, handler: usize) -> Result<String> {
    // Codex would not start to be asked; the parse says why, with the line.
    config(home)?;
    let key = key(home, event, group, handler);
    let bin = std::env::var_os("CODEX_BIN").unwrap_or_else(|| "codex".into());
    let mut server = AppServer::start(Path::new(&bin), home)?;
    let result = (|| -> Result<String> {
        server.request(
            "initialize",
            json!({"clientInfo": {"name": "session-relay", "version": env!("CARGO_PKG_VERSION")},
                   "capabilities": {"experimentalApi": true}}),
        )?;
        server.notify("initialized")?;
        let listed = |server: &mut AppServer| -> Result<Value> {
            let r = server.request("hooks/list", json!({"cwds": [home]}))?;
            r.pointer("/data")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|d| d.get("hooks").and_then(Value::as_array))
                .flatten()
                .find(|h| h.get("key").and_then(Value::as_str) == Some(key.as_str()))
                .cloned()
                .ok_or_else(|| anyhow!("Codex does not list the hook {key}"))
        };
        let hook = listed(&mut server)?;
        if hook.get("trustStatus").and_then(Value::as_str) == Some("trusted") {
            return Ok("Codex already trusts the hook".into());
        }
        let hash = hook
            .get("currentHash")
            .and_then(Value::as_str)
            .context("Codex gave no hash for the hook")?;
        server.request(
            "config/batchWrite",
            json!({"edits": [{"keyPath": "hooks.state",
                              "value": {key.as_str(): {"trusted_hash": hash}},
                              "mergeStrategy": "upsert"}]}),
        )?;
        let status = listed(&mut server)?
            .get("trustStatus")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        if status != "trusted" {
            bail!("Codex still lists the hook as {status}");
        }
        Ok(format!(
            "Codex trusts the hook now (recorded by `{} app-server` in {})",
            Path::new(&bin).display(),
            home.join("config.toml").display()
        ))
    })();
    server.stop();
    result
}

/// `codex app-server` over standard input and output: one JSON-RPC message a line.
struct AppServer {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

const RPC_TIMEOUT: Duration = Duration::from_secs(60);

impl AppServer {
    fn start(bin: &Path, home: &Path) -> Result<AppServer> {
        let mut child = Command::new(bin)
            .args(["app-server", "--listen", "stdio://"])
            .env("CODEX_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "cannot run `{} app-server` (set CODEX_BIN to the codex binary)",
                    bin.display()
                )
            })?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(AppServer {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 0,
        })
    }

    fn send(&mut self, msg: Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("app-server input closed")?;
        writeln!(stdin, "{msg}")?;
        stdin.flush()?;
        Ok(())
    }

    fn notify(&mut self, method: &str) -> Result<()> {
        self.send(json!({"jsonrpc": "2.0", "method": method}))
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + RPC_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|_| anyhow!("`codex app-server` did not answer {method}"))?;
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg.get("method").is_some() {
                // A request from the server (approvals and the like): decline it.
                if let Some(rid) = msg.get("id").cloned() {
                    self.send(json!({"jsonrpc": "2.0", "id": rid,
                                     "error": {"code": -32601, "message": "unsupported"}}))?;
                }
                continue;
            }
            if msg.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(e) = msg.get("error") {
                bail!("`codex app-server` refused {method}: {e}");
            }
            return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
        }
    }

    fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_recorded_trust_follow_codex() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let k = key(home, "PreCompact", 2, 0);
        assert!(k.ends_with("/hooks.json:pre_compact:2:0"), "{k}");
        assert_eq!(trust(home, "PreCompact", 2, 0), HookTrust::Untrusted);
        std::fs::write(
            home.join("config.toml"),
            format!(
                "model = \"x\"\n\n[hooks.state]\n\n[hooks.state.{}]\ntrusted_hash = \"sha256:00\"\n\n[other]\n",
                serde_json::to_string(&k).unwrap()
            ),
        )
        .unwrap();
        assert_eq!(trust(home, "PreCompact", 2, 0), HookTrust::Trusted);
        assert_eq!(trust(home, "PreCompact", 1, 0), HookTrust::Untrusted);
        assert_eq!(trust(home, "SessionEnd", 2, 0), HookTrust::Untrusted);
    }

    /// Every spelling TOML allows for `hooks.state.<key>.trusted_hash` (Codex 0.171 reads them
    /// all alike, checked through its app-server's config/read), with either line ending and
    /// with or without a BOM, each beside a trust for another handler and comments.
    #[test]
    fn a_trust_is_found_in_every_spelling_codex_reads() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let k = key(home, "PreCompact", 0, 0);
        let q = serde_json::to_string(&k).unwrap();
        let other = serde_json::to_string(&key(home, "SessionEnd", 0, 0)).unwrap();
        let spellings = [
            format!(
                "[hooks.state.{other}]\ntrusted_hash = \"sha256:02\"\n[hooks.state.{q}]\ntrusted_hash = \"sha256:00\""
            ),
            format!(
                "[hooks.state.'{k}']\ntrusted_hash = 'sha256:00'\n[hooks.state.{other}]\ntrusted_hash = \"sha256:02\""
            ),
            format!(
                "hooks.state.{q}.trusted_hash = \"sha256:00\"\nhooks.state.{other}.trusted_hash = \"sha256:02\""
            ),
            format!(
                "[hooks]\nstate.{other}.trusted_hash = \"sha256:02\"\nstate.{q}.trusted_hash = \"sha256:00\""
            ),
            format!(
                "[hooks.state]\n{other} = {{ trusted_hash = \"sha256:02\" }}\n{q} = {{ trusted_hash = \"sha256:00\" }}"
            ),
            format!(
                "[hooks]\nstate = {{ {other} = {{ trusted_hash = \"sha256:02\" }}, {q} = {{ enabled = true, trusted_hash = \"sha256:00\" }} }}"
            ),
            format!(
                "[hooks.state]\n{q}.trusted_hash = \"sha256:00\" # trusted in /hooks\n{other}.trusted_hash = \"sha256:02\""
            ),
        ];
        for spelling in &spellings {
            for eol in ["\n", "\r\n"] {
                for bom in ["", "\u{feff}"] {
                    let text = format!(
                        "{bom}# session-relay test\nmodel = \"x\" # not a table\n\n{spelling}\n\n[tui]\nanimations = false\n"
                    )
                    .replace('\n', eol);
                    std::fs::write(home.join("config.toml"), &text).unwrap();
                    assert_eq!(
                        trust(home, "PreCompact", 0, 0),
                        HookTrust::Trusted,
                        "{text:?}"
                    );
                    assert_eq!(
                        trust(home, "PreCompact", 1, 0),
                        HookTrust::Untrusted,
                        "{text:?}"
                    );
                }
            }
        }
    }

    /// Files where the handler's key and the word `trusted_hash` both appear, and Codex still
    /// holds no trust for it: commented out, under another table, another handler's, empty.
    #[test]
    fn a_trust_is_not_read_where_codex_reads_none() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let k = key(home, "PreCompact", 0, 0);
        let q = serde_json::to_string(&k).unwrap();
        let other = serde_json::to_string(&key(home, "SessionEnd", 0, 0)).unwrap();
        let texts = [
            String::new(),
            format!("# [hooks.state.{q}]\n# trusted_hash = \"sha256:00\"\n"),
            format!("[hooks.state.{q}]\nenabled = true # trusted_hash = \"sha256:00\"\n"),
            format!(
                "[hooks.state.{q}]\nenabled = true\n  [hooks.state.{other}]\n  trusted_hash = \"sha256:00\"\n"
            ),
            format!("[projects.{q}]\ntrusted_hash = \"sha256:00\"\n"),
            format!("[hooks]\nnote = {q}\ntrusted_hash = \"sha256:00\"\n"),
            format!("[hooks.state.{q}]\ntrusted_hash = \"\"\n"),
        ];
        for text in &texts {
            std::fs::write(home.join("config.toml"), text).unwrap();
            assert_eq!(
                trust(home, "PreCompact", 0, 0),
                HookTrust::Untrusted,
                "{text:?}"
            );
        }
    }

    /// `enabled = false` turns the handler off whatever its trust, in every spelling and under
    /// a key with spaces around it (Codex trims the keys; both checked with codex 0.171's
    /// `hooks/list`); `enabled = true`, or `false` for another handler, changes nothing.
    #[test]
    fn a_handler_turned_off_is_off_whatever_its_trust() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let k = key(home, "PreCompact", 0, 0);
        let q = serde_json::to_string(&k).unwrap();
        let other = serde_json::to_string(&key(home, "PreCompact", 1, 0)).unwrap();
        for (text, want) in [
            (
                format!("[hooks.state.{q}]\nenabled = false\n"),
                HookTrust::TurnedOff,
            ),
            (
                format!("[hooks.state.{q}]\ntrusted_hash = \"sha256:00\"\nenabled = false\n"),
                HookTrust::TurnedOff,
            ),
            (
                format!("[hooks.state]\n\" {k} \" = {{ enabled = false }}\n"),
                HookTrust::TurnedOff,
            ),
            (
                format!(
                    "hooks.state.{q}.enabled = false\nhooks.state.{q}.trusted_hash = \"sha256:00\"\n"
                ),
                HookTrust::TurnedOff,
            ),
            (
                format!("[hooks.state.{q}]\ntrusted_hash = \"sha256:00\"\nenabled = true\n"),
                HookTrust::Trusted,
            ),
            (
                format!(
                    "[hooks.state.{other}]\nenabled = false\n[hooks.state.{q}]\ntrusted_hash = \"sha256:00\"\n"
                ),
                HookTrust::Trusted,
            ),
            (
                format!("[hooks.state.{other}]\nenabled = false\n"),
                HookTrust::Untrusted,
            ),
        ] {
            std::fs::write(home.join("config.toml"), &text).unwrap();
            assert_eq!(trust(home, "PreCompact", 0, 0), want, "{text:?}");
        }
    }

    /// A config.toml that is not TOML, or whose `hooks.state` Codex's typed config refuses
    /// (Codex refuses to start with either, duplicate keys included), tells nothing: the trust is unknown, it is never written to, and recording a trust stops
    /// before starting Codex with an error that names the line.
    #[test]
    fn a_config_that_is_not_toml_leaves_the_trust_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let q = serde_json::to_string(&key(home, "PreCompact", 0, 0)).unwrap();
        for (text, line) in [
            (
                format!("model = \"x\"\n\n[hooks.state.{q}]\ntrusted_hash = \"sha256:00\n"),
                4,
            ),
            (
                format!("[hooks.state.{q}]\ntrusted_hash = \"a\"\ntrusted_hash = \"b\"\n"),
                3,
            ),
            (
                format!(
                    "[hooks.state.{q}]\r\ntrusted_hash = \"sha256:00\"\r\n[hooks.state.{q}]\r\n"
                ),
                3,
            ),
            // TOML, but not what Codex 0.171's typed config takes ("invalid type: integer `1`,
            // expected a string"): it refuses to start, whichever handler the entry is for.
            (format!("[hooks.state.{q}]\ntrusted_hash = 1\n"), 2),
            (
                format!(
                    "model = \"x\"\n[hooks.state.\"other\"]\nenabled = \"no\"\n[hooks.state.{q}]\ntrusted_hash = \"sha256:00\"\n"
                ),
                3,
            ),
            (format!("[hooks.state]\n{q} = \"on\"\n"), 2),
        ] {
            let path = home.join("config.toml");
            std::fs::write(&path, &text).unwrap();
            assert_eq!(
                trust(home, "PreCompact", 0, 0),
                HookTrust::Unknown,
                "{text:?}"
            );
            let err = trust_with_codex(home, "PreCompact", 0, 0)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("{}:{line}: ", path.display()))
                    && err.ends_with("Codex refuses to start until it is corrected"),
                "{text:?}: {err}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }
}
