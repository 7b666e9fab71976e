#!/usr/bin/env python3
"""Benchmark harness: wall time and peak memory of session-relay on large sessions and stores,
side by side with the peers that do the same jobs.

usage: scripts/bench.py [--sizes 1,10,100,300] [--shapes large,many] [--runs 3] [--store 5000]
                        [--agents pi,qwen,copilot] [--agent-sizes 100] [--agents-only]
                        [--no-peers] [--data DIR] [--json-out FILE] [--peers-help]

Data (generated once with fixed seeds, cached under target/bench-data):
  * Claude Code and Codex sessions of each size (MB) in two shapes:
    - large: the first shape, a tool call or two per turn with outputs of 2-60 KB, thinking /
      reasoning, todo and plan updates, parallel calls, a compaction;
    - many:  many small messages, like the sessions people relay: the records the real CLIs
      write (Claude: uuid/parentUuid chain, one line per content block sharing message.id,
      thinking, tool_use / tool_result with toolUseResult, turn_duration, file-history
      snapshots; Codex: session_meta, turn_context, task_started / token_count with
      model_context_window, reasoning, function_call / function_call_output with the command's
      item_completed, apply_patch, update_plan), compact JSON, ~30,000 messages per 100 MB,
      tool outputs of 0.5-10 KB, usage records that follow the context and a compaction each
      time it nears the window (Claude at 150k tokens, Codex at 80% of 258,400), as the CLIs
      do: about 70 (Claude) and 40 (Codex) compactions per 100 MB;
  * a store of --store sessions (~1.8 GB at 5,000) of the first shape;
  * for each of --agents (pi, Qwen Code, Copilot CLI, OpenCode: OTHER_AGENTS, where another
    agent is added with its generator), a session of each --agent-sizes in shape "large", as its
    CLI records one (gen_pi, gen_qwen, gen_copilot; gen_opencode writes rows into a copy of the
    empty OpenCode database of fixtures/opencode-new).
  Sizes above 100 MB (300 by default) are run for session-relay's relays only, to compare peak
  RSS at 300 MB against 100 MB.

Measurements (each the median wall time and median CPU time (user + system, from
getrusage(RUSAGE_CHILDREN)) of --runs warm runs after one warm-up, files in page cache, and the
highest peak RSS of those runs, from /usr/bin/time -f %M per child):
  * relay (not --dry-run) Claude -> Codex and Codex -> Claude into scratch homes, --force to
    relay again, each shape and size; the peers' conversions of the same session beside it;
  * show of each session (the peer job: `casr info`);
  * list --all over the store, cold (empty summary cache) and warm; the peer job: `casr list`;
  * for relays of 100 MB and more, the brief's size and the share of the budget it uses, from
    `relay --dry-run --json` (fit.brief_tokens, fit.total_tokens, fit.budget), and how far back
    much of the source the relay kept (fit.verbatim and fit.shortened: turns and source
    tokens, in budgets);
  * the ratios session-relay / peer (time and peak RSS): below 1 means session-relay is faster
    or smaller;
  * relay into each of --agents from the Claude session of shape "large", and out of it into
    Claude Code (OpenCode: and Codex), of each --agent-sizes (--agents-only: these rows alone),
    every agent's home variable pointing into the scratch folder; casr beside them for the
    formats it reads (0.4.0 reads none of pi, Qwen Code and Copilot CLI; its `opc` is the
    older OpenCode's `sessions` table, so it finds no 1.18.33 session, and into OpenCode it
    adds that table to the database and writes there, where OpenCode 1.18.33 lists nothing).
Each relay and peer conversion is checked after its runs: the session it wrote is found in the
scratch target home, its lines counted, and it is read back with `session-relay show FILE`
(reported as "wrote ... read back: N messages").

Output: a plain table while running, then Markdown tables to paste into docs/performance.md
(also in target/bench-results.md) and the raw results as JSON (target/bench-results.json).

A default run (sizes 1,10,100,300, both shapes, 3 runs, all three peers) took 18 minutes on the
shared 2-core machine (load average 10-15 from other work) with the data cached; generating
the data the first time (3.5 GB) took another 10 minutes there (1.5 minutes of CPU). Under such
load wall times run 2-4 times the CPU times; compare CPU times between runs on a busy machine.
Messages per 100 MB: "many" ~34,000 (Claude: user/assistant lines) and ~27,000 (Codex:
response items); "large" ~19,500 and ~17,800.

Peers (--peers-help) are looked for under $SESSION_RELAY_PEERS (default
~/.cache/session-relay-peers) and run only with scratch homes (HOME, CLAUDE_HOME, CODEX_HOME
point into a temporary folder), never the user's own.
"""
import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "session-relay"
PEERS = Path(os.environ.get("SESSION_RELAY_PEERS", Path.home() / ".cache" / "session-relay-peers"))
# Sizes above this are generated and relayed by session-relay only (peak RSS at 300 vs 100 MB).
PEER_MAX_MB = 100

PEERS_HELP = """Peers are looked for under $SESSION_RELAY_PEERS (default ~/.cache/session-relay-peers):

  # casr (cross_agent_session_resumer, Rust, crates.io): casr resume / info / list
  cargo install cross_agent_session_resumer --locked --root ~/.cache/session-relay-peers
  # transession (Rust, crates.io): transession convert FILE OUT
  cargo install transession --locked --root ~/.cache/session-relay-peers
  # harness-convert (Python, PyPI): hc convert
  python3 -m venv ~/.cache/session-relay-peers/venv
  ~/.cache/session-relay-peers/venv/bin/pip install harness-convert

Installing casr builds it from source (about 10 minutes on 2 cores). Keep --locked: without
it cargo picks newer dependencies that need a newer Rust than 1.95. The peers are run with
scratch homes only:
  casr resume cod|cc SESSION --source cc|cod --workspace DIR --json
      with HOME=<scratch> CLAUDE_HOME=<claude home> CODEX_HOME=<codex home>
  casr info SESSION --source cc|cod --json        (beside `session-relay show`)
  casr list --all --limit 0 --json                (beside `session-relay list --all`)
  transession convert --from A --to B --new-session-id FILE OUT
  hc convert --from A --to B ... SESSION         with HOME=<scratch> holding .claude / .codex
"""

