//! A temporary environment for driving the built binary: private agent homes, a private config
//! dir, and helpers to place fixtures into the stores.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tempfile::TempDir;

mod rng;
#[allow(unused_imports)]
pub use rng::Rng;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

pub struct TestEnv {
    pub dir: TempDir,
    /// Whether the fixture sessions were copied in: then every test checks, when its
    /// environment is dropped, that no command changed or deleted one of them.
    sources: bool,
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if !self.sources || std::thread::panicking() {
            return;
        }
        for (agent, path) in fixture_sessions() {
            let rel = path.strip_prefix(fixtures().join(agent)).unwrap();
            let copy = self.dir.path().join(agent).join(rel);
            let adapter = session_relay::adapters::by_name(agent).unwrap();
            // A session kept in a database (which relays write to) by its own rows.
            if let Some(original) = adapter.session_bytes(&path) {
                match adapter.session_bytes(&copy) {
                    Some(Ok(now)) => assert!(
                        now == original.unwrap(),
                        "source session {} was modified by a command",
                        copy.display()
                    ),
                    _ => panic!("source session {} is gone", copy.display()),
                }
                continue;
            }
            let original = std::fs::read(&path).unwrap();
            match std::fs::read(&copy) {
                Ok(now) => assert!(
                    now == original,
                    "source session {} was modified by a command",
                    copy.display()
                ),
                Err(e) => panic!("source session {} is gone: {e}", copy.display()),
            }
        }
    }
}

impl TestEnv {
    /// Empty homes for both agents.
    pub fn empty() -> TestEnv {
        let dir = tempfile::tempdir().unwrap();
        for d in session_relay::adapters::names()
            .into_iter()
            .chain(["config", "work"])
        {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        // OpenCode as its first start leaves it: a database with its schema and no session (a
        // relay into OpenCode needs one; it never creates OpenCode's schema itself).
        std::fs::copy(
            fixtures().join("opencode-new/opencode.db"),
            dir.path().join("opencode/opencode.db"),
        )
        .unwrap();
        TestEnv {
            dir,
            sources: false,
        }
    }

    /// Homes holding every fixture session (both agents).
    pub fn with_fixtures() -> TestEnv {
        let mut env = TestEnv::empty();
        for agent in session_relay::adapters::names() {
            copy_tree(&fixtures().join(agent), &env.home(agent));
        }
        env.sources = true;
        env
    }

    /// For a test that removes or edits stores on purpose: stop checking the sources at the end.
    pub fn removing_stores(&mut self) {
        self.sources = false;
    }

    /// An agent's home in this environment.
    pub fn home(&self, agent: &str) -> PathBuf {
        self.dir.path().join(agent)
    }

    pub fn claude_home(&self) -> PathBuf {
        self.dir.path().join("claude")
    }

    pub fn codex_home(&self) -> PathBuf {
        self.dir.path().join("codex")
    }

    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// A project folder to resume relayed sessions in, as its real path.
    pub fn project(&self) -> String {
        let p = self.work().join("proj");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::canonicalize(p).unwrap().display().to_string()
    }

    /// The binary with this environment's homes and nothing of the developer's.
    pub fn cmd(&self) -> Command {
        Command::from_std(self.std_cmd(assert_cmd::cargo::cargo_bin("session-relay")))
    }

    /// Another program (a shell that sets limits, then runs the binary) in this environment.
    pub fn cmd_of(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        Command::from_std(self.std_cmd(program))
    }

    /// A plain `std::process::Command` in this environment (to spawn several at once).
    pub fn std_cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
        let mut c = std::process::Command::new(program);
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("NO_COLOR", "1")
            .current_dir(self.work());
        for a in session_relay::adapters::registry() {
            c.env(a.home_env(), self.home(a.name()));
        }
        c
    }

    /// The library's config for this environment: its homes and an empty config file, so that
    /// nothing of the developer's own config or environment is read.
    pub fn config(&self) -> session_relay::config::Config {
        let file = self.dir.path().join("config/empty.yaml");
        std::fs::write(&file, "").unwrap();
        session_relay::config::Config::load(&session_relay::config::Overrides {
            config_file: Some(file),
            homes: session_relay::adapters::names()
                .into_iter()
                .map(|a| (a.to_string(), self.dir.path().join(a)))
                .collect(),
        })
        .unwrap()
    }

    /// Runs the binary and returns stdout; panics with stderr on failure.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "session-relay {args:?} failed ({:?}):\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// `list ... --json`: the sessions, after checking the output's schema version.
    pub fn list_json(&self, args: &[&str]) -> serde_json::Value {
        let v = self.json(args);
        assert_eq!(
            v["schema_version"], 1,
            "list --json carries its schema version"
        );
        v["sessions"].clone()
    }

