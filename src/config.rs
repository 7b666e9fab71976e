//! Configuration: defaults, then the YAML file, then the environment, then flags.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::adapter::Adapter;
use crate::adapters;

pub const CONFIG_ENV: &str = "SESSION_RELAY_CONFIG";

/// Half of what the agent's own prompt leaves goes to the relay, so that at least 40% of the
/// window stays free for new work (see config.example.yaml for the arithmetic).
pub const DEFAULT_SAFETY_RATIO: f64 = 0.5;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    agents: BTreeMap<String, FileAgent>,
    #[serde(default)]
    relay: FileRelay,
    #[serde(default)]
    redaction: FileRedaction,
    /// `git`: every relay is also committed to the archive (see the `archive` module).
    archive: Option<ArchiveKind>,
    archive_dir: Option<PathBuf>,
}

/// The config's `archive:`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchiveKind {
    #[default]
    Off,
    Git,
}

/// The versioned archive (the `archive` module): whether relays write to it, and where it is.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ArchiveSettings {
    pub kind: ArchiveKind,
    /// `archive_dir:`; `None`: `paths::default_archive_dir()`.
    pub dir: Option<PathBuf>,
}

impl ArchiveSettings {
    /// The archive's folder, as configured or by default.
    pub fn dir(&self) -> Option<PathBuf> {
        self.dir.clone().or_else(crate::paths::default_archive_dir)
    }
}

#[derive(Debug, Default, Deserialize, Clone, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileRedaction {
    /// More patterns to mask, besides the built-in ones.
    #[serde(default)]
    pub extra_patterns: Vec<crate::redact::ExtraPattern>,
    /// Values never masked (test keys, public ids that look like secrets).
    #[serde(default)]
    pub allow: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    session_root: Option<PathBuf>,
    context_window: Option<u64>,
    reserved_tokens: Option<u64>,
    safety_ratio: Option<f64>,
    tokenizer: Option<crate::tokens::Tokenizer>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRelay {
    recent_turns: Option<usize>,
    summary_max_tokens: Option<usize>,
    tool_call_keep_recent: Option<usize>,
}

/// Where a setting's value came from, for `config` diagnostics and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Default,
    File,
    Env,
    Flag,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentSettings {
    /// The agent's home (`~/.claude`, `~/.codex`): the folder that holds its session store.
    pub session_root: PathBuf,
    pub session_root_from: Origin,
    pub context_window: u64,
    /// Whether the config file set `context_window` (else the agent's default, which a window
    /// the agent recorded itself overrides).
    pub context_window_from: Origin,
    pub reserved_tokens: u64,
    /// Share of the remaining window a relay may fill, since counts are estimates.
    pub safety_ratio: f64,
    pub tokenizer: crate::tokens::Tokenizer,
}

impl AgentSettings {
    /// (context_window - reserved_tokens) x safety_ratio.
    pub fn budget(&self) -> usize {
        self.budget_for_window(self.context_window)
    }

