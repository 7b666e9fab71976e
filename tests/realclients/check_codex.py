#!/usr/bin/env python3
"""Does the REAL Codex CLI list, read and draw a rollout that session-relay wrote?

usage: check_codex.py [--tui] [--in-place] [--expect TEXT]... [-v] [--keep] CODEX_HOME SESSION_ID

Checks, in order:
  lint        the rollout file against what Codex needs from a session written by another tool
              (its name and place, session_meta first, no model_provider, both the model's and
              the TUI's view of every turn, tool calls answered, ...);
  list        `codex app-server` (JSON-RPC over stdio; no network, no login) must return the
              thread from thread/list, with all filters open AND with the default filters that a
              plain `codex resume` picker uses;
  read        thread/read of the thread must give back the conversation: every prompt and every
              answer the file holds for the TUI, and each --expect text;
  tui         (--tui) `codex resume <id>` in a private tmux server must draw the end of the old
              conversation (the last prompt and the last answer, or each --expect text).

By default the rollout (and session_index.jsonl) is copied into a scratch CODEX_HOME, so the home
that was given is never written to. With --in-place codex runs against CODEX_HOME itself: it then
creates its state_5.sqlite there and indexes the session, which is what a test needs to compare
Codex's own thread index row with the one session-relay writes.

Exit status: 0 = every check passed, 1 = a check failed (the output says why), 2 = usage or
environment error (no codex, no tmux, no such home).
Environment: CODEX_BIN overrides the binary; REALCLIENTS_HOME is where install.sh put the CLIs.
"""

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

# The shared helpers live beside this script; no __pycache__ is left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    EXIT_USAGE, ISO_MS, Report, Scratch, Tmux, UsageError, cli_version, copy_preserving,
    find_cli, read_jsonl, require_tool, screen_snippet, squash, visible_text,
)

ROLLOUT_NAME = re.compile(
    r"^rollout-(\d{4})-(\d{2})-(\d{2})T\d{2}-\d{2}-\d{2}-"
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
)
# Codex's listing reads only the head of a file to find the first prompt (its preview).
LISTING_HEAD_LINES = 200
# User-role messages that Codex itself injects: context for the model, not the user's words.
INJECTED = re.compile(r"^\s*<(environment_context|user_instructions|user_shell_command|turn_aborted)\b")
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = {"function_call_output", "custom_tool_call_output"}
# Every thread source Codex knows, so that a listing with "all filters open" really is one.
ALL_SOURCES = ["cli", "vscode", "exec", "appServer", "subAgent", "subAgentReview", "subAgentCompact",
               "subAgentThreadSpawn", "subAgentOther", "unknown"]


# --------------------------------------------------------------------------- lint


class Rollout:
    """What the lint learned about the file, for the later checks."""

    def __init__(self, path):
        self.path = path
        self.cwd = None
        self.prompts = []  # user_message events: what the TUI draws as the user's turns
        self.answers = []  # agent_message events: what the TUI draws as the assistant's


def message_text(payload):
    return "".join(c.get("text", "") for c in payload.get("content") or [] if isinstance(c, dict))


