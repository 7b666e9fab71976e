//! Hostile and broken input: each gives a clear message and no panic, with bounded memory.
//! (Memory and time are measured in the benchmark, not asserted here.)

use std::io::Write;

use crate::common::TestEnv;
use serde_json::{Value, json};

fn codex_file(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let dir = env.codex_home().join("sessions/2026/11/20");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn meta_line(id: &str) -> String {
    json!({"timestamp": "2026-11-20T10:00:00.000Z", "type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/tmp/hostile", "cli_version": "0.60.0", "source": "cli"}}).to_string()
}

fn user_line(text: &str) -> String {
    json!({"timestamp": "2026-11-20T10:00:01.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}).to_string()
}

#[test]
fn a_100_mb_single_line_is_salvaged_with_a_message() {
    let env = TestEnv::empty();
    let id = "0199aaaa-0000-7000-8000-000000000100";
    let path = codex_file(&env, &format!("rollout-2026-11-20T10-00-00-{id}.jsonl"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(f, "{}", meta_line(id)).unwrap();
    writeln!(f, "{}", user_line("before the huge line")).unwrap();
    write!(f, "{{\"timestamp\":\"2026-11-20T10:00:02.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"").unwrap();
    let chunk = "x".repeat(1 << 20);
    for _ in 0..100 {
        f.write_all(chunk.as_bytes()).unwrap();
    }
    writeln!(f, "\"}}}}").unwrap();
    writeln!(f, "{}", user_line("after the huge line")).unwrap();
    drop(f);
    assert!(std::fs::metadata(&path).unwrap().len() > 100 << 20);
    let v = env.json(&["show", id, "--json"]);
    let warnings = v["session"]["warnings"].to_string();
    assert!(
        warnings.contains("line of 100.0 MB is longer than the 32 MB limit for one line: read as its first 1 MB and last 64 KB"),
        "{warnings}"
    );
    assert_eq!(v["counts"]["user"], 2, "the lines around it are read");
    let export = env.ok(&["export", id, "--format", "jsonl", "--no-redact"]);
    let output = export
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["role"] == "tool_result")
        .expect("the huge tool output is read, shortened");
    let text = output["content"].as_str().unwrap();
    assert!(text.starts_with("xxxx"), "{}", &text[..80]);
    assert!(text.len() < 2 << 20, "{}", text.len());
    let rows = env.list_json(&["list", "--all", "--json"]);
    assert_eq!(rows[0]["messages"], 2);
    let out = env.ok(&["export", id]);
    assert!(out.contains("after the huge line"));
}

#[test]
fn deep_nesting_non_objects_and_cycles_are_reported_not_crashed_on() {
    let env = TestEnv::empty();
    let id = "0199aaaa-0000-7000-8000-000000000101";
    let path = codex_file(&env, &format!("rollout-2026-11-20T10-00-00-{id}.jsonl"));
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let lines = [
        meta_line(id),
        deep,
        "42".into(),
        "[1,2,3]".into(),
        "\"a string\"".into(),
        user_line("still here"),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let v = env.json(&["show", id, "--json"]);
    assert_eq!(v["session"]["stats"]["malformed_lines"], 1, "{v}");
    assert!(
        v["session"]["warnings"]
            .to_string()
            .contains("recursion limit"),
        "{v}"
    );
    assert_eq!(v["counts"]["user"], 1);

    // A parentUuid cycle in a Claude transcript ends the walk with a warning.
    let dir = env.claude_home().join("projects/-tmp-hostile");
    std::fs::create_dir_all(&dir).unwrap();
    let sid = "6e0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c6d";
    let line = |uuid: &str, parent: &str, ts: u32, text: &str| {
        json!({"parentUuid": parent, "isSidechain": false, "type": "user", "uuid": uuid, "sessionId": sid, "cwd": "/tmp/hostile",
               "timestamp": format!("2026-11-20T10:00:0{ts}.000Z"), "message": {"role": "user", "content": text}})
        .to_string()
    };
    std::fs::write(
        dir.join(format!("{sid}.jsonl")),
        [line("a", "b", 1, "one"), line("b", "a", 2, "two")].join("\n") + "\n",
    )
    .unwrap();
    let v = env.json(&["show", sid, "--json"]);
    assert!(
        v["session"]["warnings"].to_string().contains("cycle"),
        "{v}"
    );
    env.ok(&["list", "--all"]);
}

#[test]
fn paths_that_are_not_session_files_get_clear_errors() {
    let env = TestEnv::with_fixtures();
    // A directory, a FIFO, something outside any store, something missing.
    let (code, err) = env.fails(&["show", env.codex_home().join("sessions").to_str().unwrap()]);
    assert_eq!(code, 3);
    assert!(err.contains("is a directory"), "{err}");
    let fifo = env.codex_home().join("sessions/2026/11/30/rollout-2026-11-30T00-00-00-0199aaaa-0000-7000-8000-000000000102.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let (code, err) = env.fails(&["show", fifo.to_str().unwrap()]);
    assert_eq!(code, 3);
    assert!(err.contains("not a regular file"), "{err}");
    // The listing skips it instead of blocking on it.
    env.ok(&["list", "--all"]);
    let (code, err) = env.fails(&["show", "../../../../etc/passwd"]);
    assert_eq!(code, 3);
    assert!(
        err.contains("does not look like a session") || err.contains("cannot open"),
        "{err}"
    );
    let (code, err) = env.fails(&["show", "../no/such/file.jsonl"]);
    assert_eq!(code, 3);
    assert!(err.contains("cannot open session file"), "{err}");
    // An id-shaped selector never becomes a path into or out of a store.
    let (code, _) = env.fails(&["show", ".."]);
    assert_eq!(code, 3);
}

#[test]
fn invalid_utf8_and_binary_garbage_read_lossily() {
    let env = TestEnv::empty();
    let id = "0199aaaa-0000-7000-8000-000000000103";
    let path = codex_file(&env, &format!("rollout-2026-11-20T10-00-00-{id}.jsonl"));
    let mut bytes = (meta_line(id) + "\n").into_bytes();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x00, 0x01, b'\n']);
    bytes.extend_from_slice(user_line("ok \u{1F600}").as_bytes());
    bytes.push(b'\n');
    bytes.extend_from_slice(b"{\"timestamp\":\"2026-11-20T10:00:05.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"bad \xc3\x28 byte\"}]}}\n");
    std::fs::write(&path, bytes).unwrap();
    let v: Value = env.json(&["show", id, "--json"]);
    assert_eq!(v["counts"]["user"], 2);
    let w = v["session"]["warnings"].to_string();
    assert!(w.contains("invalid UTF-8"), "{w}");
    assert!(w.contains("malformed JSON line skipped"), "{w}");
}

/// Output bytes that a terminal would act on: ESC, other C0 controls but newline and tab, C1
/// controls and bidirectional overrides.
fn terminal_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

#[test]
fn escape_sequences_from_a_session_are_printed_escaped_and_json_stays_exact() {
    let env = TestEnv::empty();
    let id = "0199aaaa-0000-7000-8000-00000000e5c0";
    let evil_cwd = "/tmp/evil\u{1b}]0;owned\u{7}\ndir";
    let evil_prompt = "clear \u{1b}[2J\u{1b}[31mred\u{9b}1m\nsecond line \u{202e}desrever";
    let path = codex_file(&env, &format!("rollout-2026-11-20T10-00-00-{id}.jsonl"));
    let meta = json!({"timestamp": "2026-11-20T10:00:00.000Z", "type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": evil_cwd, "cli_version": "0.60.\u{1b}[1m0", "source": "cli"}});
    let answer = json!({"timestamp": "2026-11-20T10:00:02.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok \u{1b}[0m"}]}});
    std::fs::write(
        &path,
        format!(
            "{meta}\n{}\n{answer}\n{{\"bad\u{1b}[5m\n",
            user_line(evil_prompt)
        ),
    )
    .unwrap();
    let proj = env.project();
    let runs: Vec<Vec<&str>> = vec![
        vec!["list", "--all"],
        vec!["show", id],
        vec!["show", id, "--to", "claude"],
        vec!["relay", id, "--to", "claude", "--cwd", &proj, "--dry-run"],
        vec![
            "relay",
            id,
            "--to",
            "claude",
            "--cwd",
            &proj,
            "--title",
            "t\u{1b}[8m",
        ],
        vec!["export", id, "--format", "markdown", "-o", "out.md"],
        vec!["show", "no\u{1b}[31msuch"],
    ];
    for args in &runs {
        let out = env.cmd().args(args).output().unwrap();
        for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            let bad = terminal_controls(&text);
            assert!(bad.is_empty(), "{args:?} {name} prints {bad:?}:\n{text}");
        }
    }
    // Escaped where a person reads it, so that it is still visible.
    let shown = env.ok(&["show", id]);
    assert!(shown.contains("\\x1b]0;owned"), "{shown}");
    // JSON is exact.
    let v = env.json(&["show", id, "--json"]);
    assert_eq!(v["session"]["cwd"], evil_cwd);
    let rows = env.list_json(&["list", "--all", "--json"]);
    // (A title is the first prompt on one line: whitespace collapsed, nothing else changed.)
    // The source's row: the relay above wrote one with the same time, and ties go by id.
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap();
    assert_eq!(
        row["title"].as_str().unwrap(),
        evil_prompt.split_whitespace().collect::<Vec<_>>().join(" ")
    );
}

