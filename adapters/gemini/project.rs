//! Gemini CLI's project registry: which folder under `.gemini/tmp/` holds a directory's
//! sessions, read the way the CLI reads it (`projects.json`, the `.project_root` markers, the
//! older sha256 folders), and a directory registered the way the CLI registers it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::adapter::NativeSession;

const MARKER: &str = ".project_root";

/// `projects.json`: absolute project path -> slug. Like the CLI, a file whose slugs are not all
/// `[a-z0-9-]+` (or that does not parse) reads as empty.
pub fn registry(gemini: &Path) -> BTreeMap<String, String> {
    let Ok(bytes) = std::fs::read(gemini.join("projects.json")) else {
        return BTreeMap::new();
    };
    let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
        return BTreeMap::new();
    };
    if !valid_registry(&v) {
        return BTreeMap::new();
    }
    v["projects"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(path, slug)| (path.clone(), slug.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// What the CLI accepts as `projects.json`: `{"projects": {path: slug}}`, every slug
/// `[a-z0-9-]+`.
fn valid_registry(v: &Value) -> bool {
    v.get("projects")
        .and_then(Value::as_object)
        .is_some_and(|o| o.values().all(|s| s.as_str().is_some_and(valid_slug)))
}

fn valid_slug(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The directory a marker names (the CLI writes it without a newline and trims what it reads).
fn marker(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(MARKER)).ok()?;
    Some(text.trim().to_string()).filter(|s| !s.is_empty())
}

/// The working directory of the sessions in a project folder (`tmp/<slug>` or `tmp/<sha256>`):
/// its marker, else the path `projects.json` gives that slug, else the registered path whose
/// sha256 is the folder's name.
pub fn folder_cwd(gemini: &Path, folder: &Path) -> Option<String> {
    if let Some(m) = marker(folder) {
        return Some(m);
    }
    let name = folder.file_name()?.to_string_lossy().into_owned();
    let reg = registry(gemini);
    if let Some((path, _)) = reg.iter().find(|(_, slug)| **slug == name) {
        return Some(path.clone());
    }
    by_hash(&reg, &name)
}

/// The registered path whose sha256 is `hash` (an old folder name, or a `projectHash`).
pub fn by_hash(reg: &BTreeMap<String, String>, hash: &str) -> Option<String> {
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    reg.keys().find(|p| super::project_hash(p) == hash).cloned()
}

/// `cwd` looked up in the registry of the store a session file is in (for a `projectHash`).
pub fn cwd_for_hash(path: &Path, hash: &str) -> Option<String> {
    let (gemini, _) = super::store_location(path)?;
    by_hash(&registry(&gemini), hash)
}

/// The slug the CLI would use for `cwd`, without changing anything: the registered one whose
/// markers agree, else the folder whose marker names `cwd`, else a new one from the directory's
/// name (`demo`, then `demo-1`, ...) that neither the registry nor a marker claims.
pub fn slug_for(gemini: &Path, cwd: &str) -> String {
    let bases = [gemini.join("tmp"), gemini.join("history")];
    let owned_by_other = |slug: &str| {
        bases
            .iter()
            .any(|b| marker(&b.join(slug)).is_some_and(|m| m != cwd))
    };
    let mut reg = registry(gemini);
    if let Some(slug) = reg.get(cwd).cloned() {
        if !owned_by_other(&slug) {
            return slug;
        }
        reg.remove(cwd);
    }
    for base in &bases {
        let Ok(rd) = std::fs::read_dir(base) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        if let Some(n) = names
            .into_iter()
            .find(|n| marker(&base.join(n)).as_deref() == Some(cwd))
        {
            return n;
        }
    }
    let base = slugify(
        Path::new(cwd)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .as_str(),
    );
    let taken: std::collections::HashSet<&String> = reg.values().collect();
    (0..)
        .map(|n| {
            if n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            }
        })
        .find(|c| !taken.contains(c) && !owned_by_other(c))
        .expect("an unbounded range has a free slug")
}

/// The CLI's slug of a directory name: lower case, every character outside `[a-z0-9]` a `-`,
/// runs of `-` collapsed, trimmed, `project` when nothing is left.
pub fn slugify(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_lowercase().chars() {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c);
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "project".into()
    } else {
        out
    }
}

