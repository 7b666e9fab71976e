#!/usr/bin/env python3
"""Does the REAL GitHub Copilot CLI resume, draw and list a session that another tool wrote?

usage: check_copilot.py [--checks lint,model,render,list] [--expect TEXT]... [-v] [--keep]
                        COPILOT_HOME SESSION_ID

  COPILOT_HOME  the Copilot home the session was written into (what $COPILOT_HOME means)
  SESSION_ID    the session's folder name under session-state/ (what --resume= looks up)

Checks (default: all):
  lint    session-state/SESSION_ID/events.jsonl against what Copilot CLI 1.0.102 needs: one
          compact JSON object a line (no raw U+2028/U+2029), `session.start` first naming the
          folder's id and an absolute directory, every event with a UUID `id`, a time with its
          zone and a `parentId`, every tool request with its start and its completion, the
          provenance event; and the workspace.yaml beside it (id, directory, title, user_named);
  model   `copilot --resume=ID -p <probe> --allow-all-tools` against a local Chat Completions
          mock (BYOK env, offline): the request carrying the probe must carry every prompt and
          the last answer (the history reaches the model);
  render  `copilot --resume=ID` in a private tmux must draw the last prompt and the last answer
          (or each --expect), with no error about the session;
  list    then, in the same TUI, the Sessions tab must list the session by its title.

No network and no login: COPILOT_OFFLINE=true with a bring-your-own-key provider pointing at
harness.py's MockChatCompletions, run in this process. The given home is never written
to: the session's folder is copied into a scratch home (with the session's directory marked
trusted), and every check starts from that copy as it was (a resume appends to the log).

Exit status: 0 = every selected check passed, 1 = a check failed (the output says why),
2 = usage or environment error (no copilot, no tmux, no session folder).
Environment: COPILOT_BIN overrides the binary; REALCLIENTS_HOME is where install.sh put the
CLIs. Copilot unpacks itself on its first start into $XDG_CACHE_HOME/copilot (else
~/.cache/copilot), which is kept between checks.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    EXIT_USAGE, ISO_MS, MockChatCompletions, Report, Scratch, Tmux, UsageError, copy_preserving,
    find_cli, read_jsonl, require_tool, screen_snippet, squash, visible_text,
)

CHECKS = ("lint", "model", "render", "list")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
FATAL = re.compile(r"corrupted or incompatible|Session not found|No session found|"
                   r"Failed to resume|must be a UUID|ISO 8601|\[check: program exited")


class Session:
    """What the lint learns of a log, for the other checks."""

    def __init__(self):
        self.cwd = None
        self.prompts = []
        self.last_prompt = ""
        self.last_answer = ""
        self.title = ""


def workspace(path):
    """workspace.yaml's top-level `key: value` pairs (what Copilot and session-relay write:
    plain or double-quoted scalars)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z_]+):\s*(.*)$", line)
        if not m:
            continue
        value = m.group(2).strip()
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        elif value.startswith("'") and value.endswith("'"):
            value = value[1:-1].replace("''", "'")
        out[m.group(1)] = value
    return out


def lint_events(path, sid, report, s):
    raw = path.read_bytes()
    for sep, name in ((b"\xe2\x80\xa8", "U+2028"), (b"\xe2\x80\xa9", "U+2029")):
        if sep in raw:
            report.fail("lint", f"a raw {name} in the log (the CLI's reader may split the line there)")
    lines = read_jsonl(path)
    if not lines:
        report.fail("lint", "the log is empty")
        return
    previous, requested, started, completed, provenance = None, {}, set(), set(), False
    for n, v, err in lines:
        if err or not isinstance(v, dict):
            report.fail("lint", f"line {n}: not a JSON object ({err})")
            continue
        kind, data = v.get("type"), v.get("data")
        if not isinstance(v.get("id"), str) or not UUID.match(v["id"]):
            report.fail("lint", f"line {n}: `id` {v.get('id')!r} is not a UUID")
        if not isinstance(v.get("timestamp"), str) or not ISO_MS.match(v["timestamp"]):
            report.fail("lint", f"line {n}: `timestamp` {v.get('timestamp')!r} has no zone")
        if "parentId" not in v or v["parentId"] != previous:
            report.fail("lint", f"line {n}: `parentId` {v.get('parentId')!r} is not the event before")
        previous = v.get("id")
        if not isinstance(data, dict):
            report.fail("lint", f"line {n}: `data` is not an object")
            continue
        if n == lines[0][0]:
            if kind != "session.start":
                report.fail("lint", f"the first event is {kind!r}, not session.start")
            if data.get("sessionId") != sid:
                report.fail("lint", f"session.start names {data.get('sessionId')!r}, the folder {sid}")
            s.cwd = (data.get("context") or {}).get("cwd")
            if not (isinstance(s.cwd, str) and s.cwd.startswith("/")):
                report.fail("lint", f"session.start's context.cwd {s.cwd!r} is not an absolute path")
        if kind == "session-relay":
            provenance = (v.get("provenance") or {}).get("tool") == "session-relay"
        elif kind == "user.message":
            if not isinstance(data.get("content"), str):
                report.fail("lint", f"line {n}: a user.message without text content")
            elif data.get("sessionRelay") != "context":
                s.prompts.append(data["content"])
        elif kind == "assistant.message":
            if isinstance(data.get("content"), str) and data["content"].strip():
                s.last_answer = data["content"]
            for r in data.get("toolRequests") or []:
                requested[r.get("toolCallId")] = r.get("name")
        elif kind == "tool.execution_start":
            if data.get("toolCallId") not in requested:
                report.fail("lint", f"line {n}: tool.execution_start of {data.get('toolCallId')!r} requested by no message")
            started.add(data.get("toolCallId"))
        elif kind == "tool.execution_complete":
            if data.get("toolCallId") not in started:
                report.fail("lint", f"line {n}: tool.execution_complete of {data.get('toolCallId')!r} before its start")
            completed.add(data.get("toolCallId"))
    unanswered = [i for i in requested if i not in completed]
    if unanswered:
        report.fail("lint", f"{len(unanswered)} tool request(s) never completed: {unanswered[:3]}")
    if not provenance:
        report.fail("lint", "no session-relay provenance event")
    if not s.prompts:
        report.fail("lint", "no prompt (user.message) in the log")
    s.last_prompt = s.prompts[-1] if s.prompts else ""
    report.info(f"{len(lines)} events, {len(s.prompts)} prompts, {len(requested)} tool calls")


