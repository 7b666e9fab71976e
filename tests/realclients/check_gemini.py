#!/usr/bin/env python3
"""Does the REAL Gemini CLI list, draw and send a session that another tool wrote?

usage: check_gemini.py [--checks lint,list,render,model] [--expect TEXT]... [--no-retention]
                       [-v] [--keep] GEMINI_CLI_HOME PROJECT_DIR SESSION_ID

  GEMINI_CLI_HOME  the folder that CONTAINS .gemini/ (what Gemini's GEMINI_CLI_HOME means; $HOME)
  PROJECT_DIR      the project the session belongs to (its real path is used, as Gemini does)
  SESSION_ID       the sessionId written in the session file

Checks (default: all):
  lint    the project's registration (projects.json, .project_root markers) and the session file
          against what Gemini CLI 0.61 needs: sessionId and projectHash, startTime/lastUpdated
          within the 30-day retention, message ids and types, a real prompt, tool calls with
          results; errors are what makes the CLI skip, delete or crash on a file;
  list    `gemini --list-sessions` in PROJECT_DIR must print [SESSION_ID];
  render  `gemini --resume SESSION_ID` in a private tmux must draw the first prompt and the last
          answer (or each --expect);
  model   `gemini -p --resume SESSION_ID <probe>` with an empty --fake-responses file: the CLI
          fails the turn and writes the request into an error report, which must carry every
          prompt and the last answer (the history reaches the model).

No network and no login: the model is replaced by the CLI's own hidden --fake-responses hook.
The given home is never written to: projects.json, the .project_root markers and the project's
chats/ are copied into a scratch home, and every check starts from that copy as it was (a start
of the CLI may append to, rewrite or delete session files). --no-retention turns the 30-day
cleanup off in the scratch home, for old samples.

Exit status: 0 = every selected check passed, 1 = a check failed (the output says why),
2 = usage or environment error (no gemini, no tmux, missing folders).
Environment: GEMINI_BIN overrides the binary; REALCLIENTS_HOME is where install.sh put the CLIs.
"""

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

# The shared helpers live beside this script; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    EXIT_USAGE, Report, Scratch, Tmux, UsageError, cli_version, copy_preserving, find_cli,
    node_exit_log_env, read_text, require_tool, screen_snippet, squash, terminal_log_tail,
    visible_text,
)

CHECKS = ("lint", "list", "render", "model")
TYPES = ("user", "gemini", "info", "error", "warning")
# User text the CLI neither lists nor sends: commands and its own injected context.
IGNORED_PROMPT = ("/", "?", "<session_context>", "<hook_context>")
SLUG = re.compile(r"^[a-z0-9-]+$")
RETENTION_DAYS = 30
# Skip the default model router: it would make an extra call before every turn.
MODEL = "gemini-2.5-flash"


