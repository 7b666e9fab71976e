//! Line-oriented reading shared by the adapters: lossy UTF-8, malformed lines counted with their
//! line number, a cut-off last line (the agent is still writing) ignored, `.zst` transparently.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

pub mod fields;
pub mod pruned;
pub mod skim;
pub mod sniff;
pub mod surrogates;
#[cfg(test)]
pub mod variants;

/// Longest line read whole. Longer lines (a pasted 100 MB log) are skipped with a warning, so
/// that memory stays bounded whatever the input.
pub const MAX_LINE: usize = 32 << 20;

/// In a pass that streams long lines (`Pass::stream_long`), the longest line read whole: a
/// longer one is handed on as `Line::Long`, to be parsed from the file.
pub const LONG_LINE: usize = 8 << 20;

/// A line's bytes from a file as a reader parses them: invalid UTF-8 replaced with U+FFFD,
/// as `String::from_utf8_lossy` replaces it in a line read whole, and (`trimmed`) the
/// whitespace around it left out, as `str::trim` leaves it out of a line read whole, so that a
/// long line read a part at a time (`Line::Long`) reads as it would whole.
pub struct LossyUtf8<R> {
    inner: R,
    /// Bytes ready to hand out, and how many were handed.
    out: Vec<u8>,
    at: usize,
    /// The start of a character cut by the end of what `inner` gave last.
    carry: Vec<u8>,
    /// Set once something was replaced, for the reader's warning.
    replaced: std::rc::Rc<std::cell::Cell<bool>>,
    trim: bool,
    /// Text was handed out: whitespace is no longer leading.
    started: bool,
    /// Whitespace at the end of the text so far, handed out only if more text follows.
    held: Vec<u8>,
}

impl<R: BufRead> LossyUtf8<R> {
    pub fn new(inner: R) -> Self {
        LossyUtf8 {
            inner,
            out: Vec::new(),
            at: 0,
            carry: Vec::new(),
            replaced: Default::default(),
            trim: false,
            started: false,
            held: Vec::new(),
        }
    }

    /// `new`, without the whitespace around the text.
    pub fn trimmed(inner: R) -> Self {
        LossyUtf8 {
            trim: true,
            ..LossyUtf8::new(inner)
        }
    }

    /// Becomes true once invalid UTF-8 was replaced.
    pub fn replaced(&self) -> std::rc::Rc<std::cell::Cell<bool>> {
        self.replaced.clone()
    }

    /// Fills `out` from `inner`; false at the end.
    fn refill(&mut self) -> std::io::Result<bool> {
        self.out.clear();
        self.at = 0;
        loop {
            let mut text = Vec::new();
            let end = self.decode(&mut text)?;
            if self.trim {
                self.trim_into(&text);
            } else {
                self.out.extend_from_slice(&text);
            }
            if !self.out.is_empty() {
                return Ok(true);
            }
            if end {
                return Ok(false);
            }
        }
    }

