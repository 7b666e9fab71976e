//! The same JSON line written other ways, for tests that check a reader gives the same answers
//! whatever serializer wrote the line (key order, string lengths, escapes).

use serde_json::Value;

/// The line with every object's keys in reverse order.
pub fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .rev()
                .map(|(k, x)| (k.clone(), reversed(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

/// Every string made `times` times longer (tool outputs over the cut, long texts).
pub fn lengthened(v: &Value, times: usize) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), lengthened(x, times)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| lengthened(x, times)).collect()),
        Value::String(s) if s.len() > 8 => Value::String(s.repeat(times)),
        other => other.clone(),
    }
}

/// Non-ASCII characters written as `\u` escapes (valid anywhere in JSON text: such
/// characters occur only inside strings).
pub fn escaped(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// Every line that is JSON of every `.jsonl` fixture under `fixtures/<dir>` for each of
/// `dirs`, in a fixed order, with its value.
pub fn fixture_lines(dirs: &[&str]) -> Vec<(String, Value)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = entry.unwrap();
        let p = entry.path();
        let top = p.strip_prefix(&root).unwrap().iter().next();
        if !top.is_some_and(|d| dirs.iter().any(|x| d == *x))
            || p.extension().is_none_or(|e| e != "jsonl")
        {
            continue;
        }
        for line in std::fs::read_to_string(p).unwrap_or_default().lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                out.push((line.to_string(), v));
            }
        }
    }
    out
}

/// The line as written, and as three other serializers could have written it: keys in
/// reverse order, every string longer, and pretty-printed with `\u` escapes.
pub fn written_ways(line: &str, v: &Value) -> [String; 4] {
    [
        line.to_string(),
        reversed(v).to_string(),
        lengthened(v, 40).to_string(),
        escaped(&serde_json::to_string_pretty(v).unwrap()),
    ]
}
