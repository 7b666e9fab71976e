//! The command line.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::{commands, progress};

mod help;

use help::{
    about, bundle_examples, clean_examples, completions_examples, doctor_examples, export_examples,
    hook_examples, hooks_examples, list_examples, log_examples, long_about, man_examples,
    relay_examples, show_examples, stats_examples, status_examples, top_examples,
};
pub use help::{completions, man, man_pages};

#[derive(Debug, Parser)]
#[command(
    name = "session-relay",
    version,
    about = about(),
    long_about = long_about(),
    after_help = top_examples(),
)]
pub struct Cli {
    /// Config file (default: $SESSION_RELAY_CONFIG, else the platform config dir).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// An agent's home folder, overriding environment and config: AGENT=DIR
    /// (e.g. claude=~/.claude, codex=~/.codex). Repeatable.
    #[arg(long = "home", global = true, value_name = "AGENT=DIR", value_parser = parse_home)]
    pub homes: Vec<(String, PathBuf)>,

    /// When to colour the output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub color: Color,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always, even into a pipe or with NO_COLOR.
    Always,
    /// Never.
    Never,
}

impl Color {
    pub fn choice(self) -> crate::render::ColorChoice {
        match self {
            Color::Auto => crate::render::ColorChoice::Auto,
            Color::Always => crate::render::ColorChoice::Always,
            Color::Never => crate::render::ColorChoice::Never,
        }
    }
}

impl Cli {
    /// Parses the command line; clap's own help and errors are coloured as `--color` says.
    pub fn parse_args() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let mut cmd = Cli::command().color(match color_arg(&args) {
            Some(Color::Always) => clap::ColorChoice::Always,
            Some(Color::Never) => clap::ColorChoice::Never,
            _ if crate::render::no_color_env() => clap::ColorChoice::Never,
            _ => clap::ColorChoice::Auto,
        });
        let matches = cmd
            .try_get_matches_from_mut(args)
            .unwrap_or_else(|e| e.exit());
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut cmd).exit())
    }
}

/// `--color WHEN` / `--color=WHEN` before clap has parsed anything (it colours its own errors).
fn color_arg(args: &[std::ffi::OsString]) -> Option<Color> {
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        let value = match a.as_ref() {
            "--" => return None,
            "--color" => it.next().map(|v| v.into_owned()),
            _ => a.strip_prefix("--color=").map(str::to_string),
        };
        if let Some(v) = value {
            return Color::from_str(&v, false).ok();
        }
    }
    None
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

