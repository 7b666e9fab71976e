//! `session-relay doctor`: what session-relay finds on this machine — each agent's home and
//! store, its installed CLI and whether that version is one the writers were verified against
//! (`Cli::verified_versions` of each `Agent`), the config file, the state folder and ledger, and hooks — and
//! for each problem, what to do.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::adapter::Adapter;
use crate::config::{Config, Origin};
use crate::ledger;

pub struct Options {
    /// The config file could not be loaded: why. The checks then use the defaults.
    pub config_error: Option<String>,
    /// Complete what can be completed: the registration of relays the target's indexes do
    /// not list yet.
    pub fix: bool,
}

#[derive(Debug, Serialize)]
pub struct Report {
    /// session-relay's own version.
    pub version: &'static str,
    pub agents: Vec<AgentCheck>,
    pub config: ConfigCheck,
    pub state: StateCheck,
    pub hooks: HooksCheck,
    /// Everything worth acting on, each with what to do.
    pub problems: Vec<Problem>,
}

#[derive(Debug, Serialize)]
pub struct AgentCheck {
    pub agent: &'static str,
    pub display_name: &'static str,
    pub home: String,
    /// Where the home was set: default, file, env or flag.
    pub home_from: Origin,
    pub home_env: &'static str,
    pub home_exists: bool,
    pub stores: Vec<StoreDir>,
    /// Session files in the stores (subagent transcripts included).
    pub sessions: usize,
    pub cli: CliCheck,
}

#[derive(Debug, Serialize)]
pub struct StoreDir {
    pub path: String,
    pub exists: bool,
}

#[derive(Debug, Serialize)]
pub struct CliCheck {
    /// The program looked for on PATH; `null` when the agent has none to check.
    pub command: Option<&'static str>,
    /// Where it was found.
    pub path: Option<String>,
    /// The version it reported (`COMMAND --version`).
    pub version: Option<String>,
    /// The versions session-relay's writer for this agent was verified against.
    pub verified: Vec<&'static str>,
    pub status: CliStatus,
    /// Why the version could not be read, when it could not.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CliStatus {
    /// One of the verified versions.
    Verified,
    /// Newer than every verified version.
    Newer,
    /// Older than every verified version.
    Older,
    /// Between verified versions, but not one of them.
    Unverified,
    /// Found, but its version could not be read.
    UnknownVersion,
    NotInstalled,
    /// The adapter names no CLI.
    NoCli,
}

