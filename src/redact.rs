//! Secret redaction, on by default for everything `relay` and `export` write.
//!
//! A prefilter (`Prefilter`: the strings most rules require, `gates.rs`, in one Aho-Corasick
//! automaton, and the few other rules' own regexes) answers "could any rule match this text"
//! in a pass or two, so the common case (no secret) costs little; only texts that may match are
//! rewritten, rule by rule. Each match is replaced by `[REDACTED:<kind>]`. Rules are anchored on
//! the shapes secrets have (vendor prefixes, key blocks, credentials in URLs and command lines)
//! or on the name they are assigned to, never on length or randomness alone, so that git SHAs,
//! UUIDs, base64 images and lock-file hashes are left alone. Structured JSON is also judged by
//! its keys: the value of a `password`, `token`, `Authorization`... key is masked whatever it
//! looks like (`key_is_sensitive`).
//!
//! Word boundaries are ASCII (`(?-u:\b)`): with Unicode ones the regex engine leaves its fast
//! DFA on any non-ASCII text (an emoji, a "…"), which made redaction 15 times slower.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use aho_corasick::AhoCorasick;
use anyhow::{Context, Result};
use regex::{Captures, Regex, RegexSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Session;

mod gates;

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
    /// The regex, compiled the first time the prefilter says it may match: most never do, and
    /// compiling them all took most of the redactor's start.
    re: OnceLock<Regex>,
    pattern: Cow<'static, str>,
    /// What the prefilter looks for: the regex itself, or for a rule that starts with a run
    /// of a class (`[a-f0-9]{32}-us…`) a part every match holds (`-us[0-9]`). Runs at the start
    /// of many patterns multiply the prefilter's states, and it then falls off its fast DFA.
    hint: Option<&'static str>,
    /// `hint` compiled, the first time the prefilter names the rule: a text that does not hold
    /// it holds no match, and looking for it (most start with a literal the regex engine finds
    /// with `memchr`) costs far less than the rule's own search. The gates are matched ignoring
    /// case, so `token` in a text names the rule for `TOKEN=`, and that search ran over most of
    /// a long session's outputs.
    hint_re: OnceLock<Regex>,
    /// Which capture group holds the secret (0 = the whole match).
    group: usize,
    /// Assignments: mask only values that look like real secrets.
    check: Check,
}

#[derive(Clone, Copy, PartialEq)]
enum Check {
    None,
    /// Not a placeholder, not purely numeric or boolean, not a name from code.
    Value,
    /// Not a placeholder: where a value can only be a password (a URL's, a client's flag), a
    /// word or a number is one too.
    Literal,
    /// Group 1 is a key, group 2 its value: the key must be sensitive (`sensitive_key`) and
    /// the value not a placeholder.
    Key,
    /// A piece of a word cut by a reader: masked when it could be part of a token.
    Fragment,
    /// Group 1 is the name a value is assigned to (an env or config line, a flag, a setting):
    /// the name decides whether the value can be a secret and which check it takes
    /// (`named_secret`).
    Named(Given),
    /// A URL's userinfo: the password of `user:password@`, or a user that is a token in an
    /// http(s) URL (`https://<token>@host`); `git@host` is a user.
    Userinfo,
    /// An `Authorization` credential after a scheme: not a parameter name (`username=`).
    Header,
    /// Base64 of `user:password` (a registry's `auth`).
    BasicCredential,
    /// A JSON Web Key, masked whole when it holds a private member (`d`, or `k` of a
    /// symmetric key).
    Jwk,
}

impl Check {
    /// Whether every match of a rule with this check lies within a line but for the line
    /// break before it, and holds its hint: such a rule's regex starts at the line where the
    /// prefilter (`Near`) or its hint says its first match may be, not at the text's start
    /// (the named rules are woken by words most long outputs hold, `token`, `key`).
    fn within_a_line(self) -> bool {
        matches!(self, Check::Named(Given::Line | Given::Flag))
    }
}

/// Where a named value is given (see `Check::Named`).
#[derive(Clone, Copy, PartialEq)]
enum Given {
    /// An env, config or header line, or a flag with `=`.
    Line,
    /// A flag and its argument (group 1 is the flag's dashes, group 2 its name).
    Flag,
    /// A command's setting (`config set NAME VALUE`): literal.
    Arg,
    /// An attribute (`key="Password" value="x"`): literal.
    Attribute,
    /// An element's text (`<password>x</password>`), up to its own end tag: literal.
    Element,
}

pub struct Redactor {
    set: Prefilter,
    rules: Vec<Rule>,
    allow: HashSet<String>,
}

/// What tells which rules may match a text, in a pass or two over it, compiled on another thread
/// from `Redactor::new` on: compiling it is a good part of a small relay's start, which reads
/// meanwhile. The first text to mask waits for it.
struct Prefilter {
    set: OnceLock<RuleSet>,
    building: Mutex<Option<JoinHandle<RuleSet>>>,
}

/// The built-in rules in two parts: those with a gate (`gates::GATES`: byte strings one of
/// which every text the rule matches holds) as one Aho-Corasick automaton of those strings, and
/// each of the few without (`ungated`) as its own regex; the user's, whose syntax may need more
/// than a DFA, as a `RegexSet`. User rules come first (`Redactor::rules`). A gated rule whose
/// gate a text holds is named whether or not it matches: its own regex then decides.
///
/// Each ungated regex runs alone rather than in one combined DFA: alone, a regex looks first
/// for what its matches must hold (`SK`, a discord token's first letters, an `=`) and runs only
/// from there, where a combined automaton goes through every byte of every text.
struct RuleSet {
    user: Option<RegexSet>,
    /// The built-in rule of each ungated regex, and the regex.
    ungated: Vec<(usize, Regex)>,
    gates: AhoCorasick,
    /// The built-in rule of each of the gates' strings.
    gated: Vec<usize>,
    /// For each built-in rule, what must be next to a gate's string for the rule to be named
    /// (`Near`), if anything.
    near: Vec<Option<Near>>,
}

/// What the rules gated by a secret's name (`token`, `key`, `pass`: strings most long
/// outputs hold) need next to it, checked where the gates' automaton finds the name: in place
/// of a search of the whole text for their hint, which made them a tenth of a relay's
/// masking. Each is true wherever the rule's hint matches.
#[derive(Clone, Copy, Debug)]
enum Near {
    /// The rest of a name, then `=` or `: ` (`Given::Line`).
    Assigned,
    /// A flag's dashes before and whitespace after (`Given::Flag`).
    Flag,
    /// An end tag's `</` before (`Given::Element`).
    EndTag,
}

impl Near {
    fn of(check: Check) -> Option<Near> {
        match check {
            Check::Named(Given::Line) => Some(Near::Assigned),
            Check::Named(Given::Flag) => Some(Near::Flag),
            Check::Named(Given::Element) => Some(Near::EndTag),
            _ => None,
        }
    }

    /// Whether the gate's string at `start..end` of `lower` (see `gate_text`, of `text`) has
    /// this next to it.
    fn holds(self, text: &[u8], lower: &[u8], start: usize, end: usize) -> bool {
        let name = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
        let blank = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
        match self {
            // A secret's word that ends the name or is followed by a separator or a capital
            // (`DB_PASS`, `SECRET_KEY_BASE`, `npmAuthToken`, not `tokens`), the rest of the
            // name, then `=` or `: `.
            Near::Assigned => {
                let mut j = end + lower[end..].iter().take_while(|b| name(b)).count();
                let assigned = if lower.get(j) == Some(&b':') {
                    blank(lower.get(j + 1))
                } else {
                    while blank(lower.get(j)) {
                        j += 1;
                    }
                    lower.get(j) == Some(&b'=')
                };
                let ends = |b: &u8| !name(b) || b.is_ascii_uppercase() || b".-_".contains(b);
                assigned
                    && SECRET_WORDS_LOWER.iter().any(|w| {
                        lower[start..].starts_with(w.as_bytes())
                            && text.get(start + w.len()).is_none_or(ends)
                    })
            }
            Near::Flag => {
                let word = end
                    - lower[start..end]
                        .iter()
                        .rev()
                        .take_while(|b| blank(Some(b)))
                        .count();
                blank(lower.get(word))
                    && lower[..start]
                        .iter()
                        .rev()
                        .take_while(|b| name(b))
                        .any(|&b| b == b'-')
            }
            Near::EndTag => {
                let before = lower[..start]
                    .iter()
                    .rev()
                    .take_while(|&b| name(b) || *b == b':')
                    .count();
                lower[..start - before].ends_with(b"</")
            }
        }
    }
}

impl RuleSet {
    fn new(user: Option<RegexSet>, builtin: &[String]) -> RuleSet {
        let (mut ungated, mut gated, mut strings) = (Vec::new(), Vec::new(), Vec::new());
        for (i, pattern) in builtin.iter().enumerate() {
            match gates::GATES.get(i).copied().flatten() {
                Some(gate) => {
                    gated.extend(std::iter::repeat_n(i, gate.len()));
                    strings.extend_from_slice(gate);
                }
                None => ungated.push((
                    i,
                    Regex::new(pattern).expect("built-in patterns compile (tested)"),
                )),
            }
        }
        // A DFA: an overlapping search for every gate runs over every text a relay masks,
        // where a DFA is about twice as fast as the default NFA. The gates are lower case and
        // each text is searched lower-cased (`gate_text`): the same answers as searching
        // ignoring ASCII case, from an automaton that builds in half the time.
        let gates = AhoCorasick::builder()
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(&strings)
            .expect("the gates' strings make an automaton (tested)");
        RuleSet {
            user,
            ungated,
            gates,
            gated,
            near: BUILTIN.iter().map(|r| Near::of(r.3)).collect(),
        }
    }

    /// The indices of the rules that may match `text`, in order, each with where in `text` its
    /// first match may be: for a rule with a `Near`, where the first of its gate's strings
    /// with that next to it is (a match holds one), else 0.
    fn matches(&self, text: &str) -> Vec<(usize, usize)> {
        let mut hits: Vec<(usize, usize)> = self
            .user
            .as_ref()
            .map(|u| u.matches(text).into_iter().map(|i| (i, 0)).collect())
            .unwrap_or_default();
        let offset = self.user.as_ref().map_or(0, RegexSet::len);
        let lower = gate_text(text);
        // A folded character (`GATE_FOLDS`) moves the bytes after it: then nothing is checked.
        let in_place = lower.len() == text.len();
        let mut builtin: Vec<(usize, usize)> = self
            .gates
            .find_overlapping_iter(&lower)
            .filter_map(|m| {
                let rule = self.gated[m.pattern().as_usize()];
                match self.near[rule] {
                    Some(near) if in_place => near
                        .holds(text.as_bytes(), &lower, m.start(), m.end())
                        .then_some((rule, m.start())),
                    _ => Some((rule, 0)),
                }
            })
            .collect();
        builtin.extend(
            self.ungated
                .iter()
                .filter(|(_, re)| re.is_match(text))
                .map(|&(i, _)| (i, 0)),
        );
        builtin.sort_unstable();
        builtin.dedup_by_key(|h| h.0);
        hits.extend(builtin.into_iter().map(|(i, at)| (offset + i, at)));
        hits
    }
}

/// The characters besides ASCII letters that a case-insensitive rule's ASCII letter matches
/// (by Unicode's simple case folding, `ſ` is an `s` and the Kelvin sign a `k`), and the letter
/// each is looked for as: the gates hold only the letter (see `gate_text`). Kept apart, a word
/// with four `s` was sixteen gates, and the longer words of the `assignment` rule went beyond
/// what the gates' extraction enumerates: that rule had none.
const GATE_FOLDS: [(char, char); 2] = [('ſ', 's'), ('\u{212A}', 'k')];

/// `text` as the gates are looked for in it: ASCII letters in lower case, `GATE_FOLDS` folded.
fn gate_text(text: &str) -> Vec<u8> {
    // Both folded characters' UTF-8 start with one of these bytes.
    if memchr::memchr2(0xC5, 0xE2, text.as_bytes()).is_some()
        && GATE_FOLDS.iter().any(|&(c, _)| text.contains(c))
    {
        let folded: String = text
            .chars()
            .map(|c| GATE_FOLDS.iter().find(|f| f.0 == c).map_or(c, |f| f.1))
            .collect();
        return folded.into_bytes().to_ascii_lowercase();
    }
    text.as_bytes().to_ascii_lowercase()
}

impl Prefilter {
    fn build(user: Option<RegexSet>, builtin: Vec<String>) -> Prefilter {
        let compile = move || RuleSet::new(user.clone(), &builtin);
        let (set, building) = match std::thread::Builder::new().spawn(compile.clone()) {
            Ok(handle) => (OnceLock::new(), Some(handle)),
            // No thread to spare: compiled here.
            Err(_) => (OnceLock::from(compile()), None),
        };
        Prefilter {
            set,
            building: Mutex::new(building),
        }
    }

