//! `session-relay log`: the lineage of a task across agents. The ledger's relays and the
//! provenance records relayed sessions carry link sessions into chains (A -> B -> A -> C); a
//! chain is every session linked to the one asked about, oldest first, with what each relay
//! kept and whether its session was continued afterwards.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;
use chrono::{DateTime, Utc};
use rayon::prelude::*;
use serde::Serialize;

use super::Scope;
use crate::config::Config;
use crate::ledger::{self, Entry, Kept, Secrets};
use crate::model::{Role, Summary, Timestamp};
use crate::select;

pub struct Options {
    /// The session whose chain to show (`latest`: this directory's newest).
    pub session: String,
    /// Where `latest` and id prefixes are looked up.
    pub scope: Scope,
    /// Every chain, not only the session's.
    pub every_chain: bool,
    /// `--archive`: each relay's commit in the archive, the configured one (`Some(None)`) or
    /// the one named.
    pub archive: Option<Option<std::path::PathBuf>>,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub chains: Vec<Chain>,
    /// With `--archive`: the archive read (a git repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// Sessions that could not be read, damaged ledger lines.
    pub warnings: Vec<String>,
}

/// Sessions linked by relays, oldest first.
#[derive(Debug, Serialize)]
pub struct Chain {
    /// The place in `sessions` of the session asked about (`None` with --all).
    pub asked: Option<usize>,
    pub sessions: Vec<ChainSession>,
    /// Oldest first.
    pub relays: Vec<Relay>,
}

#[derive(Debug, Serialize)]
pub struct ChainSession {
    pub agent: String,
    pub id: String,
    /// Where it is, or was (a session gone is known by the ledger's path, if at all).
    pub path: Option<String>,
    pub cwd: Option<String>,
    /// Masked as `list` masks it.
    pub title: Option<String>,
    pub created: Option<Timestamp>,
    pub updated: Option<Timestamp>,
    /// Deleted since (no agent's store lists it).
    pub gone: bool,
    /// Relayed here from a bundle (`session-relay bundle`), the path the ledger records: never
    /// in a store on this machine, and not gone.
    pub bundle: Option<String>,
    /// Deleted by `session-relay clean`.
    pub cleaned: bool,
    /// User and assistant messages, as `list` counts them.
    pub messages: Option<usize>,
    /// Turns: a user message and everything up to the next.
    pub turns: Option<usize>,
    /// The conversation's size, estimated (characters / 4), the same for every agent.
    pub tokens: Option<usize>,
    /// How full the context was at the newest request, as the agent recorded it.
    pub context_tokens: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct Relay {
    /// Places in the chain's `sessions`.
    pub from: usize,
    pub to: usize,
    pub relayed_at: Option<String>,
    /// The ledger records it; otherwise only the target's provenance record tells of it, and
    /// the figures below are unknown.
    pub in_ledger: bool,
    pub budget: Option<usize>,
    /// Tokens written (brief, kept turns and summary), with the target's tokenizer.
    pub written_tokens: Option<usize>,
    pub tokenizer: Option<String>,
    /// User and assistant messages written.
    pub messages_written: Option<usize>,
    /// Where the source's turns went (relays recorded before session-relay 0.1 lack it).
    pub kept: Option<Kept>,
    /// The secrets masked, by kind (`redacted: false`: written with --no-redact).
    pub secrets: Option<Secrets>,
    /// The target grew after the relay: someone went on with it. `None` when that cannot be
    /// told (the target is gone, or the ledger does not record what was written).
    pub continued: Option<bool>,
    /// A newer relay of the same source replaced it.
    pub superseded: bool,
    /// With `--archive`: its commit there, `null` when it was not archived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<Option<crate::archive::Archived>>,
}

type Key = (String, String);

/// One session of the graph, as the listing and the ledger know it.
#[derive(Default)]
struct Node {
    key: Key,
    summary: Option<Summary>,
    /// The ledger's path and directory for it, when the listing does not have it.
    path: Option<String>,
    cwd: Option<String>,
    cleaned: bool,
}

/// A relay between two nodes: from the ledger, or from a provenance record only.
struct Edge<'e> {
    from: usize,
    to: usize,
    entry: Option<&'e Entry>,
    relayed_at: Option<String>,
}

struct Graph<'e> {
    nodes: Vec<Node>,
    index: HashMap<Key, usize>,
    edges: Vec<Edge<'e>>,
}

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
    crate::progress::scope(&opts.progress, || run_in_scope(cfg, opts))
}

