#!/usr/bin/env python3
"""Differential check: runs two builds of session-relay on identical scratch copies of the same
inputs and says where their outputs differ, once generated ids, times and the scratch folder are
taken out. A refactor that means to change nothing must find no difference.

usage: scripts/differential.py --base REV [--new BINARY] [--sizes 1,10,100] [--quick]
                               [--shapes many,large] [--modes default,full,folded]
                               [--budgets default,2000] [--allow FILE] [--jobs 2]
                               [--only REGEX] [--keep]

Builds (under `nice -n 10`; a cold one takes 5-6 minutes on 2 shared cores):
  * REV (any git revision) is built with `cargo build --release --locked` in a temporary
    `git worktree` (removed afterwards) into target/differential/cargo-target, and its binary
    kept as target/differential/<commit>/session-relay: a second run does not build it again.
  * The new side is the working tree, built the same way into target/differential/
    worktree-target (a folder of its own: cargo would take one checkout's build for another's),
    or the binary --new names.

Inputs (each a "group": a scratch folder with a home per agent, a state folder, HOME):
  * fixtures: each agent's folder of fixtures/ (claude, codex, gemini, copilot, qwen, pi) as its
    home, and
    fixtures/codex-index/state_5.sqlite in the Codex home (the index a relay into Codex writes);
  * generated-SHAPE-Nmb: a Claude Code and a Codex session of N MB of each shape from
    scripts/bench.py's generator (cached under target/differential/bench-data), the other
    agents' homes empty, as targets. --quick: the fixtures and 1 MB only.
  The sessions are those `list --all --json` of either build lists in the group.

Commands, each run by both builds in the same scratch path (one after the other):
  * once per group: list --all (--json and text), status --all (--json and text);
  * per session and read mode: show (--json and text), export (jsonl and --format markdown),
    and per budget and target agent: export --to AGENT, relay --to AGENT --dry-run --json;
  * per read mode and budget, in a fresh copy of the group: relay --to AGENT --json of every
    session to every agent (all 36 agent pairs on the fixtures), each relay's written session
    file; then the scratch folder's files (homes, state, HOME, the working directory): those
    new, changed and deleted, with the contents of session_index.jsonl, state_5.sqlite's
    `threads` rows, Gemini's projects.json and .project_root files and the ledger; then
    list --all --json, status --all --json, clean --dry-run --json and
    clean --dry-run --older-than 0m (--json and text). A session that records no working
    directory is relayed (and exported --to) with --cwd into the scratch folder.
  Read modes (--modes): `default` (no variable), `full` (SESSION_RELAY_FULL_READ: every turn
  read in full, no fold), `folded` (SESSION_RELAY_PART_READ: read in part whatever the size,
  SESSION_RELAY_FOLD_BUDGETS=0.25, SESSION_RELAY_SHOW_KEEP_TOKENS and
  SESSION_RELAY_EXPORT_KEEP_TOKENS=2000: older turns folded, counted or written while read).
  Budgets (--budgets): `default` (the target's own) and 2000, where folds and cuts happen.
  Exit code, standard output and standard error of each command are compared.

Normalisation, the same on both sides, before comparing byte for byte:
  * the scratch folder -> <SCRATCH>;
  * every uuid found in no input file -> <ID1>, <ID2>, ... in order of first appearance (so a
    different id in a different place is still a difference), and its first and last 8 hex
    digits where they stand alone (short ids, Gemini file names) -> <IDn:first8> / <IDn:last8>
    (a uuid v7's first 8 digits are its time: <ID7:time>);
  * pi's 8-hex entry ids (`"id"`, `"parentId"`, `"firstKeptEntryId"`) -> <E1>, <E2>, ...;
  * the sha256 of a session a relay wrote -> <SHA of written session n>; any other 64-digit
    hex found in no input file and not the sha256 of one -> <HASH1>, <HASH2>, ...;
  * times within the run (from a minute before it started to a minute after the output was
    read): ISO 8601 times (also as in file names, 2026-12-06T06-54-03), relay_YYYYMMDD_HHMMSS
    stamps, epoch seconds and milliseconds, the YYYY/MM/DD folders of a Codex rollout -> <NOW>.
  Caches (the listing cache in the state folder) are left out; nothing else is.

Expected differences (--allow FILE, TOML, Python 3.11+): each [[allow]] that applies to an
output rewrites both sides alike; the difference is allowed if they are then equal.
  [[allow]]
  command = 'REGEX'     # searched in "GROUP | MODE | COMMAND", the key printed with a difference
  part = 'REGEX'        # optional: stdout, stderr, exit, written session, stores
  json_drop = ['KEY']   # optional: keys taken out of a JSON report at any depth
  json_sort = 'KEY'     # optional: the array under KEY sorted by its elements' "path"
  replace = [['REGEX', 'REPLACEMENT']]   # optional, each until nothing changes
  lines = 'REGEX'       # optional: lines dropped (and trailing commas ignored)
  unordered = 'REGEX'   # optional: the lines it finds compared as a set
  reason = 'TEXT'       # printed with the number of differences it explains
  An entry with none of the optional rewrites allows the whole output. Keep them narrow.
  scripts/differential-allow.toml records what changed on purpose since 8b4ee3b.

Output: a summary (groups x commands compared, differences), each kind of difference once with
how many outputs showed it and a short unified diff of the first differing lines; the full list
is written to target/differential/report.txt. Exit status 1 when a difference is left that
--allow does not explain, 0 otherwise.

Nothing is written outside a temporary folder and target/differential/ (but the temporary
worktree's entry in .git/worktrees while REV builds). Every command runs with --home for every
agent, the agents' home variables, SESSION_RELAY_STATE_DIR, SESSION_RELAY_CONFIG (an empty
file), HOME, TMPDIR and the XDG folders in the scratch folder, and no other environment than
PATH, TZ=UTC, LANG and NO_COLOR: the user's own homes, state and config are never read or
touched.

Run time once both builds are made, on the shared 2-core machine: --quick about 80 s,
--sizes 1,10 about 3 minutes (plus making the generated sessions the first time).
"""
import argparse
import concurrent.futures
import difflib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "differential"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the session generator: scripts/bench.py)

