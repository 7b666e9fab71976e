//! Secret redaction, on by default for everything `relay` and `export` write.
//!
//! A `RegexSet` answers "could any rule match this text" in one pass, so the common case (no
//! secret) costs one scan; only texts that match are rewritten, rule by rule. Each match is
//! replaced by `[REDACTED:<kind>]`. Rules are anchored on the shapes secrets have (vendor prefixes,
//! key blocks, credentials in URLs) or on the name they are assigned to, never on length or
//! randomness alone, so that git SHAs, UUIDs, base64 images and lock-file hashes are left alone.
//!
//! Word boundaries are ASCII (`(?-u:\b)`): with Unicode ones the regex engine leaves its fast
//! DFA on any non-ASCII text (an emoji, a "…"), which made redaction 15 times slower.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use anyhow::{Context, Result};
use regex::{Captures, Regex, RegexSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Session;

/// A user-supplied pattern from the config file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPattern {
    /// The kind reported and written as `[REDACTED:<name>]`.
    pub name: String,
    /// A regular expression (Rust `regex` syntax); a capture group named `secret`, if present,
    /// is the part masked, else the whole match.
    pub regex: String,
}

struct Rule {
    kind: String,
    re: Regex,
    /// Which capture group holds the secret (0 = the whole match).
    group: usize,
    /// Assignments: mask only values that look like real secrets.
    check: Check,
}

#[derive(Clone, Copy, PartialEq)]
enum Check {
    None,
    /// Not a placeholder, not purely numeric or boolean.
    Value,
    /// As `Value`, and random-looking (a generic env line's value).
    HighEntropy,
}

pub struct Redactor {
    set: RegexSet,
    rules: Vec<Rule>,
    allow: HashSet<String>,
}

/// Counts of what was masked, by kind.
pub type Counts = BTreeMap<String, usize>;

const BUILTIN: &[(&str, &str, usize, u8)] = &[
    // (kind, regex, group, check: 0 none, 1 value, 2 entropy)
    (
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
        0,
        0,
    ),
    (
        "anthropic_key",
        r"(?-u:\b)sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}",
        0,
        0,
    ),
    (
        "openai_key",
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}|(?-u:\b)sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|(?-u:\b)sk-[A-Za-z0-9]{48}(?-u:\b)",
        0,
        0,
    ),
    (
        "aws_access_key",
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}(?-u:\b)",
        0,
        0,
    ),
    (
        "aws_secret_key",
        r#"(?i)(?-u:\b)aws_?secret_?(?:access_?)?key(?:_id)?["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?-u:\b)"#,
        1,
        0,
    ),
    (
        "github_token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})(?-u:\b)",
        0,
        0,
    ),
    (
        "gitlab_token",
        r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}(?-u:\b)",
        0,
        0,
    ),
    (
        "slack_token",
        r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}(?-u:\b)",
        0,
        0,
    ),
    (
        "slack_webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
        0,
        0,
    ),
    (
        "google_api_key",
        r"(?-u:\b)AIza[0-9A-Za-z_-]{35}(?-u:\b)",
        0,
        0,
    ),
    (
        "stripe_key",
        r"(?-u:\b)(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}(?-u:\b)",
        0,
        0,
    ),
    (
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        0,
        0,
    ),
    (
        "bearer_token",
        r"(?i)(?-u:\b)authorization:\s*bearer\s+([A-Za-z0-9._~+/=-]{16,})",
        1,
        1,
    ),
    (
        "url_credentials",
        r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'\x22]+:([^\s@/'\x22]+)@[^\s/'\x22]+",
        1,
        1,
    ),
    (
        // password=..., "api_key": "...", SECRET_TOKEN=..., client_secret: ...
        "assignment",
        r#"(?i)(?-u:\b)[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|private[_-]?key|client[_-]?secret|credentials?)["']?\s*(?:=|:)\s*["']?([^\s"'`,;{}()<>\[\]]{4,})"#,
        1,
        1,
    ),
    (
        // TOKEN=... and GITHUB_TOKEN=... env lines, but not max_tokens=4096 or "tokens_used": 5.
        "assignment",
        r#"(?m)(?:^|[\s;])(?:export\s+)?[A-Z0-9_]*TOKEN["']?\s*[:=]\s*["']?([^\s"'`,;]{8,})"#,
        1,
        1,
    ),
    (
        // Any other KEY=value env line whose value looks random.
        "high_entropy_value",
        r#"(?m)(?:^|[\s+>])(?:export\s+)?[A-Z][A-Z0-9_]{2,}\s*=\s*["']?([A-Za-z0-9+/_=.-]{20,})["']?(?:\s|$)"#,
        1,
        2,
    ),
];

