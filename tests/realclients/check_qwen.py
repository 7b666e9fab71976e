#!/usr/bin/env python3
"""Does the REAL Qwen Code list and resume a session that another tool wrote?

usage: check_qwen.py [--checks lint,list,model] [--expect TEXT]... [-v] [--keep]
                     QWEN_HOME PROJECT_DIR SESSION_ID

  QWEN_HOME    Qwen Code's runtime base (what $QWEN_HOME means; ~/.qwen by default), holding
               projects/<project folder>/chats/<SESSION_ID>.jsonl
  PROJECT_DIR  the project the session belongs to (its real path is used)
  SESSION_ID   the sessionId written in the session file

Checks (default: all):
  lint   the file against what Qwen Code 0.24.4 needs to list and resume it: named for a UUID of
         version 1-5 in the project's folder, one compact JSON record a line, the project's `cwd`
         on the first record, the same sessionId everywhere, valid uuid/parentUuid/type/
         timestamp, a chain from the last conversation record back to the first without gaps,
         every tool call answered, a prompt;
  list   `qwen sessions list --json` in PROJECT_DIR must list SESSION_ID (with the file's title);
  model  `qwen --resume SESSION_ID <probe>` headless against a local Chat Completions mock: the
         request that carries the probe must carry every prompt, the last answer and each
         --expect (the history reaches the model).

No network and no login: the model is harness.py's MockChatCompletions, a custom OpenAI-compatible
provider.
The given home is never written to: the project's chats/ are copied into a scratch home, and
each check starts from that copy as it was (a resume appends to the session file).

Exit status: 0 = every selected check passed, 1 = a check failed (the output says why),
2 = usage or environment error (no qwen, missing folders).
Environment: QWEN_BIN overrides the binary; REALCLIENTS_HOME is where install.sh put the CLIs.
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
    EXIT_USAGE, ISO_MS, MockChatCompletions, Report, Scratch, UsageError, cli_version, copy_preserving,
    find_cli, read_jsonl, squash,
)

CHECKS = ("lint", "list", "model")
TYPES = ("user", "assistant", "tool_result", "system")
NOT_CONVERSATION = {"session_sources_snapshot", "managed_session_header_v1", "managed_session_event_v1",
                    "managed_session_commit_v1", "session_artifact_event", "session_artifact_snapshot"}
RESUMABLE_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.I)


def project_folder(project):
    return re.sub(r"[^A-Za-z0-9]", "-", project)


def texts(parts, thought=False):
    return "".join(p.get("text", "") for p in parts or []
                   if isinstance(p, dict) and isinstance(p.get("text"), str) and bool(p.get("thought")) == thought)


class Session:
    """What the checks need of the file: the prompts and the last answer the model must get."""

    def __init__(self):
        self.prompts = []
        self.last_answer = ""
        self.title = None


def lint(path, sid, project, report):
    session = Session()
    if not RESUMABLE_ID.match(sid):
        report.fail("lint", f"session id {sid} is not a UUID of version 1-5: `qwen --resume` takes it for a title")
    rows = read_jsonl(path)
    records = []
    for n, obj, err in rows:
        if err:
            report.fail("lint", f"line {n}: not JSON ({err})")
            continue
        if not isinstance(obj, dict):
            report.fail("lint", f"line {n}: not an object")
            continue
        if obj.get("type") == "session-relay":
            continue  # the relay's provenance: an unknown type the CLI skips
        records.append((n, obj))
    if not records:
        report.fail("lint", "no records")
        return session
    raw = Path(path).read_text(encoding="utf-8", errors="replace")
    first_n, first = records[0]
    if first.get("cwd") != project:
        report.fail("lint", f"the first record's cwd is {first.get('cwd')!r}, not the project {project!r}: "
                            "not listed (or the project's listing fails)")
    by_uuid, leaf = {}, None
    for n, r in records:
        problems = []
        if not isinstance(r.get("uuid"), str) or not r["uuid"]:
            problems.append("no uuid")
        if not (r.get("parentUuid") is None or isinstance(r.get("parentUuid"), str)) or "parentUuid" not in r:
            problems.append("parentUuid neither a string nor null")
        if r.get("sessionId") != sid:
            problems.append(f"sessionId {r.get('sessionId')!r}")
        if r.get("type") not in TYPES:
            problems.append(f"unknown type {r.get('type')!r}")
        ts = r.get("timestamp")
        if ts is not None and not (isinstance(ts, str) and ISO_MS.match(ts)):
            problems.append(f"timestamp {ts!r}")
        if problems:
            report.fail("lint", f"line {n}: {', '.join(problems)}")
            continue
        if r.get("subtype") == "custom_title":
            session.title = (r.get("systemPayload") or {}).get("customTitle")
        if r["type"] != "system" or r.get("subtype") not in NOT_CONVERSATION:
            by_uuid.setdefault(r["uuid"], (n, r))
            leaf = r["uuid"]
    if session.title and '"subtype":"custom_title"' not in raw:
        report.fail("lint", "the custom_title record is not compact JSON: the CLI's search misses the title")
    chain, seen, at = [], set(), leaf
    while at:
        if at in seen:
            report.fail("lint", f"the parentUuid chain loops at {at}")
            break
        seen.add(at)
        n, r = by_uuid[at]
        chain.append(r)
        parent = r.get("parentUuid")
        if parent and parent not in by_uuid:
            report.fail("lint", f"line {n}: parent {parent} is missing: the history stops there")
            break
        at = parent
    chain.reverse()
    off = len(by_uuid) - len(chain)
    if off:
        report.warn(f"{off} records are off the loaded branch")
    compressed = max((i for i, r in enumerate(chain) if r.get("subtype") == "chat_compression"), default=-1)
    calls, answered = [], set()
    for r in chain[compressed + 1:]:
        parts = (r.get("message") or {}).get("parts") or []
        for p in parts:
            if isinstance(p, dict) and isinstance(p.get("functionCall"), dict):
                calls.append(p["functionCall"].get("id"))
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
                answered.add(p["functionResponse"].get("id"))
        if r["type"] == "user" and texts(parts).strip():
            session.prompts.append(texts(parts))
        if r["type"] == "assistant" and texts(parts).strip():
            session.last_answer = texts(parts)
    unanswered = [c for c in calls if c not in answered]
    if unanswered:
        report.fail("lint", f"{len(unanswered)} tool calls without a result (first: {unanswered[0]})")
    if not session.prompts:
        report.fail("lint", "no prompt on the loaded branch")
    if "lint" not in report.failed:
        report.passed("lint", f"{len(records)} records, {len(chain)} on the branch, {len(session.prompts)} prompts")
    return session


# The window of Qwen Code's default model (`coder-model`), which session-relay's budget assumes;
# a model it does not know, as the mock's, would get 200,000.
SETTINGS = {"model": {"generationConfig": {"contextWindowSize": 1_000_000}}}


class Qwen:
    def __init__(self, binary, scratch, home, project):
        self.binary, self.home, self.project = binary, home, project
        (home / "settings.json").write_text(json.dumps(SETTINGS))
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(scratch / "user-home"),
            "QWEN_HOME": str(home),
            "NO_COLOR": "1",
            "TERM": "dumb",
        }
        (scratch / "user-home").mkdir(exist_ok=True)

    def run(self, *args, timeout=120):
        try:
            out = subprocess.run([self.binary, *args], cwd=self.project, env=self.env, capture_output=True,
                                 text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            return out.returncode, out.stdout + out.stderr
        except subprocess.TimeoutExpired as e:
            return None, f"timed out after {timeout}s: {e.stdout or ''}{e.stderr or ''}"


def check_list(qwen, sid, session, report):
    report.section("list: qwen sessions list --json")
    code, out = qwen.run("sessions", "list", "--json", "--limit", "1000", timeout=60)
    report.detail(out)
    rows = []
    for line in out.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    rows = [r for item in rows for r in (item if isinstance(item, list) else [item]) if isinstance(r, dict)]
    mine = [r for r in rows if r.get("sessionId") == sid]
    if not mine:
        report.fail("list", f"not listed (exit {code}): {squash(out)[:300]}")
    elif session.title and mine[0].get("customTitle") != session.title:
        report.fail("list", f"listed with title {mine[0].get('customTitle')!r}, not {session.title!r}")
    else:
        report.passed("list", f"listed as {mine[0].get('customTitle') or mine[0].get('prompt')!r}")


def request_text(body):
    out = []
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(p.get("text", "") for p in c if isinstance(p, dict))
        if isinstance(m.get("reasoning_content"), str):
            out.append(m["reasoning_content"])
    return squash(" ".join(out))


def check_model(qwen, sid, session, expects, timeout, report):
    report.section(f"model: qwen --resume {sid} <probe> (mock Chat Completions API)")
    mock = MockChatCompletions.for_agent("qwen")
    try:
        probe = f"SESSION_RELAY_PROBE_{uuid.uuid4().hex[:12]}"
        code, out = qwen.run("--auth-type", "openai", "--openai-api-key", "mock-key", "--openai-base-url", mock.base_url,
                             "-m", mock.MODEL, "--resume", sid, probe, timeout=timeout)
        report.detail(out)
        sent = [b for b in mock.chat_requests() if probe in json.dumps(b) and b.get("tools")]
    finally:
        mock.close()
    if not sent:
        report.fail("model", f"no request with the probe reached the model (exit {code}): {squash(out)[:400]}")
        return
    body = sent[0]
    text = request_text(body)
    report.info(f"the request carries {len(body.get('messages') or [])} messages")
    lost = [p for p in session.prompts if squash(p)[:80] not in text]
    missing = [f"{len(lost)} of {len(session.prompts)} prompts (first: {squash(lost[0])[:60]!r})"] if lost else []
    missing += [f"{what} {squash(t)[:60]!r}" for what, t in
                [("the last answer", session.last_answer)] + [("--expect", e) for e in expects]
                if t.strip() and squash(t)[:80] not in text]
    if len(body.get("messages") or []) < 3:
        report.fail("model", "only the probe (and the CLI's context) was sent: the history did not reach the model")
    elif missing:
        report.fail("model", f"the request lacks {'; '.join(missing)}")
    elif code != 0:
        report.fail("model", f"the turn failed (exit {code}): {squash(out)[:300]}")
    else:
        report.passed("model", "the history is sent with the next prompt")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("qwen_home")
    ap.add_argument("project_dir")
    ap.add_argument("session_id")
    ap.add_argument("--checks", default=",".join(CHECKS), help="comma list of " + ",".join(CHECKS))
    ap.add_argument("--expect", action="append", default=[], help="text the request must carry (repeatable)")
    ap.add_argument("--timeout", type=float, default=180, help="seconds for the resumed turn")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print qwen's output")
    args = ap.parse_args()

    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    if not checks or any(c not in CHECKS for c in checks):
        raise UsageError(f"--checks takes a comma list of {','.join(CHECKS)}, not {args.checks!r}")
    src = Path(args.qwen_home)
    if not os.path.isdir(args.project_dir):
        raise UsageError(f"PROJECT_DIR {args.project_dir} does not exist (Qwen Code must start in it)")
    project = os.path.realpath(args.project_dir)
    sid = args.session_id
    binary = find_cli("qwen", "QWEN_BIN")
    report = Report(verbose=args.verbose)
    chats = src / "projects" / project_folder(project) / "chats"
    session_file = chats / f"{sid}.jsonl"

    with Scratch("check_qwen", keep=args.keep) as scratch:
        home = scratch.path / "qwen-home"
        home.mkdir()
        print(f"qwen: {binary} ({cli_version(binary, env={'PATH': os.environ.get('PATH', ''), 'QWEN_HOME': str(scratch.path / 'version-home'), 'HOME': str(scratch.path)})})")
        lint_report = report if "lint" in checks else Report(silent=True)
        lint_report.section("lint")
        if not session_file.is_file():
            report.fail("lint", f"no {session_file.name} in {chats}")
            return report.finish()
        report.info(f"file: {session_file}")
        session = lint(session_file, sid, project, lint_report)
        pristine = scratch.path / "chats.pristine"
        copy_preserving(chats, pristine)
        live = home / "projects" / project_folder(project) / "chats"

        def restore():
            shutil.rmtree(live, ignore_errors=True)
            copy_preserving(pristine, live)

        qwen = Qwen(binary, scratch.path, home, project)
        if "list" in checks:
            restore()
            check_list(qwen, sid, session, report)
        if "model" in checks:
            restore()
            check_model(qwen, sid, session, args.expect, args.timeout, report)
    return report.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"check_qwen.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
