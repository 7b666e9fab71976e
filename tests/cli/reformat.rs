//! The listing must not depend on how a serializer lays out its JSON. Every fixture session is
//! rewritten line by line in several equivalent ways (spacing, key order at every depth, `\u`
//! and `\/` escapes), put at the same path in a fresh store, and `list`, `show` and `status`
//! must say of it what they say of the original (`list` and `show` agreeing with each other),
//! and a relay to Codex must find the same recorded window.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;
use session_relay::{commands, render};

use crate::common::{Rng, TestEnv, copy_tree, fixture_sessions, fixtures};

/// How one variant rewrites a line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    /// 0: compact; 1: a space after colons and commas; 2: spaces inside brackets and around
    /// colons; 3: random runs of spaces and tabs between all tokens.
    spacing: u8,
    /// Percent of objects whose keys are shuffled.
    shuffle: u64,
    /// Non-ASCII characters as `\uXXXX` (pairs above the BMP).
    escape_non_ascii: bool,
    /// `<`, `>`, `&` and `'` as `\u003c` and so on, as HTML-safe serializers write them.
    escape_html: bool,
    /// `/` as `\/`.
    escape_slash: bool,
    /// Percent of ASCII letters written as `\u00XX`.
    escape_letters: u64,
    /// Percent of whole numbers written as floats (`1200.0`, `1.2e3`), as serializers that keep
    /// every number as a float write them.
    whole_as_float: u64,
}

pub(crate) const STYLES: &[(&str, Style)] = &[
    (
        "spaced",
        Style {
            spacing: 1,
            shuffle: 0,
            escape_non_ascii: false,
            escape_html: false,
            escape_slash: false,
            escape_letters: 0,
            whole_as_float: 0,
        },
    ),
    (
        "padded and shuffled",
        Style {
            spacing: 2,
            shuffle: 100,
            escape_non_ascii: false,
            escape_html: false,
            escape_slash: false,
            escape_letters: 0,
            whole_as_float: 0,
        },
    ),
    (
        "escaped",
        Style {
            spacing: 0,
            shuffle: 0,
            escape_non_ascii: true,
            escape_html: true,
            escape_slash: true,
            escape_letters: 10,
            whole_as_float: 0,
        },
    ),
    (
        "everything",
        Style {
            spacing: 3,
            shuffle: 70,
            escape_non_ascii: true,
            escape_html: true,
            escape_slash: true,
            escape_letters: 25,
            whole_as_float: 40,
        },
    ),
];

/// Seeds of the random choices (key order, escaped letters, whitespace). Each style runs with
/// the first `SEEDS_PER_STYLE` of them; the first style makes no random choice.
const SEEDS: &[u64] = &[0x5ca1_ab1e, 0xdec0_de42, 0x0b57_ac1e, 0x7e57_5eed];
const SEEDS_PER_STYLE: &[usize] = &[1, 3, 3, 4];

fn ws(style: &Style, r: &mut Rng, out: &mut String) {
    if style.spacing == 3 {
        for _ in 0..r.below(3) {
            out.push(if r.chance(30) { '\t' } else { ' ' });
        }
    }
}

