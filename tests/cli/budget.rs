//! The budget fitter over generated sessions of random shapes and sizes: the relayed session
//! never exceeds its budget, keeps what must survive, never splits a tool call from its result,
//! and is deterministic.

use std::collections::HashMap;

use crate::common::Rng;

use session_relay::adapters;
use session_relay::model::{Message, Role, Session, Timestamp, Todo, TodoStatus};
use session_relay::plan::brief::{BriefInput, GitState, brief};
use session_relay::plan::fit::{FitParams, cost, fit};
use session_relay::plan::shape::shape;
use session_relay::plan::snapshot::Snapshot;
use session_relay::tokens::Tokenizer;

const WORDS: &[&str] = &[
    "parser", "fix", "the", "tests", "we", "must", "never", "drop", "lines", "always", "prefer",
    "small", "commits", "module", "error", "returns", "result", "config", "file", "refactor",
    "decided", "to", "use", "rayon", "instead", "of", "threads", "café", "日本", "😀", "done",
];

fn text(r: &mut Rng, words: u64) -> String {
    let mut s = String::new();
    for i in 0..words.max(1) {
        if i > 0 {
            s.push(if r.chance(8) { '.' } else { ' ' });
            if s.ends_with('.') {
                s.push(' ');
            }
        }
        s.push_str(WORDS[r.below(WORDS.len() as u64) as usize]);
    }
    s
}

fn session(r: &mut Rng, case: usize) -> Session {
    let agent = if r.chance(50) { "claude" } else { "codex" };
    let mut s = Session::new(agent, "generated", format!("gen-{case}"));
    s.cwd = Some("/nonexistent/generated/project".into());
    let turns = 1 + r.below(30);
    let mut sec = 0u64;
    let mut ts = |r: &mut Rng| {
        sec += 1 + r.below(5);
        Some(Timestamp::parse(&format!(
            "2026-11-01T{:02}:{:02}:{:02}.000Z",
            sec / 3600 % 24,
            sec / 60 % 60,
            sec % 60
        )))
    };
    let mut call_n = 0;
    if r.chance(20) {
        let t = ts(r);
        s.messages.push(
            Message::new(Role::System, text(r, 20))
                .with_time(t)
                .with_kind(session_relay::model::MessageKind::CompactSummary),
        );
    }
    for _ in 0..turns {
        let t = ts(r);
        let words = if r.chance(10) {
            400 + r.below(1500)
        } else {
            3 + r.below(60)
        };
        s.messages
            .push(Message::new(Role::User, text(r, words)).with_time(t));
        for _ in 0..r.below(4) {
            if r.chance(30) {
                let t = ts(r);
                s.messages
                    .push(Message::new(Role::Reasoning, text(r, 30)).with_time(t));
            }
            if r.chance(60) {
                let t = ts(r);
                let w = 5 + r.below(120);
                s.messages
                    .push(Message::new(Role::Assistant, text(r, w)).with_time(t));
            }
            // Tool calls, sometimes two in parallel with results in reverse order.
            let parallel = if r.chance(25) { 2 } else { 1 };
            if r.chance(70) {
                let mut ids = Vec::new();
                for _ in 0..parallel {
                    call_n += 1;
                    let id = format!("call_{call_n}");
                    let names = [
                        "Bash",
                        "Read",
                        "exec_command",
                        "shell",
                        "apply_patch",
                        "Edit",
                        "web_search",
                    ];
                    let name = names[r.below(names.len() as u64) as usize];
                    let mut c = Message::new(Role::ToolCall, "").with_time(ts(r));
                    c.tool_call_id = Some(id.clone());
                    c.tool_name = Some(name.into());
                    c.tool_input = Some(match name {
                        "shell" => serde_json::json!({"command": ["bash", "-lc", text(r, 4)]}),
                        "exec_command" => serde_json::json!({"cmd": text(r, 4)}),
                        "apply_patch" => serde_json::json!(format!(
                            "*** Begin Patch\n*** Update File: src/{}.rs\n@@\n-a\n+b\n*** End Patch",
                            call_n
                        )),
                        _ => {
                            serde_json::json!({"command": text(r, 3), "file_path": format!("/p/{call_n}.rs")})
                        }
                    });
                    s.messages.push(c);
                    ids.push(id);
                }
                if parallel == 2 {
                    ids.reverse();
                }
                for id in ids {
                    let words = if r.chance(15) {
                        3000 + r.below(6000)
                    } else {
                        r.below(200)
                    };
                    let mut res = Message::new(Role::ToolResult, text(r, words)).with_time(ts(r));
                    res.tool_call_id = Some(id);
                    res.is_error = r.chance(15);
                    s.messages.push(res);
                }
            }
        }
        if r.chance(80) {
            let t = ts(r);
            let w = 5 + r.below(80);
            s.messages
                .push(Message::new(Role::Assistant, text(r, w)).with_time(t));
        }
    }
    // Orphans on both sides, as real sessions have.
    if r.chance(15) {
        let mut c = Message::new(Role::ToolCall, "").with_time(ts(r));
        c.tool_call_id = Some("orphan_call".into());
        c.tool_name = Some("Bash".into());
        c.tool_input = Some(serde_json::json!({"command": "sleep 100"}));
        s.messages.push(c);
    }
    for i in 0..r.below(7) {
        let status = [
            TodoStatus::Pending,
            TodoStatus::InProgress,
            TodoStatus::Completed,
        ][r.below(3) as usize];
        s.todos.push(Todo {
            text: format!("todo {i}: {}", text(r, 4)),
            status,
        });
    }
    for i in 0..r.below(12) {
        s.files_touched
            .push(format!("/nonexistent/generated/project/src/file_{i}.rs"));
    }
    s.created = s.messages.first().and_then(|m| m.timestamp.clone());
    s.updated = s.messages.last().and_then(|m| m.timestamp.clone());
    s.pair_tool_calls();
    s
}

