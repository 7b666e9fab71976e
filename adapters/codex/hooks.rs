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

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

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

/// Whether `config.toml` records a trusted hash for the handler. The hash itself is Codex's to
/// check: a handler changed since it was trusted shows as trusted here and runs only once the
/// user trusts it again.
pub fn trust(home: &Path, event: &str, group: usize, handler: usize) -> HookTrust {
    let Ok(config) = std::fs::read_to_string(home.join("config.toml")) else {
        return HookTrust::Untrusted;
    };
    let quoted = serde_json::to_string(&key(home, event, group, handler)).unwrap_or_default();
    let recorded = config.match_indices(&quoted).any(|(i, _)| {
        let after = &config[i + quoted.len()..];
        let end = after.find("\n[").unwrap_or(after.len());
        after[..end].contains("trusted_hash")
    });
    if recorded {
        HookTrust::Trusted
    } else {
        HookTrust::Untrusted
    }
}

/// Trusts the handler the way Codex's own `/hooks` does, through `codex app-server`.
pub fn trust_with_codex(home: &Path, event: &str, group: usize, handler: usize) -> Result<String> {
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
}
