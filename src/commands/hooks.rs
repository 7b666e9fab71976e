//! `session-relay hooks install|uninstall|status`: session-relay's own hook in an agent's hooks
//! file, so that the agent relays its session before it compacts it. The file is edited as
//! text (`hookfile`): nothing else in it changes, installing twice adds nothing, the file as it
//! was is kept beside it, and uninstalling gives it back byte for byte when nothing else
//! changed since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::adapter::{Adapter, HookSetup, HookTrust};
use crate::config::Config;
use crate::exit::{CliError, ExitCode};
use crate::hookfile::{Handler, HookFile};
use crate::{fsutil, ledger};

pub struct InstallOptions {
    /// The agent whose hooks file gets the hook.
    pub agent: String,
    /// The agent the hook relays to (default: the first other agent).
    pub to: Option<String>,
    pub budget: Option<usize>,
    /// Also relay when a session ends (for a quota that runs out).
    pub session_end: bool,
    /// Record the agent's trust in the hook through the agent's own means.
    pub trust: bool,
    /// `--config FILE` given to this command, passed on to the hook.
    pub config_file: Option<PathBuf>,
}

pub struct UninstallOptions {
    pub agent: String,
}

/// A session-relay hook in an agent's hooks file.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub event: String,
    pub group: usize,
    pub handler: usize,
    pub command: String,
    /// The agent it relays to, from its command line.
    pub to: Option<String>,
    pub trust: HookTrust,
}

#[derive(Debug, Serialize)]
pub struct InstallReport {
    pub agent: String,
    pub file: String,
    /// The file was written (false: it already held exactly this hook).
    pub changed: bool,
    pub created_file: bool,
    /// The file as it was before the first install.
    pub backup: Option<String>,
    pub hooks: Vec<Installed>,
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct UninstallReport {
    pub agent: String,
    pub file: String,
    /// Handlers removed.
    pub removed: usize,
    /// The file is byte for byte what it was before the install (or is gone again, when the
    /// install created it).
    pub restored: bool,
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub agents: Vec<AgentHooks>,
    /// Where `hook run` logs what it did.
    pub log: Option<String>,
    /// Its newest entries, oldest first.
    pub recent: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize)]
pub struct AgentHooks {
    pub agent: String,
    pub file: String,
    pub exists: bool,
    /// Why the file could not be read, if it could not.
    pub error: Option<String>,
    pub hooks: Vec<Installed>,
}

/// What an install did to a file, so that uninstall can undo exactly that.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Record {
    /// SHA-256 of the file right after the install.
    after_sha256: String,
    /// The file did not exist before.
    created_file: bool,
    backup: Option<String>,
    /// Events whose list, and whether the `hooks` object, the install created.
    created_events: Vec<String>,
    created_hooks: bool,
}

fn records_path() -> Result<PathBuf> {
    Ok(crate::paths::require_state_dir()?.join("hook-installs.json"))
}