# ---------------------------------------------------------------------------------------------
# Shape "large": the first shape (kept byte for byte so that figures stay comparable).
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Shape "many": many small messages, with the records and fields the real CLIs write (see
# fixtures/claude/projects/-home-dev-projects-interactive and fixtures/codex/sessions/2026/11/30).
# ---------------------------------------------------------------------------------------------

VOCAB = ("the a an of to in for on with by from at as is are was be it this that these we you "
         "parser module function test tests result error line lines file files session sessions "
         "budget brief token tokens relay target source agent claude codex history message messages "
         "tool tool_use output outputs call calls struct enum trait impl returns reads writes keeps "
         "drops fails passes checks cache index ledger home folder path branch commit patch diff "
         "build release debug fixture fixtures schema version json jsonl field fields value values "
         "because while when then after before until unless every each some only first last next "
         "fast slow small large memory peak time wall median run runs warm cold read write parse "
         "scan shape fit count counts summary compaction todo plan step steps done pending in_progress "
         "should could would must may might need needs want wants look looks see seems now still "
         "config option options flag flags default missing empty malformed valid invalid unknown "
         "rust cargo clippy fmt serde regex rayon mmap buffer buffers bytes chars utf8 ascii escape "
         "user assistant system reasoning thinking signature model window context compact keep").split()

CODE_TEMPLATES = (
    "    let {a} = {b}.{c}(&{d})?;",
    "    if {a}.is_empty() {{ return Ok(None); }}",
    "fn {a}_{b}(input: &str) -> Result<{C}, Error> {{",
    "    for {a} in {b}.iter().filter(|x| x.{c}()) {{",
    "        {a}.push({b}.{c}.clone());",
    "    }}",
    "}}",
    "impl {C} for {D} {{",
    "    /// {w}",
    "    // {w}",
    "    match {a} {{ Some(v) => v.{b}(), None => {c}_default() }},",
    "#[derive(Debug, Clone, Serialize, Deserialize)]",
    "pub struct {C}{D} {{ pub {a}: Vec<{C}>, pub {b}: usize }}",
    "    assert_eq!({a}.{b}(), {n});",
    "use crate::{a}::{{{C}, {D}}};",
    "",
)


class Corpus:
    """Deterministic text drawn by slicing pools made once per seed (fast at 300 MB)."""

    def __init__(self, rng):
        self.rng = rng
        self.prose = " ".join(rng.choice(VOCAB) for _ in range(200_000))
        idents = [w for w in VOCAB if w.isidentifier()]
        caps = [w.capitalize() for w in idents]
        code = []
        for _ in range(40_000):
            t = rng.choice(CODE_TEMPLATES)
            code.append(t.format(a=rng.choice(idents), b=rng.choice(idents), c=rng.choice(idents),
                                 d=rng.choice(idents), C=rng.choice(caps), D=rng.choice(caps),
                                 n=rng.randint(0, 9999), w=self.words(8)))
        self.code = code
        files = [f"src/{rng.choice(idents)}/{rng.choice(idents)}.rs" for _ in range(300)]
        self.files = files
        tests = []
        for _ in range(8_000):
            name = f"{rng.choice(idents)}::tests::{rng.choice(idents)}_{rng.choice(idents)}_{rng.randint(1, 99)}"
            tests.append(f"test {name} ... {'ok' if rng.random() < 0.97 else 'FAILED'}")
        self.tests = tests

    def words(self, n):
        p = self.prose
        start = p.find(" ", self.rng.randrange(len(p) - 16 * n - 32)) + 1
        end = start
        for _ in range(n):
            nxt = p.find(" ", end + 1)
            end = nxt if nxt > 0 else len(p)
        return p[start:end]

    def sentence(self, n):
        s = self.words(n)
        return s[:1].upper() + s[1:] + "."

    def _lines(self, pool, size):
        rng = self.rng
        i = rng.randrange(len(pool))
        out, total = [], 0
        while total < size:
            line = pool[i % len(pool)]
            out.append(line)
            total += len(line) + 1
            i += 1
        return out

    def source(self, size):
        return self._lines(self.code, size)

    def output(self, kind, size):
        """A tool output of about size bytes: (text, extra) by kind of command."""
        rng = self.rng
        if kind == "test":
            lines = self._lines(self.tests, size - 120)
            ok = sum(1 for t in lines if t.endswith("ok"))
            lines.append(f"\ntest result: {'ok' if ok == len(lines) else 'FAILED'}. {ok} passed; {len(lines) - ok} failed; 0 ignored; finished in {rng.random() * 9:.2f}s")
            return "\n".join(lines)
        if kind == "grep":
            out, total = [], 0
            while total < size:
                line = f"{rng.choice(self.files)}:{rng.randint(1, 2000)}:{rng.choice(self.code)}"
                out.append(line)
                total += len(line) + 1
            return "\n".join(out)
        if kind == "build":
            out, total = [], 0
            while total < size:
                f = rng.choice(self.files)
                line = rng.choice((f"   Compiling {rng.choice(VOCAB)}-{rng.choice(VOCAB)} v0.{rng.randint(1, 40)}.{rng.randint(0, 9)}",
                                   f"warning: unused variable: `{rng.choice(VOCAB)}`\n  --> {f}:{rng.randint(1, 900)}:{rng.randint(1, 80)}",
                                   f"error[E0{rng.randint(300, 599)}]: {self.words(7)}\n  --> {f}:{rng.randint(1, 900)}:{rng.randint(1, 80)}"))
                out.append(line)
                total += len(line) + 1
            return "\n".join(out)
        return "\n".join(self.source(size))


def uuid4(rng):
    return str(uuidlib.UUID(int=rng.getrandbits(128), version=4))


def uuid7(rng, ms):
    r = rng.getrandbits(74)
    return f"{ms >> 16:08x}-{ms & 0xffff:04x}-7{(r >> 62) & 0xfff:03x}-{0x8000 | (r >> 48) & 0x3fff:04x}-{r & 0xffffffffffff:012x}"


def iso_ms(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def output_size(rng):
    """0.5-10 KB, most of them small (log-uniform: median ~2.2 KB, mean ~3.2 KB)."""
    return int(500 * 20 ** rng.random())


def steps_in_turn(rng):
    return min(40, 1 + int(rng.expovariate(1 / 6)))


# Auto-compaction thresholds: Claude Code's at about 150k of its 200k window, Codex's at 80%.
CLAUDE_COMPACT_AT = 150_000
CODEX_COMPACT_AT = 0.8

CLAUDE_USAGE = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0,
                "service_tier": "standard", "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}}


def gen_claude_many(path, target_bytes, seed, cwd="/home/dev/projects/bench"):
    rng = random.Random(seed)
    text = Corpus(rng)
    sid = path.stem
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "w")
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    tail = {"userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": sid, "version": "2.1.332", "gitBranch": "main"}
    clock = [1_796_000_000_000]
    parent = [None]
    # Tokens in the context (about 4 characters a token): what the usage records say at each
    # request, and what triggers a compaction, as Claude Code does, when it nears the window.
    context = [15_000]
    last_request = [15_000]

    def now(step=None):
        clock[0] += step if step is not None else rng.randint(5, 4000)
        return iso_ms(clock[0])

    def write(d):
        out.write(dumps(d) + "\n")

    def chained(d):
        uid = uuid4(rng)
        d = {"parentUuid": parent[0], "isSidechain": False, **d}
        d["uuid"] = uid
        d["timestamp"] = now()
        d.update(tail)
        write(d)
        parent[0] = uid
        return uid

    def assistant(mid, block, stop, req):
        fresh_in = rng.randint(2, 40)
        body = block.get("text") or block.get("thinking") or json.dumps(block.get("input"))
        usage = dict(CLAUDE_USAGE, input_tokens=fresh_in, cache_read_input_tokens=last_request[0],
                     cache_creation_input_tokens=max(0, context[0] - last_request[0] - fresh_in), output_tokens=len(body) // 4 + 5)
        last_request[0] = context[0]
        context[0] += len(body) // 4 + 5
        return chained({"message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                                    "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage},
                        "requestId": req, "type": "assistant"})

    def user(content, prompt_id, **extra):
        return chained({"promptId": prompt_id, "type": "user", "message": {"role": "user", "content": content}, **extra})

    def tool_step(prompt_id, turn, step):
        mid = "msg_" + uuid4(rng).replace("-", "")[:24]
        req = "req_" + uuid4(rng).replace("-", "")[:24]
        if rng.random() < 0.5:
            assistant(mid, {"type": "thinking", "thinking": text.sentence(rng.randint(15, 120)), "signature": "Eq" + "A" * 120 + "=="}, None, req)
        if rng.random() < 0.4:
            assistant(mid, {"type": "text", "text": text.sentence(rng.randint(8, 50))}, None, req)
        calls = rng.choice((2, 2, 3)) if rng.random() < 0.12 else 1
        uses = []
        for _ in range(calls):
            tid = "toolu_" + uuid4(rng).replace("-", "")[:24]
            kind = rng.choices(("Bash", "Read", "Grep", "Edit"), weights=(45, 30, 12, 13))[0]
            f = f"{cwd}/{rng.choice(text.files)}"
            if kind == "Bash":
                what = rng.choice(("test", "build", "grep"))
                cmd = {"test": "cargo test --quiet 2>&1 | tail -200", "build": "cargo build --release 2>&1 | tail -100",
                       "grep": f"rg -n {rng.choice(VOCAB)} src"}[what]
                inp = {"command": cmd, "description": text.sentence(5)}
            elif kind == "Read":
                what, inp = "source", {"file_path": f}
            elif kind == "Grep":
                what, inp = "grep", {"pattern": rng.choice(VOCAB), "path": cwd + "/src", "output_mode": "content", "-n": True}
            else:
                what, inp = "source", {"file_path": f, "old_string": rng.choice(text.code), "new_string": rng.choice(text.code), "replace_all": False}
            auid = assistant(mid, {"type": "tool_use", "id": tid, "name": kind, "input": inp}, "tool_use", req)
            uses.append((tid, kind, what, inp, auid))
        for tid, kind, what, inp, auid in uses:
            size = output_size(rng)
            err = rng.random() < 0.06
            if kind == "Read":
                lines = text.source(size)
                body = "\n".join(f"{i + 1:>6}\t{l}" for i, l in enumerate(lines))
                result = {"type": "text", "file": {"filePath": inp["file_path"], "content": "\n".join(lines),
                                                   "numLines": len(lines), "startLine": 1, "totalLines": len(lines)}}
            elif kind == "Edit":
                lines = text.source(size)
                body = f"The file {inp['file_path']} has been updated successfully."
                result = {"filePath": inp["file_path"], "oldString": inp["old_string"], "newString": inp["new_string"],
                          "originalFile": "\n".join(lines),
                          "structuredPatch": [{"oldStart": 12, "oldLines": 3, "newStart": 12, "newLines": 3,
                                               "lines": [" " + lines[0], "-" + inp["old_string"], "+" + inp["new_string"]]}],
                          "userModified": False, "replaceAll": False}
            elif kind == "Grep":
                body = text.output("grep", size)
                result = {"mode": "content", "numFiles": 0, "filenames": [], "content": body, "numLines": body.count("\n") + 1}
            else:
                body = text.output(what, size)
                if err:
                    body = "Exit code 101\n" + body
                result = {"stdout": body, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
            context[0] += len(body) // 4 + 10
            user([{"tool_use_id": tid, "type": "tool_result", "content": body, "is_error": err}], prompt_id,
                 toolUseResult=result if not err else "Error: " + body[:2000], sourceToolAssistantUUID=auid)

    turn = 0
    write({"type": "mode", "mode": "normal", "sessionId": sid})
    write({"type": "permission-mode", "permissionMode": "auto", "sessionId": sid})
    while out.tell() < target_bytes:
        turn += 1
        prompt_id = uuid4(rng)
        prompt = text.sentence(rng.randint(6, 60))
        if rng.random() < 0.1:
            prompt += "\n\n```\n" + "\n".join(text.source(rng.randint(200, 1500))) + "\n```"
        puid_next = uuid4(rng)
        write({"type": "file-history-snapshot", "messageId": puid_next,
               "snapshot": {"messageId": puid_next, "trackedFileBackups": {}, "timestamp": iso_ms(clock[0])}, "isSnapshotUpdate": False})
        start_ms = clock[0]
        context[0] += len(prompt) // 4 + 5
        user(prompt, prompt_id, permissionMode="auto", origin={"kind": "human"}, promptSource="typed",
             turnOrigin="human", turnPosition={"promptIndex": turn, "turnIndex": turn})
        for step in range(steps_in_turn(rng)):
            tool_step(prompt_id, turn, step)
        if turn % 12 == 0:
            mid = "msg_" + uuid4(rng).replace("-", "")[:24]
            tid = "toolu_" + uuid4(rng).replace("-", "")[:24]
            todos = [{"content": text.sentence(6), "status": ("completed", "in_progress", "pending")[min(k, 2)],
                      "activeForm": text.sentence(4)} for k in range(rng.randint(3, 7))]
            auid = assistant(mid, {"type": "tool_use", "id": tid, "name": "TodoWrite", "input": {"todos": todos}}, "tool_use", "req_t")
            user([{"tool_use_id": tid, "type": "tool_result",
                   "content": "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress."}],
                 prompt_id, toolUseResult={"oldTodos": [], "newTodos": todos}, sourceToolAssistantUUID=auid)
        mid = "msg_" + uuid4(rng).replace("-", "")[:24]
        assistant(mid, {"type": "text", "text": "\n\n".join(text.sentence(rng.randint(10, 60)) for _ in range(rng.randint(1, 4)))},
                  "end_turn", "req_e")
        chained({"type": "system", "subtype": "turn_duration", "durationMs": clock[0] - start_ms,
                 "messageCount": turn * 8, "isMeta": False})
        write({"type": "last-prompt", "lastPrompt": prompt[:200], "leafUuid": parent[0], "sessionId": sid})
        if context[0] > CLAUDE_COMPACT_AT:
            old = parent[0]
            parent[0] = None
            chained({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
                     "level": "info", "logicalParentUuid": old, "compactMetadata": {"trigger": "auto", "preTokens": context[0]}})
            summary = ("This session is being continued from a previous conversation that ran out of context. "
                       "The conversation is summarized below:\n" + "\n".join(text.sentence(20) for _ in range(30)))
            user(summary, uuid4(rng), isVisibleInTranscriptOnly=True, isCompactSummary=True)
            context[0] = last_request[0] = 15_000 + len(summary) // 4
    write({"type": "custom-title", "customTitle": f"bench many {sid[:8]}", "sessionId": sid})
    out.close()


def gen_codex_many(path, target_bytes, seed, sid, cwd="/home/dev/projects/bench"):
    rng = random.Random(seed)
    text = Corpus(rng)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "w")
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    clock = [1_796_000_000_000]
    ordinal = [0]
    seq = [0]
    total = {"input_tokens": 0, "cached_input_tokens": 0, "cache_write_input_tokens": 0, "output_tokens": 0,
             "reasoning_output_tokens": 0, "total_tokens": 0}
    model = "gpt-5.5"
    window = 258400
    # Tokens in the context (about 4 characters a token), as the token_count events report it;
    # Codex compacts when it nears the window.
    context = [12_000]
    last_request = [0]
    dev_instr = "# Collaboration Mode: Default\n\n" + "\n\n".join(text.sentence(30) for _ in range(6))

    def line(typ, payload, step=None):
        clock[0] += step if step is not None else rng.randint(2, 3000)
        out.write(dumps({"timestamp": iso_ms(clock[0]), "ordinal": ordinal[0], "type": typ, "payload": payload}) + "\n")
        ordinal[0] += 1

    def meta(**extra):
        seq[0] += 1
        return {"history_sequence": seq[0], "sampled_through_sequence": seq[0] - 1, "client_authored": False, **extra,
                "model_search_state": "unused"}

    def item(turn_id, it):
        ms = clock[0]
        line("event_msg", {"type": "item_completed", "thread_id": sid, "turn_id": turn_id, "item": it,
                           "started_at_ms": ms, "completed_at_ms": ms + rng.randint(1, 900)})

    def usage(turn_id, resp):
        inp = context[0]
        last = {"input_tokens": inp, "cached_input_tokens": last_request[0], "cache_write_input_tokens": 0,
                "output_tokens": rng.randint(20, 900), "reasoning_output_tokens": rng.randint(0, 400)}
        last_request[0] = inp
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for k in total:
            total[k] += last[k]
        line("token_usage_record", {"thread_id": sid, "turn_id": turn_id, "session_id": sid, "root_turn_id": turn_id,
                                    "response_id": resp, "usage": last, "turn_token_usage": last, "thread_token_usage": dict(total)})
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total), "last_token_usage": last,
                                                           "last_usage_includes_reasoning": False, "model_context_window": window},
                           "rate_limits": {"limit_id": "codex", "limit_name": None, "primary": None, "secondary": None, "credits": None,
                                           "individual_limit": None, "spend_control_reached": None, "plan_type": None,
                                           "rate_limit_reached_type": None}})

    def passthrough(turn_id, **extra):
        return {"turn_id": turn_id, **extra}

    line("session_meta", {"account_scoped": True, "session_id": sid, "id": sid, "timestamp": iso_ms(clock[0]), "cwd": cwd,
                          "runtime_workspace_roots": [cwd], "originator": "codex_cli_rs", "cli_version": "0.171.0",
                          "source": "cli", "thread_source": "user", "model_provider": "openai",
                          "base_instructions": {"text": "You are a coding agent running in the Codex CLI.\n\n" +
                                                "\n\n".join(text.sentence(40) for _ in range(60))},
                          "git": {"branch": "main", "commit_hash": "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b",
                                  "repository_url": "git@example.com:dev/bench.git"}})
    turn = 0
    user_prompts = []
    while out.tell() < target_bytes:
        turn += 1
        turn_id = uuid7(rng, clock[0])
        settings = {"model": model, "model_provider_id": "openai", "service_tier": "default", "approval_policy": "on-request",
                    "approvals_reviewer": "user", "requested_approvals_reviewer": "user", "permission_profile": {"type": "workspace-write"},
                    "cwd": cwd, "runtime_workspace_roots": [cwd],
                    "collaboration_mode": {"mode": "default", "settings": {"model": model, "reasoning_effort": "medium",
                                                                           "developer_instructions": dev_instr}},
                    "disabled_plugin_ids": []}
        line("event_msg", {"type": "thread_settings_applied", "thread_id": sid, "thread_settings": settings})
        line("event_msg", {"type": "task_started", "turn_attribution": {"turn_id": turn_id, "turn_trigger": "user", "parent_turn_id": None,
                                                                        "initiating_agent_path": None, "root_turn_id": turn_id},
                           "turn_id": turn_id, "root_turn_id": turn_id, "started_at": clock[0] // 1000,
                           "model_context_window": window, "collaboration_mode_kind": "default"})
        start_ms = clock[0]
        line("turn_context", {"turn_id": turn_id, "root_turn_id": turn_id, "disabled_plugin_ids": [], "cwd": cwd,
                              "approval_policy": "on-request", "approvals_reviewer": "user", "permission_profile": {"type": "workspace-write"},
                              "model": model, "collaboration_mode": {"mode": "default", "settings": {"model": model, "reasoning_effort": "medium",
                                                                                                      "developer_instructions": dev_instr}},
                              "multi_agent_version": "v1", "realtime_active": False, "summary": "auto",
                              "sandbox_policy": {"type": "workspace-write", "network_access": False}})
        prompt = text.sentence(rng.randint(6, 60))
        if rng.random() < 0.1:
            prompt += "\n\n```\n" + "\n".join(text.source(rng.randint(200, 1500))) + "\n```"
        mid = "msg_" + uuid7(rng, clock[0])
        user_msg = {"type": "message", "id": mid, "role": "user", "content": [{"type": "input_text", "text": prompt}],
                    "internal_chat_message_metadata_passthrough": passthrough(turn_id, create_time=clock[0] / 1000,
                                                                              content_item_kinds=["user.text"],
                                                                              content_item_metadata=[{"provenance": {"type": "user"}}])}
        user_prompts.append(user_msg)
        context[0] += len(prompt) // 4 + 5
        line("response_item", user_msg, )
        item(turn_id, {"type": "UserMessage", "id": uuid7(rng, clock[0]), "content": [{"type": "text", "text": prompt, "text_elements": []}]})
        n_resp = 0
        for step in range(steps_in_turn(rng)):
            n_resp += 1
            resp = f"resp_{uuid4(rng).replace('-', '')[:20]}"
            if rng.random() < 0.6:
                rid = f"rs_{uuid4(rng).replace('-', '')[:20]}"
                summary = "**" + text.sentence(3) + "** " + text.sentence(rng.randint(10, 80))
                context[0] += len(summary) // 4 + 5
                item(turn_id, {"type": "Reasoning", "id": rid, "summary_text": [summary], "raw_content": []})
                line("response_item", {"type": "reasoning", "id": rid, "summary": [{"type": "summary_text", "text": summary}],
                                       "content": None, "encrypted_content": "gAAAAB" + "x" * rng.randint(300, 1500),
                                       "internal_chat_message_metadata_passthrough": passthrough(turn_id)}, )
            if rng.random() < 0.25:
                am = "msg_" + uuid7(rng, clock[0])
                t = text.sentence(rng.randint(8, 40))
                context[0] += len(t) // 4 + 5
                item(turn_id, {"type": "AgentMessage", "id": am, "content": [{"type": "Text", "text": t}], "phase": "commentary"})
                line("response_item", {"type": "message", "id": am, "role": "assistant", "phase": "commentary",
                                       "content": [{"type": "output_text", "text": t, "annotations": []}],
                                       "internal_chat_message_metadata_passthrough": passthrough(turn_id, content_item_kinds=["unknown"])})
            calls = rng.choice((2, 2, 3)) if rng.random() < 0.12 else 1
            pending = []
            for _ in range(calls):
                cid = f"call_{uuid4(rng).replace('-', '')[:24]}"
                if rng.random() < 0.13:
                    f = rng.choice(text.files)
                    lines = text.source(rng.randint(200, 2500))
                    context[0] += 1000
                    patch = f"*** Begin Patch\n*** Update File: {f}\n@@\n" + "\n".join(("-" if i % 3 == 0 else "+") + l for i, l in enumerate(lines)) + "\n*** End Patch\n"
                    line("response_item", {"type": "custom_tool_call", "id": f"ctc_{cid[5:17]}", "call_id": cid, "name": "apply_patch",
                                           "input": patch, "internal_chat_message_metadata_passthrough": passthrough(turn_id)},
                         )
                    pending.append(("patch", cid, f))
                else:
                    what = rng.choices(("test", "build", "grep", "source"), weights=(25, 15, 30, 30))[0]
                    cmd = {"test": "cargo test --quiet 2>&1 | tail -200", "build": "cargo build --release 2>&1 | tail -100",
                           "grep": f"rg -n {rng.choice(VOCAB)} src", "source": f"sed -n 1,300p {rng.choice(text.files)}"}[what]
                    line("response_item", {"type": "function_call", "id": f"fc_{cid[5:17]}", "name": "exec_command",
                                           "arguments": json.dumps({"cmd": cmd, "workdir": cwd, "yield_time_ms": 10000}),
                                           "call_id": cid, "internal_chat_message_metadata_passthrough": passthrough(turn_id)})
                    pending.append((what, cid, cmd))
            usage(turn_id, resp)
            for what, cid, arg in pending:
                if what == "patch":
                    item(turn_id, {"type": "FileChange", "id": cid,
                                   "changes": {f"{cwd}/{arg}": {"type": "update", "unified_diff": "@@ -1,3 +1,3 @@\n-a\n+b\n", "move_path": None}},
                                   "status": "completed", "stdout": f"Success. Updated the following files:\nM {arg}\n", "stderr": ""})
                    line("response_item", {"type": "custom_tool_call_output", "id": f"ctco_{uuid7(rng, clock[0])}", "call_id": cid,
                                           "output": f"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM {arg}\n",
                                           "internal_chat_message_metadata_passthrough": passthrough(turn_id, create_time=clock[0] / 1000)},
                         )
                    continue
                body = text.output(what, output_size(rng))
                context[0] += len(body) // 4 + 40
                code = 1 if rng.random() < 0.06 else 0
                item(turn_id, {"type": "CommandExecution", "id": cid, "process_id": str(rng.randint(1000, 99999)),
                               "command": ["/bin/bash", "-lc", arg], "cwd": "file://" + cwd,
                               "parsed_cmd": [{"type": "unknown", "cmd": arg}], "source": "unified_exec_startup", "status": "completed",
                               "aggregated_output": body + "\n", "exit_code": code,
                               "duration": {"secs": rng.randint(0, 30), "nanos": rng.randint(0, 10**9 - 1)}})
                line("response_item", {"type": "function_call_output", "id": f"fco_{uuid7(rng, clock[0])}", "call_id": cid,
                                       "output": f"Chunk ID: {rng.getrandbits(24):06x}\nWall time: {rng.random() * 20:.4f} seconds\n"
                                                 f"Process exited with code {code}\nOriginal token count: {len(body) // 4}\nOutput:\n{body}\n",
                                       "internal_chat_message_metadata_passthrough": passthrough(turn_id, create_time=clock[0] / 1000)},
                     )
        if turn % 12 == 0:
            cid = f"call_{uuid4(rng).replace('-', '')[:24]}"
            plan = [{"step": text.sentence(6), "status": ("completed", "in_progress", "pending")[min(k, 2)]} for k in range(rng.randint(3, 7))]
            line("response_item", {"type": "function_call", "id": f"fc_{cid[5:17]}", "name": "update_plan",
                                   "arguments": json.dumps({"explanation": text.sentence(8), "plan": plan}), "call_id": cid,
                                   "internal_chat_message_metadata_passthrough": passthrough(turn_id)})
            line("response_item", {"type": "function_call_output", "id": f"fco_{uuid7(rng, clock[0])}", "call_id": cid, "output": "Plan updated",
                                   "internal_chat_message_metadata_passthrough": passthrough(turn_id, create_time=clock[0] / 1000)})
        am = "msg_" + uuid7(rng, clock[0])
        final = "\n\n".join(text.sentence(rng.randint(10, 60)) for _ in range(rng.randint(1, 4)))
        context[0] += len(final) // 4 + 5
        item(turn_id, {"type": "AgentMessage", "id": am, "content": [{"type": "Text", "text": final}], "phase": "final_answer"})
        line("response_item", {"type": "message", "id": am, "role": "assistant", "phase": "final_answer",
                               "content": [{"type": "output_text", "text": final, "annotations": []}],
                               "internal_chat_message_metadata_passthrough": passthrough(turn_id, content_item_kinds=["unknown"])})
        usage(turn_id, f"resp_{uuid4(rng).replace('-', '')[:20]}")
        line("event_msg", {"type": "task_complete", "root_turn_id": turn_id, "turn_id": turn_id, "last_agent_message": final,
                           "started_at": start_ms // 1000, "completed_at": clock[0] // 1000, "duration_ms": clock[0] - start_ms,
                           "time_to_first_token_ms": rng.randint(200, 3000)})
        if context[0] > CODEX_COMPACT_AT * window:
            summary = "\n".join(text.sentence(20) for _ in range(30))
            line("compacted", {"message": "Another language model started to solve this problem and produced a summary of its "
                                          "thinking process. Here is the summary produced by the other language model:\n" + summary,
                               "replacement_history": user_prompts[-20:]})
            item(turn_id, {"type": "ContextCompaction", "id": uuid7(rng, clock[0])})
            context[0] = 12_000 + len(summary) // 4
    out.close()


