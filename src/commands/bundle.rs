//! `session-relay bundle`: one session, masked, with its file-state snapshot (and, with
//! `--git`, the working tree's changes) in one file another machine relays from (see
//! `crate::bundle`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use super::{Redactions, Scope, redact};
use crate::bundle::{self, Manifest};
use crate::config::Config;
use crate::exit::{CliError, ExitCode};

pub struct Options {
    pub session: String,
    pub scope: Scope,
    /// The bundle to write (never replacing a file).
    pub output: PathBuf,
    pub no_redact: bool,
    /// Carry the working tree's changes since HEAD as a git bundle.
    pub git: bool,
    /// With `git`: carry changes that hold a secret all the same.
    pub allow_secrets: bool,
    pub progress: crate::progress::Handle,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub output: String,
    pub bytes: u64,
    pub manifest: Manifest,
    /// Secrets masked, by kind (`null` with --no-redact).
    pub redactions: Redactions,
    /// Files of the file-state snapshot.
    pub files: usize,
    /// With `--allow-secrets`: the changed lines that hold one, `file:line (kind)`.
    pub secrets_allowed: Vec<String>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}

pub fn run(cfg: &Config, opts: &Options) -> Result<Report> {
    crate::progress::scope(&opts.progress, || run_in_scope(cfg, opts))
}

fn run_in_scope(cfg: &Config, opts: &Options) -> Result<Report> {
    if opts.output.exists() {
        return Err(CliError::new(
            ExitCode::Usage,
            format!(
                "{} exists; name a new file for the bundle",
                opts.output.display()
            ),
        )
        .into());
    }
    let located = crate::select::select(cfg, &opts.session, &opts.scope.select()?)?;
    let source_sha = source_sha256(&located)?;
    let mut warnings = Vec::new();
    let (mut s, redactor, _) = super::read_masked(
        cfg,
        &located,
        Default::default(),
        opts.no_redact,
        &mut warnings,
    )?;
    // Read before anything is masked: the facts name files as they are on disk.
    let mut snapshot = super::show::file_snapshot(&s);
    let mut redactions = redact(redactor.as_deref(), &mut s);
    if let (Some(r), Some(counts)) = (redactor.as_deref(), redactions.0.as_mut()) {
        crate::redact::add_counts(counts, snapshot.mask(r));
    }
    warnings.extend(super::reader_warnings(&s));
    let mut notes = Vec::new();
    let (changes, secrets_allowed) = if opts.git {
        git_changes(cfg, opts, &s, redactor.as_deref(), &mut notes)?
    } else {
        (None, Vec::new())
    };
    let (git, git_bundle) = changes.map_or((None, None), |(c, b)| (Some(c), Some(b)));
    let mut session = Vec::new();
    crate::model::neutral::write(&s, &mut session)?;
    let snapshot_json = serde_json::to_vec_pretty(&snapshot)?;
    let mut files = vec![
        (bundle::SESSION, bundle::Content::Bytes(&session)),
        (bundle::SNAPSHOT, bundle::Content::Bytes(&snapshot_json)),
    ];
    if let Some((_, file)) = &git_bundle {
        files.push((bundle::CHANGES, bundle::Content::File(file)));
    }
    let manifest = Manifest {
        format: bundle::FORMAT.into(),
        format_version: bundle::FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        source: bundle::Source {
            agent: s.agent.clone(),
            id: s.id.clone(),
            sha256: source_sha,
        },
        cwd: s.cwd.clone().map(|c| mask(redactor.as_deref(), &c)),
        redactions: redactions.0.clone(),
        git,
        payload: Vec::new(),
        payload_sha256: String::new(),
    };
    let manifest = bundle::write(&opts.output, manifest, &files)?;
    let output = std::path::absolute(&opts.output).unwrap_or(opts.output.clone());
    Ok(Report {
        bytes: std::fs::metadata(&output).map_or(0, |m| m.len()),
        output: output.display().to_string(),
        manifest,
        redactions,
        files: snapshot.files.len(),
        secrets_allowed,
        notes,
        warnings,
    })
}

/// `text` masked by `redactor` (as it is without one).
fn mask(redactor: Option<&crate::redact::Redactor>, text: &str) -> String {
    match redactor {
        Some(r) => r.text(text, &mut Default::default()).into_owned(),
        None => text.to_string(),
    }
}

/// The sha256 of the source as it is now: its file, or the bytes that stand for it in a
/// database.
fn source_sha256(located: &crate::select::Located) -> Result<String> {
    match located.adapter.and_then(|a| a.stand_in(&located.path)) {
        Some(write) => Ok(crate::ledger::Snapshot::of_stand_in(&write, &located.path)?.sha256),
        None => {
            let bytes = std::fs::read(&located.path)
                .with_context(|| format!("cannot read {}", located.path.display()))?;
            Ok(crate::ledger::sha256_bytes(&bytes))
        }
    }
}

/// The git bundle as git wrote it, in a temporary folder removed when this is dropped.
type GitBundleFile = (tempfile::TempDir, PathBuf);

/// `--git`: the working tree's changes at the session's directory (or `--cwd`), as a git
/// bundle of the branch `relay/<short id>`, and the secrets allowed in them. Refused when a
/// change holds a secret, unless `--allow-secrets`.
#[allow(clippy::type_complexity)]
fn git_changes(
    cfg: &Config,
    opts: &Options,
    s: &crate::model::Session,
    redactor: Option<&crate::redact::Redactor>,
    notes: &mut Vec<String>,
) -> Result<(Option<(bundle::GitChanges, GitBundleFile)>, Vec<String>)> {
    let dir = match (&opts.scope.cwd, &s.cwd) {
        (Some(d), _) => d.clone(),
        (None, Some(c)) => PathBuf::from(c),
        (None, None) => super::current_dir()?,
    };
    // The changes are scanned with the masking rules even with --no-redact.
    let own;
    let rules = match redactor {
        Some(r) => r,
        None => {
            own = cfg.redactor()?;
            &own
        }
    };
    let Some(captured) = bundle::git::capture(&dir, &s.id, rules)? else {
        notes.push(format!(
            "--git: no changes since HEAD in {}; the bundle carries none",
            dir.display()
        ));
        return Ok((None, Vec::new()));
    };
    if !captured.secrets.is_empty() && !opts.allow_secrets {
        return Err(CliError::new(
            ExitCode::Usage,
            format!(
                "--git: the changes hold what looks like a secret, at:\n  {}\nRemove it (or pass --allow-secrets to carry it as it is); nothing was written.",
                captured.secrets.join("\n  ")
            ),
        )
        .into());
    }
    // The masking rules mask secrets, not names or addresses (a session keeps the emails it
    // shows too): the author goes as git has it, and the report says whose it is.
    notes.push(format!(
        "--git: the commit carrying the changes is authored by {} (your git identity; set GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL to carry another)",
        captured.author
    ));
    let short: String =
        s.id.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(8)
            .collect();
    let branch = format!("relay/{short}");
    let tmp = tempfile::Builder::new()
        .prefix("session-relay-git-")
        .tempdir()?;
    let file = tmp.path().join(bundle::CHANGES);
    bundle::git::bundle(&captured, &branch, &file)?;
    let changes = bundle::GitChanges {
        branch,
        base: captured.base,
        commit: captured.commit,
        files: captured.files,
    };
    Ok((Some((changes, (tmp, file))), captured.secrets))
}
