//! What a newcomer meets in the first hour: figures that mean one thing and read one way in
//! every command, a dry run that predicts the relay (and fails where it fails), warnings for a
//! home or config file given that does not exist, and nothing written outside the state folder.

use std::path::{Path, PathBuf};

use crate::common::TestEnv;
use serde_json::Value;

/// `1,234` -> 1234: a count as text output writes it.
fn count(text: &str) -> u64 {
    assert!(
        text.split(',').skip(1).all(|g| g.len() == 3) && !text.starts_with(','),
        "{text:?} is not grouped by thousands"
    );
    text.replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// `1234` -> `1,234`, written out here rather than taken from the code under test.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// The text after `label` on the line that starts with it.
fn line_after<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .unwrap_or_else(|| panic!("no line starting with {label:?} in:\n{out}"))
}

/// Every session of every fixture store, as `list --all --json` gives them.
fn listed(env: &TestEnv) -> Vec<Value> {
    env.list_json(&["list", "--all", "--json"])
        .as_array()
        .unwrap()
        .clone()
}

/// `show` counts a session's messages as `list` does, and the parts it names add up to them;
/// what else the session holds (tool calls, results, reasoning) is named for what it is.
#[test]
fn show_counts_messages_as_the_listing_does_and_its_parts_add_up() {
    let env = TestEnv::with_fixtures();
    let sessions = listed(&env);
    assert!(sessions.len() >= 20, "the fixtures are missing");
    let mut with_tools = 0;
    for s in &sessions {
        let path = s["path"].as_str().unwrap();
        let listed = s["messages"].as_u64().unwrap();
        let out = env.ok(&["show", path]);
        let line = line_after(&out, "Messages: ");
        let (total, rest) = line.split_once(" (user ").unwrap_or_else(|| {
            panic!("{path}: `Messages:` does not break down into user and assistant: {line}")
        });
        let (user, rest) = rest.split_once(", assistant ").unwrap();
        let (assistant, others) = rest.split_once(')').unwrap();
        assert_eq!(count(total), listed, "{path}: {line}");
        assert_eq!(
            count(user) + count(assistant),
            count(total),
            "{path}: {line}"
        );
        if others.contains("tool call") {
            with_tools += 1;
            assert!(others.starts_with("; besides them "), "{path}: {line}");
        }
        let v = env.json(&["show", path, "--json"]);
        assert_eq!(v["messages"], listed, "{path}");
    }
    assert!(with_tools >= 5, "sessions with tool calls: {with_tools}");
}

/// The context check says in words what it compares; a record that did not grow is not
/// compared (a ratio of 0 said nothing), and every count is grouped by thousands.
#[test]
fn the_context_check_reads_as_a_sentence_with_its_figures() {
    let env = TestEnv::with_fixtures();
    let (mut compared, mut constant) = (0, 0);
    for s in listed(&env) {
        let path = s["path"].as_str().unwrap();
        let v = env.json(&["show", path, "--json"]);
        let Some(check) = v.get("context_check").filter(|c| !c.is_null()) else {
            continue;
        };
        let out = env.ok(&["show", path]);
        let line = line_after(&out, "Context: ");
        let figure = |n: &Value| grouped(n.as_u64().unwrap());
        assert!(
            line.starts_with(&format!(
                "{} tokens at the newest request",
                figure(&check["recorded_tokens"])
            )),
            "{path}: {line}"
        );
        assert!(!line.contains("x)"), "{path}: {line}");
        let growth = check["recorded_growth"].as_u64().unwrap();
        if check["ratio"].is_null() {
            continue;
        }
        let ours = figure(&check["estimated_growth"]);
        if growth == 0 {
            constant += 1;
            assert!(
                line.contains(&format!("recorded no growth, where we count {ours}")),
                "{path}: {line}"
            );
        } else {
            compared += 1;
            let ratio = check["ratio"].as_f64().unwrap();
            assert!(
                line.contains(&format!(
                    "grew by {} as recorded and by {ours} as we count it",
                    figure(&check["recorded_growth"])
                )) && line.ends_with(&format!("recorded / counted = {ratio:.2}")),
                "{path}: {line}"
            );
        }
    }
    assert!(compared >= 2 && constant >= 2, "{compared} {constant}");
}

/// The figures of a relay: what a dry run and the relay itself both report.
fn figures(r: &Value) -> Value {
    serde_json::json!({
        "fit": r["fit"],
        "shape": r["shape"],
        "budget_from": r["budget_from"],
        "messages": r["messages"],
        "bytes": r["bytes"],
        "redactions": r["redactions"],
        "cwd": r["cwd"],
    })
}