fn run_in_scope(cfg: &Config, opts: &Options) -> Result<Report> {
    let redactor = cfg.redactor()?;
    let (entries, mut warnings) = ledger::read();
    let listing = match select::list_with(
        cfg,
        None,
        &select::ListOptions {
            redactor: Some(&redactor),
            save_cache: true,
        },
    ) {
        Ok(l) => l,
        // A machine with no agent's store still has the ledger's relays to tell (their
        // sessions show as gone); with neither, the error names every store tried.
        Err(e) if !entries.is_empty() && no_store(&e) => select::Listing {
            sessions: Vec::new(),
            warnings: Vec::new(),
        },
        Err(e) => return Err(e),
    };
    warnings.extend(listing.warnings);
    let mut graph = Graph::build(&entries, listing.sessions);
    graph.scan_outside_stores(cfg, &redactor, &mut warnings);
    graph.provenance_edges();
    let components = graph.components();
    let picked: Vec<(Vec<usize>, Option<usize>)> = if opts.every_chain {
        let mut chains: Vec<Vec<usize>> = components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| graph.ordered(c))
            .collect();
        chains.sort_by_key(|c| graph.appeared(c[0]));
        chains.into_iter().map(|c| (c, None)).collect()
    } else {
        let asked = asked(cfg, opts, &graph)?;
        let chain = components
            .into_iter()
            .find(|c| c.contains(&asked))
            .map(|c| graph.ordered(c))
            .unwrap_or_else(|| vec![asked]);
        vec![(chain, Some(asked))]
    };
    let figures = figures(&graph, picked.iter().flat_map(|(c, _)| c), &mut warnings);
    let superseded = ledger::superseded(&entries);
    let chains = picked
        .into_iter()
        .map(|(nodes, asked)| graph.chain(&nodes, asked, &figures, &superseded))
        .collect();
    let mut report = Report {
        chains,
        archive: None,
        warnings,
    };
    if let Some(given) = &opts.archive {
        add_archive(cfg, given.as_deref(), &mut report);
    }
    Ok(report)
}

/// `--archive`: each relay's commit in the archive at `given` (else the configured one), found
/// by the session it wrote.
fn add_archive(cfg: &Config, given: Option<&Path>, report: &mut Report) {
    let Some(dir) = given.map(Path::to_path_buf).or_else(|| cfg.archive.dir()) else {
        report.warnings.push(
            "--archive: this platform has no state folder; set archive_dir in the config".into(),
        );
        return;
    };
    report.archive = Some(dir.display().to_string());
    let found = if dir.join("HEAD").is_file() {
        crate::archive::relays(&dir).unwrap_or_else(|e| {
            report
                .warnings
                .push(format!("cannot read the archive {}: {e:#}", dir.display()));
            HashMap::new()
        })
    } else {
        report.warnings.push(format!(
            "no archive at {}: relays are archived with `archive: git` in the config, or relay --archive DIR",
            dir.display()
        ));
        HashMap::new()
    };
    for chain in &mut report.chains {
        for r in &mut chain.relays {
            let to = &chain.sessions[r.to];
            r.archive = Some(found.get(&(to.agent.clone(), to.id.clone())).cloned());
        }
    }
}

impl<'e> Graph<'e> {
    fn build(entries: &'e [Entry], sessions: Vec<Summary>) -> Graph<'e> {
        let mut g = Graph {
            nodes: Vec::new(),
            index: HashMap::new(),
            edges: Vec::new(),
        };
        for s in sessions.into_iter().filter(|s| s.parent_id.is_none()) {
            let n = g.node(&s.agent, &s.id);
            let better = g.nodes[n]
                .summary
                .as_ref()
                .is_none_or(|o| o.listing_rank() < s.listing_rank());
            if better {
                g.nodes[n].summary = Some(s);
            }
        }
        let by_path: HashMap<String, usize> = g
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((n.summary.as_ref()?.path.display().to_string(), i)))
            .collect();
        for e in landed_relays(entries) {
            let from = g.side_node(&e.source, None, &by_path);
            let to = g.side_node(&e.target, Some(&e.cwd), &by_path);
            g.edges.push(Edge {
                from,
                to,
                entry: Some(e),
                relayed_at: Some(e.time.clone()),
            });
        }
        for e in entries.iter().filter(|e| e.event == "clean") {
            if let Some(&n) = g.index.get(&(e.target.agent.clone(), e.target.id.clone())) {
                g.nodes[n].cleaned = true;
            }
        }
        g
    }

