#!/usr/bin/env python3
"""Does the REAL Claude Code CLI load, list and draw a session that session-relay wrote?

usage: check_claude.py [--checks lint,load,list,render] [--expect TEXT]... [-v] [--keep]
                       CONFIG_DIR CWD SESSION_ID

  CONFIG_DIR  the Claude config dir holding projects/ (what CLAUDE_CONFIG_DIR means; ~/.claude)
  CWD         the directory the session belongs to (its real path is used, as Claude does)
  SESSION_ID  the session uuid: the file is projects/<escaped CWD>/<SESSION_ID>.jsonl

Checks (default: all):
  lint    the file against what Claude Code's loader needs (its place and name, one JSON object
          per line, uuid/parentUuid chain from the newest message back to the start, message
          ids, timestamps, entrypoint "cli", no sidechain lines up front, every tool_use
          answered, no unsigned thinking, mtime = last message, ...);
  load    `claude -p --no-session-persistence --resume SID <probe>` against a local mock of the
          Anthropic Messages API: the request Claude sends with the probe must carry the prior
          conversation (its first prompt and its last answer, and each --expect), which proves
          the transcript was loaded and not compacted or cut;
  list    `claude --resume` (the picker) in a private tmux must show the session's title;
  render  `claude --resume SID` in a private tmux must draw the last prompt and the last answer
          (and each --expect).

CONFIG_DIR is never written to: the project folder is copied into a scratch config dir (mtimes
kept) with a .claude.json that skips the onboarding, trust and API-key dialogs. The project's
own .claude/settings are not loaded (--setting-sources user), so its hooks do not run.

Exit status: 0 = every selected check passed, 1 = a check failed (the output says why),
2 = usage or environment error (no claude, no tmux, CWD missing).
Environment: CLAUDE_BIN overrides the binary; REALCLIENTS_HOME is where install.sh put the CLIs.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

# The shared helpers live beside this script; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    EXIT_USAGE, MockAnthropic, Report, Scratch, Tmux, UsageError, cli_version, copy_preserving,
    find_cli, message_texts, read_jsonl, require_tool, screen_snippet, squash, visible_text,
)

CHECKS = ("lint", "load", "list", "render")
CONVERSATION = ("user", "assistant", "system", "attachment")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
# Claude's picker reads only the head of a file to decide whether to show it.
PICKER_HEAD = 64 * 1024
# User text that is not the user's words: tags Claude injects, interruption notes.
NOT_A_PROMPT = re.compile(r"^\s*(<[a-z][\w-]*[\s>]|\[Request interrupted by user)")
# A placeholder key: the mock accepts anything, the CLI only needs one that looks real.
API_KEY = "sk-ant-api03-session-relay-check-" + "0" * 40


def project_dir_name(path):
    """Claude Code's folder name for a project: every UTF-16 unit that is not an ASCII letter or
    digit becomes '-'; names over 200 characters are cut and get a hash of the path appended."""
    data = path.encode("utf-16-le")
    units = [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]
    name = "".join(chr(u) if chr(u).isascii() and chr(u).isalnum() else "-" for u in units)
    if len(name) <= 200:
        return name
    h = 0
    for u in units:  # Java's String.hashCode, as a signed 32-bit int
        h = (h * 31 + u) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h & 0x80000000 else h)
    digits, b36 = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while True:
        b36, h = digits[h % 36] + b36, h // 36
        if not h:
            break
    return f"{name[:200]}-{b36}"


def texts(content):
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
            and isinstance(b.get("text"), str)]


def is_prompt(rec):
    """A user line holding the user's own words (what the TUI draws after '>')."""
    if rec.get("type") != "user" or rec.get("isMeta") or rec.get("isCompactSummary"):
        return False
    content = (rec.get("message") or {}).get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    return any(t.strip() and not NOT_A_PROMPT.match(t) for t in texts(content))


def parse_ts(ts):
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=None)


# --------------------------------------------------------------------------- lint


class Session:
    """What the lint learned about the file, for the later checks."""

    def __init__(self):
        self.first_prompt = self.last_prompt = self.last_answer = ""
        self.prompts = []
        self.title = ""
        self.chain_len = 0