AGENTS = ("claude", "codex", "gemini", "copilot", "qwen", "pi")
MODES = {
    "default": {},
    "full": {"SESSION_RELAY_FULL_READ": "1"},
    "folded": {
        "SESSION_RELAY_PART_READ": "1",
        "SESSION_RELAY_FOLD_BUDGETS": "0.25",
        "SESSION_RELAY_SHOW_KEEP_TOKENS": "2000",
        "SESSION_RELAY_EXPORT_KEEP_TOKENS": "2000",
    },
}
HOME_ENV = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "gemini": "GEMINI_CLI_HOME",
            "copilot": "COPILOT_HOME", "qwen": "QWEN_HOME", "pi": "PI_CODING_AGENT_DIR"}
# Files of the stores and state whose contents are compared after the relays (others: by name).
INDEX_FILES = re.compile(r"(session_index\.jsonl|state_5\.sqlite|projects\.json|\.project_root|ledger\.jsonl)$")
# A command that runs longer is killed, so that one that hangs does not stop the check.
TIMEOUT_S = 1800
# Files left out: caches, whose contents follow the copies' times.
CACHE_FILES = re.compile(r"^state/list-cache")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Builds
# ---------------------------------------------------------------------------------------------

def git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def cargo_build(src, target_dir, checkout=False):
    """`cargo build --release --locked` of the tree at `src` into `target_dir`; the binary.

    A target folder knows a package's last build by its name and version, and takes another
    checkout's sources as unchanged when their times allow it: the binary of a fresh `checkout`
    that is older than the build is built again with its sources touched."""
    started = time.time()
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir))
    cmd = ["nice", "-n", "10", "cargo", "build", "--release", "--locked", "--quiet"]
    subprocess.run(cmd, cwd=src, env=env, check=True)
    binary = target_dir / "release" / "session-relay"
    if checkout and binary.stat().st_mtime < started:
        os.utime(src / "src" / "main.rs")
        subprocess.run(cmd, cwd=src, env=env, check=True)
    return binary


def build_rev(rev):
    """The release binary of `rev`, built in a temporary worktree unless already cached."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    cached = OUT / commit / "session-relay"
    if cached.exists():
        log(f"base {rev} ({commit[:10]}): cached {cached.relative_to(ROOT)}")
        return cached, commit
    log(f"base {rev} ({commit[:10]}): building in a temporary worktree (several minutes)")
    tmp = Path(tempfile.mkdtemp(prefix="differential-build-"))
    src = tmp / "src"
    try:
        git("worktree", "add", "--detach", str(src), commit)
        binary = cargo_build(src, OUT / "cargo-target", checkout=True)
        cached.parent.mkdir(parents=True, exist_ok=True)
        part = cached.with_name("session-relay.part")
        shutil.copy2(binary, part)
        part.rename(cached)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(src)], cwd=ROOT, capture_output=True)
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return cached, commit


def build_new():
    """The working tree's release binary, in a target folder of its own (never REV's)."""
    log("new: building the working tree (cargo build --release --locked)")
    return cargo_build(ROOT, OUT / "worktree-target")


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

class Group:
    """An input: the homes copied into each scratch folder, and what in them is not new."""

    def __init__(self, name, homes, extra=(), generated=None):
        self.name = name
        self.generated = generated  # (shape, MB) of scripts/bench.py's sessions
        self.homes = homes          # agent -> source folder (None: an empty home)
        self.extra = list(extra)    # (source file, path in the scratch folder)
        self.sessions = []          # paths relative to the scratch folder
        self.cwd_less = set()       # those that record no working directory: relayed with --cwd
        self.known = set()          # uuids and 64-digit hex in the inputs, and their sha256s

    def populate(self, root):
        for agent in AGENTS:
            src, dst = self.homes.get(agent), root / agent
            if src is None:
                dst.mkdir(parents=True)
            else:
                shutil.copytree(src, dst, symlinks=True)
        for src, rel in self.extra:
            shutil.copy2(src, root / rel)
        for d in ("home", "state", "work/project", "config"):
            (root / d).mkdir(parents=True, exist_ok=True)
        (root / "config" / "empty.yaml").write_text("")

    def scan(self, root):
        """Every uuid and 64-digit hex in the input files, and each file's sha256."""
        for p in sorted(root.rglob("*")):
            if not p.is_file():
                continue
            h = hashlib.sha256()
            with open(p, "rb") as f:
                tail = b""
                for chunk in iter(lambda: f.read(1 << 22), b""):
                    h.update(chunk)
                    text = (tail + chunk).decode("latin-1").lower()
                    self.known.update(UUID.findall(text))
                    self.known.update(f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"
                                      for u in UUID32.findall(text))
                    self.known.update(HEX64.findall(text))
                    tail = chunk[-80:]
            self.known.add(h.hexdigest())


