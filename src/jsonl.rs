//! Line-oriented reading shared by the adapters: lossy UTF-8, malformed lines counted with their
//! line number, a cut-off last line (the agent is still writing) ignored, `.zst` transparently.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Longest line read whole. Longer lines (a pasted 100 MB log) are skipped with a warning, so
/// that memory stays bounded whatever the input.
pub const MAX_LINE: usize = 32 << 20;

/// Opens a session file for reading, decompressing `.zst`.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.is_dir() {
        bail!("{} is a directory, not a session file", path.display());
    }
    if !meta.is_file() {
        // A FIFO or a device would block or never end.
        bail!("{} is not a regular file", path.display());
    }
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "zst") {
        let dec = zstd::stream::read::Decoder::new(file)
            .with_context(|| format!("cannot decompress {}", path.display()))?;
        Ok(Box::new(BufReader::with_capacity(1 << 16, dec)))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
    }
}

/// Reads the first `max` bytes of a (possibly compressed) file, for sniffing and listing.
pub fn head(path: &Path, max: usize) -> Result<Vec<u8>> {
    let mut r = open(path)?;
    let mut buf = Vec::with_capacity(max.min(1 << 16));
    r.by_ref().take(max as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// What happened to one line.
pub enum Line {
    Json(Value),
    /// Not JSON: the parse error. The caller reports it with the line number.
    Malformed(String),
}

/// Reads one line into `buf` (without keeping more than `max` bytes of it). Returns the line's
/// full length including the newline (0 at the end of input) and whether it ended in a newline.
pub fn read_line_bounded(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    buf.clear();
    let mut total = 0;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((total, false));
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        total += take;
        r.consume(take);
        if done {
            return Ok((total, true));
        }
    }
}

/// Summary of a whole pass over a file.
#[derive(Default, Debug)]
pub struct PassStats {
    pub lines: usize,
    pub malformed: Vec<(usize, String)>,
    /// Lines over `MAX_LINE`: (line number, length).
    pub oversized: Vec<(usize, usize)>,
    pub invalid_utf8_lines: Vec<usize>,
    /// The last line had no newline and did not parse: an agent cut off mid-write.
    pub truncated_tail: bool,
}

/// Calls `f(line_number, line)` for every non-blank line. Line numbers start at 1.
pub fn for_each_line(
    path: &Path,
    mut f: impl FnMut(usize, Line) -> Result<()>,
) -> Result<PassStats> {
    let mut reader = open(path)?;
    let mut stats = PassStats::default();
    let mut buf = Vec::new();
    let mut no = 0usize;
    // A line is only judged once the next one is known, so that an unterminated last line
    // that fails to parse can be treated as "still being written" instead of malformed.
    loop {
        let (n, terminated) = read_line_bounded(&mut *reader, &mut buf, MAX_LINE)
            .with_context(|| format!("read error in {} after line {no}", path.display()))?;
        if n == 0 {
            break;
        }
        no += 1;
        if n > MAX_LINE {
            stats.lines += 1;
            stats.oversized.push((no, n));
            continue;
        }
        let bytes = trim_ascii(&buf);
        if bytes.is_empty() {
            continue;
        }
        stats.lines += 1;
        let parsed = match std::str::from_utf8(bytes) {
            Ok(s) => serde_json::from_str::<Value>(s),
            Err(_) => {
                stats.invalid_utf8_lines.push(no);
                serde_json::from_str::<Value>(&String::from_utf8_lossy(bytes))
            }
        };
        match parsed {
            Ok(v) => f(no, Line::Json(v))?,
            Err(e) if !terminated => {
                let _ = e;
                stats.truncated_tail = true;
            }
            Err(e) => {
                stats.malformed.push((no, e.to_string()));
                f(no, Line::Malformed(e.to_string()))?;
            }
        }
    }
    Ok(stats)
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// Copies a pass's findings into the session's stats and warnings.
pub fn record_pass(session: &mut crate::session::Session, pass: &PassStats) {
    session.stats.lines = pass.lines;
    session.stats.malformed_lines = pass.malformed.len();
    for (no, err) in &pass.malformed {
        session.warn(Some(*no), format!("malformed JSON line skipped: {err}"));
    }
    for (no, len) in &pass.oversized {
        session.warn(
            Some(*no),
            format!(
                "line of {:.1} MB skipped: longer than the {} MB limit for one line",
                *len as f64 / (1 << 20) as f64,
                MAX_LINE >> 20
            ),
        );
    }
    if let Some(first) = pass.invalid_utf8_lines.first() {
        session.warn(
            Some(*first),
            format!(
                "invalid UTF-8 on {} line(s), read lossily (first at line {first})",
                pass.invalid_utf8_lines.len()
            ),
        );
    }
    if pass.truncated_tail {
        session
            .extra
            .insert("truncated_last_line".into(), Value::Bool(true));
    }
}

/// A string field of a JSON object, if present and a string.
pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// How much of a line the listing scanners keep: the fields they look for come first.
const SCAN_KEEP: usize = 256 << 10;

/// Iterates the lines of a file with their 1-based numbers (for the listing scanners). Lines
/// longer than 256 KB are cut: the scanners only look at their beginning.
pub fn scan_lines(path: &Path, mut f: impl FnMut(usize, &[u8]) -> bool) -> Result<()> {
    let mut reader = open(path)?;
    let mut buf = Vec::new();
    let mut no = 0;
    loop {
        if read_line_bounded(&mut *reader, &mut buf, SCAN_KEEP)?.0 == 0 {
            return Ok(());
        }
        no += 1;
        if !f(no, &buf) {
            return Ok(());
        }
    }
}

/// The bytes of a line that the listing scanners inspect: enough to hold the type fields that
/// agents write before any long content.
pub fn prefix(line: &[u8], n: usize) -> &[u8] {
    &line[..line.len().min(n)]
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// Extracts the string value of `"key":"value"` from raw bytes without parsing the line.
pub fn raw_str_field(line: &[u8], key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let start = memchr::memmem::find(line, pat.as_bytes())? + pat.len();
    let rest = &line[start..];
    let mut end = None;
    let mut escaped = false;
    for (i, &c) in rest.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if c == b'\\' {
            escaped = true;
        } else if c == b'"' {
            end = Some(i);
            break;
        }
    }
    let raw = &rest[..end?];
    // Re-parse as a JSON string so that escapes come out right.
    let quoted = [b"\"".as_slice(), raw, b"\""].concat();
    serde_json::from_slice::<String>(&quoted).ok()
}
