//! The file-state snapshot every relay carries in its brief, and `show` prints: every file the
//! session changed, grouped by folder, with what it did, the turn of its last change and how
//! the file stands on disk now (unchanged since, changed since, gone), and the repository's
//! state. Generated sessions of each agent run against a temporary git repository; files are
//! changed and deleted after the session; the relay must tell which.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::common::{TestEnv, git};
use serde_json::{Value, json};

/// The session's clock: long before any test runs, so that a file changed by the test is
/// later than any change the session made.
const EPOCH: u64 = 1_578_218_400; // 2020-01-05T10:00:00Z

/// The session time `secs` after `EPOCH`, as the agents write it.
fn at(secs: u64) -> String {
    chrono::DateTime::<chrono::Utc>::from(
        SystemTime::UNIX_EPOCH + Duration::from_secs(EPOCH + secs),
    )
    .format("%Y-%m-%dT%H:%M:%S%.3fZ")
    .to_string()
}

/// Sets a file's modification time to the session time `secs`: as if the session wrote it then.
fn written_at(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(EPOCH + secs))
        .unwrap();
}

/// The handoff brief in a written session (of any agent): the string that starts with it.
fn brief_in(path: &str) -> String {
    fn find(v: &Value) -> Option<String> {
        match v {
            Value::String(s) if s.starts_with("# Handoff brief") => Some(s.clone()),
            Value::Array(a) => a.iter().find_map(find),
            Value::Object(o) => o.values().find_map(find),
            _ => None,
        }
    }
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| find(&v))
        .or_else(|| {
            serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| find(&v))
        })
        .unwrap_or_else(|| panic!("no brief in {path}"))
}

fn relay(env: &TestEnv, source: &str, to: &str, cwd: &str, budget: &str) -> (Value, String) {
    let r = env.json(&[
        "relay", source, "--to", to, "--cwd", cwd, "--budget", budget, "--json",
    ]);
    let brief = brief_in(r["target"]["path"].as_str().unwrap());
    (r, brief)
}

/// Writes Claude Code transcript lines, each chained to the one before.
struct ClaudeLines {
    out: Vec<String>,
    id: String,
    cwd: String,
    n: usize,
}

impl ClaudeLines {
    fn new(id: &str, cwd: &str) -> ClaudeLines {
        ClaudeLines {
            out: Vec::new(),
            id: id.into(),
            cwd: cwd.into(),
            n: 0,
        }
    }

    fn line(&mut self, kind: &str, message: Value, secs: u64) {
        let parent = (self.n > 0).then(|| format!("u{}", self.n - 1));
        self.out.push(
            json!({"parentUuid": parent, "isSidechain": false, "type": kind, "message": message,
                "uuid": format!("u{}", self.n), "timestamp": at(secs), "userType": "external",
                "cwd": self.cwd, "sessionId": self.id, "version": "2.1.332"})
            .to_string(),
        );
        self.n += 1;
    }

    fn user(&mut self, text: &str, secs: u64) {
        self.line("user", json!({"role": "user", "content": text}), secs);
    }

    /// A tool call and its result, `secs` and a second later.
    fn call(&mut self, name: &str, input: Value, result: &str, secs: u64) {
        let id = format!("toolu_{}", self.n);
        self.line(
            "assistant",
            json!({"id": format!("m{}", self.n), "role": "assistant", "model": "claude-opus-4-6",
                "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
            secs,
        );
        self.line(
            "user",
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                "content": result, "is_error": false}]}),
            secs + 1,
        );
    }

    fn answer(&mut self, text: &str, secs: u64) {
        self.line(
            "assistant",
            json!({"id": format!("m{}", self.n), "role": "assistant", "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": text}]}),
            secs,
        );
    }

    /// Writes the transcript into `env`'s Claude Code home; returns its path.
    fn write(self, env: &TestEnv) -> PathBuf {
        let dir = env
            .claude_home()
            .join(format!("projects/{}", self.cwd.replace(['/', '.'], "-")));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.jsonl", self.id));
        std::fs::write(&path, self.out.join("\n") + "\n").unwrap();
        path
    }
}

/// The planted file of the long session: the user's task was about it, and it was edited once,
/// in the second turn.
const PLANTED: &str = "src/billing/invoice_rounding.rs";