def groups(args):
    """The inputs --only selects; generated sessions are made (once, cached) only for those."""
    fx = ROOT / "fixtures"
    index = [(fx / "codex-index" / "state_5.sqlite", "codex/state_5.sqlite")]
    out = [Group("fixtures", {a: fx / a for a in AGENTS}, index)]
    data = Path(args.data)
    for shape in [s for s in args.shapes.split(",") if s]:
        if shape not in bench.SHAPES:
            sys.exit(f"unknown shape {shape!r} (known: {', '.join(bench.SHAPES)})")
        for mb in args.sizes:
            p = bench.session_paths(data, shape, mb)
            out.append(Group(f"generated-{shape}-{mb}mb",
                             {"claude": p["claude"][0], "codex": p["codex"][0], "gemini": None}, index, (shape, mb)))
    out = [g for g in out if not args.only or re.search(args.only, g.name)]
    for g in out:
        if g.generated:
            bench.ensure_data(data, [g.generated[0]], [g.generated[1]], 0)
    return out


# ---------------------------------------------------------------------------------------------
# Running one side
# ---------------------------------------------------------------------------------------------

class Side:
    """One build run in a scratch folder; what it printed and wrote is kept in `records`, in
    the order it happened, for the normaliser to read in that order."""

    def __init__(self, name, binary, root, outdir):
        self.name, self.binary, self.root, self.outdir = name, binary, root, outdir
        self.records = []
        self.n = 0
        outdir.mkdir(parents=True, exist_ok=True)

    def env(self, extra):
        r = self.root
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(r / "home"), "TZ": "UTC",
               "NO_COLOR": "1", "LANG": "C.UTF-8", "SESSION_RELAY_STATE_DIR": str(r / "state"),
               "SESSION_RELAY_CONFIG": str(r / "config" / "empty.yaml"),
               "XDG_CONFIG_HOME": str(r / "config"), "XDG_STATE_HOME": str(r / "home" / "state"),
               "XDG_CACHE_HOME": str(r / "home" / "cache"), "XDG_DATA_HOME": str(r / "home" / "data"),
               "TMPDIR": str(r / "home")}
        env.update({HOME_ENV[a]: str(r / a) for a in AGENTS})
        env.update(extra)
        return env

    def blob(self, data):
        self.n += 1
        p = self.outdir / f"{self.n:05d}"
        p.write_bytes(data)
        return p

    def exec(self, args, extra):
        homes = [f"--home={a}={self.root / a}" for a in AGENTS]
        cmd = [str(self.binary), *args, *homes]
        try:
            return subprocess.run(cmd, cwd=self.root / "work", env=self.env(extra or {}), capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            # Said as the exit code: the other build's may differ, and the run goes on.
            return subprocess.CompletedProcess(cmd, f"killed after {TIMEOUT_S} s", e.stdout or b"", e.stderr or b"")

    def record(self, key, out):
        key = key.replace(str(self.root), "<SCRATCH>")
        self.records.append((key, "stdout", self.blob(out.stdout)))
        self.records.append((key, "stderr", self.blob(out.stderr)))
        self.records.append((key, "exit", self.blob(str(out.returncode).encode())))

    def run(self, key, args, extra=None):
        out = self.exec(args, extra)
        self.record(key, out)
        return out

    def relay(self, key, args, extra):
        """A relay that writes: its report, then the session file it names (whose sha256 the
        normaliser learns first: the report gives it)."""
        out = self.exec(args, extra)
        written = None
        try:
            written = Path(json.loads(out.stdout)["target"]["path"])
        except (ValueError, KeyError, TypeError):
            pass
        if written is not None and written.is_file():
            data = written.read_bytes()
            self.records.append((key, "register", ("sha", hashlib.sha256(data).hexdigest())))
        self.record(key, out)
        if written is not None and written.is_file():
            self.records.append((key.replace(str(self.root), "<SCRATCH>"), "written session", self.blob(data)))
        return out

    def snapshot(self, key, before):
        """The scratch folder's files that are new, changed or deleted, and the contents of
        the index files among them."""
        entries = []
        now = files_of(self.root)
        for rel in sorted(set(before) | set(now)):
            if CACHE_FILES.search(rel):
                continue
            status = ("deleted" if rel not in now else "new" if rel not in before
                      else "changed" if now[rel] != before[rel] else None)
            if status is None:
                continue
            content = None
            if status != "deleted" and INDEX_FILES.search(rel):
                content = index_content(self.root / rel)
            entries.append({"path": rel, "status": status, "content": content})
        self.records.append((key, "stores", self.blob(json.dumps(entries).encode())))


def files_of(root):
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            st = p.stat()
            out[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def index_content(path):
    if path.name == "state_5.sqlite":
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            cur = con.execute("SELECT * FROM threads ORDER BY rowid")
            cols = [d[0] for d in cur.description]
            return "".join(json.dumps(dict(zip(cols, row))) + "\n" for row in cur)
        finally:
            con.close()
    return path.read_bytes().decode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------------------
# The commands
# ---------------------------------------------------------------------------------------------

def budget_args(budget):
    return [] if budget == "default" else ["--budget", budget]


def cwd_args(side, group, session):
    """A session that records no working directory is relayed into one (else refused)."""
    return ["--cwd", str(side.root / "work" / "project")] if session in group.cwd_less else []


def read_job(side, group, mode, budgets, listing):
    """What writes nothing into the stores: show, export and dry runs of every session, and
    (`listing`) list and status."""
    env = MODES[mode]
    tag = lambda args: f"{group.name} | {mode} | {' '.join(args)}"  # noqa: E731
    if listing:
        for args in (["list", "--all", "--json"], ["list", "--all"],
                     ["status", "--all", "--json"], ["status", "--all"]):
            side.run(tag(args), args)
    for s in group.sessions:
        path = str(side.root / s)
        for extra in (["--json"], []):
            side.run(tag(["show", s, *extra]), ["show", path, *extra], env)
        for extra in ([], ["--format", "markdown"]):
            side.run(tag(["export", s, *extra]), ["export", path, *extra], env)
        for budget in budgets:
            for to in AGENTS:
                b = budget_args(budget) + cwd_args(side, group, s)
                side.run(tag(["export", s, "--to", to, *b]), ["export", path, "--to", to, *b], env)
                args = ["relay", path, "--to", to, "--dry-run", "--json", *b]
                side.run(tag(["relay", s, "--to", to, "--dry-run", "--json", *b]), args, env)


def relay_job(side, group, mode, budget):
    """Every session relayed to every agent in a fresh copy, then what the stores hold."""
    env = MODES[mode]
    b = budget_args(budget)
    tag = lambda args: f"{group.name} | {mode} | {' '.join(args)}"  # noqa: E731
    before = files_of(side.root)
    for s in group.sessions:
        for to in AGENTS:
            args = ["--to", to, "--json", *b, *cwd_args(side, group, s)]
            side.relay(tag(["relay", s, *args]), ["relay", str(side.root / s), *args], env)
    after = "after the relays" + (f" at --budget {budget}" if b else "") + ":"
    side.snapshot(tag([after, "stores"]), before)
    for args in (["list", "--all", "--json"], ["status", "--all", "--json"], ["clean", "--dry-run", "--json"],
                 ["clean", "--dry-run", "--older-than", "0m", "--json"], ["clean", "--dry-run", "--older-than", "0m"]):
        side.run(tag([after, *args]), args)


def jobs_of(group, modes, budgets):
    out = [(f"read-{m}", lambda side, m=m: read_job(side, group, m, budgets, m == modes[0])) for m in modes]
    out += [(f"relays-{m}-{b}", lambda side, m=m, b=b: relay_job(side, group, m, b))
            for m in modes for b in budgets]
    return out


def find_sessions(group, binaries, tmp):
    """The sessions either build lists in the group (paths relative to the scratch folder)."""
    root = tmp / "run" / f"{group.name}-list"
    group.populate(root)
    group.scan(root)
    found = set()
    for binary in binaries:
        side = Side("list", binary, root, tmp / "out" / "list")
        out = side.run("list", ["list", "--all", "--json"])
        if out.returncode != 0:
            sys.exit(f"{binary} list --all --json failed in {group.name}:\n{out.stderr.decode(errors='replace')}")
        for s in json.loads(out.stdout)["sessions"]:
            rel = Path(s["path"]).relative_to(root).as_posix()
            found.add(rel)
            if not s.get("cwd"):
                group.cwd_less.add(rel)
    shutil.rmtree(root)
    shutil.rmtree(tmp / "out" / "list", ignore_errors=True)
    group.sessions = sorted(found)


# ---------------------------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------------------------

# Also after `_` (pi's file names: <time>_<uuid>.jsonl), which \b would not take for a boundary.
UUID = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                  r"(?![0-9A-Za-z])")
# A uuid written without dashes (Claude Code message ids: msg_relay_<32 hex digits>).
UUID32 = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{32}(?![0-9a-fA-F])")
HEX64 = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])")
HEX8 = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{8}(?![0-9a-fA-F])")
# An ISO 8601 time, also as file names write it (dashes for colons, and in pi's a dash before
# the milliseconds: 2026-12-06T03-21-02-369Z); seconds only when not the start of a hex run (a
# Gemini file name: session-2026-12-06T06-54-92e32208).
ISO = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})[T ](\d{2})[:-](\d{2})"
                 r"(?:[:-](\d{2})(?:\.\d{1,9}|-\d{3}(?=Z))?(?:Z|[+-]\d{2}:?\d{2})?(?![0-9a-fA-F]))?")
