//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands;

#[derive(Debug, Parser)]
#[command(
    name = "session-relay",
    version,
    about = "Move a coding-agent session between Claude Code and Codex CLI",
    long_about = "Finds the sessions Claude Code and Codex CLI keep on disk, reads them into one \
                  neutral model, and shows or exports them."
)]
pub struct Cli {
    /// Config file (default: $SESSION_RELAY_CONFIG, else the platform config dir).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// An agent's home folder, overriding environment and config: AGENT=DIR
    /// (e.g. claude=~/.claude, codex=~/.codex). Repeatable.
    #[arg(long = "home", global = true, value_name = "AGENT=DIR", value_parser = parse_home)]
    pub homes: Vec<(String, PathBuf)>,

    #[command(subcommand)]
    pub command: Command,
}

fn parse_home(s: &str) -> Result<(String, PathBuf), String> {
    let (agent, dir) = s
        .split_once('=')
        .ok_or_else(|| format!("expected AGENT=DIR, got `{s}`"))?;
    let names = crate::adapters::names();
    if !names.contains(&agent) {
        return Err(format!(
            "unknown agent `{agent}` (known: {})",
            names.join(", ")
        ));
    }
    Ok((agent.to_string(), PathBuf::from(dir)))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List sessions, newest first (default: those of the current directory).
    List(ListArgs),
    /// Show one session: header, counts, tools, files, todos, tokens, warnings.
    Show(ShowArgs),
    /// Export one session as neutral JSONL or as a Markdown handoff document.
    Export(ExportArgs),
    /// Write a session into another agent's store (or a fork into the same agent's) so that
    /// the target CLI resumes it.
    Relay(RelayArgs),
    /// Delete relayed sessions (only those session-relay wrote and can prove it wrote).
    Clean(CleanArgs),
    /// Live sessions with how full their context is and whether an up-to-date relay exists.
    Status(ListArgs),
    /// Install, remove or check the agent hook that relays a session before it is compacted.
    Hooks(HooksArgs),
    /// What an installed agent hook runs (reads the hook's JSON on standard input).
    Hook(HookArgs),
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Register `session-relay hook run` in the agent's own hooks file (PreCompact).
    Install(HooksInstallArgs),
    /// Remove session-relay's hook from the agent's hooks file.
    Uninstall(HooksUninstallArgs),
    /// Which agents have the hook, whether they will run it, and its recent runs.
    Status(HooksStatusArgs),
}