/// A Claude Code session of 240 turns, about 5 MB, that edits 133 files under `cwd`: the
/// planted one once in turn 2, each other one in one or two of the other turns (some created
/// with Write), every turn also running the tests with a long output. Creates the files in
/// `cwd` as the session left them. Returns the transcript's path and the files (relative).
fn long_session(env: &TestEnv, cwd: &str) -> (PathBuf, Vec<String>) {
    let mut w = ClaudeLines::new("5e55f11e-0000-4000-8000-000000000133", cwd);
    let others: Vec<String> = (0..132)
        .map(|i| {
            format!(
                "{}/file_{i:03}.rs",
                ["src", "src/api", "tests", "docs/guide"][i % 4]
            )
        })
        .collect();
    let mut last_change = std::collections::BTreeMap::new();
    for t in 1..=240u64 {
        let secs = t * 100;
        w.user(
            &format!("Turn {t}: go on with the refactoring, then run the tests"),
            secs,
        );
        let (file, created) = if t == 2 {
            (PLANTED.to_string(), false)
        } else {
            let i = (t as usize * 7) % 132;
            (
                others[i].clone(),
                t < 40 && !last_change.contains_key(&others[i]),
            )
        };
        let abs = format!("{cwd}/{file}");
        if created {
            w.call(
                "Write",
                json!({"file_path": abs, "content": "pub fn f() {}\n"}),
                &format!("File created successfully at: {abs}"),
                secs + 10,
            );
        } else {
            w.call(
                "Edit",
                json!({"file_path": abs, "old_string": "a", "new_string": "b"}),
                &format!("The file {abs} has been updated."),
                secs + 10,
            );
        }
        last_change.insert(file, secs + 11);
        let output: String = (0..400)
            .map(|i| format!("test module_{t}::case_{i:04} ... ok (0.{i:03}s)\n"))
            .collect();
        w.call("Bash", json!({"command": "cargo test"}), &output, secs + 20);
        w.answer(&format!("Turn {t} done; the tests pass."), secs + 30);
    }
    let path = w.write(env);
    for (file, secs) in &last_change {
        let p = Path::new(cwd).join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "pub fn f() {}\n").unwrap();
        written_at(&p, *secs);
    }
    (path, last_change.into_keys().collect())
}

/// The lines of the brief's snapshot that name `file` (relative): its folder's header, then
/// `  name: ...`.
fn snapshot_line<'a>(brief: &'a str, file: &str) -> Option<&'a str> {
    let (folder, name) = match file.rfind('/') {
        Some(i) => (&file[..=i], &file[i + 1..]),
        None => ("./", file),
    };
    let start = brief.find(&format!("\n{folder}\n"))? + folder.len() + 2;
    brief[start..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .find(|l| l.starts_with(&format!("  {name}: ")))
}

