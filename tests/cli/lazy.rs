//! A relay reads long sessions only in part (the newest turns in full, older tool outputs only
//! to their first characters) and reads again in full when its fit wants more. What it carries
//! must be exactly what a full read gives: for every fixture and for large generated sessions,
//! in every direction, at budgets small enough that most of a session is left out.

use std::io::Write;

use crate::common::{TestEnv, cases, chosen, count, fixture_sessions};
use serde_json::{Value, json};

/// `export SESSION --to TARGET --budget N`: the fitted session as neutral JSONL (deterministic:
/// no new ids) and the report (what was masked, how it fitted), read in part and read in full,
/// and whether the first read did go in part (a session the tail holds whole is read in full).
fn both_ways(env: &TestEnv, session: &str, to: &str, budget: &str) -> (String, String, bool) {
    let (lazy, full, in_part, _) = both_ways_folding(env, session, to, budget, None);
    (lazy, full, in_part)
}

/// How a read in part went with the older turns (see `plan::fold`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Folding {
    /// None were folded.
    None,
    /// Some were, and the relay was planned with them folded.
    Kept,
    /// Some were, but the fit wanted one of them: the session was read again in full.
    ReadAgain,
}

/// A command that reads a session in full, or in part whatever its size (these sessions are
/// small: read in part all the same).
fn reading(env: &TestEnv, full: bool) -> assert_cmd::Command {
    let mut cmd = env.cmd();
    if full {
        cmd.env(session_relay::commands::FULL_READ_ENV, "1");
    } else {
        cmd.env(session_relay::adapter::PART_READ_ENV, "1");
    }
    cmd
}

/// `both_ways`, keeping `fold_budgets` budgets of the newest turns when reading in part (the
/// default when `None`), and how the read in part folded.
fn both_ways_folding(
    env: &TestEnv,
    session: &str,
    to: &str,
    budget: &str,
    fold_budgets: Option<&str>,
) -> (String, String, bool, Folding) {
    let args = [
        "export",
        session,
        "--to",
        to,
        "--budget",
        budget,
        "--cwd",
        "/tmp/lazy",
    ];
    let run = |full: bool| {
        let mut cmd = reading(env, full);
        if !full && let Some(b) = fold_budgets {
            cmd.env(session_relay::plan::fold::KEEP_ENV, b);
        }
        let out = cmd.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        let in_part = stderr.contains(session_relay::adapter::PART_READ_NOTE);
        let folding = match stderr
            .lines()
            .find(|l| l.starts_with(session_relay::plan::fold::FOLD_NOTE))
        {
            None => Folding::None,
            Some(l) if l.ends_with("read again in full") => Folding::ReadAgain,
            Some(_) => Folding::Kept,
        };
        let stderr: String = stderr
            .lines()
            .filter(|l| {
                *l != session_relay::adapter::PART_READ_NOTE
                    && !l.starts_with(session_relay::plan::fold::FOLD_NOTE)
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(!(full && in_part), "a full read went in part");
        assert!(in_part || folding == Folding::None, "a read in full folded");
        (
            format!(
                "{}\n--- report ---\n{}",
                String::from_utf8(out.stdout).unwrap(),
                stderr
            ),
            in_part,
            folding,
        )
    };
    let ((lazy, in_part, folding), (full, _, _)) = (run(false), run(true));
    (lazy, full, in_part, folding)
}

/// `both_ways` of each session to Claude Code and Codex at three budgets (the smallest to one
/// and the largest to the other in the default tier), each pair asserted the same: the
/// relays, each with what it was.
fn relays_both_ways(env: &TestEnv, sessions: &[std::path::PathBuf]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let relays = cases(
        ["claude", "codex"]
            .into_iter()
            .flat_map(|to| ["6000", "12000", "30000"].map(|budget| (to, budget))),
        2,
    );
    for path in sessions {
        let mut in_part = 0;
        for &(to, budget) in &relays {
            let (lazy, full, part) = both_ways(env, path.to_str().unwrap(), to, budget);
            in_part += usize::from(part);
            let what = format!("{} -> {to} at {budget}", path.display());
            assert!(lazy == full, "{what}: reading in part changed the relay");
            out.push((what, lazy));
        }
        let n = relays.len();
        eprintln!("{}: read in part {in_part} of {n} times", path.display());
        assert!(in_part > 0, "{}: never read in part", path.display());
    }
    out
}

#[test]
fn reading_in_part_changes_nothing_for_any_fixture() {
    let env = TestEnv::with_fixtures();
    let mut all = Vec::new();
    for (agent, path) in fixture_sessions() {
        for to in session_relay::adapters::names() {
            for budget in ["900", "1500", "4000", "20000"] {
                all.push((agent, path.clone(), to, budget));
            }
        }
    }
    let relays = cases(all, 24);
    let (mut compared, mut in_part) = (0, 0);
    for &(agent, ref path, to, budget) in &relays {
        let rel = path
            .strip_prefix(crate::common::fixtures().join(agent))
            .unwrap();
        let file = env.home(agent).join(rel);
        // `export` read as the variable set (none: as a relay reads by default).
        let export = |read: Option<&str>| {
            let mut cmd = env.cmd();
            if let Some(var) = read {
                cmd.env(var, "1");
            }
            cmd.args([
                "export",
                file.to_str().unwrap(),
                "--to",
                to,
                "--budget",
                budget,
                "--cwd",
                "/tmp/lazy",
            ])
            .output()
            .unwrap()
        };
        if !export(Some(session_relay::adapter::PART_READ_ENV))
            .status
            .success()
        {
            // A budget below the always-kept part is refused both ways alike.
            let full = export(Some(session_relay::commands::FULL_READ_ENV));
            assert!(
                !full.status.success(),
                "{} -> {to} at {budget}",
                path.display()
            );
            continue;
        }
        let (lazy, full, part) = both_ways(&env, file.to_str().unwrap(), to, budget);
        assert!(
            lazy == full,
            "{} -> {to} at {budget}: reading in part changed the relay",
            path.display()
        );
        // And as a relay reads a small session by default: in full at once, but keeping
        // only what the plan reads (`ReadOptions::lean`), which the read in full the
        // tests ask for does not.
        let out = export(None);
        let default = format!(
            "{}\n--- report ---\n{}",
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap()
        );
        assert!(
            default == full,
            "{} -> {to} at {budget}: the default read changed the relay",
            path.display()
        );
        compared += 1;
        in_part += usize::from(part);
    }
    eprintln!("{compared} comparisons, {in_part} read in part");
    // A tenth of the relays at least, or the test proves nothing.
    assert!(compared * 10 > relays.len(), "only {compared} comparisons");
    assert!(
        in_part * 10 > relays.len(),
        "only {in_part} fixture relays were read in part"
    );
}

/// A Claude Code session of about `mb` MB: many turns, each with tool calls whose outputs are
/// long, so that a relay leaves most of them out.
/// A Claude Code transcript written line by line: each line chained to the one before, with
/// increasing times.
struct ClaudeLines {
    file: std::io::BufWriter<std::fs::File>,
    id: String,
    parent: Option<String>,
    n: u64,
}

impl ClaudeLines {
    fn create(path: &std::path::Path, id: &str) -> ClaudeLines {
        ClaudeLines {
            file: std::io::BufWriter::new(std::fs::File::create(path).unwrap()),
            id: id.to_string(),
            parent: None,
            n: 0,
        }
    }

    fn line(&mut self, kind: &str, message: Value) {
        self.n += 1;
        let n = self.n;
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        let ts = format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + n / 86400 % 28,
            n / 3600 % 24,
            n / 60 % 60,
            n % 60
        );
        let v = json!({"parentUuid": self.parent, "isSidechain": false, "userType": "external", "cwd": "/tmp/lazy",
            "sessionId": self.id, "version": "2.1.332", "type": kind, "message": message, "uuid": uuid, "timestamp": ts});
        writeln!(self.file, "{v}").unwrap();
        self.parent = Some(uuid);
    }
}

fn write_long_claude_session(env: &TestEnv, id: &str, turns: usize) -> std::path::PathBuf {
    let dir = env.claude_home().join("projects/-tmp-lazy");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    let mut w = ClaudeLines::create(&path, id);
    for t in 0..turns {
        let prompt = if t % 97 == 13 {
            format!("Turn {t}: we must never commit generated files. Fix module {t}.")
        } else {
            format!("Turn {t}: please fix module {t} and run the tests")
        };
        w.line("user", json!({"role": "user", "content": prompt}));
        for c in 0..3 {
            let id = format!("toolu_{t}_{c}");
            w.line("assistant",
                json!({"id": format!("msg_{t}_{c}"), "role": "assistant", "model": "claude-opus-4-6",
                "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": format!("cargo test -p m{t} # {c}")}}]}),
            );
            let output: String = (0..(40 + (t * 7 + c * 13) % 300))
                .map(|i| {
                    format!(
                        "test m{t}::case_{i} ... {}\n",
                        if i % 17 == 0 { "FAILED" } else { "ok" }
                    )
                })
                .collect();
            w.line(
                "user",
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                "content": output, "is_error": c == 1 && t % 5 == 0}]}),
            );
        }
        w.line("assistant",
            json!({"id": format!("msg_{t}_end"), "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": format!("Module {t} is fixed; we decided to keep the old API.")}]}),
        );
    }
    drop(w);
    path
}

/// The relays of a long generated session: to every agent, at budgets from a small part of
/// the session to most of a target's window (the first of them in the default tier).
fn long_session_relays() -> Vec<(&'static str, &'static str)> {
    let all = session_relay::adapters::names()
        .into_iter()
        .flat_map(|to| ["6000", "30000", "120000"].map(|budget| (to, budget)));
    cases(all, 1)
}

#[test]
fn reading_in_part_changes_nothing_for_a_long_session() {
    let env = TestEnv::empty();
    let id = "5e55b0b0-0000-4000-8000-00000000a11a";
    let path = write_long_claude_session(&env, id, 600);
    assert!(std::fs::metadata(&path).unwrap().len() > 8 << 20);
    for (to, budget) in long_session_relays() {
        let (lazy, full, part) = both_ways(&env, path.to_str().unwrap(), to, budget);
        assert!(
            lazy == full,
            "-> {to} at {budget}: reading in part changed the relay"
        );
        assert!(part, "-> {to} at {budget}: read in full");
        assert!(lazy.lines().count() > 10);
    }
}

/// A Codex rollout of many turns with long outputs, in both output shapes Codex writes (plain
/// text with the exit code in a header, and the older JSON document).
fn write_long_codex_session(env: &TestEnv, id: &str, turns: usize) -> std::path::PathBuf {
    let dir = env.codex_home().join("sessions/2026/11/02");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("rollout-2026-11-02T08-00-00-{id}.jsonl"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut sec = 0u64;
    let mut line =
        |f: &mut std::io::BufWriter<std::fs::File>, kind: &str, payload: serde_json::Value| {
            sec += 1;
            let ts = format!(
                "2026-11-02T{:02}:{:02}:{:02}.000Z",
                8 + sec / 3600 % 12,
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
        &mut f,
        "session_meta",
        json!({"id": id, "timestamp": "2026-11-02T08:00:00.000Z", "cwd": "/tmp/lazy", "cli_version": "0.171.0", "source": "cli"}),
    );
    for t in 0..turns {
        let prompt = format!("Turn {t}: run the tests of crate c{t} and fix what fails");
        line(
            &mut f,
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
        );
        line(
            &mut f,
            "event_msg",
            json!({"type": "user_message", "message": prompt}),
        );
        for c in 0..3 {
            let call = format!("call_{t}_{c}");
            line(
                &mut f,
                "response_item",
                json!({"type": "function_call", "name": "exec_command", "arguments": json!({"cmd": format!("cargo test -p c{t} -- {c}")}).to_string(), "call_id": call}),
            );
            let body: String = (0..(30 + (t * 11 + c * 7) % 250))
                .map(|i| {
                    format!(
                        "test c{t}::case_{i} ... {}\n",
                        if i % 13 == 0 { "FAILED" } else { "ok" }
                    )
                })
                .collect();
            let output = if c == 2 {
                json!({"output": body, "metadata": {"exit_code": i64::from(t % 4 == 0)}})
                    .to_string()
            } else {
                format!(
                    "Chunk ID: {t}{c}\nWall time: 0.5 seconds\nProcess exited with code {}\nOutput:\n{body}",
                    u8::from(c == 1)
                )
            };
            line(
                &mut f,
                "response_item",
                json!({"type": "function_call_output", "call_id": call, "output": output}),
            );
        }
        let answer = format!("Crate c{t} passes now; I decided to keep the old API.");
        line(
            &mut f,
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}),
        );
        line(
            &mut f,
            "event_msg",
            json!({"type": "agent_message", "message": answer}),
        );
    }
    drop(f);
    path
}

#[test]
fn reading_in_part_changes_nothing_for_a_long_codex_session() {
    let env = TestEnv::empty();
    let id = "0199f0f0-0000-7000-8000-00000000a11a";
    let path = write_long_codex_session(&env, id, 600);
    assert!(std::fs::metadata(&path).unwrap().len() > 6 << 20);
    for (to, budget) in long_session_relays() {
        let (lazy, full, part) = both_ways(&env, path.to_str().unwrap(), to, budget);
        assert!(
            lazy == full,
            "-> {to} at {budget}: reading in part changed the relay"
        );
        assert!(part, "-> {to} at {budget}: read in full");
        assert!(lazy.lines().count() > 10);
    }
}

