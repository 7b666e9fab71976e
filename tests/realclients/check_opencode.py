#!/usr/bin/env python3
"""Does the REAL OpenCode list and resume a session that another tool wrote into its database?

usage: check_opencode.py [--checks lint,list,model] [--expect TEXT]... [-v] [--keep]
                         DATA_DIR PROJECT_DIR SESSION_ID

  DATA_DIR     OpenCode's data folder ($XDG_DATA_HOME/opencode), holding opencode.db
  PROJECT_DIR  the folder the session belongs to (its real path is used)
  SESSION_ID   the session's id (`ses_...`)

Checks (default: all):
  lint   the rows against what OpenCode 1.18.33 needs to list, draw and resume a session: a
         session row in PROJECT_DIR, messages ordered by time with the fields its schemas ask
         for (a user message's `agent` and `model`, an assistant message's `parentID`, `path`,
         `tokens`...), parts whose message is in the session, tool parts in a final state with
         their output or error, a prompt;
  list   `opencode session list` in PROJECT_DIR must list SESSION_ID;
  model  `opencode run --session SESSION_ID <probe>` in PROJECT_DIR against a local Chat
         Completions mock (a custom OpenAI-compatible provider): the request that carries the
         probe must carry every prompt, the last answer, every tool output and each --expect
         (the history reaches the model), and OpenCode must append the turn to the session.

No network and no login. The given database is never written to: it is copied (with SQLite's
backup, WAL included) into a scratch data folder, and each check starts from that copy.

Exit status: 0 = every selected check passed, 1 = a check failed (the output says why),
2 = usage or environment error (no opencode, missing folders).
Environment: OPENCODE_BIN overrides the binary; REALCLIENTS_HOME is where install.sh put the CLIs.
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    EXIT_USAGE, MockChatCompletions, Report, Scratch, UsageError, find_cli, squash,
)

CHECKS = ("lint", "list", "model")
ASSISTANT_KEYS = ("parentID", "modelID", "providerID", "mode", "agent", "path", "cost", "tokens", "time")


class Session:
    """What the checks need of the rows: the prompts, answers and tool outputs the model must get."""

    def __init__(self):
        self.prompts, self.answers, self.outputs = [], [], []
        self.messages = 0


def rows(db, sid):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        session = conn.execute("SELECT directory, title FROM session WHERE id = ?", (sid,)).fetchone()
        messages = conn.execute("SELECT id, time_created, data FROM message WHERE session_id = ? "
                                "ORDER BY time_created, id", (sid,)).fetchall()
        parts = conn.execute("SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY id",
                             (sid,)).fetchall()
    finally:
        conn.close()
    return session, messages, parts


def lint_part(where, p, report, session):
    kind = p.get("type")
    if kind == "text":
        if not isinstance(p.get("text"), str):
            report.fail("lint", f"{where}: a text part without text")
        return p.get("text") or ""
    if kind == "tool":
        state = p.get("state") or {}
        status = state.get("status")
        if not isinstance(p.get("callID"), str) or not isinstance(p.get("tool"), str):
            report.fail("lint", f"{where}: a tool part without callID or tool")
        if status == "completed":
            missing = [k for k in ("input", "output", "title", "metadata", "time") if k not in state]
            if missing:
                report.fail("lint", f"{where}: a completed tool state lacks {missing}")
            session.outputs.append(state.get("output") or "")
        elif status == "error":
            if "error" not in state or "input" not in state:
                report.fail("lint", f"{where}: an error tool state lacks error or input")
        else:
            report.fail("lint", f"{where}: tool state {status!r}: OpenCode resumes only finished calls")
    return ""


def lint(db, sid, project, report):
    session = Session()
    found, messages, parts = rows(db, sid)
    if not found:
        report.fail("lint", f"no session {sid} in {db}")
        return session
    if found[0] != project:
        report.fail("lint", f"the session's directory is {found[0]!r}, not the project {project!r}")
    by_message = {}
    for pid, mid, data in parts:
        by_message.setdefault(mid, []).append((pid, json.loads(data)))
    ids = {m[0] for m in messages}
    for mid in by_message:
        if mid not in ids:
            report.fail("lint", f"parts of message {mid}, which the session does not hold")
    last_user, times = None, []
    for mid, created, data in messages:
        info = json.loads(data)
        times.append(created)
        texts = [lint_part(f"{mid}/{pid}", p, report, session) for pid, p in by_message.get(mid, [])]
        if info.get("role") == "user":
            model = info.get("model") or {}
            if not info.get("agent") or not model.get("providerID") or not model.get("modelID"):
                report.fail("lint", f"{mid}: a user message without agent or model (the TUI draws nothing)")
            text = "\n".join(t for t in texts if t)
            if text and info.get("sessionRelay") != "context":
                session.prompts.append(text)
            last_user = mid
        elif info.get("role") == "assistant":
            missing = [k for k in ASSISTANT_KEYS if k not in info]
            if missing:
                report.fail("lint", f"{mid}: an assistant message lacks {missing}")
            if info.get("parentID") != last_user:
                report.fail("lint", f"{mid}: parentID {info.get('parentID')} is not the request before it")
            # Each text part on its own: OpenCode joins a message's parts as it sends them.
            answer = [t for t in texts if t]
            if answer:
                session.answers.append(answer)
        else:
            report.fail("lint", f"{mid}: role {info.get('role')!r}")
    if times != sorted(times):
        report.fail("lint", "messages are not in time order")
    if not session.prompts:
        report.fail("lint", "no prompt")
    session.messages = len(messages)
    report.passed("lint", f"{len(messages)} messages, {len(parts)} parts")
    return session


class OpenCode:
    def __init__(self, binary, scratch, project, mock):
        self.binary, self.project = binary, project
        home = scratch / "home"
        self.env = {
            "PATH": os.environ.get("PATH", ""), "HOME": str(home), "TERM": "dumb",
            "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"), "XDG_CACHE_HOME": str(home / "cache"),
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        }
        self.data = home / "data" / "opencode"
        config = home / "config" / "opencode"
        config.mkdir(parents=True)
        model = MockChatCompletions.MODEL
        (config / "opencode.json").write_text(json.dumps({
            "$schema": "https://opencode.ai/config.json",
            "model": f"mock/{model}", "small_model": f"mock/{model}",
            "autoupdate": False, "share": "disabled", "permission": {"*": "allow"},
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible", "name": "Mock",
                "options": {"baseURL": mock.base_url, "apiKey": "dummy"},
                "models": {model: {"name": "Mock", "tool_call": True, "limit": {"context": 200000, "output": 8192}}},
            }},
        }))

    def place(self, db):
        """The database as a copy: SQLite's backup takes what the WAL holds too."""
        self.data.mkdir(parents=True, exist_ok=True)
        target = self.data / "opencode.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(target) + suffix).unlink(missing_ok=True)
        src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        dst = sqlite3.connect(target)
        src.backup(dst)
        src.close()
        dst.close()
        return target

    def run(self, *args, timeout):
        try:
            out = subprocess.run([self.binary, *args], cwd=self.project, env=self.env, timeout=timeout,
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True)
            return out.returncode, out.stdout + out.stderr
        except subprocess.TimeoutExpired as e:
            return None, f"timed out after {timeout}s: {e.stdout or ''}{e.stderr or ''}"