    /// Appends the text of what `inner` gives next to `text`; true at the end of `inner`.
    fn decode(&mut self, text: &mut Vec<u8>) -> std::io::Result<bool> {
        const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();
        let chunk = self.inner.fill_buf()?;
        if chunk.is_empty() {
            if !self.carry.is_empty() {
                // A character cut by the end of the line: one replacement, as in a whole line.
                self.carry.clear();
                text.extend_from_slice(REPLACEMENT);
                self.replaced.set(true);
            }
            return Ok(true);
        }
        let mut bytes = std::mem::take(&mut self.carry);
        bytes.extend_from_slice(chunk);
        let used = chunk.len();
        self.inner.consume(used);
        let mut rest: &[u8] = &bytes;
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(_) => {
                    text.extend_from_slice(rest);
                    rest = &[];
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    text.extend_from_slice(valid);
                    match e.error_len() {
                        // Maybe the start of a character the next read completes.
                        None => {
                            self.carry = after.to_vec();
                            rest = &[];
                        }
                        Some(n) => {
                            text.extend_from_slice(REPLACEMENT);
                            self.replaced.set(true);
                            rest = &after[n..];
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    /// Moves `text` to `out` but for leading whitespace, which is dropped, and trailing
    /// whitespace, which waits in `held` for more text.
    fn trim_into(&mut self, text: &[u8]) {
        let text = std::str::from_utf8(text).expect("decoded text");
        let text = if self.started {
            text
        } else {
            text.trim_start()
        };
        let body = text.trim_end();
        if body.is_empty() {
            self.held.extend_from_slice(text.as_bytes());
            return;
        }
        self.started = true;
        self.out.append(&mut self.held);
        self.out.extend_from_slice(body.as_bytes());
        self.held.extend_from_slice(&text.as_bytes()[body.len()..]);
    }
}

impl<R: BufRead> std::io::Read for LossyUtf8<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.out.len() && !self.refill()? {
            return Ok(0);
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Opens a session file for reading, decompressing `.zst`.
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>> {
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

/// A session kept as one JSON document (Codex's older `.json` rollouts, Gemini CLI's older
/// `session-*.json`), as `read_document` finds it.
pub enum Document {
    /// The document's bytes, a byte order mark taken off (`bom`).
    Bytes { bytes: Vec<u8>, bom: bool },
    /// Too large to read whole: what to warn.
    TooLarge(String),
}

impl Document {
    /// The bytes to parse, `None` for a document too large; what a reader should warn of (a
    /// line number, the warning) goes to `warn`.
    pub fn bytes(self, mut warn: impl FnMut(Option<usize>, String)) -> Option<Vec<u8>> {
        match self {
            Document::TooLarge(why) => {
                warn(None, why);
                None
            }
            Document::Bytes { bytes, bom } => {
                if bom {
                    warn(Some(1), BOM_WARNING.to_string());
                }
                Some(bytes)
            }
        }
    }
}

/// The text of a whole-document session as a reader parses it (`reader_text`), with a warning
/// when lone surrogate escapes were replaced.
pub fn document_text(bytes: &[u8], warn: impl FnOnce(String)) -> std::borrow::Cow<'_, str> {
    let (text, replaced) = reader_text(bytes);
    if replaced.surrogates {
        // An escape never spans lines: JSON strings hold no raw newline.
        let lines: Vec<usize> = String::from_utf8_lossy(bytes)
            .lines()
            .enumerate()
            .filter(|(_, l)| surrogates::repair(l).is_some())
            .map(|(i, _)| i + 1)
            .collect();
        warn(surrogates::warning(&lines));
    }
    text
}

/// Reads a whole-document session, refusing one over twice `MAX_LINE` (a document cannot be
/// read in part) and taking a byte order mark off.
pub fn read_document(path: &Path) -> Result<Document> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if size > MAX_LINE as u64 * 2 {
        return Ok(Document::TooLarge(format!(
            "{} is a {:.0} MB single JSON document; documents over {} MB are not read",
            path.display(),
            size as f64 / (1 << 20) as f64,
            MAX_LINE >> 19
        )));
    }
    let mut bytes = Vec::new();
    open(path)?
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let bom = bytes.starts_with(BOM);
    if bom {
        bytes.drain(..BOM.len());
    }
    Ok(Document::Bytes { bytes, bom })
}

/// The warning for a byte order mark a reader took off.
pub const BOM_WARNING: &str = "the file starts with a UTF-8 byte order mark; it was ignored";

/// What happened to one line.
pub enum Line<T = Value> {
    Json(T),
    /// Not JSON: the parse error. The caller reports it with the line number.
    Malformed(String),
    /// A line longer than `LONG_LINE`, in a pass that streams such lines (`Pass::stream_long`):
    /// where its bytes lie in the file, for the reader to parse from there (`LossyUtf8`), and
    /// whether it ended in a newline (a cut-off last line that does not parse is an agent
    /// still writing, not a malformed line).
    Long {
        start: u64,
        len: u64,
        terminated: bool,
    },
}

/// Reads one line into `buf` (without keeping more than `max` bytes of it). Returns the line's
/// full length including the newline (0 at the end of input) and whether it ended in a newline.
pub fn read_line_bounded(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    read_line_keeping_end(r, buf, max, None)
}

/// How much of an oversized line's start and end a salvaged line keeps.
pub const SALVAGE_HEAD: usize = 1 << 20;
pub const SALVAGE_TAIL: usize = 64 << 10;

/// `read_line_bounded`, also keeping in `end` the last bytes of a line longer than `max`, as
/// `salvage` needs them (see `keep_tail`).
fn read_line_keeping_end(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    mut end: Option<&mut Vec<u8>>,
) -> std::io::Result<(usize, bool)> {
    buf.clear();
    if let Some(e) = end.as_deref_mut() {
        e.clear();
    }
    read_line_more(r, buf, max, end, 0)
}

/// `read_line_keeping_end` for a line whose first `total` bytes were read already (into `buf`
/// and `end` as it keeps them).
fn read_line_more(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    mut end: Option<&mut Vec<u8>>,
    mut total: usize,
) -> std::io::Result<(usize, bool)> {
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
        if let Some(e) = end.as_deref_mut()
            && take > room
        {
            keep_tail(e, &chunk[room.min(take)..take]);
        }
        total += take;
        r.consume(take);
        if done {
            return Ok((total, true));
        }
    }
}

/// Adds `bytes` to `end`, the last bytes of a line past `MAX_LINE` kept for `salvage`, which
/// keeps its last `SALVAGE_TAIL` bytes before any trailing whitespace. Once cut, `end` holds
/// twice that of what comes before its trailing run of whitespace, and twice that of the run,
/// so that what `salvage` keeps is the same however the line was read in pieces: a cut to
/// exactly `SALVAGE_TAIL` left one byte less to keep before a newline, and a cut that counted
/// a long run of spaces after the line's JSON left less, or none, of what came before it.
/// The middle of a run longer than that goes: should the line go on after it, what `salvage`
/// keeps lies within the run's last bytes and what follows.
fn keep_tail(end: &mut Vec<u8>, bytes: &[u8]) {
    end.extend_from_slice(bytes);
    if end.len() <= 4 * SALVAGE_TAIL {
        return;
    }
    let run = end
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    let before = end.len() - run;
    end.drain(before..before + run.saturating_sub(2 * SALVAGE_TAIL));
    end.drain(..before.saturating_sub(2 * SALVAGE_TAIL));
}

/// An oversized line made readable: its first `SALVAGE_HEAD` and last `SALVAGE_TAIL` bytes
/// around a note of what was cut, when both cuts fall inside one JSON string (a pasted log, a
/// huge prompt or tool output: what makes a line that long). `head` is the line's start as
/// read, `end` its last bytes, `len` its full length. None when the result is not valid JSON.
pub fn salvage(head: &[u8], end: &[u8], len: usize) -> Option<Vec<u8>> {
    // Only trailing whitespace goes: where `end` starts depends on the pieces the line was read
    // in, and whitespace there is kept. A line only a little over the limit has fewer than
    // `SALVAGE_TAIL` bytes past it, but for that whitespace: the rest of its last
    // `SALVAGE_TAIL` bytes are the end of `head`.
    let end = end.trim_ascii_end();
    let joined;
    let end = if end.len() < SALVAGE_TAIL && head.len() > SALVAGE_HEAD {
        let from = head
            .len()
            .saturating_sub(SALVAGE_TAIL - end.len())
            .max(SALVAGE_HEAD);
        joined = [&head[from..], end].concat();
        // All of `end` may have been whitespace.
        joined.trim_ascii_end()
    } else {
        end
    };
    // The head: cut at a character boundary, and never inside an escape sequence.
    let mut cut = head.len().min(SALVAGE_HEAD);
    while cut > 0 && cut < head.len() && head[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    // Nor inside a word: a key or token cut in two would keep a piece that redaction no
    // longer recognises. So the cut moves back over a run of token characters (at most
    // `SEAM_MAX` bytes of it).
    let word_start = head[..cut]
        .iter()
        .rev()
        .take(SEAM_MAX)
        .take_while(|&&b| is_token_byte(b))
        .count();
    cut -= word_start;
    if let Some(back) = head[cut.saturating_sub(6)..cut]
        .iter()
        .rposition(|&b| b == b'\\')
    {
        cut = cut.saturating_sub(6) + back;
    }
    // Nor after the leading half of an escaped surrogate pair (`\ud83d` of `\ud83d\ude00`).
    if cut >= 6
        && head[cut - 6] == b'\\'
        && head[cut - 5].eq_ignore_ascii_case(&b'u')
        && head[cut - 4].eq_ignore_ascii_case(&b'd')
        && matches!(head[cut - 3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'b')
    {
        cut -= 6;
    }
    while cut > 0 && head[cut - 1] == b'\\' {
        cut -= 1;
    }
    let head = &head[..cut];
    let mut from = end.len().saturating_sub(SALVAGE_TAIL);
    while from < end.len() && end[from] & 0xC0 == 0x80 {
        from += 1;
    }
    // The end starts after the word the cut fell in, for the same reason.
    from += end[from..]
        .iter()
        .take(SEAM_MAX)
        .take_while(|&&b| is_token_byte(b))
        .count();
    let kept = head.len() + (end.len() - from);
    let note = format!(
        " [... {:.1} MB of this line cut by session-relay ...] ",
        len.saturating_sub(kept) as f64 / (1 << 20) as f64
    );
    // The end may start inside an escape sequence (`\"`, `\u00e9`): try the next few starts.
    // A join that parses is kept only when the note sits in one long string, the one both cuts
    // fell in (an eighth of what is kept, at least): two cuts in different places of, say, an array of many small records can make
    // valid JSON that is a different record.
    for start in from..(from + 8).min(end.len()) {
        let mut line = Vec::with_capacity(kept + note.len());
        line.extend_from_slice(head);
        line.extend_from_slice(note.as_bytes());
        line.extend_from_slice(&end[start..]);
        // Invalid UTF-8 is read lossily, as for any line (the caller does the same).
        let Ok(v) = serde_json::from_str::<Value>(&reader_text(&line).0) else {
            continue;
        };
        // (The string is measured decoded: an escape takes up to six bytes for one.)
        return match string_holding(&v, note.trim()) {
            Some(n) if n * 8 >= kept => Some(line),
            _ => None,
        };
    }
    None
}

/// How far from a cut `salvage` looks for the edge of the word it fell in.
const SEAM_MAX: usize = 512;

/// Bytes of words, identifiers, tokens and keys (base64 and URL-safe alphabets included).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+' | b'/' | b'=')
}

/// The length of the string value that holds `note`, if one does (not an object key).
fn string_holding(v: &Value, note: &str) -> Option<usize> {
    match v {
        Value::String(s) => s.contains(note).then_some(s.len()),
        Value::Array(items) => items.iter().find_map(|x| string_holding(x, note)),
        Value::Object(map) => map.values().find_map(|x| string_holding(x, note)),
        _ => None,
    }
}

/// Summary of a whole pass over a file.
#[derive(Default, Debug)]
pub struct PassStats {
    pub lines: usize,
    pub malformed: Vec<(usize, String)>,
    /// Lines over `MAX_LINE`: (line number, length).
    pub oversized: Vec<(usize, usize)>,
    /// Lines over `MAX_LINE` read as their start and end (see `salvage`): (line number, length).
    pub salvaged: Vec<(usize, usize)>,
    pub invalid_utf8_lines: Vec<usize>,
    /// Lines whose lone surrogate escapes were replaced (`surrogates`).
    pub lone_surrogate_lines: Vec<usize>,
    /// The last line had no newline and did not parse: an agent cut off mid-write.
    pub truncated_tail: bool,
    /// The file started with a UTF-8 byte order mark, which was ignored.
    pub bom: bool,
    /// Where each block of lines began: (number of its first line, byte offset), in order. A
    /// later pass over the newest lines starts reading there (see `Pass::from`).
    pub block_starts: Vec<(usize, u64)>,
}

impl PassStats {
    /// The last place the pass began a block at or before line `line`.
    fn start_before(&self, line: usize) -> Option<(usize, u64)> {
        let i = self.block_starts.partition_point(|&(l, _)| l <= line);
        i.checked_sub(1).map(|i| self.block_starts[i])
    }
}

/// The UTF-8 byte order mark some editors and tools put at the start of a file.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A line without the byte order mark a file's first line may start with.
pub fn strip_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(BOM).unwrap_or(line)
}

/// Bytes of lines parsed together: large enough to spread over the cores, small enough that
/// memory does not grow with the file.
const BLOCK: usize = 1 << 19;

/// How a pass parses lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pass {
    /// Leave out what a relay will not keep while parsing (see `pruned`).
    pub prune: Option<pruned::Prune>,
    /// Hand on only lines from this number on (the earlier ones are read, not parsed).
    pub from_line: usize,
    /// Start reading at this byte offset, the start of this line (see `Pass::from`).
    pub start: Option<(usize, u64)>,
    /// What the pass is for, as its progress step names it before the file's name
    /// (`reading` when `None`): a relay that passes over a file twice says which pass it is in.
    pub step: Option<&'static str>,
    /// Hand a line longer than `LONG_LINE` on as `Line::Long` instead of parsing it whole (or
    /// salvaging it, past `MAX_LINE`): for a format whose long lines are lists of whole
    /// messages (Gemini CLI's `$set.messages`, the whole history again at every resume), which
    /// a cut would lose and a whole parse would hold at once. Not for `.zst`.
    pub stream_long: bool,
}

/// The progress step of a pass that reads a file's newest turns again (`Pass::from`): after
/// the first read's `reading`, a step of the same name looked like the read started over.
pub const TAIL_STEP: &str = "reading the newest turns of";

impl Pass {
    /// A pass that hands on the lines from `line` on, starting to read where `earlier` (a pass
    /// over the same file) began the block holding it: reading a long file again from its
    /// start to its newest turns costs nearly what parsing them does.
    pub fn from(line: usize, earlier: &PassStats, prune: Option<pruned::Prune>) -> Pass {
        Pass {
            prune,
            from_line: line,
            start: earlier.start_before(line),
            step: Some(TAIL_STEP),
            stream_long: false,
        }
    }
}

/// Calls `f(line_number, line)` for every non-blank line of `path`, in order, parsed as `pass`
/// says (line numbers start at 1). Each line is turned into what the caller keeps in
/// parallel: first by `fast(line_number, text)`, for a reader that can turn the usual lines
/// into what it keeps without a `Value` tree (`None` to have the line parsed), else by
/// `map(line_number, value)`. A reader's per-line work so runs on every core, and the value is
/// dropped on the thread that built it.
pub fn for_each_line<T: Send>(
    path: &Path,
    pass: Pass,
    fast: impl Fn(usize, &str) -> Option<T> + Sync,
    map: impl Fn(usize, Value) -> T + Sync,
    mut f: impl FnMut(usize, Line<T>) -> Result<()>,
) -> Result<PassStats> {
    let mut lines = Lines::open(path, &pass)?;
    let progress = lines.progress(path, &pass);
    let mut stats = PassStats::default();
    let parse = |block: &Block| parse_block(block, &pass, &fast, &map);
    let mut handed = Handed::default();
    let mut block = Some(lines.read_block(path, &pass, &mut stats)?);
    let mut pending: Vec<Parsed<T>> = Vec::new();
    while let Some(this) = block.take() {
        if let Some(p) = &progress {
            p.advance(this.read);
        }
        // The pool parses this block on every core and reads the next on one (reading and
        // splitting lines would otherwise leave the other cores idle), while this thread
        // hands on the lines of the block before, in order: handing on is a reader's
        // sequential part, a tenth of a long read, and the cores would wait for it.
        let mut done = None;
        let eof = lines.eof;
        let handing = rayon::in_place_scope(|s| {
            s.spawn(|_| {
                done = Some(if eof {
                    (None, parse(&this))
                } else {
                    let (next, parsed) = rayon::join(
                        || lines.read_block(path, &pass, &mut stats),
                        || parse(&this),
                    );
                    (Some(next), parsed)
                });
            });
            handed.hand_on(std::mem::take(&mut pending), &mut f)
        });
        handing?;
        let (next, parsed) = done.expect("the block was parsed");
        lines.spare = Some(this);
        pending = parsed;
        block = next.transpose()?;
    }
    handed.hand_on(pending, &mut f)?;
    stats.invalid_utf8_lines = handed.invalid_utf8_lines;
    stats.lone_surrogate_lines = handed.lone_surrogate_lines;
    stats.malformed = handed.malformed;
    stats.truncated_tail = handed.truncated_tail;
    Ok(stats)
}

/// The lines of a block, each parsed as `for_each_line` says, on every core.
fn parse_block<T: Send>(
    block: &Block,
    pass: &Pass,
    fast: &(impl Fn(usize, &str) -> Option<T> + Sync),
    map: &(impl Fn(usize, Value) -> T + Sync),
) -> Vec<Parsed<T>> {
    use rayon::prelude::*;
    block
        .lines
        .par_iter()
        .map(|(no, range, terminated, long)| {
            let (no, terminated) = (*no, *terminated);
            if let Some((start, len)) = *long {
                let line = Ok(Line::Long {
                    start,
                    len,
                    terminated,
                });
                return (no, terminated, Replaced::default(), line);
            }
            let (text, lossy) = reader_text(&block.data[range.clone()]);
            if let Some(t) = fast(no, text.trim()) {
                return (no, terminated, lossy, Ok(Line::Json(t)));
            }
            let parsed = match &pass.prune {
                Some(prune) => pruned::parse(text.trim().as_bytes(), prune),
                None => serde_json::from_str::<Value>(text.trim()),
            };
            let r = parsed
                .map(|v| Line::Json(map(no, v)))
                .map_err(|e| e.to_string());
            (no, terminated, lossy, r)
        })
        .collect()
}

/// What handing the parsed lines on finds, kept apart from the pass's other figures while
/// the next block is read beside it.
#[derive(Default)]
struct Handed {
    invalid_utf8_lines: Vec<usize>,
    lone_surrogate_lines: Vec<usize>,
    malformed: Vec<(usize, String)>,
    truncated_tail: bool,
}

impl Handed {
    /// Hands the parsed lines on to `f` in order, noting what was replaced or malformed. A
    /// cut-off last line (no newline, does not parse) is an agent still writing, not a
    /// malformed line.
    fn hand_on<T>(
        &mut self,
        parsed: Vec<Parsed<T>>,
        f: &mut impl FnMut(usize, Line<T>) -> Result<()>,
    ) -> Result<()> {
        for (no, terminated, lossy, r) in parsed {
            if lossy.utf8 {
                self.invalid_utf8_lines.push(no);
            }
            if lossy.surrogates {
                self.lone_surrogate_lines.push(no);
            }
            match r {
                Ok(line) => f(no, line)?,
                Err(_) if !terminated => self.truncated_tail = true,
                Err(e) => {
                    self.malformed.push((no, e.clone()));
                    f(no, Line::Malformed(e))?;
                }
            }
        }
        Ok(())
    }
}

/// A line as a block's parse hands it on: its number, whether it ended in a newline, what was
/// replaced in it, and what it became.
type Parsed<T> = (usize, bool, Replaced, Result<Line<T>, String>);

/// What a line's text had replaced before it was parsed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Replaced {
    /// Invalid UTF-8, with U+FFFD.
    pub utf8: bool,
    /// Lone surrogate escapes, with `\ufffd` (`surrogates`).
    pub surrogates: bool,
}

/// The text of a line as every reader and scan parses it: invalid UTF-8 and lone surrogate
/// escapes replaced, so that one broken character costs that character, not the line.
pub fn reader_text(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, Replaced) {
    let (text, utf8) = match std::str::from_utf8(bytes) {
        Ok(s) => (std::borrow::Cow::Borrowed(s), false),
        Err(_) => (String::from_utf8_lossy(bytes), true),
    };
    match surrogates::repair(&text) {
        Some(fixed) => (
            std::borrow::Cow::Owned(fixed),
            Replaced {
                utf8,
                surrogates: true,
            },
        ),
        None => (
            text,
            Replaced {
                utf8,
                surrogates: false,
            },
        ),
    }
}

/// Bytes kept of a line streamed as `Line::Long` while it is read: its byte order mark.
const LONG_KEPT: usize = BOM.len();

/// Raw lines read together, to be parsed on every core: the file's bytes as read, straight
/// into one buffer (copying each line out of a reader's buffer into a block of its own was a
/// tenth of a long read's work), each line's number, range (its text trimmed), whether it
/// ended in a newline and, for a long line streamed (`Pass::stream_long`), where it lies in the
/// file instead.
struct Block {
    /// Zero-filled once, then reused: only `..filled` of it (in `read_block`) is the file's.
    data: Vec<u8>,
    lines: Vec<BlockLine>,
    /// Bytes of the file the block took.
    read: u64,
}

type BlockLine = (usize, std::ops::Range<usize>, bool, Option<(u64, u64)>);

/// The lines of a file as `for_each_line` reads them, block by block.
struct Lines {
    reader: Box<dyn BufRead + Send>,
    /// The start of a line read past `LONG_LINE` or `MAX_LINE`, and (`end`) its last bytes.
    buf: Vec<u8>,
    end: Vec<u8>,
    /// The start of a line that a block's read took but did not end: the next block's first.
    carry: Vec<u8>,
    /// The number of the last line read.
    no: usize,
    /// The byte offset of the next line.
    offset: u64,
    eof: bool,
    /// A `.zst` stream: its offsets are not the file's.
    compressed: bool,
    /// A block whose lines were parsed, to be filled again: a long read allocating a new
    /// block for every 2 MB left holes that the session's own allocations then spread over.
    spare: Option<Block>,
}

impl Lines {
    /// The lines of `path` from where `pass` starts. A compressed stream cannot be entered in
    /// the middle: it is read from its start.
    fn open(path: &Path, pass: &Pass) -> Result<Lines> {
        let compressed = path.extension().is_some_and(|e| e == "zst");
        let (reader, first, offset) = match pass.start {
            Some((line, offset)) if !compressed && line > 1 => {
                let mut file =
                    File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
                file.seek(std::io::SeekFrom::Start(offset))
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let reader: Box<dyn BufRead + Send> =
                    Box::new(BufReader::with_capacity(1 << 16, file));
                (reader, line, offset)
            }
            _ => (open(path)?, 1, 0),
        };
        Ok(Lines {
            reader,
            buf: Vec::new(),
            end: Vec::new(),
            carry: Vec::new(),
            no: first - 1,
            offset,
            eof: false,
            compressed,
            spare: None,
        })
    }