    /// The budget for a given window, with this agent's reserve and ratio.
    pub fn budget_for_window(&self, window: u64) -> usize {
        (window.saturating_sub(self.reserved_tokens) as f64 * self.safety_ratio) as usize
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RelaySettings {
    pub recent_turns: usize,
    pub summary_max_tokens: usize,
    pub tool_call_keep_recent: usize,
}

impl Default for RelaySettings {
    fn default() -> Self {
        RelaySettings {
            recent_turns: 8,
            summary_max_tokens: 1500,
            tool_call_keep_recent: 12,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// The file that was read, if any.
    pub file: Option<PathBuf>,
    pub agents: BTreeMap<String, AgentSettings>,
    pub relay: RelaySettings,
    pub redaction: FileRedaction,
    pub archive: ArchiveSettings,
}

/// Inputs that come from the command line.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    /// `--home AGENT=DIR`
    pub homes: Vec<(String, PathBuf)>,
}

impl Config {
    pub fn load(overrides: &Overrides) -> Result<Config> {
        // The file the user named, and how: a file named that does not exist is an error.
        let (path, named_by) = match (&overrides.config_file, std::env::var_os(CONFIG_ENV)) {
            (Some(p), _) => (Some(p.clone()), Some("--config")),
            (None, Some(p)) if !p.is_empty() => (Some(PathBuf::from(p)), Some(CONFIG_ENV)),
            _ => (crate::paths::default_config_path(), None),
        };
        if let (Some(p), Some(by)) = (&path, named_by)
            && !p.exists()
        {
            bail!("{}", missing_file(p, by));
        }
        let (file_cfg, file) = match path {
            Some(p) if p.exists() || named_by.is_some() => (parse_file(&p)?, Some(p)),
            _ => (FileConfig::default(), None),
        };

        let mut agents = BTreeMap::new();
        for a in adapters::registry() {
            agents.insert(
                a.name().to_string(),
                resolve_agent(*a, &file_cfg, overrides),
            );
        }
        let r = &file_cfg.relay;
        let d = RelaySettings::default();
        let relay = RelaySettings {
            recent_turns: r.recent_turns.unwrap_or(d.recent_turns),
            summary_max_tokens: r.summary_max_tokens.unwrap_or(d.summary_max_tokens),
            tool_call_keep_recent: r.tool_call_keep_recent.unwrap_or(d.tool_call_keep_recent),
        };
        // A bad pattern is a config error, reported now rather than at the first relay. Only
        // the user's patterns are compiled here; the full redactor is built once, when used.
        for p in &file_cfg.redaction.extra_patterns {
            regex::Regex::new(&p.regex).with_context(|| {
                format!(
                    "invalid config file {}: redaction.extra_patterns: `{}` is not a valid regex",
                    file.as_deref()
                        .map(|f| f.display().to_string())
                        .unwrap_or_default(),
                    p.name
                )
            })?;
        }
        let archive = ArchiveSettings {
            kind: file_cfg.archive.unwrap_or_default(),
            // A relative folder is the config file's neighbour, wherever a relay runs.
            dir: file_cfg.archive_dir.map(|d| {
                let d = expand_tilde(&d);
                match file.as_deref().and_then(Path::parent) {
                    Some(p) if d.is_relative() => std::path::absolute(p.join(&d)).unwrap_or(d),
                    _ => std::path::absolute(&d).unwrap_or(d),
                }
            }),
        };
        Ok(Config {
            file,
            agents,
            relay,
            redaction: file_cfg.redaction,
            archive,
        })
    }

    pub fn agent(&self, name: &str) -> &AgentSettings {
        &self.agents[name]
    }

    pub fn redactor(&self) -> Result<crate::redact::Redactor> {
        crate::redact::Redactor::new(&self.redaction.extra_patterns, &self.redaction.allow)
    }
}

fn resolve_agent(a: &dyn Adapter, file: &FileConfig, overrides: &Overrides) -> AgentSettings {
    let fa = file.agents.get(a.name());
    let flag = overrides
        .homes
        .iter()
        .rev()
        .find(|(n, _)| n == a.name())
        .map(|(_, p)| p.clone());
    let env = std::env::var_os(a.home_env())
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let (session_root, session_root_from) = if let Some(p) = flag {
        (p, Origin::Flag)
    } else if let Some(p) = env {
        (p, Origin::Env)
    } else if let Some(p) = fa.and_then(|f| f.session_root.clone()) {
        (expand_tilde(&p), Origin::File)
    } else {
        (
            a.default_home().unwrap_or_else(|| PathBuf::from(".")),
            Origin::Default,
        )
    };
    AgentSettings {
        // Absolute from here on: every path made from it (listing cache keys, the ledger, a
        // relay's provenance and brief) must name the same file from any directory.
        session_root: std::path::absolute(&session_root).unwrap_or(session_root),
        session_root_from,
        context_window: fa
            .and_then(|f| f.context_window)
            .unwrap_or_else(|| a.default_context_window()),
        context_window_from: if fa.and_then(|f| f.context_window).is_some() {
            Origin::File
        } else {
            Origin::Default
        },
        reserved_tokens: fa
            .and_then(|f| f.reserved_tokens)
            .unwrap_or_else(|| a.default_reserved_tokens()),
        safety_ratio: fa
            .and_then(|f| f.safety_ratio)
            .unwrap_or(DEFAULT_SAFETY_RATIO),
        tokenizer: fa
            .and_then(|f| f.tokenizer)
            .unwrap_or_else(|| a.default_tokenizer()),
    }
}

/// What to say of a config file named with `--config` or `$SESSION_RELAY_CONFIG` that does not
/// exist: which file, who named it, and the ways on.
fn missing_file(path: &Path, named_by: &str) -> String {
    let default = crate::paths::default_config_path()
        .map(|d| format!(", {} (read when it exists)", d.display()))
        .unwrap_or_default();
    let drop = if named_by == CONFIG_ENV {
        format!("unset {CONFIG_ENV}")
    } else {
        "leave out --config".to_string()
    };
    format!(
        "the config file {} (named by {named_by}) does not exist. Create it (config.example.yaml in the repository lists every key), correct the path, or {drop} to use the default file{default}.",
        path.display()
    )
}

pub(crate) fn expand_tilde(p: &Path) -> PathBuf {
    match p.strip_prefix("~") {
        Ok(rest) => dirs::home_dir()
            .map(|h| h.join(rest))
            .unwrap_or(p.to_path_buf()),
        Err(_) => p.to_path_buf(),
    }
}

fn parse_file(path: &Path) -> Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    if text.trim().is_empty() {
        return Ok(FileConfig::default());
    }
    let cfg: FileConfig = serde_yaml_ng::from_str(&text).map_err(|e| {
        // serde_yaml_ng names the key path ("agents.claude.context_window: ...") and the
        // position; say the file too so the user knows where to look.
        let location = e
            .location()
            .map(|l| format!(":{}:{}", l.line(), l.column()))
            .unwrap_or_default();
        anyhow!("invalid config file {}{location}: {e}", path.display())
    })?;
    for (name, a) in &cfg.agents {
        if let Some(r) = a.safety_ratio
            && !(r > 0.0 && r <= 1.0)
        {
            bail!(
                "invalid config file {}: agents.{name}.safety_ratio must be in (0, 1], got {r}",
                path.display()
            );
        }
    }
    let known: Vec<&str> = adapters::registry().iter().map(|a| a.name()).collect();
    for name in cfg.agents.keys() {
        if !known.contains(&name.as_str()) {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("{name}:")))
                .map(|i| format!(":{}", i + 1))
                .unwrap_or_default();
            bail!(
                "invalid config file {}{line}: unknown agent `agents.{name}` (known: {})",
                path.display(),
                known.join(", ")
            );
        }
    }
    Ok(cfg)
}