# ---------------------------------------------------------------------------------------------
# The other agents' sessions, in shape "large" (the turns of gen_claude: a prompt, thinking, a
# text, one or two tool calls with outputs of 2-60 KB, one in ten failing, a todo update every
# 15 turns where the agent has a todo tool, a closing answer, a compaction halfway), as each real
# CLI records them (formats: adapters/<agent>/, fixtures/<agent>/).
# ---------------------------------------------------------------------------------------------

def tool_turn(rng, turn, cwd):
    """The calls of one turn, agent-neutral: (kind, command or path, output size, failed)."""
    calls = []
    for _ in range(2 if rng.random() < 0.2 else 1):
        kind = rng.choice(["shell", "read", "edit", "search"])
        arg = f"grep -rn item_{turn} src" if kind in ("shell", "search") else f"{cwd}/src/m{turn % 50}.rs"
        calls.append((kind, arg, rng.choice([2_000, 8_000, 30_000, 60_000]), rng.random() < 0.1))
    return calls


def gen_pi(path, target_bytes, seed, sid, cwd="/home/dev/projects/bench"):
    """pi 0.73.1: a version 3 `session` header, then entries chained by 8-hex `id`/`parentId`;
    assistant messages of thinking, text and toolCall blocks with `usage`, `toolResult` messages,
    a `compaction` entry, the title as `session_info`."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "w")
    parent, n, ms = None, 0, 1_790_000_000_000
    tools = {"shell": ("bash", "command"), "read": ("read", "path"), "edit": ("edit", "path"), "search": ("grep", "pattern")}
    usage = {"input": 1200, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1240,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}

    def entry(typ, **fields):
        nonlocal parent, n, ms
        n += 1
        ms += 1000
        eid = f"{((seed << 20) ^ n) & 0xffffffff:08x}"
        out.write(json.dumps({"type": typ, "id": eid, "parentId": parent, "timestamp": iso_ms(ms), **fields},
                             separators=(",", ":")) + "\n")
        parent = eid
        return eid

    def message(role, content, **extra):
        return entry("message", message={"role": role, "content": content, **extra, "timestamp": ms})

    out.write(json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": iso_ms(ms), "cwd": cwd},
                         separators=(",", ":")) + "\n")
    entry("model_change", provider="anthropic", modelId="claude-opus-5-5")
    entry("thinking_level_change", thinkingLevel="medium")
    turn, compacted = 0, False
    assistant = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-5-5", "usage": usage}
    while out.tell() < target_bytes:
        turn += 1
        first = message("user", [{"type": "text", "text": f"Turn {turn}: {words(rng, 25)}. We must keep every line."}])
        calls = tool_turn(rng, turn, cwd)
        blocks = [{"type": "thinking", "thinking": words(rng, 60), "thinkingSignature": "sig=="},
                  {"type": "text", "text": words(rng, 30)}]
        for c, (kind, arg, _, _) in enumerate(calls):
            name, key = tools[kind]
            args = {key: arg}
            if kind == "edit":
                args["edits"] = [{"oldText": "a", "newText": "b"}]
            blocks.append({"type": "toolCall", "id": f"call_{seed:x}_{turn}_{c}", "name": name, "arguments": args})
        message("assistant", blocks, **assistant, stopReason="toolUse")
        for c, (kind, arg, size, failed) in enumerate(calls):
            message("toolResult", [{"type": "text", "text": tool_output(rng, size)}], toolCallId=f"call_{seed:x}_{turn}_{c}",
                    toolName=tools[kind][0], isError=failed)
        message("assistant", [{"type": "text", "text": f"Done with turn {turn}: {words(rng, 40)}"}], **assistant, stopReason="stop")
        if not compacted and out.tell() > target_bytes / 2:
            compacted = True
            entry("compaction", summary="## Goal\n" + words(rng, 200), firstKeptEntryId=first, tokensBefore=150_000,
                  details={"readFiles": [], "modifiedFiles": []}, fromHook=False)
    entry("session_info", name=f"bench {sid[:8]}")
    out.close()


def gen_qwen(path, target_bytes, seed, sid, cwd="/home/dev/projects/bench"):
    """Qwen Code 0.24.4: records chained by `uuid`/`parentUuid`, each with the session id, `cwd`
    and `version`; `assistant` records of thought, text and functionCall parts with
    `usageMetadata`, each after its `ui_telemetry` record; `tool_result` records with
    `toolCallResult`; a `chat_compression` record; the title as `custom_title`."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "w")
    parent, n, ms = None, 0, 1_790_000_000_000
    tools = {"shell": ("run_shell_command", "command"), "read": ("read_file", "file_path"), "edit": ("edit", "file_path"),
             "search": ("grep_search", "pattern")}

    def record(typ, **fields):
        nonlocal parent, n, ms
        n += 1
        ms += 1000
        uid = f"{seed:08x}-0000-4000-8000-{n:012x}"
        out.write(json.dumps({"uuid": uid, "parentUuid": parent, "sessionId": sid, "timestamp": iso_ms(ms), "type": typ,
                              "cwd": cwd, "version": "0.24.4", "gitBranch": "main", **fields}, separators=(",", ":")) + "\n")
        parent = uid

    record("system", subtype="custom_title", systemPayload={"customTitle": f"bench {sid[:8]}", "titleSource": "manual"})
    turn, compacted = 0, False
    while out.tell() < target_bytes:
        turn += 1
        record("user", provenance="real_user", message={"role": "user", "parts": [
            {"text": f"Turn {turn}: {words(rng, 25)}. We must keep every line."}]})
        calls = tool_turn(rng, turn, cwd)
        parts = [{"text": words(rng, 60), "thought": True}, {"text": words(rng, 30)}]
        for c, (kind, arg, _, _) in enumerate(calls):
            name, key = tools[kind]
            args = {key: arg, **({"old_string": "a", "new_string": "b"} if kind == "edit" else {})}
            parts.append({"functionCall": {"id": f"call_{seed:x}_{turn}_{c}", "name": name, "args": args}})
        usage = {"promptTokenCount": 1200 * turn, "candidatesTokenCount": 40, "totalTokenCount": 1200 * turn + 40}
        record("system", subtype="ui_telemetry", systemPayload={"uiEvent": {
            "event.name": "qwen-code.api_response", "model": "qwen3-coder-plus", "status_code": 200, "duration_ms": 600,
            "input_token_count": usage["promptTokenCount"], "output_token_count": 40}})
        record("assistant", model="qwen3-coder-plus", message={"role": "model", "parts": parts}, usageMetadata=usage)
        for c, (kind, arg, size, failed) in enumerate(calls):
            cid, name = f"call_{seed:x}_{turn}_{c}", tools[kind][0]
            text = tool_output(rng, size)
            response = {"error": text} if failed else {"output": text}
            record("tool_result", message={"role": "user", "parts": [{"functionResponse": {"id": cid, "name": name, "response": response}}]},
                   toolCallResult={"callId": cid, "status": "error" if failed else "success", "resultDisplay": text[:2000]})
        if turn % 15 == 0:
            cid = f"call_{seed:x}_{turn}_todo"
            todos = [{"id": str(k), "content": f"step {k} of turn {turn}", "status": "completed" if k < 2 else "pending"} for k in range(4)]
            record("assistant", model="qwen3-coder-plus", message={"role": "model", "parts": [
                {"functionCall": {"id": cid, "name": "todo_write", "args": {"todos": todos}}}]})
            record("tool_result", message={"role": "user", "parts": [{"functionResponse": {
                "id": cid, "name": "todo_write", "response": {"output": "Todos have been modified successfully."}}}]},
                toolCallResult={"callId": cid, "status": "success", "resultDisplay": "Todos updated"})
        record("assistant", model="qwen3-coder-plus", message={"role": "model", "parts": [
            {"text": f"Done with turn {turn}: {words(rng, 40)}"}]})
        if not compacted and out.tell() > target_bytes / 2:
            compacted = True
            record("system", subtype="chat_compression", systemPayload={
                "info": {"originalTokenCount": 150_000, "newTokenCount": 12_000, "compressionStatus": 1, "triggerReason": "auto"},
                "compressedHistory": [
                    {"role": "user", "parts": [{"text": "<state_snapshot><overall_goal>" + words(rng, 200) + "</overall_goal></state_snapshot>"}]},
                    {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]}]})
    out.close()


