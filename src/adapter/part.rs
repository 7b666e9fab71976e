//! Reading a session in part (`ReadOptions::full_tail_tokens`), for the readers that learn in a
//! first pass which lines they will keep (pi's and Qwen Code's branch, Copilot CLI's log): the
//! newest turns are chosen before the second pass, so each line's outputs are cut as they are
//! parsed, in full in the tail and reduced before it, and no line is read a third time.

use std::path::Path;

use anyhow::Result;

use super::{OutputCut, OutputMask, ReadOptions};

/// What a first pass learns of a line a reader will keep, to choose the newest turns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineSize {
    pub line: usize,
    /// Its length in bytes.
    pub bytes: usize,
    /// It starts a turn: the person's words.
    pub turn: bool,
}

/// The first line of the newest turns that hold about `tail` tokens, counted back from the last
/// line to the start of a turn, at four bytes a token and an output counted at most twice what
/// the relay keeps of it (`max`): the lines before it are read in part. 0 when the tail holds
/// every line. Where the tail starts changes no relay, only whether the fit reads the session
/// again (it does when it wants whole a turn read in part).
pub fn tail_start(lines: &[LineSize], tail: usize, max: usize) -> usize {
    let mut tokens = 0usize;
    for l in lines.iter().rev() {
        tokens += (l.bytes.min(max.saturating_mul(2)) + 200) / 4;
        if l.turn && tokens >= tail {
            return l.line;
        }
    }
    0
}

/// How a reader cuts the tool outputs of each line, as `ReadOptions` ask: copied to the
/// threads that parse the lines.
#[derive(Clone, Copy)]
pub struct Cuts<'a> {
    max: Option<usize>,
    /// With a tail: its first line (see `tail_start`).
    tail_from: Option<usize>,
    mask: Option<&'a dyn OutputMask>,
}

impl<'a> Cuts<'a> {
    /// For `opts`, the lines the reader keeps being `lines` in file order (read only when
    /// `opts` ask for a tail).
    pub fn new(opts: &'a ReadOptions, lines: &[LineSize]) -> Cuts<'a> {
        let tail_from = match (opts.max_tool_output, opts.full_tail_tokens) {
            (Some(max), Some(tail)) => Some(tail_start(lines, tail, max)),
            _ => None,
        };
        Cuts {
            max: opts.max_tool_output,
            tail_from,
            mask: opts.mask.as_ref().map(|m| &*m.0),
        }
    }

    /// `new`, the sizes of the lines kept asked of `sizes` only when the options want a tail.
    pub fn of<I: IntoIterator<Item = LineSize>>(
        opts: &'a ReadOptions,
        sizes: impl FnOnce() -> I,
    ) -> Cuts<'a> {
        let sizes: Vec<LineSize> = match Cuts::want_sizes(opts) {
            true => sizes().into_iter().collect(),
            false => Vec::new(),
        };
        Cuts::new(opts, &sizes)
    }

    /// Whether the options ask for a tail (`Cuts::new` then reads the lines' sizes).
    pub fn want_sizes(opts: &ReadOptions) -> bool {
        opts.max_tool_output.is_some() && opts.full_tail_tokens.is_some()
    }

    /// How the outputs of line `no` are cut; `None`: not at all.
    pub fn cut(&self, no: usize) -> Option<OutputCut<'a>> {
        self.max.map(|max| OutputCut {
            max,
            reduced: self.tail_from.is_some_and(|t| no < t),
            mask: self.mask,
        })
    }
}

/// The progress step of `line_sizes`: the read after it is `reading`.
pub const SIZE_STEP: &str = "measuring the turns of";

/// Every line's size and whether it starts a turn, as `measure` tells them from its text (a
/// line that makes no message may count as 0 bytes), for a reader that keeps every line and
/// has no first pass of its own.
pub fn line_sizes(
    path: &Path,
    measure: impl Fn(&str) -> (usize, bool) + Sync,
) -> Result<Vec<LineSize>> {
    let mut sizes = Vec::new();
    crate::jsonl::for_each_line(
        path,
        crate::jsonl::Pass {
            step: Some(SIZE_STEP),
            ..Default::default()
        },
        |no, text| {
            let (bytes, turn) = measure(text);
            Some(LineSize {
                line: no,
                bytes,
                turn,
            })
        },
        |_, _| unreachable!("every line is sized without a parse"),
        |_, line| {
            if let crate::jsonl::Line::Json(size) = line {
                sizes.push(size);
            }
            Ok(())
        },
    )?;
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail starts at the turn that takes the count past the tokens asked for; short of
    /// them, every line is in it.
    #[test]
    fn the_tail_starts_at_a_turn_past_the_tokens_asked() {
        let line = |line, bytes, turn| LineSize { line, bytes, turn };
        let lines = [
            line(1, 800, true),
            line(2, 4000, false),
            line(3, 800, true),
            line(4, 100_000, false),
        ];
        // Line 4 counts as 2 * 8000 bytes: 4,050 tokens; line 3 takes it to 4,300.
        assert_eq!(tail_start(&lines, 4300, 8000), 3);
        assert_eq!(tail_start(&lines, 4301, 8000), 1);
        assert_eq!(tail_start(&lines, 1_000_000, 8000), 0);
        assert_eq!(tail_start(&lines, 0, 8000), 3);
    }
}
