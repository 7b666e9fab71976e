//! What the command line says about itself: the description (naming the agents of the
//! registry), the examples that end each command's help, the shell completion scripts and the
//! man pages, all generated from the same definitions as the parser.

use std::path::PathBuf;

use clap::CommandFactory;

use super::Cli;

/// The agents, by product name, as the registry lists them: "Claude Code and Codex CLI".
fn agent_names() -> String {
    let names: Vec<&str> = crate::adapters::registry()
        .iter()
        .map(|a| a.display_name())
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

pub(super) fn about() -> String {
    format!(
        "Relay a coding-agent session to another agent so that it goes on there ({})",
        agent_names()
    )
}

pub(super) fn long_about() -> String {
    format!(
        "Relay a coding-agent session to another agent so that it goes on there ({}).\n\n\
         `relay` reads a session from one agent's store, fits it to the other agent's context \
         budget, masks secrets, and writes a native session the other agent's CLI resumes. \
         `list`, `show` and `export` look at sessions; `clean` deletes relayed ones; `doctor` \
         checks the stores and the installed CLIs.",
        agent_names()
    )
}

/// Two agents for examples: the first two of the registry.
fn example_agents() -> (&'static str, &'static str) {
    let names = crate::adapters::names();
    (names[0], names.get(1).copied().unwrap_or(names[0]))
}

fn examples(lines: &[(String, &str)]) -> String {
    let width = lines.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut out = String::from("Examples:");
    for (cmd, what) in lines {
        out.push_str(&format!("\n  {cmd:<width$}  # {what}"));
    }
    out
}

pub(super) fn top_examples() -> String {
    let (a, b) = example_agents();
    let into_b = format!(
        "pick one of this directory's sessions, resume it in {}",
        crate::adapters::display_name(b)
    );
    examples(&[
        (format!("session-relay relay --to {b}"), &into_b),
        (
            format!("session-relay relay latest --to {a} --dry-run"),
            "what relaying the newest one would write",
        ),
    ])
}

pub(super) fn relay_examples() -> String {
    let (a, b) = example_agents();
    examples(&[
        (
            format!("session-relay relay --to {b}"),
            "pick a session (on a terminal) and relay it",
        ),
        (
            format!("session-relay relay latest --to {a}"),
            "this directory's newest session",
        ),
        (
            format!("session-relay relay 771ce1df --to {b} --dry-run"),
            "by id prefix; write nothing, show the budget",
        ),
        (
            format!("session-relay relay latest --to {a} --out handoff/"),
            "a standalone file in ./handoff/ (created)",
        ),
    ])
}

pub(super) fn list_examples() -> String {
    let (_, b) = example_agents();
    examples(&[
        ("session-relay list".into(), "this directory's sessions"),
        (
            format!("session-relay list --all --agent {b} --limit 5"),
            "the newest five of one agent, any directory",
        ),
        (
            "session-relay list --json".into(),
            "for scripts (schema_version 1)",
        ),
    ])
}

pub(super) fn show_examples() -> String {
    let (_, b) = example_agents();
    examples(&[
        (
            "session-relay show".into(),
            "pick a session (on a terminal)",
        ),
        (
            "session-relay show latest".into(),
            "this directory's newest",
        ),
        (
            format!("session-relay show 771ce1df --to {b}"),
            "how a relay would fit the budget",
        ),
    ])
}

pub(super) fn export_examples() -> String {
    examples(&[
        (
            "session-relay export 771ce1df --format markdown -o handoff.md".into(),
            "a handoff document",
        ),
        (
            "session-relay export latest > session.jsonl".into(),
            "the neutral JSONL on standard output",
        ),
    ])
}

pub(super) fn bundle_examples() -> String {
    examples(&[
        (
            "session-relay bundle latest -o handoff.bundle --git".into(),
            "the session and the working tree's changes, for a teammate",
        ),
        (
            "session-relay relay handoff.bundle --to codex --cwd ~/src/app --apply-changes".into(),
            "on the other machine: relay it and check out the changes",
        ),
    ])
}

pub(super) fn clean_examples() -> String {
    examples(&[
        (
            "session-relay clean --dry-run".into(),
            "what would be deleted",
        ),
        (
            "session-relay clean --older-than 30d --yes --quiet".into(),
            "from cron",
        ),
    ])
}

pub(super) fn doctor_examples() -> String {
    examples(&[
        (
            "session-relay doctor".into(),
            "stores, CLIs and their versions, ledger, config",
        ),
        (
            "session-relay doctor --json".into(),
            "the same, for scripts",
        ),
    ])
}

pub(super) fn status_examples() -> String {
    examples(&[
        (
            "session-relay status".into(),
            "this directory's live sessions: context used, relays",
        ),
        (
            "session-relay status --all --json".into(),
            "every directory's, for scripts",
        ),
    ])
}

pub(super) fn log_examples() -> String {
    examples(&[
        (
            "session-relay log".into(),
            "the chain of this directory's newest session, across agents",
        ),
        (
            "session-relay log 771ce1df".into(),
            "the chain of any session in it, first, middle or last",
        ),
        (
            "session-relay log --all --json".into(),
            "every chain, for scripts",
        ),
    ])
}

pub(super) fn stats_examples() -> String {
    examples(&[
        (
            "session-relay stats --since 30d".into(),
            "the last 30 days, per agent, project and chain",
        ),
        (
            "session-relay stats --project . --agent codex".into(),
            "one agent's work in this project",
        ),
        (
            "session-relay stats --html stats.html".into(),
            "also a page with charts, viewable offline",
        ),
    ])
}

pub(super) fn hooks_examples() -> String {
    let (a, b) = example_agents();
    examples(&[
        (
            format!("session-relay hooks install --agent {a}"),
            "relay each session before the agent compacts it",
        ),
        (
            format!("session-relay hooks install --agent codex --to {a} --trust"),
            "Codex runs a new hook only once trusted",
        ),
        (
            "session-relay hooks status".into(),
            "installed hooks and their last runs",
        ),
        (
            format!("session-relay hooks uninstall --agent {b}"),
            "give the agent's hooks file back",
        ),
    ])
}

pub(super) fn hook_examples() -> String {
    let (a, b) = example_agents();
    examples(&[(
        format!(
            "echo '{{\"transcript_path\": \"/path/to/session.jsonl\"}}' | session-relay hook run --to {b} --from {a}"
        ),
        "what the agent runs",
    )])
}

pub(super) fn completions_examples() -> String {
    examples(&[
        (
            "session-relay completions bash > ~/.local/share/bash-completion/completions/session-relay".into(),
            "bash",
        ),
        (
            "session-relay completions zsh > ~/.zfunc/_session-relay".into(),
            "zsh (with fpath+=~/.zfunc)",
        ),
        (
            "session-relay completions fish > ~/.config/fish/completions/session-relay.fish".into(),
            "fish",
        ),
    ])
}

pub(super) fn man_examples() -> String {
    examples(&[
        (
            "session-relay man > ~/.local/share/man/man1/session-relay.1".into(),
            "the main page",
        ),
        (
            "session-relay man --dir ~/.local/share/man/man1".into(),
            "one page per command",
        ),
    ])
}

/// The completion script for `shell`, generated from the same definitions as the parser.
pub fn completions(
    shell: clap_complete::Shell,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    const BIN: &str = "session-relay";
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut script);
    if shell == clap_complete::Shell::Bash {
        // clap_complete's bash script spells the states of a hyphenated command's subcommands
        // two ways (`session__relay__subcmd__relay` when walking the words, the case arms
        // `session__subcmd__relay__subcmd__relay`), so no subcommand's options ever complete
        // (clap-rs/clap#6421). Spell the arms as the walk does; a no-op once that is fixed.
        let text = String::from_utf8_lossy(&script)
            .replace(&BIN.replace('-', "__subcmd__"), &BIN.replace('-', "__"));
        script = text.into_bytes();
    }
    out.write_all(&script)
}

