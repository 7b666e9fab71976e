//! `session-relay export`: one session as neutral JSONL or a Markdown handoff document, whole
//! or fitted to a target agent's budget (`--to`).

use std::io::{Seek, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use serde::Serialize;

use super::{Redactions, Scope, redact, resume_dir};
use crate::adapter::{Fold, ReadOptions};
use crate::config::Config;
use crate::model::{Message, Role, markdown, neutral};
use crate::plan;
use crate::redact::{Counts, Redactor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Jsonl,
    Markdown,
}

pub struct Options {
    pub session: String,
    pub scope: Scope,
    pub format: Format,
    /// A file to write (atomically, never replacing one); `None` is standard output.
    pub output: Option<PathBuf>,
    pub no_redact: bool,
    /// Export as a relay to this agent would carry it.
    pub to: Option<String>,
    pub budget: Option<usize>,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub source: super::show::SourceRef,
    pub format: Format,
    /// The file written; `None` when the export went to standard output.
    pub output: Option<String>,
    pub redactions: Redactions,
    /// With `--to`: how the session was fitted.
    pub fitted: Option<Fitted>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Fitted {
    pub to: String,
    pub total_tokens: usize,
    pub budget: usize,
    pub budget_from: String,
}

pub fn run(cfg: &Config, opts: &Options, stdout: &mut dyn Write) -> Result<Report> {
    crate::progress::scope(&opts.progress, || run_in_scope(cfg, opts, stdout))
}

fn run_in_scope(cfg: &Config, opts: &Options, stdout: &mut dyn Write) -> Result<Report> {
    let target = opts
        .to
        .as_deref()
        .map(|to| crate::adapters::by_name(to).expect("clap checked the agent name"));
    // A bundle stays open (its files unpacked) until the export is written.
    let (located, _bundle) = crate::bundle::select(cfg, &opts.session, &opts.scope.select()?)?;
    let mut warnings = Vec::new();
    let read = read_export(cfg, opts, &located, target, &mut warnings)?;
    let (mut s, redactor, folder, mut spilled) = read;
    let mut redactions = redact(redactor.as_deref(), &mut s);
    if let (Some(counts), Some(sp)) = (redactions.0.as_mut(), spilled.as_mut()) {
        crate::redact::add_counts(counts, std::mem::take(&mut sp.counts));
    }
    warnings.extend(super::reader_warnings(&s));
    let source = super::show::SourceRef {
        agent: s.agent.clone(),
        id: s.id.clone(),
    };
    let mut fitted = None;
    if let Some(target) = target {
        let fit = FitFor {
            cfg,
            opts,
            located: &located,
            target,
            redactor: redactor.as_deref(),
            folder: folder.as_deref(),
        };
        let (f, how) = fit.session(s, &mut redactions)?;
        s = f;
        fitted = Some(how);
    }
    // Written as it is serialised: a long session is not held a second time as its export.
    let mut write = move |w: &mut dyn Write| write_export(opts.format, &s, spilled.as_mut(), w);
    match &opts.output {
        Some(path) => crate::fsutil::write_new_file_with(path, write)?,
        None => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut *stdout);
            write(&mut out)?;
            out.flush()?;
        }
    }
    Ok(Report {
        source,
        format: opts.format,
        output: opts.output.as_ref().map(|p| p.display().to_string()),
        redactions,
        fitted,
        warnings,
    })
}

/// A session read for export, what masks its secrets, what its read folded, and the older
/// turns a plain export of a long session wrote aside while reading.
type ExportRead = (
    crate::model::Session,
    Option<Arc<Redactor>>,
    Option<Arc<crate::plan::fold::Folder>>,
    Option<Spilled>,
);

/// Reads the session to export: as a relay to `target` reads it, or, for a plain export of a
/// long session, writing its older turns aside as they are read (see `Spill`).
fn read_export(
    cfg: &Config,
    opts: &Options,
    located: &crate::select::Located,
    target: Option<&'static dyn crate::adapter::Adapter>,
    warnings: &mut Vec<String>,
) -> Result<ExportRead> {
    let spill_keep = target
        .is_none()
        .then(|| spill_keep_tokens(&located.path))
        .flatten();
    // Beside the export's file: a system temporary folder may be held in memory. Unnamed:
    // nothing is left behind, whatever happens. Where none can be made, the session is held.
    let spill_file = spill_keep.and_then(|keep| {
        let file = match opts.output.as_deref() {
            Some(out) => tempfile::tempfile_in(crate::fsutil::folder_of(out)),
            None => tempfile::tempfile(),
        };
        file.ok().map(|f| (keep, f))
    });
    if let Some((keep, file)) = spill_file {
        let redactor = super::redactor(cfg, opts.no_redact, warnings)?;
        let (s, spilled) = read_spilling(located, keep, opts.format, redactor.clone(), file)?;
        return Ok((s, redactor, None, spilled));
    }
    let read = match target {
        Some(t) => super::relay_read_options(cfg, t, opts.budget),
        None => Default::default(),
    };
    let (s, redactor, folder) = super::read_masked(cfg, located, read, opts.no_redact, warnings)?;
    Ok((s, redactor, folder, None))
}

