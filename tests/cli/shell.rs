//! The command line as a shell user meets it: colours only where they belong, and errors that
//! say what to do.

use crate::common::TestEnv;

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
    let (code, err) = empty.fails(&["list"]);
    assert_eq!(code, 4);
    assert!(err.starts_with("error: no session store found"), "{err}");
    assert!(err.contains("--home"), "{err}");
}