/// The Markdown handoff is read by people, in a terminal or a pager as often as in an editor: a
/// session's escape sequences are written escaped whether it goes to a pipe or a file.
#[test]
fn a_markdown_handoff_holds_no_terminal_control_on_stdout_or_in_a_file() {
    let env = TestEnv::empty();
    let id = "0199aaaa-0000-7000-8000-00000000e5c1";
    let path = codex_file(&env, &format!("rollout-2026-11-20T10-00-00-{id}.jsonl"));
    let meta = json!({"timestamp": "2026-11-20T10:00:00.000Z", "type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/tmp/w\u{1b}[8mhidden", "cli_version": "0.60.0", "source": "cli", "git": {"branch": "main\u{7}", "commit_hash": "abc\u{9b}2J"}}});
    let prompt = "see \u{1b}]8;;https://evil.example/\u{7}this link\u{1b}]8;;\u{7} and \u{1b}[2J\r\nnext line \u{202e}txt.exe";
    let answer = json!({"timestamp": "2026-11-20T10:00:02.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done \u{1b}[0m\u{7f}\u{0}"}]}});
    std::fs::write(&path, format!("{meta}\n{}\n{answer}\n", user_line(prompt))).unwrap();
    let out = env.work().join("handoff.md");
    let piped = env.ok(&["export", id, "--format", "markdown"]);
    env.ok(&[
        "export",
        id,
        "--format",
        "markdown",
        "-o",
        out.to_str().unwrap(),
    ]);
    let filed = std::fs::read_to_string(&out).unwrap();
    for (name, text) in [("stdout", &piped), ("file", &filed)] {
        let bad = terminal_controls(text);
        assert!(bad.is_empty(), "{name} holds {bad:?}:\n{text}");
        // Still there to be read, escaped.
        assert!(
            text.contains("\\x1b]8;;https://evil.example/\\x07this link"),
            "{name}:\n{text}"
        );
        assert!(text.contains("\\x1b[8mhidden"), "{name}:\n{text}");
        assert!(text.contains("\\u{202e}txt.exe"), "{name}:\n{text}");
    }
    assert_eq!(piped, filed);
}