    fn get(&self) -> &RuleSet {
        self.set.get_or_init(|| {
            let handle = self
                .building
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .expect("the set is compiled or being compiled");
            handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

/// The bytes of the strings in a JSON value: what masking it scans.
fn strings_len(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(strings_len).sum(),
        Value::Object(o) => o.iter().map(|(k, x)| k.len() + strings_len(x)).sum(),
        _ => 0,
    }
}

/// Counts of what was masked, by kind.
pub type Counts = BTreeMap<String, usize>;

/// Adds `more` to `counts`.
pub fn add_counts(counts: &mut Counts, more: impl IntoIterator<Item = (String, usize)>) {
    for (kind, n) in more {
        *counts.entry(kind).or_default() += n;
    }
}

/// A reader masks the outputs it reads only in part as `session` masks a tool output.
impl crate::adapter::OutputMask for Redactor {
    fn mask<'a>(&self, text: &'a str, counts: &mut Counts) -> Cow<'a, str> {
        self.text(text, counts)
    }
}

/// The words that make a name a secret's, for the rules that judge a value by its name (see
/// `name_kind`): in lower, upper and title case rather than ignoring case, which made each
/// word dozens of strings, too many for the regex engine to look for them all at once, and
/// the search of most texts a byte at a time.
macro_rules! secret_words {
    () => {
        "(?:pass|PASS|Pass|passwd|PASSWD|Passwd|password|PASSWORD|Password|passphrase|PASSPHRASE|Passphrase|pwd|PWD|Pwd|secret|SECRET|Secret|token|TOKEN|Token|key|KEY|Key|auth|AUTH|Auth|cred|CRED|Cred|creds|CREDS|Creds|credential|CREDENTIAL|Credential|credentials|CREDENTIALS|Credentials|private|PRIVATE|Private|salt|SALT|Salt|bearer|BEARER|Bearer)"
    };
}

/// `secret_words!` in lower case, for `Near::Assigned`.
const SECRET_WORDS_LOWER: &[&str] = &[
    "pass",
    "passwd",
    "password",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "cred",
    "creds",
    "credential",
    "credentials",
    "private",
    "salt",
    "bearer",
];

/// `(kind, regex, group, check, hint)`. Each rule is anchored on a fixed prefix or shape of the
/// format it names (or on the label a value is assigned to), so that hashes, ids and base64 stay
/// clean. Rules that end in a class holding `-` have no trailing `\b` (a `-` is no word
/// character). `hint`, when given, is what the prefilter looks for instead (see `Rule::hint`).
const BUILTIN: &[(&str, &str, usize, Check, Option<&str>)] = &[
    // --- Key files.
    (
        // PEM blocks (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK), to the end or the text's end.
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
        0,
        Check::None,
        None,
    ),
    (
        // A PEM block's end without its beginning: what a reader's cut of a long output (or
        // `tail` of a key file) leaves of a key, masked from the cut or the text's start.
        "private_key",
        r"(?:\A|\n\[… [0-9]+ chars cut …\]\n)([A-Za-z0-9+/=:,\-\s]+?)-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        1,
        Check::None,
        Some(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY"),
    ),
    (
        // age (age-encryption.org): `AGE-SECRET-KEY-1` + 58 upper-case bech32 characters.
        "age_secret_key",
        r"(?-u:\b)AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // A PEM private key in base64, as kubeconfig's `client-key-data` and a TLS secret's
        // `tls.key` hold it: `-----BEGIN ` encoded, then `PRIVATE KEY` at one of its three
        // alignments within the next 40 characters.
        "private_key",
        r"(?-u:\b)LS0tLS1CRUdJTi[A-Za-z0-9+/]{0,40}?(?:UFJJVkFURSBLRV|SSVZBVEUgS0V|QUklWQVRFIEtFW)[A-Za-z0-9+/]*={0,2}",
        0,
        Check::None,
        None,
    ),
    (
        // PuTTY key files (`.ppk`, versions 2 and 3): the lines after `Private-Lines: N`, to
        // `Private-MAC` or the text's end (also with the lines run together, as in a title).
        "private_key",
        r"Private-Lines:[ \t]*[0-9]+\s+([A-Za-z0-9+/=]+(?:\s+[A-Za-z0-9+/=]+)*?)(?:\s+Private-MAC|\s*\z)",
        1,
        Check::None,
        None,
    ),
    (
        // minisign and signify secret key files: the line after their comment.
        "private_key",
        r"untrusted comment: [^\n]*?secret key\s+([A-Za-z0-9+/=]{40,})",
        1,
        Check::None,
        None,
    ),
    (
        // OpenVPN static keys (`--tls-auth`, `--secret`), to the end or the text's end.
        "private_key",
        r"-----BEGIN OpenVPN Static key V1-----([\s\S]*?)(?:-----END OpenVPN Static key V1-----|\z)",
        1,
        Check::None,
        None,
    ),
    (
        // .NET's XML RSA keys: the private parameters.
        "private_key",
        r"<(?:D|P|Q|DP|DQ|InverseQ)>([A-Za-z0-9+/]{16,}={0,2})</(?:D|P|Q|DP|DQ|InverseQ)>",
        1,
        Check::None,
        None,
    ),
    (
        // A JSON Web Key, also JSON-escaped: whole, when it holds a private member.
        "private_key",
        r#"\{[^{}]*\\?"kty\\?"[^{}]*\}"#,
        0,
        Check::Jwk,
        Some(r#"\\?"kty\\?""#),
    ),
    // --- AI providers.
    (
        // Anthropic: API and admin keys, Claude Code's OAuth access and refresh tokens.
        "anthropic_key",
        r"(?-u:\b)sk-ant-(?:api|admin|oat|ort|sid)[0-9]{2}-[A-Za-z0-9_-]{20,}",
        0,
        Check::None,
        None,
    ),
    (
        // OpenAI: keys holding `T3BlbkFJ` ("OpenAI" in base64), project/service/admin keys,
        // legacy `sk-` + 48 alphanumerics.
        "openai_key",
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}|(?-u:\b)sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|(?-u:\b)sk-[A-Za-z0-9]{48}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Hugging Face: user tokens `hf_` + 34 letters and digits, org tokens `api_org_` + 34.
        "huggingface_token",
        r"(?-u:\b)(?:hf|api_org)_[A-Za-z0-9]{34}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Groq: `gsk_` + 52.
        "groq_key",
        r"(?-u:\b)gsk_[A-Za-z0-9]{52}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Replicate: `r8_` + 37.
        "replicate_token",
        r"(?-u:\b)r8_[A-Za-z0-9]{37}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // xAI: `xai-` + 80.
        "xai_key",
        r"(?-u:\b)xai-[A-Za-z0-9]{80}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Perplexity: `pplx-` + 48.
        "perplexity_key",
        r"(?-u:\b)pplx-[A-Za-z0-9]{48}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    // --- Cloud providers.
    (
        // AWS access key ids by their four-letter type prefix.
        "aws_access_key",
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // AWS secret keys (40 base64 characters) where they are assigned.
        "aws_secret_key",
        r#"(?i)(?-u:\b)aws_?secret_?(?:access_?)?key(?:_id)?["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?-u:\b)"#,
        1,
        Check::None,
        Some(r"(?i)aws_?secret_?(?:access_?)?key"),
    ),
    (
        // Google: API keys `AIza` + 35.
        "google_api_key",
        r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        0,
        Check::None,
        None,
    ),
    (
        // Google OAuth: client secrets `GOCSPX-` + 28, access tokens `ya29.`, refresh tokens `1//0`.
        "google_oauth",
        r"(?-u:\b)GOCSPX-[A-Za-z0-9_-]{28}|(?-u:\b)ya29\.[A-Za-z0-9_-]{30,}|(?-u:\b)1//0[A-Za-z0-9_-]{40,}",
        0,
        Check::None,
        None,
    ),
    (
        // Azure storage, Service Bus and Event Hubs connection strings: `AccountKey=<base64>`,
        // `SharedAccessKey=<base64>`.
        "azure_storage_key",
        r"(?i)(?-u:\b)(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{40,}={0,2})",
        1,
        Check::None,
        None,
    ),
    (
        // Azure SAS tokens: `sig=` + a base64 (often %-encoded) HMAC-SHA256, which ends in
        // padding. A `sig=` with a short, hex or unpadded value is not one. Also in a URL
        // escaped for JSON (`\u0026sig=`, as Go's encoder writes `&`) or %-encoded whole
        // (`%26sig%3D…%253D`).
        "azure_sas",
        r"(?i)(?:[?&;]|\\u0026|%26)sig(?:=|%3D)([A-Za-z0-9%+/]{40,}(?:%253D|%3D|=))",
        1,
        Check::None,
        None,
    ),
    (
        // Azure AD (Entra) client secrets: 3 characters, a digit, `Q~`, 31 to 34 more.
        "azure_client_secret",
        r"(?:^|\n[+-]|[^A-Za-z0-9_~.-])([A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)",
        1,
        Check::None,
        Some(r"[0-9]Q~"),
    ),
    (
        // DigitalOcean: `dop_v1_`, `doo_v1_`, `dor_v1_` + 64 hex.
        "digitalocean_token",
        r"(?-u:\b)do[opr]_v1_[a-f0-9]{64}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Heroku: `HRKU-` platform keys (older keys are UUIDs: caught by their label only).
        "heroku_key",
        r"(?-u:\b)HRKU-[A-Za-z0-9_-]{20,}",
        0,
        Check::None,
        None,
    ),
    (
        // Terraform Cloud / Enterprise: `<14>.atlasv1.<60+>`.
        "terraform_token",
        r"(?-u:\b)[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
        0,
        Check::None,
        Some(r"\.atlasv1\."),
    ),
    (
        // Databricks: `dapi` + 32 hex (optionally `-2`).
        "databricks_token",
        r"(?-u:\b)dapi[a-f0-9]{32}(?:-[0-9]+)?(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    // --- Code hosts and CI.
    (
        // GitHub: `ghp_ gho_ ghu_ ghs_ ghr_` + 36, fine-grained `github_pat_`.
        "github_token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // GitLab: personal, deploy, runner, trigger, OAuth, feed, CI-job ... tokens; runner
        // registration tokens `GR1348941`.
        "gitlab_token",
        r"(?-u:\b)gl(?:pat|dt|rt|ptt|soat|cbt|ffct|oas|imt|agent|ft)-[A-Za-z0-9_-]{20,}|(?-u:\b)GR1348941[A-Za-z0-9_-]{20,}",
        0,
        Check::None,
        None,
    ),
    (
        // Atlassian (Jira, Confluence, Bitbucket): API tokens `ATATT3…`, `ATCTT3…`; Bitbucket
        // app passwords `ATBB…`.
        "atlassian_token",
        r"(?-u:\b)AT[AC]TT3[A-Za-z0-9_=-]{50,}|(?-u:\b)ATBB[A-Za-z0-9]{28,}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Buildkite `bkua_` + 40 hex; CircleCI `CCIPAT_`; SonarQube `sqp_ sqa_ squ_` + 40 hex.
        "ci_token",
        r"(?-u:\b)(?:bkua_[a-f0-9]{40}|CCIPAT_[A-Za-z0-9]{20,}_[a-f0-9]{40}|sq[pau]_[a-f0-9]{40})(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    // --- Package registries.
    (
        // npm: `npm_` + 36 (30 random and a 6-character checksum).
        "npm_token",
        r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // PyPI / TestPyPI: macaroons whose base64 starts with the index's name.
        "pypi_token",
        r"(?-u:\b)pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}",
        0,
        Check::None,
        None,
    ),
    (
        // RubyGems: `rubygems_` + 48 hex.
        "rubygems_key",
        r"(?-u:\b)rubygems_[a-f0-9]{48}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // NuGet: `oy2` + 43 lower-case letters and digits.
        "nuget_key",
        r"(?-u:\b)oy2[a-z0-9]{43}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // crates.io: `cio` + 32; not preceded by a base64 character (`cio` is a short prefix).
        "crates_io_token",
        r"(?:^|\n[+-]|[^A-Za-z0-9+/=_-])(cio[A-Za-z0-9]{32})(?-u:\b)",
        1,
        Check::None,
        Some(r"cio[A-Za-z0-9]{32}"),
    ),
    (
        // Docker Hub: personal and organisation access tokens.
        "dockerhub_token",
        r"(?-u:\b)dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}",
        0,
        Check::None,
        None,
    ),
    (
        // JFrog Artifactory: API keys `AKCp` + 69, reference tokens (base64 of `reftkn:01:`).
        "jfrog_token",
        r"(?-u:\b)AKCp[A-Za-z0-9]{69}(?-u:\b)|(?-u:\b)cmVmdGtuOjAxOj[A-Za-z0-9]{40,}",
        0,
        Check::None,
        None,
    ),
    // --- Chat.
    (
        // Slack: bot, user, app-level (`xapp-`), refresh (`xoxe-`) ... tokens.
        "slack_token",
        r"(?-u:\b)(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}",
        0,
        Check::None,
        None,
    ),
    (
        // Also JSON-escaped (`https:\/\/hooks.slack.com\/services\/…`).
        "slack_webhook",
        r"https:\\?/\\?/hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/(?:[A-Za-z0-9/_-]|\\/){20,}",
        0,
        Check::None,
        None,
    ),
    (
        "discord_webhook",
        r"https:\\?/\\?/(?:(?:ptb|canary)\.)?discord(?:app)?\.com\\?/api\\?/webhooks\\?/[0-9]{17,20}\\?/[A-Za-z0-9_-]{60,}",
        0,
        Check::None,
        None,
    ),
    (
        // Discord bot tokens: the bot's id in base64 (a digit string, so `MT`, `Mj`, `Mz`, `ND`,
        // `NT`, `Nj`, `Nz`, `OD` or `OT` first), a 6-character timestamp, an HMAC. No hint: the
        // rule starts with its two letters, and a hint from the first dot on (`x.abcdef.`,
        // as in every `self.client.name`) made a third of the prefilter's states in code.
        "discord_token",
        r"(?-u:\b)(?:M[Tjz]|N[DTjz]|O[DT])[A-Za-z0-9]{22,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}",
        0,
        Check::None,
        None,
    ),
    (
        // Telegram bots: `<bot id>:AA` + 33, alone or in an API URL's `/bot<token>/`.
        "telegram_bot_token",
        r"(?-u:\b)(?:bot)?([0-9]{8,10}:AA[A-Za-z0-9_-]{33})",
        1,
        Check::None,
        Some(r"[0-9]:AA[A-Za-z0-9_-]{33}"),
    ),
    // --- Payments.
    (
        // Stripe: secret and restricted keys, webhook signing secrets.
        "stripe_key",
        r"(?-u:\b)(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9]{32,})(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Square: access tokens `EAAA` + 60, alone (zeros in base64 data read `EAAA` too).
        "square_token",
        r"(?:^|\n[+-]|[^A-Za-z0-9+/=_-])(EAAA[A-Za-z0-9_-]{60})(?:[^A-Za-z0-9+/=_-]|$)",
        1,
        Check::None,
        Some(r"EAAA[A-Za-z0-9_-]{60}"),
    ),
    (
        // Square: `sq0atp-` access tokens, `sq0csp-` OAuth secrets.
        "square_token",
        r"(?-u:\b)sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}",
        0,
        Check::None,
        None,
    ),
    (
        // PayPal via Braintree: `access_token$production$<16>$<32 hex>`.
        "braintree_token",
        r"(?-u:\b)access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    // --- Mail.
    (
        // SendGrid: `SG.` + 22 + `.` + 43.
        "sendgrid_key",
        r"(?-u:\b)SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        0,
        Check::None,
        None,
    ),
    (
        // Mailgun: `key-` + 32 hex, not the tail of a longer name (`cache-key-<md5>`).
        "mailgun_key",
        r"(?:^|[^A-Za-z0-9_-])(key-[a-f0-9]{32})(?-u:\b)",
        1,
        Check::None,
        Some(r"key-[a-f0-9]{32}"),
    ),
    (
        // Mailchimp: 32 hex + the data centre, `-us12`.
        "mailchimp_key",
        r"(?-u:\b)[a-f0-9]{32}-us[0-9]{1,2}(?-u:\b)",
        0,
        Check::None,
        Some(r"-us[0-9]"),
    ),
    (
        // Postmark: server and account tokens are UUIDs, so only where they are labelled.
        "postmark_token",
        r#"(?i)(?-u:\b)(?:x-)?postmark[_-]?(?:server|account)[_-]?(?:api[_-]?)?token\\?["']?\s*[:=]\s*\\?["']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"#,
        1,
        Check::None,
        Some(r"(?i)postmark[_-]?(?:server|account)"),
    ),
    (
        // Twilio: API key secrets' ids `SK` + 32 hex.
        "twilio_key",
        r"(?-u:\b)SK[a-fA-F0-9]{32}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    // --- Secret stores.
    (
        // HashiCorp Vault: service `hvs.`, batch `hvb.`, recovery `hvr.` tokens, and the batch
        // tokens of Vault before 1.10, `b.AAAAAQ…`.
        "vault_token",
        r"(?-u:\b)(?:hv[sbr]\.[A-Za-z0-9_-]{24,}|b\.AAAAAQ[A-Za-z0-9_-]{40,})",
        0,
        Check::None,
        None,
    ),
    (
        // Service tokens of Vault before 1.10, `s.` + 24, where `vault login` or `vault token`'s
        // table (`token   s.…`) names them: `s.` and 24 letters alone are a common shape in code.
        "vault_token",
        r"(?-u:\b)(?:vault[ \t]+login(?:[ \t]+-\S+)*|token)[ \t]+(s\.[A-Za-z0-9]{24})(?-u:\b)",
        1,
        Check::Fragment,
        Some(r"[ \t]s\.[A-Za-z0-9]{24}"),
    ),
    (
        // 1Password service accounts: `ops_` + base64 JSON.
        "onepassword_token",
        r"(?-u:\b)ops_eyJ[A-Za-z0-9+/_=-]{50,}",
        0,
        Check::None,
        None,
    ),
    (
        // Doppler: personal, service, service-account, CLI, SCIM, audit tokens.
        "doppler_token",
        r"(?-u:\b)dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,44}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    // --- Other services.
    (
        // Shopify: admin, custom-app, private-app tokens, shared secrets: prefix + 32 hex.
        "shopify_token",
        r"(?-u:\b)shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Linear: `lin_api_` and `lin_oauth_`.
        "linear_key",
        r"(?-u:\b)lin_(?:api|oauth)_[A-Za-z0-9]{40,}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Sentry: organisation tokens `sntrys_` (base64 + secret), user tokens `sntryu_` + 64 hex.
        "sentry_token",
        r"(?-u:\b)sntry[su]_[A-Za-z0-9+/=_-]{40,}",
        0,
        Check::None,
        None,
    ),
    (
        // New Relic: user `NRAK-`, ingest `NRII-`, browser `NRJS-`, admin `NRAA-`, REST `NRRA-`.
        "newrelic_key",
        r"(?-u:\b)NR(?:AK|AA|II|JS|RA)-[A-Za-z0-9]{19,}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Datadog: API (32 hex) and application keys (40 hex) have no prefix: where labelled.
        "datadog_key",
        r#"(?i)(?-u:\b)(?:dd|datadog)[_-]?(?:api|app|application)[_-]?key\\?["']?\s*[:=]\s*\\?["']?([a-f0-9]{32,40})(?-u:\b)"#,
        1,
        Check::None,
        Some(r"(?i)(?:dd|datadog)[_-]?(?:api|app|application)[_-]?key"),
    ),
    (
        // Grafana: Cloud API tokens `glc_`, service-account tokens `glsa_`.
        "grafana_token",
        r"(?-u:\b)glc_[A-Za-z0-9+/]{32,}={0,2}|(?-u:\b)glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // PlanetScale: service tokens, passwords, OAuth tokens.
        "planetscale_token",
        r"(?-u:\b)pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}",
        0,
        Check::None,
        None,
    ),
    (
        // Postman `PMAK-`, Pulumi `pul-`, Supabase `sbp_`/`sb_secret_`, Figma `figd_`,
        // Contentful `CFPAT-`, Prefect `pnu_`, Dynatrace `dt0c01.`.
        "saas_token",
        r"(?-u:\b)(?:PMAK-[a-f0-9]{24}-[a-f0-9]{34}|pul-[a-f0-9]{40}|sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{30,}|figd_[A-Za-z0-9_-]{40,}|CFPAT-[A-Za-z0-9_-]{43}|pnu_[A-Za-z0-9]{36}|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64})",
        0,
        Check::None,
        None,
    ),
    (
        // Airtable `pat<14>.<64 hex>`, apart from the others: its gate is `pat`, which most
        // outputs hold (`path`), and alone its regex looks for `pat` with `memchr` where the
        // alternation of nine prefixes went through every byte.
        "saas_token",
        r"(?-u:\b)pat[A-Za-z0-9]{14}\.[a-f0-9]{64}",
        0,
        Check::None,
        None,
    ),
    (
        // Notion: internal integration tokens `secret_` + 43, `ntn_`.
        "notion_token",
        r"(?-u:\b)(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,50})(?-u:\b)",
        0,
        Check::None,
        None,
    ),
    (
        // Mapbox secret tokens `sk.eyJ…`.
        "mapbox_token",
        r"(?-u:\b)sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}",
        0,
        Check::None,
        None,
    ),
    (
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        0,
        Check::None,
        None,
    ),
    // --- Credentials by their place: headers, URLs, command lines, connection strings.
    (
        // `Authorization: Bearer …` / `token …`, as a header or a JSON pair (escaped or not).
        "bearer_token",
        r#"(?i)(?-u:\b)(?:proxy-)?authorization\\?["']?\s*[:=]\s*\\?["']?\s*(?:bearer|token)\s+([A-Za-z0-9._~+/=-]{12,})"#,
        1,
        Check::Value,
        Some(r"(?i)authorization"),
    ),
    (
        // `Authorization: Basic <base64 of user:password>`.
        "basic_auth",
        r#"(?i)(?-u:\b)(?:proxy-)?authorization\\?["']?\s*[:=]\s*\\?["']?\s*basic\s+([A-Za-z0-9+/]{6,}={0,2})"#,
        1,
        Check::Literal,
        Some(r"(?i)authorization"),
    ),
    (
        // Any other scheme (`SSWS`, `Splunk`, `GenieKey`, `DeepL-Auth-Key`, `NTLM`, `Api-Key`)
        // or none: the credential after it.
        "authorization",
        r#"(?i)(?-u:\b)(?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?[ \t]*(?:[a-z][a-z0-9_.-]*[ \t]+)?([a-z0-9._~+/:-]{8,}=*)(?:[\s"'\\,;]|$)"#,
        1,
        Check::Header,
        Some(r"(?i)authorization"),
    ),
    (
        // The password in `scheme://user:password@host`, also with no user (`redis://:pw@host`),
        // and a token used as the user (`https://<token>@github.com`); also JSON-escaped
        // (`https:\/\/…`).
        "url_credentials",
        r"(?-u:\b)([a-zA-Z][a-zA-Z0-9+.-]*):\\?/\\?/(?:[^\s:/@'\x22\\]*:)?([^\s@/'\x22\\]+)@[^\s/'\x22\\]+",
        2,
        Check::Userinfo,
        Some(r":\\?/\\?/[^\s/@'\x22]*@"),
    ),
    (
        // MySQL / MariaDB clients: `-pPASSWORD` (attached; a bare `-p` prompts).
        "cli_password",
        r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump|mariadb-admin)(?-u:\b)[^\n|;&]*?\s-p('[^'\n]+'|"[^"\n]+"|[^\s'"-][^\s'"]*)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // Password flags of tools whose flag is a letter: `sshpass -p`, `docker login -p`,
        // `redis-cli -a`, `mongo -p`, `sqlcmd`/`bcp`/`zip -P`, `ldapsearch -w`, `openssl enc
        // -k`, `7z -pPW`. `redis-cli -p` and `mysql -P` are ports; a flag at the end prompts.
        "cli_password",
        r#"(?-u:\b)(?:(?:sshpass|(?:docker|podman|buildah|nerdctl|helm|oras)\s+(?:registry\s+)?login)(?-u:\b)[^\n|;&]*?\s-p\s*|redis-cli(?-u:\b)[^\n|;&]*?\s-a\s*|mongo(?:sh|dump|restore|export|import|files|stat|top)?(?-u:\b)[^\n|;&]*?\s-p\s+|(?:sqlcmd|bcp|osql|zip|unzip|zipcloak)(?-u:\b)[^\n|;&]*?\s-P\s+|ldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn|exop)(?-u:\b)[^\n|;&]*?\s-w\s+|openssl(?-u:\b)[^\n|;&]*?\s-k\s+|(?:7z|7za|7zz|7zr|rar|unrar) [^\n|;&]*?\s-h?p)('[^'\n]+'|"[^"\n]+"|[^\s'"-][^\s'"]*)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // Passwords as positional parts: `mysqladmin password PW`, `sqlplus user/PW@db`,
        // `redis-cli AUTH [user] PW`, `smbclient -U 'DOMAIN\user%PW'`.
        "cli_password",
        r#"(?-u:\b)(?:mysqladmin(?-u:\b)[^\n|;&]*?\spassword\s+|(?:sqlplus|sqlldr|expdp|impdp|rman)(?:\s+-\S+)*\s+(?:target[= ])?["']?[A-Za-z0-9_$#]+/|redis-cli(?-u:\b)[^\n|;&]*?\s(?:AUTH|auth)\s+(?:[^\s'"|;&<>]+\s+)?|(?:smbclient|rpcclient|smbmap|smbget)(?-u:\b)[^\n|;&]*?\s(?:-U|--user(?:name)?)[= ]?['"]?[^\s%'"]+%)('[^'\n]+'|"[^"\n]+"|[^\s'"|;&<>@-][^\s'"|;&<>@]*)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // `htpasswd -nb USER PW` (to standard output), `htpasswd -b [-c] FILE USER PW`.
        "cli_password",
        r#"(?-u:\b)htpasswd(?:[ \t]+-[A-Za-z]+)*?[ \t]+(?:-(?:[A-Za-z]*n[A-Za-z]*b|[A-Za-z]*b[A-Za-z]*n)[A-Za-z]*(?:[ \t]+-[A-Za-z]+)*|-[A-Za-z]*b[A-Za-z]*(?:[ \t]+-[A-Za-z]+)*[ \t]+[^\s|;&<>-]\S*)[ \t]+[^\s|;&<>-]\S*[ \t]+('[^'\n]+'|"[^"\n]+"|[^\s'"|;&<>]+)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // A credential echoed into what reads it from standard input: `echo PW | docker login
        // --password-stdin`, `printf '%s' PW | helm registry login --password-stdin`, `echo
        // TOKEN | gh auth login --with-token`, `echo user:PW | chpasswd`, `passwd --stdin`,
        // `docker secret create NAME -`.
        "cli_password",
        r#"(?-u:\b)(?:echo|printf)(?:[ \t]+-[neE]+)*[ \t]+(?:'%s(?:\\n)?'[ \t]+|"%s(?:\\n)?"[ \t]+)?('[^'\n]+'|"[^"\n]+"|[^\s'"|;&<>]+)[ \t]*\|[ \t]*(?:sudo[ \t]+)?[^\n|;&]*?(?:--password-stdin|--with-token|--token-stdin|--stdin|chpasswd|secret[ \t]+create)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // The same from a here-string: `docker login --password-stdin <<< PW`.
        "cli_password",
        r#"(?:--password-stdin|--with-token|--token-stdin|--stdin|chpasswd)[^\n|;&]*?<<<[ \t]*('[^'\n]+'|"[^"\n]+"|[^\s'"|;&<>]+)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // `--password PW`, `--password=PW`, `--db-password PW`, `--pass PW`; not `--password-stdin`.
        "cli_password",
        r#"(?:^|\s)--(?:[a-z0-9]+-)*(?:password|passwd|pass)(?:=|\s+)('[^'\n]+'|"[^"\n]+"|[^\s'"-][^\s'"]*)"#,
        1,
        Check::Literal,
        Some(r"-pass"),
    ),
    (
        // OpenSSL `-pass pass:PW`, `-passin pass:PW`, `-passout pass:PW`, `-password pass:PW`.
        "cli_password",
        r"(?:^|\s)-pass(?:in|out|word)?\s+pass:(\S+)",
        1,
        Check::Literal,
        Some(r"pass:"),
    ),
    (
        // `curl -u user:PW`, `curl --user user:PW`.
        "cli_password",
        r#"(?-u:\b)curl(?-u:\b)[^\n|;&]*?\s(?:-u\s*|--user[=\s]+)['"]?[^\s:'"]*:([^\s'"]+)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // Clients' password variables: `PGPASSWORD=`, `MYSQL_PWD=`, `REDISCLI_AUTH=`, `SSHPASS=`.
        "cli_password",
        r#"(?:^|[\s;&(+-])(?:export\s+)?(?:PGPASSWORD|MYSQL_PWD|REDISCLI_AUTH|SSHPASS)=('[^'\n]+'|"[^"\n]+"|[^\s'";&)]+)"#,
        1,
        Check::Literal,
        Some(r"(?:PGPASSWORD|MYSQL_PWD|REDISCLI_AUTH|SSHPASS)="),
    ),
    (
        // A tool's setting given on its command line: `aws configure set
        // aws_secret_access_key KEY`, `npm config set //host/:_authToken TOKEN`, `git config
        // --global NAME VALUE`; the setting's name decides.
        "high_entropy_value",
        r#"(?-u:\b)(?:config(?:ure)? set|git config)(?:[ \t]+--?[a-z][a-z-]*)*[ \t]+([^\s=]+)[ \t=]+("[^"\n]*"|'[^'\n]*'|[^\s"'`,;&|(){}<>\[\]]+)"#,
        2,
        Check::Named(Given::Arg),
        None,
    ),
    (
        // libpq keyword strings: `host=db user=app password=PW dbname=app`.
        "connection_string",
        r#"(?i)(?-u:\b)(?:host|hostaddr|dbname|user|port|sslmode|service)[ \t]*=[ \t]*\S+[ \t]+(?:[a-z_]+[ \t]*=[ \t]*\S+[ \t]+)*?password[ \t]*=[ \t]*('[^'\n]*'|[^\s'"]+)"#,
        1,
        Check::Literal,
        Some(r"(?i)password[ \t]*="),
    ),
    (
        // ADO.NET / ODBC / JDBC-style connection strings: `Server=…;User Id=…;Password=…`.
        "connection_string",
        r"(?i)(?-u:\b)(?:server|data source|host|address|addr|user id|uid|user|username|database|initial catalog|dsn|endpoint)\s*=[^;\r\n]*;(?:[^;\r\n]*;)*?\s*(?:password|pwd)\s*=\s*([^;\x22'\r\n]+)",
        1,
        Check::Literal,
        Some(r"(?i)(?:password|pwd)\s*="),
    ),
    (
        // The same with the password first: `Password=…;Server=…`.
        "connection_string",
        r"(?i)(?:^|[\s\x22'+-])(?:password|pwd)\s*=\s*([^;\x22'\r\n]+);\s*(?:server|data source|host|address|user id|uid|user|username|database|initial catalog)\s*=",
        1,
        Check::Literal,
        Some(r"(?i)(?:password|pwd)\s*="),
    ),
    // --- Credentials in config files a tool printed.
    (
        // .netrc: `machine HOST login USER password PW`, on one line or several.
        "password",
        r#"(?-u:\b)(?:machine\s+\S+|default)(?:\s+(?:login|account|port)\s+\S+)+\s+password\s+('[^'\n]+'|"[^"\n]+"|[^\s'"]+)"#,
        1,
        Check::Literal,
        Some(r"password\s+\S"),
    ),
    (
        // Docker and Podman registry auth (`"auth": "<base64 of user:password>"`, also
        // JSON-escaped), and .npmrc's `_auth=`.
        "registry_auth",
        r#"(?:\\?"auth\\?"[ \t]*:[ \t]*\\?"|(?-u:\b)_auth[ \t]*=[ \t]*"?)([A-Za-z0-9+/]{8,}={0,2})"#,
        1,
        Check::BasicCredential,
        None,
    ),
    (
        // Redis: `requirepass PW`, `masterauth PW` (redis.conf, `CONFIG SET`).
        "password",
        r#"(?i)(?-u:\b)(?:requirepass|masterauth)[ \t]+('[^'\n]+'|"[^"\n]+"|[^\s'"]+)"#,
        1,
        Check::Literal,
        None,
    ),
    (
        // An XML element named for a secret: Maven's `<password>`, `<privateKey>`,
        // `<apiToken>`; the name decides.
        "password",
        concat!(
            r"<([A-Za-z0-9_.:-]*",
            secret_words!(),
            r"[A-Za-z0-9_.:-]*)>([^<>\s][^<>\n]*)</[A-Za-z0-9_.:-]+>"
        ),
        2,
        Check::Named(Given::Element),
        Some(concat!(r"</[A-Za-z0-9_.:-]*", secret_words!())),
    ),
    (
        // `<add key="ClearTextPassword" value="PW" />` (NuGet.Config, app.config).
        "password",
        concat!(
            r#"key=\\?"([^"\\\n]*"#,
            secret_words!(),
            r#"[^"\\\n]*)\\?"[ \t]+value=\\?"([^"\\\n]+)\\?""#
        ),
        2,
        Check::Named(Given::Attribute),
        None,
    ),
    // --- Credentials by their name.
    (
        // JSON text (a tool's output, a JSON string inside a JSON value, escaped or not):
        // `"password": "…"`, `"Authorization": "…"`, `"clientSecret": "…"`; the key is then
        // judged like a structured key (see `sensitive_key`).
        "sensitive_key",
        r#"(?i)\\?"([A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|credentials?|authorization|(?:access|secret|private|signing|encryption|master|account)[_-]?key))\\?"\s*:\s*\\?"((?:[^"\\\r\n]|\\[^"\r\n])+)\\?""#,
        2,
        Check::Key,
        Some(
            r#"(?i)(?:password|passwd|passphrase|secret|token|key|credentials?|authorization)\\?"\s*:\s*\\?""#,
        ),
    ),
    (
        // password=..., "api_key": "...", SECRET_TOKEN=..., client_secret: ...
        "assignment",
        r#"(?i)(?-u:\b)[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?token|private[_-]?key|client[_-]?secret|credentials?)["']?\s*(?:=|:)\s*["']?([^\s"'`,;{}()<>\[\]]{4,})"#,
        1,
        Check::Value,
        Some(
            r#"(?i)(?:password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?token|private[_-]?key|client[_-]?secret|credentials?)["']?\s*[:=]"#,
        ),
    ),
    (
        // TOKEN=... and GITHUB_TOKEN=... env lines, but not max_tokens=4096 or "tokens_used": 5.
        "assignment",
        r#"(?m)(?:^|[\s;])(?:export\s+)?[A-Z0-9_]*TOKEN["']?\s*[:=]\s*["']?([^\s"'`,;]{8,})"#,
        1,
        Check::Value,
        Some(r#"TOKEN["']?\s*[:=]"#),
    ),
    (
        // A value assigned to a name that says it is a secret: env and config lines
        // (`SECRET_KEY_BASE=…`, `DB_PASS=…`, `token: …`), headers (`PRIVATE-TOKEN: …`),
        // flags (`--token=X`, `-Dgpg.passphrase=X`), URL parameters (`?access_token=`). The
        // name decides (`named_secret`): a password's is masked as given, any other secret's
        // only when it looks random, and an id, a digest or a label under an innocent name
        // (`RUN_ID=01ARZ…`) never. The word ends the name or a part of it (`SECRET_KEY_BASE`,
        // `npmAuthToken`; not `tokens = 3`).
        "high_entropy_value",
        concat!(
            r#"(?m)(?:^|[\s(;&|+>?:"'])(?:export[ \t]+|-D|--from-literal=|--?)?([A-Za-z0-9_.-]*"#,
            secret_words!(),
            r#"(?:[_.\-A-Z][A-Za-z0-9_.-]*)?)(?:[ \t]*=[ \t]*|:[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s"'`,;&|(){}<>\[\]-][^\s"'`,;&|(){}<>\[\]]*)"#
        ),
        2,
        Check::Named(Given::Line),
        Some(concat!(
            secret_words!(),
            r"(?:[_.\-A-Z][A-Za-z0-9_.-]*)?(?:[ \t]*=|:[ \t])"
        )),
    ),
    (
        // The same as a flag and its argument: `--token X`, `-storepass X`, `-ApiKey X`. Apart
        // from the rule above: its hint, a flag that ends in the name, keeps prose (`the
        // tokens are`) from waking the rule's regex.
        "high_entropy_value",
        concat!(
            r#"(?:^|[\s"'])(--?)([A-Za-z0-9_.-]*"#,
            secret_words!(),
            r#")[ \t]+("[^"\n]*"|'[^'\n]*'|[^\s"'`,;&|(){}<>\[\]-][^\s"'`,;&|(){}<>\[\]]*)"#
        ),
        3,
        Check::Named(Given::Flag),
        Some(concat!(r"-[A-Za-z0-9_.-]*", secret_words!(), r"[ \t]")),
    ),
    // --- What a reader's cut left of a secret.
    (
        // Readers keep a long tool output's head and tail around `[… N chars cut …]`; the word
        // on each side is a piece, maybe of a secret whose rule can no longer see it whole.
        "cut_fragment",
        r"([A-Za-z0-9_+/=.~-]{8,})\n\[… [0-9]+ chars cut …\]\n",
        1,
        Check::Fragment,
        Some(r"\n\[… [0-9]+ chars cut …\]\n"),
    ),
    (
        "cut_fragment",
        r"\n\[… [0-9]+ chars cut …\]\n([A-Za-z0-9_+/=.~-]{8,})",
        1,
        Check::Fragment,
        Some(r"\n\[… [0-9]+ chars cut …\]\n"),
    ),
];

impl Redactor {
    pub fn new(extra: &[ExtraPattern], allow: &[String]) -> Result<Redactor> {
        let mut rules: Vec<Rule> = BUILTIN
            .iter()
            .map(|(kind, re, group, check, hint)| Rule {
                kind: kind.to_string(),
                re: OnceLock::new(),
                pattern: Cow::Borrowed(*re),
                hint: *hint,
                hint_re: OnceLock::new(),
                group: *group,
                check: *check,
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
                    hint: None,
                    hint_re: OnceLock::new(),
                    pattern: Cow::Owned(p.regex.clone()),
                    re: OnceLock::from(re),
                    group,
                    check: Check::None,
                },
            );
        }
        let (user, builtin) = rules.split_at(extra.len());
        // The user's rules together, here: a set can exceed the size limit its patterns each
        // keep, and that is the config's error to report, not a panic later.
        let user = if user.is_empty() {
            None
        } else {
            Some(
                RegexSet::new(user.iter().map(|r| &*r.pattern))
                    .context("the redaction patterns together are too large to compile")?,
            )
        };
        let set = Prefilter::build(
            user,
            builtin
                .iter()
                .map(|r| r.hint.unwrap_or(&r.pattern).to_string())
                .collect(),
        );
        Ok(Redactor {
            set,
            rules,
            allow: allow.iter().cloned().collect(),
        })
    }

    /// Waits until the rules are compiled: before the work that masks on every core starts,
    /// where waiting cores would only take turns with the compiling one.
    pub fn ready(&self) {
        self.set.get();
    }

    /// Masks the secrets in one text.
    pub fn text<'a>(&self, text: &'a str, counts: &mut Counts) -> Cow<'a, str> {
        self.mask(text, counts, None)
    }

    /// Masks a JSON document: every string by the text rules, and the values of sensitive keys
    /// whatever they look like, as in a tool call's input.
    pub fn json(&self, v: &mut Value) -> Counts {
        let mut counts = Counts::default();
        self.value(v, &mut counts, &mut Seen::new());
        counts
    }

    /// `text`, adding each value it masks to `seen` (see `Seen`), if given.
    fn mask<'a>(
        &self,
        text: &'a str,
        counts: &mut Counts,
        mut seen: Option<&mut Seen>,
    ) -> Cow<'a, str> {
        let hits = self.set.get().matches(text);
        if hits.is_empty() {
            return Cow::Borrowed(text);
        }
        // Most texts named hold no secret: they are copied only when one is masked.
        let mut out = Cow::Borrowed(text);
        for (i, at) in hits {
            let rule = &self.rules[i];
            // Where the prefilter found the first match may be is a place in the text as it
            // was: of use while nothing is masked.
            let from = (rule.check.within_a_line() && matches!(out, Cow::Borrowed(_)))
                .then(|| text[..at].rfind('\n').map_or(0, |n| n + 1));
            let Some((masked_text, masked)) = self.apply(rule, &out, from) else {
                continue;
            };
            out = Cow::Owned(masked_text);
            for (kind, value) in masked {
                *counts.entry(kind.to_string()).or_default() += 1;
                if let Some(seen) = seen.as_deref_mut() {
                    seen.push((kind.to_string(), value));
                }
            }
        }
        out
    }

    /// `text` with the secrets `rule` finds masked, and each one's kind and value; `None` if
    /// it masked none. `from`: where its first match may begin, known (see
    /// `RuleSet::matches`) or else found by its hint: a rule whose matches lie within a line
    /// (`Check::within_a_line`) is run from the line of its hint's first match.
    fn apply<'r>(
        &self,
        rule: &'r Rule,
        text: &str,
        from: Option<usize>,
    ) -> Option<(String, Vec<(&'r str, String)>)> {
        let from = match (from, rule.hint) {
            (Some(from), _) => from,
            (None, None) => 0,
            (None, Some(hint)) => {
                let hint = rule
                    .hint_re
                    .get_or_init(|| Regex::new(hint).expect("built-in hint compiles"));
                if rule.check.within_a_line() {
                    let m = hint.find(text)?;
                    text[..m.start()].rfind('\n').map_or(0, |i| i + 1)
                } else if hint.is_match(text) {
                    0
                } else {
                    return None;
                }
            }
        };
        let mut masked = Vec::new();
        let re = rule
            .re
            .get_or_init(|| Regex::new(&rule.pattern).expect("built-in pattern compiles"));
        let rest = &text[from..];
        let replaced = re.replace_all(rest, |c: &Captures| {
            let w = c.get(0).unwrap().as_str();
            match self.judge(rule, c, rest) {
                Some((start, end, kind)) => {
                    masked.push((kind, w[start..end].to_string()));
                    format!("{}[REDACTED:{kind}]{}", &w[..start], &w[end..])
                }
                None => w.to_string(),
            }
        });
        (!masked.is_empty()).then(|| (format!("{}{replaced}", &text[..from]), masked))
    }

    /// What a match `c` of `rule` in `text` masks: the span of the match to replace (from its
    /// start) and the kind to name, or `None` when it holds no secret.
    fn judge<'r>(
        &self,
        rule: &'r Rule,
        c: &Captures,
        text: &str,
    ) -> Option<(usize, usize, &'r str)> {
        let whole = c.get(0)?;
        let secret = c.get(rule.group)?;
        let (mut start, mut end) = (secret.start(), secret.end());
        let value = secret.as_str();
        // `password = read_password()` assigns a call, not a secret.
        let called = rule.check != Check::None
            && whole.end() == secret.end()
            && text[secret.end()..].starts_with('(');
        if called || self.allow.contains(value) || value.contains("[REDACTED:") {
            return None;
        }
        let mut kind = rule.kind.as_str();
        match rule.check {
            Check::Key => {
                if !c
                    .get(1)
                    .is_some_and(|k| key_is_sensitive(k.as_str(), value))
                    || !passes(Check::Key, value)
                {
                    return None;
                }
                // A sensitive key's `Bearer x` keeps its scheme.
                start += split_scheme(value).0.len() + (value.len() - value.trim_start().len());
            }
            Check::Named(context) => {
                let name = c.get(if context == Given::Flag { 2 } else { 1 })?;
                let closed = |n: &str| {
                    let after = &text[secret.end()..];
                    after.starts_with("</")
                        && after[2..].starts_with(n)
                        && after[2 + n.len()..].starts_with('>')
                };
                if context == Given::Element && !closed(name.as_str()) {
                    return None;
                }
                let inner = unquote(value);
                start += inner.as_ptr() as usize - value.as_ptr() as usize;
                end = start + inner.len();
                if self.allow.contains(inner) {
                    return None;
                }
                kind = named_secret(
                    &text[whole.start()..name.start()],
                    name.as_str(),
                    &text[name.end()..secret.start()],
                    value,
                    context,
                )?;
            }
            Check::Userinfo => {
                let scheme = c.get(1)?.as_str();
                let http = ["http", "https"]
                    .iter()
                    .any(|s| scheme.eq_ignore_ascii_case(s));
                let secret = if text[..secret.start()].ends_with(':') {
                    !placeholder(value)
                } else {
                    http && token_like(value)
                };
                if !secret {
                    return None;
                }
            }
            check => {
                if !passes(check, value) {
                    return None;
                }
            }
        }
        Some((start - whole.start(), end - whole.start(), kind))
    }

