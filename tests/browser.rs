//! `stats --html` on a generated store of 5,000 sessions with relays between agents, opened in
//! a real headless Chromium: the page must draw every chart (its title and the marks of its
//! SVG in the DOM the browser built) and its screenshot must not be blank.
//!
//! It needs `chromium` (Debian's package; `.ci/run` installs it) and `python3`, so it is
//! ignored by a plain `cargo test`; run it with `cargo test --locked --test browser --
//! --ignored`. Without them it fails: a page no browser drew is not known to draw.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestEnv;

/// Chromium as Debian installs it (`CHROMIUM` names another).
fn chromium() -> PathBuf {
    let name = std::env::var_os("CHROMIUM").unwrap_or_else(|| "chromium".into());
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(&name))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "{} is not installed: apt-get install chromium (or set CHROMIUM)",
            name.to_string_lossy()
        )
    })
}

/// Chromium headless on `page`, with nothing of its own fetched or synced: `extra` says what to
/// produce (a screenshot, the DOM).
fn chromium_on(page: &Path, profile: &Path, extra: &[&str]) -> std::process::Output {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1200,2600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("cannot run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// How many colours a PNG's pixels have, counted by a small decoder in python3 (its standard
/// library has zlib; this crate depends on no image decoder).
fn distinct_colors(png: &Path) -> usize {
    const DECODE: &str = r#"
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 4 if ctype == 6 else 3
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colors = set()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp * 3):
        colors.add(bytes(line[x:x + 3]))
    prev = line
print(len(colors))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(DECODE)
        .arg(png)
        .output()
        .expect("cannot run python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
#[ignore = "needs chromium and python3; run with --ignored (.ci/run does)"]
fn the_stats_page_of_a_5000_session_store_draws_every_chart_in_chromium() {
    let env = TestEnv::empty();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-store.py");
    let made = Command::new("python3")
        .arg(&script)
        .arg(env.dir.path())
        .arg("5000")
        .output()
        .expect("cannot run python3");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    // Relays between agents, for the flow.
    let proj = env.project();
    let listed = env.list_json(&["list", "--all", "--agent", "claude", "-n", "3", "--json"]);
    for (s, to) in listed
        .as_array()
        .unwrap()
        .iter()
        .zip(["codex", "gemini", "codex"])
    {
        env.ok(&[
            "relay",
            s["id"].as_str().unwrap(),
            "--to",
            to,
            "--cwd",
            &proj,
        ]);
    }
    let page = env.dir.path().join("stats.html");
    let report = env.json(&["stats", "--json", "--html", page.to_str().unwrap()]);
    assert!(
        report["total"]["sessions"].as_u64().unwrap() >= 5000,
        "{}",
        report["total"]
    );
    assert_eq!(report["total"]["relays_out"], 3);
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch when it is viewed.
    for outside in ["http://", "https://", "<script", "@import", "url("] {
        let allowed = "http://www.w3.org/2000/svg";
        assert!(
            !html.replace(allowed, "").contains(outside),
            "the page refers to {outside}"
        );
    }

    let profile = tempfile::tempdir().unwrap();
    let dom = chromium_on(&page, profile.path(), &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    for (id, title) in session_relay::render::STATS_CHARTS {
        let start = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no chart {id} in the DOM"));
        let section = &dom[start..start + dom[start..].find("</section>").unwrap()];
        assert!(section.contains(title), "{id} has no title {title}");
        let marks = section.matches("class=\"mark\"").count();
        assert!(marks > 0, "{id} draws nothing:\n{section}");
    }
    let shot = env.dir.path().join("stats.png");
    chromium_on(
        &page,
        profile.path(),
        &[&format!("--screenshot={}", shot.display())],
    );
    let colors = distinct_colors(&shot);
    assert!(colors > 20, "the screenshot has {colors} colours: blank");
}