/// A file edited once early in a long session is named in its relay at a 20,000-token budget,
/// and every file the session edited is listed with its state: read in full, and read in part
/// (older turns folded away as they are read), alike.
#[test]
fn every_file_of_a_long_session_is_in_the_relay_with_its_state() {
    let env = TestEnv::empty();
    let proj = env.project();
    let (path, files) = long_session(&env, &proj);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!((4 << 20..7 << 20).contains(&size), "about 5 MB: {size}");
    assert_eq!(files.len(), 133);
    let source = path.to_str().unwrap();
    let (r, brief) = relay(&env, source, "codex", &proj, "20000");
    assert!(r["fit"]["total_tokens"].as_u64().unwrap() <= 20_000, "{r}");
    assert!(
        brief.contains("Files the session changed: 133 (what it did"),
        "{brief}"
    );
    let planted = snapshot_line(&brief, PLANTED).unwrap_or_else(|| panic!("{brief}"));
    assert_eq!(
        planted,
        "  invoice_rounding.rs: edited once, turn 2, unchanged"
    );
    for f in &files {
        let line = snapshot_line(&brief, f).unwrap_or_else(|| panic!("{f} missing: {brief}"));
        assert!(line.ends_with(", unchanged"), "{line}");
    }
    // Grouped by folder, each folder named once.
    for folder in ["src/", "src/api/", "tests/", "docs/guide/", "src/billing/"] {
        assert_eq!(
            brief.matches(&format!("\n{folder}\n")).count(),
            1,
            "{folder}"
        );
    }
    // Read in part, the older turns folded as they are read (the planted file's among them):
    // the same brief.
    let export = |var: &str| {
        let out = env
            .cmd()
            .env(var, "1")
            // The turns' shortest forms fit in the budget: fold at a tenth of it.
            .env(session_relay::plan::fold::KEEP_ENV, "0.1")
            .args([
                "export", source, "--to", "codex", "--budget", "20000", "--cwd", &proj,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let first = String::from_utf8(out.stdout).unwrap();
        let brief = first.lines().nth(1).unwrap().to_string();
        (brief, stderr)
    };
    let (part, stderr) = export(session_relay::adapter::PART_READ_ENV);
    assert!(
        stderr.contains(session_relay::plan::fold::FOLD_NOTE),
        "folded: {stderr}"
    );
    let (full, _) = export(session_relay::commands::FULL_READ_ENV);
    assert_eq!(part, full);
    assert!(part.contains("invoice_rounding.rs: edited once, turn 2, unchanged"));
}

/// A session of `agent` (Claude Code, Codex or Gemini CLI) that, in the repository at `repo`,
/// creates `new.txt` (turn 1), edits `kept.txt`, `later.txt` and `lost.txt` (turns 2-4),
/// deletes `old.txt` with the shell (turn 5) and moves `a.rs` to `src/b.rs` (turn 6), and then
/// leaves the files as it did them. Returns the session's path.
fn session_in_repo(env: &TestEnv, agent: &str, repo: &str) -> PathBuf {
    let steps: [(&str, u64); 6] = [
        ("new.txt", 100),
        ("kept.txt", 200),
        ("later.txt", 300),
        ("lost.txt", 400),
        ("old.txt", 500),
        ("a.rs", 600),
    ];
    let path = match agent {
        "claude" => claude_in_repo(env, repo),
        "codex" => codex_in_repo(env, repo),
        _ => gemini_in_repo(env, repo),
    };
    // On disk as the session left it.
    std::fs::write(format!("{repo}/new.txt"), "new\n").unwrap();
    for f in ["kept.txt", "later.txt", "lost.txt"] {
        std::fs::write(format!("{repo}/{f}"), "changed by the session\n").unwrap();
    }
    std::fs::remove_file(format!("{repo}/old.txt")).unwrap();
    std::fs::create_dir_all(format!("{repo}/src")).unwrap();
    std::fs::rename(format!("{repo}/a.rs"), format!("{repo}/src/b.rs")).unwrap();
    for (f, secs) in steps {
        let f = if f == "a.rs" { "src/b.rs" } else { f };
        let p = Path::new(repo).join(f);
        if p.exists() {
            written_at(&p, secs + 11);
        }
    }
    path
}

fn claude_in_repo(env: &TestEnv, repo: &str) -> PathBuf {
    let mut w = ClaudeLines::new("5e55f11e-0000-4000-8000-0000000000c1", repo);
    let f = |name: &str| format!("{repo}/{name}");
    let edit = |name: &str| json!({"file_path": f(name), "old_string": "a", "new_string": "b"});
    w.user("Create new.txt", 100);
    w.call(
        "Write",
        json!({"file_path": f("new.txt"), "content": "new\n"}),
        &format!("File created successfully at: {}", f("new.txt")),
        110,
    );
    for (name, secs) in [("kept.txt", 200), ("later.txt", 300), ("lost.txt", 400)] {
        w.user(&format!("Edit {name}"), secs);
        w.call("Edit", edit(name), "The file has been updated.", secs + 10);
    }
    w.user("Remove old.txt", 500);
    w.call("Bash", json!({"command": "rm old.txt"}), "", 510);
    w.user("Move a.rs into src as b.rs", 600);
    w.call(
        "Bash",
        json!({"command": "mkdir -p src && git mv a.rs src/b.rs"}),
        "",
        610,
    );
    w.answer("Done.", 620);
    w.write(env)
}

fn codex_in_repo(env: &TestEnv, repo: &str) -> PathBuf {
    let id = "0199a000-0000-7000-8000-0000000000c2";
    let mut out = vec![json!({"timestamp": at(0), "type": "session_meta",
        "payload": {"id": id, "timestamp": at(0), "cwd": repo, "originator": "codex_cli_rs",
                    "cli_version": "0.171.0", "source": "cli"}})];
    let mut item = |secs: u64, payload: Value| {
        out.push(json!({"timestamp": at(secs), "type": "response_item", "payload": payload}));
    };
    let user = |text: &str| json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]});
    let patch = |n: usize, body: &str, secs: u64, item: &mut dyn FnMut(u64, Value)| {
        let call = format!("call_{n}");
        item(
            secs,
            json!({"type": "custom_tool_call", "name": "apply_patch", "call_id": call,
            "input": format!("*** Begin Patch\n{body}*** End Patch\n")}),
        );
        item(
            secs + 1,
            json!({"type": "custom_tool_call_output", "call_id": call,
            "output": "{\"output\":\"Success. Updated the following files.\\n\",\"metadata\":{\"exit_code\":0}}"}),
        );
    };
    item(100, user("Create new.txt"));
    patch(1, "*** Add File: new.txt\n+new\n", 110, &mut item);
    for (n, (name, secs)) in [("kept.txt", 200), ("later.txt", 300), ("lost.txt", 400)]
        .into_iter()
        .enumerate()
    {
        item(secs, user(&format!("Edit {name}")));
        let body = format!("*** Update File: {name}\n@@\n-a\n+changed by the session\n");
        patch(n + 2, &body, secs + 10, &mut item);
    }
    item(500, user("Remove old.txt"));
    item(
        510,
        json!({"type": "function_call", "name": "exec_command",
        "arguments": json!({"cmd": "rm old.txt"}).to_string(), "call_id": "call_5"}),
    );
    item(
        511,
        json!({"type": "function_call_output", "call_id": "call_5", "output": ""}),
    );
    item(600, user("Move a.rs into src as b.rs"));
    patch(
        6,
        "*** Update File: a.rs\n*** Move to: src/b.rs\n@@\n-a\n+b\n",
        610,
        &mut item,
    );
    let dir = env.codex_home().join("sessions/2020/01/05");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("rollout-2020-01-05T10-00-00-{id}.jsonl"));
    let text: Vec<String> = out.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