    /// Masks a JSON value: every string by the text rules, and the values of sensitive keys
    /// (`password`, `Authorization`, `clientSecret`, ...) whatever they look like. The values
    /// masked are added to `seen`, for the texts that repeat the input.
    fn value(&self, v: &mut Value, counts: &mut Counts, seen: &mut Seen) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(r) = self.mask(s, counts, Some(seen)) {
                    *s = r;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.value(x, counts, seen)),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if (x.is_string() || x.is_array())
                        && key_is_sensitive(k, x.as_str().unwrap_or(""))
                    {
                        self.sensitive(x, counts, seen);
                        continue;
                    }
                    self.value(x, counts, seen);
                }
            }
            _ => {}
        }
    }

    /// The value of a sensitive key: a string is masked whole (keeping an auth scheme such as
    /// `Bearer `) unless it is a placeholder; an array's strings likewise.
    fn sensitive(&self, v: &mut Value, counts: &mut Counts, seen: &mut Seen) {
        match v {
            Value::String(s) => {
                // A rule that knows the format names it better.
                if let Cow::Owned(r) = self.mask(s, counts, Some(seen)) {
                    *s = r;
                    return;
                }
                let (scheme, secret) = split_scheme(s);
                if secret.is_empty() || self.allow.contains(secret) || placeholder(secret) {
                    return;
                }
                seen.push(("sensitive_key".into(), secret.to_string()));
                *s = format!("{scheme}[REDACTED:sensitive_key]");
                *counts.entry("sensitive_key".into()).or_default() += 1;
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.sensitive(x, counts, seen)),
            other => self.value(other, counts, seen),
        }
    }

    /// Masks one message of a session (see `session`), adding what it masked to `counts`.
    pub fn message(&self, m: &mut crate::model::Message, counts: &mut Counts) {
        // An output its reader masked before cutting it (see `adapter::OutputMask`):
        // masked again, what is left of it could only lose pieces next to the cut.
        match m.state.as_mut().and_then(|s| s.masked.take()) {
            Some(masked) => add_counts(counts, masked),
            None => {
                if let Cow::Owned(r) = self.text(&m.content, counts) {
                    m.content = r;
                }
            }
        }
        // A transcript's one-line form repeats its call.
        if let Some(line) = m.state.as_mut().and_then(|s| s.oneline.as_mut())
            && let Cow::Owned(r) = self.text(line, counts)
        {
            *line = r;
        }
        let mut seen = Vec::new();
        if let Some(input) = &mut m.tool_input {
            self.value(input, counts, &mut seen);
        }
        // The key argument repeats part of the input: masked, but not counted twice.
        if let Some(key) = &mut m.key_arg {
            if let Cow::Owned(r) = self.text(key, &mut Counts::new()) {
                *key = r;
            }
            mask_seen(key, &seen, &mut Counts::new());
        }
        // A call's free text may repeat what its input held, and the key argument may be the
        // input as JSON, where the rules cannot see an escaped value (`\nDB_PASS=…`).
        mask_seen(&mut m.content, &seen, counts);
        m.metadata.for_each_value_mut(|k, v| {
            if k != "images" && k != "image" {
                self.value(v, counts, &mut Vec::new());
            }
        });
    }

    /// Masks every text of a session a writer could emit: messages, tool inputs, title, todos,
    /// and the free-form facts kept in `extra` (images' base64 data is left alone: no rule can
    /// match inside it, and scanning megabytes of it would only cost time).
    pub fn session(&self, s: &mut Session) -> Counts {
        // Messages are independent; large sessions spread over the cores. Each core's prefilter
        // first builds the DFA states the text needs (a few milliseconds), so a small session
        // is masked on one.
        let text: usize = s
            .messages
            .iter()
            .map(|m| m.content.len() + m.tool_input.as_ref().map_or(0, strings_len))
            .sum();
        let mut counts = self.messages(&mut s.messages, text >= (4 << 20));
        add_counts(&mut counts, self.header(s));
        counts
    }

    /// Masks `messages` (see `message`), on every core when `spread`, else on this one.
    pub fn messages(&self, messages: &mut [crate::model::Message], spread: bool) -> Counts {
        use rayon::prelude::*;
        messages
            .par_iter_mut()
            .with_min_len(if spread { 1 } else { usize::MAX })
            .fold(Counts::new, |mut counts, m| {
                self.message(m, &mut counts);
                counts
            })
            .reduce(Counts::new, |mut a, b| {
                add_counts(&mut a, b);
                a
            })
    }

    /// Masks what `show` prints of a session besides its messages: title, todos, files touched,
    /// the git remote, branch and commit, and the free-form facts kept in `extra`.
    pub fn header(&self, s: &mut Session) -> Counts {
        let mut counts = Counts::new();
        // The git remote is a URL that can carry a token (`https://oauth2:<token>@host/…`),
        // and every writer, the Codex thread index, the export header and `show` take it from
        // here.
        let git = s.git.iter_mut().flat_map(|g| {
            [&mut g.remote, &mut g.branch, &mut g.commit]
                .into_iter()
                .flatten()
        });
        for t in s
            .title
            .iter_mut()
            .chain(s.files_touched.iter_mut())
            .chain(git)
        {
            if let Cow::Owned(r) = self.text(t, &mut counts) {
                *t = r;
            }
        }
        for t in &mut s.todos {
            if let Cow::Owned(r) = self.text(&t.text, &mut counts) {
                t.text = r;
            }
        }
        for v in s.extra.values_mut() {
            self.value(v, &mut counts, &mut Vec::new());
        }
        counts
    }

    /// Masks a listing's title.
    pub fn title(&self, t: &mut Option<String>) {
        if let Some(text) = t
            && let Cow::Owned(r) = self.text(text, &mut Counts::new())
        {
            *text = r;
        }
    }
}

