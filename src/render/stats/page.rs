//! `stats --html`: one self-contained page (no script, no font, no request at view time) with
//! the charts drawn here as inline SVG, and the tables. Every text on it comes from the report,
//! whose titles and directories are masked, and is escaped.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use chrono::{Datelike, NaiveDate};

use super::{KINDS, heading, length, percent};
use crate::commands::stats::{Figures, Report};
use crate::text::thousands;

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 300.0;
/// Room for the axes' labels.
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 40.0;
const TOP: f64 = 10.0;

/// The charts, by id and title, in page order (the browser test looks for these).
pub const CHARTS: [(&str, &str); 5] = [
    ("sessions-over-time", "Sessions over time, per agent"),
    ("tokens-over-time", "Tokens over time, per agent"),
    ("error-rate", "Tool error rate per agent"),
    ("relay-flow", "Relays between agents"),
    ("tool-kinds", "Tool calls by kind, per agent"),
];

const PALETTE: [&str; 8] = [
    "#d97757", "#10a37f", "#4285f4", "#8957e5", "#e3b341", "#db61a2", "#2aa198", "#6e7781",
];

/// A colour for each of `KINDS`, in order: nine, none the same, so no two kinds of tool call
/// look alike in a bar.
const KIND_COLORS: [&str; KINDS.len()] = [
    "#0969da", "#1a7f37", "#bf3989", "#9a6700", "#8250df", "#cf222e", "#1b7c83", "#fb8500",
    "#8c959f",
];

/// An agent's colour: the same on every chart.
fn color(agent: &str) -> &'static str {
    let names = crate::adapters::names();
    let i = names
        .iter()
        .position(|n| *n == agent)
        .unwrap_or(names.len());
    PALETTE[i % PALETTE.len()]
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

