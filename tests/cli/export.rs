//! `export`: the neutral JSONL reads back into an identical session; the Markdown handoff
//! carries goal, steps, dialogue, files, directory and branch.

use crate::common::{TestEnv, fixture_sessions};
use session_relay::model::neutral;
use session_relay::{adapters, select};

#[test]
fn neutral_jsonl_round_trips_every_fixture_exactly() {
    let env = TestEnv::empty();
    let cfg = env.config();
    for (agent, path) in fixture_sessions() {
        let located = select::locate_file(&cfg, &path).unwrap();
        let adapter = adapters::by_name(agent).unwrap();
        let session = adapter.read(&path, None).unwrap();
        assert_eq!(
            located.adapter.map(|a| a.name()),
            Some(agent),
            "{} is recognised as {agent}",
            path.display()
        );
        let mut buf = Vec::new();
        neutral::write(&session, &mut buf).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        std::fs::write(&file, &buf).unwrap();
        let back = neutral::read(&file).unwrap();
        assert_eq!(back, session, "round trip of {}", path.display());
        // One header line, then one line per message.
        assert_eq!(
            buf.iter().filter(|&&b| b == b'\n').count(),
            session.messages.len() + 1
        );
    }
}

#[test]
fn exported_jsonl_is_itself_a_session_the_cli_reads() {
    let env = TestEnv::with_fixtures();
    for id in ["771ce1df", "01a22a5d", "5973b6c0", "0c5f1e7a"] {
        let a = env.work().join(format!("{id}-a.jsonl"));
        env.ok(&["export", id, "-o", a.to_str().unwrap()]);
        let b = env.ok(&["export", a.to_str().unwrap(), "--format", "jsonl"]);
        assert_eq!(
            std::fs::read_to_string(&a).unwrap(),
            b,
            "{id}: export of the export"
        );
        let original = env.json(&["show", id, "--json"]);
        let exported = env.json(&["show", a.to_str().unwrap(), "--json"]);
        assert_eq!(original, exported, "{id}: same report from the export");
        // Written again by another serializer (spacing, key order, escapes): still an export.
        for (seed, (name, style)) in crate::reformat::STYLES.iter().enumerate() {
            let c = env.work().join(format!("{id}-c{seed}.jsonl"));
            let bytes = std::fs::read(&a).unwrap();
            let mut r = crate::common::Rng(seed as u64 + 7);
            std::fs::write(&c, crate::reformat::rewrite(&bytes, style, &mut r)).unwrap();
            let mut again = env.json(&["show", c.to_str().unwrap(), "--json"]);
            again["session"]["source_path"] = exported["session"]["source_path"].clone();
            assert_eq!(
                again["session"], exported["session"],
                "{id}: export written {name}"
            );
            assert_eq!(
                again["messages"], exported["messages"],
                "{id}: export written {name}"
            );
        }
    }
}

