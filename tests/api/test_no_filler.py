"""No filler (issue 35): a row without evidence — a fused score of 0 and no keyword match — is never
returned, calibrated or not, with or without a time cue; a keyword match always counts as evidence.
Real MiniLM on a real file; an agent of five memories, below self-calibration's ten."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = pytest.mark.slow

FIVE = [
    "Ana prefers short commit messages",
    "The shop's backend is written in Go",
    "Bob takes the train to work",
    "The office plants need water on Fridays",
    "Release notes go out every second Tuesday",
]
QUESTION = "which database does the shop use?"
SURE_NOVEMBER = {"start": "2026-11-01", "end": "2026-11-30", "certainty": "sure"}


def _memory(tmp_path: Path, models_dir: Path, **extra: Any) -> Memory:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        embedding_mode="onnx",
        models_dir=models_dir,
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        recent_recall_penalty=1.0,
        **extra,
    )
    return Memory(settings, self_calibration=False)


@pytest.fixture(params=[0.0, 0.6], ids=["no-context", "context"])
def five(request: pytest.FixtureRequest, tmp_path: Path, minilm_models_dir: Path) -> Iterator[Memory]:
    with _memory(tmp_path, minilm_models_dir, context_weight=request.param) as mem:
        assert mem.wait_until_ready(60)
        for day, text in enumerate(FIVE, start=1):
            mem.store("a", text, timestamp=f"2026-11-{day:02d}T10:00:00Z")
        mem.drain_queue()
        yield mem


def _fused_zero_without_keywords(answer: dict[str, Any]) -> list[str]:
    # The trace's fusion stage holds each candidate's fused score and the channels that found it.
    candidates = {c["ref"]: c for c in answer["trace"]["fusion"]["candidates"]}
    lexical = {"fts_memories", "fts_words", "fts_episodes"}
    return [
        row["ref"]
        for row in answer["results"]
        if candidates[row["ref"]]["score"] == 0 and not lexical & set(candidates[row["ref"]]["channels"])
    ]


@pytest.mark.parametrize("cue", [None, SURE_NOVEMBER], ids=["no-cue", "sure-cue"])
def test_an_uncalibrated_agent_returns_only_rows_with_evidence(five: Memory, cue: Any) -> None:
    answer = five.recall("a", QUESTION, time_cue=cue, trace=True)
    gate = answer["gate"]
    assert gate["kind"] == "heuristic" and gate["reason"].startswith("not calibrated yet")
    assert answer["results"], "the shop's backend row matches by keyword and meaning"
    assert answer["results"][-1]["content"] == "The shop's backend is written in Go"
    assert _fused_zero_without_keywords(answer) == []
    assert all(row["match_reason"]["score"] > 0 for row in answer["results"])
    # Something was left out for having no evidence: the vector channel ranked all five, and its
    # weakest has a rsf share of 0 (context off) — the filler the old answer returned.
    fused = answer["trace"]["fusion"]["candidates"]
    zero = [c["ref"] for c in fused if c["score"] == 0]
    assert not set(zero) & set(answer["trace"]["returned"])


def test_without_context_the_weakest_vector_hit_is_the_one_left_out(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    with _memory(tmp_path, minilm_models_dir, context_weight=0.0) as mem:
        assert mem.wait_until_ready(60)
        for text in FIVE:
            mem.store("a", text)
        mem.drain_queue()
        answer = mem.recall("a", QUESTION, trace=True)
    vector = answer["trace"]["channels"]["vector"]["hits"]
    assert len(vector) == len(FIVE)
    weakest = vector[-1]["ref"]
    assert weakest not in [row["ref"] for row in answer["results"]]
    assert len(answer["results"]) == len(FIVE) - 1  # the other four carry a share of the vector channel


def test_a_keyword_match_is_evidence_even_as_its_channels_weakest(tmp_path: Path) -> None:
    # Keyword-only (no model): two rows hold the word; the weaker one's rsf share is 0 in every
    # channel it is in, and it is still returned, below the stronger one.
    settings = Settings(db_path=tmp_path / "memory.db", embedding_mode="none", update_check=False)
    with Memory(settings, self_calibration=False) as mem:
        mem.store("a", "coffee coffee coffee: Ana drinks coffee every morning, coffee")
        mem.store("a", "the long meeting notes mention coffee once among many other unrelated words here")
        mem.store("a", "Bob takes the train to work")
        answer = mem.recall("a", "coffee", trace=True)
    contents = [row["content"] for row in answer["results"]]
    assert len(contents) == 2 and "Bob" not in " ".join(contents)