def gen_copilot(path, target_bytes, seed, sid, cwd="/home/dev/projects/bench"):
    """GitHub Copilot CLI 1.0.102: `session.start`, then events with a UUID `id` chained by
    `parentId`: `user.message`, `assistant.turn_start`/`turn_end`, `assistant.message` with
    `reasoningText` and `toolRequests`, each call's `tool.execution_start` and
    `tool.execution_complete` (a shell command's exit code in `shellExecution`), a compaction
    (`session.compaction_start`/`complete`). The title is in workspace.yaml beside the log."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = open(path, "w")
    parent, n, ms = None, 0, 1_790_000_000_000
    tools = {"shell": ("bash", "command"), "read": ("view", "path"), "edit": ("edit", "path"), "search": ("grep", "pattern")}

    def event(typ, data):
        nonlocal parent, n, ms
        n += 1
        ms += 1000
        eid = f"{seed:08x}-0000-4000-8000-{n:012x}"
        out.write(json.dumps({"type": typ, "data": data, "id": eid, "timestamp": iso_ms(ms), "parentId": parent},
                             separators=(",", ":")) + "\n")
        parent = eid

    event("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.102",
                            "startTime": iso_ms(ms), "selectedModel": "claude-sonnet-4.5", "context": {"cwd": cwd}})
    turn, compacted = 0, False
    while out.tell() < target_bytes:
        turn += 1
        prompt = f"Turn {turn}: {words(rng, 25)}. We must keep every line."
        event("user.message", {"content": prompt, "transformedContent": prompt, "messageId": f"m{seed:x}-{turn}",
                               "interactionId": f"i{seed:x}-{turn}", "turnId": "0"})
        event("assistant.turn_start", {"turnId": "0", "interactionId": f"i{seed:x}-{turn}"})
        calls = tool_turn(rng, turn, cwd)
        requests = []
        for c, (kind, arg, _, _) in enumerate(calls):
            name, key = tools[kind]
            args = {key: arg, **({"old_str": "a", "new_str": "b"} if kind == "edit" else {})}
            requests.append({"toolCallId": f"call_{seed:x}_{turn}_{c}", "name": name, "arguments": args, "type": "function"})
        event("assistant.message", {"messageId": f"a{seed:x}-{turn}", "model": "claude-sonnet-4.5", "content": words(rng, 30),
                                    "toolRequests": requests, "reasoningText": words(rng, 60), "turnId": "0"})
        for r, (kind, arg, size, failed) in zip(requests, calls):
            event("tool.execution_start", {"toolCallId": r["toolCallId"], "toolName": r["name"], "arguments": r["arguments"]})
            text = tool_output(rng, size)
            if kind == "shell":
                data = {"success": True, "result": {"content": text}, "shellExecution": {"exitCode": 1 if failed else 0}}
            elif failed:
                data = {"success": False, "error": {"message": text, "code": "failure"}}
            else:
                data = {"success": True, "result": {"content": text}}
            event("tool.execution_complete", {"toolCallId": r["toolCallId"], "model": "claude-sonnet-4.5", **data})
        event("assistant.turn_end", {"turnId": "0"})
        event("assistant.turn_start", {"turnId": "1", "interactionId": f"i{seed:x}-{turn}"})
        event("assistant.message", {"messageId": f"e{seed:x}-{turn}", "model": "claude-sonnet-4.5",
                                    "content": f"Done with turn {turn}: {words(rng, 40)}", "toolRequests": []})
        event("assistant.turn_end", {"turnId": "1"})
        if not compacted and out.tell() > target_bytes / 2:
            compacted = True
            event("session.compaction_start", {"compactionAttemptId": f"c{seed:x}", "currentTokens": 120_000,
                                               "tokenLimit": 128_000, "trigger": "auto"})
            event("session.compaction_complete", {"success": True, "outcome": "applied", "compactionAttemptId": f"c{seed:x}",
                                                  "preCompactionTokens": 120_000, "postCompactionTokens": 9_000,
                                                  "summaryContent": "<overview>" + words(rng, 200) + "</overview>",
                                                  "trigger": "auto", "checkpointNumber": 1})
    out.close()
    (path.parent / "workspace.yaml").write_text(
        f"id: {sid}\ncwd: {cwd}\nclient_name: github/cli\nname: bench {sid[:8]}\nuser_named: true\n"
        f"created_at: {iso_ms(1_790_000_000_000)}\nupdated_at: {iso_ms(ms)}\n")


# ---------------------------------------------------------------------------------------------
# Data layout
# ---------------------------------------------------------------------------------------------

SHAPES = {
    # shape: (directory under the data dir, claude seed base, codex seed base, claude gen, codex gen)
    "large": ("sizes", 1000, 2000, gen_claude, gen_codex),
    "many": ("sizes-many", 3000, 4000, gen_claude_many, gen_codex_many),
}


def gen_opencode(path, target_bytes, seed, sid, cwd="/home/dev/projects/bench"):
    """OpenCode 1.18.33: rows of its SQLite database (the schema of the real CLI's empty
    database in fixtures/opencode-new), as the CLI writes them: a `session` row in project
    `global`, then per turn a user `message` with a `text` part and one assistant message per
    model call (`step-start`, reasoning, text, a `tool` part holding the call and its result,
    `step-finish`), a closing answer, a `/compact` halfway (a `compaction` part and a
    `summary: true` answer); message and part `data` is compact JSON without the ids."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "fixtures" / "opencode-new" / "opencode.db", path)
    db = sqlite3.connect(path)
    tools = {"shell": ("bash", "command"), "read": ("read", "filePath"), "edit": ("edit", "filePath"),
             "search": ("grep", "pattern")}
    n, ms, size = 0, 1_790_000_000_000, 0
    model = {"providerID": "anthropic", "modelID": "claude-opus-5-5"}
    tokens = {"total": 1240, "input": 1200, "output": 40, "reasoning": 0, "cache": {"write": 0, "read": 0}}

    def oc_id(prefix):
        nonlocal n
        n += 1
        return f"{prefix}_{ms:012x}{n:014d}"

    def put(table, row):
        nonlocal size
        data = json.dumps(row[-1], separators=(",", ":"))
        size += len(data) + 60
        marks = ",".join("?" * (len(row) + 1))
        db.execute(f"INSERT INTO {table} VALUES ({marks})", (*row[:-2], row[-2], row[-2], data))

    def message(role, parts, **info):
        nonlocal ms
        ms += 1000
        mid = oc_id("msg")
        put("message", (mid, sid, ms, {"role": role, "time": {"created": ms}, **info}))
        for p in parts:
            put("part", (oc_id("prt"), mid, sid, ms, p))
        return mid

    def answer(parent, parts, finish):
        return message("assistant", [{"type": "step-start"}, *parts, {"type": "step-finish", "reason": finish, "tokens": tokens, "cost": 0}],
                       parentID=parent, mode="build", agent="build", path={"cwd": cwd, "root": cwd}, cost=0, tokens=tokens,
                       **model, finish=finish)

    db.execute("INSERT INTO session (id, project_id, slug, directory, path, title, version, agent, time_created, time_updated) "
               "VALUES (?, 'global', 'bench', ?, ?, ?, '1.18.33', 'build', ?, ?)",
               (sid, cwd, cwd.lstrip("/"), f"bench {sid[:12]}", ms, ms + 10_000_000))
    turn, compacted = 0, False
    while size < target_bytes:
        turn += 1
        user = message("user", [{"type": "text", "text": f"Turn {turn}: {words(rng, 25)}. We must keep every line."}],
                       agent="build", model=model)
        for c, (kind, arg, out_size, failed) in enumerate(tool_turn(rng, turn, cwd)):
            name, key = tools[kind]
            t = ms + 1000
            state = {"status": "completed", "input": {key: arg}, "output": tool_output(rng, out_size), "title": arg,
                     "metadata": {"exit": 1 if failed else 0} if name == "bash" else {}, "time": {"start": t, "end": t + 500}}
            parts = [{"type": "reasoning", "text": words(rng, 60), "time": {"start": t, "end": t}}] if c == 0 else []
            parts += [{"type": "text", "text": words(rng, 30), "time": {"start": t, "end": t}},
                      {"type": "tool", "tool": name, "callID": f"call_{seed:x}_{turn}_{c}", "state": state}]
            answer(user, parts, "tool-calls")
        answer(user, [{"type": "text", "text": f"Done with turn {turn}: {words(rng, 40)}"}], "stop")
        if not compacted and size > target_bytes / 2:
            compacted = True
            asked = message("user", [{"type": "compaction", "auto": True}], agent="build", model=model)
            message("assistant", [{"type": "text", "text": "## Goal\n" + words(rng, 200)}], parentID=asked, summary=True,
                    mode="compaction", agent="compaction", path={"cwd": cwd, "root": cwd}, cost=0, tokens=tokens, **model,
                    finish="stop")
    db.commit()
    db.execute("PRAGMA journal_mode=WAL")
    db.close()


