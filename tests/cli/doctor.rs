//! `doctor` on homes with and without each agent's CLI: fake `codex` / `claude` programs on a
//! PATH of the test's own, saying the versions a test wants.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use serde_json::Value;

use crate::common::TestEnv;

/// A folder of fake CLIs: (program, what its `--version` prints).
fn fake_bin(env: &TestEnv, name: &str, clis: &[(&str, &str)]) -> PathBuf {
    let dir = env.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (program, says) in clis {
        let path = dir.join(program);
        std::fs::write(&path, format!("#!/bin/sh\necho '{says}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `doctor --json` with only `bin` on PATH.
fn doctor(env: &TestEnv, bin: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = extra.to_vec();
    args.extend(["doctor", "--json"]);
    let out = env.cmd().env("PATH", bin).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    v
}

fn agent<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == name)
        .unwrap()
}

fn problems_of(v: &Value, name: &str) -> Vec<Value> {
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["agent"] == name)
        .cloned()
        .collect()
}

#[test]
fn doctor_compares_each_installed_cli_with_the_verified_versions() {
    let env = TestEnv::with_fixtures();
    let bin = fake_bin(
        &env,
        "bin",
        &[
            ("codex", "codex-cli 0.171.0"),
            ("claude", "2.1.200 (Claude Code)"),
            ("gemini", "0.61.0"),
            ("copilot", "GitHub Copilot CLI 1.0.102."),
            ("qwen", "0.24.4"),
            ("pi", "0.73.1"),
            ("opencode", "1.18.33"),
        ],
    );
    let v = doctor(&env, &bin, &[]);
    assert_eq!(agent(&v, "copilot")["cli"]["status"], "verified");
    assert_eq!(agent(&v, "opencode")["cli"]["status"], "verified");
    let codex = agent(&v, "codex");
    assert_eq!(codex["home_exists"], true);
    assert_eq!(codex["home_from"], "env");
    assert!(codex["sessions"].as_u64().unwrap() > 5, "{codex}");
    assert_eq!(codex["cli"]["status"], "verified");
    assert_eq!(codex["cli"]["version"], "0.171.0");
    assert_eq!(codex["cli"]["verified"], serde_json::json!(["0.171.0"]));
    assert_eq!(
        codex["cli"]["path"],
        bin.join("codex").display().to_string()
    );
    assert!(problems_of(&v, "codex").is_empty(), "{v:#}");
    assert_eq!(agent(&v, "gemini")["cli"]["status"], "verified");
    assert!(problems_of(&v, "gemini").is_empty(), "{v:#}");
    let claude = agent(&v, "claude");
    assert_eq!(claude["cli"]["status"], "older");
    let p = problems_of(&v, "claude");
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["level"], "warning");
    assert!(
        p[0]["problem"].as_str().unwrap().contains("2.1.200"),
        "{p:?}"
    );
    assert!(
        p[0]["fix"]
            .as_str()
            .unwrap()
            .contains("npm install -g @anthropic-ai/claude-code@2.1.332"),
        "{p:?}"
    );
    // The same as text, with what to do.
    let out = env.cmd().env("PATH", &bin).arg("doctor").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("verified (0.171.0)"), "{text}");
    assert!(text.contains("older than verified (2.1.332)"), "{text}");
    assert!(text.contains("1 problem:"), "{text}");
    assert!(text.contains("fix: update it: npm install"), "{text}");

    // Newer, and a CLI that does not say a version.
    let bin = fake_bin(
        &env,
        "bin2",
        &[
            ("codex", "codex-cli 0.172.0-alpha.1"),
            ("claude", "Segmentation fault"),
        ],
    );
    let v = doctor(&env, &bin, &[]);
    assert_eq!(agent(&v, "codex")["cli"]["status"], "newer");
    assert_eq!(agent(&v, "claude")["cli"]["status"], "unknown_version");
    assert!(
        agent(&v, "claude")["cli"]["error"]
            .as_str()
            .unwrap()
            .contains("Segmentation fault")
    );
    assert_eq!(problems_of(&v, "codex").len(), 1);
    assert_eq!(problems_of(&v, "claude").len(), 1);
}

#[test]
fn doctor_says_how_to_install_a_missing_cli_and_find_a_missing_home() {
    let mut env = TestEnv::with_fixtures();
    env.removing_stores();
    std::fs::remove_dir_all(env.codex_home()).unwrap();
    let nothing = fake_bin(&env, "empty-bin", &[]);
    let v = doctor(&env, &nothing, &[]);
    for name in ["claude", "codex", "gemini"] {
        assert_eq!(agent(&v, name)["cli"]["status"], "not_installed", "{name}");
    }
    let codex = problems_of(&v, "codex");
    assert_eq!(codex.len(), 2, "{codex:?}");
    let home = codex
        .iter()
        .find(|p| p["problem"].as_str().unwrap().contains("home"))
        .unwrap();
    assert!(
        home["fix"].as_str().unwrap().contains("CODEX_HOME=DIR"),
        "{home}"
    );
    let cli = codex
        .iter()
        .find(|p| p["problem"].as_str().unwrap().contains("not on PATH"))
        .unwrap();
    assert!(
        cli["fix"]
            .as_str()
            .unwrap()
            .contains("npm install -g @openai/codex@0.171.0"),
        "{cli}"
    );
    assert_eq!(agent(&v, "codex")["home_exists"], false);
    assert_eq!(agent(&v, "claude")["home_exists"], true);
    // Warnings only: doctor itself succeeds.
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["level"] != "error")
    );

    // No home at all is an error.
    for a in session_relay::adapters::registry() {
        let home = env.home(a.name());
        if home.exists() {
            std::fs::remove_dir_all(home).unwrap();
        }
    }
    let v = doctor(&env, &nothing, &[]);
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["level"] == "error" && p["agent"].is_null()),
        "{v:#}"
    );
}

