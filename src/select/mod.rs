//! The select stage: finding sessions across every agent's store (discover, list, cache) and
//! resolving a session selector to one file and the adapter that reads it.

pub mod listcache;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::adapter::{Adapter, ReadOptions};
use crate::adapters;
use crate::config::Config;
use crate::exit::{CliError, ExitCode};
use crate::model::{Session, Summary, neutral};

/// One agent's store as configured.
pub struct Store {
    pub adapter: &'static dyn Adapter,
    pub home: PathBuf,
}

impl Store {
    /// Whether `path` is a file in one of the store's folders, once the folders above it and
    /// the store's own are resolved (symbolic links followed); the file itself is not.
    pub fn holds(&self, path: &Path) -> bool {
        path.parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .is_some_and(|dir| {
                self.adapter
                    .store_dirs(&self.home)
                    .iter()
                    .filter_map(|d| std::fs::canonicalize(d).ok())
                    .any(|d| dir.starts_with(d))
            })
    }

    /// Whether one of its folders is there (or its database file, for a store that keeps its
    /// sessions in one: OpenCode's `dirs` name it).
    pub fn exists(&self) -> bool {
        self.adapter
            .store_dirs(&self.home)
            .iter()
            .any(|d| d.exists())
    }
}

/// The configured stores, optionally only one agent's.
pub fn stores(cfg: &Config, agent: Option<&str>) -> Vec<Store> {
    adapters::registry()
        .iter()
        .copied()
        .filter(|a| agent.is_none_or(|n| n == a.name()))
        .map(|a| Store {
            adapter: a,
            home: cfg.agent(a.name()).session_root.clone(),
        })
        .collect()
}

/// The stores that exist; an error naming every path tried when none does.
pub fn existing_stores(cfg: &Config, agent: Option<&str>) -> Result<Vec<Store>> {
    let all = stores(cfg, agent);
    let tried: Vec<String> = all
        .iter()
        .flat_map(|s| {
            s.adapter
                .store_dirs(&s.home)
                .into_iter()
                .map(|d| format!("  {} ({})", d.display(), s.adapter.display_name()))
        })
        .collect();
    let found: Vec<Store> = all.into_iter().filter(Store::exists).collect();
    if found.is_empty() {
        let hints: Vec<String> = stores(cfg, agent)
            .iter()
            .map(|s| {
                format!(
                    "{}=DIR or --home {}=DIR or agents.{}.session_root in the config file",
                    s.adapter.home_env(),
                    s.adapter.name(),
                    s.adapter.name()
                )
            })
            .collect();
        return Err(CliError::new(
            ExitCode::NoStore,
            format!(
                "no session store found. Tried:\n{}\nPoint the tool at a store with {}.",
                tried.join("\n"),
                hints.join("; or ")
            ),
        )
        .into());
    }
    Ok(found)
}

/// A warning for each home that was given (flag, environment, config file) and does not exist:
/// a typo there would otherwise only show as sessions missing from the listing. A default
/// home that does not exist is an agent that is not installed, and says nothing.
fn missing_homes(cfg: &Config, agent: Option<&str>) -> Vec<String> {
    use crate::config::Origin;
    stores(cfg, agent)
        .into_iter()
        .filter_map(|s| {
            let settings = cfg.agent(s.adapter.name());
            let given = match settings.session_root_from {
                Origin::Default => return None,
                Origin::Flag => format!("--home {}=", s.adapter.name()),
                Origin::Env => format!("{}=", s.adapter.home_env()),
                Origin::File => format!(
                    "agents.{}.session_root in {}: ",
                    s.adapter.name(),
                    cfg.file.as_deref().map_or("the config file".into(), |f| f
                        .display()
                        .to_string())
                ),
            };
            (!s.home.is_dir()).then(|| {
                format!(
                    "{} home {} does not exist ({given}{}): its sessions are not listed. Correct the path, or leave it out to use the default{}.",
                    s.adapter.display_name(),
                    s.home.display(),
                    s.home.display(),
                    s.adapter
                        .default_home()
                        .map(|d| format!(" ({})", d.display()))
                        .unwrap_or_default()
                )
            })
        })
        .collect()
}

/// Every session in the existing stores, newest first (subagent transcripts included, with
/// `parent_id`), and what could not be listed.
pub struct Listing {
    pub sessions: Vec<Summary>,
    /// Files that could not be scanned, with the reason.
    pub warnings: Vec<String>,
}

/// How a listing is made.
pub struct ListOptions<'a> {
    /// Masks secrets in titles (and so in the cache, which then holds no secret). `None`
    /// shows titles as they are and neither reads nor writes the cache.
    pub redactor: Option<&'a crate::redact::Redactor>,
    /// Remember what was scanned for the next listing.
    pub save_cache: bool,
}