def lint(path, sid, cwd, report):
    check = "lint"
    s = Session()
    raw = path.read_bytes()
    if not raw.endswith(b"\n"):
        report.fail(check, "the file does not end with a newline: the next line Claude appends "
                           "would be glued to the last one")
    records = []
    for n, obj, err in read_jsonl(path):
        if err:
            report.fail(check, f"line {n} is not JSON ({err})")
        elif not isinstance(obj, dict):
            report.fail(check, f"line {n} is not a JSON object")
        else:
            records.append((n, obj))
    head = raw[:PICKER_HEAD].decode("utf-8", "replace")
    if re.search(r'"isSidechain":\s*true', head):
        report.fail(check, '"isSidechain":true in the first 64 KiB: the /resume picker hides the session')
    ep = re.search(r'"entrypoint":\s*"([^"]*)"', head)
    if ep and ep.group(1) != "cli":
        report.fail(check, f'the first entrypoint is {ep.group(1)!r}, not "cli": the interactive '
                           "picker hides the session")

    by_uuid, order, other_cwd = {}, [], []
    for n, r in records:
        if r.get("type") not in CONVERSATION:
            if r.get("type") == "custom-title" and isinstance(r.get("customTitle"), str):
                s.title = r["customTitle"]
            continue
        u = r.get("uuid")
        if not isinstance(u, str) or not u:
            report.fail(check, f"line {n}: a {r.get('type')} line without a uuid")
            continue
        if u in by_uuid:
            report.fail(check, f"line {n}: uuid {u} already used on line {by_uuid[u][0]}")
            continue
        by_uuid[u] = (n, r)
        order.append(u)
        ts = r.get("timestamp")
        if not isinstance(ts, str) or not TIMESTAMP.match(ts):
            report.fail(check, f"line {n}: timestamp {ts!r} is not YYYY-MM-DDTHH:MM:SS.sssZ "
                               "(Claude compares them as strings; a bad one hides the session)")
        if r.get("sessionId") != sid:
            report.fail(check, f"line {n}: sessionId {r.get('sessionId')!r} is not the file's id")
        if r.get("cwd") != cwd:
            other_cwd.append(n)
        if r.get("isSidechain") is not False and r.get("type") in ("user", "assistant"):
            report.fail(check, f"line {n}: isSidechain must be false on a main-chain line")
        if r.get("type") in ("user", "assistant"):
            m = r.get("message")
            if not isinstance(m, dict):
                report.fail(check, f"line {n}: {r['type']} line without a message object")
                continue
            if r["type"] == "assistant":
                if not isinstance(m.get("content"), list):
                    report.fail(check, f"line {n}: assistant content must be a list of blocks "
                                       "(a string crashes the resume view)")
                if not m.get("id"):
                    report.fail(check, f"line {n}: assistant message.id missing (Claude merges lines "
                                       "by it and reorders the ones without)")
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if not isinstance(b, dict):
                    report.fail(check, f"line {n}: a content block that is not an object")
                elif b.get("type") == "thinking" and not b.get("signature"):
                    report.fail(check, f"line {n}: thinking block without a signature: the API "
                                       "rejects it and Claude retries without any thinking")
                elif b.get("type") == "tool_use" and not isinstance(b.get("input"), dict):
                    report.fail(check, f"line {n}: tool_use input must be an object")

    if other_cwd:
        report.warn(f"{len(other_cwd)} line(s) carry another cwd than {cwd} (first: line {other_cwd[0]})")

    # The conversation Claude loads: from the newest user/assistant line (by timestamp; the
    # file order breaks ties) back along parentUuid to a line whose parent is null.
    candidates = [u for u in order if by_uuid[u][1].get("type") in ("user", "assistant")
                  and not by_uuid[u][1].get("isSidechain")]
    if not candidates:
        report.fail(check, "no user or assistant line: nothing to resume")
        return s
    leaf = max(candidates, key=lambda u: (str(by_uuid[u][1].get("timestamp")), order.index(u)))
    if leaf != candidates[-1]:
        report.fail(check, f"the newest message (line {by_uuid[leaf][0]}) is not the last one in the "
                           f"file (line {by_uuid[candidates[-1]][0]}): Claude resumes from the newest "
                           "and drops what follows")
    chain, seen, cur, broken = [], set(), leaf, False
    while cur is not None:
        if cur in seen:
            report.fail(check, f"parentUuid loop at line {by_uuid[cur][0]}")
            break
        seen.add(cur)
        chain.append(cur)
        parent = by_uuid[cur][1].get("parentUuid")
        if parent is not None and parent not in by_uuid:
            # (2.1.332 was seen to bridge such a gap by file order; the format asks for a real
            # chain, and a loader that follows parentUuid loses everything before the gap.)
            report.fail(check, f"line {by_uuid[cur][0]}: parentUuid {parent} is not in the file: the "
                               "uuid/parentUuid chain is broken here")
            broken = True
            break
        cur = parent
    chain.reverse()
    on_chain = [u for u in chain if by_uuid[u][1].get("type") in ("user", "assistant")]
    s.chain_len = len(on_chain)
    # Lines off the chain are not loaded. Only those before a compaction boundary that starts
    # the chain are meant to be left behind; a written session has no other reason for them.
    start = by_uuid[chain[0]][1] if chain else {}
    after = order.index(chain[0]) if chain and start.get("subtype") == "compact_boundary" else 0
    off = [u for u in candidates if u not in seen and order.index(u) >= after]
    if off and not broken:
        report.fail(check, f"{len(off)} of {len(candidates)} user/assistant lines are not on the chain "
                           f"Claude resumes (first: line {by_uuid[off[0]][0]}): they are not loaded")

    # Tool calls: the API rejects a tool_result without its tool_use; Claude drops a tool_use
    # without a result. Both are checked along the chain, the way the request is built.
    uses, answered = {}, set()
    for u in chain:
        n, r = by_uuid[u]
        content = (r.get("message") or {}).get("content")
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                uses[b.get("id")] = n
            elif isinstance(b, dict) and b.get("type") == "tool_result":
                if b.get("tool_use_id") not in uses:
                    report.fail(check, f"line {n}: tool_result for {b.get('tool_use_id')} with no tool_use "
                                       "before it: the API rejects the request")
                answered.add(b.get("tool_use_id"))
    unanswered = [i for i in uses if i not in answered]
    if unanswered:
        report.fail(check, f"{len(unanswered)} tool_use block(s) without a tool_result (first: "
                           f"{unanswered[0]} on line {uses[unanswered[0]]}): Claude drops them")

    # Assistant lines of one API message share message.id and must follow each other, or the
    # loader's merge reorders the conversation.
    last_id, closed = None, set()
    for u in on_chain:
        r = by_uuid[u][1]
        mid = (r.get("message") or {}).get("id") if r["type"] == "assistant" else None
        if mid != last_id and last_id is not None:
            closed.add(last_id)
        if mid is not None and mid in closed:
            report.fail(check, f"line {by_uuid[u][0]}: message.id {mid} was used by an earlier, separate "
                               "assistant message")
        last_id = mid

    # What the later checks look for, in file order: a broken chain then also shows as a
    # missing first prompt in what Claude loads.
    for u in order:
        n, r = by_uuid[u]
        if r.get("isSidechain") or not isinstance(r.get("message"), dict):
            continue
        if is_prompt(r):
            text = next(t for t in texts(r["message"].get("content")) if t.strip() and not NOT_A_PROMPT.match(t))
            s.first_prompt = s.first_prompt or text
            s.last_prompt = text
            s.prompts.append(text)
        elif r["type"] == "assistant":
            for t in texts(r["message"].get("content")):
                if t.strip():
                    s.last_answer = t
    if not s.first_prompt:
        report.fail(check, "no user prompt in the file: there is no conversation to resume")
    if not s.last_answer:
        report.warn("no assistant text in the file")

    # Claude sorts the picker and picks `claude -c` by mtime: a relayed session must carry the
    # time of its last message, not the time of the relay.
    last_ts = by_uuid[leaf][1].get("timestamp")
    if isinstance(last_ts, str) and TIMESTAMP.match(last_ts):
        mtime = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(tzinfo=None)
        drift = abs((mtime - parse_ts(last_ts)).total_seconds())
        if drift > 2:
            report.fail(check, f"the file's mtime ({mtime.isoformat()}Z) is not its last message's time "
                               f"({last_ts}): `claude -c` and the picker order use the mtime")
    report.info(f"{len(records)} lines, {s.chain_len} user/assistant messages on the resumed chain"
                + (f", title {s.title!r}" if s.title else ""))
    if check not in report.failed:
        report.passed(check)
    return s


