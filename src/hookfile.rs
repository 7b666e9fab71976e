//! Editing an agent's hooks file (`{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type":
//! "command", "command", "timeout"}]}]}}`, the schema Claude Code and Codex share) the way a
//! person would: session-relay's own handler is added or removed as text, in the file's own
//! indentation and line endings, and every other byte stays where it was. The file must be
//! strict JSON (both agents refuse comments), with no key twice in one object where it bears on
//! hooks (the agents' parsers part ways on which one counts); a file that is not is refused,
//! untouched.

use std::ops::Range;

use anyhow::{Result, bail};
use serde_json::Value;

/// A JSON value's place in the text.
#[derive(Debug, Clone)]
struct Node {
    span: Range<usize>,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    Scalar,
}

#[derive(Debug, Clone)]
struct Member {
    key: String,
    /// From the key's opening quote to the end of the value.
    span: Range<usize>,
    value: Node,
}

impl Node {
    fn member(&self, key: &str) -> Option<&Member> {
        match &self.kind {
            Kind::Object(m) => m.iter().find(|m| m.key == key),
            _ => None,
        }
    }

    /// The spans of the children: members of an object, items of an array.
    fn children(&self) -> Vec<Range<usize>> {
        match &self.kind {
            Kind::Object(m) => m.iter().map(|m| m.span.clone()).collect(),
            Kind::Array(items) => items.iter().map(|i| i.span.clone()).collect(),
            Kind::Scalar => Vec::new(),
        }
    }

    fn items(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(items) => items,
            _ => &[],
        }
    }
}

/// A recursive-descent pass over text that serde_json already accepted, recording spans.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn string_end(&self, start: usize) -> usize {
        let mut i = start + 1;
        while i < self.s.len() {
            match self.s[i] {
                b'\\' => i += 2,
                b'"' => return i + 1,
                _ => i += 1,
            }
        }
        self.s.len()
    }

    fn value(&mut self) -> Node {
        self.ws();
        let start = self.i;
        match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                loop {
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b'}') => {
                            self.i += 1;
                            break;
                        }
                        Some(b',') => {
                            self.i += 1;
                            continue;
                        }
                        Some(b'"') => {
                            let kstart = self.i;
                            self.i = self.string_end(kstart);
                            let key = serde_json::from_slice::<String>(&self.s[kstart..self.i])
                                .unwrap_or_default();
                            self.ws();
                            self.i += 1; // ':'
                            let value = self.value();
                            members.push(Member {
                                key,
                                span: kstart..value.span.end,
                                value,
                            });
                        }
                        _ => break,
                    }
                }
                Node {
                    span: start..self.i,
                    kind: Kind::Object(members),
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b']') => {
                            self.i += 1;
                            break;
                        }
                        Some(b',') => {
                            self.i += 1;
                            continue;
                        }
                        Some(_) => items.push(self.value()),
                        None => break,
                    }
                }
                Node {
                    span: start..self.i,
                    kind: Kind::Array(items),
                }
            }
            Some(b'"') => {
                self.i = self.string_end(start);
                Node {
                    span: start..self.i,
                    kind: Kind::Scalar,
                }
            }
            _ => {
                while self.i < self.s.len()
                    && !matches!(
                        self.s[self.i],
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.i += 1;
                }
                Node {
                    span: start..self.i,
                    kind: Kind::Scalar,
                }
            }
        }
    }
}

/// A hooks file's text, checked and parsed.
pub struct HookFile {
    text: String,
    root: Node,
}

/// One handler in the file: its place and its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub event: String,
    /// Index of its group in the event's list, and of the handler in the group's `hooks`:
    /// how the agents number handlers (Codex keys its trust by them).
    pub group: usize,
    pub handler: usize,
    pub command: String,
}

