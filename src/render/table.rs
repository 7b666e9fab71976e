//! The tables of `list` and `status`: each column as wide as its widest cell as a terminal
//! draws it (a CJK character takes two columns), and the last column, free text, cut to what
//! the width leaves of it, so that no row wraps. The width is the terminal's, else `COLUMNS`;
//! into a pipe without `COLUMNS`, nothing is cut.

use std::io::{self, IsTerminal, Write};

use colored::Colorize;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// How a cell is coloured (after it is padded: escape codes take no room on the screen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    Plain,
    Yellow,
    Red,
}

pub struct Table {
    headers: Vec<&'static str>,
    /// Columns aligned to the right (numbers), by index.
    right: Vec<usize>,
    rows: Vec<Row>,
}

struct Row {
    cells: Vec<(String, Paint)>,
    /// Lines shown under the row, indented past its first column.
    under: Vec<Under>,
}

/// A line under a row.
pub enum Under {
    /// Shown dimmed (a directory).
    Dim(String),
    /// A dimmed label and its text, never cut (`resume: codex resume …`).
    Labelled(&'static str, String),
}

/// Free text is never cut below this many columns, however narrow the terminal.
const MIN_LAST: usize = 20;

/// Where no width is known, free text is still cut here: a first request can be a page long.
const PIPE_LAST: usize = 200;

impl Table {
    pub fn new(headers: &[&'static str], right: &[usize]) -> Table {
        Table {
            headers: headers.to_vec(),
            right: right.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row: one cell per header, already made safe to print.
    pub fn row(&mut self, cells: Vec<(String, Paint)>, under: Vec<Under>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(Row { cells, under });
    }

    /// Writes the table for a screen `width` columns wide (`None`: not cut).
    pub fn write(&self, out: &mut dyn Write, width: Option<usize>) -> io::Result<()> {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.width()).collect();
        for row in &self.rows {
            for (w, (cell, _)) in widths.iter_mut().zip(&row.cells).take(n - 1) {
                *w = (*w).max(cell.width());
            }
        }
        let fixed: usize = widths[..n - 1].iter().map(|w| w + 2).sum();
        let last = width.map_or(PIPE_LAST, |w| w.saturating_sub(fixed).max(MIN_LAST));
        let header: Vec<(String, Paint)> = self
            .headers
            .iter()
            .map(|h| (h.to_string(), Paint::Plain))
            .collect();
        let line = self.line(&header, &widths, last);
        writeln!(out, "{}", line.trim_end().bold())?;
        for row in &self.rows {
            writeln!(out, "{}", self.line(&row.cells, &widths, last).trim_end())?;
            let indent = " ".repeat(widths[0] + 2);
            let room = width.map_or(usize::MAX, |w| {
                w.saturating_sub(widths[0] + 2).max(MIN_LAST)
            });
            for u in &row.under {
                match u {
                    Under::Dim(text) => writeln!(out, "{indent}{}", cut(text, room).dimmed())?,
                    // A command to copy: whole, wrapped if it must be.
                    Under::Labelled(label, text) => {
                        writeln!(out, "{indent}{} {text}", label.dimmed())?
                    }
                }
            }
        }
        Ok(())
    }

    fn line(&self, cells: &[(String, Paint)], widths: &[usize], last: usize) -> String {
        let n = cells.len();
        let mut line = String::new();
        for (i, (cell, paint)) in cells.iter().enumerate() {
            if i + 1 == n {
                line.push_str(&cut(cell, last));
                break;
            }
            let pad = " ".repeat(widths[i] - cell.width());
            let padded = if self.right.contains(&i) {
                format!("{pad}{cell}")
            } else {
                format!("{cell}{pad}")
            };
            line.push_str(&match paint {
                Paint::Plain => padded,
                Paint::Yellow => padded.yellow().to_string(),
                Paint::Red => padded.red().to_string(),
            });
            line.push_str("  ");
        }
        line
    }
}

/// `text` in at most `columns` columns of a terminal, ending in `…` when cut.
pub fn cut(text: &str, columns: usize) -> String {
    if text.width() <= columns {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > columns {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// The width tables are cut to: the terminal's when standard output is one, else `COLUMNS`
/// when it is set (as `ls` takes it), else none.
pub fn screen_width() -> Option<usize> {
    if io::stdout().is_terminal()
        && let Ok((w, _)) = crossterm::terminal::size()
        && w > 0
    {
        return Some(w as usize);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(table: &Table, width: Option<usize>) -> Vec<String> {
        colored::control::set_override(false);
        let mut out = Vec::new();
        table.write(&mut out, width).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn sample() -> Table {
        let mut t = Table::new(&["AGENT", "SIZE", "TITLE"], &[1]);
        for (agent, size, title) in [
            (
                "claude",
                "1023.9 KB",
                "Fix the flaky parser test and then the rest of it",
            ),
            (
                "gemini",
                "12 B",
                "修复解析器中不稳定的测试，然后再处理其余部分的问题",
            ),
            ("codex", "1.0 GB", "short"),
        ] {
            t.row(
                vec![
                    (agent.into(), Paint::Plain),
                    (size.into(), Paint::Red),
                    (title.into(), Paint::Plain),
                ],
                vec![Under::Dim(format!("/home/dev/{agent}"))],
            );
        }
        t
    }

    #[test]
    fn columns_line_up_whatever_their_cells_and_no_line_outgrows_the_width() {
        for width in [30, 40, 60, 80, 200] {
            let lines = drawn(&sample(), Some(width));
            // Every row's title starts in the screen column of the header's.
            let title_col = lines[0].find("TITLE").unwrap();
            for start in ["Fix", "修复", "short"] {
                let l = lines.iter().find(|l| l.contains(start)).unwrap();
                assert_eq!(
                    l[..l.find(start).unwrap()].width(),
                    title_col,
                    "{width}: {l:?}"
                );
            }
            // Sizes are right-aligned: they end in one column.
            let ends: Vec<usize> = lines[1..]
                .iter()
                .filter(|l| !l.starts_with(' '))
                .map(|l| {
                    let size_end = l.find(" B").or(l.find(" KB")).or(l.find(" GB")).unwrap();
                    let unit = l[size_end..].split_whitespace().next().unwrap();
                    l[..size_end].width() + 1 + unit.len()
                })
                .collect();
            assert!(ends.windows(2).all(|w| w[0] == w[1]), "{width}: {lines:#?}");
            for l in &lines {
                assert!(
                    l.width() <= width.max(title_col + MIN_LAST),
                    "{width}: {l:?} is {} columns",
                    l.width()
                );
            }
        }
        // Wide enough: nothing is cut.
        let wide = drawn(&sample(), Some(200));
        assert!(wide.iter().any(|l| l.ends_with("and then the rest of it")));
        // Into a pipe: not cut either.
        assert_eq!(drawn(&sample(), None), wide);
    }

    #[test]
    fn a_cut_counts_columns_not_characters() {
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdefg", 6), "abcde…");
        assert_eq!(cut("修复解析器", 6), "修复…");
        assert_eq!(cut("修复解析器", 10), "修复解析器");
        assert!(cut("修复解析器", 5).width() <= 5);
    }
}