/// After a relayed session is written into `tmp/<slug>/chats/`: registers its directory the way
/// Gemini CLI does on its first start there. The entry is merged into `projects.json` under the
/// CLI's own lock (a `projects.json.lock` folder, as its proper-lockfile makes) and the file is
/// replaced atomically, every other entry kept; the `.project_root` markers are created where
/// missing; and an old sha256 folder of the directory is copied into the new one, as the CLI
/// would have done had our file not been there first.
pub fn register(home: &Path, written: &NativeSession, cwd: &str) -> Result<Vec<String>> {
    let gemini = super::gemini_dir(home);
    let Some((_, folder)) = super::store_location(&written.path) else {
        return Ok(Vec::new());
    };
    let slug = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cwd = cwd.to_string();
    let mut notes = Vec::new();
    let _lock = RegistryLock::acquire(&gemini)?;
    for base in ["tmp", "history"] {
        let dir = gemini.join(base).join(&slug);
        match marker(&dir) {
            Some(m) if m == cwd => {}
            Some(m) => bail!(
                "{} now belongs to {m}, not {cwd}: another Gemini CLI claimed the folder meanwhile",
                dir.display()
            ),
            None => {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                write_marker(&dir.join(MARKER), &cwd)?;
            }
        }
    }
    let path = gemini.join("projects.json");
    let mut doc: Value = match std::fs::read(&path) {
        Ok(b) => match serde_json::from_slice::<Value>(&b) {
            Ok(v) if valid_registry(&v) => v,
            _ => {
                // Not a registry the CLI reads: left as it is. The markers are enough, the
                // CLI adopts the folder they name (and rewrites the file itself).
                notes.push(format!(
                    "{} is not a registry Gemini CLI reads; left as it is (the CLI finds {cwd} by its .project_root marker)",
                    path.display()
                ));
                migrate_legacy(&gemini, &cwd, &slug, &written.path, &mut notes);
                return Ok(notes);
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({"projects": {}}),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let projects = doc["projects"].as_object_mut().expect("checked above");
    match projects.get(&cwd).and_then(Value::as_str) {
        Some(s) if s == slug => {}
        Some(other) if !other.is_empty() && other != slug => bail!(
            "{} now maps {cwd} to `{other}`, not `{slug}`: another Gemini CLI registered it meanwhile",
            path.display()
        ),
        _ => {
            if let Some((p, _)) = projects
                .iter()
                .find(|(p, s)| s.as_str() == Some(slug.as_str()) && **p != cwd)
            {
                bail!(
                    "{} now gives `{slug}` to {p}: another Gemini CLI registered it meanwhile",
                    path.display()
                );
            }
            projects.insert(cwd.clone(), json!(slug));
            let text = serde_json::to_string_pretty(&doc)?;
            crate::fsutil::replace_file(&path, text.as_bytes())?;
            notes.push(format!(
                "{cwd} registered as Gemini project `{slug}` in {}",
                path.display()
            ));
        }
    }
    migrate_legacy(&gemini, &cwd, &slug, &written.path, &mut notes);
    Ok(notes)
}

fn write_marker(path: &Path, cwd: &str) -> Result<()> {
    use std::io::Write;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(mut f) => f
            .write_all(cwd.as_bytes())
            .with_context(|| format!("cannot write {}", path.display())),
        // Created meanwhile: fine when it names the same directory.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            match marker(path.parent().unwrap()) {
                Some(m) if m == cwd => Ok(()),
                m => bail!("{} names {m:?}, not {cwd}", path.display()),
            }
        }
        Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
}

/// The lock Gemini CLI takes on `projects.json` (proper-lockfile: a `projects.json.lock`
/// folder, stale after 10 seconds without an update).
struct RegistryLock(PathBuf);

impl RegistryLock {
    fn acquire(gemini: &Path) -> Result<RegistryLock> {
        let dir = gemini.join("projects.json.lock");
        let stale = Duration::from_secs(10);
        for _ in 0..150 {
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(RegistryLock(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let old = std::fs::metadata(&dir)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > stale);
                    if old {
                        let _ = std::fs::remove_dir(&dir);
                    } else {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", dir.display()));
                }
            }
        }
        bail!(
            "{} is held by another program (Gemini CLI?) for more than 15 s",
            dir.display()
        )
    }
}

impl Drop for RegistryLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Gemini CLI copies a directory's old `tmp/<sha256>` (and `history/<sha256>`) folder into its
/// slug folder when that holds nothing but the marker. Our file came first, so the CLI would
/// no longer do it: do it here, never replacing a file.
fn migrate_legacy(gemini: &Path, cwd: &str, slug: &str, ours: &Path, notes: &mut Vec<String>) {
    let hash = super::project_hash(cwd);
    for base in ["tmp", "history"] {
        let old = gemini.join(base).join(&hash);
        let new = gemini.join(base).join(slug);
        if !old.is_dir() || !only_marker_and(&new, ours) {
            continue;
        }
        match copy_missing(&old, &new) {
            Ok(n) if n > 0 => notes.push(format!(
                "copied {n} file(s) of the old {} into {}, as Gemini CLI does on its first start there",
                old.display(),
                new.display()
            )),
            Ok(_) => {}
            Err(e) => notes.push(format!(
                "could not copy the old {} into {}: {e:#}",
                old.display(),
                new.display()
            )),
        }
    }
}

/// Whether a folder holds nothing but the marker and (in `chats/`) the file we wrote.
fn only_marker_and(dir: &Path, ours: &Path) -> bool {
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_type().is_dir())
        .all(|e| e.path() == ours || e.path() == dir.join(MARKER))
}