#[test]
fn doctor_reports_the_ledger_and_a_broken_config_instead_of_failing() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let bin = fake_bin(&env, "bin", &[]);
    let v = doctor(&env, &bin, &[]);
    assert_eq!(v["state"]["ledger"]["exists"], false);
    assert_eq!(v["hooks"]["supported"], true);
    assert_eq!(v["hooks"]["hooks"], serde_json::json!([]));
    env.ok(&["relay", "771ce1df", "--to", "codex", "--cwd", &proj]);
    let v = doctor(&env, &bin, &[]);
    let ledger = &v["state"]["ledger"];
    assert_eq!(ledger["exists"], true);
    assert_eq!(ledger["relays"], 1);
    assert_eq!(ledger["relayed_present"], 1);
    assert_eq!(v["config"]["file"], Value::Null);

    let bad = env.work().join("bad.yaml");
    std::fs::write(&bad, "agents:\n  codex:\n    context_widow: 5\n").unwrap();
    let v = doctor(&env, &bin, &["--config", bad.to_str().unwrap()]);
    let err = v["config"]["error"].as_str().unwrap();
    assert!(
        err.contains("bad.yaml") && err.contains("context_widow"),
        "{err}"
    );
    let p = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["problem"].as_str().unwrap().contains("config"))
        .unwrap();
    assert_eq!(p["level"], "error");
    assert!(p["fix"].as_str().unwrap().contains("config.example.yaml"));
    // The homes still come from the environment.
    assert_eq!(agent(&v, "codex")["home_exists"], true);
}

/// The versions the writers are verified against are listed once in the code (each adapter's
/// `verified_versions`); the table in docs/agents.md and the real-client installer must say the
/// same.
#[test]
fn verified_versions_agree_between_the_code_the_docs_and_the_installer() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = std::fs::read_to_string(root.join("docs/agents.md")).unwrap();
    let install = std::fs::read_to_string(root.join("tests/realclients/install.sh")).unwrap();
    let mut checked = 0;
    for a in session_relay::adapters::registry() {
        let Some(cli) = a.cli_command() else { continue };
        let verified = a.verified_versions();
        assert!(
            !verified.is_empty(),
            "{} names no verified version",
            a.name()
        );
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| {} | `{cli}` |", a.display_name())))
            .unwrap_or_else(|| panic!("docs/agents.md: no verified-versions row for {}", a.name()));
        for v in verified {
            assert!(
                row.contains(v),
                "docs/agents.md row for {}: {row}",
                a.name()
            );
        }
        let newest = verified.last().unwrap();
        assert!(
            install
                .lines()
                .any(|l| l.starts_with(&format!("{cli}_v="))
                    && l.ends_with(&format!(":-{newest}}}"))),
            "install.sh does not pin {cli} {newest}"
        );
        // The package doctor tells users to install is the one the real-client tests install.
        let package = a.npm_package().expect("a CLI published on npm");
        assert!(
            install.contains(&format!("\"{package}@${cli}_v\"")),
            "install.sh does not install {package}"
        );
        checked += 1;
    }
    assert!(checked >= 3);
}

#[test]
fn doctor_says_which_hooks_will_not_run_and_how_to_fix_them() {
    let env = TestEnv::with_fixtures();
    let bin = fake_bin(&env, "bin", &[]);
    env.ok(&["hooks", "install", "--agent", "claude"]);
    env.ok(&["hooks", "install", "--agent", "codex"]);
    let v = doctor(&env, &bin, &[]);
    let states: Vec<(&str, &str)> = v["hooks"]["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["agent"].as_str().unwrap(), h["state"].as_str().unwrap()))
        .collect();
    assert!(
        states.contains(&("claude", "PreCompact installed")),
        "{v:#}"
    );
    assert!(states.contains(&("codex", "PreCompact untrusted")), "{v:#}");
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["agent"] == "codex"
            && p["fix"] == "session-relay hooks install --agent codex --trust"),
        "{v:#}"
    );

    // The binary the hook runs is gone: the hook is outdated, and installing again fixes it.
    let settings = env.claude_home().join("settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    let exe = env!("CARGO_BIN_EXE_session-relay");
    std::fs::write(&settings, text.replace(exe, "/nonexistent/session-relay")).unwrap();
    let v = doctor(&env, &bin, &[]);
    assert!(
        v["hooks"]["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["agent"] == "claude" && h["state"] == "PreCompact outdated"),
        "{v:#}"
    );
    assert!(
        problems_of(&v, "claude")
            .iter()
            .any(|p| p["fix"] == "session-relay hooks install --agent claude"),
        "{v:#}"
    );
}
