//! Editing an agent's hooks file (`{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type":
//! "command", "command", "timeout"}]}]}}`, the schema Claude Code and Codex share) the way a
//! person would: session-relay's own handler is added or removed as text, in the file's own
//! indentation and line endings, and every other byte stays where it was. The file must be
//! strict JSON (both agents refuse comments); a file that is not is refused, untouched.

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

    /// Every event with handlers, in file order.
    pub fn event_names(&self) -> Vec<String> {
        match self.events().map(|e| &e.kind) {
            Some(Kind::Object(m)) => m.iter().map(|m| m.key.clone()).collect(),
            _ => Vec::new(),
        }
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
}
