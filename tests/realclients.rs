//! Every fixture relayed into every agent (other agents' sessions, and same-agent forks) in
//! temporary homes, then judged by the REAL Codex, Claude Code, Gemini, GitHub Copilot, Qwen
//! Code, pi and OpenCode CLIs through the checks in `tests/realclients/` (`check_codex.py`,
//! `check_claude.py`, `check_gemini.py`, `check_copilot.py`, `check_qwen.py`, `check_pi.py`,
//! `check_opencode.py`).
//!
//! These tests need the clients that `tests/realclients/install.sh` installs (`.ci/run` runs
//! it), so they are ignored by a plain `cargo test`; run them with
//! `cargo test --test realclients -- --ignored`. When the clients, python3 or tmux are missing
//! they fail, loudly: a relay that was never opened by the real CLI is not known to work.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TestEnv, fixture_sessions};
use serde_json::{Value, json};

/// The folder of the check scripts, after making sure the real CLIs they drive are installed.
fn realclients() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/realclients");
    for check in [
        "check_codex.py",
        "check_claude.py",
        "check_gemini.py",
        "check_copilot.py",
        "check_qwen.py",
        "check_pi.py",
        "check_opencode.py",
    ] {
        assert!(
            dir.join(check).exists(),
            "the real-client check {check} is missing from {}",
            dir.display()
        );
    }
    let cache = std::env::var_os("REALCLIENTS_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            dirs::home_dir()
                .unwrap()
                .join(".cache/session-relay-realclients")
        });
    for cli in [
        "codex", "claude", "gemini", "copilot", "qwen", "pi", "opencode",
    ] {
        assert!(
            cache.join("node_modules/.bin").join(cli).exists(),
            "the real CLIs are not installed in {}: run `bash {}/install.sh` (needs the npm registry)",
            cache.display(),
            dir.display()
        );
    }
    dir
}