/// A key's words, lower-case: `clientSecret`, `client-secret`, `CLIENT_SECRET` and
/// `X-Api-Key` give `client secret` and `x api key`; `APIKey` gives `api key`.
fn key_words(key: &str) -> Vec<String> {
    let chars: Vec<char> = key.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_ascii_uppercase() && !word.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                words.push(std::mem::take(&mut word));
            }
        }
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Last words that name a secret (`db_password`, `clientSecret`, `PGPASSWORD`, `X-Api-Key`).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "apikey",
    "credential",
    "credentials",
    "authorization",
];

/// Last two words that name a secret key (but not `primary_key`, `cache_key`, `sort_key`).
const SECRET_KEYS: &[&str] = &[
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "accountkey",
];

/// `*_token` keys that hold no credential: tokenizers' special tokens, pagination cursors.
const PLAIN_TOKENS: &[&str] = &[
    "eos_token",
    "bos_token",
    "pad_token",
    "unk_token",
    "cls_token",
    "sep_token",
    "mask_token",
    "sos_token",
    "start_token",
    "end_token",
    "stop_token",
    "special_token",
    "added_token",
    "page_token",
    "next_token",
    "continuation_token",
    "pagination_token",
    "sync_token",
    "cancel_token",
    "cancellation_token",
];

