"""The newest statement of a changing fact, through the real pipeline with MiniLM on both engines
(docs/retrieval.md#after-fusion, item 5): an update worded unlike the question still comes first."""

from __future__ import annotations

from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = [pytest.mark.slow, BOTH_ENGINES]

OLD = "I live in Kyoto at the moment. Any advice?"
NEW = "The move is done, our new home is in Tbilisi. Any advice?"
OTHERS = [
    "Can you give me a recipe for a quick weeknight curry?",
    "What are good stretches after a long run?",
    "Summarise the plot of Hamlet in three sentences.",
    "How do I set up a Python virtual environment?",
    "My sister is visiting next month and loves hiking.",
    "Which houseplants survive in low light?",
]


def _with_model(settings: Settings, models_dir: Path, margin: float) -> Settings:
    """The fixture's fresh database with MiniLM, no calibration, and the equals rule at ``margin``."""
    return settings.with_overrides(
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        auto_calibrate=False,
        recent_recall_penalty=1.0,
        recency_margin=margin,
    )


def _ranked(mem: Memory, query: str) -> list[dict]:
    """Best first."""
    return list(reversed(mem.recall("a", query, limit=5, record=False)["results"]))


def test_an_update_worded_unlike_the_question_comes_first(
    settings: Settings, minilm_models_dir: Path
) -> None:
    with Memory(_with_model(settings, minilm_models_dir, 0.04)) as mem:
        assert mem.wait_until_ready(60)
        old = mem.store("a", OLD, timestamp="2023-03-01T10:00:00Z")["id"]
        for day, text in enumerate(OTHERS, start=2):
            mem.store("a", text, timestamp=f"2023-05-{day:02d}T10:00:00Z")
        new = mem.store("a", NEW, timestamp="2023-09-01T10:00:00Z")["id"]
        mem.worker.drain()

        ranked = _ranked(mem, "Where do I live now?")
        ids = [r["id"] for r in ranked]
        assert ids.index(new) < ids.index(old), [r["content"] for r in ranked]
        factors = ranked[0]["match_reason"]["factors"]
        assert ranked[0]["id"] == new and "newest_of_equals" in factors, factors

        # A question about the past keeps the old row, found by its words, first.
        past = [r["id"] for r in _ranked(mem, "Where did I live before?")]
        assert past.index(old) < past.index(new)

        # Without the rule the keyword channels keep the old row on top: the test measures the rule.
    with Memory(_with_model(settings, minilm_models_dir, 0.0)) as mem:
        assert mem.wait_until_ready(60)
        ids = [r["id"] for r in _ranked(mem, "Where do I live now?")]
        assert ids.index(old) < ids.index(new)