fn copy_missing(from: &Path, to: &Path) -> Result<usize> {
    let mut n = 0;
    for e in walkdir::WalkDir::new(from)
        .follow_links(false)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        let rel = e.path().strip_prefix(from)?;
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else if e.file_type().is_file() && !dest.exists() {
            std::fs::copy(e.path(), &dest)?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_made_like_the_cli_makes_them() {
        assert_eq!(slugify("demo"), "demo");
        assert_eq!(slugify("My App.v2"), "my-app-v2");
        assert_eq!(slugify("--Über--"), "ber");
        assert_eq!(slugify("日本"), "project");
        assert_eq!(slugify(""), "project");
    }

    #[test]
    fn a_taken_slug_moves_on_and_a_registered_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join(".gemini");
        std::fs::create_dir_all(g.join("tmp/demo")).unwrap();
        std::fs::write(
            g.join("projects.json"),
            r#"{"projects":{"/home/dev/projects/demo":"demo"}}"#,
        )
        .unwrap();
        std::fs::write(g.join("tmp/demo/.project_root"), "/home/dev/projects/demo").unwrap();
        assert_eq!(slug_for(&g, "/home/dev/projects/demo"), "demo");
        assert_eq!(slug_for(&g, "/home/dev/work/demo"), "demo-1");
        // A marker alone is adopted.
        std::fs::create_dir_all(g.join("tmp/odd")).unwrap();
        std::fs::write(g.join("tmp/odd/.project_root"), "/srv/x").unwrap();
        assert_eq!(slug_for(&g, "/srv/x"), "odd");
        // A registered slug whose marker names another path is not used.
        std::fs::write(
            g.join("projects.json"),
            r#"{"projects":{"/elsewhere":"demo"}}"#,
        )
        .unwrap();
        assert_eq!(slug_for(&g, "/elsewhere"), "elsewhere");
        // A slug outside [a-z0-9-] makes the whole file read as empty.
        std::fs::write(g.join("projects.json"), r#"{"projects":{"/a":"A"}}"#).unwrap();
        assert!(registry(&g).is_empty());
    }
}