/// First words of flags about a secret (`is_secret`, `has_password`, `use_token`), which hold
/// no secret.
const FLAG_WORDS: &[&str] = &[
    "is", "has", "use", "uses", "requires", "require", "needs", "allow", "enable", "show", "hide",
    "with", "no", "skip",
];

/// Whether a JSON key names a secret. Case and separators are normalised (`key_words`); the
/// last word must be a secret's name (`password`, `secret`, `token`, `apikey`, `credentials`,
/// `authorization`, or a word ending so: `PGPASSWORD`, `accessToken`) or the last two a secret
/// key's (`api_key`, `private_key`, `secret_access_key`). Plurals and counts never are
/// (`max_tokens`, `tokens_used`, `token_count`, `secret_santa`), nor special and paging tokens
/// (`eos_token`, `next_page_token`), nor flags (`is_secret`, `has_password`). A bare `token` is also a tokenizer's piece of text
/// (`{"token": " Hello", "logprob": -0.2}`): its value must be 8 or more characters, no spaces.
fn key_is_sensitive(key: &str, value: &str) -> bool {
    // Most keys (`command`, `file_path`, `kind`) name none of these: no need to split them.
    let named = [
        "pass",
        "secret",
        "token",
        "key",
        "credential",
        "authorization",
    ]
    .iter()
    .any(|w| {
        key.as_bytes()
            .windows(w.len())
            .any(|x| x.eq_ignore_ascii_case(w.as_bytes()))
    });
    if !named {
        return false;
    }
    let words = key_words(key);
    let Some(last) = words.last() else {
        return false;
    };
    if words.len() > 1 && FLAG_WORDS.contains(&words[0].as_str()) {
        return false;
    }
    if words.len() == 1 && last == "token" {
        return value.chars().count() >= 8 && !value.contains(char::is_whitespace);
    }
    if last.ends_with("token") {
        let joined = words.join("_");
        return !PLAIN_TOKENS.iter().any(|t| joined.ends_with(t));
    }
    let two = match words.len() {
        1 => last.clone(),
        n => format!("{}{last}", words[n - 2]),
    };
    SECRET_WORDS.iter().any(|w| last.ends_with(w)) || SECRET_KEYS.iter().any(|k| two.ends_with(k))
}

/// `Bearer abc` -> (`Bearer `, `abc`): an auth scheme is kept, the credential masked.
fn split_scheme(v: &str) -> (&str, &str) {
    let t = v.trim();
    if let Some((scheme, rest)) = t.split_once(' ')
        && ["bearer", "basic", "token", "digest", "bot", "apikey"]
            .contains(&scheme.to_ascii_lowercase().as_str())
    {
        return (&t[..scheme.len() + 1], rest.trim());
    }
    ("", t)
}

/// What masking a tool call's input masked, `(kind, value)`: the texts that repeat the input
/// are masked of the same values (`mask_seen`).
type Seen = Vec<(String, String)>;

/// Replaces what masking an input masked wherever a text repeats it (a call's key argument,
/// its free text), as it is and escaped as in JSON. Values under 4 characters are not
/// searched for: they would match anywhere.
fn mask_seen(text: &mut String, seen: &Seen, counts: &mut Counts) {
    for (kind, v) in seen {
        let escaped = serde_json::to_string(v).unwrap_or_default();
        let escaped = escaped
            .get(1..escaped.len().saturating_sub(1))
            .unwrap_or("");
        for v in [v.as_str(), escaped] {
            if v.len() >= 4 && text.contains(v) {
                *counts.entry(kind.clone()).or_default() += text.matches(v).count();
                *text = text.replace(v, &format!("[REDACTED:{kind}]"));
            }
        }
    }
}

/// A value that stands for a secret instead of being one: a reference (`${VAR}`, `$(cmd)`,
/// `{{ var }}`, `%VAR%`, `<your-key>`, `process.env.X`), a mask (`****`, `xxxx`, `...`), a
/// literal or a word such as `true`, `null`, `changeme`, `password`, `your_api_key`.
fn placeholder(value: &str) -> bool {
    let v = value.trim_matches(|c| c == '"' || c == '\'' || c == '\\');
    let lower = v.to_ascii_lowercase();
    v.is_empty()
        || v.starts_with('$')
        || v.starts_with('<')
        || v.starts_with('{')
        || v.starts_with('%')
        || v.starts_with("[REDACTED")
        || v.chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '-' | '_' | '•' | '#'))
        || [
            "true",
            "false",
            "null",
            "none",
            "nil",
            "undefined",
            "changeme",
            "change_me",
            "example",
            "password",
            "passwd",
            "pass",
            "secret",
            "token",
            "redacted",
            "hidden",
            "masked",
            "required",
            "optional",
            "string",
            "placeholder",
            "dummy",
            "todo",
            "tbd",
            "n/a",
            "include",
            "omit",
            "same-origin",
        ]
        .contains(&lower.as_str())
        || lower.starts_with("your")
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env.")
        || lower.starts_with("self.")
        || lower.starts_with("config.")
        || lower.starts_with("settings.")
}

/// Whether an assigned value is a secret rather than a placeholder, a number or a reference.
fn passes(check: Check, value: &str) -> bool {
    match check {
        Check::None => return true,
        Check::Literal => return !placeholder(value),
        Check::Key => return !placeholder(split_scheme(value).1),
        Check::Fragment => return fragment(value),
        Check::Header => return !parameter_name(value) && passes(Check::Value, value),
        Check::BasicCredential => return basic_credential(value),
        Check::Jwk => return jwk_private(value),
        Check::Value | Check::Named(_) | Check::Userinfo => {}
    }
    let v = value.trim_matches(|c| c == '"' || c == '\'');
    if placeholder(v) || v.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return false;
    }
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
    if identifier {
        return false;
    }
    true
}

