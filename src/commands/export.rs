//! `session-relay export`: one session as neutral JSONL or a Markdown handoff document, whole
//! or fitted to a target agent's budget (`--to`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::{Redactions, Scope, redact, resume_dir};
use crate::config::Config;
use crate::model::neutral;
use crate::plan;

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
    let read = match target {
        Some(t) => super::relay_read_options(cfg, t, opts.budget),
        None => Default::default(),
    };
    let located = crate::select::select(cfg, &opts.session, &opts.scope.select()?)?;
    let mut warnings = Vec::new();
    let (mut s, redactor, folder) =
        super::read_masked(cfg, &located, read, opts.no_redact, &mut warnings)?;
    let mut redactions = redact(redactor.as_deref(), &mut s);
    warnings.extend(super::reader_warnings(&s));
    let source = super::show::SourceRef {
        agent: s.agent.clone(),
        id: s.id.clone(),
    };
    let mut fitted = None;
    if let Some(target) = target {
        let to = target.name().to_string();
        let cwd = resume_dir(opts.scope.cwd.as_deref(), &s)?;
        let title = s.title.clone().unwrap_or_default();
        let id = s.id.clone();
        let plan = super::plan_relay(
            cfg,
            &located,
            &mut s,
            &mut redactions,
            redactor.as_deref(),
            &plan::Target {
                adapter: target,
                id: &id,
                cwd: &cwd,
                title: &title,
                budget: opts.budget,
                live_git: None,
            },
            folder.as_deref(),
        )?;
        // Still the source session, seen as the target would receive it.
        let mut f = plan.session;
        f.agent = s.agent.clone();
        f.format = s.format.clone();
        f.source_path = s.source_path.clone();
        fitted = Some(Fitted {
            to,
            total_tokens: plan.fit.total_tokens,
            budget: plan.fit.budget,
            budget_from: plan.budget_from,
        });
        s = f;
    }
    // Written as it is serialised: a long session is not held a second time as its export.
    let write = |w: &mut dyn Write| -> Result<()> {
        match opts.format {
            Format::Jsonl => neutral::write(&s, w)?,
            Format::Markdown => w.write_all(
                crate::model::markdown::markdown(&s, crate::adapters::display_name(&s.agent))
                    .as_bytes(),
            )?,
        }
        Ok(())
    };
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