#[derive(Debug, Args)]
pub struct HooksInstallArgs {
    /// The agent whose sessions are relayed (its hooks file gets the hook).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: String,
    /// The agent to relay to (default: the other one).
    #[arg(long, value_name = "AGENT", value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: Option<String>,
    /// Token budget for the relayed session (default: from the target's config).
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    /// Also relay when a session ends (useful when a quota runs out), not only before a
    /// compaction.
    #[arg(long)]
    pub session_end: bool,
    /// For an agent that runs a new hook only once trusted (Codex): record that trust through
    /// the agent itself (`codex app-server`), as its /hooks screen does.
    #[arg(long)]
    pub trust: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HooksUninstallArgs {
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HooksStatusArgs {
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub action: HookAction,
}

#[derive(Debug, Subcommand)]
pub enum HookAction {
    /// Relay the session a hook names on standard input; print one line for the agent.
    /// Always exits 0.
    Run(HookRunArgs),
}

#[derive(Debug, Args)]
pub struct HookRunArgs {
    /// The agent to relay to.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: String,
    /// Token budget for the relayed session.
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
}

impl HooksInstallArgs {
    pub fn options(
        &self,
        config_file: Option<&std::path::Path>,
    ) -> commands::hooks::InstallOptions {
        commands::hooks::InstallOptions {
            agent: self.agent.clone(),
            to: self.to.clone(),
            budget: self.budget,
            session_end: self.session_end,
            trust: self.trust,
            config_file: config_file.map(std::path::Path::to_path_buf),
        }
    }
}

impl HookRunArgs {
    pub fn options(&self) -> commands::hook_run::Options {
        commands::hook_run::Options {
            to: self.to.clone(),
            budget: self.budget,
        }
    }
}

#[derive(Debug, Args)]
pub struct Scope {
    /// Only this agent's sessions.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: Option<String>,
    /// The directory whose sessions to consider (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub scope: Scope,
    /// Every session of every directory.
    #[arg(long, conflicts_with = "cwd")]
    pub all: bool,
    /// At most N sessions.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A full id, a unique id prefix, a file path, or `latest`.
    #[arg(default_value = "latest")]
    pub session: String,
    #[command(flatten)]
    pub scope: Scope,
    /// Report how a relay to this agent would fit its budget (writes nothing).
    #[arg(long, value_name = "AGENT", value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: Option<String>,
    /// With --to: the budget to fit (default: from the target's config).
    #[arg(long, value_name = "N", requires = "to")]
    pub budget: Option<usize>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Jsonl,
    Markdown,
}

// What each command takes from the command line: clap's structs stop here.

impl Scope {
    fn options(&self) -> commands::Scope {
        commands::Scope {
            agent: self.agent.clone(),
            cwd: self.cwd.clone(),
        }
    }
}

impl ListArgs {
    pub fn options(&self) -> commands::list::Options {
        commands::list::Options {
            scope: self.scope.options(),
            all: self.all,
            limit: self.limit,
        }
    }
}

impl ShowArgs {
    pub fn options(&self) -> commands::show::Options {
        commands::show::Options {
            session: self.session.clone(),
            scope: self.scope.options(),
            to: self.to.clone(),
            budget: self.budget,
        }
    }
}

impl ExportArgs {
    pub fn options(&self) -> commands::export::Options {
        commands::export::Options {
            session: self.session.clone(),
            scope: self.scope.options(),
            format: match self.format {
                ExportFormat::Jsonl => commands::export::Format::Jsonl,
                ExportFormat::Markdown => commands::export::Format::Markdown,
            },
            output: self.output.clone(),
            no_redact: self.no_redact,
            to: self.to.clone(),
            budget: self.budget,
        }
    }
}

impl RelayArgs {
    pub fn options(&self) -> commands::relay::Options {
        commands::relay::Options {
            session: self.session.clone(),
            to: self.to.clone(),
            agent: self.agent.clone(),
            cwd: self.cwd.clone(),
            title: self.title.clone(),
            out: self.out.clone(),
            dry_run: self.dry_run,
            budget: self.budget,
            no_redact: self.no_redact,
            force: self.force,
        }
    }
}

impl CleanArgs {
    /// `ask` answers "delete N sessions?" when a person is there to answer.
    pub fn options<'a>(
        &self,
        ask: Option<&'a dyn Fn(usize) -> anyhow::Result<bool>>,
    ) -> commands::clean::Options<'a> {
        commands::clean::Options {
            older_than: match self.older_than {
                Some(d) => Some(d),
                None if self.superseded => None,
                None => Some(chrono::Duration::days(30)),
            },
            superseded: self.superseded,
            agent: self.agent.clone(),
            dry_run: self.dry_run,
            yes: self.yes,
            include_continued: self.include_continued,
            ask,
        }
    }
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A full id, a unique id prefix, a file path, or `latest`.
    #[arg(default_value = "latest")]
    pub session: String,
    #[command(flatten)]
    pub scope: Scope,
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
    /// Write to FILE instead of standard output (atomically; an existing file is not replaced).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Do not mask secrets (API keys, tokens, passwords) in the export.
    #[arg(long)]
    pub no_redact: bool,
    /// Export the session as a relay to AGENT would carry it: fitted to that agent's budget,
    /// with the handoff brief first.
    #[arg(long, value_name = "AGENT", value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: Option<String>,
    /// With --to: the budget to fit (default: from the target's config).
    #[arg(long, value_name = "N", requires = "to")]
    pub budget: Option<usize>,
}

#[derive(Debug, Args)]
pub struct RelayArgs {
    /// A full id, a unique id prefix, a file path, or `latest`.
    #[arg(default_value = "latest")]
    pub session: String,
    /// The agent that will resume the session.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: String,
    /// Only consider this agent's sessions when selecting (for `latest` and prefixes).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: Option<String>,
    /// The directory the session will be resumed in (default: the source's working directory).
    /// `latest` is also looked up in this directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Title shown in the target's session picker.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Write a standalone native session file here (a folder, or a file name) instead of into
    /// the target's store.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Say what would be written, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Token budget for the relayed session (default: from the target's context window; see
    /// config.example.yaml).
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    /// Do not mask secrets (API keys, tokens, passwords) in what is written.
    #[arg(long)]
    pub no_redact: bool,
    /// Relay again even if this unchanged source was already relayed to this target.
    #[arg(long)]
    pub force: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Only sessions relayed longer ago than this (m, h, d, w) [default: 30d; with
    /// --superseded: any age].
    #[arg(long, value_name = "AGE", value_parser = crate::text::parse_age)]
    pub older_than: Option<chrono::Duration>,
    /// Only relays that a newer relay of the same session superseded (the source had grown).
    #[arg(long)]
    pub superseded: bool,
    /// Only this agent's store.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: Option<String>,
    /// Say what would be deleted, and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Delete without asking (required when standard input is not a terminal, e.g. from cron).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Also delete relayed sessions that were continued after the relay.
    #[arg(long)]
    pub include_continued: bool,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[arg(long)]
    pub json: bool,
}
