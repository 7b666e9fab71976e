//! Small text helpers shared by every stage: one-line titles, cut text, sizes and ages.

/// Shortens text to at most `max` characters on a character boundary, marking the cut.
pub fn truncate_chars(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A word as a POSIX shell reads it: as it is when it is plainly safe, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The first word of a command line as a POSIX shell reads it (the reverse of `shell_quote`
/// for single quotes and backslashes; enough to find the program a hook runs).
pub fn first_shell_word(s: &str) -> String {
    let mut word = String::new();
    let mut chars = s.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => word.extend(chars.by_ref().take_while(|&c| c != '\'')),
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => break,
            c => word.push(c),
        }
    }
    word
}

/// `bytes` as lowercase hex, two digits a byte: how digests are named in files and messages.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// One line of text for titles and listings: whitespace collapsed.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `truncate_chars(&one_line(s), max)`, reading no more of `s` than the result needs: the
/// summary and the brief take a short line from each of thousands of messages.
pub fn one_line_cut(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0usize;
    'words: for word in s.split_whitespace() {
        if n > 0 {
            out.push(' ');
            n += 1;
        }
        for c in word.chars() {
            if n > max {
                break 'words;
            }
            out.push(c);
            n += 1;
        }
        if n > max {
            break;
        }
    }
    if n <= max {
        return out;
    }
    // Longer than `max`: what `truncate_chars` keeps, `max - 1` characters and the mark.
    let mut cut: String = out.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Long outputs keep their head and tail, with a marker saying how much was cut.
pub fn trim_output(text: &str, max: usize) -> String {
    trim_output_cow(text, max).into_owned()
}

/// `trim_output`, borrowing a text that is not cut: most outputs are short, and a caller
/// that only appends the result need not copy them twice.
pub fn trim_output_cow(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    // Bytes bound characters: a text of at most `max` bytes needs no count.
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let n = text.chars().count();
    if n <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(cut_output(text, max, n))
}

/// The head and tail of `text`, `n` characters long (more than `max`), around the marker.
fn cut_output(text: &str, max: usize, n: usize) -> String {
    let head_len = max * 2 / 3;
    cut_between(text, n, (head_len, max - head_len), None)
}

/// A tool output cut to `max` as `trim_output` cuts it, where the output may already be a cut
/// of ours: a reader cut it to its head and tail from `source_chars` characters (the message's
/// `original_chars`). Cutting such a text again takes the reader's marker with it, and the new
/// marker must count what is missing of the source, not of the cut text (it said
/// "24 chars cut" where 397,000 were). So a marker that the new cut reaches goes whole (the
/// head or tail around it is shortened to its edge), and when the reader's marker goes, the new
/// one adds what it counted to what this cut removes: every character of the source that is no
/// longer shown. `source_chars` tells the reader's marker from the output's own words.
/// Without it (an output no reader cut, in which such a marker is the text's own), this is
/// `trim_output`.
pub fn recut(text: &str, max: usize, source_chars: Option<usize>) -> std::borrow::Cow<'_, str> {
    let Some(source_chars) = source_chars else {
        return trim_output_cow(text, max);
    };
    let n = text.chars().count();
    if n <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let head_len = max * 2 / 3;
    std::borrow::Cow::Owned(cut_between(
        text,
        n,
        (head_len, max - head_len),
        Some(source_chars),
    ))
}