fn check_pairs(out: &Session) -> Result<(), String> {
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut results: HashMap<&str, usize> = HashMap::new();
    for m in &out.messages {
        match (m.role, m.tool_call_id.as_deref()) {
            (Role::ToolCall, Some(id)) => *calls.entry(id).or_default() += 1,
            (Role::ToolResult, Some(id)) => *results.entry(id).or_default() += 1,
            (Role::ToolCall | Role::ToolResult, None) => {
                return Err("tool message without id".into());
            }
            _ => {}
        }
    }
    if calls != results || calls.values().any(|&n| n != 1) {
        return Err(format!("calls {calls:?} vs results {results:?}"));
    }
    Ok(())
}

#[test]
fn fitted_sessions_respect_the_budget_and_keep_what_matters() {
    let mut r = Rng(0x5e55_1011_2e1a_7001);
    let mut ok = 0;
    let mut filled = 0;
    let cases = crate::common::count(60, 300);
    for case in 0..cases {
        let source = session(&mut r, case);
        // Every registered agent as a target, with its own way of counting.
        let names = adapters::names();
        let target = adapters::by_name(names[r.index(names.len())]).unwrap();
        let tokenizer = target.default_tokenizer();
        let facts = session_relay::model::files::FileFacts::of(&source);
        let cwd = source.cwd.as_deref().unwrap();
        let snapshot = Snapshot::take(Some(&facts), cwd, Some(cwd), GitState::default());
        let brief_text = brief(&BriefInput {
            session: &source,
            source_display: "Generated",
            title: "a title",
            snapshot: &snapshot.render(Some(20)),
            folded: None,
        });
        let (shaped, _) = shape(
            &source,
            source.messages.clone(),
            target,
            "new-id",
            brief_text.clone(),
        );
        let params = FitParams {
            budget: 300 + r.below(30_000) as usize,
            tokenizer,
            recent_turns: 1 + r.below(10) as usize,
            summary_max_tokens: 20 + r.below(2000) as usize,
            tool_call_keep_recent: r.below(15) as usize,
        };
        let first = fit(shaped.clone(), brief_text.clone(), &params);
        let (out, report) = match first {
            Ok(v) => v,
            Err(e) => {
                // Only a budget below the always-kept layer may be refused, and then a larger
                // one must work.
                assert!(e.to_string().contains("too small"), "case {case}: {e}");
                let bigger = FitParams {
                    budget: 200_000,
                    ..params.clone()
                };
                fit(shaped.clone(), brief_text.clone(), &bigger)
                    .unwrap_or_else(|e| panic!("case {case}: {e}"));
                continue;
            }
        };
        ok += 1;
        let counted: usize = out.messages.iter().map(|m| cost(tokenizer, m)).sum();
        assert_eq!(
            counted, report.total_tokens,
            "case {case}: report matches the count"
        );
        assert!(
            counted <= params.budget,
            "case {case}: {counted} > {}",
            params.budget
        );

        let head = |s: &str| s.chars().take(1000).collect::<String>();
        let first_request = source.first_user_prompt().unwrap();
        let out_users: Vec<&Message> = out
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .collect();
        assert!(
            out_users[0].content.starts_with(&head(first_request)),
            "case {case}: first request lost"
        );
        let last_user = source
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .unwrap();
        assert!(
            out_users
                .last()
                .unwrap()
                .content
                .starts_with(&head(&last_user.content)),
            "case {case}: last user message lost"
        );
        // What follows the last user message is all there (tools possibly shortened).
        let brief_msg = &out.messages[0];
        assert_eq!(brief_msg.kind.map(|k| k.as_str()), Some("handoff_brief"));
        for t in source
            .todos
            .iter()
            .filter(|t| t.status != TodoStatus::Completed)
        {
            assert!(
                brief_msg.content.contains(&t.text),
                "case {case}: open todo {} lost",
                t.text
            );
        }
        // Every file changed is in the brief's snapshot, by name (at most 20 here).
        if snapshot.files.len() <= 20 {
            for f in &snapshot.files {
                assert!(
                    brief_msg.content.contains(&format!("  {}: ", f.name)),
                    "case {case}: file {} lost",
                    f.path
                );
            }
        }
        check_pairs(&out).unwrap_or_else(|e| panic!("case {case}: {e}"));
        // The report adds up: every source turn and message is kept, summarized or left out.
        let mut sum = report.verbatim;
        for p in [report.shortened, report.summarized, report.left_out] {
            sum.turns += p.turns;
            sum.messages += p.messages;
            sum.source_tokens += p.source_tokens;
        }
        assert_eq!(
            (sum.turns, sum.messages, sum.source_tokens),
            (
                report.source.turns,
                report.source.messages,
                report.source.source_tokens
            ),
            "case {case}: parts add up"
        );
        // Messages as `list` and `show` count them in the source: the report's source is the
        // session the user knows.
        assert_eq!(
            report.source.messages,
            source.message_count(),
            "case {case}: the source's messages, as the listing counts them"
        );
        assert_eq!(
            report.total_tokens,
            report.brief_tokens
                + report.verbatim.written_tokens
                + report.shortened.written_tokens
                + report.summary_tokens,
            "case {case}: written parts add up"
        );
        // A source larger than the budget fills at least 85% of it. "Larger" is what the fit
        // could keep at most: every turn whole.
        let (_, everything) = fit(
            shaped.clone(),
            brief_text.clone(),
            &FitParams {
                budget: usize::MAX / 4,
                ..params.clone()
            },
        )
        .unwrap();
        if everything.total_tokens > params.budget {
            assert!(
                report.total_tokens * 100 >= params.budget * 85,
                "case {case}: {} of {} used ({}% ); {report:?}",
                report.total_tokens,
                params.budget,
                report.total_tokens * 100 / params.budget
            );
            filled += 1;
        }

        let again = fit(shaped.clone(), brief_text, &params).unwrap();
        assert_eq!(again.0, out, "case {case}: deterministic output");
        assert_eq!(again.1, report, "case {case}: deterministic report");
    }
    assert!(
        ok > cases * 7 / 10,
        "only {ok} of {cases} budgets were feasible"
    );
    assert!(
        filled > cases / 4,
        "only {filled} cases had a source larger than the budget"
    );
}

