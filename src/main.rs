use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use session_relay::cli::{Cli, Command, HookAction, HooksAction};
use session_relay::config::{Config, Overrides};
use session_relay::exit::{CliError, ExitCode};
use session_relay::render::progress::Bar;
use session_relay::render::{self, Text};
use session_relay::{commands, exit, progress};

fn main() {
    one_heap_arena_per_core();
    let cli = Cli::parse_args();
    let color = cli.color.choice();
    render::init_colors(color);
    if let Err(err) = run(cli) {
        // A closed pipe (`session-relay list | head`) is not an error worth a message, whether
        // a write or the JSON writer (`export`, written as it is serialised) met it.
        if err.chain().any(|e| {
            e.downcast_ref::<std::io::Error>().map(std::io::Error::kind)
                == Some(std::io::ErrorKind::BrokenPipe)
                || e.downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
                    == Some(std::io::ErrorKind::BrokenPipe)
        }) {
            std::process::exit(0);
        }
        let code = exit::code_of(&err);
        // Closing the picker is the person's choice, not an error.
        if code != ExitCode::Cancelled as i32 {
            render::error(&err, color);
        }
        std::process::exit(code);
    }
}

/// glibc gives each thread that allocates its own heap arena, up to eight per core. A relay
/// parses on every core while other threads hash the source and load the tokenizer, and what
/// each parsing thread keeps stays in that thread's arena, so a long session's messages end up
/// spread over half a dozen partly empty arenas. One arena per core keeps the parse as fast and
/// a long relay's peak resident memory lower. It must run before any other thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_heap_arena_per_core() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
    // SAFETY: mallopt only sets an allocator parameter; it is called once, before any other
    // thread exists, with a valid parameter and a positive value.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_heap_arena_per_core() {}

/// command line -> options -> command -> typed report -> text or JSON.
fn run(cli: Cli) -> anyhow::Result<()> {
    let overrides = Overrides {
        config_file: cli.config.clone(),
        homes: cli.homes.clone(),
    };
    // The commands that run without a valid config file.
    match &cli.command {
        Command::Completions(a) => {
            return Ok(session_relay::cli::completions(
                a.shell,
                &mut std::io::stdout().lock(),
            )?);
        }
        Command::Man(a) => return man(a.dir.as_deref()),
        Command::Doctor(a) => return doctor(&overrides, a.fix, a.json),
        Command::Hook(h) => {
            let HookAction::Run(a) = &h.action;
            hook_run(&overrides, a);
            return Ok(());
        }
        _ => {}
    }
    let cfg = Config::load(&overrides)?;
    match &cli.command {
        Command::List(a) => {
            let bar = Bar::for_command(a.json);
            let report = commands::list::run(&cfg, &a.options(handle(&bar)))?;
            drop(bar);
            render::emit(&report, a.json)
        }
        Command::Status(a) => {
            let bar = Bar::for_command(a.json);
            let report = commands::status::run(&cfg, &a.options(handle(&bar)))?;
            drop(bar);
            render::emit(&report, a.json)
        }
        Command::Log(a) => {
            let bar = Bar::for_command(a.json);
            let report = commands::log::run(&cfg, &a.options(handle(&bar)))?;
            drop(bar);
            render::emit(&report, a.json)
        }
        Command::Stats(a) => stats(&cfg, a),
        Command::Hooks(h) => match &h.action {
            HooksAction::Install(a) => render::emit(
                &commands::hooks::install(&cfg, &a.options(cli.config.as_deref()))?,
                a.json,
            ),
            HooksAction::Uninstall(a) => render::emit(
                &commands::hooks::uninstall(
                    &cfg,
                    &commands::hooks::UninstallOptions {
                        agent: a.agent.clone(),
                    },
                )?,
                a.json,
            ),
            HooksAction::Status(a) => render::emit(&commands::hooks::status(&cfg)?, a.json),
        },
        Command::Show(a) => {
            let session = session_or_pick(&cfg, &a.session, a.scope())?;
            let bar = Bar::for_command(a.json);
            let report = commands::show::run(&cfg, &a.options(session, handle(&bar)))?;
            drop(bar);
            render::emit(&report, a.json)
        }
        Command::Export(a) => {
            let session = session_or_pick(&cfg, &a.session, a.scope())?;
            let bar = Bar::for_command(false);
            // The document goes to standard output (or the file); the report to standard error.
            let report = commands::export::run(
                &cfg,
                &a.options(session, handle(&bar)),
                &mut std::io::stdout().lock(),
            )?;
            drop(bar);
            report.text(&mut std::io::stderr().lock())?;
            Ok(())
        }
        Command::Bundle(a) => {
            let session = session_or_pick(&cfg, &a.session, a.scope())?;
            let bar = Bar::for_command(a.json);
            let report = commands::bundle::run(&cfg, &a.options(session, handle(&bar)))?;
            drop(bar);
            render::emit(&report, a.json)
        }
        Command::Relay(a) => {
            let session = session_or_pick(&cfg, &a.session, a.scope())?;
            let bar = Bar::for_command(a.json);
            let report = commands::relay::run(&cfg, &a.options(session, handle(&bar)))?;
            drop(bar);
            render::emit(&report, a.json)
        }
        Command::Clean(a) => clean(&cfg, a),
        Command::Completions(_) | Command::Man(_) | Command::Doctor(_) | Command::Hook(_) => {
            unreachable!()
        }
    }
}