/// A piece of a cut word that could belong to a token: letters mixed with digits or with
/// both cases, or a known token prefix. A plain word (`compiling`) or a path of words
/// (`/home/dev/projects`) is kept.
fn fragment(v: &str) -> bool {
    let lower = v.chars().any(|c| c.is_ascii_lowercase());
    let upper = v.chars().any(|c| c.is_ascii_uppercase());
    let digit = v.chars().any(|c| c.is_ascii_digit());
    let prefixed = [
        "npm_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "sk-",
        "sk_",
        "rk_",
        "xox",
        "xapp-",
        "hf_",
        "SG.",
        "AKIA",
        "ASIA",
        "AIza",
        "eyJ",
        "dckr_",
        "pypi-",
        "hvs.",
        "hvb.",
        "ops_",
        "dp.",
        "shpat_",
        "lin_api_",
        "sntry",
        "dop_v1_",
        "NRAK-",
        "gsk_",
        "r8_",
        "xai-",
        "pplx-",
        "whsec_",
        "rubygems_",
        "AGE-SECRET-",
    ]
    .iter()
    .any(|p| v.starts_with(p));
    (prefixed && v.len() >= 8) || [lower, upper, digit].iter().filter(|b| **b).count() >= 2
}

/// Random-looking enough to be a key or a token where its name says it is one: 16 or more
/// characters of mixed classes and high entropy, or 32 or more hex digits (128 bits: a hex
/// secret, not a short id); not a path, a URL or words.
fn secret_value(v: &str) -> bool {
    if v.len() < 16
        || v.contains(char::is_whitespace)
        || v.contains("://")
        || (v.starts_with(['/', '~', '.']) && v.contains('/'))
    {
        return false;
    }
    let digits = v.strip_prefix("0x").unwrap_or(v);
    if digits.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return digits.chars().filter(char::is_ascii_hexdigit).count() >= 32;
    }
    let classes = [
        v.chars().any(|c| c.is_ascii_lowercase()),
        v.chars().any(|c| c.is_ascii_uppercase()),
        v.chars().any(|c| c.is_ascii_digit()),
    ];
    classes.iter().filter(|b| **b).count() >= 2 && entropy(v) >= 3.3
}

/// `value` without the quotes around it, if any.
fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

/// What a name says its value is.
#[derive(Clone, Copy, PartialEq, Debug)]
enum NameKind {
    Password,
    /// A key, token, secret, credential, salt.
    Secret,
}

/// Words that make a name a password's (`DB_PASS`, `-storepass`, `keyStorePassword`).
const PASSWORD_NAMES: &[&str] = &[
    "pass",
    "passwd",
    "password",
    "passphrase",
    "pwd",
    "pw",
    "passin",
    "passout",
    "storepass",
    "keypass",
    "srcstorepass",
    "deststorepass",
    "srckeypass",
    "destkeypass",
    "kspass",
];

/// Words that make a name a secret's (`SECRET_KEY_BASE`, `X-Vault-Token`, `SIGNING_SALT`).
const SECRET_NAMES: &[&str] = &[
    "secret",
    "secrets",
    "token",
    "key",
    "apikey",
    "auth",
    "credential",
    "credentials",
    "creds",
    "private",
    "privkey",
    "salt",
    "bearer",
    "hmac",
    "jwt",
];

/// Last words of names that hold something about a secret, not the secret: where it is, what
/// it is called, how long it lives (`TOKEN_URL`, `SECRET_NAME`, `AWS_ACCESS_KEY_ID`,
/// `PASSWORD_MIN_LENGTH`, `SSH_AUTH_SOCK`).
#[rustfmt::skip]
const NOT_SECRET_TAILS: &[&str] = &[
    "id", "ids", "path", "paths", "file", "files", "dir", "directory", "name", "names", "url",
    "urls", "uri", "host", "hostname", "port", "type", "types", "size", "length", "len", "count",
    "version", "region", "arn", "enabled", "disabled", "enable", "mode", "ttl", "expiry", "expires",
    "expiration", "timeout", "header", "prefix", "suffix", "hash", "algorithm", "alg", "format",
    "user", "username", "email", "login", "field", "policy", "provider", "scope", "scopes",
    "endpoint", "env", "ref", "location", "kind", "method", "fingerprint", "label", "hint",
    "domain", "server", "issuer", "audience", "account", "table", "column", "index", "limit", "max",
    "min", "rotation", "store", "manager", "helper", "command", "cmd", "var", "variable", "flag",
    "pattern", "regex", "reset", "callback", "redirect", "namespace", "group", "role", "template",
    "backend", "strategy", "sock", "socket", "service", "level", "required", "optional", "source",
    "date", "time", "at", "created", "updated", "lifetime", "duration", "interval", "bytes", "bits",
];

/// Words before `key` that make it a key into data, not a secret (`CACHE_KEY`,
/// `--idempotency-key`, `partition_key`).
const DATA_KEYS: &[&str] = &[
    "cache",
    "sort",
    "partition",
    "primary",
    "foreign",
    "idempotency",
    "dedup",
    "dedupe",
    "deduplication",
    "routing",
    "lookup",
    "object",
    "row",
    "shard",
    "index",
    "unique",
    "composite",
];

/// What `name` says its value is, by its words (`key_words`): a password's, another
/// secret's, or neither. Flags about a secret (`USE_TOKEN`), what only describes one (see
/// `NOT_SECRET_TAILS`), keys into data (`DATA_KEYS`), public keys, tokenizers' and paging
/// tokens are neither, nor is `PWD` (the shell's working directory).
fn name_kind(name: &str) -> Option<NameKind> {
    let words = key_words(name);
    let last = words.last()?;
    let data_key = words
        .windows(2)
        .any(|w| w[1] == "key" && DATA_KEYS.contains(&w[0].as_str()));
    if words.len() > 1 && FLAG_WORDS.contains(&words[0].as_str())
        || words == ["pwd"]
        || data_key
        || NOT_SECRET_TAILS.contains(&last.as_str())
        || words
            .iter()
            .any(|w| ["public", "pub", "publishable"].contains(&w.as_str()))
    {
        return None;
    }
    let joined = words.join("_");
    if PLAIN_TOKENS.iter().any(|t| joined.ends_with(t)) {
        return None;
    }
    let ends = |w: &str, ends: &[&str]| ends.iter().any(|e| w.ends_with(e));
    if words.iter().any(|w| {
        PASSWORD_NAMES.contains(&w.as_str()) || ends(w, &["password", "passwd", "passphrase"])
    }) {
        return Some(NameKind::Password);
    }
    words
        .iter()
        .any(|w| SECRET_NAMES.contains(&w.as_str()) || ends(w, &["token", "secret", "key"]))
        .then_some(NameKind::Secret)
}

/// The kind to mask `value` as, assigned to `name` after `prefix` (`export `, `--`, `-D`) and
/// `sep` (`=`, `: `, a space), or `None` if it is no secret. A password is masked as given
/// where a value can only be literal (quoted, a flag's, an uppercase env line's, a setting's,
/// an element's), and elsewhere (`password = user_input` in code) as an assignment is;
/// another secret only when it looks random (`secret_value`).
fn named_secret(
    prefix: &str,
    name: &str,
    sep: &str,
    value: &str,
    context: Given,
) -> Option<&'static str> {
    let kind = name_kind(name)?;
    let flag = prefix.ends_with('-') || prefix.ends_with("-D") || prefix.ends_with('=');
    let inner = unquote(value);
    if inner.is_empty() || placeholder(inner) {
        return None;
    }
    match kind {
        NameKind::Password => {
            let env = sep == "=" && !name.chars().any(|c| c.is_ascii_lowercase());
            let literal = inner.len() < value.len() || flag || env || context != Given::Line;
            let ok = if literal {
                inner.chars().count() >= 3
            } else {
                passes(Check::Value, inner)
            };
            ok.then_some("password")
        }
        NameKind::Secret => secret_value(inner).then_some("high_entropy_value"),
    }
}

/// A URL's user that is a token, not a name: 20 or more characters with letters and digits
/// (`https://<token>@github.com`, not `https://build-bot@host`).
fn token_like(user: &str) -> bool {
    user.len() >= 20
        && user.chars().any(|c| c.is_ascii_digit())
        && user.chars().any(|c| c.is_ascii_alphabetic())
        && !user.contains('.')
}

/// An `Authorization` parameter's name (`username=` of `Digest username="…"`).
fn parameter_name(v: &str) -> bool {
    v.ends_with('=')
        && v.trim_end_matches('=')
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '_')
}

/// Whether `v` is base64 of `user:password` (both parts printable, neither empty).
fn basic_credential(v: &str) -> bool {
    let Some(bytes) = base64_decode(v) else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return false;
    };
    text.split_once(':').is_some_and(|(user, password)| {
        !user.is_empty() && !password.is_empty() && !text.chars().any(char::is_control)
    })
}

