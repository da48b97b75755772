"""The latency benchmarks' corpus: LoCoMo turns as texts, then numbered variants of them.

Its own module so that ``latency.py`` and ``engine_latency.py`` (which ``latency.py --db-url`` runs)
both read it without importing each other.
"""

from __future__ import annotations

import json
from pathlib import Path


def corpus(data_dir: Path) -> tuple[list[str], list[str]]:
    """(turn texts, questions) of every conversation file in ``data_dir``."""
    texts: list[str] = []
    questions: list[str] = []
    for path in sorted(data_dir.glob("*.json")):
        data = json.loads(path.read_text())
        conversation = data.get("conversation", data)
        n = 1
        while f"session_{n}" in conversation:
            when = conversation.get(f"session_{n}_date_time", "")
            texts += [f"[{when}] {t['speaker']}: {t['text']}" for t in conversation[f"session_{n}"]]
            n += 1
        questions += [str(q["question"]) for q in data.get("qa", [])]
    if not texts:
        raise SystemExit(f"no LoCoMo conversations (*.json) in {data_dir}")
    return texts, questions


def text_at(texts: list[str], i: int) -> str:
    """The i-th corpus text: the turns, then numbered variants of them."""
    base = texts[i % len(texts)]
    return base if i < len(texts) else f"{base} (variant {i // len(texts)})"