def check_list(oc, db, sid, timeout, report):
    report.section("list: opencode session list")
    oc.place(db)
    code, out = oc.run("session", "list", timeout=timeout)
    report.detail(out)
    if sid in out:
        report.passed("list", f"listed for {oc.project}")
    else:
        report.fail("list", f"{sid} is not listed (exit {code}): {squash(out)[:300]}")


def sent_text(body):
    out = []
    for m in body.get("messages") or []:
        c = m.get("content")
        out.append(c if isinstance(c, str) else " ".join(b.get("text", "") for b in c or [] if isinstance(b, dict)))
        for call in m.get("tool_calls") or []:
            out.append(str((call.get("function") or {}).get("arguments", "")))
    return squash(" ".join(out))


def check_model(oc, mock, db, sid, session, expects, timeout, report):
    report.section(f"model: opencode run --session {sid} <probe> (local Chat Completions mock)")
    copied = oc.place(db)
    probe = f"SESSION_RELAY_PROBE_{uuid.uuid4().hex[:12]}"
    code, out = oc.run("run", "--session", sid, probe, timeout=timeout)
    report.detail(out)
    bodies = [b for b in mock.chat_requests() if probe in json.dumps(b) and b.get("tools")]
    if not bodies:
        report.fail("model", f"no request with the probe reached the mock (exit {code}): {squash(out)[:300]}")
        return
    body = bodies[-1]
    sent = sent_text(body)
    report.info(f"the request carries {len(body.get('messages') or [])} messages")
    missing = []
    last = session.answers[-1] if session.answers else []
    for what, texts in (("prompt", session.prompts), ("answer", last), ("tool output", session.outputs),
                        ("--expect", expects)):
        lost = [t for t in texts if t.strip() and squash(t)[:80] not in sent]
        if lost:
            missing.append(f"{len(lost)} of {len(texts)} {what}s (first: {squash(lost[0])[:60]!r})")
    if missing:
        report.fail("model", f"the request lacks {'; '.join(missing)}")
    else:
        report.passed("model", "the history is sent with the next prompt")
    _, after, _ = rows(copied, sid)
    if len(after) <= session.messages:
        report.fail("model", f"OpenCode did not append the turn to {sid} ({len(after)} messages)")
    else:
        report.passed("model", f"OpenCode appended {len(after) - session.messages} messages")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir")
    ap.add_argument("project_dir")
    ap.add_argument("session_id")
    ap.add_argument("--checks", default=",".join(CHECKS), help="comma list of " + ",".join(CHECKS))
    ap.add_argument("--expect", action="append", default=[], help="text the request must carry (repeatable)")
    ap.add_argument("--timeout", type=float, default=90, help="seconds for each opencode run")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print opencode's output")
    args = ap.parse_args()

    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    if not checks or any(c not in CHECKS for c in checks):
        raise UsageError(f"--checks takes a comma list of {','.join(CHECKS)}, not {args.checks!r}")
    if not os.path.isdir(args.project_dir):
        raise UsageError(f"PROJECT_DIR {args.project_dir} does not exist (opencode must start in it)")
    db = Path(args.data_dir) / "opencode.db"
    if not db.is_file():
        raise UsageError(f"no database {db}")
    project = os.path.realpath(args.project_dir)
    binary = find_cli("opencode", "OPENCODE_BIN")
    report = Report(verbose=args.verbose)
    lint_report = report if "lint" in checks else Report(silent=True)
    lint_report.section("lint")
    session = lint(db, args.session_id, project, lint_report)
    with Scratch("check_opencode", keep=args.keep) as scratch:
        mock = MockChatCompletions.for_agent("opencode")
        scratch.on_exit(mock.close)
        oc = OpenCode(binary, scratch.path, project, mock)
        if "list" in checks:
            check_list(oc, db, args.session_id, args.timeout, report)
        if "model" in checks:
            check_model(oc, mock, db, args.session_id, session, args.expect, args.timeout, report)
    return report.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"check_opencode.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