STAMP = re.compile(r"relay_(\d{8})_(\d{6})")
EPOCH = re.compile(r"(?<![\d.])1\d{9}(?:\d{3})?(?![\d.])")
ROLLOUT_DAY = re.compile(r"(\d{4})/(\d{2})/(\d{2})/rollout-")
# pi's entry ids: 8 random hex digits, an entry's own and its parent's (and a compaction's first
# kept entry).
ENTRY_ID = re.compile(r'"(id|parentId|firstKeptEntryId)":"([0-9a-f]{8})"')


class Normaliser:
    """Takes out what two runs of the same build differ by. One per side and job: both read
    the same commands' outputs in the same order, so a new id gets the same label on both."""

    def __init__(self, root, known, window):
        self.root = str(root)
        self.known = known
        self.window = window
        self.ids, self.frags, self.hashes, self.entries = {}, {}, {}, {}

    def register(self, what, value):
        if what == "sha":
            self.hashes.setdefault(value, f"<SHA of written session {sum(1 for v in self.hashes.values() if v.startswith('<SHA'))+1}>")

    def in_window(self, t):
        return self.window[0] <= t <= self.window[1]

    def _time(self, m):
        y, mo, d, h, mi, s = (int(g) if g else 0 for g in m.groups())
        try:
            t = datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc).timestamp()
        except ValueError:
            return m.group(0)
        # Without seconds the time is a minute long: in the window if any of it is.
        return "<NOW>" if self.in_window(t) or (m.group(6) is None and self.in_window(t + 59)) else m.group(0)

    def _stamp(self, m):
        try:
            t = datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            return m.group(0)
        return "relay_<NOW>" if self.in_window(t) else m.group(0)

    def _epoch(self, m):
        v = int(m.group(0))
        t = v / 1000 if len(m.group(0)) == 13 else v
        return "<NOW>" if self.in_window(t) else m.group(0)

    def _day(self, m):
        try:
            t = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), tzinfo=timezone.utc).timestamp()
        except ValueError:
            return m.group(0)
        day = (t, t + 86399)
        near = day[0] <= self.window[1] and self.window[0] <= day[1]
        return "<NOW>/rollout-" if near else m.group(0)

    def _uuid(self, m):
        u = m.group(0).lower()
        if len(u) == 32:
            u = f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"
        if u in self.known:
            return m.group(0)
        label = self.ids.get(u)
        if label is None:
            label = self.ids[u] = f"ID{len(self.ids) + 1}"
            # A uuid v7 begins with its time: two made in the same minute share 8 digits.
            first = f"<{label}:first8>" if u[14] != "7" else "<ID7:time>"
            self.frags.setdefault(u[:8], first)
            self.frags.setdefault(u[-8:], f"<{label}:last8>")
        return f"<{label}>"

    def _hex64(self, m):
        h = m.group(0).lower()
        if h in self.known:
            return m.group(0)
        if h not in self.hashes:
            self.hashes[h] = f"<HASH{sum(1 for v in self.hashes.values() if v.startswith('<HASH')) + 1}>"
        return self.hashes[h]

    def text(self, s):
        s = s.replace(self.root, "<SCRATCH>")
        s = ROLLOUT_DAY.sub(self._day, s)
        s = ISO.sub(self._time, s)
        s = STAMP.sub(self._stamp, s)
        s = UUID.sub(self._uuid, s)
        s = HEX64.sub(self._hex64, s)
        s = UUID32.sub(self._uuid, s)
        if self.frags:
            s = HEX8.sub(lambda m: self.frags.get(m.group(0).lower(), m.group(0)), s)
        s = EPOCH.sub(self._epoch, s)
        s = ENTRY_ID.sub(self._entry, s)
        return s

    def _entry(self, m):
        label = self.entries.setdefault(m.group(2), f"E{len(self.entries) + 1}")
        return f'"{m.group(1)}":"<{label}>"'

    def stores(self, entries):
        """Store snapshots: names first (their order follows the names' labels), then contents."""
        for e in entries:
            e["path"] = self.text(e["path"])
        entries.sort(key=lambda e: e["path"])
        lines = []
        for e in entries:
            lines.append(f"== {e['status']}: {e['path']}\n")
            if e["content"] is not None:
                lines.append(self.text(e["content"]))
                if not e["content"].endswith("\n"):
                    lines.append("\n")
        return "".join(lines)