def codex_uuid(seed):
    return f"0199{seed:04x}-0000-7000-8000-{seed:012x}"


def claude_uuid(seed):
    return f"{seed:08x}-0000-4000-8000-{seed:012x}"


def session_paths(data, shape, mb):
    """The Claude and Codex homes and session files of one shape and size, and their ids."""
    sub, cbase, xbase, _, _ = SHAPES[shape]
    made = data / sub
    cid, xid = claude_uuid(cbase + mb), codex_uuid(xbase + mb)
    c_home = made / f"claude-{mb}mb"
    x_home = made / f"codex-{mb}mb"
    c = c_home / "projects" / "-home-dev-projects-bench" / f"{cid}.jsonl"
    x = x_home / "sessions" / "2026" / "11" / "01" / f"rollout-2026-11-01T10-00-00-{xid}.jsonl"
    return {"claude": (c_home, c, cid), "codex": (x_home, x, xid)}


# The agents beside Claude Code and Codex, each benchmarked by relays into it (from the Claude
# session of shape "large") and out of it (into Claude Code). An entry: its home variable, the
# seed base and id of its generated sessions, `file` (where its session of id `sid` lies in a
# home), `gen` (writes that file), and casr's alias for it when casr reads the format (casr
# 0.4.0 reads none of these three). An agent whose store is not one file a session (OpenCode:
# one SQLite database) gets `file` pointing at what `gen` writes in the home (the database).
OTHER_AGENTS = {
    "pi": {"env": "PI_CODING_AGENT_DIR", "seed": 5000, "casr": None, "gen": gen_pi,
           "id": lambda seed: f"0199{seed:04x}-0000-7000-8000-{seed:012x}",
           "file": lambda home, sid: home / "sessions" / "--home-dev-projects-bench--" / f"2026-10-01T10-00-00-000Z_{sid}.jsonl"},
    "qwen": {"env": "QWEN_HOME", "seed": 6000, "casr": None, "gen": gen_qwen,
             "id": lambda seed: f"{seed:08x}-0000-4000-8000-{seed:012x}",
             "file": lambda home, sid: home / "projects" / "-home-dev-projects-bench" / "chats" / f"{sid}.jsonl"},
    "copilot": {"env": "COPILOT_HOME", "seed": 7000, "casr": None, "gen": gen_copilot,
                "id": lambda seed: f"{seed:08x}-0000-4000-8000-{seed:012x}",
                "file": lambda home, sid: home / "session-state" / sid / "events.jsonl"},
    # casr 0.4.0's `opc` reads the older OpenCode's `sessions`/`messages` tables, not the
    # `session`/`message`/`part` rows of 1.18.33: its runs are kept to show what it says.
    "opencode": {"env": "SESSION_RELAY_OPENCODE_HOME", "seed": 8000, "casr": "opc", "gen": gen_opencode,
                 "id": lambda seed: f"ses_{seed:012x}BenchSession00",
                 "file": lambda home, sid: home / "opencode.db",
                 # Out of it into Codex too; into it needs the database OpenCode creates.
                 "out": ("claude", "codex"),
                 "init": lambda home: shutil.copyfile(ROOT / "fixtures" / "opencode-new" / "opencode.db", home / "opencode.db")},
}
# Every agent's home variable: each run sets them all, to the homes it uses or to an empty
# folder, so that no run reads the user's own sessions.
HOME_ENVS = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "gemini": "GEMINI_CLI_HOME",
             **{a: e["env"] for a, e in OTHER_AGENTS.items()}}


def other_session(data, agent, mb):
    """The home, session file and id of `agent`'s generated session of `mb` MB."""
    e = OTHER_AGENTS[agent]
    sid = e["id"](e["seed"] + mb)
    home = data / "agents" / f"{agent}-{mb}mb"
    return home, e["file"](home, sid), sid


def ensure_other_data(data, agents, sizes):
    for agent in agents:
        for mb in sizes:
            home, f, sid = other_session(data, agent, mb)
            if not f.exists():
                log(f"generating a {mb} MB {agent} session (large)")
                generate(f, OTHER_AGENTS[agent]["gen"], mb << 20, OTHER_AGENTS[agent]["seed"] + mb, sid)


def generate(path, fn, *a):
    """Write to a temporary name and rename: an interrupted run leaves no half file behind."""
    tmp = path.with_name(path.name + ".part")
    fn(tmp, *a)
    tmp.rename(path)