/// `stats`, and with `--html FILE` its page too.
fn stats(cfg: &Config, a: &session_relay::cli::StatsArgs) -> anyhow::Result<()> {
    let bar = Bar::for_command(a.json);
    let report = commands::stats::run(cfg, &a.options(handle(&bar)))?;
    drop(bar);
    if let Some(file) = &a.html {
        session_relay::fsutil::replace_file(file, render::stats_page(&report).as_bytes())?;
        eprintln!("wrote {}", file.display());
    }
    render::emit(&report, a.json)
}

/// `clean`, asking before it deletes when standard input is a terminal; deletions that failed
/// make the exit code a failure.
fn clean(cfg: &Config, a: &session_relay::cli::CleanArgs) -> anyhow::Result<()> {
    let bar = Bar::for_command(a.json || a.quiet);
    let ask = |n: usize| -> anyhow::Result<bool> {
        let question = || -> anyhow::Result<bool> {
            print!("Delete {n} relayed session(s)? [y/N] ");
            std::io::stdout().flush()?;
            let mut answer = String::new();
            std::io::stdin().lock().read_line(&mut answer)?;
            Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
        };
        match &bar {
            Some(b) => b.suspend(question),
            None => question(),
        }
    };
    let terminal = std::io::stdin().is_terminal();
    let report = commands::clean::run(
        cfg,
        &a.options(terminal.then_some(&ask as &dyn Fn(_) -> _), handle(&bar)),
    )?;
    drop(bar);
    if !a.quiet || a.json {
        render::emit(&report, a.json)?;
    }
    match report.failures() {
        0 => Ok(()),
        n => Err(anyhow::anyhow!(
            "{n} relayed session(s) could not be deleted; they are kept and a later clean tries again"
        )),
    }
}

/// `hook run`: an agent's hook. Whatever goes wrong (even the config) becomes its one line on
/// standard output, and the agent goes on.
fn hook_run(overrides: &Overrides, a: &session_relay::cli::HookRunArgs) {
    let mut input = Vec::new();
    let _ = std::io::Read::read_to_end(
        &mut std::io::Read::take(std::io::stdin().lock(), 1 << 20),
        &mut input,
    );
    let report = commands::hook_run::run(Config::load(overrides), &a.options(), &input);
    let _ = report.text(&mut std::io::stdout().lock());
}

/// `man`: the main page on standard output, or every page into a folder.
fn man(dir: Option<&std::path::Path>) -> anyhow::Result<()> {
    match dir {
        Some(dir) => {
            for page in session_relay::cli::man_pages(dir)? {
                println!("wrote {}", page.display());
            }
        }
        None => session_relay::cli::man(&mut std::io::stdout().lock())?,
    }
    Ok(())
}

/// `doctor`: a broken config file is one of the things it reports, so it runs without one.
fn doctor(overrides: &Overrides, fix: bool, json: bool) -> anyhow::Result<()> {
    let (cfg, config_error) = match Config::load(overrides) {
        Ok(cfg) => (cfg, None),
        Err(e) => (
            Config::load(&Overrides {
                config_file: Some("/dev/null".into()),
                ..overrides.clone()
            })?,
            Some(format!("{e:#}")),
        ),
    };
    let report = commands::doctor::run(&cfg, &commands::doctor::Options { config_error, fix });
    render::emit(&report, json)
}

/// The progress listener a command gets: the bar, when one is shown.
fn handle(bar: &Option<Arc<Bar>>) -> progress::Handle {
    bar.clone().map(|b| b as Arc<dyn progress::Progress>)
}

/// SESSION as given; when omitted, the one picked from a list when a person is at a terminal,
/// else `latest`.
fn session_or_pick(
    cfg: &Config,
    given: &Option<String>,
    scope: commands::Scope,
) -> anyhow::Result<String> {
    if let Some(s) = given {
        return Ok(s.clone());
    }
    let terminal = std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal();
    if !terminal {
        return Ok("latest".into());
    }
    let bar = Bar::for_command(false);
    let found = commands::pick::candidates(
        cfg,
        &commands::pick::Options {
            scope,
            progress: handle(&bar),
        },
    )?;
    drop(bar);
    render::warnings(&found.warnings);
    match render::picker::pick(cfg, found)? {
        render::picker::Picked::Session(path) => Ok(path.display().to_string()),
        // `latest` then says there is none, and where to look instead.
        render::picker::Picked::Empty => Ok("latest".into()),
        render::picker::Picked::Cancelled => {
            Err(CliError::new(ExitCode::Cancelled, "no session picked").into())
        }
    }
}