/// A dry run predicts the relay: every figure of its report (the fit, the shape, the size
/// written, the messages) is the relay's, on sources of every agent into every agent, and the
/// text writes the budget's figures the same way; so are `show --to`'s. The source's messages in the budget report
/// are the ones `list` and `show` count.
#[test]
fn a_dry_run_predicts_the_relay_figure_for_figure() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let sessions = listed(&env);
    let mut sources: Vec<(String, u64)> = Vec::new();
    for id in [
        "771ce1df", "b62416f1", "0ccf1a04", "01a22a5d", "609f289a", "7e1c0dd0",
    ] {
        let s = sessions
            .iter()
            .find(|s| s["id"].as_str().unwrap().starts_with(id))
            .unwrap_or_else(|| panic!("fixture {id}"));
        sources.push((
            s["path"].as_str().unwrap().to_string(),
            s["messages"].as_u64().unwrap(),
        ));
    }
    for (path, messages) in &sources {
        for to in ["codex", "claude", "gemini"] {
            let args = ["relay", path, "--to", to, "--cwd", &proj];
            let what = format!("{path} -> {to}");
            let dry_text = env.ok(&[&args[..], &["--dry-run"]].concat());
            let dry = env.json(&[&args[..], &["--dry-run", "--json"]].concat());
            let real = env.json(&[&args[..], &["--json"]].concat());
            assert_eq!(real["dry_run"], false, "{what}");
            assert_eq!(figures(&dry), figures(&real), "{what}");
            // `show --to` says how the relay would fit: the same figures.
            let preview = env.json(&["show", path, "--to", to, "--cwd", &proj, "--json"]);
            for key in ["fit", "shape", "budget_from"] {
                assert_eq!(preview[key], real[key], "{what}: show --to's {key}");
            }
            // So does `export --to`, which writes the session as the relay carries it.
            let file = env.work().join(format!("export-{to}.jsonl"));
            let _ = std::fs::remove_file(&file);
            let out = env
                .cmd()
                .args(["export", path, "--to", to, "--cwd", &proj, "-o"])
                .arg(&file)
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stderr);
            let fit = &real["fit"];
            assert!(
                said.contains(&format!(
                    ": {} of {} tokens",
                    grouped(fit["total_tokens"].as_u64().unwrap()),
                    grouped(fit["budget"].as_u64().unwrap())
                )),
                "{what}: export --to says\n{said}\nthe relay {fit}"
            );
            assert_eq!(
                dry["fit"]["source"]["messages"], *messages,
                "{what}: the source's messages, as the listing counts them"
            );
            // The relay's text says its budget as the dry run's table does.
            let fit = &real["fit"];
            let total = grouped(fit["total_tokens"].as_u64().unwrap());
            let budget = grouped(fit["budget"].as_u64().unwrap());
            assert!(
                line_after(&dry_text, "total written")
                    .trim_start()
                    .starts_with(&format!("{total} of {budget} ")),
                "{what}:\n{dry_text}"
            );
            let again = env.ok(&[&args[..], &["--force"]].concat());
            assert!(
                line_after(&again, "budget ")
                    .trim_start()
                    .starts_with(&format!("{total} of {budget} tokens")),
                "{what}:\n{again}"
            );
            let wrote = line_after(&again, "wrote ");
            assert!(
                wrote.contains(&format!(
                    "({} messages, ",
                    grouped(real["messages"].as_u64().unwrap())
                )),
                "{what}: {wrote}"
            );
        }
    }
}

/// `updated` means one thing in every store: the session's last activity. A relay carries its
/// source's messages and times, so until someone continues it, its last activity is its
/// source's, whichever agent it was written for (not when it was written).
#[test]
fn a_relay_lists_with_its_sources_last_activity_in_every_store() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let source = "771ce1df-ae7a-4516-8192-f08c38166af2";
    for to in ["codex", "claude", "gemini"] {
        env.ok(&["relay", source, "--to", to, "--cwd", &proj]);
    }
    let time = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v["utc"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{v}: {e}"))
    };
    let sessions = listed(&env);
    let last = time(
        &sessions
            .iter()
            .find(|s| s["id"] == source)
            .expect("the source")["updated"],
    );
    let status = env.json(&["status", "--all", "--json"]);
    let mut seen = Vec::new();
    for s in sessions.iter().filter(|s| s["relay_of"]["id"] == source) {
        let agent = s["agent"].as_str().unwrap();
        let relayed =
            chrono::DateTime::parse_from_rfc3339(s["relay_of"]["relayed_at"].as_str().unwrap())
                .unwrap();
        let updated = time(&s["updated"]);
        assert!(
            (updated - last).num_seconds().abs() <= 60,
            "{agent}: a relay written at {relayed} lists as updated {updated}, its source {last}"
        );
        assert!(
            (relayed - updated).num_hours() >= 1,
            "the fixture is older than the relay"
        );
        let live = status["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["id"] == s["id"])
            .unwrap_or_else(|| panic!("{agent}: the relay in status"));
        assert_eq!(live["updated"], s["updated"], "{agent}: status");
        let shown = env.json(&["show", s["path"].as_str().unwrap(), "--json"]);
        assert_eq!(shown["session"]["updated"], s["updated"], "{agent}: show");
        seen.push(agent.to_string());
    }
    seen.sort();
    assert_eq!(seen, ["claude", "codex", "gemini"]);
}

