//! What the README tells a newcomer to run, checked against the files that decide it: the
//! toolchain Cargo.toml asks for, the programs `.ci/run` needs, the test commands CI runs, and
//! an install that builds the tested versions. The README stays a front door, and the links
//! between it and `docs/` resolve.

use std::path::Path;

fn read(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The commands of the README's shell blocks, one per line (`a && b` is two), without their
/// comments.
fn shell_commands(readme: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_block = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_block = line == "```sh";
            continue;
        }
        if in_block {
            let command = line.split(" # ").next().unwrap();
            commands.extend(command.split(" && ").map(|c| c.trim().to_string()));
        }
    }
    commands
}

/// `cargo install` ignores Cargo.lock unless told otherwise, and builds whatever newer versions
/// the registry has, which no test ran with.
#[test]
fn every_install_in_the_readme_builds_the_locked_versions() {
    let installs = |doc: &str| -> Vec<String> {
        shell_commands(&read(doc))
            .into_iter()
            .filter(|c| c.starts_with("cargo install"))
            .collect()
    };
    assert!(
        !installs("README.md").is_empty(),
        "the README says no cargo install"
    );
    for doc in documents() {
        for c in installs(&doc) {
            assert!(c.split(' ').any(|w| w == "--locked"), "{doc}: {c}");
        }
    }
}

/// The toolchain the README asks for is the one Cargo.toml's `rust-version` sets.
#[test]
fn the_readme_asks_for_the_rust_version_cargo_toml_sets() {
    let want = env!("CARGO_PKG_RUST_VERSION");
    assert!(!want.is_empty(), "Cargo.toml sets no rust-version");
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("Rust {want} or newer")),
        "the README does not ask for Rust {want} or newer"
    );
}

/// The programs `.ci/run` looks for before anything runs are named in the README, so that a
/// contributor without CI's setup knows them before a test fails for want of one.
#[test]
fn the_readme_names_every_program_ci_needs() {
    let ci = read(".ci/run");
    let tools = ci
        .lines()
        .find_map(|l| l.strip_prefix("for tool in "))
        .and_then(|l| l.strip_suffix("; do"))
        .expect(".ci/run: no `for tool in ...; do` line");
    let readme = read("README.md");
    let named: Vec<&str> = tools.split(' ').collect();
    assert!(named.len() >= 4, "{named:?}");
    for tool in named {
        assert!(
            readme.contains(&format!("`{tool}`")),
            "the README never names `{tool}`"
        );
    }
}

/// Each test command the README (or a document in `docs/`) gives is one CI runs, so that none
/// of them is left to rot.
#[test]
fn every_test_command_in_the_readme_is_run_by_ci() {
    let ci = read(".ci/run");
    let tests = |doc: &str| -> Vec<String> {
        shell_commands(&read(doc))
            .into_iter()
            .filter(|c| c.starts_with("cargo test --locked"))
            .collect()
    };
    let in_readme = tests("README.md");
    assert!(in_readme.len() >= 3, "{in_readme:?}");
    for doc in documents() {
        for c in tests(&doc) {
            assert!(
                ci.lines().any(|l| l == c),
                "{doc}: .ci/run does not run `{c}`"
            );
        }
    }
}

/// The README is the front door: what the tool is, how to install and try it, its main uses,
/// and links; everything else is in `docs/`.
#[test]
fn the_readme_is_a_front_door() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move detail into docs/"
    );
}

/// The Markdown files a reader follows links between: the README and everything in `docs/`.
fn documents() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut docs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "docs/ holds no Markdown");
    docs.insert(0, "README.md".to_string());
    docs
}

/// The lines of a Markdown text outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| t.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m && t.trim_end() == m => fence = None,
            (None, None) => out.push(line),
            _ => {}
        }
    }
    out
}

/// The anchors GitHub gives a file's headings: the heading's text without its Markdown marks,
/// lower-cased, spaces turned into `-`, punctuation other than `-` and `_` dropped; a repeated
/// anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for line in prose(text) {
        let Some(heading) = line
            .strip_prefix('#')
            .map(|h| h.trim_start_matches('#'))
            .filter(|h| h.starts_with(' '))
        else {
            continue;
        };
        let slug: String = heading
            .trim()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                '-' | '_' => Some(c),
                c if c.is_alphanumeric() => Some(c),
                _ => None,
            })
            .flat_map(char::to_lowercase)
            .collect();
        let (mut unique, mut n) = (slug.clone(), 0);
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.push(unique);
    }
    seen
}

/// The targets of a Markdown text's inline links (`[text](target)`), outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text) {
        // Inline code spans hold examples, not links.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            targets.push(target.to_string());
            rest = &rest[end..];
        }
    }
    targets
}

/// Every relative link in the README and `docs/` points at a file that exists, and at a
/// heading that exists when it names one: moving a section must not leave a link behind.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for doc in documents() {
        let text = read(&doc);
        let base = root.join(&doc).parent().unwrap().to_path_buf();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                root.join(&doc)
            } else {
                base.join(file)
            };
            assert!(
                path.exists(),
                "{doc}: link to {target}: {} does not exist",
                path.display()
            );
            if let Some(anchor) = anchor {
                let heads = anchors(&std::fs::read_to_string(&path).unwrap());
                assert!(
                    heads.iter().any(|h| h == anchor),
                    "{doc}: link to {target}: no heading #{anchor} in {}; its anchors: {heads:?}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} relative links found");
}

/// The anchors the link check expects are GitHub's.
#[test]
fn anchors_follow_githubs_rules() {
    let text = "# Usage\n## `relay`\n## Where session-relay keeps its own files\n\
                ```sh\n# a comment, not a heading\n```\n## Budget and fit: 100%\n## `relay`\n\
                #not a heading\n";
    assert_eq!(
        anchors(text),
        [
            "usage",
            "relay",
            "where-session-relay-keeps-its-own-files",
            "budget-and-fit-100",
            "relay-1"
        ]
    );
    assert_eq!(
        link_targets("see [a](docs/a.md#x) and `[b](c)` and [d](https://e) [f](#g \"t\")"),
        ["docs/a.md#x", "https://e", "#g"]
    );
}
