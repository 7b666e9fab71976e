//! The versioned archive: with `archive: git` (or `relay --archive DIR`) every relay commits
//! what it carried, masked, on its task chain's branch; `log --archive` names each relay's
//! commit; an archive that cannot be written is a warning, never a failed relay.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::log::{SECRET, append_line, claude_user_turn, codex_user_turn};
use crate::common::{TestEnv, git, session_with_prompts};

fn config(env: &TestEnv, yaml: &str) -> PathBuf {
    let dir = env.dir.path().join("config/session-relay");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.yaml"), yaml).unwrap();
    dir
}

/// `relay ID --to AGENT ARGS --json` into the project: its report.
fn relay(env: &TestEnv, id: &str, to: &str, proj: &str, args: &[&str]) -> Value {
    let mut all = vec!["relay", id, "--to", to, "--cwd", proj, "--json"];
    all.extend_from_slice(args);
    env.json(&all)
}

fn target(report: &Value) -> (String, String) {
    (
        report["target"]["id"].as_str().unwrap().to_string(),
        report["target"]["path"].as_str().unwrap().to_string(),
    )
}

/// Every object of the repository at `dir`, in full: what a secret would have to be in.
fn every_object(dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    // Trees hold binary object ids: read as text, around them.
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The planted key, nor any long piece of it, is anywhere in `text`.
fn assert_no_secret(text: &str, what: &str) {
    for piece in [SECRET, &SECRET[4..20], &SECRET[20..]] {
        assert!(!text.contains(piece), "{piece} in {what}");
    }
}

#[test]
fn every_relay_of_a_task_is_a_commit_on_its_chains_branch() {
    let env = TestEnv::empty();
    config(&env, "archive: git\n");
    let proj = env.project();
    let first_prompt = format!("Deploy the greeter with token {SECRET}");
    let source = session_with_prompts(&env, "claude", &[&first_prompt, "Now add a test"]);
    let r1 = relay(&env, &source, "codex", &proj, &[]);
    let (codex, codex_path) = target(&r1);
    append_line(&codex_path, &codex_user_turn("Go on in Codex"));
    let r2 = relay(&env, &codex, "claude", &proj, &[]);
    let (claude, claude_path) = target(&r2);
    append_line(
        &claude_path,
        &claude_user_turn(&claude_path, &claude, &proj, "Back in Claude Code"),
    );
    let r3 = relay(&env, &claude, "gemini", &proj, &[]);
    let (gemini, _) = target(&r3);

    let archive = env.dir.path().join("state/session-relay/archive");
    let branch = format!("chain/claude-{source}");
    // One branch, the chain's, with the three relays oldest first.
    assert_eq!(
        git(
            &archive,
            &["for-each-ref", "--format=%(refname)", "refs/heads"]
        )
        .trim(),
        format!("refs/heads/{branch}")
    );
    let commits: Vec<String> = git(&archive, &["rev-list", "--reverse", &branch])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(commits.len(), 3, "{commits:?}");
    let short = |id: &str| id[..8].to_string();
    let steps = [
        (&r1, "claude", &source, "codex", &codex),
        (&r2, "codex", &codex, "claude", &claude),
        (&r3, "claude", &claude, "gemini", &gemini),
    ];
    for (commit, (report, from, from_id, to, to_id)) in commits.iter().zip(steps) {
        let budget = report["fit"]["budget"].as_u64().unwrap();
        let subject = git(&archive, &["log", "-1", "--format=%s", commit]);
        let want = format!(
            "relay {from} {} -> {to} {}, budget {} tokens",
            short(from_id),
            short(to_id),
            session_relay::text::thousands(budget)
        );
        assert_eq!(subject.trim(), want);
        let body = git(&archive, &["log", "-1", "--format=%b", commit]);
        assert!(
            body.contains(&format!("Source: {from} {from_id}\n")),
            "{body}"
        );
        assert!(body.contains(&format!("Target: {to} {to_id}\n")), "{body}");
        assert!(body.contains(&format!("Budget: {budget}\n")), "{body}");
        assert_eq!(
            git(&archive, &["log", "-1", "--format=%an <%ae>", commit]).trim(),
            "session-relay <session-relay@localhost>"
        );
        let files = git(&archive, &["ls-tree", "--name-only", commit]);
        assert_eq!(
            files.lines().collect::<Vec<_>>(),
            ["report.json", "session.jsonl", "snapshot.json"]
        );
        // The report as `relay --json` printed it, but for where it was archived (not known
        // until it was).
        let archived: Value =
            serde_json::from_str(&git(&archive, &["show", &format!("{commit}:report.json")]))
                .unwrap();
        let mut printed = report.clone();
        printed["archive"] = Value::Null;
        assert_eq!(archived, printed);
        assert_eq!(report["archive"]["commit"], commit.as_str());
        assert_eq!(report["archive"]["branch"], branch.as_str());
        let session = git(&archive, &["show", &format!("{commit}:session.jsonl")]);
        let header: Value = serde_json::from_str(session.lines().next().unwrap()).unwrap();
        // The relayed session, as the target got it, in the neutral form `export` writes.
        assert_eq!(header["record"], "session-relay/session", "{header}");
        assert_eq!(
            (&header["agent"], &header["id"]),
            (&json!(to), &json!(to_id))
        );
        let snapshot: Value = serde_json::from_str(&git(
            &archive,
            &["show", &format!("{commit}:snapshot.json")],
        ))
        .unwrap();
        assert_eq!(snapshot["working_directory"], proj.as_str());
    }
    // `git diff` shows the task going on: what was said in Codex, then back in Claude Code.
    let diff = git(
        &archive,
        &["diff", &commits[0], &commits[1], "--", "session.jsonl"],
    );
    assert!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.contains("Go on in Codex")),
        "{diff}"
    );
    let diff = git(
        &archive,
        &["diff", &commits[1], &commits[2], "--", "session.jsonl"],
    );
    assert!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.contains("Back in Claude Code")),
        "{diff}"
    );
    // A plain `git log` there shows the latest chain.
    assert_eq!(git(&archive, &["rev-list", "HEAD"]).lines().count(), 3);

    // Nothing secret reached the archive: masked where the session said it.
    let objects = every_object(&archive);
    assert_no_secret(&objects, "the archive");
    assert!(
        objects.contains("[REDACTED:github_token]"),
        "the session is in it"
    );

    // `log --archive`, from any session of the chain: each relay's commit.
    for asked in [&source, &gemini] {
        let v = env.json(&["log", asked, "--archive", "--json"]);
        assert_eq!(v["archive"], archive.display().to_string());
        let relays = v["chains"][0]["relays"].as_array().unwrap();
        let got: Vec<&Value> = relays.iter().map(|r| &r["archive"]["commit"]).collect();
        assert_eq!(got, commits.iter().collect::<Vec<_>>().as_slice(), "{v:#}");
        let text = env.ok(&["log", asked, "--archive"]);
        for c in &commits {
            assert!(
                text.contains(&format!("archive    {} on {branch}", &c[..12])),
                "{text}"
            );
        }
        assert!(
            text.contains(&format!("Archive: {}", archive.display())),
            "{text}"
        );
        assert_no_secret(&text, "log --archive");
    }
    // Without --archive, log says nothing of it.
    let v = env.json(&["log", &source, "--json"]);
    assert!(v.get("archive").is_none(), "{v:#}");
    assert!(v["chains"][0]["relays"][0].get("archive").is_none());
}