pub fn page(r: &Report) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <title>session-relay stats</title><style>{STYLE}</style></head><body>\
         <h1>session-relay stats</h1><p class=\"sub\">{}</p>",
        esc(&heading(r))
    );
    let charts = [
        over_time(r, |d| d.sessions as f64),
        over_time(r, |d| d.estimated_tokens as f64),
        error_rates(r),
        flow(r),
        tool_kinds(r),
    ];
    // Which colour is which agent, before the charts that use it.
    html.push_str(&legend(r));
    for ((id, title), svg) in CHARTS.iter().zip(charts) {
        let _ = write!(
            html,
            "<section class=\"chart\" id=\"{id}\"><h2>{title}</h2>{svg}</section>"
        );
    }
    html.push_str(&tables(r));
    html.push_str("</body></html>\n");
    html
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#1f2328;background:#fff}\
h1{font-size:22px;margin:0}.sub{color:#57606a}h2{font-size:16px;margin:18px 0 6px}\
svg{display:block;max-width:100%;height:auto;border:1px solid #d0d7de;border-radius:6px}\
svg text{font-size:12px;fill:#57606a}table{border-collapse:collapse;margin:8px 0 16px}\
td,th{padding:3px 8px;border-bottom:1px solid #eaeef2;text-align:right;font-size:13px}\
td:first-child,th:first-child{text-align:left}.legend span{display:inline-block;margin-right:14px}\
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}";

fn svg_open(height: f64, label: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" \
         width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">",
        esc(label)
    )
}

fn none(height: f64) -> String {
    format!(
        "{}<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">nothing in range</text></svg>",
        svg_open(height, "nothing in range"),
        WIDTH / 2.0,
        height / 2.0
    )
}

/// The bucket a day falls in: the day itself over a short range, its week's Monday over a
/// longer one (a bar a day would be too thin to see).
fn bucket(d: NaiveDate, weekly: bool) -> NaiveDate {
    if weekly {
        d - chrono::Days::new(u64::from(d.weekday().num_days_from_monday()))
    } else {
        d
    }
}

/// Stacked bars of `value` per day (or week) and agent.
fn over_time(r: &Report, value: impl Fn(&crate::commands::stats::Day) -> f64) -> String {
    let parsed: Vec<(NaiveDate, &str, f64)> = r
        .days
        .iter()
        .filter_map(|d| {
            let date = NaiveDate::parse_from_str(&d.date, "%Y-%m-%d").ok()?;
            Some((date, d.agent.as_str(), value(d)))
        })
        .collect();
    let (Some(first), Some(last)) = (
        parsed.iter().map(|p| p.0).min(),
        parsed.iter().map(|p| p.0).max(),
    ) else {
        return none(HEIGHT);
    };
    let weekly = (last - first).num_days() > 120;
    let mut stacks: BTreeMap<NaiveDate, BTreeMap<&str, f64>> = BTreeMap::new();
    for (d, agent, v) in &parsed {
        *stacks
            .entry(bucket(*d, weekly))
            .or_default()
            .entry(agent)
            .or_default() += v;
    }
    let start = bucket(first, weekly);
    let step = if weekly { 7 } else { 1 };
    let slots = ((bucket(last, weekly) - start).num_days() / step + 1).max(1) as f64;
    let top = stacks
        .values()
        .map(|s| s.values().sum::<f64>())
        .fold(0.0, f64::max)
        .max(1.0);
    let plot_w = WIDTH - LEFT - 10.0;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let bar_w = (plot_w / slots).max(1.0);
    let mut svg = svg_open(HEIGHT, "stacked bars per agent over time");
    axes(&mut svg, top, plot_h);
    for (d, stack) in &stacks {
        let i = ((*d - start).num_days() / step) as f64;
        let x = LEFT + i * plot_w / slots;
        let mut y = TOP + plot_h;
        for (agent, v) in stack {
            let h = v / top * plot_h;
            y -= h;
            let _ = write!(
                svg,
                "<rect class=\"mark\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}: {}</title></rect>",
                (bar_w - 1.0).max(1.0),
                h.max(0.5),
                color(agent),
                d,
                esc(agent),
                thousands(*v as u64)
            );
        }
    }
    let label = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
    let _ = write!(
        svg,
        "<text x=\"{LEFT}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}{}</text></svg>",
        HEIGHT - 12.0,
        label(start),
        WIDTH - 10.0,
        HEIGHT - 12.0,
        label(bucket(last, weekly)),
        if weekly { " (weeks)" } else { "" }
    );
    svg
}

/// The value axis: a base line and its top value.
fn axes(svg: &mut String, top: f64, plot_h: f64) {
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#8c959f\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{0}\" stroke=\"#8c959f\"/>\
         <text x=\"{2}\" y=\"{3}\" text-anchor=\"end\">{4}</text>\
         <text x=\"{2}\" y=\"{0}\" text-anchor=\"end\">0</text>",
        TOP + plot_h,
        WIDTH - 10.0,
        LEFT - 6.0,
        TOP + 12.0,
        thousands(top as u64)
    );
}

/// The agents that made tool calls, with their figures: one bar each.
fn agents_with_calls(r: &Report) -> Vec<(&str, &Figures)> {
    r.agents
        .iter()
        .filter(|g| g.figures.tool_calls_total > 0)
        .map(|g| (g.name.as_str(), &g.figures))
        .collect()
}

/// One horizontal bar per agent: its tool errors per call.
fn error_rates(r: &Report) -> String {
    let rows = agents_with_calls(r);
    if rows.is_empty() {
        return none(120.0);
    }
    let row_h = 30.0;
    let height = rows.len() as f64 * row_h + 20.0;
    let top = rows
        .iter()
        .filter_map(|(_, f)| f.error_rate)
        .fold(0.0, f64::max)
        .max(0.01);
    let left = 120.0;
    let plot_w = WIDTH - left - 120.0;
    let mut svg = svg_open(height, "tool error rate per agent");
    for (i, (agent, f)) in rows.iter().enumerate() {
        let y = 10.0 + i as f64 * row_h;
        let rate = f.error_rate.unwrap_or(0.0);
        let w = (rate / top * plot_w).max(1.0);
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
             <rect class=\"mark\" x=\"{left}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{} ({} of {})</text>",
            left - 8.0,
            y + 16.0,
            esc(agent),
            row_h - 8.0,
            color(agent),
            left + w + 6.0,
            y + 16.0,
            percent(f.error_rate),
            thousands(f.tool_errors as u64),
            thousands(f.tool_calls_total as u64)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Sources on the left, targets on the right, a band for each pair as wide as its relays.
fn flow(r: &Report) -> String {
    if r.flows.is_empty() {
        return none(120.0);
    }
    let total: usize = r.flows.iter().map(|f| f.relays).sum();
    let froms: BTreeSet<&str> = r.flows.iter().map(|f| f.from.as_str()).collect();
    let tos: BTreeSet<&str> = r.flows.iter().map(|f| f.to.as_str()).collect();
    let height = 320.0;
    let gap = 12.0;
    let usable = |n: usize| height - 40.0 - gap * (n.saturating_sub(1)) as f64;
    let scale = usable(froms.len().max(tos.len())) / total as f64;
    // Each node's top, and how far down it its bands have reached.
    let place = |nodes: &BTreeSet<&str>, side: fn(&crate::commands::stats::Flow) -> &str| {
        let mut y = 20.0;
        let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        for n in nodes {
            let size: usize = r
                .flows
                .iter()
                .filter(|f| side(f) == *n)
                .map(|f| f.relays)
                .sum();
            out.insert(n.to_string(), (y, size as f64 * scale));
            y += size as f64 * scale + gap;
        }
        out
    };
    let left_nodes = place(&froms, |f| f.from.as_str());
    let right_nodes = place(&tos, |f| f.to.as_str());
    let (x0, x1, node_w) = (200.0, WIDTH - 200.0, 14.0);
    let mut svg = svg_open(height, "relays from agent to agent");
    let mut used_l: BTreeMap<&str, f64> = BTreeMap::new();
    let mut used_r: BTreeMap<&str, f64> = BTreeMap::new();
    for f in &r.flows {
        let h = f.relays as f64 * scale;
        let ly = left_nodes[&f.from].0 + *used_l.get(f.from.as_str()).unwrap_or(&0.0);
        let ry = right_nodes[&f.to].0 + *used_r.get(f.to.as_str()).unwrap_or(&0.0);
        *used_l.entry(&f.from).or_default() += h;
        *used_r.entry(&f.to).or_default() += h;
        let (a, b) = (x0 + node_w, x1);
        let mid = (a + b) / 2.0;
        let _ = write!(
            svg,
            "<path class=\"mark\" d=\"M{a},{ly:.1} C{mid},{ly:.1} {mid},{ry:.1} {b},{ry:.1} L{b},{:.1} C{mid},{:.1} {mid},{:.1} {a},{:.1} Z\" fill=\"{}\" fill-opacity=\"0.45\"><title>{} -> {}: {} relays, {} continued</title></path>",
            ry + h,
            ry + h,
            ly + h,
            ly + h,
            color(&f.from),
            esc(&f.from),
            esc(&f.to),
            f.relays,
            f.continued
        );
    }
    for (nodes, x, anchor, tx) in [
        (&left_nodes, x0, "end", x0 - 8.0),
        (&right_nodes, x1, "start", x1 + node_w + 8.0),
    ] {
        for (agent, (y, h)) in nodes {
            let _ = write!(
                svg,
                "<rect class=\"mark\" x=\"{x}\" y=\"{y:.1}\" width=\"{node_w}\" height=\"{:.1}\" fill=\"{}\"/>\
                 <text x=\"{tx}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{} ({})</text>",
                h.max(1.0),
                color(agent),
                y + h / 2.0 + 4.0,
                esc(agent),
                thousands((h / scale).round() as u64)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// One stacked horizontal bar per agent: its calls by kind, as shares.
fn tool_kinds(r: &Report) -> String {
    let rows = agents_with_calls(r);
    if rows.is_empty() {
        return none(120.0);
    }
    let row_h = 30.0;
    let height = rows.len() as f64 * row_h + 50.0;
    let (left, plot_w) = (120.0, WIDTH - 140.0);
    let mut svg = svg_open(height, "tool calls by kind per agent");
    for (i, (agent, f)) in rows.iter().enumerate() {
        let y = 10.0 + i as f64 * row_h;
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + 16.0,
            esc(agent)
        );
        let mut x = left;
        for (k, kind) in KINDS.iter().enumerate() {
            let n = f.tool_calls.get(*kind).copied().unwrap_or(0);
            if n == 0 {
                continue;
            }
            let w = n as f64 / f.tool_calls_total as f64 * plot_w;
            let _ = write!(
                svg,
                "<rect class=\"mark\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {kind}: {}</title></rect>",
                row_h - 8.0,
                KIND_COLORS[k],
                esc(agent),
                thousands(n as u64)
            );
            x += w;
        }
    }
    let y = rows.len() as f64 * row_h + 30.0;
    for (k, kind) in KINDS.iter().enumerate() {
        let x = left + k as f64 * 95.0;
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\">{kind}</text>",
            y - 9.0,
            KIND_COLORS[k],
            x + 14.0
        );
    }
    svg.push_str("</svg>");
    svg
}

fn legend(r: &Report) -> String {
    let mut out = String::from("<p class=\"legend\">");
    for g in &r.agents {
        let _ = write!(
            out,
            "<span><i style=\"background:{}\"></i>{}</span>",
            color(&g.name),
            esc(&g.name)
        );
    }
    out.push_str("</p>");
    out
}

fn table(title: &str, headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut out = format!("<h2>{}</h2><table><tr>", esc(title));
    for h in headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", esc(&cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

fn figures_row(name: &str, f: &Figures) -> Vec<String> {
    let t = |n: usize| thousands(n as u64);
    vec![
        name.to_string(),
        t(f.sessions),
        t(f.turns),
        t(f.user_messages),
        t(f.tool_calls_total),
        t(f.tool_errors),
        percent(f.error_rate),
        t(f.interruptions),
        t(f.rejected),
        t(f.corrections),
        thousands(f.recorded_tokens),
        thousands(f.estimated_tokens),
        length(f.median_seconds),
        t(f.relays_in),
        t(f.relays_out),
        format!(
            "{} of {} ({})",
            f.relays_in_continued,
            f.relays_in_known,
            percent(f.continued_rate)
        ),
    ]
}

const FIGURE_HEADERS: [&str; 16] = [
    "",
    "sessions",
    "turns",
    "user messages",
    "tool calls",
    "errors",
    "error rate",
    "interruptions",
    "rejected",
    "corrections",
    "context tokens",
    "~tokens",
    "median length",
    "relays in",
    "relays out",
    "continued",
];

fn tables(r: &Report) -> String {
    let mut agents: Vec<Vec<String>> = r
        .agents
        .iter()
        .map(|g| figures_row(&g.name, &g.figures))
        .collect();
    agents.push(figures_row("all", &r.total));
    let mut out = table("Per agent", &FIGURE_HEADERS, agents);
    let mut kinds = vec!["agent"];
    kinds.extend(KINDS);
    out.push_str(&table(
        "Tool calls by kind",
        &kinds,
        r.agents
            .iter()
            .map(|g| {
                let mut row = vec![g.name.clone()];
                row.extend(
                    KINDS.iter().map(|k| {
                        thousands(g.figures.tool_calls.get(*k).copied().unwrap_or(0) as u64)
                    }),
                );
                row
            })
            .collect(),
    ));
    out.push_str(&table(
        "Per project",
        &FIGURE_HEADERS,
        r.projects
            .iter()
            .map(|g| figures_row(&g.name, &g.figures))
            .collect(),
    ));
    out.push_str(&table(
        "Per chain of relayed sessions",
        &FIGURE_HEADERS,
        r.chains
            .iter()
            .map(|c| {
                let title = c.title.as_deref().map(|t| crate::text::one_line_cut(t, 60));
                let name = match title {
                    Some(t) => format!("{}: {t}", c.agents.join(" -> ")),
                    None => c.agents.join(" -> "),
                };
                figures_row(&name, &c.figures)
            })
            .collect(),
    ));
    out
}