impl Redactor {
    pub fn new(extra: &[ExtraPattern], allow: &[String]) -> Result<Redactor> {
        let mut rules: Vec<Rule> = BUILTIN
            .iter()
            .map(|(kind, re, group, check)| Rule {
                kind: kind.to_string(),
                re: Regex::new(re).expect("built-in pattern compiles"),
                group: *group,
                check: match check {
                    1 => Check::Value,
                    2 => Check::HighEntropy,
                    _ => Check::None,
                },
            })
            .collect();
        for p in extra {
            let re = Regex::new(&p.regex)
                .with_context(|| format!("redaction pattern `{}` is not a valid regex", p.name))?;
            let group = re
                .capture_names()
                .position(|n| n == Some("secret"))
                .unwrap_or(0);
            // User patterns go first: the user knows their secrets' shapes best.
            rules.insert(
                0,
                Rule {
                    kind: p.name.clone(),
                    re,
                    group,
                    check: Check::None,
                },
            );
        }
        let set = RegexSet::new(rules.iter().map(|r| r.re.as_str()))
            .expect("patterns compiled one by one");
        Ok(Redactor {
            set,
            rules,
            allow: allow.iter().cloned().collect(),
        })
    }

    /// Masks the secrets in one text.
    pub fn text<'a>(&self, text: &'a str, counts: &mut Counts) -> Cow<'a, str> {
        let hits = self.set.matches(text);
        if !hits.matched_any() {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for i in hits.iter() {
            let rule = &self.rules[i];
            let mut n = 0;
            let replaced = rule.re.replace_all(&out, |c: &Captures| {
                let whole = c.get(0).unwrap();
                let Some(secret) = c.get(rule.group) else {
                    return whole.as_str().to_string();
                };
                let value = secret.as_str();
                // `password = read_password()` assigns a call, not a secret.
                let called = rule.check != Check::None
                    && c.get(0).is_some_and(|w| w.end() == secret.end())
                    && out[secret.end()..].starts_with('(');
                if self.allow.contains(value)
                    || value.starts_with("[REDACTED:")
                    || called
                    || !passes(rule.check, value)
                {
                    return whole.as_str().to_string();
                }
                n += 1;
                let start = secret.start() - whole.start();
                let end = secret.end() - whole.start();
                let w = whole.as_str();
                format!("{}[REDACTED:{}]{}", &w[..start], rule.kind, &w[end..])
            });
            if n > 0 {
                out = replaced.into_owned();
                *counts.entry(rule.kind.clone()).or_default() += n;
            }
        }
        if out == text {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(out)
        }
    }

    fn value(&self, v: &mut Value, counts: &mut Counts) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(r) = self.text(s, counts) {
                    *s = r;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.value(x, counts)),
            Value::Object(o) => o.values_mut().for_each(|x| self.value(x, counts)),
            _ => {}
        }
    }

    /// Masks every text of a session a writer could emit: messages, tool inputs, title, todos,
    /// and the free-form facts kept in `extra` (images' base64 data is left alone: no rule can
    /// match inside it, and scanning megabytes of it would only cost time).
    pub fn session(&self, s: &mut Session) -> Counts {
        use rayon::prelude::*;
        // Messages are independent; large sessions spread over the cores.
        let mut counts = s
            .messages
            .par_iter_mut()
            .fold(Counts::new, |mut counts, m| {
                if let Cow::Owned(r) = self.text(&m.content, &mut counts) {
                    m.content = r;
                }
                if let Some(input) = &mut m.tool_input {
                    self.value(input, &mut counts);
                }
                // The key argument repeats part of the input: masked, but not counted twice.
                if let Some(key) = &mut m.key_arg
                    && let Cow::Owned(r) = self.text(key, &mut Counts::new())
                {
                    *key = r;
                }
                for (k, v) in m.metadata.iter_mut() {
                    if k != "images" && k != "image" {
                        self.value(v, &mut counts);
                    }
                }
                counts
            })
            .reduce(Counts::new, |mut a, b| {
                for (k, n) in b {
                    *a.entry(k).or_default() += n;
                }
                a
            });
        if let Some(t) = &mut s.title
            && let Cow::Owned(r) = self.text(t, &mut counts)
        {
            *t = r;
        }
        for t in &mut s.todos {
            if let Cow::Owned(r) = self.text(&t.text, &mut counts) {
                t.text = r;
            }
        }
        for v in s.extra.values_mut() {
            self.value(v, &mut counts);
        }
        counts
    }
}

