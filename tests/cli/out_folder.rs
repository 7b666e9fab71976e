//! `relay --out PATH`: a path ending in `/`, or an existing folder, is a folder (created when
//! missing); anything else is a file name; nothing is ever replaced.

use std::path::{Path, PathBuf};

use crate::common::TestEnv;

fn relay_out(env: &TestEnv, out: &str, extra: &[&str]) -> Result<PathBuf, (i32, String)> {
    let proj = env.project();
    let mut args = vec![
        "relay", "771ce1df", "--to", "codex", "--cwd", &proj, "--out", out, "--json",
    ];
    args.extend_from_slice(extra);
    let o = env.cmd().args(&args).output().unwrap();
    if !o.status.success() {
        return Err((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    Ok(PathBuf::from(v["target"]["path"].as_str().unwrap()))
}

fn is_generated_name(p: &Path) -> bool {
    let name = p.file_name().unwrap().to_string_lossy();
    name.starts_with("relay_") && name.ends_with(".jsonl")
}

#[test]
fn a_trailing_slash_names_a_folder_created_when_missing() {
    let env = TestEnv::with_fixtures();
    let dir = env.work().join("handoff/nested");
    // A dry run says so, and creates nothing.
    let planned = relay_out(&env, &format!("{}/", dir.display()), &["--dry-run"]).unwrap();
    assert_eq!(planned.parent().unwrap(), dir);
    assert!(!dir.exists(), "a dry run creates no folder");
    let written = relay_out(&env, &format!("{}/", dir.display()), &[]).unwrap();
    assert_eq!(written.parent().unwrap(), dir);
    assert!(is_generated_name(&written), "{}", written.display());
    assert!(written.is_file());
    // The folder now exists: the same path without the slash is that folder too.
    let again = relay_out(&env, dir.to_str().unwrap(), &["--force"]).unwrap();
    assert_eq!(again.parent().unwrap(), dir);
    assert_ne!(again, written);
    assert!(is_generated_name(&again));
    // Relays within one second get the same stamp and (time-ordered ids) the same short id:
    // the next free name is taken, nothing is replaced.
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..3 {
        let p = relay_out(&env, dir.to_str().unwrap(), &["--force"]).unwrap();
        assert!(p.is_file());
        assert!(names.insert(p), "a name was used twice");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 5);
    // A relative folder is taken from the current directory.
    let rel = relay_out(&env, "rel/", &["--force"]).unwrap();
    assert_eq!(
        std::fs::canonicalize(rel.parent().unwrap()).unwrap(),
        std::fs::canonicalize(env.work().join("rel")).unwrap()
    );
}

#[test]
fn anything_else_is_a_file_name_and_nothing_is_replaced() {
    let env = TestEnv::with_fixtures();
    let file = env.work().join("mine.jsonl");
    let written = relay_out(&env, file.to_str().unwrap(), &[]).unwrap();
    assert_eq!(written, file);
    let first = std::fs::read(&file).unwrap();
    // Never overwritten.
    let (code, err) = relay_out(&env, file.to_str().unwrap(), &["--force"]).unwrap_err();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error:") && err.contains("already exists"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), first);
    // A file named with a trailing slash is refused, not replaced.
    let (code, err) = relay_out(&env, &format!("{}/", file.display()), &["--force"]).unwrap_err();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a folder"), "{err}");
    // A file in a folder that does not exist: say how to have it created.
    let missing = env.work().join("no-such-dir/out.jsonl");
    let (code, err) = relay_out(&env, missing.to_str().unwrap(), &["--force"]).unwrap_err();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("does not exist") && err.contains("end --out with /"),
        "{err}"
    );
    assert!(!missing.parent().unwrap().exists());
}
