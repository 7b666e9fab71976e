//! The neutral session as JSONL: a header line (every session field but the messages, tagged
//! with `record`), then one message per line. It reads back into an identical `Session`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::{Message, SCHEMA_VERSION, Session};

pub const RECORD: &str = "session-relay/session";

pub fn write(session: &Session, out: &mut dyn Write) -> Result<()> {
    write_header(session, out)?;
    write_messages(&session.messages, out)
}

/// `write` of a session whose reader handed its older turns to a fold (`Session::folded`):
/// `folded` holds their messages, already written as lines, and they go where they were.
pub fn write_folded(
    session: &Session,
    folded: &mut dyn std::io::Read,
    out: &mut dyn Write,
) -> Result<()> {
    let at = session
        .folded
        .as_ref()
        .map_or(session.messages.len(), |f| f.at)
        .min(session.messages.len());
    write_header(session, out)?;
    write_messages(&session.messages[..at], out)?;
    std::io::copy(folded, out)?;
    write_messages(&session.messages[at..], out)
}

/// One message as the line `write` gives it.
pub fn write_message(m: &Message, out: &mut dyn Write) -> Result<()> {
    serde_json::to_writer(&mut *out, m)?;
    out.write_all(b"\n")?;
    Ok(())
}

fn write_header(session: &Session, out: &mut dyn Write) -> Result<()> {
    #[derive(serde::Serialize)]
    struct Header<'a> {
        record: &'static str,
        #[serde(flatten)]
        session: &'a Session,
    }
    serde_json::to_writer(
        &mut *out,
        &Header {
            record: RECORD,
            session: &session.header(),
        },
    )?;
    out.write_all(b"\n")?;
    Ok(())
}

fn write_messages(messages: &[Message], out: &mut dyn Write) -> Result<()> {
    for m in messages {
        write_message(m, out)?;
    }
    Ok(())
}

pub fn claims(head: &crate::jsonl::sniff::Head) -> bool {
    head.first_has("record", RECORD)
}

pub fn read(path: &Path) -> Result<Session> {
    let mut reader = crate::jsonl::open(path)?;
    let mut buf = Vec::new();
    let mut next_line = |n: usize| -> Result<Option<String>> {
        let (len, _) =
            crate::jsonl::read_line_bounded(&mut *reader, &mut buf, crate::jsonl::MAX_LINE)?;
        if len == 0 {
            return Ok(None);
        }
        if len > crate::jsonl::MAX_LINE {
            bail!(
                "{}:{n}: line longer than the {} MB limit",
                path.display(),
                crate::jsonl::MAX_LINE >> 20
            );
        }
        let line = if n == 1 {
            crate::jsonl::strip_bom(&buf)
        } else {
            &buf
        };
        Ok(Some(String::from_utf8_lossy(line).trim_end().to_string()))
    };
    let header = next_line(1)?.with_context(|| format!("{} is empty", path.display()))?;
    let mut header: Value = serde_json::from_str(&header)
        .with_context(|| format!("{}:1: invalid session header", path.display()))?;
    let obj = header
        .as_object_mut()
        .with_context(|| format!("{}:1: header is not an object", path.display()))?;
    if obj
        .remove("record")
        .and_then(|r| r.as_str().map(str::to_string))
        .as_deref()
        != Some(RECORD)
    {
        bail!("{}:1: not a session-relay export", path.display());
    }
    // As written (`1.0` is 1 to a JSON reader in JavaScript or Python).
    match obj.get("schema_version") {
        Some(v) if v.as_f64() == Some(f64::from(SCHEMA_VERSION)) => {
            obj.insert("schema_version".into(), SCHEMA_VERSION.into());
        }
        written => bail!(
            "{}:1: {} is not supported by this build (it reads schema_version {SCHEMA_VERSION})",
            path.display(),
            written.map_or("no schema_version".to_string(), |v| format!(
                "schema_version {v}"
            ))
        ),
    }
    // Counts written as floats (`2.0`) by a serializer that keeps every number so.
    whole_numbers(&mut header);
    let mut session: Session = serde_json::from_value(header)
        .with_context(|| format!("{}:1: invalid session header", path.display()))?;
    let mut n = 1;
    loop {
        n += 1;
        let Some(line) = next_line(n)? else { break };
        if line.trim().is_empty() {
            continue;
        }
        let m: Message = serde_json::from_str(&line)
            .with_context(|| format!("{}:{n}: invalid message", path.display()))?;
        session.messages.push(m);
    }
    Ok(session)
}

/// Every whole number in `v` written as a float (`2.0`, `1.2e3`) as the integer it is, for the
/// header's typed counts (see `jsonl::as_count`).
fn whole_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(u) = crate::jsonl::as_count(v) {
                *v = u.into();
            } else if let Some(i) = crate::jsonl::as_whole(v) {
                *v = i.into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers),
        _ => {}
    }
}
