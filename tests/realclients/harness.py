"""Shared pieces of the real-client checks (check_codex.py, check_claude.py, check_gemini.py,
check_copilot.py, check_qwen.py, check_pi.py, run_compaction.py).

The checks open a session that session-relay wrote in the REAL agent CLI, offline, and judge
what the CLI does with it. This module holds what they have in common:

- finding the CLIs that install.sh put in its cache (pinned versions),
- a scratch folder, so that a check never writes into the home it was given,
- a private tmux server to drive the interactive TUIs and read their screen,
- a tiny mock of the Anthropic Messages API that records every request, one of the OpenAI
  Responses API that runs a shell call and answers compactions (for Codex's hooks), and one of
  the OpenAI Chat Completions API (for pi, Qwen Code, Copilot CLI, or any CLI that takes a
  custom OpenAI-compatible provider),
- a report that prints PASS/FAIL/WARN lines and turns them into the exit status,
- text helpers to pick words from a transcript that survive the TUIs' rendering.

Alone, `python3 harness.py chat-mock [--agent AGENT] [PORT]` serves the Chat Completions mock
for a manual run: it prints the base URL, then every request it receives, as JSON lines.

Exit status convention for every script: 0 = every check passed, 1 = a check failed (the output
says why), 2 = usage or environment error (missing CLI, tmux, bad arguments).
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or a missing tool: the check could not run at all (exit 2)."""


def die_usage(msg):
    print(f"{Path(sys.argv[0]).name}: {msg}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


# --------------------------------------------------------------------------- the installed CLIs


def clients_home():
    """Where install.sh installs the pinned CLIs."""
    return Path(os.environ.get("REALCLIENTS_HOME") or Path.home() / ".cache/session-relay-realclients")


def find_cli(name, env_var):
    """The CLI `name`: $env_var if set, else install.sh's cache, else PATH.

    The cache comes before PATH on purpose: the checks were written against the pinned
    versions, and a developer's own (newer or older) install must not silently replace them.
    """
    explicit = os.environ.get(env_var)
    candidates = [explicit] if explicit else [clients_home() / "node_modules/.bin" / name, shutil.which(name)]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return str(c)
    where = explicit or f"{clients_home()}/node_modules/.bin/{name} or PATH"
    raise UsageError(f"no {name} binary at {where}: run `bash tests/realclients/install.sh`")


def cli_version(binary, env=None):
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60, env=env)
        lines = [l for l in out.stdout.splitlines() if l.strip()]
        return lines[-1].strip() if lines else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def require_tool(name):
    if not shutil.which(name):
        raise UsageError(f"{name} is not installed (bash tests/realclients/install.sh installs it)")


# --------------------------------------------------------------------------- reporting


class Report:
    """Collects the outcome of each check; the exit status is derived from it."""

    def __init__(self, verbose=False, silent=False):
        self.verbose = verbose
        self.silent = silent  # for a check that runs only to learn about the file
        self.failed = []

    def _print(self, msg):
        if not self.silent:
            print(msg)

    def section(self, title):
        self._print(f"-- {title}")

    def info(self, msg):
        self._print(f"   {msg}")

    def detail(self, msg):
        """Shown only with -v (panes, request summaries): noise when everything passes."""
        if self.verbose:
            for line in str(msg).splitlines():
                self._print(f"   | {line}")

    def warn(self, msg):
        self._print(f"   WARN: {msg}")

    def fail(self, check, msg):
        self.failed.append(check)
        self._print(f"   FAIL [{check}]: {msg}")

    def passed(self, check, msg=""):
        self._print(f"   PASS [{check}]{': ' + msg if msg else ''}")

    def finish(self):
        if self.failed:
            print(f"RESULT: FAIL ({', '.join(dict.fromkeys(self.failed))})")
            return EXIT_FAIL
        print("RESULT: OK")
        return EXIT_OK


# --------------------------------------------------------------------------- scratch folder