pub fn list_with(cfg: &Config, agent: Option<&str>, opts: &ListOptions) -> Result<Listing> {
    let cache = match opts.redactor {
        Some(_) => listcache::ListCache::load(),
        None => listcache::ListCache::none(),
    };
    let listing = list_in(cfg, agent, opts, &cache)?;
    if opts.save_cache {
        cache.save();
    }
    Ok(listing)
}

/// `list_with` through `cache`, which the caller saves (`stats` adds its counts to it first).
pub fn list_in(
    cfg: &Config,
    agent: Option<&str>,
    opts: &ListOptions,
    cache: &listcache::ListCache,
) -> Result<Listing> {
    use rayon::prelude::*;
    let mask = |t: &mut Option<String>| {
        if let Some(r) = opts.redactor {
            r.title(t);
        }
    };
    let mut sessions = Vec::new();
    let mut warnings = missing_homes(cfg, agent);
    for s in existing_stores(cfg, agent)? {
        let titles = s.adapter.index_titles(&s.home);
        let files = s.adapter.session_files(&s.home);
        let progress = crate::progress::start(
            &format!("scanning {} sessions", s.adapter.display_name()),
            Some(files.len() as u64),
            crate::progress::Unit::Items,
        );
        // Files are independent; on a store of thousands the scan is I/O bound and spreads
        // well over the cores.
        let scanned: Vec<Result<Summary, String>> = files
            .par_iter()
            .map(|path| {
                let r = cache
                    .summarize(path, |p| {
                        let mut summary = s.adapter.scan(p)?;
                        mask(&mut summary.title);
                        Ok(summary)
                    })
                    .map_err(|e| format!("{}: {e:#}", path.display()));
                if let Some(p) = &progress {
                    p.advance(1);
                }
                r
            })
            .collect();
        let start = sessions.len();
        for r in scanned {
            match r {
                Ok(mut summary) => {
                    if let Some(t) = titles.get(&summary.id) {
                        summary.title = Some(t.clone());
                        mask(&mut summary.title);
                    }
                    sessions.push(summary);
                }
                Err(w) => warnings.push(w),
            }
        }
        let mut mine = sessions.split_off(start);
        one_row_per_session(&mut mine);
        sessions.extend(mine);
        count_subagents(&mut sessions[start..]);
    }
    sort_newest_first(&mut sessions);
    Ok(Listing { sessions, warnings })
}

/// The listing a selector is resolved against: the cached one, not written back (selecting
/// writes nothing, a dry run included).
fn selection_listing(cfg: &Config, agent: Option<&str>) -> Result<Listing> {
    let redactor = cfg.redactor()?;
    list_with(
        cfg,
        agent,
        &ListOptions {
            redactor: Some(&redactor),
            save_cache: false,
        },
    )
}

/// One row per session of an agent: when several files hold the same session id (Gemini CLI
/// leaves a copy of a session's start beside every resumed session, and older homes keep a
/// copy in a legacy folder), the one `Summary::listing_rank` prefers, as the agent's `ids` do.
fn one_row_per_session(sessions: &mut Vec<Summary>) {
    let mut best: std::collections::HashMap<String, usize> = Default::default();
    for (i, s) in sessions.iter().enumerate() {
        if s.parent_id.is_some() {
            continue;
        }
        match best.get(&s.id) {
            Some(&j) if sessions[j].listing_rank() >= s.listing_rank() => {}
            _ => {
                best.insert(s.id.clone(), i);
            }
        }
    }
    let mut i = 0;
    sessions.retain(|s| {
        let keep = s.parent_id.is_some() || best.get(&s.id) == Some(&i);
        i += 1;
        keep
    });
}

/// Parents count the subagent transcripts that name them.
fn count_subagents(sessions: &mut [Summary]) {
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    for s in sessions.iter() {
        if let Some(p) = &s.parent_id {
            *counts.entry(p.clone()).or_default() += 1;
        }
    }
    for s in sessions.iter_mut().filter(|s| s.parent_id.is_none()) {
        s.subagents = counts.get(&s.id).copied().unwrap_or(0);
    }
}

