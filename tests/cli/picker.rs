//! The session picker, driven as a person would: in a terminal (a private tmux server), typing
//! part of a title and pressing Enter. Without a terminal the default stays `latest`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::TestEnv;

/// A tmux server of the test's own (its socket in the test's folder), ended when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    /// Starts `command` in a 150x45 terminal.
    fn start(env: &TestEnv, command: &str) -> Tmux {
        // A socket of its own for each server: the one before may still be shutting down.
        static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = env.dir.path().join(format!("tmux-{n}.sock"));
        let ok = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "150",
                "-y",
                "45",
            ])
            .arg(command)
            .output()
            .expect("tmux is needed for the picker tests (apt-get install tmux)");
        assert!(
            ok.status.success(),
            "tmux did not start: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
        Tmux { socket }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J"])
    }

    /// Waits until the screen shows `text`; panics with the screen after 30 s.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the screen never showed {text:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// A shell command line that runs the binary as `env.cmd()` would, then says its exit code
/// and waits (so that the screen can be read).
fn shell_line(env: &TestEnv, args: &[&str]) -> String {
    let q = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let cmd = env.std_cmd(assert_cmd::cargo::cargo_bin("session-relay"));
    let mut line = String::from("cd ");
    line.push_str(&q(&env.work().display().to_string()));
    line.push_str(" && env -i TERM=screen-256color");
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            line.push_str(&format!(
                " {}={}",
                k.to_string_lossy(),
                q(&v.to_string_lossy())
            ));
        }
    }
    line.push(' ');
    line.push_str(&q(&cmd.get_program().to_string_lossy()));
    for a in args {
        line.push(' ');
        line.push_str(&q(a));
    }
    line.push_str("; echo \"EXIT=$?\"; sleep 600");
    line
}

/// The picker's count line once every session is in: `N/N`.
fn all_in(env: &TestEnv, args: &[&str]) -> String {
    let mut list = vec!["list", "--json"];
    list.extend_from_slice(args);
    let n = env.list_json(&list).as_array().unwrap().len();
    format!(" {n}/{n} ")
}

/// The lines of the highlighted entry.
fn selected(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| l.starts_with('▌'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Waits until the highlighted entry shows `text`.
fn wait_selected(tmux: &Tmux, text: &str) -> String {
    let start = Instant::now();
    loop {
        let s = tmux.screen();
        if selected(&s).contains(text) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the highlighted entry never showed {text:?}:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ledger's relay entries (a store relay's is followed by the entry of its registration).
fn ledger(env: &TestEnv) -> Vec<Value> {
    let path = env.dir.path().join("state/session-relay/ledger.jsonl");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] == "relay")
        .collect()
}

#[test]
fn typing_part_of_a_title_and_enter_relays_that_session() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    let tmux = Tmux::start(
        &env,
        &shell_line(&env, &["relay", "--to", "codex", "--cwd", &proj, "--all"]),
    );
    // Every session of every directory, with its facts and preview.
    let screen = tmux.wait_for(&all_in(&env, &["--all"]));
    // The newest first: which agent's sessions fill the first screen depends on the fixtures.
    let facts = session_relay::adapters::registry()
        .iter()
        .any(|a| screen.contains(&format!("{} · /home/dev/", a.display_name())));
    assert!(facts, "{screen}");
    assert!(screen.contains("messages"), "{screen}");
    assert!(screen.contains("last:"), "{screen}");
    tmux.keys(&["-l", "have a subagent inspect"]);
    let screen = wait_selected(&tmux, "Please DO_AGENT: have a subagent inspect");
    assert!(selected(&screen).contains("4603a70c"), "{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        screen.contains("Relayed Claude Code session 4603a70c"),
        "{screen}"
    );
    let relays = ledger(&env);
    assert_eq!(relays.len(), 1);
    assert_eq!(
        relays[0]["source"]["id"],
        "4603a70c-807c-4d39-b768-221cd1b09dfd"
    );
    assert_eq!(relays[0]["target"]["agent"], "codex");
    assert!(Path::new(relays[0]["target"]["path"].as_str().unwrap()).is_file());
}

#[test]
fn relayed_sessions_are_marked_and_esc_picks_nothing() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    env.ok(&["relay", "771ce1df", "--to", "codex", "--cwd", &proj]);
    let before = env.snapshot_stores();
    // Scoped like `list`: the project's sessions only (the relayed one).
    let tmux = Tmux::start(&env, &shell_line(&env, &["show", "--cwd", &proj]));
    let screen = tmux.wait_for(" 1/1 ");
    assert!(
        screen.contains("[relayed from Claude Code 771ce1df]"),
        "{screen}"
    );
    assert!(screen.contains("Codex CLI · "), "{screen}");
    tmux.keys(&["Escape"]);
    let screen = tmux.wait_for("EXIT=");
    assert!(screen.contains("EXIT=130"), "{screen}");
    assert!(!screen.contains("error:"), "{screen}");
    assert_eq!(before, env.snapshot_stores());
    // The source is marked too, in the wider list.
    drop(tmux);
    let tmux = Tmux::start(&env, &shell_line(&env, &["export", "--all"]));
    tmux.wait_for(&all_in(&env, &["--all"]));
    tmux.keys(&["-l", "Hello! Please DO_BASH"]);
    let screen = wait_selected(&tmux, "relayed to Codex CLI");
    assert!(selected(&screen).contains("771ce1df"), "{screen}");
    tmux.keys(&["C-c"]);
    let screen2 = tmux.wait_for("EXIT=");
    assert!(screen2.contains("EXIT=130"), "{screen}\n{screen2}");
}

#[test]
fn without_a_terminal_the_session_is_latest() {
    let env = TestEnv::with_fixtures();
    let shown = env.json(&["show", "--cwd", "/home/dev/projects/greeter", "--json"]);
    assert_eq!(
        shown["session"]["id"],
        "01a22a5e-1137-71a3-a6d7-914d1c237ed7"
    );
    // `--all` widens `latest` to every directory.
    let newest = env.list_json(&["list", "--all", "--limit", "1", "--json"]);
    let shown = env.json(&["show", "--all", "--json"]);
    assert_eq!(shown["session"]["id"], newest[0]["id"]);
    let (code, err) = env.fails(&["relay", "--to", "codex"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("--all"), "{err}");
}