def part_text(content):
    """The text a user reads in a message's content (a string or a Part list; thoughts left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    return "".join(p if isinstance(p, str) else p.get("text", "") for p in content
                   if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str)
                                             and not p.get("thought")))


def load_record(path):
    """The session as Gemini CLI 0.61 reads it: metadata lines merge, a message line replaces
    the message with the same id (first position, last content), {$set} merges metadata and
    $set.messages replaces the list, {$rewindTo} drops from that message on. A legacy .json is
    one document. Returns (metadata, messages, unparsable line count)."""
    raw = Path(path).read_text(encoding="utf-8", errors="replace")
    records, bad = [], 0
    for line in raw.split("\n"):
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError:
                bad += 1
    if str(path).endswith(".json") and not any(isinstance(r, dict) and "sessionId" in r for r in records):
        try:
            records, bad = [json.loads(raw)], 0
        except ValueError:
            pass
    meta, messages = {}, {}
    for r in records:
        if not isinstance(r, dict):
            continue
        if isinstance(r.get("$rewindTo"), str):
            ids = list(messages)
            for k in ids[ids.index(r["$rewindTo"]) if r["$rewindTo"] in ids else 0:]:
                del messages[k]
        elif isinstance(r.get("id"), str):
            messages[r["id"]] = r
        elif isinstance(r.get("$set"), dict):
            update = r["$set"]
            if isinstance(update.get("messages"), list):
                messages = {m["id"]: m for m in update["messages"] if isinstance(m, dict) and isinstance(m.get("id"), str)}
            meta.update({k: v for k, v in update.items() if k != "messages"})
        elif "sessionId" in r or "projectHash" in r:
            meta.update({k: v for k, v in r.items() if k != "messages"})
            for m in r.get("messages") or []:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    messages[m["id"]] = m
        elif r.get("type") in TYPES:
            messages[f"(no id) {len(messages)}"] = dict(r, _no_id=True)
    return meta, list(messages.values()), bad


def is_prompt(m):
    text = part_text(m.get("content")).strip()
    return m.get("type") == "user" and bool(text) and not text.startswith(IGNORED_PROMPT)


def usable(m):
    """What the CLI counts as conversation: without one, it does not list and then deletes."""
    if m.get("_no_id"):
        return False
    if m.get("type") == "user":
        return is_prompt(m)
    return m.get("type") == "gemini" and bool(part_text(m.get("content")).strip() or m.get("toolCalls")
                                               or m.get("thoughts"))


def parse_time(value):
    try:
        return datetime.strptime(str(value)[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def default_slug(project):
    s = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", os.path.basename(project).lower())).strip("-")
    return s or "project"


# --------------------------------------------------------------------------- locating the file


def find_slug(gemini, project, report):
    """The project's folder name under .gemini/tmp, as the CLI resolves it."""
    registry = {}
    try:
        registry = json.loads((gemini / "projects.json").read_text()).get("projects") or {}
    except (OSError, ValueError, AttributeError):
        pass
    if registry and not all(isinstance(v, str) and SLUG.match(v) for v in registry.values()):
        report.fail("lint", "projects.json holds a slug outside [a-z0-9-]: the CLI reads the whole file as empty")
    slug = registry.get(project) if isinstance(registry.get(project), str) else None
    markers = {}
    for m in glob.glob(str(gemini / "tmp" / "*" / ".project_root")):
        try:
            markers[Path(m).parent.name] = Path(m).read_text()
        except OSError:
            pass
    if slug:
        if slug in markers and markers[slug] != project:
            report.fail("lint", f"tmp/{slug}/.project_root names {markers[slug]!r}, not {project}: the CLI "
                                f"moves on to {slug}-1 and does not find the sessions")
        return slug
    named = [s for s, p in markers.items() if p == project]
    if named:
        return named[0]
    slug = default_slug(project)
    report.warn(f"{project} is neither in projects.json nor in a .project_root marker: the CLI would "
                f"take the slug {slug!r} (if free)")
    return slug


def find_session(chats, sid):
    """The file of this session, as the CLI picks: usable content first, then newest lastUpdated."""
    best = None
    for f in sorted(glob.glob(str(chats / "*"))):
        if not os.path.isfile(f):
            continue
        try:
            meta, messages, _ = load_record(f)
        except OSError:
            continue
        if meta.get("sessionId") != sid:
            continue
        key = (bool(re.match(r"^session-.*\.jsonl?$", os.path.basename(f))), any(map(usable, messages)),
               str(meta.get("lastUpdated") or ""))
        if best is None or key > best[0]:
            best = (key, Path(f))
    return best[1] if best else None


# --------------------------------------------------------------------------- lint


class Session:
    def __init__(self):
        self.prompts, self.first_shown, self.last_answer = [], "", ""