# --------------------------------------------------------------------------- running claude


class Claude:
    """The real claude with a scratch config dir, a scratch HOME and the mock API."""

    def __init__(self, binary, config_dir, home, api_url, cwd):
        self.binary, self.cwd = binary, cwd
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(config_dir), "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": api_url, "LANG": "C.UTF-8",
            # Offline and quiet: no retries against the mock, no telemetry, no updater.
            "CLAUDE_CODE_MAX_RETRIES": "0", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def argv(self, *args):
        # --setting-sources user: the project's own settings (and hooks) stay out of the check.
        return [self.binary, "--setting-sources", "user", *args]


def write_claude_json(config_dir, cwd):
    """A global config that skips every first-run dialog: onboarding, folder trust, API key."""
    (config_dir / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "projects": {cwd: {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
    }, indent=2))


def contains(haystack, needle, limit=80):
    """Whether the (squashed) start of `needle` is in `haystack` (squashed)."""
    n = squash(needle)[:limit]
    return bool(n) and n in haystack


def check_load(claude, mock, sid, session, expects, timeout, report):
    report.section(f"load: claude -p --no-session-persistence --resume {sid} <probe>")
    probe = f"SESSION_RELAY_PROBE_{uuid.uuid4().hex[:12]}"
    try:
        out = subprocess.run(claude.argv("-p", "--no-session-persistence", "--resume", sid, probe),
                             cwd=claude.cwd, env=claude.env, capture_output=True, text=True,
                             timeout=timeout)
        output, code = (out.stdout + out.stderr).strip(), out.returncode
    except subprocess.TimeoutExpired as e:
        output, code = f"(timed out after {timeout}s) {e.stdout or ''}", None
    report.detail(output)
    if "No conversation found" in output:
        report.fail("load", f"claude: {squash(output)[:200]}")
        return
    requests = mock.message_requests()
    with_probe = [b for b in requests if probe in json.dumps(b)]
    if not with_probe:
        report.fail("load", f"no request with the probe reached the mock (claude exit {code}): "
                            f"{squash(output)[:300]}")
        return
    body = with_probe[-1]
    messages = body.get("messages") or []
    sent = squash(" ".join(message_texts(messages)))
    roles = "".join((m.get("role") or "?")[0] for m in messages)
    size = len(json.dumps(body)) // 1024
    report.info(f"{len(requests)} request(s) to the mock; the probe's carries {len(messages)} "
                f"messages ({roles}), {size} KiB")
    # Claude compacts a transcript that does not fit before it sends the prompt: the probe then
    # follows a summary, and the conversation's own words are gone. Any earlier request that
    # asks for a summary is that compaction.
    compacting = [b for b in requests[:requests.index(body)]
                  if re.search(r"(?i)summar", " ".join(message_texts((b.get("messages") or [])[-1:])))]
    if compacting:
        report.fail("load", "Claude compacted the transcript before sending the probe (the relayed "
                            "session does not fit its context window)")
    # Every prompt of the file and its last answer: a cut or skipped stretch of the chain, or a
    # compaction, loses some of them.
    lost = [p for p in session.prompts if not contains(sent, p)]
    missing = [f"{len(lost)} of {len(session.prompts)} prompts (first: {squash(lost[0])[:60]!r})"] if lost else []
    wanted = [("the last answer", session.last_answer)] + [("--expect", e) for e in expects]
    missing += [f"{what} {squash(text)[:60]!r}" for what, text in wanted if text and not contains(sent, text)]
    if not session.prompts:
        report.fail("load", "the file holds no user prompt to look for in the request")
    elif len(messages) < 3:
        report.fail("load", "only the new prompt was sent: the transcript was NOT loaded")
    elif missing:
        report.fail("load", f"the request lacks {'; '.join(missing)}")
    elif "load" not in report.failed:
        report.passed("load", f"the request carries the prior conversation ({len(session.prompts)} prompts)")