/// In the order people come to them: relay first, then looking at sessions, the hooks, and
/// keeping things tidy. `hook` is what an agent's hook runs, not for typing: hidden.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a session into another agent's store (or a fork into the same agent's) so that
    /// the target CLI resumes it.
    #[command(after_help = relay_examples())]
    Relay(RelayArgs),
    /// List sessions, newest first (default: those of the current directory).
    #[command(after_help = list_examples())]
    List(ListArgs),
    /// Show one session: header, counts, tools, files, todos, tokens, warnings.
    #[command(after_help = show_examples())]
    Show(ShowArgs),
    /// Live sessions with how full their context is and whether an up-to-date relay exists.
    #[command(after_help = status_examples())]
    Status(ListArgs),
    /// The lineage of a task across agents: the sessions relayed one from another, what each
    /// relay kept, and which were continued.
    #[command(after_help = log_examples())]
    Log(LogArgs),
    /// How the agents do on this machine's work: sessions, turns, tool calls and errors,
    /// interventions, tokens and relays, per agent, project and chain.
    #[command(after_help = stats_examples())]
    Stats(StatsArgs),
    /// Export one session as neutral JSONL or as a Markdown handoff document.
    #[command(after_help = export_examples())]
    Export(ExportArgs),
    /// Write one session, masked, with its file-state snapshot (and with --git the working
    /// tree's changes) into one file that another machine relays from.
    #[command(after_help = bundle_examples())]
    Bundle(BundleArgs),
    /// Install, remove or check the agent hook that relays a session before it is compacted.
    #[command(after_help = hooks_examples())]
    Hooks(HooksArgs),
    /// Delete relayed sessions (only those session-relay wrote and can prove it wrote).
    #[command(after_help = clean_examples())]
    Clean(CleanArgs),
    /// Check the agents' homes and stores, their installed CLIs against the versions
    /// session-relay is verified with, the ledger and the config, and say what to fix.
    #[command(after_help = doctor_examples())]
    Doctor(DoctorArgs),
    /// Print a shell completion script.
    #[command(after_help = completions_examples())]
    Completions(CompletionsArgs),
    /// Print the man page (or write one page per command into a folder).
    #[command(after_help = man_examples())]
    Man(ManArgs),
    /// What an installed agent hook runs (reads the hook's JSON on standard input).
    #[command(hide = true, after_help = hook_examples())]
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
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HooksUninstallArgs {
    /// The agent whose hooks file to give back.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: String,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct HooksStatusArgs {
    #[arg(long, help = JSON_HELP)]
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
    /// The agent that runs the hook: only a session in its store is relayed (without it, a
    /// session in any agent's store).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub from: Option<String>,
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
            from: self.from.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct Scope {
    /// Only this agent's sessions.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: Option<String>,
    /// The directory whose sessions to consider (default: the current directory).
    #[arg(short = 'C', long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// The session a command is about.
const SESSION_HELP: &str = "A full id, a unique id prefix, a file path, or `latest`. Omitted: \
                            pick one from a list on a terminal, else `latest`.";

/// `--json` of every command.
const JSON_HELP: &str = "Print the report as JSON (with schema_version) instead of text.";

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub scope: Scope,
    /// Every session of every directory.
    #[arg(short, long, conflicts_with = "cwd")]
    pub all: bool,
    /// At most N sessions.
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<usize>,
    /// Show titles as they are, secrets included (by default they are masked).
    #[arg(long)]
    pub no_redact: bool,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[arg(value_name = "SESSION", help = SESSION_HELP)]
    pub session: Option<String>,
    #[command(flatten)]
    pub scope: Scope,
    /// Pick from (or take the latest of) every directory's sessions.
    #[arg(short, long, conflicts_with = "cwd")]
    pub all: bool,
    /// Report how a relay to this agent would fit its budget (writes nothing).
    #[arg(short, long, value_name = "AGENT", value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: Option<String>,
    /// With --to: the budget to fit (default: from the target's config).
    #[arg(long, value_name = "N", requires = "to")]
    pub budget: Option<usize>,
    /// Show titles, todos and files as they are, secrets included (by default they are masked).
    #[arg(long, conflicts_with = "to")]
    pub no_redact: bool,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Any session of the chain: a full id, a unique id prefix, a file path, or `latest`
    /// (the default: this directory's newest session). A session deleted since is found by
    /// its id or path in the ledger.
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    #[command(flatten)]
    pub scope: Scope,
    /// Every chain the ledger and the stores know, not only SESSION's.
    #[arg(short, long, conflicts_with = "session")]
    pub all: bool,
    /// Also show each relay's commit in the archive (`archive: git`): the configured one, or
    /// --archive=DIR.
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub archive: Option<std::ffi::OsString>,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

impl LogArgs {
    pub fn options(&self, progress: progress::Handle) -> commands::log::Options {
        commands::log::Options {
            session: self.session.clone().unwrap_or_else(|| "latest".into()),
            scope: self.scope.options(false),
            every_chain: self.all,
            archive: self.archive.as_ref().map(|d| {
                let d = PathBuf::from(d);
                (!d.as_os_str().is_empty()).then(|| std::path::absolute(&d).unwrap_or(d))
            }),
            progress,
        }
    }
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Only sessions last active, and relays made, this long ago or less: 30d, 12h, 2w, 45m.
    #[arg(long, value_name = "AGE", value_parser = crate::text::parse_age)]
    pub since: Option<chrono::Duration>,
    /// Only this agent's sessions, and the relays from or to it.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: Option<String>,
    /// Only the sessions (and relays) of this directory and the directories inside it.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
    /// Also write the figures as one page with charts, viewable offline, to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl StatsArgs {
    pub fn options(&self, progress: progress::Handle) -> commands::stats::Options {
        commands::stats::Options {
            since: self.since,
            agent: self.agent.clone(),
            project: self.project.clone(),
            progress,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// The neutral session model, one JSON object a line (session-relay reads it back).
    Jsonl,
    /// A handoff document for people and for agents without a store.
    Markdown,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[arg(value_name = "SESSION", help = SESSION_HELP)]
    pub session: Option<String>,
    #[command(flatten)]
    pub scope: Scope,
    /// Pick from (or take the latest of) every directory's sessions.
    #[arg(short, long, conflicts_with = "cwd")]
    pub all: bool,
    /// What to write: the neutral session (jsonl) or a handoff document (markdown).
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
    #[arg(short, long, value_name = "AGENT", value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: Option<String>,
    /// With --to: the budget to fit (default: from the target's config).
    #[arg(long, value_name = "N", requires = "to")]
    pub budget: Option<usize>,
}

#[derive(Debug, Args)]
pub struct RelayArgs {
    #[arg(value_name = "SESSION", help = SESSION_HELP)]
    pub session: Option<String>,
    /// The agent that will resume the session.
    #[arg(short, long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub to: String,
    /// Only consider this agent's sessions when selecting (for `latest` and prefixes).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::adapters::names()))]
    pub agent: Option<String>,
    /// The directory the session will be resumed in (default: the source's working directory).
    /// `latest` is also looked up in this directory.
    #[arg(short = 'C', long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Pick from (or take the latest of) every directory's sessions.
    #[arg(short, long)]
    pub all: bool,
    /// Title shown in the target's session picker.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Write a standalone native session file instead of into the target's store: into the
    /// folder PATH when it exists or ends with / (created), else to the file PATH.
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
    #[arg(short, long)]
    pub force: bool,
    /// From a bundle made with --git: fetch its branch into the checkout at --cwd (or the
    /// current directory) and check it out; refused if that checkout has uncommitted changes
    /// or lacks the commit the changes are on.
    #[arg(long)]
    pub apply_changes: bool,
    /// Also commit this relay (the relayed session, masked, its report and file-state
    /// snapshot) to the git archive in DIR, created when new; as `archive: git` in the config
    /// does for every relay. A failure to archive is a warning, not the relay's failure.
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    #[arg(value_name = "SESSION", help = SESSION_HELP)]
    pub session: Option<String>,
    #[command(flatten)]
    pub scope: Scope,
    /// Pick from (or take the latest of) every directory's sessions.
    #[arg(short, long, conflicts_with = "cwd")]
    pub all: bool,
    /// The bundle file to write (an existing file is not replaced).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Do not mask secrets (API keys, tokens, passwords) in the bundle.
    #[arg(long)]
    pub no_redact: bool,
    /// Also carry the working tree's changes since HEAD (tracked and untracked, as .gitignore
    /// leaves them) as a git bundle of the branch relay/<short id>, committed in a temporary
    /// index: your branch, index, stash and refs are not touched. The checkout is the
    /// session's directory, or --cwd.
    #[arg(long)]
    pub git: bool,
    /// With --git: carry changes that hold what looks like a secret (refused otherwise).
    #[arg(long, requires = "git")]
    pub allow_secrets: bool,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

impl BundleArgs {
    /// The sessions the picker offers.
    pub fn scope(&self) -> commands::Scope {
        self.scope.options(self.all)
    }

    pub fn options(
        &self,
        session: String,
        progress: progress::Handle,
    ) -> commands::bundle::Options {
        commands::bundle::Options {
            session,
            scope: self.scope(),
            output: self.output.clone(),
            no_redact: self.no_redact,
            git: self.git,
            allow_secrets: self.allow_secrets,
            progress,
        }
    }
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
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Complete what an interrupted or failed relay left undone: register its session in the
    /// target agent's index (its picker lists it then).
    #[arg(long)]
    pub fix: bool,
    #[arg(long, help = JSON_HELP)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write session-relay.1 and one page per command (session-relay-relay.1, ...) into DIR
    /// instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

// What each command takes from the command line: clap's structs stop here. SESSION is passed
// in already resolved (`main` opens the picker when it was omitted on a terminal).

impl Scope {
    fn options(&self, all: bool) -> commands::Scope {
        commands::Scope {
            agent: self.agent.clone(),
            cwd: self.cwd.clone(),
            all,
        }
    }
}

impl ListArgs {
    pub fn options(&self, progress: progress::Handle) -> commands::list::Options {
        commands::list::Options {
            scope: self.scope.options(self.all),
            limit: self.limit,
            no_redact: self.no_redact,
            progress,
        }
    }
}

impl ShowArgs {
    /// The sessions the picker offers.
    pub fn scope(&self) -> commands::Scope {
        self.scope.options(self.all)
    }

    pub fn options(&self, session: String, progress: progress::Handle) -> commands::show::Options {
        commands::show::Options {
            session,
            scope: self.scope(),
            to: self.to.clone(),
            budget: self.budget,
            no_redact: self.no_redact,
            progress,
        }
    }
}

impl ExportArgs {
    /// The sessions the picker offers.
    pub fn scope(&self) -> commands::Scope {
        self.scope.options(self.all)
    }

    pub fn options(
        &self,
        session: String,
        progress: progress::Handle,
    ) -> commands::export::Options {
        commands::export::Options {
            session,
            scope: self.scope(),
            format: match self.format {
                ExportFormat::Jsonl => commands::export::Format::Jsonl,
                ExportFormat::Markdown => commands::export::Format::Markdown,
            },
            output: self.output.clone(),
            no_redact: self.no_redact,
            to: self.to.clone(),
            budget: self.budget,
            progress,
        }
    }
}

impl RelayArgs {
    /// The sessions the picker offers.
    pub fn scope(&self) -> commands::Scope {
        commands::Scope {
            agent: self.agent.clone(),
            cwd: self.cwd.clone(),
            all: self.all,
        }
    }

    pub fn options(&self, session: String, progress: progress::Handle) -> commands::relay::Options {
        commands::relay::Options {
            session,
            to: self.to.clone(),
            agent: self.agent.clone(),
            cwd: self.cwd.clone(),
            title: self.title.clone(),
            out: self.out.clone(),
            dry_run: self.dry_run,
            budget: self.budget,
            no_redact: self.no_redact,
            force: self.force,
            all: self.all,
            apply_changes: self.apply_changes,
            archive: self.archive.clone(),
            progress,
        }
    }
}

impl CleanArgs {
    /// `ask` answers "delete N sessions?" when a person is there to answer.
    pub fn options<'a>(
        &self,
        ask: Option<&'a dyn Fn(usize) -> anyhow::Result<bool>>,
        progress: progress::Handle,
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
            progress,
        }
    }
}