    /// Reading is the slow part of a large session: the progress says how far it is, in
    /// bytes of the file (of the decompressed stream for `.zst`, whose size is not known in
    /// advance).
    fn progress(&self, path: &Path, pass: &Pass) -> crate::progress::Handle {
        let total = (!self.compressed)
            .then(|| {
                std::fs::metadata(path)
                    .map(|m| m.len().saturating_sub(self.offset))
                    .ok()
            })
            .flatten();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        crate::progress::start(
            &format!("{} {name}", pass.step.unwrap_or("reading")),
            total,
            crate::progress::Unit::Bytes,
        )
    }

    /// The next `BLOCK` bytes or so of lines (empty at the end of the file).
    fn read_block(&mut self, path: &Path, pass: &Pass, stats: &mut PassStats) -> Result<Block> {
        let mut block = match self.spare.take() {
            Some(mut b) => {
                b.lines.clear();
                b.read = 0;
                b
            }
            None => Block {
                data: vec![0; BLOCK + (BLOCK >> 3)],
                lines: Vec::new(),
                read: 0,
            },
        };
        stats.block_starts.push((self.no + 1, self.offset));
        let stream = self.streams(pass);
        let max = if stream { LONG_LINE } else { MAX_LINE };
        let read_error = |no: usize| format!("read error in {} after line {no}", path.display());
        if block.data.len() < self.carry.len() {
            block.data.resize(self.carry.len(), 0);
        }
        let mut filled = self.carry.len();
        block.data[..filled].copy_from_slice(&self.carry);
        self.carry.clear();
        // Where the next line starts, and how many of its bytes are known to hold no newline.
        let mut at = 0;
        let mut searched = 0;
        // Every whole line read is taken (a block that stopped at `BLOCK` carried the lines
        // read past it over to the next one, a tenth of a block copied twice); reading more
        // stops at `BLOCK`.
        loop {
            if let Some(i) = memchr::memchr(b'\n', &block.data[at + searched..filled]) {
                let end = at + searched + i + 1;
                if end - at > max {
                    self.keep_long_start(&block.data[at..end], max, stream);
                    self.long_line(&mut block, at, end - at, true, pass, stats);
                } else {
                    self.line_in_place(&mut block, at..end, true, pass, stats);
                }
                (at, searched) = (end, 0);
                continue;
            }
            searched = filled - at;
            if searched > max {
                // Longer than a line is read whole: the rest of it is read as it comes, only
                // its start (and last bytes) kept.
                self.keep_long_start(&block.data[at..filled], max, stream);
                let (n, terminated) = read_line_more(
                    &mut *self.reader,
                    &mut self.buf,
                    if stream { LONG_KEPT } else { max },
                    (!stream).then_some(&mut self.end),
                    searched,
                )
                .with_context(|| read_error(self.no))?;
                self.eof = !terminated;
                filled = self.long_line(&mut block, at, n, terminated, pass, stats);
                (at, searched) = (filled, 0);
                if self.eof {
                    break;
                }
                continue;
            }
            if at >= BLOCK {
                break;
            }
            if filled == block.data.len() {
                if at > 0 {
                    // The line runs past the block: it starts the next one.
                    break;
                }
                // One line longer than a block: the block grows to hold it.
                let len = block.data.len();
                block
                    .data
                    .resize((2 * len).min(max + (1 << 16) + 1).max(len + 1), 0);
            }
            let n = loop {
                match self.reader.read(&mut block.data[filled..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e).with_context(|| read_error(self.no)),
                }
            };
            if n == 0 {
                self.eof = true;
                if filled > at {
                    self.line_in_place(&mut block, at..filled, false, pass, stats);
                }
                at = filled;
                break;
            }
            filled += n;
        }
        self.carry.extend_from_slice(&block.data[at..filled]);
        Ok(block)
    }

