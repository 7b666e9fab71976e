use clap::Parser;

use session_relay::cli::{Cli, Command};
use session_relay::config::{Config, Overrides};
use session_relay::{commands, exit};

fn main() {
    let cli = Cli::parse();
    commands::init_colors();
    if let Err(err) = run(cli) {
        // A closed pipe (`session-relay list | head`) is not an error worth a message.
        if err
            .chain()
            .filter_map(|e| e.downcast_ref::<std::io::Error>())
            .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        {
            std::process::exit(0);
        }
        eprintln!("session-relay: {err:#}");
        std::process::exit(exit::code_of(&err));
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let cfg = Config::load(&Overrides {
        config_file: cli.config.clone(),
        homes: cli.homes.clone(),
    })?;
    match &cli.command {
        Command::List(a) => commands::list(&cfg, a),
        Command::Show(a) => commands::show(&cfg, a),
        Command::Export(a) => commands::export(&cfg, a),
        Command::Relay(a) => session_relay::relay::run(&cfg, a),
        Command::Clean(a) => session_relay::clean::run(&cfg, a),
    }
}
