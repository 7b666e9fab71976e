#!/usr/bin/env python3
"""Has the REAL agent write a session and compact it, so that the hooks installed in its home run.

usage: run_compaction.py [--tui] [--env K=V]... [--timeout S] [-v] claude CONFIG_DIR CWD
       run_compaction.py [--tui] [--env K=V]... [--timeout S] [-v] codex CODEX_HOME CWD
       run_compaction.py --tui [--env K=V]... [--timeout S] [-v] copilot COPILOT_HOME CWD
       run_compaction.py [--env K=V]... [--timeout S] [-v] qwen QWEN_HOME CWD

Unlike the checks, this works in the home it is given: that is where the hooks under test are.
The agent runs offline against a local mock model, with `--env` added to its environment (for
example the state folder the hook should use). Prints one JSON object on standard output:
{"session_id", "transcript", "compacted", "screen"?}.

claude  `claude -p PROMPT` starts a session; then `claude -p --resume SID /compact` compacts it
        (trigger "manual"), or with --tui `claude --resume SID` in a private tmux, /compact
        typed, and the screen after it (where Claude Code shows what the hook printed).
codex   writes the mock provider into CODEX_HOME/config.toml (kept otherwise as it is) with
        `model_auto_compact_token_limit` below the usage the mock reports, then runs
        `codex exec` with a prompt that makes the mock call a shell command: the call's answer
        finds the context over the limit and Codex compacts mid-turn (trigger "auto"). With
        --tui the same prompt is given to the TUI (`codex --no-daemon PROMPT`) in a private
        tmux, and the screen after the compaction is kept (Codex draws "Hook · <line>").
copilot `copilot -p PROMPT` starts a session (offline, BYOK env against harness.py's chat mock,
        CWD added to the home's trusted folders); then `copilot --resume=SID` in a private
        tmux, /compact typed (trigger "manual"), and the screen once Copilot says the
        compaction completed. Copilot CLI has no headless /compact, so this is always --tui.
qwen    `qwen PROMPT` headless against a local Chat Completions mock starts a session; then
        `qwen --resume SID /compress` compresses it (trigger "manual"); the request that asked
        the mock for the summary is kept (`summary_request`: a PreCompact hook's
        additionalContext is in it). No --tui.

Exit status: 0 = the agent compacted the session, 1 = it did not (the output says what it did),
2 = usage or environment error.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (  # noqa: E402
    EXIT_FAIL, EXIT_OK, EXIT_USAGE, MockAnthropic, MockChatCompletions, MockResponses, Scratch, Tmux,
    UsageError, find_cli, visible_text,
)
from check_claude import Claude, write_claude_json  # noqa: E402


def log(args, msg):
    if args.verbose:
        print(msg, file=sys.stderr)


def run_claude(args, extra_env):
    config_dir, cwd = Path(args.home), os.path.realpath(args.cwd)
    binary = find_cli("claude", "CLAUDE_BIN")
    with Scratch("run_compaction") as scratch:
        write_claude_json(config_dir, cwd)
        (scratch.path / "home").mkdir()
        mock = MockAnthropic()
        scratch.on_exit(mock.close)
        claude = Claude(binary, config_dir, scratch.path / "home", mock.url, cwd)
        claude.env.update(extra_env)
        out = subprocess.run(claude.argv("-p", "--output-format", "json",
                                         "Remember the word PINEAPPLE, then say ok."),
                             cwd=cwd, env=claude.env, capture_output=True, text=True, timeout=args.timeout)
        log(args, f"claude -p: {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        try:
            sid = json.loads(out.stdout)["session_id"]
        except (ValueError, KeyError):
            raise UsageError(f"claude -p gave no session id: {out.stdout[-500:]} {out.stderr[-500:]}")
        transcript = next(config_dir.glob(f"projects/*/{sid}.jsonl"))
        result = {"session_id": sid, "transcript": str(transcript)}
        if args.tui:
            tmux = Tmux(scratch.path)
            scratch.on_exit(tmux.close)
            tmux.start("claude", claude.argv("--resume", sid), cwd, claude.env)
            tmux.wait_for("claude", lambda s: "PINEAPPLE" in s or "MOCK_OK" in s, args.timeout)
            time.sleep(2)
            tmux.type_slowly("claude", "/compact")
            time.sleep(1)
            tmux.send_keys("claude", "Enter")
            screen = tmux.wait_for("claude", lambda s: "Relayed to" in visible_text(s)
                                   or "could not relay" in visible_text(s), args.timeout, settle=20)
            result["screen"] = screen
            log(args, screen)
            tmux.close()
        else:
            out = subprocess.run(claude.argv("-p", "--resume", sid, "/compact"), cwd=cwd, env=claude.env,
                                 capture_output=True, text=True, timeout=args.timeout)
            log(args, f"claude -p /compact: {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        result["compacted"] = "compact_boundary" in transcript.read_text(errors="replace")
    return result


def run_codex(args, extra_env):
    home, cwd = Path(args.home), os.path.realpath(args.cwd)
    binary = find_cli("codex", "CODEX_BIN")
    with Scratch("run_compaction") as scratch:
        # The mock reports 50,000 input tokens a request; Codex compacts above 20,000.
        mock = MockResponses(input_tokens=50_000)
        scratch.on_exit(mock.close)
        config = home / "config.toml"
        kept = config.read_text() if config.exists() else ""
        if "[model_providers.relaymock]" in kept:
            # Written by an earlier run: only the mock's port changes.
            config.write_text(re.sub(r'base_url = "http://127\.0\.0\.1:\d+/v1"',
                                     f'base_url = "{mock.url}/v1"', kept))
        else:
            config.write_text(
                'model = "gpt-5.1-codex"\nmodel_provider = "relaymock"\napproval_policy = "never"\n'
                'sandbox_mode = "danger-full-access"\nmodel_auto_compact_token_limit = 20000\n\n'
                + kept
                + f'\n[model_providers.relaymock]\nname = "relaymock"\nbase_url = "{mock.url}/v1"\n'
                'wire_api = "responses"\nenv_key = "RELAY_MOCK_KEY"\nrequest_max_retries = 0\n'
                f'stream_max_retries = 0\n\n[projects.{json.dumps(cwd)}]\ntrust_level = "trusted"\n')
        before = set(home.glob("sessions/**/rollout-*.jsonl"))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch.path),
               "CODEX_HOME": str(home), "RELAY_MOCK_KEY": "x", "LANG": "C.UTF-8", "RUST_LOG": "error"}
        env.update(extra_env)
        prompt = f"{MockResponses.TOOL_WORD}: show me a shell command and its output"
        result = {}
        if args.tui:
            tmux = Tmux(scratch.path)
            scratch.on_exit(tmux.close)

            def answer_dialogs(screen):
                if re.search(r"(?i)press enter to (continue|confirm)", screen):
                    tmux.send_keys("tui", "Enter")

            # --no-daemon: the default TUI starts a background app-server that outlives it.
            tmux.start("tui", [binary, "--no-daemon", prompt], cwd, dict(env, TERM="xterm-256color"))
            screen = tmux.wait_for("tui", lambda s: MockResponses.ANSWER in s, args.timeout,
                                   on_screen=answer_dialogs, settle=30)
            result["screen"] = screen
            log(args, screen)
            tmux.close()
        else:
            out = subprocess.run([binary, "exec", "--skip-git-repo-check", prompt],
                                 cwd=cwd, env=env, capture_output=True, text=True, timeout=args.timeout)
            log(args, f"codex exec: {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        new = sorted(set(home.glob("sessions/**/rollout-*.jsonl")) - before)
        if not new:
            raise UsageError("codex wrote no session")
        rollout = new[-1]
        first = json.loads(rollout.read_text().splitlines()[0])
        text = rollout.read_text(errors="replace")
        result.update({"session_id": first["payload"]["id"], "transcript": str(rollout),
                       "compacted": '"type":"compacted"' in text})
        return result


def run_copilot(args, extra_env):
    home, cwd = Path(args.home), os.path.realpath(args.cwd)
    binary = find_cli("copilot", "COPILOT_BIN")
    with Scratch("run_compaction") as scratch:
        mock = MockChatCompletions.for_agent("copilot")
        scratch.on_exit(mock.close)
        config = home / "config.json"
        kept = {}
        if config.exists():
            # Copilot's config.json opens with `//` comment lines.
            body = "\n".join(l for l in config.read_text().splitlines() if not l.lstrip().startswith("//"))
            kept = json.loads(body or "{}")
        kept["trustedFolders"] = sorted(set(kept.get("trustedFolders", [])) | {cwd})
        config.write_text(json.dumps(kept, indent=2))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(scratch.path)),
               "COPILOT_HOME": str(home), "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false",
               "COPILOT_PROVIDER_BASE_URL": mock.base_url, "COPILOT_PROVIDER_API_KEY": "mock-key",
               "COPILOT_MODEL": mock.MODEL, "LANG": "C.UTF-8"}
        if os.environ.get("XDG_CACHE_HOME"):
            env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
        env.update(extra_env)
        before = set(home.glob("session-state/*/events.jsonl"))
        out = subprocess.run([binary, "-p", "Remember the word PINEAPPLE, then say ok.", "--allow-all-tools"],
                             cwd=cwd, env=env, capture_output=True, text=True, timeout=args.timeout)
        log(args, f"copilot -p: {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        new = sorted(set(home.glob("session-state/*/events.jsonl")) - before)
        if not new:
            raise UsageError(f"copilot -p wrote no session: {out.stdout[-500:]} {out.stderr[-500:]}")
        transcript = new[-1]
        sid = transcript.parent.name
        tmux = Tmux(scratch.path)
        scratch.on_exit(tmux.close)
        tmux.start("tui", [binary, f"--resume={sid}"], cwd, dict(env, TERM="xterm-256color"))
        tmux.wait_for("tui", lambda s: mock.answer in s, args.timeout)
        time.sleep(2)
        tmux.type_slowly("tui", "/compact")
        time.sleep(1)
        tmux.send_keys("tui", "Enter")
        screen = tmux.wait_for("tui", lambda s: "Compaction completed" in visible_text(s)
                               or "ompaction failed" in visible_text(s), args.timeout, settle=20)
        log(args, screen)
        tmux.close()
        return {"session_id": sid, "transcript": str(transcript), "screen": screen,
                "compacted": '"type":"session.compaction_complete"' in transcript.read_text(errors="replace")}


def run_qwen(args, extra_env):
    home, cwd = Path(args.home), os.path.realpath(args.cwd)
    binary = find_cli("qwen", "QWEN_BIN")
    if args.tui:
        raise UsageError("qwen compresses headless here: no --tui")
    with Scratch("run_compaction") as scratch:
        mock = MockChatCompletions.for_agent("qwen")
        scratch.on_exit(mock.close)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch.path),
               "QWEN_HOME": str(home), "NO_COLOR": "1", "TERM": "dumb"}
        env.update(extra_env)
        argv = [binary, "--auth-type", "openai", "--openai-api-key", "mock-key", "--openai-base-url", mock.base_url,
                "-m", mock.MODEL]
        chats = home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd) / "chats"
        before = set(chats.glob("*.jsonl"))
        out = subprocess.run(argv + ["Remember the word PINEAPPLE, then say ok."], cwd=cwd, env=env,
                             capture_output=True, text=True, timeout=args.timeout, stdin=subprocess.DEVNULL)
        log(args, f"qwen: {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        new = sorted(set(chats.glob("*.jsonl")) - before)
        if not new:
            raise UsageError(f"qwen wrote no session in {chats}: {out.stdout[-500:]} {out.stderr[-500:]}")
        transcript = new[-1]
        sid = transcript.stem
        asked = len(mock.chat_requests())
        out = subprocess.run(argv + ["--resume", sid, "/compress"], cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=args.timeout, stdin=subprocess.DEVNULL)
        log(args, f"qwen /compress: {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        summary = [b for b in mock.chat_requests()[asked:] if not b.get("tools")]
        text = transcript.read_text(errors="replace")
        return {"session_id": sid, "transcript": str(transcript),
                "compacted": '"subtype":"chat_compression"' in text,
                "summary_request": json.dumps(summary[0]) if summary else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("agent", choices=["claude", "codex", "copilot", "qwen"])
    ap.add_argument("home")
    ap.add_argument("cwd")
    ap.add_argument("--tui", action="store_true", help="compact in the TUI and keep the screen")
    ap.add_argument("--env", action="append", default=[], metavar="K=V")
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not Path(args.home).is_dir() or not Path(args.cwd).is_dir():
        raise UsageError(f"{args.home} and {args.cwd} must be folders")
    extra = dict(kv.split("=", 1) for kv in args.env)
    run = {"claude": run_claude, "codex": run_codex, "copilot": run_copilot, "qwen": run_qwen}[args.agent]
    result = run(args, extra)
    print(json.dumps(result))
    return EXIT_OK if result["compacted"] else EXIT_FAIL


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UsageError as e:
        print(f"run_compaction.py: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