    /// A relay's source named by a file outside every store (an export, a copied session)
    /// is not listed, yet still there: it is read at the ledger's path, not shown as gone.
    fn scan_outside_stores(
        &mut self,
        cfg: &Config,
        redactor: &crate::redact::Redactor,
        warnings: &mut Vec<String>,
    ) {
        for node in self.nodes.iter_mut().filter(|n| n.summary.is_none()) {
            let Some(path) = node.path.as_deref().map(Path::new) else {
                continue;
            };
            if !path.is_file() {
                continue;
            }
            let Some(adapter) = select::locate_file(cfg, path).ok().and_then(|l| l.adapter) else {
                continue;
            };
            if adapter.name() != node.key.0 {
                continue;
            }
            match adapter.scan(path) {
                Ok(mut summary) => {
                    redactor.title(&mut summary.title);
                    node.summary = Some(summary);
                }
                Err(e) => warnings.push(format!("{}: {e:#}", path.display())),
            }
        }
    }

    /// The node of `(agent, id)`, added when new.
    fn node(&mut self, agent: &str, id: &str) -> usize {
        let key = (agent.to_string(), id.to_string());
        if let Some(&n) = self.index.get(&key) {
            return n;
        }
        self.nodes.push(Node {
            key: key.clone(),
            ..Node::default()
        });
        self.index.insert(key, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    /// The node a ledger side names: the listed session at its path (an agent may list a
    /// session under another id than the one the relay read), else by agent and id.
    fn side_node(
        &mut self,
        side: &ledger::Side,
        cwd: Option<&str>,
        by_path: &HashMap<String, usize>,
    ) -> usize {
        let n = match by_path.get(&side.path) {
            Some(&n) if self.nodes[n].key.0 == side.agent => n,
            _ => self.node(&side.agent, &side.id),
        };
        let node = &mut self.nodes[n];
        node.path.get_or_insert_with(|| side.path.clone());
        if let Some(c) = cwd {
            node.cwd.get_or_insert_with(|| c.to_string());
        }
        n
    }

    /// Relays that only a listed session's provenance record tells of (the ledger lost, or
    /// kept on another machine).
    fn provenance_edges(&mut self) {
        let into: std::collections::HashSet<usize> = self.edges.iter().map(|e| e.to).collect();
        let named: Vec<(usize, crate::model::RelaySource)> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| !into.contains(i))
            .filter_map(|(i, n)| Some((i, n.summary.as_ref()?.relay_of.clone()?)))
            .collect();
        for (to, source) in named {
            if source.agent.is_empty() || source.id.is_empty() {
                continue;
            }
            let from = self.node(&source.agent, &source.id);
            self.edges.push(Edge {
                from,
                to,
                entry: None,
                relayed_at: source.relayed_at,
            });
        }
    }

    /// The sessions linked by relays, each group once.
    fn components(&self) -> Vec<Vec<usize>> {
        let mut parent: Vec<usize> = (0..self.nodes.len()).collect();
        fn root(parent: &mut [usize], mut n: usize) -> usize {
            while parent[n] != n {
                parent[n] = parent[parent[n]];
                n = parent[n];
            }
            n
        }
        for e in &self.edges {
            let (a, b) = (root(&mut parent, e.from), root(&mut parent, e.to));
            parent[a] = b;
        }
        let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
        for n in 0..self.nodes.len() {
            let r = root(&mut parent, n);
            groups.entry(r).or_default().push(n);
        }
        groups.into_values().collect()
    }

    /// When a session joined its chain: when it was relayed into, else when it began.
    fn appeared(&self, n: usize) -> (Option<DateTime<Utc>>, &str) {
        let relayed = self
            .edges
            .iter()
            .filter(|e| e.to == n)
            .filter_map(|e| parse_time(e.relayed_at.as_deref()?))
            .min();
        let began = self.nodes[n].summary.as_ref().and_then(|s| {
            s.created
                .as_ref()
                .and_then(Timestamp::time)
                .or_else(|| s.sort_time())
        });
        (relayed.or(began), &self.nodes[n].key.1)
    }

    fn ordered(&self, mut nodes: Vec<usize>) -> Vec<usize> {
        nodes.sort_by_key(|&n| self.appeared(n));
        nodes
    }
}

fn no_store(e: &anyhow::Error) -> bool {
    e.downcast_ref::<crate::exit::CliError>()
        .is_some_and(|c| c.code == crate::exit::ExitCode::NoStore)
}

/// The store relays that landed: every `relay` entry but those a `withdrawn` entry took
/// back, oldest first.
pub(crate) fn landed_relays(entries: &[Entry]) -> Vec<&Entry> {
    let mut landed: Vec<Option<&Entry>> = Vec::new();
    for e in entries {
        match e.event.as_str() {
            "relay" if !e.standalone => landed.push(Some(e)),
            ledger::WITHDRAWN => {
                let taken = landed
                    .iter_mut()
                    .rev()
                    .find(|l| l.is_some_and(|l| l.target.path == e.target.path));
                if let Some(l) = taken {
                    *l = None;
                }
            }
            _ => {}
        }
    }
    landed.into_iter().flatten().collect()
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The session `opts` names, as a node of the graph. A session deleted since is found by its
/// id, a prefix of it, or its path, in what the ledger and the provenance records name.
fn asked(cfg: &Config, opts: &Options, graph: &Graph) -> Result<usize> {
    let located = match select::select(cfg, &opts.session, &opts.scope.select()?) {
        Ok(l) => l,
        Err(err) => return known_gone(graph, &opts.session).ok_or(err),
    };
    let path = located.path.display().to_string();
    let canonical = std::fs::canonicalize(&located.path).ok();
    let listed = graph.nodes.iter().position(|n| {
        n.summary.as_ref().is_some_and(|s| {
            s.path == located.path || canonical.as_ref().is_some_and(|c| *c == s.path)
        }) || n.path.as_deref() == Some(path.as_str())
    });
    if let Some(n) = listed {
        return Ok(n);
    }
    // Not a top-level session of a store (a subagent transcript, an export): by what it says.
    let s = located.read_with(crate::adapter::ReadOptions {
        lean: true,
        ..crate::plan::read_options_full()
    })?;
    graph
        .index
        .get(&(s.agent.clone(), s.id.clone()))
        .copied()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{} is no session of an agent's store: it has no relays",
                located.path.display()
            )
        })
}