fn gemini_in_repo(env: &TestEnv, repo: &str) -> PathBuf {
    let id = "5e55f11e-0000-4000-8000-0000000000c3";
    let mut out = vec![
        json!({"sessionId": id, "projectHash": "x", "startTime": at(0),
        "lastUpdated": at(700), "kind": "main"}),
    ];
    let mut n = 0;
    let mut call = |name: &str, args: Value, result: &str, secs: u64, out: &mut Vec<Value>| {
        n += 1;
        let call = format!("{name}_{n}");
        out.push(
            json!({"id": format!("g{n}"), "timestamp": at(secs), "type": "gemini",
            "content": "", "thoughts": [], "model": "gemini-2.5-pro",
            "toolCalls": [{"id": call, "name": name, "args": args, "status": "success",
                "timestamp": at(secs + 1),
                "result": [{"functionResponse": {"id": call, "name": name,
                    "response": {"output": result}}}]}]}),
        );
    };
    let user = |text: &str, secs: u64| json!({"id": format!("u{secs}"), "timestamp": at(secs), "type": "user", "content": text});
    let f = |name: &str| format!("{repo}/{name}");
    out.push(user("Create new.txt", 100));
    call(
        "write_file",
        json!({"file_path": f("new.txt"), "content": "new\n"}),
        &format!(
            "Successfully created and wrote to new file: {}.",
            f("new.txt")
        ),
        110,
        &mut out,
    );
    for (name, secs) in [("kept.txt", 200), ("later.txt", 300), ("lost.txt", 400)] {
        out.push(user(&format!("Edit {name}"), secs));
        let args = json!({"file_path": f(name), "old_string": "a", "new_string": "b"});
        let result = format!("Successfully modified file: {} (1 replacements).", f(name));
        call("replace", args, &result, secs + 10, &mut out);
    }
    out.push(user("Remove old.txt", 500));
    call(
        "run_shell_command",
        json!({"command": "rm old.txt"}),
        "",
        510,
        &mut out,
    );
    out.push(user("Move a.rs into src as b.rs", 600));
    let mv = json!({"command": "mkdir -p src && mv a.rs src/b.rs"});
    call("run_shell_command", mv, "", 610, &mut out);
    let gemini = env.home("gemini").join(".gemini");
    let chats = gemini.join("tmp/repo/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(
        gemini.join("projects.json"),
        json!({"projects": {repo: "repo"}}).to_string(),
    )
    .unwrap();
    let path = chats.join("session-2020-01-05T10-00-5e55f11e.jsonl");
    let text: Vec<String> = out.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

/// A repository whose first commit holds the files the sessions change.
fn repo(env: &TestEnv, name: &str) -> String {
    let dir = env.work().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let dir = std::fs::canonicalize(dir).unwrap().display().to_string();
    git(&dir, &["init", "-q"]);
    for f in ["kept.txt", "later.txt", "lost.txt", "old.txt", "a.rs"] {
        std::fs::write(format!("{dir}/{f}"), "a\n").unwrap();
    }
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "Start the ledger"]);
    dir
}