/// `show` of a session over 8 MB reads its tool outputs cut, as a relay does: it says the same
/// as a full read, but for estimates that now count cut outputs at their source size.
#[test]
fn show_of_a_long_session_says_what_a_full_read_says() {
    let env = TestEnv::empty();
    let claude = write_long_claude_session(&env, "5e55b0b0-0000-4000-8000-00000000a11b", 600);
    let codex = write_long_codex_session(&env, "0199e000-0000-7000-8000-00000000a11c", 600);
    for path in [claude, codex] {
        assert!(std::fs::metadata(&path).unwrap().len() > 8 << 20);
        let p = path.to_str().unwrap();
        let cut = env.json(&["show", p, "--json"]);
        let out = env
            .cmd()
            .env(session_relay::commands::FULL_READ_ENV, "1")
            .args(["show", p, "--json"])
            .output()
            .unwrap();
        let full: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let close = |a: &serde_json::Value, b: &serde_json::Value| {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            (a - b).abs() <= b * 0.001
        };
        assert!(
            close(&cut["estimated_tokens"], &full["estimated_tokens"]),
            "{p}"
        );
        let rest = |mut v: serde_json::Value| {
            let o = v.as_object_mut().unwrap();
            o.remove("estimated_tokens");
            o.remove("context_check");
            v
        };
        assert_eq!(rest(cut.clone()), rest(full.clone()), "{p}");
        if let Some(check) = full.get("context_check").filter(|c| !c.is_null()) {
            let growth = &cut["context_check"]["estimated_growth"];
            assert!(
                close(growth, &check["estimated_growth"]),
                "{p}: {growth} vs {check}"
            );
        }
    }
}

/// Runs session-relay with `var` set and reads in part asked, which must succeed: its standard
/// output, and the line of standard error that starts with `note`, if any.
fn noting(env: &TestEnv, var: (&str, &str), args: &[&str], note: &str) -> (String, Option<String>) {
    let out = env
        .cmd()
        .env(var.0, var.1)
        .env(session_relay::adapter::PART_READ_ENV, "1")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    let found = err
        .lines()
        .find(|l| l.starts_with(note))
        .map(str::to_string);
    (String::from_utf8(out.stdout).unwrap(), found)
}

/// `show` of a long session counts its older turns as it reads them and lets them go: it
/// says exactly what it says holding every turn, on every fixture and on long generated
/// sessions, whether the counts could stand or the session was read again (its context check
/// reached back into the counted turns).
#[test]
fn show_counting_older_turns_says_what_holding_them_says() {
    use session_relay::commands::show::{SHOW_FOLD_NOTE, SHOW_KEEP_ENV};
    let env = TestEnv::empty();
    let mut paths: Vec<std::path::PathBuf> =
        fixture_sessions().into_iter().map(|(_, p)| p).collect();
    paths.push(write_long_claude_session(
        &env,
        "5e55b0b0-0000-4000-8000-00000000c0a1",
        120,
    ));
    let codex = write_long_codex_session(&env, "0199e000-0000-7000-8000-00000000c0a2", 120);
    // A last turn whose output is cut while reading: a count from cut outputs is an estimate,
    // which counted turns can add to (an exact count needs their text).
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&codex)
        .unwrap();
    for payload in [
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Print the log"}]}),
        json!({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"cat log\"}", "call_id": "call_log"}),
        json!({"type": "function_call_output", "call_id": "call_log", "output": "log line\n".repeat(3000)}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "The log is clean."}]}),
    ] {
        let line = json!({"timestamp": "2026-11-02T20:00:00.000Z", "type": "response_item", "payload": payload});
        writeln!(f, "{line}").unwrap();
    }
    drop(f);
    paths.push(codex);
    let show = |path: &str, keep: &str| {
        noting(
            &env,
            (SHOW_KEEP_ENV, keep),
            &["show", path, "--json"],
            SHOW_FOLD_NOTE,
        )
    };
    let (mut counted, mut read_again) = (0, 0);
    for path in &paths {
        let p = path.to_str().unwrap();
        let (held, note) = show(p, "1000000000000");
        assert_eq!(note, None, "{p}: counted while keeping every turn");
        assert!(held.contains("\"estimated_tokens\""), "{p}: {held}");
        for keep in ["0", "2000"] {
            let (folded, note) = show(p, keep);
            assert_eq!(folded, held, "{p}, keeping {keep} tokens: {note:?}");
            match note {
                Some(n) if n.ends_with("then read again in full") => read_again += 1,
                Some(_) => counted += 1,
                None => {}
            }
        }
    }
    // Both ways were taken, on fixtures of both agents that fold and on the long sessions.
    assert!(counted >= 4, "{counted} counted, {read_again} read again");
    assert!(
        read_again >= 1,
        "{counted} counted, {read_again} read again"
    );
}

/// A plain export of a long session, JSONL or Markdown, writes its older turns, masked, as it
/// reads them and lets them go: what it writes is the same, byte for byte, as an export that
/// holds every turn, on every fixture (four of them in the default tier) and on long generated
/// sessions, whether the turns it wrote could stand or the session was read again (a call
/// answered after them, an orphan among them).
#[test]
fn export_writing_older_turns_as_it_reads_writes_the_same() {
    use session_relay::commands::export::{SPILL_KEEP_ENV, SPILL_NOTE};
    let env = TestEnv::empty();
    let mut paths: Vec<std::path::PathBuf> =
        cases(fixture_sessions().into_iter().map(|(_, p)| p), 4);
    paths.push(write_long_claude_session(
        &env,
        "5e55b0b0-0000-4000-8000-00000000e0a1",
        80,
    ));
    let codex = write_long_codex_session(&env, "0199e000-0000-7000-8000-00000000e0a2", 80);
    // Secrets in an older turn, which is written as it is read: masked there too.
    let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    edit_lines(&codex, |lines| {
        let at = line_with(lines, "function_call_output");
        lines[at] = lines[at].replace(
            "Wall time",
            &format!("export GITHUB_TOKEN={token}\\nWall time"),
        );
        assert!(lines[at].contains(token));
        // And in an older request, which the Markdown document quotes.
        let asked = format!("Turn 3: with GITHUB_TOKEN={token} run");
        let mut asks = 0;
        for l in lines.iter_mut().filter(|l| l.contains("Turn 3: run")) {
            *l = l.replace("Turn 3: run", &asked);
            asks += 1;
        }
        assert!(asks > 0);
    });
    // A result without a call id in an older turn: a full read marks it an orphan.
    let orphan = write_long_codex_session(&env, "0199e000-0000-7000-8000-00000000e0a3", 80);
    edit_lines(&orphan, |lines| {
        let at = line_with(lines, "function_call_output");
        let no_id = json!({"timestamp": "2026-11-02T08:00:09.000Z", "type": "response_item", "payload": {"type": "function_call_output", "output": "output without call_id"}});
        lines.insert(at + 1, no_id.to_string());
    });
    paths.push(orphan);
    paths.push(codex);
    let export = |path: &str, keep: &str, args: &[&str]| {
        let args: Vec<&str> = ["export", path].iter().chain(args).copied().collect();
        noting(&env, (SPILL_KEEP_ENV, keep), &args, SPILL_NOTE)
    };
    let (mut written, mut read_again) = (0, 0);
    for path in &paths {
        let p = path.to_str().unwrap();
        for args in [
            &[][..],
            &["--no-redact"][..],
            &["--format", "markdown"][..],
            &["--format", "markdown", "--no-redact"][..],
        ] {
            let (held, note) = export(p, "1000000000000", args);
            assert_eq!(note, None, "{p}: wrote turns while keeping every one");
            assert!(held.lines().count() >= 2, "{p}: {held}");
            for keep in ["0", "2000"] {
                let (spilled, note) = export(p, keep, args);
                assert!(
                    spilled == held,
                    "{p} {args:?}, keeping {keep} tokens: {note:?}"
                );
                match note {
                    Some(n) if n.ends_with("then read again in full") => read_again += 1,
                    Some(_) => written += 1,
                    None => {}
                }
            }
        }
    }
    let last = paths.last().unwrap().to_str().unwrap();
    let (masked, _) = export(last, "0", &[]);
    assert!(!masked.contains(token) && masked.contains("[REDACTED:"));
    let (document, note) = export(last, "0", &["--format", "markdown"]);
    assert!(note.is_some_and(|n| !n.ends_with("read again in full")));
    assert!(document.contains("**User:** Turn 3: with GITHUB_TOKEN=[REDACTED:"));
    assert!(!document.contains(token));
    // With -o the turns wait beside the file, and nothing else is left there.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.jsonl");
    let (_, note) = export(last, "0", &["-o", file.to_str().unwrap()]);
    assert!(note.is_some_and(|n| !n.ends_with("read again in full")));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), masked);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // Where no temporary file can be made, the session is held, as before.
    let out = env
        .cmd()
        .env(SPILL_KEEP_ENV, "0")
        .env(session_relay::adapter::PART_READ_ENV, "1")
        .env("TMPDIR", dir.path().join("missing"))
        .args(["export", last])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains(SPILL_NOTE));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), masked);
    assert!(written >= 16, "{written} written, {read_again} read again");
    assert!(
        read_again >= 1,
        "{written} written, {read_again} read again"
    );
}

/// The same session written twice, as a Claude Code transcript and as a Codex rollout: turns
/// of a request, one shell call, its output and an answer.
struct TwoSources {
    claude: std::path::PathBuf,
    codex: std::path::PathBuf,
    claude_lines: ClaudeLines,
    rollout: std::io::BufWriter<std::fs::File>,
    turns: usize,
}

impl TwoSources {
    /// `suffix` tells apart the sessions of different tests (12 hex digits).
    fn create(env: &TestEnv, suffix: &str) -> TwoSources {
        let id = format!("5e55b0b0-0000-4000-8000-{suffix}");
        let dir = env.claude_home().join("projects/-tmp-lazy");
        std::fs::create_dir_all(&dir).unwrap();
        let claude = dir.join(format!("{id}.jsonl"));
        let codex_id = format!("0199f0f0-0000-7000-8000-{suffix}");
        let codex_dir = env.codex_home().join("sessions/2026/11/03");
        std::fs::create_dir_all(&codex_dir).unwrap();
        let codex = codex_dir.join(format!("rollout-2026-11-03T08-00-00-{codex_id}.jsonl"));
        let mut two = TwoSources {
            claude_lines: ClaudeLines::create(&claude, &id),
            rollout: std::io::BufWriter::new(std::fs::File::create(&codex).unwrap()),
            claude,
            codex,
            turns: 0,
        };
        two.item(
            "session_meta",
            json!({"id": codex_id, "timestamp": "2026-11-03T08:00:00.000Z", "cwd": "/tmp/lazy", "cli_version": "0.171.0", "source": "cli"}),
        );
        two
    }

    fn item(&mut self, kind: &str, payload: Value) {
        let v = json!({"timestamp": "2026-11-03T08:00:00.000Z", "type": kind, "payload": payload});
        writeln!(self.rollout, "{v}").unwrap();
    }

    /// A turn; `extra` adds keys to the Claude Code tool result.
    fn turn(
        &mut self,
        prompt: &str,
        argv: &[&str],
        output: &str,
        failed: bool,
        extra: &Value,
        answer: &str,
    ) {
        let t = self.turns;
        self.turns += 1;
        let w = &mut self.claude_lines;
        w.line("user", json!({"role": "user", "content": prompt}));
        let call = format!("toolu_{t}");
        w.line("assistant",
            json!({"id": format!("msg_{t}"), "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": argv.join(" ")}}]}),
        );
        let mut result = json!({"type": "tool_result", "tool_use_id": call, "content": output, "is_error": failed});
        for (k, v) in extra.as_object().into_iter().flatten() {
            result[k] = v.clone();
        }
        w.line("user", json!({"role": "user", "content": [result]}));
        w.line(
            "assistant",
            json!({"id": format!("msg_{t}_end"), "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": answer}]}),
        );
        self.item(
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
        );
        self.item(
            "response_item",
            json!({"type": "function_call", "name": "shell", "arguments": json!({"command": argv}).to_string(), "call_id": format!("call_{t}")}),
        );
        self.item(
            "response_item",
            json!({"type": "function_call_output", "call_id": format!("call_{t}"),
            "output": json!({"output": output, "metadata": {"exit_code": i64::from(failed)}}).to_string()}),
        );
        self.item(
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}),
        );
    }

    /// Both files, written out.
    fn finish(self) -> [std::path::PathBuf; 2] {
        drop(self.claude_lines);
        drop(self.rollout);
        [self.claude, self.codex]
    }
}

/// A tool output whose first line is a run of token characters `len` long (what a piece of a
/// token against a cut marker looks like to redaction), then `lines` short lines.
fn token_run_output(seed: usize, len: usize, lines: usize) -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = (seed as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out: String = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            B64[(state % 64) as usize] as char
        })
        .collect();
    for i in 0..lines {
        out.push_str(&format!("\nline {i} of the listing"));
    }
    out
}