/// A gone session the graph knows, named by its full id, a unique prefix, or its path.
fn known_gone(graph: &Graph, selector: &str) -> Option<usize> {
    let gone = |n: &&Node| n.summary.is_none();
    let mut found =
        graph.nodes.iter().enumerate().filter(|(_, n)| {
            gone(n) && (n.key.1 == selector || n.path.as_deref() == Some(selector))
        });
    if let Some((i, _)) = found.next() {
        return Some(i);
    }
    let prefixed: Vec<usize> = graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| gone(n) && n.key.1.starts_with(selector))
        .map(|(i, _)| i)
        .collect();
    (prefixed.len() == 1).then(|| prefixed[0])
}

/// What reading a session tells of it: turns, estimated tokens, the recorded context.
#[derive(Default, Clone, Copy)]
struct Figures {
    turns: usize,
    tokens: usize,
    context_tokens: Option<u64>,
}

/// The figures of every listed session among `nodes`, read on every core.
fn figures<'a>(
    graph: &Graph,
    nodes: impl Iterator<Item = &'a usize>,
    warnings: &mut Vec<String>,
) -> HashMap<usize, Figures> {
    let wanted: Vec<(usize, &Summary)> = nodes
        .filter_map(|&n| Some((n, graph.nodes[n].summary.as_ref()?)))
        .collect();
    let read: Vec<(usize, Result<Figures>)> = wanted
        .into_par_iter()
        .map(|(n, s)| (n, read_figures(s)))
        .collect();
    let mut out = HashMap::new();
    for (n, r) in read {
        match r {
            Ok(f) => {
                out.insert(n, f);
            }
            Err(e) => warnings.push(format!("{}: {e:#}", graph.nodes[n].key.1)),
        }
    }
    out
}

fn read_figures(s: &Summary) -> Result<Figures> {
    let adapter = crate::adapters::by_name(&s.agent)
        .ok_or_else(|| anyhow::anyhow!("unknown agent {}", s.agent))?;
    // Tool outputs cut as a relay cuts them: a long session is not held whole to be counted.
    let session = adapter.read_with(
        &s.path,
        None,
        crate::adapter::ReadOptions {
            lean: true,
            ..crate::plan::read_options_full()
        },
    )?;
    let users = session
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .count();
    let opens_otherwise = session
        .messages
        .first()
        .is_some_and(|m| m.role != Role::User);
    Ok(Figures {
        turns: users + usize::from(opens_otherwise),
        tokens: session
            .messages
            .iter()
            .map(crate::plan::fit::source_tokens)
            .sum(),
        context_tokens: session.context_usage.as_ref().map(|u| u.tokens),
    })
}