    /// The next line, at `range` of the block (with its newline when `terminated`).
    fn line_in_place(
        &mut self,
        block: &mut Block,
        mut range: std::ops::Range<usize>,
        terminated: bool,
        pass: &Pass,
        stats: &mut PassStats,
    ) {
        self.count_line(block, range.len());
        if self.no == 1 && block.data[range.clone()].starts_with(BOM) {
            stats.bom = true;
            range.start += BOM.len();
        }
        self.take_line(block, range, terminated, pass, stats);
    }

    /// Counts the next line, `n` bytes of the file.
    fn count_line(&mut self, block: &mut Block, n: usize) {
        block.read += n as u64;
        self.offset += n as u64;
        self.no += 1;
    }

    /// Takes the line just counted into the block's lines, its text at `range` of the block
    /// (trimmed here), unless it is blank or comes before `pass.from_line`.
    fn take_line(
        &self,
        block: &mut Block,
        range: std::ops::Range<usize>,
        terminated: bool,
        pass: &Pass,
        stats: &mut PassStats,
    ) {
        let line = &block.data[range.clone()];
        let text = line.trim_ascii();
        if text.is_empty() {
            return;
        }
        stats.lines += 1;
        if self.no < pass.from_line {
            return;
        }
        let start = range.start + (text.as_ptr() as usize - line.as_ptr() as usize);
        block
            .lines
            .push((self.no, start..start + text.len(), terminated, None));
    }

    /// Of a line longer than `max`, its first bytes read: its start into `self.buf`, and what
    /// follows into `self.end`, as `read_line_more` keeps them for a salvage. A streamed line
    /// (`Pass::stream_long`) is read again from the file: only what tells a byte order mark
    /// is kept of it (`LONG_KEPT`), not a second copy of its first `LONG_LINE` bytes.
    fn keep_long_start(&mut self, bytes: &[u8], max: usize, stream: bool) {
        self.buf.clear();
        self.end.clear();
        if stream {
            self.buf.extend_from_slice(&bytes[..LONG_KEPT]);
        } else {
            self.buf.extend_from_slice(&bytes[..max]);
            keep_tail(&mut self.end, &bytes[max..]);
        }
    }