/// A working directory recorded with terminal controls in it names no directory here, and the
/// agents never start in one: it is not filed into a store's project registry (Gemini CLI's
/// `projects.json` keys, its `.project_root` markers). A real directory with such a name is
/// what the agent itself would register, and is relayed as it is.
#[test]
fn a_recorded_working_directory_with_controls_is_refused_unless_it_exists() {
    let env = TestEnv::empty();
    let id = "0199aaaa-0000-7000-8000-00000000e5c2";
    let path = codex_file(&env, &format!("rollout-2026-11-20T10-00-00-{id}.jsonl"));
    let gemini = env.home("gemini").join(".gemini");
    // A newline and an escape sequence; a right-to-left override; a zero-width space.
    for evil in [
        "/tmp/no-such\n\u{1b}[31mproject",
        "/tmp/no-such-\u{202e}tcejorp",
        "/tmp/no-such-pro\u{200b}ject",
    ] {
        let meta = json!({"timestamp": "2026-11-20T10:00:00.000Z", "type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": evil, "cli_version": "0.60.0", "source": "cli"}});
        std::fs::write(&path, format!("{meta}\n{}\n", user_line("hello"))).unwrap();
        let before = env.snapshot_stores();
        for to in ["gemini", "claude", "codex", "pi"] {
            let (code, err) = env.fails(&["relay", id, "--to", to]);
            assert_eq!(code, 2, "{evil:?} --to {to}: {err}");
            assert!(err.contains("--cwd"), "--to {to}: {err}");
            assert!(
                !err.chars().any(|c| c == '\u{1b}' || c == '\u{202e}'),
                "--to {to}: {err}"
            );
        }
        assert_eq!(env.snapshot_stores(), before, "nothing written");
    }
    assert!(!gemini.join("projects.json").exists());

    let odd = env.work().join("odd\nname");
    std::fs::create_dir_all(&odd).unwrap();
    let v = env.json(&[
        "relay",
        id,
        "--to",
        "gemini",
        "--cwd",
        odd.to_str().unwrap(),
        "--json",
    ]);
    let registry: Value =
        serde_json::from_slice(&std::fs::read(gemini.join("projects.json")).unwrap()).unwrap();
    let real = std::fs::canonicalize(&odd).unwrap();
    assert!(
        registry["projects"].get(real.to_str().unwrap()).is_some(),
        "{registry} {v}"
    );
}