def lint(home, sid, report):
    """Static checks of the rollout; returns a Rollout, or None when there is no file to check."""
    check = "lint"
    found = []
    for sub in ("sessions", "archived_sessions"):
        for root, _, files in os.walk(home / sub):
            found += [Path(root) / f for f in files if sid in f.lower() and ".jsonl" in f]
    if not found:
        report.fail(check, f"no rollout named *{sid}.jsonl under {home}/sessions")
        return None
    if len(found) > 1:
        report.fail(check, f"{len(found)} files carry this id ({', '.join(map(str, found))}): "
                           "which one Codex resumes is not defined")
    path = sorted(found)[0]
    report.info(f"file: {path}")
    rel = path.relative_to(home).parts
    m = ROLLOUT_NAME.match(path.name)
    if not m:
        report.fail(check, f"file name {path.name!r} is not rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl: "
                           "Codex's listing skips it")
    elif m.group(4) != sid:
        report.fail(check, f"the uuid in the file name ({m.group(4)}) is not the session id")
    if rel[0] == "archived_sessions":
        report.fail(check, "the file is under archived_sessions/: `codex resume` does not offer it")
    elif not (len(rel) == 5 and re.fullmatch(r"\d{4}", rel[1]) and re.fullmatch(r"\d\d", rel[2])
              and re.fullmatch(r"\d\d", rel[3])):
        report.fail(check, "the file is not at sessions/YYYY/MM/DD/: the listing walks only that layout")
    if path.suffix != ".jsonl":
        report.fail(check, f"{path.name}: only plain .jsonl rollouts are read by every Codex version")
        return None

    rollout = Rollout(path)
    lines = read_jsonl(path)
    records = []
    for n, obj, err in lines:
        if err:
            report.fail(check, f"line {n} is not JSON ({err}): Codex drops it")
        elif not isinstance(obj, dict) or not isinstance(obj.get("payload"), dict) or "type" not in obj:
            report.fail(check, f"line {n} is not {{timestamp, type, payload}}: Codex drops it")
        else:
            if not ISO_MS.match(str(obj.get("timestamp", ""))):
                report.fail(check, f"line {n} has no RFC 3339 top-level timestamp: Codex drops the line")
            records.append((n, obj))

    # session_meta: the thread's identity. Without it on line 1, "No saved session found".
    if not records or records[0][0] != lines[0][0] or records[0][1]["type"] != "session_meta":
        report.fail(check, "line 1 is not a session_meta line: thread/read and `codex resume` reject the file")
    else:
        meta = records[0][1]["payload"]
        if str(meta.get("id", "")).lower() != sid:
            report.fail(check, f"session_meta.id {meta.get('id')!r} is not the file's id {sid}")
        if not ISO_MS.match(str(meta.get("timestamp", ""))):
            report.fail(check, "session_meta.timestamp is not an RFC 3339 time")
        cwd = meta.get("cwd")
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            report.fail(check, f"session_meta.cwd {cwd!r} is not an absolute path: the picker filters on it")
        else:
            rollout.cwd = cwd
            if not os.path.isdir(cwd):
                report.warn(f"session cwd {cwd} does not exist here: `codex resume` will ask where to run")
        if meta.get("source") != "cli":
            report.fail(check, f"session_meta.source is {meta.get('source')!r}, not \"cli\": "
                               "the default picker hides non-interactive threads")
        if "model_provider" in meta:
            report.fail(check, f"session_meta.model_provider is {meta['model_provider']!r}: Codex refuses "
                               "to resume a thread under another provider than the one recorded; omit it")
        if meta.get("history_mode") not in (None, "legacy"):
            report.fail(check, f"history_mode {meta.get('history_mode')!r}: paginated files need Codex's own "
                               "ordinals and item events; a written file must be legacy (no history_mode)")
    for n, obj in records[1:]:
        if obj["type"] == "session_meta":
            report.warn(f"line {n} is a second session_meta (Codex keeps the first)")

    # The two views of every turn: response_item lines are what the MODEL gets back on resume,
    # event_msg lines are what the TUI DRAWS. A file with only one of them is half a session.
    model_prompts, model_answers = [], []
    calls, outputs = {}, {}
    first_prompt_line = None
    source_agent = None
    if records and records[0][1]["type"] == "session_meta":
        source_agent = (records[0][1]["payload"].get("session_relay") or {}).get("source_agent")
    last_ts, backwards = "", []
    for n, obj in records:
        kind, p = obj["type"], obj["payload"]
        ts = str(obj.get("timestamp", ""))
        if ts and last_ts and ts < last_ts:
            backwards.append(n)
        last_ts = max(ts, last_ts)
        if kind == "event_msg" and p.get("type") == "user_message":
            text = p.get("message")
            if isinstance(text, str) and text.strip():
                rollout.prompts.append(text)
                first_prompt_line = first_prompt_line or n
        elif kind == "event_msg" and p.get("type") == "agent_message":
            if isinstance(p.get("message"), str) and p["message"].strip():
                rollout.answers.append(p["message"])
        elif kind == "response_item":
            t = p.get("type")
            if t == "message" and p.get("role") == "user":
                text = message_text(p)
                if text.strip() and not INJECTED.match(text):
                    model_prompts.append(text)
            elif t == "message" and p.get("role") == "assistant":
                model_answers.append(message_text(p))
            elif t in CALLS:
                cid = p.get("call_id") or p.get("id")
                if not cid:
                    report.fail(check, f"line {n}: {t} without call_id")
                calls[cid] = n
                if t == "function_call" and not isinstance(p.get("arguments"), str):
                    report.fail(check, f"line {n}: function_call arguments must be a JSON string, "
                                       f"not {type(p.get('arguments')).__name__}")
            elif t in OUTPUTS:
                outputs[p.get("call_id")] = n
            elif t == "reasoning" and p.get("encrypted_content") and source_agent not in (None, "codex"):
                report.fail(check, f"line {n}: reasoning with encrypted_content in a session relayed from "
                                   f"{source_agent}: only OpenAI can produce it; the API rejects a fake one")

    if backwards:
        report.warn(f"{len(backwards)} line(s) have an earlier timestamp than the line before "
                    f"(first: line {backwards[0]})")
    if first_prompt_line is None:
        report.fail(check, "no event_msg user_message with text: the thread has no preview, "
                           "Codex does not list it and the TUI draws no prompt")
    elif first_prompt_line > LISTING_HEAD_LINES:
        report.fail(check, f"the first user_message is on line {first_prompt_line}: the listing reads "
                           f"only the first ~{LISTING_HEAD_LINES} lines and will not list the thread")
    if not model_prompts:
        report.fail(check, "no response_item user message: on resume the model gets none of the "
                           "user's prompts")
    elif rollout.prompts and len(model_prompts) != len(rollout.prompts):
        report.fail(check, f"{len(rollout.prompts)} user_message events but {len(model_prompts)} user "
                           "response items: the TUI and the model would see different conversations")
    if model_answers and not rollout.answers:
        report.fail(check, "assistant response items but no agent_message event: the TUI draws none "
                           "of the answers")
    if rollout.answers and not model_answers:
        report.fail(check, "agent_message events but no assistant response item: the model gets none "
                           "of its earlier answers back")
    unanswered = sorted(set(calls) - set(outputs), key=lambda c: calls[c])
    if unanswered:
        report.fail(check, f"{len(unanswered)} tool call(s) without output (first: {unanswered[0]} on "
                           f"line {calls[unanswered[0]]}): the Responses API rejects the next turn")
    orphans = sorted(set(outputs) - set(calls), key=lambda c: outputs[c])
    if orphans:
        report.fail(check, f"{len(orphans)} tool output(s) without a call (first: {orphans[0]} on line "
                           f"{outputs[orphans[0]]}): the Responses API rejects the next turn")

    # The title a relay leaves in session_index.jsonl (optional, but it must parse).
    index = home / "session_index.jsonl"
    if index.exists():
        names = []
        for n, obj, err in read_jsonl(index):
            if err or not isinstance(obj, dict):
                report.fail(check, f"session_index.jsonl line {n} is not a JSON object")
            elif str(obj.get("id", "")).lower() == sid:
                if not isinstance(obj.get("thread_name"), str) or not obj["thread_name"].strip():
                    report.fail(check, f"session_index.jsonl line {n}: thread_name missing or empty")
                names.append(obj.get("thread_name"))
        if names:
            report.info(f"thread name: {names[-1]!r}")
    report.info(f"{len(records)} lines; {len(rollout.prompts)} prompts and {len(rollout.answers)} answers "
                f"for the TUI; {len(model_prompts)}/{len(model_answers)} for the model; {len(calls)} tool calls")
    if "lint" not in report.failed:
        report.passed(check)
    return rollout


