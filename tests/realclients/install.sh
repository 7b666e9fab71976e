#!/usr/bin/env bash
# Installs what the real-client tests (tests/realclients.rs) need: the real Codex CLI, Claude Code
# CLI, Gemini CLI, GitHub Copilot CLI, Qwen Code, pi and OpenCode from the npm registry, pinned to the
# versions the checks were written against, plus tmux and python3.
#
#   REALCLIENTS_HOME      where the CLIs go (default ~/.cache/session-relay-realclients); the
#                         checks look there
#   CODEX_VERSION, CLAUDE_CODE_VERSION, GEMINI_CLI_VERSION, COPILOT_VERSION, QWEN_CODE_VERSION,
#   PI_VERSION, OPENCODE_VERSION
#                         override a pin, e.g. CODEX_VERSION=latest to look for drift
#
# Idempotent: when the stamp file says these versions are installed and the binaries are there,
# npm is not run again. Fails (non-zero, with the reason) when anything cannot be installed:
# the tests must never run against a half-installed set of clients.
set -euo pipefail

home=${REALCLIENTS_HOME:-$HOME/.cache/session-relay-realclients}
codex_v=${CODEX_VERSION:-0.171.0}
claude_v=${CLAUDE_CODE_VERSION:-2.1.332}
gemini_v=${GEMINI_CLI_VERSION:-0.61.0}
copilot_v=${COPILOT_VERSION:-1.0.102}
qwen_v=${QWEN_CODE_VERSION:-0.24.4}
pi_v=${PI_VERSION:-0.73.1}
opencode_v=${OPENCODE_VERSION:-1.18.33}
packages=("@openai/codex@$codex_v" "@anthropic-ai/claude-code@$claude_v" "@google/gemini-cli@$gemini_v")
packages+=("@github/copilot@$copilot_v" "@qwen-code/qwen-code@$qwen_v" "@mariozechner/pi-coding-agent@$pi_v")
packages+=("opencode-ai@$opencode_v")
binaries=(codex claude gemini copilot qwen pi opencode)

die() { echo "install.sh: $*" >&2; exit 1; }

# ---- tmux and python3, from the distribution (Debian/Ubuntu: apt-get)
missing=()
for tool in tmux python3; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || die "${missing[*]} missing and no apt-get here: install them by hand"
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  echo "installing ${missing[*]} with apt-get"
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" \
    || die "apt-get could not install ${missing[*]}"
  for tool in "${missing[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is still missing after apt-get install"
  done
fi

# ---- the CLIs, from npm (Gemini CLI needs Node.js 20 or newer)
command -v npm >/dev/null 2>&1 || die "npm is missing: install Node.js 20 or newer"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$node_major" -ge 20 ] || die "Node.js $(node --version 2>/dev/null || echo '(none)') is too old: the CLIs need 20 or newer"

mkdir -p "$home"
cd "$home"
[ -f package.json ] || echo '{"name":"session-relay-realclients","private":true}' > package.json
stamp=$home/.installed
want="${packages[*]}"
bin=$home/node_modules/.bin
all_there() {
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || return 1; done
}
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && all_there; then
  echo "already installed in $home: $want"
else
  echo "installing $want into $home"
  # Drop the stamp first so that an interrupted install is never taken for a finished one.
  rm -f "$stamp"
  npm install --no-audit --no-fund --loglevel=error "${packages[@]}" || die "npm install failed"
  for b in "${binaries[@]}"; do
    [ -x "$bin/$b" ] || die "npm installed no $bin/$b"
  done
  echo "$want" > "$stamp"
fi

# ---- what is there now. `gemini --version`, `qwen --version` and `pi --version` start far
# enough to write into their homes, so they get throw-away ones; `copilot --version` unpacks the
# CLI into its cache (where the checks find it again) and writes into its home, a throw-away one
# too.
gemini_home=$(mktemp -d)
copilot_home=$(mktemp -d)
pi_home=$(mktemp -d)
opencode_home=$(mktemp -d)
trap 'rm -rf "$gemini_home" "$copilot_home" "$pi_home" "$opencode_home"' EXIT
version() { "$@" --version 2>/dev/null | awk 'NF { line = $0 } END { print line }'; }
codex_version=$(version "$bin/codex") || true
claude_version=$(version "$bin/claude") || true
gemini_version=$(GEMINI_CLI_HOME=$gemini_home version "$bin/gemini") || true
# Copilot prints its version first, then a hint to update.
copilot_version=$(COPILOT_HOME=$copilot_home COPILOT_AUTO_UPDATE=false "$bin/copilot" --version 2>/dev/null \
  | awk 'NF { print; exit }') || true
qwen_version=$(HOME=$gemini_home QWEN_HOME=$gemini_home/.qwen version "$bin/qwen") || true
# pi says its version on standard error.
pi_version=$(cd "$pi_home" && PI_CODING_AGENT_DIR=$pi_home/agent PI_OFFLINE=1 "$bin/pi" --version 2>&1 \
  | awk 'NF { line = $0 } END { print line }') || true
# `opencode --version` prints it without opening its database; its XDG folders are throw-away
# ones all the same.
opencode_version=$(XDG_DATA_HOME=$opencode_home/data XDG_CONFIG_HOME=$opencode_home/config \
  XDG_STATE_HOME=$opencode_home/state XDG_CACHE_HOME=$opencode_home/cache \
  OPENCODE_DISABLE_AUTOUPDATE=1 version "$bin/opencode") || true
echo "codex:   $bin/codex ($codex_version)"
echo "claude:  $bin/claude ($claude_version)"
echo "gemini:  $bin/gemini ($gemini_version)"
echo "copilot: $bin/copilot ($copilot_version)"
echo "qwen:    $bin/qwen ($qwen_version)"
echo "pi:      $bin/pi ($pi_version)"
echo "opencode: $bin/opencode ($opencode_version)"
echo "tmux:    $(command -v tmux) ($(tmux -V))"
echo "python3: $(command -v python3) ($(python3 --version 2>&1))"
# A pinned version must be the one that runs (a stale cache or a broken npm install is not).
check_version() { # name pin output
  [ -n "$3" ] || die "$1 does not run (no --version output)"
  case "$2" in
    [0-9]*) case "$3" in *"$2"*) ;; *) die "$1 reports '$3', not the pinned $2" ;; esac ;;
  esac
}
check_version codex "$codex_v" "$codex_version"
check_version claude "$claude_v" "$claude_version"
check_version gemini "$gemini_v" "$gemini_version"
check_version copilot "$copilot_v" "$copilot_version"
check_version qwen "$qwen_v" "$qwen_version"
check_version pi "$pi_v" "$pi_version"
check_version opencode "$opencode_v" "$opencode_version"
