//! `cargo bench --bench tokenizer`: the exact token count (`Tokenizer::O200k`, the project's
//! own BPE over tables build.rs lays out) beside tiktoken-rs and the tiktoken crate: start-up
//! in fresh processes, throughput on session-like text (TOKBENCH_MB, 10 by default), and peak
//! memory. TOKBENCH_RUNS sets the start-up runs (11).

use std::path::Path;
use std::time::Instant;

use session_relay::tokens::Tokenizer;

#[path = "../tests/common/rng.rs"]
#[allow(dead_code)]
mod rng;
use rng::Rng;

fn pick<T: Copy>(r: &mut Rng, xs: &[T]) -> T {
    xs[r.index(xs.len())]
}

/// Session-like text, about `mb` MB: the repository's own code, prose and fixture JSON, and
/// generated CJK, emoji and runs without spaces (base64, hashes, minified JS, long letter, digit
/// and punctuation runs, JSON escaped several times), cut into message-sized pieces.
fn corpus(mb: usize) -> Vec<(&'static str, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut r = Rng(0x5e55_1011_7e1a_7001);
    let size = |share: usize| mb * share * (1 << 20) / 100;
    let read_all = |dir: &str, ext: &str| -> Vec<String> {
        walkdir::WalkDir::new(root.join(dir))
            .sort_by_file_name()
            .into_iter()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(ext))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .collect()
    };
    fn fill(r: &mut Rng, target: usize, mut make: impl FnMut(&mut Rng) -> String) -> Vec<String> {
        let (mut out, mut n) = (Vec::new(), 0);
        while n < target {
            let s = make(r);
            n += s.len();
            out.push(s);
        }
        out
    }
    let mut out = Vec::new();

    // Code: the sources cut at line ends into 1-16 KB pieces, like `cat` outputs.
    let code: Vec<String> = read_all("src", ".rs")
        .into_iter()
        .chain(read_all("tests", ".rs"))
        .collect();
    let (mut file, mut at) = (0, 0);
    out.push((
        "code",
        fill(&mut r, size(25), |r| {
            let t = &code[file % code.len()];
            let mut end = (at + 1024 + r.index(15 * 1024)).min(t.len());
            while !t.is_char_boundary(end) {
                end += 1;
            }
            end = t[end..].find('\n').map_or(t.len(), |i| end + i + 1);
            let piece = t[at..end].to_string();
            at = end;
            if at >= t.len() {
                (file, at) = (file + 1, 0);
            }
            piece
        }),
    ));

    // JSON: fixture session lines, compact and pretty-printed, a few to a tool output.
    let mut lines = Vec::new();
    for t in read_all("fixtures", ".jsonl") {
        for l in t.lines().filter(|l| !l.trim().is_empty()) {
            lines.push(l.to_string());
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l) {
                lines.push(serde_json::to_string_pretty(&v).unwrap());
            }
        }
    }
    out.push((
        "json",
        fill(&mut r, size(25), |r| {
            (0..1 + r.index(8))
                .map(|_| lines[r.index(lines.len())].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        }),
    ));

    // Prose: the Markdown's paragraphs, and sentences made of its words.
    let md: String = ["README.md", "CHANGELOG.md"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(root.join(f)).ok())
        .chain(read_all("docs", ".md"))
        .collect::<Vec<_>>()
        .join("\n\n");
    let paragraphs: Vec<&str> = md.split("\n\n").filter(|p| p.len() > 40).collect();
    let words: Vec<&str> = md
        .split_whitespace()
        .filter(|w| w.chars().all(|c| c.is_ascii_alphabetic()))
        .collect();
    out.push((
        "prose",
        fill(&mut r, size(20), |r| {
            let mut s = String::new();
            for _ in 0..3 + r.index(10) {
                if r.chance(50) {
                    s.push_str(paragraphs[r.index(paragraphs.len())]);
                } else {
                    let sentence: Vec<&str> = (0..8 + r.index(20))
                        .map(|_| words[r.index(words.len())])
                        .collect();
                    s.push_str(&sentence.join(" "));
                    s.push_str(pick(r, &[". ", "? ", "! ", ": "]));
                }
                s.push_str("\n\n");
            }
            s
        }),
    ));

    // CJK: Chinese, Japanese and Korean with code among it.
    #[rustfmt::skip]
    const CJK: &[&str] = &[
        "我们", "需要", "修改", "这个", "函数", "文件", "测试", "失败", "了", "。", "，", "请", "检查", "代码", "错误", "日志",
        "配置", "的", "是", "在", "中", "和", "问题", "已经", "完成", "ファイル", "を", "確認", "して", "ください", "テスト",
        "が", "失敗", "しました", "、", "関数", "設定", "です", "エラー", "修正", "は", "に", "の", "コード", "「", "」", "파일",
        "을", "확인", "해", "주세요", "테스트", "가", "실패", "했습니다", "함수", "설정", "（", "）", "：",
    ];
    out.push((
        "cjk",
        fill(&mut r, size(10), |r| {
            let mut s = String::new();
            for _ in 0..50 + r.index(400) {
                s.push_str(match r.index(12) {
                    0 => " `src/main.rs` ",
                    1 => pick(r, &["\n", "\n\n", " fit_budget() ", " 200k "]),
                    _ => pick(r, CJK),
                });
            }
            s
        }),
    ));

    // Emoji: chat-like text with emoji, ZWJ sequences, flags, skin tones, and runs of them.
    #[rustfmt::skip]
    const EMOJI: &[&str] = &[
        "😀", "🎉", "🚀", "✅", "❌", "⚠️", "🔥", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🧑‍💻", "🇯🇵", "🇺🇸", "❤️", "✨", "🐛",
        "📦", "🔧", "💡", "🤖", "🙏🏻", "😂", "🏳️‍🌈", "1️⃣", "©️", "🫠",
    ];
    out.push((
        "emoji",
        fill(&mut r, size(5), |r| {
            let mut s = String::new();
            for _ in 0..20 + r.index(200) {
                match r.index(5) {
                    0 => (0..1 + r.index(30)).for_each(|_| s.push_str(pick(r, EMOJI))),
                    1 => s.push(' '),
                    _ => {
                        s.push_str(pick(
                            r,
                            &["done ", "Tests pass ", "bug fixed", "ship it ", "\n- "],
                        ));
                        s.push_str(pick(r, EMOJI));
                    }
                }
            }
            s
        }),
    ));

    // No spaces: what makes long pieces for the pattern, and slow BPE merges.
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let base64 = |r: &mut Rng, n: usize| -> String {
        (0..n).map(|_| B64[r.index(64)] as char).collect::<String>() + "=="
    };
    out.push((
        "no-space",
        fill(&mut r, size(15), |r| match r.index(8) {
            0 => {
                let n = 1000 + r.index(130_000);
                base64(r, n)
            }
            1 => {
                let n = 2000 + r.index(30_000);
                let b = base64(r, n);
                b.as_bytes()
                    .chunks(76)
                    .map(|l| String::from_utf8_lossy(l).into_owned())
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            2 => (0..50 + r.index(500))
                .map(|_| format!("{:016x}{:016x}", r.next(), r.next()))
                .collect(),
            3 => (0..500 + r.index(5000))
                .map(|i| {
                    let op = pick(
                        r,
                        &[
                            "function(",
                            "){return ",
                            ";var ",
                            "=>{",
                            "}),",
                            ".prototype.",
                        ],
                    );
                    format!(
                        "{op}{}{}",
                        pick(r, &["a", "b", "e", "t", "Oe", "_x", "$"]),
                        i % 97
                    )
                })
                .collect(),
            4 => (0..100 + r.index(20_000))
                .map(|_| (b'a' + r.index(26) as u8) as char)
                .collect(),
            5 => pick(r, &["=", "-", "\\", "/", "*", "~", ".", "#"]).repeat(100 + r.index(20_000)),
            6 => (0..100 + r.index(20_000))
                .map(|_| (b'0' + r.index(10) as u8) as char)
                .collect(),
            _ => {
                let mut s = String::from("{\"a\":\"b\",\"list\":[1,2,3]}");
                for _ in 0..3 + r.index(5) {
                    s = serde_json::to_string(&s).unwrap();
                }
                s.repeat(1 + r.index(50))
            }
        }),
    ));
    out
}

/// The implementations compared: the reference as the project called it before, and the
/// project's count now.
fn bench_count(which: &str, text: &str) -> usize {
    match which {
        "tiktoken-rs" => tiktoken_rs::o200k_base_singleton()
            .encode_with_special_tokens(text)
            .len(),
        "tiktoken" => tiktoken::get_encoding("o200k_base").unwrap().count(text),
        "session-relay" => Tokenizer::O200k.count(text),
        "none" => text.len(),
        other => panic!("{other}"),
    }
}

/// CPU time of this thread, in seconds: the machine may be shared, and wall time is then noise.
/// Elsewhere than Linux, wall time.
fn cpu() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or_else(
            || START.get_or_init(Instant::now).elapsed().as_secs_f64(),
            |ns| ns / 1e9,
        )
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The child of `main`: in a fresh process, the time to the first count of `which`, then (with
/// TOKBENCH_MB) the peak memory of counting the corpus.
fn bench_child(which: &str) {
    let (wall, cpu0) = (Instant::now(), cpu());
    let n = bench_count(which, "Hello, world! The relay fits the session.");
    println!(
        "TOKBENCH first-count {n} wall_ms={} cpu_ms={}",
        wall.elapsed().as_secs_f64() * 1e3,
        (cpu() - cpu0) * 1e3
    );
    if let Some(mb) = std::env::var("TOKBENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        let total: usize = corpus(mb)
            .iter()
            .flat_map(|c| c.1.iter())
            .map(|t| bench_count(which, t))
            .sum();
        println!("TOKBENCH corpus {total} peak_rss_kb={}", peak_rss_kb());
    }
}

fn child(which: &str, mb: Option<usize>) -> (f64, f64, f64, u64) {
    let t = Instant::now();
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.env("TOKBENCH_CHILD", which);
    if let Some(mb) = mb {
        cmd.env("TOKBENCH_MB", mb.to_string());
    }
    let out = cmd.output().unwrap();
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| -> f64 {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {text}"))
    };
    let rss = if mb.is_some() {
        field("peak_rss_kb=") as u64
    } else {
        0
    };
    (wall, field("wall_ms="), field("cpu_ms="), rss)
}

/// Start-up, throughput and peak memory (o200k_base): the project's BPE beside tiktoken-rs and
/// the tiktoken crate (the vocabularies build.rs reads).
fn main() {
    if let Ok(which) = std::env::var("TOKBENCH_CHILD") {
        return bench_child(&which);
    }
    let impls = ["none", "tiktoken-rs", "tiktoken", "session-relay"];
    let runs: usize = std::env::var("TOKBENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let mb: usize = std::env::var("TOKBENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);

    println!("Start-up, fresh processes, median of {runs} (interleaved):");
    println!(
        "  {:12} {:>16} {:>17} {:>16}",
        "", "process wall ms", "first count wall", "first count CPU"
    );
    let mut res: Vec<Vec<(f64, f64, f64, u64)>> = vec![Vec::new(); impls.len()];
    for _ in 0..runs {
        for (k, i) in impls.iter().enumerate() {
            res[k].push(child(i, None));
        }
    }
    for (k, i) in impls.iter().enumerate() {
        let m = |f: fn(&(f64, f64, f64, u64)) -> f64| median(res[k].iter().map(f).collect());
        println!(
            "  {i:14} {:>16.1} {:>17.1} {:>16.1}",
            m(|r| r.0),
            m(|r| r.1),
            m(|r| r.2)
        );
    }

    let corpus = corpus(mb);
    let total: usize = corpus
        .iter()
        .flat_map(|c| c.1.iter())
        .map(String::len)
        .sum();
    println!(
        "Throughput (CPU time, best of 3), {:.1} MB of session-like text:",
        total as f64 / 1e6
    );
    for (cat, msgs) in &corpus {
        let longest = msgs.iter().map(String::len).max().unwrap_or(0);
        let bytes: usize = msgs.iter().map(String::len).sum();
        println!(
            "  {cat:9} {:6.2} MB in {:5} pieces, longest {:4} KB",
            bytes as f64 / 1e6,
            msgs.len(),
            longest / 1024
        );
    }
    for i in &impls[1..] {
        bench_count(i, "warm");
        let mut line = format!("  {i:14}");
        let (mut all, mut counts) = (0.0, Vec::new());
        for (cat, msgs) in &corpus {
            let bytes: usize = msgs.iter().map(String::len).sum();
            let mut best = f64::MAX;
            let mut sum = 0;
            for _ in 0..3 {
                let t = cpu();
                sum = msgs.iter().map(|m| bench_count(i, m)).sum::<usize>();
                best = best.min(cpu() - t);
            }
            all += best;
            counts.push(sum);
            line += &format!(" {cat} {:.1}", bytes as f64 / 1e6 / best);
        }
        println!(
            "{line} MB/s; all {:.1} MB/s ({:.2} s); tokens {counts:?}",
            total as f64 / 1e6 / all,
            all
        );
    }
    let ordinary: Vec<usize> = corpus
        .iter()
        .map(|(_, msgs)| {
            let bpe = tiktoken_rs::o200k_base_singleton();
            msgs.iter().map(|m| bpe.encode_ordinary(m).len()).sum()
        })
        .collect();
    println!(
        "  tiktoken-rs encode_ordinary: tokens {ordinary:?} (what the other two count; the code holds \
         special-token text, which encode_with_special_tokens counted as control tokens)"
    );

    println!("Peak RSS counting the corpus in a fresh process (none: the corpus alone):");
    for i in impls {
        println!("  {i:14} {:>8} KB", child(i, Some(mb)).3);
    }
}