#[test]
fn a_codex_file_whose_name_and_session_meta_disagree_is_known_by_its_session_meta_id() {
    let env = TestEnv::empty();
    let named = "0199aaaa-0000-7000-8000-00000000aaaa";
    let meta = "0199aaaa-0000-7000-8000-00000000bbbb";
    let path = codex_file(&env, &format!("rollout-2026-11-20T10-00-00-{named}.jsonl"));
    std::fs::write(
        &path,
        format!("{}\n{}\n", meta_line(meta), user_line("which id am I")),
    )
    .unwrap();
    // Another session really named after the meta id: selecting must not reach it by mistake.
    let other = codex_file(&env, &format!("rollout-2026-11-20T11-00-00-{meta}.jsonl"));
    let third = "0199aaaa-0000-7000-8000-00000000cccc";
    std::fs::write(
        &other,
        format!("{}\n{}\n", meta_line(third), user_line("the other one")),
    )
    .unwrap();

    let rows = env.list_json(&["list", "--all", "--json"]);
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&meta) && ids.contains(&third) && !ids.contains(&named),
        "{ids:?}"
    );
    // show, by the id list gives, finds that file and says why its name differs.
    let v = env.json(&["show", meta, "--json"]);
    assert_eq!(v["session"]["id"], meta);
    assert_eq!(v["session"]["source_path"], path.display().to_string());
    assert!(
        v["session"]["warnings"]
            .to_string()
            .contains("Codex lists and resumes it as")
    );
    // The file name's id is not an id Codex knows the session by.
    let (code, _) = env.fails(&["show", named]);
    assert_eq!(code, 3);
    // The relay carries the session the id names, from the file the listing gave.
    let proj = env.project();
    let r = env.json(&[
        "relay",
        meta,
        "--to",
        "claude",
        "--cwd",
        &proj,
        "--dry-run",
        "--json",
    ]);
    assert_eq!(r["source"]["id"], meta);
    assert_eq!(r["source"]["path"], path.display().to_string());
    assert!(
        r["warnings"]
            .to_string()
            .contains("Codex lists and resumes it as")
    );
}

#[test]
fn a_byte_order_mark_is_ignored_with_a_warning_and_nothing_is_lost() {
    let env = TestEnv::with_fixtures();
    let proj = env.project();
    for (agent, id) in [
        ("codex", "0199b111-2222-7333-8444-555566667777"),
        ("claude", "5d0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c6d"),
        ("gemini", "7e1c0dd0-5a5a-4b4b-9c9c-0000000000dd"),
        ("pi", "0199a0dd-0000-7000-8000-00000000a0dd"),
        // Whole-document sessions: Codex's older `.json` and Gemini CLI's.
        ("codex", "0c5f1e7a-3d2b-4c1a-9e8f-7a6b5c4d3e2f"),
        ("gemini", "5a1e6c3d-2f4b-4e8a-9c1d-0e2f3a4b5c6d"),
    ] {
        let plain = env.json(&["show", id, "--json"]);
        let path = std::path::PathBuf::from(plain["session"]["source_path"].as_str().unwrap());
        // A copy with a BOM, outside the store: found by its content, read alike.
        let ext = path.extension().unwrap().to_str().unwrap();
        let copy = env.work().join(format!("bom-{agent}-{id}.{ext}"));
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend(std::fs::read(&path).unwrap());
        std::fs::write(&copy, bytes).unwrap();
        let bom = env.json(&["show", copy.to_str().unwrap(), "--json"]);
        // (Not the title: a file outside the store has no index to take one from.)
        for key in [
            "id",
            "cwd",
            "git",
            "created",
            "updated",
            "todos",
            "files_touched",
        ] {
            assert_eq!(bom["session"][key], plain["session"][key], "{agent}: {key}");
        }
        assert_eq!(bom["messages"], plain["messages"], "{agent}");
        assert!(
            bom["session"]["warnings"]
                .to_string()
                .contains("byte order mark"),
            "{agent}: {}",
            bom["session"]["warnings"]
        );
        // The warning reaches the relay's report too.
        let r = env.json(&[
            "relay",
            copy.to_str().unwrap(),
            "--to",
            "claude",
            "--cwd",
            &proj,
            "--dry-run",
            "--json",
        ]);
        assert!(
            r["warnings"].to_string().contains("byte order mark"),
            "{agent}"
        );
    }
}