fn write_str(s: &str, style: &Style, r: &mut Rng, out: &mut String) {
    let hex = |out: &mut String, unit: u32, r: &mut Rng| {
        if r.chance(50) {
            write!(out, "\\u{unit:04x}").unwrap();
        } else {
            write!(out, "\\u{unit:04X}").unwrap();
        }
    };
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => hex(out, c as u32, r),
            '/' if style.escape_slash => out.push_str("\\/"),
            '<' | '>' | '&' | '\'' if style.escape_html => hex(out, c as u32, r),
            c if c.is_ascii_alphabetic() && r.chance(style.escape_letters) => hex(out, c as u32, r),
            c if !c.is_ascii() && style.escape_non_ascii => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    hex(out, *u as u32, r);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_value(v: &Value, style: &Style, r: &mut Rng, out: &mut String) {
    let (open_pad, colon, comma) = match style.spacing {
        1 => ("", ": ", ", "),
        2 => (" ", " : ", " , "),
        _ => ("", ":", ","),
    };
    match v {
        Value::String(s) => write_str(s, style, r, out),
        Value::Array(items) => {
            out.push('[');
            out.push_str(open_pad);
            ws(style, r, out);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(comma);
                    ws(style, r, out);
                }
                write_value(item, style, r, out);
                ws(style, r, out);
            }
            out.push_str(open_pad);
            out.push(']');
        }
        Value::Object(map) => {
            // serde_json keeps the order it read (preserve_order): shuffle it here.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if r.chance(style.shuffle) {
                for i in (1..entries.len()).rev() {
                    entries.swap(i, r.index(i + 1));
                }
            }
            out.push('{');
            out.push_str(open_pad);
            ws(style, r, out);
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(comma);
                    ws(style, r, out);
                }
                write_str(k, style, r, out);
                ws(style, r, out);
                out.push_str(colon);
                ws(style, r, out);
                write_value(v, style, r, out);
                ws(style, r, out);
            }
            out.push_str(open_pad);
            out.push('}');
        }
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            let digits = n.to_string();
            // Up to 2^31: serde_json reads larger ones written so a unit or two off (it parses
            // floats fast, not exactly), and a serializer that keeps floats has them so anyway.
            if n.as_i64().is_some_and(|i| i.abs() < 1 << 31) && r.chance(style.whole_as_float) {
                if r.chance(50) {
                    write!(out, "{digits}.0").unwrap();
                } else {
                    // 1200 -> 1.2e3, 7 -> 7e0, -40 -> -4.0E1
                    let (sign, body) = digits.split_at(usize::from(digits.starts_with('-')));
                    let (head, rest) = body.split_at(1);
                    let rest = rest.trim_end_matches('0');
                    let exp = body.len() - 1;
                    let e = if r.chance(50) { 'e' } else { 'E' };
                    match rest {
                        "" => write!(out, "{sign}{head}{e}{exp}").unwrap(),
                        _ => write!(out, "{sign}{head}.{rest}{e}{exp}").unwrap(),
                    }
                }
            } else {
                out.push_str(&digits);
            }
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Whether two JSON values are the same document, a whole number being one whatever its form.
pub(crate) fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// The file rewritten line by line; lines that are not JSON stay as they are. A file that is
/// one JSON document over many lines (Gemini's older `session-*.json`) is rewritten whole.
pub(crate) fn rewrite(bytes: &[u8], style: &Style, r: &mut Rng) -> Vec<u8> {
    if bytes.trim_ascii().contains(&b'\n')
        && let Ok(v) = serde_json::from_slice::<Value>(bytes)
    {
        let mut text = String::new();
        write_value(&v, style, r, &mut text);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert!(same_json(&back, &v), "rewriting changed the document");
        return text.into_bytes();
    }
    let mut out = Vec::with_capacity(bytes.len() * 2);
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_slice::<Value>(line) {
            Ok(v) if !line.trim_ascii().is_empty() => {
                let mut text = String::new();
                write_value(&v, style, r, &mut text);
                assert!(!text.contains('\n'));
                let back: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("rewritten line does not parse ({e}): {text}"));
                assert!(same_json(&back, &v), "rewriting changed a line: {text}");
                out.extend_from_slice(text.as_bytes());
            }
            _ => out.extend_from_slice(line),
        }
        if i + 1 < lines.len() {
            out.push(b'\n');
        }
    }
    out
}

/// A store holding every fixture, with every session file rewritten by `style`.
/// The fixture sessions that are files of their own: a session kept as rows of a database
/// (OpenCode) has no JSON layout to rewrite; its documents are among the loose files below.
fn file_sessions() -> Vec<(&'static str, std::path::PathBuf)> {
    fixture_sessions()
        .into_iter()
        .filter(|(_, p)| crate::common::is_file_session(p))
        .collect()
}

fn rewritten_env(style: &Style, seed: u64) -> (TestEnv, usize) {
    let env = TestEnv::empty();
    let mut r = Rng(seed);
    let mut changed = 0;
    for agent in session_relay::adapters::names() {
        copy_tree(&fixtures().join(agent), &env.home(agent));
    }
    for (agent, path) in file_sessions() {
        let original = std::fs::read(&path).unwrap();
        let text = rewrite(&original, style, &mut r);
        changed += usize::from(text != original);
        std::fs::write(env.home(agent).join(relative(agent, &path)), text).unwrap();
    }
    (env, changed)
}

