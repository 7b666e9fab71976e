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
    let tail_len = max - head_len;
    let (head, tail) = (first_chars(text, head_len), last_chars(text, tail_len));
    let marker = format!("\n[… {} chars cut …]\n", n - head_len - tail_len);
    // Of the exact size: a long session keeps one of these for each output it reads.
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len());
    out.push_str(head);
    out.push_str(&marker);
    out.push_str(tail);
    out
}

/// The first `n` characters of `text` (all of it when shorter).
fn first_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// The last `n` characters of `text` (all of it when shorter), found from the end: an output
/// cut to its head and tail need not be walked through in between.
fn last_chars(text: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match text.char_indices().rev().nth(n - 1) {
        Some((i, _)) => &text[i..],
        None => text,
    }
}

/// Text from a session made safe to print on a terminal: control characters (newlines
/// included), escape sequences and bidirectional overrides are shown escaped (`\n`, `\x1b`,
/// `\u{202e}`), so that a session cannot move the cursor, recolour or hide what follows.
/// JSON output is exact and never goes through this.
pub fn safe(s: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        c.is_control()
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
    };
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
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

/// What a reader keeps of a tool output `n` characters long, of which `text` holds at least
/// the first and the last `max` characters (see `trim_output_of`); `None`: the output as it is.
/// Cut to `max` characters; or with `first_line`, for an output of an older turn read only in
/// part (see `ReadOptions::full_tail_tokens`), cut to `REDUCED_OUTPUT_CHARS`, keeping its first
/// line as a full read's cut leaves it. A summary quotes that line, and masked as a full read
/// masks it only when it ends as it ends there: a piece of a token against a cut marker is
/// masked whole (`cut_fragment`). So a first line longer than the reduced head is kept whole
/// (up to where a full read cuts it, and then against the marker, as there).
pub fn kept_output(text: &str, n: usize, max: usize, first_line: bool) -> Option<String> {
    kept(
        text,
        n,
        max,
        first_line.then_some(REDUCED_OUTPUT_CHARS.min(max)),
    )
}

/// `kept_output`, reduced to `reduced` characters when given.
fn kept(text: &str, n: usize, max: usize, reduced: Option<usize>) -> Option<String> {
    let Some(reduced) = reduced else {
        return (n > max).then(|| trim_output_of(text, max, n));
    };
    if n <= reduced {
        return None;
    }
    let short_head = first_chars(text, reduced * 2 / 3);
    if short_head.contains('\n') {
        // The first line and its newline are in the reduced head, away from its marker.
        return Some(trim_output_of(text, reduced, n));
    }
    // What a full read keeps before its marker: the whole output, or its head.
    let head_len = if n <= max { n } else { max * 2 / 3 };
    let head = first_chars(text, head_len);
    let kept = match head.find('\n') {
        Some(i) => {
            let line = &head[..=i];
            format!("{line}\n[… {} chars cut …]\n", n - line.chars().count())
        }
        // One line, kept whole by a full read.
        None if n <= max => return None,
        // One line longer than a full read's head: cut where that cut falls.
        None => format!("{head}\n[… {} chars cut …]\n", n - head_len),
    };
    // Never longer than what a full read keeps (the fit costs a part read as no more than the
    // whole, so that a turn a full read would keep whole is read again).
    (kept.len() < text.len()).then_some(kept)
}

/// How many characters of a tool output a reader keeps when it reads the output's turn only
/// in part (see `kept_output`): enough for its first line, and a little of its end.
pub const REDUCED_OUTPUT_CHARS: usize = 1000;

/// `trim_output` of a text of which `text` holds at least the first and the last
/// `max` characters (pieces cut earlier at the same `max`), `n` characters long in full: the
/// same result as cutting the full text.
pub fn trim_output_of(text: &str, max: usize, n: usize) -> String {
    if n <= max {
        return text.to_string();
    }
    let head_len = max * 2 / 3;
    let tail_len = max - head_len;
    format!(
        "{}\n[… {} chars cut …]\n{}",
        first_chars(text, head_len),
        n - head_len - tail_len,
        last_chars(text, tail_len)
    )
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

    /// Read in part, an output keeps its first line as a full read's cut leaves it, ending as
    /// it ends there: with its newline, or against the cut marker.
    #[test]
    fn an_output_read_in_part_keeps_its_first_line_as_a_full_read_does() {
        let (max, reduced) = (90, Some(30));
        let two = "short\nsecond line here and more text to go past thirty".to_string();
        for (text, want) in [
            // The first line is in the reduced head: cut as before, to head and tail.
            (two.clone(), Some(trim_output(&two, 30))),
            ("one line only".to_string(), None),
            ("ends with its line\n".to_string(), None),
            // A longer first line is kept as a full read keeps it: whole...
            ("x".repeat(90), None),
            (
                format!("{}\n{}", "y".repeat(40), "z".repeat(200)),
                Some(format!("{}\n\n[… 200 chars cut …]\n", "y".repeat(40))),
            ),
            (
                format!("{}\n{}", "é".repeat(59), "z".repeat(50)),
                Some(format!("{}\n\n[… 50 chars cut …]\n", "é".repeat(59))),
            ),
            // ...or up to a full read's cut, against the marker as there.
            (
                "x".repeat(100),
                Some(format!("{}\n[… 40 chars cut …]\n", "x".repeat(60))),
            ),
            (
                format!("{}\nrest", "y".repeat(100)),
                Some(format!("{}\n[… 45 chars cut …]\n", "y".repeat(60))),
            ),
            // Never longer than the output itself.
            (format!("{}\nrest", "y".repeat(70)), None),
        ] {
            let n = text.chars().count();
            assert_eq!(kept(&text, n, max, reduced), want, "{text:?}");
            // Read in full, the same output is cut as `trim_output` cuts it.
            let full = kept(&text, n, max, None);
            assert_eq!(
                full.unwrap_or_else(|| text.clone()),
                trim_output(&text, max)
            );
        }
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
