//! `session-relay relay`: select -> read -> plan -> write -> verify -> ledger, and a report.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::Utc;
use serde::Serialize;

use super::{Redactions, Scope, redact};
use crate::adapter::{Adapter, NativeSession, WriteRequest};
use crate::config::Config;
use crate::exit::{CliError, ExitCode};
use crate::ledger;
use crate::model::{Role, Session};
use crate::plan::{self, PlanReport};
use crate::text::one_line_cut;
use crate::verify;

pub struct Options {
    pub session: String,
    /// The agent that will resume the session.
    pub to: String,
    /// Only this agent's sessions are considered when selecting.
    pub agent: Option<String>,
    /// The directory to resume in (and to look up `latest` in).
    pub cwd: Option<PathBuf>,
    pub title: Option<String>,
    /// A standalone file (or folder) to write instead of the target's store.
    pub out: Option<PathBuf>,
    pub dry_run: bool,
    pub budget: Option<usize>,
    pub no_redact: bool,
    pub force: bool,
    /// `latest` is the newest session of any directory.
    pub all: bool,
    /// From a bundle made with `--git`: take its branch into the checkout at `cwd`.
    pub apply_changes: bool,
    /// `--archive DIR`: archive this relay there, whatever the config says.
    pub archive: Option<PathBuf>,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub dry_run: bool,
    /// The source was relayed before and has not changed: nothing new was written.
    pub already_relayed: bool,
    pub source: ledger::Side,
    pub target: ledger::Side,
    pub cwd: String,
    pub title: String,
    /// Empty for a standalone file.
    pub resume_command: String,
    /// User and assistant messages written.
    pub messages: usize,
    pub bytes: usize,
    /// When the earlier relay was made (with `already_relayed`).
    pub relayed_at: Option<String>,
    /// Earlier relays of this source to the same agent and directory that this one replaces
    /// (`clean --superseded` removes them once nobody continued them).
    pub supersedes: Vec<ledger::Side>,
    #[serde(flatten)]
    pub plan: PlanReport,
    /// Secrets masked, by kind (`null` with --no-redact).
    pub redactions: Redactions,
    /// Where the relay was archived (`archive: git`, `--archive DIR`); `null` when it was not.
    pub archive: Option<crate::archive::Archived>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
    crate::progress::scope(&opts.progress, || run_in_scope(cfg, opts))
}

fn run_in_scope(cfg: &Config, opts: &Options) -> Result<Report> {
    let target = crate::adapters::by_name(&opts.to).context("unknown target agent")?;
    // Before the session is read, and on a dry run too: a dry run says what the relay would do,
    // and this one would only fail.
    let home = cfg.agent(target.name()).session_root.clone();
    if opts.out.is_none() && !home.is_dir() {
        return Err(missing_home(target, &home));
    }
    let mut src = read_source(cfg, opts, target)?;
    let source_side = ledger::Side {
        agent: src.session.agent.clone(),
        id: src.session.id.clone(),
        path: match &src.bundle {
            Some(b) => b.path.display().to_string(),
            None => src.located.path.display().to_string(),
        },
        sha256: src.snapshot.sha256.clone(),
    };
    let mut notes: Vec<String> = Vec::new();
    // A session from a bundle goes on here, not where it ran on the machine that bundled it.
    let cwd = match (&src.bundle, &opts.cwd) {
        (Some(_), None) => resolve_cwd(Some(&super::current_dir()?), None, &mut notes)?,
        (_, flag) => resolve_cwd(flag.as_deref(), src.session.cwd.as_deref(), &mut notes)?,
    };
    let apply = changes_to_apply(opts, src.bundle.as_ref(), &cwd)?;

    // One relay at a time per source and target: a second one started meanwhile waits, then
    // finds the first in the ledger.
    let _lock = if opts.dry_run {
        None
    } else {
        Some(relay_lock(&src.snapshot.sha256, target.name())?)
    };
    let entries = ledger::entries_about(&src.session.id);
    // Relays of this source to the same agent and directory that are still in place.
    let earlier = earlier_relays(&entries, &src.session, target, &cwd, opts.out.is_some());
    if !opts.force
        && let Some(prev) = earlier
            .iter()
            .rev()
            .find(|e| e.source.sha256 == src.snapshot.sha256)
    {
        let notes = complete_earlier(cfg, opts, target, prev, &entries)?;
        return Ok(already_relayed(
            opts,
            target,
            prev,
            source_side,
            cwd,
            notes,
            src.warnings,
        ));
    }
    let supersedes = superseded_by_this(&entries, &earlier, opts.dry_run, &mut notes);
    let written = plan_and_write(cfg, opts, target, &mut src, &home, &cwd, &mut notes)?;
    let target_side = ledger::Side {
        agent: target.name().to_string(),
        id: written.native.id.clone(),
        path: written.native.path.display().to_string(),
        sha256: ledger::sha256_bytes(&written.native.bytes),
    };
    if !opts.dry_run {
        let sides = (source_side.clone(), target_side.clone());
        let mut entry = ledger_entry(&written, sides, &cwd, src.snapshot.len, &supersedes);
        entry.secrets = secrets_record(&src.redactions);
        land(target, &written, &entry, &home, &mut notes)?;
    }
    if let (Some(apply), Some(b)) = (&apply, &src.bundle) {
        apply_changes(opts.dry_run, apply, b, &mut notes)?;
    }
    // Freeing a long session's tens of thousands of messages one by one takes a tenth of a
    // 100 MB relay; nothing waits for it, so it happens beside the report (or not at all when
    // the process ends first).
    std::thread::spawn(move || drop(src.session));
    let mut report = Report {
        dry_run: opts.dry_run,
        already_relayed: false,
        source: source_side,
        target: target_side,
        cwd,
        resume_command: if written.standalone.is_some() {
            String::new()
        } else {
            written.native.resume_command.clone()
        },
        title: written.title.clone(),
        messages: written.plan.session.message_count(),
        bytes: written.native.bytes.len(),
        relayed_at: None,
        supersedes,
        plan: written.plan.report(),
        redactions: src.redactions,
        archive: None,
        notes,
        warnings: src.warnings,
    };
    archive_relay(cfg, opts, &written, src.redactor.as_deref(), &mut report);
    Ok(report)
}