impl Graph<'_> {
    fn chain(
        &self,
        nodes: &[usize],
        asked: Option<usize>,
        figures: &HashMap<usize, Figures>,
        superseded: &std::collections::HashSet<String>,
    ) -> Chain {
        let place: HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let mut edges: Vec<&Edge> = self
            .edges
            .iter()
            .filter(|e| place.contains_key(&e.from))
            .collect();
        edges.sort_by_key(|e| e.relayed_at.as_deref().and_then(parse_time));
        Chain {
            asked: asked.and_then(|a| place.get(&a).copied()),
            sessions: nodes
                .iter()
                .map(|&n| self.session(n, figures.get(&n)))
                .collect(),
            relays: edges
                .into_iter()
                .map(|e| self.relay(e, place[&e.from], place[&e.to], superseded))
                .collect(),
        }
    }

    fn session(&self, n: usize, f: Option<&Figures>) -> ChainSession {
        let node = &self.nodes[n];
        let s = node.summary.as_ref();
        let bundle = node
            .path
            .clone()
            .filter(|p| s.is_none() && from_bundle(Path::new(p)));
        ChainSession {
            agent: node.key.0.clone(),
            id: node.key.1.clone(),
            path: s
                .map(|s| s.path.display().to_string())
                .or_else(|| node.path.clone()),
            cwd: s.and_then(|s| s.cwd.clone()).or_else(|| node.cwd.clone()),
            title: s.and_then(|s| s.title.clone()),
            created: s.and_then(|s| s.created.clone()),
            updated: s.and_then(|s| s.updated.clone()),
            gone: s.is_none() && bundle.is_none(),
            bundle,
            cleaned: node.cleaned && s.is_none(),
            messages: s.map(|s| s.messages),
            turns: f.map(|f| f.turns),
            tokens: f.map(|f| f.tokens),
            context_tokens: f.and_then(|f| f.context_tokens),
        }
    }

    fn relay(
        &self,
        e: &Edge,
        from: usize,
        to: usize,
        superseded: &std::collections::HashSet<String>,
    ) -> Relay {
        let tokens: Option<serde_json::Value> = e
            .entry
            .and_then(|x| x.tokens.as_ref())
            .and_then(|t| serde_json::from_str(t.get()).ok());
        let number = |k: &str| {
            tokens
                .as_ref()
                .and_then(|t| t.get(k)?.as_u64())
                .map(|n| n as usize)
        };
        Relay {
            from,
            to,
            relayed_at: e.relayed_at.clone(),
            in_ledger: e.entry.is_some(),
            budget: number("budget"),
            written_tokens: number("total"),
            tokenizer: tokens
                .as_ref()
                .and_then(|t| Some(t.get("tokenizer")?.as_str()?.to_string())),
            messages_written: e.entry.map(|x| x.messages),
            kept: e.entry.and_then(Entry::kept),
            secrets: e.entry.and_then(Entry::secrets_masked),
            continued: e
                .entry
                .and_then(|x| continued(x, self.nodes[e.to].summary.as_ref()?)),
            superseded: e.entry.is_some_and(|x| superseded.contains(&x.target.path)),
            archive: None,
        }
    }
}

/// Whether the relayed session `e` wrote grew since, as it is listed now (`s`): its file is
/// longer than, or not, what the relay wrote; a session kept in a database (which the relay's
/// own file is not) holds more messages than were written.
pub(crate) fn continued(e: &Entry, s: &Summary) -> Option<bool> {
    let path = Path::new(&e.target.path);
    if s.path != path {
        return Some(s.messages > e.messages);
    }
    let len = std::fs::metadata(path).ok()?.len();
    if len != e.bytes {
        return Some(true);
    }
    Some(ledger::sha256_file(path).ok()? != e.target.sha256)
}

/// Whether a relay's source path names a bundle: a relay from one records the bundle's path,
/// which may since have been moved (its name still says it) or named otherwise (its content
/// does).
fn from_bundle(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "bundle") || crate::bundle::is_bundle(path)
}