/// The man page of the whole command (its SUBCOMMANDS section names every command).
pub fn man(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut cmd = man_command();
    cmd.build();
    out.write_all(&page(&cmd)?)
}

/// The command as the man pages show it: without clap's `help` subcommand, which has no page
/// of its own (`--help` is on every page).
fn man_command() -> clap::Command {
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    without_help(Cli::command())
}

/// The man pages of the command and of each subcommand not hidden, nested ones included
/// (`session-relay-hooks-install`), written into `dir`; returns the files.
pub fn man_pages(dir: &std::path::Path) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut cmd = man_command();
    cmd.build();
    let mut pages = Vec::new();
    collect_pages(&cmd, &mut pages);
    let mut written = Vec::new();
    for page_cmd in pages {
        // Once built, a command's display name is `session-relay-<name>...`: the page's name.
        let name = page_cmd
            .get_display_name()
            .unwrap_or(page_cmd.get_name())
            .to_string();
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, page(page_cmd)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn collect_pages<'a>(cmd: &'a clap::Command, pages: &mut Vec<&'a clap::Command>) {
    pages.push(cmd);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect_pages(sub, pages);
    }
}

/// One man page: clap_mangen's sections, with the examples that end each command's help as an
/// EXAMPLES section of lines kept as they are (`.nf`), not a paragraph filled to the width.
fn page(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    if let Some(after) = cmd.get_after_help() {
        let mut roff = roff::Roff::new();
        roff.control("SH", ["EXAMPLES"]).control("nf", []);
        for line in after.to_string().lines().filter(|l| *l != "Examples:") {
            roff.text([roff::roman(line)]);
        }
        roff.control("fi", []);
        roff.to_writer(&mut out)?;
    }
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out)?;
    }
    Ok(out)
}