/// With the archive on (`archive: git`, or `--archive DIR`): commits what the relay wrote,
/// masked, and its report, on the branch of its task chain (not on a dry run). A failure is a
/// warning of the report, never the relay's.
fn archive_relay(
    cfg: &Config,
    opts: &Options,
    written: &Written,
    redactor: Option<&crate::redact::Redactor>,
    report: &mut Report,
) {
    if opts.dry_run {
        return;
    }
    let dir = match (&opts.archive, cfg.archive.kind) {
        (Some(d), _) => std::path::absolute(d).unwrap_or_else(|_| d.clone()),
        (None, crate::config::ArchiveKind::Off) => return,
        (None, crate::config::ArchiveKind::Git) => match cfg.archive.dir() {
            Some(d) => d,
            None => {
                report.warnings.push(
                    "the relay was not archived: this platform has no state folder; set archive_dir in the config".into(),
                );
                return;
            }
        },
    };
    super::step("archiving the relay");
    let committed = archived_files(cfg, written, redactor, report).and_then(|files| {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
        let (agent, id) = ledger::chain_root(&report.source);
        let branch = crate::archive::branch_name(&agent, &id);
        let message = crate::archive::message(
            &report.source,
            &report.target,
            written.plan.fit.budget,
            written.plan.fit.total_tokens,
            &ledger::time_text(written.now),
        );
        let commit = crate::archive::commit(
            &dir,
            &crate::archive::Commit {
                branch: &branch,
                message: &message,
                time: written.now,
                files: &files,
            },
        )?;
        Ok(crate::archive::Archived {
            dir: dir.display().to_string(),
            branch,
            commit,
        })
    });
    match committed {
        Ok(a) => report.archive = Some(a),
        Err(e) => report.warnings.push(crate::archive::failure(&dir, &e)),
    }
}

/// The files of a relay's archive commit, masked: with --no-redact too (the relay wrote the
/// secrets where it was asked to; the archive keeps none), by the config's rules.
fn archived_files(
    cfg: &Config,
    written: &Written,
    redactor: Option<&crate::redact::Redactor>,
    report: &Report,
) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let own;
    let (rules, masked) = match redactor {
        Some(r) => (r, true),
        None => {
            own = cfg.redactor()?;
            (&own, false)
        }
    };
    let mut session = Vec::new();
    let mut snapshot = written.plan.snapshot.clone();
    if masked {
        crate::model::neutral::write(&written.plan.session, &mut session)?;
    } else {
        let mut s = written.plan.session.clone();
        rules.session(&mut s);
        crate::model::neutral::write(&s, &mut session)?;
        snapshot.mask(rules);
    }
    let mut report_value = serde_json::to_value(report)?;
    if let Some(o) = report_value.as_object_mut() {
        o.insert("schema_version".into(), super::JSON_SCHEMA_VERSION.into());
    }
    // The report names paths, a title, notes: whatever a secret could hide in is masked.
    rules.json(&mut report_value);
    let mut report_json = serde_json::to_vec_pretty(&report_value)?;
    report_json.push(b'\n');
    let mut snapshot_json = serde_json::to_vec_pretty(&snapshot)?;
    snapshot_json.push(b'\n');
    Ok(vec![
        (crate::archive::SESSION, session),
        (crate::archive::REPORT, report_json),
        (crate::archive::SNAPSHOT, snapshot_json),
    ])
}