/// A first request over the 32 MB line limit (a pasted log) is still the first request: the
/// relay's title and goal come from its start, and the reports say what was cut, with the line.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier: cargo test --features slow-tests"
)]
fn a_40_mb_first_request_stays_the_first_request() {
    let env = TestEnv::empty();
    let dir = env.claude_home().join("projects/-tmp-hostile");
    std::fs::create_dir_all(&dir).unwrap();
    let sid = "7e0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c6d";
    let line = |uuid: &str, parent: Option<&str>, ts: u32, role: &str, text: &str| {
        claude_line(sid, uuid, parent, ts, role, text)
    };
    // Escapes, quotes and multi-byte characters all along, so the cuts land among them.
    let unit = "Port the parser to streaming reads. \"quoted\" \\ path\\to — 日本語 é\n\t";
    let mut request = String::from("FIRST REQUEST: ");
    while request.len() < 40 << 20 {
        request.push_str(unit);
    }
    request.push_str(" END OF FIRST REQUEST");
    let lines = [
        line("u1", None, 1, "user", &request),
        line("a1", Some("u1"), 2, "assistant", "Reading it."),
        line("u2", Some("a1"), 3, "user", "second request"),
        line("a2", Some("u2"), 4, "assistant", "Done."),
    ];
    let path = dir.join(format!("{sid}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 40 << 20);

    let v = env.json(&["show", sid, "--json"]);
    let warning = v["session"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["line"] == 1)
        .unwrap_or_else(|| panic!("no warning for line 1: {v}"));
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("read as its first 1 MB and last 64 KB"),
        "{warning}"
    );
    assert_eq!(v["counts"]["user"], 2, "{v}");
    assert!(
        v["session"]["title"]
            .as_str()
            .unwrap()
            .starts_with("FIRST REQUEST: Port the parser"),
        "{}",
        v["session"]["title"]
    );

    // The listing agrees.
    let rows = env.list_json(&["list", "--all", "--json"]);
    assert_eq!(rows[0]["title"], v["session"]["title"]);
    assert_eq!(rows[0]["messages"], v["messages"]);

    let proj = env.project();
    let r = env.json(&["relay", sid, "--to", "codex", "--cwd", &proj, "--json"]);
    let warnings = r["warnings"].to_string();
    assert!(warnings.contains("read as its first 1 MB"), "{warnings}");
    let written = std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap();
    assert!(written.contains("FIRST REQUEST: Port the parser"));
    assert!(written.contains("second request"));
}

/// A Claude session whose first request is `first_line` (raw bytes, no newline), then three
/// ordinary lines. Returns the session id.
fn claude_with_raw_first_line(env: &TestEnv, make: impl Fn(&str) -> Vec<u8>) -> &'static str {
    let dir = env.claude_home().join("projects/-tmp-hostile");
    std::fs::create_dir_all(&dir).unwrap();
    let sid = "7e0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c6e";
    let line = |uuid: &str, parent: &str, ts: u32, role: &str, text: &str| {
        json!({"parentUuid": parent, "isSidechain": false, "type": role, "uuid": uuid,
            "sessionId": sid, "cwd": "/tmp/hostile", "version": "2.1.332",
            "timestamp": format!("2026-11-20T10:00:{ts:02}.000Z"),
            "message": {"role": role, "content": [{"type": "text", "text": text}]}})
        .to_string()
    };
    let mut file = make(sid);
    file.push(b'\n');
    for l in [
        line("a1", "u1", 2, "assistant", "Reading it."),
        line("u2", "a1", 3, "user", "second request"),
        line("a2", "u2", 4, "assistant", "Done."),
    ] {
        file.extend_from_slice(l.as_bytes());
        file.push(b'\n');
    }
    std::fs::write(dir.join(format!("{sid}.jsonl")), file).unwrap();
    sid
}

/// The first line of such a session: a request of `text`.
fn first_request(sid: &str, text: &str) -> Vec<u8> {
    json!({"parentUuid": null, "isSidechain": false, "type": "user", "uuid": "u1",
        "sessionId": sid, "cwd": "/tmp/hostile", "version": "2.1.332",
        "timestamp": "2026-11-20T10:00:01.000Z",
        "message": {"role": "user", "content": text}})
    .to_string()
    .into_bytes()
}