# --------------------------------------------------------------------------- app-server


class AppServer:
    """A `codex app-server` child speaking JSON-RPC, one JSON object per line on stdio."""

    def __init__(self, argv, env, cwd):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, env=env, cwd=cwd)
        self.lines = queue.Queue()
        self.stderr = []
        self.next_id = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read_stdout(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def call(self, method, params, timeout=90):
        """The result of a request; raises RuntimeError with the server's error or stderr."""
        self.next_id += 1
        want = self.next_id
        self._send({"jsonrpc": "2.0", "id": want, "method": method, "params": params})
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                raise RuntimeError(f"app-server exited during {method}: {''.join(self.stderr)[-1500:]}")
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "method" in msg and "id" in msg:
                # The server asks us something (approvals, ...): we are not a UI; decline.
                self._send({"jsonrpc": "2.0", "id": msg["id"],
                            "error": {"code": -32601, "message": "not supported by check_codex"}})
            elif msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {json.dumps(msg['error'])[:600]}")
                return msg.get("result")
        raise RuntimeError(f"no answer to {method} in {timeout}s: {''.join(self.stderr)[-1500:]}")

    def notify(self, method, params=None):
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=15)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def find_thread(server, sid, params):
    """Page through thread/list until the thread shows up; returns it or None."""
    cursor = None
    for _ in range(100):
        page = server.call("thread/list", dict(params, limit=100, **({"cursor": cursor} if cursor else {})))
        for thread in page.get("data", []):
            if str(thread.get("id", "")).lower() == sid:
                return thread
        cursor = page.get("nextCursor")
        if not cursor:
            return None
    return None


