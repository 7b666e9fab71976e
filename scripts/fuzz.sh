#!/usr/bin/env bash
# Fuzzes both readers for a bounded time.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
# Coverage-guided with cargo-fuzz (libFuzzer) when it is installed (`cargo install cargo-fuzz`;
# on a stable toolchain RUSTC_BOOTSTRAP=1 lets it use the sanitizer flags it needs), seeded
# with the fixtures; crashes land in fuzz/artifacts/<target>/ — copy each into
# fixtures/fuzz-regressions/ (named claude-*.jsonl or codex-*.jsonl) so that the test suite
# replays it. Without cargo-fuzz, the built-in mutation fuzzer runs instead for the same time.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
if command -v cargo-fuzz >/dev/null 2>&1; then
  for target in claude_reader codex_reader; do
    agent=${target%_reader}
    corpus=fuzz/corpus/$target
    mkdir -p "$corpus"
    find fixtures/$agent -name '*.jsonl' -size -256k -exec cp {} "$corpus/" \;
    RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "$corpus" -- -max_total_time="$secs" -max_len=262144
  done
else
  echo "cargo-fuzz not installed; running the mutation fuzzer for about ${secs}s per target" >&2
  FUZZ_ITERATIONS=$((secs * 1000)) cargo test --release --test fuzz_readers -- --nocapture
fi
