//! `cargo bench --bench redaction`: how fast secrets are masked in session-like text, most of
//! which holds none (the prefilter keeps clean text at one scan).

#[path = "../tests/common/rng.rs"]
#[allow(dead_code)]
mod rng;
use rng::Rng;

/// Realistic session text: code, build logs, JSON tool outputs, git logs, lock files, prose with
/// non-ASCII, base64, UUIDs; a few chunks hold near-misses that wake the prefilter.
fn session_like_chunks(total: usize) -> Vec<String> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let hex = |r: &mut Rng, n: usize| -> String {
        (0..n)
            .map(|_| char::from(b"0123456789abcdef"[r.index(16)]))
            .collect()
    };
    let b64 = |r: &mut Rng, n: usize| -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        (0..n).map(|_| char::from(A[r.index(64)])).collect()
    };
    let mut chunks = Vec::new();
    let mut size = 0;
    while size < total {
        let mut c = String::new();
        let target = 2_000 + r.index(40_000);
        while c.len() < target {
            match r.index(9) {
                0 => {
                    let n = r.index(1000);
                    c.push_str(&format!(
                        "fn handle_{n}(req: &Request) -> Result<Response> {{\n    let body = serde_json::to_string(&req.body)?;\n    let max_tokens = {n} * 4;\n    if body.len() > max_tokens {{ return Err(anyhow!(\"too long: {{}}\", body.len())); }}\n    let password = read_password();\n    Ok(Response::new(body))\n}}\n\n"
                    ))
                }
                1 => {
                    let v = r.index(300);
                    c.push_str(&format!(
                        "   Compiling serde_json v1.0.{v}\n   Compiling session-relay v0.1.0 (/home/dev/projects/relay)\nwarning: unused variable: `x_{v}`\n  --> src/plan/fit.rs:{v}:9\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in {v}.42s\n"
                    ))
                }
                2 => {
                    let n = r.index(100_000);
                    c.push_str(&format!(
                        "{{\"output\":\"total {n}\\ndrwxr-xr-x  5 dev dev 4096 Nov 29 12:00 src\\n-rw-r--r--  1 dev dev {n} Nov 29 12:00 Cargo.toml\\n\",\"metadata\":{{\"exit_code\":0,\"duration_seconds\":0.{n}}}}}\n{{\"usage\":{{\"input_tokens\":{n},\"output_tokens\":40,\"cache_read_input_tokens\":0}},\"token_count\":{n}}}\n"
                    ))
                }
                3 => {
                    let sha = hex(&mut r, 40);
                    let parent = hex(&mut r, 7);
                    c.push_str(&format!(
                        "commit {sha}\nAuthor: Dev Eloper <dev@example.com>\nDate:   Sat Nov 29 12:00:00 2026 +0100\n\n    Fix the fitter's off-by-one (parent {parent})\n\n"
                    ))
                }
                4 => {
                    let i = b64(&mut r, 86);
                    c.push_str(&format!(
                        "    \"node_modules/lodash\": {{\n      \"version\": \"4.17.21\",\n      \"resolved\": \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\",\n      \"integrity\": \"sha512-{i}==\"\n    }},\n"
                    ))
                }
                5 => c.push_str(
                    "Voilà: the café’s naïve résumé… ✅ Tests pass 🎉 — next, the “budget” step. Ça marche très bien; 日本語のテキストも少し。\n",
                ),
                6 => {
                    let n = 400 + r.index(2000);
                    let d = b64(&mut r, n);
                    c.push_str(&format!("data:image/png;base64,iVBORw0KGgo{d}=\n"))
                }
                7 => {
                    let (a, b) = (hex(&mut r, 8), hex(&mut r, 12));
                    c.push_str(&format!(
                        "session {a}-ae7a-4516-8192-{b} resumed at 2026-11-29T12:00:00.000Z in /home/dev/projects/relay\n"
                    ))
                }
                _ => {
                    let n = r.index(10_000);
                    c.push_str(&format!(
                        "[2026-11-29T12:00:{:02}Z INFO  relay::plan] fitted {n} messages into budget 120000 (tokenizer o200k_base)\n[2026-11-29T12:00:{:02}Z DEBUG hyper::client] GET https://api.example.com/v1/items?page={n} -> 200 OK\n",
                        n % 60,
                        (n + 1) % 60
                    ))
                }
            }
        }
        size += c.len();
        chunks.push(c);
    }
    chunks
}

/// This process's CPU time (user + system) on Linux: under a loaded machine it varies less than
/// the wall clock.
fn cpu_time() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(ticks * 10))
}

/// Throughput of `Redactor::text` over 100 MB of session-like text, best of 3 runs, by wall
/// clock and by CPU time.
fn main() {
    use session_relay::redact::{Counts, Redactor};
    let chunks = session_like_chunks(100 << 20);
    let mb = chunks.iter().map(String::len).sum::<usize>() as f64 / (1 << 20) as f64;
    let t = std::time::Instant::now();
    let r = Redactor::new(&[], &[]).unwrap();
    let build = t.elapsed();
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    let mut changed = 0;
    let mut counts = Counts::new();
    for _ in 0..3 {
        counts = Counts::new();
        changed = 0;
        let (t, c) = (std::time::Instant::now(), cpu_time());
        for chunk in &chunks {
            if let std::borrow::Cow::Owned(_) = r.text(chunk, &mut counts) {
                changed += 1;
            }
        }
        wall = wall.min(t.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (c, cpu_time()) {
            cpu = cpu.min((b - a).as_secs_f64());
        }
    }
    eprintln!(
        "redactor built in {build:?}; {mb:.0} MB in {} chunks: {:.0} MB/s wall, {:.0} MB/s CPU; {changed} chunks rewritten; {counts:?}",
        chunks.len(),
        mb / wall,
        mb / cpu,
    );
}