#[test]
fn export_never_replaces_an_existing_file() {
    let env = TestEnv::with_fixtures();
    let out = env.work().join("keep.md");
    std::fs::write(&out, "precious").unwrap();
    let (code, err) = env.fails(&[
        "export",
        "771ce1df",
        "--format",
        "markdown",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious");
    // No temporary file left behind.
    let names: Vec<_> = std::fs::read_dir(env.work())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn markdown_handoff_documents() {
    let env = TestEnv::with_fixtures();
    for id in ["771ce1df", "01a22a5d", "5d0c3a1e"] {
        let md = env.ok(&["export", id, "--format", "markdown"]);
        for section in [
            "## Goal",
            "## Completed steps",
            "## Pending steps",
            "## Key dialogue",
            "## Files touched",
            "- Working directory:",
        ] {
            assert!(md.contains(section), "{id}: missing {section}\n{md}");
        }
        let md = md
            .lines()
            .map(|l| {
                if l.starts_with("- Source file:") {
                    "- Source file: [path]"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        insta::assert_snapshot!(format!("markdown_{id}"), md);
    }
    let md = env.ok(&["export", "771ce1df", "--format", "markdown"]);
    assert!(md.contains("> THINK Hello! Please DO_BASH to look around the project."));
    assert!(md.contains("- [x] Create hello.py"));
    assert!(md.contains("- [~] (in progress) Add unit tests"));
    assert!(md.contains("- [ ] Write README"));
    assert!(md.contains("`/home/dev/projects/interactive/hello.py`"));
    let md = env.ok(&["export", "01a22a5d", "--format", "markdown"]);
    assert!(md.contains("- Git branch: `main`"), "{md}");
}

#[test]
fn export_can_fit_a_session_to_a_target_budget() {
    let env = TestEnv::with_fixtures();
    let whole = env.ok(&["export", "b62416f1"]);
    let out = env
        .cmd()
        .args(["export", "b62416f1", "--to", "codex", "--budget", "900"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fitted for Codex CLI") && stderr.contains("of 900 tokens"),
        "{stderr}"
    );
    let fitted = String::from_utf8(out.stdout).unwrap();
    assert!(fitted.lines().count() < whole.lines().count());
    let first: serde_json::Value = serde_json::from_str(fitted.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["metadata"]["kind"], "handoff_brief");
    let md = env.ok(&[
        "export", "b62416f1", "--to", "claude", "--budget", "900", "--format", "markdown",
    ]);
    assert!(
        md.contains("## Goal") && md.contains("THINK Hi, please DO_BASH"),
        "{md}"
    );
}

/// `export | head`: a reader that stops early is no error, now that the export is written as it
/// is serialised (the JSON writer meets the closed pipe, not a plain write).
#[test]
fn an_export_into_a_closed_pipe_ends_quietly() {
    use std::io::{Read, Write};
    let env = TestEnv::empty();
    let dir = env.claude_home().join("projects/-tmp-pipe");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("5e55b0b0-0000-4000-8000-00000000b1b1.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut parent = serde_json::Value::Null;
    for n in 0..2000u32 {
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        let (kind, text) = if n % 2 == 0 {
            ("user", format!("request {n}: {}", "word ".repeat(200)))
        } else {
            ("assistant", format!("answer {n}: {}", "done ".repeat(200)))
        };
        let message = if kind == "user" {
            serde_json::json!({"role": "user", "content": text})
        } else {
            serde_json::json!({"id": format!("msg_{n}"), "role": "assistant", "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": text}]})
        };
        let line = serde_json::json!({"parentUuid": parent, "isSidechain": false, "type": kind,
            "message": message, "uuid": uuid, "sessionId": "5e55b0b0-0000-4000-8000-00000000b1b1",
            "cwd": "/tmp/pipe", "timestamp": format!("2026-11-04T10:{:02}:{:02}.000Z", n / 60 % 60, n % 60)});
        writeln!(f, "{line}").unwrap();
        parent = serde_json::Value::String(uuid);
    }
    drop(f);
    let mut child = env
        .std_cmd(assert_cmd::cargo::cargo_bin("session-relay"))
        .args(["export", path.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 100];
    stdout.read_exact(&mut head).unwrap();
    assert!(
        head.starts_with(b"{\"record\":\"session-relay/session\""),
        "{head:?}"
    );
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string()
        ),
        (Some(0), String::new())
    );
}

/// An export's schema version is read as a number, as JSON readers read it: `1.0` is 1; any
/// other version, or none, is named in the error as written.
#[test]
fn an_exports_schema_version_is_read_as_a_number() {
    let env = TestEnv::with_fixtures();
    let a = env.work().join("a.jsonl");
    env.ok(&["export", "771ce1df", "-o", a.to_str().unwrap()]);
    let text = std::fs::read_to_string(&a).unwrap();
    let shown = env.json(&["show", a.to_str().unwrap(), "--json"]);
    assert!(text.contains("\"schema_version\":1,"), "{}", &text[..200]);
    for (written, error) in [
        ("\"schema_version\":1.0,", None),
        ("\"schema_version\":1e0,", None),
        (
            "\"schema_version\":2,",
            Some("schema_version 2 is not supported"),
        ),
        (
            "\"schema_version\":\"1\",",
            Some("schema_version \"1\" is not supported"),
        ),
        ("", Some("no schema_version is not supported")),
    ] {
        let b = env.work().join("b.jsonl");
        std::fs::write(&b, text.replacen("\"schema_version\":1,", written, 1)).unwrap();
        match error {
            None => {
                let mut again = env.json(&["show", b.to_str().unwrap(), "--json"]);
                again["session"]["source_path"] = shown["session"]["source_path"].clone();
                assert_eq!(again, shown, "{written}");
            }
            Some(error) => {
                let (_, err) = env.fails(&["show", b.to_str().unwrap()]);
                assert!(err.contains(error), "{written}: {err}");
            }
        }
    }
}
