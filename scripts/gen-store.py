#!/usr/bin/env python3
"""Generates a large store of sessions for timing `list --all`.

usage: scripts/gen-store.py DEST [COUNT]

DEST gets `claude/` and `codex/` homes holding COUNT sessions in all (half each), copied from the
genuine fixtures with fresh ids and working directories, so that sizes and line shapes are real.
"""
import os
import random
import sys
import uuid
from pathlib import Path

root = Path(__file__).resolve().parent.parent / "fixtures"
dest = Path(sys.argv[1])
count = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
rng = random.Random(7)

claude = sorted(p for p in (root / "claude/projects").glob("*/*.jsonl"))
codex = sorted(p for p in (root / "codex/sessions").rglob("rollout-*.jsonl"))
for i in range(count):
    new = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if i % 2 == 0:
        src = claude[i // 2 % len(claude)]
        old = src.stem
        text = src.read_text(encoding="utf-8", errors="surrogateescape").replace(old, new)
        project = f"-home-dev-projects-p{i % 97}"
        text = text.replace(src.parent.name, project)
        out = dest / "claude/projects" / project / f"{new}.jsonl"
    else:
        src = codex[i // 2 % len(codex)]
        old = src.name[-42:-6]
        text = src.read_text(encoding="utf-8", errors="surrogateescape").replace(old, new)
        day = 1 + i % 28
        out = dest / f"codex/sessions/2026/10/{day:02d}" / f"rollout-2026-10-{day:02d}T10-00-00-{new}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8", errors="surrogateescape")
print(f"{count} sessions under {dest}")