impl HookFile {
    /// Parses a hooks file; the error says what is wrong and where (the caller names the file).
    pub fn parse(text: &str) -> Result<HookFile> {
        let text = text.to_string();
        let value: Value = if text.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => bail!("not valid JSON ({e})"),
            }
        };
        if !value.is_object() {
            bail!("not a JSON object");
        }
        let root = if text.trim().is_empty() {
            Node {
                span: 0..0,
                kind: Kind::Object(Vec::new()),
            }
        } else {
            Parser {
                s: text.as_bytes(),
                i: 0,
            }
            .value()
        };
        if let Some(d) = duplicate(&root) {
            let line = |at: usize| text[..at].matches('\n').count() + 1;
            bail!(
                "`{}` appears twice in one object (lines {} and {}): Claude Code would read only \
                 the last and Codex none of the file, so a hook may not run as this file shows \
                 it; keep one of them",
                d.path,
                line(d.first),
                line(d.second)
            );
        }
        match value.get("hooks") {
            None => {}
            Some(Value::Object(events)) => {
                for (event, groups) in events {
                    if !groups.is_array() {
                        bail!("`hooks.{event}` is not a list");
                    }
                }
            }
            Some(_) => bail!("`hooks` is not an object"),
        }
        Ok(HookFile { text, root })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    fn events(&self) -> Option<&Node> {
        self.root.member("hooks").map(|m| &m.value)
    }

    /// Every command handler of `event`.
    pub fn handlers(&self, event: &str) -> Vec<Handler> {
        let Some(groups) = self.events().and_then(|e| e.member(event)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (g, group) in groups.value.items().iter().enumerate() {
            let Some(hooks) = group.member("hooks") else {
                continue;
            };
            for (h, handler) in hooks.value.items().iter().enumerate() {
                if let Some(cmd) = handler.member("command")
                    && let Ok(command) =
                        serde_json::from_str::<String>(&self.text[cmd.value.span.clone()])
                {
                    out.push(Handler {
                        event: event.to_string(),
                        group: g,
                        handler: h,
                        command,
                    });
                }
            }
        }
        out
    }

    /// Adds a group holding `handler` to `event` (creating `hooks` and the event when missing).
    /// Returns where it went, and whether the event list and the `hooks` object are new.
    pub fn add(&mut self, event: &str, handler: &Value) -> Result<(Handler, bool, bool)> {
        let group = serde_json::json!({ "hooks": [handler] });
        let command = handler["command"].as_str().unwrap_or_default().to_string();
        let style = Style::of(&self.text, &self.root);
        let (edit, g, new_event, new_hooks) = match self.events() {
            None => {
                let v = serde_json::json!({ event: [group] });
                (
                    style.add_member(&self.text, &self.root, "hooks", &v),
                    0,
                    true,
                    true,
                )
            }
            Some(events) => match events.member(event) {
                None => (
                    style.add_member(&self.text, events, event, &serde_json::json!([group])),
                    0,
                    true,
                    false,
                ),
                Some(list) => (
                    style.add_item(&self.text, &list.value, &group),
                    list.value.items().len(),
                    false,
                    false,
                ),
            },
        };
        self.apply(edit)?;
        Ok((
            Handler {
                event: event.to_string(),
                group: g,
                handler: 0,
                command,
            },
            new_event,
            new_hooks,
        ))
    }

    /// Replaces the command of handler `h` (found by `handlers`).
    pub fn set_command(&mut self, h: &Handler, command: &str) -> Result<()> {
        let node = self.handler_node(h).and_then(|n| n.member("command"));
        let Some(cmd) = node else {
            bail!("handler {}:{}:{} not found", h.event, h.group, h.handler);
        };
        let edit = (cmd.value.span.clone(), serde_json::to_string(command)?);
        self.apply(edit)
    }

    fn handler_node(&self, h: &Handler) -> Option<&Node> {
        let group = self
            .events()?
            .member(&h.event)?
            .value
            .items()
            .get(h.group)?;
        group.member("hooks")?.value.items().get(h.handler)
    }

    /// Removes handler `h`, and its group when it held nothing else. With `drop_empty_event`
    /// an event list left empty goes too, and with `drop_empty_hooks` a `hooks` object left
    /// empty.
    pub fn remove(
        &mut self,
        h: &Handler,
        drop_empty_event: bool,
        drop_empty_hooks: bool,
    ) -> Result<()> {
        let Some(events) = self.events() else {
            return Ok(());
        };
        let Some(list) = events.member(&h.event) else {
            return Ok(());
        };
        let Some(group) = list.value.items().get(h.group) else {
            return Ok(());
        };
        let Some(hooks) = group.member("hooks") else {
            return Ok(());
        };
        let edit = if hooks.value.items().len() > 1 {
            remove_child(&hooks.value, h.handler)
        } else {
            remove_child(&list.value, h.group)
        };
        self.apply(edit)?;
        let events = self.events().cloned();
        if let Some(events) = events
            && drop_empty_event
            && let Some(i) = member_index(&events, &h.event)
            && events
                .member(&h.event)
                .is_some_and(|l| l.value.items().is_empty())
        {
            self.apply(remove_child(&events, i))?;
        }
        let root = self.root.clone();
        if drop_empty_hooks
            && let Some(i) = member_index(&root, "hooks")
            && root
                .member("hooks")
                .is_some_and(|m| matches!(&m.value.kind, Kind::Object(v) if v.is_empty()))
        {
            self.apply(remove_child(&root, i))?;
        }
        Ok(())
    }

    fn apply(&mut self, (range, with): (Range<usize>, String)) -> Result<()> {
        let mut text = self.text.clone();
        if self.text.trim().is_empty() {
            // A file with nothing in it becomes a document of its own.
            text = with;
            if !text.ends_with('\n') {
                text.push('\n');
            }
        } else {
            text.replace_range(range, &with);
        }
        *self = HookFile::parse(&text)?;
        Ok(())
    }
}