#[test]
fn a_session_that_fits_is_relayed_whole() {
    let mut r = Rng(42);
    let source = session(&mut r, 0);
    let target = adapters::by_name("codex").unwrap();
    let (shaped, _) = shape(
        &source,
        source.messages.clone(),
        target,
        "id",
        "brief".into(),
    );
    let params = FitParams {
        budget: 10_000_000,
        tokenizer: Tokenizer::O200k,
        recent_turns: 1000,
        summary_max_tokens: 1000,
        tool_call_keep_recent: 100_000,
    };
    let (out, report) = fit(shaped.clone(), "brief".into(), &params).unwrap();
    assert_eq!(report.summarized.turns + report.left_out.turns, 0);
    assert_eq!(report.shortened.turns, 0);
    assert_eq!(report.tool_calls_one_line, 0);
    // Everything but the preamble, which the brief replaces, and over-long outputs trimmed.
    assert_eq!(out.messages.len(), shaped.messages.len());
}

#[test]
fn long_sessions_keep_recent_turns_and_summarize_the_rest() {
    let mut s = Session::new("codex", "generated", "long");
    s.cwd = Some("/x".into());
    for i in 0..60 {
        s.messages.push(Message::new(
            Role::User,
            format!("Request number {i}: please refactor module {i}"),
        ));
        s.messages.push(Message::new(
            Role::Assistant,
            format!(
                "We decided to split module {i} into two parts. {}",
                "detail ".repeat(60)
            ),
        ));
    }
    let target = adapters::by_name("claude").unwrap();
    let (shaped, _) = shape(&s, s.messages.clone(), target, "id", "brief".into());
    let params = FitParams {
        budget: 3000,
        tokenizer: Tokenizer::Estimate,
        recent_turns: 5,
        summary_max_tokens: 600,
        tool_call_keep_recent: 5,
    };
    let (out, report) = fit(shaped.clone(), "brief".into(), &params).unwrap();
    // The newest turns (at least `recent_turns`) whole, older ones shortened, the rest
    // summarized; together every turn.
    assert!(report.verbatim.turns >= 5, "{report:?}");
    assert_eq!(
        report.verbatim.turns
            + report.shortened.turns
            + report.summarized.turns
            + report.left_out.turns,
        60,
        "{report:?}"
    );
    assert!(report.total_tokens * 100 >= 3000 * 85, "{report:?}");
    let users: Vec<&str> = out
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(users[0], "Request number 0: please refactor module 0");
    assert_eq!(
        *users.last().unwrap(),
        "Request number 59: please refactor module 59"
    );
    for i in 55..60 {
        let whole = format!(
            "We decided to split module {i} into two parts. {}",
            "detail ".repeat(60)
        );
        assert!(
            out.messages.iter().any(|m| m.content == whole),
            "turn {i} kept whole"
        );
    }
    let summary = out
        .messages
        .iter()
        .find(|m| m.kind.map(|k| k.as_str()) == Some("relay_summary"))
        .unwrap();
    assert!(
        summary.content.contains("] User asked: Request number "),
        "{}",
        summary.content
    );
    assert!(
        summary.content.contains("Summary of turns 1 to"),
        "says which turns: {}",
        summary.content
    );
    assert!(
        summary
            .content
            .contains("Decision: We decided to split module")
    );
    assert!(report.summary_tokens <= 600);
}

