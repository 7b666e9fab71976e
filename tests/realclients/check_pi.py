#!/usr/bin/env python3
"""Does the REAL pi (@mariozechner/pi-coding-agent) list and resume a session another tool wrote?

usage: check_pi.py [--checks lint,list,model] [--expect TEXT]... [-v] [--keep]
                   PI_CODING_AGENT_DIR PROJECT_DIR SESSION_ID

  PI_CODING_AGENT_DIR  pi's agent dir (default ~/.pi/agent), which holds sessions/
  PROJECT_DIR          the project the session belongs to (its real path is used)
  SESSION_ID           the id in the session's header line

Checks (default: all):
  lint    the file against what pi 0.73 needs: in sessions/--<project>--/, named
          <time>_<id>.jsonl; a version 3 `session` header with the id and an existing absolute
          cwd (the project); every entry with a unique 8-hex id chained to the one before by
          parentId (the last line is the leaf pi continues); `usage.totalTokens` on every
          assistant message (without it pi sends nothing and exits 0); every toolCall answered
          by a toolResult; a prompt; the title as `session_info`;
  list    `pi -r` (the TUI picker) in PROJECT_DIR, in a private tmux, must show the session's
          title;
  model   `pi --session SESSION_ID -p <probe>` in PROJECT_DIR against a local Chat Completions
          mock (a custom provider in the scratch agent dir's models.json): the request must
          carry every prompt, every answer and every tool output of the session's branch
          (and each --expect) before the probe, the CLI must print the mock's answer, and the
          new turn must be appended to the file, chained to the session's leaf.

No network and no login. The given agent dir is never written to: the session file is copied
into a scratch agent dir, and every check starts from that copy as it was (pi appends to a
session it resumes).

Exit status: 0 = every selected check passed, 1 = a check failed (the output says why),
2 = usage or environment error (no pi, no tmux, missing folders).
Environment: PI_BIN overrides the binary; REALCLIENTS_HOME is where install.sh put the CLIs.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    EXIT_USAGE, MockChatCompletions, Report, Scratch, Tmux, UsageError, copy_preserving,
    find_cli, require_tool, squash,
)

CHECKS = ("lint", "list", "model")
ENTRY_ID = re.compile(r"^[0-9a-f]{8}$")
FILE_NAME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_(.+)\.jsonl$")


def project_folder(project):
    """pi's folder for a directory: `--<path>--`, leading `/` dropped, `/` `\\` `:` as `-`."""
    return "--" + re.sub(r"[/\\:]", "-", project.lstrip("/\\")) + "--"


def parse_iso(value):
    try:
        datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def text_of(content):
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or []
                     if isinstance(b, dict) and b.get("type") == "text")


class Session:
    """What the branch pi resumes holds: prompts, answers, tool outputs, title, leaf id."""

    def __init__(self):
        self.prompts, self.answers, self.outputs = [], [], []
        self.title = None
        self.leaf = None
        self.lines = 0


def file_lines(path):
    """The lines as pi splits them: at `\n` only (`splitlines` would also split at U+2028,
    which JSON writers leave unescaped in strings)."""
    text = Path(path).read_text(errors="replace")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n") if text else []


def read_entries(path, report):
    entries = []
    for no, line in enumerate(file_lines(path), 1):
        if not line.strip():
            continue
        try:
            entries.append((no, json.loads(line)))
        except ValueError as e:
            report.fail("lint", f"line {no} is not JSON: {e}")
    return entries


def lint_header(no, header, sid, project, report):
    if no != 1 or not isinstance(header, dict) or header.get("type") != "session":
        report.fail("lint", "the first line is not a `session` header: pi neither lists nor opens the file")
        return
    if header.get("version") != 3:
        report.fail("lint", f"header version {header.get('version')!r}, not 3 (pi migrates and rewrites older files)")
    if header.get("id") != sid:
        report.fail("lint", f"header id {header.get('id')!r}, not {sid}")
    if not parse_iso(header.get("timestamp")):
        report.fail("lint", f"header timestamp {header.get('timestamp')!r} is not an ISO time")
    cwd = header.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd) or not os.path.isdir(cwd):
        report.fail("lint", f"header cwd {cwd!r} is not an existing absolute directory (pi -p refuses the session)")
    elif os.path.realpath(cwd) != project:
        report.fail("lint", f"header cwd {cwd} is not the project {project}")