/// A key given twice in one object.
struct Duplicate {
    /// Where it is, as `hooks.PreCompact[0].hooks`.
    path: String,
    /// Where each of the two begins in the text.
    first: usize,
    second: usize,
}

/// The first key given twice in one object where it bears on hooks: `hooks` at the top, or any
/// key inside it. The agents' parsers part ways there (JSON.parse in Claude Code keeps the last;
/// serde into Codex's structs refuses the whole file, as `duplicate field`), and this editor
/// would find the first: whatever it wrote or judged would not be what the agent reads. Keys
/// elsewhere in the file are no concern of the hooks, and stay as they are.
fn duplicate(root: &Node) -> Option<Duplicate> {
    let Kind::Object(members) = &root.kind else {
        return None;
    };
    let hooks: Vec<&Member> = members.iter().filter(|m| m.key == "hooks").collect();
    match hooks.as_slice() {
        [one] => duplicate_within(&one.value, "hooks"),
        [first, second, ..] => Some(Duplicate {
            path: "hooks".into(),
            first: first.span.start,
            second: second.span.start,
        }),
        [] => None,
    }
}

fn duplicate_within(node: &Node, path: &str) -> Option<Duplicate> {
    match &node.kind {
        Kind::Object(members) => {
            let mut seen: std::collections::HashMap<&str, usize> = Default::default();
            for m in members {
                if let Some(first) = seen.insert(&m.key, m.span.start) {
                    return Some(Duplicate {
                        path: format!("{path}.{}", m.key),
                        first,
                        second: m.span.start,
                    });
                }
            }
            members
                .iter()
                .find_map(|m| duplicate_within(&m.value, &format!("{path}.{}", m.key)))
        }
        Kind::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| duplicate_within(item, &format!("{path}[{i}]"))),
        Kind::Scalar => None,
    }
}

fn member_index(obj: &Node, key: &str) -> Option<usize> {
    match &obj.kind {
        Kind::Object(m) => m.iter().position(|m| m.key == key),
        _ => None,
    }
}