/// What `export --to` fits a session with: the relay's plan, without writing it.
struct FitFor<'a> {
    cfg: &'a Config,
    opts: &'a Options,
    located: &'a crate::select::Located,
    target: &'static dyn crate::adapter::Adapter,
    redactor: Option<&'a Redactor>,
    folder: Option<&'a crate::plan::fold::Folder>,
}

impl FitFor<'_> {
    /// The source session as the target would receive it, and how it was fitted.
    fn session(
        &self,
        mut s: crate::model::Session,
        redactions: &mut Redactions,
    ) -> Result<(crate::model::Session, Fitted)> {
        // The directory and title the relay would give it (its brief names both, and counts
        // them), as `show --to` plans it.
        let cwd = match (self.opts.scope.cwd.as_deref(), s.cwd.as_deref()) {
            (None, None) => resume_dir(None, &s)?,
            (flag, recorded) => super::relay::resolve_cwd(flag, recorded, &mut Vec::new())?,
        };
        // The stamp is of the session's last activity, not of now: an export is the same file
        // whenever it is made, and its title as many tokens as a relay's.
        let last = s
            .updated
            .as_ref()
            .and_then(|t| t.time())
            .unwrap_or_default();
        let title = super::relay::default_title(&s, &super::relay::stamp(last));
        let id = s.id.clone();
        let plan = super::plan_relay(
            self.cfg,
            self.located,
            &mut s,
            redactions,
            self.redactor,
            &plan::Target {
                adapter: self.target,
                id: &id,
                cwd: &cwd,
                title: &title,
                budget: self.opts.budget,
                live_git: None,
                bundled_from: None,
                bundled_snapshot: None,
            },
            self.folder,
        )?;
        // Still the source session, seen as the target would receive it.
        let mut f = plan.session;
        f.agent = s.agent.clone();
        f.format = s.format.clone();
        f.source_path = s.source_path.clone();
        let fitted = Fitted {
            to: self.target.name().to_string(),
            total_tokens: plan.fit.total_tokens,
            budget: plan.fit.budget,
            budget_from: plan.budget_from,
        };
        Ok((f, fitted))
    }
}

/// Writes `s` in `format`, with the older turns a long read wrote aside (`spilled`) first.
fn write_export(
    format: Format,
    s: &crate::model::Session,
    spilled: Option<&mut Spilled>,
    w: &mut dyn Write,
) -> Result<()> {
    match format {
        Format::Jsonl => match spilled {
            Some(sp) => neutral::write_folded(s, &mut sp.file, w)?,
            None => neutral::write(s, w)?,
        },
        Format::Markdown => {
            let agent = crate::adapters::display_name(&s.agent);
            match spilled {
                Some(sp) => markdown::write(
                    s,
                    agent,
                    &mut markdown::Folded {
                        session: s,
                        folded: &mut sp.file,
                    },
                    w,
                )?,
                None => markdown::write(s, agent, &mut markdown::Held(&s.messages), w)?,
            }
        }
    }
    Ok(())
}

/// A plain export (no `--to`) of a session over this size writes its older turns as it reads
/// them (see `Spill`): a full read holds every tool output whole, as much memory as the file.
const SPILL_MIN_BYTES: u64 = 16 << 20;

/// How much of the newest turns such an export keeps as messages until the end, in tokens
/// (content bytes / 4): nothing needs them, but the reader folds whole turns only.
const SPILL_KEEP_TOKENS: usize = 200_000;

/// Set to the tokens of the newest turns an export keeps instead of `SPILL_KEEP_TOKENS`; any
/// session is then exported so (the tests export small sessions this way).
pub const SPILL_KEEP_ENV: &str = "SESSION_RELAY_EXPORT_KEEP_TOKENS";

/// What `export` says on standard error when it wrote older turns as it read them and
/// `adapter::PART_READ_ENV` is set (the tests tell by it that it did).
pub const SPILL_NOTE: &str = "session-relay: wrote older turns while reading";

fn spill_keep_tokens(path: &std::path::Path) -> Option<usize> {
    if let Some(keep) = std::env::var(SPILL_KEEP_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Some(keep);
    }
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    (size > SPILL_MIN_BYTES).then_some(SPILL_KEEP_TOKENS)
}

/// The older turns of an export, masked and written to a temporary file while the session
/// is read: as the lines `neutral::write` gives them, which `neutral::write_folded` puts in
/// their place, or as the Markdown document's mentions of them (`markdown::Folded`).
struct Spill {
    keep: usize,
    format: Format,
    redactor: Option<Arc<Redactor>>,
    out: Mutex<SpillOut>,
    /// A folded call or result has no id (the folded turns' ids say nothing of it).
    unpaired: std::sync::atomic::AtomicBool,
}