/// `text`, `n` characters long (more than `head_len + tail_len`), cut to its first
/// `head_len` and last `tail_len` characters around a marker. With `source_chars` (see
/// `recut`), a marker the cut reaches goes whole, and when our marker goes, the new one adds
/// what it counted to what this cut removes.
fn cut_between(
    text: &str,
    n: usize,
    (head_len, tail_len): (usize, usize),
    source_chars: Option<usize>,
) -> String {
    let (head, tail) = (first_chars(text, head_len), last_chars(text, tail_len));
    let Some(source_chars) = source_chars else {
        return around_cut(head, n - head_len - tail_len, tail);
    };
    let markers: Vec<Marker> = cut_markers(text).collect();
    // Ours is the marker whose count, with what the text shows besides it, makes the source's
    // length: the others are the output's own text. (Masking what is shown can move the sum a
    // little; the marker's own count is what the reader cut, and stays exact.) Between markers
    // that read the same (a reader that cut 5 characters, in an output that says "[… 5 chars
    // cut …]"), ours is where a cut puts it: after two thirds of what is shown.
    let ours = markers.iter().min_by_key(|m| {
        let shown = n - m.chars;
        let at = text[..m.start].chars().count();
        (
            m.cut.saturating_add(shown).abs_diff(source_chars),
            (3 * at).abs_diff(2 * shown),
        )
    });
    let (mut cut_from, mut cut_to) = (head.len(), text.len() - tail.len());
    // A marker the cut reaches goes whole, never in part.
    for m in &markers {
        if m.start < cut_to && m.end > cut_from {
            cut_from = cut_from.min(m.start);
            cut_to = cut_to.max(m.end);
        }
    }
    let (head, tail) = (&text[..cut_from], &text[cut_to..]);
    let removed = text[cut_from..cut_to].chars().count();
    let cut = match ours {
        Some(m) if m.start >= cut_from && m.end <= cut_to => {
            (removed - m.chars).saturating_add(m.cut)
        }
        _ => removed,
    };
    around_cut(head, cut, tail)
}

/// A cut marker in a text: its byte range, its length in characters and the count it says.
struct Marker {
    start: usize,
    end: usize,
    chars: usize,
    cut: usize,
}

/// Where `text` holds a cut marker (`\n[… N chars cut …]\n`). A count too large for a `usize`
/// is the text's own words.
fn cut_markers(text: &str) -> impl Iterator<Item = Marker> + '_ {
    const OPEN: &str = "\n[… ";
    const CLOSE: &str = " chars cut …]\n";
    text.match_indices(OPEN).filter_map(|(start, _)| {
        let rest = &text[start + OPEN.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || !rest[digits..].starts_with(CLOSE) {
            return None;
        }
        Some(Marker {
            start,
            end: start + OPEN.len() + digits + CLOSE.len(),
            chars: OPEN.chars().count() + digits + CLOSE.chars().count(),
            cut: rest[..digits].parse().ok()?,
        })
    })
}

/// `head`, the marker of `cut` characters cut, and `tail`, in a string of the exact size: a
/// long session keeps one of these for each output it reads (`format!` left up to half of
/// each one's room unused).
fn around_cut(head: &str, cut: usize, tail: &str) -> String {
    let marker = format!("\n[… {cut} chars cut …]\n");
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len());
    out.push_str(head);
    out.push_str(&marker);
    out.push_str(tail);
    out
}

/// The first `n` characters of `text` (all of it when shorter).
fn first_chars(text: &str, n: usize) -> &str {
    &text[..text.len() - chars_after(text, n)]
}

/// The last `n` characters of `text` (all of it when shorter), found from the end: an output
/// cut to its head and tail need not be walked through in between.
fn last_chars(text: &str, n: usize) -> &str {
    &text[chars_before_last(text, n)..]
}

/// How many bytes of `text` follow its first `n` characters. Counted in runs, not character
/// by character: a run of `left` bytes holds at most `left` characters, and counting the
/// characters of a run is vectorised, so that ASCII takes one run and wider scripts a few,
/// where walking each character showed in the profile of a relay that cuts its outputs.
fn chars_after(text: &str, n: usize) -> usize {
    let (mut at, mut left) = (0, n);
    while left > 0 && at < text.len() {
        let mut end = at.saturating_add(left).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if end == at {
            // Fewer bytes left to take than this character has.
            end += text[at..].chars().next().map_or(1, char::len_utf8);
        }
        left -= text[at..end].chars().count();
        at = end;
    }
    text.len() - at
}

/// The byte where the last `n` characters of `text` begin (0 when it is shorter).
fn chars_before_last(text: &str, n: usize) -> usize {
    let (mut at, mut left) = (text.len(), n);
    while left > 0 && at > 0 {
        let mut start = at.saturating_sub(left);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        if start == at {
            start -= text[..at].chars().next_back().map_or(1, char::len_utf8);
        }
        left -= text[start..at].chars().count();
        at = start;
    }
    at
}

/// Text from a session made safe to print on a terminal: control characters (newlines
/// included), escape sequences and bidirectional overrides are shown escaped (`\n`, `\x1b`,
/// `\u{202e}`), so that a session cannot move the cursor, recolour or hide what follows.
/// JSON output is exact and never goes through this.
pub fn safe(s: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(s, false)
}