/// The edit that removes child `i` of a container with the comma and space that went with it.
fn remove_child(container: &Node, i: usize) -> (Range<usize>, String) {
    let c = container.children();
    let inner = container.span.start + 1..container.span.end - 1;
    let range = match (c.len(), i) {
        (1, _) => inner,
        (n, i) if i == n - 1 => c[i - 1].end..c[i].end,
        (_, i) => c[i].start..c[i + 1].start,
    };
    (range, String::new())
}

/// How the file is laid out, so that what is added looks like the rest.
struct Style {
    /// One level of indentation; `None` for a file on one line.
    unit: Option<String>,
    newline: &'static str,
    /// What separates a key from its value (`": "`, `":"`).
    colon: String,
}

impl Style {
    fn of(text: &str, root: &Node) -> Style {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let multiline = text.trim().is_empty() || text.trim().contains('\n');
        let unit = multiline.then(|| {
            // The indentation of the root's first member, else two spaces.
            root.children()
                .first()
                .and_then(|c| line_indent(text, c.start))
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| "  ".into())
        });
        let colon = match &root.kind {
            Kind::Object(m) if !m.is_empty() => {
                let m = &m[0];
                let key_end = {
                    let p = Parser {
                        s: text.as_bytes(),
                        i: 0,
                    };
                    p.string_end(m.span.start)
                };
                text[key_end..m.value.span.start].to_string()
            }
            _ => if multiline { ": " } else { ":" }.to_string(),
        };
        Style {
            unit,
            newline,
            colon,
        }
    }

    /// `value` as text starting at a line indented by `indent`.
    fn render(&self, value: &Value, indent: &str) -> String {
        match &self.unit {
            None => serde_json::to_string(value).unwrap_or_default(),
            Some(unit) => {
                let mut buf = Vec::new();
                let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
                let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
                serde::Serialize::serialize(value, &mut ser).ok();
                let pretty = String::from_utf8(buf).unwrap_or_default();
                let pretty = if self.colon == ": " {
                    pretty
                } else {
                    pretty.replace("\": ", &format!("\"{}", self.colon))
                };
                pretty.replace('\n', &format!("{}{indent}", self.newline))
            }
        }
    }

    fn add_member(
        &self,
        text: &str,
        obj: &Node,
        key: &str,
        value: &Value,
    ) -> (Range<usize>, String) {
        let key = serde_json::to_string(key).unwrap_or_default();
        self.add(text, obj, |indent| {
            format!("{key}{}{}", self.colon, self.render(value, indent))
        })
    }

    fn add_item(&self, text: &str, arr: &Node, value: &Value) -> (Range<usize>, String) {
        self.add(text, arr, |indent| self.render(value, indent))
    }

    /// Appends a child to a container, laid out like its other children (or, in an empty
    /// container, one level deeper than the container's own line).
    fn add(
        &self,
        text: &str,
        container: &Node,
        child: impl Fn(&str) -> String,
    ) -> (Range<usize>, String) {
        let children = container.children();
        if text.trim().is_empty() {
            let unit = self.unit.clone().unwrap_or_default();
            let nl = self.newline;
            return (0..text.len(), format!("{{{nl}{unit}{}{nl}}}", child(&unit)));
        }
        match children.last() {
            Some(last) => {
                let own_lines = line_indent(text, children[0].start);
                let sep = match (&own_lines, children.len()) {
                    (Some(indent), _) => format!("{}{indent}", self.newline),
                    (None, n) if n >= 2 => {
                        // Between the first two children, after the comma.
                        let between = &text[children[0].end..children[1].start];
                        between.trim_start().trim_start_matches(',').to_string()
                    }
                    (None, _) => {
                        if self.unit.is_some() {
                            " ".into()
                        } else {
                            String::new()
                        }
                    }
                };
                let indent = own_lines
                    .clone()
                    .unwrap_or_else(|| line_indent_of(text, last.start));
                (last.end..last.end, format!(",{sep}{}", child(&indent)))
            }
            None => {
                let inner = container.span.start + 1..container.span.end - 1;
                match &self.unit {
                    Some(unit) if text[container.span.clone()].len() < 80 => {
                        let outer = line_indent_of(text, container.span.start);
                        let indent = format!("{outer}{unit}");
                        let nl = self.newline;
                        (inner, format!("{nl}{indent}{}{nl}{outer}", child(&indent)))
                    }
                    _ => (inner, child("")),
                }
            }
        }
    }
}