def run_tui(tmux, name, claude, args, done, timeout):
    tmux.start(name, claude.argv(*args), claude.cwd, dict(claude.env, TERM="xterm-256color"))
    try:
        return tmux.wait_for(name, done, timeout)
    finally:
        tmux.kill(name)


# What Claude shows when it cannot resume, or exits. Nothing more generic: the conversation on
# screen may hold any text.
FATAL = re.compile(r"No conversation found|\[check: program exited")


def check_render(tmux, claude, sid, session, expects, timeout, report):
    report.section(f"render: claude --resume {sid} (private tmux)")
    needles = [n for n in (screen_snippet(session.last_prompt), screen_snippet(session.last_answer)) if n]
    needles = list(dict.fromkeys(needles + expects))
    if not needles:
        report.fail("render", "nothing plain enough to look for on screen; pass --expect")
        return
    screen = run_tui(tmux, "render", claude, ["--resume", sid],
                     lambda s: FATAL.search(s) or all(squash(n) in visible_text(s) for n in needles), timeout)
    report.detail(screen.rstrip())
    fatal = FATAL.search(screen)
    missing = [n for n in needles if squash(n) not in visible_text(screen)]
    tail = "\n".join(l.rstrip() for l in screen.splitlines() if l.strip())[-800:]
    if fatal:
        report.fail("render", f"the TUI shows {fatal.group(0).strip()!r}:\n{tail}")
    elif missing:
        report.fail("render", f"not on screen once the TUI was idle (or after {timeout}s): {missing}\n{tail}")
    else:
        report.passed("render", f"drawn: {needles}")