    /// Runs the binary expecting failure; returns (exit code, stderr).
    pub fn fails(&self, args: &[&str]) -> (i32, String) {
        let out = self.cmd().args(args).output().unwrap();
        assert!(
            !out.status.success(),
            "session-relay {args:?} unexpectedly succeeded"
        );
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Hash of every file under the temp dir except the scratch `work` folder; a store's
    /// database (which a relay into it writes to) by each session it holds.
    pub fn snapshot_stores(&self) -> BTreeMap<PathBuf, u64> {
        let mut out = BTreeMap::new();
        let mut databases = std::collections::HashSet::new();
        for a in session_relay::adapters::registry() {
            let home = self.home(a.name());
            databases.extend(a.store_dirs(&home).into_iter().filter(|d| d.is_file()));
            for p in a.session_files(&home) {
                if let Some(Ok(rows)) = a.session_bytes(&p) {
                    out.insert(p, fnv(&rows));
                }
            }
        }
        for root in session_relay::adapters::names()
            .into_iter()
            .map(|a| self.home(a))
        {
            for e in walkdir::WalkDir::new(&root)
                .into_iter()
                .filter_map(|e| e.ok())
            {
                if e.file_type().is_file() && databases.contains(e.path()) {
                    continue;
                }
                if e.file_type().is_file() {
                    let bytes = std::fs::read(e.path()).unwrap();
                    out.insert(e.path().to_path_buf(), fnv(&bytes));
                } else if e.file_type().is_dir() {
                    out.insert(e.path().to_path_buf(), 0);
                }
            }
        }
        out
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        let rel = e.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// FNV-1a: enough to notice any change to a file in a test.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Every fixture session file of every registered agent: (agent, path). Each agent's
/// fixtures are a home laid out as the agent lays it out, in `fixtures/<agent>/`; its session
/// files are what the agent's own adapter finds there (not its indexes or registries).
pub fn fixture_sessions() -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    for adapter in session_relay::adapters::registry() {
        let agent = adapter.name();
        let root = fixtures().join(agent);
        assert!(
            root.is_dir(),
            "no fixtures for {agent} in {}",
            root.display()
        );
        let found = adapter.session_files(&root);
        assert!(!found.is_empty(), "no fixture sessions for {agent}");
        out.extend(found.into_iter().map(|p| (agent, p)));
    }
    out.sort();
    out
}

/// Whether a fixture session is a file of its own (not rows of a database, as OpenCode's):
/// the tests that rewrite, mutate or measure session files take those only.
pub fn is_file_session(path: &Path) -> bool {
    !path.parent().is_some_and(Path::is_file)
}

/// Whether this is the slow tier, `cargo test --locked --features slow-tests` (CI runs it):
/// generated tests then run every case (see `cases`), and the tests marked
/// `#[cfg_attr(not(feature = "slow-tests"), ignore = ...)]` run at all.
pub const SLOW_TIER: bool = cfg!(feature = "slow-tests");

/// The cases a generated test runs. All of `all` in the slow tier; in the default tier `n` of
/// them spread evenly from the first to the last, so that a contributor's `cargo test` meets
/// each kind of case (every agent, the smallest and the largest budget) in a few seconds.
pub fn cases<T>(all: impl IntoIterator<Item = T>, n: usize) -> Vec<T> {
    let all: Vec<T> = all.into_iter().collect();
    if SLOW_TIER || n >= all.len() {
        return all;
    }
    let picked: Vec<usize> = match n {
        0 => Vec::new(),
        1 => vec![0],
        _ => (0..n)
            .map(|i| (i * (all.len() - 1) + (n - 1) / 2) / (n - 1))
            .collect(),
    };
    all.into_iter()
        .enumerate()
        .filter_map(|(i, case)| picked.contains(&i).then_some(case))
        .collect()
}

/// `all` in the slow tier; `fast`, the few of them chosen for what they make happen, in the
/// default one.
pub fn chosen<T>(fast: impl IntoIterator<Item = T>, all: impl IntoIterator<Item = T>) -> Vec<T> {
    if SLOW_TIER {
        all.into_iter().collect()
    } else {
        fast.into_iter().collect()
    }
}

/// A count of generated cases: `all` in the slow tier, `fast` in the default one.
pub fn count(fast: usize, all: usize) -> usize {
    if SLOW_TIER { all } else { fast }
}

/// A source whose prompts are `prompts`, each answered: a Claude Code transcript or a Codex
/// rollout under `env`'s homes. Returns its id.
pub fn session_with_prompts(env: &TestEnv, agent: &str, prompts: &[&str]) -> String {
    let entries: Vec<Entry> = prompts
        .iter()
        .enumerate()
        .flat_map(|(n, p)| {
            [
                Entry::User(p.to_string()),
                Entry::Answer(format!("Answer {n}.")),
            ]
        })
        .collect();
    write_session(env, agent, &entries)
}

/// A source in which one shell command printed `output`, between two prompts.
pub fn session_with_output(env: &TestEnv, agent: &str, output: &str) -> String {
    let entries = [
        Entry::User("Print the numbers".into()),
        Entry::Command("seq 45000".into(), output.into()),
        Entry::Answer("Printed.".into()),
        Entry::User("Now sum them".into()),
        Entry::Answer("Done.".into()),
    ];
    write_session(env, agent, &entries)
}

/// What a generated source session holds, in order.
pub enum Entry {
    User(String),
    Answer(String),
    /// A shell command and its output.
    Command(String, String),
}

/// `entries` as a Claude Code transcript or a Codex rollout under `env`'s homes, in the shape
/// the real CLIs write. Returns its id.
pub fn write_session(env: &TestEnv, agent: &str, entries: &[Entry]) -> String {
    use serde_json::json;
    let mut out = Vec::new();
    let cwd = "/home/dev/projects/odd";
    let at = |n: usize| format!("2026-11-29T12:{:02}:{:02}.000Z", n / 60, n % 60);
    let (id, path) = match agent {
        "claude" => {
            let id = "5d0c3a1e-7b2f-4e8a-9c6d-0000000000bb";
            let mut parent = serde_json::Value::Null;
            for (n, entry) in entries.iter().enumerate() {
                let messages = match entry {
                    Entry::User(p) => vec![("user", json!({"role": "user", "content": p}))],
                    Entry::Answer(a) => vec![(
                        "assistant",
                        json!({"id": format!("m{n}"), "type": "message",
                        "role": "assistant", "model": "x",
                        "content": [{"type": "text", "text": a}]}),
                    )],
                    Entry::Command(command, output) => vec![
                        (
                            "assistant",
                            json!({"id": format!("m{n}"), "type": "message",
                            "role": "assistant", "model": "x",
                            "content": [{"type": "tool_use", "id": format!("toolu_{n}"),
                                         "name": "Bash", "input": {"command": command}}]}),
                        ),
                        (
                            "user",
                            json!({"role": "user", "content": [{"type": "tool_result",
                            "tool_use_id": format!("toolu_{n}"), "content": output,
                            "is_error": false}]}),
                        ),
                    ],
                };
                for (k, (kind, message)) in messages.into_iter().enumerate() {
                    let uuid = format!("u{n}-{k}");
                    out.push(json!({"parentUuid": parent, "isSidechain": false,
                        "type": kind, "message": message, "uuid": uuid, "timestamp": at(2 * n + k),
                        "userType": "external", "cwd": cwd, "sessionId": id,
                        "version": "2.1.332"}));
                    parent = json!(uuid);
                }
            }
            let dir = env.claude_home().join("projects/-home-dev-projects-odd");
            std::fs::create_dir_all(&dir).unwrap();
            (id, dir.join(format!("{id}.jsonl")))
        }
        _ => {
            let id = "0199a000-0000-7000-8000-0000000000bb";
            out.push(json!({"timestamp": at(0), "type": "session_meta",
                "payload": {"id": id, "timestamp": at(0), "cwd": cwd, "originator": "codex_cli_rs",
                            "cli_version": "0.171.0", "source": "cli"}}));
            for (n, entry) in entries.iter().enumerate() {
                let payloads = match entry {
                    Entry::User(p) => vec![json!({"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": p}]})],
                    Entry::Answer(a) => vec![json!({"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": a}]})],
                    Entry::Command(command, output) => vec![
                        json!({"type": "function_call", "name": "exec_command",
                               "arguments": json!({"cmd": command}).to_string(),
                               "call_id": format!("call_{n}")}),
                        json!({"type": "function_call_output", "call_id": format!("call_{n}"),
                               "output": output}),
                    ],
                };
                for payload in payloads {
                    out.push(json!({"timestamp": at(out.len()), "type": "response_item",
                        "payload": payload}));
                }
            }
            let dir = env.codex_home().join("sessions/2026/11/29");
            std::fs::create_dir_all(&dir).unwrap();
            (
                id,
                dir.join(format!("rollout-2026-11-29T12-00-00-{id}.jsonl")),
            )
        }
    };
    let text: Vec<String> = out.iter().map(serde_json::Value::to_string).collect();
    std::fs::write(path, text.join("\n") + "\n").unwrap();
    id.to_string()
}

/// Runs git in `dir` as a test user, asserting it succeeds; its standard output.
pub fn git(dir: impl AsRef<Path>, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