def lint(path, sid, project, retention, report):
    check = "lint"
    s = Session()
    meta, messages, bad = load_record(path)
    name = path.name
    if not re.match(r"^session-.*\.jsonl?$", name):
        report.fail(check, f"{name}: the CLI reads only session-*.jsonl (and legacy .json) files")
    if bad:
        report.warn(f"{bad} line(s) are not JSON: the CLI skips them")
    if not isinstance(meta.get("projectHash"), str) or not meta["projectHash"]:
        report.fail(check, "no projectHash string beside sessionId: the CLI ignores the file and its "
                           "cleanup deletes it")
    elif meta["projectHash"] != hashlib.sha256(project.encode()).hexdigest():
        report.warn("projectHash is not the sha256 of the project path (the CLI does not compare it)")
    if meta.get("kind") == "subagent":
        report.fail(check, 'kind "subagent": hidden from the listing and deleted by the cleanup')
    for field in ("startTime", "lastUpdated"):
        if parse_time(meta.get(field)) is None:
            report.fail(check, f"{field} missing or not a time: the CLI reads it as \"now\" on every load")
    last = parse_time(meta.get("lastUpdated"))
    if last and (datetime.now(timezone.utc) - last).days > RETENTION_DAYS:
        msg = (f"lastUpdated {meta['lastUpdated']} is older than {RETENTION_DAYS} days: the default "
               "session retention deletes the file at the next start")
        if retention:
            report.fail(check, msg)
        else:
            report.warn(msg)
    for m in messages:
        if m.get("_no_id"):
            report.fail(check, "a message without a string id: the CLI skips it")
        elif m.get("type") not in TYPES:
            report.fail(check, f"message {m.get('id')} has type {m.get('type')!r}: only {', '.join(TYPES)}; "
                               "another one crashes the resumed TUI")
    if not any(map(usable, messages)):
        report.fail(check, "no user prompt and no answer: the CLI does not list the file and deletes it")
    calls = [tc for m in messages if m.get("type") == "gemini" for tc in m.get("toolCalls") or []]
    for tc in calls:
        if not isinstance(tc, dict) or "result" not in tc:
            report.fail(check, f"tool call {tc.get('id') if isinstance(tc, dict) else tc!r} has no result: the "
                               "model gets a functionCall without its functionResponse")
        elif tc.get("status") != "success":
            report.warn(f"tool call {tc.get('id')} has status {tc.get('status')!r}: the TUI does not draw it")
    for m in messages:
        c = m.get("content")
        if m.get("type") == "user" and isinstance(c, list) and any(isinstance(p, dict) and "functionResponse" in p for p in c):
            report.warn(f"user message {m.get('id')} holds functionResponse parts: drawn as "
                        "\"[Function Response: ...]\" (results belong in toolCalls)")
            break
    if name.endswith(f"-{sid[:8]}.jsonl"):
        report.warn("the file name ends in the id's first 8 characters: after a --resume, the next "
                    "fresh start deletes it with the stray file (gemini-cli#27368)")
    prompts = [m for m in messages if is_prompt(m)]
    s.prompts = [part_text(m.get("content")) for m in prompts]
    if prompts:
        s.first_shown = part_text(prompts[0].get("displayContent") or prompts[0].get("content"))
    answers = [part_text(m.get("content")) for m in messages if m.get("type") == "gemini"]
    answers = [a for a in answers if a.strip()]
    s.last_answer = answers[-1] if answers else ""
    counts = ", ".join(f"{sum(m.get('type') == t for m in messages)} {t}" for t in TYPES
                       if any(m.get("type") == t for m in messages))
    report.info(f"{name}: {len(messages)} messages ({counts}), {len(calls)} tool calls")
    if check not in report.failed:
        report.passed(check)
    return s


# --------------------------------------------------------------------------- the CLI


