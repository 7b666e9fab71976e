use std::io::{BufRead, IsTerminal, Write};

use clap::Parser;

use session_relay::cli::{Cli, Command, HookAction, HooksAction};
use session_relay::config::{Config, Overrides};
use session_relay::render::{self, Text};
use session_relay::{commands, exit};

fn main() {
    let cli = Cli::parse();
    render::init_colors();
    if let Err(err) = run(cli) {
        // A closed pipe (`session-relay list | head`) is not an error worth a message.
        if err
            .chain()
            .filter_map(|e| e.downcast_ref::<std::io::Error>())
            .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        {
            std::process::exit(0);
        }
        eprintln!(
            "session-relay: {}",
            session_relay::text::safe(&format!("{err:#}")).replace("\\n", "\n")
        );
        std::process::exit(exit::code_of(&err));
    }
}

/// command line -> options -> command -> typed report -> text or JSON.
fn run(cli: Cli) -> anyhow::Result<()> {
    let cfg = Config::load(&Overrides {
        config_file: cli.config.clone(),
        homes: cli.homes.clone(),
    });
    if let Command::Hook(h) = &cli.command {
        // An agent's hook: whatever goes wrong (even the config) becomes its one line, and the
        // agent goes on.
        let HookAction::Run(a) = &h.action;
        let mut input = Vec::new();
        let _ = std::io::Read::read_to_end(
            &mut std::io::Read::take(std::io::stdin().lock(), 1 << 20),
            &mut input,
        );
        let report = commands::hook_run::run(cfg, &a.options(), &input);
        let _ = report.text(&mut std::io::stdout().lock());
        return Ok(());
    }
    let cfg = cfg?;
    match &cli.command {
        Command::List(a) => render::emit(&commands::list::run(&cfg, &a.options())?, a.json),
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
        Command::Hook(_) => Ok(()),
        Command::Status(a) => render::emit(&commands::status::run(&cfg, &a.options())?, a.json),
        Command::Show(a) => render::emit(&commands::show::run(&cfg, &a.options())?, a.json),
        Command::Export(a) => {
            // The document goes to standard output (or the file); the report to standard error.
            let report = commands::export::run(&cfg, &a.options(), &mut std::io::stdout().lock())?;
            report.text(&mut std::io::stderr().lock())?;
            Ok(())
        }
        Command::Relay(a) => render::emit(&commands::relay::run(&cfg, &a.options())?, a.json),
        Command::Clean(a) => {
            let ask = |n: usize| -> anyhow::Result<bool> {
                print!("Delete {n} relayed session(s)? [y/N] ");
                std::io::stdout().flush()?;
                let mut answer = String::new();
                std::io::stdin().lock().read_line(&mut answer)?;
                Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
            };
            let terminal = std::io::stdin().is_terminal();
            let report = commands::clean::run(
                &cfg,
                &a.options(terminal.then_some(&ask as &dyn Fn(_) -> _)),
            )?;
            if a.quiet && !a.json {
                return Ok(());
            }
            render::emit(&report, a.json)
        }
    }
}