    /// The next line, longer than a line read whole: `n` bytes, its start in `self.buf` (and
    /// last bytes in `self.end`). Streamed (`Pass::stream_long`), salvaged, or skipped; what
    /// is kept of it (shorter than the line) goes into the block where the line started,
    /// `at`. Returns where what was kept ends.
    fn long_line(
        &mut self,
        block: &mut Block,
        at: usize,
        n: usize,
        terminated: bool,
        pass: &Pass,
        stats: &mut PassStats,
    ) -> usize {
        self.count_line(block, n);
        let no = self.no;
        if no == 1 && self.buf.starts_with(BOM) {
            stats.bom = true;
            self.buf.drain(..BOM.len());
        }
        if self.streams(pass) && n > LONG_LINE {
            stats.lines += 1;
            if no >= pass.from_line {
                // The line's start, past a byte order mark; its end, before the newline.
                let bom = if no == 1 && stats.bom { BOM.len() } else { 0 };
                let start = self.offset - n as u64 + bom as u64;
                let len = (n - bom - usize::from(terminated)) as u64;
                block
                    .lines
                    .push((no, at..at, terminated, Some((start, len))));
            }
            return at;
        }
        if n > MAX_LINE {
            match salvage(&self.buf, &self.end, n) {
                Some(line) => {
                    stats.salvaged.push((no, n));
                    self.buf = line;
                }
                None => {
                    stats.lines += 1;
                    stats.oversized.push((no, n));
                    return at;
                }
            }
        }
        let end = at + self.buf.len();
        debug_assert!(
            self.buf.len() <= n,
            "a salvaged line is shorter than the line"
        );
        block.data[at..end].copy_from_slice(&self.buf);
        self.take_line(block, at..end, terminated, pass, stats);
        end
    }

    /// Whether `pass` hands long lines on as `Line::Long` (never for `.zst`).
    fn streams(&self, pass: &Pass) -> bool {
        pass.stream_long && !self.compressed
    }
}

/// A string field of a JSON object, if present and a string.
pub fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// For `#[serde(deserialize_with = "present")]` on an `Option` field: a key that is there,
/// whatever its value, `null` included (as `Value::get` sees it; a plain `Option` takes `null`
/// for absent). The readers' fast paths use it to leave lines that have a key to the general
/// path.
pub fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Calls `f(line_number, text)` for every line a reader parses, with the text the reader parses
/// (see `for_each_line`): blank lines and lines over `MAX_LINE` are skipped, invalid UTF-8 and
/// lone surrogate escapes are replaced (`reader_text`), surrounding whitespace is trimmed. So a listing scanner finds a field wherever it
/// sits in a line (a timestamp after a long tool output). `f` returns false to stop.
///
/// Lines are handed over where they lie in the reader's buffer; only a line that runs past the
/// end of the buffer is gathered in a buffer of its own.
pub fn scan_lines(path: &Path, mut f: impl FnMut(usize, &str) -> bool) -> Result<()> {
    let mut reader = open(path)?;
    // The start of a line that runs past the reader's buffer (at most MAX_LINE bytes of it),
    // and its length so far.
    let mut partial: Vec<u8> = Vec::new();
    let mut partial_len = 0usize;
    // Of a line longer than MAX_LINE, its last bytes too, to salvage it as the reader does.
    let mut end: Vec<u8> = Vec::new();
    let mut no = 0usize;
    let keep = |partial: &mut Vec<u8>, end: &mut Vec<u8>, bytes: &[u8]| {
        let room = MAX_LINE.saturating_sub(partial.len());
        partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if bytes.len() > room {
            keep_tail(end, &bytes[room..]);
        }
    };
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("read error in {} after line {no}", path.display()));
            }
        };
        if chunk.is_empty() {
            if partial_len > 0 {
                scan_line(no + 1, &partial, &end, partial_len, &mut f);
            }
            return Ok(());
        }
        let len = chunk.len();
        let mut rest = chunk;
        let mut go_on = true;
        if partial_len > 0 {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    keep(&mut partial, &mut end, &rest[..=i]);
                    no += 1;
                    go_on = scan_line(no, &partial, &end, partial_len + i + 1, &mut f);
                    partial.clear();
                    end.clear();
                    partial_len = 0;
                    rest = &rest[i + 1..];
                }
                None => {
                    keep(&mut partial, &mut end, rest);
                    partial_len += len;
                    rest = &[];
                }
            }
        }
        while go_on && !rest.is_empty() {
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    no += 1;
                    go_on = scan_line(no, &rest[..=i], &[], i + 1, &mut f);
                    rest = &rest[i + 1..];
                }
                None => {
                    keep(&mut partial, &mut end, rest);
                    partial_len = rest.len();
                    rest = &[];
                }
            }
        }
        reader.consume(len);
        if !go_on {
            return Ok(());
        }
    }
}

/// One line for `scan_lines`: `bytes` is the line as kept (with its newline), `end` the last
/// bytes of a line longer than that, `len` its full length. Returns what `f` returns (true for
/// a line `f` does not see).
fn scan_line(
    no: usize,
    bytes: &[u8],
    end: &[u8],
    len: usize,
    f: &mut impl FnMut(usize, &str) -> bool,
) -> bool {
    let bytes = if no == 1 { strip_bom(bytes) } else { bytes };
    // As `for_each_line`: a line over MAX_LINE is salvaged, or skipped whole.
    if len > MAX_LINE {
        return match salvage(bytes, end, len) {
            Some(line) => scan_line(no, &line, &[], line.len(), f),
            None => true,
        };
    }
    if bytes.trim_ascii().is_empty() {
        return true;
    }
    f(no, reader_text(bytes).0.trim())
}

/// A whole number as JSON may write it: `1200`, `1200.0` and `1.2e3` are one number, and a
/// serializer that keeps numbers as floats writes the last two (`Value::as_u64` reads only the
/// first). `None` for a negative, fractional or out-of-range number, or a value that is none.
pub fn as_count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        let f = v.as_f64()?;
        // 2^64 is exact in an f64; every whole float below it converts exactly.
        (f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f)).then_some(f as u64)
    })
}

/// `as_count` for a whole number that may be negative (an exit code).
pub fn as_whole(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        let f = v.as_f64()?;
        // -2^63 and 2^63 are exact in an f64.
        (f.fract() == 0.0
            && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f))
        .then_some(f as i64)
    })
}

/// Deserializes an optional whole number as `as_count` reads it (for typed fast paths); a
/// value that is none is `None`, as the slow path's `as_count` makes it.
pub fn de_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::Deserialize;
    Ok(Option::<Value>::deserialize(d)?.as_ref().and_then(as_count))
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// Whether a JSON line may hold `text` (ASCII, the inside of a key or a string) once its escapes
/// are read: it holds it as written, or it has an escape that could be one of its characters
/// (`\u00..`, how JSON can write any ASCII character; `"t\u006fken_count"` is `"token_count"`).
/// Lets a search skip the lines it would find nothing in without parsing them, and still read
/// a line any serializer wrote.
pub fn may_hold(line: &[u8], text: &[u8]) -> bool {
    debug_assert!(text.is_ascii());
    contains(line, text) || contains(line, b"\\u00")
}