/// `show` and `list` both read the first request of a salvaged first line.
fn assert_first_request_read(env: &TestEnv, sid: &str) {
    let v = env.json(&["show", sid, "--json"]);
    assert_eq!(v["counts"]["user"], 2, "{}", v["session"]["warnings"]);
    let title = v["session"]["title"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(title.starts_with("FIRST REQUEST"), "{title}");
    let rows = env.list_json(&["list", "--all", "--json"]);
    assert_eq!(rows[0]["title"], v["session"]["title"]);
    assert_eq!(rows[0]["messages"], v["messages"]);
}

/// A byte order mark before a huge first line: the listing salvaged the line (it strips the
/// mark first) while the reader tried to salvage it with the mark and skipped it, so `show`
/// titled the session after the second request.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier: cargo test --features slow-tests"
)]
fn a_byte_order_mark_before_a_huge_first_line_does_not_lose_it() {
    let env = TestEnv::empty();
    let sid = claude_with_raw_first_line(&env, |sid| {
        let mut text = String::from("FIRST REQUEST: ");
        text.push_str(&"x".repeat(34 << 20));
        let mut line = jsonl_bom();
        line.extend(first_request(sid, &text));
        line
    });
    assert_first_request_read(&env, sid);
}

fn jsonl_bom() -> Vec<u8> {
    b"\xEF\xBB\xBF".to_vec()
}

/// A line only a few bytes over the 32 MB limit: its last bytes past the limit alone do not
/// close the JSON, so the line was skipped instead of read as its first 1 MB and last 64 KB.
#[test]
fn a_line_just_over_the_limit_is_salvaged_too() {
    for over in crate::common::cases([1usize, 2, 40], 1) {
        let env = TestEnv::empty();
        let sid = claude_with_raw_first_line(&env, |sid| {
            let base = first_request(sid, "FIRST REQUEST: ");
            // With its newline the line is 32 MB + `over` bytes.
            let pad = (32 << 20) + over - 1 - base.len();
            first_request(sid, &format!("FIRST REQUEST: {}", "x".repeat(pad)))
        });
        assert_first_request_read(&env, sid);
    }
}

/// The 1 MB cut falling inside an escaped surrogate pair (`\ud83d\ude00`, as JSON writers
/// that escape non-ASCII write an emoji) left a lone leading surrogate: the salvaged line
/// then failed to parse and the first request was lost.
#[test]
fn a_cut_inside_an_escaped_surrogate_pair_keeps_the_line() {
    // At shift 0 the cut falls in the pair's second half, so that the cut backs off to just
    // after its first half.
    for shift in crate::common::chosen([0], 0..12) {
        let env = TestEnv::empty();
        let sid = claude_with_raw_first_line(&env, |sid| {
            let mut text = format!("FIRST REQUEST: {}", "a".repeat(shift));
            text.push_str(&"\u{1F600}".repeat((1 << 20) / 12 + 100));
            text.push_str(&"x".repeat(33 << 20));
            let line = String::from_utf8(first_request(sid, &text)).unwrap();
            line.replace('\u{1F600}', "\\ud83d\\ude00").into_bytes()
        });
        assert_first_request_read(&env, sid);
    }
}

/// Several huge lines in a row, the last one without a newline: each salvaged on its own, with
/// a warning naming it.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier: cargo test --features slow-tests"
)]
fn several_huge_lines_and_a_huge_last_line_are_each_salvaged() {
    let env = TestEnv::empty();
    let sid = "7e0c3a1e-7b2f-4e8a-9c6d-1f2e3a4b5c70";
    let line = |uuid: &str, parent: Option<&str>, ts: u32, role: &str, text: &str| {
        claude_line(sid, uuid, parent, ts, role, text)
    };
    let lines = [
        line("u1", None, 1, "user", &huge_text("FIRST REQUEST")),
        line("a1", Some("u1"), 2, "assistant", &huge_text("FIRST ANSWER")),
        line("u2", Some("a1"), 3, "user", &huge_text("SECOND REQUEST")),
        line("a2", Some("u2"), 4, "assistant", &huge_text("LAST ANSWER")),
    ];
    let path = env.work().join(format!("{sid}.jsonl"));
    std::fs::write(&path, lines.join("\n")).unwrap();
    let v = env.json(&["show", path.to_str().unwrap(), "--json"]);
    assert_eq!(v["counts"]["user"], 2, "{}", v["session"]["warnings"]);
    assert_eq!(v["counts"]["assistant"], 2, "{}", v["session"]["warnings"]);
    assert_eq!(salvaged_lines(&v), [1, 2, 3, 4]);
    assert!(
        v["session"]["title"]
            .as_str()
            .unwrap()
            .starts_with("FIRST REQUEST"),
        "{}",
        v["session"]["title"]
    );
    let export = env.ok(&["export", path.to_str().unwrap(), "--format", "markdown"]);
    assert!(export.contains("LAST ANSWER"));
}

