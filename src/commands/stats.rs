//! `session-relay stats`: how the agents do on this machine's work. Each session's counts
//! (`model::SessionCounts`) come from the listing cache, or from reading the session once when
//! it changed; relays, and whether their sessions were continued, from the ledger. They are
//! added up per agent, per project and per chain of relayed sessions, over a time range.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::{DateTime, Duration, Utc};
use rayon::prelude::*;
use serde::Serialize;

use crate::config::Config;
use crate::ledger::{self, Entry};
use crate::model::{SessionCounts, Summary};
use crate::redact::Redactor;
use crate::select::{self, listcache::ListCache};

pub struct Options {
    /// Only sessions last active, and relays made, this long ago or less (`None`: all).
    pub since: Option<Duration>,
    pub agent: Option<String>,
    /// Only sessions whose directory is this one or one inside it.
    pub project: Option<PathBuf>,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
pub struct Report {
    /// The start of the range (`None`: from the first session).
    pub since: Option<String>,
    pub until: String,
    pub agent: Option<String>,
    /// Masked as titles are.
    pub project: Option<String>,
    pub total: Figures,
    pub agents: Vec<Group>,
    /// Most sessions first.
    pub projects: Vec<Group>,
    /// Newest first.
    pub chains: Vec<ChainFigures>,
    /// Relays from one agent to another.
    pub flows: Vec<Flow>,
    /// Sessions and tokens per day (of their last activity) and agent, oldest first.
    pub days: Vec<Day>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct Figures {
    pub sessions: usize,
    pub turns: usize,
    pub user_messages: usize,
    pub assistant_messages: usize,
    /// By neutral kind.
    pub tool_calls: BTreeMap<String, usize>,
    pub tool_calls_total: usize,
    pub tool_errors: usize,
    /// Tool errors per tool call (`None`: no call).
    pub error_rate: Option<f64>,
    pub interruptions: usize,
    pub rejected: usize,
    pub corrections: usize,
    pub interventions: usize,
    /// The context each session's agent recorded at its newest request, added up.
    pub recorded_tokens: u64,
    /// The conversations' size, estimated (characters / 4).
    pub estimated_tokens: u64,
    /// From each session's first message to its last, added up, and the median.
    pub seconds: u64,
    pub median_seconds: Option<u64>,
    pub relays_out: usize,
    pub relays_in: usize,
    /// Relays in whose session was continued afterwards, of those where that can be told.
    pub relays_in_continued: usize,
    pub relays_in_known: usize,
    pub continued_rate: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Group {
    pub name: String,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Serialize)]
pub struct ChainFigures {
    /// The agents of its sessions, in the order they joined the chain.
    pub agents: Vec<String>,
    /// `agent:id` of each, in the same order.
    pub sessions: Vec<String>,
    /// The first session's title, masked.
    pub title: Option<String>,
    pub last_active: Option<String>,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Serialize)]
pub struct Flow {
    pub from: String,
    pub to: String,
    pub relays: usize,
    pub continued: usize,
    /// Of `relays`, those whose continuation can be told.
    pub known: usize,
}

#[derive(Debug, Serialize)]
pub struct Day {
    pub date: String,
    pub agent: String,
    pub sessions: usize,
    pub recorded_tokens: u64,
    pub estimated_tokens: u64,
}

/// One session in range, with its counts.
struct Counted<'a> {
    summary: &'a Summary,
    project: String,
    counts: SessionCounts,
}

/// One landed relay in range, with what became of its session.
struct Landed<'a> {
    entry: &'a Entry,
    project: String,
    continued: Option<bool>,
}

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
    crate::progress::scope(&opts.progress, || run_in_scope(cfg, opts))
}

