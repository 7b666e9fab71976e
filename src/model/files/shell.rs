//! The files a shell command line changes, as far as the line itself says: `rm`, `unlink` and
//! `git rm` delete, `mv` and `git mv` move, `sed -i` edits in place, `tee` and `>` / `>>`
//! write, and `cd` moves where later relative paths are. Only what a reader of the line can be
//! sure of: a word that the shell would expand (a variable, a glob, `~`, a command's output) is
//! left alone, and so is every relative path after a `cd` to such a word. Here-documents are
//! skipped (their text is no command).

use super::Effect;

/// A word of a command line, unquoted; `plain` when the shell would take it as it is.
#[derive(Debug, Clone, PartialEq)]
struct Word {
    text: String,
    plain: bool,
}

/// A simple command: its words, and the files its redirections write.
#[derive(Debug, Default, PartialEq)]
struct Command {
    words: Vec<Word>,
    writes: Vec<Word>,
}

/// What `line` changes, in order: (path, effect), paths as the line names them (relative ones
/// against the directory it was run in, or the one it `cd`ed to).
pub fn effects(line: &str) -> Vec<(String, Effect)> {
    // Most commands do none of it: not worth splitting into words.
    const CUES: [&str; 6] = ["rm", "mv", "unlink", ">", "sed", "tee"];
    if !CUES.iter().any(|c| line.contains(c)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Where relative paths are: `None` after a `cd` to a place the line does not spell out.
    let mut dir = Some(String::new());
    for c in commands(line) {
        for w in &c.writes {
            if !w.text.starts_with("/dev/") {
                push(&mut out, &dir, w, Effect::Write);
            }
        }
        let words: Vec<&Word> = c
            .words
            .iter()
            .skip_while(|w| w.text == "sudo" || (w.text.contains('=') && !w.text.starts_with('-')))
            .collect();
        let Some((first, args)) = words.split_first() else {
            continue;
        };
        let (name, args) = match (first.text.as_str(), args.split_first()) {
            ("git", Some((sub, rest))) if sub.text == "rm" || sub.text == "mv" => {
                (format!("git {}", sub.text), rest)
            }
            (n, _) => (n.to_string(), args),
        };
        match name.as_str() {
            "cd" => {
                dir = match (args.first(), &dir) {
                    (Some(to), Some(d)) if to.plain => Some(joined(d, &to.text)),
                    _ => None,
                }
            }
            "rm" | "unlink" => delete(&mut out, &dir, args),
            "git rm" if !args.iter().any(|a| a.text == "--cached") => delete(&mut out, &dir, args),
            "mv" | "git mv" => moves(&mut out, &dir, args),
            "sed" => edit_in_place(&mut out, &dir, args),
            "tee" => {
                for a in operands(args) {
                    if !a.text.starts_with("/dev/") {
                        push(&mut out, &dir, a, Effect::Write);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The words that are no options (after `--`, every one).
fn operands<'a>(args: &'a [&'a Word]) -> impl Iterator<Item = &'a Word> {
    let end = args.iter().position(|a| a.text == "--");
    args.iter().enumerate().filter_map(move |(i, a)| {
        let after = end.is_some_and(|e| i > e);
        (after || (Some(i) != end && !a.text.starts_with('-'))).then_some(*a)
    })
}

fn delete(out: &mut Vec<(String, Effect)>, dir: &Option<String>, args: &[&Word]) {
    for a in operands(args) {
        push(out, dir, a, Effect::Delete);
    }
}

/// `mv A B` moves A to B, or into B when B names a folder (ends with `/`); `mv A B C/` moves
/// both into C. `-t` turns the order around: left alone.
fn moves(out: &mut Vec<(String, Effect)>, dir: &Option<String>, args: &[&Word]) {
    if args
        .iter()
        .any(|a| a.text == "-t" || a.text.starts_with("--target"))
    {
        return;
    }
    let ops: Vec<&Word> = operands(args).collect();
    let Some((dest, sources)) = ops.split_last() else {
        return;
    };
    if sources.is_empty() || !dest.plain {
        return;
    }
    let into = sources.len() > 1 || dest.text.ends_with('/');
    let Some(dest_path) = resolved(dir, &dest.text) else {
        return;
    };
    for s in sources.iter().filter(|s| s.plain) {
        let Some(from) = resolved(dir, &s.text) else {
            continue;
        };
        let to = if into {
            let name = from.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            format!("{}/{name}", dest_path.trim_end_matches('/'))
        } else {
            dest_path.clone()
        };
        out.push((from, Effect::MoveTo(to)));
    }
}

/// `sed -i` (GNU and BSD spellings): the files after the script.
fn edit_in_place(out: &mut Vec<(String, Effect)>, dir: &Option<String>, args: &[&Word]) {
    let mut in_place = false;
    let mut script_given = false;
    let mut operands = Vec::new();
    let mut words = args.iter();
    while let Some(a) = words.next() {
        let t = a.text.as_str();
        if t == "-e" || t == "-f" || t == "--expression" || t == "--file" {
            script_given = true;
            words.next();
        } else if t.starts_with("--in-place") {
            in_place = true;
        } else if let Some(flags) = t.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            // A cluster (`-Ei`, `-i.bak`): what follows `i` is a backup suffix.
            let before_i = flags.split('i').next().unwrap_or(flags);
            in_place |= flags.contains('i');
            if before_i.ends_with('e') || before_i.ends_with('f') {
                script_given = true;
                words.next();
            }
        } else {
            operands.push(*a);
        }
    }
    if !in_place {
        return;
    }
    let files = if script_given {
        &operands[..]
    } else {
        operands.get(1..).unwrap_or_default()
    };
    for f in files {
        push(out, dir, f, Effect::Edit);
    }
}

fn push(out: &mut Vec<(String, Effect)>, dir: &Option<String>, w: &Word, e: Effect) {
    if !w.plain {
        return;
    }
    if let Some(p) = resolved(dir, &w.text) {
        out.push((p, e));
    }
}

/// `path` where the line's `cd`s put it; `None` when that is not known.
fn resolved(dir: &Option<String>, path: &str) -> Option<String> {
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        return None;
    }
    if path.starts_with('/') {
        return Some(path.to_string());
    }
    dir.as_ref().map(|d| joined(d, path))
}

fn joined(dir: &str, path: &str) -> String {
    if path.starts_with('/') || dir.is_empty() {
        path.to_string()
    } else {
        format!("{}/{path}", dir.trim_end_matches('/'))
    }
}

/// The simple commands of a line, in order.
fn commands(line: &str) -> Vec<Command> {
    let mut lx = Lexer {
        chars: line.chars().collect(),
        at: 0,
    };
    let mut out = Vec::new();
    let mut cmd = Command::default();
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    while let Some(tok) = lx.next_token() {
        match tok {
            Token::Word(w) => cmd.words.push(w),
            Token::Redirect { write } => match lx.next_token() {
                Some(Token::Word(w)) if write => cmd.writes.push(w),
                _ => {}
            },
            Token::HereDoc { strip } => {
                if let Some(Token::Word(w)) = lx.next_token() {
                    heredocs.push((w.text, strip));
                }
            }
            Token::End { newline } => {
                out.push(std::mem::take(&mut cmd));
                if newline {
                    for (delimiter, strip) in heredocs.drain(..) {
                        lx.skip_heredoc(&delimiter, strip);
                    }
                }
            }
        }
    }
    out.push(cmd);
    out.retain(|c| !c.words.is_empty() || !c.writes.is_empty());
    out
}

enum Token {
    Word(Word),
    /// `>`, `>>`, `&>` (`write`), or `<`: the next word is the file.
    Redirect {
        write: bool,
    },
    /// `<<` or `<<-` (`strip`): the next word is the delimiter.
    HereDoc {
        strip: bool,
    },
    /// `;`, `&`, `|`, `&&`, `||`, a parenthesis, or a newline.
    End {
        newline: bool,
    },
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn next_token(&mut self) -> Option<Token> {
        while self.peek(0).is_some_and(|c| c == ' ' || c == '\t') {
            self.at += 1;
        }
        let c = self.peek(0)?;
        let op = |n: usize, t: Token, lx: &mut Lexer| {
            lx.at += n;
            Some(t)
        };
        match (c, self.peek(1)) {
            ('#', _) => {
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.at += 1;
                }
                self.next_token()
            }
            ('\n', _) => op(1, Token::End { newline: true }, self),
            ('<', Some('<')) if self.peek(2) == Some('<') => {
                op(3, Token::Redirect { write: false }, self)
            }
            ('<', Some('<')) => {
                let strip = self.peek(2) == Some('-');
                op(2 + usize::from(strip), Token::HereDoc { strip }, self)
            }
            ('<', _) => op(1, Token::Redirect { write: false }, self),
            // `>&1`: to another file descriptor.
            ('>', Some('&')) => op(2, Token::Redirect { write: false }, self),
            ('&', Some('>')) => {
                let append = self.peek(2) == Some('>');
                op(
                    2 + usize::from(append),
                    Token::Redirect { write: true },
                    self,
                )
            }
            ('>', Some('>' | '|')) => op(2, Token::Redirect { write: true }, self),
            ('>', _) => op(1, Token::Redirect { write: true }, self),
            (';' | '&' | '|' | '(' | ')', _) => {
                let double = matches!((c, self.peek(1)), ('&', Some('&')) | ('|', Some('|')));
                op(1 + usize::from(double), Token::End { newline: false }, self)
            }
            _ => self.word(),
        }
    }

    /// A word, its quotes taken off. Digits right before a redirection are its file
    /// descriptor, no word.
    fn word(&mut self) -> Option<Token> {
        let mut text = String::new();
        let mut plain = true;
        let start = self.at;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\'' => {
                    self.at += 1;
                    while let Some(q) = self.peek(0).filter(|q| *q != '\'') {
                        text.push(q);
                        self.at += 1;
                    }
                }
                '"' => {
                    self.at += 1;
                    while let Some(q) = self.peek(0).filter(|q| *q != '"') {
                        if q == '\\' && self.peek(1).is_some() {
                            self.at += 1;
                        }
                        plain &= q != '$' && q != '`';
                        text.push(self.peek(0).unwrap_or(q));
                        self.at += 1;
                    }
                }
                '\\' => {
                    self.at += 1;
                    if let Some(e) = self.peek(0) {
                        text.push(e);
                    }
                }
                _ => {
                    let expands = matches!(c, '$' | '`' | '*' | '?' | '[' | '{')
                        || (c == '~' && self.at == start);
                    plain &= !expands;
                    text.push(c);
                }
            }
            self.at += 1;
        }
        let fd = self.peek(0) == Some('>')
            && !text.is_empty()
            && text.chars().all(|c| c.is_ascii_digit());
        if fd && self.at - start == text.len() {
            return self.next_token();
        }
        Some(Token::Word(Word { text, plain }))
    }

    /// Past the here-document that starts at the next line, up to its `delimiter` line.
    fn skip_heredoc(&mut self, delimiter: &str, strip: bool) {
        while self.at < self.chars.len() {
            let end = self.chars[self.at..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(self.chars.len(), |i| self.at + i);
            let line: String = self.chars[self.at..end].iter().collect();
            self.at = (end + 1).min(self.chars.len());
            let line = if strip {
                line.trim_start_matches('\t')
            } else {
                &line
            };
            if line.trim_end() == delimiter {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(line: &str) -> Vec<(String, Effect)> {
        effects(line)
    }

    #[test]
    fn removes_moves_and_writes_are_found() {
        let d = |p: &str| (p.to_string(), Effect::Delete);
        let w = |p: &str| (p.to_string(), Effect::Write);
        let m = |a: &str, b: &str| (a.to_string(), Effect::MoveTo(b.to_string()));
        let e = |p: &str| (p.to_string(), Effect::Edit);
        assert_eq!(
            names("rm -f a.txt 'b c.txt' -- -odd"),
            [d("a.txt"), d("b c.txt"), d("-odd")]
        );
        assert_eq!(names("cd src && git rm old.rs"), [d("src/old.rs")]);
        assert_eq!(names("git rm --cached a.rs"), []);
        assert_eq!(
            names("mv a.rs b.rs; mv x y dir/"),
            [m("a.rs", "b.rs"), m("x", "dir/x"), m("y", "dir/y")]
        );
        assert_eq!(
            names("echo hi > out.txt 2>&1 && cat a >> /tmp/log"),
            [w("out.txt"), w("/tmp/log")]
        );
        assert_eq!(names("ls 2> /dev/null | tee -a notes.md"), [w("notes.md")]);
        assert_eq!(names("sed -i 's/a/b/' f.rs g.rs"), [e("f.rs"), e("g.rs")]);
        assert_eq!(names("sed -i.bak -e 's/a/b/' f.rs"), [e("f.rs")]);
        assert_eq!(names("sed 's/a/b/' f.rs > g.rs"), [w("g.rs")]);
        assert_eq!(names("cd /abs/dir\nrm x"), [d("/abs/dir/x")]);
    }

    #[test]
    fn what_the_shell_would_expand_is_left_alone() {
        assert_eq!(names("rm -rf $TMP/x *.o ~/y \"$HOME/z\" `f`"), []);
        // After a cd to an unknown place, relative paths are unknown; absolute ones are not.
        assert_eq!(
            names("cd \"$D\" && rm a /abs/b"),
            [("/abs/b".to_string(), Effect::Delete)]
        );
        assert_eq!(names("cargo test # rm nothing"), []);
        assert_eq!(names("grep -rm 3 x ."), []);
    }

    #[test]
    fn here_documents_are_text_not_commands() {
        let line = "cat > notes.md <<'EOF'\nrm -rf everything\nmv a b\nEOF\nrm after.txt";
        assert_eq!(
            names(line),
            [
                ("notes.md".to_string(), Effect::Write),
                ("after.txt".to_string(), Effect::Delete)
            ]
        );
        let stripped = "cat <<-END > f\n\trm x\n\tEND\nunlink g";
        assert_eq!(
            names(stripped),
            [
                ("f".to_string(), Effect::Write),
                ("g".to_string(), Effect::Delete)
            ]
        );
    }
}