#[derive(Debug, Serialize)]
pub struct ConfigCheck {
    /// The file read; `null` when none was (the defaults apply).
    pub file: Option<String>,
    /// Where the file is looked for when neither --config nor $SESSION_RELAY_CONFIG says.
    pub default_path: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct StateCheck {
    pub dir: Option<String>,
    pub exists: bool,
    pub ledger: LedgerCheck,
}

#[derive(Debug, Serialize)]
pub struct LedgerCheck {
    pub path: Option<String>,
    pub exists: bool,
    /// Relays recorded.
    pub relays: usize,
    /// Relayed sessions deleted by `clean`.
    pub cleaned: usize,
    /// Relayed sessions (in a store) still on disk.
    pub relayed_present: usize,
    /// Lines that could not be read.
    pub damaged: Vec<String>,
    /// Relayed sessions on disk that their agent's indexes may not list (the relay was
    /// interrupted before registering them, or its registration failed), left as they are.
    pub unregistered: Vec<String>,
    /// Those `--fix` registered.
    pub registered_now: Vec<String>,
}

/// Hooks session-relay installs into agents' settings.
#[derive(Debug, Serialize)]
pub struct HooksCheck {
    /// Whether this build installs hooks at all.
    pub supported: bool,
    pub hooks: Vec<HookCheck>,
}

#[derive(Debug, Serialize)]
pub struct HookCheck {
    pub agent: String,
    /// The settings file that holds the hook.
    pub path: String,
    /// installed, missing, outdated.
    pub state: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Worth knowing; nothing is broken.
    Note,
    /// Something may not work.
    Warning,
    /// Something does not work.
    Error,
}

#[derive(Debug, Serialize)]
pub struct Problem {
    pub level: Level,
    /// The agent concerned, if one.
    pub agent: Option<&'static str>,
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

/// How long a CLI may take to say its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(cfg: &Config, opts: &Options) -> Report {
    let mut problems = Vec::new();
    let agents: Vec<AgentCheck> = crate::adapters::registry()
        .iter()
        .map(|a| check_agent(cfg, *a, &mut problems))
        .collect();
    if agents.iter().all(|a| !a.home_exists) {
        problems.push(Problem {
            level: Level::Error,
            agent: None,
            problem: "no agent home found: there is nothing to list or relay".into(),
            fix: "install and run an agent once, or point to its home with --home AGENT=DIR or \
                  agents.<agent>.session_root in the config file"
                .into(),
        });
    }
    let config = ConfigCheck {
        file: cfg.file.as_ref().map(|f| f.display().to_string()),
        default_path: crate::paths::default_config_path().map(|p| p.display().to_string()),
        error: opts.config_error.clone(),
    };
    if let Some(e) = &opts.config_error {
        problems.push(Problem {
            level: Level::Error,
            agent: None,
            problem: format!("the config file cannot be used: {e}"),
            fix: "correct the file at the line named (config.example.yaml documents every key), \
                  or move it away to use the defaults; the checks above use the defaults"
                .into(),
        });
    }
    let state = check_state(cfg, opts.fix, &mut problems);
    let (hooks, hook_problems) = check_hooks(cfg);
    problems.extend(hook_problems);
    problems.sort_by_key(|p| std::cmp::Reverse(p.level));
    Report {
        version: env!("CARGO_PKG_VERSION"),
        agents,
        config,
        state,
        hooks,
        problems,
    }
}

fn check_agent(cfg: &Config, a: &'static dyn Adapter, problems: &mut Vec<Problem>) -> AgentCheck {
    let settings = cfg.agent(a.name());
    let home = &settings.session_root;
    let home_exists = home.is_dir();
    let stores: Vec<StoreDir> = a
        .store_dirs(home)
        .into_iter()
        .map(|d| StoreDir {
            // A folder, or a store's database file (OpenCode).
            exists: d.exists(),
            path: d.display().to_string(),
        })
        .collect();
    let sessions = if home_exists {
        a.session_files(home).len()
    } else {
        0
    };
    let point = format!(
        "{}=DIR, --home {}=DIR or agents.{}.session_root in the config file",
        a.home_env(),
        a.name(),
        a.name()
    );
    if !home_exists {
        problems.push(Problem {
            level: Level::Warning,
            agent: Some(a.name()),
            problem: format!(
                "{} home {} not found: its sessions cannot be listed, nor relayed to it",
                a.display_name(),
                home.display()
            ),
            fix: format!(
                "run {} once to create it, or point to it with {point}",
                a.cli_command().unwrap_or(a.display_name())
            ),
        });
    } else if !stores.iter().any(|s| s.exists) {
        problems.push(Problem {
            level: Level::Note,
            agent: Some(a.name()),
            problem: format!(
                "{} has no session store yet under {}",
                a.display_name(),
                home.display()
            ),
            fix: format!(
                "start a session in {} once; if its sessions are elsewhere, point to them with {point}",
                a.display_name()
            ),
        });
    }
    let cli = check_cli(a, problems);
    AgentCheck {
        agent: a.name(),
        display_name: a.display_name(),
        home: home.display().to_string(),
        home_from: settings.session_root_from,
        home_env: a.home_env(),
        home_exists,
        stores,
        sessions,
        cli,
    }
}

fn check_cli(a: &dyn Adapter, problems: &mut Vec<Problem>) -> CliCheck {
    let verified = a.verified_versions().to_vec();
    let mut check = CliCheck {
        command: a.cli_command(),
        path: None,
        version: None,
        verified: verified.clone(),
        status: CliStatus::NoCli,
        error: None,
    };
    let Some(command) = a.cli_command() else {
        return check;
    };
    let install = a
        .cli_install()
        .map(|i| format!("install it: {i}"))
        .unwrap_or_else(|| format!("install {}", a.display_name()));
    let Some(path) = find_on_path(command) else {
        check.status = CliStatus::NotInstalled;
        problems.push(Problem {
            level: Level::Warning,
            agent: Some(a.name()),
            problem: format!(
                "`{command}` is not on PATH: sessions relayed to {} cannot be resumed on this machine",
                a.display_name()
            ),
            fix: format!("{install} (or add its folder to PATH)"),
        });
        return check;
    };
    check.path = Some(path.display().to_string());
    match cli_version(&path) {
        Ok(v) => {
            check.status = compare(&v, &verified);
            check.version = Some(v);
        }
        Err(e) => {
            check.status = CliStatus::UnknownVersion;
            check.error = Some(e);
        }
    }
    let listed = verified.join(", ");
    let found = check.version.clone().unwrap_or_default();
    let problem = match check.status {
        CliStatus::Verified | CliStatus::NoCli | CliStatus::NotInstalled => None,
        CliStatus::Newer => Some((
            Level::Warning,
            format!(
                "{command} {found} is newer than the versions session-relay's {} writer is verified against ({listed}); relayed sessions usually still open",
                a.display_name()
            ),
            format!(
                "if a relayed session does not open, {install}, and look for a newer session-relay"
            ),
        )),
        CliStatus::Older => Some((
            Level::Warning,
            format!(
                "{command} {found} is older than the versions session-relay's {} writer is verified against ({listed}); relayed sessions may not open",
                a.display_name()
            ),
            format!("update it: {}", a.cli_install().unwrap_or_default()),
        )),
        CliStatus::Unverified => Some((
            Level::Warning,
            format!(
                "{command} {found} is not one of the versions session-relay is verified against ({listed})"
            ),
            format!("if a relayed session does not open, {install}"),
        )),
        CliStatus::UnknownVersion => Some((
            Level::Warning,
            format!(
                "`{} --version` did not say a version: {}",
                path.display(),
                check.error.as_deref().unwrap_or("")
            ),
            format!("check that `{command}` runs; reinstall it if not ({install})"),
        )),
    };
    if let Some((level, problem, fix)) = problem {
        problems.push(Problem {
            level,
            agent: Some(a.name()),
            problem,
            fix,
        });
    }
    check
}

/// The first executable file called `command` in a PATH folder.
fn find_on_path(command: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(command))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `PROGRAM --version` (at most `VERSION_TIMEOUT`) and finds the version in what it says.
fn cli_version(program: &Path) -> Result<String, String> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if started.elapsed() > VERSION_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", VERSION_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let out = child
        .wait_with_output()
        .map_err(|e| format!("cannot read its output: {e}"))?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match version_in(&text) {
        Some(v) => Ok(v),
        None => Err(format!(
            "exit status {}, output `{}`",
            status.code().map_or("?".into(), |c| c.to_string()),
            crate::text::one_line_cut(&text, 120)
        )),
    }
}