/// A long session in which the user states one firm rule halfway, among many weaker
/// preferences and thousands of ordinary requests.
fn long_session_with_a_rule_halfway(turns: usize) -> Session {
    let mut s = Session::new("claude", "generated", "long-rule");
    s.cwd = Some("/nonexistent/long".into());
    let output: String = (0..40)
        .map(|i| format!("src/module_{i:02}.rs:{i}: fn item_{i}() -> Result<(), Error>\n"))
        .collect();
    for i in 0..turns {
        let mut request = format!("Please implement feature {i} in module m{}", i % 50);
        if i == turns / 2 {
            request.push_str(". From now on we must never force-push to the release branch.");
        } else if i % 37 == 0 {
            request.push_str(&format!(". I prefer short names in module m{}", i % 50));
        }
        s.messages.push(Message::new(Role::User, request));
        let mut call = Message::new(Role::ToolCall, "");
        call.tool_call_id = Some(format!("call_{i}"));
        call.tool_name = Some("Bash".into());
        call.tool_input = Some(serde_json::json!({"command": format!("grep -rn feature_{i} src")}));
        s.messages.push(call);
        let mut out = Message::new(Role::ToolResult, output.clone());
        out.tool_call_id = Some(format!("call_{i}"));
        s.messages.push(out);
        s.messages.push(Message::new(
            Role::Assistant,
            format!(
                "Feature {i} is implemented in module m{} and its tests pass.",
                i % 50
            ),
        ));
    }
    s.pair_tool_calls();
    s
}

#[test]
fn a_rule_stated_halfway_through_a_long_session_survives_a_60k_relay() {
    let source = long_session_with_a_rule_halfway(3000);
    let target = adapters::by_name("codex").unwrap();
    let brief_text = brief(&BriefInput {
        session: &source,
        source_display: "Claude Code",
        title: "long",
        snapshot: &Snapshot::take(None, "/nonexistent/long", None, GitState::default())
            .render(Some(20)),
        folded: None,
    });
    let (shaped, _) = shape(
        &source,
        source.messages.clone(),
        target,
        "id",
        brief_text.clone(),
    );
    let params = FitParams {
        budget: 60_000,
        tokenizer: Tokenizer::O200k,
        recent_turns: 8,
        summary_max_tokens: 1500,
        tool_call_keep_recent: 12,
    };
    let (out, report) = fit(shaped, brief_text, &params).unwrap();
    assert!(report.total_tokens <= 60_000, "{report:?}");
    assert!(
        report.total_tokens >= 51_000,
        "fills the budget: {report:?}"
    );
    assert!(
        report.summarized.turns > 0 && report.shortened.turns > 0,
        "{report:?}"
    );
    let rule = "we must never force-push to the release branch";
    let carriers: Vec<&str> = out
        .messages
        .iter()
        .filter(|m| m.content.contains(rule))
        .filter_map(|m| m.kind.map(|k| k.as_str()))
        .collect();
    assert!(
        carriers.contains(&"handoff_brief") || carriers.contains(&"relay_summary"),
        "the rule is lost: {carriers:?}"
    );
    assert!(
        session_relay::tokens::estimate(&out.messages[0].content)
            <= session_relay::plan::brief::BRIEF_MAX_TOKENS
    );
}