fn relative(agent: &str, path: &Path) -> PathBuf {
    path.strip_prefix(fixtures().join(agent))
        .unwrap()
        .to_path_buf()
}

/// What `list`, `show` and `status` say of every session file, keyed by its path in the store,
/// and where a relay to Codex takes its budget from.
struct Answers {
    /// Listing rows: id, messages, title, cwd, created, updated.
    list: BTreeMap<PathBuf, Value>,
    /// What `show --json` prints, with the environment's own folder taken out of paths.
    show: BTreeMap<PathBuf, Value>,
    /// The context usage `status` finds at the end of each live session.
    status: BTreeMap<PathBuf, Value>,
    /// What `show --json` prints of a copy of each file outside any store, named so that only
    /// its content tells the agent (or the error it gives).
    loose: BTreeMap<PathBuf, Value>,
    /// `budget_from` of a relay to Codex: the window its newest rollouts record.
    budget_from: Value,
}

/// What of `show` must not change: all but the token estimate. Tool inputs keep the key order
/// they were written in (serde_json's `preserve_order`) and are counted as JSON text, so a
/// shuffle may move the estimate by a token.
/// The context check's estimate of growth since the last recorded usage moves with it. A
/// whole-document file (`.json`) is rewritten onto one line, so its physical line count goes too.
fn show_fields(shown: &Value) -> Value {
    let mut v = shown.clone();
    v.as_object_mut().unwrap().remove("estimated_tokens");
    if let Some(check) = v["context_check"].as_object_mut() {
        check.remove("estimated_growth");
        check.remove("ratio");
    }
    let whole_document = shown["session"]["source_path"]
        .as_str()
        .is_some_and(|p| p.ends_with(".json"));
    if whole_document {
        v["session"]["stats"]
            .as_object_mut()
            .unwrap()
            .remove("lines");
    }
    v
}

const LISTED: &[&str] = &["id", "messages", "title", "cwd", "created", "updated"];

/// Every session file's modification time set from its path: copying and rewriting leave them
/// in the order the files were written, and the newest rollout is where a relay to Codex looks
/// for the recorded window first.
fn same_times(env: &TestEnv) {
    let base = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_790_000_000);
    for (i, (agent, path)) in file_sessions().into_iter().enumerate() {
        let copy = env.home(agent).join(relative(agent, &path));
        let f = std::fs::File::options().write(true).open(&copy).unwrap();
        f.set_modified(base + std::time::Duration::from_secs(i as u64 * 60))
            .unwrap();
    }
}

fn answers(env: &TestEnv) -> Answers {
    same_times(env);
    let root = env.dir.path().display().to_string();
    let mut list = BTreeMap::new();
    for row in env
        .list_json(&["list", "--all", "--json"])
        .as_array()
        .unwrap()
    {
        let path = PathBuf::from(row["path"].as_str().unwrap());
        let rel = path.strip_prefix(env.dir.path()).unwrap().to_path_buf();
        let fields: serde_json::Map<String, Value> = LISTED
            .iter()
            .map(|k| (k.to_string(), row[*k].clone()))
            .collect();
        list.insert(rel, Value::Object(fields));
    }
    // `show` in this process: the binary would load its tokenizer again for every file.
    let cfg = env.config();
    // What `show --json` prints of a file, the environment's folder taken out of paths.
    let show_json = |file: &Path| -> anyhow::Result<Value> {
        let opts = commands::show::Options {
            session: file.display().to_string(),
            scope: commands::Scope {
                agent: None,
                cwd: None,
                all: false,
            },
            to: None,
            budget: None,
            no_redact: false,
            progress: Default::default(),
        };
        let report = commands::show::run(&cfg, &opts)?;
        let mut out = Vec::new();
        render::json(&report, &mut out)?;
        let text = String::from_utf8(out)?.replace(&root, "<ENV>");
        Ok(serde_json::from_str(&text)?)
    };
    let mut show = BTreeMap::new();
    for (agent, path) in fixture_sessions() {
        let rel = Path::new(agent).join(relative(agent, &path));
        show.insert(rel.clone(), show_json(&env.dir.path().join(&rel)).unwrap());
    }
    let mut loose = BTreeMap::new();
    for (i, (agent, path)) in file_sessions().into_iter().enumerate() {
        let rel = Path::new(agent).join(relative(agent, &path));
        let name = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => "s.json",
            Some("zst") => continue,
            _ => "s.jsonl",
        };
        let copy = env.dir.path().join(format!("loose/{i}/{name}"));
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(env.dir.path().join(&rel), &copy).unwrap();
        let shown = match show_json(&copy) {
            Ok(v) => show_fields(&v),
            Err(e) => Value::String(format!("{e:#}").replace(&root, "<ENV>")),
        };
        loose.insert(rel, shown);
    }
    let status = env.json(&["status", "--all", "--json"])["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let path = Path::new(row["path"].as_str().unwrap());
            let rel = path.strip_prefix(env.dir.path()).unwrap().to_path_buf();
            (rel, row["context"].clone())
        })
        .collect();
    let proj = env.project();
    let relay = env.json(&[
        "relay",
        "771ce1df",
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--dry-run",
        "--json",
    ]);
    let budget_from = Value::String(
        relay["budget_from"]
            .as_str()
            .unwrap()
            .replace(&root, "<ENV>"),
    );
    Answers {
        list,
        show,
        status,
        loose,
        budget_from,
    }
}