fn load_records() -> BTreeMap<String, Record> {
    records_path()
        .ok()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save_records(records: &BTreeMap<String, Record>) -> Result<()> {
    let path = records_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fsutil::replace_file(&path, &serde_json::to_vec_pretty(records)?)
}

/// The log `hook run` appends to.
pub fn log_path() -> Result<PathBuf> {
    Ok(crate::paths::require_state_dir()?.join("hooks.log"))
}

/// Whether a hook command is session-relay's own.
pub fn is_ours(command: &str) -> bool {
    command.contains("session-relay") && command.contains(" hook run")
}

/// The agent a hook command relays to (`--to AGENT`).
fn target_of(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    while let Some(w) = words.next() {
        if w == "--to" {
            return words.next().map(|s| s.trim_matches('\'').to_string());
        }
    }
    None
}

fn adapter_and_setup(
    cfg: &Config,
    agent: &str,
) -> Result<(&'static dyn Adapter, PathBuf, HookSetup)> {
    let adapter = crate::adapters::by_name(agent).context("unknown agent")?;
    let home = cfg.agent(adapter.name()).session_root.clone();
    let setup = adapter.hook_setup(&home).ok_or_else(|| {
        CliError::new(
            ExitCode::Usage,
            format!(
                "{} runs no hooks session-relay knows of",
                adapter.display_name()
            ),
        )
    })?;
    Ok((adapter, home, setup))
}

/// Reads and checks a hooks file; `None` when it does not exist. A file that is not a hooks
/// file, or not one both agents read as it reads, is an error that begins with its name.
fn read_file(path: &Path) -> Result<Option<(String, HookFile)>> {
    let refused =
        |why: String| CliError::new(ExitCode::Error, format!("{}: {why}", path.display()));
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8(b).map_err(|_| refused("not UTF-8 text".into()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refused(format!("cannot read it: {e}")).into()),
    };
    let file = HookFile::parse(&text).map_err(|e| refused(format!("{e:#}")))?;
    Ok(Some((text, file)))
}

/// `read_file` for a command that would change the file: its refusal says the file is as it was.
fn read_to_change(path: &Path) -> Result<Option<(String, HookFile)>> {
    read_file(path).map_err(|e| match e.downcast::<CliError>() {
        Ok(e) => CliError::new(e.code, format!("{}; nothing was changed", e.message)).into(),
        Err(e) => e,
    })
}

fn installed(
    adapter: &dyn Adapter,
    home: &Path,
    file: &HookFile,
    events: &[&str],
) -> Vec<Installed> {
    events
        .iter()
        .flat_map(|e| file.handlers(e))
        .filter(|h| is_ours(&h.command))
        .map(|h| Installed {
            trust: adapter.hook_trust(home, &h.event, h.group, h.handler),
            to: target_of(&h.command),
            event: h.event,
            group: h.group,
            handler: h.handler,
            command: h.command,
        })
        .collect()
}

/// The command the agent runs: this very binary, with what the hook needs to find its way.
fn hook_command(
    cfg: &Config,
    from: &dyn Adapter,
    to: &dyn Adapter,
    opts: &InstallOptions,
) -> Result<String> {
    let exe = std::env::current_exe().context("cannot find session-relay's own path")?;
    let mut words: Vec<String> = vec![
        exe.display().to_string(),
        "hook".into(),
        "run".into(),
        "--to".into(),
        to.name().into(),
    ];
    if let Some(b) = opts.budget {
        words.extend(["--budget".into(), b.to_string()]);
    }
    // Each home as it is now, unless it is the default: the agent that runs the hook need not
    // have the same environment as this shell. The hook relays only a session in the store of
    // the agent it says runs it, whose file is the one in this home.
    let home = |words: &mut Vec<String>, agent: &dyn Adapter| {
        let home = &cfg.agent(agent.name()).session_root;
        if agent.default_home().as_ref() != Some(home) {
            let abs = std::path::absolute(home).unwrap_or(home.clone());
            words.extend([
                "--home".into(),
                format!("{}={}", agent.name(), abs.display()),
            ]);
        }
    };
    home(&mut words, to);
    words.extend(["--from".into(), from.name().into()]);
    if from.name() != to.name() {
        home(&mut words, from);
    }
    if let Some(c) = &opts.config_file {
        let abs = std::path::absolute(c).unwrap_or(c.clone());
        words.extend(["--config".into(), abs.display().to_string()]);
    }
    Ok(words
        .iter()
        .map(|w| crate::text::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" "))
}

pub fn install(cfg: &Config, opts: &InstallOptions) -> Result<InstallReport> {
    let (adapter, home, setup) = adapter_and_setup(cfg, &opts.agent)?;
    let to = match &opts.to {
        Some(t) => crate::adapters::by_name(t).context("unknown target agent")?,
        None => *crate::adapters::registry()
            .iter()
            .find(|a| a.name() != adapter.name())
            .context("no other agent to relay to")?,
    };
    if !home.is_dir() {
        return Err(CliError::new(
            ExitCode::NoStore,
            format!(
                "{} home {} does not exist. Run {} once, or point to its home with {}=DIR or --home {}=DIR.",
                adapter.display_name(),
                home.display(),
                adapter.display_name(),
                adapter.home_env(),
                adapter.name()
            ),
        )
        .into());
    }
    let command = hook_command(cfg, adapter, to, opts)?;
    let path = setup.file.clone();
    let existing = read_to_change(&path)?;
    let existed = existing.is_some();
    let (before, mut file) = match existing {
        Some((text, file)) => (text, file),
        None => (String::new(), HookFile::parse("")?),
    };
    let mut records = load_records();
    let key = path.display().to_string();
    let fresh = installed(
        adapter,
        &home,
        &file,
        &[setup.pre_compact, setup.session_end],
    )
    .is_empty();
    let mut record = match records.get(&key) {
        Some(r) if !fresh => r.clone(),
        _ => Record {
            created_file: !existed,
            ..Default::default()
        },
    };

    let mut wanted = vec![setup.pre_compact];
    if opts.session_end {
        wanted.push(setup.session_end);
    }
    let handler = serde_json::json!({
        "type": "command",
        "command": command,
        "timeout": setup.timeout_secs,
    });
    place_handlers(&mut file, &mut record, &setup, &wanted, &handler, &command)?;

    let mut notes = Vec::new();
    let changed = file.text() != before;
    let backup = if changed {
        if existed && fresh {
            // The file as it was before session-relay touched it.
            let b = PathBuf::from(format!("{}.session-relay.bak", path.display()));
            fsutil::replace_file(&b, before.as_bytes())
                .with_context(|| format!("cannot keep a backup of {}", path.display()))?;
            record.backup = Some(b.display().to_string());
        }
        fsutil::replace_file(&path, file.text().as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        record.after_sha256 = ledger::sha256_bytes(file.text().as_bytes());
        records.insert(key, record.clone());
        save_records(&records)?;
        record.backup.clone()
    } else {
        notes.push("already installed: nothing changed".into());
        record.backup.clone()
    };

    let mut hooks = installed(adapter, &home, &file, &wanted);
    trust_installed(adapter, &home, &setup, &mut hooks, opts.trust, &mut notes)?;
    Ok(InstallReport {
        agent: adapter.name().into(),
        file: path.display().to_string(),
        changed,
        created_file: record.created_file && changed,
        backup,
        hooks,
        notes,
    })
}

/// session-relay's handler in `wanted` events of the file once, with `command` (a changed one
/// is changed in place, extra copies removed), and out of the events not wanted any more.
fn place_handlers(
    file: &mut HookFile,
    record: &mut Record,
    setup: &crate::adapter::HookSetup,
    wanted: &[&str],
    handler: &serde_json::Value,
    command: &str,
) -> Result<()> {
    for event in [setup.pre_compact, setup.session_end] {
        let ours: Vec<Handler> = file
            .handlers(event)
            .into_iter()
            .filter(|h| is_ours(&h.command))
            .collect();
        if !wanted.contains(&event) {
            // Installed earlier with --session-end, not now.
            for h in ours.iter().rev() {
                let created = record.created_events.iter().any(|e| e == event);
                file.remove(h, created, false)?;
            }
            continue;
        }
        match ours.split_first() {
            Some((first, rest)) => {
                for h in rest.iter().rev() {
                    file.remove(h, false, false)?;
                }
                if first.command != command {
                    file.set_command(first, command)?;
                }
            }
            None => {
                let (_, new_event, new_hooks) = file.add(event, handler)?;
                if new_event {
                    record.created_events.push(event.to_string());
                }
                record.created_hooks |= new_hooks;
            }
        }
    }

    Ok(())
}

/// Records, for an agent that runs a new hook only once trusted, that the user trusts the
/// installed hooks (`trust`), or says how to.
fn trust_installed(
    adapter: &dyn Adapter,
    home: &Path,
    setup: &crate::adapter::HookSetup,
    hooks: &mut [Installed],
    trust: bool,
    notes: &mut Vec<String>,
) -> Result<()> {
    if let Some(t) = &setup.trust {
        let unsure =
            |h: &&mut Installed| matches!(h.trust, HookTrust::Untrusted | HookTrust::Unknown);
        for h in hooks.iter().filter(|h| h.trust == HookTrust::TurnedOff) {
            notes.push(format!(
                "{}'s settings turn the {} hook off ({}): it will not run, trusted or not, until you turn it on again",
                adapter.display_name(),
                h.event,
                t.recorded_in
            ));
        }
        for h in hooks.iter_mut().filter(unsure) {
            if trust {
                // Where the settings do not parse, the adapter's error names the line.
                notes.push(adapter.trust_hook(home, &h.event, h.group, h.handler)?);
                h.trust = adapter.hook_trust(home, &h.event, h.group, h.handler);
            } else if h.trust == HookTrust::Unknown {
                notes.push(format!(
                    "cannot tell whether {} runs the {} hook: the settings it records trust in ({}) do not parse, and it refuses to start until they are corrected (run this again with --trust to be shown the line)",
                    adapter.display_name(),
                    h.event,
                    t.recorded_in
                ));
            } else {
                notes.push(format!(
                    "{} runs a new hook only once you trust it: {} (or run this again with --trust to record that through {} itself)",
                    adapter.display_name(),
                    t.how,
                    adapter.display_name()
                ));
            }
        }
    }
    Ok(())
}

pub fn uninstall(cfg: &Config, opts: &UninstallOptions) -> Result<UninstallReport> {
    let (adapter, _, setup) = adapter_and_setup(cfg, &opts.agent)?;
    let path = setup.file.clone();
    let mut report = UninstallReport {
        agent: adapter.name().into(),
        file: path.display().to_string(),
        removed: 0,
        restored: false,
        notes: Vec::new(),
    };
    let Some((text, mut file)) = read_to_change(&path)? else {
        report.notes.push(format!(
            "{} does not exist: nothing to remove",
            path.display()
        ));
        return Ok(report);
    };
    let mut records = load_records();
    let key = path.display().to_string();
    let record = records.get(&key).cloned();
    let ours: Vec<Handler> = [setup.pre_compact, setup.session_end]
        .iter()
        .flat_map(|e| file.handlers(e))
        .filter(|h| is_ours(&h.command))
        .collect();
    report.removed = ours.len();
    if ours.is_empty() {
        report
            .notes
            .push("no session-relay hook installed: nothing changed".into());
        return Ok(report);
    }
    // Nothing changed since the install: give back the file as it was.
    if let Some(r) = &record
        && r.after_sha256 == ledger::sha256_bytes(text.as_bytes())
    {
        if r.created_file {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            report.notes.push(format!(
                "{} removed (the install created it)",
                path.display()
            ));
            report.restored = true;
        } else if let Some(b) = &r.backup
            && let Ok(original) = std::fs::read(b)
        {
            fsutil::replace_file(&path, &original)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let _ = std::fs::remove_file(b);
            report.restored = true;
        }
    }
    if !report.restored {
        // Someone changed the file since: take out our handlers alone, newest first so that
        // the places of the others stay valid.
        let mut ours = ours;
        ours.sort_by(|a, b| (&a.event, b.group, b.handler).cmp(&(&b.event, a.group, a.handler)));
        for h in &ours {
            let (created_event, created_hooks) = record.as_ref().map_or((false, false), |r| {
                (r.created_events.contains(&h.event), r.created_hooks)
            });
            file.remove(h, created_event, created_hooks)?;
        }
        fsutil::replace_file(&path, file.text().as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        if let Some(b) = record.as_ref().and_then(|r| r.backup.as_ref()) {
            report.notes.push(format!(
                "the file changed since the install, so only session-relay's hook was taken out; the file as it was before the install is still in {b}"
            ));
        }
    }
    if let Some(t) = &setup.trust {
        report.notes.push(format!(
            "{} keeps its record that you trusted the hook ({}); it applies to no hook now",
            adapter.display_name(),
            t.recorded_in
        ));
    }
    records.remove(&key);
    save_records(&records)?;
    Ok(report)
}

pub fn status(cfg: &Config) -> Result<StatusReport> {
    let mut agents = Vec::new();
    for adapter in crate::adapters::registry() {
        let home = cfg.agent(adapter.name()).session_root.clone();
        let Some(setup) = adapter.hook_setup(&home) else {
            continue;
        };
        let mut a = AgentHooks {
            agent: adapter.name().into(),
            file: setup.file.display().to_string(),
            exists: setup.file.exists(),
            error: None,
            hooks: Vec::new(),
        };
        match read_file(&setup.file) {
            Ok(Some((_, file))) => {
                a.hooks = installed(
                    *adapter,
                    &home,
                    &file,
                    &[setup.pre_compact, setup.session_end],
                );
            }
            Ok(None) => {}
            Err(e) => a.error = Some(format!("{e:#}")),
        }
        agents.push(a);
    }
    let log = log_path().ok();
    let recent = log
        .as_ref()
        .and_then(|p| crate::jsonl::tail_lines(p, 64 << 10).ok())
        .map(|lines| {
            let v: Vec<serde_json::Value> = lines
                .iter()
                .filter_map(|l| serde_json::from_slice(l).ok())
                .collect();
            v[v.len().saturating_sub(5)..].to_vec()
        })
        .unwrap_or_default();
    Ok(StatusReport {
        agents,
        log: log.map(|p| p.display().to_string()),
        recent,
    })
}