/// First lines of every length around the cuts (a relay's reduced read, a full read's head of
/// two thirds of 8,000 characters, the whole of 8,000), in outputs shorter and longer than a
/// full read keeps: the older turns' outputs are quoted in the summary's error points exactly
/// as a full read quotes them.
#[test]
fn reading_in_part_quotes_long_first_lines_as_a_full_read_does() {
    const LENGTHS: &[(usize, usize)] = &[
        (50, 3),
        (399, 1),
        (401, 40),
        (700, 0),
        (700, 300),
        (2000, 200),
        (5333, 0),
        (5400, 100),
        (7990, 0),
        (9000, 0),
        (12000, 20),
    ];
    let env = TestEnv::empty();
    let mut two = TwoSources::create(&env, "00000000a11d");
    for t in 0..330 {
        let (len, lines) = LENGTHS[t % LENGTHS.len()];
        two.turn(
            &format!("Turn {t}: decode blob {t}"),
            &["cat", &format!("blob{t}.b64")],
            &token_run_output(t, len, lines),
            t % 2 == 0,
            &json!({}),
            &format!("Blob {t} is decoded; we decided to keep it."),
        );
    }
    for (_, relay) in relays_both_ways(&env, &two.finish()) {
        assert!(relay.lines().count() > 10);
    }
}

/// Older outputs that a cut to their first characters would change: secrets whose rule needs
/// text further down (a connection string's password above its `Data Source=`, private keys
/// cut before their END line or with text after it), secrets between the reduced cut and a
/// full read's (which change the masked output's length and the counts), first lines after
/// runs of blanks, a call carried as text's status line printed by a successful output, and
/// keys a reader writes for itself planted in the source. Read in part,
/// the relay masks, counts and quotes them as a full read does, and no secret gets through.
#[test]
fn reading_in_part_masks_and_quotes_older_outputs_as_a_full_read_does() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut token = |len: usize| -> String {
        const AL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                AL[(state % 62) as usize] as char
            })
            .collect()
    };
    let filler = |lines: usize| -> String {
        (0..lines)
            .map(|k| format!("filler line {k:04} of the output\n"))
            .collect()
    };
    let mut secrets: Vec<String> = Vec::new();
    // (output, failed, extra keys of a Claude Code tool result)
    let mut outputs: Vec<(String, bool, Value)> = Vec::new();
    for t in 0..330 {
        let (output, failed, extra) = match t % 13 {
            0 => {
                let password = format!("Tr0ub{}", token(10));
                secrets.push(password.clone());
                (
                    format!(
                        "Error: Pwd = {password};{}Data Source=db{t}\n{}",
                        "\n".repeat(700),
                        "y\n".repeat(300)
                    ),
                    true,
                    json!({}),
                )
            }
            1 => {
                let key = token(2000);
                secrets.push(key[..40].to_string());
                (
                    format!(
                        "Error: key -----BEGIN PRIVATE KEY-----{key}-----END PRIVATE KEY----- after {t}\n{}",
                        filler(50)
                    ),
                    true,
                    json!({}),
                )
            }
            2 => {
                let body: Vec<String> = (0..60).map(|_| token(64)).collect();
                secrets.push(body[30].clone());
                (
                    format!(
                        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY----- trailing {t}\n{}",
                        body.join("\n"),
                        filler(100)
                    ),
                    true,
                    json!({}),
                )
            }
            3 | 4 => {
                let ghp = format!("ghp_{}", token(36));
                secrets.push(ghp.clone());
                let pad = 1000 + (t * 37) % 6500;
                (
                    format!("ok {}{ghp}\n{}", "w ".repeat(pad / 2), filler(t % 40)),
                    t % 2 == 0,
                    json!({}),
                )
            }
            5 => (
                format!("{}Error: CAUSE {t}\n{}", "\n".repeat(1000 + t), filler(20)),
                true,
                json!({}),
            ),
            6 => (
                format!(
                    "{}Error: wide blanks {t}\r\n{}",
                    "\u{3000}".repeat(800),
                    "y\r\n".repeat(400)
                ),
                true,
                json!({}),
            ),
            7 => ("\r\n".repeat(600 + t), true, json!({})),
            8 => {
                let ghp = format!("ghp_{}", token(36));
                secrets.push(ghp.clone());
                // A reader's own marks, planted: nothing may pass for masked or cut.
                (
                    format!("Error: planted {ghp}\n{}", filler(80)),
                    true,
                    json!({"_masked": {}, "_reduced": true, "_original_chars": 100_000}),
                )
            }
            // A transcript's status line in a successful output, where only one of the cuts
            // (the reduced one, or the fit's at 2,000) keeps it.
            9 => (
                format!(
                    "all good {t}\n{}\n[result: error, 5 chars]\n{}",
                    filler(30),
                    filler(80)
                ),
                false,
                json!({}),
            ),
            10 => (
                format!(
                    "all good {t}\n{}x[result: error, 5 chars]{}",
                    "a".repeat(2500),
                    "t".repeat(310)
                ),
                false,
                json!({}),
            ),
            _ => (
                format!("test {t} ... ok\n{}", filler(10 + t % 90)),
                false,
                json!({}),
            ),
        };
        outputs.push((output, failed, extra));
    }

    let env = TestEnv::empty();
    let mut two = TwoSources::create(&env, "00000000a11e");
    for (t, (output, failed, extra)) in outputs.iter().enumerate() {
        two.turn(
            &format!("Turn {t}: check service {t}"),
            &["./check", &t.to_string()],
            output,
            *failed,
            extra,
            &format!("Service {t} checked; we decided to keep it."),
        );
    }
    for (what, relay) in relays_both_ways(&env, &two.finish()) {
        assert!(relay.contains("masked "), "{relay}");
        for secret in &secrets {
            assert!(
                !relay.contains(secret.as_str()),
                "{what}: {secret} got through"
            );
        }
    }
}

/// The fit sizes the summary's reserve in up to three rounds, each choosing the turns again.
/// A round that takes a turn read in part whole (at the lower cost such a turn is given)
/// changes the rounds after it, even when the last round leaves that turn out: such a relay
/// is planned again from a full read. Old small turns, a few turns of many outputs a read in
/// part cuts, and newest turns of large outputs cheap or dear in tokens, at budgets a few
/// dozen tokens apart.
#[test]
fn reading_in_part_sizes_the_summary_as_a_full_read_does() {
    let mut next = {
        let mut state = 0x0d1c_e5ee_d000_0013u64;
        move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        }
    };
    const WORDS: &[&str] = &[
        "alpha", "beta", "gamma", "delta", "error", "fixed", "build", "test", "config", "module",
    ];
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let words = |n: usize, next: &mut dyn FnMut(usize) -> usize| -> String {
        (0..n)
            .map(|_| WORDS[next(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let rnd = |n: usize, next: &mut dyn FnMut(usize) -> usize| -> String {
        (0..n).map(|_| B64[next(64)] as char).collect()
    };
    let mut turns: Vec<Vec<(String, bool)>> = Vec::new();
    for _ in 0..40 {
        let k = 1 + next(3);
        turns.push(
            (0..k)
                .map(|_| {
                    let head = words(3 + next(27), &mut next);
                    let body = words(10 + next(190), &mut next);
                    (format!("Error: {head}\n{body}"), next(10) < 4)
                })
                .collect(),
        );
    }
    for _ in 0..2 {
        let k = 10 + next(30);
        turns.push(
            (0..k)
                .map(|_| {
                    let head = words(1 + next(59), &mut next);
                    let n = 1260 + next(1340);
                    let body = if next(2) == 0 {
                        rnd(n, &mut next)
                    } else {
                        words(n / 6, &mut next)
                    };
                    (format!("Error: {head}\n{body}"), next(10) < 3)
                })
                .collect(),
        );
    }
    for t in 0..5 {
        let k = 1 + next(2);
        turns.push(
            (0..k)
                .map(|_| {
                    let output = if t % 2 == 0 {
                        rnd([5000, 8000, 12000][next(3)], &mut next)
                    } else {
                        (0..20 + next(100))
                            .map(|_| " ".repeat(60 + next(140)) + "\n")
                            .collect()
                    };
                    (output, false)
                })
                .collect(),
        );
    }
    let env = TestEnv::empty();
    let dir = env.claude_home().join("projects/-tmp-lazy");
    std::fs::create_dir_all(&dir).unwrap();
    let id = "5e55b0b0-0000-4000-8000-00000000a11f";
    let path = dir.join(format!("{id}.jsonl"));
    let mut w = ClaudeLines::create(&path, id);
    let mut call = 0;
    for (i, outputs) in turns.iter().enumerate() {
        w.line(
            "user",
            json!({"role": "user", "content": format!("please run step {i}")}),
        );
        for (j, (output, failed)) in outputs.iter().enumerate() {
            call += 1;
            w.line("assistant",
                json!({"id": format!("msg_{call}"), "role": "assistant", "model": "claude-opus-4-6",
                "content": [{"type": "tool_use", "id": format!("toolu_{call}"), "name": "Bash", "input": {"command": format!("make step{i}_{j}")}}]}),
            );
            w.line(
                "user",
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{call}"),
                "content": output, "is_error": failed}]}),
            );
        }
        let answer = format!(
            "We decided to use tool {i}. Let's use approach {i} because {}.",
            words(3 + next(37), &mut next)
        );
        w.line(
            "assistant",
            json!({"id": format!("msg_{i}_end"), "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": answer}]}),
        );
    }
    drop(w);
    // Where this session's rounds took a turn read in part whole in one round and not in the
    // next (the brief holds the file's path, so the budgets move by a few tokens).
    for budget in cases((5700..5900).step_by(5), 6) {
        let (lazy, full, part) =
            both_ways(&env, path.to_str().unwrap(), "codex", &budget.to_string());
        assert!(
            lazy == full,
            "at {budget}: reading in part changed the relay"
        );
        assert!(part, "at {budget}: read in full");
    }
}

/// Where a session last changed each file, and the context its newest request carried, are
/// positions in its messages: the reader works them out after choosing the branch, and they
/// must be where each edit and request was, not where the session ends.
#[test]
fn file_changes_and_context_usage_are_where_they_happened() {
    let env = TestEnv::empty();
    let id = "5e55b0b0-0000-4000-8000-00000000c4a6";
    let dir = env.claude_home().join("projects/-tmp-lazy");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    let mut w = ClaudeLines::create(&path, id);
    let turns = 12;
    for t in 0..turns {
        w.line(
            "user",
            json!({"role": "user", "content": format!("Turn {t}: fix module {t}")}),
        );
        let call = format!("toolu_{t}");
        w.line("assistant",
            json!({"id": format!("msg_{t}"), "role": "assistant", "model": "claude-opus-4-6",
            "usage": {"input_tokens": 1000 + t, "cache_read_input_tokens": 0, "output_tokens": 5},
            "content": [{"type": "tool_use", "id": call, "name": "Edit",
                "input": {"file_path": format!("/tmp/lazy/src/m{}.rs", t % 5), "old_string": "a", "new_string": "b"}}]}),
        );
        w.line(
            "user",
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": "edited"}]}),
        );
        w.line(
            "assistant",
            json!({"id": format!("msg_{t}_end"), "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": format!("Module {t} is fixed.")}]}),
        );
    }
    drop(w);
    let shown = env.json(&["show", path.to_str().unwrap(), "--json"]);
    let session = &shown["session"];
    let changes = session["file_changes"].as_object().unwrap();
    assert_eq!(changes.len(), 5);
    // Four messages a turn; turn t's edit is its second, and it changes m{t % 5}.rs.
    for f in 0..5 {
        let last_turn = (0..turns).filter(|t| t % 5 == f).max().unwrap();
        let change = &changes[&format!("/tmp/lazy/src/m{f}.rs")];
        assert_eq!(change["last"], 4 * last_turn + 1, "m{f}.rs: {change}");
        assert_eq!(change["count"], (0..turns).filter(|t| t % 5 == f).count());
    }
    // The newest request is the last turn's call: everything before its message was the prompt.
    let usage = &session["context_usage"];
    assert_eq!(usage["tokens"], 1000 + turns - 1, "{usage}");
    assert_eq!(usage["at_message"], 4 * (turns - 1) + 1, "{usage}");
}