def lint(folder, sid, report):
    report.section("lint")
    s = Session()
    lint_events(folder / "events.jsonl", sid, report, s)
    ws_path = folder / "workspace.yaml"
    if not ws_path.is_file():
        report.fail("lint", "no workspace.yaml: the CLI would name the session after the next prompt")
    else:
        ws = workspace(ws_path)
        s.title = ws.get("name") or ""
        for key, want in (("id", sid), ("cwd", s.cwd), ("user_named", "true")):
            if ws.get(key) != want:
                report.fail("lint", f"workspace.yaml: {key} is {ws.get(key)!r}, not {want!r}")
        if not s.title.strip():
            report.fail("lint", "workspace.yaml names no title (`name`)")
    if "lint" not in report.failed:
        report.passed("lint", f"title {s.title!r}, directory {s.cwd}")
    return s


class Copilot:
    """The real CLI in a scratch home, offline, its model the mock."""

    def __init__(self, binary, scratch, home, cwd, mock):
        self.binary, self.home, self.cwd = binary, home, cwd
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", str(scratch)),
            "COPILOT_HOME": str(home),
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": mock.base_url,
            "COPILOT_PROVIDER_API_KEY": "mock-key",
            "COPILOT_MODEL": MockChatCompletions.MODEL,
        }
        if os.environ.get("XDG_CACHE_HOME"):
            self.env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]

    def run(self, *args, timeout):
        try:
            r = subprocess.run([self.binary, *args], cwd=self.cwd, env=self.env, capture_output=True,
                               text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            return r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            return None, f"(no answer within {timeout}s) {e.stdout or ''}{e.stderr or ''}"


def message_text(m):
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def check_model(copilot, mock, sid, s, expects, timeout, report):
    report.section(f"model: copilot --resume={sid} -p <probe> (offline, mock model)")
    probe = f"SESSION_RELAY_PROBE_{uuid.uuid4().hex[:12]}"
    code, out = copilot.run(f"--resume={sid}", "-p", probe, "--allow-all-tools", timeout=timeout)
    report.detail(out)
    sent = [b for b in mock.chat_requests() if probe in message_text((b.get("messages") or [{}])[-1])]
    if not sent:
        report.fail("model", f"no request with the probe reached the mock (exit {code}): {squash(out)[-400:]}")
        return
    messages = sent[-1].get("messages") or []
    text = squash(" ".join(message_text(m) for m in messages))
    report.info(f"the request carries {len(messages)} messages")
    lost = [p for p in s.prompts if squash(p)[:80] not in text]
    missing = [f"{len(lost)} of {len(s.prompts)} prompts (first: {squash(lost[0])[:60]!r})"] if lost else []
    missing += [f"{what} {squash(t)[:60]!r}" for what, t in
                [("the last answer", s.last_answer)] + [("--expect", e) for e in expects]
                if t.strip() and squash(t)[:80] not in text]
    if len(messages) < 3:
        report.fail("model", "only the system prompt and the probe were sent: the history did not reach the model")
    elif missing:
        report.fail("model", f"the request lacks {'; '.join(missing)}")
    elif code != 0:
        report.fail("model", f"the history was sent, but copilot exited {code}: {squash(out)[-300:]}")
    else:
        report.passed("model", "the history is sent with the next prompt")


def check_tui(copilot, scratch, sid, s, expects, checks, timeout, report):
    report.section(f"render: copilot --resume={sid} (private tmux)" + (", then its Sessions tab" if "list" in checks else ""))
    needles = list(dict.fromkeys(expects or [n for n in (screen_snippet(s.last_prompt),
                                                         screen_snippet(s.last_answer)) if n]))
    title = screen_snippet(s.title)
    tmux = Tmux(scratch)
    try:
        tmux.start("tui", [copilot.binary, f"--resume={sid}"], copilot.cwd,
                   dict(copilot.env, TERM="xterm-256color"), log=scratch / "tui.log")
        screen = tmux.wait_for("tui", lambda t: bool(FATAL.search(t))
                               or all(squash(n) in visible_text(t) for n in needles), timeout)
        report.detail(screen.rstrip())
        tail = "\n".join(l.rstrip() for l in screen.splitlines() if l.strip())[-800:]
        missing = [n for n in needles if squash(n) not in visible_text(screen)]
        bad = FATAL.search(screen)
        if "render" in checks:
            if bad:
                report.fail("render", f"the TUI shows {bad.group(0)!r}:\n{tail}")
            elif not needles or missing:
                report.fail("render", f"not on screen once the TUI was idle (or after {timeout}s): {missing or 'nothing to look for'}\n{tail}")
            else:
                report.passed("render", f"drawn: {needles}")
        if "list" in checks:
            # A row of the Sessions tab: the title with its times (the brief the TUI draws
            # above names the title too, without them).
            def row(t):
                return bool(title) and any(squash(title) in squash(line) and re.search(r"\bago\b|just now", line)
                                           for line in t.splitlines())
            tmux.send_keys("tui", "Tab")
            tmux.wait_for("tui", lambda t: row(tmux.capture("tui", history=False)), timeout)
            listed = tmux.capture("tui", history=False)
            report.detail(listed.rstrip())
            if row(listed):
                report.passed("list", f"listed as {title!r}")
            else:
                report.fail("list", f"the Sessions tab does not show {title!r}:\n{listed.rstrip()[-800:]}")
    finally:
        tmux.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("copilot_home")
    ap.add_argument("session_id")
    ap.add_argument("--checks", default=",".join(CHECKS), help="comma list of " + ",".join(CHECKS))
    ap.add_argument("--expect", action="append", default=[],
                    help="text that the TUI must draw and the request carry (repeatable)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds for each copilot run")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print screens and copilot's output")
    args = ap.parse_args()

    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    if not checks or any(c not in CHECKS for c in checks):
        raise UsageError(f"--checks takes a comma list of {','.join(CHECKS)}, not {args.checks!r}")
    sid = args.session_id
    folder = Path(args.copilot_home) / "session-state" / sid
    if not (folder / "events.jsonl").is_file():
        raise UsageError(f"no {folder}/events.jsonl")
    binary = find_cli("copilot", "COPILOT_BIN")
    if "render" in checks or "list" in checks:
        require_tool("tmux")
    report = Report(verbose=args.verbose)
    lint_report = report if "lint" in checks else Report(silent=True)
    s = lint(folder, sid, lint_report)
    if not s.cwd or not os.path.isdir(s.cwd):
        report.fail("lint", f"the session's directory {s.cwd!r} does not exist here (the CLI starts in it)")
        return report.finish()

    with Scratch("check_copilot", keep=args.keep) as scratch:
        home = scratch.path / "home"
        pristine = scratch.path / "pristine"
        copy_preserving(folder, pristine)
        live = home / "session-state" / sid
        cwd = os.path.realpath(s.cwd)

        def restore():
            """Every check starts from the session as it was (a resume appends to its log), in a
            home where its directory is trusted (else the TUI asks first)."""
            shutil.rmtree(home, ignore_errors=True)
            copy_preserving(pristine, live)
            (home / "config.json").write_text(json.dumps({"trustedFolders": [cwd, s.cwd]}))

        mock = MockChatCompletions.for_agent("copilot")
        scratch.on_exit(mock.close)
        copilot = Copilot(binary, scratch.path, home, cwd, mock)
        code, version = copilot.run("--version", timeout=args.timeout)
        print(f"copilot: {binary} ({squash(version).split(' Run ')[0]})")
        if "model" in checks:
            restore()
            check_model(copilot, mock, sid, s, args.expect, args.timeout, report)
        if "render" in checks or "list" in checks:
            restore()
            check_tui(copilot, scratch.path, sid, s, args.expect, checks, args.timeout, report)
    return report.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"check_copilot.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