def check_list(tmux, claude, session, timeout, report):
    report.section("list: claude --resume (the picker, private tmux)")
    # The picker shows the custom title if there is one, else the first prompt.
    title = screen_snippet(session.title or session.first_prompt)
    if not title:
        report.fail("list", "no title or prompt plain enough to look for in the picker")
        return
    screen = run_tui(tmux, "list", claude, ["--resume"],
                     lambda s: FATAL.search(s) or squash(title) in visible_text(s)
                     or "No conversations found" in s, timeout)
    if squash(title) not in visible_text(screen) and not FATAL.search(screen):
        # Off screen among many sessions: type part of it into the picker's search box.
        tmux.start("search", claude.argv("--resume"), claude.cwd, dict(claude.env, TERM="xterm-256color"))
        tmux.wait_for("search", lambda s: "Resume" in s, timeout)
        tmux.type_slowly("search", title[:20])
        time.sleep(2)
        screen = tmux.capture("search")
        tmux.kill("search")
        screen = "\n".join(l for l in screen.splitlines() if "\u2315" not in l)  # the search box echo
    report.detail(screen.rstrip())
    if squash(title) in visible_text(screen):
        report.passed("list", f"the picker shows {title!r}")
    else:
        tail = "\n".join(l.rstrip() for l in screen.splitlines() if l.strip())[-800:]
        report.fail("list", f"the picker does not show {title!r}\n{tail}")


# --------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config_dir")
    ap.add_argument("cwd")
    ap.add_argument("session_id")
    ap.add_argument("--checks", default=",".join(CHECKS), help="comma list of " + ",".join(CHECKS))
    ap.add_argument("--expect", action="append", default=[], help="text that must come back (repeatable)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds for each claude run")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print screens and claude's output")
    args = ap.parse_args()

    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    unknown = [c for c in checks if c not in CHECKS]
    if unknown or not checks:
        raise UsageError(f"--checks takes a comma list of {','.join(CHECKS)}, not {args.checks!r}")
    config_dir = Path(args.config_dir)
    if not config_dir.is_dir():
        raise UsageError(f"CONFIG_DIR {config_dir} is not a directory")
    if not os.path.isdir(args.cwd):
        raise UsageError(f"CWD {args.cwd} does not exist (Claude must start in it)")
    cwd = os.path.realpath(args.cwd)
    sid = args.session_id.lower()
    if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", sid):
        raise UsageError(f"{args.session_id!r} is not a session uuid")
    claude_bin = find_cli("claude", "CLAUDE_BIN")
    if "list" in checks or "render" in checks:
        require_tool("tmux")
    report = Report(verbose=args.verbose)
    print(f"claude: {claude_bin} ({cli_version(claude_bin)})")

    project = project_dir_name(cwd)
    source = config_dir / "projects" / project / f"{sid}.jsonl"
    report.info(f"file: {source}")
    if not source.is_file() or source.stat().st_size == 0:
        elsewhere = sorted(config_dir.glob(f"projects/*/{sid}.jsonl"))
        hint = f" (found under another project: {elsewhere[0].parent.name}, not {project})" if elsewhere else ""
        report.fail("lint", f"{source} does not exist or is empty{hint}: `claude --resume {sid}` in {cwd} "
                            "does not find it")
        return report.finish()

    with Scratch("check_claude", keep=args.keep) as scratch:
        cfg = scratch.path / "config"
        copy_preserving(source.parent, cfg / "projects" / project)
        write_claude_json(cfg, cwd)
        (scratch.path / "home").mkdir()
        copied = cfg / "projects" / project / f"{sid}.jsonl"

        # The lint also learns what the other checks look for, so it always runs; unselected,
        # it is silent and its findings do not count.
        if "lint" in checks:
            report.section("lint")
            session = lint(copied, sid, cwd, report)
        else:
            session = lint(copied, sid, cwd, Report(silent=True))

        mock = MockAnthropic()
        scratch.on_exit(mock.close)
        claude = Claude(claude_bin, cfg, scratch.path / "home", mock.url, cwd)
        if "load" in checks:
            check_load(claude, mock, sid, session, args.expect, args.timeout, report)
        if "list" in checks or "render" in checks:
            tmux = Tmux(scratch.path)
            scratch.on_exit(tmux.close)
            if "list" in checks:
                check_list(tmux, claude, session, args.timeout, report)
            if "render" in checks:
                check_render(tmux, claude, sid, session, args.expect, args.timeout, report)
            tmux.close()
    return report.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"check_claude.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