/// Relays of `source` to the same agent and directory, of the same kind (into the store or
/// standalone), that are still in place.
fn earlier_relays<'e>(
    entries: &'e [ledger::Entry],
    source: &Session,
    target: &'static dyn Adapter,
    cwd: &str,
    standalone: bool,
) -> Vec<&'e ledger::Entry> {
    ledger::live_relays(entries)
        .into_iter()
        .filter(|e| {
            e.source.agent == source.agent
                && e.source.id == source.id
                && e.target.agent == target.name()
                && e.cwd == cwd
                && e.standalone == standalone
                && Path::new(&e.target.path).exists()
        })
        .collect()
}

/// The report of a relay that an earlier one of the same source already made (`prev`).
fn already_relayed(
    opts: &Options,
    target: &'static dyn Adapter,
    prev: &ledger::Entry,
    source: ledger::Side,
    cwd: String,
    notes: Vec<String>,
    warnings: Vec<String>,
) -> Report {
    Report {
        dry_run: opts.dry_run,
        already_relayed: true,
        source,
        target: prev.target.clone(),
        resume_command: if prev.standalone {
            String::new()
        } else {
            target.resume_command(&prev.target.id, &cwd)
        },
        cwd,
        title: String::new(),
        messages: prev.messages,
        bytes: prev.bytes as usize,
        relayed_at: Some(prev.time.clone()),
        supersedes: Vec::new(),
        plan: PlanReport::default(),
        redactions: Redactions(None),
        archive: None,
        notes,
        warnings,
    }
}

/// The ledger's line for a relay written as `written`, from source to target (`sides`); it
/// says `registered: false` until the target's indexes list it.
fn ledger_entry(
    written: &Written,
    sides: (ledger::Side, ledger::Side),
    cwd: &str,
    source_bytes: u64,
    supersedes: &[ledger::Side],
) -> ledger::Entry {
    let (source, target) = sides;
    ledger::Entry {
        event: "relay".into(),
        time: crate::ledger::time_text(written.now),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        source,
        target,
        cwd: cwd.to_string(),
        standalone: written.standalone.is_some(),
        bytes: written.native.bytes.len() as u64,
        messages: written.plan.session.message_count(),
        tokens: serde_json::value::to_raw_value(&serde_json::json!({
            "budget": written.plan.fit.budget,
            "total": written.plan.fit.total_tokens,
            "tokenizer": written.plan.fit.tokenizer,
            "source_estimate": written.plan.fit.source.source_tokens,
        }))
        .ok(),
        source_bytes: Some(source_bytes),
        supersedes: supersedes.to_vec(),
        title: Some(written.title.clone()),
        registered: written.standalone.is_none().then_some(false),
        fit: serde_json::value::to_raw_value(&kept(&written.plan.fit)).ok(),
        secrets: None,
        continued: None,
    }
}

/// Where the source's turns went, as the ledger records it for `log`.
fn kept(fit: &plan::fit::FitReport) -> ledger::Kept {
    let count = |p: &plan::fit::Part| ledger::Count {
        turns: p.turns,
        messages: p.messages,
    };
    ledger::Kept {
        verbatim: count(&fit.verbatim),
        shortened: count(&fit.shortened),
        summarized: count(&fit.summarized),
        left_out: count(&fit.left_out),
    }
}

/// The secrets a relay masked, as the ledger records them for `log`.
fn secrets_record(r: &Redactions) -> Option<Box<serde_json::value::RawValue>> {
    serde_json::value::to_raw_value(&ledger::Secrets {
        redacted: r.0.is_some(),
        masked: r.0.clone().unwrap_or_default(),
    })
    .ok()
}

/// `git status` of a directory as the brief reads it, and the directory.
type GitStatus = (Option<crate::plan::brief::GitState>, String);

/// The source as a relay reads it: located, read (masked as it is read where it is read in
/// part), hashed as long as it was when the relay began, and masked.
struct Source {
    located: crate::select::Located,
    session: Session,
    redactor: Option<std::sync::Arc<crate::redact::Redactor>>,
    folder: Option<std::sync::Arc<crate::plan::fold::Folder>>,
    snapshot: ledger::Snapshot,
    redactions: Redactions,
    warnings: Vec<String>,
    /// With --cwd, the brief's `git status` of it, run beside the read.
    git_status: Option<std::thread::JoinHandle<Option<GitStatus>>>,
    /// The bundle the session came in, open while the relay reads it.
    bundle: Option<crate::bundle::Opened>,
}