pub fn sort_newest_first(v: &mut [Summary]) {
    // Relays carry their source's message times, so they tie with it, and with each other,
    // on the newest message. Of those, a native session comes first (`latest` picks the
    // session, not a copy of it that nobody continued), then the relays, the one relayed
    // last first.
    let relayed = |s: &Summary| {
        s.relay_of
            .as_ref()
            .map(|r| std::cmp::Reverse(r.relayed_at.as_deref().and_then(crate::model::parse_time)))
    };
    v.sort_by(|a, b| {
        b.sort_time()
            .cmp(&a.sort_time())
            .then_with(|| relayed(a).cmp(&relayed(b)))
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// Whether a session belongs to `dir` (both CLIs scope by exact working directory).
pub fn same_dir(session_cwd: Option<&str>, dir: &Path) -> bool {
    let Some(cwd) = session_cwd else { return false };
    let cwd = Path::new(cwd);
    if cwd == dir {
        return true;
    }
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    match (canon(cwd), canon(dir)) {
        (Some(a), Some(b)) => a == b,
        (None, Some(b)) => cwd == b,
        _ => false,
    }
}

/// A resolved session: where it is and which adapter reads it.
pub struct Located {
    pub path: PathBuf,
    /// `None` for a neutral export file.
    pub adapter: Option<&'static dyn Adapter>,
    pub home: Option<PathBuf>,
}

impl Located {
    pub fn read(&self) -> Result<Session> {
        self.read_with(Default::default())
    }

    pub fn read_with(&self, opts: ReadOptions) -> Result<Session> {
        let mut s = match self.adapter {
            Some(a) => a
                .read_with(&self.path, self.home.as_deref(), opts.for_file(&self.path))
                .with_context(|| format!("reading {}", self.path.display()))?,
            None => neutral::read(&self.path)?,
        };
        // Now, before anything is masked: the facts name files as they are on disk.
        s.file_facts = Some(Box::new(crate::model::files::FileFacts::of(&s)));
        Ok(s)
    }
}

pub struct SelectScope<'a> {
    pub agent: Option<&'a str>,
    /// The directory whose newest session `latest` is; `None`: any directory's (`--all`).
    pub cwd: Option<PathBuf>,
}

/// Resolves a selector: `latest`, a file path, a full id or a unique id prefix.
pub fn select(cfg: &Config, selector: &str, scope: &SelectScope) -> Result<Located> {
    if selector == "latest" {
        return latest(cfg, scope);
    }
    let as_path = Path::new(selector);
    let looks_like_path = selector.contains(std::path::MAIN_SEPARATOR)
        || selector.ends_with(".jsonl")
        || selector.ends_with(".json")
        || selector.ends_with(".zst");
    if looks_like_path || (as_path.exists() && as_path.is_file()) {
        return locate_file(cfg, as_path);
    }
    if let Some(found) = by_file_name(cfg, selector, scope)? {
        return Ok(found);
    }
    // Ids as the listing shows them, which are the ids the agents themselves list and resume
    // (a Codex rollout's `session_meta` id, even when its file name says otherwise).
    let mut matches: Vec<(String, &'static dyn Adapter, PathBuf, PathBuf)> = Vec::new();
    for s in selection_listing(cfg, scope.agent)?.sessions {
        if s.id.starts_with(selector)
            && let Some(adapter) = adapters::by_name(&s.agent)
        {
            let home = cfg.agent(adapter.name()).session_root.clone();
            matches.push((s.id, adapter, s.path, home));
        }
    }
    // A full id wins over longer ids it is a prefix of.
    if let Some(exact) = matches.iter().position(|m| m.0 == selector) {
        let m = matches.swap_remove(exact);
        return Ok(Located {
            path: m.2,
            adapter: Some(m.1),
            home: Some(m.3),
        });
    }
    match matches.len() {
        0 => Err(CliError::new(
            ExitCode::NotFound,
            format!(
                "no session matches `{selector}`. Try `session-relay list --all` to see ids, or pass a file path."
            ),
        )
        .into()),
        1 => {
            let m = matches.pop().unwrap();
            Ok(Located {
                path: m.2,
                adapter: Some(m.1),
                home: Some(m.3),
            })
        }
        n => {
            matches.sort_by(|a, b| a.0.cmp(&b.0));
            let list: Vec<String> = matches
                .iter()
                .map(|m| format!("  {} {} {}", m.1.name(), m.0, m.2.display()))
                .collect();
            Err(CliError::new(
                ExitCode::NotFound,
                format!(
                    "`{selector}` is ambiguous: {n} sessions match. Use more characters:\n{}",
                    list.join("\n")
                ),
            )
            .into())
        }
    }
}

/// A full id (a UUID) that names exactly one file in the stores, whose adapter confirms it
/// from the name and first line (`Store::id_from_name`): the file the listing would give,
/// without the listing, which scans every session not in its cache whole. A session being
/// relayed is often the one that changed since the last listing, and the longest. Anything
/// less certain (a prefix, two files, an id only a scan can confirm) is left to the listing.
fn by_file_name(cfg: &Config, selector: &str, scope: &SelectScope) -> Result<Option<Located>> {
    if uuid::Uuid::try_parse(selector).is_err() {
        return Ok(None);
    }
    let mut found = None;
    for s in existing_stores(cfg, scope.agent)? {
        for path in s.adapter.session_files(&s.home) {
            if !crate::model::named_for(&path, selector) {
                continue;
            }
            if found.is_some() || s.adapter.id_from_name(&path).as_deref() != Some(selector) {
                return Ok(None);
            }
            found = Some(Located {
                path,
                adapter: Some(s.adapter),
                home: Some(s.home.clone()),
            });
        }
    }
    Ok(found)
}

fn latest(cfg: &Config, scope: &SelectScope) -> Result<Located> {
    let all = selection_listing(cfg, scope.agent)?;
    let newest = all
        .sessions
        .into_iter()
        .filter(|s| {
            s.parent_id.is_none()
                && scope
                    .cwd
                    .as_deref()
                    .is_none_or(|dir| same_dir(s.cwd.as_deref(), dir))
        })
        .find(|_| true);
    match newest {
        Some(s) => Ok(Located {
            adapter: adapters::by_name(&s.agent),
            home: Some(cfg.agent(&s.agent).session_root.clone()),
            path: s.path,
        }),
        None => Err(CliError::new(
            ExitCode::NotFound,
            match &scope.cwd {
                Some(dir) => format!(
                    "no {}session for {}. Use --cwd DIR or --all, or pick one from `session-relay list --all`.",
                    scope.agent.map(|a| format!("{a} ")).unwrap_or_default(),
                    dir.display()
                ),
                None => format!(
                    "no {}session in any directory. Check the stores with `session-relay doctor`.",
                    scope.agent.map(|a| format!("{a} ")).unwrap_or_default(),
                ),
            },
        )
        .into()),
    }
}

/// A session a store keeps in a database file, named as its listing names it: a path under
/// that file (see `Store::stand_in`) in one of the store's folders.
fn in_database(cfg: &Config, path: &Path) -> Option<Located> {
    if !path.parent().is_some_and(Path::is_file) {
        return None;
    }
    let given = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let in_store = stores(cfg, None)
        .into_iter()
        .find(|s| s.holds(&given) && s.adapter.id_from_name(&given).is_some());
    if let Some(s) = in_store {
        return Some(Located {
            path: given,
            adapter: Some(s.adapter),
            home: Some(s.home),
        });
    }
    // A database outside the stores (a copy of one): the agent that reads the session there.
    let adapter = adapters::registry().iter().copied().find(|a| {
        a.stand_in(&given)
            .is_some_and(|write| write(&mut std::io::sink()).is_ok())
    })?;
    Some(Located {
        path: given,
        adapter: Some(adapter),
        home: None,
    })
}

/// A session named by its file: the adapter is chosen by the store it is in, else by content.
pub fn locate_file(cfg: &Config, path: &Path) -> Result<Located> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => {
            return in_database(cfg, path).ok_or_else(|| {
                CliError::new(
                    ExitCode::NotFound,
                    format!("cannot open session file {}: {e}", path.display()),
                )
                .into()
            });
        }
    };
    if meta.is_dir() {
        return Err(CliError::new(
            ExitCode::NotFound,
            format!(
                "{} is a directory; pass a session file, an id or `latest`",
                path.display()
            ),
        )
        .into());
    }
    if !meta.is_file() {
        return Err(CliError::new(
            ExitCode::NotFound,
            format!("{} is not a regular file", path.display()),
        )
        .into());
    }
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    // Named as given, but absolute: the ledger and a relay's provenance record it, and it must
    // name the same file from any directory.
    let given = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let path = given.as_path();
    for s in stores(cfg, None) {
        for dir in s.adapter.store_dirs(&s.home) {
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            if abs.starts_with(&dir) {
                return Ok(Located {
                    path: path.to_path_buf(),
                    adapter: Some(s.adapter),
                    home: Some(s.home.clone()),
                });
            }
        }
    }
    let head = crate::jsonl::head(path, 64 * 1024)?;
    let head = crate::jsonl::sniff::Head::new(crate::jsonl::strip_bom(&head));
    if neutral::claims(&head) {
        return Ok(Located {
            path: path.to_path_buf(),
            adapter: None,
            home: None,
        });
    }
    for a in adapters::registry() {
        if a.claims(path, &head) {
            return Ok(Located {
                path: path.to_path_buf(),
                adapter: Some(*a),
                home: None,
            });
        }
    }
    Err(CliError::new(
        ExitCode::NotFound,
        format!(
            "{} does not look like a session of any known agent ({}) nor a session-relay export",
            path.display(),
            adapters::names().join(", ")
        ),
    )
    .into())
}