/// After a session ran in a repository, one file it edited is changed again and another
/// deleted: the relay's snapshot says which files are as the session left them, which changed
/// since and which are gone, in every direction (Claude Code -> Codex, Codex -> Claude Code,
/// Gemini CLI -> Codex), with the repository's branch, HEAD and uncommitted files.
#[test]
fn the_snapshot_tells_what_changed_on_disk_since_the_session() {
    let env = TestEnv::empty();
    for (agent, to) in [
        ("claude", "codex"),
        ("codex", "claude"),
        ("gemini", "codex"),
    ] {
        let repo = repo(&env, &format!("repo-{agent}"));
        let source = session_in_repo(&env, agent, &repo);
        // After the session: one file changed again, one deleted.
        std::fs::write(format!("{repo}/later.txt"), "changed after the session\n").unwrap();
        std::fs::remove_file(format!("{repo}/lost.txt")).unwrap();
        let head = git(&repo, &["rev-parse", "--short", "HEAD"]);
        let (_, brief) = relay(&env, source.to_str().unwrap(), to, &repo, "20000");
        let what = format!("{agent} -> {to}");
        assert!(
            brief.contains(&format!(
                "Working directory: {repo}; git: branch main, commit {}, \"Start the ledger\", uncommitted changes in ",
                head.trim()
            )),
            "{what}: {brief}"
        );
        for dirty in ["D lost.txt", "M later.txt", "?? new.txt", "?? src/"] {
            assert!(brief.contains(dirty), "{what}: {dirty} in {brief}");
        }
        let moved = if agent == "codex" {
            "  b.rs: moved from a.rs, then edited once, turn 6, unchanged"
        } else {
            "  b.rs: moved from a.rs, turn 6, unchanged"
        };
        let want = [
            ("new.txt", "  new.txt: created, turn 1, unchanged"),
            ("kept.txt", "  kept.txt: edited once, turn 2, unchanged"),
            (
                "later.txt",
                "  later.txt: edited once, turn 3, changed since",
            ),
            ("lost.txt", "  lost.txt: edited once, turn 4, gone"),
            ("old.txt", "  old.txt: deleted, turn 5, unchanged"),
            ("a.rs", "  a.rs: moved to src/b.rs, turn 6, unchanged"),
            ("src/b.rs", moved),
        ];
        for (file, line) in want {
            assert_eq!(snapshot_line(&brief, file), Some(line), "{what}: {brief}");
        }
        assert!(
            brief.contains("Files the session changed: 7 (what it did"),
            "{what}"
        );

        // `show` prints the same snapshot, and `show --json` carries it as data.
        let shown = env.ok(&["show", source.to_str().unwrap()]);
        for (_, line) in want {
            assert!(shown.contains(&format!("  {line}\n")), "{what}: {shown}");
        }
        let v = env.json(&["show", source.to_str().unwrap(), "--json"]);
        let snap = &v["file_snapshot"];
        assert_eq!(snap["working_directory"], repo.as_str());
        assert_eq!(snap["checked"], true);
        assert_eq!(snap["repository"]["subject"], "Start the ledger");
        assert_eq!(snap["repository"]["short"], head.trim());
        let states: Vec<(&str, &str)> = snap["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["path"].as_str().unwrap(), f["state"].as_str().unwrap()))
            .collect();
        assert_eq!(
            states,
            [
                ("a.rs", "unchanged"),
                ("kept.txt", "unchanged"),
                ("later.txt", "changed_since"),
                ("lost.txt", "gone"),
                ("new.txt", "unchanged"),
                ("old.txt", "unchanged"),
                ("src/b.rs", "unchanged"),
            ],
            "{what}"
        );
    }
}