/// Whether an assigned value is a secret rather than a placeholder, a number or a reference.
fn passes(check: Check, value: &str) -> bool {
    if check == Check::None {
        return true;
    }
    let v = value.trim_matches(|c| c == '"' || c == '\'');
    let lower = v.to_ascii_lowercase();
    let placeholder = v.starts_with('$')
        || v.starts_with('<')
        || v.starts_with('{')
        || v.starts_with('%')
        || v.chars()
            .all(|c| c == '*' || c == 'x' || c == 'X' || c == '.' || c == '-' || c == '_')
        || [
            "true",
            "false",
            "null",
            "none",
            "nil",
            "undefined",
            "changeme",
            "example",
            "password",
            "secret",
            "redacted",
            "required",
            "optional",
            "string",
        ]
        .contains(&lower.as_str())
        || lower.starts_with("your")
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env.")
        || lower.starts_with("self.")
        || lower.starts_with("config.")
        || lower.starts_with("settings.")
        || v.chars().all(|c| c.is_ascii_digit() || c == '.');
    // Code assigns names and attribute paths (`password = user_input`, `token = args.token`);
    // a secret has digits or symbols in it.
    let identifier = v.split('.').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }) && !v.chars().any(|c| c.is_ascii_digit());
    if placeholder || identifier {
        return false;
    }
    match check {
        Check::HighEntropy => looks_random(v),
        _ => true,
    }
}

/// Random-looking: long, mixed character classes, high Shannon entropy; and not a hex digest
/// or a UUID (git SHAs and ids are everywhere in sessions and are not secrets).
fn looks_random(v: &str) -> bool {
    if v.len() < 20 {
        return false;
    }
    let hex = v.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if hex {
        return false;
    }
    let has_lower = v.chars().any(|c| c.is_ascii_lowercase());
    let has_upper = v.chars().any(|c| c.is_ascii_uppercase());
    let has_digit = v.chars().any(|c| c.is_ascii_digit());
    if [has_lower, has_upper, has_digit]
        .iter()
        .filter(|b| **b)
        .count()
        < 2
    {
        return false;
    }
    entropy(v) >= 3.5
}

fn entropy(s: &str) -> f64 {
    let mut freq = std::collections::HashMap::new();
    for c in s.chars() {
        *freq.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    freq.values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(text: &str) -> (String, Counts) {
        let r = Redactor::new(&[], &[]).unwrap();
        let mut c = Counts::new();
        (r.text(text, &mut c).into_owned(), c)
    }

    #[test]
    fn placeholders_and_numbers_are_not_secrets() {
        for t in [
            "password=${DB_PASSWORD}",
            "api_key: <your-key-here>",
            "\"max_tokens\": 4096",
            "\"input_tokens\":1200,\"output_tokens\":40",
            "token_count = 12",
            "secret = process.env.SECRET",
            "password: ********",
            "let password = read_password();",
            "token = args.token",
            "password: must be at least 12 characters",
        ] {
            let (out, c) = red(t);
            assert_eq!(out, t, "{c:?}");
        }
    }

    #[test]
    fn assignments_mask_only_the_value() {
        let (out, c) = red("DB_PASSWORD=hunter2hunter2 and more");
        assert_eq!(out, "DB_PASSWORD=[REDACTED:assignment] and more");
        assert_eq!(c["assignment"], 1);
        let (out, _) = red("postgres://app:s3cr3t-pass@db.internal:5432/app");
        assert_eq!(
            out,
            "postgres://app:[REDACTED:url_credentials]@db.internal:5432/app"
        );
    }
}