struct SpillOut {
    /// Folded messages not yet masked and written (see `SPILL_BATCH_BYTES`).
    pending: Vec<Message>,
    pending_bytes: usize,
    file: std::io::BufWriter<std::fs::File>,
    counts: Counts,
    error: Option<std::io::Error>,
}

/// What a `Spill` wrote: the file, rewound, and what was masked in it.
struct Spilled {
    file: std::fs::File,
    counts: Counts,
}

/// How many bytes of folded messages a `Spill` gathers before it masks them, on every core,
/// and writes them: masked one turn at a time, the masking would run on the reader's ordering
/// thread alone, and a long export would take longer than holding the session.
const SPILL_BATCH_BYTES: usize = 1 << 20;

impl Spill {
    /// Masks and writes the gathered messages.
    fn flush(&self, out: &mut SpillOut) {
        let mut pending = std::mem::take(&mut out.pending);
        out.pending_bytes = 0;
        if let Some(r) = &self.redactor {
            crate::redact::add_counts(&mut out.counts, r.messages(&mut pending, true));
        }
        for m in &pending {
            if out.error.is_some() {
                break;
            }
            let written = match self.format {
                Format::Jsonl => neutral::write_message(m, &mut out.file),
                Format::Markdown => markdown::mention(m).map_or(Ok(()), |mention| {
                    serde_json::to_writer(&mut out.file, &mention)?;
                    Ok(out.file.write_all(b"\n")?)
                }),
            };
            if let Err(e) = written {
                out.error = Some(std::io::Error::other(e));
            }
        }
        pending.clear();
        out.pending = pending;
    }
}

impl crate::adapter::TurnFold for Spill {
    fn keep_tokens(&self) -> usize {
        self.keep
    }

    /// A rough measure (what the export keeps needs no more).
    fn reach_tokens(&self, m: &Message) -> usize {
        m.content.len() / 4
    }

    fn fold(&self, turn: Vec<Message>) {
        if turn.iter().any(|m| {
            matches!(m.role, Role::ToolCall | Role::ToolResult) && m.tool_call_id.is_none()
        }) {
            self.unpaired
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let out = &mut *out;
        out.pending_bytes += turn.iter().map(|m| m.content.len()).sum::<usize>();
        out.pending.extend(turn);
        if out.pending_bytes >= SPILL_BATCH_BYTES {
            self.flush(out);
        }
    }
}

/// Reads `located` for a plain export, its older turns written to a `Spill` (in `file`, a
/// temporary file) as they are read;
/// `None` for the spill when nothing was folded, or when what was folded is not exactly what
/// a full read gives (a call of a folded turn answered later, an orphan among them, the
/// branch chosen ahead not the one read): the session is then read again in full.
fn read_spilling(
    located: &crate::select::Located,
    keep: usize,
    format: Format,
    redactor: Option<Arc<Redactor>>,
    file: std::fs::File,
) -> Result<(crate::model::Session, Option<Spilled>)> {
    let spill = Arc::new(Spill {
        keep,
        format,
        redactor,
        unpaired: Default::default(),
        out: Mutex::new(SpillOut {
            pending: Vec::new(),
            pending_bytes: 0,
            file: std::io::BufWriter::with_capacity(1 << 16, file),
            counts: Counts::new(),
            error: None,
        }),
    });
    let read = ReadOptions {
        fold: Some(Fold(spill.clone())),
        ..Default::default()
    };
    let s = located.read_with(read)?;
    // Broken, the fold may have taken no turn yet (see `show`): read again all the same.
    let Some(f) = s.folded.as_deref().filter(|f| f.messages > 0 || f.broken) else {
        return Ok((s, None));
    };
    // A folded call or result without its pair is one `pair_tool_calls` would mark an orphan,
    // as it marks every call or result without an id.
    let whole = !f.broken
        && f.unanswered_ids.is_empty()
        && f.uncalled_ids.is_empty()
        && !spill.unpaired.load(std::sync::atomic::Ordering::Relaxed);
    super::fold_note(SPILL_NOTE, format!("{} messages", f.messages), !whole);
    if !whole {
        return Ok((located.read_with(ReadOptions::default())?, None));
    }
    {
        let mut out = spill.out.lock().unwrap_or_else(|e| e.into_inner());
        spill.flush(&mut out);
    }
    let mut out = Arc::try_unwrap(spill)
        .map_err(|_| anyhow::anyhow!("the export's spill is still in use"))?
        .out
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(e) = out.error.take() {
        return Err(anyhow::Error::new(e).context("cannot write the export's temporary file"));
    }
    let mut file = out
        .file
        .into_inner()
        .map_err(|e| e.into_error())
        .context("cannot write the export's temporary file")?;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok((
        s,
        Some(Spilled {
            file,
            counts: out.counts,
        }),
    ))
}
