//! The hooks `session-relay hooks install` registers, run by the REAL agents: Claude Code
//! 2.1.332 compacting a session (`/compact` through `claude -p` and in its TUI) and Codex 0.171
//! compacting one on its own (over its auto-compact limit, in `codex exec` and in its TUI),
//! GitHub Copilot CLI 1.0.102 compacting one (`/compact` in its TUI) and Qwen Code 0.24.4
//! compressing one (`/compress`, headless), all offline against local mock models
//! (`tests/realclients/run_compaction.py`). The session each relays must then open in another
//! real CLI (`check_codex.py`, `check_claude.py`).
//!
//! Like `realclients.rs`, these need the clients `tests/realclients/install.sh` installs and
//! are ignored by a plain `cargo test`; run them with
//! `cargo test --test realclients_hooks -- --ignored`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestEnv;
use serde_json::Value;

/// The installed CLIs' folder, after making sure they are there.
fn clients() -> PathBuf {
    let cache = std::env::var_os("REALCLIENTS_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            dirs::home_dir()
                .unwrap()
                .join(".cache/session-relay-realclients")
        });
    assert!(
        cache.join("node_modules/.bin/codex").exists()
            && cache.join("node_modules/.bin/claude").exists()
            && cache.join("node_modules/.bin/copilot").exists(),
        "the real CLIs are not installed in {}: run `bash tests/realclients/install.sh`",
        cache.display()
    );
    cache.join("node_modules/.bin")
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/realclients")
        .join(name)
}