/// The whitespace before `at` on its line, when nothing else precedes it there.
fn line_indent(text: &str, at: usize) -> Option<String> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..at];
    (before.chars().all(|c| c == ' ' || c == '\t') && line_start > 0 || at == 0)
        .then(|| before.to_string())
}

/// The indentation of the line `at` is on.
fn line_indent_of(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn handler(cmd: &str) -> Value {
        json!({"type": "command", "command": cmd, "timeout": 60})
    }

    /// Adds a handler and removes it again; with `exact`, removal must give back the original
    /// byte for byte (an emptied container can only come back as `{}` or `[]`).
    fn roundtrip(original: &str) -> String {
        roundtrip_as(original, true)
    }

    fn roundtrip_as(original: &str, exact: bool) -> String {
        let mut f = HookFile::parse(original).unwrap();
        let (h, new_event, new_hooks) = f.add("PreCompact", &handler("relay run")).unwrap();
        let added = f.text().to_string();
        // What was added is the only difference, and the file still parses to the same
        // values plus the new handler.
        let before: Value = if original.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(original).unwrap()
        };
        let after: Value = serde_json::from_str(&added).unwrap();
        let mut expect = before.clone();
        let groups = expect
            .as_object_mut()
            .unwrap()
            .entry("hooks")
            .or_insert(json!({}))
            .as_object_mut()
            .unwrap()
            .entry("PreCompact")
            .or_insert(json!([]));
        groups
            .as_array_mut()
            .unwrap()
            .push(json!({"hooks": [handler("relay run")]}));
        assert_eq!(after, expect, "{added}");
        assert_eq!(f.handlers("PreCompact").last(), Some(&h));
        f.remove(&h, new_event, new_hooks).unwrap();
        if exact && !original.trim().is_empty() {
            assert_eq!(
                f.text(),
                original,
                "removal gives the original back:\n{added}"
            );
        }
        added
    }

    #[test]
    fn adds_in_the_files_own_layout_and_removes_exactly_what_it_added() {
        let pretty = "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"Stop\": [\n            {\n                \"hooks\": [\n                    {\n                        \"type\": \"command\",\n                        \"command\": \"notify\"\n                    }\n                ]\n            }\n        ]\n    }\n}\n";
        let added = roundtrip(pretty);
        assert!(
            added.contains(
                "\n        \"PreCompact\": [\n            {\n                \"hooks\": ["
            ),
            "{added}"
        );
        // The same event already has someone else's handler.
        let with_event = "{\n  \"hooks\": {\n    \"PreCompact\": [\n      { \"matcher\": \"auto\", \"hooks\": [ { \"type\": \"command\", \"command\": \"backup.sh\" } ] }\n    ]\n  },\n  \"theme\": \"dark\"\n}";
        let added = roundtrip(with_event);
        assert!(added.contains("] },\n      {\n"), "{added}");
        // One line, tabs, CRLF, an empty hooks object, an empty list, an empty object, empty.
        roundtrip("{\"a\":1,\"hooks\":{\"Stop\":[]}}");
        roundtrip("{\r\n\t\"a\": [1, 2],\r\n\t\"b\": {\"c\": null}\r\n}\r\n");
        roundtrip("{\n  \"hooks\": {}\n}\n");
        roundtrip("{\n  \"hooks\": {\n    \"PreCompact\": []\n  }\n}\n");
        roundtrip("{}");
        roundtrip_as("{ }\n", false);
        let fresh = roundtrip_as("", false);
        assert_eq!(
            fresh,
            "{\n  \"hooks\": {\n    \"PreCompact\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"relay run\",\n            \"timeout\": 60\n          }\n        ]\n      }\n    ]\n  }\n}\n"
        );
        let crlf = roundtrip("{\r\n  \"x\": true\r\n}\r\n");
        assert!(!crlf.replace("\r\n", "").contains('\n'), "{crlf:?}");
    }

    #[test]
    fn a_handler_shares_its_group_only_when_the_file_put_it_there() {
        let text = "{\"hooks\":{\"PreCompact\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"a\"},{\"type\":\"command\",\"command\":\"relay run\"}]}]}}";
        let mut f = HookFile::parse(text).unwrap();
        let ours = f
            .handlers("PreCompact")
            .into_iter()
            .find(|h| h.command == "relay run")
            .unwrap();
        assert_eq!((ours.group, ours.handler), (0, 1));
        f.remove(&ours, true, true).unwrap();
        assert_eq!(
            f.text(),
            "{\"hooks\":{\"PreCompact\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"a\"}]}]}}"
        );
        let mut f = HookFile::parse(f.text()).unwrap();
        let h = f.handlers("PreCompact")[0].clone();
        f.set_command(&h, "b \"quoted\"").unwrap();
        assert_eq!(f.handlers("PreCompact")[0].command, "b \"quoted\"");
    }

    #[test]
    fn files_that_are_not_hooks_files_are_refused() {
        for bad in [
            "{\n  // a comment\n  \"hooks\": {}\n}",
            "{\"hooks\": {},}",
            "[1, 2]",
            "{\"hooks\": []}",
            "{\"hooks\": {\"PreCompact\": {}}}",
            "{\"hooks\": ",
        ] {
            assert!(HookFile::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_key_twice_where_it_bears_on_hooks_is_refused_with_its_place() {
        let ours = "{\"type\": \"command\", \"command\": \"session-relay hook run --to codex\"}";
        for (text, path, lines) in [
            (
                format!("{{\n  \"hooks\": {{\"PreCompact\": [{{\"hooks\": [{ours}]}}]}},\n  \"model\": \"opus\",\n  \"hooks\": {{}}\n}}"),
                "`hooks`",
                "lines 2 and 4",
            ),
            (
                format!("{{\"hooks\": {{\n\"PreCompact\": [{{\"hooks\": [{ours}]}}],\n\"PreCompact\": []}}}}"),
                "`hooks.PreCompact`",
                "lines 2 and 3",
            ),
            (
                "{\"hooks\": {\"PreCompact\": [{\"hooks\": [{\"type\": \"command\",\n \"command\": \"session-relay hook run --to codex\",\n \"command\": \"echo\"}]}]}}".to_string(),
                "`hooks.PreCompact[0].hooks[0].command`",
                "lines 2 and 3",
            ),
            // The same key, spelled with an escape: both agents decode it first.
            (
                format!("{{\"hooks\": {{\"PreCompact\": [{{\"hooks\": [{ours}]}}]}}, \"hook\\u0073\": {{}}}}"),
                "`hooks`",
                "lines 1 and 1",
            ),
        ] {
            let err = HookFile::parse(&text).err().unwrap_or_else(|| panic!("{text}"));
            let err = format!("{err:#}");
            assert!(err.contains(path) && err.contains(lines), "{err}\n{text}");
        }
        // Twice elsewhere bears on no hook: the file is edited, and keeps it.
        let text = "{\"model\": \"a\", \"model\": \"b\", \"env\": {\"X\": 1, \"X\": 2}}";
        let mut f = HookFile::parse(text).unwrap();
        f.add("PreCompact", &handler("relay run")).unwrap();
        assert!(
            f.text()
                .starts_with("{\"model\": \"a\", \"model\": \"b\", \"env\": {\"X\": 1, \"X\": 2},")
        );
    }

    /// A small deterministic generator (xorshift), so that a failure can be replayed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// A JSON object as its members, in order, duplicates allowed.
    enum Gen {
        Object(Vec<(String, Gen)>),
        Array(Vec<Gen>),
        Text(String),
        Number(usize),
    }

    impl Gen {
        fn render(&self, rng: &mut Rng, out: &mut String) {
            let ws = |rng: &mut Rng| [" ", "", "\n  ", "\r\n\t"][rng.below(4)];
            match self {
                Gen::Object(members) => {
                    out.push('{');
                    for (i, (k, v)) in members.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(ws(rng));
                        let mut key = serde_json::to_string(k).unwrap();
                        if rng.below(4) == 0 && k.ends_with('s') {
                            // The same key with its last letter escaped.
                            key.truncate(key.len() - 2);
                            key.push_str("\\u0073\"");
                        }
                        out.push_str(&key);
                        out.push(':');
                        out.push_str(ws(rng));
                        v.render(rng, out);
                    }
                    out.push_str(ws(rng));
                    out.push('}');
                }
                Gen::Array(items) => {
                    out.push('[');
                    for (i, v) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(ws(rng));
                        v.render(rng, out);
                    }
                    out.push(']');
                }
                Gen::Text(s) => out.push_str(&serde_json::to_string(s).unwrap()),
                Gen::Number(n) => out.push_str(&n.to_string()),
            }
        }

        /// The place of every object inside, as the member or item index at each level.
        fn objects(&self, place: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            let children: Vec<&Gen> = match self {
                Gen::Object(members) => {
                    out.push(place.clone());
                    members.iter().map(|(_, v)| v).collect()
                }
                Gen::Array(items) => items.iter().collect(),
                _ => Vec::new(),
            };
            for (i, child) in children.into_iter().enumerate() {
                place.push(i);
                child.objects(place, out);
                place.pop();
            }
        }

        fn at(&mut self, place: &[usize]) -> &mut Gen {
            match (self, place.split_first()) {
                (Gen::Object(m), Some((i, rest))) => m[*i].1.at(rest),
                (Gen::Array(items), Some((i, rest))) => items[*i].at(rest),
                (node, _) => node,
            }
        }

        /// A place as the refusal names it: `hooks.PreCompact[0].hooks`.
        fn name(&self, place: &[usize]) -> String {
            let mut name = String::new();
            let mut node = self;
            for i in place {
                match node {
                    Gen::Object(m) => {
                        if !name.is_empty() {
                            name.push('.');
                        }
                        name.push_str(&m[*i].0);
                        node = &m[*i].1;
                    }
                    Gen::Array(items) => {
                        name.push_str(&format!("[{i}]"));
                        node = &items[*i];
                    }
                    _ => unreachable!(),
                }
            }
            name
        }
    }

    fn hooks_file(rng: &mut Rng, n: usize) -> Gen {
        let handler = |rng: &mut Rng, n: usize| {
            let mut m = vec![
                ("type".to_string(), Gen::Text("command".into())),
                (
                    "command".to_string(),
                    Gen::Text(format!("cmd-{n}-{}", rng.below(1000))),
                ),
            ];
            if rng.below(2) == 0 {
                m.push(("timeout".into(), Gen::Number(rng.below(600))));
            }
            if rng.below(3) == 0 {
                m.swap(0, 1);
            }
            Gen::Object(m)
        };
        let mut events = Vec::new();
        for event in ["PreCompact", "Stop", "SessionEnd"] {
            if rng.below(3) == 0 {
                continue;
            }
            let groups = (0..rng.below(3))
                .map(|g| {
                    let mut m = Vec::new();
                    if rng.below(2) == 0 {
                        m.push(("matcher".to_string(), Gen::Text("auto".into())));
                    }
                    let hs = (0..rng.below(3))
                        .map(|h| handler(rng, n * 100 + g * 10 + h))
                        .collect();
                    m.push(("hooks".to_string(), Gen::Array(hs)));
                    Gen::Object(m)
                })
                .collect();
            events.push((event.to_string(), Gen::Array(groups)));
        }
        let mut root = vec![("model".to_string(), Gen::Text("opus".into()))];
        if rng.below(5) > 0 {
            root.insert(rng.below(2), ("hooks".to_string(), Gen::Object(events)));
        }
        if rng.below(4) == 0 {
            root.push(("model".to_string(), Gen::Text("again".into())));
        }
        Gen::Object(root)
    }

    /// Every command handler of `event` as a parser that keeps the last of a duplicate key
    /// (serde_json's `Value`, like JSON.parse) reads it.
    fn handlers_as_parsed(v: &Value, event: &str) -> Vec<(usize, usize, String)> {
        let mut out = Vec::new();
        for (g, group) in v["hooks"][event]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (h, handler) in group["hooks"].as_array().into_iter().flatten().enumerate() {
                if let Some(c) = handler["command"].as_str() {
                    out.push((g, h, c.to_string()));
                }
            }
        }
        out
    }

    #[test]
    fn what_is_accepted_reads_as_the_agents_read_it_and_duplicates_are_refused() {
        let mut rng = Rng(0x5eed_1234_abcd_0042);
        let (mut refused, mut accepted) = (0, 0);
        for n in 0..2000 {
            let mut doc = hooks_file(&mut rng, n);
            // Give one object inside `hooks` (or the root's `hooks`) a key twice, half the time.
            let mut dup = None;
            if rng.below(2) == 0 {
                let mut objects = Vec::new();
                doc.objects(&mut Vec::new(), &mut objects);
                // The root, for its `hooks`, and every object inside `hooks`.
                let hooks_at = match &doc {
                    Gen::Object(m) => m.iter().position(|(k, _)| k == "hooks"),
                    _ => None,
                };
                objects.retain(|p| hooks_at.is_some_and(|h| p.is_empty() || p[0] == h));
                if !objects.is_empty() {
                    let place = objects.swap_remove(rng.below(objects.len()));
                    let value = if rng.below(2) == 0 {
                        Gen::Text("x".into())
                    } else {
                        Gen::Object(Vec::new())
                    };
                    let Gen::Object(members) = doc.at(&place) else {
                        unreachable!()
                    };
                    let keys: Vec<usize> = (0..members.len())
                        .filter(|i| !place.is_empty() || members[*i].0 == "hooks")
                        .collect();
                    if !keys.is_empty() {
                        let key = members[keys[rng.below(keys.len())]].0.clone();
                        members.insert(rng.below(members.len() + 1), (key.clone(), value));
                        let at = doc.name(&place);
                        dup = Some(if at.is_empty() {
                            key
                        } else {
                            format!("{at}.{key}")
                        });
                    }
                }
            }
            let mut text = String::new();
            doc.render(&mut rng, &mut text);
            let parsed = HookFile::parse(&text);
            let Some(path) = dup else {
                // Accepted: what the editor finds is what the agents' parser finds, and what it
                // adds is there for that parser.
                let f = parsed.unwrap_or_else(|e| panic!("{e:#}\n{text}"));
                accepted += 1;
                let v: Value = serde_json::from_str(&text).unwrap();
                for event in ["PreCompact", "Stop", "SessionEnd"] {
                    let found: Vec<_> = f
                        .handlers(event)
                        .into_iter()
                        .map(|h| (h.group, h.handler, h.command))
                        .collect();
                    assert_eq!(found, handlers_as_parsed(&v, event), "{text}");
                }
                let mut f = f;
                let (h, _, _) = f.add("PreCompact", &handler("relay run")).unwrap();
                let v: Value = serde_json::from_str(f.text()).unwrap();
                assert!(
                    handlers_as_parsed(&v, "PreCompact").contains(&(
                        h.group,
                        h.handler,
                        "relay run".into()
                    )),
                    "{}",
                    f.text()
                );
                continue;
            };
            refused += 1;
            let err = match parsed {
                Ok(_) => panic!("`{path}` twice, accepted:\n{text}"),
                Err(e) => format!("{e:#}"),
            };
            assert!(err.contains("appears twice"), "{err}\n{text}");
            // The first duplicate in the file's order is named; the injected one is the only.
            assert!(err.contains(&format!("`{path}`")), "{path}: {err}\n{text}");
        }
        assert!(refused > 500 && accepted > 500, "{refused} {accepted}");
    }
}