class Scratch:
    """A throw-away folder for copies of the session, config files, sockets and logs.

    Everything a real CLI may write (it appends to a session it opens, creates databases,
    caches, logs) goes here, never into the home the check was given.
    """

    def __init__(self, prefix, keep=False):
        self.path = Path(tempfile.mkdtemp(prefix=f"{prefix}.", dir=os.environ.get("TMPDIR") or "/tmp"))
        self.keep = keep
        self._cleanups = []

    def on_exit(self, fn):
        self._cleanups.append(fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for fn in reversed(self._cleanups):
            try:
                fn()
            except Exception as e:  # cleanup must not hide the result
                print(f"   (cleanup: {e})", file=sys.stderr)
        if self.keep:
            print(f"scratch kept: {self.path}")
        else:
            # A CLI killed a moment ago may still be writing its last file: retry once.
            shutil.rmtree(self.path, ignore_errors=True)
            if self.path.exists():
                time.sleep(1)
                shutil.rmtree(self.path, ignore_errors=True)
        return False


def copy_preserving(src, dst):
    """Copy a file or tree keeping mtimes: Claude's picker order and "N ago" come from them."""
    src, dst = Path(src), Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, copy_function=shutil.copy2, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dst)


# --------------------------------------------------------------------------- private tmux


class Tmux:
    """A tmux server of our own (socket in the scratch folder, no user config).

    A private socket means the check never sees or disturbs the user's tmux sessions, and
    killing the server at the end takes every TUI we started with it.
    """

    # Tall, because Claude Code draws a resumed conversation only as far up as the screen
    # reaches (nothing goes to the scrollback): with 50 rows a long last answer pushed the last
    # prompt off the top, and a real session with web-search results failed the render check.
    def __init__(self, scratch_dir, width=200, height=150):
        require_tool("tmux")
        self.socket = str(Path(scratch_dir) / "tmux.sock")
        self.width, self.height = width, height
        self.started = False

    def _tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-S", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=check)

    def start(self, name, argv, cwd, env, log=None):
        """Run argv in a new session. `env` is the program's whole environment.

        The pane stays open after the program exits (it prints a marker and sleeps), so that
        an early crash or error message can still be read from the screen.

        With `log` (a path), everything the program writes to the terminal is also appended to
        that file, raw, from its first byte: a TUI on the alternate screen takes what it drew
        (an error message too) with it when it exits, and only the log still has it. The pane
        waits for a flag file until the pipe is attached, so that nothing is missed.
        """
        command = "cd {} && exec env -i {} {}".format(
            shlex.quote(str(cwd)),
            " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()),
            " ".join(shlex.quote(str(a)) for a in argv),
        )
        shell = f"sh -c {shlex.quote(command)}; echo '[check: program exited with status '$?']'; sleep 3600"
        if log:
            flag = f"{log}.attached"
            shell = f"while [ ! -e {shlex.quote(flag)} ]; do sleep 0.05; done; {shell}"
        self._tmux("new-session", "-d", "-s", name, "-x", str(self.width), "-y", str(self.height), shell)
        self.started = True
        if log:
            # Without the pipe the check only loses its diagnostics: the program starts anyway.
            self._tmux("pipe-pane", "-t", name, f"cat >> {shlex.quote(str(log))}", check=False)
            Path(flag).touch()

    def capture(self, name, history=True):
        """The screen text, with wrapped lines joined and (by default) the scrollback too:
        the TUIs print the older part of a resumed conversation above the visible screen."""
        args = ["capture-pane", "-p", "-J", "-t", name]
        if history:
            args += ["-S", "-10000"]
        r = self._tmux(*args, check=False)
        return r.stdout if r.returncode == 0 else ""

    def send_keys(self, name, *keys, literal=False):
        self._tmux("send-keys", "-t", name, *(["-l"] if literal else []), *keys, check=False)

    def type_slowly(self, name, text, delay=0.05):
        """One key at a time: some TUIs treat a burst of keys as a paste and ignore it."""
        for ch in text:
            self.send_keys(name, ch, literal=True)
            time.sleep(delay)

    def wait_for(self, name, done, timeout, on_screen=None, interval=0.5, settle=10):
        """Poll the screen until done(screen) is true, the screen has not changed for `settle`
        seconds (the TUI is idle: what is missing will not come), or the time is up. Returns
        the last screen. on_screen(screen) may answer a dialog.
        """
        end = time.monotonic() + timeout
        screen, since = "", time.monotonic()
        while time.monotonic() < end:
            time.sleep(interval)
            now = self.capture(name)
            if done(now):
                # The TUI may still be drawing the rest of the transcript: give it a moment.
                time.sleep(1.0)
                return self.capture(name)
            if now != screen:
                screen, since = now, time.monotonic()
            elif now.strip() and time.monotonic() - since >= settle:
                return now
            if on_screen:
                on_screen(now)
        return screen

    def kill(self, name):
        self._tmux("kill-session", "-t", name, check=False)

    def close(self):
        if self.started:
            self._tmux("kill-server", check=False)
            self.started = False
            # Give the TUIs a moment to react to the hangup before the scratch folder goes.
            time.sleep(0.5)