/// Takes the bundle's branch into the checkout (`changes_to_apply`), and says so in `notes`.
fn apply_changes(
    dry_run: bool,
    (top, changes): &(PathBuf, crate::bundle::GitChanges),
    bundle: &crate::bundle::Opened,
    notes: &mut Vec<String>,
) -> Result<()> {
    if !dry_run {
        crate::bundle::git::apply(top, &bundle.file(crate::bundle::CHANGES), changes)?;
    }
    let verb = if dry_run {
        "would check out"
    } else {
        "checked out"
    };
    notes.push(format!(
        "{verb} the branch {} ({} changed files, on {}) in {}",
        changes.branch,
        changes.files,
        &changes.base[..changes.base.len().min(12)],
        top.display()
    ));
    Ok(())
}

/// `--apply-changes`: the checkout at `cwd` (its top folder) and the bundle's changes it takes,
/// once checked that it can (see `bundle::git::check_target`), before anything is written.
fn changes_to_apply(
    opts: &Options,
    bundle: Option<&crate::bundle::Opened>,
    cwd: &str,
) -> Result<Option<(PathBuf, crate::bundle::GitChanges)>> {
    if !opts.apply_changes {
        return Ok(None);
    }
    let changes = bundle.and_then(|b| b.manifest.git.clone()).ok_or_else(|| {
        CliError::new(
            ExitCode::Usage,
            match bundle {
                Some(b) => format!(
                    "--apply-changes: {} carries no git changes (it was made without --git, or nothing had changed)",
                    b.path.display()
                ),
                None => "--apply-changes takes a bundle (session-relay bundle SESSION -o FILE --git)".into(),
            },
        )
    })?;
    let top = crate::bundle::git::check_target(Path::new(cwd), &changes)?;
    Ok(Some((top, changes)))
}

fn read_source(cfg: &Config, opts: &Options, target: &'static dyn Adapter) -> Result<Source> {
    let scope = Scope {
        agent: opts.agent.clone(),
        cwd: opts.cwd.clone(),
        all: opts.all,
    };
    let read = super::relay_read_options(cfg, target, opts.budget);
    let (located, bundle) = crate::bundle::select(cfg, &opts.session, &scope.select()?)?;
    // With --cwd the brief's `git status` runs beside the read: in a large checkout it can take
    // longer than reading a session, and a relay that reads the session again reuses it.
    let git_status = opts.cwd.as_deref().map(|d| {
        let cwd = resolve_cwd(Some(d), None, &mut Vec::new());
        std::thread::spawn(move || {
            cwd.ok()
                .map(|c| (crate::plan::brief::live_git_state(&c), c))
        })
    });
    // The relay is of the source as long as it is now: an agent may append to it while it is
    // read (`ledger::Snapshot`). The parse reads to the end, so at least that far.
    let standin = located.adapter.and_then(|a| a.stand_in(&located.path));
    let source_len = match &standin {
        // The bytes that stand for a session in a database are hashed to their end.
        Some(_) => 0,
        None => std::fs::metadata(&located.path)
            .with_context(|| format!("cannot read {}", located.path.display()))?
            .len(),
    };
    // The source's hash is read beside the parse: a core waits while the parser's blocks are
    // read and handed on.
    let hashing = {
        let path = located.path.clone();
        std::thread::spawn(move || match standin {
            Some(write) => ledger::Snapshot::of_stand_in(&write, &path),
            None => ledger::Snapshot::take(&path, source_len),
        })
    };
    let mut warnings = Vec::new();
    let read = super::read_masked(cfg, &located, read, opts.no_redact, &mut warnings);
    super::step("hashing the source");
    let snapshot = hashing
        .join()
        .map_err(|_| anyhow::anyhow!("hashing {} failed", located.path.display()))??;
    // A source rewritten while it was read explains any odd thing the read found in it.
    unchanged_since(&located, &snapshot)?;
    let (mut session, redactor, folder) = read?;
    let redactions = redact(redactor.as_deref(), &mut session);
    if opts.dry_run {
        // Nothing is written, so nothing leaks: the warning would only be noise.
        warnings.retain(|w| !w.starts_with("--no-redact"));
    }
    warnings.extend(super::reader_warnings(&session));
    if session.messages.iter().all(|m| m.role != Role::User) {
        bail!(
            "{} has no user message to relay{}",
            located.path.display(),
            session
                .warnings
                .first()
                .map(|w| format!(" ({})", w.message))
                .unwrap_or_default()
        );
    }
    Ok(Source {
        located,
        session,
        redactor,
        folder,
        snapshot,
        redactions,
        warnings,
        git_status,
        bundle,
    })
}