def normalised(side, known, window):
    """The side's records as (key, part, normalised text), in order."""
    norm = Normaliser(side.root, known, window)
    out = []
    for key, part, blob in side.records:
        if part == "register":
            norm.register(*blob)
            continue
        raw = blob.read_bytes().decode("utf-8", "surrogateescape")
        if part == "stores":
            out.append((key, part, norm.stores(json.loads(raw))))
        else:
            out.append((key, part, norm.text(raw)))
    return out


# ---------------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------------

def first_line(la, lb):
    i = 0
    while i < len(la) and i < len(lb) and la[i] == lb[i]:
        i += 1
    return i


def excerpt(x, y, before=60, after=100):
    """Two long lines cut to where they first differ."""
    if len(x) <= before + after and len(y) <= before + after:
        return x, y
    j = 0
    while j < len(x) and j < len(y) and x[j] == y[j]:
        j += 1
    lo = max(0, j - before)
    cut = lambda s: ("…" if lo else "") + s[lo:j + after] + ("…" if len(s) > j + after else "")  # noqa: E731
    return cut(x), cut(y)


def first_diff(a, b, context=2, width=16):
    """A unified diff of the first differing lines (a window, so that large outputs cost
    little), long lines cut to where they differ."""
    la, lb = a.splitlines(), b.splitlines()
    i = first_line(la, lb)
    lo = max(0, i - context)
    d = list(difflib.unified_diff(la[lo:i + 200], lb[lo:i + 200], "base", "new", n=context, lineterm=""))[2:]
    # A block of removed lines and the block of added ones after it: cut each pair to where
    # its lines differ.
    k = 0
    while k < len(d):
        if not d[k].startswith("-"):
            k += 1
            continue
        m = k
        while m < len(d) and d[m].startswith("-"):
            m += 1
        n = m
        while n < len(d) and d[n].startswith("+"):
            n += 1
        for r, p in zip(range(k, m), range(m, n)):
            x, y = excerpt(d[r][1:], d[p][1:])
            d[r], d[p] = "-" + x, "+" + y
        k = max(n, k + 1)
    clip = lambda l: l if len(l) <= 240 else l[:240] + "…"  # noqa: E731
    # Hunk headers count from the window: say the line in the whole output.
    at = lambda l: re.sub(r"^@@ -(\d+).*", lambda m: f"@@ line {int(m.group(1)) + lo} @@", l)  # noqa: E731
    body = [at(l) if l.startswith("@@") else clip(l) for l in d[:width]]
    if len(d) > width:
        body.append(f"... ({len(la)} lines base, {len(lb)} new)")
    return body


