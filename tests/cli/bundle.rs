//! `bundle`: a session carried to another machine in one file. Made under one HOME from a
//! session that ran in a git checkout, with the working tree's changes (`--git`), it is
//! relayed under another HOME into another checkout of the same repository (`--apply-changes`):
//! the session lands in the second store, and the branch and its changes in the second
//! checkout. The first checkout's branch, index, stash and refs stay as they were; no planted
//! secret is anywhere in the bundle; a truncated, altered or newer bundle is refused and
//! nothing is written.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::common::{TestEnv, git};
use serde_json::{Value, json};

/// Secrets the session holds, in a prompt and a tool's output: none may reach the bundle.
const TOKEN: &str = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";
const AWS_KEY: &str = "AKIA2E0A8F3B244C9986";

const ID: &str = "b0d1e5e5-0000-4000-8000-0000000000b1";

/// A repository with one commit: `a.txt`, `old.txt`, and a `.gitignore` that ignores `build/`.
fn repo(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let dir = std::fs::canonicalize(dir).unwrap();
    git(&dir, &["init", "-q"]);
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    std::fs::write(dir.join("old.txt"), "old\n").unwrap();
    std::fs::write(dir.join(".gitignore"), "build/\n").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "Start"]);
    dir
}

/// A Claude Code session that ran in `cwd`: it edits `a.txt`, creates `new.txt`, and holds the
/// planted secrets.
fn session(env: &TestEnv, cwd: &Path) -> PathBuf {
    let cwd = cwd.display().to_string();
    let mut lines = Vec::new();
    let mut n = 0;
    let mut line = |kind: &str, message: Value| {
        let parent = (n > 0).then(|| format!("u{}", n - 1));
        lines.push(
            json!({"parentUuid": parent, "isSidechain": false, "type": kind, "message": message,
                "uuid": format!("u{n}"), "timestamp": format!("2026-11-29T12:00:{n:02}.000Z"),
                "userType": "external", "cwd": cwd, "sessionId": ID, "version": "2.1.332"})
            .to_string(),
        );
        n += 1;
    };
    let call = |id: &str, name: &str, input: Value| {
        json!({"id": format!("m{id}"), "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]})
    };
    let result = |id: &str, text: &str| {
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
            "content": text, "is_error": false}]})
    };
    line(
        "user",
        json!({"role": "user", "content": format!("Make a.txt say two; the deploy token is {TOKEN}")}),
    );
    line(
        "assistant",
        call(
            "toolu_1",
            "Edit",
            json!({"file_path": format!("{cwd}/a.txt"), "old_string": "one", "new_string": "two"}),
        ),
    );
    line("user", result("toolu_1", "The file has been updated."));
    line(
        "assistant",
        call(
            "toolu_2",
            "Bash",
            json!({"command": "cat ~/.aws/credentials"}),
        ),
    );
    line(
        "user",
        result("toolu_2", &format!("aws_access_key_id = {AWS_KEY}")),
    );
    line(
        "assistant",
        call(
            "toolu_3",
            "Write",
            json!({"file_path": format!("{cwd}/new.txt"), "content": "new\n"}),
        ),
    );
    line(
        "user",
        result(
            "toolu_3",
            &format!("File created successfully at: {cwd}/new.txt"),
        ),
    );
    line(
        "assistant",
        json!({"id": "m9", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "Done: a.txt says two, new.txt is there."}]}),
    );
    let dir = env
        .claude_home()
        .join(format!("projects/{}", cwd.replace(['/', '.'], "-")));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{ID}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The working tree as the session left it, with more besides: a tracked file deleted, an
/// ignored build output, and a stash made before.
fn change_working_tree(repo: &Path) {
    std::fs::write(repo.join("a.txt"), "stashed\n").unwrap();
    git(repo, &["stash", "-q"]);
    std::fs::write(repo.join("a.txt"), "two\n").unwrap();
    std::fs::write(repo.join("new.txt"), "new\n").unwrap();
    std::fs::remove_file(repo.join("old.txt")).unwrap();
    std::fs::create_dir_all(repo.join("build")).unwrap();
    std::fs::write(repo.join("build/out.log"), "ignored\n").unwrap();
}