/// A compressed Codex rollout (`.jsonl.zst`) with huge lines reads as the plain file does.
#[test]
fn huge_lines_in_a_compressed_rollout_are_salvaged_as_in_a_plain_one() {
    let env = TestEnv::empty();
    let id = "0199aaaa-0000-7000-8000-000000000177";
    let name = format!("rollout-2026-11-20T10-00-00-{id}.jsonl");
    let plain = codex_file(&env, &name);
    let lines = [
        meta_line(id),
        user_line(&huge_text("FIRST REQUEST")),
        user_line("second request"),
        user_line(&huge_text("LAST REQUEST")),
    ];
    std::fs::write(&plain, lines.join("\n")).unwrap();
    let bytes = std::fs::read(&plain).unwrap();
    let compressed = env.work().join(format!("{name}.zst"));
    std::fs::write(&compressed, zstd::encode_all(&bytes[..], 1).unwrap()).unwrap();
    drop(bytes);
    let a = env.json(&["show", plain.to_str().unwrap(), "--json"]);
    let b = env.json(&["show", compressed.to_str().unwrap(), "--json"]);
    assert_eq!(a["counts"]["user"], 3, "{}", a["session"]["warnings"]);
    assert_eq!(salvaged_lines(&a), [2, 4]);
    assert_eq!(salvaged_lines(&b), [2, 4]);
    assert_eq!(a["counts"], b["counts"]);
    assert_eq!(a["session"]["title"], b["session"]["title"]);
    assert!(
        a["session"]["title"]
            .as_str()
            .unwrap()
            .starts_with("FIRST REQUEST"),
        "{}",
        a["session"]["title"]
    );
}

/// A request of some 33 MB of log, starting with `label`.
fn huge_text(label: &str) -> String {
    format!("{label}: {}", "log line 42 ok\n".repeat((33 << 20) / 15))
}

/// The lines `show` says it salvaged.
fn salvaged_lines(v: &Value) -> Vec<u64> {
    v["session"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w["message"]
                .as_str()
                .unwrap()
                .contains("read as its first 1 MB")
        })
        .map(|w| w["line"].as_u64().unwrap())
        .collect()
}

/// One line of a Claude Code session in `/tmp/hostile`: a user request (plain text) or an
/// assistant answer (a text block).
fn claude_line(
    sid: &str,
    uuid: &str,
    parent: Option<&str>,
    ts: u32,
    role: &str,
    text: &str,
) -> String {
    let content = if role == "user" {
        json!(text)
    } else {
        json!([{"type": "text", "text": text}])
    };
    json!({"parentUuid": parent, "isSidechain": false, "type": role, "uuid": uuid,
        "sessionId": sid, "cwd": "/tmp/hostile", "version": "2.1.332",
        "timestamp": format!("2026-11-20T10:00:{ts:02}.000Z"),
        "message": {"role": role, "content": content}})
    .to_string()
}

/// Every string of a session file, in `edit`'s way: `\u{E000}` (which JSON writers leave as it
/// is) appended to the longest string of each line, or of the document, then replaced in the
/// text by `with`.
fn with_a_character_in_every_line(path: &std::path::Path, with: &str) {
    fn longest(v: &mut Value) -> Option<&mut String> {
        match v {
            Value::String(s) => Some(s),
            Value::Array(a) => a.iter_mut().filter_map(longest).max_by_key(|s| s.len()),
            Value::Object(o) => o.values_mut().filter_map(longest).max_by_key(|s| s.len()),
            _ => None,
        }
    }
    let mark = |mut v: Value| {
        if let Some(s) = longest(&mut v) {
            s.push('\u{E000}');
        }
        v.to_string()
    };
    let text = std::fs::read_to_string(path).unwrap();
    let edited = match serde_json::from_str::<Value>(&text) {
        // A whole document (Gemini CLI's older `.json`, the TypeScript Codex CLI's).
        Ok(v) if !text.trim_end().contains('\n') || path.extension().unwrap() == "json" => mark(v),
        _ => text
            .lines()
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(v) => mark(v),
                Err(_) => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    std::fs::write(path, edited.replace('\u{E000}', with) + "\n").unwrap();
}

/// The session files in an environment's stores.
fn store_sessions(env: &TestEnv) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(env.dir.path())
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.ends_with(".jsonl")
                || (name.starts_with("session-") && name.ends_with(".json"))
                || (name.starts_with("rollout-") && name.ends_with(".json"))
        })
        // The one with invalid UTF-8 on purpose would not survive the edit.
        .filter(|p| std::fs::read_to_string(p).is_ok())
        .collect()
}