/// Standard base64, padded or not; `None` for anything else.
fn base64_decode(v: &str) -> Option<Vec<u8>> {
    let digits = v.trim_end_matches('=');
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for b in digits.bytes() {
        let d = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// Whether a JSON Web Key's text holds a private member: `d` (RSA, EC, OKP) or `k` (oct).
fn jwk_private(v: &str) -> bool {
    ["d", "k"]
        .iter()
        .any(|m| v.contains(&format!("\"{m}\"")) || v.contains(&format!("\\\"{m}\\\"")))
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

    /// A rule's hint is all the prefilter looks for, so it must be found in every match of the
    /// rule: checked on matches of every hinted rule, whatever the case and the spacing.
    /// `gates.rs` as the rules require it: for each built-in rule, the byte strings its pattern
    /// (its hint, if any) must start or end with, by `regex-syntax`'s literal extraction, the
    /// longer shortest of the two, each cut to its first 12 bytes; none where neither is a
    /// finite set of strings of at least three bytes. Letters are lower-cased, since the gates
    /// are matched ignoring ASCII case.
    fn gates_table() -> String {
        use regex_syntax::hir::literal::{ExtractKind, Extractor};
        let mut out = String::from(
            "//! Generated by `redact::tests::the_gates_are_what_each_rule_requires`: after changing\n\
             //! a built-in rule, run it with SESSION_RELAY_WRITE_GATES=1. For each built-in rule, in\n\
             //! order, byte strings one of which every text it matches holds (ASCII letters in lower\n\
             //! case: they are matched ignoring ASCII case), or `None` for a rule without such strings.\n\n\
             #[rustfmt::skip]\n\
             pub(super) const GATES: &[Option<&[&[u8]]>] = &[\n",
        );
        for (i, (kind, re, _, _, hint)) in BUILTIN.iter().enumerate() {
            let hir = regex_syntax::parse(hint.unwrap_or(re)).expect("built-in pattern parses");
            let hir = lower_ascii(&hir);
            let mut best: Option<Vec<Vec<u8>>> = None;
            for side in [ExtractKind::Prefix, ExtractKind::Suffix] {
                let seq = Extractor::new().kind(side).extract(&hir);
                let Some(literals) = seq.literals() else {
                    continue;
                };
                // A required string's first bytes are required too, and twelve tell a
                // secret's prefix well enough: an automaton of the longer strings builds
                // slower, for no fewer texts named.
                let mut strings: Vec<Vec<u8>> = literals
                    .iter()
                    .map(|l| l.as_bytes()[..l.len().min(12)].to_ascii_lowercase())
                    .collect();
                strings.sort();
                strings.dedup();
                // A text that holds a string holds every string in it: the longer adds nothing.
                let all = strings.clone();
                strings.retain(|s| {
                    !all.iter()
                        .any(|t| t.len() < s.len() && s.windows(t.len()).any(|w| w == &t[..]))
                });
                let shortest = |s: &[Vec<u8>]| s.iter().map(Vec::len).min().unwrap_or(0);
                if shortest(&strings) >= 3
                    && best
                        .as_ref()
                        .is_none_or(|b| shortest(&strings) > shortest(b))
                {
                    best = Some(strings);
                }
            }
            out.push_str(&format!("    /* {i} {kind} */ "));
            match best {
                None => out.push_str("None,\n"),
                Some(strings) => {
                    let quoted: Vec<String> = strings
                        .iter()
                        .map(|s| {
                            let body: String = s
                                .iter()
                                .map(|&b| match b {
                                    b'"' | b'\\' => format!("\\{}", b as char),
                                    0x20..=0x7e => (b as char).to_string(),
                                    _ => format!("\\x{b:02x}"),
                                })
                                .collect();
                            format!("b\"{body}\"")
                        })
                        .collect();
                    out.push_str(&format!("Some(&[{}]),\n", quoted.join(", ")));
                }
            }
        }
        out.push_str("];\n");
        out
    }

    fn replace_bytes(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(hay.len());
        let mut i = 0;
        while i < hay.len() {
            if hay[i..].starts_with(from) {
                out.extend_from_slice(to);
                i += from.len();
            } else {
                out.push(hay[i]);
                i += 1;
            }
        }
        out
    }

    /// What `hir` matches in a text as the gates are looked for in it (`gate_text`): each
    /// character of its literals and classes mapped as that text's are (ASCII letters to lower
    /// case, `GATE_FOLDS`), so that whatever `hir` matches in a text, this matches in the text
    /// so mapped. A case-insensitive word is then one string, not one for each mix of cases
    /// and long `s`: the extraction gave up on the longer words (`password`, `session_token`)
    /// and those rules had no gate.
    fn lower_ascii(hir: &regex_syntax::hir::Hir) -> regex_syntax::hir::Hir {
        use regex_syntax::hir::{
            Capture, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir,
            HirKind, Repetition,
        };
        match hir.kind() {
            HirKind::Literal(l) => {
                let mut bytes = l.0.to_ascii_lowercase();
                for (from, to) in GATE_FOLDS {
                    let to = to.encode_utf8(&mut [0; 4]).as_bytes().to_vec();
                    bytes = replace_bytes(&bytes, from.encode_utf8(&mut [0; 4]).as_bytes(), &to);
                }
                Hir::literal(bytes)
            }
            HirKind::Class(Class::Unicode(c)) => {
                // The upper-case letters move down; the rest stays.
                let mut upper = c.clone();
                upper.intersect(&ClassUnicode::new([ClassUnicodeRange::new('A', 'Z')]));
                let mut class = c.clone();
                class.difference(&upper);
                class.union(&ClassUnicode::new(upper.iter().map(|r| {
                    let down = |ch: char| char::from(ch as u8 + 32);
                    ClassUnicodeRange::new(down(r.start()), down(r.end()))
                })));
                for (from, to) in GATE_FOLDS {
                    let one = ClassUnicode::new([ClassUnicodeRange::new(from, from)]);
                    let mut hit = class.clone();
                    hit.intersect(&one);
                    if hit.iter().next().is_some() {
                        class.difference(&one);
                        class.union(&ClassUnicode::new([ClassUnicodeRange::new(to, to)]));
                    }
                }
                Hir::class(Class::Unicode(class))
            }
            HirKind::Class(Class::Bytes(c)) => {
                let mut upper = c.clone();
                upper.intersect(&ClassBytes::new([ClassBytesRange::new(b'A', b'Z')]));
                let mut class = c.clone();
                class.difference(&upper);
                class.union(&ClassBytes::new(
                    upper
                        .iter()
                        .map(|r| ClassBytesRange::new(r.start() + 32, r.end() + 32)),
                ));
                Hir::class(Class::Bytes(class))
            }
            HirKind::Empty | HirKind::Look(_) => hir.clone(),
            HirKind::Repetition(r) => Hir::repetition(Repetition {
                sub: Box::new(lower_ascii(&r.sub)),
                ..r.clone()
            }),
            HirKind::Capture(c) => Hir::capture(Capture {
                sub: Box::new(lower_ascii(&c.sub)),
                ..c.clone()
            }),
            HirKind::Concat(subs) => Hir::concat(subs.iter().map(lower_ascii).collect()),
            HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(lower_ascii).collect()),
        }
    }

    /// The gates a relay goes by are those the rules require (`gates_table`), and each is sound:
    /// every match of the rule holds one of them. The table is kept in the source so that
    /// a relay never parses the rules to find them.
    #[test]
    fn the_gates_are_what_each_rule_requires() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/redact/gates.rs");
        let want = gates_table();
        if std::env::var_os("SESSION_RELAY_WRITE_GATES").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap();
        assert!(
            have == want,
            "src/redact/gates.rs is not what the built-in rules require: run \
             `SESSION_RELAY_WRITE_GATES=1 cargo test --lib the_gates_are_what_each_rule_requires`"
        );
        assert_eq!(gates::GATES.len(), BUILTIN.len());
        // Each rule without a gate is a regex pass over every text a relay masks: the two
        // whose formats start with no string of three bytes, and no more.
        let ungated: Vec<&str> = BUILTIN
            .iter()
            .zip(gates::GATES)
            .filter(|(_, g)| g.is_none())
            .map(|(r, _)| r.0)
            .collect();
        assert_eq!(ungated, ["discord_token", "twilio_key"]);
    }

    #[test]
    fn every_hint_is_found_in_every_match_of_its_rule() {
        let texts = [
            "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8sT4uV1w",
            "AWS_SECRET_KEY_ID : 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8sT4uV1w'",
            "token cioAbCdEfGhIjKlMnOpQrStUvWxYz012345 done",
            "+cioAbCdEfGhIjKlMnOpQrStUvWxYz012345",
            " EAAAl0nGeNoUgHtOk3n_sHaPe-0123456789abcdefghijABCDEFGHIJ01234567 ",
            "square: EAAAl0nGeNoUgHtOk3n_sHaPe-0123456789abcdefghijABCDEFGHIJ01234567",
            "mailgun key-0123456789abcdef0123456789abcdef ok",
            "X-POSTMARK-SERVER-API-TOKEN: 01234567-89ab-cdef-0123-456789abcdef",
            "postmark_account_token=\\\"01234567-89ab-cdef-0123-456789abcdef",
            "DD_API_KEY=0123456789abcdef0123456789abcdef",
            "datadog-application-key: '0123456789abcdef0123456789abcdef01234567'",
            "Authorization: Bearer abcdefghijklmnop.qrst",
            "proxy-authorization=token abcdefghijklmnop",
            "AUTHORIZATION: Basic dXNlcjpwYXNzd29yZA==",
            "mysqldump --password=dumpPassword --all-databases",
            "deploy --db-admin-passwd 'hunter2 hunter2'",
            "login --pass \"s3cr3t\"",
            "openssl enc -passin pass:hunter22 -in x",
            "openssl req -passout  pass:hunter22",
            "export PGPASSWORD=pgpassword; psql",
            "(SSHPASS='sshPassWord' sshpass -e ssh x)",
            "Password=hunter2;Server=db.internal;",
            "'pwd = hunter2; user id=sa",
            "export API_TOKEN=AbCdEf0123456789AbCdEf0123",
            "> SERVICE_KEY = \"AbCdEf0123456789/AbCdEf0123+==\"",
            "log\n[… 5 chars cut …]\nMIIEow+/AbC\nxyz==\n-----END RSA PRIVATE KEY-----\n",
            "b3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "curl -H 'Authorization: SSWS 00rl3FEaGdRYMzGigFwTSk_HJVAgH' https://okta",
            "PROXY-AUTHORIZATION = NTLM TlRMTVNTUAABFyQCcYfQPS6e",
            "{\"remote\":\"https:\\/\\/26656cfc1561a28eed7f685c955901662d7047ed@github.com\\/a\"}",
            "postgres://app:pw@db and redis://:pw@cache",
            "psql \"host=db port=5432 user=app\tPASSWORD = 'x y'\"",
            "<settings><Password>pw</Password><apiToken>t</apiToken></settings>",
            "{\\\"kty\\\": \\\"oct\\\", \\\"k\\\": \\\"GawgguFyGrWKav7AX4VKUg\\\"}",
            "export DB_PASS=x\n  token: abc\n--api-key\tK\n-Dgpg.passphrase=p ?access_token=t",
        ];
        let redactor = Redactor::new(&[], &[]).unwrap();
        let mut checked = std::collections::BTreeMap::<&str, usize>::new();
        for rule in redactor.rules.iter().filter(|r| r.hint.is_some()) {
            let re = Regex::new(&rule.pattern).unwrap();
            let hint = Regex::new(rule.hint.unwrap()).unwrap();
            for text in texts {
                for m in re.find_iter(text) {
                    assert!(
                        hint.is_match(m.as_str()),
                        "{}: hint {:?} is not in the match {:?}",
                        rule.kind,
                        rule.hint,
                        m.as_str()
                    );
                    *checked.entry(rule.kind.as_str()).or_default() += 1;
                }
            }
        }
        for kind in [
            "aws_secret_key",
            "crates_io_token",
            "square_token",
            "mailgun_key",
            "postmark_token",
            "datadog_key",
            "bearer_token",
            "basic_auth",
            "cli_password",
            "connection_string",
            "high_entropy_value",
            "authorization",
            "url_credentials",
            "private_key",
            "password",
        ] {
            assert!(
                checked.get(kind).copied().unwrap_or(0) >= 1,
                "no match of {kind}: {checked:?}"
            );
        }
        assert!(checked["cli_password"] >= 6, "{checked:?}");
    }

    /// The prefilter (built-in rules by their gates or regexes, the user's as a `RegexSet`) names the
    /// rules a `RegexSet` of every rule's pattern names, in the same order, on generated texts
    /// that hold secrets, near misses, cut markers, line starts and non-ASCII text.
    /// The rules the prefilter names for a text: every rule a `RegexSet` of the same patterns
    /// names, and besides those only gated rules whose gate the text holds (their own regex
    /// then finds nothing to mask).
    fn assert_names_as_a_regex_set(redactor: &Redactor, reference: &RegexSet, text: &str) {
        let want: Vec<usize> = reference.matches(text).into_iter().collect();
        let got: Vec<usize> = redactor
            .set
            .get()
            .matches(text)
            .into_iter()
            .map(|h| h.0)
            .collect();
        let offset = redactor.rules.len() - BUILTIN.len();
        let lower = gate_text(text);
        let holds_gate = |i: usize| {
            i >= offset
                && gates::GATES[i - offset]
                    .is_some_and(|g| g.iter().any(|s| lower.windows(s.len()).any(|w| w == *s)))
        };
        assert!(
            want.iter().all(|i| got.contains(i)),
            "{text:?}: {got:?} misses some of {want:?}"
        );
        assert!(
            got.iter().all(|&i| want.contains(&i) || holds_gate(i)),
            "{text:?}: {got:?} against {want:?}"
        );
        assert!(
            got.is_sorted() && got.windows(2).all(|w| w[0] != w[1]),
            "{got:?}"
        );
    }

    #[test]
    fn the_prefilter_names_the_rules_a_regex_set_names() {
        #[rustfmt::skip]
        const PIECES: &[&str] = &[
            "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8sT4uV1w", "ghp_",
            "ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "sk-ant-api03-", "AKIA", "0123456789",
            "AKIAIOSFODNN7EXAMPLE", "xoxb-0123456789-abcdef", "eyJhbGciOi", ".eyJzdWIiOi", ".",
            "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "\n[… 5 chars cut …]\n",
            "password", "PASSWORD = ", "\"token\": \"", "Authorization: Bearer ", "://user:pw@host",
            "sshpass -p ", "export API_TOKEN=", "AbCdEf0123456789AbCdEf0123", "\n", " ", "=", ":",
            "é", "日本", "\u{a0}", "\u{212a}", "ſ", "'", "\"", "mydomain", "key-", "-us1", "Q~",
            "cio", "EAAA", "1Q~", ":AA", "pass:", "-pass", "PGPASSWORD=", ";pwd=", "secret_",
            "paſsword", "Paſſwd", "ſecret", "api_\u{212a}ey", "\u{212a}EY", "ſession_to\u{212a}en",
            "--password-stdin", "echo ", " | ", "\"kty\": ", "machine ", " login ", "LS0tLS1CRUdJTi",
            "Private-Lines: 1\n", "\\u0026sig=", "%26sig%3D", "config set ", "htpasswd -nb ",
            "DB_PASS=", "-storepass ", ":\\/\\/", "<password>", "</password>", "_auth=", "token ",
            "s.", "vault login ",
        ];
        let user = [ExtraPattern {
            name: "ticket".into(),
            regex: r"\bTICKET-[0-9]+\b".into(),
        }];
        let redactor = Redactor::new(&user, &[]).unwrap();
        let reference = RegexSet::new(
            redactor
                .rules
                .iter()
                .map(|r| r.hint.unwrap_or(&r.pattern).to_string()),
        )
        .unwrap();
        let mut rng = crate::text::test_rng(0x2545_f491_4f6c_dd1du64);
        let mut next = move |n: usize| rng(n as u64);
        let mut matched = 0;
        let rounds = crate::text::test_count(3_000, 20_000);
        for i in 0..rounds {
            let mut text: String = (0..1 + next(12))
                .map(|_| PIECES[next(PIECES.len())])
                .collect();
            if i % 7 == 0 {
                text.push_str(" TICKET-42 ");
            }
            assert_names_as_a_regex_set(&redactor, &reference, &text);
            matched += usize::from(reference.is_match(&text));
        }
        // The comparison must have covered both answers.
        assert!(
            (rounds / 10..rounds * 9 / 10).contains(&matched),
            "{matched}"
        );
        // And every string of every fixture, whole.
        fn strings(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::String(s) => out.push(s.clone()),
                Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
                Value::Object(o) => o.iter().for_each(|(k, x)| {
                    out.push(k.clone());
                    strings(x, out)
                }),
                _ => {}
            }
        }
        let mut texts = Vec::new();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        for entry in walkdir::WalkDir::new(root) {
            let path = entry.unwrap().into_path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    strings(&v, &mut texts);
                }
            }
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                strings(&v, &mut texts);
            }
        }
        assert!(texts.len() > 5_000, "{}", texts.len());
        let mut named = 0;
        for text in &texts {
            assert_names_as_a_regex_set(&redactor, &reference, text);
            named += usize::from(reference.is_match(text));
        }
        assert!(named > 10, "{named}");
    }

    /// An output its reader masked before cutting it is counted as the reader counted it and
    /// left as it is; the mark goes. Any other message is masked.
    #[test]
    fn an_output_masked_by_its_reader_is_counted_not_masked_again() {
        use crate::model::{Message, Role};
        let mut s = Session::new("claude", "claude-jsonl", "x");
        let text = "npm_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\n[… 1234 chars cut …]\nafter";
        s.messages
            .push(
                Message::new(Role::ToolResult, text).with_state(crate::model::OutputState {
                    masked: Some([("password".to_string(), 2)].into()),
                    ..Default::default()
                }),
            );
        s.messages.push(Message::new(Role::ToolResult, text));
        let counts = Redactor::new(&[], &[]).unwrap().session(&mut s);
        assert_eq!(s.messages[0].content, text);
        assert!(s.messages[0].state().is_some_and(|s| s.masked.is_none()));
        assert_ne!(s.messages[1].content, text);
        assert_eq!(counts["password"], 2);
        assert!(counts.len() > 1, "{counts:?}");
    }

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
    #[test]
    fn sensitive_keys_are_named_precisely() {
        for k in [
            "password",
            "passwd",
            "db_password",
            "DB_PASSWORD",
            "dbPassword",
            "PGPASSWORD",
            "passphrase",
            "secret",
            "client_secret",
            "clientSecret",
            "webhook-secret",
            "access_token",
            "accessToken",
            "refresh_token",
            "id_token",
            "GITHUB_TOKEN",
            "X-Auth-Token",
            "csrf_token",
            "api_key",
            "apiKey",
            "APIKey",
            "X-Api-Key",
            "x-apikey",
            "private_key",
            "privateKey",
            "aws_secret_access_key",
            "signing_key",
            "encryption_key",
            "credentials",
            "Authorization",
            "Proxy-Authorization",
        ] {
            assert!(
                key_is_sensitive(k, "v4lue-0f-a-secret"),
                "{k} should be sensitive"
            );
        }
        for k in [
            "max_tokens",
            "tokens_used",
            "input_tokens",
            "token_count",
            "token_type",
            "tokenizer",
            "secret_santa",
            "secret_name",
            "secrets",
            "is_secret",
            "password_hash",
            "passwordless",
            "eos_token",
            "pad_token",
            "next_page_token",
            "pageToken",
            "primary_key",
            "cache_key",
            "key",
            "access_key_id",
            "private_key_id",
            "PWD",
            "OLDPWD",
            "auth",
            "author",
            "has_password",
            "use_token",
        ] {
            assert!(
                !key_is_sensitive(k, "v4lue-0f-a-secret"),
                "{k} should not be"
            );
        }
        // A bare `token` is a credential only when its value looks like one.
        assert!(key_is_sensitive("token", "9f8e7d6c5b4a"));
        assert!(!key_is_sensitive("token", " Hello"));
        assert!(!key_is_sensitive("token", "world"));
    }

    #[test]
    fn structured_values_of_sensitive_keys_are_masked_whatever_they_look_like() {
        let r = Redactor::new(&[], &[]).unwrap();
        let mut v = serde_json::json!({
            "url": "https://api.example.com/v1/items",
            "headers": {"Authorization": "Bearer abc.def-ghi", "Accept": "application/json"},
            "db": {"password": "letmein", "port": 5432, "ssl": true, "user": "app"},
            "credentials": ["first-key", "second-key"],
            "nested": [{"refreshToken": "1x-refresh"}],
            "max_tokens": 4096,
            "tokens_used": "12",
            "token_count": {"input": 3, "output": 4},
            "secret_santa": "Alice",
            "api_key": "${OPENAI_API_KEY}",
            "client_secret": "<your-client-secret>",
            "auth_token": "***",
            "token": "Hello",
            "eos_token": "</s>",
            "pad_token": "[PAD]",
            "password_confirm": "",
            "secret": false,
            "passphrase": null,
        });
        let mut counts = Counts::new();
        let mut seen = Vec::new();
        r.value(&mut v, &mut counts, &mut seen);
        assert_eq!(
            v["headers"]["Authorization"],
            "Bearer [REDACTED:sensitive_key]"
        );
        assert_eq!(v["headers"]["Accept"], "application/json");
        assert_eq!(v["db"]["password"], "[REDACTED:sensitive_key]");
        assert_eq!(v["db"]["user"], "app");
        assert_eq!(v["credentials"][1], "[REDACTED:sensitive_key]");
        assert_eq!(v["nested"][0]["refreshToken"], "[REDACTED:sensitive_key]");
        assert_eq!(counts["sensitive_key"], 5, "{v:#}");
        assert_eq!(counts.len(), 1, "{counts:?}");
        for (k, kept) in [
            ("max_tokens", serde_json::json!(4096)),
            ("tokens_used", serde_json::json!("12")),
            ("secret_santa", serde_json::json!("Alice")),
            ("api_key", serde_json::json!("${OPENAI_API_KEY}")),
            ("client_secret", serde_json::json!("<your-client-secret>")),
            ("auth_token", serde_json::json!("***")),
            ("token", serde_json::json!("Hello")),
            ("eos_token", serde_json::json!("</s>")),
            ("pad_token", serde_json::json!("[PAD]")),
            ("password_confirm", serde_json::json!("")),
            ("secret", serde_json::json!(false)),
        ] {
            assert_eq!(v[k], kept, "{k}");
        }
        assert_eq!(seen.len(), 5);
    }

    #[test]
    fn json_text_pairs_are_judged_by_their_key() {
        for (text, kind, kept) in [
            (
                r#"{"headers": {"Authorization": "Bearer tok_1234567890abcdef"}}"#,
                "bearer_token",
                r#"{"headers": {"Authorization": "Bearer [REDACTED:bearer_token]"}}"#,
            ),
            (
                r#"{"Authorization":"Basic ZGVwbG95OnM3Y3JldA=="}"#,
                "basic_auth",
                r#"{"Authorization":"Basic [REDACTED:basic_auth]"}"#,
            ),
            (
                r#"{"Authorization": "Bearer short1"}"#,
                "sensitive_key",
                r#"{"Authorization": "Bearer [REDACTED:sensitive_key]"}"#,
            ),
            (
                r#"{\"db\": {\"password\": \"letmein\"}}"#,
                "sensitive_key",
                r#"{\"db\": {\"password\": \"[REDACTED:sensitive_key]\"}}"#,
            ),
            (
                r#""clientSecret": "two words""#,
                "sensitive_key",
                r#""clientSecret": "[REDACTED:sensitive_key]""#,
            ),
        ] {
            let (out, c) = red(text);
            assert_eq!(out, kept);
            assert_eq!(c.get(kind), Some(&1), "{c:?}");
        }
        for t in [
            r#"{"token": " Hello", "logprob": -0.31}"#,
            r#"{"max_tokens": 4096, "token_count": {"input": 3}}"#,
            r#"{"eos_token": "</s>", "pad_token": "[PAD]", "next_page_token": "CiAKGjBpNDd2"}"#,
            r#"{"secret_santa": "Alice", "password": "", "api_key": "${KEY}"}"#,
            r#"{"Authorization": "Bearer ${TOKEN}"}"#,
        ] {
            let (out, c) = red(t);
            assert_eq!(out, t, "{c:?}");
        }
    }

    /// A reader's cut can take a key's BEGIN line and leave its body and END line: the body is
    /// masked from the cut, and so is the tail of a key file printed alone. A certificate's
    /// end is no secret.
    #[test]
    fn a_key_cut_before_its_begin_line_is_masked() {
        let body: Vec<String> = (0..40)
            .map(|i| {
                format!("MIIEow{i:02}AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/AbCdEfGhIjKlMnOpQr")
            })
            .collect();
        for text in [
            format!(
                "{}\n[… 1163 chars cut …]\n{}\n-----END RSA PRIVATE KEY-----\nafter",
                "x".repeat(50),
                body.join("\n")
            ),
            format!(
                "{}\n-----END OPENSSH PRIVATE KEY-----",
                body[30..].join("\n")
            ),
        ] {
            let (out, c) = red(&text);
            assert!(!out.contains("MIIEow"), "{out}");
            assert!(out.contains("[REDACTED:private_key]-----END "), "{out}");
            assert_eq!(c["private_key"], 1, "{c:?}");
        }
        let cert = "log line\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----";
        assert_eq!(red(cert).0, cert);
    }

    #[test]
    fn a_cut_leaves_no_piece_of_a_token() {
        let (out, c) =
            red("log npm_u8jzPde0Ig\n[… 1234 chars cut …]\nxLd6GncfBAepfJBd0Kh8oOOL8d tail");
        assert_eq!(
            out,
            "log [REDACTED:cut_fragment]\n[… 1234 chars cut …]\n[REDACTED:cut_fragment] tail"
        );
        assert_eq!(c["cut_fragment"], 2);
        let t = "compiling\n[… 5 chars cut …]\n/home/dev/projects/relay";
        assert_eq!(red(t).0, t);
    }

    #[test]
    fn command_line_near_misses_are_kept() {
        for t in [
            "mysql -u root -p app",
            "mysql -h db -P 3306 -u root -p",
            "echo $TOKEN | docker login --password-stdin -u me",
            "psql --password --host db",
            "mysqldump --password=$DB_PASS app",
            "curl -u \"$USER:$TOKEN\" https://api.example.com",
            "sshpass -p \"$SSHPASS\" ssh deploy@host",
            "postgres://user:password@localhost:5432/db",
            "redis://localhost:6379/0",
            "https://example.com/avatar.png?size=64&sig=1a2b3c4d5e6f",
            "Server=localhost;Database=app;Trusted_Connection=True;",
        ] {
            let (out, c) = red(t);
            assert_eq!(out, t, "{c:?}");
        }
    }

    /// What the rules for command lines, config files and named values must leave: ports,
    /// prompts, references, paths, ids under secret-sounding names, parameters, ssh remotes.
    #[test]
    fn near_misses_of_named_and_command_line_secrets_are_kept() {
        for t in [
            "redis-cli -h cache -p 6379 ping",
            "mongo --host db -u admin -p --authenticationDatabase admin",
            "openssl s_client -connect host:443 -key client.key",
            "zip -r backup.zip src/ && unzip -l backup.zip",
            "htpasswd -D /etc/nginx/.htpasswd admin",
            "echo \"$REGISTRY_TOKEN\" | docker login ghcr.io -u bot --password-stdin",
            "kubeadm token create --ttl 0 --print-join-command",
            "kubectl apply --token-file /var/run/secrets/token -f app.yaml",
            "git config --global user.signingkey 3AA5C34371567BD2",
            "git config --global credential.helper store",
            "aws configure set region eu-west-1",
            "SSH_AUTH_SOCK=/tmp/ssh-XXXXabcd/agent.1234 ssh host",
            "GIT_ASKPASS=/usr/lib/ssh/x11-ssh-askpass git push",
            "PASSWORD_MIN_LENGTH=12",
            "KEYBOARD_LAYOUT=us-intl-altgr",
            "AWS_ACCESS_KEY_ID_FILE=/run/secrets/aws_access_key_id",
            "VAPID_PUBLIC_KEY=BEl62iUYgUivxIkv69yViEuiBIa40HIe8ycPBb7Jq3Rx6b1",
            "NEXT_PUBLIC_SUPABASE_URL=https://abcdefghijk.supabase.co",
            "auth: { strategy: 'jwt', secret: process.env.AUTH_SECRET }",
            "const token = req.headers.authorization;",
            "password: must be at least 12 characters",
            "--secret id=npmrc,src=$HOME/.npmrc",
            "Authorization: Digest username=\"admin\", realm=\"api\", nonce=\"dcd98b7102dd2f0e\"",
            "Authorization: Negotiate <token>",
            "git clone https://build-bot@github.com/acme/app.git",
            "git clone ssh://git@github.com/acme/app.git",
            "git@github.com:acme/app.git",
            "{\"auth\": \"required\", \"auths\": {}}",
            "<p>Paste your API key below.</p><token>${TOKEN}</token>",
            "machine api.example.com login bot password $NETRC_PASSWORD",
            "token                s.getOrDefault",
            "actions/cache --cache-key v1-deps-4f3c2b1a9e8d7c6b",
            "IDEMPOTENCY_KEY=771ce1df-ae7a-4516-8192-f08c38166af2",
        ] {
            let (out, c) = red(t);
            assert_eq!(out, t, "{c:?}");
        }
    }

    /// A rule whose matches lie within a line, run from where the prefilter says its first
    /// match may be or from the line of its hint's first match, masks what it masks run from
    /// the text's start; and where the prefilter does not name it, it masks nothing.
    #[test]
    fn a_rule_run_from_where_its_first_match_may_be_masks_what_it_masks_from_the_start() {
        #[rustfmt::skip]
        const PIECES: &[&str] = &[
            "DB_PASS=pgdevpass", "\n", " ", "token: a8Hq2Lm9Xv4Rt7Np3Kc6Wd1Zs5Fb0Gy", "--token ",
            "sgthk1.v51p66qu9by39lyc", "export ", "SECRET_KEY_BASE=", "7b2a3164a2adbdeddf06a1d3e33ad1a5",
            "pub token: usize", "tokens = 3", "\"", "'", "-storepass ", "Tr0ub4dor", "=", ": ",
            "\n  api_key: ", "-Dgpg.passphrase=", "x", "?access_token=", "&", "é", "ſ", "\t",
            "<password>", "</password>", "-", "Key", "PASS",
        ];
        let r = Redactor::new(&[], &[]).unwrap();
        let rules: Vec<usize> = (0..r.rules.len())
            .filter(|&i| r.rules[i].check.within_a_line())
            .collect();
        assert_eq!(rules.len(), 2);
        let mut rng = crate::text::test_rng(0x9e37_79b9_7f4a_7c15u64);
        let mut next = move |n: usize| rng(n as u64);
        let mut masked = 0;
        for _ in 0..5_000 {
            let text: String = (0..1 + next(16))
                .map(|_| PIECES[next(PIECES.len())])
                .collect();
            let named = r.set.get().matches(&text);
            for &i in &rules {
                let rule = &r.rules[i];
                let whole = r.apply(rule, &text, Some(0));
                match named.iter().find(|h| h.0 == i) {
                    Some(&(_, at)) => {
                        let line = text[..at].rfind('\n').map_or(0, |n| n + 1);
                        assert_eq!(r.apply(rule, &text, Some(line)), whole, "{text:?}");
                        assert_eq!(r.apply(rule, &text, None), whole, "{text:?}");
                    }
                    None => assert_eq!(whole, None, "{text:?}"),
                }
                masked += usize::from(whole.is_some());
            }
        }
        assert!(masked > 500, "{masked}");
    }

    #[test]
    fn names_say_what_their_value_is() {
        for (name, kind) in [
            ("DB_PASS", Some(NameKind::Password)),
            ("keyStorePassword", Some(NameKind::Password)),
            ("-storepass", Some(NameKind::Password)),
            ("SECRET_KEY_BASE", Some(NameKind::Secret)),
            ("X-Vault-Token", Some(NameKind::Secret)),
            ("//registry.npmjs.org/:_authToken", Some(NameKind::Secret)),
            ("SIGNING_SALT", Some(NameKind::Secret)),
            ("PresharedKey", Some(NameKind::Secret)),
            ("RUN_ID", None),
            ("BUILD_LABEL", None),
            ("IMAGE_DIGEST", None),
            ("AWS_ACCESS_KEY_ID", None),
            ("TOKEN_URL", None),
            ("PWD", None),
            ("USE_TOKEN", None),
            ("next_page_token", None),
            ("max_tokens", None),
            ("VAPID_PUBLIC_KEY", None),
            ("CACHE_KEY", None),
            ("idempotency-key", None),
        ] {
            assert_eq!(name_kind(name), kind, "{name}");
        }
    }
}