def lint_message(no, m, calls, session, report):
    role = m.get("role")
    if role == "user":
        session.prompts.append(text_of(m.get("content")))
    elif role == "assistant":
        usage = m.get("usage")
        if not isinstance(usage, dict) or not isinstance(usage.get("totalTokens"), (int, float)):
            report.fail("lint", f"line {no}: assistant message without usage.totalTokens (pi sends nothing)")
        for b in m.get("content") or []:
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "text":
                session.answers.append(b.get("text", ""))
            elif kind == "toolCall":
                if not b.get("id") or not b.get("name") or not isinstance(b.get("arguments"), dict):
                    report.fail("lint", f"line {no}: toolCall without id, name or arguments object")
                calls[b.get("id")] = no
            elif kind != "thinking":
                report.fail("lint", f"line {no}: assistant block of type {kind!r}")
    elif role == "toolResult":
        if calls.pop(m.get("toolCallId"), None) is None:
            report.fail("lint", f"line {no}: toolResult for {m.get('toolCallId')!r}, which no open toolCall made")
        if not isinstance(m.get("isError"), bool):
            report.fail("lint", f"line {no}: toolResult without a boolean isError")
        session.outputs.append(text_of(m.get("content")))
    else:
        report.fail("lint", f"line {no}: message role {role!r}")


def lint(path, sid, project, report):
    """Checks the file; returns what its branch holds."""
    session = Session()
    m = FILE_NAME.match(path.name)
    if not m or m.group(1) != sid:
        report.fail("lint", f"file name {path.name} is not <time>_{sid}.jsonl")
    entries = read_entries(path, report)
    session.lines = len(file_lines(path))
    if not entries:
        report.fail("lint", "empty file")
        return session
    lint_header(*entries[0], sid, project, report)
    parent, ids, calls = None, set(), {}
    for no, e in entries[1:]:
        eid = e.get("id")
        if not isinstance(eid, str) or not ENTRY_ID.match(eid) or eid in ids:
            report.fail("lint", f"line {no}: entry id {eid!r} is not a fresh 8-hex id")
        if e.get("parentId") != parent:
            report.fail("lint", f"line {no}: parentId {e.get('parentId')!r}, not the entry before ({parent!r})")
        if not parse_iso(e.get("timestamp")):
            report.fail("lint", f"line {no}: timestamp {e.get('timestamp')!r} is not an ISO time")
        ids.add(eid)
        parent = eid
        if e.get("type") == "message":
            lint_message(no, e.get("message") or {}, calls, session, report)
        elif e.get("type") == "session_info":
            session.title = e.get("name")
    session.leaf = parent
    for call, no in calls.items():
        report.fail("lint", f"line {no}: toolCall {call} has no toolResult")
    if not any(p.strip() for p in session.prompts):
        report.fail("lint", "no prompt: nothing to resume")
    if not session.title:
        report.warn("no session_info title: pi's picker shows the first prompt")
    if "lint" not in report.failed:
        report.passed("lint", f"{len(entries)} lines, {len(session.prompts)} prompts")
    return session