def signature(key, part, a, b):
    """What kind of difference this is: the command, and where its first differing lines
    differ, digits and labels masked, so that the same change on many sessions is printed once."""
    la, lb = a.splitlines(), b.splitlines()
    i = first_line(la, lb)
    x, y = excerpt(la[i] if i < len(la) else "<end>", lb[i] if i < len(lb) else "<end>", 20, 60)
    mask = lambda s: re.sub(r"<[A-Z]+\d*[^>]*>", "<L>", re.sub(r"\d", "9", s)).strip()  # noqa: E731
    command = key.split(" | ")[-1].split(" ")[0]
    return (command, part, mask(x), mask(y))


class Allow:
    """Expected differences (--allow): each entry that applies to an output (its command and
    part) rewrites both sides alike; the difference is allowed when the rewritten sides are
    equal."""

    def __init__(self, path):
        self.entries = []
        if not path:
            return
        try:
            import tomllib
        except ImportError:
            sys.exit("--allow needs Python 3.11 or newer (tomllib)")
        with open(path, "rb") as f:
            entries = tomllib.load(f).get("allow", [])
        for e in entries:
            unknown = set(e) - {"command", "part", "lines", "replace", "unordered", "json_drop", "json_sort",
                                "reason"}
            if "command" not in e or "reason" not in e or unknown:
                sys.exit(f"{path}: an [[allow]] needs command and reason, and takes part, lines, "
                         f"replace, unordered, json_drop, json_sort: {e}")
            self.entries.append({
                "command": re.compile(e["command"]), "part": re.compile(e.get("part", "")),
                "lines": re.compile(e["lines"]) if e.get("lines") else None,
                "replace": [(re.compile(a, re.M), b) for a, b in e.get("replace", [])],
                "unordered": re.compile(e["unordered"]) if e.get("unordered") else None,
                "json_drop": set(e.get("json_drop", [])), "json_sort": e.get("json_sort"),
                "reason": " ".join(e["reason"].split())})

    @staticmethod
    def rewrite(e, text):
        if e.get("json_drop") or e.get("json_sort"):
            text = Allow.rewrite_json(e, text)
        for pattern, repl in e.get("replace", []):
            # Again until nothing changes: a pattern may take one of many (a digit group).
            for _ in range(20):
                text, n = pattern.subn(repl, text)
                if not n:
                    break
        lines = text.splitlines()
        if e.get("lines"):
            lines = [l for l in lines if not e["lines"].search(l)]
        if e.get("unordered"):
            moved = sorted(l for l in lines if e["unordered"].search(l))
            lines = [l for l in lines if not e["unordered"].search(l)] + moved
        return "\n".join(lines)

    @staticmethod
    def rewrite_json(e, text):
        """A JSON report with the keys json_drop names taken out at any depth, and the array
        json_sort names sorted by its elements' `path`."""
        try:
            doc = json.loads(text)
        except ValueError:
            return text

        def walk(v):
            if isinstance(v, dict):
                out = {k: walk(x) for k, x in v.items() if k not in e["json_drop"]}
                if e["json_sort"] in out and isinstance(out[e["json_sort"]], list):
                    out[e["json_sort"]].sort(key=lambda x: (str(x.get("path")) if isinstance(x, dict) else "",
                                                            json.dumps(x, sort_keys=True)))
                return out
            if isinstance(v, list):
                return [walk(x) for x in v]
            return v
        return json.dumps(walk(doc), indent=2, ensure_ascii=False)

    def reason(self, key, part, a, b):
        """The reasons that explain the whole difference, or None."""
        applicable = [e for e in self.entries if e["command"].search(key) and e["part"].search(part)]
        for e in applicable:
            if not (e["lines"] or e["replace"] or e["unordered"] or e["json_drop"] or e["json_sort"]):
                return [e["reason"]]
        # JSON first: a rewrite of lines leaves no JSON to parse.
        applicable.sort(key=lambda e: not (e["json_drop"] or e["json_sort"]))
        reasons = []
        for e in applicable:
            ra, rb = self.rewrite(e, a), self.rewrite(e, b)
            if (ra, rb) != (a, b):
                reasons.append(e["reason"])
            a, b = ra, rb
        # A line dropped from JSON may take the comma of the line before it.
        same = [l.rstrip(",") for l in a.splitlines()] == [l.rstrip(",") for l in b.splitlines()]
        return reasons if reasons and same else None