/// What a command must not change in a checkout: its status, index file, stash and refs.
fn checkout_state(repo: &Path) -> (String, Vec<u8>, String, String, String) {
    (
        git(repo, &["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
        git(repo, &["stash", "list"]),
        git(repo, &["for-each-ref"]),
        git(repo, &["symbolic-ref", "HEAD"]),
    )
}

/// The archive inside a bundle, decompressed: every byte the tar holds.
fn archive_bytes(bundle: &Path) -> Vec<u8> {
    zstd::decode_all(std::fs::File::open(bundle).unwrap()).unwrap()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// A bundle of the session, made with `--git`, in `env`: its path and the report.
fn make_bundle(env: &TestEnv, repo: &Path) -> (PathBuf, Value) {
    let out = env.work().join("handoff.bundle");
    let report = env.json(&["bundle", ID, "-o", out.to_str().unwrap(), "--git", "--json"]);
    assert_eq!(
        report["manifest"]["git"]["base"],
        git(repo, &["rev-parse", "HEAD"]).trim()
    );
    (out, report)
}

#[test]
fn a_bundle_relays_under_another_home_into_another_checkout_with_its_changes() {
    let first = TestEnv::empty();
    let repo1 = repo(&first.work().join("repo"));
    session(&first, &repo1);
    // The second machine's checkout: a clone made before the session's changes.
    let second = TestEnv::empty();
    std::fs::create_dir_all(second.work().join("elsewhere")).unwrap();
    let repo2 = second.work().join("elsewhere/checkout");
    git(
        second.work(),
        &[
            "clone",
            "-q",
            repo1.to_str().unwrap(),
            repo2.to_str().unwrap(),
        ],
    );
    let repo2 = std::fs::canonicalize(repo2).unwrap();
    change_working_tree(&repo1);
    let before = checkout_state(&repo1);
    let (bundle, report) = make_bundle(&first, &repo1);
    assert!(
        checkout_state(&repo1) == before,
        "bundle --git changed the checkout's status, index, stash or refs"
    );
    let branch = report["manifest"]["git"]["branch"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(branch, "relay/b0d1e5e5");
    assert_eq!(report["manifest"]["git"]["files"], 3, "{report}");
    assert_eq!(report["manifest"]["format_version"], 1);
    let masked = &report["manifest"]["redactions"];
    assert!(
        masked
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum::<u64>()
            >= 2,
        "{masked}"
    );
    let bytes = archive_bytes(&bundle);
    for secret in [TOKEN, AWS_KEY] {
        assert!(
            !contains(&bytes, secret),
            "the bundle holds a planted secret"
        );
    }
    // Relayed on the second machine, from its checkout, into Codex.
    let relayed = second.json(&[
        "relay",
        bundle.to_str().unwrap(),
        "--to",
        "codex",
        "--cwd",
        repo2.to_str().unwrap(),
        "--apply-changes",
        "--json",
    ]);
    assert_eq!(relayed["cwd"], repo2.display().to_string());
    assert_eq!(relayed["source"]["path"], bundle.display().to_string());
    let written = std::fs::read_to_string(relayed["target"]["path"].as_str().unwrap()).unwrap();
    assert!(
        written.contains(&format!("\"cwd\":\"{}\"", repo2.display())),
        "not resumed in the second checkout"
    );
    assert!(
        written.contains(&format!(
            "Relayed from a bundle: the session ran in {} on the machine that bundled it",
            repo1.display()
        )),
        "the brief does not name the original directory"
    );
    // The file states are those read when the bundle was made, named as such.
    assert!(
        written.contains("how the file stood against that change when the session was bundled"),
        "the brief does not carry the bundled snapshot"
    );
    for secret in [TOKEN, AWS_KEY] {
        assert!(!written.contains(secret));
    }
    assert!(
        relayed["target"]["path"]
            .as_str()
            .unwrap()
            .starts_with(second.codex_home().to_str().unwrap())
    );
    // The branch is checked out in the second checkout, with the changes and not the ignored file.
    assert_eq!(
        git(&repo2, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        branch
    );
    assert_eq!(
        std::fs::read_to_string(repo2.join("a.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo2.join("new.txt")).unwrap(),
        "new\n"
    );
    assert!(!repo2.join("old.txt").exists());
    assert!(!repo2.join("build").exists());
    assert_eq!(git(&repo2, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&repo2, &["rev-parse", "HEAD^"]).trim(),
        git(&repo1, &["rev-parse", "HEAD"]).trim()
    );
    // `show` and `export` read the bundle too.
    let shown = second.json(&["show", bundle.to_str().unwrap(), "--json"]);
    assert_eq!(shown["session"]["id"], ID);
    assert_eq!(shown["bundle"]["git"]["branch"], branch);
    let files: Vec<&str> = shown["file_snapshot"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["a.txt", "new.txt"]);
    let exported = second.ok(&["export", bundle.to_str().unwrap()]);
    assert!(exported.contains("Make a.txt say two"));
    assert!(!exported.contains(TOKEN));
    // `log` there names the bundle the session came from: no store of that machine holds it,
    // and it is not gone.
    let target = relayed["target"]["id"].as_str().unwrap();
    let log = second.ok(&["log", target]);
    assert!(
        log.contains(&format!("claude {ID}  [from bundle {}]", bundle.display())),
        "{log}"
    );
    assert!(!log.contains("gone"), "{log}");
    let log = second.json(&["log", target, "--json"]);
    let source = &log["chains"][0]["sessions"][0];
    assert_eq!(source["bundle"], bundle.display().to_string(), "{log}");
    assert_eq!(source["gone"], false);
}

#[test]
fn apply_changes_refuses_a_dirty_checkout_or_one_without_the_base_commit() {
    let first = TestEnv::empty();
    let repo1 = repo(&first.work().join("repo"));
    session(&first, &repo1);
    change_working_tree(&repo1);
    let (bundle, _) = make_bundle(&first, &repo1);
    let second = TestEnv::empty();
    // Another repository: it lacks the commit the changes are on.
    let other = second.work().join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q"]);
    std::fs::write(other.join("a.txt"), "unrelated\n").unwrap();
    git(&other, &["add", "."]);
    git(&other, &["commit", "-q", "-m", "Unrelated"]);
    let relay = |dir: &Path| {
        second.fails(&[
            "relay",
            bundle.to_str().unwrap(),
            "--to",
            "codex",
            "--cwd",
            dir.to_str().unwrap(),
            "--apply-changes",
        ])
    };
    let (_, err) = relay(&other);
    assert!(err.contains("lacks commit"), "{err}");
    // A clone with the commit, but with uncommitted changes.
    let clone = second.work().join("clone");
    git(
        second.work(),
        &[
            "clone",
            "-q",
            repo1.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    std::fs::write(clone.join("a.txt"), "mine\n").unwrap();
    let (_, err) = relay(&clone);
    assert!(err.contains("uncommitted changes"), "{err}");
    assert_eq!(
        std::fs::read_to_string(clone.join("a.txt")).unwrap(),
        "mine\n"
    );
    assert!(
        !second.codex_home().join("sessions").exists(),
        "a refused relay wrote a session"
    );
}

#[test]
fn git_changes_holding_a_secret_are_refused_naming_the_file_and_line() {
    let env = TestEnv::empty();
    let repo = repo(&env.work().join("repo"));
    session(&env, &repo);
    std::fs::write(
        repo.join("config.env"),
        format!("# settings\nGITHUB_TOKEN={TOKEN}\n"),
    )
    .unwrap();
    let out = env.work().join("h.bundle");
    let args = ["bundle", ID, "-o", out.to_str().unwrap(), "--git"];
    let (code, err) = env.fails(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("config.env:2"), "{err}");
    assert!(!err.contains(TOKEN), "the refusal shows the secret");
    assert!(!out.exists(), "a refused bundle was written");
    // Carried all the same when asked.
    let mut with = args.to_vec();
    with.extend(["--allow-secrets", "--json"]);
    let report = env.json(&with);
    assert!(
        report["secrets_allowed"][0]
            .as_str()
            .unwrap()
            .starts_with("config.env:2")
    );
    // A private key block is named by its first line (the rules take its BEGIN line alone).
    std::fs::remove_file(repo.join("config.env")).unwrap();
    std::fs::write(repo.join("notes.md"), "# Notes\n\nNothing secret.\n").unwrap();
    std::fs::write(repo.join("deploy_key"), PRIVATE_KEY).unwrap();
    let again = env.work().join("k.bundle");
    let (_, err) = env.fails(&["bundle", ID, "-o", again.to_str().unwrap(), "--git"]);
    assert!(err.contains("deploy_key:1"), "{err}");
    assert!(!err.contains("notes.md"), "{err}");
    assert!(!err.contains("MIIEow"), "the refusal shows the key");
    assert!(!again.exists());
}

/// A changed file git takes for binary (a NUL byte in it) or `.gitattributes` marks `-diff` is
/// still scanned: git's diff would only say it differs.
#[test]
fn a_secret_in_a_file_git_diffs_as_binary_is_found() {
    let env = TestEnv::empty();
    let repo = repo(&env.work().join("repo"));
    session(&env, &repo);
    std::fs::write(
        repo.join("state.db"),
        format!("\0\0header\ntoken={TOKEN}\n"),
    )
    .unwrap();
    std::fs::write(repo.join(".gitattributes"), "*.env -diff\n").unwrap();
    std::fs::write(repo.join("prod.env"), format!("KEY={AWS_KEY}\n")).unwrap();
    let out = env.work().join("b.bundle");
    let (code, err) = env.fails(&["bundle", ID, "-o", out.to_str().unwrap(), "--git"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("state.db:2"), "{err}");
    assert!(err.contains("prod.env:1"), "{err}");
    assert!(!err.contains(TOKEN) && !err.contains(AWS_KEY), "{err}");
    assert!(!out.exists(), "a refused bundle was written");
}

/// The changes are read as git writes them, a line at a time, a long line in windows: a
/// secret deep in a large change, and one in the middle of a line of several MB (a minified
/// file), are each reported with their file and line, and nothing else is.
#[test]
fn secrets_deep_in_large_changes_are_found_with_their_file_and_line() {
    let env = TestEnv::empty();
    let repo = repo(&env.work().join("repo"));
    session(&env, &repo);
    let mut big = String::new();
    for n in 1..=100_000 {
        if n == 90_001 {
            big.push_str(&format!("const deploy = \"{TOKEN}\";\n"));
        } else {
            big.push_str(&format!("line {n} of a large change\n"));
        }
    }
    std::fs::write(repo.join("big.txt"), big).unwrap();
    let minified = "var a=\"b\";".repeat(300_000);
    std::fs::write(
        repo.join("app.min.js"),
        format!("{minified}var k=\"{TOKEN}\";{minified}\n"),
    )
    .unwrap();
    let out = env.work().join("l.bundle");
    let (code, err) = env.fails(&["bundle", ID, "-o", out.to_str().unwrap(), "--git"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("\n  app.min.js:1 (github_token)\n"), "{err}");
    assert!(err.contains("\n  big.txt:90001 (github_token)\n"), "{err}");
    assert_eq!(err.matches("(github_token)").count(), 2, "{err}");
    assert!(!err.contains(TOKEN), "{err}");
    assert!(!out.exists(), "a refused bundle was written");
}

/// A private key block (not a real key) as a file holds it.
const PRIVATE_KEY: &str = "-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun
VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK
LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo
-----END RSA PRIVATE KEY-----
";

/// The bundle's archive with `edit` applied to its uncompressed bytes, written to `to`.
fn altered(bundle: &Path, to: &Path, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut tar = archive_bytes(bundle);
    edit(&mut tar);
    std::fs::write(to, zstd::encode_all(tar.as_slice(), 3).unwrap()).unwrap();
}

#[test]
fn truncated_altered_and_newer_bundles_are_refused_and_nothing_is_written() {
    let env = TestEnv::empty();
    let repo = repo(&env.work().join("repo"));
    session(&env, &repo);
    let bundle = env.work().join("ok.bundle");
    env.ok(&["bundle", ID, "-o", bundle.to_str().unwrap()]);
    // Relaying it works, so each refusal below is the alteration's; without --cwd, into the
    // current directory, not the one the session ran in.
    let dry = env.json(&[
        "relay",
        bundle.to_str().unwrap(),
        "--to",
        "codex",
        "--dry-run",
        "--json",
    ]);
    let here = std::fs::canonicalize(env.work()).unwrap();
    assert_eq!(dry["cwd"], here.display().to_string());
    let whole = std::fs::read(&bundle).unwrap();
    let truncated = env.work().join("truncated.bundle");
    std::fs::write(&truncated, &whole[..whole.len() * 2 / 3]).unwrap();
    let tampered = env.work().join("tampered.bundle");
    altered(&bundle, &tampered, |tar| {
        // One letter of the session's text, in place.
        let at = tar.windows(10).position(|w| w == b"Make a.txt").unwrap();
        tar[at] = b'T';
    });
    let newer = env.work().join("newer.bundle");
    altered(&bundle, &newer, |tar| {
        let key = b"\"format_version\": 1";
        let at = tar.windows(key.len()).position(|w| w == key).unwrap();
        tar[at + key.len() - 1] = b'9';
    });
    for (file, says) in [
        (&truncated, "refused"),
        (&tampered, "does not match its checksum"),
        (&newer, "newer session-relay"),
    ] {
        for cmd in [
            vec!["relay", file.to_str().unwrap(), "--to", "codex"],
            vec!["show", file.to_str().unwrap()],
            vec!["export", file.to_str().unwrap()],
        ] {
            let (_, err) = env.fails(&cmd);
            assert!(err.contains(says), "{cmd:?}: {err}");
        }
    }
    assert!(
        !env.codex_home().join("sessions").exists(),
        "a refused bundle wrote a session"
    );
    // An existing output file is not replaced.
    let (code, _) = env.fails(&["bundle", ID, "-o", bundle.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(&bundle).unwrap(), whole);
}

#[test]
fn a_bundle_is_a_plain_tar_zstd_archive_listing_its_payload() {
    let env = TestEnv::empty();
    let repo = repo(&env.work().join("repo"));
    session(&env, &repo);
    let bundle = env.work().join("plain.bundle");
    let report = env.json(&[
        "bundle",
        ID,
        "-o",
        bundle.to_str().unwrap(),
        "--no-redact",
        "--json",
    ]);
    assert!(report["manifest"]["redactions"].is_null());
    let mut archive =
        tar::Archive::new(zstd::Decoder::new(std::fs::File::open(&bundle).unwrap()).unwrap());
    let mut names = Vec::new();
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        let mut text = String::new();
        e.read_to_string(&mut text).unwrap();
        if name == "session.jsonl" {
            // --no-redact: the session as it was.
            assert!(text.contains(TOKEN));
        }
        names.push(name);
    }
    assert_eq!(names, ["manifest.json", "session.jsonl", "snapshot.json"]);
}

/// The command a bundle's report suggests is one to copy: a path with a space and a quote in
/// it is quoted as a shell reads it.
#[test]
fn the_suggested_relay_command_quotes_the_bundle_path() {
    let env = TestEnv::empty();
    let id = crate::common::session_with_prompts(&env, "claude", &["Hello"]);
    let dir = env.work().join("hand off's");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("ü b.bundle");
    let text = env.ok(&["bundle", &id, "-o", out.to_str().unwrap()]);
    let quoted = format!("'{}'", out.display().to_string().replace('\'', r"'\''"));
    assert!(
        text.contains(&format!("session-relay relay {quoted} --to AGENT")),
        "{text}"
    );
}

/// The members of a bundle's archive, in order: each header and its data.
fn members(bundle: &Path) -> Vec<(tar::Header, Vec<u8>)> {
    let mut archive =
        tar::Archive::new(zstd::Decoder::new(std::fs::File::open(bundle).unwrap()).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (e.header().clone(), data)
        })
        .collect()
}

/// A tar header as `bundle` writes one, with `name` set byte for byte (a `..` too, which
/// `tar` itself refuses to set), `size` and `kind`.
fn header(name: &str, size: u64, kind: tar::EntryType) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_size(size);
    h.set_mode(0o644);
    h.set_entry_type(kind);
    if kind == tar::EntryType::Symlink || kind == tar::EntryType::Link {
        h.set_link_name("/etc/passwd").unwrap();
    }
    h.set_cksum();
    h
}

/// A tar archive of `members` as they are (the data padded to whole blocks), without the end
/// blocks: a caller appends what follows.
fn tar_of(members: &[(tar::Header, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (h, data) in members {
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out
}

/// A zstd frame that decompresses to `n` zero bytes (a multiple of 128 KiB) in 4 bytes per
/// 128 KiB: RLE blocks, as the format allows, so a test writes a 2 GiB bomb as 64 KB.
fn zero_frame(n: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    // Magic; a frame header with no content size, checksum or dictionary; a 128 KiB window.
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    let blocks = n / BLOCK;
    for i in 0..blocks {
        let last = u64::from(i + 1 == blocks);
        // Block header: last flag, type 1 (RLE), and the size it repeats its one byte to.
        let h = (BLOCK << 3) | (1 << 1) | last;
        out.extend_from_slice(&h.to_le_bytes()[..3]);
        out.push(0);
    }
    out
}

/// A bundle whose archive is `members`, then the end blocks, compressed.
fn crafted(to: &Path, members: &[(tar::Header, Vec<u8>)]) {
    let mut tar = tar_of(members);
    tar.extend_from_slice(&[0; 1024]);
    std::fs::write(to, zstd::encode_all(tar.as_slice(), 3).unwrap()).unwrap();
}

/// Each member's header is checked against the manifest before it is written: a member
/// larger than the manifest says, a link, a device, a GNU long name, a path leaving the
/// folder, a member the manifest does not list, and a manifest listing more than is ever
/// unpacked are all refused, and nothing is written.
#[test]
fn hostile_members_are_refused_by_their_header() {
    use tar::EntryType as T;
    let env = TestEnv::empty();
    let id = crate::common::session_with_prompts(&env, "claude", &["Hello"]);
    let bundle = env.work().join("ok.bundle");
    env.ok(&["bundle", &id, "-o", bundle.to_str().unwrap()]);
    let ok = members(&bundle);
    assert_eq!(ok[1].0.path().unwrap().to_str(), Some("session.jsonl"));
    let session = ok[1].1.clone();
    let with = |at: usize, member: (tar::Header, Vec<u8>)| {
        let mut m = ok.clone();
        m[at] = member;
        m
    };
    let mut larger = session.clone();
    larger.extend_from_slice(b"{\"more\":\"than the manifest lists\"}\n");
    let mut manifest: Value = serde_json::from_slice(&ok[0].1).unwrap();
    manifest["payload"][0]["bytes"] = json!(5u64 << 30);
    let huge = serde_json::to_vec(&manifest).unwrap();
    let cases = [
        (
            with(
                1,
                (
                    header("session.jsonl", larger.len() as u64, T::Regular),
                    larger,
                ),
            ),
            "and its manifest says",
        ),
        (
            with(1, (header("session.jsonl", 0, T::Symlink), Vec::new())),
            "not a plain file",
        ),
        (
            with(1, (header("session.jsonl", 0, T::Link), Vec::new())),
            "not a plain file",
        ),
        (
            with(1, (header("session.jsonl", 0, T::Char), Vec::new())),
            "not a plain file",
        ),
        (
            with(
                1,
                (
                    header("././@LongLink", 14, T::GNULongName),
                    b"session.jsonl\0".to_vec(),
                ),
            ),
            "not a plain file",
        ),
        (
            with(
                1,
                (
                    header("../session.jsonl", session.len() as u64, T::Regular),
                    session.clone(),
                ),
            ),
            "a path outside the bundle",
        ),
        (
            with(
                1,
                (
                    header("/tmp/session.jsonl", session.len() as u64, T::Regular),
                    session.clone(),
                ),
            ),
            "a path outside the bundle",
        ),
        (
            with(
                1,
                (
                    header("extra.txt", session.len() as u64, T::Regular),
                    session.clone(),
                ),
            ),
            "which its manifest does not list",
        ),
        (
            with(
                0,
                (header("manifest.json", huge.len() as u64, T::Regular), huge),
            ),
            "more than session-relay unpacks",
        ),
    ];
    for (n, (m, says)) in cases.into_iter().enumerate() {
        let file = env.work().join(format!("hostile{n}.bundle"));
        crafted(&file, &m);
        for cmd in [
            vec!["relay", file.to_str().unwrap(), "--to", "codex"],
            vec!["show", file.to_str().unwrap()],
        ] {
            let (_, err) = env.fails(&cmd);
            assert!(
                err.contains(says) && err.contains("refused"),
                "case {n}, {cmd:?}: {err}"
            );
        }
    }
    assert!(!env.codex_home().join("sessions").exists());
}

/// A member whose header says 2 GiB of zeros, in a 64 KB bundle, while the manifest says a
/// few hundred bytes: refused at its header, before it is decompressed. The binary runs with
/// files capped at 64 MiB, so that unpacking it first would fail otherwise.
#[test]
fn a_decompression_bomb_is_refused_before_it_expands() {
    let env = TestEnv::empty();
    let id = crate::common::session_with_prompts(&env, "claude", &["Hello"]);
    let bundle = env.work().join("ok.bundle");
    env.ok(&["bundle", &id, "-o", bundle.to_str().unwrap()]);
    let ok = members(&bundle);
    const BOMB: u64 = 2 << 30;
    let mut file = zstd::encode_all(tar_of(&ok[..1]).as_slice(), 3).unwrap();
    let head = header("session.jsonl", BOMB, tar::EntryType::Regular);
    file.extend(zstd::encode_all(head.as_bytes().as_slice(), 3).unwrap());
    file.extend(zero_frame(BOMB));
    assert!(file.len() < 100_000, "{}", file.len());
    let bomb = env.work().join("bomb.bundle");
    std::fs::write(&bomb, &file).unwrap();
    // The crafted file is the bomb it means to be: its frames decompress to over 2 GiB.
    let mut dec = zstd::Decoder::new(file.as_slice()).unwrap();
    let unpacked = std::io::copy(&mut dec, &mut std::io::sink()).unwrap();
    assert!(unpacked > BOMB, "{unpacked}");
    let out = env
        .cmd_of("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 65536; exec \"$0\" \"$@\"")
        .arg(assert_cmd::cargo::cargo_bin("session-relay"))
        .args(["show", bomb.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!(
            "its session.jsonl is {BOMB} bytes, and its manifest says"
        )),
        "{err}"
    );
}

/// A changed file named with a secret carries it in the git bundle's tree: refused like a
/// secret in a line, naming the file with the secret masked (in a line's place too).
#[test]
fn a_secret_in_a_changed_file_name_is_refused_masked() {
    let env = TestEnv::empty();
    let repo = repo(&env.work().join("repo"));
    session(&env, &repo);
    std::fs::create_dir_all(repo.join("keys")).unwrap();
    std::fs::write(repo.join(format!("keys/{TOKEN}.txt")), "harmless\n").unwrap();
    std::fs::write(
        repo.join(format!("{AWS_KEY}.env")),
        format!("KEY={AWS_KEY}\n"),
    )
    .unwrap();
    let out = env.work().join("n.bundle");
    let args = ["bundle", ID, "-o", out.to_str().unwrap(), "--git"];
    let (code, err) = env.fails(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("keys/[REDACTED:github_token].txt (github_token in its name)"),
        "{err}"
    );
    assert!(
        err.contains("[REDACTED:aws_access_key].env:1 (aws_access_key)"),
        "{err}"
    );
    assert!(!err.contains(TOKEN) && !err.contains(AWS_KEY), "{err}");
    assert!(!out.exists(), "a refused bundle was written");
    let mut with = args.to_vec();
    with.extend(["--allow-secrets", "--json"]);
    let report = env.json(&with);
    let allowed = report["secrets_allowed"].to_string();
    assert!(allowed.contains("(github_token in its name)"), "{allowed}");
    assert!(
        !allowed.contains(TOKEN) && !allowed.contains(AWS_KEY),
        "{allowed}"
    );
}

/// The commit carrying the changes is authored by the user's git identity, name and email
/// as they are (the masking rules mask secrets, not addresses), and the report says so.
#[test]
fn the_carried_commit_is_authored_by_the_git_identity_and_the_report_names_it() {
    let env = TestEnv::empty();
    let repo = repo(&env.work().join("repo"));
    session(&env, &repo);
    change_working_tree(&repo);
    // The HOME the binary runs with.
    let home = env.work().parent().unwrap().to_path_buf();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Dana Dev\n\temail = dana@example.com\n",
    )
    .unwrap();
    let (_, report) = make_bundle(&env, &repo);
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("authored by Dana Dev <dana@example.com>"),
        "{notes}"
    );
    let commit = report["manifest"]["git"]["commit"].as_str().unwrap();
    // The commit as the bundle carries it: its objects are in the checkout's store.
    assert_eq!(
        git(&repo, &["show", "-s", "--format=%an <%ae>", commit]).trim(),
        "Dana Dev <dana@example.com>"
    );
}