/// JavaScript writes the half of an emoji it kept when it cut a string between the halves as
/// a lone surrogate escape (`\ud83d`), and reads it back; serde_json refuses it. A line that
/// holds one is read with U+FFFD in its place, as `\ufffd` written there reads, with a
/// warning: by the listing, `show` (read in part or in full), exports and relays, in every
/// fixture of every agent, whatever string of the line it is in. Before, each such line was
/// malformed and its message lost.
#[test]
fn a_lone_surrogate_escape_costs_a_character_not_the_line() {
    let (mut halves, mut replaced) = (TestEnv::with_fixtures(), TestEnv::with_fixtures());
    halves.removing_stores();
    replaced.removing_stores();
    let sessions = store_sessions(&halves);
    assert!(sessions.len() > 20, "{sessions:?}");
    for (i, path) in sessions.iter().enumerate() {
        // Lone high halves, lone low halves, and a high half before another escape.
        let lone = ["\\ud83d", "\\udc00 x", "\\uDBFF\\u0041"][i % 3];
        let fffd = ["\\ufffd", "\\ufffd x", "\\ufffd\\u0041"][i % 3];
        with_a_character_in_every_line(path, lone);
        let twin = replaced
            .dir
            .path()
            .join(path.strip_prefix(halves.dir.path()).unwrap());
        with_a_character_in_every_line(&twin, fffd);
    }
    let root_h = halves.dir.path().to_str().unwrap().to_string();
    let root_r = replaced.dir.path().to_str().unwrap().to_string();
    let same = |args: &[&str], part: bool| -> (String, String) {
        let run = |env: &TestEnv, root: &str| {
            let args: Vec<String> = args.iter().map(|a| a.replace("ROOT", root)).collect();
            let mut cmd = env.cmd();
            if part {
                cmd.env(session_relay::adapter::PART_READ_ENV, "1");
            }
            let out = cmd.args(&args).output().unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).replace(root, "ROOT"),
            )
        };
        let (h, r) = (run(&halves, &root_h), run(&replaced, &root_r));
        assert_eq!(h.0, r.0, "{args:?}: {} / {}", h.1, r.1);
        (h.1, r.1)
    };
    const WARNING: &str = "lone UTF-16 surrogate escape";
    let warned = |s: &str| s.contains(WARNING);
    fn strip(v: &mut Value) {
        match v {
            Value::Array(a) => {
                a.retain(|w| !w.to_string().contains(WARNING));
                a.iter_mut().for_each(strip);
            }
            Value::Object(o) => {
                o.values_mut().for_each(strip);
                // An empty list of warnings is left out.
                o.retain(|k, v| k != "warnings" || v.as_array().is_none_or(|a| !a.is_empty()));
            }
            _ => {}
        }
    }
    let without_warning = |s: &str| -> String {
        let json = |text: &str| {
            serde_json::from_str::<Value>(text).ok().map(|mut v| {
                strip(&mut v);
                v.to_string()
            })
        };
        json(s).unwrap_or_else(|| {
            s.lines()
                .filter_map(|l| match json(l) {
                    Some(v) => Some(v),
                    None => (!warned(l)).then(|| l.to_string()),
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
    };
    let (h, r) = same(&["list", "--all", "--json"], false);
    assert_eq!(h, r, "list");
    let mut warnings = 0;
    let read = crate::common::cases(&sessions, 8);
    for path in &read {
        let rel = path.strip_prefix(halves.dir.path()).unwrap();
        let p = format!("ROOT/{}", rel.display());
        for (args, part) in [
            (vec!["show", &p, "--json"], false),
            (vec!["show", &p, "--json"], true),
            (vec!["export", &p], false),
            (vec!["export", &p, "--format", "markdown"], false),
            (
                vec![
                    "export", &p, "--to", "codex", "--budget", "4000", "--cwd", "/tmp/x",
                ],
                true,
            ),
        ] {
            let (h, r) = same(&args, part);
            warnings += usize::from(warned(&h));
            let (h, r) = (without_warning(&h), without_warning(&r));
            if h != r {
                // Where they part, with some of what comes before.
                let at = h.bytes().zip(r.bytes()).take_while(|(a, b)| a == b).count();
                let from = |s: &str| {
                    s.get(at.saturating_sub(80)..)
                        .unwrap_or(s)
                        .chars()
                        .take(240)
                        .collect::<String>()
                };
                panic!(
                    "{args:?} (in part: {part}): {:?} / {:?}",
                    from(&h),
                    from(&r)
                );
            }
        }
    }
    assert!(warnings >= read.len(), "warned {warnings} times");
}