/// Fails unless the source is at most appended to since `snapshot` (`Snapshot::unchanged_since`),
/// a session kept in a database by the bytes that stand for it.
fn unchanged_since(located: &crate::select::Located, snapshot: &ledger::Snapshot) -> Result<()> {
    match located.adapter.and_then(|a| a.stand_in(&located.path)) {
        Some(now) => snapshot.unchanged_in(&now, &located.path),
        None => snapshot.unchanged_since(&located.path),
    }
}

/// The notes of a relay answered from the ledger: the same source was relayed to the same place
/// before. One whose registration did not happen is not done: it is registered now.
fn complete_earlier(
    cfg: &Config,
    opts: &Options,
    target: &dyn Adapter,
    prev: &ledger::Entry,
    entries: &[ledger::Entry],
) -> Result<Vec<String>> {
    let mut notes = vec!["unchanged since the last relay; use --force to relay again".into()];
    if !ledger::awaiting_registration(entries)
        .iter()
        .any(|e| e.target.path == prev.target.path)
    {
        return Ok(notes);
    }
    if opts.dry_run {
        notes.push(format!(
            "would complete its registration in {}'s index",
            target.display_name()
        ));
        return Ok(notes);
    }
    notes.extend(register_again(cfg, prev).with_context(|| {
        format!(
            "the earlier relay {} is not registered in {}'s index, and could not be now",
            prev.target.path,
            target.display_name()
        )
    })?);
    notes.push(format!(
        "completed its registration in {}'s index",
        target.display_name()
    ));
    Ok(notes)
}

/// The earlier relays (of this source, to this agent and directory) a new one replaces: those
/// not replaced yet. Says so in `notes`.
fn superseded_by_this(
    entries: &[ledger::Entry],
    earlier: &[&ledger::Entry],
    dry_run: bool,
    notes: &mut Vec<String>,
) -> Vec<ledger::Side> {
    let already_superseded = ledger::superseded(entries);
    let supersedes: Vec<ledger::Side> = earlier
        .iter()
        .filter(|e| !already_superseded.contains(&e.target.path))
        .map(|e| e.target.clone())
        .collect();
    if !supersedes.is_empty() {
        let one = supersedes.len() == 1;
        notes.push(format!(
            "{} the earlier relay{} of this session ({}); `session-relay clean --superseded` removes {} once nobody continued {}",
            if dry_run { "would supersede" } else { "supersedes" },
            if one { "" } else { "s" },
            supersedes
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if one { "it" } else { "them" },
            if one { "it" } else { "them" },
        ));
    }
    supersedes
}

/// A relay planned and serialised, not written yet.
struct Written {
    now: chrono::DateTime<Utc>,
    title: String,
    plan: crate::plan::Plan,
    native: NativeSession,
    /// `--out`: the file written instead of the store's.
    standalone: Option<PathBuf>,
    /// `--out`: a folder to create first.
    create: Option<PathBuf>,
}

