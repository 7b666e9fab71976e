#!/usr/bin/env python3
"""Benchmark harness: wall time and peak memory of session-relay on large sessions and stores.

usage: scripts/bench.py [--sizes 1,10,100] [--store 5000] [--runs 3] [--no-peers] [--data DIR]

Generates (once, cached under target/bench-data) Claude Code and Codex sessions of 1, 10 and
100 MB with realistic shapes (many tool calls with long outputs, thinking / reasoning, todo and
plan updates, a compaction, parallel calls), and a store of 5,000 sessions (~2 GB). Then runs the
release binary for `list --all`, `show`, `relay --dry-run` and `relay` in both directions, each
`--runs` times with the files in page cache, and prints the median wall time and the peak RSS.
Where a peer tool is installed (transession from crates.io, harness-convert from PyPI; see
--peers-help), it runs the same conversion side by side and prints the ratio.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "session-relay"
PEERS = Path(os.environ.get("SESSION_RELAY_PEERS", Path.home() / ".cache" / "session-relay-peers"))

WORDS = ("the parser module returns a result and the tests cover every malformed line while the "
         "listing stays fast on thousands of sessions because it reads only what it needs").split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def tool_output(rng, size):
    lines = []
    total = 0
    i = 0
    while total < size:
        line = f"src/module_{i:05d}.rs:{rng.randint(1, 900)}: fn item_{i}() -> Result<u64> {{ Ok({rng.randint(0, 10**9)}) }}"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines)


def ts(sec):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_790_000_000 + sec)) + f".{sec % 1000:03d}Z"


def gen_claude(path, target_bytes, seed, cwd="/home/dev/projects/bench"):
    rng = random.Random(seed)
    sid = path.stem
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "w")
    parent = None
    n = 0
    sec = 0

    def line(typ, message=None, **extra):
        nonlocal parent, n, sec
        n += 1
        sec += 1
        uuid = f"{seed:08x}-0000-4000-8000-{n:012x}"
        d = {"parentUuid": parent, "isSidechain": False, "type": typ, "uuid": uuid, "timestamp": ts(sec),
             "userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": sid, "version": "2.1.332",
             "gitBranch": "main"}
        if message is not None:
            d["message"] = message
        d.update(extra)
        out.write(json.dumps(d, separators=(",", ":")) + "\n")
        parent = uuid
        return uuid

    turn = 0
    compacted = False
    while out.tell() < target_bytes:
        turn += 1
        line("user", {"role": "user", "content": f"Turn {turn}: {words(rng, 25)}. We must keep every line."})
        mid = f"msg_{seed:x}_{turn}"
        line("assistant", {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                           "content": [{"type": "thinking", "thinking": words(rng, 60), "signature": "sig=="}]})
        line("assistant", {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                           "content": [{"type": "text", "text": words(rng, 30)}]})
        calls = 2 if rng.random() < 0.2 else 1
        ids = []
        for c in range(calls):
            tid = f"toolu_{seed:x}_{turn}_{c}"
            ids.append(tid)
            kind = rng.choice(["Bash", "Read", "Edit", "Grep"])
            inp = {"command": f"grep -rn item_{turn} src"} if kind in ("Bash", "Grep") else {"file_path": f"{cwd}/src/m{turn % 50}.rs"}
            if kind == "Edit":
                inp.update({"old_string": "a", "new_string": "b"})
            line("assistant", {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                               "content": [{"type": "tool_use", "id": tid, "name": kind, "input": inp}]})
        for tid in ids:
            size = rng.choice([2_000, 8_000, 30_000, 60_000])
            line("user", {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                                       "content": tool_output(rng, size), "is_error": rng.random() < 0.1}]},
                 toolUseResult={"stdout": "(omitted)"})
        if turn % 15 == 0:
            tid = f"toolu_{seed:x}_{turn}_todo"
            line("assistant", {"id": mid + "t", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                               "content": [{"type": "tool_use", "id": tid, "name": "TodoWrite", "input": {"todos": [
                                   {"content": f"step {k} of turn {turn}", "status": "completed" if k < 2 else "pending", "activeForm": "x"}
                                   for k in range(4)]}}]})
            line("user", {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result", "content": "Todos have been modified successfully"}]})
        line("assistant", {"id": mid + "e", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                           "content": [{"type": "text", "text": f"Done with turn {turn}: {words(rng, 40)}"}]})
        if not compacted and out.tell() > target_bytes / 2:
            compacted = True
            old = parent
            parent = None
            line("system", None, subtype="compact_boundary", content="Conversation compacted", logicalParentUuid=old,
                 compactMetadata={"trigger": "auto", "preTokens": 150000})
            line("user", {"role": "user", "content": "This session is being continued from a previous conversation. Summary: " + words(rng, 200)},
                 isCompactSummary=True)
    out.write(json.dumps({"type": "custom-title", "customTitle": f"bench {sid[:8]}", "sessionId": sid}) + "\n")
    out.close()


def gen_codex(path, target_bytes, seed, sid, cwd="/home/dev/projects/bench"):
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "w")
    sec = 0

    def line(typ, payload):
        nonlocal sec
        sec += 1
        out.write(json.dumps({"timestamp": ts(sec), "type": typ, "payload": payload}, separators=(",", ":")) + "\n")

    line("session_meta", {"id": sid, "timestamp": ts(0), "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.171.0",
                          "source": "cli", "git": {"branch": "main", "commit_hash": "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b"}})
    turn = 0
    compacted = False
    while out.tell() < target_bytes:
        turn += 1
        prompt = f"Turn {turn}: {words(rng, 25)}. Never skip the tests."
        line("turn_context", {"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5.5"})
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
        line("event_msg", {"type": "user_message", "message": prompt, "images": []})
        r = words(rng, 40)
        line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": r}], "content": None, "encrypted_content": "gAAAA" + "x" * 400})
        line("event_msg", {"type": "agent_reasoning", "text": r})
        calls = 2 if rng.random() < 0.2 else 1
        for c in range(calls):
            cid = f"call_{turn}_{c}"
            line("response_item", {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": f"rg -n item_{turn} src"}), "call_id": cid})
        for c in range(calls):
            size = rng.choice([2_000, 8_000, 30_000, 60_000])
            code = 1 if rng.random() < 0.1 else 0
            line("response_item", {"type": "function_call_output", "call_id": f"call_{turn}_{c}",
                                   "output": f"Chunk ID: ab12\nWall time: 0.1 seconds\nProcess exited with code {code}\nOutput:\n" + tool_output(rng, size)})
        if turn % 10 == 0:
            line("response_item", {"type": "custom_tool_call", "call_id": f"p_{turn}", "name": "apply_patch",
                                   "input": f"*** Begin Patch\n*** Update File: src/m{turn % 40}.rs\n@@\n-a\n+b\n*** End Patch\n"})
            line("response_item", {"type": "custom_tool_call_output", "call_id": f"p_{turn}", "output": "Exit code: 0\nOutput:\nSuccess."})
        if turn % 15 == 0:
            plan = [{"step": f"step {k} of turn {turn}", "status": "completed" if k < 2 else "pending"} for k in range(4)]
            line("response_item", {"type": "function_call", "name": "update_plan", "arguments": json.dumps({"plan": plan}), "call_id": f"plan_{turn}"})
            line("response_item", {"type": "function_call_output", "call_id": f"plan_{turn}", "output": "Plan updated"})
        a = f"Done with turn {turn}: {words(rng, 40)}"
        line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": a}]})
        line("event_msg", {"type": "agent_message", "message": a})
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": turn * 1000}}})
        if not compacted and out.tell() > target_bytes / 2:
            compacted = True
            line("compacted", {"message": "Summary of the work so far: " + words(rng, 200), "replacement_history": []})
    out.close()


def codex_uuid(seed):
    return f"0199{seed:04x}-0000-7000-8000-{seed:012x}"


def claude_uuid(seed):
    return f"{seed:08x}-0000-4000-8000-{seed:012x}"


def ensure_data(data, sizes, store_n):
    made = data / "sizes"
    for mb in sizes:
        c = made / f"claude-{mb}mb" / "projects" / "-home-dev-projects-bench" / f"{claude_uuid(1000 + mb)}.jsonl"
        if not c.exists():
            print(f"generating a {mb} MB Claude session", file=sys.stderr)
            gen_claude(c, mb << 20, 1000 + mb)
        x = made / f"codex-{mb}mb" / "sessions" / "2026" / "11" / "01" / f"rollout-2026-11-01T10-00-00-{codex_uuid(2000 + mb)}.jsonl"
        if not x.exists():
            print(f"generating a {mb} MB Codex session", file=sys.stderr)
            gen_codex(x, mb << 20, 2000 + mb, codex_uuid(2000 + mb))
    store = data / f"store-{store_n}"
    stamp = store / ".complete"
    if store_n and not stamp.exists():
        print(f"generating a store of {store_n} sessions (about {store_n * 0.4 / 1024:.1f} GB)", file=sys.stderr)
        shutil.rmtree(store, ignore_errors=True)
        rng = random.Random(7)
        for i in range(store_n):
            size = rng.choices([60_000, 400_000, 2_500_000], weights=[60, 32, 8])[0]
            seed = 10_000 + i
            cwd = f"/home/dev/projects/p{i % 97}"
            if i % 2 == 0:
                p = store / "claude" / "projects" / f"-home-dev-projects-p{i % 97}" / f"{claude_uuid(seed)}.jsonl"
                gen_claude(p, size, seed, cwd)
            else:
                day = 1 + i % 28
                p = store / "codex" / "sessions" / "2026" / "10" / f"{day:02d}" / f"rollout-2026-10-{day:02d}T10-00-00-{codex_uuid(seed)}.jsonl"
                gen_codex(p, size, seed, codex_uuid(seed), cwd)
        stamp.write_text("ok")
    return made, store


def measure(cmd, env, runs):
    """Median wall seconds and max peak RSS (MB) over runs, after one warm-up run."""
    walls, rss = [], []
    for i in range(runs + 1):
        t = tempfile.NamedTemporaryFile(delete=False)
        t.close()
        start = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name] + cmd, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        kb = int(open(t.name).read().strip().splitlines()[-1] or 0)
        os.unlink(t.name)
        if p.returncode != 0:
            return None, None, p.stderr.strip().splitlines()[-1:] if p.stderr else ["failed"]
        if i > 0:
            walls.append(wall)
            rss.append(kb / 1024)
    return statistics.median(walls), max(rss), None


def peers():
    """Peer commands that convert one session file, where installed."""
    out = {}
    ts_bin = PEERS / "bin" / "transession"
    if ts_bin.exists():
        out["transession"] = ts_bin
    hc = PEERS / "venv" / "bin" / "hc"
    if hc.exists():
        out["harness-convert"] = hc
    return out


PEERS_HELP = """Peers are looked for under $SESSION_RELAY_PEERS (default ~/.cache/session-relay-peers):
  cargo install transession --root ~/.cache/session-relay-peers
  python3 -m venv ~/.cache/session-relay-peers/venv && ~/.cache/session-relay-peers/venv/bin/pip install harness-convert
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,100")
    ap.add_argument("--store", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data", default=str(ROOT / "target" / "bench-data"))
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--peers-help", action="store_true")
    args = ap.parse_args()
    if args.peers_help:
        print(PEERS_HELP)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    data = Path(args.data)
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    made, store = ensure_data(data, sizes, args.store)

    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    base_env = dict(os.environ, NO_COLOR="1", SESSION_RELAY_STATE_DIR=str(work / "state"))

    def run(label, mb, cmd, env):
        wall, mem, err = measure(cmd, env, args.runs)
        rows.append((label, mb, wall, mem, err))

    if args.store:
        gb = sum(f.stat().st_size for f in store.rglob("*.jsonl")) / (1 << 30)
        env = dict(base_env, CLAUDE_CONFIG_DIR=str(store / "claude"), CODEX_HOME=str(store / "codex"))
        run(f"list --all ({args.store} sessions, {gb:.1f} GB)", None, [str(BIN), "list", "--all", "--json"], env)

    peer_bins = {} if args.no_peers else peers()
    for mb in sizes:
        for src, dst in (("claude", "codex"), ("codex", "claude")):
            src_home = made / f"{src}-{mb}mb"
            tgt = work / f"{dst}-{mb}"
            (tgt / ("projects" if dst == "claude" else "sessions")).mkdir(parents=True, exist_ok=True)
            env = dict(base_env, CLAUDE_CONFIG_DIR=str(src_home if src == "claude" else tgt),
                       CODEX_HOME=str(src_home if src == "codex" else tgt))
            sid = claude_uuid(1000 + mb) if src == "claude" else codex_uuid(2000 + mb)
            if dst == "codex":
                run(f"show {src}", mb, [str(BIN), "show", sid, "--json"], env)
            run(f"relay --dry-run {src}->{dst}", mb, [str(BIN), "relay", sid, "--to", dst, "--cwd", str(work), "--dry-run"], env)
            run(f"relay {src}->{dst}", mb, [str(BIN), "relay", sid, "--to", dst, "--cwd", str(work), "--force"], env)
            src_file = next(src_home.rglob("*.jsonl"))
            for name, binpath in peer_bins.items():
                out_dir = work / f"peer-{name}-{mb}-{dst}"
                cmd, peer_env = peer_command(name, binpath, src, dst, src_file, sid, src_home, out_dir, env)
                run(f"  peer {name} {src}->{dst}", mb, cmd, peer_env)

    print_table(rows, sizes)
    shutil.rmtree(work, ignore_errors=True)


def peer_command(name, binpath, src, dst, src_file, sid, src_home, out_dir, env):
    """The peer's own command for the same conversion, and its environment."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if name == "transession":
        return [str(binpath), "convert", "--from", src, "--to", dst, "--new-session-id", str(src_file), str(out_dir / "out.jsonl")], env
    # harness-convert reads and writes the stores under $HOME.
    home = out_dir / "home"
    home.mkdir(exist_ok=True)
    for agent, d in (("claude", ".claude"), ("codex", ".codex")):
        link = home / d
        if not link.exists():
            if agent == src:
                link.symlink_to(src_home)
            else:
                (link / ("projects" if agent == "claude" else "sessions")).mkdir(parents=True)
    peer_env = dict(env, HOME=str(home), HC_NO_INTERACTIVE="1")
    peer_env.pop("CLAUDE_CONFIG_DIR", None)
    peer_env.pop("CODEX_HOME", None)
    return [str(binpath), "convert", "--from", src, "--to", dst, "--cwd", "/home/dev/projects/bench",
            "--dest-cwd", str(out_dir), "--no-interactive", "-y", sid], peer_env


def print_table(rows, sizes):
    ours = {}
    print()
    print(f"{'operation':<44} {'size':>6} {'wall s':>8} {'peak MB':>8}  note")
    for label, mb, wall, mem, err in rows:
        size = f"{mb} MB" if mb else ""
        if err:
            print(f"{label:<44} {size:>6} {'-':>8} {'-':>8}  failed: {' '.join(err)[:60]}")
            continue
        note = ""
        if label.startswith("  peer"):
            key = label.split()[-1]
            mine = ours.get((f"relay {key}", mb))
            if mine:
                note = f"peer/ours = {wall / mine:.1f}x time"
        else:
            ours[(label, mb)] = wall
        print(f"{label:<44} {size:>6} {wall:>8.3f} {mem:>8.1f}  {note}")
    # Linearity: time per MB at each size.
    print()
    for label in sorted({l for l, mb, *_ in rows if mb and not l.startswith("  ")}):
        per = [f"{mb} MB: {ours[(label, mb)] / mb * 1000:.1f} ms/MB" for mb in sizes if (label, mb) in ours]
        print(f"{label:<44} " + ", ".join(per))


if __name__ == "__main__":
    main()