/// Where `list` and `show` disagree on a field both report.
fn disagreements(a: &Answers, what: &str, problems: &mut Vec<String>) {
    for (path, row) in &a.list {
        let shown = &a.show[path];
        let s = &shown["session"];
        for (field, from_show) in [
            ("messages", &shown["messages"]),
            ("title", &s["title"]),
            ("cwd", &s["cwd"]),
            ("created", &s["created"]),
            ("updated", &s["updated"]),
        ] {
            if &row[field] != from_show {
                problems.push(format!(
                    "{what}: list and show disagree on the {field} of {}: list {} / show {}",
                    path.display(),
                    row[field],
                    from_show
                ));
            }
        }
    }
}

/// The fields of two JSON values that differ, by path. A number is the same whatever its
/// form: an agent's own values passed through (`show` of a session's `extra`) keep the form
/// the file wrote them in.
fn differing_fields(a: &Value, b: &Value, prefix: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) if !same_json(va, vb) => {
                        differing_fields(va, vb, &format!("{prefix}{k}."), out)
                    }
                    (Some(_), Some(_)) => {}
                    _ => out.push(format!("{prefix}{k}")),
                }
            }
        }
        _ if !same_json(a, b) => out.push(format!("{} ({a} -> {b})", prefix.trim_end_matches('.'))),
        _ => {}
    }
}

#[test]
fn listing_and_show_do_not_depend_on_json_layout() {
    let mut problems = Vec::new();
    let original = answers(&TestEnv::with_fixtures());
    assert!(original.list.len() >= 20, "{}", original.list.len());
    // Outside a store, each agent's sessions are told by their content alone.
    for agent in session_relay::adapters::names() {
        // An agent whose sessions are rows of a database has no session file to copy out
        // (OpenCode's documents outside a store: tests/cli/opencode.rs).
        if !file_sessions().iter().any(|(a, _)| *a == agent) {
            continue;
        }
        let told = original
            .loose
            .iter()
            .filter(|(p, v)| p.starts_with(agent) && v["session"]["agent"] == agent)
            .count();
        assert!(
            told >= 3,
            "{agent}: only {told} copies outside the store recognised"
        );
    }
    let with_usage = original.status.values().filter(|c| !c.is_null()).count();
    assert!(with_usage >= 5, "only {with_usage} sessions record usage");
    assert!(
        original
            .budget_from
            .as_str()
            .unwrap()
            .contains("recorded by Codex CLI"),
        "{}",
        original.budget_from
    );
    disagreements(&original, "original", &mut problems);
    let files = file_sessions().len();
    let mut variants = 0;
    for ((name, style), &n) in STYLES.iter().zip(SEEDS_PER_STYLE) {
        // One seed of each style in the default tier.
        for &seed in &SEEDS[..crate::common::count(1, n)] {
            let (env, changed) = rewritten_env(style, seed);
            assert!(
                changed == files,
                "{name}: only {changed} of {files} files changed"
            );
            let what = format!("{name} (seed {seed:#x})");
            let got = answers(&env);
            assert_eq!(
                got.list.keys().collect::<Vec<_>>(),
                original.list.keys().collect::<Vec<_>>(),
                "{what}: listed files"
            );
            for (path, row) in &original.list {
                if !same_json(&got.list[path], row) {
                    let mut fields = Vec::new();
                    differing_fields(row, &got.list[path], "", &mut fields);
                    problems.push(format!(
                        "{what}: list changed for {}: {}",
                        path.display(),
                        fields.join(", ")
                    ));
                }
            }
            for (path, shown) in &original.show {
                let (before, after) = (show_fields(shown), show_fields(&got.show[path]));
                if !same_json(&before, &after) {
                    let mut fields = Vec::new();
                    differing_fields(&before, &after, "", &mut fields);
                    problems.push(format!(
                        "{what}: show changed for {}: {}",
                        path.display(),
                        fields.join(", ")
                    ));
                }
            }
            for (path, context) in &original.status {
                if got.status.get(path) != Some(context) {
                    problems.push(format!(
                        "{what}: status changed for {}: {context} -> {:?}",
                        path.display(),
                        got.status.get(path)
                    ));
                }
            }
            for (path, shown) in &original.loose {
                if !same_json(&got.loose[path], shown) {
                    let mut fields = Vec::new();
                    differing_fields(shown, &got.loose[path], "", &mut fields);
                    problems.push(format!(
                        "{what}: show of a copy outside the store changed for {}: {}",
                        path.display(),
                        fields.join(", ")
                    ));
                }
            }
            if got.budget_from != original.budget_from {
                problems.push(format!(
                    "{what}: a relay to Codex took its budget from {} instead of {}",
                    got.budget_from, original.budget_from
                ));
            }
            disagreements(&got, &what, &mut problems);
            variants += 1;
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) over {files} files x {variants} variants:\n{}",
        problems.len(),
        problems.join("\n")
    );
    eprintln!(
        "{files} session files x {variants} variants: list, show, status and the budget unchanged"
    );
}