fn run_in_scope(cfg: &Config, opts: &Options) -> Result<Report> {
    let redactor = cfg.redactor()?;
    let (entries, mut warnings) = ledger::read();
    let cache = ListCache::load();
    let list_opts = select::ListOptions {
        redactor: Some(&redactor),
        save_cache: true,
    };
    // Every agent's sessions, whatever `--agent` says: a relay's target may be another's.
    let listing = match select::list_in(cfg, None, &list_opts, &cache) {
        Ok(l) => l,
        Err(e) if !entries.is_empty() && no_store(&e) => select::Listing {
            sessions: Vec::new(),
            warnings: Vec::new(),
        },
        Err(e) => return Err(e),
    };
    warnings.extend(listing.warnings.iter().cloned());
    let now = Utc::now();
    let cutoff = opts.since.map(|d| now - d);
    let project = opts
        .project
        .as_deref()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    let mask = |p: &str| mask_text(&redactor, p);
    let in_scope = |agent: &str, cwd: Option<&str>| {
        opts.agent.as_deref().is_none_or(|a| a == agent)
            && project.as_deref().is_none_or(|d| under(cwd, d))
    };
    let chosen: Vec<&Summary> = listing
        .sessions
        .iter()
        .filter(|s| s.parent_id.is_none() && in_scope(&s.agent, s.cwd.as_deref()))
        .filter(|s| cutoff.is_none_or(|c| s.sort_time().is_some_and(|t| t >= c)))
        .collect();
    let relay_times = relay_times(&entries);
    let counted = count_all(cfg, &cache, &chosen, &relay_times, &mut warnings, &mask);
    cache.save();
    let landed: Vec<Landed> = landed_in_range(&entries, &listing.sessions, cutoff)
        .into_iter()
        .filter(|l| {
            let agent = |a: &str| opts.agent.as_deref().is_none_or(|x| x == a);
            (agent(&l.entry.source.agent) || agent(&l.entry.target.agent))
                && project
                    .as_deref()
                    .is_none_or(|d| under(Some(&l.entry.cwd), d))
        })
        .map(|mut l| {
            l.project = mask(&l.entry.cwd);
            l
        })
        .collect();
    Ok(Report {
        since: cutoff.map(ledger::time_text),
        until: ledger::time_text(now),
        agent: opts.agent.clone(),
        project: project.map(|p| mask(&p.display().to_string())),
        total: total(&counted, &landed),
        agents: by_agent(&counted, &landed),
        projects: by_project(&counted, &landed),
        chains: chains(&counted, &landed, &listing.sessions),
        flows: flows(&landed),
        days: days(&counted),
        warnings,
    })
}

fn no_store(e: &anyhow::Error) -> bool {
    e.downcast_ref::<crate::exit::CliError>()
        .is_some_and(|c| c.code == crate::exit::ExitCode::NoStore)
}

fn mask_text(redactor: &Redactor, text: &str) -> String {
    let mut t = Some(text.to_string());
    redactor.title(&mut t);
    t.unwrap_or_default()
}

/// Whether a session's directory is `dir` or inside it.
fn under(cwd: Option<&str>, dir: &Path) -> bool {
    let Some(cwd) = cwd else { return false };
    Path::new(cwd).starts_with(dir) || select::same_dir(Some(cwd), dir) || {
        let canon = |p: &Path| std::fs::canonicalize(p).ok();
        matches!((canon(Path::new(cwd)), canon(dir)), (Some(a), Some(b)) if a.starts_with(&b))
    }
}

/// When the ledger says each relayed session was written, by its path.
fn relay_times(entries: &[Entry]) -> HashMap<&str, &str> {
    entries
        .iter()
        .filter(|e| e.is_store_relay())
        .map(|e| (e.target.path.as_str(), e.time.as_str()))
        .collect()
}

/// The counts of every chosen session, from the cache or read on every core.
fn count_all<'a>(
    cfg: &Config,
    cache: &ListCache,
    chosen: &[&'a Summary],
    relay_times: &HashMap<&str, &str>,
    warnings: &mut Vec<String>,
    mask: &dyn Fn(&str) -> String,
) -> Vec<Counted<'a>> {
    let progress = crate::progress::start(
        "counting sessions",
        Some(chosen.len() as u64),
        crate::progress::Unit::Items,
    );
    let results: Vec<(&Summary, Result<SessionCounts>)> = chosen
        .par_iter()
        .map(|s| {
            let relayed_at = s
                .relay_of
                .as_ref()
                .and_then(|r| r.relayed_at.clone())
                .or_else(|| {
                    relay_times
                        .get(s.path.display().to_string().as_str())
                        .map(|t| t.to_string())
                });
            let r = cache.counted(&s.path, |p| count(cfg, s, p, relayed_at.as_deref()));
            if let Some(p) = &progress {
                p.advance(1);
            }
            (*s, r)
        })
        .collect();
    let mut out = Vec::new();
    for (summary, r) in results {
        match r {
            Ok(counts) => out.push(Counted {
                summary,
                project: summary
                    .cwd
                    .as_deref()
                    .map_or_else(|| "(unknown)".to_string(), mask),
                counts,
            }),
            Err(e) => warnings.push(format!("{}: {e:#}", summary.path.display())),
        }
    }
    out
}