/// Runs a check script; on failure (any exit status but 0) returns its whole output.
fn check(script: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GEMINI_CLI_HOME")
        .env_remove("COPILOT_HOME")
        .env_remove("QWEN_HOME")
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("SESSION_RELAY_OPENCODE_HOME")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {args:?} exited {:?}\n{}\n{}",
            script.display(),
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Relays `source` to `to` and has the real CLI list, load and draw it.
fn relay_and_check(
    env: &TestEnv,
    scripts: &Path,
    source: &str,
    to: &str,
    proj: &str,
    extra: &[&str],
    expect: &[&str],
) -> Result<(), String> {
    let out = env
        .cmd()
        .args(["relay", source, "--to", to, "--cwd", proj, "--json"])
        .args(extra)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(format!(
            "relay {source} --to {to} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = r["target"]["id"].as_str().unwrap().to_string();
    // The checks look for plain words of the last prompt on screen; the public sample's
    // prompts are redaction markers in brackets, which it cannot pick, so name one for it.
    let written = std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap();
    let mut expect: Vec<&str> = expect.iter().flat_map(|e| ["--expect", e]).collect();
    if written.contains("[REDACTED_PROMPT]") {
        expect = vec!["--expect", "REDACTED_PROMPT"];
    }
    match to {
        "codex" => check(
            &scripts.join("check_codex.py"),
            &[
                &["--tui"][..],
                &expect,
                &[env.codex_home().to_str().unwrap(), &id],
            ]
            .concat(),
        ),
        // Listed for the directory, drawn in the TUI, and sent to the model with a new prompt.
        "gemini" => check(
            &scripts.join("check_gemini.py"),
            &[
                &["--checks", "lint,list,render,model"][..],
                &expect,
                &[env.home("gemini").to_str().unwrap(), proj, &id],
            ]
            .concat(),
        ),
        // Linted, sent to a mock model with a new prompt, drawn in the TUI and listed in its
        // Sessions tab.
        "copilot" => check(
            &scripts.join("check_copilot.py"),
            &[&expect[..], &[env.home("copilot").to_str().unwrap(), &id]].concat(),
        ),
        // Listed for the directory, and sent to the model with a new prompt.
        "qwen" => check(
            &scripts.join("check_qwen.py"),
            &[
                &expect[..],
                &[env.home("qwen").to_str().unwrap(), proj, &id],
            ]
            .concat(),
        ),
        // Listed in its picker for the directory, and sent to a mock model with a new prompt.
        "pi" => check(
            &scripts.join("check_pi.py"),
            &[
                &["--checks", "lint,list,model"][..],
                &expect,
                &[env.home("pi").to_str().unwrap(), proj, &id],
            ]
            .concat(),
        ),
        // Listed for the directory, and sent to a mock model with a new prompt, which OpenCode
        // appends to the session.
        "opencode" => check(
            &scripts.join("check_opencode.py"),
            &[
                &expect[..],
                &[env.home("opencode").to_str().unwrap(), proj, &id],
            ]
            .concat(),
        ),
        _ => check(
            &scripts.join("check_claude.py"),
            &[
                &["--checks", "lint,load,render"][..],
                &expect,
                &[env.claude_home().to_str().unwrap(), proj, &id],
            ]
            .concat(),
        ),
    }
    .map_err(|e| format!("{source} -> {to}:\n{e}"))
}

/// Relays that still fail a real client's check, each with the failure it must still show: a
/// known bug, written down here rather than hidden. A case that passes fails the test, so the
/// entry goes when the bug is fixed.
const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

fn every_fixture_to(to: &str) {
    let scripts = realclients();
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut nothing_to_relay = Vec::new();
    for (agent, path) in fixture_sessions() {
        let rel = path.strip_prefix(common::fixtures().join(agent)).unwrap();
        let source = env.home(agent).join(rel);
        // The stray file Gemini CLI leaves after a resume holds no prompt: there is nothing
        // to relay (the relay says so), and Gemini itself deletes it at its next start.
        let shown = env.json(&["show", source.to_str().unwrap(), "--json"]);
        if shown["counts"]["user"].as_u64().unwrap_or(0) == 0 {
            nothing_to_relay.push(format!("{agent}: {}", rel.display()));
            continue;
        }
        let source = source.to_str().unwrap();
        let known = KNOWN_FAILURES
            .iter()
            .find(|(target, id, _)| *target == to && source.ends_with(id));
        match (
            relay_and_check(&env, &scripts, source, to, &proj, &[], &[]),
            known,
        ) {
            (Err(e), Some((_, _, why))) if e.contains(why) => {}
            (Err(e), _) => failures.push(e),
            (Ok(()), Some(_)) => failures.push(format!(
                "{source} -> {to} passes now: take it out of KNOWN_FAILURES"
            )),
            (Ok(()), None) => {}
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} fixtures");
    assert_eq!(
        nothing_to_relay,
        ["gemini: .gemini/tmp/demo/chats/session-2026-11-30T11-54-609f289a.jsonl"],
        "only the stray file of a Gemini resume holds no prompt"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn every_fixture_relayed_to_codex_opens_in_real_codex() {
    every_fixture_to("codex");
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn every_fixture_relayed_to_claude_opens_in_real_claude_code() {
    every_fixture_to("claude");
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn every_fixture_relayed_to_gemini_opens_in_real_gemini() {
    every_fixture_to("gemini");
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn every_fixture_relayed_to_copilot_opens_in_real_copilot() {
    every_fixture_to("copilot");
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn every_fixture_relayed_to_qwen_opens_in_real_qwen_code() {
    every_fixture_to("qwen");
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn every_fixture_relayed_to_pi_opens_in_real_pi() {
    every_fixture_to("pi");
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn every_fixture_relayed_to_opencode_opens_in_real_opencode() {
    every_fixture_to("opencode");
}

/// A Codex session of more than 20 MB (tool outputs dominate, as in real long sessions).
fn write_big_codex_session(home: &Path, cwd: &str) -> (PathBuf, u64) {
    let id = "0199e000-0000-7000-8000-00000000b16b";
    let dir = home.join("sessions/2026/11/15");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("rollout-2026-11-15T08-00-00-{id}.jsonl"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut line = |sec: u64, kind: &str, payload: Value| {
        let ts = format!(
            "2026-11-15T{:02}:{:02}:{:02}.000Z",
            8 + sec / 3600,
            sec / 60 % 60,
            sec % 60
        );
        writeln!(
            f,
            "{}",
            json!({"timestamp": ts, "type": kind, "payload": payload})
        )
        .unwrap();
    };
    line(
        0,
        "session_meta",
        json!({"id": id, "timestamp": "2026-11-15T08:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.60.0", "source": "cli"}),
    );
    let output: String = (0..800)
        .map(|i| format!("src/module_{i:04}.rs: fn item_{i}() -> u64 {{ {i} }}\n"))
        .collect();
    for turn in 0..520u64 {
        let t = 1 + turn * 6;
        let prompt = format!("Turn {turn}: grep the modules for item_{turn} and report");
        line(
            t,
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
        );
        line(
            t,
            "event_msg",
            json!({"type": "user_message", "message": prompt}),
        );
        let call = format!("call_{turn}");
        line(
            t + 1,
            "response_item",
            json!({"type": "function_call", "name": "shell", "arguments": json!({"command": ["bash", "-lc", format!("grep -rn item_{turn} src")]}).to_string(), "call_id": call}),
        );
        line(
            t + 2,
            "response_item",
            json!({"type": "function_call_output", "call_id": call, "output": json!({"output": output, "metadata": {"exit_code": 0}}).to_string()}),
        );
        let answer = format!("item_{turn} is defined in src/module_{turn:04}.rs");
        line(
            t + 3,
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}),
        );
        line(
            t + 3,
            "event_msg",
            json!({"type": "agent_message", "message": answer}),
        );
    }
    drop(f);
    let size = std::fs::metadata(&path).unwrap().len();
    (path, size)
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn a_generated_20_mb_session_relays_to_every_agent() {
    let scripts = realclients();
    let env = TestEnv::empty();
    let proj = env.project();
    let (path, size) = write_big_codex_session(&env.codex_home(), &proj);
    assert!(size > 20 * 1024 * 1024, "generated only {size} bytes");
    let src = path.to_str().unwrap();
    // OpenCode's database here is a new one, where no prompt names a model yet: the model is
    // the one the user's OpenCode config sets, as on a machine where OpenCode was set up.
    // Without one the relay keeps a placeholder and says so (tests/cli/opencode.rs).
    let config = env.dir.path().join("config/opencode");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("opencode.json"),
        r#"{"model": "mock/mock-model"}"#,
    )
    .unwrap();
    let mut failures = Vec::new();
    // Fitted to the default budget, the transcript loads without Claude Code compacting it
    // (relayed whole, its first request would be a compaction and the probe would follow a
    // summary: the load check catches that).
    for to in [
        "claude", "codex", "gemini", "copilot", "qwen", "pi", "opencode",
    ] {
        // Gemini CLI's 1M window takes all 520 turns; a terminal's scrollback cannot hold them
        // drawn, so the TUI check looks for the last answer (the request check still sees all).
        let expect: &[&str] = if to == "gemini" {
            &["item_519 is defined in src/module_0519.rs"]
        } else {
            &[]
        };
        if let Err(e) = relay_and_check(&env, &scripts, src, to, &proj, &[], expect) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn small_budget_relays_still_open_in_every_cli() {
    let scripts = realclients();
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let mut failures = Vec::new();
    // Long fixtures of every agent, with compaction, parallel calls, todos and failures.
    for id in [
        "771ce1df",
        "b62416f1",
        "5d0c3a1e",
        "01a22a5d",
        "01a22a5c",
        "0199b111",
        "609f289a",
        "2b3405f7",
        "7e1c0dd0",
        "8115de0d",
        "c73c50cb",
        "01a2495e-dc76",
        "0199a0dd",
    ] {
        for to in [
            "claude", "codex", "gemini", "copilot", "qwen", "pi", "opencode",
        ] {
            let r = relay_and_check(&env, &scripts, id, to, &proj, &["--budget", "1200"], &[]);
            if let Err(e) = r {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A fixture session bundled under one HOME, with its checkout's changes (`--git`), and
/// relayed from the bundle under another HOME into another checkout (`--apply-changes`): the
/// real Codex and Claude Code CLIs resume it there.
#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn a_session_relayed_from_a_bundle_opens_in_real_codex_and_claude_code() {
    let scripts = realclients();
    let first = TestEnv::with_fixtures();
    let git = |dir: &Path, args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    let repo = PathBuf::from(first.project());
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("app.py"), "print('one')\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "Start"]);
    let second = TestEnv::empty();
    let proj = second.work().join("checkout");
    git(
        &second.work(),
        &[
            "clone",
            "-q",
            repo.to_str().unwrap(),
            proj.to_str().unwrap(),
        ],
    );
    let proj = std::fs::canonicalize(proj).unwrap().display().to_string();
    std::fs::write(repo.join("app.py"), "print('two')\n").unwrap();
    let bundle = first.work().join("handoff.bundle");
    first.ok(&[
        "bundle",
        "771ce1df",
        "-o",
        bundle.to_str().unwrap(),
        "--git",
        "--cwd",
        repo.to_str().unwrap(),
    ]);
    let bundle = bundle.to_str().unwrap();
    relay_and_check(
        &second,
        &scripts,
        bundle,
        "codex",
        &proj,
        &["--apply-changes"],
        &[],
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(Path::new(&proj).join("app.py")).unwrap(),
        "print('two')\n",
        "the bundled changes are not in the second checkout"
    );
    relay_and_check(&second, &scripts, bundle, "claude", &proj, &[], &[]).unwrap();
}

/// Codex's thread index row for `id`, as column -> value.
fn thread_row(home: &Path, id: &str) -> Option<std::collections::BTreeMap<String, String>> {
    let conn = rusqlite::Connection::open(home.join("state_5.sqlite")).unwrap();
    let mut stmt = conn.prepare("SELECT * FROM threads WHERE id = ?1").unwrap();
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    stmt.query_row([id], |r| {
        let mut m = std::collections::BTreeMap::new();
        for (i, n) in names.iter().enumerate() {
            let v: rusqlite::types::Value = r.get(i)?;
            m.insert(n.clone(), format!("{v:?}"));
        }
        Ok(m)
    })
    .ok()
}

/// The row is compared under each `config.toml`: Codex 0.171 records its own constants for a
/// rollout without a turn context whatever the user configured (at the top level, where Codex
/// reads these keys, or in a profile table), and only the backfill that creates the index takes
/// the configured provider.
#[test]
#[ignore = "needs the real CLIs: bash tests/realclients/install.sh, then cargo test -- --ignored"]
fn the_codex_thread_index_row_matches_the_one_codex_writes() {
    let provider =
        "[model_providers.mine]\nname = \"Mine\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let settings = "approval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n";
    let configs = [
        None,
        Some(format!("model_provider = \"mine\"\n{settings}\n{provider}")),
        Some(format!(
            "model = \"x\"\n\n[profiles.x]\nmodel_provider = \"mine\"\n{settings}\n{provider}"
        )),
    ];
    let failures: Vec<String> = configs
        .iter()
        .filter_map(|c| {
            codex_thread_index_row_matches(c.as_deref())
                .err()
                .map(|e| format!("config.toml {c:?}:\n{e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn codex_thread_index_row_matches(config: Option<&str>) -> Result<(), String> {
    let scripts = realclients();
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    if let Some(text) = config {
        std::fs::write(env.codex_home().join("config.toml"), text).unwrap();
    }
    // Let the real Codex create its index in this home (it indexes a fixture it reads).
    check(
        &scripts.join("check_codex.py"),
        &[
            "--in-place",
            env.codex_home().to_str().unwrap(),
            "0199a000-0000-7000-8000-00000000e0e0",
        ],
    )?;
    if !env.codex_home().join("state_5.sqlite").exists() {
        return Err("codex 0.171 creates state_5.sqlite".into());
    }
    let out = env.json(&[
        "relay", "771ce1df", "--to", "codex", "--cwd", &proj, "--json",
    ]);
    let id = out["target"]["id"].as_str().unwrap();
    if !out["notes"]
        .to_string()
        .contains("registered in Codex's thread index")
    {
        return Err(format!("not registered: {}", out["notes"]));
    }
    let ours = thread_row(&env.codex_home(), id).ok_or("no row written")?;

    // A twin home where Codex indexes the same file itself.
    let twin = env.dir.path().join("twin-codex");
    common::copy_tree(&env.codex_home(), &twin);
    let conn = rusqlite::Connection::open(twin.join("state_5.sqlite")).unwrap();
    conn.execute("DELETE FROM threads WHERE id = ?1", [id])
        .unwrap();
    drop(conn);
    check(
        &scripts.join("check_codex.py"),
        &["--in-place", twin.to_str().unwrap(), id],
    )?;
    let theirs = thread_row(&twin, id).ok_or("codex did not index it")?;
    let mut differ = Vec::new();
    for (col, v) in &theirs {
        // Paths differ by home; times are when each row was written.
        if [
            "rollout_path",
            "updated_at",
            "updated_at_ms",
            "recency_at",
            "recency_at_ms",
        ]
        .contains(&col.as_str())
        {
            continue;
        }
        if ours.get(col) != Some(v) {
            differ.push(format!("column {col}: ours {:?}, codex {v}", ours.get(col)));
        }
    }
    if !differ.is_empty() {
        return Err(differ.join("\n"));
    }
    // And the real client lists and reads it from the indexed home (the TUI needs a login
    // in place, which a test home has not).
    check(
        &scripts.join("check_codex.py"),
        &["--in-place", env.codex_home().to_str().unwrap(), id],
    )
}

/// A person's prompt that starts as the target's own injected texts do (`<environment_context>`
/// for Codex, `<system-reminder>` for Claude Code) is escaped by the writer: the real CLI takes
/// it for the person's words, and sends it on with the conversation.
#[test]
#[ignore = "needs the real CLIs: tests/realclients/install.sh"]
fn prompts_that_start_as_the_targets_own_texts_reach_the_real_cli() {
    let scripts = realclients();
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let mut failures = Vec::new();
    for (from, to, tag) in [
        ("claude", "codex", "<environment_context>"),
        ("codex", "claude", "<system-reminder>"),
    ] {
        let last = format!("{tag} PASTEDWORDS keep this");
        let id = common::session_with_prompts(&env, from, &["Start here", &last]);
        if let Err(e) = relay_and_check(&env, &scripts, &id, to, &proj, &[], &["PASTEDWORDS"]) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
