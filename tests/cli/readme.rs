//! What the README tells a newcomer to run, checked against the files that decide it: the
//! toolchain Cargo.toml asks for, the programs `.ci/run` needs, the test commands CI runs, and
//! an install that builds the tested versions.

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
    let installs: Vec<String> = shell_commands(&read("README.md"))
        .into_iter()
        .filter(|c| c.starts_with("cargo install"))
        .collect();
    assert!(!installs.is_empty(), "the README says no cargo install");
    for c in &installs {
        assert!(c.split(' ').any(|w| w == "--locked"), "{c}");
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

/// Each test command the README gives is one CI runs, so that none of them is left to rot.
#[test]
fn every_test_command_in_the_readme_is_run_by_ci() {
    let ci = read(".ci/run");
    let tests: Vec<String> = shell_commands(&read("README.md"))
        .into_iter()
        .filter(|c| c.starts_with("cargo test --locked"))
        .collect();
    assert!(tests.len() >= 3, "{tests:?}");
    for c in &tests {
        assert!(ci.lines().any(|l| l == c), ".ci/run does not run `{c}`");
    }
}