/// The first `N.N.N` in a CLI's `--version` output (`codex-cli 0.171.0`, `2.1.332 (Claude
/// Code)`, `GitHub Copilot CLI 1.0.102.`, a sentence), with any pre-release tail
/// (`0.172.0-alpha.1`).
pub fn version_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .map(|w| w.trim_start_matches('v').trim_end_matches('.'))
        .find(|w| {
            let core = w.split(['-', '+']).next().unwrap_or("");
            let parts: Vec<&str> = core.split('.').collect();
            parts.len() >= 2
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// The numeric parts of a version, for comparing (`0.172.0-alpha.1` -> [0, 172, 0]).
fn numbers(v: &str) -> Vec<u64> {
    v.split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// How an installed version relates to the verified ones.
pub fn compare(installed: &str, verified: &[&str]) -> CliStatus {
    let have = numbers(installed);
    if verified.iter().any(|v| numbers(v) == have) {
        return CliStatus::Verified;
    }
    let (Some(min), Some(max)) = (
        verified.iter().map(|v| numbers(v)).min(),
        verified.iter().map(|v| numbers(v)).max(),
    ) else {
        return CliStatus::Unverified;
    };
    if have > max {
        CliStatus::Newer
    } else if have < min {
        CliStatus::Older
    } else {
        CliStatus::Unverified
    }
}

fn check_state(cfg: &Config, fix: bool, problems: &mut Vec<Problem>) -> StateCheck {
    let dir = crate::paths::state_dir();
    let exists = dir.as_ref().is_some_and(|d| d.is_dir());
    if dir.is_none() {
        problems.push(Problem {
            level: Level::Error,
            agent: None,
            problem: "no state folder on this platform: relays cannot be recorded in the ledger"
                .into(),
            fix: format!("set {} to a folder", crate::paths::STATE_ENV),
        });
    }
    let path = ledger::ledger_path().ok();
    let (entries, damaged) = ledger::read();
    let mut relays: usize = 0;
    let mut cleaned = 0;
    let mut present = std::collections::BTreeSet::new();
    for e in &entries {
        match e.event.as_str() {
            "relay" => {
                relays += 1;
                if !e.standalone {
                    present.insert(e.target.path.clone());
                }
            }
            "clean" => {
                cleaned += 1;
                present.remove(&e.target.path);
            }
            ledger::WITHDRAWN => {
                relays = relays.saturating_sub(1);
                present.remove(&e.target.path);
            }
            _ => {}
        }
    }
    let relayed_present = present.iter().filter(|p| Path::new(p).is_file()).count();
    let (unregistered, registered_now) = check_registrations(cfg, &entries, fix, problems);
    if !damaged.is_empty() {
        problems.push(Problem {
            level: Level::Warning,
            agent: None,
            problem: format!(
                "{} ledger line(s) cannot be read; `clean` cannot delete the relays they record",
                damaged.len()
            ),
            fix: format!(
                "repair or remove the line(s) named in the report ({})",
                path.as_ref()
                    .map_or(String::new(), |p| p.display().to_string())
            ),
        });
    }
    StateCheck {
        dir: dir.map(|d| d.display().to_string()),
        exists,
        ledger: LedgerCheck {
            exists: path.as_ref().is_some_and(|p| p.is_file()),
            path: path.map(|p| p.display().to_string()),
            relays,
            cleaned,
            relayed_present,
            damaged,
            unregistered,
            registered_now,
        },
    }
}

/// The relays the ledger records as not registered in their target's indexes whose session is
/// on disk; with `fix`, each is registered (`relay::complete_registration`). Returns those
/// left and those registered now.
fn check_registrations(
    cfg: &Config,
    entries: &[ledger::Entry],
    fix: bool,
    problems: &mut Vec<Problem>,
) -> (Vec<String>, Vec<String>) {
    let (mut left, mut done) = (Vec::new(), Vec::new());
    for e in ledger::awaiting_registration(entries) {
        if !Path::new(&e.target.path).is_file() {
            continue;
        }
        if !fix {
            left.push(e.target.path.clone());
            continue;
        }
        match super::relay::complete_registration(cfg, e) {
            Ok(Some(_)) => done.push(e.target.path.clone()),
            // Registered or cleaned meanwhile.
            Ok(None) => {}
            Err(err) => {
                problems.push(Problem {
                    level: Level::Error,
                    agent: crate::adapters::by_name(&e.target.agent).map(|a| a.name()),
                    problem: format!(
                        "the relayed session {} could not be registered: {err:#}",
                        e.target.path
                    ),
                    fix:
                        "solve what the message names, then run `session-relay doctor --fix` again"
                            .into(),
                });
                left.push(e.target.path.clone());
            }
        }
    }
    if !fix && !left.is_empty() {
        problems.push(Problem {
            level: Level::Warning,
            agent: None,
            problem: format!(
                "{} relayed session(s) are not registered in their agent's index, so its picker may not list them (a relay was interrupted, or its registration failed)",
                left.len()
            ),
            fix: "session-relay doctor --fix".into(),
        });
    }
    (left, done)
}

/// The hooks `hooks install` put into agents' settings: each one's state, and a problem with
/// its fix for each that will not run as installed.
fn check_hooks(cfg: &Config) -> (HooksCheck, Vec<Problem>) {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let status = match super::hooks::status(cfg) {
        Ok(s) => s,
        Err(e) => {
            problems.push(Problem {
                level: Level::Warning,
                agent: None,
                problem: format!("cannot read the installed hooks: {e:#}"),
                fix: "run `session-relay hooks status` for details".into(),
            });
            return (
                HooksCheck {
                    supported: true,
                    hooks,
                },
                problems,
            );
        }
    };
    let me = std::env::current_exe().ok();
    for a in status.agents {
        let agent = crate::adapters::by_name(&a.agent).map(|x| x.name());
        if let Some(e) = a.error {
            problems.push(Problem {
                level: Level::Warning,
                agent,
                // The error begins with the file's name.
                problem: format!("cannot read {e}"),
                fix: "fix or remove the file, then run `session-relay hooks install` again".into(),
            });
            continue;
        }
        for h in &a.hooks {
            let state = hook_state(&a, h, me.as_deref(), &mut problems);
            hooks.push(HookCheck {
                agent: a.agent.clone(),
                path: a.file.clone(),
                state: format!("{} {state}", h.event),
            });
        }
    }
    (
        HooksCheck {
            supported: true,
            hooks,
        },
        problems,
    )
}

/// What doctor says of one installed hook, adding to `problems` why the agent would not run
/// it, with the fix.
fn hook_state(
    a: &super::hooks::AgentHooks,
    h: &super::hooks::Installed,
    me: Option<&std::path::Path>,
    problems: &mut Vec<Problem>,
) -> &'static str {
    use crate::adapter::HookTrust;
    let program = crate::text::first_shell_word(&h.command);
    let (state, problem, fix) = if !std::path::Path::new(&program).is_file() {
        (
            "outdated",
            format!(
                "the {} hook in {} runs {program}, which does not exist",
                h.event, a.file
            ),
            format!("session-relay hooks install --agent {}", a.agent),
        )
    } else if h.trust == HookTrust::Untrusted {
        (
            "untrusted",
            format!(
                "the {} hook in {} is not trusted yet: the agent skips it",
                h.event, a.file
            ),
            format!("session-relay hooks install --agent {} --trust", a.agent),
        )
    } else if h.trust == HookTrust::Disabled {
        (
            "disabled",
            format!(
                "{} turns every hook off (disableAllHooks): the agent skips the {} hook",
                a.file, h.event
            ),
            format!(
                "remove `disableAllHooks` from {} or set it to false",
                a.file
            ),
        )
    } else if h.trust == HookTrust::TurnedOff {
        (
            "disabled",
            format!(
                "the agent's settings turn the {} hook in {} off: the agent skips it",
                h.event, a.file
            ),
            "turn it on again where the agent's settings turn it off (its entry's `enabled = false`), or in the agent's own hook menu".to_string(),
        )
    } else if h.trust == HookTrust::Unknown {
        (
            "unknown",
            format!(
                "cannot tell whether the agent runs the {} hook in {}: {}",
                h.event, a.file, "the settings it records trust in do not parse"
            ),
            format!(
                "`session-relay hooks install --agent {} --trust` {}",
                a.agent, "names the line that does not parse: correct it"
            ),
        )
    } else if me.is_some_and(|m| m != std::path::Path::new(&program)) {
        return "installed (another session-relay binary)";
    } else {
        return "installed";
    };
    problems.push(Problem {
        level: Level::Warning,
        agent: crate::adapters::by_name(&a.agent).map(|x| x.name()),
        problem,
        fix,
    });
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_found_in_what_clis_say() {
        assert_eq!(
            version_in("codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            version_in("2.1.332 (Claude Code)").as_deref(),
            Some("2.1.332")
        );
        assert_eq!(version_in("v0.61.0").as_deref(), Some("0.61.0"));
        assert_eq!(
            version_in("GitHub Copilot CLI 1.0.102.\nRun 'copilot update' to check for updates.")
                .as_deref(),
            Some("1.0.102")
        );
        assert_eq!(
            version_in("codex-cli 0.172.0-alpha.1").as_deref(),
            Some("0.172.0-alpha.1")
        );
        assert_eq!(version_in("command not found"), None);
    }

    #[test]
    fn installed_versions_compare_with_the_verified_ones() {
        let v = ["0.171.0"];
        assert_eq!(compare("0.171.0", &v), CliStatus::Verified);
        assert_eq!(compare("0.172.0-alpha.1", &v), CliStatus::Newer);
        assert_eq!(compare("0.99.1", &v), CliStatus::Older);
        assert_eq!(
            compare("0.171.5", &["0.171.0", "0.172.0"]),
            CliStatus::Unverified
        );
        assert_eq!(compare("1.0.0", &[]), CliStatus::Unverified);
    }
}
