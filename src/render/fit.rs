use std::io::{self, Write};

use crate::plan::{FitReport, Part};

/// The itemized budget report (dry run and `show --to`).
pub fn itemized(fit: &FitReport, budget_from: &str, out: &mut dyn Write) -> io::Result<()> {
    let part = |out: &mut dyn Write, label: &str, p: &Part| {
        writeln!(
            out,
            "  {label:<22} {:>6} tokens  {:>4} messages  {:>3} turns",
            p.tokens, p.messages, p.turns
        )
    };
    writeln!(
        out,
        "Budget: {} tokens = {budget_from}; counted with {}",
        fit.budget, fit.tokenizer
    )?;
    writeln!(
        out,
        "  {:<22} {:>6} tokens  {:>4} messages  {:>3} turns  (estimated)",
        "source", fit.source_tokens_estimate, fit.source_messages, fit.source_turns
    )?;
    writeln!(
        out,
        "  {:<22} {:>6} tokens",
        "handoff brief", fit.brief_tokens
    )?;
    part(out, "always kept", &fit.always_kept)?;
    part(out, "recent turns kept", &fit.recent_kept)?;
    writeln!(
        out,
        "  {:<22} {:>6} tokens  {:>4} messages  {:>3} turns  (estimated)",
        "left out", fit.dropped.tokens, fit.dropped.messages, fit.dropped.turns
    )?;
    writeln!(
        out,
        "  {:<22} {:>6} tokens  {} of {} points",
        "summary of left out", fit.summary_tokens, fit.summary_points_kept, fit.summary_points
    )?;
    writeln!(
        out,
        "  {:<22} {} whole, {} as one line, {} outputs trimmed ({} chars cut)",
        "tool calls",
        fit.tool_calls_whole,
        fit.tool_calls_one_line,
        fit.tool_outputs_trimmed,
        fit.tool_output_chars_cut
    )?;
    writeln!(
        out,
        "  {:<22} {:>6} tokens of {} ({:.0}%){}",
        "total",
        fit.total_tokens,
        fit.budget,
        100.0 * fit.total_tokens as f64 / fit.budget.max(1) as f64,
        if fit.degraded {
            "  [always-kept content shortened to fit]"
        } else {
            ""
        }
    )
}