class Gemini:
    def __init__(self, binary, scratch, home, project, retention):
        self.binary, self.project, self.retention = binary, project, retention
        self.home = home
        self.tmp = scratch / "tmp"
        self.tmp.mkdir(exist_ok=True)
        # An empty script for the CLI's fake model: no request ever leaves the machine.
        self.empty = scratch / "empty.responses"
        self.empty.write_text("")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "GEMINI_CLI_HOME": str(home), "GEMINI_API_KEY": "session-relay-check-placeholder",
            # No trust dialog; one process (no relaunch child to outlive the check); error
            # reports (the model check reads them) in our scratch folder.
            "GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true", "TMPDIR": str(self.tmp),
        }

    def settings(self, auth):
        """auth: select API-key auth (the TUI otherwise opens an auth dialog). Without it the
        listing makes no model call for a session title."""
        general = {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
        if not self.retention:
            general["sessionRetention"] = {"enabled": False}
        settings = {"general": general}
        if auth:
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        (self.home / ".gemini" / "settings.json").write_text(json.dumps(settings))

    def run(self, *args, timeout=60):
        try:
            out = subprocess.run([self.binary, *args], cwd=self.project, env=self.env, capture_output=True,
                                 text=True, timeout=timeout)
            return out.returncode, out.stdout + out.stderr
        except subprocess.TimeoutExpired as e:
            return None, f"(timed out after {timeout}s) {e.stdout or ''}"


def check_list(gemini, sid, session_file, report):
    report.section("list: gemini --list-sessions")
    gemini.settings(auth=False)
    code, out = gemini.run("--list-sessions")
    line = next((l.strip() for l in out.splitlines() if f"[{sid}]" in l), None)
    if line:
        report.passed("list", line)
    else:
        gone = "" if session_file.exists() else " (the CLI's cleanup deleted the file: see the lint)"
        report.fail("list", f"[{sid}] not in the listing{gone}:\n{out.strip()[-600:]}")


def check_render(gemini, scratch, sid, session, expects, timeout, report):
    report.section(f"render: gemini --resume {sid} (private tmux)")
    needles = list(dict.fromkeys(expects or [n for n in (screen_snippet(session.first_shown),
                                                          screen_snippet(session.last_answer)) if n]))
    if not needles:
        report.fail("render", "nothing plain enough to look for on screen; pass --expect")
        return
    gemini.settings(auth=True)
    fatal = re.compile(r"Error resuming session|Invalid session identifier|unexpected critical error|"
                       r"No previous sessions found|\[check: program exited")
    # Once in a while (1 of 41 sessions in one of five full runs) the TUI drew nothing at all in
    # the time given: the program did not start, which says nothing of the session. Only then
    # is it started once more; a screen with anything on it is judged as it is.
    # For each start, what the TUI wrote to its terminal and how the program ended. While it
    # runs, Gemini sends its own stderr into its UI: an uncaught exception exits 1 and leaves
    # nothing on screen (before the first frame, not even the TUI), so only the exit log has it.
    logs = []
    for attempt in (1, 2):
        tmux = Tmux(scratch)
        log, exit_log = scratch / f"render-{attempt}.log", scratch / f"render-{attempt}.exit.log"
        logs.append((log, exit_log))
        try:
            tmux.start("render", [gemini.binary, "-m", MODEL, "--fake-responses-non-strict",
                                  gemini.empty, "--resume", sid], gemini.project,
                       dict(gemini.env, TERM="xterm-256color", **node_exit_log_env(exit_log)), log=log)
            screen = tmux.wait_for("render", lambda s: bool(fatal.search(s))
                                   or all(squash(n) in visible_text(s) for n in needles), timeout)
        finally:
            tmux.close()
        if screen.strip() or attempt == 2:
            break
        report.detail("the TUI drew nothing: starting it once more")
    report.detail(screen.rstrip())
    bad = fatal.search(screen)
    missing = [n for n in needles if squash(n) not in visible_text(screen)]
    tail = "\n".join(l.rstrip() for l in screen.splitlines() if l.strip())[-800:]
    if bad:
        report.fail("render", f"the TUI shows {bad.group(0)!r}:\n{tail}")
    elif missing:
        report.fail("render", f"not on screen once the TUI was idle (or after {timeout}s): {missing}\n{tail}")
    else:
        report.passed("render", f"drawn: {needles}")
        return
    for n, (log, exit_log) in enumerate(logs, 1):
        start = f"start {n} of {len(logs)}: " if len(logs) > 1 else ""
        for what, text in (("what the TUI wrote to its terminal (the end, escapes stripped)",
                            terminal_log_tail(log)),
                           ("how the program ended (node_exit_log.cjs)", read_text(exit_log).strip())):
            lines = (text or "(nothing)").splitlines()
            report.info(f"{start}{what}:\n" + "\n".join(f"   | {line}" for line in lines))


def check_model(gemini, sid, session, expects, timeout, report):
    report.section(f"model: gemini -p --resume {sid} <probe> (empty fake model)")
    gemini.settings(auth=False)
    for old in gemini.tmp.glob("gemini-client-error-*.json"):
        old.unlink()
    probe = f"SESSION_RELAY_PROBE_{uuid.uuid4().hex[:12]}"
    code, out = gemini.run("-m", MODEL, "--fake-responses", str(gemini.empty), "--resume", sid, "-p", probe,
                           timeout=timeout)
    report.detail(out)
    if re.search(r"Error resuming session|Invalid session identifier", out):
        report.fail("model", f"the CLI could not resume it: {squash(out)[:300]}")
        return
    # With nothing scripted, the fake model fails the turn and the CLI writes the request it
    # tried to send (`context`: the contents) into an error report.
    contents = None
    for f in sorted(gemini.tmp.glob("gemini-client-error-*.json")):
        try:
            ctx = json.loads(f.read_text()).get("context")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(ctx, list) and probe in json.dumps(ctx):
            contents = ctx
    if contents is None:
        report.fail("model", f"no request with the probe was captured (exit {code}): {squash(out)[:300]}")
        return
    sent = squash(" ".join(part_text(c.get("parts")) for c in contents if isinstance(c, dict)))
    report.info(f"the request carries {len(contents)} turns")
    lost = [p for p in session.prompts if squash(p)[:80] not in sent]
    missing = [f"{len(lost)} of {len(session.prompts)} prompts (first: {squash(lost[0])[:60]!r})"] if lost else []
    missing += [f"{what} {squash(t)[:60]!r}" for what, t in
                [("the last answer", session.last_answer)] + [("--expect", e) for e in expects]
                if t.strip() and squash(t)[:80] not in sent]
    if len(contents) < 3:
        report.fail("model", "only the probe (and the CLI's context) was sent: the history did not reach the model")
    elif missing:
        report.fail("model", f"the request lacks {'; '.join(missing)}")
    else:
        report.passed("model", "the history is sent with the next prompt")


# --------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gemini_cli_home")
    ap.add_argument("project_dir")
    ap.add_argument("session_id")
    ap.add_argument("--checks", default=",".join(CHECKS), help="comma list of " + ",".join(CHECKS))
    ap.add_argument("--expect", action="append", default=[],
                    help="text that the TUI must draw and the request carry (repeatable)")
    ap.add_argument("--no-retention", action="store_true", help="turn the 30-day cleanup off (old samples)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds for each gemini run")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print screens and gemini's output")
    args = ap.parse_args()

    checks = [c.strip() for c in args.checks.split(",") if c.strip()]
    if not checks or any(c not in CHECKS for c in checks):
        raise UsageError(f"--checks takes a comma list of {','.join(CHECKS)}, not {args.checks!r}")
    src = Path(args.gemini_cli_home)
    if not (src / ".gemini").is_dir():
        raise UsageError(f"{src} has no .gemini/ (GEMINI_CLI_HOME is the folder that contains it)")
    if not os.path.isdir(args.project_dir):
        raise UsageError(f"PROJECT_DIR {args.project_dir} does not exist (Gemini must start in it)")
    project = os.path.realpath(args.project_dir)
    sid = args.session_id
    binary = find_cli("gemini", "GEMINI_BIN")
    if "render" in checks:
        require_tool("tmux")
    report = Report(verbose=args.verbose)
    retention = not args.no_retention

    with Scratch("check_gemini", keep=args.keep) as scratch:
        home = scratch.path / "home"
        (home / ".gemini").mkdir(parents=True)
        print(f"gemini: {binary} ({cli_version(binary, env={'PATH': os.environ.get('PATH', ''), 'GEMINI_CLI_HOME': str(scratch.path / 'version-home')})})")
        lint_report = report if "lint" in checks else Report(silent=True)
        lint_report.section("lint")
        slug = find_slug(src / ".gemini", project, lint_report)
        chats = src / ".gemini" / "tmp" / slug / "chats"
        session_file = find_session(chats, sid) if chats.is_dir() else None
        if session_file is None:
            others = [f for f in glob.glob(str(src / ".gemini" / "tmp" / "*" / "chats" / "*"))
                      if sid in Path(f).read_text(errors="replace")[:4096]]
            hint = f" (but {others[0]} holds it: another project's folder)" if others else ""
            report.fail("lint", f"no session file with sessionId {sid} in {chats}{hint}")
            return report.finish()
        report.info(f"file: {session_file}")
        session = lint(session_file, sid, project, retention, lint_report)

        # The scratch home: the project registry, every marker, this project's chats.
        if (src / ".gemini" / "projects.json").is_file():
            copy_preserving(src / ".gemini" / "projects.json", home / ".gemini" / "projects.json")
        for marker in glob.glob(str(src / ".gemini" / "*" / "*" / ".project_root")):
            rel = Path(marker).relative_to(src / ".gemini")
            if rel.parts[0] in ("tmp", "history"):
                copy_preserving(marker, home / ".gemini" / rel)
        pristine = scratch.path / "chats.pristine"
        copy_preserving(chats, pristine)
        live = home / ".gemini" / "tmp" / slug / "chats"
        copied = live / session_file.name

        def restore():
            """Every check starts from the files as they were: a start of the CLI may append to,
            rewrite or (retention, #27368) delete them."""
            shutil.rmtree(live, ignore_errors=True)
            copy_preserving(pristine, live)

        gemini = Gemini(binary, scratch.path, home, project, retention)
        if "list" in checks:
            restore()
            check_list(gemini, sid, copied, report)
        if "render" in checks:
            restore()
            check_render(gemini, scratch.path, sid, session, args.expect, args.timeout, report)
        if "model" in checks:
            restore()
            check_model(gemini, sid, session, args.expect, args.timeout, report)
    return report.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"check_gemini.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