/// Reads one session (tool outputs cut as a relay cuts them, which changes no count) and
/// counts it.
fn count(
    cfg: &Config,
    s: &Summary,
    path: &Path,
    relayed_at: Option<&str>,
) -> Result<SessionCounts> {
    let adapter = crate::adapters::by_name(&s.agent)
        .ok_or_else(|| anyhow::anyhow!("unknown agent {}", s.agent))?;
    let home = cfg.agent(adapter.name()).session_root.clone();
    let session = adapter.read_with(
        path,
        Some(&home),
        crate::adapter::ReadOptions {
            lean: true,
            ..crate::plan::read_options_full()
        },
    )?;
    Ok(SessionCounts::of(
        &session,
        relayed_at,
        crate::plan::fit::source_tokens,
    ))
}

/// The store relays that landed in range, with whether each target was continued: told by
/// the session as it is now, else, once `clean` deleted it, by what `clean` recorded.
fn landed_in_range<'e>(
    entries: &'e [Entry],
    sessions: &[Summary],
    cutoff: Option<DateTime<Utc>>,
) -> Vec<Landed<'e>> {
    let by_path: HashMap<String, &Summary> = sessions
        .iter()
        .map(|s| (s.path.display().to_string(), s))
        .collect();
    let by_id: HashMap<(&str, &str), &Summary> = sessions
        .iter()
        .map(|s| ((s.agent.as_str(), s.id.as_str()), s))
        .collect();
    let cleaned: HashMap<&str, bool> = entries
        .iter()
        .filter(|e| e.event == "clean")
        .filter_map(|e| Some((e.target.path.as_str(), e.continued?)))
        .collect();
    super::log::landed_relays(entries)
        .into_iter()
        .filter(|e| cutoff.is_none_or(|c| parse_time(&e.time).is_some_and(|t| t >= c)))
        .map(|e| {
            let listed = by_path
                .get(&e.target.path)
                .or_else(|| by_id.get(&(e.target.agent.as_str(), e.target.id.as_str())));
            let continued = match listed {
                Some(s) => super::log::continued(e, s),
                None => cleaned.get(e.target.path.as_str()).copied(),
            };
            Landed {
                entry: e,
                project: String::new(),
                continued,
            }
        })
        .collect()
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    crate::model::parse_time(s)
}

/// Figures being added up.
#[derive(Default)]
struct Acc {
    f: Figures,
    lengths: Vec<u64>,
}

impl Acc {
    fn session(&mut self, c: &SessionCounts) {
        let f = &mut self.f;
        f.sessions += 1;
        f.turns += c.turns;
        f.user_messages += c.user_messages;
        f.assistant_messages += c.assistant_messages;
        for (kind, n) in &c.tool_calls {
            *f.tool_calls.entry(kind.as_str().to_string()).or_default() += n;
        }
        f.tool_calls_total += c.calls();
        f.tool_errors += c.tool_errors;
        f.interruptions += c.interruptions;
        f.rejected += c.rejected;
        f.corrections += c.corrections;
        f.interventions += c.interventions();
        f.recorded_tokens += c.recorded_tokens.unwrap_or(0);
        f.estimated_tokens += c.estimated_tokens as u64;
        if let Some(s) = c.seconds() {
            let s = u64::try_from(s).unwrap_or(0);
            f.seconds += s;
            self.lengths.push(s);
        }
    }

    fn relay_in(&mut self, continued: Option<bool>) {
        self.f.relays_in += 1;
        if let Some(c) = continued {
            self.f.relays_in_known += 1;
            self.f.relays_in_continued += usize::from(c);
        }
    }

