//! A bounded, deterministic mutation fuzzer over both readers and everything downstream of them
//! (listing scan, neutral round trip, shaping, budget fitting, both writers and the read-back).
//! It runs 200 mutations in a plain `cargo test`, 3,000 in the slow tier CI runs
//! (`--features slow-tests`); run it longer with
//! `FUZZ_ITERATIONS=200000 cargo test --release --test cli fuzz_readers -- --nocapture`
//! (the cargo-fuzz targets in `fuzz/` cover the same code with coverage guidance).
//! An input that panics is kept in the build's scratch folder; once fixed it belongs in
//! `fixtures/fuzz-regressions/`, which is replayed on every run.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use session_relay::adapter::{Mask, ReadOptions, WriteRequest};
use session_relay::adapters;
use session_relay::model::neutral;
use session_relay::plan::fit::{FitParams, fit};
use session_relay::plan::fold::Folder;
use session_relay::plan::shape::shape;
use session_relay::redact::Redactor;
use session_relay::tokens::Tokenizer;

use crate::common::Rng;

const FRAGMENTS: &[&[u8]] = &[
    b"{\"type\":\"",
    b"\"payload\":null",
    b"[",
    b"}",
    b"\"parentUuid\":\"",
    b"\"uuid\":\"x\"",
    b"\"message\":{\"role\":\"user\",\"content\":[]}",
    b"\xff\xfe",
    b"\"timestamp\":1e400",
    b"\"call_id\":\"call_1\"",
    b"\"type\":\"compacted\"",
    b"\"isSidechain\":true",
    b"\n\n",
    b"\"content\":null",
    b"{\"type\":\"session_meta\",\"payload\":{\"id\":7}}",
    b"\"output\":\"{\\\"output\\\":1}\"",
];

fn mutate(r: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + r.index(4) {
        let len = b.len().max(1);
        match r.index(7) {
            0 if !b.is_empty() => {
                let i = r.index(b.len());
                b[i] ^= 1 << r.index(8);
            }
            1 if !b.is_empty() => {
                let i = r.index(b.len());
                let j = (i + r.index(200)).min(b.len());
                b.drain(i..j);
            }
            2 => {
                let i = r.index(len).min(b.len());
                let f = FRAGMENTS[r.index(FRAGMENTS.len())];
                b.splice(i..i, f.iter().copied());
            }
            3 => b.truncate(r.index(len)),
            4 => {
                // Duplicate or swap whole lines: chains, pairings and ordering break.
                let mut lines: Vec<Vec<u8>> =
                    b.split(|&c| c == b'\n').map(|l| l.to_vec()).collect();
                if lines.len() > 1 {
                    let i = r.index(lines.len());
                    let j = r.index(lines.len());
                    if r.index(2) == 0 {
                        lines.swap(i, j);
                    } else {
                        let l = lines[i].clone();
                        lines.insert(j, l);
                    }
                }
                b = lines.join(&b'\n');
            }
            5 if !b.is_empty() => {
                // Replace a digit run by a huge number.
                let i = r.index(b.len());
                if b[i].is_ascii_digit() {
                    b.splice(i..i + 1, b"99999999999999999999999".iter().copied());
                }
            }
            _ => {
                let i = r.index(len).min(b.len());
                b.insert(i, b'"');
            }
        }
    }
    b
}

