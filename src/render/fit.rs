use std::io::{self, Write};

use crate::plan::{Part, PlanReport};

fn thousands(n: usize) -> String {
    crate::text::thousands(n as u64)
}

/// How tool calls travel (structured or as text) and how much of the kept ones is kept (whole
/// or one line): one line, one vocabulary.
pub fn tool_calls(plan: &PlanReport) -> String {
    let f = &plan.fit;
    let mut line = format!(
        "{} structured, {} as text; kept {} whole, {} as one line",
        thousands(plan.shape.structured_tool_calls),
        thousands(plan.shape.text_tool_calls),
        thousands(f.tool_calls_whole),
        thousands(f.tool_calls_one_line)
    );
    if f.tool_outputs_trimmed > 0 {
        line.push_str(&format!(
            "; {} outputs trimmed ({} characters cut)",
            thousands(f.tool_outputs_trimmed),
            thousands(f.tool_output_chars_cut)
        ));
    }
    line
}

/// The itemized budget report (dry run and `show --to`): where every turn of the source went,
/// in estimated source tokens, and what was written, in exact tokens of the target.
pub fn itemized(plan: &PlanReport, out: &mut dyn Write) -> io::Result<()> {
    let fit = &plan.fit;
    writeln!(
        out,
        "Budget: {} tokens = {}; counted with {}",
        thousands(fit.budget),
        crate::text::safe(&plan.budget_from),
        fit.tokenizer
    )?;
    writeln!(
        out,
        "  {:<16} {:>6} {:>9} {:>15} {:>15}",
        "", "turns", "messages", "source tokens", "written tokens"
    )?;
    let row = |out: &mut dyn Write, label: &str, p: &Part, written: String| {
        writeln!(
            out,
            "  {label:<16} {:>6} {:>9} {:>15} {:>15}",
            thousands(p.turns),
            thousands(p.messages),
            format!("~{}", thousands(p.source_tokens)),
            written
        )
    };
    row(
        out,
        "kept verbatim",
        &fit.verbatim,
        thousands(fit.verbatim.written_tokens),
    )?;
    row(
        out,
        "kept shortened",
        &fit.shortened,
        thousands(fit.shortened.written_tokens),
    )?;
    row(
        out,
        "summarized",
        &fit.summarized,
        thousands(fit.summary_tokens),
    )?;
    row(out, "left out", &fit.left_out, "-".into())?;
    row(out, "= source", &fit.source, String::new())?;
    writeln!(
        out,
        "  {:<16} {:>48}",
        "handoff brief",
        thousands(fit.brief_tokens)
    )?;
    writeln!(
        out,
        "  {:<16} {:>48}",
        "total written",
        format!(
            "{} of {} ({:.0}%)",
            thousands(fit.total_tokens),
            thousands(fit.budget),
            100.0 * fit.total_tokens as f64 / fit.budget.max(1) as f64
        )
    )?;
    if fit.tokenizer == "estimate" {
        writeln!(
            out,
            "  source tokens are estimated (characters / 4); written tokens with the calibrated estimate (see docs/budget-and-fit.md)"
        )?;
    } else {
        writeln!(
            out,
            "  source tokens are estimated (characters / 4); written tokens are exact ({})",
            fit.tokenizer
        )?;
    }
    if fit.summary_points > 0 {
        writeln!(
            out,
            "  summary          {} of {} points from the left-out turns",
            thousands(fit.summary_points_kept),
            thousands(fit.summary_points)
        )?;
    }
    writeln!(out, "  tool calls       {}", tool_calls(plan))?;
    if fit.degraded {
        writeln!(
            out,
            "  note             the always-kept turns were shortened to fit"
        )?;
    }
    Ok(())
}