def compare(group, jobname, base, new, window, allow, results, keep):
    na, nb = normalised(base, group.known, window), normalised(new, group.known, window)
    if [(k, p) for k, p, _ in na] != [(k, p) for k, p, _ in nb]:
        results["differences"].append({"group": group.name, "key": f"{group.name} | {jobname}", "part": "records",
                                       "diff": ["the two runs recorded different outputs"], "sig": ("records",),
                                       "allowed": None})
    commands = set()
    for (key, part, a), (_, _, b) in zip(na, nb):
        commands.add(key)
        results["outputs"] += 1
        results["parts"][part] = results["parts"].get(part, 0) + 1
        if a == b:
            continue
        d = {"group": group.name, "key": key, "part": part, "diff": first_diff(a, b),
             "sig": signature(key, part, a, b), "allowed": allow.reason(key, part, a, b)}
        if keep:
            # Both normalised outputs, to read or diff whole.
            n = len(results["differences"]) + 1
            for side, text in (("base", a), ("new", b)):
                (keep / f"{n:05d}.{side}").write_text(text, encoding="utf-8", errors="surrogateescape")
            d["diff"].insert(0, f"(whole outputs: {keep}/{n:05d}.base and .new)")
        results["differences"].append(d)
    results["commands"] += len(commands)
    results["per_group"].setdefault(group.name, [0, 0])[0] += len(commands)


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def run_job(group, jobname, fn, binaries, tmp, allow, results, lock, started, keep_outputs):
    root = tmp / "run" / f"{group.name}-{jobname}"
    sides = []
    for name, binary in binaries:
        group.populate(root)
        side = Side(name, binary, root, tmp / "out" / name / f"{group.name}-{jobname}")
        fn(side)
        sides.append(side)
        shutil.rmtree(root)
    window = (started - 60, time.time() + 60)
    with lock:
        keep = tmp / "differences" if keep_outputs else None
        if keep:
            keep.mkdir(exist_ok=True)
        compare(group, jobname, sides[0], sides[1], window, allow, results, keep)
        for s in sides:
            shutil.rmtree(s.outdir, ignore_errors=True)


