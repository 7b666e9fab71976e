//! The command line as a shell user meets it: help that teaches, completions for every shell,
//! the man page, colours only where they belong, and errors that say what to do.

use clap::CommandFactory;
use session_relay::cli::Cli;

use crate::common::TestEnv;

/// Every argument of `cmd` and its subcommands, with the path of commands leading to it.
fn every_arg(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Arg)>) {
    for a in cmd.get_arguments() {
        out.push((path.to_string(), a.clone()));
    }
    for sub in cmd.get_subcommands() {
        every_arg(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

#[test]
fn every_flag_and_argument_has_a_one_line_help() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut args = Vec::new();
    every_arg(&cmd, "session-relay", &mut args);
    assert!(args.len() > 40, "{}", args.len());
    for (path, a) in args {
        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
        assert!(
            !help.trim().is_empty(),
            "`{path}` has no help for {}",
            a.get_id()
        );
        let first_line = help.lines().next().unwrap_or("");
        assert!(
            !first_line.is_empty(),
            "`{path} {}`: help starts with an empty line",
            a.get_id()
        );
    }
}

#[test]
fn help_leads_with_relay_and_every_command_ends_with_examples() {
    let env = TestEnv::empty();
    let top = env.ok(&["--help"]);
    // The agents come from the registry.
    for a in session_relay::adapters::registry() {
        assert!(top.contains(a.display_name()), "{top}");
    }
    let commands = &top[top.find("Commands:").unwrap()..top.find("Options:").unwrap()];
    let listed: Vec<&str> = commands
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // Relay first, then in the order people come to them; what an agent's hook runs is not
    // for typing, and not listed.
    assert_eq!(
        listed,
        [
            "relay",
            "list",
            "show",
            "status",
            "log",
            "stats",
            "export",
            "bundle",
            "hooks",
            "clean",
            "doctor",
            "completions",
            "man",
            "help"
        ],
        "{top}"
    );
    assert!(env.ok(&["hook", "--help"]).contains("run"));
    let examples = &top[top.find("Examples:").expect("top-level examples")..];
    assert_eq!(
        examples
            .lines()
            .filter(|l| l.trim_start().starts_with("session-relay relay"))
            .count(),
        2,
        "{examples}"
    );
    let short = env.ok(&["-h"]);
    assert!(short.contains("Examples:"), "{short}");
    let cmd = Cli::command();
    for sub in cmd.get_subcommands() {
        let name = sub.get_name();
        let help = env.ok(&[name, "--help"]);
        let tail = &help[help
            .rfind("Examples:")
            .unwrap_or_else(|| panic!("{name}: {help}"))..];
        assert!(
            tail.lines().skip(1).all(|l| l.contains("session-relay")),
            "{name}: the help ends with examples:\n{help}"
        );
    }
    let relay = env.ok(&["relay", "--help"]);
    assert!(relay.contains("--json"), "{relay}");
    assert!(
        relay.contains("Print the report as JSON (with schema_version)"),
        "{relay}"
    );
}

#[test]
fn completions_for_every_shell() {
    let env = TestEnv::empty();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = env.ok(&["completions", shell]);
        assert!(script.len() > 1000, "{shell}: {script}");
        for word in ["relay", "doctor", "to", "dry-run", "claude", "codex"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
    }
    // The bash script is valid bash, and completes the subcommands and the agents.
    let script = env.work().join("session-relay.bash");
    std::fs::write(&script, env.ok(&["completions", "bash"])).unwrap();
    let out = env
        .cmd_of("bash")
        .arg("-c")
        .arg(format!(
            "source {} && COMP_WORDS=(session-relay re) COMP_CWORD=1 && \
             _session__relay session-relay re session-relay && echo \"${{COMPREPLY[@]}}\" && \
             COMP_WORDS=(session-relay relay --to '') COMP_CWORD=3 && \
             _session__relay session-relay '' --to && echo \"${{COMPREPLY[@]}}\" && \
             COMP_WORDS=(session-relay relay --dr) COMP_CWORD=2 && \
             _session__relay session-relay --dr relay && echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines[0], "relay", "{said}");
    for agent in session_relay::adapters::names() {
        assert!(lines[1].split(' ').any(|w| w == agent), "{said}");
    }
    // A subcommand's own options (clap-rs/clap#6421 broke them for hyphenated names).
    assert_eq!(lines[2], "--dry-run", "{said}");
    let (code, err) = env.fails(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_man_page_documents_every_command() {
    let env = TestEnv::empty();
    let page = env.ok(&["man"]);
    assert!(page.contains(".TH session-relay 1"), "{page}");
    for sub in ["relay", "list", "show", "export", "clean", "doctor"] {
        assert!(page.contains(sub), "{sub}");
    }
    // One page per command into a folder.
    let dir = env.work().join("man1");
    env.ok(&["man", "--dir", dir.to_str().unwrap()]);
    for name in [
        "session-relay",
        "session-relay-relay",
        "session-relay-doctor",
    ] {
        let p = std::fs::read_to_string(dir.join(format!("{name}.1"))).unwrap();
        assert!(p.contains(&format!(".TH {name} 1")), "{name}: {p}");
    }
    let relay = std::fs::read_to_string(dir.join("session-relay-relay.1")).unwrap();
    assert!(relay.contains("dry\\-run"), "{relay}");
    // Examples are lines of their own, not a paragraph to fill: one command a line, between
    // `.nf` and `.fi`.
    let examples = &relay[relay.find(".SH EXAMPLES").expect(".SH EXAMPLES")..];
    let block: Vec<&str> = examples
        .lines()
        .skip(1)
        .take_while(|l| *l != ".fi")
        .collect();
    assert_eq!(block.first(), Some(&".nf"), "{examples}");
    assert!(block.len() >= 4, "{examples}");
    assert!(
        block[1..]
            .iter()
            .all(|l| l.contains("session\\-relay relay")),
        "{examples}"
    );
    // Every page a page names is one written, and nothing hidden is named.
    let written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    for name in &written {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        for (at, _) in text.match_indices("session\\-relay\\-") {
            let roff: String = text[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '\\' || *c == '-')
                .collect();
            if text[at + roff.len()..].starts_with("(1)") {
                let page = format!("{}.1", roff.replace("\\-", "-"));
                assert!(
                    written.contains(&page),
                    "{name} names {page}, which is not written: {written:?}"
                );
            }
        }
        assert!(!text.contains("session\\-relay\\-help"), "{name}");
        assert!(!text.contains("session\\-relay\\-hook("), "{name}");
    }
    assert!(
        written.contains(&"session-relay-hooks-install.1".to_string()),
        "{written:?}"
    );
}

/// The short flags of the common options, as ripgrep, fd and cargo users expect them.
#[test]
fn common_options_have_short_flags() {
    let env = TestEnv::with_fixtures();
    let long = env.ok(&["list", "--all", "--limit", "2", "--json"]);
    assert_eq!(env.ok(&["list", "-a", "-n", "2", "--json"]), long);
    assert_eq!(env.ok(&["list", "-an2", "--json"]), long);
    let proj = env.project();
    let dry = env.json(&[
        "relay",
        "771ce1df",
        "-t",
        "codex",
        "-C",
        &proj,
        "--dry-run",
        "--json",
    ]);
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(
        dry["cwd"],
        std::fs::canonicalize(&proj).unwrap().to_str().unwrap()
    );
}

/// (stdout, stderr) of a run, with or without NO_COLOR and `--color`.
fn run(env: &TestEnv, no_color: bool, args: &[&str]) -> (String, String) {
    let mut cmd = env.cmd();
    if !no_color {
        cmd.env_remove("NO_COLOR");
    }
    let out = cmd.args(args).output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn no_escape_codes_when_piped_or_with_no_color_and_colours_only_when_asked() {
    let env = TestEnv::with_fixtures();
    let runs: &[&[&str]] = &[
        &["list", "--all"],
        &["show", "771ce1df"],
        &["doctor"],
        &["show", "no-such-session"],
        &["relay", "771ce1df", "--to", "codex", "--dry-run"],
        &["export", "771ce1df", "--format", "markdown"],
        &["--help"],
        &["relay", "--bogus"],
    ];
    for args in runs {
        for no_color in [false, true] {
            let (out, err) = run(&env, no_color, args);
            assert!(
                !out.contains('\x1b') && !err.contains('\x1b'),
                "{args:?} (NO_COLOR {no_color}) printed an escape code into a pipe:\n{out}\n{err}"
            );
        }
        let mut never = vec!["--color", "never"];
        never.extend_from_slice(args);
        let (out, err) = run(&env, false, &never);
        assert!(!out.contains('\x1b') && !err.contains('\x1b'), "{never:?}");
    }
    // `--color always` colours even into a pipe, and wins over NO_COLOR; so the checks above
    // would have seen colours.
    for no_color in [false, true] {
        let (out, _) = run(&env, no_color, &["--color", "always", "list", "--all"]);
        assert!(out.contains("\x1b["), "{out}");
        let (_, err) = run(
            &env,
            no_color,
            &["--color=always", "show", "no-such-session"],
        );
        assert!(err.contains("\x1b["), "{err}");
    }
    let (code, err) = env.fails(&["--color", "sometimes", "list"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn errors_start_with_error_and_say_what_to_do() {
    let env = TestEnv::with_fixtures();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["show", "no-such-session"], 3, "session-relay list --all"),
        (&["show", "0"], 3, "Use more characters"),
        (
            &["relay", "0c5f1e7a", "--to", "claude"],
            2,
            "pass --cwd DIR",
        ),
        (&["list", "--agent", "nobody"], 2, "possible values"),
    ];
    for (args, code, hint) in cases {
        let (got, err) = env.fails(args);
        assert_eq!(got, *code, "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
    }
    let empty = TestEnv::empty();
    std::fs::remove_dir_all(empty.home("codex")).unwrap();
    std::fs::remove_dir_all(empty.home("claude")).unwrap();
    std::fs::remove_dir_all(empty.home("opencode")).unwrap();
    let (code, err) = empty.fails(&["list"]);
    assert_eq!(code, 4);
    assert!(err.starts_with("error: no session store found"), "{err}");
    assert!(err.contains("--home"), "{err}");
}