/// The complete lines in the last `max` bytes of a file, oldest first (for what agents record
/// at the end: usage, context windows). Compressed files are not read.
pub fn tail_lines(path: &Path, max: u64) -> Result<Vec<Vec<u8>>> {
    use std::io::{Seek, SeekFrom};
    if path.extension().is_some_and(|e| e == "zst") {
        return Ok(Vec::new());
    }
    let mut f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    f.read_to_end(&mut buf)?;
    let mut lines: Vec<Vec<u8>> = buf.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    // The first piece may be the end of a line that started before the window.
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    lines.retain(|l| !l.trim_ascii().is_empty());
    Ok(lines)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_whole_number_is_read_whatever_its_form() {
        use serde_json::Value;
        for (text, count, whole) in [
            ("1200", Some(1200), Some(1200)),
            ("1200.0", Some(1200), Some(1200)),
            ("1.2e3", Some(1200), Some(1200)),
            ("12E2", Some(1200), Some(1200)),
            ("0.0", Some(0), Some(0)),
            ("-0.0", Some(0), Some(0)),
            ("-3", None, Some(-3)),
            ("-3.0", None, Some(-3)),
            ("-3e0", None, Some(-3)),
            ("1.5", None, None),
            ("-0.5", None, None),
            ("1e300", None, None),
            ("18446744073709551615", Some(u64::MAX), None),
            ("\"12\"", None, None),
            ("null", None, None),
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(super::as_count(&v), count, "{text}");
            assert_eq!(super::as_whole(&v), whole, "{text}");
        }
    }

    use super::*;

    /// Every line of `path` parsed to a `Value`, as a reader without a fast path reads it.
    fn each_line(path: &Path, f: impl FnMut(usize, Line) -> Result<()>) -> Result<PassStats> {
        for_each_line(path, Pass::default(), |_, _| None, |_, v| v, f)
    }

    /// Files of lines of any length (a few bytes to more than a block, so that lines run past
    /// the reader's buffer and blocks start inside them), any line ends, blank and broken
    /// lines, a byte order mark, a last line without its newline: every pass hands on what a
    /// plain split of the whole file into lines gives, compressed or not, and each block starts
    /// where its first line does.
    #[test]
    fn blocks_hand_on_the_lines_a_plain_split_finds() {
        let dir = tempfile::tempdir().unwrap();
        for seed in 1..=12u64 {
            let mut rng = crate::text::test_rng(seed * 7919);
            let mut file = Vec::new();
            if rng(3) == 0 {
                file.extend_from_slice(BOM);
            }
            let size = [64 << 10, 1 << 20, 3 << 20][rng(3)];
            let mut i = 0;
            while file.len() < size {
                let len = match rng(10) {
                    0 => rng(BLOCK as u64 * 5 / 2),
                    1..=3 => rng(70_000),
                    _ => rng(300),
                };
                let pad = ["a", "é", "字", "\\n", " "][rng(5)].repeat(len / 3 + 1);
                let spaces = " ".repeat(rng(3));
                match rng(12) {
                    0 => file.extend_from_slice(b"{\"broken\": "),
                    1 => {}
                    _ => file.extend_from_slice(
                        format!("{spaces}{{\"n\":{i},\"pad\":\"{pad}\"}}{spaces}").as_bytes(),
                    ),
                }
                file.extend_from_slice([b"\n".as_slice(), b"\r\n", b"\n\n", b" \t\n"][rng(4)]);
                i += 1;
            }
            if rng(2) == 0 {
                file.pop();
                file.extend_from_slice(br#"{"last":true}"#);
            }
            if rng(2) == 0 {
                file.extend_from_slice(br#"{"cut off": "#);
            }

            // The plain split: each line's number, start, and what a pass hands on of it.
            let mut want = Vec::new();
            let mut starts = Vec::new();
            let mut at = 0;
            for (n, piece) in file.split_inclusive(|&b| b == b'\n').enumerate() {
                starts.push(at as u64);
                at += piece.len();
                let piece = if n == 0 { strip_bom(piece) } else { piece };
                let text = std::str::from_utf8(piece).unwrap().trim();
                if text.is_empty() {
                    continue;
                }
                let parsed = serde_json::from_str::<Value>(text);
                match parsed {
                    Ok(v) => want.push((n + 1, Some(v))),
                    Err(_) if !piece.ends_with(b"\n") => {}
                    Err(_) => want.push((n + 1, None)),
                }
            }
            let cut_off = !file.ends_with(b"\n")
                && serde_json::from_slice::<Value>(file.rsplit(|&b| b == b'\n').next().unwrap())
                    .is_err();

            let plain = dir.path().join(format!("{seed}.jsonl"));
            std::fs::write(&plain, &file).unwrap();
            let packed = dir.path().join(format!("{seed}.jsonl.zst"));
            std::fs::write(&packed, zstd::encode_all(&file[..], 1).unwrap()).unwrap();
            for path in [&plain, &packed] {
                let mut seen = Vec::new();
                let stats = each_line(path, |no, line| {
                    seen.push((
                        no,
                        match line {
                            Line::Json(v) => Some(v),
                            Line::Malformed(_) => None,
                            Line::Long { .. } => panic!("no pass here streams long lines"),
                        },
                    ));
                    Ok(())
                })
                .unwrap();
                let name = path.display();
                assert_eq!(seen.len(), want.len(), "{name}");
                assert!(seen == want, "{name}: lines differ");
                assert_eq!(stats.truncated_tail, cut_off, "{name}");
                assert_eq!(stats.bom, file.starts_with(BOM), "{name}");
                assert!(stats.block_starts.len() > size / (2 * BLOCK), "{name}");
                for &(line, offset) in &stats.block_starts {
                    match starts.get(line - 1) {
                        Some(&start) => assert_eq!(offset, start, "{name}: block at line {line}"),
                        None => assert_eq!(offset, file.len() as u64, "{name}: the last block"),
                    }
                }
            }
        }
    }

    /// A line past the limit is salvaged the same whatever the size of the pieces it was read
    /// in, with or without whitespace after it: the listing, the reader and the reader's
    /// blocks read it in different pieces, and `show` and `list` gave it different titles.
    #[test]
    fn a_salvaged_line_does_not_depend_on_the_pieces_it_was_read_in() {
        use std::io::BufReader;
        let max = SALVAGE_HEAD + (SALVAGE_HEAD >> 1);
        let mut rng = crate::text::test_rng(42);
        let t = SALVAGE_TAIL;
        // Whitespace that JSON allows after the object, runs of it longer than what is kept
        // among them; and (`None`) a long run of spaces inside the string near its end.
        let spaces = |n: usize| " \t".repeat(n / 2) + &" ".repeat(n % 2);
        let endings = [
            Some("\n".to_string()),
            Some("  \r\n".to_string()),
            Some(String::new()),
            Some(spaces(t + 10) + "\n"),
            Some(spaces(2 * t + 10) + "\r\n"),
            Some(spaces(3 * t) + "\n"),
            Some(spaces(5 * t + 1)),
            None,
        ];
        for ending in crate::text::test_cases(endings, 3) {
            let mut line = String::from(r#"{"type":"user","text":""#);
            while line.len() < max + 5 * SALVAGE_TAIL {
                line.push_str(["word ", "été ", "x"][rng(3)]);
            }
            if ending.is_none() {
                // (Spaces only: a tab must be escaped in a string.)
                line.push_str(&" ".repeat(3 * t + 7));
                line.push_str("the last words");
            }
            line.push_str(r#""}"#);
            line.push_str(ending.as_deref().unwrap_or("\n"));
            // The line as a read that cut nothing would salvage it.
            let whole = salvage(&line.as_bytes()[..max], &line.as_bytes()[max..], line.len())
                .unwrap_or_else(|| panic!("{:?} is salvaged", ending.as_deref().map(str::len)));
            let sizes: Vec<usize> = (0..40).map(|_| 1 + rng(3 * SALVAGE_TAIL as u64)).collect();
            let mut sizes = crate::text::test_cases(sizes, 8);
            sizes.extend([SALVAGE_TAIL, SALVAGE_TAIL - 1, 2 * SALVAGE_TAIL, 1 << 20]);
            for size in sizes {
                let mut reader = BufReader::with_capacity(size, line.as_bytes());
                let (mut buf, mut end) = (Vec::new(), Vec::new());
                let (n, _) =
                    read_line_keeping_end(&mut reader, &mut buf, max, Some(&mut end)).unwrap();
                assert_eq!(n, line.len());
                assert!(end.len() <= 4 * t + size, "{} bytes kept", end.len());
                let kept = salvage(&buf, &end, n).expect("the line is salvaged");
                assert!(
                    whole == kept,
                    "read in pieces of {size} bytes, ending {:?}",
                    ending.as_deref().map(str::len)
                );
            }
        }
    }

    /// A pass that reads a file's newest turns again names its own progress step, after the
    /// first read's.
    #[test]
    fn a_pass_over_the_newest_turns_names_its_own_step() {
        use crate::progress::Steps;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text: String = (0..20_000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let steps = std::sync::Arc::new(Steps::default());
        let handle: crate::progress::Handle = Some(steps.clone());
        let count = |pass: Pass| {
            let mut n = 0;
            let stats = crate::progress::scope(&handle, || {
                for_each_line(
                    &path,
                    pass,
                    |_, _| Some(()),
                    |_, _| (),
                    |_, _| {
                        n += 1;
                        Ok(())
                    },
                )
            })
            .unwrap();
            (stats, n)
        };
        let (first, all) = count(Pass::default());
        let (_, tail) = count(Pass::from(19_000, &first, None));
        assert_eq!((all, tail), (20_000, 1_001));
        assert_eq!(
            *steps.0.lock().unwrap(),
            [
                "reading s.jsonl".to_string(),
                format!("{TAIL_STEP} s.jsonl")
            ]
        );
    }

    /// Any bytes, read through `LossyUtf8` in pieces of any size (a character cut between two
    /// reads of the file), give what `String::from_utf8_lossy` gives of them whole, and say
    /// whether they replaced anything.
    #[test]
    fn a_line_read_lossily_in_pieces_reads_as_it_does_whole() {
        use std::io::{BufReader, Read};
        let pieces: [&[u8]; 17] = [
            b"ab",
            b" ",
            b"\x0c",
            b"\t\r",
            "\u{a0}".as_bytes(),
            "\u{3000}".as_bytes(),
            "\u{e9}".as_bytes(),
            "\u{65e5}\u{672c}".as_bytes(),
            "\u{1f600}".as_bytes(),
            b"\xff",
            b"\xc3",
            b"\xe6\x97",
            b"\xf0\x9f\x98",
            b"\xed\xa0\x80",
            b"\x80\x80",
            b"\\u00e9\"",
            b"\n",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for case in 0..3000 {
            let len = next(40);
            let bytes: Vec<u8> = (0..len)
                .flat_map(|_| pieces[next(pieces.len() as u64) as usize].to_vec())
                .collect();
            let capacity = 1 + next(7) as usize;
            let lossy = LossyUtf8::new(BufReader::with_capacity(capacity, &bytes[..]));
            let replaced = lossy.replaced();
            let mut out = Vec::new();
            let mut reader = BufReader::with_capacity(1 + next(5) as usize, lossy);
            reader.read_to_end(&mut out).unwrap();
            let whole = String::from_utf8_lossy(&bytes);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                whole,
                "case {case}: {bytes:?} in pieces of {capacity}"
            );
            let mut trimmed = String::new();
            LossyUtf8::trimmed(BufReader::with_capacity(capacity, &bytes[..]))
                .read_to_string(&mut trimmed)
                .unwrap();
            assert_eq!(trimmed, whole.trim(), "case {case}: {bytes:?} trimmed");
            assert_eq!(
                replaced.get(),
                std::str::from_utf8(&bytes).is_err(),
                "{bytes:?}"
            );
        }
    }

    /// No line whose strings hold the text once read is skipped, however a serializer wrote
    /// its characters: as they are or as `\u00..` escapes in either case, among other escapes.
    #[test]
    fn may_hold_misses_no_line_that_holds_the_text() {
        let text = "token_count";
        let others = ["x", " ", "\\\\", "\\n", "\\u00e9", "é", "\\\"", "\\/"];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let (mut held, mut escaped) = (0, 0);
        for _ in 0..5000 {
            let mut written = String::new();
            for _ in 0..next(4) {
                written.push_str(others[next(others.len() as u64) as usize]);
            }
            // The text, perhaps with one character left out or changed, its characters
            // perhaps escaped.
            let skip = next(text.len() as u64 * 2) as usize;
            for (i, c) in text.chars().enumerate() {
                match next(4) {
                    _ if i == skip => written.push('-'),
                    0 => written.push_str(&format!("\\u{:04x}", c as u32)),
                    1 => written.push_str(&format!("\\u{:04X}", c as u32)),
                    _ => written.push(c),
                }
            }
            for _ in 0..next(3) {
                written.push_str(others[next(others.len() as u64) as usize]);
            }
            let line = format!("{{\"k\":\"{written}\"}}");
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v["k"].as_str().unwrap().contains(text) {
                held += 1;
                escaped += usize::from(!line.contains(text));
                assert!(may_hold(line.as_bytes(), text.as_bytes()), "{line}");
            } else if !line.contains("\\u00") {
                assert!(!may_hold(line.as_bytes(), text.as_bytes()), "{line}");
            }
        }
        assert!(
            held > 500 && escaped > 300,
            "{held} lines held it, {escaped} escaped"
        );
    }

    /// A pass from a line, started where an earlier pass began that line's block, hands on
    /// exactly what a pass from the file's start does from that line on: same numbers, same
    /// values, malformed and blank lines included, wherever the line falls in its block.
    #[test]
    fn a_pass_from_a_line_reads_what_a_pass_from_the_start_does() {
        let mut file = Vec::from(BOM);
        let mut i = 0usize;
        // Over three blocks, of lines of varied lengths and endings.
        while file.len() < 3 * BLOCK + BLOCK / 2 {
            let pad = "ü".repeat((i * 7919) % 3000);
            file.extend_from_slice(format!("{{\"n\":{i},\"pad\":\"{pad}\"}}").as_bytes());
            file.extend_from_slice(match i % 5 {
                0 => b"\r\n".as_slice(),
                1 => b"\n\n  \n",
                2 => b"\n{\"broken\": \n",
                _ => b"\n",
            });
            i += 1;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, &file).unwrap();
        let pass = |p: Pass| {
            let mut seen = Vec::new();
            let stats = for_each_line(
                &path,
                p,
                |_, _| None,
                |_, v| v,
                |no, line| {
                    seen.push((
                        no,
                        match line {
                            Line::Json(v) => v.to_string(),
                            Line::Malformed(e) => format!("malformed: {e}"),
                            Line::Long { start, len, .. } => format!("long: {start}+{len}"),
                        },
                    ));
                    Ok(())
                },
            )
            .unwrap();
            (seen, stats)
        };
        let (all, first) = pass(Pass::default());
        assert!(first.block_starts.len() >= 4, "{:?}", first.block_starts);
        let total = all.last().unwrap().0;
        let mut froms: Vec<usize> = first
            .block_starts
            .iter()
            .flat_map(|&(l, _)| [l.saturating_sub(1), l, l + 1])
            .collect();
        froms.extend([0, 1, 2, total / 3, total - 1, total, total + 1]);
        for from in froms {
            let p = Pass::from(from, &first, None);
            assert_eq!(
                p.start.is_some(),
                from >= first.block_starts[0].0,
                "from {from}"
            );
            let want: Vec<_> = all.iter().filter(|(no, _)| *no >= from).cloned().collect();
            assert_eq!(pass(p).0, want, "from line {from}");
        }
    }

    /// A token cut in two at either seam is dropped whole, not kept in a piece that redaction
    /// would no longer recognise.
    #[test]
    fn salvage_drops_a_token_cut_at_either_seam() {
        let key = format!("sk-ant-api03-{}-XYZAA", "A1b2C3d4".repeat(12));
        for offset in crate::text::test_cases([1usize, 7, 13, 60, key.len() - 2], 2) {
            // The head's cut falls `offset` bytes into one copy of the key, the tail's start
            // `offset` bytes into another.
            let prefix = "{\"id\":\"x\",\"text\":\"";
            let pad = SALVAGE_HEAD - offset - prefix.len();
            let filler = "lorem ipsum ".repeat(pad / 12 + 1);
            // After the second copy, words up to `SALVAGE_TAIL` bytes from the key's cut.
            let words = " dolor sit amet".repeat(SALVAGE_TAIL / 15 + 1);
            let after = SALVAGE_TAIL - (key.len() - offset) - "\"}".len() - " the end".len();
            let text = format!(
                "{} {key} {} {key}{} the end",
                &filler[..pad - 1],
                "dolor sit ".repeat(SALVAGE_TAIL / 10 + 10),
                &words[..after]
            );
            let line = format!("{prefix}{text}\"}}");
            assert_eq!(
                &line[SALVAGE_HEAD - offset..SALVAGE_HEAD - offset + 6],
                "sk-ant"
            );
            // The line's last `SALVAGE_TAIL` bytes start `offset` bytes into the key.
            assert_eq!(
                line.len() - SALVAGE_TAIL,
                line.rfind(&key).unwrap() + offset
            );
            let end = &line.as_bytes()[line.len() - 2 * SALVAGE_TAIL..];
            let kept = salvage(line.as_bytes(), end, line.len() + (40 << 20)).expect("salvaged");
            let kept = String::from_utf8(kept).unwrap();
            for piece in key.as_bytes().windows(8) {
                let piece = std::str::from_utf8(piece).unwrap();
                if piece.chars().all(|c| c.is_ascii_alphanumeric()) {
                    assert!(!kept.contains(piece), "offset {offset}: {piece} kept");
                }
            }
            let v: Value = serde_json::from_str(&kept).unwrap();
            assert!(v["text"].as_str().unwrap().ends_with("the end"));
        }
    }

    /// Cuts that fall in two different small records can join into valid JSON that is not
    /// the line: refused, so the line is skipped with its warning.
    #[test]
    fn salvage_refuses_cuts_that_join_two_records() {
        for shift in crate::text::test_cases(0..40, 3) {
            // The first record padded by `shift` bytes moves both cuts across the records.
            let mut line = format!(
                "{{\"content\":[{{\"id\":\"first\",\"text\":\"{}\"}},",
                "x".repeat(shift)
            );
            let mut i = 0;
            while line.len() < SALVAGE_HEAD + 2 * SALVAGE_TAIL {
                line.push_str(&format!(
                    "{{\"id\":\"toolu_{i:07}\",\"text\":\"out {i}\"}},"
                ));
                i += 1;
            }
            line.push_str("{\"id\":\"last\",\"text\":\"end\"}]}");
            let end = &line.as_bytes()[line.len() - SALVAGE_TAIL + shift..];
            let got = salvage(line.as_bytes(), end, line.len() + (40 << 20));
            assert!(got.is_none(), "shift {shift}");
        }
    }

    /// Wherever the cuts fall among escapes and multi-byte characters, a line whose giant
    /// string runs past both cuts is salvaged as valid JSON that keeps the fields around it.
    #[test]
    fn salvage_survives_any_cut_among_escapes_and_multibyte_characters() {
        let units = [
            "a", "\\\"", "\\\\", "\\n", "\\u00e9", "é", "日本", "😀", " ",
        ];
        let mut seed = 0x5a1_7a6e_u64;
        for shift in crate::text::test_cases(0..64, 8) {
            let mut text = "p".repeat(shift);
            while text.len() < SALVAGE_HEAD + 3 * SALVAGE_TAIL {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(units[(seed >> 33) as usize % units.len()]);
            }
            let line = format!("{{\"id\":\"x\",\"text\":\"{text}\",\"after\":{shift}}}");
            let end = &line.as_bytes()[line.len() - SALVAGE_TAIL - shift..];
            let head = &line.as_bytes()[..SALVAGE_HEAD + 100];
            let kept = salvage(head, end, line.len() + (40 << 20)).expect("salvaged");
            let v: Value = serde_json::from_slice(&kept).unwrap();
            assert_eq!(v["id"], "x");
            assert_eq!(v["after"], shift);
            let t = v["text"].as_str().unwrap();
            assert!(t.starts_with(&"p".repeat(shift)));
            assert!(t.contains("MB of this line cut by session-relay"));
        }
        // Invalid UTF-8 next to either cut is read lossily, not a reason to drop the line.
        let mut bad = format!("{{\"a\":\"{}", "é".repeat(SALVAGE_HEAD / 2)).into_bytes();
        bad[SALVAGE_HEAD - 3] = 0xFF;
        let mut tail = vec![b'z'; SALVAGE_TAIL];
        tail[7] = 0xC3;
        tail.extend_from_slice(b"\"}");
        bad.extend_from_slice(&tail);
        let kept = salvage(&bad, &tail, bad.len() + (40 << 20)).expect("salvaged");
        let v: Value = serde_json::from_str(&String::from_utf8_lossy(&kept)).unwrap();
        assert!(v["a"].as_str().unwrap().contains('\u{fffd}'));
        // When the two ends do not make JSON (here the end never closes the string), nothing is
        // made up.
        let two = format!(
            "{{\"a\":\"{}\",\"b\":\"{}\"}}",
            "x".repeat(SALVAGE_HEAD + 10),
            "y"
        );
        assert!(salvage(two.as_bytes(), &two.as_bytes()[5..SALVAGE_HEAD], two.len()).is_none());
    }

    /// `scan_lines` hands over exactly the lines `for_each_line` parses, also across the
    /// reader's 64 KB buffer and for lines longer than it.
    #[test]
    fn scan_lines_sees_what_the_reader_parses() {
        let mut file = Vec::new();
        let mut want = 0;
        for (i, len) in [10, 65_000, 70_000, 3, 200_000, 65_530, 65_536, 1, 140_000]
            .iter()
            .enumerate()
        {
            let pad = "é".repeat(len / 2);
            file.extend_from_slice(format!(" {{\"n\":{i},\"pad\":\"{pad}\"}}\r\n").as_bytes());
            want += 1;
            match i % 3 {
                0 => file.extend_from_slice(b"\n   \n"),
                1 => file.extend_from_slice(b"{\"broken\": \n"),
                _ => file.extend_from_slice(b"{\"bad\":\"\xff\xfe\"}\n"),
            }
            want += usize::from(i % 3 == 2);
        }
        file.extend_from_slice(b"{\"last\":true}");
        want += 1;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, &file).unwrap();

        let mut read = Vec::new();
        each_line(&path, |no, line| {
            if let Line::Json(v) = line {
                read.push((no, v));
            }
            Ok(())
        })
        .unwrap();
        let mut scanned = Vec::new();
        scan_lines(&path, |no, text| {
            if let Ok(v) = serde_json::from_str::<Value>(text) {
                scanned.push((no, v));
            }
            true
        })
        .unwrap();
        assert_eq!(read.len(), want);
        assert_eq!(scanned, read);

        let mut first = Vec::new();
        scan_lines(&path, |no, _| {
            first.push(no);
            false
        })
        .unwrap();
        assert_eq!(first, [1]);
    }
}

/// Finds, from the end of a file backwards, the first complete line (newest first, trimmed,
/// blank lines skipped) for which `f` returns something, reading at most the last `max` bytes
/// in blocks that grow from 16 KB: what agents record after every request (usage, context
/// windows) is found without reading a whole session. A line that begins before the window is not seen, and a
/// cut-off last line is handed on as it is (it will not parse). Compressed files are not read.
pub fn tail_rfind<T>(
    path: &Path,
    max: u64,
    mut f: impl FnMut(&[u8]) -> Option<T>,
) -> Result<Option<T>> {
    use std::os::unix::fs::FileExt;
    if path.extension().is_some_and(|e| e == "zst") {
        return Ok(None);
    }
    // Most answers are found in the first block; long tool outputs need the larger ones.
    let mut block: u64 = 16 << 10;
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    let len = meta.len();
    let floor = len.saturating_sub(max);
    let mut end = len;
    // The start of a line whose end was read in a later block.
    let mut carry: Vec<u8> = Vec::new();
    while end > floor {
        let start = end.saturating_sub(block).max(floor);
        block = (block * 4).min(1 << 20);
        let mut buf = vec![0u8; (end - start) as usize];
        file.read_exact_at(&mut buf, start)?;
        buf.extend_from_slice(&carry);
        // Before the first newline is the end of a line that began earlier, unless the block
        // starts the file.
        let (head, body) = if start == 0 {
            (&buf[..0], &buf[..])
        } else {
            match memchr::memchr(b'\n', &buf) {
                Some(i) => (&buf[..i], &buf[i + 1..]),
                None => (&buf[..], &buf[buf.len()..]),
            }
        };
        for line in body.rsplit(|&b| b == b'\n') {
            let line = line.trim_ascii();
            if !line.is_empty()
                && let Some(t) = f(line)
            {
                return Ok(Some(t));
            }
        }
        carry = head.to_vec();
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tail_tests {
    use super::*;

    #[test]
    fn tail_rfind_sees_complete_lines_newest_first_within_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        // Lines long enough to straddle the 64 KB blocks.
        let lines: Vec<String> = (0..40)
            .map(|i| format!("{i:03} {}", "x".repeat(7000 + i * 97)))
            .collect();
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let mut seen = Vec::new();
        let none: Option<()> = tail_rfind(&p, u64::MAX, |l| {
            seen.push(String::from_utf8(l.to_vec()).unwrap());
            None
        })
        .unwrap();
        assert!(none.is_none());
        let mut expect = lines.clone();
        expect.reverse();
        assert_eq!(seen, expect);
        // A window of 25,000 bytes holds the last two lines whole, and part of a third.
        let mut seen = Vec::new();
        tail_rfind(&p, 25_000, |l| {
            seen.push(l[..3].to_vec());
            None::<()>
        })
        .unwrap();
        assert_eq!(seen, vec![b"039".to_vec(), b"038".to_vec()]);
        let found = tail_rfind(&p, u64::MAX, |l| l.starts_with(b"007").then_some(7)).unwrap();
        assert_eq!(found, Some(7));
    }
}