/// A relay with --no-redact writes the secret where it was asked to, never into the archive;
/// `archive_dir` names the archive, relative to the config file.
#[test]
fn the_archive_is_masked_even_when_the_relay_is_not() {
    let env = TestEnv::empty();
    let config_dir = config(&env, "archive: git\narchive_dir: kept\n");
    let proj = env.project();
    let prompt = format!("Use the token {SECRET} to deploy");
    let source = session_with_prompts(&env, "claude", &[&prompt, "And test it"]);
    let title = format!("deploy with {SECRET}");
    let r = relay(
        &env,
        &source,
        "codex",
        &proj,
        &["--no-redact", "--title", &title],
    );
    let (_, path) = target(&r);
    assert!(
        std::fs::read_to_string(&path).unwrap().contains(SECRET),
        "--no-redact writes the secret into the relayed session"
    );
    let archive = config_dir.join("kept");
    assert_eq!(r["archive"]["dir"], archive.display().to_string());
    let objects = every_object(&archive);
    assert_no_secret(&objects, "the archive");
    assert!(objects.contains("[REDACTED:github_token]"), "{objects}");
    assert!(objects.contains("Use the token"), "the session is in it");
}

/// An archive that cannot be written leaves the relay done, its exit code 0, with a warning
/// that names the cause and what to do.
#[test]
fn a_failed_archive_is_a_warning_and_the_relay_stands() {
    let env = TestEnv::empty();
    let proj = env.project();
    let source = session_with_prompts(&env, "claude", &["Hello", "More"]);
    let file = env.dir.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let mine = env.dir.path().join("my-notes");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("todo.txt"), "mine").unwrap();
    let empty_path = env.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty_path).unwrap();
    let under_file = file.join("archive");
    let cases: [(&Path, Option<&Path>, &str, &str); 3] = [
        (&under_file, None, "Not a directory", "--archive DIR"),
        (&mine, None, "holds other files", "--archive DIR"),
        (
            &env.dir.path().join("fresh"),
            Some(&empty_path),
            "git was not found",
            "install git",
        ),
    ];
    for (n, (dir, path_var, cause, fix)) in cases.into_iter().enumerate() {
        let mut cmd = env.cmd();
        cmd.args(["relay", &source, "--to", "codex", "--cwd", &proj, "--force"])
            .arg("--archive")
            .arg(dir);
        if let Some(p) = path_var {
            cmd.env("PATH", p);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "case {n}: {stderr}");
        assert!(stdout.contains("Relayed Claude Code session"), "{stdout}");
        assert!(!stdout.contains("archived"), "{stdout}");
        let warning = stderr
            .lines()
            .find(|l| l.starts_with("warning: the relay was not archived"))
            .unwrap_or_else(|| panic!("case {n}: no warning: {stderr}"));
        assert!(warning.contains(cause), "case {n}: {warning}");
        assert!(warning.contains(fix), "case {n}: {warning}");
    }
    // Nothing was written into the folder that is not an archive.
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);
    assert!(!env.dir.path().join("fresh").exists());
    // With --json, the warning is in the report and the archive is null.
    let v = env.json(&[
        "relay",
        &source,
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--force",
        "--json",
        "--archive",
        under_file.to_str().unwrap(),
    ]);
    assert_eq!(v["archive"], Value::Null);
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("not archived")),
        "{v:#}"
    );
}

/// The hook that relays a session before it is compacted archives it as any relay does.
#[test]
fn a_hook_relay_is_archived_too() {
    let env = TestEnv::empty();
    config(&env, "archive: git\n");
    let id = session_with_prompts(&env, "claude", &["Hello", "More"]);
    let path = walkdir::WalkDir::new(env.home("claude"))
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy() == format!("{id}.jsonl"))
        .expect("the written session")
        .into_path();
    let input = serde_json::json!({
        "session_id": id, "transcript_path": path, "cwd": env.project(),
        "hook_event_name": "PreCompact", "trigger": "auto",
    });
    let out = env
        .cmd()
        .args(["hook", "run", "--to", "codex"])
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("Relayed to Codex CLI"), "{said}");
    let archive = env.dir.path().join("state/session-relay/archive");
    let subjects = git(
        &archive,
        &["log", "--format=%s", &format!("chain/claude-{id}")],
    );
    assert_eq!(subjects.lines().count(), 1, "{subjects}");
    assert!(subjects.starts_with("relay claude "), "{subjects}");
}