/// Fits the source to the target's budget and serialises it as the target's session.
fn plan_and_write(
    cfg: &Config,
    opts: &Options,
    target: &'static dyn Adapter,
    src: &mut Source,
    home: &Path,
    cwd: &str,
    notes: &mut Vec<String>,
) -> Result<Written> {
    let now = Utc::now();
    let id = target.new_id();
    let stamp = stamp(now);
    // A given title is written to the session, the store's index and the report:
    // masked like the session (a derived one comes from the already masked prompt).
    // Counted apart, then added: a second, full read of the source replaces its counts.
    let mut title_counts = crate::redact::Counts::new();
    let given = match (&opts.title, &src.redactor) {
        (Some(t), Some(r)) => Some(r.text(t, &mut title_counts).into_owned()),
        (t, _) => t.clone(),
    };
    let title = given.unwrap_or_else(|| default_title(&src.session, &stamp));
    let out = match &opts.out {
        Some(p) => Some(standalone_path(p, &stamp, &id)?),
        None => None,
    };
    let standalone = out.as_ref().map(|o| o.file.clone());
    let create = out.and_then(|o| o.create);
    if let Some(dir) = &create {
        let verb = if opts.dry_run {
            "would create the"
        } else {
            "created the"
        };
        notes.push(format!("{verb} folder {}", dir.display()));
    }
    let live_git = src
        .git_status
        .take()
        .and_then(|h| h.join().ok().flatten())
        .and_then(|(git, dir)| (dir == cwd).then_some(git));
    let (bundled_from, bundled_snapshot) = bundled(src)?;
    let plan = super::plan_relay(
        cfg,
        &src.located,
        &mut src.session,
        &mut src.redactions,
        src.redactor.as_deref(),
        &plan::Target {
            adapter: target,
            id: &id,
            cwd,
            title: &title,
            budget: opts.budget,
            live_git,
            bundled_from: bundled_from.as_deref(),
            bundled_snapshot: bundled_snapshot.as_ref(),
        },
        src.folder.as_deref(),
    )?;
    // The plan may have read the source again in full.
    unchanged_since(&src.located, &src.snapshot)?;
    if let Some(counts) = src.redactions.0.as_mut() {
        crate::redact::add_counts(counts, title_counts);
    }
    let req = WriteRequest {
        home: home.to_path_buf(),
        id: id.clone(),
        cwd: cwd.to_string(),
        title: title.clone(),
        provenance: verify::provenance(
            &src.session,
            &src.snapshot.sha256,
            &crate::ledger::time_text(now),
        ),
        now,
        standalone: standalone.clone(),
    };
    let native = target.write_session(&plan.session, &req)?;
    // On a dry run too: a folder on the way that is a file fails the relay.
    if standalone.is_none() {
        crate::fsutil::folders_can_hold(&native.path)?;
    }
    notes.extend(native.notes.iter().cloned());
    if plan.shape.dropped_orphan_results > 0 {
        notes.push(format!(
            "{} tool result(s) without a call left out",
            plan.shape.dropped_orphan_results
        ));
    }
    Ok(Written {
        now,
        title,
        plan,
        native,
        standalone,
        create,
    })
}

/// For a session from a bundle: the directory it ran in (the brief names it: the paths the
/// session speaks of are there) and the file-state snapshot read when it was bundled.
fn bundled(src: &Source) -> Result<(Option<String>, Option<plan::snapshot::Snapshot>)> {
    match &src.bundle {
        Some(b) => Ok((src.session.cwd.clone(), b.snapshot()?)),
        None => Ok((None, None)),
    }
}

/// Writes the relayed session and registers it in the target's indexes, recorded in the ledger
/// before it is written (a session that lands is one the ledger knows, and `clean` can remove,
/// even if this process is killed right after writing it) and withdrawn if it does not land.
fn land(
    target: &dyn Adapter,
    written: &Written,
    entry: &ledger::Entry,
    home: &Path,
    notes: &mut Vec<String>,
) -> Result<()> {
    if let Some(dir) = &written.create {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {} for --out", dir.display()))?;
    }
    ledger::append(entry)?;
    let withdraw = |e: anyhow::Error| -> anyhow::Error {
        match ledger::append(&ledger::Entry {
            event: ledger::WITHDRAWN.into(),
            time: crate::ledger::time_text(Utc::now()),
            supersedes: Vec::new(),
            ..entry.clone()
        }) {
            Ok(_) => e,
            Err(w) => e.context(format!("and the ledger still records it: {w:#}")),
        }
    };
    super::step("writing and checking the relayed session");
    let created = verify::write_and_verify(target, &written.native, &written.plan.session, home)
        .map_err(withdraw)?;
    if written.standalone.is_some() {
        return Ok(());
    }
    match target.register(home, &written.native, &written.plan.session, &written.title) {
        Ok(n) => {
            notes.extend(n);
            if let Err(e) = record_registered(entry) {
                notes.push(format!(
                    "{e:#}; the next relay of this session or `session-relay doctor --fix` records it"
                ));
            }
            Ok(())
        }
        Err(e) => Err(undo_unregistered(
            target,
            &written.native,
            &created,
            e,
            withdraw,
        )),
    }
}

/// The title of a relayed session when none is given: `relay_<stamp> from <agent>: <first
/// request>`, the stamp being the relay's time (`%Y%m%d_%H%M%S`).
pub(super) fn default_title(source: &Session, stamp: &str) -> String {
    format!(
        "relay_{stamp} from {}: {}",
        source.agent,
        one_line_cut(source.first_user_prompt().unwrap_or(""), 60)
    )
}

/// The stamp of a relay made at `now`, in its default title and `--out` file name.
pub(super) fn stamp(now: chrono::DateTime<Utc>) -> String {
    now.format("%Y%m%d_%H%M%S").to_string()
}

/// The error of a relay into a store whose home does not exist (nothing is created there).
fn missing_home(target: &dyn Adapter, home: &Path) -> anyhow::Error {
    CliError::new(
        ExitCode::NoStore,
        format!(
            "{} home {} does not exist. Run {} once, or point to its home with {}=DIR or --home {}=DIR.",
            target.display_name(),
            home.display(),
            target.display_name(),
            target.home_env(),
            target.name()
        ),
    )
    .into()
}