def ensure_data(data, shapes, sizes, store_n):
    for shape in shapes:
        _, cbase, xbase, gc, gx = SHAPES[shape]
        for mb in sizes:
            p = session_paths(data, shape, mb)
            (c_home, c, cid), (x_home, x, xid) = p["claude"], p["codex"]
            if not c.exists():
                log(f"generating a {mb} MB Claude session ({shape})")
                generate(c, gc, mb << 20, cbase + mb)
            if not x.exists():
                log(f"generating a {mb} MB Codex session ({shape})")
                generate(x, gx, mb << 20, xbase + mb, xid)
    store = data / f"store-{store_n}"
    stamp = store / ".complete"
    if store_n and not stamp.exists():
        log(f"generating a store of {store_n} sessions (about {store_n * 0.37 / 1024:.1f} GB)")
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
    return store


def messages_in(path, agent):
    """Messages as a reader counts them: Claude user/assistant lines, Codex response items."""
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if agent == "claude":
                n += line.startswith(b'{"parentUuid"') and (b'"type":"user"' in line or b'"type":"assistant"' in line)
            else:
                n += b'"type":"response_item"' in line[:80]
    return n


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------

def log(msg):
    print(msg, file=sys.stderr, flush=True)


# A command whose first measured run takes longer than this is not run again, to keep the
# default run short (walls_s in the JSON lists the runs each figure is the median of).
SLOW_S = 20


def measure(cmd, env, runs, prepare=None, cwd=None):
    """Median wall seconds, median CPU seconds (user + system, which a busy machine does not
    inflate), and the highest peak RSS (MB) of runs, after one warm-up run.

    prepare() runs before each run, outside the timing (e.g. to empty a scratch target home).
    Returns a dict; on failure it holds "error" with the last lines of stderr."""
    walls, cpus, rss = [], [], []
    stdout = ""
    t = tempfile.NamedTemporaryFile(delete=False)
    t.close()
    try:
        i = 0
        while i <= runs:
            if prepare:
                prepare()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name] + [str(c) for c in cmd], env=env, cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU of the command and its threads (and of /usr/bin/time, ~1 ms), finer than %U %S.
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            lines = open(t.name).read().strip().splitlines()
            kb = int(lines[-1]) if lines and lines[-1].isdigit() else 0
            if p.returncode != 0:
                err = p.stderr.decode(errors="replace").strip().splitlines() or p.stdout.decode(errors="replace").strip().splitlines()
                return {"error": " ".join(err[-3:])[:300] or f"exit {p.returncode}", "exit": p.returncode}
            if i > 0:
                walls.append(wall)
                cpus.append(cpu)
                rss.append(kb / 1024)
                if i == 1 and wall > SLOW_S:
                    runs = 1
            stdout = p.stdout
            i += 1
    finally:
        os.unlink(t.name)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "walls_s": [round(w, 4) for w in walls],
            "peak_rss_mb": max(rss), "stdout": stdout}


def peers():
    """Peer binaries that are installed."""
    out = {}
    casr = PEERS / "bin" / "casr"
    if casr.exists():
        out["casr"] = casr
    ts_bin = PEERS / "bin" / "transession"
    if ts_bin.exists():
        out["transession"] = ts_bin
    hc = PEERS / "venv" / "bin" / "hc"
    if hc.exists():
        out["harness-convert"] = hc
    return out


def peer_version(name, binpath):
    try:
        if name == "harness-convert":
            p = subprocess.run([str(PEERS / "venv" / "bin" / "python"), "-c",
                                "import importlib.metadata as m; print(m.version('harness-convert'))"], capture_output=True, text=True)
        else:
            p = subprocess.run([str(binpath), "--version"], capture_output=True, text=True)
        first = (p.stdout.strip().splitlines() or ["?"])[0].split()
        return first[1] if len(first) > 1 else first[0]
    except OSError:
        return "?"


def fresh(path, sub=None):
    shutil.rmtree(path, ignore_errors=True)
    (path / sub if sub else path).mkdir(parents=True, exist_ok=True)


def written(home):
    """The session files in a scratch home after a run: [(path, lines, bytes)]."""
    out = []
    # A relay into OpenCode writes its document (`session-relay/<id>.json`) beside the rows.
    for p in sorted([*home.rglob("*.jsonl"), *home.glob("session-relay/*.json")]):
        if p.name == "session_index.jsonl":
            continue
        with open(p, "rb") as f:
            n = sum(1 for _ in f)
        out.append((p, n, p.stat().st_size))
    return out


def wrote_record(out, home, env):
    """What a run wrote, each file read back by `session-relay show FILE`: a session the target
    agent's reader takes, with this many messages."""
    rec = []
    for p, n, b in out:
        r = {"path": str(p.relative_to(home)), "lines": n, "bytes": b}
        q = subprocess.run([str(BIN), "show", str(p), "--json"], env=env, capture_output=True, text=True)
        try:
            r["read_back_messages"] = json.loads(q.stdout)["messages"]
        except (ValueError, KeyError):
            r["read_back_error"] = (q.stderr.strip().splitlines() or ["unreadable"])[-1][:200]
        rec.append(r)
    return rec


AGENT_SUB = {"claude": "projects", "codex": "sessions"}
CASR_ALIAS = {"claude": "cc", "codex": "cod"}


def peer_job(name, binpath, src, dst, src_home, src_file, sid, scratch, workdir, base_env):
    """The peer's own command for relaying one session, its environment, and the scratch target
    home to empty before each run and look in afterwards."""
    tgt = scratch / "target"
    home = scratch / "home"
    if name == "casr":
        # casr finds homes through CLAUDE_HOME / CODEX_HOME and probes other agents under HOME:
        # all of them point into the scratch folder.
        env = dict(base_env, HOME=str(home), CLAUDE_HOME=str(src_home if src == "claude" else tgt),
                   CODEX_HOME=str(src_home if src == "codex" else tgt))
        env.pop("CLAUDE_CONFIG_DIR", None)
        cmd = [binpath, "resume", CASR_ALIAS[dst], sid, "--source", CASR_ALIAS[src], "--workspace", workdir, "--json"]
        return cmd, env, tgt
    if name == "transession":
        out = tgt / AGENT_SUB[dst] / "out.jsonl"
        return [binpath, "convert", "--from", src, "--to", dst, "--new-session-id", src_file, out], base_env, tgt
    # harness-convert reads and writes the stores under $HOME.
    env = dict(base_env, HOME=str(home), HC_NO_INTERACTIVE="1")
    env.pop("CLAUDE_CONFIG_DIR", None)
    env.pop("CODEX_HOME", None)
    return [binpath, "convert", "--from", src, "--to", dst, "--cwd", "/home/dev/projects/bench",
            "--dest-cwd", workdir, "--no-interactive", "-y", sid], env, tgt


