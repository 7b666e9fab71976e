#!/usr/bin/env bash
# Fuzzes every agent's reader for a bounded time.
#   scripts/fuzz.sh [SECONDS]   (default 120)
# Coverage-guided with cargo-fuzz (libFuzzer) when it is installed (`cargo install cargo-fuzz`;
# on a stable toolchain RUSTC_BOOTSTRAP=1 lets it use the sanitizer flags it needs), seeded
# with the fixtures (each prefixed with the byte that picks its agent); crashes land in
# fuzz/artifacts/reader/. Drop the first byte and copy each into fixtures/fuzz-regressions/
# as <agent>-<anything>.jsonl so that the test suite replays it (an OpenCode one is replayed as
# a document, where a relay writes its own). Without cargo-fuzz, the
# built-in mutation fuzzer runs instead for about the same time.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-120}
if command -v cargo-fuzz >/dev/null 2>&1; then
  corpus=fuzz/corpus/reader
  mkdir -p "$corpus"
  # The first byte picks the agent by its place in the registry (adapters/mod.rs's REGISTRY).
  i=0
  for agent in $(sed -n 's/^ *&\([a-z0-9_]*\)::ADAPTER,*$/\1/p' adapters/mod.rs); do
    # Named by a hash of the path too: some agents name every session file alike (events.jsonl).
    # OpenCode's sessions are rows of a database: its `opencode export` documents (the same
    # JSON, read by the same reader) seed it, placed where a relay writes its own.
    { find "fixtures/$agent" -name '*.jsonl' -size -256k
      if [ -d "fixtures/$agent-export" ]; then find "fixtures/$agent-export" -name '*.json' -size -256k; fi
    } | while read -r f; do
      tag=$(printf '%s' "$f" | sha256sum | cut -c1-8)
      { printf "\\$(printf '%03o' "$i")"; cat "$f"; } > "$corpus/$agent-$tag-$(basename "$f")"
    done
    i=$((i + 1))
  done
  RUSTC_BOOTSTRAP=1 cargo fuzz run reader "$corpus" -- -max_total_time="$secs" -max_len=262144
else
  echo "cargo-fuzz not installed; running the mutation fuzzer for about ${secs}s" >&2
  FUZZ_ITERATIONS=$((secs * 1000)) cargo test --release --test cli fuzz_readers -- --nocapture
fi