def node_exit_log_env(path):
    """Environment for a Node.js CLI that appends to `path` the error that ends it (an uncaught
    exception or rejection, with its stack) and its exit code: see node_exit_log.cjs. It only
    watches; the CLI does what it would do without it."""
    preload = Path(__file__).resolve().parent / "node_exit_log.cjs"
    # Node splits NODE_OPTIONS at spaces outside double quotes.
    return {"NODE_OPTIONS": f'--require "{preload}"', "SESSION_RELAY_CHECK_EXIT_LOG": str(path)}


def read_text(path, limit=4000):
    """The end of a text file, or "" when there is none."""
    try:
        return Path(path).read_text(errors="replace")[-limit:]
    except OSError:
        return ""


# What a terminal takes as commands rather than text: CSI (colours, cursor moves, modes), OSC
# (titles, hyperlinks), DCS/APC/PM strings, two-byte escapes, and the other control characters.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]"
                      r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
                      r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
                      r"|\x1b[ -/]*[0-~]"
                      r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def terminal_log_tail(path, limit=2000):
    """The last `limit` characters of what a program wrote to its terminal (Tmux.start's log),
    as text: escape sequences dropped, carriage returns taken as line ends, blank lines and
    trailing spaces removed. "" when there is no log."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return ""
    text = _ESCAPES.sub("", raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n"))
    lines = [line.rstrip() for line in text.split("\n") if line.strip()]
    return "\n".join(lines)[-limit:]


def visible_text(screen):
    """The screen as one line of single-spaced text, for substring checks that do not care
    where the TUI wrapped a line or how it indented it."""
    return squash(screen)


# --------------------------------------------------------------------------- text helpers


def squash(text):
    return " ".join(str(text).split())


# Tokens that a terminal renderer shows as typed: no markdown or markup characters that the
# TUIs would turn into styling (`*`, `_`, backticks, `#`, brackets, `<tags>`).
# An underscore inside a word is drawn as typed (CommonMark: no intraword emphasis).
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.,:;'!?/=+%-]*$")


def screen_snippet(text, limit=30):
    """A run of plain words from the start of `text`, at most `limit` characters.

    Looking for a whole message on screen fails for reasons that have nothing to do with the
    session (markdown rendering, wrapping, truncation of long lines); a few plain words from
    its first lines are what any TUI draws as they are. Returns "" when there is nothing safe
    to look for.
    """
    best = []
    for line in str(text).splitlines()[:20]:
        run = []
        for tok in line.split():
            if _PLAIN.match(tok) and not tok.endswith("_"):
                run.append(tok)
                if len(" ".join(run)) >= limit:
                    break
            else:
                if len(" ".join(run)) > len(" ".join(best)):
                    best = run
                run = []
        if len(" ".join(run)) > len(" ".join(best)):
            best = run
        if len(" ".join(best)) >= limit:
            break
    out = ""
    for tok in best:
        if out and len(out) + 1 + len(tok) > limit:
            break
        out = f"{out} {tok}".strip()
    if len(out) > limit:
        out = out[:limit].rsplit(" ", 1)[0] if " " in out[:limit] else out[:limit]
    return out if len(out) >= 4 else ""


def read_jsonl(path):
    """(line number, parsed object or None, error) for every non-empty line."""
    out = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                out.append((n, json.loads(raw), None))
            except ValueError as e:
                out.append((n, None, str(e)))
    return out


ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)$")


# --------------------------------------------------------------------------- mock Anthropic API


class MockAnthropic:
    """The Anthropic Messages API, as far as Claude Code needs it to run a turn offline.

    Every request is recorded (path and parsed body): the `load` check reads what Claude Code
    sent to the model, which is the only direct proof that it loaded the transcript. Every
    turn is answered with a short text, so the CLI finishes normally.

    Like the real API, it refuses a request that does not fit the model's context window
    ("prompt is too long"), so that a relayed transcript too big to be sent fails the check
    instead of passing against a mock with no limit. Tokens are estimated generously (4 bytes
    of request JSON per token, system prompt and tool schemas included): a false refusal needs
    a transcript far over the budget session-relay fits to.
    """

    ANSWER = "MOCK_OK"
    CONTEXT_TOKENS = 200_000

    def __init__(self):
        self.requests = []
        self._lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep the check's output clean
                pass

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_HEAD(self):  # connectivity probes
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self):
                mock._record("GET", self.path, None)
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock"}})

            def do_POST(self):
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                mock._record("POST", self.path, body)
                route = self.path.split("?")[0]
                if route.endswith("/v1/messages/count_tokens"):
                    return self._json(200, {"input_tokens": 1})
                if not route.endswith("/v1/messages"):
                    return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock"}})
                tokens = len(raw) // 4
                if tokens > mock.CONTEXT_TOKENS:
                    return self._json(400, {"type": "error", "error": {
                        "type": "invalid_request_error",
                        "message": f"prompt is too long: {tokens} tokens > {mock.CONTEXT_TOKENS} maximum"}})
                self._answer(body)

            def _answer(self, body):
                message = {
                    "id": "msg_mock_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
                    "model": body.get("model", "mock"), "content": [{"type": "text", "text": mock.ANSWER}],
                    "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
                if not body.get("stream"):
                    return self._json(200, message)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()

                def event(kind, obj):
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(obj)}\n\n".encode())

                event("message_start", {"type": "message_start",
                                        "message": dict(message, content=[], stop_reason=None)})
                event("content_block_start", {"type": "content_block_start", "index": 0,
                                              "content_block": {"type": "text", "text": ""}})
                event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta", "text": mock.ANSWER}})
                event("content_block_stop", {"type": "content_block_stop", "index": 0})
                event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                        "usage": {"output_tokens": 1}})
                event("message_stop", {"type": "message_stop"})
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _record(self, method, path, body):
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body})

    def message_requests(self):
        with self._lock:
            return [r["body"] for r in self.requests
                    if r["method"] == "POST" and r["path"].split("?")[0].endswith("/v1/messages")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class MockResponses:
    """The OpenAI Responses API, as far as Codex needs it to run a turn offline (a custom
    model provider pointed at `url`/v1).

    Every request is recorded. A turn whose user prompt contains `TOOL_WORD` is answered first
    with a shell call (`echo` of a marker), then, once the call's output comes back, with a
    text; any other turn with a text. A compaction request (Codex marks it `request_kind:
    compaction` in its turn metadata; its prompt asks for a CONTEXT CHECKPOINT) is answered
    with a summary. Every answer reports `input_tokens` usage: set it above the config's
    `model_auto_compact_token_limit` and Codex compacts in the middle of the next turn, which
    is when it runs its PreCompact hooks.
    """

    ANSWER = "MOCK_DONE"
    SUMMARY = "MOCK_SUMMARY: the user asked for a shell command and got its output."
    TOOL_WORD = "RUN_SHELL"

    def __init__(self, input_tokens=100):
        self.requests = []
        self.input_tokens = input_tokens
        self._lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._json(200, {"object": "list", "data": [], "models": []})

            def do_POST(self):
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                meta = self.headers.get("x-codex-turn-metadata") or "{}"
                with mock._lock:
                    mock.requests.append({"path": self.path, "body": body, "meta": meta})
                if self.path.split("?")[0].endswith("/responses/compact"):
                    return self._json(200, {"output": [{"type": "message", "role": "user", "content": [
                        {"type": "input_text", "text": mock.SUMMARY}]}]})
                if not self.path.split("?")[0].endswith("/responses"):
                    return self._json(404, {"error": {"message": "mock"}})
                self._stream(mock._answer(body if isinstance(body, dict) else {}, meta))

            def _stream(self, items):
                n = len(mock.requests)
                events = [{"type": "response.created", "response": {"id": f"resp_{n}"}}]
                for i, item in enumerate(items):
                    events.append({"type": "response.output_item.done", "output_index": i, "item": item})
                usage = {"input_tokens": mock.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                         "total_tokens": mock.input_tokens + 20}
                events.append({"type": "response.completed", "response": {"id": f"resp_{n}", "usage": usage}})
                data = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _answer(self, body, meta):
        def text_item(text):
            return {"type": "message", "role": "assistant", "id": f"msg_{uuid.uuid4().hex[:12]}",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}

        items = body.get("input") or []
        if '"request_kind":"compaction"' in meta.replace(" ", "") or "CONTEXT CHECKPOINT" in json.dumps(items[-1:]):
            return [text_item(self.SUMMARY)]
        # The turn so far: what follows the newest message the user typed.
        prompt, since = "", []
        for item in items:
            if item.get("type") == "message" and item.get("role") == "user":
                text = " ".join(c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict))
                if text and not text.lstrip().startswith("<"):
                    prompt, since = text, []
                    continue
            since.append(item)
        outputs = [i for i in since if i.get("type") in ("function_call_output", "custom_tool_call_output")]
        if self.TOOL_WORD in prompt and not outputs:
            tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            cmd = "echo MOCK_SHELL_OUTPUT"
            if "exec_command" in tools:
                name, args = "exec_command", {"cmd": cmd}
            elif "shell_command" in tools:
                name, args = "shell_command", {"command": cmd}
            else:
                name, args = "shell", {"command": ["bash", "-lc", cmd]}
            return [{"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:8]}", "call_id": f"call_{uuid.uuid4().hex[:8]}",
                     "name": name, "arguments": json.dumps(args)}]
        return [text_item(f"{self.ANSWER}: {prompt.strip()[:80]}")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class MockChatCompletions:
    """The OpenAI Chat Completions API as a custom provider of a CLI (pi's `openai-completions`,
    Qwen Code's `--auth-type openai`, Copilot CLI's BYOK `COPILOT_PROVIDER_BASE_URL`, any other
    OpenAI-compatible client): `POST .../chat/completions`, streamed (SSE, with the usage chunk
    when `stream_options.include_usage` asks) or not, and `GET .../models`.

    Every request is recorded with its method, path, headers and parsed body: `chat_requests()`
    is what the CLI sent the model, the only direct proof that it loaded a session's history.
    Every turn is answered with a short text and no tool call, so the CLI finishes normally.

    What differs between the CLIs is a parameter (`for_agent` holds each one's):
    - `answer`: the text of every answer (a TUI check waits for it on screen);
    - `prompt_tokens`: the usage each answer reports (Qwen Code keeps a compression only when
      the summary is smaller than the context the last request reported);
    - `context_tokens`: like a real API, a request larger than this (4 bytes of request JSON a
      token) is refused, so that a relay too big to be sent fails; None for no limit;
    - `summary_marker`/`summary`: a request without tools whose messages contain the marker is
      a compaction (Qwen's `/compress` asks for a `<state_snapshot>`) and gets `summary`.

    `url` is the server's root, `base_url` the same with `/v1` (what the CLIs take).
    """

    ANSWER = "MOCK_OK"
    MODEL = "mock-model"

    # What each CLI needs of the mock, for `for_agent`; an agent not named takes the defaults.
    AGENTS = {
        # Copilot CLI 1.0.102 budgets its prompts at 128k tokens.
        "copilot": {"answer": "MOCK_COPILOT_OK", "prompt_tokens": 1000, "context_tokens": 128_000},
        # Qwen Code's window is set to 1M in check_qwen.py's settings: no limit here.
        "qwen": {"prompt_tokens": 5000, "context_tokens": None, "summary_marker": "<state_snapshot>",
                 "summary": "<state_snapshot><overall_goal>Mock summary of the conversation."
                            "</overall_goal></state_snapshot>"},
    }

    @classmethod
    def for_agent(cls, agent, **overrides):
        return cls(**dict(cls.AGENTS.get(agent, {}), **overrides))

    def __init__(self, answer=ANSWER, prompt_tokens=1, context_tokens=200_000, summary_marker=None,
                 summary=None, port=0, on_request=None):
        self.answer, self.prompt_tokens, self.context_tokens = answer, prompt_tokens, context_tokens
        self.summary_marker, self.summary = summary_marker, summary
        self.on_request = on_request
        self.requests = []
        self._lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                mock._record("GET", self.path, dict(self.headers), None)
                if self.path.split("?")[0].endswith("/models"):
                    return self._json(200, {"object": "list", "data": [
                        {"id": mock.MODEL, "object": "model", "owned_by": "mock"}]})
                self._json(404, {"error": {"message": "mock: not found"}})

            def do_POST(self):
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                mock._record("POST", self.path, dict(self.headers), body)
                if not self.path.split("?")[0].endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": "mock: only chat/completions"}})
                tokens = len(raw) // 4
                if mock.context_tokens is not None and tokens > mock.context_tokens:
                    return self._json(400, {"error": {
                        "type": "invalid_request_error", "code": "context_length_exceeded",
                        "message": f"prompt is too long: {tokens} tokens > {mock.context_tokens} maximum"}})
                self._answer(body if isinstance(body, dict) else {})

            def _answer(self, body):
                text = mock._text(body)
                base = {"id": "chatcmpl-" + uuid.uuid4().hex[:20], "created": int(time.time()),
                        "model": body.get("model", mock.MODEL)}
                usage = {"prompt_tokens": mock.prompt_tokens, "completion_tokens": 2,
                         "total_tokens": mock.prompt_tokens + 2}
                if not body.get("stream"):
                    return self._json(200, dict(base, object="chat.completion", usage=usage, choices=[
                        {"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}]))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()

                def chunk(choices, **extra):
                    o = dict(base, object="chat.completion.chunk", choices=choices, **extra)
                    self.wfile.write(("data: " + json.dumps(o) + "\n\n").encode())

                chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
                chunk([{"index": 0, "delta": {"content": text}, "finish_reason": None}])
                chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}])
                if (body.get("stream_options") or {}).get("include_usage"):
                    chunk([], usage=usage)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.base_url = self.url + "/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _text(self, body):
        if self.summary_marker and not body.get("tools") \
                and self.summary_marker in json.dumps(body.get("messages")):
            return self.summary
        return self.answer

    def _record(self, method, path, headers, body):
        with self._lock:
            self.requests.append({"method": method, "path": path, "headers": headers, "body": body})
        if self.on_request:
            self.on_request(method, path, body)

    def chat_requests(self):
        """The bodies of the chat completion requests, oldest first."""
        with self._lock:
            return [r["body"] for r in self.requests
                    if r["method"] == "POST" and r["path"].split("?")[0].endswith("/chat/completions")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def message_texts(messages):
    """Every piece of text in Anthropic-style messages (strings, text blocks, tool results)."""
    out = []

    def walk(content):
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    if isinstance(block.get("text"), str):
                        out.append(block["text"])
                    if "content" in block:
                        walk(block["content"])
                    if block.get("type") == "tool_use":
                        out.append(json.dumps(block.get("input"), ensure_ascii=False))

    for m in messages or []:
        if isinstance(m, dict):
            walk(m.get("content"))
    return out


def serve_chat_mock(argv):
    """`chat-mock [--agent AGENT] [PORT]`: the Chat Completions mock alone, until Ctrl-C."""
    import argparse
    ap = argparse.ArgumentParser(prog="harness.py chat-mock")
    ap.add_argument("--agent", default="", help="take this CLI's parameters (MockChatCompletions.AGENTS)")
    ap.add_argument("port", nargs="?", type=int, default=0)
    args = ap.parse_args(argv)

    def show(method, path, body):
        print(json.dumps({"method": method, "path": path, "body": body}), flush=True)

    mock = MockChatCompletions.for_agent(args.agent, port=args.port, on_request=show)
    print(mock.base_url, file=sys.stderr, flush=True)
    try:
        mock.thread.join()
    except KeyboardInterrupt:
        mock.close()


if __name__ == "__main__":
    if sys.argv[1:2] != ["chat-mock"]:
        die_usage("usage: harness.py chat-mock [--agent AGENT] [PORT]")
    serve_chat_mock(sys.argv[2:])