    fn finish(mut self) -> Figures {
        let rate = |n: usize, of: usize| (of > 0).then(|| n as f64 / of as f64);
        let f = &mut self.f;
        f.error_rate = rate(f.tool_errors, f.tool_calls_total);
        f.continued_rate = rate(f.relays_in_continued, f.relays_in_known);
        self.lengths.sort_unstable();
        f.median_seconds = self.lengths.get(self.lengths.len() / 2).copied();
        self.f
    }
}

fn total(counted: &[Counted], landed: &[Landed]) -> Figures {
    let mut acc = Acc::default();
    for c in counted {
        acc.session(&c.counts);
    }
    for l in landed {
        acc.f.relays_out += 1;
        acc.relay_in(l.continued);
    }
    acc.finish()
}

/// Figures grouped by a key of each session and of each relay's source and target.
fn grouped<'k>(
    counted: &'k [Counted],
    landed: &'k [Landed],
    session_key: impl Fn(&'k Counted) -> &'k str,
    relay_keys: impl Fn(&'k Landed) -> (&'k str, &'k str),
) -> BTreeMap<&'k str, Acc> {
    let mut groups: BTreeMap<&str, Acc> = BTreeMap::new();
    for c in counted {
        groups.entry(session_key(c)).or_default().session(&c.counts);
    }
    for l in landed {
        let (from, to) = relay_keys(l);
        groups.entry(from).or_default().f.relays_out += 1;
        groups.entry(to).or_default().relay_in(l.continued);
    }
    groups
}

fn by_agent(counted: &[Counted], landed: &[Landed]) -> Vec<Group> {
    grouped(
        counted,
        landed,
        |c| c.summary.agent.as_str(),
        |l| (&l.entry.source.agent, &l.entry.target.agent),
    )
    .into_iter()
    .map(|(name, acc)| Group {
        name: name.to_string(),
        figures: acc.finish(),
    })
    .collect()
}

fn by_project(counted: &[Counted], landed: &[Landed]) -> Vec<Group> {
    let mut groups: Vec<Group> = grouped(
        counted,
        landed,
        |c| c.project.as_str(),
        |l| (&l.project, &l.project),
    )
    .into_iter()
    .map(|(name, acc)| Group {
        name: name.to_string(),
        figures: acc.finish(),
    })
    .collect();
    groups.sort_by(|a, b| {
        b.figures
            .sessions
            .cmp(&a.figures.sessions)
            .then_with(|| a.name.cmp(&b.name))
    });
    groups
}

fn flows(landed: &[Landed]) -> Vec<Flow> {
    let mut flows: BTreeMap<(&str, &str), Flow> = BTreeMap::new();
    for l in landed {
        let (from, to) = (&l.entry.source.agent, &l.entry.target.agent);
        let f = flows.entry((from, to)).or_insert_with(|| Flow {
            from: from.clone(),
            to: to.clone(),
            relays: 0,
            continued: 0,
            known: 0,
        });
        f.relays += 1;
        if let Some(c) = l.continued {
            f.known += 1;
            f.continued += usize::from(c);
        }
    }
    flows.into_values().collect()
}

fn days(counted: &[Counted]) -> Vec<Day> {
    let mut days: BTreeMap<(String, &str), Day> = BTreeMap::new();
    for c in counted {
        let Some(t) = c.summary.sort_time() else {
            continue;
        };
        let date = t.format("%Y-%m-%d").to_string();
        let agent = c.summary.agent.as_str();
        let d = days.entry((date.clone(), agent)).or_insert_with(|| Day {
            date,
            agent: agent.to_string(),
            sessions: 0,
            recorded_tokens: 0,
            estimated_tokens: 0,
        });
        d.sessions += 1;
        d.recorded_tokens += c.counts.recorded_tokens.unwrap_or(0);
        d.estimated_tokens += c.counts.estimated_tokens as u64;
    }
    days.into_values().collect()
}

type Key<'a> = (&'a str, &'a str);