class Pi:
    """The real pi in a scratch agent dir whose only provider is the mock."""

    def __init__(self, binary, scratch, agent, project, mock):
        self.binary, self.agent, self.project = binary, agent, project
        self.home = scratch / "home"
        self.home.mkdir(exist_ok=True)
        agent.mkdir(parents=True, exist_ok=True)
        models = {"providers": {"mock": {
            "baseUrl": mock.base_url, "api": "openai-completions", "apiKey": "mock-key",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": MockChatCompletions.MODEL, "reasoning": True}]}}}
        (agent / "models.json").write_text(json.dumps(models))
        (agent / "settings.json").write_text(json.dumps(
            {"defaultProvider": "mock", "defaultModel": MockChatCompletions.MODEL}))

    def env(self):
        return {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), "TERM": "xterm-256color",
                "PI_CODING_AGENT_DIR": str(self.agent), "PI_OFFLINE": "1"}

    def run(self, *args, timeout):
        try:
            out = subprocess.run([self.binary, *args], cwd=self.project, env=self.env(), capture_output=True,
                                 text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            return out.returncode, out.stdout + out.stderr
        except subprocess.TimeoutExpired as e:
            return None, f"timed out after {timeout} s: {e.stdout or ''}{e.stderr or ''}"


def check_list(pi, scratch, session, timeout, report):
    report.section("list: pi -r (the picker) in the project")
    title = squash(session.title or (session.prompts or [""])[0])[:40]
    tmux = Tmux(scratch)
    try:
        tmux.start("pi", [pi.binary, "-r"], pi.project, pi.env())
        screen = tmux.wait_for("pi", lambda s: title in squash(s), timeout)
        report.detail(screen)
        if title in squash(screen):
            report.passed("list", f"the picker shows {title!r}")
        else:
            report.fail("list", f"the picker does not show {title!r}: {squash(screen)[-300:]}")
    finally:
        tmux.close()


def sent_text(body):
    """Every text of a Chat Completions request: contents, tool call arguments."""
    out = []
    for m in body.get("messages") or []:
        c = m.get("content")
        out.append(c if isinstance(c, str) else text_of(c))
        for call in m.get("tool_calls") or []:
            out.append(str((call.get("function") or {}).get("arguments", "")))
    return squash(" ".join(out))


def check_model(pi, mock, copied, session, expects, timeout, report):
    report.section(f"model: pi --session {copied.stem[-36:]} -p <probe> (local Chat Completions mock)")
    probe = f"SESSION_RELAY_PROBE_{uuid.uuid4().hex[:12]}"
    sid = json.loads(file_lines(copied)[0])["id"]
    code, out = pi.run("--session", sid, "-p", probe, timeout=timeout)
    report.detail(out)
    bodies = [b for b in mock.chat_requests() if probe in json.dumps(b)]
    if not bodies:
        report.fail("model", f"no request with the probe reached the mock (exit {code}): {squash(out)[:300]}")
        return
    body = bodies[-1]
    sent = sent_text(body)
    report.info(f"the request carries {len(body.get('messages') or [])} messages")
    missing = []
    for what, texts in (("prompt", session.prompts), ("answer", session.answers),
                        ("tool output", session.outputs), ("--expect", expects)):
        lost = [t for t in texts if t.strip() and squash(t)[:80] not in sent]
        if lost:
            missing.append(f"{len(lost)} of {len(texts)} {what}s (first: {squash(lost[0])[:60]!r})")
    if missing:
        report.fail("model", f"the request lacks {'; '.join(missing)}")
    elif probe not in text_of((body.get("messages") or [{}])[-1].get("content")):
        report.fail("model", "the probe is not the request's last message: it did not follow the history")
    else:
        report.passed("model", "the history is sent with the next prompt")
    if MockChatCompletions.ANSWER not in out:
        report.fail("model", f"pi did not print the mock's answer (exit {code}): {squash(out)[:300]}")
    appended = [json.loads(l) for l in file_lines(copied)[session.lines:] if l.strip()]
    if not appended or appended[0].get("parentId") != session.leaf:
        report.fail("model", f"the new turn was not appended to the session's leaf {session.leaf}")
    else:
        report.passed("model", f"pi appended {len(appended)} entries to the leaf")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("agent_dir")
    ap.add_argument("project_dir")
    ap.add_argument("session_id")
    ap.add_argument("--checks", default=",".join(CHECKS), help="comma list of " + ",".join(CHECKS))
    ap.add_argument("--expect", action="append", default=[], help="text the request must carry (repeatable)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds for each pi run")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print screens and pi's output")
    args = ap.parse_args()

    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    if not checks or any(c not in CHECKS for c in checks):
        raise UsageError(f"--checks takes a comma list of {','.join(CHECKS)}, not {args.checks!r}")
    if not os.path.isdir(args.project_dir):
        raise UsageError(f"PROJECT_DIR {args.project_dir} does not exist (pi must start in it)")
    project = os.path.realpath(args.project_dir)
    folder = Path(args.agent_dir) / "sessions" / project_folder(project)
    binary = find_cli("pi", "PI_BIN")
    if "list" in checks:
        require_tool("tmux")
    report = Report(verbose=args.verbose)
    lint_report = report if "lint" in checks else Report(silent=True)
    lint_report.section("lint")
    found = [f for f in sorted(folder.glob("*.jsonl"))
             if f'"id":"{args.session_id}"' in f.read_text(errors="replace").split("\n", 1)[0].replace(" ", "")]
    if not found:
        report.fail("lint", f"no session with header id {args.session_id} in {folder}")
        return report.finish()
    session = lint(found[0], args.session_id, project, lint_report)

    with Scratch("check_pi", keep=args.keep) as scratch:
        agent = scratch.path / "agent"
        live = agent / "sessions" / folder.name
        mock = MockChatCompletions.for_agent("pi")
        scratch.on_exit(mock.close)
        pi = Pi(binary, scratch.path, agent, project, mock)
        copied = live / found[0].name

        def restore():
            shutil.rmtree(live, ignore_errors=True)
            copy_preserving(found[0], copied)

        if "list" in checks:
            restore()
            check_list(pi, scratch.path, session, args.timeout, report)
        if "model" in checks:
            restore()
            check_model(pi, mock, copied, session, args.expect, args.timeout, report)
    return report.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"check_pi.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