/// Takes back a relay whose session landed but could not be registered in the target's
/// indexes: all or nothing, a session the indexes do not know is not left behind. A
/// registration takes back what it did when it fails; when it could not
/// (`adapter::PartlyRegistered`), its index entries would name no session, so the session
/// stays, recorded as not registered, for the next relay or `doctor --fix` to complete.
fn undo_unregistered(
    target: &dyn Adapter,
    native: &NativeSession,
    created: &[PathBuf],
    e: anyhow::Error,
    withdraw: impl Fn(anyhow::Error) -> anyhow::Error,
) -> anyhow::Error {
    let what = format!(
        "could not register the relayed session in {}'s index",
        target.display_name()
    );
    let kept = format!(
        "{} is left in place, recorded as not registered: once that is solved, relay again or run `session-relay doctor --fix`",
        native.path.display()
    );
    if e.downcast_ref::<crate::adapter::PartlyRegistered>()
        .is_some()
    {
        return e.context(format!("{what}; {kept}"));
    }
    if std::fs::remove_file(&native.path).is_err() {
        return e.context(format!("{what}; {kept}"));
    }
    crate::fsutil::remove_created_dirs(created);
    withdraw(e.context(format!(
        "{what}; nothing was relayed ({} removed)",
        native.path.display()
    )))
}

/// Records that `relay`'s session is registered in the target's indexes.
fn record_registered(relay: &ledger::Entry) -> Result<()> {
    ledger::append(&ledger::Entry {
        event: ledger::REGISTERED.into(),
        time: crate::ledger::time_text(Utc::now()),
        supersedes: Vec::new(),
        registered: Some(true),
        ..relay.clone()
    })
    .map(drop)
}

/// `doctor --fix`: registers in its target's indexes a relayed session that the ledger records
/// as not registered (`ledger::awaiting_registration`): a relay killed between writing the
/// session and registering it, one whose registration failed and could not be taken back, or
/// one a `clean` took out of the indexes and kept. Under the relay's lock, which a relay of
/// the same source and `clean` take too, and only if the ledger still says so then; `None`
/// when it no longer does.
pub fn complete_registration(cfg: &Config, relay: &ledger::Entry) -> Result<Option<Vec<String>>> {
    let _lock = relay_lock(&relay.source.sha256, &relay.target.agent)?;
    let entries = ledger::entries_about(&relay.source.id);
    if !ledger::awaiting_registration(&entries)
        .iter()
        .any(|e| e.target.path == relay.target.path)
    {
        return Ok(None);
    }
    register_again(cfg, relay).map(Some)
}

/// Registers a relayed session the ledger records as not registered, its relay's lock held.
/// Only a regular file in the target's store as configured now, whose own id and provenance
/// record are the relay's, is registered, and into that store's indexes.
fn register_again(cfg: &Config, relay: &ledger::Entry) -> Result<Vec<String>> {
    let target = crate::adapters::by_name(&relay.target.agent)
        .with_context(|| format!("unknown agent {}", relay.target.agent))?;
    let path = PathBuf::from(&relay.target.path);
    let home = cfg.agent(target.name()).session_root.clone();
    let store = crate::select::Store {
        adapter: target,
        home: home.clone(),
    };
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) || !store.holds(&path) {
        bail!(
            "{} is not a file in {}'s store under {} as configured now: not registered (give the home it was relayed into with --home {}=DIR)",
            path.display(),
            target.display_name(),
            home.display(),
            target.name()
        );
    }
    let summary = target
        .scan(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if summary.id != relay.target.id
        || summary
            .relay_of
            .as_ref()
            .is_none_or(|r| r.id != relay.source.id)
    {
        bail!(
            "{} is not the relay the ledger records (its id or provenance differs): not registered",
            path.display()
        );
    }
    let mut session = target
        .read(&path, None)
        .with_context(|| format!("cannot read {}", path.display()))?;
    session.cwd = Some(relay.cwd.clone());
    let title = relay
        .title
        .clone()
        .or(summary.title)
        .unwrap_or_else(|| relay.target.id.clone());
    let native = NativeSession {
        id: relay.target.id.clone(),
        path,
        bytes: Vec::new(),
        mtime: None,
        resume_command: target.resume_command(&relay.target.id, &relay.cwd),
        notes: Vec::new(),
    };
    let notes = target.register(&home, &native, &session, &title)?;
    record_registered(relay)?;
    Ok(notes)
}