/// Sessions linked by relays (the ledger's, and the provenance records of listed sessions),
/// with the figures of those in range.
fn chains<'a>(
    counted: &[Counted],
    landed: &[Landed<'a>],
    sessions: &'a [Summary],
) -> Vec<ChainFigures> {
    let by_path: HashMap<String, Key> = sessions
        .iter()
        .map(|s| {
            (
                s.path.display().to_string(),
                (s.agent.as_str(), s.id.as_str()),
            )
        })
        .collect();
    let mut links = Links::default();
    // When each session joined its chain: when it was relayed into (a relayed session keeps
    // its source's message times), else when it began.
    let mut relayed_into: HashMap<Key, DateTime<Utc>> = HashMap::new();
    let mut into = |k: Key<'a>, t: Option<&str>| {
        if let Some(t) = t.and_then(parse_time) {
            let at = relayed_into.entry(k).or_insert(t);
            *at = (*at).min(t);
        }
    };
    for l in landed {
        let e = l.entry;
        let to = by_path
            .get(&e.target.path)
            .copied()
            .unwrap_or((&e.target.agent, &e.target.id));
        links.join((&e.source.agent, &e.source.id), to);
        into(to, Some(&e.time));
    }
    for s in sessions.iter().filter(|s| s.parent_id.is_none()) {
        if let Some(r) = s
            .relay_of
            .as_ref()
            .filter(|r| !r.agent.is_empty() && !r.id.is_empty())
        {
            links.join((&r.agent, &r.id), (&s.agent, &s.id));
            into((&s.agent, &s.id), r.relayed_at.as_deref());
        }
    }
    let listed: HashMap<Key, &Summary> = sessions
        .iter()
        .map(|s| ((s.agent.as_str(), s.id.as_str()), s))
        .collect();
    let mut groups: HashMap<usize, (Vec<Key>, Acc)> = HashMap::new();
    for (key, &n) in &links.index {
        groups.entry(links.root(n)).or_default().0.push(*key);
    }
    for c in counted {
        let key = (c.summary.agent.as_str(), c.summary.id.as_str());
        if let Some(&n) = links.index.get(&key) {
            groups
                .entry(links.root(n))
                .or_default()
                .1
                .session(&c.counts);
        }
    }
    for l in landed {
        let n = links.index[&(l.entry.source.agent.as_str(), l.entry.source.id.as_str())];
        let acc = &mut groups.entry(links.root(n)).or_default().1;
        acc.f.relays_out += 1;
        acc.relay_in(l.continued);
    }
    let mut out: Vec<ChainFigures> = groups
        .into_values()
        .filter(|(_, acc)| acc.f.sessions > 0 || acc.f.relays_out > 0)
        .map(|(mut keys, acc)| {
            let began = |k: &Key| {
                relayed_into.get(k).copied().or_else(|| {
                    let s = listed.get(k)?;
                    s.created.as_ref().and_then(|t| t.time()).or(s.sort_time())
                })
            };
            keys.sort_by_key(|k| (began(k).is_none(), began(k), k.1));
            let last = keys.iter().filter_map(|k| listed.get(k)?.sort_time()).max();
            ChainFigures {
                agents: keys.iter().map(|k| k.0.to_string()).collect(),
                sessions: keys.iter().map(|k| format!("{}:{}", k.0, k.1)).collect(),
                title: keys.first().and_then(|k| listed.get(k)?.title.clone()),
                last_active: last.map(ledger::time_text),
                figures: acc.finish(),
            }
        })
        .collect();
    out.sort_by(|a, b| b.last_active.cmp(&a.last_active));
    out
}

/// Union-find over sessions named by agent and id.
#[derive(Default)]
struct Links<'a> {
    index: HashMap<Key<'a>, usize>,
    parent: Vec<usize>,
}

impl<'a> Links<'a> {
    fn node(&mut self, k: Key<'a>) -> usize {
        let next = self.parent.len();
        let n = *self.index.entry(k).or_insert(next);
        if n == next {
            self.parent.push(n);
        }
        n
    }

    fn root(&self, mut n: usize) -> usize {
        while self.parent[n] != n {
            n = self.parent[n];
        }
        n
    }

    fn join(&mut self, a: Key<'a>, b: Key<'a>) {
        let (a, b) = (self.node(a), self.node(b));
        let (ra, rb) = (self.root(a), self.root(b));
        self.parent[ra] = rb;
    }
}