/// A Codex session of `turns` turns drawn from `seed`, with what makes folding its older
/// turns hard: calls answered before they were made, twice or never, results of no call, calls
/// without ids, ids the Anthropic API refuses, ids of the first turn made again later; a call
/// before the first request (seeds 2, 6, ...), a blank first request (seeds 3, 7, ...), or
/// calls answered in a later turn and results with the empty id (seeds 4, 8, ...); secrets,
/// rules and decisions said again in other cases, compactions, reasoning, patches, lines
/// without a time, and outputs long and short.
fn write_awkward_codex_session(env: &TestEnv, seed: u64, turns: usize) -> std::path::PathBuf {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n.max(1)
    };
    let id = format!("0199f0f0-0000-7000-8000-{seed:012x}");
    let dir = env.codex_home().join("sessions/2026/11/03");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("rollout-2026-11-03T08-00-00-{id}.jsonl"));
    let mut lines: Vec<Value> = Vec::new();
    let mut sec = 0u64;
    let mut line = |next: &mut dyn FnMut(u64) -> u64, kind: &str, payload: Value| {
        sec += 1 + next(30);
        let mut v = json!({"type": kind, "payload": payload});
        if next(9) != 0 {
            v["timestamp"] = json!(format!(
                "2026-11-03T{:02}:{:02}:{:02}.{:03}Z",
                8 + sec / 3600 % 12,
                sec / 60 % 60,
                sec % 60,
                next(1000)
            ));
        }
        lines.push(v);
    };
    line(
        &mut next,
        "session_meta",
        json!({"id": id, "timestamp": "2026-11-03T08:00:00.000Z", "cwd": "/tmp/lazy", "cli_version": "0.171.0", "source": "cli"}),
    );
    line(
        &mut next,
        "response_item",
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>sandboxed</permissions instructions>"}]}),
    );
    let token = |next: &mut dyn FnMut(u64) -> u64| -> String {
        (0..36)
            .map(|_| char::from(b"abcdefghijkLMNOP0123456789"[next(26) as usize]))
            .collect()
    };
    if seed % 4 == 2 {
        line(
            &mut next,
            "response_item",
            json!({"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": "call.ctx.1"}),
        );
        line(
            &mut next,
            "response_item",
            json!({"type": "function_call_output", "call_id": "call.ctx.1", "output": "Cargo.toml"}),
        );
    }
    if seed % 4 == 3 {
        line(
            &mut next,
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "  "}]}),
        );
    }
    // Calls made and not yet answered, which a later turn may answer.
    let mut open: Vec<String> = Vec::new();
    for t in 0..turns {
        let mut prompt = format!("Turn {t}: look at module m{} and fix it", next(40));
        match next(6) {
            0 => prompt.push_str(&format!(". Never touch the file f{}.rs", next(5))),
            1 => prompt.push_str(&format!(". NEVER TOUCH THE FILE F{}.RS", next(5))),
            2 => prompt.push_str(&format!(". The key is ghp_{} for now", token(&mut next))),
            _ => {}
        }
        line(
            &mut next,
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}),
        );
        if next(8) == 0 {
            let m = next(9);
            line(
                &mut next,
                "compacted",
                json!({"message": format!("Summary so far: {t} turns of fixing modules, the tests pass except m{m}")}),
            );
        }
        if next(3) == 0 {
            line(
                &mut next,
                "response_item",
                json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": format!("Thinking about turn {t}")}], "encrypted_content": null}),
            );
        }
        for c in 0..next(5) {
            // The first turn answers every call it makes, and a later turn that makes one of
            // its calls again answers it at once: a call answered after its turn (or given
            // the id of one never answered) folds nothing.
            let shape = match next(14) {
                1 | 3 | 4 if t == 0 => 6,
                n => n,
            };
            let call = match next(12) {
                0 if shape > 5 => format!("call_0_{c}"),
                1 => format!("call.{t}.{c}"),
                _ => format!("call_{t}_{c}"),
            };
            // An answer that comes before its call.
            if shape == 0 {
                line(
                    &mut next,
                    "response_item",
                    json!({"type": "function_call_output", "call_id": call, "output": "early"}),
                );
            }
            let mut item = json!({"type": "function_call", "name": if next(3) == 0 { "shell" } else { "exec_command" }, "arguments": json!({"cmd": format!("cargo test -p m{t} -- {c}")}).to_string(), "call_id": call});
            if shape == 1 {
                item.as_object_mut().unwrap().remove("call_id");
            }
            if shape == 2 {
                item = json!({"type": "custom_tool_call", "name": "apply_patch", "call_id": call, "input": format!("*** Begin Patch\n*** Update File: src/m{}.rs\n@@\n-old\n+new\n*** End Patch\n", next(6))});
            }
            line(&mut next, "response_item", item);
            let len = [0, 40, 900, 3000, 12_000][next(5) as usize];
            let mut body: String = (0..len / 20)
                .map(|i| format!("line {i:04} of out\n"))
                .collect();
            if next(7) == 0 {
                body.push_str(&format!("token ghp_{}\n", token(&mut next)));
            }
            match shape {
                // Answered in a later turn, or never.
                3 | 4 => open.push(call.clone()),
                // Answered twice.
                5 => {
                    for _ in 0..2 {
                        line(
                            &mut next,
                            "response_item",
                            json!({"type": "function_call_output", "call_id": call, "output": body}),
                        );
                    }
                }
                _ if shape != 0 => {
                    let code = next(3) / 2;
                    line(
                        &mut next,
                        "response_item",
                        json!({"type": "function_call_output", "call_id": call, "output": format!("Process exited with code {code}\nOutput:\n{body}")}),
                    )
                }
                _ => {}
            }
        }
        if seed.is_multiple_of(4) && !open.is_empty() && next(3) == 0 {
            let call = open.remove(next(open.len() as u64) as usize);
            line(
                &mut next,
                "response_item",
                json!({"type": "function_call_output", "call_id": call, "output": "late"}),
            );
        }
        if next(20) == 0 {
            let id = if !seed.is_multiple_of(4) || next(2) == 0 {
                format!("call_none_{t}")
            } else {
                String::new()
            };
            line(
                &mut next,
                "response_item",
                json!({"type": "function_call_output", "call_id": id, "output": "of no call"}),
            );
        }
        let answer = match next(4) {
            0 => format!(
                "Module fixed. I decided to keep the old API for m{}.",
                next(4)
            ),
            1 => format!(
                "Module fixed. I DECIDED TO KEEP THE OLD API FOR M{}.",
                next(4)
            ),
            _ => format!("Turn {t} is done and the tests pass for every crate I touched."),
        };
        line(
            &mut next,
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}),
        );
    }
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// `both_ways_folding` of session `path` (generated with `seed`) to `to`, which must relay what
/// a full read relays; how the read in part folded.
fn folded_as_read_in_full(
    env: &TestEnv,
    path: &std::path::Path,
    seed: u64,
    to: &str,
    budget: &str,
    keep: &str,
) -> Folding {
    let (lazy, full, _, folding) =
        both_ways_folding(env, path.to_str().unwrap(), to, budget, Some(keep));
    if lazy != full {
        let diff = differing_lines(&lazy, &full, 3);
        panic!(
            "seed {seed} -> {to} at {budget}, keeping {keep} budgets ({folding:?}): \
             folding changed the relay: {diff:#?}"
        );
    }
    folding
}

/// How many of a session's relays to every agent, at budgets from 3,000 to 60,000 tokens with
/// windows of 0.05 to 1 budget, kept their fold and how many read the session again, each
/// checked against a full read (`folded_as_read_in_full`); `n` of them, spread over the agents
/// and budgets, in the default tier.
fn fold_outcomes(env: &TestEnv, path: &std::path::Path, seed: u64, n: usize) -> (usize, usize) {
    let (mut kept, mut read_again) = (0, 0);
    let all = session_relay::adapters::names().into_iter().flat_map(|to| {
        [
            ("3000", "0.3"),
            ("8000", "0.05"),
            ("20000", "1"),
            ("60000", "0.2"),
        ]
        .map(|(budget, keep)| (to, budget, keep))
    });
    for (to, budget, keep) in cases(all, n) {
        match folded_as_read_in_full(env, path, seed, to, budget, keep) {
            Folding::Kept => kept += 1,
            Folding::ReadAgain => read_again += 1,
            Folding::None => {}
        }
    }
    (kept, read_again)
}

/// A relay that folds the older turns of a Codex session while reading it (see `plan::fold`)
/// writes what a full read writes, however the turns pair their calls: the fold takes only
/// turns it can shape and pair as the whole session would, and when the fit wants a folded
/// turn, the session is read again. Both must happen here, or the test proves nothing.
#[test]
fn folding_older_turns_changes_nothing() {
    let env = TestEnv::empty();
    let (mut kept, mut read_again) = (0, 0);
    // Seed 1 both keeps its fold and reads again.
    for seed in chosen([1], 1..=8u64) {
        let path = write_awkward_codex_session(&env, seed, 200 + 50 * seed as usize);
        let (k, r) = fold_outcomes(&env, &path, seed, 6);
        (kept, read_again) = (kept + k, read_again + r);
    }
    eprintln!("folded and kept {kept} times, read again {read_again} times");
    assert!(kept >= count(1, 10), "folded and kept only {kept} times");
    assert!(read_again > 0, "never read again after folding");
}

/// Sessions a review of the fold found it got wrong, each written as it was found: a call id of
/// the first turn made again in a folded one, a call before the first request whose id the
/// Anthropic API refuses, a blank first request, and a call without an id answered by a
/// result with the empty id many turns later. Each relay equals a full read's; the first folds
/// and keeps its fold, or the test proves nothing.
#[test]
fn folding_shapes_and_pairs_in_the_sessions_order() {
    let env = TestEnv::empty();
    let dir = env.codex_home().join("sessions/2026/11/04");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |n: u64, lines: &mut dyn FnMut(&mut Vec<Value>)| {
        let id = format!("0199f0f0-0000-7000-8000-0000000001{n:02}");
        let mut v = vec![
            json!({"type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-04T08:00:00.000Z", "cwd": "/tmp/lazy", "cli_version": "0.171.0", "source": "cli"}}),
        ];
        lines(&mut v);
        for (i, l) in v.iter_mut().enumerate() {
            l["timestamp"] = json!(format!("2026-11-04T08:{:02}:{:02}.000Z", i / 60, i % 60));
        }
        let path = dir.join(format!("rollout-2026-11-04T08-00-00-{id}.jsonl"));
        let text: String = v.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        path
    };
    let item = |payload: Value| json!({"type": "response_item", "payload": payload});
    let user = |text: &str| {
        item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        )
    };
    let call = |id: Option<&str>, cmd: &str| {
        let mut c = json!({"type": "function_call", "name": "exec_command", "arguments": json!({"cmd": cmd}).to_string()});
        if let Some(id) = id {
            c["call_id"] = json!(id);
        }
        item(c)
    };
    let output = |id: &str, code: u8, text: &str| {
        item(
            json!({"type": "function_call_output", "call_id": id, "output": format!("Process exited with code {code}\nOutput:\n{text}")}),
        )
    };
    let filler = |v: &mut Vec<Value>, from: usize, to: usize| {
        for t in from..to {
            v.push(user(&format!("Turn {t}: look at module m{t} and fix it")));
            v.push(call(Some(&format!("c{t}")), &format!("cat m{t}.rs")));
            let body: String = (0..200)
                .map(|i| format!("line {i:04} of t{t} out\n"))
                .collect();
            v.push(output(&format!("c{t}"), 0, &body));
            v.push(item(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("Turn {t} is done and the tests pass for every crate I touched.")}]})));
        }
    };
    let sessions = [
        write(1, &mut |v| {
            v.push(user("Turn 0: set up the project"));
            v.push(call(Some("call_X"), "cargo build"));
            v.push(output("call_X", 0, "first-turn build output ok"));
            v.push(user("Turn 1: run the tests"));
            v.push(call(Some("call_X"), "cargo test"));
            v.push(output("call_X", 1, "error[E0433]: failed to resolve"));
            v.push(call(Some("call_Y"), "cargo test --fix"));
            v.push(output("call_Y", 0, "test result: ok"));
            filler(v, 2, 12);
        }),
        write(2, &mut |v| {
            v.push(call(Some("call.ctx.1"), "ls"));
            v.push(output("call.ctx.1", 0, "Cargo.toml"));
            v.push(user("Turn 0: set up the project"));
            for k in 0..8 {
                v.push(call(Some(&format!("c.{k}")), "cargo build"));
                v.push(output(&format!("c.{k}"), 0, "ok"));
            }
            filler(v, 1, 12);
        }),
        write(3, &mut |v| {
            v.push(user(""));
            filler(v, 0, 12);
        }),
        write(4, &mut |v| {
            v.push(user("Turn 0: set up the project"));
            filler(v, 1, 2);
            v.push(call(None, "cargo build"));
            filler(v, 2, 9);
            v.push(output("", 1, "late answer of a call without an id"));
            filler(v, 9, 12);
        }),
    ];
    let mut first_kept = false;
    for (n, path) in sessions.iter().enumerate() {
        for to in ["claude", "codex"] {
            for budget in ["2000", "3000"] {
                let (lazy, full, _, folding) =
                    both_ways_folding(&env, path.to_str().unwrap(), to, budget, Some("0.05"));
                assert!(
                    lazy == full,
                    "session {} -> {to} at {budget} ({folding:?}): folding changed the relay",
                    n + 1
                );
                first_kept |= n == 0 && folding == Folding::Kept;
            }
        }
    }
    assert!(first_kept, "the first session never kept its fold");
}

/// A Claude Code transcript written the awkward ways real ones are, line by line (see
/// `write_awkward_claude_session`).
struct AwkwardClaude {
    lines: Vec<String>,
    state: u64,
    id: String,
    n: u64,
    sec: u64,
}

impl AwkwardClaude {
    fn next(&mut self, n: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % n.max(1)
    }

    /// Writes a line of type `kind` hanging from `parent`, with `fields` besides the chain's;
    /// its uuid.
    fn line(&mut self, kind: &str, parent: Option<&str>, fields: Value) -> String {
        self.n += 1;
        self.sec += 1 + self.next(20);
        let uuid = format!("00000000-0000-4000-8000-{:012}", self.n);
        let mut v = json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/tmp/lazy", "sessionId": self.id, "version": "2.1.332", "type": kind, "uuid": uuid});
        for (k, x) in fields.as_object().unwrap() {
            v[k] = x.clone();
        }
        if self.next(11) != 0 {
            let s = self.sec;
            v["timestamp"] = json!(format!(
                "2026-11-05T{:02}:{:02}:{:02}.{:03}Z",
                s / 3600 % 24,
                s / 60 % 60,
                s % 60,
                self.next(1000)
            ));
        }
        let mut text = v.to_string();
        // A key written twice: the last one counts, in every parse.
        if self.next(40) == 0 {
            text = format!("{{\"parentUuid\":\"nobody\",{}", &text[1..]);
        }
        self.lines.push(text);
        uuid
    }

    fn token(&mut self) -> String {
        (0..36)
            .map(|_| char::from(b"abcdefghijkLMNOP0123456789"[self.next(26) as usize]))
            .collect()
    }
}