def item_texts(thread):
    """(prompts, answers) as thread/read returns them, whitespace-squashed."""
    prompts, answers = [], []
    for turn in thread.get("turns") or []:
        for item in turn.get("items") or []:
            if item.get("type") == "userMessage":
                prompts.append(squash(" ".join(c.get("text", "") for c in item.get("content") or []
                                               if isinstance(c, dict))))
            elif item.get("type") == "agentMessage":
                answers.append(squash(item.get("text") or ""))
    return prompts, answers


def missing_from(wanted, got):
    """The texts of `wanted` that no text of `got` contains (both squashed)."""
    return [w for w in wanted if squash(w) and not any(squash(w) in g for g in got)]


def check_app_server(codex, sid, rollout, expects, env, cwd, report):
    report.section("app-server: thread/list and thread/read")
    server = AppServer([codex, "app-server", "--listen", "stdio://"], env, cwd)
    try:
        server.call("initialize", {"clientInfo": {"name": "session-relay-check", "version": "1"},
                                   "capabilities": {"experimentalApi": True}})
        server.notify("initialized")
        thread = find_thread(server, sid, {"sourceKinds": ALL_SOURCES, "modelProviders": []})
        if thread is None:
            report.fail("list", "thread/list (all sources, all providers) does not return the thread")
        else:
            report.info(f"listed: preview {squash(thread.get('preview') or '')[:60]!r}, "
                        f"historyMode {thread.get('historyMode')}, source {thread.get('source')}")
            if not (thread.get("preview") or "").strip():
                report.fail("list", "the thread is listed without a preview (no first prompt found)")
            # What `codex resume` and a plain client see: interactive sources, current provider.
            if find_thread(server, sid, {}) is None:
                report.fail("list", "a plain thread/list (default filters, as the `codex resume` picker "
                                    "uses) does not return the thread")
            elif "list" not in report.failed:
                report.passed("list")
        try:
            read = server.call("thread/read", {"threadId": sid, "includeTurns": True})
        except RuntimeError as e:
            report.fail("read", f"thread/read failed: {e}")
            return
        prompts, answers = item_texts(read.get("thread") or {})
        report.info(f"thread/read: {len(read['thread'].get('turns') or [])} turns, "
                    f"{len(prompts)} user messages, {len(answers)} agent messages")
        if not prompts:
            report.fail("read", "thread/read gives no userMessage item")
        lost_prompts = missing_from(rollout.prompts, prompts)
        lost_answers = missing_from(rollout.answers, answers)
        if lost_prompts:
            report.fail("read", f"{len(lost_prompts)} of {len(rollout.prompts)} prompts are not in "
                                f"thread/read, first: {squash(lost_prompts[0])[:80]!r}")
        if lost_answers:
            report.fail("read", f"{len(lost_answers)} of {len(rollout.answers)} answers are not in "
                                f"thread/read, first: {squash(lost_answers[0])[:80]!r}")
        everything = " ".join(prompts + answers) + " " + squash(json.dumps(read, ensure_ascii=False))
        for text in expects:
            if squash(text) not in everything:
                report.fail("read", f"--expect {text!r} is not in thread/read")
        if "read" not in report.failed:
            report.passed("read", "every prompt and answer of the file came back")
    except RuntimeError as e:
        report.fail("app-server", str(e))
    finally:
        server.close()