/// A relay into a home that does not exist fails before anything is written, and its dry run
/// fails the same way (same message, same exit code) instead of promising a file.
#[test]
fn a_dry_run_into_a_missing_home_fails_as_the_relay_does() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let missing = env.dir.path().join("no-such-home");
    for to in ["codex", "claude", "gemini"] {
        let home = format!("{to}={}", missing.display());
        // A source in another agent's store, which the missing home does not hide.
        let source = if to == "codex" {
            "771ce1df"
        } else {
            "01a22a5d"
        };
        let args = ["--home", &home, "relay", source, "--to", to, "--cwd", &proj];
        let (code, err) = env.fails(&args);
        let (dry_code, dry_err) = env.fails(&[&args[..], &["--dry-run"]].concat());
        assert_eq!(code, 4, "{to}: {err}");
        assert_eq!((dry_code, &dry_err), (code, &err), "{to}");
        assert!(err.contains(&missing.display().to_string()), "{err}");
        assert!(!missing.exists());
    }
}

/// A home that was given (with --home, its environment variable, or the config file) and does
/// not exist is a warning in `list` and `status`, on standard error and in `--json`; a default
/// home that does not exist is an agent that is not installed, and says nothing.
#[test]
fn a_home_given_that_does_not_exist_is_warned_about() {
    let env = TestEnv::with_fixtures();
    let missing = env.dir.path().join("nope");
    let shown = missing.display().to_string();
    let flag = format!("claude={shown}");
    let config = env.dir.path().join("config/homes.yaml");
    std::fs::write(
        &config,
        format!("agents:\n  claude:\n    session_root: {shown}\n"),
    )
    .unwrap();
    let config = config.display().to_string();
    let cases: [(&str, Vec<&str>, Option<&str>); 3] = [
        ("--home claude=", vec!["--home", &flag], None),
        ("CLAUDE_CONFIG_DIR=", vec![], Some(shown.as_str())),
        (config.as_str(), vec!["--config", &config], Some("")),
    ];
    for (named, global, env_value) in &cases {
        for command in ["list", "status"] {
            let run = |json: bool| {
                let mut c = env.cmd();
                match env_value {
                    Some("") => c.env_remove("CLAUDE_CONFIG_DIR"),
                    Some(v) => c.env("CLAUDE_CONFIG_DIR", v),
                    None => &mut c,
                };
                c.args(global).args([command, "--all"]);
                if json {
                    c.arg("--json");
                }
                let out = c.output().unwrap();
                assert!(out.status.success(), "{command} {named}: {out:?}");
                out
            };
            let text = run(false);
            let stderr = String::from_utf8_lossy(&text.stderr);
            let warning = stderr
                .lines()
                .find(|l| l.starts_with("warning: Claude Code home"))
                .unwrap_or_else(|| panic!("{command} {named}: no warning in {stderr:?}"));
            assert!(
                warning.contains(&shown) && warning.contains(named),
                "{command}: {warning}"
            );
            assert!(
                String::from_utf8_lossy(&text.stdout).contains("codex"),
                "the other stores are still listed"
            );
            let v: Value = serde_json::from_slice(&run(true).stdout).unwrap();
            assert!(
                v["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|w| w.as_str().unwrap() == &warning["warning: ".len()..]),
                "{command} {named} --json: {}",
                v["warnings"]
            );
        }
    }
    // The default home (under HOME, where Claude Code never ran): nothing to say.
    assert!(!env.dir.path().join(".claude").exists());
    let out = env
        .cmd()
        .env_remove("CLAUDE_CONFIG_DIR")
        .args(["list", "--all", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["warnings"], serde_json::json!([]));
}

/// A config file named with --config or SESSION_RELAY_CONFIG that does not exist: the error
/// names the file and who named it, and says what to do.
#[test]
fn a_missing_config_file_is_named_with_what_to_do() {
    let env = TestEnv::with_fixtures();
    let missing = env.dir.path().join("config/missing.yaml");
    let shown = missing.display().to_string();
    let (code, err) = env.fails(&["--config", &shown, "list", "--all"]);
    assert_eq!(code, 1);
    for words in [
        &shown,
        "(named by --config) does not exist",
        "Create it",
        "leave out --config",
    ] {
        assert!(err.contains(words), "{words:?} in {err}");
    }
    let out = env
        .cmd()
        .env("SESSION_RELAY_CONFIG", &missing)
        .args(["list", "--all"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    for words in [
        &shown,
        "(named by SESSION_RELAY_CONFIG) does not exist",
        "unset SESSION_RELAY_CONFIG",
    ] {
        assert!(err.contains(words), "{words:?} in {err}");
    }
}

/// The listing cache names files by absolute path, however the home was given: a relative
/// `--home` names the same files from any directory.
#[test]
fn the_listing_cache_is_keyed_by_absolute_paths() {
    let env = TestEnv::with_fixtures();
    let out = env
        .cmd()
        .current_dir(env.dir.path())
        .args(["--home", "gemini=gemini", "--home", "claude=./claude"])
        .args(["list", "--all", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cache = env.dir.path().join("state/session-relay/list-cache.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
    let keys: Vec<&String> = v["entries"].as_object().unwrap().keys().collect();
    assert!(keys.len() >= 10, "{keys:?}");
    for k in keys {
        let p = Path::new(k);
        assert!(p.is_absolute(), "{k}");
        // A file, or a session in a database (a path under the database file).
        assert!(p.is_file() || p.parent().is_some_and(Path::is_file), "{k}");
        assert_eq!(v["entries"][k]["summary"]["path"], k.as_str());
    }
    // The listing itself names them so too.
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    for s in listed["sessions"].as_array().unwrap() {
        assert!(Path::new(s["path"].as_str().unwrap()).is_absolute(), "{s}");
    }
}

/// A relay made with a relative home is recorded by absolute paths: listed from another
/// directory, the relay is still the one the ledger knows.
#[test]
fn a_relay_through_a_relative_home_is_known_from_any_directory() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let out = env
        .cmd()
        .current_dir(env.dir.path())
        .args(["--home", "codex=codex", "--home", "claude=claude"])
        .args([
            "relay", "771ce1df", "--to", "codex", "--cwd", &proj, "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    for side in ["source", "target"] {
        assert!(
            Path::new(r[side]["path"].as_str().unwrap()).is_absolute(),
            "{side}: {}",
            r[side]
        );
    }
    let relays: Vec<Value> = listed(&env)
        .into_iter()
        .filter(|s| s["id"] == r["target"]["id"])
        .collect();
    assert_eq!(relays.len(), 1);
    assert_eq!(relays[0]["relay"]["in_ledger"], true, "{}", relays[0]);
}

/// The commands the README gives to try the tool on the fixtures leave the user's home as it
/// was: run as written (from the checkout, the state folder left to its default under a
/// private HOME), they write nothing there.
#[test]
fn the_readme_try_it_commands_leave_the_home_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let block = readme
        .split("Try it on the bundled fixtures")
        .nth(1)
        .and_then(|rest| rest.split("```sh\n").nth(1))
        .and_then(|b| b.split("```").next())
        .expect("the README's try-it block");
    let commands: Vec<&str> = block
        .lines()
        .filter(|l| l.contains("cargo run -- "))
        .collect();
    assert!(commands.len() >= 2, "{block}");
    let bin = assert_cmd::cargo::cargo_bin("session-relay");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    for line in commands {
        let line = line.replace("cargo run -- ", &format!("'{}' ", bin.display()));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("NO_COLOR", "1")
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let written: Vec<PathBuf> = walkdir::WalkDir::new(&home)
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| !e.file_type().is_dir())
            .map(|e| e.into_path())
            .collect();
        assert!(written.is_empty(), "{line} wrote {written:?}");
    }
}

/// A store folder that is a file fails the relay, and its dry run the same way: the dry run
/// does not promise a session it could not write.
#[test]
fn a_dry_run_fails_where_a_store_folder_is_a_file() {
    let mut env = TestEnv::with_fixtures();
    env.removing_stores();
    let proj = env.project();
    let sessions = env.codex_home().join("sessions");
    std::fs::remove_dir_all(&sessions).unwrap();
    std::fs::write(&sessions, "not a folder").unwrap();
    let args = ["relay", "771ce1df", "--to", "codex", "--cwd", &proj];
    let (dry_code, dry) = env.fails(&[&args[..], &["--dry-run"]].concat());
    let (code, real) = env.fails(&args);
    assert_eq!(dry_code, code, "{dry}\n{real}");
    for err in [&dry, &real] {
        assert!(err.contains(sessions.to_str().unwrap()), "{err}");
    }
}