/// A Claude Code transcript of `turns` turns with what makes its branch and its pairs hard:
/// rewinds to an earlier turn (near or far back), progress lines and old sidechain lines off
/// the branch, parallel calls whose results hang beside the path, compactions across which
/// the chain goes on by `logicalParentUuid`, lines without a time, keys written twice, lines
/// that are not JSON, calls answered in a later turn or never (every third seed), twice,
/// results of no call,
/// todos and edits, context and command lines, secrets, rules and decisions. With `bad_json`,
/// a line halfway that a skim takes for a chain line and a parse refuses.
fn write_awkward_claude_session(
    env: &TestEnv,
    seed: u64,
    turns: usize,
    bad_json: bool,
) -> std::path::PathBuf {
    let id = format!("c1a0de00-0000-4000-8000-{seed:012x}");
    let dir = env.claude_home().join("projects/-tmp-lazy");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    let mut w = AwkwardClaude {
        lines: Vec::new(),
        state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        id: id.clone(),
        n: 0,
        sec: 0,
    };
    let mut tip: Option<String> = None;
    // Each turn's first line and what it hung from: a rewind starts a turn again from there.
    let mut starts: Vec<Option<String>> = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for t in 0..turns {
        if t > 5 && w.next(30) == 0 {
            let back = if w.next(3) == 0 {
                w.next(starts.len() as u64) as usize
            } else {
                starts.len() - 1 - w.next(4) as usize
            };
            tip = starts[back].clone();
        }
        starts.push(tip.clone());
        if w.next(6) == 0 {
            w.line(
                "progress",
                tip.as_deref(),
                json!({"data": {"type": "hook_progress", "hookName": "PostToolUse"}}),
            );
        }
        if w.next(15) == 0 {
            w.line("user", None, json!({"isSidechain": true, "message": {"role": "user", "content": format!("Sidechain task {t}")}}));
        }
        if t > 0 && w.next(9) == 0 {
            let u = w.line("user", tip.as_deref(), json!({"isMeta": true, "message": {"role": "user", "content": "<local-command-caveat>Caveat: generated</local-command-caveat>"}}));
            tip = Some(u);
        }
        let mut prompt = format!("Turn {t}: look at module m{} and fix it", w.next(40));
        match w.next(6) {
            0 => prompt.push_str(&format!(". Never touch the file f{}.rs", w.next(5))),
            1 => prompt.push_str(&format!(". NEVER TOUCH THE FILE F{}.RS", w.next(5))),
            2 => prompt.push_str(&format!(". The key is ghp_{} for now", w.token())),
            _ => {}
        }
        let content = if w.next(2) == 0 {
            json!(prompt)
        } else {
            json!([{"type": "text", "text": prompt}])
        };
        let u = w.line(
            "user",
            tip.as_deref(),
            json!({"message": {"role": "user", "content": content}}),
        );
        tip = Some(u);
        if t > 3 && w.next(12) == 0 {
            let b = w.line("system", None, json!({"subtype": "compact_boundary", "logicalParentUuid": tip, "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 150000}}));
            let s = w.line("user", Some(&b), json!({"isCompactSummary": true, "message": {"role": "user", "content": format!("Summary: {t} turns of fixing modules")}}));
            tip = Some(s);
        }
        if bad_json && t == turns / 2 {
            // A number with a leading zero: no JSON, but nothing a skim looks at.
            let u = format!("00000000-0000-4000-8000-9{:011}", t);
            w.lines.push(format!("{{\"parentUuid\":{},\"isSidechain\":false,\"type\":\"user\",\"uuid\":\"{u}\",\"n\":01,\"message\":{{\"role\":\"user\",\"content\":\"odd\"}}}}", json!(tip)));
        }
        if w.next(25) == 0 {
            w.lines
                .push("{\"type\": \"user\", \"message\": ".to_string());
        }
        let msg = format!("msg_{seed}_{t}");
        let usage = |w: &mut AwkwardClaude| json!({"input_tokens": 3 + w.next(100), "cache_read_input_tokens": 1000 * t as u64 + w.next(999), "output_tokens": 20});
        if w.next(3) == 0 {
            let u = usage(&mut w);
            let a = w.line("assistant", tip.as_deref(), json!({"message": {"id": msg, "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "thinking", "thinking": format!("Thinking about turn {t}"), "signature": "sig"}], "usage": u}}));
            tip = Some(a);
        }
        let calls = w.next(5);
        let mut made: Vec<(String, String)> = Vec::new();
        for c in 0..calls {
            // A call id of the first turn made again (and answered at once).
            let call = if seed % 3 == 1 && w.next(15) == 0 && t > 0 {
                format!("toolu_{seed}_0_0")
            } else {
                format!("toolu_{seed}_{t}_{c}")
            };
            let (name, input) = match w.next(6) {
                0 => (
                    "Edit",
                    json!({"file_path": format!("/tmp/lazy/src/m{}.rs", w.next(6)), "old_string": "a", "new_string": "b"}),
                ),
                1 => (
                    "TodoWrite",
                    json!({"todos": [{"content": format!("fix m{t}"), "status": "in_progress", "activeForm": "Fixing"}]}),
                ),
                2 => (
                    "Read",
                    json!({"file_path": format!("/tmp/lazy/src/m{}.rs", w.next(6))}),
                ),
                _ => (
                    "Bash",
                    json!({"command": format!("cargo test -p m{t} -- {c}")}),
                ),
            };
            let u = usage(&mut w);
            let a = w.line("assistant", tip.as_deref(), json!({"message": {"id": msg, "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "tool_use", "id": call, "name": name, "input": input}], "usage": u}}));
            made.push((call, a.clone()));
            tip = Some(a);
        }
        for (call, at) in made {
            let len = [0, 40, 900, 3000, 12_000][w.next(5) as usize];
            let mut body: String = (0..len / 20)
                .map(|i| format!("line {i:04} of out\n"))
                .collect();
            if w.next(7) == 0 {
                body.push_str(&format!("token ghp_{}\n", w.token()));
            }
            let shape = w.next(12);
            if shape == 0 && seed.is_multiple_of(3) {
                // Answered in a later turn, or never.
                open.push(call);
                continue;
            }
            let result = json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": body, "is_error": shape == 1}]}, "toolUseResult": {"stdout": body}});
            for _ in 0..if shape == 2 { 2 } else { 1 } {
                if w.next(4) == 0 {
                    // Beside the path: answering a call on it, the branch takes it all the same.
                    w.line("user", Some(&at), result.clone());
                } else {
                    let r = w.line("user", tip.as_deref(), result.clone());
                    tip = Some(r);
                }
            }
        }
        if seed.is_multiple_of(3) && !open.is_empty() && w.next(4) == 0 {
            let call = open.remove(w.next(open.len() as u64) as usize);
            let r = w.line("user", tip.as_deref(), json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": "late"}]}}));
            tip = Some(r);
        }
        if w.next(20) == 0 {
            let r = w.line("user", tip.as_deref(), json!({"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_none_{t}"), "content": "of no call"}]}}));
            tip = Some(r);
        }
        let answer = match w.next(4) {
            0 => format!(
                "Module fixed. I decided to keep the old API for m{}.",
                w.next(4)
            ),
            1 => format!(
                "Module fixed. I DECIDED TO KEEP THE OLD API FOR M{}.",
                w.next(4)
            ),
            _ => format!("Turn {t} is done and the tests pass for every crate I touched."),
        };
        let u = usage(&mut w);
        let a = w.line("assistant", tip.as_deref(), json!({"message": {"id": msg, "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "text", "text": answer}], "usage": u}}));
        tip = Some(a);
    }
    let text: String = w.lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A relay that folds the older turns of a Claude Code transcript while reading it writes what
/// a full read writes, whatever the branch and the pairs: the branch is chosen ahead, and a
/// line whose parse differs from the skim the branch was chosen by gives the fold up. Both
/// outcomes must happen here, or the test proves nothing.
#[test]
fn folding_a_claude_transcript_changes_nothing() {
    let env = TestEnv::empty();
    let (mut kept, mut read_again) = (0, 0);
    // Seed 1 both keeps its fold and reads again.
    for seed in chosen([1], 1..=6u64) {
        let path = write_awkward_claude_session(&env, seed, 150 + 50 * seed as usize, seed == 6);
        let (k, r) = fold_outcomes(&env, &path, seed, 6);
        (kept, read_again) = (kept + k, read_again + r);
    }
    eprintln!("folded and kept {kept} times, read again {read_again} times");
    // Of all six seeds 15 keep and 30 read again; the seeds are fixed, so the count is too.
    assert!(kept >= count(1, 15), "folded and kept only {kept} times");
    assert!(read_again > 0, "never read again after folding");
}

/// `show` and a plain export (JSONL and Markdown) of generated sessions with what makes folding
/// hard (see `write_awkward_codex_session`, `write_awkward_claude_session`,
/// `write_awkward_session_of` for pi, Qwen Code and Copilot CLI) say, byte for byte,
/// what they say holding every turn: whether the older turns were counted or written as they
/// were read, or the session was read again; also when a Claude Code branch chosen ahead is
/// not the one the parse finds before any turn was folded (seed 4).
#[test]
fn showing_and_exporting_awkward_sessions_while_folding_changes_nothing() {
    use session_relay::commands::export::{SPILL_KEEP_ENV, SPILL_NOTE};
    use session_relay::commands::show::{SHOW_FOLD_NOTE, SHOW_KEEP_ENV};
    let env = TestEnv::empty();
    let mut paths = Vec::new();
    // Seeds 1 and 4 between them make every outcome asserted below happen.
    for seed in chosen([1, 4], 1..=4u64) {
        let turns = 120 + 40 * seed as usize;
        paths.push(write_awkward_codex_session(&env, seed, turns));
        paths.push(write_awkward_claude_session(&env, seed, turns, seed == 4));
        if seed == 1 {
            for agent in ["pi", "qwen", "copilot"] {
                paths.push(write_awkward_session_of(&env, seed, agent));
            }
        }
    }
    let mut outcomes = std::collections::BTreeMap::new();
    for path in &paths {
        let p = path.to_str().unwrap();
        let commands: [(&str, &str, &str, Vec<&str>); 4] = [
            (
                "show",
                SHOW_KEEP_ENV,
                SHOW_FOLD_NOTE,
                vec!["show", p, "--json"],
            ),
            ("jsonl", SPILL_KEEP_ENV, SPILL_NOTE, vec!["export", p]),
            (
                "markdown",
                SPILL_KEEP_ENV,
                SPILL_NOTE,
                vec!["export", p, "--format", "markdown"],
            ),
            (
                "markdown",
                SPILL_KEEP_ENV,
                SPILL_NOTE,
                vec!["export", p, "--format", "markdown", "--no-redact"],
            ),
        ];
        for (what, var, note_of, args) in commands {
            // The export of a small session is not folded unasked. `show` reads a session
            // as a long one only with the variable (it then estimates tokens): keeping every
            // turn, it folds none but may still read again (a branch chosen ahead that the
            // parse did not find).
            let (reference, keeps) = match what {
                "show" => ("1000000000000", &["0", "3000"][..]),
                _ => ("", &["0", "3000", "1000000000000"][..]),
            };
            let (held, note) = noting(&env, (var, reference), &args, note_of);
            assert!(
                note.as_deref().is_none_or(
                    |n| what == "show" && n.ends_with("0 messages, then read again in full")
                ),
                "{args:?}: {note:?}"
            );
            for &keep in keeps {
                let (folded, note) = noting(&env, (var, keep), &args, note_of);
                if folded != held {
                    let diff = differing_lines(&folded, &held, 12);
                    panic!("{args:?}, keeping {keep} tokens ({note:?}): {diff:#?}");
                }
                let outcome = match note {
                    Some(n) if n.ends_with("then read again in full") => "read again",
                    Some(_) => "folded",
                    None => continue,
                };
                *outcomes.entry((what, outcome)).or_insert(0) += 1;
            }
        }
    }
    eprintln!("{outcomes:?}");
    // Every command read again after folding; `show` also kept what it counted. The exports
    // always read again here (a folded call of these sessions is answered later, or never):
    // `export_writing_older_turns_as_it_reads_writes_the_same` keeps what they wrote.
    for what in ["show", "jsonl", "markdown"] {
        assert!(
            outcomes.get(&(what, "read again")).is_some_and(|n| *n > 0),
            "{what} never read again: {outcomes:?}"
        );
    }
    assert!(
        outcomes.get(&("show", "folded")).is_some_and(|n| *n > 0),
        "show never kept its counts: {outcomes:?}"
    );
}

/// A first request followed only by what the relay leaves out (an empty answer): a full read
/// has no rest of the first turn to summarize, and a relay that folds that rest must not
/// count it either (it had said "turns 1 to N", one turn too many, without their times).
#[test]
fn folding_an_empty_rest_of_the_first_turn_changes_nothing() {
    let env = TestEnv::empty();
    let path = write_long_codex_session(&env, "0199e000-0000-7000-8000-00000000e0a4", 60);
    edit_lines(&path, |lines| {
        let at = line_with(lines, "\"user_message\"");
        // The first turn is now its request and an empty answer.
        let next = at + 1 + line_with(&lines[at + 1..], "\"role\":\"user\"");
        let empty = json!({"timestamp": "2026-11-02T08:00:01.500Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ""}]}});
        lines.splice(at + 1..next, [empty.to_string()]);
    });
    let mut kept = 0;
    for to in session_relay::adapters::names() {
        for (budget, keep) in [("1000", "0.3"), ("2000", "1"), ("4000", "0.3")] {
            if folded_as_read_in_full(&env, &path, 0, to, budget, keep) == Folding::Kept {
                kept += 1;
            }
        }
    }
    assert!(kept >= 3, "folded and kept only {kept} times");
}

/// A relay whose budget cannot hold what is always kept fails with what a full read needs,
/// also when it read the session in part (a long output before the first request, cut short
/// while reading, had made the need smaller by a token).
#[test]
fn a_budget_too_small_says_what_a_full_read_needs() {
    let env = TestEnv::empty();
    let dir = env.claude_home().join("projects/-tmp-lazy");
    std::fs::create_dir_all(&dir).unwrap();
    let id = "5e55b0b0-0000-4000-8000-00000000b0d9";
    let path = dir.join(format!("{id}.jsonl"));
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut line = |n: usize, kind: &str, message: Value| {
        let uuid = format!("00000000-0000-4000-8000-{n:012}");
        lines.push(json!({"parentUuid": parent, "isSidechain": false, "type": kind, "uuid": uuid, "sessionId": id, "timestamp": format!("2026-11-02T08:00:{n:02}.000Z"), "cwd": "/tmp/lazy", "message": message}).to_string());
        parent = Some(uuid);
    };
    line(
        1,
        "assistant",
        json!({"id": "m0", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls -R"}}]}),
    );
    let output = format!(
        "listing follows\n{}",
        "src/lib.rs src/main.rs tests/cli.rs ".repeat(60)
    );
    line(
        2,
        "user",
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]}),
    );
    for t in 0..6 {
        line(
            3 + 2 * t,
            "user",
            json!({"role": "user", "content": format!("Request {t}: tidy module m{t} and say what changed")}),
        );
        line(
            4 + 2 * t,
            "assistant",
            json!({"id": format!("m{}", t + 1), "role": "assistant", "content": [{"type": "text", "text": format!("Module m{t} is tidy: two helpers merged, one test added.")}]}),
        );
    }
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut failed = 0;
    for to in ["claude", "codex"] {
        for budget in ["200", "300", "400"] {
            let run = |full: bool| {
                let out = reading(&env, full)
                    .args([
                        "export",
                        path.to_str().unwrap(),
                        "--to",
                        to,
                        "--budget",
                        budget,
                    ])
                    .args(["--cwd", "/tmp/lazy"])
                    .output()
                    .unwrap();
                let stderr: String = String::from_utf8(out.stderr)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.starts_with("session-relay:"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                (
                    out.status.code(),
                    String::from_utf8(out.stdout).unwrap(),
                    stderr,
                )
            };
            let (full, part) = (run(true), run(false));
            assert_eq!(part, full, "-> {to} at {budget}");
            failed += usize::from(full.0 != Some(0) && full.2.contains("is too small"));
        }
    }
    assert!(failed >= 2, "only {failed} relays were too small");
}

/// Rewrites the session file at `path` with its lines as `edit` leaves them.
fn edit_lines(path: &std::path::Path, edit: impl FnOnce(&mut Vec<String>)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    edit(&mut lines);
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Where the first of `lines` holding `needle` is.
fn line_with(lines: &[String], needle: &str) -> usize {
    lines
        .iter()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line holds {needle}"))
}

/// The first `n` pairs of lines in which `a` and `b` differ, for a failure's message.
fn differing_lines<'a>(a: &'a str, b: &'a str, n: usize) -> Vec<(&'a str, &'a str)> {
    a.lines()
        .zip(b.lines())
        .filter(|(x, y)| x != y)
        .take(n)
        .collect()
}

/// A long Gemini CLI session written as the CLI writes one, with what makes its messages final
/// only later: each gemini message written again with its tool calls (before or after the
/// CLI's copy of their results), `$set` records, a `$set.messages` that rewrites the list with
/// new ids, `$rewindTo` (to a message or to an unknown id), calls answered in a later turn or
/// never, secrets in outputs, todos, file writes, info and error lines, and a malformed line.
fn write_awkward_gemini_session(env: &TestEnv, seed: u64, turns: usize) -> std::path::PathBuf {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n.max(1)
    };
    let id = format!("9e000000-0000-4000-8000-{seed:012x}");
    let dir = env.home("gemini").join(".gemini/tmp/lazy/chats");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("session-2026-11-04T08-00-9e{seed:06x}.jsonl"));
    let mut lines: Vec<String> = Vec::new();
    let mut sec = 0u64;
    let mut time = |next: &mut dyn FnMut(u64) -> u64| {
        sec += 1 + next(20);
        format!(
            "2026-11-04T{:02}:{:02}:{:02}.{:03}Z",
            8 + sec / 3600 % 12,
            sec / 60 % 60,
            sec % 60,
            next(1000)
        )
    };
    let start = time(&mut next);
    lines.push(json!({"sessionId": id, "projectHash": "ab".repeat(32), "startTime": start, "lastUpdated": start, "kind": "main"}).to_string());
    let context = json!({"id": "d04923d38bb0f6017037e74183378ef4", "timestamp": start, "type": "user",
        "content": [{"text": "<session_context>\nThis is the Gemini CLI.\nThe project's temporary directory is: /tmp/lazy\n</session_context>"}]});
    lines.push(json!({"$set": {"messages": [context.clone()]}}).to_string());
    // The messages as the CLI holds them, to rewrite them with `$set.messages`.
    let mut held: Vec<Value> = vec![context];
    let mut n = 0u64;
    let mut mid = |prefix: &str| {
        n += 1;
        format!("{prefix}-{seed}-{n:06}")
    };
    let mut open: Vec<(String, String)> = Vec::new();
    for t in 0..turns {
        let ts = time(&mut next);
        let mut prompt = format!("Turn {t}: look at module m{} and fix it", next(40));
        if next(6) == 0 {
            prompt.push_str(&format!(". Never touch the file f{}.rs", next(5)));
        }
        let content = if next(5) == 0 {
            json!(prompt)
        } else {
            json!([{"text": prompt}])
        };
        let user = json!({"id": mid("u"), "timestamp": ts, "type": "user", "content": content});
        lines.push(user.to_string());
        held.push(user);
        lines.push(json!({"$set": {"lastUpdated": ts}}).to_string());
        // An earlier call answered now, or a result nothing called.
        if next(12) == 0 {
            let (call, name) = open
                .pop()
                .unwrap_or_else(|| (format!("lost_{t}"), "read_file".to_string()));
            let copy = json!({"id": mid("r"), "timestamp": time(&mut next), "type": "user",
                "content": [{"functionResponse": {"id": call, "name": name, "response": {"output": format!("late output of {t}")}}}]});
            lines.push(copy.to_string());
            held.push(copy);
        }
        for step in 0..1 + next(3) {
            let gid = mid("g");
            let gts = time(&mut next);
            let thoughts = if next(3) == 0 {
                json!([{"subject": format!("Step {step}"), "description": "Looking at it.", "timestamp": gts}])
            } else {
                json!([])
            };
            let mut g = json!({"id": gid, "timestamp": gts, "type": "gemini",
                "content": if next(2) == 0 { format!("Working on turn {t}, step {step}.") } else { String::new() },
                "thoughts": thoughts, "model": "gemini-2.5-flash",
                "tokens": if seed == 4 || next(4) == 0 { Value::Null } else { json!({"input": 1000 + 37 * t as u64, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 1020 + 37 * t as u64}) }});
            lines.push(g.to_string());
            let mut calls = Vec::new();
            let mut copies = Vec::new();
            for c in 0..next(3) {
                let name = [
                    "run_shell_command",
                    "read_file",
                    "write_file",
                    "write_todos",
                ][next(4) as usize];
                let call_id = format!("{name}__{name}_{t}_{step}_{c}");
                let args = match name {
                    "run_shell_command" => json!({"command": format!("cargo test m{}", next(40))}),
                    "write_file" => {
                        json!({"file_path": format!("/tmp/lazy/src/f{}.rs", next(30)), "content": "fn main() {}\n"})
                    }
                    "write_todos" => {
                        let status = ["pending", "in_progress", "completed"][next(3) as usize];
                        json!({"todos": [{"description": format!("todo {t}"), "status": status}]})
                    }
                    _ => json!({"file_path": format!("/tmp/lazy/src/f{}.rs", next(30))}),
                };
                let mut output: String = (0..5 + next(60))
                    .map(|k| format!("line {k} of output {t}.{step}.{c}\n"))
                    .collect();
                if next(10) == 0 {
                    output
                        .push_str("export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345\n");
                }
                if next(20) == 0 {
                    // Longer than a read keeps of an output.
                    output.push_str(&"a long output line\n".repeat(1500));
                }
                if name == "run_shell_command" {
                    output = format!(
                        "<untrusted_context>\nOutput: {output}Exit Code: {}\n</untrusted_context>",
                        next(3)
                    );
                }
                let status = ["success", "success", "success", "error"][next(4) as usize];
                let response = if status == "error" {
                    json!({"error": format!("failed: {t}")})
                } else {
                    json!({"output": output})
                };
                let fr = json!({"functionResponse": {"id": call_id, "name": name, "response": response}});
                let mut call = json!({"id": call_id, "name": name, "args": args, "status": status, "timestamp": time(&mut next)});
                if next(15) == 0 {
                    // Answered only later, or never.
                    open.push((call_id.clone(), name.to_string()));
                } else {
                    call["result"] = json!([fr]);
                }
                calls.push(call);
                copies.push(fr);
            }
            if calls.is_empty() {
                held.push(g);
                continue;
            }
            g["toolCalls"] = json!(calls);
            let copy = json!({"id": mid("r"), "timestamp": time(&mut next), "type": "user", "content": copies});
            // The CLI writes the message again with its calls, then its copy of the results;
            // the other way round too, so that a message waits for its last version.
            if next(3) == 0 {
                lines.push(copy.to_string());
                lines.push(json!({"$set": {"lastUpdated": gts}}).to_string());
                lines.push(g.to_string());
            } else {
                lines.push(g.to_string());
                lines.push(copy.to_string());
            }
            held.push(g);
            held.push(copy);
        }
        match next(40) {
            0 => {
                let info = json!({"id": mid("i"), "timestamp": time(&mut next), "type": "info", "content": "Request cancelled."});
                lines.push(info.to_string());
                held.push(info);
            }
            1 => {
                let err = json!({"id": mid("e"), "timestamp": time(&mut next), "type": "error", "content": format!("quota exceeded at {t}")});
                lines.push(err.to_string());
                held.push(err);
            }
            2 if t > 10 => {
                // A rewind to a message a few back, or to an id never written (drops all).
                let back = held.len() - 1 - next(4) as usize;
                let to = if seed == 3 && t < 30 {
                    "no-such-id".to_string()
                } else {
                    held[back]["id"].as_str().unwrap().to_string()
                };
                lines.push(json!({"$rewindTo": to}).to_string());
                match held.iter().position(|m| m["id"] == json!(to)) {
                    Some(at) => held.truncate(at),
                    None => held.clear(),
                }
            }
            3 if t > 10 => {
                // The history rewritten with new ids (as after a cancelled call): the context,
                // then the turns from one of the oldest requests on.
                let requests: Vec<usize> = (1..held.len())
                    .filter(|&i| held[i]["id"].as_str().is_some_and(|i| i.starts_with("u-")))
                    .collect();
                let from = requests
                    .get(next(requests.len() as u64 / 4 + 1) as usize)
                    .copied()
                    .unwrap_or(held.len());
                let mut list: Vec<Value> = held[..1.min(held.len())].to_vec();
                list.extend_from_slice(&held[from..]);
                for m in &mut list[1..] {
                    m["id"] = json!(mid("s"));
                }
                lines.push(
                    json!({"$set": {"messages": list.clone(), "lastUpdated": time(&mut next)}})
                        .to_string(),
                );
                held = list;
            }
            4 => lines.push("{\"id\": \"broken".to_string()),
            _ => {}
        }
    }
    lines.push(json!({"$set": {"summary": format!("Awkward session {seed}")}}).to_string());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// Folding the older turns of a Gemini CLI session while reading it changes nothing in a
/// relay, a `show` or an export, however its records rewrite, replace and rewind messages.
/// The relays must both keep their fold and read again, or the test proves nothing.
#[test]
fn folding_a_gemini_session_changes_nothing() {
    use session_relay::commands::export::{SPILL_KEEP_ENV, SPILL_NOTE};
    use session_relay::commands::show::{SHOW_FOLD_NOTE, SHOW_KEEP_ENV};
    let env = TestEnv::empty();
    let (mut kept, mut read_again) = (0, 0);
    let mut outcomes = std::collections::BTreeMap::new();
    // Seed 2 keeps its fold in every command and reads again in a relay.
    for seed in chosen([2], 1..=4u64) {
        let path = write_awkward_gemini_session(&env, seed, 120 + 40 * seed as usize);
        // All twelve relays: seed 2 reads again in only one of them.
        let (k, r) = fold_outcomes(&env, &path, seed, 12);
        (kept, read_again) = (kept + k, read_again + r);
        let p = path.to_str().unwrap();
        let commands: [(&str, &str, &str, Vec<&str>); 3] = [
            (
                "show",
                SHOW_KEEP_ENV,
                SHOW_FOLD_NOTE,
                vec!["show", p, "--json"],
            ),
            ("jsonl", SPILL_KEEP_ENV, SPILL_NOTE, vec!["export", p]),
            (
                "markdown",
                SPILL_KEEP_ENV,
                SPILL_NOTE,
                vec!["export", p, "--format", "markdown"],
            ),
        ];
        for (what, var, note_of, args) in commands {
            let reference = if what == "show" { "1000000000000" } else { "" };
            let (whole, _) = noting(&env, (var, reference), &args, note_of);
            for keep in ["0", "3000"] {
                let (folded, note) = noting(&env, (var, keep), &args, note_of);
                if folded != whole {
                    let diff = differing_lines(&folded, &whole, 12);
                    panic!("{args:?}, keeping {keep} tokens ({note:?}): {diff:#?}");
                }
                let outcome = match note {
                    Some(n) if n.ends_with("then read again in full") => "read again",
                    Some(_) => "folded",
                    None => "not folded",
                };
                *outcomes.entry((what, outcome)).or_insert(0) += 1;
            }
        }
    }
    eprintln!("relays: folded and kept {kept} times, read again {read_again} times; {outcomes:?}");
    assert!(kept >= count(1, 10), "folded and kept only {kept} times");
    assert!(read_again > 0, "never read again after folding");
    // `show` keeps its counts though these sessions record their context and never compact:
    // its check reaches back to the first request, whose messages were counted as they went.
    assert_eq!(
        outcomes.get(&("show", "read again")),
        None,
        "show read again: {outcomes:?}"
    );
    for what in ["show", "jsonl", "markdown"] {
        assert!(
            outcomes.get(&(what, "folded")).is_some_and(|n| *n > 0),
            "{what} never kept its fold: {outcomes:?}"
        );
    }
}

/// A Gemini CLI session as the CLI writes one that was resumed (`Layout::Resumed`): at the
/// resume it writes the whole history again as one `$set.messages` line, here longer than a
/// read takes whole (`jsonl::LONG_LINE`, or `MAX_LINE` with `past_max_line`). The same
/// conversation with each message on its own line (`Layout::Lines`) is what it must read as.
/// The long line has its keys in either order, a message without an id, a non-message, CJK,
/// escapes and invalid UTF-8; after it, a message of the list is written again and new turns
/// follow, as after a real resume.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Lines,
    Resumed,
}

fn write_resumed_gemini_session(
    env: &TestEnv,
    seed: u64,
    layout: Layout,
    past_max_line: bool,
) -> std::path::PathBuf {
    use session_relay::jsonl::{LONG_LINE, MAX_LINE};
    let mut rng = crate::common::Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // Of one length, as the paths a relay's brief quotes must be for the same fit.
    let name = if layout == Layout::Lines {
        "by-line"
    } else {
        "resumed"
    };
    // Told apart in the listing, which shows one file of a session id.
    let id = format!("9e000000-0000-4000-800{}-{seed:012x}", layout as u8);
    let dir = env.home("gemini").join(format!(".gemini/tmp/{name}/chats"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("session-2026-11-04T08-00-9e{seed:06x}.jsonl"));
    let mut sec = 0u64;
    let mut time = |rng: &mut crate::common::Rng| {
        sec += 1 + rng.below(20);
        format!(
            "2026-11-04T{:02}:{:02}:{:02}.{:03}Z",
            8 + sec / 3600 % 12,
            sec / 60 % 60,
            sec % 60,
            rng.below(1000)
        )
    };
    let start = time(&mut rng);
    let meta = json!({"sessionId": id, "projectHash": "cd".repeat(32), "startTime": start, "lastUpdated": start, "kind": "main"});
    let context = json!({"id": "d04923d38bb0f6017037e74183378ef4", "timestamp": start, "type": "user",
        "content": [{"text": "<session_context>\nThis is the Gemini CLI.\nWorkspace Directories:\n  - /tmp/resumed\n</session_context>"}]});
    // The history up to the resume must be longer than a line read whole.
    let before = if past_max_line { MAX_LINE } else { LONG_LINE } + (1 << 20);
    let mut history: Vec<Value> = vec![context];
    let mut size = 0usize;
    let mut turn = |t: usize, rng: &mut crate::common::Rng, out: &mut Vec<Value>| -> usize {
        let mut written = 0;
        let prompt = format!(
            "Turn {t}: fix module m{} — 日本語 \u{1f600} \"quoted\"",
            rng.below(40)
        );
        out.push(
            json!({"id": format!("u-{t}"), "timestamp": time(rng), "type": "user",
            "content": if rng.chance(30) { json!(prompt) } else { json!([{"text": prompt}]) }}),
        );
        let mut calls = Vec::new();
        let mut copies = Vec::new();
        for c in 0..rng.below(3) {
            let call_id = format!("run_shell_command__run_shell_command_{t}_{c}");
            let lines = if rng.chance(10) {
                20_000
            } else {
                20 + rng.below(400)
            };
            let mut output: String = (0..lines)
                .map(|k| format!("line {k} of {t}.{c} \u{1b}[31mred\u{1b}[0m\ttab\n"))
                .collect();
            if rng.chance(15) {
                output.push_str("export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345\n");
            }
            if rng.chance(5) {
                // Replaced by invalid UTF-8 once serialised.
                output.push_str("BAD-BYTES-HERE\n");
            }
            written += output.len();
            let fr = json!({"functionResponse": {"id": call_id, "name": "run_shell_command", "response": {"output": output}}});
            calls.push(json!({"id": call_id, "name": "run_shell_command", "args": {"command": format!("cargo test m{t}")},
                "status": "success", "timestamp": time(rng), "result": [fr.clone()]}));
            copies.push(fr);
        }
        let mut g = json!({"id": format!("g-{t}"), "timestamp": time(rng), "type": "gemini",
            "content": format!("Working on turn {t}."), "thoughts": [], "model": "gemini-2.5-flash",
            "tokens": {"input": 1000 + 37 * t, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 1020 + 37 * t}});
        if !calls.is_empty() {
            g["toolCalls"] = json!(calls);
        }
        out.push(g);
        if !copies.is_empty() {
            out.push(json!({"id": format!("r-{t}"), "timestamp": time(rng), "type": "user", "content": copies}));
        }
        written
    };
    let mut t = 0;
    while size < before {
        size += turn(t, &mut rng, &mut history);
        t += 1;
    }
    let mut after = Vec::new();
    for k in 0..4 {
        turn(t + k, &mut rng, &mut after);
    }
    // A message of the list written again after the resume, as the CLI rewrites one.
    let mut again = history[history.len() / 2].clone();
    again["content"] = json!("rewritten after the resume");
    let line = |v: &Value| v.to_string();
    let mut text: Vec<u8> = Vec::new();
    let push = |text: &mut Vec<u8>, s: String| {
        // Invalid UTF-8 in place of the marker: a byte that starts nothing, a cut character.
        for (k, part) in s.split("BAD-BYTES-HERE").enumerate() {
            if k > 0 {
                text.extend_from_slice(b"\xff\xe6\x97");
            }
            text.extend_from_slice(part.as_bytes());
        }
        text.push(b'\n');
    };
    push(&mut text, meta.to_string());
    for m in &history {
        push(&mut text, line(m));
    }
    if layout == Layout::Resumed {
        push(&mut text, json!({"$set": {"sessionId": id}}).to_string());
        // Not a message: left out of the list as the CLI leaves it out.
        let mut list = history.clone();
        list.insert(1, json!({"type": "user", "content": "no id"}));
        list.push(json!(7));
        let list = serde_json::to_string(&list).unwrap();
        let stamp = json!(time(&mut rng)).to_string();
        let set = if seed.is_multiple_of(2) {
            format!("{{\"$set\": {{\"messages\": {list}, \"lastUpdated\": {stamp}}}}}")
        } else {
            format!(
                "{{ \"other\": [1, {{\"a\": 2}}], \"$set\" : {{ \"lastUpdated\" : {stamp} , \"messages\" : {list} }} }}"
            )
        };
        assert!(
            set.len() > before,
            "the resume's line is long: {}",
            set.len()
        );
        // Around it, whitespace a line read whole is trimmed of, JSON's or not.
        let set = match seed {
            2 => format!("\u{c}\u{a0} {set}\t\u{3000}"),
            _ => set,
        };
        push(&mut text, set);
    }
    push(&mut text, line(&again));
    for m in &after {
        push(&mut text, line(m));
    }
    push(
        &mut text,
        json!({"$set": {"lastUpdated": "2026-11-04T20:00:00.000Z"}}).to_string(),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// What a command says of a session, without what differs by construction between a history
/// written as one line and as many: line numbers, the line count, the `$set` records, paths.
fn without_lines(out: &str) -> String {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for key in ["line", "lines", "source_path", "path", "sha256", "$set"] {
                    o.remove(key);
                }
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            Value::String(s) => {
                // "invalid UTF-8 on 14 line(s), read lossily (first at line 12)"
                if let Some(at) = s.find("invalid UTF-8 on ") {
                    s.truncate(at + "invalid UTF-8".len());
                }
            }
            _ => {}
        }
    }
    let strip_text = |text: &str| -> String {
        match serde_json::from_str::<Value>(text) {
            Ok(mut v) => {
                strip(&mut v);
                v.to_string()
            }
            Err(_) if text.starts_with("- Source file:") => String::new(),
            Err(_) => text.to_string(),
        }
    };
    if let Ok(mut v) = serde_json::from_str::<Value>(out) {
        strip(&mut v);
        return serde_json::to_string_pretty(&v).unwrap();
    }
    out.lines().map(strip_text).collect::<Vec<_>>().join("\n")
}

/// A resumed Gemini CLI session, whose whole history is one `$set.messages` line longer than a
/// read takes whole, lists, shows, exports and relays as the same history written a message
/// a line does, folded or not; before, past 32 MB that line was cut to its ends and the
/// conversation lost, and below it parsed whole at once. Sessions of 9 to 33 MB, read some
/// twenty times: the slow tier's (the default tier reads long `$set` lines in
/// `a_long_line_cut_off_or_after_a_byte_order_mark_reads_as_a_short_one`).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier: cargo test --features slow-tests"
)]
fn a_history_written_again_as_one_long_line_reads_as_its_lines_do() {
    use session_relay::commands::show::{SHOW_FOLD_NOTE, SHOW_KEEP_ENV};
    let env = TestEnv::empty();
    for (seed, past_max_line) in [(1, false), (2, false), (3, true)] {
        let lines = write_resumed_gemini_session(&env, seed, Layout::Lines, past_max_line);
        let resumed = write_resumed_gemini_session(&env, seed, Layout::Resumed, past_max_line);
        let (l, r) = (lines.to_str().unwrap(), resumed.to_str().unwrap());
        let mut commands: Vec<Vec<&str>> = vec![vec!["show", "--json"]];
        if !past_max_line {
            commands.extend([
                vec!["export"],
                vec!["export", "--format", "markdown"],
                vec![
                    "export", "--to", "codex", "--budget", "20000", "--cwd", "/tmp/x",
                ],
                vec![
                    "export", "--to", "claude", "--budget", "6000", "--cwd", "/tmp/x",
                ],
            ]);
        }
        for args in commands {
            let run = |p: &str, env_var: Option<(&str, &str)>| {
                let mut cmd = env.cmd();
                if let Some((k, v)) = env_var {
                    cmd.env(k, v)
                        .env(session_relay::adapter::PART_READ_ENV, "1");
                }
                let out = cmd.arg(args[0]).arg(p).args(&args[1..]).output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(out.status.success(), "{args:?} {p}: {err}");
                (String::from_utf8(out.stdout).unwrap(), err)
            };
            let (want, _) = run(l, None);
            let (got, err) = run(r, None);
            if args[0] == "export" {
                assert!(err.contains("invalid UTF-8"), "{args:?}: {err}");
            }
            let id = |layout: Layout| format!("9e000000-0000-4000-800{}-{seed:012x}", layout as u8);
            let (id_l, id_r) = (id(Layout::Lines), id(Layout::Resumed));
            let as_lines = |out: &str| without_lines(&out.replace(r, l).replace(&id_r, &id_l));
            let (want, got) = (without_lines(&want), as_lines(&got));
            if want != got {
                panic!(
                    "{args:?} seed {seed}: {:#?}",
                    differing_lines(&got, &want, 4)
                );
            }
            if args[0] == "show" {
                // Folded: the long line's messages go as the turns they are in are let go.
                let (folded, err) = run(r, Some((SHOW_KEEP_ENV, "0")));
                let note = err.lines().find(|l| l.starts_with(SHOW_FOLD_NOTE));
                assert!(
                    note.is_some_and(|n| !n.ends_with("then read again in full")),
                    "show did not keep its fold: {err}"
                );
                assert_eq!(as_lines(&folded), want, "show folded, seed {seed}");
                let shown: Value = serde_json::from_str(&folded).unwrap();
                assert!(shown["messages"].as_u64().unwrap() > 100, "{shown}");
            }
        }
        let listed = |home: &str| {
            let sessions = env.list_json(&["list", "--all", "--agent", "gemini", "--json"]);
            let s = sessions
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["path"].as_str().unwrap().contains(home))
                .unwrap()
                .clone();
            (
                s["title"].clone(),
                s["messages"].clone(),
                s["updated"].clone(),
            )
        };
        assert_eq!(listed("/resumed/"), listed("/by-line/"), "seed {seed}");
    }
}

/// A long last line cut off without a newline is an agent still writing, as a short one is:
/// ignored and noted, not reported as malformed. The listing and `show` agree on a first line
/// that starts with a byte order mark, long or short.
#[test]
fn a_long_line_cut_off_or_after_a_byte_order_mark_reads_as_a_short_one() {
    let env = TestEnv::empty();
    let dir = env.home("gemini").join(".gemini/tmp/cut/chats");
    std::fs::create_dir_all(&dir).unwrap();
    let meta = json!({"sessionId": "9e000000-0000-4000-8000-00000000c0de", "projectHash": "ef".repeat(32),
        "startTime": "2026-11-04T08:00:00.000Z", "lastUpdated": "2026-11-04T09:00:00.000Z", "summary": "Cut session"});
    let user = json!({"id": "u1", "timestamp": "2026-11-04T08:01:00.000Z", "type": "user", "content": [{"text": "first request"}]});
    let answer = |output: usize| {
        json!({"id": "g1", "timestamp": "2026-11-04T08:02:00.000Z", "type": "gemini", "content": "answered",
            "toolCalls": [{"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
                "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "x".repeat(output)}}}]}]})
    };
    let mut seen = Vec::new();
    for (name, output) in [("short", 100), ("long", session_relay::jsonl::LONG_LINE)] {
        // A resume's list cut off mid-write, with no newline.
        let set = json!({"$set": {"messages": [user.clone(), answer(output)]}}).to_string();
        let cut = &set[..set.len() - 40];
        let path = dir.join(format!("session-2026-11-04T08-00-{name}.jsonl"));
        std::fs::write(&path, format!("{meta}\n{user}\n{cut}")).unwrap();
        let v = env.json(&["show", path.to_str().unwrap(), "--json"]);
        assert_eq!(v["session"]["stats"]["malformed_lines"], 0, "{name}: {v}");
        assert_eq!(
            v["session"]["extra"]["truncated_last_line"], true,
            "{name}: {v}"
        );
        seen.push((v["messages"].clone(), v["session"]["warnings"].clone()));
        // A byte order mark before the metadata line, the conversation in one long line or not.
        let bom = dir.join(format!("session-2026-11-04T09-00-{name}.jsonl"));
        let whole = json!({"$set": {"messages": [user.clone(), answer(output)]}});
        // Its own session id: the listing shows one file of an id.
        let mut meta = meta.clone();
        meta["sessionId"] = json!(format!(
            "9e000000-0000-4000-8000-0000000b0{}",
            output % 10 + 10
        ));
        std::fs::write(&bom, format!("\u{feff}{meta}\n{whole}\n")).unwrap();
        let shown = env.json(&["show", bom.to_str().unwrap(), "--json"]);
        let listed = env.list_json(&["list", "--all", "--agent", "gemini", "--json"]);
        let listed = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["path"] == json!(bom.to_str().unwrap()))
            .unwrap_or_else(|| panic!("{name}: {listed}"))
            .clone();
        assert_eq!(shown["session"]["title"], "Cut session", "{name}");
        for key in ["id", "title", "updated"] {
            assert_eq!(listed[key], shown["session"][key], "{name}: {key}");
        }
        assert_eq!(listed["messages"], shown["messages"], "{name}");
    }
    assert_eq!(seen[0], seen[1]);
}

/// An awkward Codex session (`write_awkward_codex_session`) relayed whole into `to` (pi, Qwen
/// Code or Copilot CLI), then made awkward in that agent's own ways: pi and Qwen Code get a
/// branch left behind in the middle (entries off the path, which the read must not parse into
/// the session), Qwen Code also a record written in two parts under one uuid and a
/// `chat_compression` a third of the way in (what comes before it is replaced), and each a
/// malformed line.
fn write_awkward_session_of(env: &TestEnv, seed: u64, to: &str) -> std::path::PathBuf {
    let source = write_awkward_codex_session(env, seed, 150 + 40 * seed as usize);
    let r = env.json(&[
        "relay",
        source.to_str().unwrap(),
        "--to",
        to,
        "--budget",
        "500000000",
        "--cwd",
        "/tmp/lazy",
        "--json",
    ]);
    let path = std::path::PathBuf::from(r["target"]["path"].as_str().unwrap());
    let id_key = match to {
        "pi" => "id",
        _ => "uuid",
    };
    let parent_key = match to {
        "pi" => "parentId",
        _ => "parentUuid",
    };
    edit_lines(&path, |lines| {
        let n = lines.len();
        if to != "copilot" {
            // Four entries copied as a branch from the one before them, left behind: nothing
            // after chains to them.
            let at = n / 2;
            let parent: Value = serde_json::from_str(&lines[at - 1]).unwrap();
            let mut prev = parent[id_key].clone();
            let copies: Vec<String> = (0..4)
                .map(|k| {
                    let mut v: Value = serde_json::from_str(&lines[at + k]).unwrap();
                    let id = format!("{:08x}-0000-4000-8000-{seed:04x}{k:08x}", 0xab00 + k);
                    v[parent_key] = prev.clone();
                    v[id_key] = json!(id);
                    prev = json!(id);
                    v.to_string()
                })
                .collect();
            lines.splice(at..at, copies);
        }
        if to == "qwen" {
            // The first answer with two parts or more, written as two records of one uuid.
            let at = (1..lines.len())
                .find(|&i| {
                    let v: Value = serde_json::from_str(&lines[i]).unwrap();
                    v["type"] == "assistant"
                        && v["message"]["parts"]
                            .as_array()
                            .is_some_and(|p| p.len() > 1)
                })
                .expect("an answer with two parts");
            let mut first: Value = serde_json::from_str(&lines[at]).unwrap();
            let mut second = first.clone();
            let parts = first["message"]["parts"].as_array().unwrap().clone();
            first["message"]["parts"] = json!(parts[..1]);
            second["message"]["parts"] = json!(parts[1..]);
            lines.splice(at..=at, [first.to_string(), second.to_string()]);
            // A compression a third of the way in, on the chain, before a prompt: the turns
            // after it may fold (calls before the first request keep a fold from starting).
            let at = (lines.len() / 3..lines.len())
                .find(|&i| {
                    let v: Value = serde_json::from_str(&lines[i]).unwrap_or_default();
                    v["type"] == "user" && !lines[i].contains("functionResponse")
                })
                .expect("a prompt after the first third");
            let before: Value = serde_json::from_str(&lines[at - 1]).unwrap();
            let mut after: Value = serde_json::from_str(&lines[at]).unwrap();
            let uuid = format!("c0c0c0c0-0000-4000-8000-{seed:012x}");
            let compression = json!({
                "uuid": uuid, "parentUuid": before["uuid"], "sessionId": before["sessionId"],
                "timestamp": before["timestamp"], "type": "system", "subtype": "chat_compression",
                "cwd": "/tmp/lazy", "version": "0.24.4",
                "systemPayload": {"compressedHistory": [
                    {"role": "user", "parts": [{"text": "What came before, in short."}]},
                    {"role": "model", "parts": [{"text": "Understood."}]}
                ]}
            });
            after["parentUuid"] = json!(uuid);
            lines.splice(at..=at, [compression.to_string(), after.to_string()]);
        }
        let at = lines.len() / 4;
        lines.insert(at, "{\"type\": \"cut off".to_string());
    });
    path
}

/// A relay that folds the older turns of a pi, Qwen Code or Copilot CLI session while reading
/// it writes what a full read writes, whatever the branches, parts and pairs: the branch is
/// found in a first pass, only its entries are parsed in the second, and a fold whose turn
/// pairs with a later one is given up. Each agent must both fold and keep the fold, and fold
/// and read again, or the test proves nothing.
#[test]
fn folding_a_pi_qwen_or_copilot_session_changes_nothing() {
    let env = TestEnv::empty();
    for agent in ["pi", "qwen", "copilot"] {
        let (mut kept, mut read_again) = (0, 0);
        for seed in chosen([1], 1..=4u64) {
            let path = write_awkward_session_of(&env, seed, agent);
            let (k, r) = fold_outcomes(&env, &path, seed, 6);
            (kept, read_again) = (kept + k, read_again + r);
        }
        eprintln!("{agent}: folded and kept {kept} times, read again {read_again} times");
        assert!(kept > 0, "{agent}: never folded and kept");
        assert!(read_again > 0, "{agent}: never read again after folding");
    }
}

/// An OpenCode session folds as they do, read from its rows in the database: a relay that
/// folds its older turns as it converts them writes what a full read writes. It must both fold
/// and keep the fold, and fold and read again, or the test proves nothing.
#[test]
fn folding_an_opencode_session_changes_nothing() {
    let env = TestEnv::empty();
    let (mut kept, mut read_again) = (0, 0);
    for seed in chosen([1], 1..=4u64) {
        let source = write_awkward_codex_session(&env, seed, 150 + 40 * seed as usize);
        let r = env.json(&[
            "relay",
            source.to_str().unwrap(),
            "--to",
            "opencode",
            "--budget",
            "500000000",
            "--cwd",
            "/tmp/lazy",
            "--json",
        ]);
        let id = r["target"]["id"].as_str().unwrap();
        let path = env.home("opencode").join("opencode.db").join(id);
        let (k, r) = fold_outcomes(&env, &path, seed, 6);
        (kept, read_again) = (kept + k, read_again + r);
    }
    eprintln!("opencode: folded and kept {kept} times, read again {read_again} times");
    assert!(kept > 0, "never folded and kept");
    assert!(read_again > 0, "never read again after folding");
}

/// A Codex session whose turns make parallel calls (1 to 4, `seed` choosing): shell commands,
/// which every agent has a tool for, and a lookup no other agent has, which travels as text;
/// their results come in any order, some never. Returns its path.
fn write_parallel_calls_session(env: &TestEnv, seed: u64, turns: usize) -> std::path::PathBuf {
    let mut rng = crate::common::Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let id = format!("0199f0f0-0000-7000-8000-0000000a{seed:04x}");
    let dir = env.codex_home().join("sessions/2026/11/06");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("rollout-2026-11-06T08-00-00-{id}.jsonl"));
    let mut lines = vec![
        json!({"type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-06T08:00:00.000Z", "cwd": "/tmp/lazy", "cli_version": "0.171.0", "source": "cli"}}),
    ];
    let item = |payload: Value| json!({"type": "response_item", "payload": payload});
    for t in 0..turns {
        lines.push(item(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("Turn {t}: check module m{t} and the docs for it")}]}),
        ));
        let calls: Vec<String> = (0..1 + rng.index(4))
            .map(|c| format!("call_{t}_{c}"))
            .collect();
        for call in &calls {
            let payload = if rng.chance(40) {
                json!({"type": "function_call", "name": "docs_lookup", "arguments": json!({"topic": format!("m{t}")}).to_string(), "call_id": call})
            } else {
                json!({"type": "function_call", "name": "exec_command", "arguments": json!({"cmd": format!("cargo test -p m{t}")}).to_string(), "call_id": call})
            };
            lines.push(item(payload));
        }
        let mut answered: Vec<&String> = calls.iter().filter(|_| !rng.chance(15)).collect();
        while !answered.is_empty() {
            let call = answered.remove(rng.index(answered.len()));
            let body: String = (0..[2, 40, 200][rng.index(3)])
                .map(|i| format!("line {i:04} of {call}\n"))
                .collect();
            lines.push(item(
                json!({"type": "function_call_output", "call_id": call, "output": format!("Process exited with code 0\nOutput:\n{body}")}),
            ));
        }
        lines.push(item(
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("Turn {t} is done: m{t} passes.")}]}),
        ));
    }
    for (i, l) in lines.iter_mut().enumerate() {
        l["timestamp"] = json!(format!("2026-11-06T08:{:02}:{:02}.000Z", i / 60, i % 60));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Where in neutral JSONL `messages` a tool call is not followed by its result with only other
/// calls and results between them, as every agent's model takes parallel calls; `None` when
/// none is.
fn call_apart_from_result(messages: &[Value]) -> Option<String> {
    let role = |m: &Value| m["role"].as_str().unwrap_or_default().to_string();
    for (i, m) in messages.iter().enumerate() {
        if role(m) != "tool_call" {
            continue;
        }
        let id = &m["tool_call_id"];
        let answered = messages[i + 1..]
            .iter()
            .take_while(|n| matches!(role(n).as_str(), "tool_call" | "tool_result"))
            .any(|n| role(n) == "tool_result" && n["tool_call_id"] == *id);
        if !answered {
            let next = messages.get(i + 1).map(|n| (role(n), n["content"].clone()));
            return Some(format!("message {i}, call {id}, then {next:?}"));
        }
    }
    None
}

/// Sessions of parallel calls, some of which no other agent has a tool for, answered in any
/// order: in every agent a relay writes, each call that travels structured is followed by its
/// result, never by the text of a call that travels as text (Gemini CLI finds such a call
/// without a result, the Anthropic and Chat Completions APIs refuse it); and reading in part,
/// folding the older turns, writes what a full read writes.
#[test]
fn parallel_calls_keep_their_results_next_to_them() {
    let env = TestEnv::empty();
    let mut kept = 0;
    for seed in chosen([1, 2], 1..=8u64) {
        let path = write_parallel_calls_session(&env, seed, 24);
        let source = path.to_str().unwrap();
        for to in session_relay::adapters::names() {
            let r = env.json(&[
                "relay",
                source,
                "--to",
                to,
                "--cwd",
                "/tmp/lazy",
                "--budget",
                "60000",
                "--json",
            ]);
            let id = r["target"]["id"].as_str().unwrap();
            let written = env.ok(&["export", id, "--agent", to, "--all", "--no-redact"]);
            let messages: Vec<Value> = written
                .lines()
                .skip(1)
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let structured = messages.iter().filter(|m| m["role"] == "tool_call").count();
            assert!(
                structured > 0,
                "seed {seed} -> {to}: no call travelled structured"
            );
            if let Some(apart) = call_apart_from_result(&messages) {
                panic!("seed {seed} -> {to}: as written, {apart}");
            }
            for (budget, keep) in [("3000", "0.3"), ("60000", "0.05")] {
                let folding = folded_as_read_in_full(&env, &path, seed, to, budget, keep);
                kept += usize::from(folding == Folding::Kept);
            }
        }
    }
    assert!(kept > 0, "no relay kept its fold");
}