def report(results, args, elapsed):
    diffs = results["differences"]
    bad = [d for d in diffs if not d["allowed"]]
    lines = [f"differential: base {args.base_label} vs new {args.new_label}",
             f"{len(results['per_group'])} inputs, {results['commands']} commands, {results['outputs']} outputs "
             f"compared in {elapsed:.0f} s: "
             + ", ".join(f"{n} {part}" for part, n in sorted(results["parts"].items()))]
    for g, (n, _) in results["per_group"].items():
        d = sum(1 for x in diffs if x["group"] == g)
        lines.append(f"  {g}: {n} commands, {d} differing outputs")
    lines.append(f"{len(diffs)} differing outputs: {len(bad)} unexplained, {len(diffs) - len(bad)} allowed")
    allowed = {}
    for d in diffs:
        for r in d["allowed"] or []:
            allowed[r] = allowed.get(r, 0) + 1
    for reason, n in allowed.items():
        lines.append(f"  allowed ({n}): {reason}")
    kinds = {}
    for d in bad:
        kinds.setdefault(d["sig"], []).append(d)
    summary = list(lines)
    for n, (sig, ds) in enumerate(sorted(kinds.items(), key=lambda kv: -len(kv[1])), 1):
        head = [f"", f"[{n}] {len(ds)} outputs ({ds[0]['part']}), e.g. {ds[0]['key']}"]
        head += [f"    {l}" for l in ds[0]["diff"]]
        others = sorted({d["key"] for d in ds[1:]})
        if others:
            head.append(f"    also: {others[0]}" + (f" and {len(others) - 1} more" if len(others) > 1 else ""))
        lines += head
        if n <= args.max_kinds:
            summary += head
    if len(kinds) > args.max_kinds:
        summary.append(f"\n... {len(kinds) - args.max_kinds} more kinds of difference in the full report")
    lines += ["", "Every difference, unexplained first:"]
    for d in bad + [d for d in diffs if d["allowed"]]:
        lines += ["", f"{d['key']} ({d['part']})"]
        lines += [f"    allowed: {r}" for r in d["allowed"] or []]
        lines += [f"    {l}" for l in d["diff"]]
    full = OUT / "report.txt"
    full.write_text("\n".join(lines) + "\n")
    print("\n".join(summary))
    print(f"\nfull report: {full.relative_to(ROOT)}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="git revision to compare against (built in a temporary worktree)")
    ap.add_argument("--new", help="binary to compare (default: build the working tree)")
    ap.add_argument("--sizes", default="1,10,100", help="sizes in MB of the generated sessions")
    ap.add_argument("--shapes", default="many,large", help="shapes of the generated sessions (scripts/bench.py)")
    ap.add_argument("--quick", action="store_true", help="the fixtures and 1 MB only")
    ap.add_argument("--modes", default="default,full,folded", help=f"read modes: {', '.join(MODES)}")
    ap.add_argument("--budgets", default="default,2000", help="budgets of export --to and relays")
    ap.add_argument("--allow", help="TOML file of expected differences")
    ap.add_argument("--only", help="only the inputs whose name this regex finds (fixtures, generated-many-10mb)")
    ap.add_argument("--jobs", type=int, default=2, help="jobs at once (each runs its two sides in turn)")
    ap.add_argument("--max-kinds", type=int, default=40, help="kinds of difference printed (all in the report)")
    ap.add_argument("--data", default=str(OUT / "bench-data"), help="where generated sessions are cached")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary folder, with both normalised outputs of each difference")
    args = ap.parse_args()
    args.sizes = [1] if args.quick else sorted({int(s) for s in args.sizes.split(",") if s})
    modes = [m for m in args.modes.split(",") if m]
    budgets = [b for b in args.budgets.split(",") if b]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m!r} (known: {', '.join(MODES)})")
    for b in budgets:
        if b != "default" and not b.isdigit():
            sys.exit(f"a budget is `default` or a number, not {b!r}")
    allow = Allow(args.allow)
    os.nice(10)
    OUT.mkdir(parents=True, exist_ok=True)
    base_bin, commit = build_rev(args.base)
    new_bin = Path(args.new).resolve() if args.new else build_new()
    started = time.time()
    args.base_label = f"{args.base} ({commit[:10]})"
    args.new_label = str(new_bin)
    tmp = Path(tempfile.mkdtemp(prefix="differential-"))
    try:
        todo = groups(args)
        for g in todo:
            find_sessions(g, [base_bin, new_bin], tmp)
            log(f"{g.name}: {len(g.sessions)} sessions")
        results = {"commands": 0, "outputs": 0, "parts": {}, "differences": [], "per_group": {}}
        lock = threading.Lock()
        binaries = [("base", base_bin), ("new", new_bin)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_job, g, name, fn, binaries, tmp, allow, results, lock, started,
                                   args.keep): (g.name, name)
                       for g in todo for name, fn in jobs_of(g, modes, budgets)}
            for f in concurrent.futures.as_completed(futures):
                f.result()
                log(f"done: {' / '.join(futures[f])} ({time.time() - started:.0f} s)")
        return report(results, args, time.time() - started)
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