/// As `safe`, for text whose lines are its layout (a Markdown document): newlines, tabs and
/// the carriage return of a CRLF stay; a lone carriage return, which would let a line be
/// written over on a terminal, does not.
pub fn safe_lines(s: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(s, true)
}

/// A character that moves or recolours what a terminal shows, or reorders it: a control
/// character, or a bidirectional override, isolate or mark.
pub fn is_terminal_control(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// A character a name can hold that a person does not see where it is shown: a terminal
/// control (`is_terminal_control`), or a zero-width space, joiner or mark.
pub fn is_invisible(c: char) -> bool {
    is_terminal_control(c) || matches!(c, '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}')
}

fn escape_controls(s: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    let bad = is_terminal_control;
    let kept = |i: usize, c: char| {
        keep_lines
            && (c == '\n' || c == '\t' || (c == '\r' && s.as_bytes().get(i + 1) == Some(&b'\n')))
    };
    if !s.char_indices().any(|(i, c)| bad(c) && !kept(i, c)) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, c) in s.char_indices() {
        match c {
            c if kept(i, c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 && bad(c) => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The start of a text's first line that is not blank, as a summary quotes an output: at most
/// `QUOTED_LINE_CHARS` characters of it.
pub fn quoted_line(text: &str) -> &str {
    first_chars(
        text.trim_start().lines().next().unwrap_or(""),
        QUOTED_LINE_CHARS,
    )
}

/// How much of an output's first line a summary quotes (see `quoted_line`).
pub const QUOTED_LINE_CHARS: usize = 400;

/// What a reader keeps of an older turn's tool output it reads only in part (see
/// `adapter::OutputCut::keep`), given `full`: the output as a full read keeps it, already
/// masked, and `source_chars` long before the reader cut it, if it did (see `recut`).
/// `None`: `full` itself.
///
/// The relay reads such an output for its length, whether it failed, and the start of its
/// first line that is not blank, which the summary quotes (`quoted_line`). The fit also costs
/// its turn whole, and must not find it dearer than a full read would (it reads the session
/// again when it chooses such a turn whole). So the output is cut as the fit's own cuts
/// (`recut`) cut it: a head of `REDUCED_OUTPUT_CHARS` two thirds, or longer, up to the
/// end of the quoted line (and one character more, for a `\r` that would go with a line
/// break), but within the head of the fit's cut to 2,000; its last third; and only when that
/// leaves out at least `REDUCED_MIN_CUT` characters. Such a cut costs at most the marker's
/// 8 or 9 tokens and a token or two where it splits a word at each end more than the text it
/// cuts from (the fit allows for that: `fit::REDUCED_SLACK`).
pub fn reduced_output(full: &str, source_chars: Option<usize>) -> Option<String> {
    const FIT_HEAD: usize = 2000 * 2 / 3;
    if full.len() <= REDUCED_OUTPUT_CHARS + REDUCED_MIN_CUT {
        return None;
    }
    let n = full.chars().count();
    let tail_len = REDUCED_OUTPUT_CHARS - REDUCED_OUTPUT_CHARS * 2 / 3;
    let body = full.trim_start();
    let lead = full[..full.len() - body.len()].chars().count();
    let line_end = body
        .char_indices()
        .take(QUOTED_LINE_CHARS + 1)
        .position(|(_, c)| c == '\n');
    let needed = lead + line_end.map_or(QUOTED_LINE_CHARS + 1, |i| i + 1);
    let head_len = needed.max(REDUCED_OUTPUT_CHARS * 2 / 3);
    if head_len > FIT_HEAD || n < head_len + tail_len + REDUCED_MIN_CUT {
        return None;
    }
    let out = cut_between(full, n, (head_len, tail_len), source_chars);
    (quoted_line(&out) == quoted_line(full)).then_some(out)
}

/// For tests: a reproducible stream of numbers below the given bound (xorshift).
#[cfg(test)]
pub fn test_rng(seed: u64) -> impl FnMut(u64) -> usize {
    let mut state = seed | 1;
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n) as usize
    }
}

/// For tests: the cases a generated test runs. All of `all` in the slow tier (`cargo test
/// --features slow-tests`, which CI runs); in the default tier `n` of them spread evenly from
/// the first to the last, so that a contributor's `cargo test` meets each kind of case (the
/// smallest and the largest, every variant a list cycles through) in a few seconds.
#[cfg(test)]
pub fn test_cases<T>(all: impl IntoIterator<Item = T>, n: usize) -> Vec<T> {
    let all: Vec<T> = all.into_iter().collect();
    if cfg!(feature = "slow-tests") || n >= all.len() {
        return all;
    }
    let picked = spread(all.len(), n);
    all.into_iter()
        .enumerate()
        .filter_map(|(i, case)| picked.contains(&i).then_some(case))
        .collect()
}

/// For tests: about one in `k` of `all` (picked reproducibly at random) in the default tier,
/// all of them in the slow tier (see `test_cases`). For long lists of generated inputs that
/// come in groups of variants, where an even spread could keep meeting the same variant.
#[cfg(test)]
pub fn test_sample<T>(all: impl IntoIterator<Item = T>, k: u64) -> Vec<T> {
    let mut pick = test_rng(0x7e57_5a3b_1e00_0001);
    all.into_iter()
        .filter(|_| cfg!(feature = "slow-tests") || pick(k) == 0)
        .collect()
}

/// For tests: a count of generated cases, `all` in the slow tier and `fast` in the default one
/// (see `test_cases`).
#[cfg(test)]
pub fn test_count(fast: usize, all: usize) -> usize {
    if cfg!(feature = "slow-tests") {
        all
    } else {
        fast
    }
}

/// `n` indices of `0..len` (`n < len`) spread evenly, the first and the last included.
#[cfg(test)]
fn spread(len: usize, n: usize) -> Vec<usize> {
    match n {
        0 => Vec::new(),
        1 => vec![0],
        _ => (0..n)
            .map(|i| (i * (len - 1) + (n - 1) / 2) / (n - 1))
            .collect(),
    }
}

/// How many characters of a tool output a reader keeps when it reads the output's turn only
/// in part (see `reduced_output`): enough for its first line, and a little of its end.
pub const REDUCED_OUTPUT_CHARS: usize = 1000;

/// The least a reduced cut leaves out (see `reduced_output`): less is not worth a marker.
pub const REDUCED_MIN_CUT: usize = REDUCED_OUTPUT_CHARS / 4;

/// `trim_output` of a text of which `text` holds at least the first and the last
/// `max` characters (pieces cut earlier at the same `max`), `n` characters long in full: the
/// same result as cutting the full text.
pub fn trim_output_of(text: &str, max: usize, n: usize) -> String {
    if n <= max {
        return text.to_string();
    }
    let head_len = max * 2 / 3;
    let tail_len = max - head_len;
    around_cut(
        first_chars(text, head_len),
        n - head_len - tail_len,
        last_chars(text, tail_len),
    )
}

/// `1234567` -> `1,234,567`: how every count is written in text output (JSON keeps plain
/// numbers), so that one figure reads the same in every report.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1536` -> `1.5 KB`.
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `30d`, `12h`, `2w`, `45m`, `0d`.
pub fn parse_age(s: &str) -> Result<chrono::Duration, String> {
    use chrono::Duration;
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = num
        .parse()
        .map_err(|_| format!("expected a number and a unit (30d, 12h, 2w, 45m), got `{s}`"))?;
    match unit {
        "d" | "" => Ok(Duration::days(n)),
        "h" => Ok(Duration::hours(n)),
        "w" => Ok(Duration::weeks(n)),
        "m" => Ok(Duration::minutes(n)),
        _ => Err(format!("unknown unit `{unit}` in `{s}`: use m, h, d or w")),
    }
}

/// An age as the user would write it back (`30d`, `12h`, `45m`).
pub fn describe_age(d: chrono::Duration) -> String {
    if d.num_days() > 0 && d.num_hours() % 24 == 0 {
        format!("{}d", d.num_days())
    } else if d.num_minutes() % 60 == 0 {
        format!("{}h", d.num_hours())
    } else {
        format!("{}m", d.num_minutes())
    }
}

/// How long ago `then` was, for people: `just now`, `12 min ago`, `3 h ago`, `5 days ago`, or
/// the date when it is older than a month.
pub fn ago(then: chrono::DateTime<chrono::Utc>, now: chrono::DateTime<chrono::Utc>) -> String {
    let d = now.signed_duration_since(then);
    if d.num_minutes() < 1 {
        "just now".into()
    } else if d.num_hours() < 1 {
        format!("{} min ago", d.num_minutes())
    } else if d.num_days() < 1 {
        format!("{} h ago", d.num_hours())
    } else if d.num_days() < 31 {
        let n = d.num_days();
        format!("{n} day{} ago", if n == 1 { "" } else { "s" })
    } else {
        then.format("%Y-%m-%d").to_string()
    }
}

/// A path as people write it: the home folder as `~`.
pub fn tilde(path: &str) -> String {
    match dirs::home_dir() {
        Some(home) => match std::path::Path::new(path).strip_prefix(&home) {
            Ok(rest) if rest.as_os_str().is_empty() => "~".into(),
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.to_string(),
        },
        None => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number, grouped by three from the right, reads back as the number.
    #[test]
    fn thousands_groups_by_three_and_reads_back() {
        let mut next = test_rng(0x9e37_79b9_7f4a_7c15);
        for digits in 1..=20u32 {
            for _ in 0..50 {
                let n = if digits == 20 {
                    u64::MAX - next(1000) as u64
                } else {
                    let low = 10u64.pow(digits - 1) - u64::from(digits == 1);
                    low + next(9 * 10u64.pow(digits - 1)) as u64
                };
                let text = thousands(n);
                assert_eq!(text.replace(',', "").parse::<u64>().unwrap(), n, "{text}");
                let groups: Vec<&str> = text.split(',').collect();
                assert!((1..=3).contains(&groups[0].len()), "{text}");
                assert!(groups[1..].iter().all(|g| g.len() == 3), "{text}");
            }
        }
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(119_200), "119,200");
    }

    /// The default tier's spread of a generated test's cases: as many as asked, each once, in
    /// order, the first and the last among them.
    #[test]
    fn a_spread_of_cases_meets_the_first_and_the_last() {
        for len in 2..60 {
            for n in 2..len {
                let picked = spread(len, n);
                assert_eq!(picked.len(), n, "{n} of {len}");
                assert!(picked.windows(2).all(|w| w[0] < w[1]), "{picked:?}");
                assert_eq!((picked[0], picked[n - 1]), (0, len - 1), "{picked:?}");
            }
        }
    }

    /// Outputs of many shapes around the cuts: blank runs (ASCII, CRLF, ideographic spaces),
    /// lines of every length around the quoted 400 characters and the heads of the cuts, lone
    /// and paired `\r`, multi-byte characters. Reduced, each quotes the same start of its
    /// first line, and is cut as the fit cuts: a head of the whole (two thirds of the reduced
    /// size at least, within the fit's head at 2,000), a marker, a tail of the whole, with at
    /// least `REDUCED_MIN_CUT` left out.
    #[test]
    fn an_output_read_in_part_quotes_its_first_line_as_a_full_read_does() {
        let blanks = ["", " ", "\n", "\r\n", "\u{3000}", "\t \n"];
        let pieces = ["x", "é", "語", "\r", " ", "ab\r\n", "\n"];
        let mut next = test_rng(0x2545_f491_4f6c_dd1d);
        let mut reduced = 0;
        for case in 0..3000 {
            let mut full = blanks[next(6)].repeat([0, 1, 3, 300, 900][next(5)]);
            let line = [1, 399, 400, 401, 402, 660, 666, 667, 1500][next(9)];
            for _ in 0..line {
                full.push_str(if next(50) == 0 { pieces[next(7)] } else { "y" });
            }
            if case % 4 != 0 {
                full.push_str(["\n", "\r\n", "\r"][next(3)]);
            }
            for _ in 0..[0, 5, 1200, 3000][next(4)] {
                full.push_str(pieces[next(7)]);
            }
            let Some(r) = reduced_output(&full, None) else {
                continue;
            };
            reduced += 1;
            assert_eq!(quoted_line(&r), quoted_line(&full), "{full:?} -> {r:?}");
            let (head, rest) = r.split_once("\n[… ").unwrap();
            let (cut, tail) = rest.split_once(" chars cut …]\n").unwrap();
            let (head_len, tail_len) = (head.chars().count(), tail.chars().count());
            assert!(full.starts_with(head) && full.ends_with(tail), "{full:?}");
            assert!((666..=1333).contains(&head_len), "{head_len}");
            assert_eq!(tail_len, 334);
            let cut: usize = cut.parse().unwrap();
            assert_eq!(head_len + cut + tail_len, full.chars().count());
            assert!(cut >= REDUCED_MIN_CUT);
        }
        // Most of them are long enough to be cut.
        assert!(reduced > 1000, "{reduced}");
    }

    #[test]
    fn the_first_shell_word_undoes_shell_quote() {
        for program in [
            "/usr/bin/session-relay",
            "/home/a b/it's here/session-relay",
            "",
        ] {
            let line = format!("{} hook run --to codex", shell_quote(program));
            assert_eq!(first_shell_word(&line), program, "{line}");
        }
        assert_eq!(first_shell_word("a\\ b c"), "a b");
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate_chars("  日本語のテキスト  ", 4), "日本語…");
        assert_eq!(truncate_chars("short", 10), "short");
    }

    #[test]
    fn trimmed_output_keeps_head_and_tail_and_says_how_much_was_cut() {
        let text: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let t = trim_output(&text, 30);
        assert!(t.starts_with(&text[..20]), "{t}");
        assert!(t.ends_with(&text[90..]), "{t}");
        assert!(t.contains("[… 70 chars cut …]"), "{t}");
        assert_eq!(trim_output("short", 30), "short");
    }

    #[test]
    fn lines_keep_their_breaks_and_lose_their_controls() {
        assert_eq!(safe_lines("a\n\tb\r\nc"), "a\n\tb\r\nc");
        assert_eq!(safe_lines("over\rwritten\r"), "over\\rwritten\\r");
        assert_eq!(
            safe_lines("\x1b]8;;u\x07l\u{9b}2J\u{202e}"),
            "\\x1b]8;;u\\x07l\\x9b2J\\u{202e}"
        );
    }

    #[test]
    fn control_characters_and_escape_sequences_are_shown_escaped() {
        assert_eq!(safe("plain café 日本"), "plain café 日本");
        assert_eq!(safe("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(
            safe("\x1b[2J\x1b]0;pwned\x07"),
            "\\x1b[2J\\x1b]0;pwned\\x07"
        );
        assert_eq!(safe("\u{9b}31m"), "\\x9b31m");
        assert_eq!(safe("abc\u{202e}fed"), "abc\\u{202e}fed");
    }

    #[test]
    fn trimming_a_trimmed_text_with_its_full_length_gives_the_same_text() {
        let full: String = (0..500)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let once = trim_output(&full, 90);
        assert_eq!(trim_output_of(&once, 90, 500), once);
        assert_eq!(trim_output_of(&full, 90, 500), once);
    }

    /// The cut finds its tail from the end; it must give what walking every character gave,
    /// for any mix of one- to four-byte characters and any limit.
    /// `one_line_cut` gives what cutting the whole collapsed line gives, for text of every
    /// kind of whitespace and width, at every cut.
    #[test]
    fn a_one_line_cut_is_the_cut_of_the_whole_line() {
        let pieces = [
            "a",
            "word",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\u{3000}",
            "\u{a0}",
            "\u{2028}",
            "日本語",
            "é",
            "🦀",
            "x\u{301}",
            "…",
            "-",
            "\u{1b}[31m",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..3000 {
            let mut text = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            for k in 0..(state % 24) {
                let at = (state >> (k % 50)) as usize % pieces.len();
                text.push_str(pieces[(at + k as usize) % pieces.len()]);
            }
            for max in 0..30 {
                assert_eq!(
                    one_line_cut(&text, max),
                    truncate_chars(&one_line(&text), max),
                    "{text:?} at {max}"
                );
            }
        }
    }

    #[test]
    fn cuts_match_a_character_by_character_cut() {
        let naive = |text: &str, max: usize, n: usize| -> String {
            if n <= max {
                return text.to_string();
            }
            let head_len = max * 2 / 3;
            let tail_len = max - head_len;
            let have = text.chars().count();
            let head: String = text.chars().take(head_len).collect();
            let tail: String = text.chars().skip(have.saturating_sub(tail_len)).collect();
            format!(
                "{head}\n[… {} chars cut …]\n{tail}",
                n - head_len - tail_len
            )
        };
        let alphabet = ['a', 'é', '日', '😀', '\n', ' '];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 200) as usize;
            let text: String = (0..len)
                .map(|i| alphabet[((state >> (i % 50)) as usize + i) % alphabet.len()])
                .collect();
            let max = (state >> 20) as usize % 120;
            let n = text.chars().count();
            assert_eq!(
                trim_output(&text, max),
                naive(&text, max, n),
                "{text:?} {max}"
            );
            let more = n + (state >> 40) as usize % 50;
            assert_eq!(
                trim_output_of(&text, max, more),
                naive(&text, max, more),
                "{text:?} {max} {more}"
            );
        }
    }

    /// The head and tail of a text, counted in runs, are its first and last characters as a
    /// walk through each character finds them, whatever the mix of widths and the count.
    #[test]
    fn first_and_last_characters_are_found_whatever_their_widths() {
        let pieces = ["a", "é", "日", "😀", "\n", "e\u{301}"];
        let mut next = test_rng(0x7f4a_7c15_9e37_79b9);
        for _ in 0..20_000 {
            // Runs of one width, as real texts have, or any mix.
            let text: String = if next(2) == 0 {
                (0..next(300)).map(|_| pieces[next(6)]).collect()
            } else {
                (0..next(8))
                    .map(|_| pieces[next(6)].repeat(next(60)))
                    .collect()
            };
            let chars = text.chars().count();
            let n = next(chars as u64 + 5);
            let head: String = text.chars().take(n).collect();
            let tail: String = text.chars().skip(chars.saturating_sub(n)).collect();
            assert_eq!(first_chars(&text, n), head, "{text:?} {n}");
            assert_eq!(last_chars(&text, n), tail, "{text:?} {n}");
        }
    }

    /// A reader's cut cut again says how much of the source is missing, and shows only the
    /// source's own head and tail: cutting the source once to the smaller size gives the same
    /// text, and whatever the sizes, what is shown and what the marker counts add up to the
    /// source's length. Sources hold markers of their own too, which count as text.
    #[test]
    fn a_cut_cut_again_counts_what_the_source_lost() {
        let pieces = [
            "a",
            "é",
            "日",
            "😀",
            "\n",
            " ",
            "\n[… 5 chars cut …]\n",
            "\n[… ",
            " chars cut …]\n",
        ];
        let mut next = test_rng(0x51ab_77c3_0e21_9d45);
        let (mut same, mut other_markers, mut recut_again) = (0, 0, 0);
        for _ in 0..4000 {
            let with_markers = next(2) == 0;
            let source: String = (0..next(400))
                .map(|_| {
                    pieces[if with_markers && next(20) == 0 {
                        6 + next(3)
                    } else {
                        next(6)
                    }]
                })
                .collect();
            let n = source.chars().count();
            let first_max = next(160);
            let read = trim_output(&source, first_max);
            let read_chars = read.chars().count();
            let source_chars = (n > first_max).then_some(n);
            let max = next(read_chars as u64 + 20);
            let again = recut(&read, max, source_chars);
            if read_chars <= max {
                assert_eq!(again, read);
                continue;
            }
            if source_chars.is_none() {
                assert_eq!(again, trim_output(&read, max), "{read:?} {max}");
                continue;
            }
            // One of its markers is ours, around the source's own head and tail.
            let ours = |again: &str| {
                cut_markers(again).find(|m| {
                    let (head, tail) = (&again[..m.start], &again[m.end..]);
                    source.starts_with(head)
                        && source.ends_with(tail)
                        && head.chars().count() + m.cut + tail.chars().count() == n
                })
            };
            let Some(m) = ours(&again) else {
                panic!("{source:?} cut to {first_max}, then {max}: {again:?}");
            };
            let shown = again[..m.start].chars().count() + again[m.end..].chars().count();
            assert!(shown <= max);
            if max <= first_max && !source.contains(" chars cut …]") {
                assert_eq!(again, trim_output(&source, max));
                same += 1;
            }
            other_markers += usize::from(source.contains(" chars cut …]\n"));
            // And cut once more, smaller: still one marker that counts what the source lost.
            let last = max * next(100) / 100;
            let thrice = recut(&again, last, source_chars);
            if again.chars().count() > last {
                assert!(
                    ours(&thrice).is_some(),
                    "{again:?} cut to {last}: {thrice:?}"
                );
                recut_again += 1;
            }
        }
        assert!(recut_again > 300, "{recut_again}");
        assert!(same > 300 && other_markers > 300, "{same} {other_markers}");
    }

    /// Found by a hostile helper: our marker kept in the tail while the cut takes one of the
    /// output's own; and a secret masked in the head, which makes the text shorter than the
    /// source it shows.
    #[test]
    fn a_recut_counts_by_the_readers_marker() {
        let source = "A".repeat(100) + "\n[… 5 chars cut …]\n" + &"B".repeat(9050) + "C";
        let read = format!(
            "{}\n[… 9000 chars cut …]\n{}",
            &source[..169],
            &source[source.len() - 5..]
        );
        let n = source.chars().count();
        let again = recut(&read, 90, Some(n));
        // 60 + 102 + 3 + 9,000 + 5 = 9,170 characters of the source.
        assert_eq!(n, 9170);
        assert_eq!(
            again,
            format!(
                "{}\n[… 102 chars cut …]\nBBB\n[… 9000 chars cut …]\nBBBBC",
                "A".repeat(60)
            )
        );
        // A reader that cut 5 characters, of an output that says "[… 5 chars cut …]" itself.
        let source = "x".to_string() + "\n[… 5 chars cut …]\n" + &"y".repeat(150);
        let n = source.chars().count();
        let read = trim_output(&source, n - 5);
        assert_eq!(read.matches("\n[… 5 chars cut …]\n").count(), 2);
        let again = recut(&read, 90, Some(n));
        let m = cut_markers(&again).last().unwrap();
        let (head, tail) = (&again[..m.start], &again[m.end..]);
        assert!(
            source.starts_with(head) && source.ends_with(tail),
            "{again:?}"
        );
        assert_eq!(
            head.chars().count() + m.cut + tail.chars().count(),
            n,
            "{again:?}"
        );
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let source: String = format!("log {token} ")
            + &(0..45_000)
                .map(|i| format!("L{i:07}\n"))
                .collect::<String>();
        let n = source.chars().count();
        let masked = trim_output(&source, 8000).replace(token, "[REDACTED:github_token]");
        let again = recut(&masked, 7000, Some(n));
        let m = cut_markers(&again).next().unwrap();
        let shown = again[..m.start].chars().count() + again[m.end..].chars().count();
        let masked_away = token.len() - "[REDACTED:github_token]".len();
        assert_eq!(shown + masked_away + m.cut, n, "{again}");
    }

    #[test]
    fn a_reduced_cut_of_a_cut_counts_what_the_source_lost() {
        let source: String = (0..45_000).map(|i| format!("L{i:07}\n")).collect();
        let read = trim_output(&source, 8000);
        let reduced = reduced_output(&read, Some(source.chars().count())).unwrap();
        assert!(
            reduced.contains(&format!("\n[… {} chars cut …]\n", 405_000 - 666 - 334)),
            "{reduced}"
        );
        assert!(source.starts_with(reduced.split("\n[…").next().unwrap()));
    }

    #[test]
    fn ages_read_as_people_say_them() {
        let now = chrono::Utc::now();
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now - chrono::Duration::minutes(12), now), "12 min ago");
        assert_eq!(ago(now - chrono::Duration::hours(3), now), "3 h ago");
        assert_eq!(ago(now - chrono::Duration::days(1), now), "1 day ago");
        assert_eq!(ago(now - chrono::Duration::days(5), now), "5 days ago");
        let old = now - chrono::Duration::days(90);
        assert_eq!(ago(old, now), old.format("%Y-%m-%d").to_string());
    }

    #[test]
    fn sizes_and_ages_read_back() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(1536), "1.5 KB");
        assert_eq!(human_size(3 << 30), "3.0 GB");
        for s in ["30d", "12h", "45m"] {
            assert_eq!(describe_age(parse_age(s).unwrap()), s);
        }
        assert_eq!(parse_age("2w").unwrap(), chrono::Duration::days(14));
        assert!(parse_age("3y").is_err());
        assert!(parse_age("d").is_err());
    }
}