/// Runs a script of `tests/realclients/`; its standard output, or everything it said.
fn python(name: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new("python3")
        .arg(script(name))
        .args(args)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("COPILOT_HOME")
        .env_remove("QWEN_HOME")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {name}: {e}"));
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{name} {args:?} exited {:?}\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Has the real agent write a session in `proj` and compact it, with the hook's state folder
/// that of the test environment.
fn compact(env: &TestEnv, agent: &str, proj: &str, tui: bool) -> Value {
    let home = env.home(agent);
    let state = format!("XDG_STATE_HOME={}", env.dir.path().join("state").display());
    let mut args = vec!["--env", &state];
    if tui {
        args.push("--tui");
    }
    args.extend([agent, home.to_str().unwrap(), proj]);
    let out = python("run_compaction.py", &args).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The hook runs logged for a session.
fn hook_runs(env: &TestEnv, session: &str) -> Vec<Value> {
    std::fs::read_to_string(env.dir.path().join("state/session-relay/hooks.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["session_id"] == session)
        .collect()
}

/// The relay the hook made of `session`, after checking the run's record.
fn relayed(env: &TestEnv, session: &Value, event_trigger: &str) -> String {
    let sid = session["session_id"].as_str().unwrap();
    let runs = hook_runs(env, sid);
    assert_eq!(runs.len(), 1, "one hook run for {sid}: {runs:?}");
    let run = &runs[0];
    assert_eq!(run["event"], "PreCompact", "{run}");
    assert_eq!(run["trigger"], event_trigger, "{run}");
    assert_eq!(run["outcome"], "relayed", "{run}");
    assert_eq!(run["transcript_path"], session["transcript"], "{run}");
    assert!(
        run["millis"].as_u64().unwrap() < 5_000,
        "the hook took {}",
        run["millis"]
    );
    run["target"]["id"].as_str().unwrap().to_string()
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn claude_codes_compaction_relays_the_session_into_codex() {
    clients();
    let env = TestEnv::empty();
    let proj = env.project();
    let installed = env.json(&["hooks", "install", "--agent", "claude", "--json"]);
    assert_eq!(installed["hooks"][0]["trust"], "not_needed");

    // `claude -p --resume SID /compact`
    let session = compact(&env, "claude", &proj, false);
    let id = relayed(&env, &session, "manual");
    python(
        "check_codex.py",
        &["--tui", env.codex_home().to_str().unwrap(), &id],
    )
    .unwrap_or_else(|e| panic!("{e}"));

    // /compact in the TUI: Claude Code shows the hook's line to the user.
    let session = compact(&env, "claude", &proj, true);
    let id = relayed(&env, &session, "manual");
    let screen = session["screen"].as_str().unwrap();
    let shown: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        shown.contains(&format!(
            "completed successfully: Relayed to Codex CLI: codex resume {id}"
        )),
        "{screen}"
    );
    python(
        "check_codex.py",
        &["--tui", env.codex_home().to_str().unwrap(), &id],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Both relays are the live sessions' up-to-date relays... until the sessions grow again.
    let status = env.json(&["status", "--cwd", &proj, "--json"]);
    let marked = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["relay"]["from"]["agent"] == "claude")
        .count();
    assert_eq!(marked, 2, "{status}");
}

/// The real Claude Code lints, loads and draws the relayed session.
fn check_claude(env: &TestEnv, proj: &str, id: &str) {
    python(
        "check_claude.py",
        &[
            "--checks",
            "lint,load,render",
            env.claude_home().to_str().unwrap(),
            proj,
            id,
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn codexs_compaction_runs_the_trusted_hook_and_relays_into_claude_code() {
    let bin = clients();
    let env = TestEnv::empty();
    let proj = env.project();

    // Untrusted, Codex skips the hook without a word.
    let installed = env.json(&["hooks", "install", "--agent", "codex", "--json"]);
    assert_eq!(installed["hooks"][0]["trust"], "untrusted");
    let session = compact(&env, "codex", &proj, false);
    assert_eq!(
        hook_runs(&env, session["session_id"].as_str().unwrap()).len(),
        0,
        "codex ran an untrusted hook"
    );

    // Trusted through Codex's own app-server, it runs when Codex compacts (trigger auto).
    let out = env
        .cmd()
        .env("CODEX_BIN", bin.join("codex"))
        .args(["hooks", "install", "--agent", "codex", "--trust", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trusted: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(trusted["hooks"][0]["trust"], "trusted", "{trusted}");
    let session = compact(&env, "codex", &proj, false);
    let id = relayed(&env, &session, "auto");
    check_claude(&env, &proj, &id);

    // In the TUI, Codex draws the hook's line.
    let session = compact(&env, "codex", &proj, true);
    let id = relayed(&env, &session, "auto");
    let screen = session["screen"].as_str().unwrap();
    let shown: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        shown.contains("Hook · Relayed to Claude Code: cd ") && shown.contains(&id),
        "{screen}"
    );
    check_claude(&env, &proj, &id);

    // Uninstalling gives hooks.json back as it was (here: no file), trust record aside.
    let u = env.json(&["hooks", "uninstall", "--agent", "codex", "--json"]);
    assert_eq!(u["restored"], true);
    assert!(!env.codex_home().join("hooks.json").exists());
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn copilots_compaction_runs_the_hook_and_relays_into_claude_code() {
    clients();
    let env = TestEnv::empty();
    let proj = env.project();
    let installed = env.json(&[
        "hooks", "install", "--agent", "copilot", "--to", "claude", "--json",
    ]);
    assert_eq!(installed["hooks"][0]["trust"], "not_needed", "{installed}");

    // `/compact` typed into `copilot --resume=SID`: Copilot CLI runs the PreCompact hook with
    // Claude Code's input, the session's log as `transcript_path`.
    let session = compact(&env, "copilot", &proj, true);
    assert_eq!(session["compacted"], true, "{session}");
    let id = relayed(&env, &session, "manual");
    check_claude(&env, &proj, &id);

    // Uninstalling gives settings.json back as it was (here: no file).
    let u = env.json(&["hooks", "uninstall", "--agent", "copilot", "--json"]);
    assert_eq!(u["restored"], true, "{u}");
    assert!(!env.home("copilot").join("settings.json").exists());
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn qwens_compression_relays_the_session_into_claude_code() {
    let bin = clients();
    assert!(
        bin.join("qwen").exists(),
        "qwen is not installed: run `bash tests/realclients/install.sh`"
    );
    let env = TestEnv::empty();
    let proj = env.project();
    let installed = env.json(&[
        "hooks", "install", "--agent", "qwen", "--to", "claude", "--json",
    ]);
    assert_eq!(installed["hooks"][0]["trust"], "not_needed", "{installed}");

    // `qwen --resume SID /compress`: the hook relays the session, and its line is handed to
    // the summarizer as Qwen Code's additional instructions.
    let session = compact(&env, "qwen", &proj, false);
    let id = relayed(&env, &session, "manual");
    let summary = session["summary_request"].as_str().unwrap_or_default();
    assert!(
        summary.contains("Relayed to Claude Code: cd ") && summary.contains(&id),
        "the summary request lacks the hook's line: {summary}"
    );
    check_claude(&env, &proj, &id);

    // Qwen Code wrote its own `$version` into settings.json when it started: uninstalling
    // takes the hook out and leaves the file it made.
    let u = env.json(&["hooks", "uninstall", "--agent", "qwen", "--json"]);
    assert_eq!(u["removed"], 1, "{u}");
    let settings = std::fs::read_to_string(env.home("qwen").join("settings.json")).unwrap();
    assert!(!settings.contains("session-relay"), "{settings}");
}