# --------------------------------------------------------------------------- TUI


def tail_snippet(text):
    """Plain words from the END of a message: Codex's TUI draws on the alternate screen, with no
    scrollback, so the end of the last answer is what is sure to be visible."""
    lines = [l for l in str(text).splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        s = screen_snippet(lines[i])
        if s:
            return s
    return ""


def check_tui(codex, sid, rollout, expects, env, scratch, timeout, report):
    report.section(f"tui: codex resume {sid} (private tmux)")
    if expects:
        needles = list(expects)
    else:
        needles = [s for s in (screen_snippet(rollout.prompts[-1]) if rollout.prompts else "",
                               tail_snippet(rollout.answers[-1]) if rollout.answers else "") if s]
        needles = list(dict.fromkeys(needles))
    if not needles:
        report.fail("tui", "nothing plain enough to look for on screen; pass --expect")
        return
    # Run where the user will resume: the session's cwd. Elsewhere Codex first asks which
    # directory to use (handled below).
    cwd = rollout.cwd if rollout.cwd and os.path.isdir(rollout.cwd) else str(scratch / "elsewhere")
    os.makedirs(cwd, exist_ok=True)
    # The TUI opens on its login screen without credentials: store a placeholder API key in the
    # scratch home, through codex's own `login --with-api-key`. The thread then resumes under
    # the default "openai" provider, as for most users (a provider of our own would trip
    # Codex's provider lock: it refuses to resume a thread under another provider than the
    # recorded one). openai_base_url points that provider at a closed local port: without it
    # the TUI spends ~10 s retrying to fetch its model list from the network before it draws.
    # No prompt is submitted, so no request is ever made with the key.
    login = subprocess.run([codex, "login", "--with-api-key"], input="sk-session-relay-check-placeholder",
                           env=env, cwd=str(scratch), capture_output=True, text=True, timeout=60)
    if login.returncode != 0:
        report.fail("tui", f"could not store a placeholder API key: {squash(login.stderr)[-300:]}")
        return
    # --no-daemon: the default TUI starts a background app-server that outlives it.
    argv = [codex, "-c", 'openai_base_url="http://127.0.0.1:9/v1"', "resume", "--no-daemon", sid]
    tmux = Tmux(scratch)
    answered = set()

    def answer_dialogs(screen):
        if "Use session directory" in screen and "cwd" not in answered:
            # Keep the recorded directory when it exists; otherwise take the current one.
            tmux.send_keys("tui", *(["Enter"] if cwd == rollout.cwd else ["Down", "Enter"]))
            answered.add("cwd")
        elif re.search(r"(?i)press enter to (continue|confirm)", screen) and len(answered) < 5:
            tmux.send_keys("tui", "Enter")
            answered.add(f"dialog{len(answered)}")

    # Only what Codex itself prints when it cannot resume: the conversation on screen may hold
    # any text, "Error:" included, so nothing more generic can be taken for a failure.
    errors = re.compile(r"No saved session found|Sign in with ChatGPT|Provide your own API key|"
                        r"\[check: program exited")
    try:
        tmux.start("tui", argv, cwd, dict(env, TERM="xterm-256color"))
        screen = tmux.wait_for(
            "tui", lambda s: all(n in visible_text(s) for n in map(squash, needles)) or bool(errors.search(s)),
            timeout, on_screen=answer_dialogs)
    finally:
        tmux.close()
    shown = visible_text(screen)
    missing = [n for n in needles if squash(n) not in shown]
    report.detail(screen.rstrip())
    bad = errors.search(screen)
    if bad:
        report.fail("tui", f"the TUI shows {bad.group(0).strip()!r}: " + squash(
            "\n".join(l for l in screen.splitlines() if l.strip())[-300:]))
    elif missing:
        tail = "\n".join(l.rstrip() for l in screen.splitlines() if l.strip())[-600:]
        report.fail("tui", f"not on screen once the TUI was idle (or after {timeout}s): {missing}\n{tail}")
    else:
        report.passed("tui", f"drawn: {needles}")


# --------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("codex_home")
    ap.add_argument("session_id")
    ap.add_argument("--tui", action="store_true", help="also resume it in the real TUI (needs tmux)")
    ap.add_argument("--in-place", action="store_true",
                    help="run codex against CODEX_HOME itself (it writes its databases there)")
    ap.add_argument("--expect", action="append", default=[], help="text that must come back (repeatable)")
    ap.add_argument("--timeout", type=float, default=40, help="seconds to wait for the TUI")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the TUI's screen")
    args = ap.parse_args()

    home = Path(args.codex_home)
    if not home.is_dir():
        raise UsageError(f"CODEX_HOME {home} is not a directory")
    home = home.resolve()
    sid = args.session_id.lower()
    if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", sid):
        raise UsageError(f"{args.session_id!r} is not a session uuid")
    if args.tui and args.in_place:
        raise UsageError("--tui runs only in a scratch copy (the TUI would need a login in the real home)")
    codex = find_cli("codex", "CODEX_BIN")
    if args.tui:
        require_tool("tmux")  # looked for before anything runs: a missing tmux is exit 2
    report = Report(verbose=args.verbose)
    print(f"codex: {codex} ({cli_version(codex)})")

    report.section("lint")
    rollout = lint(home, sid, report)
    if rollout is None:
        return report.finish()

    with Scratch("check_codex", keep=args.keep) as scratch:
        scratch = scratch.path
        if args.in_place:
            codex_home = home
        else:
            codex_home = scratch / "codex-home"
            copy_preserving(rollout.path, codex_home / rollout.path.relative_to(home))
            if (home / "session_index.jsonl").exists():
                copy_preserving(home / "session_index.jsonl", codex_home / "session_index.jsonl")
            # Trust the directory the TUI runs in, or it opens with a trust question.
            if rollout.cwd:
                (codex_home / "config.toml").write_text(
                    f'[projects.{json.dumps(rollout.cwd)}]\ntrust_level = "trusted"\n')
        # Only what codex needs: none of the caller's API keys, configs or CODEX_HOME leak in.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch / "user-home"),
               "CODEX_HOME": str(codex_home), "LANG": "C.UTF-8", "RUST_LOG": "error"}
        os.makedirs(env["HOME"], exist_ok=True)
        check_app_server(codex, sid, rollout, args.expect, env, str(scratch), report)
        if args.tui:
            check_tui(codex, sid, rollout, args.expect, env, scratch, args.timeout, report)
    return report.finish()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"check_codex.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