/// A transcript as a serializer with `": "` and `", "` separators (Python's default) writes it.
fn spaced_transcript(cwd: &str) -> String {
    let lines = [
        serde_json::json!({"type": "user", "parentUuid": null, "uuid": "u1", "sessionId": "5e55a1ed-0000-4000-8000-000000000001",
            "timestamp": "2026-12-01T10:00:00.000Z", "cwd": cwd,
            "message": {"role": "user", "content": "Spaced out prompt"}}),
        serde_json::json!({"type": "assistant", "parentUuid": "u1", "uuid": "a1", "sessionId": "5e55a1ed-0000-4000-8000-000000000001",
            "timestamp": "2026-12-01T10:00:05.000Z", "cwd": cwd,
            "message": {"id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": "Hello"}]}}),
        serde_json::json!({"type": "user", "parentUuid": "a1", "uuid": "u2", "sessionId": "5e55a1ed-0000-4000-8000-000000000001",
            "timestamp": "2026-12-01T10:01:00.000Z", "cwd": cwd,
            "message": {"role": "user", "content": [{"type": "text", "text": "And again"}]}}),
    ];
    let style = STYLES[0].1;
    let mut r = Rng(1);
    let mut out = String::new();
    for l in lines {
        write_value(&l, &style, &mut r, &mut out);
        out.push('\n');
    }
    assert!(out.contains(r#""type": "user""#), "{out}");
    out
}

#[test]
fn spaced_json_lists_its_messages_and_is_the_latest() {
    let env = TestEnv::empty();
    let project = env.project();
    let dir = env.claude_home().join("projects/-spaced");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("5e55a1ed-0000-4000-8000-000000000001.jsonl"),
        spaced_transcript(&project),
    )
    .unwrap();
    let rows = env.list_json(&["list", "--cwd", &project, "--json"]);
    let row = &rows.as_array().unwrap()[0];
    assert_eq!(row["messages"], 3);
    assert_eq!(row["title"], "Spaced out prompt");
    assert_eq!(row["cwd"], project.as_str());
    assert_eq!(row["created"]["original"], "2026-12-01T10:00:00.000Z");
    assert_eq!(row["updated"]["original"], "2026-12-01T10:01:00.000Z");
    let shown = env.json(&["show", "latest", "--cwd", &project, "--json"]);
    assert_eq!(
        shown["session"]["id"],
        "5e55a1ed-0000-4000-8000-000000000001"
    );
    assert_eq!(shown["messages"], 3);
}