/// Every fixture session of every registered agent, with its path inside the agent's home:
/// mutated copies are placed at the same path in a scratch home.
fn seeds() -> Vec<(&'static str, PathBuf, PathBuf)> {
    // A database's rows are not a file to mutate: OpenCode's are fuzzed as the documents of
    // `opencode export` (placed where a relay puts its own), which hold the same JSON (the
    // session, each message and its parts) and go through the same reader.
    let mut out: Vec<_> = std::fs::read_dir(crate::common::fixtures().join("opencode-export"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| {
            (
                "opencode",
                Path::new("session-relay").join(e.file_name()),
                e.path(),
            )
        })
        .collect();
    for (agent, path) in crate::common::fixture_sessions() {
        if !crate::common::is_file_session(&path) {
            continue;
        }
        let rel = path
            .strip_prefix(crate::common::fixtures().join(agent))
            .unwrap()
            .to_path_buf();
        out.push((agent, rel, path));
    }
    // In one order wherever the test runs (a folder lists its files in any order).
    out.sort();
    out
}

/// Everything downstream of a reader, on one input. Panics are what the fuzzer looks for;
/// errors are fine. Returns whether the read in part folded older turns.
fn exercise(agent: &str, rel: &Path, bytes: &[u8], dir: &Path) -> bool {
    let adapter = adapters::by_name(agent).unwrap();
    let home = dir.join("home");
    let _ = std::fs::remove_dir_all(&home);
    let path = home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, bytes).unwrap();
    for file in adapter.session_files(&home) {
        let _ = adapter.scan(&file);
    }
    // A relay's read in part, as a long session is read: older outputs masked and cut, older
    // turns folded (masked, shaped and summarized) as they are met. These paths are where a
    // reader keeps the most state, and a plain read never takes them.
    let target = adapters::registry()[bytes.len() % adapters::registry().len()];
    // One redactor for every input: building it compiles the rules on another thread.
    static REDACTOR: OnceLock<Arc<Redactor>> = OnceLock::new();
    let redactor = REDACTOR
        .get_or_init(|| Arc::new(Redactor::new(&[], &[]).unwrap()))
        .clone();
    let folder = Arc::new(Folder::new(agent, target, 1, Some(redactor.clone())));
    let opts = ReadOptions {
        max_tool_output: Some(4000),
        full_tail_tokens: Some(300),
        mask: Some(Mask(redactor)),
        lean: true,
        fold: Some(folder.fold()),
    };
    if let Ok(part) = adapter.read_with(&path, Some(&home), opts) {
        let mut buf = Vec::new();
        neutral::write(&part, &mut buf).unwrap();
    }
    let folded = folder.take().is_some();
    let Ok(session) = adapter.read(&path, Some(&home)) else {
        return folded;
    };
    let mut buf = Vec::new();
    neutral::write(&session, &mut buf).unwrap();
    let back_path = dir.join("neutral.jsonl");
    std::fs::write(&back_path, &buf).unwrap();
    // Compared without printing: a failing input is kept as a file, the sessions can be large.
    assert!(
        neutral::read(&back_path).unwrap() == session,
        "neutral round trip differs"
    );
    for target in adapters::registry() {
        let to = target.name();
        let (shaped, _) = shape(
            &session,
            session.messages.clone(),
            *target,
            "0199f022-0000-7000-8000-00000000aaaa",
            "brief".into(),
        );
        let params = FitParams {
            budget: 4000,
            tokenizer: Tokenizer::Estimate,
            recent_turns: 4,
            summary_max_tokens: 300,
            tool_call_keep_recent: 3,
        };
        let Ok((fitted, _)) = fit(shaped.clone(), "brief".into(), &params) else {
            continue;
        };
        let out = dir.join(format!("out-{to}.jsonl"));
        let _ = std::fs::remove_file(&out);
        let req = WriteRequest {
            home: dir.join("target"),
            id: "0199f022-0000-7000-8000-00000000aaaa".into(),
            cwd: "/tmp/fuzz".into(),
            title: "t".into(),
            provenance: serde_json::json!({}),
            now: chrono::Utc::now(),
            standalone: Some(out.clone()),
        };
        let native = target.write_session(&fitted, &req).unwrap();
        std::fs::write(&out, &native.bytes).unwrap();
        let read_back = target.read(&out, None).unwrap();
        assert!(
            session_relay::verify::digest(&read_back) == session_relay::verify::digest(&fitted),
            "written {to} session does not read back as meant"
        );
    }
    folded
}

#[test]
fn mutated_sessions_never_panic() {
    let iterations: usize = std::env::var("FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(crate::common::count(200, 3000));
    let regressions = crate::common::fixtures().join("fuzz-regressions");
    // Crashing inputs are kept in the build's scratch folder, never in the source tree; the
    // failure message says where, so that they can be added to the regressions.
    let crash_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes");
    let tmp = tempfile::tempdir().unwrap();
    let seeds: Vec<(&str, PathBuf, Vec<u8>)> = seeds()
        .into_iter()
        .map(|(a, rel, p)| {
            let mut b = std::fs::read(p).unwrap();
            b.truncate(64 * 1024); // keep iterations cheap; the head has every line type
            (a, rel, b)
        })
        .collect();
    assert!(!seeds.is_empty(), "no fixture sessions to mutate");
    // Earlier crashes first, each placed where the first fixture of its agent lives.
    let mut replayed = 0;
    for e in std::fs::read_dir(&regressions)
        .unwrap()
        .filter_map(|e| e.ok())
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let (agent, rel, _) = seeds
            .iter()
            .find(|(a, rel, _)| {
                let file = rel.extension().is_some_and(|x| x == "jsonl" || x == "json");
                name.starts_with(&format!("{a}-")) && file
            })
            .unwrap_or_else(|| panic!("regression {name} names no known agent"));
        let bytes = std::fs::read(e.path()).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            exercise(agent, rel, &bytes, tmp.path());
        }));
        assert!(r.is_ok(), "regression {name} panics again");
        replayed += 1;
    }
    assert!(
        replayed > 0,
        "no regression inputs in {}",
        regressions.display()
    );
    let mut r = Rng(0xf022_5eed_0000_0001);
    let mut crashes = Vec::new();
    let mut folded = 0;
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for i in 0..iterations {
        let (agent, rel, seed) = &seeds[r.index(seeds.len())];
        let input = mutate(&mut r, seed);
        let result = catch_unwind(AssertUnwindSafe(|| {
            exercise(agent, rel, &input, tmp.path())
        }));
        folded += usize::from(matches!(result, Ok(true)));
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            std::fs::create_dir_all(&crash_dir).unwrap();
            let file = crash_dir.join(format!("{agent}-{i:06}.jsonl"));
            std::fs::write(&file, &input).unwrap();
            crashes.push(format!("{}: {msg}", file.display()));
        }
    }
    std::panic::set_hook(previous);
    eprintln!("{folded} of {iterations} inputs folded older turns");
    // Without folds the reads in part prove nothing.
    assert!(
        folded * 10 >= iterations,
        "only {folded} of {iterations} inputs folded older turns"
    );
    assert!(
        crashes.is_empty(),
        "{} crashing inputs kept (copy them to {} once fixed):\n{}",
        crashes.len(),
        regressions.display(),
        crashes.join("\n")
    );
}