def prepare_peer_home(name, src, dst, src_home, scratch):
    tgt = scratch / "target"
    home = scratch / "home"
    fresh(tgt, AGENT_SUB[dst])
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    if name == "harness-convert":
        (home / ".claude" if src == "claude" else home / ".codex").symlink_to(src_home)
        (home / (".claude" if dst == "claude" else ".codex")).symlink_to(tgt)


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,100,300", help="session sizes in MB (those above 100: relay only)")
    ap.add_argument("--shapes", default="large,many", help="session shapes: large, many")
    ap.add_argument("--store", type=int, default=5000, help="sessions in the store for list --all (0: skip)")
    ap.add_argument("--runs", type=int, default=3, help="warm runs per measurement (after one warm-up)")
    ap.add_argument("--data", default=str(ROOT / "target" / "bench-data"))
    ap.add_argument("--json-out", default=str(ROOT / "target" / "bench-results.json"))
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--agents", default=",".join(OTHER_AGENTS),
                    help="other agents to relay into and out of (OTHER_AGENTS; empty: none)")
    ap.add_argument("--agent-sizes", default="100", help="sizes in MB of the other agents' relays")
    ap.add_argument("--agents-only", action="store_true",
                    help="only the other agents' relays (no list, show or Claude/Codex relays)")
    ap.add_argument("--peers-help", action="store_true")
    args = ap.parse_args()
    if args.peers_help:
        print(PEERS_HELP)
        return
    sizes = sorted({int(s) for s in args.sizes.split(",") if s})
    shapes = [s for s in args.shapes.split(",") if s]
    agents = [a for a in args.agents.split(",") if a]
    agent_sizes = sorted({int(s) for s in args.agent_sizes.split(",") if s}) if agents else []
    for a in agents:
        if a not in OTHER_AGENTS:
            sys.exit(f"unknown agent {a!r} (known: {', '.join(OTHER_AGENTS)})")
    if args.agents_only:
        sizes, shapes, args.store = [], [], 0
    for s in shapes:
        if s not in SHAPES:
            sys.exit(f"unknown shape {s!r} (known: {', '.join(SHAPES)})")
    data = Path(args.data)
    t0 = time.time()
    load0 = os.getloadavg()
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    store = ensure_data(data, shapes, sizes, args.store)
    # The other agents' relays start from (and end in) Claude sessions of shape "large".
    ensure_data(data, ["large"], agent_sizes, 0)
    ensure_other_data(data, agents, agent_sizes)
    t_data = time.time() - t0
    log(f"data ready ({t_data:.0f} s)")

    peer_bins = {} if args.no_peers else peers()
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    version = subprocess.run([str(BIN), "--version"], capture_output=True, text=True).stdout.strip()
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "session_relay": version, "commit": rev, "runs": args.runs, "sizes": sizes, "shapes": shapes,
        "cores": os.cpu_count(), "peers": {n: peer_version(n, b) for n, b in peer_bins.items()},
        "sessions": [], "relay": [], "show": [], "list": [], "fit": [], "agents": agents,
        "agent_sizes": agent_sizes, "other_sessions": [], "other_relay": [],
    }
    for shape in shapes:
        for mb in sizes:
            for agent, (home, f, sid) in session_paths(data, shape, mb).items():
                results["sessions"].append({"shape": shape, "agent": agent, "mb": mb, "bytes": f.stat().st_size,
                                            "messages": messages_in(f, agent), "id": sid})

    work = Path(tempfile.mkdtemp(prefix="bench-"))
    workdir = work / "project"
    workdir.mkdir()
    state = work / "state"
    base_env = dict(os.environ, NO_COLOR="1", SESSION_RELAY_STATE_DIR=str(state))
    # No peer or relay may see the user's own homes.
    for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLAUDE_HOME"):
        base_env.pop(k, None)

    def show_row(kind, label, shape, mb, r, **extra):
        size = f"{mb} MB" if mb else ""
        if "error" in r:
            print(f"{label:<46} {shape:<6} {size:>7} {'-':>8} {'-':>8} {'-':>8}  failed: {r['error'][:90]}", flush=True)
        else:
            note = extra.get("note", "")
            print(f"{label:<46} {shape:<6} {size:>7} {r['wall_s']:>8.3f} {r['cpu_s']:>8.2f} {r['peak_rss_mb']:>8.1f}  {note}", flush=True)

    print(f"{'operation':<46} {'shape':<6} {'size':>7} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  note")

    # list --all over the store: cold (no summary cache) and warm.
    if args.store:
        gb = sum(f.stat().st_size for f in store.rglob("*.jsonl")) / (1 << 30)
        results["store"] = {"sessions": args.store, "gb": round(gb, 2)}
        env = dict(base_env, CLAUDE_CONFIG_DIR=str(store / "claude"), CODEX_HOME=str(store / "codex"),
                   SESSION_RELAY_STATE_DIR=str(work / "list-state"))
        cmd = [BIN, "list", "--all", "--json"]
        for temp in ("cold", "warm"):
            prep = (lambda: shutil.rmtree(work / "list-state", ignore_errors=True)) if temp == "cold" else None
            r = measure(cmd, env, args.runs, prepare=prep)
            if "stdout" in r:
                r["listed"] = len(json.loads(r.pop("stdout"))["sessions"])
            results["list"].append({"tool": "session-relay", "cache": temp, **r})
            show_row("list", f"list --all ({args.store} sessions, {gb:.1f} GB) {temp}", "", None, r,
                     note=f"listed {r.get('listed', '?')}")
        if "casr" in peer_bins:
            env = dict(base_env, HOME=str(work / "casr-home"), CLAUDE_HOME=str(store / "claude"), CODEX_HOME=str(store / "codex"))
            (work / "casr-home").mkdir(exist_ok=True)
            r = measure([peer_bins["casr"], "list", "--all", "--limit", "0", "--json"], env, args.runs, cwd=workdir)
            if "stdout" in r:
                r["listed"] = casr_listed(r.pop("stdout"))
            results["list"].append({"tool": "casr", "cache": "none", **r})
            show_row("list", "  peer casr list --all --limit 0", "", None, r, note=f"listed {r.get('listed', '?')}")

    for shape in shapes:
        for mb in sizes:
            paths = session_paths(data, shape, mb)
            # show (and its peer job, casr info) of each agent's session.
            if mb <= PEER_MAX_MB:
                for agent, (home, f, sid) in paths.items():
                    env = dict(base_env, **{"CLAUDE_CONFIG_DIR" if agent == "claude" else "CODEX_HOME": str(home)})
                    r = measure([BIN, "show", sid], env, args.runs)
                    r.pop("stdout", None)
                    results["show"].append({"tool": "session-relay", "shape": shape, "agent": agent, "mb": mb, **r})
                    show_row("show", f"show {agent}", shape, mb, r)
                    if "casr" in peer_bins:
                        henv = dict(base_env, HOME=str(work / "casr-home"), **{"CLAUDE_HOME" if agent == "claude" else "CODEX_HOME": str(home)})
                        (work / "casr-home").mkdir(exist_ok=True)
                        r = measure([peer_bins["casr"], "info", sid, "--source", CASR_ALIAS[agent], "--json"], henv, args.runs)
                        r.pop("stdout", None)
                        results["show"].append({"tool": "casr", "shape": shape, "agent": agent, "mb": mb, **r})
                        show_row("show", f"  peer casr info {agent}", shape, mb, r)
            for src, dst in (("claude", "codex"), ("codex", "claude")):
                src_home, src_file, sid = paths[src]
                tgt = work / f"relay-{shape}-{mb}-{dst}"
                env = dict(base_env, **{"CLAUDE_CONFIG_DIR": str(src_home if src == "claude" else tgt),
                                        "CODEX_HOME": str(src_home if src == "codex" else tgt)})
                relay = [BIN, "relay", sid, "--to", dst, "--cwd", workdir]
                if mb >= PEER_MAX_MB:
                    fresh(tgt, AGENT_SUB[dst])
                    p = subprocess.run(relay + ["--dry-run", "--json"], env=env, capture_output=True, text=True)
                    fit = fit_of(p.stdout) if p.returncode == 0 else {"error": p.stderr.strip()[-300:]}
                    results["fit"].append({"shape": shape, "src": src, "dst": dst, "mb": mb, **fit})
                # Each run from an empty ledger, as each peer run from an empty home: a ledger
                # that grew by one relay a run made later runs slower than earlier ones.
                r = measure(relay + ["--force"], env, args.runs,
                            prepare=lambda t=tgt, d=dst: (fresh(t, AGENT_SUB[d]), shutil.rmtree(state, ignore_errors=True)))
                r.pop("stdout", None)
                out = written(tgt)
                r["wrote"] = wrote_record(out, tgt, base_env)
                results["relay"].append({"tool": "session-relay", "shape": shape, "src": src, "dst": dst, "mb": mb, **r})
                show_row("relay", f"relay {src}->{dst}", shape, mb, r, note=wrote_note(r))
                if mb > PEER_MAX_MB:
                    continue
                for name, binpath in peer_bins.items():
                    scratch = work / f"peer-{name}-{shape}-{mb}-{dst}"
                    cmd, penv, ptgt = peer_job(name, binpath, src, dst, src_home, src_file, sid, scratch, workdir, env)
                    r = measure(cmd, penv, args.runs, cwd=workdir,
                                prepare=lambda n=name, s=scratch, h=src_home, a=src, b=dst: prepare_peer_home(n, a, b, h, s))
                    stdout = r.pop("stdout", b"")
                    out = written(ptgt)
                    if "error" not in r:
                        r["wrote"] = wrote_record(out, ptgt, base_env)
                        if name == "casr":
                            r["reported"] = casr_report(stdout)
                        if not out:
                            r["error"] = "exit 0 but no session file in the target home"
                    results["relay"].append({"tool": name, "shape": shape, "src": src, "dst": dst, "mb": mb, **r})
                    show_row("relay", f"  peer {name} {src}->{dst}", shape, mb, r, note=wrote_note(r))
                    shutil.rmtree(scratch, ignore_errors=True)
                shutil.rmtree(tgt, ignore_errors=True)

    bench_other_agents(data, agents, agent_sizes, args.runs, peer_bins, work, base_env, results, show_row)
    shutil.rmtree(work, ignore_errors=True)
    results["load_average_start"] = [round(x, 2) for x in load0]
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    results["data_seconds"] = round(t_data, 1)
    results["total_seconds"] = round(time.time() - t0, 1)
    md = markdown(results)
    print()
    print(md)
    out = Path(args.json_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(md + "\n")
    log(f"wrote {out} and {out.with_suffix('.md')}; took {results['total_seconds'] / 60:.1f} min "
        f"(data {t_data / 60:.1f} min); load average {load0[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")


def agent_homes(base_env, empty, **homes):
    """base_env with every agent's home variable set: to the homes given, else to `empty`."""
    env = dict(base_env, HOME=str(empty))
    for agent, var in HOME_ENVS.items():
        env[var] = str(homes.get(agent, empty))
    return env


def bench_other_agents(data, agents, sizes, runs, peer_bins, work, base_env, results, show_row):
    """Relays into each of `agents` from the Claude session of shape "large", and out of it into
    Claude Code, of each size: the same measurements as the Claude/Codex relays. casr runs
    beside them for the agents it reads (OTHER_AGENTS' `casr`)."""
    empty = work / "empty-home"
    empty.mkdir(exist_ok=True)
    workdir = work / "project"
    state = Path(base_env["SESSION_RELAY_STATE_DIR"])
    for agent in agents:
        e = OTHER_AGENTS[agent]
        for mb in sizes:
            home, f, sid = other_session(data, agent, mb)
            # A session that is no file of its own (OpenCode's rows) is shown by its id.
            q = subprocess.run([str(BIN), "show", sid if "init" in e else str(f), "--json"],
                               env=agent_homes(base_env, empty, **{agent: home}), capture_output=True, text=True)
            messages = json.loads(q.stdout)["messages"] if q.returncode == 0 else None
            results["other_sessions"].append({"agent": agent, "mb": mb, "bytes": f.stat().st_size, "messages": messages, "id": sid})
            c_home, _, cid = session_paths(data, "large", mb)["claude"]
            x_home, _, xid = session_paths(data, "large", mb)["codex"]
            starts = {"claude": (c_home, cid), "codex": (x_home, xid), agent: (home, sid)}
            directions = [("claude", agent)] + [(agent, dst) for dst in e.get("out", ("claude",))]
            for src, dst in directions:
                src_home, src_id = starts[src]
                tgt = work / f"other-{src}-{dst}-{mb}"
                init = OTHER_AGENTS[dst].get("init") if dst in OTHER_AGENTS else None

                def prepare(t=tgt, init=init):
                    fresh(t)
                    shutil.rmtree(state, ignore_errors=True)
                    if init:
                        init(t)

                env = agent_homes(base_env, empty, **{src: src_home, dst: tgt})
                relay = [BIN, "relay", src_id, "--to", dst, "--cwd", workdir, "--force"]
                r = measure(relay, env, runs, prepare=prepare)
                r.pop("stdout", None)
                r["wrote"] = wrote_record(written(tgt), tgt, agent_homes(base_env, empty))
                results["other_relay"].append({"tool": "session-relay", "src": src, "dst": dst, "mb": mb, **r})
                show_row("relay", f"relay {src}->{dst}", "large", mb, r, note=wrote_note(r))
                shutil.rmtree(tgt, ignore_errors=True)
                alias = e["casr"]
                if alias and "casr" in peer_bins:
                    r = casr_other(peer_bins["casr"], src, dst, src_home, src_id, alias, work / f"casr-{src}-{dst}-{mb}",
                                   workdir, base_env, runs, prepare)
                    results["other_relay"].append({"tool": "casr", "src": src, "dst": dst, "mb": mb, **r})
                    show_row("relay", f"  casr {src}->{dst}", "large", mb, r, note=wrote_note(r) if "wrote" in r else "")


def casr_other(casr, src, dst, src_home, src_id, alias, scratch, workdir, base_env, runs, prepare):
    """`casr resume` between an agent it reads (`alias`) and Claude Code or Codex: every home it
    looks in (CLAUDE_HOME, CODEX_HOME, OPENCODE_HOME, and HOME for the rest) in the scratch
    folder, the target's emptied (and initialised) before each run."""
    tgt, home = scratch / "target", scratch / "home"
    aliases = dict(CASR_ALIAS, **{a: e["casr"] for a, e in OTHER_AGENTS.items() if e["casr"]})
    homes = {"claude": "CLAUDE_HOME", "codex": "CODEX_HOME", "opencode": "OPENCODE_HOME"}
    env = dict(base_env, HOME=str(home))
    env.pop("CLAUDE_CONFIG_DIR", None)
    for agent, var in homes.items():
        env[var] = str(src_home if agent == src else tgt if agent == dst else home / agent)
    cmd = [casr, "resume", aliases[dst], src_id, "--source", aliases[src], "--workspace", workdir, "--json"]
    r = measure(cmd, env, runs, prepare=lambda: (prepare(tgt), home.mkdir(parents=True, exist_ok=True)))
    if "error" not in r:
        r["casr"] = casr_report(r.pop("stdout", ""))
        r["wrote"] = wrote_record(written(tgt), tgt, base_env)
    shutil.rmtree(scratch, ignore_errors=True)
    return r


def fit_of(stdout):
    try:
        d = json.loads(stdout)
    except ValueError:
        return {"error": "no JSON on stdout"}
    fit = find_key(d, "fit")
    if not isinstance(fit, dict):
        return {"error": "no fit in the JSON"}
    keep = {k: fit.get(k) for k in ("brief_tokens", "total_tokens", "budget", "tokenizer") if k in fit}
    if fit.get("budget"):
        keep["share"] = fit["total_tokens"] / fit["budget"]
        # What the relay kept whole or shortened, in budgets of the source's (estimated) tokens:
        # the newest turns, and the first request with any context before it (always kept). A
        # reader needs these as messages; the rest only as the summary's and the brief's facts.
        kept = [fit.get(k) or {} for k in ("verbatim", "shortened")]
        keep["reach"] = sum(k.get("source_tokens", 0) for k in kept) / fit["budget"]
        keep["turns_kept"] = sum(k.get("turns", 0) for k in kept)
        keep["turns"] = (fit.get("source") or {}).get("turns", 0)
    return keep


def find_key(d, key):
    if isinstance(d, dict):
        if key in d:
            return d[key]
        for v in d.values():
            r = find_key(v, key)
            if r is not None:
                return r
    return None


def casr_listed(stdout):
    try:
        d = json.loads(stdout)
    except ValueError:
        return None
    if isinstance(d, list):
        return len(d)
    for k in ("sessions", "items", "results"):
        if isinstance(d.get(k), list):
            return len(d[k])
    return None


def casr_report(stdout):
    try:
        d = json.loads(stdout)
    except ValueError:
        return None
    keep = {}
    for k in ("target_session_id", "target_path", "messages", "message_count", "source_messages", "written_messages",
              "warnings", "ok"):
        v = find_key(d, k)
        if v is not None:
            keep[k] = v if not isinstance(v, list) else v[:5]
    return keep


def wrote_note(r):
    out = r.get("wrote")
    if not out:
        return ""
    return "wrote " + ", ".join(f"{w['lines']:,} lines / {w['bytes'] / 1e6:.2f} MB, read back: "
                                + (f"{w['read_back_messages']:,} messages" if "read_back_messages" in w else w.get("read_back_error", "?"))
                                for w in out[:2])


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------

def fmt_s(r):
    if r is None:
        return ""
    if "error" in r:
        return "failed"
    w, c = r["wall_s"], r["cpu_s"]
    return (f"{w:.3f} s" if w < 0.1 else f"{w:.2f} s") + f" ({c:.2f})"


def fmt_mb(r):
    if r is None or "error" in r:
        return ""
    return f"{r['peak_rss_mb']:.0f} MB"


def ratio(a, b, key):
    if not a or not b or "error" in a or "error" in b or not b[key]:
        return ""
    return f"{a[key] / b[key]:.2f}x"


def time_ratio(a, b):
    """Wall-time ratio, CPU-time ratio in brackets."""
    w = ratio(a, b, "wall_s")
    return f"{w} ({ratio(a, b, 'cpu_s')})" if w else ""


def other_agents_markdown(res):
    """The table of the relays into and out of the other agents."""
    if not res.get("other_relay"):
        return []
    casr = res["peers"].get("casr")
    readers = [a for a in res["agents"] if OTHER_AGENTS[a]["casr"]]
    L = ["Relays into and out of the other agents (from and into the Claude session of shape large; "
         + (f"casr {casr} reads {', '.join(readers) or 'none of them'}" if casr else "casr not installed") + "):", ""]
    sess = {(s["agent"], s["mb"]): s for s in res["other_sessions"]}
    L.append("Generated sessions: " + "; ".join(
        f"{a} {mb} MB: {sess[(a, mb)]['messages']:,} messages" for a in res["agents"] for mb in res["agent_sizes"]
        if sess.get((a, mb), {}).get("messages") is not None) + " (as session-relay reads them).")
    L.append("")
    L.append("| relay | size | tool | wall (CPU) | peak RSS | wrote | messages read back |")
    L.append("| --- | --- | --- | --- | --- | --- | --- |")
    for r in res["other_relay"]:
        w = (r.get("wrote") or [{}])[0]
        wrote = f"{w['lines']:,} lines, {w['bytes'] / 1e6:.2f} MB" if "lines" in w else ""
        back = f"{w['read_back_messages']:,}" if "read_back_messages" in w else w.get("read_back_error", "")[:60]
        L.append(f"| {r['src']} → {r['dst']} | {r['mb']} MB | {r['tool']} | {fmt_s(r)} | {fmt_mb(r)} | {wrote} | {back} |")
    L.append("")
    return L


def markdown(res):
    sizes = res["sizes"]
    peer_sizes = [s for s in sizes if s <= PEER_MAX_MB]
    big = [s for s in sizes if s > PEER_MAX_MB]
    tools = ["session-relay"] + [t for t in ("casr", "transession", "harness-convert") if t in res["peers"]]
    rel = {(r["tool"], r["shape"], r["src"], r["mb"]): r for r in res["relay"]}
    arrow = {"claude": "claude → codex", "codex": "codex → claude"}
    L = []
    peers = ", ".join(f"{n} {v}" for n, v in res["peers"].items()) or "none"
    L.append(f"Figures of {res['date']} ({res['session_relay']}, {res['commit']}; {res['cores']} cores; "
             f"median of {res['runs']} warm runs; peers: {peers}). Times are wall seconds with CPU seconds "
             f"(user + system) in brackets; peak RSS is the highest of the runs. Ratios are session-relay / peer: "
             f"below 1, session-relay is faster or smaller.")
    L.append("")
    if not sizes:
        return "\n".join(L + other_agents_markdown(res) + [run_line(res)])
    sess = {(s["shape"], s["agent"], s["mb"]): s for s in res["sessions"]}
    L.append("Messages per session (Claude: user/assistant lines; Codex: response items): " + "; ".join(
        f"{shape} {agent} " + ", ".join(f"{sess[(shape, agent, mb)]['messages']:,} in {mb} MB" for mb in sizes if (shape, agent, mb) in sess)
        for shape in res["shapes"] for agent in ("claude", "codex")) + ".")
    L.append("")
    head = ["shape", "relay", "tool"] + [f"{mb} MB" for mb in sizes] + ["peak RSS at 100 MB"]
    if big:
        head += [f"peak RSS at {big[-1]} MB", f"RSS {big[-1]} / 100 MB"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + " --- |" * len(head))
    for shape in res["shapes"]:
        for src in ("claude", "codex"):
            for tool in tools:
                cells = [rel.get((tool, shape, src, mb)) for mb in sizes]
                if not any(cells):
                    continue
                row = [shape, arrow[src], tool] + [fmt_s(c) for c in cells] + [fmt_mb(rel.get((tool, shape, src, 100)))]
                if big:
                    r300 = rel.get((tool, shape, src, big[-1]))
                    row += [fmt_mb(r300), ratio(r300, rel.get((tool, shape, src, 100)), "peak_rss_mb")]
                L.append("| " + " | ".join(row) + " |")
    L.append("")
    if len(tools) > 1:
        L.append("session-relay / peer, wall time (CPU time):")
        L.append("")
        head = ["shape", "relay", "peer"] + [f"time {mb} MB" for mb in peer_sizes] + ["peak RSS 100 MB"]
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + " --- |" * len(head))
        for shape in res["shapes"]:
            for src in ("claude", "codex"):
                for tool in tools[1:]:
                    row = [shape, arrow[src], tool]
                    row += [time_ratio(rel.get(("session-relay", shape, src, mb)), rel.get((tool, shape, src, mb))) or
                            ("peer failed" if "error" in (rel.get((tool, shape, src, mb)) or {}) else "") for mb in peer_sizes]
                    row.append(ratio(rel.get(("session-relay", shape, src, 100)), rel.get((tool, shape, src, 100)), "peak_rss_mb"))
                    L.append("| " + " | ".join(row) + " |")
        L.append("")
    shows = {(r["tool"], r["shape"], r["agent"], r["mb"]): r for r in res["show"]}
    if shows:
        L.append("| operation | shape | session-relay | peak RSS | casr | peak RSS | time ratio | RSS ratio |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for shape in res["shapes"]:
            for agent in ("claude", "codex"):
                mb = 100 if (("session-relay", shape, agent, 100) in shows) else max([m for m in peer_sizes] or [0])
                a, b = shows.get(("session-relay", shape, agent, mb)), shows.get(("casr", shape, agent, mb))
                L.append(f"| show {agent} {mb} MB (casr info) | {shape} | {fmt_s(a)} | {fmt_mb(a)} | {fmt_s(b) if b else ''} | "
                         f"{fmt_mb(b)} | {time_ratio(a, b)} | {ratio(a, b, 'peak_rss_mb')} |")
        lists = {(r["tool"], r["cache"]): r for r in res["list"]}
        if lists:
            st = res.get("store", {})
            c = lists.get(("casr", "none"))
            for cache in ("cold", "warm"):
                a = lists.get(("session-relay", cache))
                L.append(f"| list --all, {st.get('sessions', '?'):,} sessions ({st.get('gb', '?')} GB), {cache} cache (casr list --all) | | "
                         f"{fmt_s(a)} | {fmt_mb(a)} | {fmt_s(c) if c else ''} | {fmt_mb(c)} | {time_ratio(a, c)} | {ratio(a, c, 'peak_rss_mb')} |")
        L.append("")
    if res["fit"]:
        L.append("Brief (relay --dry-run --json):")
        L.append("")
        L.append("| shape | relay | size | brief tokens | total tokens | budget | share of budget | turns kept | kept source |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for f in res["fit"]:
            if "error" in f:
                L.append(f"| {f['shape']} | {arrow[f['src']]} | {f['mb']} MB | failed: {f['error'][:60]} | | | | | |")
                continue
            L.append(f"| {f['shape']} | {arrow[f['src']]} | {f['mb']} MB | {f.get('brief_tokens', 0):,} | {f.get('total_tokens', 0):,} | "
                     f"{f.get('budget', 0):,} | {100 * f.get('share', 0):.0f}% | {f.get('turns_kept', 0):,} of {f.get('turns', 0):,} | "
                     f"{f.get('reach', 0):.1f} budgets |")
        L.append("")
        L.append("Kept source: the source tokens (estimated, outputs at their full size) of the turns kept whole "
                 "or shortened, in budgets; they are the newest turns and the first request with any context "
                 "before it.")
        L.append("")
    wrote = [r for r in res["relay"] if r["mb"] == 100 and r.get("wrote")]
    if wrote:
        L.append("What each wrote for the 100 MB sessions (found in the scratch target home, read back with "
                 "`session-relay show FILE`):")
        L.append("")
        L.append("| shape | relay | tool | lines | MB | messages read back |")
        L.append("| --- | --- | --- | --- | --- | --- |")
        for r in wrote:
            w = r["wrote"][0]
            back = f"{w['read_back_messages']:,}" if "read_back_messages" in w else "unreadable: " + w.get("read_back_error", "")[:60]
            L.append(f"| {r['shape']} | {arrow[r['src']]} | {r['tool']} | {w['lines']:,} | {w['bytes'] / 1e6:.2f} | {back} |")
        L.append("")
    L += other_agents_markdown(res)
    L.append(run_line(res))
    return "\n".join(L)


def run_line(res):
    return (f"Run took {res['total_seconds'] / 60:.1f} min (data generation {res['data_seconds'] / 60:.1f} min); "
            f"load average {res['load_average_start'][0]} at the start, {res['load_average_end'][0]} at the end.")


if __name__ == "__main__":
    main()