/// Where `--out` writes: the file, and the folder to create first.
struct Standalone {
    file: PathBuf,
    /// A folder named with a trailing `/` that does not exist yet.
    create: Option<PathBuf>,
}

/// `--out PATH`: a path ending in `/`, or an existing folder, is a folder (created when
/// missing) that receives `relay_<stamp>_<short id>.jsonl` (`-2`, ... when that exists);
/// anything else is the file's name, in a folder that must exist. Nothing is ever replaced
/// (the write refuses an existing file).
fn standalone_path(out: &Path, stamp: &str, id: &str) -> Result<Standalone> {
    use std::os::unix::ffi::OsStrExt;
    let name = format!("relay_{stamp}_{}.jsonl", &id[..8.min(id.len())]);
    let bytes = out.as_os_str().as_bytes();
    let slash = bytes.last() == Some(&b'/');
    // Without the trailing `/` (a file `f/` never exists, `f` may; `/` itself stays), and
    // absolute: reported and recorded so, whatever the current directory later is.
    let end = bytes
        .iter()
        .rposition(|b| *b != b'/')
        .map_or(bytes.len().min(1), |i| i + 1);
    let trimmed = Path::new(std::ffi::OsStr::from_bytes(&bytes[..end]));
    let out = &std::path::absolute(trimmed).unwrap_or_else(|_| trimmed.to_path_buf());
    if out.is_dir() {
        // The short id of a time-ordered id (Codex's UUID v7) is the same for every relay in
        // the same minute: a second relay into the folder within one second gets `-2`, ...
        let stem = name.trim_end_matches(".jsonl").to_string();
        let file = std::iter::once(name)
            .chain((2..).map(|n| format!("{stem}-{n}.jsonl")))
            .map(|n| out.join(n))
            .find(|f| !f.exists())
            .expect("an unused name");
        return Ok(Standalone { file, create: None });
    }
    if slash {
        if out.exists() {
            return Err(CliError::new(
                ExitCode::Usage,
                format!(
                    "--out {}: this is a file, not a folder. Name a folder, or drop the trailing / to name the file to write.",
                    out.display()
                ),
            )
            .into());
        }
        return Ok(Standalone {
            file: out.join(name),
            create: Some(out.to_path_buf()),
        });
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(CliError::new(
            ExitCode::Usage,
            format!(
                "--out {}: the folder {} does not exist. Create it, or end --out with / to have a folder created (--out {}/).",
                out.display(),
                parent.display(),
                out.display()
            ),
        )
        .into());
    }
    Ok(Standalone {
        file: out.to_path_buf(),
        create: None,
    })
}

/// An exclusive lock in the state folder for relays of one source (by content) to one agent,
/// held until the relay is recorded.
pub(super) fn relay_lock(source_sha: &str, target: &str) -> Result<std::fs::File> {
    let dir = crate::paths::require_state_dir()?.join("locks");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Named from what the ledger says, which a person may have edited: only its hex digits and
    // letters are taken.
    let sha: String = source_sha
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(16)
        .collect();
    let target: String = target.chars().filter(char::is_ascii_alphanumeric).collect();
    let path = dir.join(format!("relay-{sha}-{target}.lock"));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    f.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(f)
}

/// The directory the session will be resumed in, as the target agent will see it: the real
/// path when the directory exists here (Claude Code keys its projects by real path).
pub(super) fn resolve_cwd(
    flag: Option<&Path>,
    source: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<String> {
    let dir: PathBuf = match (flag, source) {
        (Some(d), _) => std::path::absolute(d).unwrap_or(d.to_path_buf()),
        (None, Some(s)) => PathBuf::from(s),
        (None, None) => {
            return Err(CliError::new(
                ExitCode::Usage,
                "the source session records no working directory; pass --cwd DIR",
            )
            .into());
        }
    };
    match std::fs::canonicalize(&dir) {
        Ok(real) => Ok(real.display().to_string()),
        // A directory that exists here is what the agent, started in it, would file the
        // session under, whatever its name. One recorded with terminal controls that exists
        // nowhere here is no place any agent starts in, only a name a session chose: it is not
        // written into stores and project registries.
        Err(_) if dir.to_string_lossy().chars().any(crate::text::is_invisible) => Err(CliError::new(
            ExitCode::Usage,
            format!(
                "the working directory {} holds control or invisible characters and does not exist on this machine; pass --cwd DIR",
                crate::text::safe(&dir.to_string_lossy())
            ),
        )
        .into()),
        Err(_) => {
            notes.push(format!(
                "{} does not exist on this machine; the session is filed under it anyway (use --cwd to choose another directory)",
                dir.display()
            ));
            Ok(dir.display().to_string())
        }
    }
}
